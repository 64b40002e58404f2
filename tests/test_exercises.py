"""Exercises are generated from solutions, never hand-edited; every check can fail; grading works both ways.

The grading tests run each solution and each exercise notebook in a fresh kernel through `course check`'s
own code path (course_lib.courseware.grading.grade), so they also prove every exercise notebook runs top to bottom.
"""
import json
import re
from pathlib import Path

import nbformat
import pytest

from course_lib.courseware.checks import exercise
from course_lib.courseware.grading import MARKER, ROOT, grade, make_exercise, solution_paths

SOLUTIONS = solution_paths()
STAGES = sorted(p.stem[-2:] for p in (Path(__file__).resolve().parent.parent / "course_lib" / "courseware"
                                             / "exercises").glob("stage[0-9][0-9].py"))


def grade_ids(nb):
    return [c.metadata.get("nbgrader", {}).get("grade_id", "") for c in nb.cells]


def exercise_ids(nb):
    return [gid[2:].replace("_", ".", 1) for gid in grade_ids(nb) if re.fullmatch(r"ex\d\d_\d+", gid)]


def test_every_stage_has_a_solution_notebook_with_three_or_more_exercises():
    stages = {p.name[:2] for p in SOLUTIONS}
    assert stages == set(STAGES)
    for path in SOLUTIONS:
        ids = exercise_ids(nbformat.read(path, as_version=4))
        assert len(ids) >= 3, f"{path.name} has {len(ids)} exercises"
        assert all(i.startswith(path.name[:2] + ".") for i in ids)


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.name)
def test_each_exercise_has_a_solution_a_check_and_hidden_tests(path):
    nb = nbformat.read(path, as_version=4)
    ids = grade_ids(nb)
    for ex in exercise_ids(nb):
        prefix = "ex" + ex.replace(".", "_")
        assert prefix + "_check" in ids and prefix + "_hidden" in ids, ex
        source = nb.cells[ids.index(prefix)].source
        assert "### BEGIN SOLUTION" in source and "### END SOLUTION" in source
        assert f'check("{ex}"' in nb.cells[ids.index(prefix + "_check")].source
        hidden = nb.cells[ids.index(prefix + "_hidden")].source
        assert hidden.lstrip().startswith("### BEGIN HIDDEN TESTS") and "assert" in hidden
        assert len(exercise(ex).cases) >= 4, f"{ex} needs at least four cases"


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.name)
def test_committed_exercise_notebook_is_exactly_the_generated_one(path):
    generated = make_exercise(nbformat.read(path, as_version=4), path.name)
    committed_path = ROOT / "exercises" / path.name
    assert committed_path.exists(), f"run `make exercises`: {committed_path.name} is missing"
    committed = nbformat.read(committed_path, as_version=4)
    assert json.loads(nbformat.writes(committed)) == json.loads(nbformat.writes(generated)), \
        f"exercises/{path.name} differs from what `make exercises` generates: regenerate, never hand-edit"


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.name)
def test_no_solution_or_hidden_test_leaks_into_the_exercise(path):
    solution = nbformat.read(path, as_version=4)
    exercise_nb = nbformat.read(ROOT / "exercises" / path.name, as_version=4)
    text = "\n".join(c.source for c in exercise_nb.cells)
    assert not MARKER.search(text)
    assert all(not c.get("outputs") and c.get("execution_count") is None
               for c in exercise_nb.cells if c.cell_type == "code")
    for cell in solution.cells:   # every line that was between markers is gone
        for block in re.findall(r"### BEGIN (?:SOLUTION|HIDDEN TESTS)\n(.*?)### END", cell.source, re.S):
            for line in block.splitlines():
                if len(line.strip()) > 25:   # short lines (`return x`) may legitimately appear elsewhere
                    assert line.strip() not in text, f"solution text leaked: {line.strip()!r}"


def test_every_exercise_notebook_is_in_the_generated_folder_only():
    assert sorted(p.name for p in (ROOT / "exercises").glob("*.ipynb")) == [p.name for p in SOLUTIONS]


@pytest.mark.parametrize("path", SOLUTIONS, ids=lambda p: p.name)
def test_solution_passes_every_exercise_and_the_stub_fails_every_one(path):
    stage = path.name[:2]
    solved = grade(path, stage)
    assert solved.passed, [e for e in solved.exercises if not e.passed]
    stub = grade(ROOT / "exercises" / path.name, stage)
    assert not stub.passed and len(stub.exercises) == len(solved.exercises)
    assert all(e.detail == "not implemented yet" or e.detail.startswith("not implemented yet: `")
               for e in stub.exercises), stub.exercises
    assert solved.errors == [] and stub.errors == []   # both notebooks run top to bottom without an error


def test_course_check_exit_status_and_json_from_the_terminal():
    import subprocess
    import sys
    solution, exercise_nb = SOLUTIONS[0], ROOT / "exercises" / SOLUTIONS[0].name
    run = lambda *args: subprocess.run([sys.executable, "-m", "course_lib.courseware.cli", "check", "01", *args],
                                       capture_output=True, text=True, encoding="utf-8", timeout=300)
    passed = run(str(solution))
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "[1/1]" in passed.stdout and "1/1 notebook(s) passed every exercise" in passed.stdout
    failed = run("--json", str(exercise_nb), str(solution))
    assert failed.returncode == 1 and "Traceback" not in failed.stderr
    report = json.loads(failed.stdout)
    assert [r["passed"] for r in report["notebooks"]] == [False, True]
    assert (report["passed"], report["total"], report["grader_errors"]) == (1, 2, [])
    assert all(e["detail"] == "not implemented yet" or e["detail"].startswith("not implemented yet: `")
               for e in report["notebooks"][0]["exercises"])


def test_the_exercise_banner_speaks_to_the_learner_first_and_to_instructors_below():
    for path in sorted((ROOT / "exercises").glob("*.ipynb")):
        banner = "".join(json.loads(path.read_text(encoding="utf-8"))["cells"][0]["source"])
        assert banner.startswith("> **Your turn.** Fill in every cell marked `# YOUR CODE HERE`")
        assert banner.index("*For instructors:*") > banner.index("course check")
        assert f"solutions/{path.name}" in banner


def test_course_check_says_how_many_failing_cases_it_did_not_list():
    from course_lib.courseware.grader import ExerciseGrade, Grade, _lines
    rows = [{"label": f"case {i}", "expected": "x", "got": "y", "hint": ""} for i in range(7)]
    report = _lines(Grade("nb.ipynb", "01", [ExerciseGrade("01.2", False, "11/18 cases passed in check()",
                                                           0, 1, rows)]))
    assert sum(line.strip().startswith("✗ case") for line in report) == 5
    assert report[-1].strip() == ("… and 2 more failing case(s): the check cell in the notebook lists them all")


def test_bare_course_check_grades_the_learners_exercise_notebook(tmp_path):
    """The README's learner command: `.venv/bin/course check 01` from the course folder, no path."""
    import subprocess
    import sys
    course = Path(sys.executable).with_name("course")
    result = subprocess.run([str(course), "check", "01"], capture_output=True, text=True, encoding="utf-8",
                            timeout=300, cwd=ROOT)
    assert "01_tools_exercises.ipynb" in result.stdout, result.stdout + result.stderr
    assert result.returncode == 1 and "not implemented yet" in result.stdout   # the committed stubs
    assert "at a time" not in result.stdout.splitlines()[0]   # one notebook: nothing to run side by side
