"""Exercise checks: ``check("01.1", my_function)`` runs an exercise's cases and prints ✓/✗ per case.

Each exercise of ``solutions/`` and ``exercises/`` has a list of cases in ``course_lib/courseware/exercises/``.
``check`` runs every case against the learner's code and prints a small table: what was tried, what was
expected, what came back, and a hint where it went wrong. A stub that still raises ``NotImplementedError``
shows "not implemented yet". ``check`` never raises (only a ``KeyboardInterrupt``, the learner pressing
Stop, gets through) and never hangs, and it returns a ``CheckResult``; results are also kept in ``RESULTS``.
``run_cases`` does the same work without printing and without touching ``RESULTS``: the grader
(``course check``) uses it to run an exercise's cases again.

How "never hangs" works: each case runs in a daemon thread, and the caller waits for it until it has used
``CASE_SECONDS`` of processor time or sat idle that long (at most ``WALL_FACTOR`` times that on a busy
machine). Nothing the learner writes can catch that, not even ``except BaseException``, because the waiting
happens in another thread. A case that does not finish is reported as ✗ and abandoned; the check then tries
to stop the thread by raising an exception inside it (CPython only). That ends an ordinary endless loop; a
thread that waits in ``time.sleep`` or swallows every exception may keep running in the background until the
kernel restarts, and the row's hint says so. The learner's Stop button (a KeyboardInterrupt) still gets
through. What no thread can time out is one single C call that holds Python's global lock for minutes (a
huge ``10**10**9``, a runaway regular expression): that blocks the whole kernel until it returns.
(A ``SIGALRM`` alarm, the old way, works only in the main thread, is swallowed by ipykernel and can be
caught by the learner's own ``except``.)
"""
from __future__ import annotations

import contextvars
import json
import os
import queue
import sys
import threading
import time
import types
from collections.abc import Callable
from pathlib import Path
from dataclasses import asdict, dataclass, field
from importlib import import_module
from typing import Any

from .printing import columns, wrap

CASE_SECONDS = 5   # a learner's endless loop must not freeze the notebook
WALL_FACTOR = 6    # on a machine so busy that a case gets little CPU, it still ends after 6 × CASE_SECONDS
GIVE_UP_AFTER = 2  # after this many cases that did not finish, the remaining cases are not run
STOP_SECONDS = 0.5  # how long to keep trying to stop an abandoned case's thread
_MISSING = object()


@dataclass
class Case:
    """One thing to try: ``call(candidate)`` must return ``expected``, or raise ``raises``, or pass ``test``.

    ``hint`` is shown under the row when the case fails: say what to look at, specifically for this case.
    """
    label: str
    call: Callable[[Any], Any]
    expected: Any = _MISSING
    raises: type[BaseException] | None = None
    test: Callable[[Any], bool] | None = None
    shows: str = ""   # how to describe the expectation when `test` decides
    hint: str = ""


@dataclass
class Exercise:
    title: str
    cases: list[Case]


@dataclass
class CaseResult:
    label: str
    ok: bool
    expected: str
    got: str
    hint: str = ""

    def as_dict(self) -> dict:
        return asdict(self)   # label, ok, expected, got, hint


@dataclass
class CheckResult:
    exercise: str
    title: str = ""
    cases: list[CaseResult] = field(default_factory=list)
    not_implemented: bool = False
    error: str | None = None   # the check itself could not run (unknown exercise, bad candidate)
    stub: str | None = None    # not implemented: another function it calls (an earlier exercise) is the stub
    advice: str | None = None   # all cases pass, but with a finished version course check will not have

    @property
    def passed(self) -> bool:
        return bool(self.cases) and not self.not_implemented and self.error is None and all(c.ok for c in self.cases)

    def as_dict(self) -> dict:
        """Plain JSON data: exercise, title, passed, not_implemented, error and the case rows."""
        return {"exercise": self.exercise, "title": self.title, "passed": self.passed,
                "not_implemented": self.not_implemented, "stub": self.stub, "error": self.error,
                "cases": [c.as_dict() for c in self.cases]}

    def _ipython_display_(self) -> None:
        """Nothing: check() has printed the table already, so `check(...)` ending a cell shows it once."""

    def __repr__(self) -> str:
        done = sum(c.ok for c in self.cases)
        status = "not implemented" if self.not_implemented else f"{done}/{len(self.cases)} cases passed"
        return f"CheckResult({self.exercise!r}, {status})"


