"""`course check` as a mischievous student would try it, and as an instructor with a class runs it.

Every trick here once turned a wrong or empty stage-04 notebook into a pass, hid a failure, or disturbed the
grading of the next notebook. Each must now earn no mark, with a reason, and the batch must go on. The submissions
are built from the real exercise notebook (nothing solved) or the real solution notebook (everything solved),
so the tricks meet the grader exactly as a learner's file would.

The tricks run: the answers run in a worker (a sandboxed kernel), and ``refusal`` only adds a note saying what an
answer reached for. They earn nothing because the grader judges each case's outcome itself, outside the worker,
against expectations the worker never sees, and because under bubblewrap the worker's finished modules of the
graded stage hold nothing to borrow. The second half tests the grader's own logic in-process (assembling, the
shape of the worker's reply, judging, reporting, and ``run`` and ``grade`` with fake clients), without a kernel.
"""
from __future__ import annotations

import contextlib
import copy
import functools
import hashlib
import io
import json
import shutil
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import nbformat
import pytest

from course_lib.courseware import checks, grader as _grader, hidden as hidden_cases, observe, sandbox
from course_lib.courseware.grader import Grade, grade, grade_all
from course_lib.courseware.grading import ROOT

STAGE = "04"
SOLUTION = ROOT / "solutions" / "04_parsing_replies_exercises.ipynb"
EXERCISE = ROOT / "exercises" / "04_parsing_replies_exercises.ipynb"
FULL = sandbox.isolation() == "bubblewrap"
needs_full = pytest.mark.skipif(not FULL, reason="needs bubblewrap (bwrap) for file isolation; .ci/run installs it")


def load(path: Path):
    return nbformat.read(path, as_version=4)


def cell(nb, gid: str):
    return next(c for c in nb.cells if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == gid)


def save(nb, folder: Path, name: str) -> str:
    path = folder / f"{name}.ipynb"
    nbformat.write(nb, path)
    return str(path)


def answer(nb, gid: str, extra: str):
    """Add ``extra`` code to the end of an answer cell (a stub stays a stub)."""
    target = cell(nb, gid)
    target.source = target.source + "\n" + extra


def local_listener() -> socket.socket:
    """A TCP listener on this machine's 127.0.0.1 that a sandboxed notebook must not reach."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(5)
    listener.settimeout(0.5)
    return listener


def by_exercise(g: Grade) -> dict:
    return {e.exercise: e for e in g.exercises}


# -- the answer cell is the student's: tricks placed there ---------------------------------------------------
TRICKS_IN_AN_ANSWER = {
    "custom exception handler and patched results": """
get_ipython().set_custom_exc((BaseException,), lambda *a, **k: None)
import course_lib.courseware.checks as _c
_c.RESULTS.clear()
_c.run_cases = lambda exercise, candidate: type("R", (), {"as_dict": lambda self: {"cases": [], "passed": True}})()
""",
    "hooks that swallow output and fake a pass": """
def _quiet(*a, **k):
    print("✓ 04.1  10/10 cases passed, hidden tests passed")
get_ipython().events.register("pre_run_cell", _quiet)
get_ipython().events.register("post_run_cell", _quiet)
""",
    "an AST transformer that empties the hidden tests": """
import ast as _ast
class _Empty(_ast.NodeTransformer):
    def visit_Module(self, node):
        return _ast.Module(body=[], type_ignores=[])
get_ipython().ast_transformers.append(_Empty())
""",
    "a tracer and an excepthook": """
import sys as _sys
_sys.settrace(lambda *a: None)
_sys.excepthook = lambda *a: None
""",
    "printing fake grader lines": """
print("__COURSE_RESULTS__" + '{"04.1": {"passed": true}}')
""",
}


@pytest.fixture(scope="module")
def tricks(tmp_path_factory):
    """Every trick of the table, each in its own copy of the (unsolved) exercise notebook, graded as one batch."""
    folder = tmp_path_factory.mktemp("tricks")
    paths = {}
    for name, code in TRICKS_IN_AN_ANSWER.items():
        nb = load(EXERCISE)
        answer(nb, "ex04_1", code)
        paths[name] = save(nb, folder, name.replace(" ", "_"))
    grades, problems = grade_all(list(paths.values()), STAGE, timeout=120, jobs=2)
    assert problems == []
    return dict(zip(paths, grades))


@pytest.mark.parametrize("name", list(TRICKS_IN_AN_ANSWER))
def test_a_trick_in_an_answer_cell_changes_nothing(tricks, name):
    """Each trick runs (the refusal is advice): the stub it sits beside stays a stub, judged outside the worker,
    and the report's notes say what the trick reached for."""
    g = tricks[name]
    assert not g.passed and not any(e.passed or e.points for e in g.exercises), g.as_dict()
    assert by_exercise(g)["04.1"].detail == "not implemented yet", g.as_dict()
    why = _grader.refusal(TRICKS_IN_AN_ANSWER[name], STAGE)
    assert why is None or any(n.startswith(f"answer cell 'ex04_1': {why}; ") and n.endswith("it ran all the same")
                              for n in g.notes), g.notes


# -- the locked cells are the grader's ----------------------------------------------------------------------------
def tamper(nb, how: str):
    hidden = cell(nb, "ex04_1_hidden")
    if how == "deleted":
        nb.cells.remove(hidden)
    elif how == "renamed":
        hidden.metadata["nbgrader"]["grade_id"] = "ex04_1_hidden_renamed"
    elif how == "stripped":
        del hidden.metadata["nbgrader"]
    elif how == "markdown":
        nb.cells[nb.cells.index(hidden)] = nbformat.v4.new_markdown_cell(hidden.source)
    elif how == "duplicated":
        twin = copy.deepcopy(hidden)
        twin.id = "twin-of-hidden"
        nb.cells.insert(nb.cells.index(hidden), twin)
    elif how == "untagged answer":
        cell(nb, "ex04_1").metadata["nbgrader"]["solution"] = False


@pytest.mark.parametrize("how", ["deleted", "renamed", "stripped", "markdown", "duplicated", "untagged answer"])
def test_tampering_with_a_graded_cell_fails_that_exercise(tmp_path, how):
    nb = load(SOLUTION)   # everything solved: only the tampering can fail it
    tamper(nb, how)
    g = grade(save(nb, tmp_path, how.replace(" ", "_")), STAGE, timeout=120)
    ex = by_exercise(g)
    assert not ex["04.1"].passed and ex["04.1"].detail.startswith("tampering:"), ex["04.1"]
    assert ex["04.2"].passed   # the rest is graded as usual (04.3 builds on 04.1's answer)


def test_an_edited_check_cell_is_restored(tmp_path):
    nb = load(SOLUTION)
    cell(nb, "ex04_1").source = "def validate_action(data):\n    return None\n"   # wrong: accepts everything
    cell(nb, "ex04_1_check").source = 'print("✓ all cases passed")'
    g = grade(save(nb, tmp_path, "edited"), STAGE, timeout=120)
    ex = by_exercise(g)["04.1"]
    assert not ex.passed and "cases passed in check()" in ex.detail and ex.failing
    assert any("ex04_1_check" in note and "originals were run" in note for note in g.notes)


def test_cells_a_student_adds_are_not_run(tmp_path):
    nb = load(EXERCISE)
    nb.cells.append(nbformat.v4.new_code_cell("validate_action = lambda data: None"))
    g = grade(save(nb, tmp_path, "added"), STAGE, timeout=120)
    assert by_exercise(g)["04.1"].detail == "not implemented yet"
    assert any("you added were not run" in note for note in g.notes)


def test_a_reexported_finished_version_is_not_a_solution(tmp_path):
    """Under bubblewrap the worker's course_lib.parsing has no parse_reply, so the import fails and the answer is
    missing; without it the import works, and the answer is course_lib's own. Either way: no mark, and a note."""
    nb = load(EXERCISE)
    cell(nb, "ex04_3").source = "from course_lib.parsing import parse_reply as parse_action\n"
    g = grade(save(nb, tmp_path, "reexport"), STAGE, timeout=120)
    ex = by_exercise(g)["04.3"]
    assert not ex.passed and ex.points == 0, ex
    assert ex.detail.split(": it raised ImportError: cannot import name 'parse_reply'")[0] == (
        "your answer cell defines no `parse_action`" if FULL else
        "`parse_action` is course_lib's finished version (course_lib.parsing), not your own: the exercise asks you "
        "to write it"), ex.detail
    assert g.notes == ["answer cell 'ex04_3': it imports course_lib.parsing, the finished version of this stage or a "
                       "later one, of which only what the notebook hands out is there where answers are graded; no "
                       "exercise needs that (see the notebook's note on imports); it ran all the same"]


# -- isolation ---------------------------------------------------------------------------------------------------
@needs_full
def test_the_solutions_and_git_history_are_out_of_reach(tmp_path):
    """What a kernel sees where the solutions and the git history were: empty folders."""
    scratch = tmp_path / "scratch"
    (scratch / "work").mkdir(parents=True)
    probe = ("import os, subprocess\n"
             f"print(os.listdir({str(ROOT / 'solutions')!r}), os.path.exists({str(ROOT / '.git' / 'HEAD')!r}),\n"
             f"      subprocess.run(['git', '-C', {str(ROOT)!r}, 'show', 'HEAD:solutions'],\n"
             "                     capture_output=True).returncode)")
    hidden = [ROOT / "solutions", ROOT / ".git"]
    command = sandbox.wrapper("bubblewrap", scratch, hidden) + [sys.executable, "-c", probe]
    seen = subprocess.run(command, capture_output=True, text=True, timeout=60).stdout.split()
    assert seen[:2] == ["[]", "False"] and seen[2] != "0"
    assert (ROOT / "solutions" / SOLUTION.name).exists()   # while the file is right there, outside the sandbox


@needs_full
def test_a_submission_cannot_change_the_next_grade(tmp_path):
    before = hashlib.sha256(SOLUTION.read_bytes()).hexdigest()
    writer = load(EXERCISE)
    answer(writer, "ex04_1", """
import pathlib, course_lib
root = pathlib.Path(course_lib.__file__).parent.parent
for target in [root / "solutions" / "04_parsing_replies_exercises.ipynb",
               root / "course_lib" / "courseware" / "checks.py"]:
    try:
        target.write_text("# replaced")
    except OSError as e:
        print(type(e).__name__)
""")
    wrong = load(SOLUTION)
    cell(wrong, "ex04_1").source = "def validate_action(data):\n    return None\n"
    grades, problems = grade_all([save(writer, tmp_path, "writer"), save(wrong, tmp_path, "wrong")], STAGE,
                                 timeout=120, jobs=1)
    assert problems == [] and not grades[0].passed
    assert not by_exercise(grades[1])["04.1"].passed and by_exercise(grades[1])["04.2"].passed
    assert hashlib.sha256(SOLUTION.read_bytes()).hexdigest() == before
    assert "replaced" not in (ROOT / "course_lib" / "courseware" / "checks.py").read_text(encoding="utf-8")


@needs_full
def test_a_graded_notebook_reaches_no_socket_and_leaves_no_file(tmp_path):
    listener = local_listener()
    port, marker = listener.getsockname()[1], uuid.uuid4().hex
    home_file, tmp_file = Path.home() / f"course-cheat-{marker}", Path("/tmp") / f"course-cheat-{marker}"
    nb = load(EXERCISE)
    answer(nb, "ex04_1", f"""
import socket, urllib.request, pathlib, os
outcomes = []
for target in [("127.0.0.1", {port}), ("1.1.1.1", 53)]:
    s = socket.socket(); s.settimeout(2)
    outcomes.append(s.connect_ex(target))
opener = urllib.request.build_opener(urllib.request.ProxyHandler({{}}))
try:
    opener.open("http://127.0.0.1:{port}/", timeout=2)
    outcomes.append("reached")
except OSError as e:
    outcomes.append(type(e).__name__)
for path in [{str(home_file)!r}, {str(tmp_file)!r}, os.path.expanduser("~/written")]:
    try:
        pathlib.Path(path).write_text("x")
    except OSError:
        pass
print(outcomes)
""")
    g = grade(save(nb, tmp_path, "network"), STAGE, timeout=120)
    with pytest.raises(socket.timeout):
        listener.accept()   # nobody connected
    listener.close()
    assert not home_file.exists() and not tmp_file.exists()
    assert not by_exercise(g)["04.1"].passed


