"""Stage 01 exercises: tools are plain functions.

01.1 adds ``//`` and ``%`` to a table-driven calculator (the check calls the calculator built from the
learner's operator functions), 01.2 is a workspace-locked ``read_lines`` tool, and 01.3 a ``convert_units``
tool. The file cases run inside a throw-away workspace (``in_workspace``), never in the notebook's folder.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from course_lib.courseware.checks import Case, Exercise
from course_lib.tools import ToolError

WORKSPACE_FILES = {
    "ws/notes.txt": "alpha\nbeta\ngamma\ndelta\n",
    "ws/메모.txt": "회의 메모\n- 단가는 개당 $24입니다.\n",
    "ws/sub/q3.txt": "Q3 summary\n",
    "ws2/secret.txt": "top secret\n",   # a sibling folder whose name starts like the workspace's
    "secret.txt": "top secret\n",       # next to the workspace, one level up
}


def in_workspace(call):
    """Run ``call(root)`` with the current folder set to a fresh workspace ``ws`` (files above), then clean up.

    ``root`` is the temporary folder that holds ``ws``, so a case can build an absolute path outside the
    workspace. Temporary paths in a ToolError message are replaced by ``<tmp>``, so the table stays short.
    """
    old = os.getcwd()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        for name, text in WORKSPACE_FILES.items():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            (root / name).write_text(text, encoding="utf-8")
        os.chdir(root / "ws")
        try:
            return call(root)
        except ToolError as e:
            message = str(e)
            for prefix in sorted({str(root.resolve()), str(root)}, key=len, reverse=True):
                message = message.replace(prefix, "<tmp>")
            raise ToolError(message) from None
        finally:
            os.chdir(old)


def refusal(call) -> str:
    """The message of the ToolError that ``call()`` raises, or a note that it raised none."""
    try:
        result = call()
    except ToolError as e:
        return str(e)
    return f"no ToolError; returned {result!r}"


def linked_outside(f) -> str:
    """What ``f("link.txt")`` does in a workspace where link.txt is a symbolic link to ../secret.txt."""
    def go(root):
        try:
            os.symlink(root / "secret.txt", root / "ws" / "link.txt")
        except (OSError, NotImplementedError):   # no symbolic links on this system: nothing to test
            return "skipped: this system cannot make symbolic links"
        return refusal(lambda: f("link.txt"))
    return in_workspace(go)


def refusal_of(f, *args) -> str:
    """The message of the ToolError that ``f(*args)`` raises, or a note that it raised none."""
    return refusal(lambda: f(*args))


def in_a_workspace(f, *args, absolute: bool = False):
    """``f(*args)`` in a fresh workspace; ``absolute``: the first argument, a path from ``root``, made absolute."""
    return in_workspace(lambda root: f(str(root / args[0]), *args[1:]) if absolute else f(*args))


def from_text(f, value: str, *args):
    """``f(float(value), *args)``: a number the wire cannot carry as itself (nan), sent as text."""
    return f(float(value), *args)


DIVISOR_HINT = "check the divisor first: if it is 0, raise ToolError with a message for the model"
SANDBOX_HINT = "resolve (Path.cwd() / path) and refuse it unless it is_relative_to the resolved Path.cwd()"
RANGE_HINT = "start and end must be ints (not bool, not text) with 1 <= start <= end"
UNIT_HINT = "check the unit against UNITS; raise ToolError listing the known units, sorted"
VALUE_HINT = "accept only int and float (type(value) in (int, float)); bool and text are refused"
INF_HINT = "a float result that is not finite must be refused too: test math.isfinite(result)"

EXERCISES = {
    "01.1": Exercise("Add // and % to the calculator, safely", [
        Case("7 // 2", lambda calc: calc("7 // 2"), expected="3",
             hint="safe_floordiv returns a // b: for two ints that is the int 3"),
        Case("-7 // 2 (Python floors)", lambda calc: calc("-7 // 2"), expected="-4",
             hint="return a // b: Python's floor division rounds down"),
        Case("7.5 // 2 (a float)", lambda calc: calc("7.5 // 2"), expected="3.0",
             hint="return a // b itself: with a float it gives the float 3.0, while math.floor gives the int 3"),
        Case("7.5 % 2", lambda calc: calc("7.5 % 2"), expected="1.5",
             hint="safe_mod returns a % b, which works for floats too"),
        Case("-7 % 3 (Python: 2)", lambda calc: calc("-7 % 3"), expected="2",
             hint="return a % b: Python's % takes the divisor's sign (math.fmod and a - b*int(a/b) give -1)"),
        Case("2 + 9 % 4 * 3", lambda calc: calc("2 + 9 % 4 * 3"), expected="5",
             hint="return a % b unchanged: two ints give an int (5, not 5.0)"),
        Case("7 % 0 is refused", lambda calc: calc("7 % 0"), raises=ToolError, hint=DIVISOR_HINT),
        Case("7 // 0.0 is refused", lambda calc: calc("7 // 0.0"), raises=ToolError,
             hint="0.0 is a zero divisor too: compare with b == 0, which is True for 0, 0.0 and -0.0"),
        Case("the message says why", lambda calc: refusal(lambda: calc("1 // 0")),
             test=lambda m: "//" in m and "zero" in m.lower(), shows="names // and 'zero'",
             hint="say which operator failed and that its divisor is zero"),
        Case("7 % 0: the message says why", lambda calc: refusal(lambda: calc("7 % 0")),
             test=lambda m: "%" in m and "zero" in m.lower(), shows="names % and 'zero'",
             hint="safe_mod's message names % (not //) and says that the divisor is zero"),
        Case("1e308 // 1e-308 (inf)", lambda calc: calc("1e308 // 1e-308"), raises=ToolError, hint=INF_HINT),
        Case("-1e308 // 1e-308 (-inf)", lambda calc: calc("-1e308 // 1e-308"), raises=ToolError,
             hint="-inf is not finite either: test math.isfinite(result), not result == math.inf"),
        Case("names are still refused", lambda calc: calc("x // 2"), raises=ToolError,
             hint="build the calculator with make_calculator: it refuses names; never use eval"),
    ]),
    "01.2": Exercise("A sandboxed read_lines tool", [
        Case("notes.txt, lines 2 to 3", lambda f: in_workspace(lambda root: f("notes.txt", 2, 3)),
             expected="2: beta\n3: gamma",
             hint="write each line as '<number>: <text>', counting from 1, joined by '\\n' with none at the end"),
        Case("end past the last line", lambda f: in_workspace(lambda root: f("notes.txt", 3, 99)),
             expected="3: gamma\n4: delta", hint="stop at the last line instead of failing"),
        Case("defaults: the whole file", lambda f: in_workspace(lambda root: f("메모.txt")),
             expected="1: 회의 메모\n2: - 단가는 개당 $24입니다.",
             hint="start=1 and end=None read the whole file; read it as UTF-8"),
        Case("sub/../notes.txt stays inside", lambda f: in_workspace(lambda root: f("sub/../notes.txt", 1, 1)),
             expected="1: alpha", hint="'..' is fine as long as the resolved path stays inside"),
        Case("absolute path inside", lambda f: in_workspace(lambda root: f(str(root / "ws" / "notes.txt"), 2, 2)),
             expected="2: beta", hint="an absolute path that leads inside the workspace is fine: judge where it leads"),
        Case("../secret.txt", lambda f: in_workspace(lambda root: f("../secret.txt")),
             raises=ToolError, hint=SANDBOX_HINT),
        Case("absolute path outside", lambda f: in_workspace(lambda root: f(str(root / "secret.txt"))),
             raises=ToolError, hint=SANDBOX_HINT),
        Case("sibling ../ws2/secret.txt", lambda f: in_workspace(lambda root: f("../ws2/secret.txt")),
             raises=ToolError, hint="'ws2' beside 'ws' is outside, though its name starts the same: compare "
                                     "whole path parts (Path.is_relative_to), not text"),
        Case("a link that points outside", linked_outside, test=lambda m: not m.startswith("no ToolError"),
             shows="a ToolError",
             hint="judge where a path leads after following its links (Path.resolve()), not where it seems to point"),
        Case("missing file", lambda f: in_workspace(lambda root: f("nope.txt")), raises=ToolError,
             hint="raise ToolError when the path is not a file"),
        Case("a folder: sub", lambda f: in_workspace(lambda root: f("sub")), raises=ToolError,
             hint="a folder is there but is not a file: refuse anything that is not a file (Path.is_file())"),
        Case("a NUL byte in the path", lambda f: in_workspace(lambda root: f("notes.txt\0.png")), raises=ToolError,
             hint="refuse a path that contains '\\0' before resolving it (resolve raises ValueError on it)"),
        Case("start 0", lambda f: in_workspace(lambda root: f("notes.txt", 0, 2)), raises=ToolError,
             hint=RANGE_HINT),
        Case("start after end", lambda f: in_workspace(lambda root: f("notes.txt", 3, 2)), raises=ToolError,
             hint=RANGE_HINT),
        Case("start as text '2'", lambda f: in_workspace(lambda root: f("notes.txt", "2", 3)),
             raises=ToolError, hint=RANGE_HINT),
        Case("start True", lambda f: in_workspace(lambda root: f("notes.txt", True, 2)), raises=ToolError,
             hint="True is a bool, and isinstance(True, int) is True: check type(start) is int"),
        Case("end 2.0 (a float)", lambda f: in_workspace(lambda root: f("notes.txt", 1, 2.0)), raises=ToolError,
             hint="check end too: it must be None or an int"),
        Case("end True", lambda f: in_workspace(lambda root: f("notes.txt", 1, True)), raises=ToolError,
             hint="True is no line number for end either: check type(end) is int, not isinstance(end, int)"),
        Case("start 5, past the last line", lambda f: in_workspace(lambda root: f("notes.txt", 5)),
             raises=ToolError, hint="notes.txt has 4 lines: refuse a start past the last line, saying how many"),
    ]),
    "01.3": Exercise("A convert_units tool", [
        Case("5 km -> mi", lambda f: f(5, "km", "mi"), expected="5 km = 3.107 mi",
             hint="value × size(from_unit) / size(to_unit), round(..., 3), then f'{value} {from} = {result} {to}'"),
        Case("2.5 mi -> m", lambda f: f(2.5, "mi", "m"), expected="2.5 mi = 4023.36 m",
             hint="show the value as it was given and round only the result"),
        Case("1 lb -> kg", lambda f: f(1, "lb", "kg"), expected="1 lb = 0.454 kg",
             hint="the sizes come from UNITS: 1 lb is 0.45359237 kg, rounded to 3 digits"),
        Case("' KG ' -> g (tidied)", lambda f: f(3, " KG ", "g"), expected="3 kg = 3000.0 g",
             hint="strip and lower-case the unit names first, and show the tidied names"),
        Case("unknown unit 'ft'", lambda f: f(5, "ft", "m"), raises=ToolError, hint=UNIT_HINT),
        Case("the message lists the units", lambda f: refusal(lambda: f(5, "km", "parsec")),
             test=lambda m: "parsec" in m and "g, kg, km, lb, m, mi" in m, shows="'parsec' + g, kg, km, …",
             hint=UNIT_HINT),
        Case("km -> kg (length vs mass)", lambda f: f(5, "km", "kg"), raises=ToolError,
             hint="compare the kinds of the two units before converting"),
        Case("value True", lambda f: f(True, "km", "m"), raises=ToolError, hint=VALUE_HINT),
        Case("value '5' (text)", lambda f: f("5", "km", "m"), raises=ToolError, hint=VALUE_HINT),
        Case("value nan", lambda f: f(float("nan"), "km", "m"), raises=ToolError,
             hint="nan and inf are floats too: refuse a value that is not math.isfinite"),
        Case("unit None: the message lists the units", lambda f: refusal(lambda: f(5, None, "m")),
             test=lambda m: "g, kg, km, lb, m, mi" in m, shows="a ToolError listing g, kg, km, …",
             hint="a unit that is not text is refused like an unknown one: name it and list the known units"),
        Case("to_unit 3 (not text)", lambda f: f(5, "m", 3), raises=ToolError,
             hint="check both units, to_unit as well as from_unit: each must be text and in UNITS"),
    ]),
}
