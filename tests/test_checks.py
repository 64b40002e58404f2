"""The exercise check engine: a ✓/✗ table, never a crash, never a hang (also inside a real Jupyter kernel)."""
import _thread
import json
import os
import signal
import threading
import time
from importlib import import_module
from pathlib import Path

import pytest

from course_lib.courseware import checks
from course_lib.courseware.checks import Case, CheckResult, Exercise, check, render, run_cases

ROOT = Path(__file__).resolve().parent.parent

HANG_GUARD = 60   # seconds: a hang guard only, never a speed requirement
STAGES = sorted(p.stem[-2:] for p in (Path(__file__).resolve().parent.parent / "course_lib" / "courseware"
                                             / "exercises").glob("stage[0-9][0-9].py"))


@pytest.fixture
def toy_exercise(monkeypatch):
    """Register a throw-away exercise "00.1" so these tests do not depend on the course's own cases."""
    spec = Exercise("double a number", [
        Case("2 -> 4", lambda f: f(2), expected=4, hint="multiply by two"),
        Case("text is refused", lambda f: f("x"), raises=TypeError, hint="raise TypeError for text"),
        Case("result is an int", lambda f: f(5), test=lambda got: type(got) is int, shows="an int",
             hint="return an int"),
    ])
    monkeypatch.setattr(checks, "exercise", lambda exercise_id: {"00.1": spec}[exercise_id])
    return spec


def double(x):
    if not isinstance(x, int):
        raise TypeError("numbers only")
    return 2 * x


def forever(x):
    while True:
        pass


RELEASE = threading.Event()   # set when a test is over, so its stubborn loops do not burn CPU for the rest


def stubborn(x):
    """An endless loop that swallows every exception, the time limit's included (if it were one)."""
    while not RELEASE.is_set():
        try:
            sum(range(100))
        except BaseException:   # noqa: BLE001 - on purpose
            pass


def test_a_correct_solution_passes_and_prints_a_table_and_the_hidden_tests_note(toy_exercise, capsys):
    result = check("00.1", double)
    out = capsys.readouterr().out
    assert result.passed and isinstance(result, CheckResult) and checks.RESULTS["00.1"] is result
    assert out.splitlines()[0] == "Exercise 00.1 · double a number"
    assert "✓  2 -> 4" in out and "3/3 passed ✓ well done" in out and "✗" not in out
    assert out.rstrip("\n").splitlines()[-1] == \
        "  All visible cases pass. `course check 00` also runs hidden tests on other data."


def test_a_wrong_solution_shows_expected_got_and_the_hint_and_no_note(toy_exercise, capsys):
    result = check("00.1", lambda x: x * 3)
    out = capsys.readouterr().out
    assert not result.passed
    assert [c.ok for c in result.cases] == [False, False, True]
    assert "✗  2 -> 4" in out and "hint: multiply by two" in out
    assert result.cases[0].expected == "4" and result.cases[0].got == "6"
    assert result.cases[1].got == "'xxx'" and "0/3" not in out and "1/3 passed" in out
    assert "All visible cases pass" not in out and "course check" not in out


def test_a_stub_says_not_implemented_yet_not_a_traceback(toy_exercise, capsys):
    def stub(x):
        raise NotImplementedError()
    result = check("00.1", stub)
    out = capsys.readouterr().out
    assert result.not_implemented and not result.passed and result.cases == []
    assert "not implemented yet" in out and "Traceback" not in out


def test_a_stub_in_an_earlier_exercise_is_named_not_blamed_on_this_one(toy_exercise, capsys):
    def arg_docs(doc):   # 03.3 not written yet
        raise NotImplementedError()

    def description_problems(tools):   # 03.4 written, and it calls 03.3
        def inner():
            return arg_docs("")
        return inner()

    def own_stub(x):
        def helper():
            raise NotImplementedError()
        return helper()

    class Model:   # a class whose method is the stub: the exercise itself is not written
        def __init__(self, x):
            raise NotImplementedError()

    result = check("00.1", description_problems)
    out = capsys.readouterr().out
    assert result.not_implemented and result.stub.endswith("arg_docs") and "<locals>" not in result.stub
    assert "not implemented yet: `arg_docs`, which this check calls, still raises NotImplementedError" in out
    assert run_cases("00.1", description_problems).as_dict()["stub"] == result.stub
    for candidate in (own_stub, Model):
        result = check("00.1", candidate, quiet=True)
        assert result.not_implemented and result.stub is None
    check("00.1", own_stub)
    assert "replace `raise NotImplementedError` with your code" in capsys.readouterr().out


