"""nbgrader itself grades the solution notebooks, and agrees with `course check` exercise by exercise.

For stages 04 and 07, in a temporary nbgrader course: the solution notebook is the source,
`nbgrader generate_assignment` writes the release, and three students hand in: `correct` (the solution as it
is), `stub` (the release as it is) and `wrong` (the solution with the defects planted below).
`nbgrader autograde` runs them in the python3 kernel of this environment (which imports course_lib), offline,
and `nbgrader export` writes grades.csv. Each exercise must get nbgrader's full points exactly when
`course check` passes it.

The defects cover each way the two verdicts could drift apart:
- a visible check fails while the hidden tests pass (04.1, 07.4): the hidden cell's first assertion, that
  the check passed, is what fails it in nbgrader;
- the answer is course_lib's finished version, imported (04.3): the hidden cell's second assertion;
- a hidden test fails while the visible check passes (07.1): the hidden tests themselves.
"""
import csv
import json
import os
import re
import shutil
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import nbformat
import pytest

from course_lib.courseware.grading import ROOT


BIN = Path(sys.executable).parent   # nbgrader calls `alembic` through PATH, so this folder goes first on it
STUDENTS = ("correct", "stub", "wrong")


def _plant(old: str, new: str):
    def edit(source: str) -> str:
        assert old in source, f"the planted defect no longer fits the solution: {old!r} is gone"
        return source.replace(old, new)
    return edit


STAGES = {
    "04": {
        "notebook": "04_parsing_replies_exercises.ipynb",
        "defects": {   # grade_id -> how the wrong submission changes that answer cell
            "ex04_1": _plant("    ### BEGIN SOLUTION\n", "    ### BEGIN SOLUTION\n    if isinstance(data, list):\n"
                             "        return None   # planted: a JSON array passes (a visible case only)\n"),
            "ex04_3": lambda source: "from course_lib.parsing import parse_reply as parse_action\n",
        },
        "wrong": {"04.1": False, "04.2": True, "04.3": False},
        "why": {"ex04_1_hidden": "the check of 04.1 above did not pass",
                "ex04_3_hidden": "the answer to 04.3 ('parse_reply') is course_lib's finished version"},
    },
    "07": {
        "notebook": "07_scripted_model_exercises.ipynb",
        "defects": {
            "ex07_1": _plant("self.replies = list(replies)",   # the caller's list, kept: only hidden tests notice
                             "self.replies = replies if isinstance(replies, list) else list(replies)"),
            "ex07_4": _plant('    assert agent.trace[0].runs[0].observation.is_error, '
                             '"the failed calculator call should be flagged is_error"\n', ""),
        },
        "wrong": {"07.1": False, "07.2": True, "07.3": True, "07.4": False},
        "why": {"ex07_1_hidden": "the model keeps its own list of replies",   # the hidden case that clears it
                "ex07_4_hidden": "the check of 07.4 above did not pass"},
    },
}


def _grade_id(cell) -> str:
    return cell.metadata.get("nbgrader", {}).get("grade_id", "")


def _exercise(grade_id: str) -> str:   # "ex04_2_hidden" -> "04.2"
    return grade_id[2:4] + "." + grade_id[5:].split("_")[0]


def _environment(home: Path) -> dict:
    """No API keys, web traffic to a closed port, and no jupyter or nbgrader config but the course's own."""
    env = {k: v for k, v in os.environ.items()
           if not k.endswith(("_API_KEY", "_BASE_URL")) and not k.startswith("COURSE_")}
    closed = "http://127.0.0.1:9"
    env.update({"PATH": f"{BIN}{os.pathsep}{env.get('PATH', '')}", "JUPYTER_CONFIG_DIR": str(home / "config"),
                "JUPYTER_DATA_DIR": str(home / "data"), "JUPYTER_RUNTIME_DIR": str(home / "runtime"),
                "PYTHONHASHSEED": "0", "COURSE_APPROVAL": "deny", "HTTP_PROXY": closed, "HTTPS_PROXY": closed,
                "ALL_PROXY": closed, "http_proxy": closed, "https_proxy": closed,
                "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"})
    return env


