"""The visible cases catch plausible wrong solutions, and the reference solutions pass them.

Each reference solution exists once, in its cell of ``solutions/NN_*_exercises.ipynb``. A wrong solution is a row
here: the exercise, the visible case it must fail on, and a few ``(old, new)`` text edits of that solution cell that
make one plausible mistake, the kind a learner makes and the exercise text or the hidden tests rule out. Each ``old``
must occur exactly once in the cell (as the earlier edits of the row left it), so a row whose edit no longer applies
fails loudly instead of quietly testing the reference.

To build a solution, the notebook's code cells before the solution cell run in a fresh namespace (the setup cell, the
"Given" cells, the earlier exercises' reference solutions: what the learner's kernel holds by then), then the edited
solution cell, then the exercise's check cell with ``check`` replaced, so the candidate is exactly what the notebook
hands to ``check()`` (for 01.1 that is the calculator the check cell builds). The cells are read and compiled once;
they run again for every test, so no test can leak into another.

A wrong solution must fail the visible check (``run_cases``, the check without printing) on the case named in its
row, and it must still pass at least half of its exercise's cases: one mistake, not a stub.
"""
from __future__ import annotations

import contextlib
import functools
import io
import json
import re
import warnings
from pathlib import Path
from typing import NamedTuple

import pytest

from course_lib.courseware import hidden
from course_lib.courseware.checks import check, exercise, run_cases
from course_lib.courseware.stages import borrowed

SOLUTIONS = Path(__file__).resolve().parent.parent / "solutions"


# ================================================================ the notebook's cells, and a solution built from them
def _grade_id(cell: dict) -> str:
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id", "")


def _source(cell: dict) -> str:
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


@functools.cache
def _code_cells(stage: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    """The solution notebook of `stage` ("01"): its name, and (grade_id, source) of each code cell in order."""
    (path,) = SOLUTIONS.glob(f"{stage}_*_exercises.ipynb")
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return path.name, tuple((_grade_id(c), _source(c)) for c in cells if c["cell_type"] == "code")


def exercise_ids() -> list[str]:
    """Every exercise of every solution notebook, "01.1" for the cell graded ex01_1."""
    stages = sorted(p.name[:2] for p in SOLUTIONS.glob("[0-9][0-9]_*_exercises.ipynb"))
    return [f"{gid[2:4]}.{gid[5:]}" for stage in stages for gid, _ in _code_cells(stage)[1]
            if re.fullmatch(r"ex\d\d_\d+", gid)]


@functools.cache
def _parts(exercise_id: str):
    """(the compiled cells that run before the solution cell, the solution cell's source, the compiled check cell)."""
    stage, number = exercise_id.split(".")
    name, cells = _code_cells(stage)
    ids = [gid for gid, _ in cells]
    solution_id = f"ex{stage}_{number}"
    assert solution_id in ids and solution_id + "_check" in ids, f"{name} has no cells {solution_id}, {solution_id}_check"
    at = ids.index(solution_id)
    before = tuple(compile(source, f"{name} [{gid or 'setup'}]", "exec") for gid, source in cells[:at]
                   if not gid.endswith(("_check", "_hidden")))
    check_cell = compile(cells[ids.index(solution_id + "_check")][1], f"{name} [{solution_id}_check]", "exec")
    return before, cells[at][1], check_cell


def edited(exercise_id: str, edits=()) -> str:
    """The solution cell's source with `edits` applied, each `old` found exactly once where it is applied."""
    source = _parts(exercise_id)[1]
    for n, (old, new) in enumerate(edits, 1):
        count = source.count(old)
        assert count == 1, (f"{exercise_id}, edit {n} of {len(edits)}: its old text occurs {count} times in the "
                            f"solution cell, not once; the cell has changed, so fix the row:\n{old}")
        source = source.replace(old, new)
    return source


def solution(exercise_id: str, edits=()):
    """What the notebook's check cell hands to check(), with the solution cell edited by `edits` first."""
    before, _, check_cell = _parts(exercise_id)
    source = edited(exercise_id, edits)
    namespace = {"__name__": "__main__"}
    handed = []
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):   # setup cells print and filter
        for code in before:
            exec(code, namespace)
        exec(compile(source, f"solution {exercise_id}" + (" (edited)" if edits else ""), "exec"), namespace)
        namespace["check"] = lambda eid, candidate, **_: handed.append((eid, candidate))
        exec(check_cell, namespace)
    assert [eid for eid, _ in handed] == [exercise_id], f"the check cell of {exercise_id} checked {handed}"
    return handed[0][1]


# ================================================================ the reference solutions pass
@pytest.mark.parametrize("exercise_id", exercise_ids())
def test_the_reference_solution_passes_every_visible_case(exercise_id):
    candidate = solution(exercise_id)
    result = run_cases(exercise_id, candidate)
    assert result.error is None and not result.not_implemented, result
    assert [c.label for c in result.cases if not c.ok] == []
    assert borrowed(exercise_id, candidate) == []   # what it uses, the notebook hands out


# A wrapper around course_lib's finished version passes every visible case where course_lib is whole (the learner's
# kernel); course check grades where it is cut to what the notebook hands out, so check() must not say "well done".
WRAPPERS = {
    "12.4": ("from course_lib.evaluation import compare\n"
             "def regressions(old, new):\n"
             "    return [{k: c[k] for k in ('task', 'before', 'after')} for c in compare(old, new)\n"
             "            if c['change'] == 'regression']\n", "compare (course_lib.evaluation)"),
    "13.3": ("import course_lib.mcp_bridge as bridge\n"
             "def helper(schema, value, where):\n"
             "    return bridge.schema_problems(schema, value, where)\n"
             "def schema_problems(schema, value, where='arguments'):\n"
             "    return helper(schema, value, where)\n", "bridge (course_lib.mcp_bridge)"),
    "10.1": ("def group_steps(history):\n    return split_steps(history)\n", "split_steps (course_lib.memory)"),
    "13.1": ("def from_mcp_result(result):\n"   # the import inside the function, where no cell shows it
             "    from course_lib.mcp_client import from_mcp_result as finished\n"
             "    return finished(result)\n", "course_lib.mcp_client (imported inside from_mcp_result)"),
}


@pytest.mark.parametrize("exercise_id", list(WRAPPERS))
def test_an_answer_that_wraps_the_finished_version_is_told_so_by_check_and_fails_nbgrader_s_hidden_test(
        exercise_id, capsys):
    source, name = WRAPPERS[exercise_id]
    namespace = {"__name__": "__main__"}
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        for code in _parts(exercise_id)[0]:   # the set-up cells: 10's hands out split_steps (for 10.2, not 10.1)
            exec(code, namespace)
    exec(source, namespace)
    candidate = namespace[source.split("def ")[-1].split("(")[0]]
    result = check(exercise_id, candidate)
    printed = capsys.readouterr().out
    assert result.passed and borrowed(exercise_id, candidate) == [name] and name in result.advice, result.advice
    assert "well done" not in printed and f"but your answer uses {name}, course_lib's finished version" in printed
    with pytest.raises(AssertionError, match=rf"^the answer to {exercise_id} uses {re.escape(name)}"):
        hidden.verify(exercise_id, candidate)


# ================================================================ the wrong solutions
class Wrong(NamedTuple):
    exercise: str
    fails_on: str                       # the label of a visible case that must fail
    edits: list[tuple[str, str]]        # (old, new) text edits of the solution cell, applied in order
    note: str = ""                      # the mistake, in a few words
    one_slip: bool = True               # False: the mistake changes most results by its nature (said where)

    @property
    def id(self) -> str:
        return f"{self.exercise}-{self.fails_on}" + (f"-{self.note}" if self.note else "")


W = Wrong

# ---- lines and blocks that several rows edit, or that are long; each row says what it does with them
CALLABLE_02_1 = '    if not callable(func):\n        raise TypeError(f"a tool must be callable, got {type(func).__name__}")\n'
MISSING_05_2 = ("    missing = [p.name for p in named if p.default is p.empty and p.name not in args]\n"
                "    if missing:\n"
                "        return f\"{name} is missing required argument(s) {', '.join(map(repr, missing))}.\"\n")
TOKENS_09_3 = ('    if max_tokens is not None and tokens_in + tokens_out > max_tokens:\n'
               '        return (f"Stopped before the next model call: it would bring the run to {tokens_in + tokens_out:,} "\n'
               '                f"tokens, over the budget of {max_tokens:,}.")\n')
COST_END_09_3 = '                f"over the budget of ${max_cost:.4f}.")\n'
LOOP_10_1 = ("    head, steps = [], []\n    for m in history:\n"
             '        if m["role"] == "assistant":\n'
             "            steps.append([m])           # a new step starts at every assistant message\n"
             "        elif steps:\n"
             "            steps[-1].append(m)         # its tool results, observations, the user's next message\n"
             "        else:\n"
             "            head.append(m)              # before the first assistant message: system prompt, goal\n"
             "    return head, steps")
BY_MESSAGES_10_2 = [("    return head + pinned + [m for step in steps[first:] for m in step]",
                     "    rest = [m for step in steps for m in step]\n    return head + (rest[-2 * keep:] if keep else [])")]
COLLAPSE_10_3 = '    text = " ".join(text.split())                 # one line, single spaces\n'
TOO_LONG_10_3 = ('        raise ToolError(f"the note is {len(text)} characters long; the limit is 500: '
                 'save one short fact")\n')
EVERY_DOC_11_1 = [("            if f:                                              # a document without the word gains "
                   "nothing\n                score += idf[word]", "            score += idf.get(word, 0.0)")]
CALLS_UNCHECKED_11_4 = [(' \\\n                or not isinstance(node.get("calls"), list)', "")]
NO_NFC_12_1 = [('unicodedata.normalize("NFC", str(text)).strip()', "str(text).strip()")]
CHECK_NOT_NORMALISED_12_1 = [('text == norm(check["value"])', 'text == str(check["value"]).strip()'),
                             ("norm(value).casefold()", "str(value).strip().casefold()")]
EDGE_12_1 = [('<= check.get("tolerance", 0) + 1e-9', '< check.get("tolerance", 0)')]
ANY_NUMBER_12_1 = 'any(abs(number - check["value"]) <= check.get("tolerance", 0) + 1e-9 for number in found)'
ADD_UP_12_1 = ("            if last and unit > 1 and last[0] > unit and not text[last[1]:m.start()].strip():\n"
               "                run += found[-1]                      # 25만 5천: falling units, only spaces between: "
               "they add up\n"
               "                found.append(run)\n"
               "            else:\n"
               "                run = found[-1]\n")
RECORD_CHECK_12_4 = ('            if not isinstance(record, dict) or not isinstance(record.get("task"), str) \\\n'
                     '                    or type(record.get("passed")) is not bool:\n'
                     "                raise ValueError(f\"run {i} is not a run record: a dict with 'task' (text) and "
                     "'passed' (True/False)\")\n")
SCHEMA_BRANCH_13_3 = ('            elif isinstance(others, dict):\n'
                      '                problems += schema_problems(others, item, f"{where}.{name}")\n')
NOTE_11_2 = ('    note = " ".join(note.split()) if isinstance(note, str) else None\n'
             "    if note is None or len(note) > 300 or not note.isprintable():\n"
             '        raise ToolError("note must be plain text of at most 300 characters")\n')