def test_exceptions_in_the_learners_code_are_failed_cases(toy_exercise, capsys):
    result = check("00.1", lambda x: 1 / 0)
    assert not result.passed
    assert result.cases[0].got == "raised ZeroDivisionError: division by zero"
    assert "raised ZeroDivisionError" in capsys.readouterr().out


def test_system_exit_and_a_keyboard_interrupt_raised_by_the_code_itself_are_failed_cases(toy_exercise):
    def leaves(x):
        raise SystemExit(3)

    def interrupts(x):
        raise KeyboardInterrupt   # raised by the code, not by a person pressing Stop
    assert check("00.1", leaves, quiet=True).cases[0].got == "raised SystemExit: 3"
    assert check("00.1", interrupts, quiet=True).cases[0].got.startswith("raised KeyboardInterrupt")


def _case_threads() -> list:
    return [t for t in threading.enumerate() if t.name.startswith("check: ")]


def test_an_endless_loop_gives_up_says_so_is_stopped_and_the_rest_is_not_run(toy_exercise, monkeypatch):
    monkeypatch.setattr(checks, "CASE_SECONDS", 1)
    before = set(_case_threads())
    start = time.monotonic()
    result = check("00.1", forever, quiet=True)
    assert time.monotonic() - start < HANG_GUARD
    assert not result.passed
    gave_up, not_run = result.cases[:2], result.cases[2:]
    assert [c.got for c in gave_up] == ["gave up after 1 s: the code did not finish (an endless loop?)"] * 2
    assert gave_up[0].hint.endswith("For this case: multiply by two")
    assert gave_up[1].hint.endswith("For this case: raise TypeError for text")
    assert all("a loop that never ends" in c.hint and "the check stopped it" in c.hint for c in gave_up)
    assert [c.got for c in not_run] == ["not run: an earlier case did not finish"]
    assert not_run[0].hint and not not_run[0].ok
    deadline = time.monotonic() + HANG_GUARD
    while set(_case_threads()) - before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not set(_case_threads()) - before, "the endless loops were stopped"


def test_except_base_exception_cannot_catch_the_time_limit(toy_exercise, monkeypatch):
    monkeypatch.setattr(checks, "CASE_SECONDS", 1)
    start = time.monotonic()
    try:
        result = check("00.1", stubborn, quiet=True)
    finally:
        RELEASE.set()
    assert time.monotonic() - start < HANG_GUARD
    assert result.cases[0].got.startswith("gave up after 1 s") and not result.passed
    assert "a loop that never ends" in result.cases[0].hint   # stopped or still running: both are true to life


def test_code_that_cannot_be_stopped_is_left_behind_and_the_hint_says_so(toy_exercise, monkeypatch):
    monkeypatch.setattr(checks, "CASE_SECONDS", 1)
    release = threading.Event()
    result = check("00.1", lambda x: release.wait(), quiet=True)   # blocked in C: no exception reaches it
    release.set()
    assert result.cases[0].got.startswith("gave up after 1 s")
    assert "restart the kernel" in result.cases[0].hint
    assert [c.got for c in result.cases[1:]] == ["not run: an earlier case did not finish"] * 2


def test_the_time_limit_works_when_check_is_called_from_a_worker_thread(toy_exercise, monkeypatch):
    monkeypatch.setattr(checks, "CASE_SECONDS", 1)
    box = []
    worker = threading.Thread(target=lambda: box.append(checks.run_cases("00.1", forever)), daemon=True)
    worker.start()
    worker.join(HANG_GUARD)
    assert box and box[0].cases[0].got.startswith("gave up after 1 s") and not box[0].passed


def test_a_keyboard_interrupt_while_waiting_gets_through(toy_exercise, monkeypatch):
    monkeypatch.setattr(checks, "CASE_SECONDS", HANG_GUARD)
    # Pressing Stop sends SIGINT to the main thread, whose handler raises KeyboardInterrupt (a kernel's does).
    # Install that handler here: a test that ran earlier in this worker process (an event loop, a browser
    # driver) may have left another one, and interrupt_main does nothing while SIGINT is ignored.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    looping = threading.Event()

    def endless(x):
        looping.set()
        while True:
            pass

    def press_stop():   # once the case is running and the check is waiting for it, not at a fixed moment
        looping.wait(HANG_GUARD)
        _thread.interrupt_main()
    threading.Thread(target=press_stop, daemon=True).start()
    start = time.monotonic()
    try:
        with pytest.raises(KeyboardInterrupt):
            check("00.1", endless)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert time.monotonic() - start < HANG_GUARD - 10


