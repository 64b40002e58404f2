"""Exercises are generated from solutions, never hand-edited; every check can fail; grading works both ways.

The grading tests run each solution and each exercise notebook in a fresh kernel through `course check`'s
own code path (course_lib.courseware.grading.grade), so they also prove every exercise notebook runs top to bottom.
"""
import json
import re
from pathlib import Path

import nbformat
import pytest

from course_lib import default_tools
from course_lib.courseware.checks import exercise
from course_lib.courseware.exercises import stage11
from course_lib.courseware.grader import CHECK_CALL
from course_lib.courseware.grading import MARKER, ROOT, grade, make_exercise, solution_paths
from course_lib.courseware.mcp_serve import refusal
from course_lib.dispatch import dispatch
from test_wrong_solutions import solution   # a solution notebook's reference solution; tests/ is on sys.path (rootdir mode)

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
        check_cell = nb.cells[ids.index(prefix + "_check")].source
        assert f'check("{ex}"' in check_cell
        name = CHECK_CALL.search(check_cell)[2]   # the hidden-test cell runs solutions/hidden/stageNN.py's cases
        assert nb.cells[ids.index(prefix + "_hidden")].source == (
            "### BEGIN HIDDEN TESTS\nfrom course_lib.courseware.hidden import verify\n\n"
            f'verify("{ex}", {name})   # the hidden cases of solutions/hidden/stage{ex[:2]}.py\n### END HIDDEN TESTS')
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
    report = json.loads(failed.stdout)   # stdout is the report alone; the progress went to stderr, as eval's does
    assert failed.stderr.startswith("Grading 2 notebook(s) of stage 01, 2 at a time; ")
    assert "[1/2] " in failed.stderr and "[2/2] " in failed.stderr and "[1/2]" not in failed.stdout
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


# -- make-exercises itself, in-process on small notebooks ------------------------------------------------------
def _tagged(source, **nbgrader):
    cell = nbformat.v4.new_code_cell(source)
    if nbgrader:
        cell.metadata["nbgrader"] = nbgrader
    return cell


def test_make_exercise_stubs_solutions_drops_hidden_tests_clears_outputs_and_adds_the_header():
    from course_lib.courseware.grading import HEADER
    solution = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("### BEGIN SOLUTION\nprose stays\n### END SOLUTION"),
        _tagged("def f(x):\n    \"\"\"Doc.\"\"\"\n    ### BEGIN SOLUTION\n    return x\n    ### END SOLUTION\n\n\n",
                grade_id="ex01_1", solution=True, locked=False),
        _tagged("### BEGIN HIDDEN TESTS\nassert f(1) == 1\n### END HIDDEN TESTS\n", grade_id="ex01_1_hidden",
                locked=True),
        _tagged("check('01.1', f)\n### BEGIN HIDDEN TESTS\nassert f(2) == 2\n### END HIDDEN TESTS",
                grade_id="ex01_1_check", locked=True),
        _tagged("x = 1  ### BEGIN SOLUTION stays: not at the start of a line"),
        _tagged("y = 2   \n\n"),             # only the trailing newlines go, not the spaces
        _tagged("LIMIT = MAX\n"),
    ])
    solution.cells[1].outputs = [nbformat.v4.new_output("stream", text="old")]
    solution.cells[1].execution_count = 4
    before = nbformat.writes(solution)
    nb = make_exercise(solution, "01_x_exercises.ipynb")
    assert nbformat.writes(solution) == before   # the solution notebook is not changed
    header, prose, answer, hidden, check_cell, plain, spaces, capitals = nb.cells
    assert (spaces.source, capitals.source) == ("y = 2   ", "LIMIT = MAX")
    assert header.cell_type == "markdown" and header.id == "generated-header"
    assert header.source == HEADER.format(name="01_x_exercises.ipynb")
    assert "`solutions/01_x_exercises.ipynb` by `make exercises`" in header.source
    assert prose.source == solution.cells[0].source
    assert answer.source == 'def f(x):\n    """Doc."""\n    # YOUR CODE HERE\n    raise NotImplementedError()'
    assert (answer.outputs, answer.execution_count) == ([], None)
    assert "editable" not in answer.metadata and "deletable" not in answer.metadata   # the learner's to edit
    assert hidden.source == "# Hidden tests for this exercise run when your work is graded (`course check`)."
    assert (hidden.metadata["editable"], hidden.metadata["deletable"]) == (False, False)
    assert check_cell.source == "check('01.1', f)"
    assert plain.source == solution.cells[4].source and "editable" not in plain.metadata