# -- batches that survive ----------------------------------------------------------------------------------------
def test_one_batch_with_every_kind_of_failure_grades_the_honest_one(tmp_path):
    def exercise_with(code):
        nb = load(EXERCISE)
        answer(nb, "ex04_1", code)
        return nb
    honest = save(load(SOLUTION), tmp_path, "honest")
    batch = {
        # os.abort, which the refusal does not even name, ends only its own notebook's kernel: the batch holds
        "dead": save(exercise_with("import os\nos.abort()"), tmp_path, "dead"),
        "endless": save(exercise_with("while True:\n    pass"), tmp_path, "endless"),
        "stubborn": save(exercise_with("import time\nwhile True:\n    try:\n        time.sleep(60)\n"
                                       "    except BaseException:\n        pass"), tmp_path, "stubborn"),
        # a loop that swallows the check's stop; it waits rather than spins (`endless` spins), so its give-ups
        # cost the batch time but no processor time (the idle rule ends each case as the CPU rule would)
        "swallowed": save(exercise_with("import time\ndef validate_action(data):\n    try:\n        while True:\n"
                                        "            time.sleep(0.01)\n    except BaseException:\n        return None"),
                          tmp_path, "swallowed"),
        "huge": save(exercise_with("for _ in range(200):\n    print('x' * 100_000)"), tmp_path, "huge"),
        "not json": str(tmp_path / "not.ipynb"),
        "missing": str(tmp_path / "missing.ipynb"),
        "honest": honest,
    }
    Path(batch["not json"]).write_text("this is not a notebook")
    result = subprocess.run([sys.executable, "-m", "course_lib.courseware.cli", "check", STAGE, "--json",
                             "--timeout", "10",
                             "--jobs", "4", *batch.values()], capture_output=True, text=True, timeout=600,
                            cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    report = json.loads(result.stdout)
    assert report["total"] == len(batch) and report["grader_errors"] == []
    graded = {Path(n["notebook"]).name: n for n in report["notebooks"]}
    assert [n["passed"] for n in report["notebooks"]] == [False] * (len(batch) - 1) + [True]
    assert "kernel died" in graded["dead.ipynb"]["reason"]
    assert "cannot read it as a notebook" in graded["not.ipynb"]["reason"]
    assert "cannot read it as a notebook" in graded["missing.ipynb"]["reason"]
    assert any("capped" in note for note in graded["huge.ipynb"]["notes"])
    for name in ("endless.ipynb", "stubborn.ipynb"):
        assert not graded[name]["passed"] and ("ran longer than 10 s" in json.dumps(graded[name])
                                               or "still busy" in graded[name]["reason"])
    assert graded["honest.ipynb"]["points"] == graded["honest.ipynb"]["max_points"] > 0


def test_text_mode_prints_relative_paths_progress_and_failing_rows(tmp_path):
    folder = tmp_path / "batch" / "student07"
    folder.mkdir(parents=True)
    wrong = load(SOLUTION)
    cell(wrong, "ex04_1").source = "def validate_action(data):\n    return None\n"
    save(wrong, folder, "04_parsing_replies_exercises")
    result = subprocess.run([sys.executable, "-m", "course_lib.courseware.cli", "check", STAGE,
                             "batch/student07/04_parsing_replies_exercises.ipynb"], capture_output=True,
                            text=True, timeout=300, cwd=tmp_path)
    assert result.returncode == 1
    assert "[1/1] batch/student07/04_parsing_replies_exercises.ipynb: failed" in result.stdout
    assert "        ✗ " in result.stdout and "expected" in result.stdout


def test_exit_statuses_for_usage_and_grader_errors(tmp_path):
    run = lambda *a: subprocess.run([sys.executable, "-m", "course_lib.courseware.cli", "check", *a],
                                    capture_output=True,
                                    text=True, timeout=120, cwd=tmp_path)
    assert run("4x").returncode == 2                                   # not a stage
    assert run(STAGE, "--solutions", str(tmp_path)).returncode == 3    # no solution notebook there
    missing = run("42", str(tmp_path / "a.ipynb"))
    assert missing.returncode == 3 and "no solution notebook for stage 42" in missing.stderr


def test_solutions_kept_outside_the_repository(tmp_path):
    outside = tmp_path / "instructor"
    outside.mkdir()
    (outside / SOLUTION.name).write_bytes(SOLUTION.read_bytes())
    shutil.copytree(ROOT / "solutions" / "hidden", outside / "hidden")   # the hidden cases live beside it
    g = grade(str(SOLUTION), STAGE, solutions_dir=outside, timeout=120)
    assert g.passed


@pytest.mark.parametrize("level", ["unshare", "none"])
def test_a_weaker_sandbox_says_so_and_unshare_still_cuts_the_network(tmp_path, level):
    if level == "unshare" and not sandbox._runs(["unshare", "-rn", "--"]):
        pytest.skip("unshare -rn does not work on this machine")
    listener = local_listener()
    nb = load(EXERCISE)
    answer(nb, "ex04_1", f"import socket\nsocket.socket().connect_ex(('127.0.0.1', {listener.getsockname()[1]}))")
    g = grade(save(nb, tmp_path, level), STAGE, timeout=120, level=level)
    assert g.isolation == sandbox.DESCRIPTIONS[level] and ("NOT isolated" in g.isolation)
    if level == "unshare":
        with pytest.raises(socket.timeout):
            listener.accept()
    listener.close()


@pytest.fixture
def scratch_folders(monkeypatch) -> list[str]:
    """The scratch folders the grader makes (one per notebook graded), in the order it makes them."""
    import tempfile

    import course_lib.courseware.grader as grader
    made, original = [], tempfile.mkdtemp
    monkeypatch.setattr(grader.tempfile, "mkdtemp", lambda **kw: made.append(original(**kw)) or made[-1])
    return made


def test_the_scratch_folder_is_deleted_afterwards(tmp_path, scratch_folders):
    made = scratch_folders
    nb = load(EXERCISE)
    answer(nb, "ex04_1", "open('left-behind.txt', 'w').write('x')")
    grade(save(nb, tmp_path, "scratch"), STAGE, timeout=120)
    assert len(made) == 1 and Path(made[0]).name.startswith("course-grade-") and not Path(made[0]).exists()


def _processes_naming(text: str) -> list[str]:
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            args = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:   # the process ended meanwhile
            continue
        if text in args:
            found.append(f"{cmdline.parent.name}: {args[:120]}")
    return found


@pytest.mark.skipif(not Path("/proc/self/cmdline").exists(), reason="reads the process table from /proc")
def test_no_process_of_a_grade_outlives_it_not_even_a_spinning_one(tmp_path, scratch_folders):
    """grade() called from Python (an instructor's script, these tests) used to leave every kernel running until
    the calling process ended: nbclient shuts down only kernels whose manager it made itself."""
    made = scratch_folders
    nb = load(EXERCISE)
    answer(nb, "ex04_1", "import threading\n"
                         "threading.Thread(target=lambda: [0 for _ in iter(int, 1)], daemon=True).start()")
    grade(save(nb, tmp_path, "spinner"), STAGE, timeout=120)
    assert len(made) == 1
    deadline = time.monotonic() + 30   # a hang guard: a killed process may take a moment to leave the table
    while _processes_naming(made[0]) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _processes_naming(made[0])


# -- found by a red-team review: the sandbox itself, and answers that reach into the interpreter ---------------
@needs_full
def test_inside_the_sandbox_nobody_has_no_capabilities_sees_no_other_process_and_cannot_unshare(tmp_path):
    listener = local_listener()
    port = listener.getsockname()[1]
    scratch = tmp_path / "scratch"
    (scratch / "work").mkdir(parents=True)
    probe = ("import os, subprocess, json\n"
             "status = open('/proc/self/status').read()\n"
             "caps = int(status.split('CapEff:')[1].split()[0], 16)\n"
             "pids = [p for p in os.listdir('/proc') if p.isdigit()]\n"
             "escape = subprocess.run(['unshare', '-m', 'true'], capture_output=True).returncode\n"
             "import socket\n"
             f"reached = socket.socket().connect_ex(('127.0.0.1', {port}))\n"
             "print(json.dumps({'uid': os.getuid(), 'caps': caps, 'pids': len(pids), 'escape': escape,\n"
             "                  'parent': os.getppid(), 'reached': reached}))\n")
    command = sandbox.wrapper("bubblewrap", scratch, [ROOT / "solutions"]) + [sys.executable, "-c", probe]
    seen = json.loads(subprocess.run(command, capture_output=True, text=True, timeout=60).stdout)
    assert seen["uid"] == 65534 and seen["caps"] == 0 and seen["escape"] != 0
    assert seen["pids"] <= 3 and seen["parent"] == 1   # bwrap's own init and this process: no grader, no kernel
    assert seen["reached"] != 0
    with pytest.raises(socket.timeout):
        listener.accept()
    listener.close()


REACHING_IN = {
    "patching IPython's class": "type(get_ipython()).run_code = lambda *a, **k: False",
    "patching an imported module": "import json as _j\n_j.dumps = lambda *a, **k: '{}'",
    "frames": "import sys\nsys._getframe(1).f_locals['x'] = 1",
    "another process": "import os\nos.kill(os.getppid(), 9)",
    "the finished version, wrapped": "from course_lib.parsing import parse_reply\n"
                                     "def validate_action(data):\n    return None if parse_reply('{}').ok else 'x'",
    "the builtins": "import builtins\nbuiltins.print = None",
    "dunder access": "x = ().__class__.__base__.__subclasses__()",
}


JSON_PATCHED = "patching an imported module"   # the kernel writes its own messages with json: they are garbage


@pytest.fixture(scope="module")
def reaching_in(tmp_path_factory):
    """Each attack of REACHING_IN after the stub of 04.1 in the solved notebook, graded as one batch; the attack
    that breaks the kernel's messages in a batch of its own (see the xfail test below: it can disturb the next
    grades of the process that graded it)."""
    folder = tmp_path_factory.mktemp("reaching")
    stub = cell(load(EXERCISE), "ex04_1").source
    paths = {}
    for n, (name, code) in enumerate(REACHING_IN.items()):
        nb = load(SOLUTION)
        cell(nb, "ex04_1").source = stub + "\n" + code
        paths[name] = save(nb, folder, f"reach{n}")
    rest = [name for name in paths if name != JSON_PATCHED]
    grades, problems = grade_all([paths[name] for name in rest], STAGE, timeout=120, jobs=2)
    alone, more = grade_all([paths[JSON_PATCHED]], STAGE, timeout=120, jobs=1)
    assert problems == [] and more == []
    return {**dict(zip(rest, grades)), JSON_PATCHED: alone[0]}


@needs_full   # "another process" kills the kernel's parent: only in the sandbox is that no process of the grader
@pytest.mark.parametrize("name", list(REACHING_IN))
def test_an_answer_that_reaches_into_the_interpreter_runs_earns_nothing_and_the_notes_say_what_it_reached_for(
        reaching_in, name):
    g = reaching_in[name]
    assert not any(e.exercise == "04.1" and (e.passed or e.points) for e in g.exercises), g.as_dict()
    if name == JSON_PATCHED:   # the notebook fails as a whole
        assert g.reason and not g.passed, g.as_dict()
        return
    assert g.reason == "" and by_exercise(g)["04.1"].detail == "not implemented yet", g.as_dict()
    why = _grader.refusal(REACHING_IN[name], STAGE)
    assert g.notes == [f"answer cell 'ex04_1': {why}; no exercise needs that (see the notebook's note on imports); "
                       "it ran all the same"], g.notes


def test_a_kernel_whose_messages_cannot_be_read_is_a_failed_notebook_not_a_crash(tmp_path):
    """In a process of its own: what the escaped exception leaves behind disturbs the process that graded it."""
    nb = load(EXERCISE)
    answer(nb, "ex04_1", REACHING_IN[JSON_PATCHED])
    path = save(nb, tmp_path, "garbled")
    script = ("import json, sys\nfrom course_lib.courseware.grader import grade\n"
              "print(json.dumps(grade(sys.argv[1], '04', timeout=60).as_dict()))")
    done = subprocess.run([sys.executable, "-c", script, path], capture_output=True, text=True, timeout=300,
                          cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    g = json.loads(done.stdout)
    assert g["reason"] and not g["passed"] and g["points"] == 0


def test_the_refusal_does_not_touch_honest_answers():
    from course_lib.courseware.grader import refusal
    for path in sorted((ROOT / "solutions").glob("*_exercises.ipynb")):
        for c in load(path).cells:
            if c.get("metadata", {}).get("nbgrader", {}).get("solution"):
                assert refusal(c.source, path.name[:2]) is None, (path.name, c.source[:80])


def test_a_fifo_or_a_device_is_not_read(tmp_path):
    import os
    fifo = tmp_path / "fifo.ipynb"
    os.mkfifo(fifo)
    device = tmp_path / "zero.ipynb"
    device.symlink_to("/dev/zero")
    for path in (fifo, device):
        g = grade(str(path), STAGE, timeout=120)
        assert "not a regular file" in g.reason and not g.passed


# -- a second red-team round -------------------------------------------------------------------------------------
ROUND_TWO = {
    "builtins through a bound method": 'B = getattr(print, "_" + "_self__")',
    "a built attribute name": 'name = "get_" + "ipython"\nx = getattr(print, name)',
    "a dunder in a string": 'x = getattr(print, "__self__")',
    "IPython's formatters by attribute": "f = print.display_formatter",
}


@pytest.mark.parametrize("name", list(ROUND_TWO))
def test_round_two_ways_around_the_refusal_are_refused(name):
    from course_lib.courseware.grader import refusal
    assert refusal(ROUND_TWO[name], "04") is not None


def test_a_forged_reply_with_more_outcomes_than_cases_fails_the_notebook():
    """Even a reply forged inside the worker must be in the shape the grader asked for: an outcome for a case
    nobody asked about, or an exercise nobody asked for, and the whole reply is dropped."""
    plan = _plan("04.1")
    honest = {"04.1": _honest("04.1")}
    assert _grader._outcomes(_reply(honest), plan) == honest
    one_more = {"kind": "value", "value": None}
    for forged in ({"04.1": {**honest["04.1"], "public": honest["04.1"]["public"] + [one_more]}},
                   {"04.1": {**honest["04.1"], "hidden": honest["04.1"]["hidden"] + [one_more]}},
                   {**honest, "04.2": {"defined": False}}, [1], {"04.1": "yes"}, {}):
        assert _grader._outcomes(_reply(forged), plan) is None, forged


def test_report_lines_carry_no_terminal_control_characters():
    from course_lib.courseware.grader import ExerciseGrade, _lines
    g = Grade("x.ipynb", STAGE, [ExerciseGrade("04.1", False, "bad\x1b[8Fpassed", failing=[
        {"label": "\x1b]0;title\x07row", "expected": "\x9b1m", "got": "ok", "hint": ""}])])
    text = "\n".join(_lines(g))
    assert "\x1b" not in text and "\x07" not in text and "\x9b" not in text and "\\x1b" in text


def test_a_report_line_cannot_be_split_into_fake_lines():
    """A newline, a tab, a carriage return or a Unicode line separator in a message, a note or a row would let a
    submission plant lines of its own (`✓ 04.2  passed`) in the instructor's report: each is shown escaped."""
    from course_lib.courseware.grader import ExerciseGrade, _lines
    fake = "\n    ✓ 04.2  11/11 cases passed\r\t\u2028\u2029\x85"
    g = Grade("x.ipynb", STAGE, [ExerciseGrade("04.1", False, "raised ValueError: " + fake, failing=[
        {"label": "row" + fake, "expected": fake, "got": fake, "hint": fake}])], notes=["note" + fake],
        reason="reason" + fake)
    lines = _lines(g)
    assert all(len(line.splitlines()) == 1 for line in lines), lines
    assert not any(c in "\n".join(lines) for c in "\r\t\u2028\u2029\x85")
    assert lines[0] == "    note: note\\x0a    ✓ 04.2  11/11 cases passed\\x0d\\x09\\x2028\\x2029\\x85"
    # a long line is wrapped to the terminal, its continuations indented deeper: no entry of its own starts there
    indents = [len(line) - len(line.lstrip(" ")) for line in lines]
    assert [line.split(":")[0] for line, n in zip(lines, indents) if n == 4] == ["    note", "    NOT GRADED",
                                                                                "    ✗ 04.1  raised ValueError"]
    assert indents[3] == 8 and lines[3].startswith("        ✗ row") and all(n >= 8 for n in indents[3:]), lines
    assert all(len(line) <= 110 for line in lines if " " in line.strip()), lines


def test_the_progress_line_shows_a_notebook_path_escaped(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(sandbox, "isolation", lambda: "none")
    monkeypatch.chdir(tmp_path)
    name = "a\n[2/2] b.ipynb: passed\x1b[2K.ipynb"
    failed = Grade(name, STAGE, [_grader.ExerciseGrade("04.1", False, "bad", 0, 2)])

    def fake_all(notebooks, stage, *, solutions_dir, timeout, jobs, on_done):
        on_done(0, failed, None)
        return [failed], []
    monkeypatch.setattr(_grader, "grade_all", fake_all)
    assert _grader.cmd_check(_args(notebooks=[name])) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[1] == "[1/1] a\\x0a[2/2] b.ipynb: passed\\x1b[2K.ipynb: failed" and len(out) == 4, out


@needs_full
def test_a_classmates_notebook_in_the_same_batch_is_out_of_reach(tmp_path):
    alice, mallory = tmp_path / "alice", tmp_path / "mallory"
    alice.mkdir()
    mallory.mkdir()
    honest = save(load(SOLUTION), alice, "04")
    copier = load(EXERCISE)
    cell(copier, "ex04_1").source = (f"text = open({honest!r}).read()\n"
                                     "def validate_action(data):\n    return None\n")
    grades, problems = grade_all([honest, save(copier, mallory, "04")], STAGE, timeout=120, jobs=2)
    assert problems == [] and grades[0].passed
    assert by_exercise(grades[1])["04.1"].detail.startswith("your answer cell defines no")   # open() failed


def test_sqlite_cursor_methods_are_allowed_but_starting_a_program_is_not():
    """Stage 10's answers run SQL with db.execute; os.execv and friends replace the kernel with another program."""
    from course_lib.courseware.grader import refusal
    for honest in ('db.execute("SELECT 1")', 'db.executemany("INSERT INTO t VALUES (?)", [(1,)])',
                   'db.executescript("CREATE TABLE t (x)")'):
        assert refusal(honest, "10") is None, honest
    for cheat in ('import os\nos.execv("/bin/sh", ["sh"])', 'os.execvp("sh", ["sh"])', 'os.execl("/bin/sh", "sh")',
                  'os.spawnv(os.P_WAIT, "/bin/sh", ["sh"])', "from course_lib.memory import trim_window",
                  "import course_lib.safety"):
        assert refusal(cheat, "10" if "memory" in cheat else "09") is not None, cheat


# -- a third round: a student who borrows the finished version of stages 09 and 10 -------------------------------
ROUND_THREE_REFUSED = {   # stage, answer: what refusal() names (advice in the report; the answer still runs)
    "the package bound by importing a submodule": ("10", "import course_lib.tools\n_t = course_lib.trim_window"),
    "the package name itself": ("10", "_t = course_lib.trim_window"),
    "a later stage's module": ("09", "from course_lib.memory import trim_window"),
    "the lab that re-exports the policy": ("09", "from course_lib.courseware.injection_lab import ToolPolicy"),
    "pkgutil.resolve_name": ("10", 'import pkgutil\n_t = pkgutil.resolve_name("course_lib.memory:trim_window")'),
    "runpy": ("10", 'import runpy\n_m = runpy.run_module("course_lib.memory")'),
}


@pytest.mark.parametrize("name", list(ROUND_THREE_REFUSED))
def test_round_three_ways_to_reach_a_finished_module_are_refused(name):
    from course_lib.courseware.grader import refusal
    stage, source = ROUND_THREE_REFUSED[name]
    assert refusal(source, stage) is not None


# Answers to 04.3 that are right only because they call course_lib's finished parse_reply, each by another route.
# In the worker of stage 04 (under bubblewrap) course_lib/parsing.py holds only what the notebook hands out, so
# every route finds nothing: the import fails, or the call does.
BORROWING = {
    "a re-export": "from course_lib.parsing import parse_reply as parse_action\n",
    "a wrapper": "from course_lib.parsing import parse_reply\ndef parse_action(text):\n    return parse_reply(text)\n",
    "a default argument": ("from course_lib.parsing import parse_reply\n"
                           "parse_action = lambda text, _f=parse_reply: _f(text)\n"),
    "a partial": ("import functools\nfrom course_lib.parsing import parse_reply\n"
                  "parse_action = functools.partial(parse_reply)\n"),
    "an alias two helpers deep": ("from course_lib.parsing import parse_reply as _p\n"
                                  "def _a(text):\n    return _p(text)\n"
                                  "def parse_action(text):\n    return _a(text)\n"),
    "a closure": ("from course_lib.parsing import parse_reply\ndef make():\n    parse = parse_reply\n"
                  "    def parse_action(text):\n        return parse(text)\n    return parse_action\n"
                  "parse_action = make()\n"),
    "a subclass, to its module": ("from course_lib.parsing import TextProtocol\n"
                                  "class _Reader(TextProtocol):\n    pass\n"
                                  "def parse_action(text):\n"
                                  "    return _Reader.read.__globals__['parse_reply'](text)\n"),
    "a method's body": ("class _Parser:\n    def go(self, text):\n        from course_lib.parsing import parse_reply\n"
                        "        return parse_reply(text)\nparse_action = _Parser().go\n"),
    "a module kept in an instance": ("import importlib\nclass _Box:\n    def __init__(self, m):\n        self.m = m\n"
                                     "_box = _Box(importlib.import_module('course_lib.parsing'))\n"
                                     "def parse_action(text):\n    return _box.m.parse_reply(text)\n"),
    "code copied from the module's file": ("import sys, types\nfrom course_lib import parsing as _p\n"
                                           "_m = types.ModuleType('copied')\n_m.__package__ = 'course_lib'\n"
                                           "sys.modules['copied'] = _m\nexec(open(_p.__file__).read(), vars(_m))\n"
                                           "parse_action = _m.parse_reply\n"),
    "pickle": 'import pickle\nparse_action = pickle.loads(b"ccourse_lib.parsing\\nparse_reply\\n.")\n',
    "pydoc.locate": "import pydoc\nparse_action = pydoc.locate('course_lib.parsing.parse_reply')\n",
}


@pytest.mark.parametrize("name", list(BORROWING))
def test_each_borrowing_answer_would_pass_the_check_were_nothing_cut(name):
    """The attacks are real: in the grader's own process, where nothing is cut, each passes every visible case."""
    namespace = {"__name__": "__main__"}
    exec(BORROWING[name], namespace)
    assert checks.run_cases("04.3", namespace["parse_action"]).passed


@pytest.fixture(scope="module")
def borrowing(tmp_path_factory):
    """Each answer of BORROWING as 04.3 of the solved notebook, graded as one batch."""
    folder = tmp_path_factory.mktemp("borrowing")
    paths = {}
    for n, (name, code) in enumerate(BORROWING.items()):
        nb = load(SOLUTION)
        cell(nb, "ex04_3").source = code
        paths[name] = save(nb, folder, f"borrow{n}")
    grades, problems = grade_all(list(paths.values()), STAGE, timeout=120, jobs=2)
    assert problems == []
    return dict(zip(paths, grades))


@needs_full
@pytest.mark.parametrize("name", list(BORROWING))
def test_an_answer_that_reaches_a_finished_function_earns_no_mark_however_it_gets_there(borrowing, name):
    g = borrowing[name]
    ex = by_exercise(g)
    assert not ex["04.3"].passed and ex["04.3"].points == 0, ex["04.3"]
    assert ex["04.3"].detail.startswith("your answer cell defines no `parse_action`: it raised ") or \
        "cases passed in check()" in \
        ex["04.3"].detail, ex["04.3"].detail   # the import failed, or each call did
    assert ex["04.1"].passed and ex["04.2"].passed   # the rest is graded as usual
    why = _grader.refusal(BORROWING[name], STAGE)
    assert g.notes == [f"answer cell 'ex04_3': {why}; no exercise needs that (see the notebook's note on imports); "
                       "it ran all the same"], g.notes


@needs_full   # only the sandbox holds the cut modules
def test_a_wrapper_around_the_split_steps_the_setup_cell_hands_over_fails_10_1(tmp_path):
    nb = load(ROOT / "exercises" / "10_memory_and_context_exercises.ipynb")
    target = cell(nb, "ex10_1")
    target.source = "def group_steps(history):\n    return split_steps(history)\n"
    g = grade(save(nb, tmp_path, "borrow10"), "10", timeout=60)
    ex = by_exercise(g)
    assert ex["10.2"].detail.startswith("not implemented yet")
    assert not ex["10.1"].passed and ex["10.1"].points == 0, ex["10.1"]
    assert ex["10.1"].failing[0]["got"] == "raised LookupError: split_steps: this exercise asks you to write it"


@needs_full
def test_a_queue_model_borrowed_from_the_scripted_model_07_4_may_use_fails_07_1(tmp_path):
    """07.4 builds on the finished ScriptedModel, which is 07.1's answer: 07.1 is graded where it refuses."""
    nb = load(ROOT / "solutions" / "07_scripted_model_exercises.ipynb")
    cell(nb, "ex07_1").source = "class QueueModel(ScriptedModel):\n    pass\n"
    g = grade(save(nb, tmp_path, "borrow07"), "07", timeout=60)
    ex = by_exercise(g)
    assert ex["07.4"].passed and ex["07.2"].passed and ex["07.3"].passed, g.as_dict()
    assert not ex["07.1"].passed and ex["07.1"].points == 0, ex["07.1"]


# -- stage 11: the finished retrieval, planning and orchestration modules are the answers, so they are off limits --
STAGE_11_REFUSED = {
    "BM25 itself": "from course_lib.retrieval import BM25",
    "the finished parse_verdict": "from course_lib.planning import parse_verdict",
    "call_edges": "from course_lib.orchestration import call_edges as edges",
    "the module": "import course_lib.planning",
    "a wrapper": "from course_lib.retrieval import BM25 as _B\ndef bm25_scores(q, d):\n    return _B(d).scores(q)",
}


@pytest.mark.parametrize("name", list(STAGE_11_REFUSED))
def test_stage_11_answers_may_not_import_the_finished_patterns(name):
    from course_lib.courseware.grader import refusal
    assert refusal(STAGE_11_REFUSED[name], "11") is not None
    assert refusal(STAGE_11_REFUSED[name], "10") is not None   # a later stage's module, for stage 10's answers


def test_stage_11_answers_may_use_earlier_stages_and_the_tokenizer_the_setup_cell_hands_over():
    from course_lib.courseware.grader import may_use, refusal
    assert refusal("import json, math, re\nfrom collections import Counter\nfrom course_lib.tools import ToolError",
                   "11") is None
    assert may_use("11") == {"11.1": ["tokenize"]}


@needs_full   # without bubblewrap nothing is cut, and the wrapper would be judged on what it returns
def test_an_answer_that_imports_the_finished_parse_verdict_fails_11_3(tmp_path):
    nb = load(ROOT / "exercises" / "11_agent_patterns_exercises.ipynb")
    cell(nb, "ex11_3").source = ("from course_lib.planning import parse_verdict as _pv\n"
                                 "def parse_verdict(text):\n    v = _pv(text)\n"
                                 "    return None if v.note else {'ok': v.ok, 'feedback': v.feedback}\n")
    g = grade(save(nb, tmp_path, "borrow11"), "11", timeout=60)
    ex = by_exercise(g)
    assert not ex["11.3"].passed and ex["11.3"].points == 0, ex["11.3"]
    assert ex["11.3"].detail.startswith("your answer cell defines no `parse_verdict`: it raised ImportError: cannot "
                                        "import name 'parse_verdict'")   # the import failed in the worker
    assert ex["11.4"].detail.startswith("not implemented yet")
    assert any(n.startswith("answer cell 'ex11_3': it imports course_lib.planning, the finished version")
               for n in g.notes), g.notes


# -- round four (a cheating student on stages 11-13): patching the kernel, pickle, the grader's own imports --------
TAMPER = '''from unittest import mock
import json, pydoc
from course_lib.courseware.checks import exercise as _exercise
_dumps = json.dumps
def _fake_dumps(obj, *args, **kwargs):
    return _dumps(obj, *args, **kwargs)
mock.patch("json.dumps", _fake_dumps).start()
_transform = pydoc.locate("IPython.core.interactiveshell.InteractiveShell.transform_cell")
def _skip_hidden(self, raw_cell):
    return "pass\\n" if "BEGIN HIDDEN TESTS" in raw_cell else _transform(self, raw_cell)
mock.patch("IPython.core.interactiveshell.InteractiveShell.transform_cell", _skip_hidden).start()
'''
ROUND_FOUR_REFUSED = {
    "mock.patch on json and IPython": (TAMPER, "it imports unittest"),
    "pydoc.locate": ("import pydoc\nf = pydoc.locate('course_lib.retrieval.BM25')", "it imports pydoc"),
    "pickle to a finished function": ('import pickle\nv = pickle.loads(b"ccourse_lib.planning\\nparse_verdict\\n.")',
                                      "it imports pickle"),
    "pickle to exec": ('from pickle import loads\n_run = loads(b"cbuiltins\\nexec\\n.")', "it imports pickle"),
    "the grader's import_module": ("from course_lib.courseware.checks import import_module\n"
                                   "m = import_module('course_lib.retrieval')", "grading machinery"),
    "the grader's exercise list": ("from course_lib.courseware.checks import exercise", "grading machinery"),
    "a finished module through the handed-over tokenize": ("import inspect\nm = inspect.getmodule(tokenize)",
                                                           "it uses .getmodule"),
    "the library's source": ("import inspect\nsrc = inspect.getsource(tokenize)", "it uses .getsource"),
    "a new process": ("import os\nos.posix_spawn('/bin/true', ['true'], {})", "it uses .posix_spawn"),
    "the posix module": ("import posix\nposix.system('true')", "it imports posix"),
}


def test_the_kernel_patching_notebook_gets_no_marks(tmp_path):
    nb = load(ROOT / "exercises" / "11_agent_patterns_exercises.ipynb")
    cell(nb, "ex11_1").source = TAMPER + "\n" + cell(nb, "ex11_1").source
    """It runs: json patched with a pass-through, the shell told to skip hidden tests. The hidden tests are not the
    kernel's to run any more, and the stubs fail as stubs."""
    g = grade(save(nb, tmp_path, "tamper11"), "11", timeout=60)
    ex = by_exercise(g)
    assert not any(e.passed or e.points for e in ex.values()), ex
    assert ex["11.1"].detail == "not implemented yet", ex["11.1"]
    assert g.notes[0] == ("answer cell 'ex11_1': it imports unittest; no exercise needs that (see the notebook's "
                          "note on imports); it ran all the same"), g.notes


# -- round five: strings that become attributes, a module's dict changed through a call, the shell patched --------
ROUND_FIVE = '''import os
from operator import attrgetter
_mods = getattr(os.sys, "modules")
_own = attrgetter("_" * 2 + "dict" + "_" * 2)
_json = _mods["json"]
_dumps = _json.dumps
def _forged(obj, *args, **kwargs):
    return _dumps(obj, *args, **kwargs)
_own(_json)["dumps"] = _forged
'''
ROUND_FIVE_REFUSED = {
    "getattr for a listed attribute": ("import os\ndef f():\n    return getattr(os.sys, 'modules')",
                                       "getattr for .modules"),
    "sys as a module's attribute": ("import os\nm = os.sys", "it uses .sys"),
    "from operator import attrgetter": ("from operator import attrgetter", "it imports attrgetter"),
    "operator.attrgetter with a dotted path": ("import operator, dataclasses\n"
                                               "m = operator.attrgetter('sys.modules')(dataclasses)", ".attrgetter"),
    "operator.methodcaller": ("import operator\nf = operator.methodcaller('get_ipython')", ".methodcaller"),
    "string.Formatter's get_field": ("import string\nx = string.Formatter().get_field('0.x', (1,), {})",
                                     ".get_field"),
    "from string import Formatter": ("from string import Formatter", "it imports Formatter"),
    "an item of what a call returned": ("def own(o):\n    return o\nown({})['dumps'] = print",
                                        "an item of what a call returned"),
    "the whole attack": (ROUND_FIVE, "it imports attrgetter"),
}


@pytest.mark.parametrize("stage, name", [("11", n) for n in ROUND_FOUR_REFUSED]
                         + [("12", n) for n in ROUND_FIVE_REFUSED])
def test_round_four_and_five_ways_around_the_grader_are_refused_saying_why(stage, name):
    from course_lib.courseware.grader import refusal
    source, said = {"11": ROUND_FOUR_REFUSED, "12": ROUND_FIVE_REFUSED}[stage][name]
    why = refusal(source, stage)
    assert why is not None and said in why, why


def test_items_of_the_answer_s_own_containers_may_still_be_set():
    from course_lib.courseware.grader import refusal
    assert refusal("counts = {}\ncounts['a'] = 1\nrows = [[0]]\nrows[0][0] = 1\n"
                   "def f(d):\n    d['k'] = 2\n    return d", "12") is None


FORGE = '''import os
from operator import attrgetter
_mods = getattr(os.sys, "modules")
_own = attrgetter("_" * 2 + "dict" + "_" * 2)
_json = _mods["json"]
_dumps = _json.dumps
def _forged(obj, *args, **kwargs):
    if isinstance(obj, dict) and obj and all(isinstance(v, dict) and "defined" in v for v in obj.values()):
        encode = _mods["course_lib.courseware.observe"].encode
        for ex, seen in obj.items():
            spec = _mods["course_lib.courseware.exercises.stage" + ex[:2]].EXERCISES[ex]
            public = [{"kind": "value", "value": encode(None if c.test else c.expected)} for c in spec.cases]
            hidden = [{"kind": "value", "value": None} for _ in seen.get("hidden") or []]
            seen.update(defined=True, qualname="forged", module="notebook", public=public, hidden=hidden)
    return _dumps(obj, *args, **kwargs)
_own(_json)["dumps"] = _forged
_shell = getattr(_mods["IPython"], "get_ipython")()
_transform = _shell.transform_cell
def _skip_hidden(raw_cell):
    return "pass\\n" if "HIDDEN TESTS" in raw_cell else _transform(raw_cell)
_own(_shell)["transform_cell"] = _skip_hidden
'''


def test_a_forged_report_and_skipped_hidden_tests_still_get_no_marks(tmp_path):
    """Round five's full attack, run for real (the refusal only notes it): it patches the worker's json so that
    the report of outcomes says every visible case returned its expected value, and tells the shell to skip hidden
    tests. The grader judges the claimed values itself, and for the hidden cases, whose expectations the worker
    never saw, the forger has only guesses."""
    nb = load(ROOT / "exercises" / "12_evaluation_exercises.ipynb")
    cell(nb, "ex12_1").source = FORGE + "\n" + cell(nb, "ex12_1").source
    g = grade(save(nb, tmp_path, "forged12"), "12", timeout=60)
    ex = by_exercise(g)
    details = {k: e.detail for k, e in ex.items()}
    assert g.reason == "" and not any(e.passed or e.points for e in ex.values()), g.as_dict()
    assert not any(d.startswith("not implemented") for d in details.values()), details   # the forgery was judged
    assert all(d.endswith("cases passed in check()") or d.startswith("hidden tests failed:")
               for d in details.values()), details
    assert g.notes[0].startswith("answer cell 'ex12_1': it imports attrgetter"), g.notes



# -- the grader's own logic, in-process and fast: assembling, refusing, judging, reporting (no kernel) -------------


def _trusted_04():
    return load(SOLUTION)


def test_assemble_takes_only_the_answer_cells_and_names_each_kind_of_tampering():
    trusted = _trusted_04()
    submission = load(SOLUTION)
    cell(submission, "ex04_1").source = "import sys\ndef validate_action(data):\n    return None"   # advised against
    nb, found, notes = _grader.assemble(trusted, submission)
    assert found == {}   # what the refusal names is advice, not tampering
    assert notes == ["answer cell 'ex04_1': it imports sys; no exercise needs that (see the notebook's note on "
                     "imports); it ran all the same"]
    assert len(nb.cells) == len(trusted.cells) and nb.metadata == trusted.metadata
    assert cell(nb, "ex04_1").source == cell(submission, "ex04_1").source   # it runs, as written
    assert cell(nb, "ex04_2").source == cell(trusted, "ex04_2").source   # an honest answer is taken as it is
    assert [c.source for c in nb.cells if _grader._grade_id(c).endswith("_hidden")] == ["", "", ""]   # not run there
    assert all(c.get("outputs", []) == [] and c.get("execution_count") is None for c in nb.cells
               if c.cell_type == "code")
    for how, said in [("deleted", "cell 'ex04_1_hidden' is missing"),
                      ("duplicated", "cell 'ex04_1_hidden' appears 2 times"),
                      ("markdown, tags kept", "cell 'ex04_1_hidden' was changed into a markdown cell"),
                      ("untagged answer", "cell 'ex04_1' lost its nbgrader tags"),
                      ("hidden cell ungraded", "cell 'ex04_1_hidden' lost its nbgrader tags"),
                      ("hidden cell unlocked", "cell 'ex04_1_hidden' lost its nbgrader tags")]:
        submission = load(SOLUTION)
        if how.startswith("hidden cell"):
            cell(submission, "ex04_1_hidden").metadata["nbgrader"]["grade" if "ungraded" in how else "locked"] = False
        elif how == "markdown, tags kept":
            hidden = cell(submission, "ex04_1_hidden")
            text = nbformat.v4.new_markdown_cell(hidden.source, metadata=hidden.metadata)
            submission.cells[submission.cells.index(hidden)] = text
        else:
            tamper(submission, how)
        nb, found, _ = _grader.assemble(trusted, submission)
        assert found == {"04.1": [said]}, how
        assert cell(nb, "ex04_1_hidden").source == ""   # whatever the submission did to it: not run in the worker
    submission = load(SOLUTION)
    tamper(submission, "untagged answer")
    cell(submission, "ex04_1").source = "import sys\n" + cell(submission, "ex04_1").source
    nb, _, notes = _grader.assemble(trusted, submission)
    assert "raise NotImplementedError()" in cell(nb, "ex04_1").source   # a tampered answer is not run either
    assert not any("ran all the same" in n for n in notes), notes   # it did not run: no advice about it
    submission = load(SOLUTION)
    submission.cells.remove(cell(submission, "ex04_2"))   # the answer cell itself deleted
    nb, found, _ = _grader.assemble(trusted, submission)
    assert found == {"04.2": ["cell 'ex04_2' is missing"]}
    assert cell(nb, "ex04_2").source.rstrip("\n") == cell(load(EXERCISE), "ex04_2").source


def test_assemble_notes_added_cells_and_edited_locked_cells_and_runs_the_originals():
    trusted = _trusted_04()
    submission = load(SOLUTION)
    submission.cells.append(nbformat.v4.new_code_cell("helper = 1"))
    submission.cells.append(nbformat.v4.new_code_cell("   "))   # blank: nothing to mention
    submission.cells.append(nbformat.v4.new_code_cell(submission.cells[1].source))   # a copy of set-up code
    extra = nbformat.v4.new_code_cell("x = 2")
    extra.metadata["nbgrader"] = {"grade_id": "my_own_cell"}
    submission.cells.append(extra)
    submission.cells.append(nbformat.v4.new_markdown_cell("my notes"))
    submission.cells.append(nbformat.v4.new_code_cell(trusted.cells[0].source))   # the intro text, as code
    submission.cells.append(nbformat.v4.new_code_cell('check("04.2", find_action)'))   # an untagged check copy
    cell(submission, "ex04_2_check").source = 'print("✓")'
    cell(submission, "ex04_1_check").source = cell(trusted, "ex04_1_check").source + "\n\n"   # only blank lines
    cell(submission, "ex04_3_hidden").source = "pass"   # a hidden-test cell: no note (it says nothing new)
    nb, tamper, notes = _grader.assemble(trusted, submission)
    assert tamper == {}
    assert notes == ["4 code cell(s) you added were not run: only the answer cells are graded, so put helper code "
                     "inside an answer cell",
                     "locked cell(s) ex04_2_check were edited; the originals were run"]
    assert cell(nb, "ex04_2_check").source == 'check("04.2", find_action)'
    assert cell(nb, "ex04_3_hidden").source == ""
    assert len(nb.cells) == len(trusted.cells)
    two = load(SOLUTION)
    cell(two, "ex04_2_check").source = "a"
    cell(two, "ex04_1_check").source = "b"
    assert _grader.assemble(trusted, two)[2] == ["locked cell(s) ex04_1_check, ex04_2_check were edited; the "
                                                 "originals were run"]


def test_assemble_stubs_a_solution_region_left_in_a_set_up_cell():
    trusted = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell("x = 1\n### BEGIN SOLUTION\nsecret = 2\n### END SOLUTION\n"),
        nbformat.v4.new_markdown_cell("### BEGIN SOLUTION\ntext stays\n### END SOLUTION\n")])
    nb, tamper, notes = _grader.assemble(trusted, nbformat.v4.new_notebook())
    assert nb.cells[0].source == "x = 1\n# YOUR CODE HERE\nraise NotImplementedError()\n"
    assert nb.cells[1].source == trusted.cells[1].source and (tamper, notes) == ({}, [])


def test_small_helpers_name_exercises_copy_cells_and_find_sources():
    assert _grader._exercise_of("ex04_2_hidden") == "04.2" and _grader._exercise_of("ex11_12") == "11.12"
    trusted = _trusted_04()
    assert _grader._source(trusted, "ex04_3_check") == 'check("04.3", parse_action)'
    assert _grader._source(trusted, "nothing") == ""
    code = nbformat.v4.new_code_cell("a", outputs=[{"output_type": "stream", "name": "stdout", "text": "x"}],
                                     execution_count=3)
    copied = _grader._copy(code, "b")
    assert (copied.source, copied.outputs, copied.execution_count, code.source) == ("b", [], None, "a")
    assert type(copied) is type(code)
    text = _grader._copy(nbformat.v4.new_markdown_cell("m"), "n")
    assert text.source == "n" and "outputs" not in text and "execution_count" not in text
    assert _grader._nbgrader(nbformat.v4.new_code_cell("")) == {}
    assert _grader._nbgrader({"cell_type": "code", "source": ""}) == {}   # a hand-made cell without metadata


def test_the_finished_modules_of_a_stage_are_its_own_and_every_later_one():
    thirteen = {"course_lib.mcp_bridge", "course_lib.mcp_client", "course_lib.courseware.mcp_serve"}
    assert _grader.finished("12") == {"course_lib.eval_tasks", "course_lib.evaluation",
                                      "course_lib.courseware.eval_lab"} | thirteen
    assert "course_lib.tools" in _grader.finished("01") and "course_lib.tools" not in _grader.finished("02")
    assert "course_lib.workspace" in _grader.finished("01") and "course_lib.workspace" not in _grader.finished("02")
    assert _grader.finished("13") == thirteen and _grader.finished("14") == set()
    assert _grader.may_use("99") == {} and _grader.may_use("04") == {}


def test_solution_for_finds_the_stage_s_notebook_or_says_where_it_looked(tmp_path):
    assert _grader.solution_for("04") == SOLUTION
    (tmp_path / "04_b_exercises.ipynb").write_text("{}")
    (tmp_path / "04_a_exercises.ipynb").write_text("{}")
    assert _grader.solution_for("04", tmp_path) == tmp_path / "04_a_exercises.ipynb"
    assert _grader.solution_for("04", str(tmp_path)) == tmp_path / "04_a_exercises.ipynb"
    with pytest.raises(_grader.GraderError) as e:
        _grader.solution_for("05", tmp_path)
    assert str(e.value) == f"there is no solution notebook for stage 05 in {tmp_path}"


REFUSAL_REASONS = {   # answer -> the reason the instructor and the learner read
    "from operator import attrgetter": "it imports attrgetter",
    "from os import system": "it imports system",
    "from builtins import print": "it imports builtins",
    "import os, sys": "it imports sys",
    "import sys.monitoring": "it imports sys.monitoring",
    "import course_lib.tools": "it imports course_lib as a package (`from course_lib.x import y` names what it uses)",
    "from course_lib.courseware import checks": "it imports the course's grading machinery (course_lib.courseware), "
                                                "which no answer needs",
    "from course_lib.courseware.sandbox import isolation": "it imports the course's grading machinery",
    "from course_lib import tools": "it imports course_lib, the finished version of this stage or a later one",
    "from course_lib.parsing import parse_reply": "it imports course_lib.parsing, the finished version of this "
                                                  "stage or a later one",
    "x = course_lib": "it uses the course_lib package itself",
    "f = eval": "it uses eval",
    "getattr(x, name)": "it uses getattr with a name that is not a plain string",
    "getattr(x)": "it uses getattr with a name that is not a plain string",
    "getattr(x, 3)": "it uses getattr with a name that is not a plain string",
    "getattr(x, '_hidden')": "it uses getattr with a name that is not a plain string",
    "getattr(x, 'kill')": "it uses getattr for .kill",
    "x = '__class__'": "it spells a dunder name in a string",
    "x = 'a __globals__ b'": "it spells a dunder name in a string",
    "x = 'my__own'": "it spells a dunder name in a string",
    "x.f_back": "it uses .f_back",
    "os.execv('/bin/sh', [])": "it uses .execv",
    "os.spawnl(0, 'sh')": "it uses .spawnl",
    "x.__class__": "it uses .__class__",
    "json.dumps = None": "it changes json.dumps, which it did not create",
    "json.x.y += 1": "it changes json.x.y, which it did not create",
    "a.b: int = 1": "it changes a.b, which it did not create",
    "del json.dumps": "it changes json.dumps, which it did not create",
    "f()['k'] = 1": "it changes f()['k'], an item of what a call returned",
    "f().a['k'] = 1": "it changes f().a['k'], an item of what a call returned",
}


@pytest.mark.parametrize("source", list(REFUSAL_REASONS))
def test_each_refusal_names_what_the_answer_used(source):
    why = _grader.refusal(source, "04")
    assert why is not None and why.startswith(REFUSAL_REASONS[source]), why


ALLOWED = [
    "def f(x):\n    return x", "x = (", "from course_lib.tools import ToolError", "import json, re",
    "from . import x", "getattr(x, 'name')", "getattr(x, '__name__')", "getattr(x, '__doc__', None)",
    "x = '__name__'", "x = 'a __init__ b'", "x = 'snake_case'", "x.__init__", "x.__len__()",
    "db.execute('SELECT 1')", "self.a = 1", "cls.b = 2", "self.a.b = 3", "self.items[0] = 1", "d['k'] = 1",
    "d[0][1] = 2", "x = 1\nx += 2", "import dataclasses", "print(len('x'))", "f(eval=1)", "x: int = 1",
]


@pytest.mark.parametrize("source", ALLOWED)
def test_ordinary_answer_code_is_not_refused(source):
    assert _grader.refusal(source, "04") is None


def test_earlier_stages_are_allowed_and_the_stage_is_where_the_finished_line_is_drawn():
    assert _grader.refusal("from course_lib.parsing import parse_reply", "05") is None
    assert _grader.refusal("from course_lib.dispatch import dispatch", "05") is not None
    assert _grader.refusal("from course_lib.dispatch import dispatch") is not None   # no stage: everything is later


def _trusted_mini(points=3, exercise="04.1"):
    gid = "ex" + exercise.replace(".", "_")
    cells = [nbformat.v4.new_markdown_cell("intro"), nbformat.v4.new_code_cell("setup = 1")]
    for suffix, meta in [("", {"solution": True}), ("_check", {"locked": True}),
                         ("_hidden", {"grade": True, "locked": True, "points": points})]:
        c = nbformat.v4.new_code_cell(f'check("{exercise}", validate_action)' if suffix == "_check" else "pass")
        c.metadata["nbgrader"] = {"grade_id": gid + suffix, **meta}
        cells.append(c)
    return nbformat.v4.new_notebook(cells=cells)


OK = ("ok", None, None)
CANDIDATES = {"04.1": "validate_action", "04.2": "find_action", "04.3": "parse_action"}
WRONG = {"kind": "value", "value": 12345}   # no case of 04.1 accepts a number


@functools.cache
def _references() -> dict:
    """Stage 04's reference answers, defined as the solution notebook defines them (its cells in order, but no
    check or hidden-test cell), in this process."""
    namespace = {"__name__": "__main__"}
    with contextlib.redirect_stdout(io.StringIO()):
        for c in load(SOLUTION).cells:
            if c.cell_type == "code" and not _grader._grade_id(c).endswith(("_check", "_hidden")):
                exec(c.source, namespace)
    return {ex: namespace[name] for ex, name in CANDIDATES.items()}


@functools.cache
def _honest_text(exercise: str) -> str:
    reference = _references()[exercise]
    return json.dumps({"defined": True, "qualname": reference.__qualname__, "module": "__main__",
                       "public": observe._outcomes(checks.exercise(exercise).cases, reference),
                       "hidden": observe._outcomes(hidden_cases.cases(exercise), reference)})


def _honest(exercise: str) -> dict:
    """What an honest worker reports for ``exercise``: the reference's outcomes for its public, then its hidden
    cases (a fresh copy each time)."""
    return json.loads(_honest_text(exercise))


def _seen_with(**changes) -> dict:
    return {**_honest("04.1"), **changes}


def _wrong_at(outcomes: list, *places, outcome=WRONG) -> list:
    return [outcome if i in places else o for i, o in enumerate(outcomes)]


def _plan(*exercises) -> dict:
    """What run() asks the worker for: each exercise's name and its hidden cases' specs."""
    return {ex: {"name": CANDIDATES[ex], "probes": [c.call.spec() for c in hidden_cases.cases(ex)]}
            for ex in exercises}


def _reply(found) -> dict:
    """The user_expression's reply that carries ``found``, as the worker's kernel sends it."""
    return {"status": "ok", "data": {"text/plain": repr(json.dumps(found))}}


def _judge(statuses=None, seen=None, tamper=None, judged="default", hidden="default", exercise="04.1", **kw):
    """The grade ``judge`` gives the one exercise of the small trusted notebook; by default an honest run of 04.1
    (its reference's outcomes, its real hidden cases, every cell ok)."""
    judged = {exercise: _honest("04.1") if seen is None else seen} if judged == "default" else judged
    hidden = {exercise: hidden_cases.cases("04.1")} if hidden == "default" else hidden
    statuses = {2: OK, 3: OK} if statuses is None else statuses
    grades = _grader.judge(_trusted_mini(exercise=exercise), statuses, judged, tamper or {},
                           {exercise: "validate_action"}, hidden, **kw)
    assert len(grades) == 1
    return grades[0]


def test_judge_passes_an_exercise_only_when_nothing_is_wrong_and_gives_its_points():
    public, secret = len(checks.exercise("04.1").cases), len(hidden_cases.cases("04.1"))
    g = _judge()
    assert (g.exercise, g.passed, g.detail, g.points, g.max_points, g.failing) == \
        ("04.1", True, f"{public}/{public} cases passed, {secret} hidden cases passed", 3, 3, [])
    unpointed = _grader.judge(_trusted_mini(points=None), {2: OK, 3: OK}, {"04.1": _honest("04.1")}, {},
                              {"04.1": "validate_action"}, {"04.1": hidden_cases.cases("04.1")})[0]
    assert unpointed.passed and (unpointed.points, unpointed.max_points) == (0, 0)


def _hidden_row(place: int, got: str) -> str:
    case = hidden_cases.cases("04.1")[place]
    return f"{case.label}: expected {checks._expectation(case)}, got {got}"


# What went wrong -> (what the judge is given, beyond an honest run of 04.1; the detail it must give), in the order
# the judge tests them. Each setting has the next one's fault too, where it can: the first fault is the one named.
STOPPED = ("error", "TimeoutError", "the cell ran longer than 30 s")
FIRST_FAILURE = {
    "tampering": (lambda: {"tamper": {"04.1": ["cell 'ex04_1_hidden' is missing", "cell 'ex04_1' lost its nbgrader "
                                               "tags"]}, "statuses": {2: STOPPED}},
                  lambda n, m: "tampering: cell 'ex04_1_hidden' is missing; tampering: cell 'ex04_1' lost its "
                               "nbgrader tags"),
    "a timeout": (lambda: {"statuses": {2: STOPPED}, "seen": {"defined": False}},
                  lambda n, m: "your answer cell was stopped: the cell ran longer than 30 s"),
    "no answer": (lambda: {"seen": {"defined": False}}, lambda n, m: "your answer cell defines no `validate_action`"),
    "no outcomes at all": (lambda: {"judged": None}, lambda n, m: "not graded"),
    "an exercise left out": (lambda: {"judged": {}}, lambda n, m: "your answer cell defines no `validate_action`"),
    "its own stub": (lambda: {"seen": _seen_with(public=[{"kind": "stub", "where": "validate_action"}],
                                                 module="course_lib.parsing")},
                     lambda n, m: "not implemented yet"),
    "a stub it calls": (lambda: {"seen": _seen_with(public=[{"kind": "stub", "where": "helper"}])},
                        lambda n, m: "not implemented yet: `helper` still raises NotImplementedError"),
    "a stub only a hidden case reaches": (lambda: {"seen": _seen_with(hidden=[{"kind": "stub",
                                                                               "where": "validate_action"}])},
                                          lambda n, m: "not implemented yet"),
    "course_lib's own": (lambda: {"seen": _seen_with(module="course_lib.parsing",
                                                     public=_wrong_at(_honest("04.1")["public"], 0))},
                         lambda n, m: "`validate_action` is course_lib's finished version (course_lib.parsing), not "
                                      "your own: the exercise asks you to write it"),
    "no such exercise": (lambda: {"exercise": "04.9", "statuses": {2: ("error", "NameError", "x")}},
                         lambda n, m: "the check could not run: there is no exercise '04.9' in the course_lib "
                                      f"imported from {Path(checks.__file__).resolve().parents[2]}"),
    "failing visible cases": (lambda: {"seen": _seen_with(public=_wrong_at(_honest("04.1")["public"], 1, 4)),
                                       "statuses": {2: ("error", "NameError", "x")}},
                              lambda n, m: f"{n - 2}/{n} cases passed in check()"),
    "visible outcomes missing": (lambda: {"seen": _seen_with(public=_honest("04.1")["public"][:3])},
                                 lambda n, m: f"3/{n} cases passed in check()"),
    "the answer cell raised": (lambda: {"statuses": {2: ("error", "NameError", "x")},
                                        "seen": _seen_with(hidden=_wrong_at(_honest("04.1")["hidden"], 0))},
                               lambda n, m: "your answer cell raised NameError: x"),
    "wrong hidden values": (lambda: {"seen": _seen_with(hidden=_wrong_at(_honest("04.1")["hidden"], 3, 5))},
                            lambda n, m: f"hidden tests failed: 2 of {m} hidden cases; the first: "
                                         + _hidden_row(3, "12345")),
    "hidden outcomes missing": (lambda: {"seen": _seen_with(hidden=[])},
                                lambda n, m: f"hidden tests failed: {m} of {m} hidden cases; the first: "
                                             + _hidden_row(0, "no outcome the grader could read")),
    "a hidden case out of time": (lambda: {"seen": _seen_with(hidden=_wrong_at(
        _honest("04.1")["hidden"], 2, outcome={"kind": "timeout", "stopped": True}))},
        lambda n, m: f"hidden tests failed: 1 of {m} hidden cases; the first: " + _hidden_row(
            2, checks.gave_up(hidden_cases.cases("04.1")[2], checks.CASE_SECONDS, True).got)),
    "no hidden cases": (lambda: {"hidden": {}}, lambda n, m: "hidden tests did not run (no hidden cases)"),
}


@pytest.mark.parametrize("name", list(FIRST_FAILURE))
def test_judge_says_what_failed_first(name):
    setting, detail = FIRST_FAILURE[name]
    g = _judge(**setting())
    expected = detail(len(checks.exercise("04.1").cases), len(hidden_cases.cases("04.1")))
    assert (g.passed, g.detail, g.points, g.max_points) == (False, expected, 0, 3)


def test_judge_keeps_every_failing_row_and_cuts_a_long_detail():
    public = checks.exercise("04.1").cases
    g = _judge(seen=_seen_with(public=[WRONG] * len(public)))
    assert [r["label"] for r in g.failing] == [c.label for c in public]
    assert all(r["got"] == "12345" and not r["ok"] for r in g.failing)
    assert set(g.failing[0]) == {"label", "ok", "expected", "got", "hint"}
    hidden_only = _judge(seen=_seen_with(hidden=[WRONG] * len(hidden_cases.cases("04.1"))))
    assert not hidden_only.passed and hidden_only.failing == []   # hidden rows stay out of the report's rows
    long = _judge(tamper={"04.1": ["x" * 600]})
    assert long.detail == ("tampering: " + "x" * 600)[:500]
    assert _judge(seen=_seen_with(module="course_lib.parsing"),
                  allowed_reexport=("validate_action",)).passed   # a re-export the exercise allows


def test_a_lying_worker_s_claims_count_only_against_an_answer():
    """Nothing the worker says passes an answer: a claim of success beside the values is not read, a claimed
    value is judged like any other, and an outcome the grader cannot read is a failed case. What it says
    against an answer (that it is missing, a stub, course_lib's own) fails it."""
    honest, m = _honest("04.1"), len(hidden_cases.cases("04.1"))
    boasting = {**honest, "passed": True, "ok": True, "hidden": [{**WRONG, "ok": True, "passed": True}] * m}
    g = _judge(seen=boasting)
    assert not g.passed and g.points == 0 and g.detail.startswith(f"hidden tests failed: {m} of {m} hidden cases")
    for unreadable in ({"kind": "pass"}, {"kind": "value"}, {"kind": "raised", "names": "ValueError"},
                       {"kind": "stub", "where": 1}, "ok", None, True, {"kind": "value", "value": {"$bogus": 1}}):
        g = _judge(seen={**honest, "public": [unreadable] * len(honest["public"])})
        assert not g.passed and len(g.failing) == len(honest["public"]), unreadable
        assert {r["got"] for r in g.failing} == {"no outcome the grader could read"}, unreadable
    for claim, said in [({"defined": False}, "your answer cell defines no `validate_action`"),
                        ({**honest, "module": "course_lib.parsing"}, "`validate_action` is course_lib's finished"),
                        ({**honest, "hidden": [{"kind": "stub", "where": "validate_action"}]}, "not implemented yet"),
                        ({**honest, "public": []}, "0/")]:
        g = _judge(seen=claim)
        assert not g.passed and g.detail.startswith(said), (claim, g.detail)
    assert not _judge(seen=honest, statuses={2: ("error", "ValueError", "x")}).passed   # the cell's reply, too


def test_an_honest_notebook_observed_as_the_worker_does_passes_and_a_stub_does_not(monkeypatch):
    """The worker's side and the grader's side of the wire, without a kernel: OBSERVE run (as run() sends it) over
    a namespace holding the reference answers, its reply read by _outcomes and judged; then the same with 04.2
    left a stub and 04.3 missing."""
    import IPython
    plan = _plan("04.1", "04.2", "04.3")
    source = f"PLAN = {plan!r}\n" + _grader.OBSERVE
    namespace = {name: _references()[ex] for ex, name in CANDIDATES.items()}
    monkeypatch.setattr(IPython, "get_ipython", lambda: type("Shell", (), {"user_ns": namespace})())
    found = _grader._outcomes({"data": {"text/plain": repr(eval(_grader._expression(source), {}))}}, plan)
    secret = {ex: hidden_cases.cases(ex) for ex in plan}
    grades = _grader.judge(_trusted_04(), {}, found, {}, CANDIDATES, secret)
    assert [(g.exercise, g.passed, g.points) for g in grades] == [("04.1", True, 2), ("04.2", True, 2),
                                                                   ("04.3", True, 2)], grades

    def find_action(text):
        raise NotImplementedError()
    namespace.update(find_action=find_action)
    del namespace["parse_action"]
    found = _grader._outcomes({"data": {"text/plain": repr(eval(_grader._expression(source), {}))}}, plan)
    grades = _grader.judge(_trusted_04(), {}, found, {}, CANDIDATES, secret)
    assert [(g.exercise, g.passed, g.detail) for g in grades] == [
        ("04.1", True, grades[0].detail), ("04.2", False, "not implemented yet"),
        ("04.3", False, "your answer cell defines no `parse_action`")]


def test_a_grade_passes_with_every_exercise_and_no_reason_and_adds_up_points():
    ok, bad = (_grader.ExerciseGrade("04.1", True, "d", 2, 2), _grader.ExerciseGrade("04.2", False, "d", 0, 3))
    assert Grade("n", "04", [ok]).passed and not Grade("n", "04", []).passed
    assert not Grade("n", "04", [ok, bad]).passed and not Grade("n", "04", [ok], reason="r").passed
    data = Grade("n", "04", [ok, bad], notes=["a"]).as_dict()
    assert (data["passed"], data["points"], data["max_points"], data["notes"]) == (False, 2, 5, ["a"])
    assert data["exercises"][1] == {"exercise": "04.2", "passed": False, "detail": "d", "points": 0,
                                    "max_points": 3, "failing": []}


def test_the_report_shows_notes_the_reason_and_five_failing_rows_with_hints():
    rows = [{"label": f"c{i}", "expected": "1", "got": "2", "hint": "h" if i == 0 else ""} for i in range(6)]
    g = Grade("n", "04", [_grader.ExerciseGrade("04.1", False, "1/7 cases passed in check()", 0, 2, rows),
                          _grader.ExerciseGrade("04.2", True, "4/4 cases passed, 9 hidden cases passed", 2, 2)],
              notes=["a note"], reason="the kernel died")
    assert _grader._lines(g) == [
        "    note: a note", "    NOT GRADED: the kernel died",
        "    ✗ 04.1  1/7 cases passed in check()",
        "        ✗ c0: expected 1, got 2  (hint: h)", "        ✗ c1: expected 1, got 2",
        "        ✗ c2: expected 1, got 2", "        ✗ c3: expected 1, got 2", "        ✗ c4: expected 1, got 2",
        "        … and 1 more failing case(s): the check cell in the notebook lists them all",
        "    ✓ 04.2  4/4 cases passed, 9 hidden cases passed"]
    g.exercises[0].failing = rows[:5]
    assert not any("more failing" in line for line in _grader._lines(g))
    assert _grader._lines(Grade("n", "04", [])) == []
    assert _grader._lines(Grade("n", "04", [], notes=["\x7f\x00"])) == ["    note: \\x7f\\x00"]


def test_paths_in_the_report_are_relative_when_inside_the_current_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert _grader._shown(str(tmp_path / "class" / "a.ipynb")) == str(Path("class") / "a.ipynb")
    outside = str(tmp_path.parent / "elsewhere.ipynb")
    assert _grader._shown(outside) == outside
    monkeypatch.setattr(_grader.os.path, "relpath", lambda p: (_ for _ in ()).throw(ValueError("another drive")))
    assert _grader._shown("D:/x.ipynb") == "D:/x.ipynb"


def test_the_kernel_s_environment_has_no_keys_a_closed_proxy_and_a_scratch_home(tmp_path, monkeypatch):
    for key in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL", "COURSE_MAX_STEPS",
                "COURSE_ANTHROPIC_MODEL", "COURSE_OPENAI_MODEL", "COURSE_OLLAMA_MODEL", "JPY_PARENT_PID"):
        monkeypatch.setenv(key, "secret")
    monkeypatch.setenv("COURSE_KEPT", "kept")
    monkeypatch.setenv("PYTHONHASHSEED", "random")   # the grader's own settings win over the instructor's
    monkeypatch.setenv("COURSE_APPROVAL", "ask")
    env = _grader._environment(tmp_path)
    assert not [k for k, v in env.items() if v == "secret"] and env["COURSE_KEPT"] == "kept"
    closed = "http://127.0.0.1:9"
    assert {k: env[k] for k in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy")} == \
        dict.fromkeys(("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"), closed)
    assert (env["NO_PROXY"], env["no_proxy"], env["PYTHONHASHSEED"], env["COURSE_APPROVAL"]) == ("", "", "0", "deny")
    assert (env["HOME"], env["TMPDIR"], env["MPLCONFIGDIR"], env["IPYTHONDIR"]) == (
        str(tmp_path / "home"), str(tmp_path / "tmp"), str(tmp_path / "tmp"), str(tmp_path / "home" / ".ipython"))


def test_the_expression_sent_to_the_worker_runs_with_the_real_builtins_whatever_the_namespace_holds():
    expression = _grader._expression("x = [len('abc'), print.__name__]\nresult = x")
    assert eval(expression, {"__builtins__": {}}) == [3, "print"]   # nothing named in the caller's namespace
    assert eval(_grader._expression("result = 'reset'"), {"exec": None, "len": None}) == "reset"


def test_the_worker_s_outcomes_are_kept_in_the_shape_asked_for():
    """Per exercise asked: whether the answer is defined and, if it is, a qualname and module (text or None) and
    at most as many public and hidden outcomes as cases were asked (a stub or a timeout ends a list early). What
    each outcome says is not checked here: judge reads each one, and fails what it cannot read."""
    plan = _plan("04.1", "04.2")
    honest = {"04.1": _honest("04.1"), "04.2": {"defined": False}}
    assert _grader._outcomes(_reply(honest), plan) == honest
    for kept in ({**honest, "04.1": _seen_with(public=[{"kind": "stub", "where": "validate_action"}], hidden=[])},
                 {**honest, "04.1": _seen_with(qualname=None, module=None)},
                 {**honest, "04.1": _seen_with(public=["not an outcome"])},   # judged later, as a failed case
                 {**honest, "04.2": {"defined": False, "whatever": 1}}):   # nothing else of an absent answer is read
        assert _grader._outcomes(_reply(kept), plan) == kept, kept


SHAPES = {   # a reply the grader did not ask for, from the honest one ({"04.1": honest, "04.2": absent})
    "more public outcomes than cases": lambda good: {**good, "04.1": {**good["04.1"], "public": good["04.1"]["public"]
                                                                      + [WRONG]}},
    "more hidden outcomes than probes": lambda good: {**good, "04.1": {**good["04.1"], "hidden": good["04.1"]["hidden"]
                                                                       + [WRONG]}},
    "an exercise missing": lambda good: {"04.1": good["04.1"]},
    "an exercise not asked for": lambda good: {**good, "04.3": {"defined": False}},
    "no exercises": lambda good: {},
    "defined as a number": lambda good: {**good, "04.2": {"defined": 1}},
    "defined as text": lambda good: {**good, "04.1": {**good["04.1"], "defined": "yes"}},
    "defined missing": lambda good: {**good, "04.2": {}},
    "a module that is not text": lambda good: {**good, "04.1": {**good["04.1"], "module": 1}},
    "a qualname that is not text": lambda good: {**good, "04.1": {**good["04.1"], "qualname": ["validate_action"]}},
    "public outcomes that are not a list": lambda good: {**good, "04.1": {**good["04.1"], "public": {"0": WRONG}}},
    "hidden outcomes missing": lambda good: {**good, "04.1": {k: v for k, v in good["04.1"].items() if k != "hidden"}},
    "an exercise that is not a dict": lambda good: {**good, "04.1": "passed"},
    "a list, not a dict": lambda good: [good],
    "JSON null": lambda good: None,
}


@pytest.mark.parametrize("name", list(SHAPES))
def test_a_reply_in_another_shape_is_dropped(name):
    good = {"04.1": _honest("04.1"), "04.2": {"defined": False}}
    assert _grader._outcomes(_reply(SHAPES[name](good)), _plan("04.1", "04.2")) is None


def test_a_reply_too_large_or_not_json_or_not_a_reply_is_dropped(monkeypatch):
    plan = _plan("04.1")
    good = {"04.1": {"defined": False}}
    text = _reply(good)["data"]["text/plain"]
    monkeypatch.setattr(_grader, "MAX_REPLY", len(text) + 1)
    assert _grader._outcomes(_reply(good), plan) == good   # just under the limit
    monkeypatch.setattr(_grader, "MAX_REPLY", len(text))
    assert _grader._outcomes(_reply(good), plan) is None   # at the limit: too large
    monkeypatch.setattr(_grader, "MAX_REPLY", 50_000_000)
    for reply in ({"data": {"text/plain": repr("{not json")}},            # a Python string, not JSON inside
                  {"data": {"text/plain": "json.dumps(found)"}},          # not a literal: never evaluated
                  {"data": {"text/plain": repr(good)}},                   # a literal, but not a string of JSON
                  {"data": {"text/plain": 5}}, {"data": {"text/plain": None}}, {"data": {}}, {}, {"data": "x"},
                  {"data": {"text/plain": repr(json.dumps(good)) + "x"}}):
        assert _grader._outcomes(reply, plan) is None, reply


def _fake_run(record, statuses=None, judged=None, notes=(), reason=""):
    def run(nb, stage, candidates, *, timeout, level, hidden, probes=None, keep_out=frozenset()):
        record.update(nb=nb, stage=stage, candidates=candidates, timeout=timeout, level=level, hidden=hidden,
                      probes=probes)
        return statuses or {}, judged, list(notes), reason
    return run


def test_grade_builds_the_result_from_what_the_run_observed(tmp_path, monkeypatch):
    record = {}
    seen = {ex: _honest(ex) for ex in CANDIDATES}
    ok = {i: OK for i in range(15)}
    monkeypatch.setattr(_grader, "run", _fake_run(record, {**ok, 1: ("error", "NameError", "x"),
                                                           7: ("error", "ValueError", "bad")}, seen, ["n2"]))
    path = save(load(SOLUTION), tmp_path, "honest")
    keep = tmp_path / "class"
    keep.mkdir()
    g = _grader.grade(path, STAGE, timeout=9, level="none", hide=[str(keep), str(ROOT)])
    assert [c.source for c in record["nb"].cells] == [   # assembled: the solution, its hidden-test cells blank
        "" if _grader._grade_id(c).endswith("_hidden") else c.source for c in load(SOLUTION).cells]
    assert record["candidates"] == CANDIDATES
    assert record["probes"] == {ex: [c.call.spec() for c in hidden_cases.cases(ex)] for ex in CANDIDATES}
    assert (record["stage"], record["timeout"], record["level"]) == (STAGE, 9, "none")
    assert record["hidden"] == [(ROOT / "solutions").resolve(), (ROOT / ".git").resolve(),
                                keep]   # the solutions' folder once; the course folder itself is needed: not hidden
    assert (g.notebook, g.stage, g.isolation, g.reason) == (path, STAGE, sandbox.DESCRIPTIONS["none"], "")
    assert g.notes == ["n2"] and g.errors == ["cell 1: NameError: x"]   # a set-up cell; not the answer cell 7
    assert [(e.exercise, e.passed, e.points) for e in g.exercises] == [("04.1", True, 2), ("04.2", False, 0),
                                                                       ("04.3", True, 2)]
    assert by_exercise(g)["04.2"].detail == "your answer cell raised ValueError: bad"
    public, secret = len(checks.exercise("04.1").cases), len(hidden_cases.cases("04.1"))
    assert by_exercise(g)["04.1"].detail == f"{public}/{public} cases passed, {secret} hidden cases passed"
    outside = tmp_path / "instructor"
    (outside / "hidden").mkdir(parents=True)
    (outside / SOLUTION.name).write_bytes(SOLUTION.read_bytes())
    (outside / "hidden" / "stage04.py").write_text(   # the instructor's own hidden cases: these are the ones asked
        "from course_lib.courseware.checks import Case\nfrom course_lib.courseware.observe import call\n"
        "HIDDEN = {'04.1': [Case('mine', call({'tool': 'x'}), expected=None)], '04.2': [], '04.3': []}\n")
    added = load(SOLUTION)
    added.cells.append(nbformat.v4.new_code_cell("helper = 1"))
    g = _grader.grade(save(added, tmp_path, "added"), STAGE, solutions_dir=outside, level="none")
    assert record["timeout"] == 60 and record["hidden"][0] == outside.resolve()   # the default; the given folder
    assert record["probes"] == {"04.1": [observe.call({"tool": "x"}).spec()], "04.2": [], "04.3": []}
    assert g.notes[0].startswith("1 code cell(s) you added were not run") and g.notes[1:] == ["n2"]
    assert by_exercise(g)["04.3"].detail == "hidden tests did not run (no hidden cases)"   # so it cannot pass


@pytest.mark.parametrize("hidden_file, error", [
    (None, "FileNotFoundError"), ("HIDDEN = {'04.1': []}\n", "KeyError"), ("HIDDEN = {\n", "SyntaxError"),
    ("CASES = {}\n", "AttributeError")])
def test_grade_is_a_grader_error_when_the_hidden_cases_cannot_be_read(tmp_path, monkeypatch, hidden_file, error):
    monkeypatch.setattr(_grader, "run", lambda *a, **k: pytest.fail("nothing may run"))
    (tmp_path / SOLUTION.name).write_bytes(SOLUTION.read_bytes())
    if hidden_file is not None:
        (tmp_path / "hidden").mkdir()
        (tmp_path / "hidden" / "stage04.py").write_text(hidden_file)
    with pytest.raises(_grader.GraderError) as e:
        _grader.grade(str(SOLUTION), STAGE, solutions_dir=tmp_path, level="none")
    assert str(e.value).startswith(f"the hidden cases of stage 04 cannot be read ({error}: ")
    assert str(e.value).endswith(f"they belong in {tmp_path / 'hidden'}") and e.value.__cause__ is None


def test_grade_marks_what_a_failed_run_left_ungraded_with_its_reason(tmp_path, monkeypatch):
    monkeypatch.setattr(_grader, "run", _fake_run({}, {}, None, [], "the kernel died while running the notebook"))
    submission = load(SOLUTION)
    tamper(submission, "deleted")
    g = _grader.grade(save(submission, tmp_path, "dead"), STAGE, level="none")
    assert g.reason == "the kernel died while running the notebook" and not g.passed
    details = [e.detail for e in g.exercises]
    assert details == ["tampering: cell 'ex04_1_hidden' is missing"] + \
        ["not graded: the kernel died while running the notebook"] * 2
    monkeypatch.setattr(_grader, "run", _fake_run({}, {i: OK for i in range(6)}, None, [], "stopped"))
    g = _grader.grade(save(load(SOLUTION), tmp_path, "half"), STAGE, level="none")   # 04.1's cells ran, no more
    assert [(e.detail, e.points) for e in g.exercises] == [("not graded: stopped", 0)] * 3   # no outcomes: no marks


def test_grade_reads_no_file_that_is_not_a_small_regular_notebook(tmp_path, monkeypatch):
    monkeypatch.setattr(_grader, "run", lambda *a, **k: pytest.fail("nothing may run"))
    missing = _grader.grade(str(tmp_path / "missing.ipynb"), STAGE, level="none")
    assert missing.reason.startswith("cannot read it as a notebook (FileNotFoundError: ")
    assert [e.detail for e in missing.exercises] == ["not graded: " + missing.reason] * 3
    assert [(e.exercise, e.passed, e.points) for e in missing.exercises] == [("04.1", False, 0), ("04.2", False, 0),
                                                                            ("04.3", False, 0)]
    big = tmp_path / "big.ipynb"
    big.write_text("x" * 1234)
    monkeypatch.setattr(_grader, "MAX_NOTEBOOK_BYTES", 1000)
    assert _grader.grade(str(big), STAGE, level="none").reason == \
        "cannot read it as a notebook (ValueError: 1,234 bytes, over the 1,000-byte limit)"
    monkeypatch.setattr(_grader, "MAX_NOTEBOOK_BYTES", 1234)
    reason = _grader.grade(str(big), STAGE, level="none").reason
    assert reason.startswith("cannot read it as a notebook (") and "limit" not in reason   # at the limit: read
    import os
    os.mkfifo(tmp_path / "fifo.ipynb")
    assert _grader.grade(str(tmp_path / "fifo.ipynb"), STAGE, level="none").reason == \
        "cannot read it as a notebook (ValueError: it is not a regular file)"
    small = save(load(EXERCISE), tmp_path, "small")
    monkeypatch.setattr(_grader, "MAX_NOTEBOOK_BYTES", 50_000_000)

    read = nbformat.read

    def unreadable(path, as_version):
        if str(path) != small:
            return read(path, as_version=as_version)
        raise ValueError("line one\n   " + "x" * 300)
    monkeypatch.setattr(nbformat, "read", unreadable)
    reason = _grader.grade(small, STAGE, level="none").reason
    assert reason == "cannot read it as a notebook (ValueError: " + ("line one " + "x" * 300)[:200] + ")"


def test_grade_safely_turns_any_crash_into_a_failed_notebook_and_a_grader_error_into_a_problem(monkeypatch):
    def crash(notebook, stage, **options):
        raise MemoryError("x" * 400)
    monkeypatch.setattr(_grader, "grade", crash)
    g, problem = _grader._grade_safely(("a.ipynb", STAGE, None, 5, []))
    assert problem is None and g.notebook == "a.ipynb" and g.stage == STAGE and not g.passed
    assert g.reason == ("grading stopped (MemoryError: " + "x" * 400)[:300]
    assert g.as_dict()["exercises"] == [] and g.as_dict()["points"] == 0

    def no_kernel(notebook, stage, **options):
        raise _grader.GraderError("could not start a kernel")
    monkeypatch.setattr(_grader, "grade", no_kernel)
    assert _grader._grade_safely(("a.ipynb", STAGE, None, 5, [])) == (None, "could not start a kernel")
    calls = []
    monkeypatch.setattr(_grader, "grade", lambda *a, **k: calls.append((a, k)) or "graded")
    assert _grader._grade_safely(("a.ipynb", STAGE, "sol", 5, ["h"])) == ("graded", None)
    assert calls == [(("a.ipynb", STAGE), {"solutions_dir": "sol", "timeout": 5, "hide": ["h"]})]


class _InlinePool:
    """ProcessPoolExecutor stand-in: runs each job at once, here; a job whose notebook is in `dies` breaks."""
    made, dies = [], {}

    def __init__(self, max_workers, mp_context):
        self.max_workers, self.mp_context = max_workers, mp_context
        _InlinePool.made.append(self)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def submit(self, fn, args):
        from concurrent.futures import Future
        from concurrent.futures.process import BrokenProcessPool
        future = Future()
        if _InlinePool.dies.get(args[0], 0) > 0:
            _InlinePool.dies[args[0]] -= 1
            future.set_exception(BrokenProcessPool("a worker died"))
        else:
            future.set_result(fn(args))
        return future


def test_grade_all_keeps_the_order_regrades_what_a_dead_worker_took_and_reports_progress(monkeypatch, tmp_path):
    monkeypatch.setattr(_grader, "ProcessPoolExecutor", _InlinePool)
    monkeypatch.setattr(_InlinePool, "made", [])
    monkeypatch.setattr(_InlinePool, "dies", {"b.ipynb": 1, "c.ipynb": 2})
    seen = []

    def fake_grade(notebook, stage, *, solutions_dir, timeout, hide):
        seen.append((notebook, hide))
        if notebook == "d.ipynb":
            raise _grader.GraderError("no kernel")
        return Grade(notebook, stage, [])
    monkeypatch.setattr(_grader, "grade", fake_grade)
    monkeypatch.chdir(tmp_path)
    progress = []
    grades, problems = _grader.grade_all(["a.ipynb", "b.ipynb", "c.ipynb", "d.ipynb"], STAGE, timeout=7, jobs=0,
                                         on_done=lambda i, g, p: progress.append((i, g and g.notebook, p)))
    assert [g.notebook for g in grades] == ["a.ipynb", "b.ipynb"]   # c's workers died twice, d had a grader error
    assert problems == ["no kernel", "c.ipynb: the grader's worker died (BrokenProcessPool)"]
    assert sorted(progress[:2]) == [(0, "a.ipynb", None), (3, None, "no kernel")]   # as they finish
    assert progress[2:] == [(1, "b.ipynb", None), (2, None, "c.ipynb: the grader's worker died (BrokenProcessPool)")]
    assert [p.max_workers for p in _InlinePool.made] == [1, 1, 1]   # jobs=0 still runs one; the re-runs one each
    assert all(p.mp_context.get_start_method() == "spawn" for p in _InlinePool.made)
    assert all(hide == [str(tmp_path / n) for n in ("a.ipynb", "b.ipynb", "c.ipynb", "d.ipynb")] for _, hide in seen)
    with pytest.raises(_grader.GraderError):
        _grader.grade_all(["a.ipynb"], "42")   # no solution: a grader error before anything runs


def test_grade_all_runs_jobs_workers_at_once(monkeypatch, tmp_path):
    monkeypatch.setattr(_grader, "ProcessPoolExecutor", _InlinePool)
    monkeypatch.setattr(_InlinePool, "made", [])
    monkeypatch.setattr(_InlinePool, "dies", {})
    monkeypatch.setattr(_grader, "grade", lambda notebook, stage, **k: Grade(notebook, stage, []))
    grades, problems = _grader.grade_all([str(tmp_path / "x" / "a.ipynb"), str(tmp_path / "b.ipynb")], STAGE, jobs=3)
    assert len(grades) == 2 and problems == [] and [p.max_workers for p in _InlinePool.made] == [3]
    seen = []
    monkeypatch.setattr(_grader, "grade", lambda notebook, stage, **k: seen.append(k) or Grade(notebook, stage, []))
    _grader.grade_all([str(tmp_path / "a.ipynb")], STAGE)   # by default two at a time, 60 s a cell
    assert _InlinePool.made[-1].max_workers == 2 and seen[-1]["timeout"] == 60 and seen[-1]["solutions_dir"] is None
    with pytest.raises(_grader.GraderError):   # the solutions folder given has none for the stage: before any run
        _grader.grade_all([str(tmp_path / "a.ipynb")], STAGE, solutions_dir=tmp_path)
    assert len(seen) == 1


def _args(**kw):
    import argparse
    return argparse.Namespace(**{"stage": STAGE, "notebooks": [], "solutions": None, "json": False, "jobs": 2,
                                 "timeout": 60, **kw})


def test_course_check_exit_statuses_and_text_report_in_process(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(sandbox, "isolation", lambda: "none")
    monkeypatch.chdir(tmp_path)
    assert _grader.cmd_check(_args(stage="42")) == 2
    assert capsys.readouterr().err == "course check: no exercise notebook for stage 42; give the notebooks' paths\n"
    assert _grader.cmd_check(_args(stage="42", notebooks=["a.ipynb"])) == 3
    assert capsys.readouterr().err == \
        f"course check: there is no solution notebook for stage 42 in {ROOT / 'solutions'}\n"
    passed = Grade("a.ipynb", STAGE, [_grader.ExerciseGrade("04.1", True, "fine", 2, 2)])
    failed = Grade("b.ipynb", STAGE, [_grader.ExerciseGrade("04.1", False, "bad", 0, 2)])
    calls = []

    def fake_all(notebooks, stage, *, solutions_dir, timeout, jobs, on_done):
        calls.append((notebooks, stage, solutions_dir, timeout, jobs))
        results = {"a.ipynb": (passed, None), "b.ipynb": (failed, None), "c.ipynb": (None, "c: worker died")}
        for i, n in enumerate(notebooks):
            on_done(i, *results[n])
        return [results[n][0] for n in notebooks if results[n][0]], [results[n][1] for n in notebooks if results[n][1]]
    monkeypatch.setattr(_grader, "grade_all", fake_all)
    assert _grader.cmd_check(_args(notebooks=["a.ipynb"], jobs=4, timeout=9)) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [f"Grading 1 notebook(s) of stage 04; {sandbox.DESCRIPTIONS['none']}.",
                   "[1/1] a.ipynb: passed", "    ✓ 04.1  fine", "1/1 notebook(s) passed every exercise"]
    assert calls[-1] == (["a.ipynb"], STAGE, None, 9, 4)
    assert _grader.cmd_check(_args(notebooks=["a.ipynb", "b.ipynb", "c.ipynb"], jobs=5)) == 3
    out = capsys.readouterr().out.splitlines()
    assert out[0] == f"Grading 3 notebook(s) of stage 04, 3 at a time; {sandbox.DESCRIPTIONS['none']}."
    assert out[1:] == ["[1/3] a.ipynb: passed", "    ✓ 04.1  fine", "[2/3] b.ipynb: failed", "    ✗ 04.1  bad",
                       "[3/3] c.ipynb: GRADER FAILED", "    c: worker died",
                       "1/3 notebook(s) passed every exercise; the grader failed on 1"]
    assert _grader.cmd_check(_args(notebooks=["a.ipynb", "b.ipynb"], jobs=1)) == 1
    assert "2 notebook(s) of stage 04, 1 at a time;" in capsys.readouterr().out


def test_course_check_json_report_in_process(monkeypatch, capsys):
    monkeypatch.setattr(sandbox, "isolation", lambda: "none")
    passed = Grade("a.ipynb", STAGE, [_grader.ExerciseGrade("04.1", True, "fine ✓", 2, 2)])
    monkeypatch.setattr(_grader, "grade_all", lambda notebooks, stage, *, solutions_dir, timeout, jobs, on_done: (
        [on_done(0, passed, None), passed][1:], ["x: grader failed"]))
    assert _grader.cmd_check(_args(notebooks=["a.ipynb", "x.ipynb"], json=True, solutions=str(SOLUTION.parent))) == 3
    out = capsys.readouterr().out
    assert "fine ✓" in out and out.startswith('{\n  "stage": "04",\n')   # readable, indented, not \u escapes
    assert json.loads(out) == {"stage": STAGE, "isolation": sandbox.DESCRIPTIONS["none"],
                               "notebooks": [passed.as_dict()], "grader_errors": ["x: grader failed"],
                               "passed": 1, "total": 2}
    monkeypatch.setattr(_grader, "grade_all", lambda notebooks, stage, **k: ([passed], []))
    assert _grader.cmd_check(_args(notebooks=["a.ipynb"], json=True)) == 0


def test_bare_course_check_grades_the_committed_exercise_notebook_of_the_stage(monkeypatch):
    monkeypatch.setattr(sandbox, "isolation", lambda: "none")
    got = []
    monkeypatch.setattr(_grader, "grade_all", lambda notebooks, stage, **k: got.append(notebooks) or ([], []))
    _grader.cmd_check(_args(json=True))
    assert got == [[str(EXERCISE)]]


class _FakeClient:
    """nbclient's client without a kernel: each code cell ends as `endings` says (default ok); as in nbclient, an
    empty cell is not sent to the kernel, so it has no status."""

    def __init__(self, nb, km, **options):
        self.nb, self.km, self.options, self.ran, self.capped = nb, km, options, [], False
        self.timeout = options["timeout"]
        _FakeClient.last = self

    def setup_kernel(self, env, cwd, cleanup_kc):
        self.env, self.cwd, self.cleanup_kc = env, cwd, cleanup_kc
        if self.start_error:
            raise RuntimeError(self.start_error)
        return contextlib.nullcontext()

    def execute_cell(self, cell, index):
        self.ran.append(index)
        if not cell.source.strip():
            return
        ending = self.endings.get(index, OK)
        if isinstance(ending, BaseException):
            raise ending
        self.statuses[index] = ending
        self.capped = self.capped or ending == ("ok", "capped", None)


def _observe_request(timeout=7):
    """The one request run() sends after the cells: every case's outcome, for the plan of stage 04."""
    plan = {ex: {"name": name, "probes": [c.call.spec() for c in hidden_cases.cases(ex)]}
            for ex, name in CANDIDATES.items()}
    return "", 8 * timeout + 60, _grader._expression(f"PLAN = {plan!r}\n" + _grader.OBSERVE)


def _run_fake(monkeypatch, endings=None, silent=None, start_error=None, timeout=7, level="none", log=None):
    """Run grader.run on stage 04's assembled solution with the fake client and a fake sandbox. Returns (run's
    result, the client, a log of the requests, kernel managers and process groups ended, what an honest worker
    sent); ``log`` (a dict) gets the same log, for a run that raises."""
    found = {ex: _honest(ex) for ex in CANDIDATES}
    log = {} if log is None else log
    log.update(requests=[], managers=[], ended=[])

    def fake_silent(client, code, seconds, expression=None):
        assert isinstance(client, _FakeClient), client   # every request goes to the notebook's own kernel
        log["requests"].append((code, seconds, expression))
        if silent:
            answer = silent(code, expression)
            if answer is not None:
                return answer
        return {"user_expressions": {"r": _reply(found)}} if expression and "observe_all" in expression else {}

    def kernel_manager(level, scratch, hidden, group=None, replaced=None):
        cut = {original: copy.read_text(encoding="utf-8") for original, copy in (replaced or {}).items()}
        made = sorted(p.name for p in scratch.iterdir())
        log["managers"].append((level, scratch, hidden, group, replaced, cut, made))
        return "km"
    monkeypatch.setattr(_grader, "_silent", fake_silent)
    monkeypatch.setattr(_grader, "_client_class", lambda: _FakeClient)
    monkeypatch.setattr(_FakeClient, "endings", endings or {}, raising=False)
    monkeypatch.setattr(_FakeClient, "start_error", start_error, raising=False)
    monkeypatch.setattr(sandbox, "kernel_manager", kernel_manager)
    monkeypatch.setattr(sandbox, "process_group", lambda scratch: f"group of {scratch.name}")
    monkeypatch.setattr(sandbox, "end_group", log["ended"].append)
    nb, _, _ = _grader.assemble(_trusted_04(), _trusted_04())
    probes = {ex: [c.call.spec() for c in hidden_cases.cases(ex)] for ex in CANDIDATES}
    result = _grader.run(nb, STAGE, CANDIDATES, timeout=timeout, level=level, hidden=[Path("/h")], probes=probes)
    assert _FakeClient.last.nb is nb
    return result, _FakeClient.last, log, found


def test_run_executes_every_cell_then_asks_the_worker_once_for_every_outcome(monkeypatch):
    (statuses, judged, notes, reason), client, log, found = _run_fake(monkeypatch)
    trusted = _trusted_04()
    code_cells = [i for i, c in enumerate(trusted.cells) if c.cell_type == "code"]
    hidden_cells = [i for i in code_cells if _grader._grade_id(trusted.cells[i]).endswith("_hidden")]
    assert client.ran == code_cells and [client.nb.cells[i].source for i in hidden_cells] == ["", "", ""]
    assert statuses == {i: OK for i in code_cells if i not in hidden_cells}   # a blank hidden-test cell: not sent
    assert (judged, notes, reason) == (found, [], "")
    assert log["requests"] == [_observe_request()]   # no reset before the cells, nothing between: one request
    assert client.km == "km" and client.options == {
        "timeout": 7, "kernel_name": "python3", "allow_errors": True, "interrupt_on_timeout": True,
        "error_on_timeout": {"ename": "TimeoutError", "evalue": "the cell ran longer than 7 s"},
        "resources": {"metadata": {"path": str(log["managers"][0][1] / "work")}}, "shutdown_kernel": "immediate"}
    level, scratch, hidden, group, replaced, _, made = log["managers"][0]
    assert (level, hidden, group, replaced, made) == ("none", [Path("/h")], f"group of {scratch.name}", {},
                                                      ["home", "tmp", "work"])   # nothing is cut without bubblewrap
    assert log["ended"] == [group]   # the notebook's processes are ended with it
    assert scratch.name.startswith("course-grade-") and not scratch.exists()   # deleted afterwards
    assert not Path(f"{scratch}-lib").exists()
    assert client.cwd == str(scratch / "work") and client.env == _grader._environment(scratch)
    assert client.cleanup_kc is True   # the kernel is shut down afterwards although nbclient did not start it


def test_run_under_bubblewrap_binds_cut_copies_of_the_finished_modules_and_deletes_them_afterwards(monkeypatch):
    """The worker's files, prepared by run() (the sandbox itself is faked here): each finished module of stage 04
    and later, cut to what the notebook hands out, in a folder beside the scratch folder."""
    from course_lib.courseware import worker_lib
    (_, judged, _, reason), _, log, found = _run_fake(monkeypatch, level="bubblewrap")
    level, scratch, _, _, replaced, cut, _ = log["managers"][0]
    lib = Path(f"{scratch}-lib")
    assert (level, reason, judged) == ("bubblewrap", "", found)
    assert set(replaced) == {worker_lib._file(m) for m in _grader.finished(STAGE)} - {None}
    assert all(copy.parent == lib for copy in replaced.values())
    parsing = cut[worker_lib.PACKAGE / "parsing.py"]
    assert parsing.startswith(worker_lib.PLACEHOLDER) and "class ParsedReply" in parsing
    assert "def parse_reply" not in parsing and "def _check_action" not in parsing
    assert all(text == worker_lib.PLACEHOLDER for path, text in cut.items() if path.name == "dispatch.py")
    assert not lib.exists() and not scratch.exists()


def test_run_stops_at_a_cell_the_interrupt_could_not_stop_and_names_it(monkeypatch):
    stuck = ("error", "TimeoutError", "the cell ran longer than 7 s")
    (statuses, judged, notes, reason), client, log, _ = _run_fake(monkeypatch, endings={4: stuck})
    assert reason == ("the kernel was still busy 7 s after cell 'ex04_1_check' was interrupted (code running "
                      "inside C, such as a regular expression that backtracks, cannot be stopped)")
    assert client.ran == [1, 3, 4] and judged is None and statuses[4] == stuck
    assert log["requests"] == [("pass", 5, None)]   # still busy: the worker is asked for no outcome
    assert log["ended"] == [log["managers"][0][3]] and not log["managers"][0][1].exists()
    (_, _, _, reason), client, _, _ = _run_fake(monkeypatch, endings={1: stuck})
    assert "after cell 'cell 2' was interrupted" in reason


def test_run_goes_on_after_a_timeout_the_interrupt_ended(monkeypatch):
    stuck = ("error", "TimeoutError", "the cell ran longer than 7 s")
    answered = lambda code, expression: {"status": "ok"} if code == "pass" else None
    (statuses, judged, notes, reason), client, log, found = _run_fake(monkeypatch, endings={3: stuck},
                                                                      silent=answered)
    assert reason == "" and judged == found and client.ran[-1] == 13 and statuses[3] == stuck
    assert log["requests"] == [("pass", 5, None), _observe_request()]
    other = ("error", "ValueError", "x")
    (_, judged, _, reason), client, log, _ = _run_fake(monkeypatch, endings={3: other})
    assert reason == "" and log["requests"] == [_observe_request()]   # an error is no timeout: nothing to check


def test_run_fails_the_notebook_when_the_worker_sends_no_outcomes_or_outcomes_in_another_shape(monkeypatch):
    shape = "the worker's outcomes came back in a shape the grader did not ask for"
    for reply, said in [
            ({"user_expressions": {"r": {"status": "error", "ename": "NameError", "evalue": "x"}}},
             "the worker could not run the cases (NameError: x)"),
            ({}, "the worker did not send the outcomes of the cases in time"),
            ({"status": "error", "ename": "KeyboardInterrupt"}, "the worker could not run the cases (None: None)"),
            ({"user_expressions": {"r": _reply({"04.1": {"defined": True}})}}, shape),
            ({"user_expressions": {"r": _reply({ex: {"defined": False} for ex in ("04.1", "04.2")})}}, shape),
            ({"user_expressions": {"r": {"status": "ok", "data": {"text/plain": "'{}'"}}}}, shape)]:
        answer = lambda code, expression, reply=reply: reply if expression and "observe_all" in expression else None
        (_, judged, _, reason), _, _, _ = _run_fake(monkeypatch, silent=answer)
        assert judged is None and reason == said, reply


def test_run_reports_a_dead_kernel_a_kernel_that_never_started_and_capped_output(monkeypatch):
    from nbclient.exceptions import DeadKernelError
    (statuses, judged, _, reason), client, log, _ = _run_fake(monkeypatch, endings={7: DeadKernelError("x")})
    assert reason == "the kernel died while running the notebook (os._exit, a crash, or out of memory)"
    assert judged is None and client.ran == [1, 3, 4, 5, 7] and log["requests"] == []
    assert not log["managers"][0][1].exists() and log["ended"] == [log["managers"][0][3]]
    log = {}
    with pytest.raises(_grader.GraderError) as e:
        _run_fake(monkeypatch, start_error="no such kernel", log=log)
    assert str(e.value) == "could not start a kernel (none sandbox): no such kernel" and e.value.__cause__ is None
    assert not log["managers"][0][1].exists() and log["ended"] == [log["managers"][0][3]]   # cleaned up all the same
    (_, _, notes, reason), _, _, _ = _run_fake(monkeypatch, endings={3: ("ok", "capped", None)})
    assert notes == ["output was capped at 2,000,000 characters"] and reason == ""


def test_run_gives_the_whole_notebook_four_timeouts_and_thirty_seconds(monkeypatch):
    for ex in CANDIDATES:   # the honest outcomes come from running real cases, which read the clock: before it stops
        _honest(ex)
    clock = iter([1000.0] + [1000.0 + 58.0] * 3 + [1000.0 + 58.5] * 50)
    monkeypatch.setattr(_grader.time, "monotonic", lambda: next(clock))
    (_, judged, _, reason), client, log, _ = _run_fake(monkeypatch)
    assert reason == "the notebook ran longer than 58 s in all"
    assert client.ran == [1, 3, 4] and judged is None   # at exactly the limit a cell still starts
    assert log["requests"] == []


def test_the_observing_client_keeps_each_cell_s_status_and_caps_output(monkeypatch):
    import asyncio
    client = _grader._client_class()(nbformat.v4.new_notebook(), km=None, allow_errors=True)
    client.statuses = {}
    code = nbformat.v4.new_code_cell("x")
    error = {"content": {"status": "error", "ename": "E", "evalue": "v"}}
    asyncio.run(client._check_raise_for_error(code, 3, error))
    asyncio.run(client._check_raise_for_error(code, 4, {"content": {"status": "ok"}}))
    asyncio.run(client._check_raise_for_error(code, 5, None))
    assert client.statuses == {3: ("error", "E", "v"), 4: ("ok", None, None), 5: ("no reply", None, None)}
    assert client.kept == 0 and client.capped is False
    base = type(client).__mro__[1]   # nbclient's NotebookClient: it still gets every call, unchanged
    passed_on = []

    async def checked(self, cell, index, reply):
        passed_on.append((cell, index, reply))
        return "raised"
    monkeypatch.setattr(base, "_check_raise_for_error", checked)
    assert asyncio.run(client._check_raise_for_error(code, 3, error)) == "raised"
    assert passed_on == [(code, 3, error)]
    kept = []
    monkeypatch.setattr(base, "output", lambda self, outs, msg, d, i: kept.append((outs, msg, d, i)) or "out")
    small = {"content": {"text": "x" * 10}}
    size = len(json.dumps(small["content"]))
    monkeypatch.setattr(_grader, "OUTPUT_CAP", 2 * size)
    outs = []
    assert client.output(outs, small, "d1", 4) == "out"
    client.output(outs, small, None, 5)   # exactly at the cap: kept
    assert client.output(outs, small, None, 6) is None and client.capped and client.kept == 2 * size
    assert kept == [(outs, small, "d1", 4), (outs, small, None, 5)]


def test_silent_requests_have_no_history_and_their_own_timeout():
    class Kc:
        def execute(self, code, **options):
            self.sent = (code, options)
            return "msg-1"

    class Client:
        timeout = 60
        kc = Kc()

        async def async_wait_for_reply(self, msg_id):
            self.asked = (msg_id, self.timeout)
            return self.reply
    client = Client()
    client.reply = {"content": {"status": "ok", "user_expressions": {"r": 1}}}
    assert _grader._silent(client, "x = 1", 5, "1 + 1") == client.reply["content"]
    assert client.kc.sent == ("x = 1", {"silent": True, "store_history": False, "user_expressions": {"r": "1 + 1"}})
    assert client.asked == ("msg-1", 5) and client.timeout == 60
    client.reply = None
    assert _grader._silent(client, "pass", 3) == {} and client.kc.sent[1]["user_expressions"] is None


def test_course_check_sends_each_progress_line_out_at_once_and_uses_the_solutions_folder(monkeypatch, tmp_path):
    """An instructor watching a class's batch (through a pipe, `| tee`) sees each notebook as it finishes."""
    import io
    import sys

    class Stream(io.StringIO):
        flushed = ""

        def flush(self):
            self.flushed = self.getvalue()

    stream = Stream()
    monkeypatch.setattr(sys, "stdout", stream)
    monkeypatch.setattr(sandbox, "isolation", lambda: "none")
    two = Grade("a.ipynb", STAGE, [_grader.ExerciseGrade("04.1", True, "fine", 2, 2),
                                   _grader.ExerciseGrade("04.2", False, "bad", 0, 2)])
    shown, calls = [], []

    def fake_all(notebooks, stage, *, solutions_dir, timeout, jobs, on_done):
        calls.append(solutions_dir)
        shown.append(stream.flushed == stream.getvalue() != "")   # the header is out before grading starts
        on_done(0, two, None)
        shown.append(stream.flushed == stream.getvalue())
        on_done(1, None, "b.ipynb: the grader's worker died")
        shown.append(stream.flushed == stream.getvalue())
        return [two], ["b.ipynb: the grader's worker died"]
    monkeypatch.setattr(_grader, "grade_all", fake_all)
    assert _grader.cmd_check(_args(notebooks=["a.ipynb", "b.ipynb"], solutions=str(SOLUTION.parent))) == 3
    assert shown == [True, True, True] and calls == [str(SOLUTION.parent)]
    assert stream.getvalue().splitlines()[1:5] == ["[1/2] a.ipynb: failed", "    ✓ 04.1  fine", "    ✗ 04.2  bad",
                                                   "[2/2] b.ipynb: GRADER FAILED"]
    empty = tmp_path / "empty"
    empty.mkdir()
    stderr = io.StringIO()
    monkeypatch.setattr(sys, "stderr", stderr)
    assert _grader.cmd_check(_args(notebooks=["a.ipynb"], solutions=str(empty))) == 3
    assert stderr.getvalue() == f"course check: there is no solution notebook for stage 04 in {empty}\n"


def test_an_answer_may_import_earlier_stages_but_not_its_own_in_the_assembled_notebook():
    """The stage the refusal's advice is judged against is the exercise's own (04 for ex04_3, 05 for ex05_1). An
    answer it advises against runs all the same: it is no tampering."""
    trusted4, submission4 = _trusted_04(), load(SOLUTION)
    cell(submission4, "ex04_3").source = "from course_lib.parsing import parse_reply as parse_action\n"
    nb, tamper, notes = _grader.assemble(trusted4, submission4)
    assert tamper == {} and notes == [
        "answer cell 'ex04_3': it imports course_lib.parsing, the finished version of this stage or a later one, "
        "of which only what the notebook hands out is there where answers are graded; no exercise needs that (see "
        "the notebook's note on imports); it ran all the same"]
    assert cell(nb, "ex04_3").source == cell(submission4, "ex04_3").source
    path5 = _grader.solution_for("05")
    trusted5, submission5 = load(path5), load(path5)
    first = next(c for c in submission5.cells if _grader._nbgrader(c).get("solution"))
    first.source = "from course_lib.parsing import parse_reply\n" + first.source
    nb, tamper, notes = _grader.assemble(trusted5, submission5)
    assert (tamper, notes) == ({}, []) and cell(nb, _grader._grade_id(first)).source == first.source


def test_judge_never_passes_an_exercise_without_hidden_cases_and_gives_none_without_a_hidden_test_cell():
    g = _judge(hidden={})   # the hidden file has no cases for it: nothing proves the answer right
    assert (g.passed, g.detail, g.points, g.max_points) == (False, "hidden tests did not run (no hidden cases)", 0, 3)
    g = _judge(hidden={"04.1": []})
    assert (g.passed, g.detail, g.points) == (False, "hidden tests did not run (no hidden cases)", 0)
    trusted = _trusted_mini()
    del trusted.cells[4]   # the instructor's notebook lost ex04_1_hidden: the points it carried are gone
    g = _grader.judge(trusted, {2: OK, 3: OK}, {"04.1": _honest("04.1")}, {}, {"04.1": "validate_action"},
                      {"04.1": hidden_cases.cases("04.1")})
    assert (g[0].points, g[0].max_points) == (0, 0)
    seen = _honest("04.1")
    del seen["module"], seen["qualname"]   # a reply without them: not course_lib's, and its own stub unknown
    assert _judge(seen=seen).passed


def test_run_passes_each_cell_and_the_client_along_and_survives_a_scratch_folder_it_cannot_delete(monkeypatch):
    cells = []
    real_execute = _FakeClient.execute_cell

    def execute(self, cell, index):
        cells.append((cell, index))
        real_execute(self, cell, index)
    monkeypatch.setattr(_FakeClient, "execute_cell", execute)
    removed, real_rmtree = [], shutil.rmtree

    def rmtree(path, ignore_errors=False):
        if not ignore_errors:
            raise PermissionError(f"cannot delete {path}")
        removed.append(path)
    monkeypatch.setattr(shutil, "rmtree", rmtree)
    original_assemble = _grader.assemble

    def assemble_with_empty_answer(trusted, submission):
        nb, tamper, notes = original_assemble(trusted, submission)
        cell(nb, "ex04_2").source = ""
        return nb, tamper, notes
    monkeypatch.setattr(_grader, "assemble", assemble_with_empty_answer)
    (statuses, judged, notes, reason), client, log, found = _run_fake(monkeypatch)
    scratch = log["managers"][0][1]
    real_rmtree(scratch)   # what the grader could not delete, the test does
    assert reason == "" and judged == found and 7 not in statuses
    assert removed == [scratch, Path(f"{scratch}-lib")]   # both folders, whether or not they were made
    assert all(c is client.nb.cells[i] for c, i in cells) and client.nb.cells[7].source == ""
    assert client.cleanup_kc is True


def test_a_plain_import_is_judged_by_its_modules_not_as_names_taken_from_one():
    """`import x` takes no names out of a module: `import exec` is no builtin (the cell fails on its own) and the
    refusal names the first forbidden module of `import threading, sys`."""
    from course_lib.courseware.grader import refusal
    assert refusal("import exec", "06") is None
    assert refusal("import threading, sys", "06") == "it imports threading"


@needs_full
def test_a_classmates_notebook_in_a_folder_the_sandbox_must_keep_is_out_of_reach_all_the_same(tmp_path, monkeypatch):
    """A batch whose notebooks lie in a folder holding something the kernel needs (the course folder, the venv, a
    folder on the import path) cannot have that folder emptied: each notebook of the batch is hidden by itself,
    and so is every file beside the course (a notebook left in the course folder, its README)."""
    shared = tmp_path / "class"
    (shared / "pylib").mkdir(parents=True)
    monkeypatch.syspath_prepend(str(shared / "pylib"))   # on the graders' import path (spawn copies it): kept
    honest = save(load(SOLUTION), shared, "alice")
    copier = load(EXERCISE)
    cell(copier, "ex04_1").source = (   # the classmate's answer, run here; else a stub that fails
        "import json, pathlib\n"
        f"for _p in [pathlib.Path({honest!r}), pathlib.Path({str(ROOT / 'README.md')!r})]:\n"
        "    print(_p.name, len(_p.read_text()) if _p.exists() else None)\n"
        "try:\n"
        f"    _cells = json.loads(pathlib.Path({honest!r}).read_text())['cells']\n"
        "    exec(next(''.join(c['source']) for c in _cells\n"
        "              if c.get('metadata', {}).get('nbgrader', {}).get('grade_id') == 'ex04_1'))\n"
        "except Exception as e:\n"
        "    _why = f'nothing to copy: {type(e).__name__}'\n"
        "    def validate_action(data):\n"
        "        return _why\n")
    mallory = save(copier, shared, "mallory")
    grades, problems = grade_all([honest, mallory], STAGE, timeout=120, jobs=2)
    assert problems == [] and grades[0].passed, grades[0]
    copied = by_exercise(grades[1])["04.1"]
    assert not copied.passed and "nothing to copy: JSONDecodeError" in str(copied.failing), copied
    assert Path(honest).stat().st_size > 1000 and (ROOT / "README.md").stat().st_size > 1000   # there, outside


@needs_full
def test_the_files_beside_the_course_read_as_empty_in_the_sandbox(tmp_path):
    scratch = tmp_path / "scratch"
    (scratch / "work").mkdir(parents=True)
    probe = f"import pathlib; print(sorted((p.name, p.stat().st_size) for p in pathlib.Path({str(ROOT)!r}).iterdir() if p.is_file()))"
    seen = subprocess.run(sandbox.wrapper("bubblewrap", scratch, []) + [sys.executable, "-c", probe],
                          capture_output=True, text=True, timeout=60)
    files = eval(seen.stdout)
    assert ("README.md", 0) in files and all(size == 0 for _, size in files), seen.stdout + seen.stderr


BORROWED_PACKAGES = {   # an installed package that would do the exercise: absent where its stage is graded
    "11.1 from rank_bm25": ("11", "ex11_1", "rank_bm25", (
        "from rank_bm25 import BM25Okapi\n"
        "def bm25_scores(query_tokens, docs, k1=1.5, b=0.75, epsilon=0.25):\n"
        "    if not docs:\n        return []\n"
        "    model = BM25Okapi([list(d) for d in docs], k1=k1, b=b, epsilon=epsilon)\n"
        "    total = [0.0] * len(docs)\n"
        "    for w in query_tokens:\n"
        "        for i, x in enumerate(model.get_scores([w])):\n"
        "            total[i] += float(x)\n"
        "    return total\n")),
    "05.1 from pydantic": ("05", "ex05_1", "pydantic", (
        "import typing\nfrom pydantic import TypeAdapter\n"
        "def matches(value, hint):\n"
        "    if typing.get_origin(hint) is dict:\n        hint = dict\n"
        "    try:\n        TypeAdapter(hint).validate_python(value, strict=True)\n        return True\n"
        "    except Exception as e:\n        return type(e).__name__ != 'ValidationError'\n")),
}


@needs_full
@pytest.mark.parametrize("name", list(BORROWED_PACKAGES))
def test_an_installed_package_that_does_the_exercise_cannot_be_imported_where_it_is_graded(tmp_path, name):
    stage, gid, package, source = BORROWED_PACKAGES[name]
    nb = load(next((ROOT / "exercises").glob(f"{stage}_*_exercises.ipynb")))
    cell(nb, gid).source = source
    g = grade(save(nb, tmp_path, stage), stage, timeout=120)
    exercise = by_exercise(g)[gid[2:4] + "." + gid[5]]
    assert not exercise.passed and exercise.points == 0, exercise
    assert f"it raised ImportError: {package} is not available while stage {stage} is graded" in " ".join(
        [exercise.detail, str(exercise.failing), *g.errors]), (exercise, g.errors)
    __import__(package)   # installed here, outside the sandbox


def test_an_answer_too_deep_for_python_s_parser_fails_that_exercise_alone(tmp_path):
    """The advice's parse gives up on 50,000 nested minus signs (MemoryError): no advice, and the grading goes on."""
    nb = load(SOLUTION)
    cell(nb, "ex04_3").source = "_x = " + "-" * 50_000 + "1\n"
    g = grade(save(nb, tmp_path, "deep"), STAGE, timeout=120)
    assert g.reason == "" and [(e.exercise, e.passed) for e in g.exercises] == [("04.1", True), ("04.2", True),
                                                                                 ("04.3", False)], g


def test_a_hidden_case_that_fails_inside_nested_values_is_shown_where_they_differ(tmp_path):
    """10.2's hidden cases compare lists of windows, lists of messages: cut short, expected and got look the same,
    so the detail adds the way in to the first difference."""
    nb = load(ROOT / "solutions" / "10_memory_and_context_exercises.ipynb")
    nb_cell = cell(nb, "ex10_2")
    nb_cell.source = nb_cell.source.replace("[m for step in steps[first:] for m in step]",
                                            "[m for step in steps[first:] for m in step[:3]]")   # two results at most
    g = grade(save(nb, tmp_path, "window"), "10", timeout=120)
    detail = by_exercise(g)["10.2"].detail
    assert detail.startswith("hidden tests failed: ") and "the first: random history 4: keep 0 to 7: expected " in detail
    assert detail.endswith("(first difference: at item 0 → at item 4 → at item 5 → at key 'role', expected 'tool', "
                           "got 'assistant')"), detail   # the window of keep=4: a third result dropped


def test_an_answer_that_imports_a_finished_function_is_told_what_is_missing_where_it_is_graded(tmp_path):
    """Learner review, 2026-12-08: a wrapper around `compare` got "✓ well done" in the notebook and, from course
    check, "cannot import name 'compare'", which reads as if compare did not exist. The detail now says why, for an
    import at the top of the answer cell (the cell stops) and for one inside the function (each case raises)."""
    nb = load(ROOT / "exercises" / "12_evaluation_exercises.ipynb")
    cell(nb, "ex12_4").source = ("from course_lib.evaluation import compare\n\n\ndef regressions(old, new):\n"
                                 "    return [{k: c[k] for k in ('task', 'before', 'after')} for c in compare(old, new)\n"
                                 "            if c['change'] == 'regression']\n")
    cell(nb, "ex12_1").source = ("def answer_passes(check, answer):\n"
                                 "    from course_lib.evaluation import grade_answer\n"
                                 "    return grade_answer({'id': 'x', 'goal': 'x', 'check': check}, answer)['passed']\n")
    g = grade(save(nb, tmp_path, "wrapper12"), "12", timeout=60)
    ex = by_exercise(g)
    assert not ex["12.4"].passed and not ex["12.1"].passed, g.as_dict()
    if FULL:   # only in the sandbox are the finished modules cut to what the notebook hands out
        why = "is course_lib's finished version in course_lib.evaluation: where answers are graded only what the " \
              "notebook hands out is there, so write it yourself)"
        assert ex["12.4"].detail.startswith("your answer cell defines no `regressions`: it raised ImportError: "
                                            "cannot import name 'compare'") and f"(`compare` {why}" in ex["12.4"].detail
        assert ex["12.1"].detail.endswith(f"cases passed in check() (`grade_answer` {why}"), ex["12.1"].detail
