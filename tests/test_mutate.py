"""`make mutate` (scripts/mutate.py): what it measures, its list of known equivalent mutants, and the README table it
writes. The full run takes many minutes and is not part of `make test`; one small module is run end to end here."""
from __future__ import annotations

import ast
import importlib.util
import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from test_structure import STAGES

ROOT = Path(__file__).resolve().parent.parent
spec = importlib.util.spec_from_file_location("mutate", ROOT / "scripts" / "mutate.py")
mutate = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mutate)

GRADING = {"course_lib/courseware/checks.py", "course_lib/courseware/grading.py", "course_lib/courseware/grader.py"}


def test_every_stage_module_and_the_grading_machinery_is_measured():
    stage_modules = {f"course_lib/{name}" for name in STAGES}
    assert stage_modules | GRADING <= set(mutate.TARGETS)


@pytest.mark.parametrize("module, tests", sorted(mutate.TARGETS.items()))
def test_each_module_is_measured_against_tests_that_import_it(module, tests):
    assert (ROOT / module).is_file()
    dotted = module.removesuffix(".py").replace("/", ".")
    package, _, name = dotted.rpartition(".")
    files = {t.split("::")[0] for t in tests}
    importing = [t for t in files if re.search(rf"\b{re.escape(dotted)}\b|from {re.escape(package)} import [^\n]*\b{name}\b",
                                              (ROOT / t).read_text(encoding="utf-8"))]
    assert importing, f"none of {sorted(files)} imports {dotted}: mutmut would find no test for its mutants"
    for test in tests:   # a test named by its node id must still exist
        file, _, function = test.partition("::")
        assert not function or re.search(rf"^def {function}\(", (ROOT / file).read_text(encoding="utf-8"), re.M), test


def functions(module: str) -> dict[str, list[str]]:
    """Function name (Class.method for methods) -> its source lines, stripped."""
    source = (ROOT / module).read_text(encoding="utf-8")
    lines = source.splitlines()
    found = {}

    def visit(node, prefix=""):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found[prefix + child.name] = [line.strip() for line in lines[child.lineno - 1:child.end_lineno]]
            elif isinstance(child, ast.ClassDef):
                visit(child, prefix + child.name + ".")

    visit(ast.parse(source))
    return found


EQUIVALENTS = tomllib.loads(mutate.EQUIVALENTS.read_text(encoding="utf-8")).get("equivalent", [])


@pytest.mark.parametrize("entry", EQUIVALENTS, ids=lambda e: f"{e.get('module')}:{e.get('function')}")
def test_each_known_equivalent_still_matches_its_module_and_says_why(entry):
    assert set(entry) == {"module", "function", "before", "after", "why"}
    assert entry["module"] in mutate.TARGETS
    source = functions(entry["module"])
    assert entry["function"] in source, f"{entry['module']} has no function {entry['function']} any more"
    lines = source[entry["function"]]   # several changed lines are joined with " / " (which a line may contain)
    assert entry["before"] in lines or all(part in lines for part in entry["before"].split(" / ")), \
        f"{entry['before']!r} is no longer in {entry['function']}: remove the entry"
    assert entry["after"] != entry["before"]
    assert len(entry["why"]) >= 20, "say why no test can tell the mutant from the original"


def test_the_equivalents_list_has_no_duplicates():
    keys = [(e["module"], e["function"], e["before"], e["after"]) for e in EQUIVALENTS]
    assert len(keys) == len(set(keys))


DIFF = """--- course_lib/tools.py
+++ course_lib/tools.py
@@ -1,5 +1,5 @@
 def _evaluate(node: ast.AST, depth: int = 0):
-    if depth > MAX_DEPTH:
+    if depth >= MAX_DEPTH:
         raise ToolError(f"the expression is nested too deeply (more than {MAX_DEPTH} levels)")
"""


