"""Stage 01 exercises: tools are plain functions.

01.1 adds ``//`` and ``%`` to a table-driven calculator (the check calls the calculator built from the
learner's operator functions), 01.2 is a workspace-locked ``read_lines`` tool, and 01.3 a ``convert_units``
tool. The file cases run inside a throw-away workspace (``in_workspace``), never in the notebook's folder.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path

from course_lib.checks import Case, Exercise
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


DIVISOR_HINT = "check the divisor first: if it is 0, raise ToolError with a message for the model"
SANDBOX_HINT = "resolve (Path.cwd() / path) and refuse it unless it is_relative_to the resolved Path.cwd()"
RANGE_HINT = "start and end must be ints (not bool, not text) with 1 <= start <= end"
UNIT_HINT = "check the unit against UNITS; raise ToolError listing the known units, sorted"
VALUE_HINT = "accept only int and float (type(value) in (int, float)); bool and text are refused"

EXERCISES = {
    "01.1": Exercise("Add // and % to the calculator, safely", [
        Case("7 // 2", lambda calc: calc("7 // 2"), expected="3"),
        Case("-7 // 2 (Python floors)", lambda calc: calc("-7 // 2"), expected="-4",
             hint="return a // b: Python's floor division rounds down"),
        Case("7.5 % 2", lambda calc: calc("7.5 % 2"), expected="1.5"),
        Case("2 + 9 % 4 * 3", lambda calc: calc("2 + 9 % 4 * 3"), expected="5"),
        Case("7 % 0 is refused", lambda calc: calc("7 % 0"), raises=ToolError, hint=DIVISOR_HINT),
        Case("7 // 0.0 is refused", lambda calc: calc("7 // 0.0"), raises=ToolError, hint=DIVISOR_HINT),
        Case("the message says why", lambda calc: refusal(lambda: calc("1 // 0")),
             test=lambda m: "//" in m and "zero" in m.lower(), shows="names // and 'zero'",
             hint="say which operator failed and that its divisor is zero"),
        Case("1e308 // 1e-308 (inf)", lambda calc: calc("1e308 // 1e-308"), raises=ToolError,
             hint="a float result that is not finite (math.isfinite) must be refused too"),
        Case("names are still refused", lambda calc: calc("x // 2"), raises=ToolError),
    ]),
    "01.2": Exercise("A sandboxed read_lines tool", [
        Case("notes.txt, lines 2 to 3", lambda f: in_workspace(lambda root: f("notes.txt", 2, 3)),
             expected="2: beta\n3: gamma"),
        Case("end past the last line", lambda f: in_workspace(lambda root: f("notes.txt", 3, 99)),
             expected="3: gamma\n4: delta", hint="stop at the last line instead of failing"),
        Case("defaults: the whole file", lambda f: in_workspace(lambda root: f("메모.txt")),
             expected="1: 회의 메모\n2: - 단가는 개당 $24입니다."),
        Case("sub/../notes.txt stays inside", lambda f: in_workspace(lambda root: f("sub/../notes.txt", 1, 1)),
             expected="1: alpha", hint="'..' is fine as long as the resolved path stays inside"),
        Case("../secret.txt", lambda f: in_workspace(lambda root: f("../secret.txt")),
             raises=ToolError, hint=SANDBOX_HINT),
        Case("absolute path outside", lambda f: in_workspace(lambda root: f(str(root / "secret.txt"))),
             raises=ToolError, hint=SANDBOX_HINT),
        Case("sibling ../ws2/secret.txt", lambda f: in_workspace(lambda root: f("../ws2/secret.txt")),
             raises=ToolError, hint="a string prefix check lets 'ws2' pass for 'ws': use is_relative_to"),
        Case("missing file", lambda f: in_workspace(lambda root: f("nope.txt")), raises=ToolError,
             hint="raise ToolError when the path is not a file"),
        Case("start 0", lambda f: in_workspace(lambda root: f("notes.txt", 0, 2)), raises=ToolError,
             hint=RANGE_HINT),
        Case("start after end", lambda f: in_workspace(lambda root: f("notes.txt", 3, 2)), raises=ToolError,
             hint=RANGE_HINT),
        Case("start as text '2'", lambda f: in_workspace(lambda root: f("notes.txt", "2", 3)),
             raises=ToolError, hint=RANGE_HINT),
    ]),
    "01.3": Exercise("A convert_units tool", [
        Case("5 km -> mi", lambda f: f(5, "km", "mi"), expected="5 km = 3.107 mi"),
        Case("2.5 mi -> m", lambda f: f(2.5, "mi", "m"), expected="2.5 mi = 4023.36 m"),
        Case("1 lb -> kg", lambda f: f(1, "lb", "kg"), expected="1 lb = 0.454 kg"),
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
        Case("unit None", lambda f: f(5, None, "m"), raises=ToolError, hint=UNIT_HINT),
    ]),
}
