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
import uuid
from pathlib import Path

import nbformat
import pytest

from course_lib.courseware import sandbox
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
    grades, problems = grade_all(list(paths.values()), STAGE, timeout=30, jobs=2)
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
    g = grade(save(nb, tmp_path, how.replace(" ", "_")), STAGE, timeout=30)
    ex = by_exercise(g)
    assert not ex["04.1"].passed and ex["04.1"].detail.startswith("tampering:"), ex["04.1"]
    assert ex["04.2"].passed   # the rest is graded as usual (04.3 builds on 04.1's answer)


def test_an_edited_check_cell_is_restored(tmp_path):
    nb = load(SOLUTION)
    cell(nb, "ex04_1").source = "def validate_action(data):\n    return None\n"   # wrong: accepts everything
    cell(nb, "ex04_1_check").source = 'print("✓ all cases passed")'
    g = grade(save(nb, tmp_path, "edited"), STAGE, timeout=30)
    ex = by_exercise(g)["04.1"]
    assert not ex.passed and "cases passed in check()" in ex.detail and ex.failing
    assert any("ex04_1_check" in note and "originals were run" in note for note in g.notes)


def test_cells_a_student_adds_are_not_run(tmp_path):
    nb = load(EXERCISE)
    nb.cells.append(nbformat.v4.new_code_cell("validate_action = lambda data: None"))
    g = grade(save(nb, tmp_path, "added"), STAGE, timeout=30)
    assert by_exercise(g)["04.1"].detail == "not implemented yet"
    assert any("you added were not run" in note for note in g.notes)


def test_a_reexported_finished_version_is_not_a_solution(tmp_path):
    nb = load(EXERCISE)
    cell(nb, "ex04_3").source = "from course_lib.parsing import parse_reply as parse_action\n"
    g = grade(save(nb, tmp_path, "reexport"), STAGE, timeout=30)
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
                                 timeout=30, jobs=1)
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
    g = grade(save(nb, tmp_path, "network"), STAGE, timeout=30)
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
    g = grade(str(SOLUTION), STAGE, solutions_dir=outside, timeout=30)
    assert g.passed


@pytest.mark.parametrize("level", ["unshare", "none"])
def test_a_weaker_sandbox_says_so_and_unshare_still_cuts_the_network(tmp_path, level):
    if level == "unshare" and not sandbox._runs(["unshare", "-rn", "--"]):
        pytest.skip("unshare -rn does not work on this machine")
    listener = local_listener()
    nb = load(EXERCISE)
    answer(nb, "ex04_1", f"import socket\nsocket.socket().connect_ex(('127.0.0.1', {listener.getsockname()[1]}))")
    g = grade(save(nb, tmp_path, level), STAGE, timeout=30, level=level)
    assert g.isolation == sandbox.DESCRIPTIONS[level] and ("NOT isolated" in g.isolation)
    if level == "unshare":
        with pytest.raises(socket.timeout):
            listener.accept()
    listener.close()


def test_the_scratch_folder_is_deleted_afterwards(tmp_path, monkeypatch):
    import tempfile

    import course_lib.courseware.grader as grader
    made, original = [], tempfile.mkdtemp
    monkeypatch.setattr(grader.tempfile, "mkdtemp", lambda **kw: made.append(original(**kw)) or made[-1])
    nb = load(EXERCISE)
    answer(nb, "ex04_1", "open('left-behind.txt', 'w').write('x')")
    grade(save(nb, tmp_path, "scratch"), STAGE, timeout=30)
    assert len(made) == 1 and Path(made[0]).name.startswith("course-grade-") and not Path(made[0]).exists()


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
    g = grade(save(nb, tmp_path, "reach"), STAGE, timeout=30)
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
        g = grade(str(path), STAGE, timeout=30)
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
    assert _trusted_shape(reply(honest), STAGE, candidates) == honest
    forged = {"04.1": {"defined": True, "module": "__main__", "result": {"cases": rows[:1]}}}
    for bad in (forged, [1], {"04.1": "yes"}, {}):
        assert _trusted_shape(reply(bad), STAGE, candidates) is None


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
    grades, problems = grade_all([honest, save(copier, mallory, "04")], STAGE, timeout=30, jobs=2)
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
    "a subclass": "from course_lib.memory import MemoryStore\nclass answer(MemoryStore):\n    pass",
    "a method's body": ("from course_lib.safety import handoff_note\nclass answer:\n    def go(self, s):\n"
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