def test_make_exercises_writes_what_is_stale_and_check_only_writes_nothing(tmp_path, monkeypatch):
    from course_lib.courseware import grading
    (tmp_path / "solutions").mkdir()
    source = SOLUTIONS[0]
    (tmp_path / "solutions" / source.name).write_bytes(source.read_bytes())
    (tmp_path / "solutions" / "1_not_a_stage_exercises.ipynb").write_text("{}")   # not NN_: not a solution
    (tmp_path / "solutions" / "01_notes.ipynb").write_text("{}")                  # not *_exercises
    monkeypatch.setattr(grading, "ROOT", tmp_path)
    assert grading.solution_paths() == [tmp_path / "solutions" / source.name]
    assert grading.make_exercises(check_only=True) == [f"exercises/{source.name}"]
    assert list((tmp_path / "exercises").iterdir()) == []   # the folder is made, nothing written
    assert grading.make_exercises() == [f"exercises/{source.name}"]
    written = (tmp_path / "exercises" / source.name).read_text(encoding="utf-8")
    assert written == (ROOT / "exercises" / source.name).read_text(encoding="utf-8") and written.endswith("}\n")
    assert grading.make_exercises() == [] and grading.make_exercises(check_only=True) == []
    (tmp_path / "exercises" / source.name).write_text("hand-edited", encoding="utf-8")
    assert grading.make_exercises(check_only=True) == [f"exercises/{source.name}"]
    assert (tmp_path / "exercises" / source.name).read_text(encoding="utf-8") == "hand-edited"


def test_grade_here_is_the_grader_s_grade(monkeypatch):
    from course_lib.courseware import grader
    calls = []
    monkeypatch.setattr(grader, "grade", lambda notebook, stage, **options: calls.append((notebook, stage, options))
                        or "graded")
    assert grade("nb.ipynb", "04", timeout=5, level="none") == "graded"
    assert calls == [("nb.ipynb", "04", {"timeout": 5, "level": "none"})]


def test_make_exercises_reads_and_writes_utf_8_even_where_the_locale_is_not(tmp_path, monkeypatch):
    """On a Windows machine (cp1252) the generated notebooks must still be the UTF-8 files that are committed."""
    import io
    from course_lib.courseware import grading
    (tmp_path / "solutions").mkdir()
    source = next(p for p in SOLUTIONS if any(ord(ch) > 255 for ch in p.read_text(encoding="utf-8")))
    (tmp_path / "solutions" / source.name).write_bytes(source.read_bytes())
    monkeypatch.setattr(grading, "ROOT", tmp_path)
    monkeypatch.setattr(io, "text_encoding", lambda encoding, stacklevel=2: encoding or "cp1252")
    assert grading.make_exercises() == [f"exercises/{source.name}"]
    assert (tmp_path / "exercises" / source.name).read_bytes() == (ROOT / "exercises" / source.name).read_bytes()
    assert grading.make_exercises(check_only=True) == []


def test_a_cell_without_metadata_has_no_grade_id():
    from course_lib.courseware.grading import _grade_id
    assert _grade_id({"cell_type": "code", "source": ""}) == ""
    assert _grade_id(nbformat.v4.new_code_cell("")) == ""