SAME_13_3 = "value == v and (type(value) is type(v) or {type(value), type(v)} <= {int, float})"
NORMAL_09_1 = 'unicodedata.normalize("NFC", text.translate(dict.fromkeys(map(ord, ZERO_WIDTH))))'
SEEN_ONLY_09_1 = [("    def normal(text):\n", "    def normal(text, seen=False):\n"),
                  ("map(normal, seen_texts)", "(normal(text, seen=True) for text in seen_texts)")]
RANKED_10_4 = ('    rows = sql(db, f"SELECT id, text FROM notes WHERE {hits} > 0 ORDER BY {hits} DESC, id DESC LIMIT ?",\n'
               "               [*patterns, *patterns, limit]).fetchall()")
COUNTED_10_4 = '    rows = sql(db, f"SELECT id, text FROM notes WHERE {hits} > 0", patterns).fetchall()\n'

WRONG = [
    # ---- 01.1 a zero divisor, an infinite result, Python's own rules
    W("01.1", "7 % 0: the message says why",
      [('"% by zero is undefined: the divisor after % is zero; change the divisor"',
        '"// by zero is undefined: the divisor after // is zero; change the divisor"')], "% copies //'s message"),
    W("01.1", "-1e308 // 1e-308 (-inf)", [("isinstance(result, float) and not math.isfinite(result)",
                                           "result == math.inf")], "only +inf is too large"),
    W("01.1", "7.5 // 2 (a float)", [("result = a // b", "result = a / b"),
                                     ("    return result\n", "    return math.floor(result)\n")], "math.floor(a / b)"),
    W("01.1", "-7 % 3 (Python: 2)", [("return a % b", "return a - b * int(a / b)")], "a truncating remainder"),
    # ---- 01.2 what is a line number, what is a file, what is inside
    W("01.2", "start True", [("type(start) is not int or not (end is None or type(end) is int)",
                              "not isinstance(start, int) or not (end is None or isinstance(end, int))")],
      "isinstance lets True in"),
    W("01.2", "end 2.0 (a float)", [(" or not (end is None or type(end) is int)", "")], "end not checked"),
    W("01.2", "end True", [("not (end is None or type(end) is int)", "(end is not None and not isinstance(end, int))")],
      "isinstance lets end=True in"),
    W("01.2", "a folder: sub", [("target.is_file()", "target.exists()")], "exists() for is_file()"),
    W("01.2", "start 5, past the last line",
      [("    if start > len(lines):\n        raise ToolError(f\"'{path}' has {len(lines)} lines; ask for a start of at "
        "most {len(lines)}\")\n", "")], "past the end is an empty answer"),
    W("01.2", "a NUL byte in the path", [(' or "\\0" in path', "")], "NUL not refused"),
    W("01.2", "absolute path inside", [("    root = Path.cwd().resolve()\n",
                                        '    if Path(path).is_absolute():\n        raise ToolError("use a relative path")\n'
                                        "    root = Path.cwd().resolve()\n")], "every absolute path refused"),
    W("01.2", "a link that points outside", [("def read_lines(", "import os\n\n\ndef read_lines("),
                                             ("target = (root / path).resolve()",
                                              "target = Path(os.path.abspath(root / path))")],
      "os.path.abspath does not follow links"),
    # ---- 01.3
    W("01.3", "value nan", [(" or not math.isfinite(value)", "")], "nan let through"),
    W("01.3", "unit None: the message lists the units",
      [("        name = unit.strip().lower() if isinstance(unit, str) else None\n",
        '        if not isinstance(unit, str):\n            raise ToolError("a unit must be text")\n'
        "        name = unit.strip().lower()\n")], "a unit that is not text: no list of units"),
    W("01.3", "to_unit 3 (not text)", [("if isinstance(unit, str) else None", "if isinstance(from_unit, str) else None")],
      "only from_unit type-checked"),
    # ---- 02.1 the order of the checks, a name that is not text
    W("02.1", "not callable, named 'finish'", [(CALLABLE_02_1, ""), ("    if name in registry:",
                                                                      CALLABLE_02_1 + "    if name in registry:")],
      "callable checked after the name"),
    W("02.1", "name 42 (not text)", [("not isinstance(name, str) or not NAME_PATTERN", "not NAME_PATTERN")],
      "the name's type not checked"),
    W("02.1", "name 'calc\\n' (a newline at the end)",
      [("NAME_PATTERN.fullmatch(name)", 're.match(NAME_PATTERN.pattern + "$", name)')], "$ allows a final newline"),
    # ---- 02.2 a tool's own ToolError goes through; names are exact
    W("02.2", "the tool's own ToolError",
      [("    return str(registry[name](**args))", "    try:\n        return str(registry[name](**args))\n"
                                                   '    except ToolError as e:\n        return f"Error: {e}"')],
      "the tool's error turned into text"),
    W("02.2", "'Calculator' (other case)", [("    if not isinstance(name, str):\n",
                                             "    if isinstance(name, str):\n        name = name.strip().lower()\n"
                                             "    if not isinstance(name, str):\n")], "names stripped and lowered"),
    W("02.2", "the tool's own ToolError",
      [("    return str(registry[name](**args))", "    try:\n        return str(registry[name](**args))\n"
                                                   '    except Exception as e:\n        raise ToolError(f"{name} failed: {e}")')],
      "the tool's error rewrapped"),
    # ---- 02.3 the plain call with a name, a duplicate through @tool, a non-callable that is not text
    W("02.3", "tool(shout, name='loud')",
      [("if func is None:", "if name is not None:"),
       ("return lambda f: tool(f, name=name)",
        "def decorator(f):\n                if name in registry:\n"
        "                    raise ValueError(f\"a tool named '{name}' is already registered; pick another name\")\n"
        "                registry[name] = f\n                return f\n            return decorator")],
      "a name always means @tool(name=...)"),
    W("02.3", "duplicate name, bare @tool", [("if key in registry:", "if name is not None and key in registry:")],
      "no duplicate check for bare @tool"),
    W("02.3", "tool(42): not callable", [("if not callable(func):", "if isinstance(func, str):")],
      "only text refused"),
    W("02.3", "the TypeError shows @tool(name=",
      [('raise TypeError(f"@tool got {func!r}, which is not a function; to give a name, "\n'
        '                            "write @tool(name=...)")', 'raise TypeError("tool expects a function")')],
      "the right spelling not shown"),
    W("02.3", "two decorators, two registries",
      [("def make_tool_decorator(registry: dict):\n",
        "REGISTRY = {}\n\n\ndef make_tool_decorator(registry: dict):\n    global REGISTRY\n    REGISTRY = registry\n"),
       ("if key in registry:", "if key in REGISTRY:"), ("registry[key] = func", "REGISTRY[key] = func")],
      "one global registry"),
    # ---- 03.1 dict[...], recursion into lists and unions, unions with None and more
    W("03.1", "dict[str, int]", [('    if origin is dict:\n        return {"type": "object"}\n', "")],
      "dict[...] unknown"),
    W("03.1", "list[list[int]]", [('"items": json_type(args[0])', '"items": {"type": simple[args[0]]}')],
      "list items looked up, not described"),
    W("03.1", "Optional[list[str]]", [("options = [json_type(a) for a", 'options = [{"type": simple[a]} for a')],
      "union members looked up, not described"),
    W("03.1", "int | str | None", [("        options = [json_type(a)",
                                    "        if type(None) in args:\n            return json_type(args[0])\n"
                                    "        options = [json_type(a)")], "X | Y | None taken for Optional[X]"),
    # ---- 03.2 the shared table, a default JSON cannot write
    W("03.2", "the table is not changed", [("prop = dict(TYPE_SCHEMAS[hints[p.name]])",
                                            "prop = TYPE_SCHEMAS[hints[p.name]]")], "the table's entry changed"),
    W("03.2", "a set as the default",
      [("            try:\n                json.dumps(p.default)\n            except (TypeError, ValueError):\n"
        '                raise ValueError(f"{where}: the default {p.default!r} cannot be written as JSON") from None\n',
        "")], "any default kept"),
    # ---- 03.3 a raw, indented __doc__ with a blank line
    W("03.3", "a raw, indented __doc__", [("if indent <= header:", "if indent == 0:"),
                                          ("if match and (param_indent is None or indent <= param_indent):",
                                           "if match and indent <= 4:")],
      "fixed margins: right for inspect.getdoc, wrong for __doc__"),
    W("03.3", "a raw, indented __doc__", [("        if not line.strip():\n            continue\n",
                                           "        if not line.strip():\n            break\n")],
      "a blank line ends the section"),
    W("03.3", "a prose line that starts with Args", [('if line.strip() == "Args:"', 'if line.strip().startswith("Args")')],
      "startswith('Args')"),
    # ---- 03.4 case, whole words, drifted Args:, nothing more for an undescribed tool
    W("03.4", "SEARCH sounds like Search", [("line.lower()", "line")], "case counts in the words"),
    W("03.4", "'prices' does not name 'price'",
      [(r'if not re.search(rf"(?<!\w){re.escape(other)}(?!\w)", line):', "if other not in line:")],
      "a name inside a longer word counts"),
    W("03.4", "Args: for a parameter that is gone",
      [("        problems += [f\"{name}: Args: describes '{a}', which is not a parameter\" for a in described "
        "if a not in params]\n", "")], "stale Args: lines not reported"),
    W("03.4", "no docstring", [('problems.append(f"{name}: no description")\n            continue\n',
                                'problems.append(f"{name}: no description")\n')], "an undescribed tool checked on"),
    W("03.4", "in the dict's order", [("    return problems\n", "    return sorted(problems)\n")], "sorted"),
    W("03.4", "Korean words count", [(r'r"[^\W\d_]{5,}"', r'r"[a-z]{5,}"')], "[a-z] words only"),
    W("03.4", "SEARCH does not name search",
      [(r'(?!\w)", line):', r'(?!\w)", line, re.I):')], "the other name found case-insensitively"),
    # ---- 04.1 falsy args that are not objects
    W("04.1", "args is an empty list", [('args = data.get("args")', 'args = data.get("args") or {}')],
      "[], \"\" and false become {}"),
    # ---- 04.2 keep scanning after a RecursionError and inside an object; no checks on the action
    W("04.2", "too deep, then an action", [("        except (ValueError, RecursionError):",
                                            "        except RecursionError:\n            return None\n"
                                            "        except ValueError:")], "gives up at a RecursionError"),
    W("04.2", "an action inside an object", [("value, _ = DECODER.raw_decode(text, start)",
                                              "value, end = DECODER.raw_decode(text, start)"),
                                             ('start = text.find("{", start + 1)',
                                              'start = text.find("{", end if value is not None else start + 1)')],
      "skips past an object that is no action"),
    W("04.2", '{"tool": 5} is still found', [('"tool" in value', 'isinstance(value.get("tool"), str)')],
      "the action checked too"),
    # ---- 04.3 a "<" inside <think>, the name's spaces, args null, a failure's fields
    W("04.3", "a '<' inside <think>", [('visible = "".join(kept) + text[pos:]',
                                        'visible = re.sub(r"<think>[^<]*</think>", "", text)')],
      "a regex that stops at <"),
    W("04.3", "spaces around the name", [('tool=data["tool"].strip()', 'tool=data["tool"]')], "name not stripped"),
    W("04.3", "args null", [('args=data.get("args") or {}', 'args=data.get("args", {})')], "null args stay None"),
    W("04.3", "a failure: tool None, args {}", [("return ParsedReply(ok=False, error=problem)",
                                                 'return ParsedReply(ok=False, tool=data.get("tool"), error=problem)')],
      "a failure keeps the tool"),
    W("04.3", "two blocks side by side", [('visible = "".join(kept) + text[pos:]',
                                          'visible = re.sub(r"<think>.*?</think>", "", text, count=1, flags=re.DOTALL)')],
      "only the first block removed"),
    # ---- 05.1 bool is no float, bare list, dict[...], anything else fits, nested hints
    W("05.1", "true for float", [("return type(value) in (int, float)", "return isinstance(value, (int, float))")],
      "isinstance lets True in"),
    W("05.1", "[1, 'a'] for list", [("bool, list, dict,", "bool, dict,"),
                                    ("if origin is list:", "if origin is list or hint is list:"),
                                    ("(not members or all(", "(all(")], "a bare list's items checked"),
    W("05.1", "[] for dict[str, int]", [("    if origin is dict:\n        return type(value) is dict\n", "")],
      "dict[...] falls through"),
    W("05.1", "'red' for Literal[...]", [("    return True                             # an annotation we do not know",
                                          "    return False                            # an annotation we do not know")],
      "an unknown hint refuses"),
    W("05.1", "[None] for list[str | None]", [("all(matches(item, members[0]) for item in value)",
                                               "all(type(item) is members[0] for item in value)")],
      "items compared by type"),
    # ---- 05.2 *rest is no name; **fields does not make the others optional
    W("05.2", "*rest is no name", [("p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)", "p.kind is not p.VAR_KEYWORD"),
                                   ("p.name not in args]", "p.name not in args and p.kind is not p.VAR_POSITIONAL]")],
      "*rest taken for a name"),
    W("05.2", "**fields: message still required", [("    named = [p for p", "    if takes_any:\n        return None\n"
                                                                          "    named = [p for p")],
      "**fields makes every name optional"),
    W("05.2", "misspelled name", [(MISSING_05_2, ""), ("    unexpected = [a for a", MISSING_05_2 + "    unexpected = [a for a")],
      "missing names checked first"),
    # ---- 05.3 falsy results are not "nothing"
    W("05.3", "0 is not nothing", [("if isinstance(result, str):", "if isinstance(result, str) and result:"),
                                   ("elif result is None:", "elif not result:")], "falsy taken for nothing"),
    # ---- 05.4 Stop gets through; a signature inspect cannot read
    W("05.4", "Stop (KeyboardInterrupt)", [("    except Exception as e:\n", "    except BaseException as e:\n")],
      "BaseException caught"),
    W("05.4", "a signature inspect cannot read",
      [("    try:\n        problem = check_call(func, args)\n    except Exception as e:                  # e.g. a "
        "built-in whose signature inspect cannot read\n        return f\"Error: the call to {name} could not be "
        "checked ({type(e).__name__}: {e}).\", True\n", "    problem = check_call(func, args)\n")],
      "check_call not guarded"),
    W("05.4", "true for an int", [("json.dumps(value, ensure_ascii=False, default=str)[:60]", "repr(value)[:60]")],
      "the value as Python shows it"),
    # ---- 06.1 finish without an answer, the first messages, max_steps=True, a failed call adds nothing
    W("06.1", "finish without an answer", [('parsed.args.get("answer", "(the model finished without an answer)")',
                                            'parsed.args["answer"]')], "args['answer']"),
    W("06.1", "the first two messages", [('"content": build_system_prompt(tools)',
                                          '"content": "You are a helpful agent."')], "a system prompt of its own"),
    W("06.1", "max_steps=True", [("type(max_steps) is not int", "not isinstance(max_steps, int)")],
      "isinstance lets True in"),
    W("06.1", "a failed call adds nothing",
      [("        except ModelError as e:\n", "        except ModelError as e:\n"
                                             '            history.append({"role": "assistant", '
                                             '"content": f"(model failed: {e})"})\n')], "the failure noted"),
    # ---- 06.2 the same args in another key order, the last message is a reply
    W("06.2", "args in another key order", [("calls.append((parsed.tool, parsed.args))",
                                             "calls.append((parsed.tool, json.dumps(parsed.args)))")],
      "args compared as JSON text"),
    W("06.2", "the last message is a reply", [("for m in history\n", "for m in history[-2 * limit::2]\n"),
                                              (' and m.get("role") == "assistant"', "")],
      "every second message from the end"),
    W("06.2", "three bad replies are no repeat", [("        if not parsed.ok:\n            return False\n", "")],
      "parsed.ok not tested"),
    # ---- 06.3 only the digits 0-9, the message for every bad value, the default given, blank means unset
    W("06.3", '"+5"', [("    if not (raw.isascii() and raw.isdigit()) or int(raw) < 1:\n",
                        "    try:\n        int(raw)\n    except ValueError:\n        raise ValueError(f\"COURSE_MAX_STEPS "
                        "must be a positive whole number, not {raw!r}\") from None\n    if int(raw) < 1:\n")],
      "int() decides"),
    W("06.3", 'the message for "²"', [("raw.isascii() and raw.isdigit()", "raw.isdigit()")], "isdigit() alone"),
    W("06.3", "unset, default=10", [("return default", "return 6")], "a fixed default"),
    W("06.3", '"   " (only spaces)', [('raw = os.environ.get("COURSE_MAX_STEPS", "").strip()\n    if not raw:\n'
                                       "        return default\n",
                                       'raw = os.environ.get("COURSE_MAX_STEPS", "")\n    if not raw:\n'
                                       "        return default\n    raw = raw.strip()\n")], "stripped too late"),
    # ---- 06.4 indent=2
    W("06.4", "indent=2: one value per line", [("indent=2", "indent=None")], "one line"),
    # ---- 07.1 the failing call is recorded; the reply is passed on unchanged
    W("07.1", "the failing call is recorded",
      [("        self.calls.append(list(messages))   # a copy: the agent keeps appending to its own list\n", ""),
       ("if len(self.calls) > len(self.replies):", "if len(self.calls) >= len(self.replies):"),
       ("        return self.replies[", "        self.calls.append(list(messages))\n        return self.replies[")],
      "checked before recording"),
    W("07.1", "a reply comes back unchanged", [("return self.replies[len(self.calls) - 1]",
                                                "return Reply(text=str(self.replies[len(self.calls) - 1]))")],
      "the reply wrapped"),
    W("07.1", "the script stays intact", [("if len(self.calls) > len(self.replies):", "if not self.replies:"),
                                          ("return self.replies[len(self.calls) - 1]", "return self.replies.pop(0)")],
      "pop(0) empties the script"),
    # ---- 07.2 the order of the story
    W("07.2", "broken JSON comes first",
      [("        '{\"tool\": \"lookup\", \"args\": {\"topic\": \"단가\"}',   # broken JSON: the closing brace is missing\n",
        ""),
       ('        act("lookup", topic="discount"),                  # the knowledge base has no "discount": a tool error\n',
        '        act("lookup", topic="discount"),\n        \'{"tool": "lookup", "args": {"topic": "단가"}\',\n')],
      "the tool error first"),
    W("07.2", "unusable replies (bad JSON)", [("""'{"tool": "lookup", "args": {"topic": "단가"}',""",
                                               '"Let me look up the unit price first.",')], "prose for broken JSON"),
    W("07.2", "unusable replies (bad JSON)", [("""'{"tool": "lookup", "args": {"topic": "단가"}',""",
                                               """'{"tol": "lookup", "args": {"topic": "단가"}}',""")],
      "valid JSON without a tool key"),
    # ---- 07.3 the goal stripped, messages untouched, everything tried, not an observation
    W("07.3", "goal with spaces around it", [("topic=goal.strip()", "topic=goal")], "the goal as it came"),
    W("07.3", "messages are not changed", [("    tried = []\n", "    last_message = messages.pop()\n"
                                                               "    messages = messages + [last_message]\n"
                                                               "    tried = []\n")],
      "the caller's list loses its last message"),
    W("07.3", "every topic tried: give up", [('                return act("lookup", topic=topic)\n',
                                              '                return act("lookup", topic=topic)\n'
                                              '        return act("lookup", topic=tried[0])\n')], "never gives up"),
    W("07.3", "not an observation: give up",
      [('if last.startswith("Observation: ") and not last.startswith("Observation: Error"):',
        'if not last.startswith("Observation: Error"):')], "anything but an error is the fact"),
    # ---- 07.4 exactly 3 steps, and the run finishes after a tool error
    W("07.4", "bug: one step too few", [('assert agent.steps == 3, f"expected exactly 3 steps',
                                         'assert agent.steps <= 3, f"expected at most 3 steps')], "at most 3 steps"),
    W("07.4", "bug: finish is ignored",
      [('    assert agent.stop_reason == "finish", f"a tool error should not end the run, got {agent.stop_reason}"\n',
        "")], "finish not asserted"),
    # ---- 08.x ids: none missing, none twice; None, a dict and non-objects as arguments
    W("08.1", "the same id twice", [("if not all(ids) or len(set(ids)) != len(ids):", "if not all(ids):")],
      "ids may repeat"),
    W("08.2", "a call without an id", [("if not all(ids) or len(set(ids)) != len(ids):",
                                        "if len(set(ids)) != len(ids):")], "ids may be missing"),
    W("08.2", "is_error from the flag, not the text",
      [("        if observation.is_error:\n", '        if observation.content.startswith("Error"):\n')],
      "an error read from the text"),
    W("08.3", "'null', '[]' and '0' are kept", [('json.loads(raw or "{}")', 'json.loads(raw or "{}") or {}')],
      "falsy JSON becomes {}"),
    W("08.3", "only spaces: kept as text",
      [('        else:\n            try:\n                args = json.loads(raw or "{}")',
        '        elif not raw or not raw.strip():\n            args = {}\n'
        '        else:\n            try:\n                args = json.loads(raw)')], "spaces mean no arguments"),
    W("08.3", "arguments null", [('json.loads(raw or "{}")', 'json.loads(raw if raw != "" else "{}")')],
      "None is not \"\""),
    W("08.3", "arguments already a dict",
      [('        if isinstance(raw, dict):\n            args = raw\n        else:\n            try:\n'
        '                args = json.loads(raw or "{}")\n            except (TypeError, ValueError):\n'
        "                args = raw",
        '        try:\n            args = json.loads(raw or "{}")\n        except json.JSONDecodeError:\n'
        "            args = raw")], "only text expected"),
    W("08.3", "valid JSON, not an object",
      [("                args = raw   # the dispatcher answers with an error the model can fix\n",
        "                args = raw   # the dispatcher answers with an error the model can fix\n"
        "            if not isinstance(args, dict):\n                args = raw\n")], "non-objects thrown away"),
    # ---- 08.4 the output items kept whole, results named by call_id (not id), exactly three keys, ids checked
    W("08.4", "then one result per call, in order",
      [('"call_id": item["call_id"], "output"', '"call_id": item["id"], "output"')], "the item's id, not its call_id"),
    W("08.4", "the output items first, unchanged", [("return list(output) + results", "return calls + results")],
      "only the calls sent back: reasoning and message dropped"),
    W("08.4", "result item keys", [('"output": observation.content}',
                                    '"output": observation.content, "is_error": observation.is_error}')],
      "is_error, which the Responses API does not have"),
    W("08.4", "2 calls, 1 observation",
      [('    if len(calls) != len(observations):\n        raise ValueError(f"{len(calls)} call(s) but '
        '{len(observations)} observation(s): each call needs one")\n', "")], "zip drops a call silently"),
    W("08.4", "the same call_id twice", [("if not all(ids) or len(set(ids)) != len(ids):", "if not all(ids):")],
      "call_ids may repeat"),
    W("08.4", "the output items first, unchanged",
      [('if item.get("type") == "function_call"]', 'if item.get("type") != "reasoning"]')],
      "every item but reasoning taken for a call"),
    # ---- 08.5 a stream that broke off taken for a reply; pieces of two calls mixed; arguments parsed too eagerly or
    # not at all; choices past the first; usage lost; calls in arrival order; the first piece not checked
    W("08.5", "a stream that broke off", [('    if finish is None:\n        raise ValueError("the stream broke off before '
                                          'its finish_reason: none of it may be used")\n', "")],
      "a broken stream taken for a reply"),
    W("08.5", "two calls, pieces interleaved", [('calls[k]["arguments"].append(', 'calls[max(calls)]["arguments"].append(')],
      "each piece added to the newest call"),
    W("08.5", "cut off at the token limit", [("        return arguments\n", "        return {}\n")],
      "broken JSON read as {}"),
    W("08.5", "JSON, but not an object", [("    return value if isinstance(value, dict) else arguments", "    return value")],
      "any JSON kept"),
    W("08.5", "another choice is not ours", [("            if choice.get(\"index\", 0) != 0:", "            if False:")],
      "every choice read"),
    W("08.5", "usage from the last chunk", [('        usage = chunk.get("usage") or usage', "")], "usage never read"),
    W("08.5", "calls in order of index", [("for _, c in sorted(calls.items())", "for _, c in calls.items()")],
      "calls in arrival order"),
    W("08.5", "a piece before its call's first", [('                    if not part.get("id") or not function.get("name"):\n'
                                                   '                        raise ValueError(f"the first piece of tool '
                                                   'call {k!r} has no id or no name")\n', "")],
      "the first piece not checked"),
    # ---- 09.1 normalise both sides (every zero-width character), every text at any depth (keys and tuples too, a
    # number as a key skipped), each seen text on its own, min_span an int
    W("09.1", "other spaces and case", [('return " ".join(text.split()).casefold()', "return text.lower()")],
      "no squeeze, lower()"),
    W("09.1", "ß casefolds to ss", [("split()).casefold()", "split()).lower()")], "lower() for casefold()"),
    W("09.1", "non-breaking spaces", [("def find_tainted(", "import re\n\n\ndef find_tainted("),
                                      ('" ".join(text.split())', r're.sub(r"[ \t\n]+", " ", text).strip()')],
      "only ASCII whitespace squeezed"),
    W("09.1", "Korean in NFD form", [('unicodedata.normalize("NFC", text.translate(dict.fromkeys(map(ord, '
                                      'ZERO_WIDTH))))', r'text.replace("\u200b", "")')],
      "no NFC, only U+200B removed"),
    W("09.1", "zero-width characters", [("text.translate(dict.fromkeys(map(ord, ZERO_WIDTH)))", "text")],
      "zero-width characters kept"),
    W("09.1", "nested in lists and dicts", [("def texts(value):", "def texts(value, depth=0):"),
                                            ("elif isinstance(value, dict):", "elif isinstance(value, dict) and not depth:"),
                                            ("elif isinstance(value, (list, tuple)):",
                                             "elif isinstance(value, (list, tuple)) and not depth:"),
                                            ("texts(key)\n                yield from texts(item)",
                                             "texts(key, 1)\n                yield from texts(item, 1)"),
                                            ("for item in value:\n                yield from texts(item)",
                                             "for item in value:\n                yield from texts(item, 1)")],
      "one level deep only"),
    W("09.1", "hidden in a dict key", [("                yield from texts(key)\n", "")], "keys skipped"),
    W("09.1", "a key before its value", [("yield from texts(key)\n                yield from texts(item)",
                                          "yield from texts(item)\n                yield from texts(key)")],
      "a value before its key"),
    W("09.1", "inside a tuple", [("isinstance(value, (list, tuple))", "isinstance(value, list)")], "tuples skipped"),
    W("09.1", "exactly min_span copied", [("range(len(text) - k + 1))", "range(len(text) - k))"),
                                          ("range(len(text) - k + 1):", "range(len(text) - k):")],
      "the last window missed"),
    W("09.1", "no span across two outputs", [("map(normal, seen_texts)", 'map(normal, [" ".join(seen_texts)])')],
      "the seen texts joined"),
    W("09.1", "min_span '20' is refused", [("type(min_span) is not int or ", "")], "min_span's type not checked"),
    W("09.1", "min_span 8.0 is refused", [("type(min_span) is not int", "not isinstance(min_span, (int, float))")],
      "a float min_span let through"),
    W("09.1", "min_span 8 is allowed", [("min_span < 8", "min_span <= 8")], "8 refused"),
    W("09.1", "args are not changed",
      [("    k, seen = min_span, set()\n", "    for key in args if isinstance(args, dict) else ():\n"
                                          "        if isinstance(args[key], str):\n"
                                          "            args[key] = normal(args[key])\n"
                                          "    k, seen = min_span, set()\n")], "args normalised in place"),
    W("09.1", "a number as a dict key", [("yield from texts(key)", "yield key")], "every key taken for text"),
    W("09.1", "zero-width characters", [("text.translate(dict.fromkeys(map(ord, ZERO_WIDTH)))",
                                         r'text.replace("\u200b", "")')], "only U+200B removed"),
    W("09.1", "the argument normalised too",
      [*SEEN_ONLY_09_1, (NORMAL_09_1, '(unicodedata.normalize("NFC", text) if seen else text).translate('
                                      "dict.fromkeys(map(ord, ZERO_WIDTH)))")], "NFC only for the seen texts"),
    W("09.1", "the argument normalised too",
      [*SEEN_ONLY_09_1, (NORMAL_09_1, 'unicodedata.normalize("NFC", text.translate(dict.fromkeys(map(ord, ZERO_WIDTH)))'
                                      " if seen else text)")], "zero-width removed only from the seen texts"),
    # ---- 09.2 taint overrides always but not never; the default asks, and '*' applies as it is; names are exact; a
    # broken rule denies (a space, a list)
    W("09.2", "taint turns always into ask", [("    if tainted:\n", '    if tainted and rule != "always":\n')],
      "always stays always"),
    W("09.2", "never stays never, tainted", [('    if rule == "never":\n', '    if rule == "never" and not tainted:\n')],
      "taint turns never into ask"),
    W("09.2", "not named: default 'ask'", [('rules.get("*", "ask")', 'rules.get("*", "always")')],
      "the default allows"),
    W("09.2", "names are exact", [("    if tool in rules:\n        rule, said = rules[tool], f\"{tool} is set to "
                                   "'{rules[tool]}'\"",
                                   "    if tool.lower() in rules:\n        rule, said = rules[tool.lower()], "
                                   "f\"{tool} is set to '{rules[tool.lower()]}'\"")], "names lowered"),
    W("09.2", "a broken rule denies", [('return "deny", f"the rule for {tool} is {rule!r}, which is not',
                                        'return "ask", f"the rule for {tool} is {rule!r}, which is not')],
      "a broken rule asks"),
    W("09.2", "empty span: not tainted", [("    if tainted:\n", "    if tainted is not None:\n")],
      "an empty span is taint"),
    W("09.2", "'always ' (a space) denies", [("    if rule not in", "    if isinstance(rule, str):\n"
                                                                 "        rule = rule.strip()\n    if rule not in")],
      "the rule stripped"),
    W("09.2", "a list as the rule denies", [('not in ("always", "ask", "never")', 'not in {"always", "ask", "never"}')],
      "a set lookup: a list raises"),
    W("09.2", "not named: '*' is 'always'",
      [("""        said = f"{tool} is not in the rules, so the default applies: '{rule}'"\n""",
        """        said = f"{tool} is not in the rules, so the default applies: '{rule}'"\n"""
        '        rule = "ask" if rule == "always" else rule\n')], "a default never allows"),
    W("09.2", "the rules are not changed", [("    if tool in rules:\n",
                                             '    rules.setdefault(tool, rules.get("*", "ask"))\n'
                                             "    if tool in rules:\n")], "the rule written back"),
    # ---- 09.3 the edge (exact, not rounded), everything spent counts, NaN, 0, True, negatives, missing counts and no
    # limit refused, tokens first, the prices given, the inputs left alone
    W("09.3", "landing exactly on it", [("tokens_in + tokens_out > max_tokens", "tokens_in + tokens_out >= max_tokens"),
                                        ("cost > max_cost", "cost >= max_cost")], ">= for >"),
    W("09.3", "one token over", [('spent["input_tokens"] + next_call', "next_call"),
                                 ('spent["output_tokens"] + next_call', "next_call")], "the spent tokens left out"),
    W("09.3", "NaN budget is refused", [("not 0 < limit < math.inf", "limit <= 0 or limit == math.inf")],
      "NaN is neither"),
    W("09.3", "True as max_tokens", [("type(limit) not in (int, float)", "not isinstance(limit, (int, float))")],
      "isinstance lets True in"),
    W("09.3", "negative tokens refused", [("if type(n) is not int or n < 0:", "if type(n) is not int:")],
      "negatives let through"),
    W("09.3", "tokens are checked first", [(TOKENS_09_3, ""), (COST_END_09_3, COST_END_09_3 + TOKENS_09_3)],
      "cost first"),
    W("09.3", "a millionth of a dollar over", [("cost > max_cost", "round(cost, 4) > max_cost")], "the cost rounded"),
    W("09.3", "max_tokens 0 refused", [("not 0 < limit < math.inf", "not 0 <= limit < math.inf")], "0 allowed"),
    W("09.3", "both limits None", [("if max_tokens is None and max_cost is None:", "if not limits:")],
      "an empty dict only"),
    W("09.3", "True as a token count", [("if type(n) is not int or n < 0:", "if not isinstance(n, int) or n < 0:")],
      "isinstance lets True in"),
    W("09.3", "a token count missing", [("n = part.get(key)", "n = part[key]")], "a KeyError"),
    W("09.3", "the inputs are not changed",
      [('    tokens_in = spent["input_tokens"] + next_call["input_tokens"]\n'
        '    tokens_out = spent["output_tokens"] + next_call["output_tokens"]\n',
        '    spent["input_tokens"] += next_call["input_tokens"]\n'
        '    spent["output_tokens"] += next_call["output_tokens"]\n'
        '    tokens_in, tokens_out = spent["input_tokens"], spent["output_tokens"]\n')], "added into spent"),
    W("09.3", "your prices", [('prices["input"] + tokens_out * prices["output"]',
                               'EXAMPLE_PRICES["input"] + tokens_out * EXAMPLE_PRICES["output"]')],
      "the example prices always"),
    # ---- 09.4 Korean as itself, squeeze, cut to the limit with the ellipsis, fold neighbours only, 11 and a count
    W("09.4", "one call", [("ensure_ascii=False", "ensure_ascii=True")], "Korean escaped"),
    W("09.4", "newlines squeezed", [('        text = " ".join(text.split())\n', "")], "not squeezed"),
    W("09.4", "long result cut at 80", [("text[:limit - 1]", "text[:limit]")], "the ellipsis over the limit"),
    W("09.4", "only in a row",
      [("    folded = []   # [line, how many times in a row]\n    for line in lines:\n"
        "        if folded and folded[-1][0] == line:\n            folded[-1][1] += 1\n        else:\n"
        "            folded.append([line, 1])\n",
        "    folded = [[line, lines.count(line)] for line in dict.fromkeys(lines)]\n")], "every repeat folded"),
    W("09.4", "13 lines: 11 and a count", [('tried[:11] + [f"… and {len(tried) - 11} more"]',
                                           'tried[:12] + [f"… and {len(tried) - 12} more"]')], "12 and a count"),
    W("09.4", "16 calls, 13 lines: 11 and 2 more", [("{len(tried) - 11} more", "{len(calls) - 11} more")],
      "calls counted, not lines"),
    # ---- 10.1 a step starts at every assistant message only; every item is a dict; the head is a new list
    W("10.1", "a chat: head and steps", [('if m["role"] == "assistant":', 'if m["role"] in ("assistant", "user"):')],
      "user messages start steps too"),
    W("10.1", "the role 'robot'", [(' or m.get("role") not in roles', "")], "roles not checked"),
    W("10.1", "a string among the messages", [('not isinstance(m, dict) or m.get("role")', 'm.get("role")')],
      "items not checked"),
    W("10.1", "a new head list", [("    head, steps = [], []\n",
                                   '    if not any(m["role"] == "assistant" for m in history):\n'
                                   "        return history, []\n    head, steps = [], []\n")],
      "the input list as the head"),
    W("10.1", "two equal replies ('ok')",
      [(LOOP_10_1, '    starts = [history.index(m) for m in history if m["role"] == "assistant"]\n'
                   "    head = list(history[:starts[0]] if starts else history)\n"
                   "    return head, [history[a:b] for a, b in zip(starts, starts[1:] + [len(history)])]")],
      "steps found with history.index()"),
    W("10.1", "a tuple", [("isinstance(history, list)", "isinstance(history, (list, tuple))")], "a tuple let through"),
    W("10.1", "the message names history[2]", [('f"history[{i}] is not a message', 'f"this is not a message')],
      "the position not said"),
    # ---- 10.2 the classic steps[-0:]; the question forgotten; notes taken for the user; True is an int; messages
    W("10.2", "keep 0: the question stays", [("steps[first:]", "steps[-keep:]")], "steps[-keep:]"),
    W("10.2", "the question moves up", [("pinned = [said[-1][1]] if said and said[-1][0] < first else []",
                                         "pinned = []")], "no pinned question"),
    W("10.2", "an observation is not the user's", [('notes = ("Observation: ", "Your reply could not be used")',
                                                    'notes = ("Observation: ",)')], "one note forgotten"),
    W("10.2", "an observation is not the user's", [('notes = ("Observation: ", "Your reply could not be used")',
                                                    'notes = ("Your reply could not be used",)')],
      "an observation taken for the question"),
    W("10.2", "keep=True", [("type(keep) is not int", "not isinstance(keep, int)")], "isinstance lets True in"),
    W("10.2", "only the goal: kept once", [("if said and said[-1][0] < first", "if said[-1][0] < first")],
      "said[-1] with no user message in any step: IndexError"),
    W("10.2", "only the goal: kept once", [("said = [(k, m) for k, step in enumerate(steps) for m in step\n",
                                            "said = [(k - 1, m) for k, step in enumerate([head] + steps) for m in step\n")],
      "the user's latest message looked for in the head too: the goal added twice"),
    W("10.2", "every result follows its call", BY_MESSAGES_10_2, "cut by messages"),
    W("10.2", "the stand-in accepts every window", BY_MESSAGES_10_2, "cut by messages"),
    # ---- 10.3 SQL built from the text; spaces; only prefixes; the key quoted back; the length before collapsing
    W("10.3", "SQL in the note is only text", [('sql(db, "SELECT id FROM notes WHERE text = ?", (text,))',
                                               "sql(db, f\"SELECT id FROM notes WHERE text = '{text}'\")")],
      "SQL built from the text"),
    W("10.3", "the same note, other spaces", [(COLLAPSE_10_3, "")], "spaces kept"),
    W("10.3", "a long token of mixed characters", [("if key_prefix or mixed_runs:", "if key_prefix:")],
      "only prefixes"),
    W("10.3", "the refusal does not repeat the key",
      [('raise ToolError("this looks like an API key or another secret; secrets are never saved in memory")',
        'raise ToolError(f"refused {text!r}: it looks like a secret")')], "the key quoted back"),
    W("10.3", "'task-management' is no key", [(r'r"\b(?:sk-', 'r"(?:sk-')], "no \\b before the prefix"),
    W("10.3", "500 characters, spaces around", [(COLLAPSE_10_3, ""), (TOO_LONG_10_3, TOO_LONG_10_3 + COLLAPSE_10_3)],
      "measured before collapsing"),
    W("10.3", "sk- and 11 characters is fine", [("[A-Za-z0-9_-]{12,}", "[A-Za-z0-9_-]{11,}")], "11 are enough"),
    W("10.3", "SK- in capitals is fine", [("[A-Za-z0-9_-]{12,}\", text)", "[A-Za-z0-9_-]{12,}\", text, re.I)")],
      "prefixes in any case"),
    W("10.3", "a CamelCase name (no digit) is fine", [(' and re.search("[0-9]", run)', "")], "no digit needed"),
    # ---- 10.4 LIKE's wildcards; SQL built from words split at spaces; oldest first; True as a limit; every word used;
    # the query in the no-match text; the limit before ranking; counted in Python with case, or every occurrence;
    # repeated words dropped
    W("10.4", "_ is not a wildcard", [(r're.sub(r"([\\%_])", r"\\\1", word)', "word")], "wildcards not escaped"),
    W("10.4", "SQL in the query is only text",
      [(r're.findall(r"\w+", query)', "query.split()"),
       (r'''["(text LIKE ? ESCAPE '\\')"] * len(words)''', '''(f"(text LIKE '%{word}%')" for word in words)'''),
       ('LIMIT ?",\n               [*patterns, *patterns, limit])', 'LIMIT {limit}")')], "SQL built from the words"),
    W("10.4", "newest first among equals", [("DESC, id DESC", "DESC, id")], "oldest first"),
    W("10.4", "limit=True", [("type(limit) is not int", "not isinstance(limit, int)")], "isinstance lets True in"),
    W("10.4", "at most 10 words are used", [("query)[:10]", "query)")], "every word used"),
    W("10.4", "no match: the words, not the query", [("No memory matches '{' '.join(words)}'.",
                                                      "No memory matches '{query}'.")], "the query quoted"),
    W("10.4", "limit=1: the best of all",
      [(RANKED_10_4, '    rows = sql(db, f"SELECT id, text FROM notes WHERE {hits} > 0 LIMIT ?",\n'
                     "               [*patterns, limit]).fetchall()\n"
                     "    rows.sort(key=lambda row: (-sum(w.lower() in row[1].lower() for w in words), -row[0]))")],
      "the oldest cut, then ranked"),
    W("10.4", "limit=1: the best of all",
      [(RANKED_10_4, '    rows = sql(db, f"SELECT id, text FROM notes WHERE {hits} > 0 ORDER BY id DESC LIMIT ?",\n'
                     "               [*patterns, limit]).fetchall()\n"
                     "    rows.sort(key=lambda row: -sum(w.lower() in row[1].lower() for w in words))")],
      "the newest cut, then ranked"),
    W("10.4", "each word once, in any case",
      [(RANKED_10_4, COUNTED_10_4 + "    rows = sorted(rows, key=lambda row: (-sum(w in row[1] for w in words), "
                                    "-row[0]))[:limit]")], "counted in Python, case and all"),
    W("10.4", "each word once, in any case",
      [(RANKED_10_4, COUNTED_10_4 + "    rows = sorted(rows, key=lambda row: (-sum(row[1].lower().count(w.lower()) "
                                    "for w in words), -row[0]))[:limit]")], "every occurrence counted"),
    W("10.4", "a word twice in the query counts twice",
      [(r're.findall(r"\w+", query)[:10]', r'list(dict.fromkeys(re.findall(r"\w+", query)[:10]))')],
      "repeated words dropped"),
    # ---- 11.1 BM25Okapi's floor, its mean, counts, 0/0, avgdl, text, the idf formula, speed
    W("11.1", "in most documents: the epsilon floor",
      [("idf = {w: floor if value < 0 else value for w, value in raw.items()}", "idf = raw")], "no epsilon floor"),
    W("11.1", "idf exactly 0 is not floored", [("floor if value < 0 else", "floor if value <= 0 else")],
      "<= 0 floored"),
    W("11.1", "in most documents: the epsilon floor",
      [("floor = epsilon * sum(raw.values()) / len(raw) if raw else 0.0",
        "tokens = [w for doc in docs for w in doc]\n"
        "    floor = epsilon * sum(raw[w] for w in tokens) / len(tokens) if tokens else 0.0")],
      "the floor's mean over tokens"),
    W("11.1", "every word common: a floor below 0",
      [("floor = epsilon * sum(raw.values()) / len(raw) if raw else 0.0",
        "floor = epsilon * abs(sum(raw.values()) / len(raw)) if raw else 0.0")], "abs() of the mean"),
    W("11.1", "a query word twice counts twice", [("for word in query_tokens:", "for word in dict.fromkeys(query_tokens):")],
      "the query deduplicated"),
    W("11.1", "more matches help less and less", [("f = count.get(word, 0)", "f = min(count.get(word, 0), 1)")],
      "presence, not counts"),
    W("11.1", "k1=0: only whether the word is there", EVERY_DOC_11_1, "every document scored"),
    W("11.1", "every document empty", EVERY_DOC_11_1, "every document scored"),
    W("11.1", "empty documents count", [("avgdl = sum(lengths) / len(docs)",
                                         "kept = [n for n in lengths if n]\n"
                                         "    avgdl = sum(kept) / len(kept) if kept else 0.0")],
      "empty documents left out of avgdl"),
    W("11.1", "text instead of tokens",
      [("    if isinstance(query_tokens, str) or isinstance(docs, str) or any(isinstance(doc, str) for doc in docs):\n"
        '        raise TypeError("BM25 scores lists of tokens, e.g. tokenize(text), not plain text")\n', "")],
      "letters scored as tokens"),
    # Lucene's idf, ln(1 + (N - n + 0.5)/(n + 0.5)), the formula on many web pages: a different formula changes
    # every score, which is the point of its case
    W("11.1", "one word in one document", [("math.log((n_docs - n + 0.5) / (n + 0.5))",
                                            "math.log(1 + (n_docs - n + 0.5) / (n + 0.5))")], "Lucene's idf",
      one_slip=False),
    W("11.1", "5,000 documents", [("holding = Counter(word for count in counts for word in count)",
                                   "holding = {w: sum(w in doc for doc in docs) for w in {w for doc in docs for w in doc}}")],
      "every word looked up in every document"),
    # ---- 11.2 the last step; negative indexes; True as 1; the caller's plan changed (in place, or through the
    # dicts a shallow copy shares); the note as it came; a failed step ticked off; an invisible character; the length
    # measured before joining the whitespace
    W("11.2", "the last step", [("not 1 <= index <= len(todos)", "not 1 <= index < len(todos)")], "< for <="),
    W("11.2", "index -1", [("not 1 <= index <= len(todos)", "not -len(todos) <= index <= len(todos)")],
      "Python's negative indexes"),
    W("11.2", "index True", [("type(index) is not int", "not isinstance(index, int)")], "isinstance lets True in"),
    W("11.2", "a new list; the plan is not changed", [("plan = [dict(step) for step in todos]", "plan = todos")],
      "in place"),
    W("11.2", "a new list; the plan is not changed", [("plan = [dict(step) for step in todos]", "plan = list(todos)")],
      "a shallow copy"),
    W("11.2", "a fake line in the note", [('" ".join(note.split()) if', "note if")], "the note as it came"),
    W("11.2", "a failed step",
      [('    if status == "failed":\n        raise ToolError(f"step {index} failed; replan it with new steps instead '
        'of marking it done")\n', "")], "a failed step ticked off"),
    W("11.2", "an invisible character", [(" or not note.isprintable()", "")], "invisible characters let through"),
    W("11.2", "already done, with a bad note", [(NOTE_11_2, ""), ('    status = todos[index - 1]["status"]\n',
                                                                  NOTE_11_2 + '    status = todos[index - 1]["status"]\n')],
      "the note checked before the step"),
    W("11.2", "300 characters of note", [("if isinstance(note, str) else None",
                                          "if isinstance(note, str) and len(note) <= 300 else None")],
      "measured before joining"),
    # ---- 11.3 the draft read as the verdict; "yes" taken for true; a later object given a second chance; a no
    # without feedback; feedback kept on many lines; RecursionError let out; every brace, or 51, tried; only decoded
    # braces counted; the whole reply, or 20,001 characters, read; cut before the last </think>; feedback cut before
    # joining; only the first brace tried; str() or decode() of what is not text; <think> blocks cut out, or the first
    # </think>; a yes's feedback not joined
    W("11.3", "a draft in <think> is not the verdict", [('text.rpartition("</think>")[2][:20_000]', "text[:20_000]")],
      "the draft read"),
    W("11.3", '"ok": "yes"', [("            if type(ok) is not bool:\n                return None\n",
                               "            ok = bool(ok)\n")], "truthiness for ok"),
    W("11.3", "the first ok decides", [("                return None\n            feedback",
                                        "                continue\n            feedback")],
      "a later object gets a second chance"),
    W("11.3", "rejected without feedback", [(" if ok or feedback else None", "")], "a no without feedback"),
    W("11.3", "feedback on one line", [('" ".join(feedback.split())[:1000]', "feedback[:1000]")],
      "feedback on many lines"),
    W("11.3", "nested 100,000 deep", [("except (ValueError, RecursionError):", "except ValueError:")],
      "RecursionError let out"),
    W("11.3", "the 50th '{' is tried, the 51st is not", [("        if tried == 50:\n            break\n", "")],
      "every brace tried"),
    W("11.3", "the 50th '{' is tried, the 51st is not", [("if tried == 50:", "if tried > 50:")], "51 braces tried"),
    W("11.3", "60 broken '{' first", [(r'enumerate(re.finditer(r"\{", text))', r're.finditer(r"\{", text)'),
                                      ("    for tried, brace in", "    tried = 0\n    for brace in"),
                                      ("            continue\n        if isinstance(value, dict)",
                                       "            continue\n        tried += 1\n        if isinstance(value, dict)")],
      "only decoded braces counted"),
    W("11.3", "ending at character 20,000, or 20,001", [("[2][:20_000]", "[2]")], "the whole reply read"),
    W("11.3", "ending at character 20,000, or 20,001", [("[:20_000]", "[:20_001]")], "20,001 characters"),
    W("11.3", "a long draft, then the verdict", [('text.rpartition("</think>")[2][:20_000]',
                                                  'text[:20_000].rpartition("</think>")[2]')],
      "cut before the last </think> is found"),
    W("11.3", "feedback after 1,000 spaces", [('" ".join(feedback.split())[:1000]', '" ".join(feedback[:1000].split())')],
      "cut before joining the whitespace"),
    W("11.3", "skip objects without ok", [(r're.finditer(r"\{", text)', r'[m for m in [re.search(r"\{", text)] if m]')],
      "only the first brace tried"),
    W("11.3", "not text: None, 42, bytes", [("    if not isinstance(text, str) or not text.strip():\n",
                                              "    if text is None:\n        return None\n    text = str(text)\n"
                                              "    if not text.strip():\n")], "str() of anything"),
    W("11.3", "not text: None, 42, bytes", [("    if not isinstance(text, str) or not text.strip():\n",
                                              "    if isinstance(text, bytes):\n        text = text.decode()\n"
                                              "    if not isinstance(text, str) or not text.strip():\n")],
      "bytes decoded"),
    W("11.3", "after the last </think> only", [('text.rpartition("</think>")[2]',
                                                're.sub(r"<think>.*?</think>", "", text, flags=re.S)')],
      "<think>...</think> cut out"),
    W("11.3", "after the last </think> only", [('text.rpartition("</think>")[2]',
                                                'text.partition("</think>")[2] or text')], "the first </think>"),
    W("11.3", "accepted with a comment",
      [('            feedback = " ".join(feedback.split())[:1000] if isinstance(feedback, str) else ""\n',
        '            if ok:\n'
        '                return {"ok": True, "feedback": feedback if isinstance(feedback, str) else ""}\n'
        '            feedback = " ".join(feedback.split())[:1000] if isinstance(feedback, str) else ""\n')],
      "a yes's feedback as it came"),
    # ---- 11.4 breadth first; the task with its newlines; no loop check; lists for tuples; calls unchecked; a missing
    # task let through; a task required on the top node; a tuple for calls
    W("11.4", "nested: depth first", [("            walk(call)\n", ""),
                                      ("    walk(tree)\n", '    level = [tree]\n    for node in level:\n'
                                                             '        walk(node)\n        level += node["calls"]\n')],
      "breadth first"),
    W("11.4", "a task on one line", [('" ".join(call["task"].split())', 'call["task"]')], "the task as it came"),
    W("11.4", "a tree that contains itself",
      [("        if id(node) in seen:\n            raise ValueError(f\"the node of {node['agent']!r} appears twice: a "
        'call tree cannot contain itself")\n', "")], "no loop check"),
    W("11.4", "a team of two", [('found.append((node["agent"], call["agent"], " ".join(call["task"].split())))',
                                 'found.append([node["agent"], call["agent"], " ".join(call["task"].split())])')],
      "lists for tuples"),
    W("11.4", "calls is None", CALLS_UNCHECKED_11_4, "calls unchecked"),
    W("11.4", "no calls key", CALLS_UNCHECKED_11_4, "calls unchecked"),
    W("11.4", "a call without a task",
      [('            if not isinstance(call.get("task"), str):\n'
        "                raise ValueError(f\"the call of {call['agent']!r} has no task text\")\n", "")],
      "a missing task let through"),
    W("11.4", "the top node without a task", [(' \\\n                or not isinstance(node.get("calls"), list)',
                                               ' \\\n                or not isinstance(node.get("calls"), list) '
                                               'or not isinstance(node.get("task"), str)')],
      "a task on the top node required"),
    W("11.4", "calls as a tuple", [('isinstance(node.get("calls"), list)', 'isinstance(node.get("calls"), (list, tuple))')],
      "a tuple for calls"),
    # ---- 11.5 an optional property left optional; null added twice or to a required one; constraints kept or
    # dropped; the description overwritten; only the top object; the given schema changed; a free dict let through
    W("11.5", "an optional property becomes nullable", [('out["required"], out["additionalProperties"] = '
                                                          'list(out["properties"]), False',
                                                          'out["required"], out["additionalProperties"] = '
                                                          'list(required), False')], "optional left optional"),
    W("11.5", "already nullable: no second null", [('kinds + ["null"] * ("null" not in kinds)', 'kinds + ["null"]')],
      "null added twice"),
    W("11.5", "a required property takes no null", [("            if name not in required:", "            if True:")],
      "every property nullable"),
    W("11.5", "a default moves to the description", [('        elif key not in ("required", "additionalProperties"):',
                                                        '        elif key not in ("required", "additionalProperties", '
                                                        '"default"):')], "a default dropped"),
    W("11.5", "a default moves to the description", [('f"{out[\'description\']}\\n\\n{note}" if out.get("description") '
                                                        'else note', "note")], "the description overwritten"),
    W("11.5", "Korean in a moved value", [("json.dumps(moved, ensure_ascii=False)", "json.dumps(moved)")],
      "Korean escaped"),
    W("11.5", "minItems 0 or 1 stays, others move", [(' or (key == "minItems" and value in (0, 1))',
                                                       ' or key == "minItems"')], "every minItems kept"),
    W("11.5", "both providers accept the results", [('("type", "enum", "const", "description", "title")',
                                                      '("type", "enum", "const", "description", "title", "minimum", '
                                                      '"default")')], "constraints kept"),
    W("11.5", "objects inside arrays too", [("            out[key] = strict_schema(value)\n",
                                             "            out[key] = json.loads(json.dumps(value))\n")],
      "arrays not entered"),
    W("11.5", "the schema given is not changed", [("    out, moved = {}, {}\n", "    out, moved = schema, {}\n"),
                                                  ("        if key == \"properties\":",
                                                   "        if key in (\"required\", \"additionalProperties\"):\n"
                                                   "            continue\n        elif key == \"properties\":"),
                                                  ("    for key, value in schema.items():",
                                                   "    for key, value in list(schema.items()):")],
      "the schema edited in place"),
    W("11.5", "an object without properties", [("        if not schema.get(\"properties\"):\n", "        if False:\n")],
      "a free dict let through"),
    # ---- 12.1 Unicode forms (of the answer, of the check's texts); case; every number and how numbers are read
    # (commas, units, sums, a word after a number, a minus sign); the tolerance's edge and float slack; all vs any;
    # re.match; None read as ""; a Match object; an unknown type passed over; amounts added across other text; no
    # answer decided before the check is checked
    W("12.1", "exact: decomposed Hangul (NFD)", NO_NFC_12_1, "no NFC"),
    W("12.1", "contains: decomposed Hangul (NFD)", NO_NFC_12_1, "no NFC"),
    W("12.1", "exact: the check's text decomposed (NFD)", CHECK_NOT_NORMALISED_12_1, "the check's text not NFC"),
    W("12.1", "contains: the check's text decomposed (NFD)", CHECK_NOT_NORMALISED_12_1, "the check's text not NFC"),
    W("12.1", "exact: case counts", [('return text == norm(check["value"])',
                                      'return text.casefold() == norm(check["value"]).casefold()')],
      "case ignored in exact"),
    W("12.1", "contains: ß casefolds to ss", [("norm(value).casefold() in text.casefold()",
                                               "norm(value).lower() in text.lower()")], "lower() for casefold()"),
    W("12.1", "number: 3일 is 3", [(r"(?:\.\d+)?)\s?", r"(?:\.\d+)?)\b\s?")], "\\b after the number"),
    W("12.1", "number: no tolerance, exactly right", EDGE_12_1, "< and no slack"),
    W("12.1", "number: at the edge, 168.5", EDGE_12_1, "< and no slack"),
    W("12.1", "number: 255,000원", [(r"(?:\d{1,3}(?:,\d{3})+|\d+)", r"\d+")], "no thousands commas"),
    W("12.1", "number: the inputs restated first",
      [(ANY_NUMBER_12_1, 'bool(found) and abs(found[0] - check["value"]) <= check.get("tolerance", 0) + 1e-9')],
      "only the first number is read"),
    W("12.1", "number: 1,2,3 is not 123", [("        units = {None: 1,",
                                            '        text = text.replace(",", "")\n        units = {None: 1,')],
      "commas removed everywhere"),
    W("12.1", "number: 25만 is 250,000", [("unit = units[m.group(2)]", "unit = 1")], "units ignored"),
    W("12.1", "number: 25만 5천원 adds up", [(ADD_UP_12_1, "")], "amounts never added"),
    W("12.1", "number: 5천 25만 does not", [("last[0] > unit and ", "")], "any units added, rising too"),
    W("12.1", "number: a minus sign", [("(-?(?:", "((?:")], "no minus sign"),
    W("12.1", "number: 3.6 within 0.1 of 3.5", [(" + 1e-9", "")], "no float slack"),
    W("12.1", "contains: case does not matter", [("norm(value).casefold() in text.casefold()", "norm(value) in text")],
      "case counts in contains"),
    W("12.1", "contains: every text must be there", [("return all(norm(value)", "return any(norm(value)")],
      "any for all"),
    W("12.1", "regex: a search, not a match", [("re.search(check", "re.match(check")], "re.match"),
    W("12.1", "no answer never passes", [("        return False\n", '        answer = ""\n')], "None read as \"\""),
    W("12.1", "returns a bool", [('re.search(check["pattern"], text) is not None', 're.search(check["pattern"], text)')],
      "a Match object"),
    W("12.1", "an unknown type", [(' or check.get("type") not in ("exact", "number", "contains", "regex")', "")],
      "the type not checked"),
    W("12.1", "number: 25만원이 아니라 5천원", [(" and not text[last[1]:m.start()].strip()", "")], "added across other text"),
    W("12.1", "no check, and no answer", [('    if not isinstance(check, dict) or check.get("type")',
                                          '    if answer is None:\n        return False\n'
                                          '    if not isinstance(check, dict) or check.get("type")')],
      "no answer decided first"),
    # ---- 12.2 pass^k as pass_rate ** k; any and all swapped; unequal repeats let through; truthy records; 0/0; an
    # int 0 for no runs; a tuple taken for a list; a task that is not text
    W("12.2", "pass^k is not pass rate ** k",
      [('"k": counts.pop(),', '"k": (k := counts.pop()),'),
       ('"pass^k": sum(all(passed) for passed in by_task.values()) / tasks}',
        '"pass^k": (sum(record["passed"] for record in results) / len(results)) ** k}')], "pass rate ** k"),
    W("12.2", "three repeats, one flaky task", [('"pass@k": sum(any(passed)', '"pass@k": sum(all(passed)'),
                                                ('"pass^k": sum(all(passed)', '"pass^k": sum(any(passed)')],
      "any and all swapped"),
    W("12.2", "unequal repeats", [("    if len(counts) > 1:\n        raise ValueError(f\"every task needs the same number "
                                   "of runs for pass^k; these have {sorted(counts)}\")\n", "")],
      "unequal repeats let through"),
    W("12.2", "passed is 1, not True", [('type(record.get("passed")) is not bool', '"passed" not in record')],
      "any passed value"),
    W("12.2", "a run without a task", [('not isinstance(record.get("task"), str) \\\n'
                                        '                or type(record.get("passed")) is not bool',
                                        '"passed" not in record')], "only passed checked"),
    W("12.2", "no runs", [('    if not by_task:\n        return {"runs": 0, "tasks": 0, "k": 0, "pass_rate": 0.0, '
                           '"pass@k": 0.0, "pass^k": 0.0}\n', "")], "no runs not handled"),
    W("12.2", "no runs: the rates are floats", [('"pass_rate": 0.0, "pass@k": 0.0, "pass^k": 0.0',
                                                 '"pass_rate": 0, "pass@k": 0, "pass^k": 0')], "int 0"),
    W("12.2", "a tuple, not a list", [("isinstance(results, list)", "isinstance(results, (list, tuple))")],
      "a tuple accepted"),
    W("12.2", "a task that is not text", [('not isinstance(record.get("task"), str)', '"task" not in record')],
      "any task value"),
    # ---- 12.3 a failed call counted as using the tool; a forbidden tool once per call; >= at the cap; the stop
    # reason ignored, or None taken for a finish; only working forbidden calls; True as steps; a task at odds
    # with itself
    W("12.3", "only failed calls", [('        elif all(call.get("is_error") for call in mine):     # called, but it '
                                     'never gave the agent anything\n'
                                     '            problems.append(f"every call of {tool} failed")\n', "")],
      "a failed call counts as using the tool"),
    W("12.3", "the forbidden tool twice", [('[f"called forbidden {tool}" for tool in forbidden if tool in used]',
                                            "[f\"called forbidden {call['tool']}\" for call in calls "
                                            'if call["tool"] in forbidden]')], "once per call"),
    W("12.3", "exactly at the cap", [('steps > task["max_steps"]', 'steps >= task["max_steps"]')], ">= at the cap"),
    W("12.3", "stopped at the cap", [('    if stop_reason != "finish":\n'
                                      '        problems.append(f"did not finish (stop reason {stop_reason!r})")\n', "")],
      "the stop reason ignored"),
    W("12.3", "stop reason None", [('stop_reason != "finish"', 'stop_reason not in ("finish", None)')],
      "None taken for a finish"),
    W("12.3", "forbidden, even when it failed", [('used = {call["tool"] for call in calls}',
                                                  'used = {call["tool"] for call in calls if not call.get("is_error")}')],
      "only working calls count"),
    W("12.3", "steps=True", [("type(steps) is not int", "not isinstance(steps, int)")], "isinstance lets True in"),
    W("12.3", "a tool both required and forbidden",
      [("    if set(required) & set(forbidden):\n        raise ValueError(f\"a tool cannot be both required and "
        "forbidden: {sorted(set(required) & set(forbidden))}\")\n", "")], "a task at odds with itself"),
    # ---- 12.4 a vanished task ignored; the first run only; sorted or new's order; run by run instead of shares;
    # any change instead of a drop; bad records; a tuple accepted; 0 and 1 for False and True; a task of None
    W("12.4", "a task that is gone", [("task not in after or after[task] < share",
                                       "task in after and after[task] < share")], "a vanished task ignored"),
    W("12.4", "repeats: 2 of 3, then 1 of 3", [("sum(passed) / len(passed)", "float(passed[0])")], "the first run only"),
    W("12.4", "in the old run's order", [("for task, share in before.items()",
                                          "for task, share in sorted(before.items())")], "sorted"),
    W("12.4", "in the old run's order", [("for task, share in before.items()",
                                          "for task, share in {t: before[t] for t in [*after, *before] "
                                          "if t in before}.items()")], "in the new run's order"),
    W("12.4", "the same share, other runs",
      [("    shares = []\n", "    shares, runs = [], []\n"),
       ("        shares.append(", "        runs.append(by_task)\n        shares.append("),
       ("after[task] < share]", "after[task] < share\n"
                                "            or any(was and not now for was, now in zip(runs[0][task], runs[1][task]))]")],
      "run by run"),
    W("12.4", "fixes are not regressions", [("after[task] < share", "after[task] != share")], "any change"),
    W("12.4", "passed is 'no'", [(RECORD_CHECK_12_4, "")], "records not checked"),
    W("12.4", "a tuple, not a list", [("not isinstance(old, list) or not isinstance(new, list)",
                                       "not isinstance(old, (list, tuple)) or not isinstance(new, (list, tuple))")],
      "a tuple accepted"),
    W("12.4", "passed is 0, not False", [('type(record.get("passed")) is not bool',
                                          'not isinstance(record.get("passed"), int)')], "isinstance(passed, int)"),
    W("12.4", "a task that is None", [('not isinstance(record.get("task"), str)', '"task" not in record')],
      "any task value"),
    # ---- 13.1 truthiness for isError; only text; no newline between blocks; no structured fallback; embedded text
    # lost; no type check; content null; an empty structuredContent read as none; a null one shown; empty texts
    # dropped; structured content preferred to the blocks
    W("13.1", "isError must be JSON true", [('result.get("isError") is True', 'bool(result.get("isError"))')],
      "truthiness"),
    W("13.1", "an image is named",
      [("        else:   # an image, audio, a link, a binary resource, or a kind newer than this code\n"
        "            parts.append(f\"[{kind}: {block.get('uri') or inner.get('uri') or block.get('mimeType') or "
        "'not shown'}]\")\n", "")], "only text"),
    W("13.1", "two text blocks, one per line", [(r'"\n".join(parts)', '"".join(parts)')], "blocks run together"),
    W("13.1", "structured content only",
      [('    if not parts and result.get("structuredContent") is not None:\n'
        '        parts.append(json.dumps(result["structuredContent"], ensure_ascii=False))\n', "")],
      "no structured fallback"),
    W("13.1", "an embedded text resource", [('        elif kind == "resource" and "text" in inner:\n'
                                             '            parts.append(inner["text"])\n', "")], "embedded text lost"),
    W("13.1", "not a result", [("    if not isinstance(result, dict):\n        raise ValueError(f\"a tools/call result is "
                                "a JSON object (a dict), not {json_type(result)}\")\n", "")], "no type check"),
    W("13.1", "content null", [('result.get("content") or []', 'result.get("content", [])')],
      'result.get("content", [])'),
    W("13.1", "structured content {}", [('result.get("structuredContent") is not None', 'result.get("structuredContent")')],
      "truthiness for structuredContent"),
    W("13.1", "structured content null", [('result.get("structuredContent") is not None',
                                            '"structuredContent" in result')], "a null structuredContent shown"),
    W("13.1", "an empty text block is a piece", [('parts.append(block["text"])',
                                                  'parts += [block["text"]] if block["text"] else []')],
      "empty texts dropped"),
    W("13.1", "text blocks before structured content",
      [("if not parts and result", "if result"),
       ('parts.append(json.dumps(result["structuredContent"], ensure_ascii=False))',
        'parts = [json.dumps(result["structuredContent"], ensure_ascii=False)]')], "structured content preferred"),
    W("13.1", "an empty text block before structured content",
      [("if not parts and result", "if not any(parts) and result")], "blocks of empty text taken for none"),
    # ---- 13.2 answering a notification; an unknown tool as a result; the wrong code; arguments required; a fixed
    # id; no version check; null arguments read as {}; a null id accepted; a notification decided before the
    # message is checked; True taken for an id
    W("13.2", "a notification gets no answer", [('    if "id" not in message:\n        return None   # a notification: '
                                                 'no answer\n', ""),
                                                ('"id": message["id"], "result"', '"id": message.get("id"), "result"')],
      "notifications answered"),
    W("13.2", "an unknown tool is a protocol error",
      [("    if params[\"name\"] not in tools:\n        return error(-32602, f\"Unknown tool: {params['name']}. "
        "Available tools: {', '.join(tools)}\")\n", "")], "an unknown tool as a result"),
    W("13.2", "an unknown method", [("error(-32601,", "error(-32602,")], "-32602 for -32601"),
    W("13.2", "no arguments", [('dispatch(tools, params["name"], params.get("arguments", {}))',
                                'dispatch(tools, params["name"], params["arguments"])')], "arguments required"),
    W("13.2", "the id comes back", [('"id": message.get("id"), "error"', '"id": 1, "error"'),
                                    ('"id": message["id"], "result"', '"id": 1, "result"')], "a fixed id"),
    W("13.2", "not JSON-RPC 2.0", [('message.get("jsonrpc") != "2.0" or ', "")], "no version check"),
    W("13.2", "arguments null", [('isinstance(params.get("arguments", {}), dict)',
                                  'isinstance(params.get("arguments") or {}, dict)'),
                                 ('params.get("arguments", {}))', 'params.get("arguments") or {})')],
      "null arguments read as {}"),
    W("13.2", "a float is no id", [("not in (int, str)", "not in (int, float, str)")], "any JSON number as an id"),
    W("13.2", "an id that is null", [("not in (int, str)", "not in (int, str, type(None))")], "a null id accepted"),
    W("13.2", "invalid, even without an id", [('    method, params = message.get("method"), message.get("params")\n',
                                               '    if "id" not in message:\n        return None\n'
                                               '    method, params = message.get("method"), message.get("params")\n')],
      "a notification decided first"),
    W("13.2", "true is no id", [('type(message["id"]) not in (int, str)', 'not isinstance(message["id"], (int, str))')],
      "isinstance lets True in"),
    W("13.2", "no envelope", [('    if not (isinstance(meta, dict) and VERSION_KEY in meta and CAPABILITIES_KEY in meta):\n'
                               '        return error(-32602, "Invalid params: params._meta must carry the protocol '
                               'version and the client\'s capabilities")\n', ''),
                              ('    if meta[VERSION_KEY] != "2026-07-28":', '    if (meta or {}).get(VERSION_KEY, "2026-07-28") != "2026-07-28":')],
      "no envelope required"),
    W("13.2", "an envelope without capabilities", [(" and VERSION_KEY in meta and CAPABILITIES_KEY in meta)",
                                                    " and VERSION_KEY in meta)")], "the version alone is enough"),
    W("13.2", "a version this server does not speak", [('    if meta[VERSION_KEY] != "2026-07-28":\n        return error('
                                                        '-32022, f"Unsupported protocol version: {meta[VERSION_KEY]}", '
                                                        '{"supported": ["2026-07-28"]})\n', '')],
      "any version accepted"),
    W("13.2", "a version this server does not speak", [('{"supported": ["2026-07-28"]})', 'None)')],
      "-32022 without the versions it speaks"),
    W("13.2", "the version is checked before the method",
      [('    if meta[VERSION_KEY] != "2026-07-28":\n        return error(-32022, f"Unsupported protocol version: '
        '{meta[VERSION_KEY]}", {"supported": ["2026-07-28"]})\n', ''),
       ('    if not (isinstance(params.get("name"), str)', '    if meta[VERSION_KEY] != "2026-07-28":\n        return '
        'error(-32022, "Unsupported protocol version", {"supported": ["2026-07-28"]})\n    if not (isinstance(params.get("name"), str)')],
      "the version checked after the method"),
    W("13.2", "both keys before the version",
      [('    if not (isinstance(meta, dict) and VERSION_KEY in meta and CAPABILITIES_KEY in meta):',
        '    if isinstance(meta, dict) and meta.get(VERSION_KEY, "2026-07-28") != "2026-07-28":\n        return error('
        '-32022, "Unsupported protocol version", {"supported": ["2026-07-28"]})\n'
        '    if not (isinstance(meta, dict) and VERSION_KEY in meta and CAPABILITIES_KEY in meta):')],
      "the version checked before the envelope is whole"),
    W("13.2", "ping is gone", [('    if method == "server/discover":', '    if method == "ping":\n        return result({})\n'
                                '    if method == "server/discover":')], "ping answered as in the handshake era"),
    W("13.2", "server/discover", [('{"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}}',
                                   '{"protocolVersion": "2026-07-28", "capabilities": {"tools": {}}}')],
      "discover answered like initialize"),
    # ---- 13.3 True as an integer; 2.0 refused; only the first problem; extras allowed; arrays unchecked; a type
    # mismatch checked on; a digit string as an integer; additionalProperties only beside properties, or a schema
    # read as false or ignored; minimum and maximum applied to booleans; enum by type (2.0 is not 2) or by Python's
    # == (True is 1); value == int(value) for the integer test (inf crashes it); minimum exclusive
    W("13.3", "true is not an integer", [("return type(value) is int or", "return isinstance(value, int) or"),
                                         ("return type(value) in (int, float)\n",
                                          "return type(value) in (int, float, bool)\n")], "True taken for a number"),
    W("13.3", "2.0 is an integer", [(" or (type(value) is float and value.is_integer())", "")], "2.0 refused"),
    W("13.3", "every problem, not the first", [("    return problems\n", "    return problems[:1]\n")],
      "only the first problem"),
    W("13.3", "no extra arguments", [("            elif others is False:\n"
                                      "                problems.append(f\"{where} has no '{name}'\")\n", "")],
      "extras allowed"),
    W("13.3", "items of an array", [('    if isinstance(value, list) and isinstance(schema.get("items"), dict):\n'
                                     "        for i, item in enumerate(value):\n"
                                     '            problems += schema_problems(schema["items"], item, f"{where}[{i}]")\n',
                                     "")], "arrays unchecked"),
    W("13.3", "a type mismatch stops there",
      [("    problems = []\n    if type(value)", "    if type(value)"),
       ('    kinds = schema.get("type")\n', '    problems = []\n    kinds = schema.get("type")\n'),
       ("        return [f\"{where} must be {' or '.join(kinds)}, not {json_type(value)}\"]",
        "        problems.append(f\"{where} must be {' or '.join(kinds)}, not {json_type(value)}\")"),
       ('return [f"{where} must be one of', 'return problems + [f"{where} must be one of')],
      "a mismatch checked on"),
    W("13.3", "an enum mismatch stops there",
      [("    problems = []\n    if type(value)", "    if type(value)"),
       ('    if "enum" in schema', '    problems = []\n    if "enum" in schema'),
       ('        return [f"{where} must be one of', '        problems += [f"{where} must be one of')],
      "an enum mismatch checked on"),
    W("13.3", "'2' is not an integer", [("value.is_integer())",
                                         "value.is_integer()) or (type(value) is str and value.isdigit())")],
      "a digit string as an integer"),
    W("13.3", "no properties, no extras", [("elif others is False:", 'elif others is False and "properties" in schema:')],
      "extras refused only beside properties"),
    W("13.3", "extra keys against a schema", [(SCHEMA_BRANCH_13_3 + "            elif others is False:",
                                               "            elif others is False or isinstance(others, dict):")],
      "a schema read as false"),
    W("13.3", "extra keys against a schema", [(SCHEMA_BRANCH_13_3, "")], "a schema ignored"),
    W("13.3", "no minimum for true", [("    if type(value) in (int, float):", "    if isinstance(value, (int, float)):")],
      "bounds on booleans"),
    W("13.3", "2.0 is 2 in an enum", [(SAME_13_3, "value == v and type(value) is type(v)")], "enum by type"),
    W("13.3", "true is not 1 in an enum", [(SAME_13_3, "value == v")], "enum by Python's =="),
    W("13.3", "infinity is not an integer", [("value.is_integer()", "value == int(value)")], "value == int(value)"),
    W("13.3", "at the minimum", [('value < schema["minimum"]', 'value <= schema["minimum"]')], "minimum exclusive"),
]


