"""`course check` as a mischievous student would try it, and as an instructor with a class runs it.

Every trick here once turned a wrong or empty stage-04 notebook into a pass, hid a failure, or disturbed the
grading of the next notebook. Each must now fail with a reason, and the batch must go on. The submissions
are built from the real exercise notebook (nothing solved) or the real solution notebook (everything solved),
so the tricks meet the grader exactly as a learner's file would.
"""
from __future__ import annotations

import copy
import hashlib
import json
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import nbformat
import pytest

from course_lib.courseware import sandbox
from course_lib.courseware.grader import Grade, grade, grade_all
from course_lib.courseware.hidden_asserts import explained
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
    g = tricks[name]
    assert not g.passed and all(not e.passed for e in g.exercises), g.as_dict()
    detail = by_exercise(g)["04.1"].detail   # refused before it ran, or ran and changed nothing
    assert detail.startswith("refused:") or detail == "not implemented yet" or "cases passed" in detail


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
    nb = load(EXERCISE)
    cell(nb, "ex04_3").source = "from course_lib.parsing import parse_reply as parse_action\n"
    g = grade(save(nb, tmp_path, "reexport"), STAGE, timeout=120)
    ex = by_exercise(g)["04.3"]
    assert not ex.passed and "imports course_lib.parsing, the finished version of this stage" in ex.detail