def test_folder_and_environment_are_put_back_after_a_case_that_did_not_finish(monkeypatch, tmp_path):
    def wander(f):
        os.chdir(tmp_path)
        os.environ["COURSE_CHECK_TEST"] = "changed"
        return f()
    spec = Exercise("wander", [Case("wanders off", wander, expected=1, hint="h")])
    monkeypatch.setattr(checks, "exercise", lambda exercise_id: spec)
    monkeypatch.setattr(checks, "CASE_SECONDS", 1)
    monkeypatch.delenv("COURSE_CHECK_TEST", raising=False)
    before = os.getcwd()
    release = threading.Event()
    result = run_cases("00.3", release.wait)
    release.set()
    assert result.cases[0].got.startswith("gave up") and os.getcwd() == before
    assert "COURSE_CHECK_TEST" not in os.environ


def test_run_cases_prints_nothing_keeps_results_and_gives_plain_data(toy_exercise, capsys):
    checks.RESULTS.pop("00.1", None)
    result = run_cases("00.1", lambda x: x * 3)
    assert capsys.readouterr().out == "" and "00.1" not in checks.RESULTS
    data = json.loads(json.dumps(result.as_dict(), ensure_ascii=False))
    assert set(data) == {"exercise", "title", "passed", "not_implemented", "stub", "error", "cases"}
    assert data["exercise"] == "00.1" and data["title"] == "double a number" and data["passed"] is False
    assert data["cases"][0] == {"label": "2 -> 4", "ok": False, "expected": "4", "got": "6",
                                "hint": "multiply by two"}
    assert run_cases("00.1", double).as_dict()["passed"] is True


def test_an_unknown_exercise_or_a_wrong_kind_of_candidate_never_crashes(capsys):
    result = check("42.9", double)
    assert result.error.startswith("there is no exercise '42.9' in the course_lib imported from ")
    assert result.error.endswith(str(ROOT)) and not result.passed
    assert "✗ there is no exercise" in capsys.readouterr().out
    assert run_cases("01.1", None).passed is False   # every case fails: None is not callable


def test_equal_values_of_another_type_do_not_pass(toy_exercise):
    result = check("00.1", lambda x: 4.0 if x == 2 else double(x), quiet=True)
    assert not result.cases[0].ok        # 4.0 == 4 in Python, but the exercise asked for an int


def test_a_value_that_cannot_be_compared_is_a_failed_case(toy_exercise):
    class Weird:
        def __eq__(self, other):
            raise RuntimeError("no comparing")

        def __repr__(self):
            raise RuntimeError("no showing")
    result = check("00.1", lambda x: Weird(), quiet=True)
    assert not result.passed and not result.cases[0].ok and result.cases[0].hint


def test_render_and_repr_are_stable():
    result = CheckResult("00.1", "t", [checks.CaseResult("a", True, "1", "1")])
    assert repr(result) == "CheckResult('00.1', 1/1 cases passed)"
    assert render(result).splitlines()[-2:] == [
        "  1/1 passed ✓ well done",
        "  All visible cases pass. `course check 00` also runs hidden tests on other data."]


def test_korean_text_keeps_the_columns_lined_up():
    result = CheckResult("01.2", "t", [checks.CaseResult("메모.txt 읽기", False, "'단가'", "'x'", "h"),
                                       checks.CaseResult("ascii", True, "1", "1")])
    header, first, _hint, second = render(result).splitlines()[1:5]
    column = checks._width(header[:header.index("expected")])
    assert checks._width(first[:first.index("'단가'")]) == column == checks._width(second[:second.index("1")])