def _run(args, cwd, env, timeout=300):
    done = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, encoding="utf-8", timeout=timeout)
    assert done.returncode == 0, f"{' '.join(map(str, args))} failed:\n{done.stdout}\n{done.stderr}"
    return done


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """The nbgrader course after generate_assignment, autograde and export, and `course check`'s reports."""
    from nbgrader.api import Gradebook
    root = tmp_path_factory.mktemp("nbgrader") / "course"
    env = _environment(root.parent)
    (root / "source").mkdir(parents=True)
    (root / "nbgrader_config.py").write_text('c = get_config()\nc.CourseDirectory.course_id = "agent-course"\n')
    for stage, spec in STAGES.items():
        (root / "source" / f"ps{stage}").mkdir()
        shutil.copy(ROOT / "solutions" / spec["notebook"], root / "source" / f"ps{stage}")
        _run([BIN / "nbgrader", "generate_assignment", f"ps{stage}"], root, env)
        source = root / "source" / f"ps{stage}" / spec["notebook"]
        release = root / "release" / f"ps{stage}" / spec["notebook"]
        wrong = nbformat.read(source, as_version=4)
        for cell in wrong.cells:
            if _grade_id(cell) in spec["defects"]:
                cell.source = spec["defects"][_grade_id(cell)](cell.source)
        for student in STUDENTS:
            folder = root / "submitted" / student / f"ps{stage}"
            folder.mkdir(parents=True)
            if student == "wrong":
                nbformat.write(wrong, folder / spec["notebook"])
            else:
                shutil.copy(source if student == "correct" else release, folder)
    # `course check` grades the same submissions (one stage at a time) while nbgrader autogrades them
    def course_check(stage):
        notebooks = [root / "submitted" / s / f"ps{stage}" / STAGES[stage]["notebook"] for s in STUDENTS]
        done = subprocess.run([sys.executable, "-m", "course_lib.courseware.cli", "check", stage, "--json", *notebooks],
                              cwd=root.parent, env=env, capture_output=True, text=True, encoding="utf-8", timeout=600)
        return done.returncode, done.stdout, done.stderr
    with ThreadPoolExecutor(max_workers=1) as background:
        checks = {stage: background.submit(course_check, stage) for stage in STAGES}
        for stage in STAGES:
            _run([BIN / "nbgrader", "autograde", f"ps{stage}"], root, env)
        _run([BIN / "nbgrader", "export"], root, env)
        points = {}   # (stage, student) -> {exercise: (score, max_score)}
        with Gradebook(f"sqlite:///{root / 'gradebook.db'}") as gradebook:
            for stage in STAGES:
                for student in STUDENTS:
                    notebook, = gradebook.find_submission(f"ps{stage}", student).notebooks
                    points[stage, student] = {_exercise(g.name): (g.score, g.max_score) for g in notebook.grades}
        reports = {stage: future.result() for stage, future in checks.items()}
    return {"root": root, "points": points, "reports": reports}


def _course_check(course, stage) -> dict:
    """{student: {exercise: (passed, points or None)}} from `course check --json` (a list of reports, or
    {"notebooks": [...]})."""
    status, out, err = course["reports"][stage]
    assert status in (0, 1), f"course check {stage} itself failed (exit status {status}):\n{out}\n{err}"
    data = json.loads(out)
    reports = data["notebooks"] if isinstance(data, dict) else data
    assert [Path(r["notebook"]).parts[-3] for r in reports] == list(STUDENTS), out
    return {student: {e["exercise"]: (e["passed"], e.get("points")) for e in r["exercises"]}
            for student, r in zip(STUDENTS, reports)}


@pytest.mark.parametrize("stage", STAGES)
def test_release_has_stubs_no_hidden_tests_and_locked_cells(course, stage):
    source = nbformat.read(course["root"] / "source" / f"ps{stage}" / STAGES[stage]["notebook"], as_version=4)
    release = nbformat.read(course["root"] / "release" / f"ps{stage}" / STAGES[stage]["notebook"], as_version=4)
    assert [_grade_id(c) for c in release.cells] == [_grade_id(c) for c in source.cells]
    points = {_grade_id(c): c.metadata["nbgrader"].get("points") for c in source.cells if _grade_id(c)}
    text = "\n".join(c.source for c in release.cells)
    assert "### BEGIN" not in text and "_RESULTS" not in text and "raise NotImplementedError()" in text
    for cell in release.cells:
        meta = cell.metadata.get("nbgrader", {})
        if meta.get("locked"):   # the check and hidden-test cells
            assert (cell.metadata.get("editable"), cell.metadata.get("deletable")) == (False, False), _grade_id(cell)
        if _grade_id(cell).endswith("_hidden"):
            assert cell.source == "" and meta["points"] == points[_grade_id(cell)] > 0


@pytest.mark.parametrize("stage", STAGES)
def test_nbgrader_scores_each_submission_as_expected(course, stage):
    points, spec = course["points"], STAGES[stage]
    exercises = sorted(points[stage, "correct"])
    assert exercises == sorted(spec["wrong"]), "every exercise has one graded (hidden-test) cell"
    assert all(score == most > 0 for score, most in points[stage, "correct"].values()), points[stage, "correct"]
    assert all(score == 0 < most for score, most in points[stage, "stub"].values()), points[stage, "stub"]
    assert {ex: got[0] == got[1] for ex, got in points[stage, "wrong"].items()} == spec["wrong"]
    # ... and each planted defect fails for the intended reason (the hidden cells' own error messages)
    graded = nbformat.read(course["root"] / "autograded" / "wrong" / f"ps{stage}" / spec["notebook"], as_version=4)
    errors = {_grade_id(c): o.evalue for c in graded.cells for o in c.get("outputs", []) if o.output_type == "error"}
    assert sorted(errors) == sorted(spec["why"]), errors
    for grade_id, reason in spec["why"].items():
        assert reason in errors[grade_id], errors[grade_id]


def test_export_csv_has_the_gradebook_totals(course):
    with open(course["root"] / "grades.csv", encoding="utf-8", newline="") as f:
        rows = {(r["assignment"], r["student_id"]): (float(r["score"]), float(r["max_score"]))
                for r in csv.DictReader(f)}
    expected = {(f"ps{stage}", student): (sum(s for s, _ in got.values()), sum(m for _, m in got.values()))
                for (stage, student), got in course["points"].items()}
    assert rows == expected


@pytest.mark.parametrize("stage", STAGES)
def test_nbgrader_and_course_check_agree_on_every_exercise(course, stage):
    verdicts = _course_check(course, stage)
    for student in STUDENTS:
        passed = {ex: verdict for ex, (verdict, _) in verdicts[student].items()}
        full = {ex: score == most for ex, (score, most) in course["points"][stage, student].items()}
        assert passed == full, f"{student}: course check says {passed}, nbgrader {full}"
        for ex, (_, points) in verdicts[student].items():   # where course check reports points, they are the same
            assert points is None or points == course["points"][stage, student][ex][0], (student, ex, points)
