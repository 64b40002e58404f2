"""Hidden-test failures name the case, what was expected and what came back (issue 24): the grader runs each
hidden-test cell through `hidden_asserts.explained`, which rewrites its asserts and nothing else."""
from __future__ import annotations

import json

import nbformat
import pytest

from course_lib.courseware.grader import grade
from course_lib.courseware.grading import ROOT
from course_lib.courseware.hidden_asserts import explained

HIDDEN = [(p.name, c) for p in sorted((ROOT / "solutions").glob("*.ipynb"))
          for c in json.loads(p.read_text(encoding="utf-8"))["cells"]
          if c["metadata"].get("nbgrader", {}).get("grade_id", "").endswith("_hidden")]


def failure(source: str, env: dict | None = None) -> str:
    with pytest.raises(AssertionError) as caught:
        exec(compile(explained(source), "<hidden>", "exec"), dict(env or {}))
    return str(caught.value)


@pytest.mark.parametrize("source, message", [
    ("def f(a):\n    return None\nfor a in [{'t': 'always '}]:\n    assert f(a) == 'the export s', (a,)",
     "`f(a) == 'the export s'` (({'t': 'always '},)): expected 'the export s', got None"),
    ("assert len('ab') == 3, 'three letters'", "three letters: expected 3, got 2"),
    ("assert f'{1}' is None, f'case {2}'", "case 2: expected None, got '1'"),
    ("assert 3 in [1, 2]", "`3 in [1, 2]`: expected 3 in [1, 2]"),
    ("assert 'b' not in 'abc'", "`'b' not in 'abc'`: expected 'b' not in 'abc'"),
    ("assert 5 <= 2", "`5 <= 2`: expected 5 <= 2"),
    ("assert 1 < 2 < 0", "`1 < 2 < 0` is not true"),          # a chain keeps its short-circuit
    ("assert [] or 0", "`[] or 0` is not true"),
    ("assert [] or 0, 'either one'", "either one"),           # a sentence and nothing to compare: as written
    ("assert [] or 0, (1, 2)", "`[] or 0` ((1, 2)) is not true"),
    ("assert [1, 2] == [1,\n        3]", "`[1, 2] == [1, 3]`: expected [1, 3], got [1, 2]"),
])
def test_a_failing_assert_names_its_case_expected_and_got(source, message):
    assert failure(source) == message


def test_a_long_value_is_cut_so_the_report_keeps_the_case():
    text = failure("assert 'x' * 1000 == 'y'")
    assert text.startswith("`'x' * 1000 == 'y'`: expected 'y', got 'xxx") and len(text) < 220


def test_each_side_is_evaluated_once_in_order_and_passing_asserts_still_pass():
    source = ("calls = []\ndef side(v):\n    calls.append(v)\n    return v\n"
              "assert side(1) == side(1)\nassert side(2) in [side(2)]\nassert side(3) < side(4) < side(5)\n"
              "assert not side(0)\ndone = True\n")
    env: dict = {}
    exec(compile(explained(source), "<hidden>", "exec"), env)
    assert env["done"] and env["calls"] == [1, 1, 2, 2, 3, 4, 5, 0]


def test_a_message_is_evaluated_only_when_the_assert_fails():
    env = {"boom": lambda: 1 / 0}
    exec(compile(explained("assert 1 == 1, boom()\nassert True, boom()"), "<hidden>", "exec"), env)
    with pytest.raises(ZeroDivisionError):
        exec(compile(explained("assert 1 == 2, boom()"), "<hidden>", "exec"), env)


def test_code_that_does_not_parse_is_left_to_the_kernel():
    for source in ("%time 1 + 1", "def broken(:"):
        assert explained(source) == source


@pytest.mark.parametrize("name, cell", HIDDEN, ids=[f"{n[:2]}/{c['metadata']['nbgrader']['grade_id']}"
                                                    for n, c in HIDDEN])
def test_every_hidden_test_cell_of_the_course_still_compiles_with_its_asserts_rewritten(name, cell):
    source = "".join(cell["source"])
    rewritten = explained(source)
    compile(rewritten, name, "exec")
    assert rewritten.count("assert ") >= sum(1 for line in source.splitlines() if line.lstrip().startswith("assert "))


def test_course_check_reports_a_failing_hidden_test_with_its_case_expected_and_got(tmp_path):
    """Through the real grader: a solution folder whose 04.1 hidden test wants more than the right answer gives,
    so the right answer fails it, and the report says which case, what was expected and what came back."""
    solutions = tmp_path / "solutions"
    solutions.mkdir()
    trusted = nbformat.read(ROOT / "solutions" / "04_parsing_replies_exercises.ipynb", as_version=4)
    hidden = next(c for c in trusted.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "ex04_1_hidden")
    hidden.source += '\nassert validate_action({"tool": ""}) == "no tool", "an empty tool name"\n'
    nbformat.write(trusted, solutions / "04_parsing_replies_exercises.ipynb")
    submission = tmp_path / "mine.ipynb"
    nbformat.write(nbformat.read(ROOT / "solutions" / "04_parsing_replies_exercises.ipynb", as_version=4),
                   submission)
    result = grade(str(submission), "04", solutions_dir=solutions)
    first = next(e for e in result.exercises if e.exercise == "04.1")
    assert not first.passed
    assert first.detail == ("hidden tests failed: AssertionError: an empty tool name: expected 'no tool', "
                            "got '\"tool\" must be a non-empty string naming a tool'")
    assert all(e.passed for e in result.exercises if e.exercise != "04.1")