def test_a_mutant_is_known_by_its_function_and_changed_lines_not_its_number():
    assert mutate.changed_lines(DIFF) == ("if depth > MAX_DEPTH:", "if depth >= MAX_DEPTH:")
    assert mutate.function_of("course_lib.tools.x__evaluate__mutmut_2") == "_evaluate"
    assert mutate.function_of("course_lib.agent.xǁAgentǁ_repeated__mutmut_14") == "Agent._repeated"
    entry = {"module": "course_lib/tools.py", "function": "_evaluate", "before": "if depth > MAX_DEPTH:",
             "after": "if depth >= MAX_DEPTH:", "why": "an example"}
    assert mutate.is_equivalent("course_lib/tools.py", "course_lib.tools.x__evaluate__mutmut_99", DIFF, [entry])
    assert not mutate.is_equivalent("course_lib/agent.py", "course_lib.tools.x__evaluate__mutmut_2", DIFF, [entry])
    assert not mutate.is_equivalent("course_lib/tools.py", "course_lib.tools.x_calculator__mutmut_2", DIFF, [entry])
    other = dict(entry, after="if depth > MAX_DEPTH + 1:")
    assert not mutate.is_equivalent("course_lib/tools.py", "course_lib.tools.x__evaluate__mutmut_2", DIFF, [other])


def test_the_table_counts_equivalents_out_and_marks_modules_below_the_goal():
    rows = [{"module": "a.py", "mutants": 100, "equivalent": 10, "caught": 81, "survived": 9, "score": 81 / 90},
            {"module": "b.py", "mutants": 10, "equivalent": 0, "caught": 9, "survived": 1, "score": 0.9}]
    text = mutate.table(rows)
    assert "| `a.py` | 100 | 10 | 81 | 9 | 90.0% |" in text
    assert "| `b.py` | 10 | 0 | 9 | 1 | 90.0% |" in text
    rows[0].update(caught=80, survived=10, score=80 / 90)
    assert "88.9% (below 90 %)" in mutate.table(rows)


def readme_rows() -> list[list[str]]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    block = text.split(mutate.BEGIN, 1)[1].split(mutate.END, 1)[0]
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in block.strip().splitlines()[2:]]


def test_the_readme_table_lists_every_measured_module_and_adds_up():
    rows = readme_rows()
    assert [row[0].strip("`") for row in rows] == list(mutate.TARGETS), "run `make mutate` to rewrite the table"
    for module, mutants, equivalent, caught, survived, score in rows:
        mutants, equivalent, caught, survived = map(int, (mutants, equivalent, caught, survived))
        assert caught + survived == mutants - equivalent, module
        assert score.startswith(f"{caught / (mutants - equivalent):.1%}"), module
        assert ("below 90" in score) == (caught / (mutants - equivalent) < mutate.GOAL), module


def test_make_mutate_runs_the_script():
    dry = subprocess.run(["make", "-n", "mutate", "MUTATE_ARGS=course_lib/registry.py"], cwd=ROOT,
                         capture_output=True, text=True, check=True).stdout
    assert "scripts/mutate.py course_lib/registry.py" in dry


def test_an_unknown_module_is_refused_in_one_line():
    done = subprocess.run([sys.executable, "scripts/mutate.py", "course_lib/nope.py"], cwd=ROOT,
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "not a measured module: course_lib/nope.py (see --list)" in done.stderr


def test_one_module_end_to_end(tmp_path):
    """The real thing on the smallest module: mutmut plants its mutants in a scratch copy and the tests catch them."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    done = subprocess.run([sys.executable, "scripts/mutate.py", "course_lib/registry.py", "--jobs", "1",
                           "--scratch", str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=600)
    saved = tmp_path / "course_lib_registry" / "result.json"   # exit 1 is a score below the goal, or a failure
    assert done.returncode in (0, 1) and saved.exists(), done.stdout + done.stderr
    result = json.loads(saved.read_text())
    assert result["mutants"] > 30 and result["caught"] > 0
    assert result["caught"] + result["survived"] == result["mutants"] - result["equivalent"]
    assert f"{result['score']:.1%}: {result['caught']} of {result['mutants'] - result['equivalent']} caught" in done.stdout
    assert (done.returncode == 0) == (result["score"] >= mutate.GOAL)
    assert (ROOT / "README.md").read_text(encoding="utf-8") == readme   # one module given: the README is left alone
    again = subprocess.run([sys.executable, "scripts/mutate.py", "course_lib/registry.py", "--scratch", str(tmp_path)],
                           cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert "as last measured: code and tests unchanged" in again.stdout   # nothing changed: not measured again
    assert json.loads((tmp_path / "course_lib_registry" / "result.json").read_text())["caught"] == result["caught"]