def test_long_dicts_and_lists_that_differ_say_where(monkeypatch, capsys):
    schema = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"],
              "additionalProperties": False}
    spec = Exercise("schema", [Case("whole schema", lambda f: f(), expected=schema, hint="h"),
                               Case("list", lambda f: [1, 2, 3], expected=[1, 2, 4], hint="h"),
                               Case("one missing", lambda f: ["lookup: say when to use search_docs instead"],
                                    expected=["lookup: say when to use search_docs instead",
                                              "search_docs: say when to use lookup instead"], hint="h"),
                               Case("one more", lambda f: [1, 2, "extra"], expected=[1, 2], hint="h")])
    monkeypatch.setattr(checks, "exercise", lambda exercise_id: spec)
    result = check("00.2", lambda: {k: v for k, v in schema.items() if k != "additionalProperties"})
    assert "key 'additionalProperties' is missing" in result.cases[0].hint
    assert "at item 2, expected 4, got 3" in result.cases[1].hint
    # the table cuts both lists to the same 40 characters: the hint names the item that is not there
    assert result.cases[2].expected[:30] == result.cases[2].got[:30]
    assert result.cases[2].hint.endswith("(expected 2 items, got 1; first missing item: "
                                         "'search_docs: say when to use lookup instead')")
    assert result.cases[3].hint.endswith("(expected 2 items, got 3; first unexpected item: 'extra')")
    assert "first difference" in capsys.readouterr().out


@pytest.mark.parametrize("stage", STAGES)
def test_every_case_of_every_exercise_has_its_own_hint(stage):
    for exercise_id, spec in import_module(f"course_lib.courseware.exercises.stage{stage}").EXERCISES.items():
        for case in spec.cases:
            assert isinstance(case.hint, str) and len(case.hint.strip()) >= 15, \
                f"{exercise_id} case {case.label!r} needs a hint that says what to look at"


# ---------------------------------------------------------------- inside a real Jupyter kernel
KERNEL_CELLS = [
    """import json, os, threading, time
from course_lib.courseware import checks
from course_lib.courseware.checks import check
checks.CASE_SECONDS = 1
start_folder = os.getcwd()""",
    """def spin(text):
    while True:
        pass
r1 = check("04.2", spin)""",
    """def stubborn(text):
    while True:
        try:
            sum(range(100))
        except BaseException:
            pass
r2 = check("04.2", stubborn)""",
    """def sleeper(text):
    time.sleep(10**6)
r3 = check("04.2", sleeper)""",
    """box = []
worker = threading.Thread(target=lambda: box.append(checks.run_cases("04.2", spin)))
worker.start()
worker.join(60)
r4 = box[0]""",
    """def stuck_reader(path, start=1, end=None):
    while True:
        pass
r5 = check("01.2", stuck_reader)
assert os.getcwd() == start_folder, os.getcwd()""",
    """print("NEXT CELL RAN " + json.dumps([r.as_dict() for r in (r1, r2, r3, r4, r5)]))""",
]


def test_time_limits_hold_in_a_jupyter_kernel_and_the_next_cell_runs(tmp_path):
    nbformat = pytest.importorskip("nbformat")
    nbclient = pytest.importorskip("nbclient")
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in KERNEL_CELLS])
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    client = nbclient.NotebookClient(nb, timeout=HANG_GUARD, kernel_name="python3",
                                     resources={"metadata": {"path": str(tmp_path)}})
    client.execute()   # raises CellExecutionError or CellTimeoutError on an error or a hang
    outputs = [cell.outputs for cell in nb.cells]
    assert not [o for cell in outputs for o in cell if o.get("name") == "stderr"], "no 'Exception ignored' noise"
    def shown(outputs):   # printed text, or the text form beside check()'s HTML table
        return "".join(o.get("text", "") or o.get("data", {}).get("text/plain", "") for o in outputs)
    for cell in outputs[1:4] + [outputs[5]]:
        text = shown(cell)
        assert "✗" in text and "gave up after 1 s: the code did not finish (an endless loop?)" in text
    last = shown(outputs[-1])
    assert last.startswith("NEXT CELL RAN ")
    results = json.loads(last.removeprefix("NEXT CELL RAN "))
    for result in results:
        assert result["passed"] is False and result["cases"][0]["got"].startswith("gave up after 1 s")
        assert all(not c["ok"] and c["hint"] for c in result["cases"])
    assert "the check stopped it" in results[0]["cases"][0]["hint"]     # a plain endless loop
    assert "restart the kernel" in results[2]["cases"][0]["hint"]       # time.sleep cannot be interrupted