@pytest.mark.parametrize("row", WRONG, ids=[row.id for row in WRONG])
def test_a_plausible_wrong_solution_fails_on_the_case_made_for_it(row):
    labels = [case.label for case in exercise(row.exercise).cases]
    assert row.fails_on in labels, f"{row.exercise} has no case {row.fails_on!r}"
    result = run_cases(row.exercise, solution(row.exercise, row.edits))
    assert result.error is None and not result.not_implemented, result
    failing = [c.label for c in result.cases if not c.ok]
    assert row.fails_on in failing, (f"{row.id}: the case {row.fails_on!r} passes this wrong solution "
                                     f"(it fails {failing or 'no case'}); the edited cell:\n"
                                     f"{edited(row.exercise, row.edits)}")
    if row.one_slip:   # it still passes most cases: one mistake, not broken code
        assert len(result.cases) - len(failing) >= len(result.cases) // 2, \
            f"{row.id} fails {len(failing)} of {len(result.cases)} cases, not one slip: {failing}"


def test_every_exercise_has_a_wrong_solution_and_no_row_is_there_twice():
    assert {row.exercise for row in WRONG} == set(exercise_ids())
    seen = [(row.exercise, row.fails_on, tuple(row.edits)) for row in WRONG]
    assert len(seen) == len(set(seen)), [row for row in seen if seen.count(row) > 1]