# -- isolation ---------------------------------------------------------------------------------------------------
@needs_full
def test_the_solutions_and_git_history_are_out_of_reach(tmp_path):
    """What a kernel sees where the solutions and the git history were: empty folders."""
    scratch = tmp_path / "scratch"
    (scratch / "work").mkdir(parents=True)
    probe = ("import os, subprocess\n"
             f"print(os.listdir({str(ROOT / 'solutions')!r}), os.path.exists({str(ROOT / '.git' / 'HEAD')!r}),\n"
             f"      subprocess.run(['git', '-C', {str(ROOT)!r}, 'show', 'HEAD:solutions'], capture_output=True).returncode)")
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
for target in [root / "solutions" / "04_parsing_replies_exercises.ipynb", root / "course_lib" / "courseware" / "checks.py"]:
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
        # os.abort is not refused (it harms only its own notebook): the batch must hold anyway
        "dead": save(exercise_with("import os\nos.abort()"), tmp_path, "dead"),
        "endless": save(exercise_with("while True:\n    pass"), tmp_path, "endless"),
        "stubborn": save(exercise_with("import time\nwhile True:\n    try:\n        time.sleep(60)\n"
                                       "    except BaseException:\n        pass"), tmp_path, "stubborn"),
        "swallowed": save(exercise_with("def validate_action(data):\n    try:\n        while True: pass\n"
                                        "    except BaseException:\n        return None"), tmp_path, "swallowed"),
        "huge": save(exercise_with("for _ in range(200):\n    print('x' * 100_000)"), tmp_path, "huge"),
        "not json": str(tmp_path / "not.ipynb"),
        "missing": str(tmp_path / "missing.ipynb"),
        "honest": honest,
    }
    Path(batch["not json"]).write_text("this is not a notebook")
    result = subprocess.run([sys.executable, "-m", "course_lib.courseware.cli", "check", STAGE, "--json", "--timeout", "10",
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
    run = lambda *a: subprocess.run([sys.executable, "-m", "course_lib.courseware.cli", "check", *a], capture_output=True,
                                    text=True, timeout=120, cwd=tmp_path)
    assert run("4x").returncode == 2                                   # not a stage
    assert run(STAGE, "--solutions", str(tmp_path)).returncode == 3    # no solution notebook there
    missing = run("42", str(tmp_path / "a.ipynb"))
    assert missing.returncode == 3 and "no solution notebook for stage 42" in missing.stderr


def test_solutions_kept_outside_the_repository(tmp_path):
    outside = tmp_path / "instructor"
    outside.mkdir()
    (outside / SOLUTION.name).write_bytes(SOLUTION.read_bytes())
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


@pytest.mark.parametrize("name", list(REACHING_IN))
def test_an_answer_that_reaches_into_the_interpreter_is_refused_before_it_runs(tmp_path, name):
    nb = load(SOLUTION)   # solved: only the refusal can fail it
    answer(nb, "ex04_1", REACHING_IN[name])
    g = grade(save(nb, tmp_path, "reach"), STAGE, timeout=120)
    ex = by_exercise(g)
    assert not ex["04.1"].passed and ex["04.1"].detail.startswith("refused: answer cell 'ex04_1' was not run")
    assert ex["04.2"].passed


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


def test_a_judge_reply_in_another_shape_fails_the_notebook():
    """Even a reply forged inside the kernel must carry every trusted case label, in order."""
    from course_lib.courseware.checks import exercise
    from course_lib.courseware.grader import _trusted_shape
    candidates = {"04.1": "validate_action"}
    rows = [{"label": c.label, "ok": True, "expected": "", "got": "", "hint": ""} for c in exercise("04.1").cases]

    def reply(found):
        return {"data": {"text/plain": repr(json.dumps(found))}}
    honest = {"04.1": {"defined": True, "module": "__main__", "result": {"cases": rows}}}
    assert _trusted_shape(reply(honest), candidates) == honest
    forged = {"04.1": {"defined": True, "module": "__main__", "result": {"cases": rows[:1]}}}
    for bad in (forged, [1], {"04.1": "yes"}, {}):
        assert _trusted_shape(reply(bad), candidates) is None


def test_report_lines_carry_no_terminal_control_characters():
    from course_lib.courseware.grader import ExerciseGrade, _lines
    g = Grade("x.ipynb", STAGE, [ExerciseGrade("04.1", False, "bad\x1b[8Fpassed", failing=[
        {"label": "\x1b]0;title\x07row", "expected": "\x9b1m", "got": "ok", "hint": ""}])])
    text = "\n".join(_lines(g))
    assert "\x1b" not in text and "\x07" not in text and "\x9b" not in text and "\\x1b" in text


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
ROUND_THREE_REFUSED = {   # stage, answer: refused before it runs
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


def _borrows_in(source: str, stage: str, may_use=()):
    """Run the judge's `_borrows` on the function or class `answer` defined by ``source`` as a notebook would."""
    from course_lib.courseware.grader import BORROWS, finished
    space = {"__name__": "__main__", "FINISHED": finished(stage)}
    exec(BORROWS, space)
    notebook = {"__name__": "__main__"}
    exec(source, notebook)
    return space["_borrows"](notebook["answer"], set(may_use))


BORROWING = {
    "a wrapper": "from course_lib.memory import split_steps\ndef answer(h):\n    return split_steps(h)",
    "a default argument": "from course_lib.memory import split_steps\nanswer = lambda h, _f=split_steps: _f(h)",
    "a partial": "import functools\nfrom course_lib.memory import split_steps\nanswer = functools.partial(split_steps)",
    "an alias two helpers deep": ("from course_lib.memory import trim_window as _w\ndef _a(h):\n    return _w(h, keep_last=2)"
                                  "\ndef answer(h, k):\n    return [m for m in _a(h)]"),
    "a closure": ("from course_lib.safety import Taint\ndef make():\n    t = Taint()\n    def answer(a):\n"
                  "        return t.find(a)\n    return answer\nanswer = make()"),
    "a subclass": "from course_lib.memory_store import MemoryStore\nclass answer(MemoryStore):\n    pass",
    "a method's body": ("from course_lib.control import handoff_note\nclass answer:\n    def go(self, s):\n"
                        "        return handoff_note(None, '', '', s)"),
}


@pytest.mark.parametrize("name", list(BORROWING))
def test_an_answer_that_reaches_a_finished_function_is_caught_however_it_gets_there(name):
    assert _borrows_in(BORROWING[name], "10" if "memory" in BORROWING[name] else "09")


def test_honest_answers_and_what_an_exercise_hands_over_are_not_borrowing():
    honest = ("from course_lib.tools import ToolError\nfrom course_lib.memory import split_steps\n"
              "from course_lib.dispatch import Observation\nimport re\n"
              "def _words(t):\n    return re.findall(r'\\w+', t)\n"
              "def answer(history, keep):\n    head, steps = split_steps(history)\n"
              "    if keep < 0:\n        raise ToolError('no')\n    return head + [m for s in steps[-keep:] for m in s]")
    assert _borrows_in(honest, "10", may_use={"split_steps"}) is None   # 10.2 may use split_steps
    assert _borrows_in(honest, "10") == "course_lib.memory.split_steps"   # 10.1 may not
    assert _borrows_in("def answer(x):\n    return answer(x)", "10") is None   # recursion ends


def test_a_wrapper_around_the_split_steps_the_setup_cell_hands_over_fails_10_1(tmp_path):
    nb = load(ROOT / "exercises" / "10_memory_and_context_exercises.ipynb")
    target = cell(nb, "ex10_1")
    target.source = "def group_steps(history):\n    return split_steps(history)\n"
    g = grade(save(nb, tmp_path, "borrow10"), "10", timeout=60)
    ex = by_exercise(g)
    assert not ex["10.1"].passed, ex["10.1"]
    assert ex["10.1"].detail.startswith("`group_steps` uses course_lib.memory.split_steps, course_lib's finished")
    assert ex["10.2"].detail.startswith("not implemented yet")


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
    uses = "from course_lib.retrieval import tokenize\ndef answer(q, docs):\n    return [tokenize(d) for d in docs]"
    assert _borrows_in(uses, "11", may_use={"tokenize"}) is None   # handed over for 11.1
    assert _borrows_in(uses, "11") == "course_lib.retrieval.tokenize"   # and for nothing else


def test_an_answer_that_imports_the_finished_parse_verdict_fails_11_3(tmp_path):
    nb = load(ROOT / "exercises" / "11_agent_patterns_exercises.ipynb")
    cell(nb, "ex11_3").source = ("from course_lib.planning import parse_verdict as _pv\n"
                                 "def parse_verdict(text):\n    v = _pv(text)\n"
                                 "    return None if v.note else {'ok': v.ok, 'feedback': v.feedback}\n")
    ex = by_exercise(grade(save(nb, tmp_path, "borrow11"), "11", timeout=60))
    assert not ex["11.3"].passed and ex["11.3"].detail.startswith("refused: answer cell 'ex11_3' was not run")
    assert "course_lib.planning" in ex["11.3"].detail and ex["11.4"].detail.startswith("not implemented yet")


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




def test_a_module_kept_in_an_instance_or_code_from_outside_the_notebook_is_borrowing():
    boxed = ("from course_lib.courseware.checks import import_module\nclass _Box:\n    def __init__(self, m):\n"
             "        self.m = m\n_box = _Box(import_module('course_lib.evaluation'))\n"
             "def answer(check, text):\n    return _box.m.grade_answer({'check': check}, text)['passed']")
    assert _borrows_in(boxed, "12") == "course_lib.evaluation"
    copied = ("src = 'def from_mcp_result(r):\\n    return r'\nns = {'__name__': 'copy13'}\nexec(src, ns)\n"
              "answer = ns['from_mcp_result']")
    assert _borrows_in(copied, "13") == "copy13.from_mcp_result (code from outside the notebook)"
    third_party = "from rank_bm25 import BM25Okapi\ndef answer(q, docs):\n    return BM25Okapi(docs).get_scores(q)"
    assert _borrows_in(third_party, "11") == "rank_bm25.BM25Okapi (code from outside the notebook)"


def test_honest_answers_using_the_standard_library_and_earlier_stages_are_not_borrowing():
    honest = ("import json, math, re, unicodedata\nfrom collections import Counter, defaultdict\n"
              "from dataclasses import dataclass\nfrom course_lib.tools import ToolError\n"
              "from course_lib.describe import tool_schema\n@dataclass\nclass Row:\n    task: str\n"
              "class Helper:\n    def __init__(self):\n        self.counts = Counter()\n        self.pattern = re.compile('x')\n"
              "H = Helper()\n"
              "def answer(text):\n    row = Row(text)\n    H.counts.update(json.loads(text))\n"
              "    if not math.isfinite(1.0):\n        raise ToolError('x')\n"
              "    return unicodedata.normalize('NFC', row.task), defaultdict(list), tool_schema, H.pattern")
    assert _borrows_in(honest, "11") is None


def test_the_kernel_patching_notebook_gets_no_marks(tmp_path):
    nb = load(ROOT / "exercises" / "11_agent_patterns_exercises.ipynb")
    cell(nb, "ex11_1").source = TAMPER + "\n" + cell(nb, "ex11_1").source
    ex = by_exercise(grade(save(nb, tmp_path, "tamper11"), "11", timeout=60))
    assert not any(e.passed for e in ex.values()), ex
    assert ex["11.1"].detail.startswith("refused: answer cell 'ex11_1' was not run because it imports unittest")


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
    "getattr for a listed attribute": ("import os\ndef f():\n    return getattr(os.sys, 'modules')", "getattr for .modules"),
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


@pytest.mark.parametrize("stage, name", [("11", n) for n in ROUND_FOUR_REFUSED] + [("12", n) for n in ROUND_FIVE_REFUSED])
def test_round_four_and_five_ways_around_the_grader_are_refused_saying_why(stage, name):
    from course_lib.courseware.grader import refusal
    source, said = {"11": ROUND_FOUR_REFUSED, "12": ROUND_FIVE_REFUSED}[stage][name]
    why = refusal(source, stage)
    assert why is not None and said in why, why


def test_items_of_the_answer_s_own_containers_may_still_be_set():
    from course_lib.courseware.grader import refusal
    assert refusal("counts = {}\ncounts['a'] = 1\nrows = [[0]]\nrows[0][0] = 1\n"
                   "def f(d):\n    d['k'] = 2\n    return d", "12") is None


def test_the_judge_undoes_a_patched_json_and_a_patched_shell(tmp_path):
    """Were the static refusal fooled, the judge still serialises with json fresh from its source and runs hidden
    tests with the shell's own transform_cell (a patch on the shell instance is removed before the judge runs)."""
    from course_lib.courseware.grader import JUDGE, RESET
    assert "importlib.reload(json.encoder)" in JUDGE and "json = importlib.reload(json)" in JUDGE
    import json as real_json
    space = {}
    exec("import json, importlib, json.encoder\njson.__dict__['dumps'] = lambda *a, **k: 'forged'\n"
         "importlib.reload(json.encoder)\njson = importlib.reload(json)\nout = json.dumps({'ok': True})", space)
    assert space["out"] == '{"ok": true}' and real_json.dumps([1]) == "[1]"
    assert 'vars(ip).pop(_name, None)' in RESET and '"transform_cell"' in RESET


FORGE = '''import os
from operator import attrgetter
_mods = getattr(os.sys, "modules")
_own = attrgetter("_" * 2 + "dict" + "_" * 2)
_json = _mods["json"]
_dumps = _json.dumps
def _forged(obj, *args, **kwargs):
    if isinstance(obj, dict) and obj and all(isinstance(v, dict) and "borrows" in v for v in obj.values()):
        for ex, seen in obj.items():
            spec = _mods["course_lib.courseware.exercises.stage" + ex[:2]].EXERCISES[ex]
            rows = [{"label": c.label, "ok": True, "expected": "", "got": "", "hint": ""} for c in spec.cases]
            seen.update(defined=True, module="notebook", borrows=None,
                        result={"exercise": ex, "title": spec.title, "passed": True, "not_implemented": False,
                                "stub": None, "error": None, "cases": rows})
    return _dumps(obj, *args, **kwargs)
_own(_json)["dumps"] = _forged
_shell = getattr(_mods["IPython"], "get_ipython")()
_transform = _shell.transform_cell
def _skip_hidden(raw_cell):
    return "pass\\n" if "HIDDEN TESTS" in raw_cell else _transform(raw_cell)
_own(_shell)["transform_cell"] = _skip_hidden
'''


def test_were_the_refusal_fooled_a_forged_judge_and_skipped_hidden_tests_still_get_no_marks(tmp_path, monkeypatch):
    """Round five's full attack, run for real (the static refusal switched off for this test): it patches the
    kernel's json and the shell's transform_cell. The judge reloads json and the reset restores the shell, so
    the stubs fail as stubs."""
    from course_lib.courseware import grader
    monkeypatch.setattr(grader, "refusal", lambda source, stage="": None)
    nb = load(ROOT / "exercises" / "12_evaluation_exercises.ipynb")
    cell(nb, "ex12_1").source = FORGE + "\n" + cell(nb, "ex12_1").source
    ex = by_exercise(grade(save(nb, tmp_path, "forged12"), "12", timeout=60))
    assert not any(e.passed for e in ex.values()), {k: (e.passed, e.detail) for k, e in ex.items()}
    assert all(e.detail.startswith("not implemented yet") for e in ex.values()), {k: e.detail for k, e in ex.items()}



# -- the grader's own logic, in-process and fast: assembling, refusing, judging, reporting (no kernel) -------------
from course_lib.courseware import grader as _grader   # noqa: E402


def _trusted_04():
    return load(SOLUTION)


def test_assemble_takes_only_the_answer_cells_and_names_each_kind_of_tampering():
    trusted = _trusted_04()
    submission = load(SOLUTION)
    cell(submission, "ex04_1").source = "import sys\ndef validate_action(data):\n    return None"   # refused
    nb, found, notes = _grader.assemble(trusted, submission)
    assert found == {"04.1": ["refused: answer cell 'ex04_1' was not run because it imports sys (see the "
                               "notebook's note on imports)"]}
    assert notes == [] and len(nb.cells) == len(trusted.cells) and nb.metadata == trusted.metadata
    assert cell(nb, "ex04_1").source.rstrip("\n") == cell(load(EXERCISE), "ex04_1").source   # the stub stands in
    assert cell(nb, "ex04_2").source == cell(trusted, "ex04_2").source   # an honest answer is taken as it is
    assert all(c.get("outputs", []) == [] and c.get("execution_count") is None for c in nb.cells
               if c.cell_type == "code")
    for how, said in [("deleted", "cell 'ex04_1_hidden' is missing"), ("duplicated", "cell 'ex04_1_hidden' appears 2 times"),
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
        assert cell(nb, "ex04_1_hidden").source == explained(cell(trusted, "ex04_1_hidden").source)   # the trusted one
    submission = load(SOLUTION)
    tamper(submission, "untagged answer")
    nb, _, _ = _grader.assemble(trusted, submission)
    assert "raise NotImplementedError()" in cell(nb, "ex04_1").source   # a tampered answer is not run either
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
    assert cell(nb, "ex04_3_hidden").source == explained(cell(trusted, "ex04_3_hidden").source)
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


def _trusted_mini(points=3):
    cells = [nbformat.v4.new_markdown_cell("intro"), nbformat.v4.new_code_cell("setup = 1")]
    for gid, meta in [("ex04_1", {"solution": True}), ("ex04_1_check", {"locked": True}),
                      ("ex04_1_hidden", {"grade": True, "locked": True, "points": points})]:
        c = nbformat.v4.new_code_cell('check("04.1", validate_action)' if gid.endswith("_check") else "pass")
        c.metadata["nbgrader"] = {"grade_id": gid, **meta}
        cells.append(c)
    return nbformat.v4.new_notebook(cells=cells)


OK = ("ok", None, None)


def _seen(cases=(True, True), **result):
    rows = [{"label": f"case {i}", "ok": ok, "expected": "1", "got": "1" if ok else "2", "hint": ""}
            for i, ok in enumerate(cases)]
    return {"defined": True, "module": "__main__", "borrows": None, "result": {"cases": rows, **result}}


def _judge(statuses=None, seen=None, tamper=None, judged="default", **kw):
    judged = {"04.1": seen or _seen()} if judged == "default" else judged
    statuses = {2: OK, 3: OK, 4: OK} if statuses is None else statuses
    grades = _grader.judge(_trusted_mini(), statuses, judged, tamper or {}, {"04.1": "validate_action"}, **kw)
    assert len(grades) == 1
    return grades[0]


def test_judge_passes_an_exercise_only_when_nothing_is_wrong_and_gives_its_points():
    g = _judge()
    assert (g.exercise, g.passed, g.detail, g.points, g.max_points, g.failing) == \
        ("04.1", True, "2/2 cases passed, hidden tests passed", 3, 3, [])
    unpointed = _grader.judge(_trusted_mini(points=None), {2: OK, 3: OK, 4: OK}, {"04.1": _seen()}, {},
                              {"04.1": "validate_action"})[0]
    assert unpointed.passed and (unpointed.points, unpointed.max_points) == (0, 0)


@pytest.mark.parametrize("setting, detail", [
    ({"tamper": {"04.1": ["cell 'ex04_1_hidden' is missing", "refused: answer cell 'ex04_1' was not run because x"]}},
     "tampering: cell 'ex04_1_hidden' is missing; refused: answer cell 'ex04_1' was not run because x"),
    ({"statuses": {2: ("error", "TimeoutError", "the cell ran longer than 30 s"), 4: OK}},
     "your answer cell was stopped: the cell ran longer than 30 s"),
    ({"seen": {"defined": False, "module": "", "borrows": None, "result": None}},
     "your answer cell defines no `validate_action`"),
    ({"judged": None}, "not graded"),
    ({"judged": {}}, "your answer cell defines no `validate_action`"),
    ({"seen": {**_seen(), "result": {"not_implemented": True, "cases": [], "stub": None}}}, "not implemented yet"),
    ({"seen": {**_seen(), "result": {"not_implemented": True, "cases": [], "stub": "helper"}}},
     "not implemented yet: `helper` still raises NotImplementedError"),
    ({"seen": {**_seen(), "borrows": "course_lib.parsing.parse_reply"}},
     "`validate_action` uses course_lib.parsing.parse_reply, course_lib's finished version, not your own code: the "
     "exercise asks you to write it"),
    ({"seen": {**_seen(), "module": "course_lib.parsing"}},
     "`validate_action` is course_lib's finished version (course_lib.parsing), not your own: the exercise asks you "
     "to write it"),
    ({"seen": _seen(error="no exercise")}, "the check could not run: no exercise"),
    ({"seen": _seen(cases=(True, False, False))}, "1/3 cases passed in check()"),
    ({"statuses": {2: ("error", "NameError", "x"), 4: OK}}, "your answer cell raised NameError: x"),
    ({"statuses": {2: OK, 4: ("error", "AssertionError", "the check of 04.1 above did not pass")}},
     "hidden tests failed: AssertionError: the check of 04.1 above did not pass"),
    ({"statuses": {2: OK}}, "hidden tests did not run (not run)"),
    ({"statuses": {2: OK, 4: ("no reply", None, None)}}, "hidden tests did not run (no reply)"),
])
def test_judge_says_what_failed_first(setting, detail):
    g = _judge(**setting)
    assert (g.passed, g.detail, g.points, g.max_points) == (False, detail, 0, 3)


def test_judge_keeps_every_failing_row_and_cuts_a_long_detail():
    g = _judge(seen=_seen(cases=(False,) * 7))
    assert [r["label"] for r in g.failing] == [f"case {i}" for i in range(7)]
    long = _judge(tamper={"04.1": ["x" * 600]})
    assert long.detail == ("tampering: " + "x" * 600)[:500]
    assert _judge(seen={**_seen(), "module": "course_lib.parsing"},
                  allowed_reexport=("validate_action",)).passed   # a re-export the exercise allows


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
                          _grader.ExerciseGrade("04.2", True, "4/4 cases passed, hidden tests passed", 2, 2)],
              notes=["a note"], reason="the kernel died")
    assert _grader._lines(g) == [
        "    note: a note", "    NOT GRADED: the kernel died",
        "    ✗ 04.1  1/7 cases passed in check()",
        "        ✗ c0: expected 1, got 2  (hint: h)", "        ✗ c1: expected 1, got 2",
        "        ✗ c2: expected 1, got 2", "        ✗ c3: expected 1, got 2", "        ✗ c4: expected 1, got 2",
        "        … and 1 more failing case(s): the check cell in the notebook lists them all",
        "    ✓ 04.2  4/4 cases passed, hidden tests passed"]
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


def test_the_judge_expression_runs_with_the_real_builtins_whatever_the_namespace_holds():
    expression = _grader._expression("x = [len('abc'), print.__name__]\nresult = x")
    assert eval(expression, {"__builtins__": {}}) == [3, "print"]   # nothing named in the caller's namespace
    assert eval(_grader._expression("result = 'reset'"), {"exec": None, "len": None}) == "reset"


def test_a_judge_reply_is_kept_only_in_the_shape_the_grader_sent():
    from course_lib.courseware.checks import exercise
    labels = [c.label for c in exercise("04.1").cases]
    rows = [{"label": label, "ok": True} for label in labels]
    candidates = {"04.1": "validate_action", "04.2": "find_action"}

    def reply(found):
        return {"data": {"text/plain": repr(json.dumps(found))}}
    absent = {"defined": False, "borrows": None, "result": None}
    good = {"04.1": {"defined": True, "borrows": "x", "result": {"cases": rows}}, "04.2": absent}
    assert _grader._trusted_shape(reply(good), candidates) == good
    stub = {"04.1": {"defined": True, "result": {"not_implemented": True, "cases": []}}, "04.2": absent}
    assert _grader._trusted_shape(reply(stub), candidates) == stub
    error = {"04.1": {"defined": True, "result": {"error": "e", "cases": []}}, "04.2": absent}
    assert _grader._trusted_shape(reply(error), candidates) == error
    for bad in ({"04.1": good["04.1"]},                                              # an exercise left out
                {**good, "04.1": {**good["04.1"], "defined": 1}},                    # not a bool
                {**good, "04.1": {**good["04.1"], "borrows": 1}},                    # not text
                {**good, "04.1": {"defined": True, "result": {"cases": "rows"}}},    # rows not a list
                {**good, "04.1": {"defined": True, "result": {"cases": [1]}}},       # a row not a dict
                {**good, "04.1": {"defined": True, "result": {"cases": rows[::-1]}}},    # reordered
                {"04.1": absent, "04.2": {"defined": True, "result": {"cases": []}}},  # after an absent one
                {**good, "04.1": {"defined": True, "result": {"not_implemented": True, "cases": [1]}}}):
        assert _grader._trusted_shape(reply(bad), candidates) is None, bad
    assert _grader._trusted_shape({"data": {}}, candidates) is None


def _fake_run(record, statuses=None, judged=None, notes=(), reason=""):
    def run(nb, stage, candidates, *, timeout, level, hidden):
        record.update(nb=nb, stage=stage, candidates=candidates, timeout=timeout, level=level, hidden=hidden)
        return statuses or {}, judged, list(notes), reason
    return run


def test_grade_builds_the_result_from_what_the_run_observed(tmp_path, monkeypatch):
    record = {}
    seen = {ex: {"defined": True, "module": "__main__", "borrows": None, "result": _seen()["result"]}
            for ex in ("04.1", "04.2", "04.3")}
    ok = {i: OK for i in range(15)}
    monkeypatch.setattr(_grader, "run", _fake_run(record, {**ok, 1: ("error", "NameError", "x"),
                                                           7: ("error", "ValueError", "bad")}, seen, ["n2"]))
    path = save(load(SOLUTION), tmp_path, "honest")
    keep = tmp_path / "class"
    keep.mkdir()
    g = _grader.grade(path, STAGE, timeout=9, level="none", hide=[str(keep), str(ROOT)])
    assert [c.source for c in record["nb"].cells] == [   # assembled: the solution, its hidden tests explained
        explained(c.source) if c.get("metadata", {}).get("nbgrader", {}).get("grade_id", "").endswith("_hidden")
        else c.source for c in load(SOLUTION).cells]
    assert record["candidates"] == {"04.1": "validate_action", "04.2": "find_action", "04.3": "parse_action"}
    assert (record["stage"], record["timeout"], record["level"]) == (STAGE, 9, "none")
    assert record["hidden"] == [SOLUTION.parent.resolve(), (ROOT / "solutions").resolve(), (ROOT / ".git").resolve(),
                                keep]   # the course folder itself is needed: it is not hidden
    assert (g.notebook, g.stage, g.isolation, g.reason) == (path, STAGE, sandbox.DESCRIPTIONS["none"], "")
    assert g.notes == ["n2"] and g.errors == ["cell 1: NameError: x"]   # a set-up cell; not the answer cell 7
    assert [(e.exercise, e.passed) for e in g.exercises] == [("04.1", True), ("04.2", False), ("04.3", True)]
    assert by_exercise(g)["04.2"].detail == "your answer cell raised ValueError: bad"
    outside = tmp_path / "instructor"
    outside.mkdir()
    (outside / SOLUTION.name).write_bytes(SOLUTION.read_bytes())
    added = load(SOLUTION)
    added.cells.append(nbformat.v4.new_code_cell("helper = 1"))
    g = _grader.grade(save(added, tmp_path, "added"), STAGE, solutions_dir=outside, level="none")
    assert record["timeout"] == 60 and record["hidden"][0] == outside.resolve()   # the default; the given folder
    assert g.notes[0].startswith("1 code cell(s) you added were not run") and g.notes[1:] == ["n2"]


def test_grade_marks_what_a_failed_run_left_ungraded_with_its_reason(tmp_path, monkeypatch):
    monkeypatch.setattr(_grader, "run", _fake_run({}, {}, None, [], "the kernel died while running the notebook"))
    submission = load(SOLUTION)
    tamper(submission, "deleted")
    g = _grader.grade(save(submission, tmp_path, "dead"), STAGE, level="none")
    assert g.reason == "the kernel died while running the notebook" and not g.passed
    details = [e.detail for e in g.exercises]
    assert details == ["tampering: cell 'ex04_1_hidden' is missing"] + \
        ["not graded: the kernel died while running the notebook"] * 2
    half = {ex: _seen()for ex in ("04.1", "04.2", "04.3")}
    monkeypatch.setattr(_grader, "run", _fake_run({}, {i: OK for i in range(6)}, half, [], "stopped"))
    g = _grader.grade(save(load(SOLUTION), tmp_path, "half"), STAGE, level="none")   # 04.1's cells ran, no more
    assert [e.detail for e in g.exercises] == ["2/2 cases passed, hidden tests passed"] + ["not graded: stopped"] * 2


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
    assert all(hide == [str(tmp_path)] for _, hide in seen)
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
    assert capsys.readouterr().err == f"course check: there is no solution notebook for stage 42 in {ROOT / 'solutions'}\n"
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
    """nbclient's client without a kernel: each code cell ends as `endings` says (default ok)."""

    def __init__(self, nb, km, **options):
        self.nb, self.km, self.options, self.ran, self.capped = nb, km, options, [], False
        self.timeout = options["timeout"]
        _FakeClient.last = self

    def setup_kernel(self, env, cwd, cleanup_kc):
        import contextlib
        self.env, self.cwd, self.cleanup_kc = env, cwd, cleanup_kc
        if self.start_error:
            raise RuntimeError(self.start_error)
        return contextlib.nullcontext()

    def execute_cell(self, cell, index):
        self.ran.append(index)
        ending = self.endings.get(index, OK)
        if isinstance(ending, BaseException):
            raise ending
        self.statuses[index] = ending
        self.capped = self.capped or ending == ("ok", "capped", None)


def _judge_reply(found):
    return {"status": "ok", "data": {"text/plain": repr(json.dumps(found))}}


def _run_fake(monkeypatch, endings=None, silent=None, start_error=None, timeout=7, candidates=None):
    """Run grader.run on stage 04's assembled solution with the fake client; returns (result, client, requests)."""
    from course_lib.courseware.checks import exercise
    rows = {ex: [{"label": c.label, "ok": True} for c in exercise(ex).cases] for ex in ("04.1", "04.2", "04.3")}
    honest = {ex: {"defined": True, "borrows": None, "result": {"cases": rows[ex]}} for ex in rows}
    requests, managers = [], []

    def fake_silent(client, code, seconds, expression=None):
        assert isinstance(client, _FakeClient), client   # every request goes to the notebook's own kernel
        requests.append((code, seconds, expression))
        if silent:
            answer = silent(code, expression)
            if answer is not None:
                return answer
        return {"user_expressions": {"r": _judge_reply(honest)}} if expression and "CANDIDATES" in expression else {}
    monkeypatch.setattr(_grader, "_silent", fake_silent)
    monkeypatch.setattr(_grader, "_client_class", lambda: _FakeClient)
    monkeypatch.setattr(_FakeClient, "endings", endings or {}, raising=False)
    monkeypatch.setattr(_FakeClient, "start_error", start_error, raising=False)
    monkeypatch.setattr(sandbox, "kernel_manager", lambda level, scratch, hidden: managers.append(
        (level, scratch, hidden, sorted(p.name for p in scratch.iterdir()))) or "km")
    nb, _, _ = _grader.assemble(_trusted_04(), _trusted_04())
    candidates = candidates or {"04.1": "validate_action", "04.2": "find_action", "04.3": "parse_action"}
    result = _grader.run(nb, STAGE, candidates, timeout=timeout, level="none", hidden=[Path("/h")])
    assert _FakeClient.last.nb is nb
    return result, getattr(_FakeClient, "last", None), requests, managers, honest


def test_run_resets_before_each_trusted_cell_then_asks_the_judge(monkeypatch):
    (statuses, judged, notes, reason), client, requests, managers, honest = _run_fake(monkeypatch)
    code_cells = [i for i, c in enumerate(_trusted_04().cells) if c.cell_type == "code"]
    assert client.ran == code_cells and statuses == dict.fromkeys(code_cells, OK)
    assert (judged, notes, reason) == (honest, [], "")
    assert client.km == "km" and client.options == {
        "timeout": 7, "kernel_name": "python3", "allow_errors": True, "interrupt_on_timeout": True,
        "error_on_timeout": {"ename": "TimeoutError", "evalue": "the cell ran longer than 7 s"},
        "resources": {"metadata": {"path": str(managers[0][1] / "work")}}, "shutdown_kernel": "immediate"}
    level, scratch, hidden, made = managers[0]
    assert (level, hidden, made) == ("none", [Path("/h")], ["home", "tmp", "work"])
    assert scratch.name.startswith("course-grade-") and not scratch.exists()   # deleted afterwards
    assert client.cwd == str(scratch / "work") and client.env == _grader._environment(scratch)
    resets = [r for r in requests if r[2] == _grader._expression(_grader.RESET)]
    trusted_code = [i for i in code_cells if not _grader._nbgrader(_trusted_04().cells[i]).get("solution")]
    assert len(resets) == len(trusted_code) and all(r[:2] == ("", 7) for r in resets)
    judge = requests[-1]
    assert judge[:2] == ("", 7) and len(requests) == len(resets) + 1
    source = eval(judge[2].split("b.exec(", 1)[1].split(", g)", 1)[0])
    assert source.startswith(f"STAGE = '04'\nCANDIDATES = {{'04.1': 'validate_action', '04.2': 'find_action', "
                             f"'04.3': 'parse_action'}}\nFINISHED = {_grader.finished('04')!r}\n"
                             f"MAY_USE = {{}}\n" + _grader.BORROWS + _grader.JUDGE)


def test_run_stops_at_a_cell_the_interrupt_could_not_stop_and_names_it(monkeypatch):
    stuck = ("error", "TimeoutError", "the cell ran longer than 7 s")
    (statuses, judged, notes, reason), client, requests, _, _ = _run_fake(monkeypatch, endings={4: stuck})
    assert reason == ("the kernel was still busy 7 s after cell 'ex04_1_check' was interrupted (code running "
                      "inside C, such as a regular expression that backtracks, cannot be stopped)")
    assert client.ran == [1, 3, 4] and judged is None and statuses[4] == stuck
    assert ("pass", 5, None) in requests and not any(r[2] and "CANDIDATES" in r[2] for r in requests)
    (_, _, _, reason), client, _, _, _ = _run_fake(monkeypatch, endings={1: stuck})
    assert "after cell 'cell 2' was interrupted" in reason


def test_run_goes_on_after_a_timeout_the_interrupt_ended(monkeypatch):
    stuck = ("error", "TimeoutError", "the cell ran longer than 7 s")
    answered = lambda code, expression: {"status": "ok"} if code == "pass" else None
    (statuses, judged, notes, reason), client, _, _, honest = _run_fake(monkeypatch, endings={3: stuck},
                                                                        silent=answered)
    assert reason == "" and judged == honest and client.ran[-1] == 13 and statuses[3] == stuck
    other = ("error", "ValueError", "x")
    (_, judged, _, reason), client, requests, _, _ = _run_fake(monkeypatch, endings={3: other})
    assert reason == "" and not any(r[0] == "pass" for r in requests)


def test_run_fails_the_notebook_when_the_judge_fails_or_answers_in_another_shape(monkeypatch):
    failing = lambda code, expression: ({"user_expressions": {"r": {"status": "error", "ename": "NameError",
                                                                    "evalue": "x"}}}
                                        if expression and "CANDIDATES" in expression else None)
    (_, judged, _, reason), _, _, _, _ = _run_fake(monkeypatch, silent=failing)
    assert judged is None and reason == "the grader's own check could not run (NameError: x)"
    silent = lambda code, expression: {} if expression and "CANDIDATES" in expression else None
    (_, judged, _, reason), _, _, _, _ = _run_fake(monkeypatch, silent=silent)
    assert reason == "the grader's own check could not run (None: None)"
    forged = lambda code, expression: ({"user_expressions": {"r": _judge_reply({"04.1": {"defined": True}})}}
                                       if expression and "CANDIDATES" in expression else None)
    (_, judged, _, reason), _, _, _, _ = _run_fake(monkeypatch, silent=forged)
    assert judged is None and reason == "the grader's own check came back in a shape it did not send (tampering)"


def test_run_reports_a_dead_kernel_a_kernel_that_never_started_and_capped_output(monkeypatch):
    from nbclient.exceptions import DeadKernelError
    (statuses, judged, _, reason), client, _, managers, _ = _run_fake(monkeypatch, endings={7: DeadKernelError("x")})
    assert reason == "the kernel died while running the notebook (os._exit, a crash, or out of memory)"
    assert judged is None and client.ran == [1, 3, 4, 5, 7] and not managers[0][1].exists()
    with pytest.raises(_grader.GraderError) as e:
        _run_fake(monkeypatch, start_error="no such kernel")
    assert str(e.value) == "could not start a kernel (none sandbox): no such kernel" and e.value.__cause__ is None
    (_, _, notes, reason), _, _, _, _ = _run_fake(monkeypatch, endings={3: ("ok", "capped", None)})
    assert notes == ["output was capped at 2,000,000 characters"] and reason == ""


def test_run_gives_the_whole_notebook_four_timeouts_and_thirty_seconds(monkeypatch):
    clock = iter([1000.0] + [1000.0 + 58.0] * 3 + [1000.0 + 58.5] * 50)
    monkeypatch.setattr(_grader.time, "monotonic", lambda: next(clock))
    (_, judged, _, reason), client, _, _, _ = _run_fake(monkeypatch)
    assert reason == "the notebook ran longer than 58 s in all"
    assert client.ran == [1, 3, 4] and judged is None   # at exactly the limit a cell still starts


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
    """The stage a refusal is judged against is the exercise's own (04 for ex04_3, 05 for ex05_1)."""
    trusted4, submission4 = _trusted_04(), load(SOLUTION)
    cell(submission4, "ex04_3").source = "from course_lib.parsing import parse_reply as parse_action\n"
    assert _grader.assemble(trusted4, submission4)[1] == {"04.3": [
        "refused: answer cell 'ex04_3' was not run because it imports course_lib.parsing, the finished version of "
        "this stage or a later one (see the notebook's note on imports)"]}
    path5 = _grader.solution_for("05")
    trusted5, submission5 = load(path5), load(path5)
    first = next(c for c in submission5.cells if _grader._nbgrader(c).get("solution"))
    first.source = "from course_lib.parsing import parse_reply\n" + first.source
    nb, tamper, _ = _grader.assemble(trusted5, submission5)
    assert tamper == {} and cell(nb, _grader._grade_id(first)).source == first.source


def test_judge_never_passes_an_exercise_whose_hidden_tests_are_not_in_the_trusted_notebook():
    trusted = _trusted_mini()
    del trusted.cells[4]   # the instructor's notebook lost ex04_1_hidden: nothing proves the answer right
    g = _grader.judge(trusted, {0: OK, 1: OK, 2: OK, 3: OK, 4: OK}, {"04.1": _seen()}, {}, {"04.1": "validate_action"})
    assert (g[0].passed, g[0].detail, g[0].points, g[0].max_points) == \
        (False, "hidden tests did not run (not run)", 0, 0)
    seen = _seen()
    del seen["module"]   # a reply without the module: not course_lib's
    assert _judge(seen=seen).passed


def test_run_passes_each_cell_and_the_client_along_and_survives_a_scratch_folder_it_cannot_delete(monkeypatch):
    import shutil
    cells = []
    real_execute = _FakeClient.execute_cell

    def execute(self, cell, index):
        cells.append((cell, index))
        if not cell.source.strip():   # as nbclient: an empty cell is not sent, so it has no status
            self.ran.append(index)
            return
        real_execute(self, cell, index)
    monkeypatch.setattr(_FakeClient, "execute_cell", execute)
    removed = []

    def rmtree(path, ignore_errors=False):
        if not ignore_errors:
            raise PermissionError(f"cannot delete {path}")
        removed.append(path)
    monkeypatch.setattr(shutil, "rmtree", rmtree)
    monkeypatch.setattr(_grader, "may_use", lambda stage: {"04.1": [f"for {stage}"]})
    import course_lib.courseware.grader as module
    original_assemble = module.assemble

    def assemble_with_empty_answer(trusted, submission):
        nb, tamper, notes = original_assemble(trusted, submission)
        cell(nb, "ex04_2").source = ""
        return nb, tamper, notes
    monkeypatch.setattr(module, "assemble", assemble_with_empty_answer)
    (statuses, judged, notes, reason), client, requests, managers, honest = _run_fake(monkeypatch)
    assert reason == "" and judged == honest and 7 not in statuses and removed == [managers[0][1]]
    assert all(c is client.nb.cells[i] for c, i in cells) and client.nb.cells[7].source == ""
    assert client.cleanup_kc is True   # the kernel is shut down afterwards although nbclient did not start it
    judge_source = eval(requests[-1][2].split("b.exec(", 1)[1].split(", g)", 1)[0])
    assert "\nMAY_USE = {'04.1': ['for 04']}\n" in judge_source


def test_a_plain_import_is_judged_by_its_modules_not_as_names_taken_from_one():
    """`import x` takes no names out of a module: `import exec` is no builtin (the cell fails on its own) and the
    refusal names the first forbidden module of `import threading, sys`."""
    from course_lib.courseware.grader import refusal
    assert refusal("import exec", "06") is None
    assert refusal("import threading, sys", "06") == "it imports threading"