def test_stop_in_a_jupyter_kernel_interrupts_a_check_and_the_kernel_carries_on():
    manager = pytest.importorskip("jupyter_client.manager")
    km, kc = manager.start_new_kernel(kernel_name="python3")
    try:
        kc.execute_interactive("from course_lib.courseware import checks\nchecks.CASE_SECONDS = 600", timeout=HANG_GUARD)
        msg_id = kc.execute("def spin(text):\n    while True:\n        pass\nchecks.check('04.2', spin)")
        time.sleep(2)
        km.interrupt_kernel()   # what the Stop button does
        errors = []
        deadline = time.monotonic() + HANG_GUARD
        while time.monotonic() < deadline:
            msg = kc.get_iopub_msg(timeout=HANG_GUARD)
            if msg["parent_header"].get("msg_id") != msg_id:
                continue
            if msg["msg_type"] == "error":
                errors.append(msg["content"]["ename"])
            if msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
                break
        assert errors == ["KeyboardInterrupt"]
        printed = []
        reply = kc.execute_interactive("print('still here')", timeout=HANG_GUARD,
                                       output_hook=lambda m: printed.append(m["content"].get("text", "")))
        assert reply["content"]["status"] == "ok" and "still here\n" in printed
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


@pytest.mark.parametrize("wall, cpu, gives_up", [
    (4.9, 4.9, False),    # within the limit
    (5.0, 5.0, True),     # an endless loop: five seconds of processor time
    (5.0, 0.2, True),     # idle: waiting for something that will not come (sleep, input, a lock)
    (12.0, 2.5, False),   # a busy machine: the case gets a fifth of a core and is still working
    (29.9, 4.9, False),
    (30.0, 4.9, True),    # at the latest after WALL_FACTOR × CASE_SECONDS
    (5.0, None, True),    # no per-thread clock on this platform: the wall clock decides
])
def test_a_case_is_given_up_by_its_own_processor_time_not_the_clock(monkeypatch, wall, cpu, gives_up):
    monkeypatch.setattr(checks, "_cpu_time", lambda thread: cpu)
    assert checks._out_of_time(threading.current_thread(), wall, 5) is gives_up


def test_the_case_thread_processor_clock_is_read_where_the_platform_has_one():
    if not hasattr(time, "pthread_getcpuclockid"):
        pytest.skip("no per-thread processor clock on this platform")
    spent = checks._cpu_time(threading.current_thread())
    sum(range(2_000_000))
    assert checks._cpu_time(threading.current_thread()) > spent


def test_a_check_run_before_its_solution_cell_says_what_to_do(capsys):
    shell_module = pytest.importorskip("IPython.core.interactiveshell")
    shell = shell_module.InteractiveShell()
    checks.explain_name_errors(shell)
    shell.run_cell('check("01.1", safe_divide)', store_history=True)   # the imports cell was not run either
    assert "`check` is not imported yet: run the notebook's first code cell" in capsys.readouterr().out
    shell.run_cell("from course_lib.courseware.checks import check", store_history=True)
    result = shell.run_cell('check("01.1", safe_divide)', store_history=True)
    out = capsys.readouterr().out
    assert isinstance(result.error_in_exec, NameError)   # still an error: the cell did not run
    assert "NameError" in out and "`safe_divide` is not defined yet: run the cell that defines it first" in out
    shell.run_cell("print(undefined_elsewhere)", store_history=True)   # outside a check cell: no advice
    assert "is not defined yet" not in capsys.readouterr().out


def test_the_html_table_puts_the_count_first_and_marks_failing_rows(toy_exercise):
    result = run_cases("00.1", lambda x: 4)   # wrong only for text, which it should refuse
    shown = checks.render_html(result)
    assert shown.index("2/3 passed") < shown.index("<table")
    rows = shown.split("<tr")[2:]
    failing = [row for row in rows if "<td>✗</td>" in row]
    assert all("text-align:left" in row for row in rows)
    assert len(failing) == 1 and all("var(--jp-error-color1" in row for row in failing)
    assert all("transparent" in row for row in rows if "<td>✓</td>" in row)
    assert "hint: raise TypeError for text" in shown and "well done" not in shown
    passed = checks.render_html(run_cases("00.1", lambda x: x * 2 if isinstance(x, int) else (_ for _ in ()).throw(TypeError())))
    assert "3/3 passed</b> ✓ well done" in passed and "course check 00" in passed


def test_in_a_notebook_check_shows_html_beside_the_text_table(toy_exercise, monkeypatch):
    shown = []

    class ZMQInteractiveShell:   # what a Jupyter kernel's shell is called
        pass
    import IPython
    import IPython.display
    monkeypatch.setattr(IPython, "get_ipython", lambda: ZMQInteractiveShell())
    monkeypatch.setattr(IPython.display, "display", lambda data, raw: shown.append(data))
    check("00.1", lambda x: 4)
    assert shown and shown[0]["text/plain"].startswith("Exercise 00.1") and "<table" in shown[0]["text/html"]