# ---------------------------------------------------------------- reference solutions agree with the course's finished code
def test_the_verdicts_of_11_3_are_read_as_the_planning_module_reads_them():
    """Every case of 11.3 that calls with a plain text agrees with course_lib.planning.parse_verdict."""
    from course_lib.planning import parse_verdict
    reference = solution("11.3")
    for case in exercise("11.3").cases:
        finished = case.call(lambda text: None if parse_verdict(text).note else
                             {"ok": parse_verdict(text).ok, "feedback": parse_verdict(text).feedback})
        assert finished == case.call(reference), case.label


def test_the_edges_of_11_4_are_what_call_edges_gives_for_trees_without_odd_whitespace():
    from course_lib.orchestration import call_edges
    edges = solution("11.4")
    assert edges(stage11.NESTED) == call_edges(stage11.NESTED)
    assert edges(stage11.TEAM) == call_edges(stage11.TEAM)


def test_the_reference_answers_like_course_mcp_serve_where_both_answer(tmp_path):
    """13.2's reference and the real server, in the 2026-07-28 revision, agree on codes, ids, the versions a -32022
    offers, server/discover's versions and a tool error's text: the exercise teaches the real thing. ``refusal`` is
    the server's layer before the SDK, for lines that are not messages; the SDK answers the rest. The differences
    the exercise states: the SDK reads "arguments": null as missing, says more in its results, and also speaks the
    handshake era (so ``initialize`` is not compared)."""
    import subprocess
    import sys
    from course_lib.courseware.exercises.stage13 import CAPABILITIES_KEY, META, VERSION_KEY, request
    reply = solution("13.2")
    tools = default_tools()
    for message in [{"id": 5, "method": "ping"}, {"jsonrpc": "1.0", "id": 6, "method": "ping"}, [1, 2], "ping",
                    {"jsonrpc": "2.0", "id": None, "method": "ping"}, {"jsonrpc": "2.0", "id": True, "method": "ping"},
                    {"jsonrpc": "2.0", "id": 7}, {"jsonrpc": "2.0", "method": 1}]:
        ours, served = reply(message, tools), refusal(json.dumps(message))
        assert (ours["id"], ours["error"]["code"]) == (served["id"], served["error"]["code"]), message
    messages = [request("server/discover", n=1), request("tools/call", {"name": "calculator", "arguments": {
        "expression": "1/0"}}, n=2), request("tools/call", {"name": "calculater"}, n=3), request("weather/today", n=4),
        request("ping", n=5), request("tools/list", n=6, meta=None), request("tools/list", n=7, meta={VERSION_KEY: "x"}),
        request("tools/list", n=8, meta={VERSION_KEY: "2025-11-25", CAPABILITIES_KEY: {}}),
        request("tools/call", {"name": "lookup", "arguments": {"topic": "단가"}}, n="아홉")]
    assert all(m.get("params", {}).get("_meta") in (META, None, {VERSION_KEY: "x"}) or m["id"] == 8 for m in messages)
    course = Path(sys.executable).parent / "course"
    run = subprocess.run([str(course), "mcp", "serve"], cwd=tmp_path, capture_output=True, text=True, encoding="utf-8",
                         input="".join(json.dumps(m, ensure_ascii=False) + "\n" for m in messages), timeout=60)
    served = {a["id"]: a for a in map(json.loads, run.stdout.splitlines())}
    assert len(served) == len(messages), run.stdout
    for message in messages:
        ours, theirs = reply(message, tools), served[message["id"]]
        assert ("error" in ours) == ("error" in theirs), (message, ours, theirs)
        if "error" in ours:
            assert ours["error"]["code"] == theirs["error"]["code"], (message, ours, theirs)
            if ours["error"]["code"] == -32022:
                assert ours["error"]["data"]["supported"] == theirs["error"]["data"]["supported"]
        else:
            for key, value in ours["result"].items():   # the SDK's result says more; where both speak, they agree
                if key == "capabilities":   # the server also offers resources and prompts, with their details
                    assert set(value) <= set(theirs["result"][key]), (message, ours, theirs)
                else:
                    assert theirs["result"][key] == value, (message, key, ours, theirs)