# A learner reads the first ✗ first. A slip that breaks many cases at once must fail first on the case whose hint
# names it, not on one whose hint blames something else (learner review, 2026-12-08: `<` for `<=` in 12.1 and 12.3).
@pytest.mark.parametrize("exercise_id, edits, first", [
    ("12.1", EDGE_12_1, "number: no tolerance, exactly right"),
    ("12.3", [('steps > task["max_steps"]', 'steps >= task["max_steps"]')], "exactly at the cap"),
])
def test_a_slip_that_breaks_many_cases_fails_first_on_the_case_that_names_it(exercise_id, edits, first):
    failing = [c.label for c in run_cases(exercise_id, solution(exercise_id, edits)).cases if not c.ok]
    assert len(failing) > 1 and failing[0] == first, failing


def test_what_the_notebook_hands_out_is_not_borrowed_even_under_another_name_but_is_for_its_own_exercise():
    namespace = {}
    exec("from course_lib.memory import split_steps as steps_of\ndef window(history, n):\n    return steps_of(history)\n",
         namespace)
    assert borrowed("10.2", namespace["window"]) == []   # 10's set-up hands split_steps out, for 10.2
    assert borrowed("10.1", namespace["window"]) == ["steps_of (course_lib.memory)"]   # 10.1 asks for it