RESULTS: dict[str, CheckResult] = {}


# ---------------------------------------------------------------- running one case, with a time limit
class _Abandoned(BaseException):
    """Raised inside a case's thread that ran out of time, to stop it (it is never caught by the check)."""


@dataclass
class _Stub:
    """A case found `raise NotImplementedError`: the exercise (or a function it calls) is not written yet."""
    where: str   # the qualified name of the function that raised it


def _stub_in(e: NotImplementedError) -> _Stub:
    tb = e.__traceback__
    while tb.tb_next is not None:
        tb = tb.tb_next
    return _Stub(tb.tb_frame.f_code.co_qualname)


def _short(value, limit: int = 40) -> str:
    """A value as Python writes it (True, None, '단가'), on one line, cut to `limit` characters."""
    text = " ".join(repr(value).split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _expectation(case: Case) -> str:
    if case.raises is not None:
        return f"raises {case.raises.__name__}"
    if case.test is not None:
        return case.shows or "passes the test"
    return _short(case.expected)


@dataclass
class Raised:
    """What a case's call raised, as the judge sees it: the class's names with its bases' ("module.qualname",
    most derived first) and the row's text ("raised ValueError: ...")."""
    names: list[str]
    text: str


def raised(e: BaseException) -> Raised:
    try:
        got = " ".join(f"raised {type(e).__name__}: {e}".split())
    except Exception:   # noqa: BLE001 - an exception whose __str__ raises
        got = f"raised {type(e).__name__}"
    return Raised([f"{c.__module__}.{c.__qualname__}" for c in type(e).__mro__],
                  got if len(got) <= 70 else got[:69] + "…")


def _evaluate(case: Case, candidate):
    """Run one case to its row (a CaseResult), or a _Stub. Runs in the case's thread; never raises."""
    try:
        got = case.call(candidate)
    except NotImplementedError as e:
        return _stub_in(e)
    except BaseException as e:   # noqa: BLE001 - a learner's bug is a failed case, not a crash; also SystemExit
        return judge(case, error=raised(e))
    return judge(case, got)


def judge(case: Case, got=None, error: Raised | None = None) -> CaseResult:
    """A case's row from what its call gave: ``got``, or the ``error`` it raised. The notebook's check() and the
    grader (on what the worker observed, ``observe.decode``d) both judge here, so they agree."""
    expected = _expectation(case)
    if error is not None:
        kind = case.raises
        ok = kind is not None and f"{kind.__module__}.{kind.__qualname__}" in error.names
        return CaseResult(case.label, ok, expected, error.text, "" if ok else case.hint)
    try:
        if case.raises is not None:
            ok = False
        elif case.test is not None:
            try:
                ok = bool(case.test(got))
            except Exception:   # noqa: BLE001
                ok = False
        else:
            ok = got == case.expected and type(got) is type(case.expected)
        hint = "" if ok else " ".join(filter(None, [case.hint, _difference(case.expected, got)]))
        return CaseResult(case.label, ok, expected, _short(got), hint)
    except Exception as e:   # noqa: BLE001 - e.g. a learner's object whose __eq__ or __repr__ raises
        return CaseResult(case.label, False, expected, _short(f"a value that cannot be compared: {e}"), case.hint)


def _process_state():
    """What cases change and put back in `finally` (folder, environment, os.replace): an abandoned case may not.
    The environment is copied as os.environ keeps it, undecoded: 0.2 µs, where a decoded copy takes 30."""
    return os.getcwd(), os.environ._data.copy(), os.replace


def _restore(state) -> None:
    folder, raw, replace = state
    environ = {os.environ.decodekey(key): os.environ.decodevalue(value) for key, value in raw.items()}
    try:
        os.chdir(folder)
    except OSError:
        pass
    for key in set(os.environ) - set(environ):
        os.environ.pop(key, None)
    for key, value in environ.items():
        if os.environ.get(key) != value:
            os.environ[key] = value
    os.replace = replace


def _raise_in(thread: threading.Thread) -> bool:
    """Ask CPython to raise _Abandoned inside `thread` at its next Python instruction; False if it cannot."""
    try:
        import ctypes
        set_async_exc = ctypes.pythonapi.PyThreadState_SetAsyncExc
    except (ImportError, AttributeError):   # not CPython
        return False
    top = getattr(sys._current_frames().get(thread.ident), "f_code", None)
    if top and top.co_filename == __file__ and any(n in top.co_name for n in ("_serve", "_untouchable", "<lambda>")):
        return True   # handing its row over (below; a name within mutmut's renamings): a stop would escape; ask again
    changed = set_async_exc(ctypes.c_ulong(thread.ident), ctypes.py_object(_Abandoned))
    if changed > 1:   # should never happen: undo, as the C API documentation says
        set_async_exc(ctypes.c_ulong(thread.ident), None)
    return changed == 1


def _stop(thread: threading.Thread, results: queue.SimpleQueue, seconds: float) -> bool:
    """Try for up to `seconds` to end an abandoned case's thread; True when it has stopped.

    A loop like ``while True: try: ... except BaseException: pass`` catches some of the exceptions, so
    they are raised again and again until one lands outside the ``try``. This runs in the waiting thread
    and before the next case starts, so the thread id cannot have been reused by a case of ours meanwhile.
    """
    for _ in range(max(1, int(seconds / 0.01))):
        if not results.empty() or not thread.is_alive() or not _raise_in(thread):
            break
        time.sleep(0.01)
    return not results.empty() or not thread.is_alive()


def _untouchable(step: Callable):
    """Do `step` until it has run with no stop landing after it (a stop sent just as the case finished)."""
    while True:
        try:
            return step()
        except BaseException:   # noqa: BLE001 - _Abandoned
            pass


_IDLE: list = []   # (thread, inbox, results) of case threads none of whose cases was given up: starting a thread
_END = object()    # costs more than most cases take. _END: the word that ends a thread whose case was given up.


def _serve(inbox: queue.SimpleQueue, results: queue.SimpleQueue) -> None:
    """A case thread: run each case sent to `inbox` and hand its row over, until the word to end."""
    while (job := _untouchable(inbox.get)) is not _END:   # a stop sent as the case finished lands in this get
        context, evaluate, case, candidate = job
        row = None
        try:
            row = context.run(evaluate, case, candidate)
        except BaseException:   # noqa: BLE001 - only _Abandoned gets here: the case was given up already
            pass
        _untouchable(lambda: results.put(row))
    _untouchable(inbox.get)   # one more stop may be on its way: it lands here, and the next get waits again


def _case_thread():
    """(thread, inbox, results): an idle case thread, or a new one; None when no thread can be started."""
    if _IDLE:
        return _IDLE.pop()
    inbox, results = queue.SimpleQueue(), queue.SimpleQueue()
    thread = threading.Thread(target=_serve, args=(inbox, results), daemon=True)
    try:
        thread.start()
    except RuntimeError:   # no thread can be started (too many left running)
        return None
    return thread, inbox, results


def _run_case(case: Case, candidate, seconds: float, evaluate=_evaluate):
    """(row or _Stub, finished, stopped): run the case in a daemon thread and wait at most `seconds` for it;
    ``evaluate(case, candidate)`` gives the row (the grader's worker passes ``observe.outcome`` instead).

    `finished` is False when the case ran out of time; `stopped` is False when its thread is still running.
    A KeyboardInterrupt while waiting (the learner pressed Stop) goes through, after stopping the thread.

    A stop (an exception raised into the thread) lands at the thread's next Python instruction, wherever that
    is, so one sent just as the case finished can land after it. The case's thread therefore hands its row
    over with `SimpleQueue.put` (one C call: nothing lands inside it, unlike in a `threading.Event`'s lock),
    and then waits for its next case or the word to end, catching the last stop sent while it waits.
    """
    state, kept = _process_state(), False
    worker = _case_thread()
    if worker is None:   # run it here, without a limit
        return evaluate(case, candidate), True, True
    thread, inbox, results = worker
    thread.name = f"check: {case.label}"
    start, used, before = time.monotonic(), time.process_time(), _cpu_time(thread) or 0.0
    inbox.put((contextvars.copy_context(), evaluate, case, candidate))   # the case sees the caller's context
    try:
        try:
            # Short waits, so that Stop (SIGINT) is noticed at once even when the signal woke another thread.
            while (row := _handed_over(results, 0.1)) is _WAITING:
                if _out_of_time(thread, time.monotonic() - start, seconds, time.process_time() - used, before):
                    break
        except BaseException:   # KeyboardInterrupt: stop the case too, then let the interrupt through
            _stop(thread, results, STOP_SECONDS)
            _restore(state)
            raise
        if row is not _WAITING and row is not None:
            kept = True
            return row, True, True
        stopped = row is None or _stop(thread, results, STOP_SECONDS)   # None: finished, but a stop took its row
    finally:
        if kept:
            thread.name = "check: idle"
            _IDLE.append(worker)
        else:   # three words, as one may be taken by a get that a stop then interrupts
            for _ in range(3):
                inbox.put(_END)
    _restore(state)
    return gave_up(case, seconds, stopped), False, stopped


def gave_up(case: Case, seconds: float, stopped: bool) -> CaseResult:
    """The row of a case that did not finish in ``seconds`` (``stopped``: its thread has ended)."""
    shown = f"{seconds:g}"
    status = ("so the check stopped it" if stopped else
              "and it may go on running in the background (restart the kernel if the notebook gets slow)")
    hint = (f"your code was still running after {shown} s, {status}: look for a loop that never ends. "
            f"For this case: {case.hint}")
    return CaseResult(case.label, False, _expectation(case),
                      f"gave up after {shown} s: the code did not finish (an endless loop?)", hint)


_WAITING = object()   # no row handed over yet


def _handed_over(results: queue.SimpleQueue, seconds: float):
    """The row the case's thread handed over (None: a stop took it), or _WAITING after ``seconds``."""
    try:
        return results.get(timeout=seconds)
    except queue.Empty:
        return _WAITING


def _out_of_time(thread: threading.Thread, wall: float, seconds: float, process: float = 0.0,
                 before: float = 0.0) -> bool:
    """Give a case up once it has used ``seconds`` of CPU (an endless loop), or sat idle that long (waiting for
    something that will not come), or at the latest after ``WALL_FACTOR`` times that. Counting the case's own
    CPU time, not the clock, keeps a busy machine from failing a correct answer. Idle means the whole process is
    (``process``: its CPU seconds since the case began): waiting on a stand-in server thread is not idle."""
    if wall < seconds:
        return False
    cpu = _cpu_time(thread)
    cpu = None if cpu is None else cpu - before   # `before`: what the thread used before this case
    return cpu is None or cpu >= seconds or max(cpu, process) < 0.1 * wall or wall >= WALL_FACTOR * seconds


def _cpu_time(thread: threading.Thread) -> float | None:
    try:
        return time.clock_gettime(time.pthread_getcpuclockid(thread.ident))
    except (AttributeError, OSError, OverflowError, TypeError):   # no per-thread clock here (Windows, macOS)
        return None


def _difference(expected, got, where: str = "") -> str:
    """Where two long dicts or lists first differ, in nested ones too (``where``: the way in), as tables cut both."""
    if isinstance(expected, dict) and isinstance(got, dict):
        for key in list(expected) + [k for k in got if k not in expected]:
            if key not in got:
                return f"(first difference: {where}key {key!r} is missing)"
            if key not in expected:
                return f"(first difference: {where}unexpected key {key!r})"
            if expected[key] != got[key]:
                return _difference(expected[key], got[key], f"{where}at key {key!r} → ") or (f"(first difference: "
                    f"{where}at key {key!r}, expected {_short(expected[key])}, got {_short(got[key])})")
    if isinstance(expected, list) and isinstance(got, list) and expected != got:
        for i, (a, b) in enumerate(zip(expected, got)):
            if a != b:
                return _difference(a, b, f"{where}at item {i} → ") or (
                    f"(first difference: {where}at item {i}, expected {_short(a, 80)}, got {_short(b, 80)})")
        longer, word = (expected, "missing") if len(expected) > len(got) else (got, "unexpected")
        return (f"({'first difference: ' + where if where else ''}expected {len(expected)} items, got {len(got)}; "
                f"first {word} item: {_short(longer[min(len(expected), len(got))], 80)})")
    return ""


# ---------------------------------------------------------------- the public functions
def exercise(exercise_id: str):
    """The exercise definition (title and cases) for an id like "01.1"."""
    stage = exercise_id.split(".")[0]
    module = import_module(f"course_lib.courseware.exercises.stage{stage}")
    return module.EXERCISES[exercise_id]


def run_cases(exercise_id: str, candidate, cases: list[Case] | None = None) -> CheckResult:
    """Run exercise ``exercise_id``'s cases (or ``cases``) against ``candidate``; print nothing, never raise.

    Each case gets ``CASE_SECONDS``; after ``GIVE_UP_AFTER`` cases that did not finish (or one whose
    thread could not be stopped), the remaining cases are reported as not run. ``RESULTS`` is not changed.
    """
    own = getattr(candidate, "__qualname__", None) if isinstance(candidate, types.FunctionType) else None
    return collect(exercise_id, lambda case: _run_case(case, candidate, CASE_SECONDS), cases, own)


def collect(exercise_id: str, row_of, cases: list[Case] | None = None, own: str | None = None) -> CheckResult:
    """The CheckResult of ``cases`` (the exercise's own by default), each row from ``row_of(case)``, which gives
    (row or _Stub, finished, stopped); ``own`` is the candidate's function name, to tell its own stub apart."""
    result = CheckResult(exercise_id)
    try:
        spec = exercise(exercise_id)
    except (KeyError, ModuleNotFoundError, ValueError, AttributeError):
        where = Path(__file__).resolve().parents[2]   # an old copy of the course on sys.path would explain it
        result.error = f"there is no exercise {exercise_id!r} in the course_lib imported from {where}"
        return result
    except Exception as e:   # noqa: BLE001 - the promise is "never crashes the notebook"
        result.error = f"the check could not run: {type(e).__name__}: {e}"
        return result
    result.title = spec.title
    try:
        gave_up_on, cases = 0, list(spec.cases if cases is None else cases)
        for number, case in enumerate(cases):
            row, finished, stopped = row_of(case)
            if isinstance(row, _Stub):
                result.not_implemented, result.cases = True, []
                if own is not None and not row.where.startswith(f"{own}."):
                    result.stub = None if row.where == own else row.where.split(".")[-1]
                break
            result.cases.append(row)
            gave_up_on += not finished
            if gave_up_on >= GIVE_UP_AFTER or not stopped:
                for rest in cases[number + 1:]:
                    result.cases.append(CaseResult(
                        rest.label, False, _expectation(rest), "not run: an earlier case did not finish",
                        "fix the loop that never ends first (see above), then run this check again"))
                break
    except Exception as e:   # noqa: BLE001
        result.cases = []
        result.error = f"the check could not run: {type(e).__name__}: {e}"
    return result


def check(exercise_id: str, candidate, *, quiet: bool = False) -> CheckResult:
    """Run exercise ``exercise_id``'s cases against ``candidate`` and print a ✓/✗ table. Never raises.

    The result is also kept in ``RESULTS[exercise_id]``. A KeyboardInterrupt (Stop) goes through.
    """
    result = run_cases(exercise_id, candidate)
    if result.passed:   # here course_lib is whole; where answers are graded only what the notebook hands out is
        from .stages import advice
        result.advice = advice(exercise_id, candidate)
    if isinstance(exercise_id, str):
        RESULTS[exercise_id] = result
    if not quiet:
        try:
            _show(result)
        except Exception:   # noqa: BLE001 - e.g. an output stream that cannot take the text
            pass
    return result


def _show(result: CheckResult) -> None:
    """In a notebook an HTML table (count first, failing rows marked) with the text table beside it for
    nbval and plain front ends; in a terminal the text table."""
    from .approval import _in_notebook   # the same test the approval gate uses to choose its buttons
    if not _in_notebook():
        print(render(result))
        return
    from IPython.display import display
    display({"text/plain": render(result), "text/html": render_html(result)}, raw=True)


def _pad(text: str, width: int) -> str:
    return text + " " * (width - columns(text))


def render(result: CheckResult) -> str:
    """The ✓/✗ table: one row per case with what was tried, expected and got; a hint under a failure."""
    head = f"Exercise {result.exercise}" + (f" · {result.title}" if result.title else "")
    if result.not_implemented and result.stub:
        return (f"{head}\n  … not implemented yet: `{result.stub}`, which this check calls, still raises "
                "NotImplementedError: write it (it may belong to an earlier exercise), then run this cell again.")
    if result.not_implemented:
        return (f"{head}\n  … not implemented yet: replace `raise NotImplementedError` with your code, "
                "then run this cell again.")
    if result.error:
        return f"{head}\n  ✗ {result.error}"
    rows = [("", "case", "expected", "got")] + [("✓" if c.ok else "✗", c.label, c.expected, c.got)
                                                for c in result.cases]
    widths = [max(columns(row[i]) for row in rows) for i in range(4)]
    lines = [head]
    for row, case in zip(rows, [None] + result.cases):
        lines.append("  " + "  ".join(_pad(cell, width) for cell, width in zip(row, widths)).rstrip())
        if case is not None and case.hint:
            lines += wrap(f"     hint: {case.hint}")   # at spaces, to fit a notebook's width
    done = sum(c.ok for c in result.cases)
    lines.append(f"  {done}/{len(result.cases)} passed" + (" ✓ well done" if result.passed and not result.advice
                                                             else ""))
    if result.advice:
        lines += wrap(f"  but {result.advice}")
    elif result.passed:
        stage = result.exercise.split(".")[0]
        lines.append(f"  All visible cases pass. `course check {stage}` also runs hidden tests on other data.")
    return "\n".join(lines)


def render_html(result: CheckResult) -> str:
    """The check as HTML: the count first, ✓/✗ kept, failing rows and their hints marked (theme colours)."""
    from html import escape
    if result.not_implemented or result.error:   # no table: the two-line text form says it
        return f"<pre>{escape(render(result))}</pre>"
    head = f"<b>Exercise {escape(result.exercise)}</b>" + (f" · {escape(result.title)}" if result.title else "")
    done, total = sum(c.ok for c in result.cases), len(result.cases)
    colour = "var(--jp-success-color1, #2e7d32)" if result.passed else "var(--jp-error-color1, #c62828)"
    rows = []
    for c in result.cases:
        mark = f"border-left:4px solid {'transparent' if c.ok else 'var(--jp-error-color1, #c62828)'}"
        left = "<td style='text-align:left'>"   # JupyterLab right-aligns table cells by default
        rows.append(f"<tr style='{mark}'><td>{'✓' if c.ok else '✗'}</td>{left}{escape(c.label)}</td>"
                    f"{left}<code>{escape(c.expected)}</code></td>{left}<code>{escape(c.got)}</code></td></tr>")
        if c.hint:
            rows.append(f"<tr style='{mark}'><td></td><td colspan='3' style='text-align:left'>"
                        f"<i>hint: {escape(c.hint)}</i></td></tr>")
    tail = (f"<br>but {escape(result.advice)}" if result.advice else
            f"<br>All visible cases pass. <code>course check {escape(result.exercise.split('.')[0])}</code> also "
            "runs hidden tests on other data." if result.passed else "")
    return (f"<div>{head} — <b style='color:{colour}'>{done}/{total} passed</b>"
            f"{' ✓ well done' if result.passed and not result.advice else ''}<table style='margin-top:4px'>"
            "<tr><th></th><th style='text-align:left'>case</th><th style='text-align:left'>expected</th>"
            f"<th style='text-align:left'>got</th></tr>{''.join(rows)}</table>{tail}</div>")


# ---------------------------------------------------------------- a check run before its solution cell
def _explain_name_error(shell, etype, value, tb, tb_offset=None):
    """IPython's usual traceback, then one line for the common slip: a check cell run before the cell that
    defines the function (``check("01.1", safe_divide)`` with ``safe_divide`` not defined yet)."""
    shell.showtraceback((etype, value, tb), tb_offset=tb_offset)
    name = getattr(value, "name", None)
    history = shell.user_ns.get("In")   # the cells run so far; a learner may have reused the name
    cell = history[-1] if isinstance(history, list) and history else ""
    if name == "check" and "check(" in cell:
        print("\n→ `check` is not imported yet: run the notebook's first code cell (the imports), then this one.")
    elif name and "check(" in cell:
        print(f"\n→ `{name}` is not defined yet: run the cell that defines it first (Shift+Enter), "
              "then run this check again.")


def explain_name_errors(shell=None) -> None:
    """Install ``_explain_name_error`` in an IPython shell (done on import inside a notebook or IPython)."""
    if shell is None and "IPython" in sys.modules:   # never import IPython just to look: that costs time
        shell = sys.modules["IPython"].get_ipython()
    if shell is not None:
        shell.set_custom_exc((NameError,), _explain_name_error)


explain_name_errors()
