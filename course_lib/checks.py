"""Exercise checks: ``check("01.1", my_function)`` runs an exercise's cases and prints ✓/✗ per case.

Each exercise of ``solutions/`` and ``exercises/`` has a list of cases in ``course_lib/exercises/``.
``check`` runs every case against the learner's code and prints a small table: what was tried, what was
expected, what came back, and a hint where it went wrong. A stub that still raises ``NotImplementedError``
shows "not implemented yet". It never raises and never hangs (each case gets a few seconds), and it
returns a ``CheckResult`` that tests and the grader (``course check``) read. Results are also kept in
``RESULTS`` for the grader.
"""
from __future__ import annotations

import json
import signal
import threading
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import import_module
from typing import Any

CASE_SECONDS = 5   # a learner's infinite loop must not freeze the notebook
_MISSING = object()


@dataclass
class Case:
    """One thing to try: ``call(candidate)`` must return ``expected``, or raise ``raises``, or pass ``test``."""
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


@dataclass
class CheckResult:
    exercise: str
    title: str = ""
    cases: list[CaseResult] = field(default_factory=list)
    not_implemented: bool = False
    error: str | None = None   # the check itself could not run (unknown exercise, bad candidate)

    @property
    def passed(self) -> bool:
        return bool(self.cases) and not self.not_implemented and self.error is None and all(c.ok for c in self.cases)

    def _ipython_display_(self) -> None:
        """Nothing: check() has printed the table already, so `check(...)` ending a cell shows it once."""

    def __repr__(self) -> str:
        done = sum(c.ok for c in self.cases)
        status = "not implemented" if self.not_implemented else f"{done}/{len(self.cases)} cases passed"
        return f"CheckResult({self.exercise!r}, {status})"


RESULTS: dict[str, CheckResult] = {}


class _TooSlow(Exception):
    pass


def _with_time_limit(func, seconds: int):
    """Run func(); on the main thread of a Unix process, give up after `seconds`."""
    if not hasattr(signal, "SIGALRM") or threading.current_thread() is not threading.main_thread():
        return func()

    def alarm(signum, frame):
        raise _TooSlow()

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(seconds)
    try:
        return func()
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _short(value, limit: int = 40) -> str:
    """A value as Python writes it (True, None, '단가'), on one line, cut to `limit` characters."""
    text = " ".join(repr(value).split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _width(text: str) -> int:
    """Columns on screen: Korean and other wide characters take two."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def _pad(text: str, width: int) -> str:
    return text + " " * (width - _width(text))


def _run_case(case: Case, candidate) -> CaseResult:
    if case.raises is not None:
        expected = f"raises {case.raises.__name__}"
    elif case.test is not None:
        expected = case.shows or "passes the test"
    else:
        expected = _short(case.expected)
    try:
        got = _with_time_limit(lambda: case.call(candidate), CASE_SECONDS)
    except NotImplementedError:
        raise
    except _TooSlow:
        return CaseResult(case.label, False, expected, f"no answer after {CASE_SECONDS} s", case.hint)
    except Exception as e:   # noqa: BLE001 - a learner's bug is a failed case, not a crash
        ok = case.raises is not None and isinstance(e, case.raises)
        got = " ".join(f"raised {type(e).__name__}: {e}".split())
        got = got if len(got) <= 70 else got[:69] + "…"
        return CaseResult(case.label, ok, expected, got, "" if ok else case.hint)
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


def _difference(expected, got) -> str:
    """Where two long dicts or lists first differ, since the table cuts both short."""
    if isinstance(expected, dict) and isinstance(got, dict):
        for key in list(expected) + [k for k in got if k not in expected]:
            if key not in got:
                return f"(first difference: key {key!r} is missing)"
            if key not in expected:
                return f"(first difference: unexpected key {key!r})"
            if expected[key] != got[key]:
                return f"(first difference: at key {key!r}, expected {_short(expected[key])}, got {_short(got[key])})"
    if isinstance(expected, list) and isinstance(got, list) and expected != got:
        for i, (a, b) in enumerate(zip(expected, got)):
            if a != b:
                return f"(first difference: at item {i}, expected {_short(a)}, got {_short(b)})"
        return f"(expected {len(expected)} items, got {len(got)})"
    return ""


def exercise(exercise_id: str):
    """The exercise definition (title and cases) for an id like "01.1"."""
    stage = exercise_id.split(".")[0]
    module = import_module(f"course_lib.exercises.stage{stage}")
    return module.EXERCISES[exercise_id]


def check(exercise_id: str, candidate, *, quiet: bool = False) -> CheckResult:
    """Run exercise ``exercise_id``'s cases against ``candidate`` and print a ✓/✗ table. Never raises."""
    result = CheckResult(exercise_id)
    try:
        spec = exercise(exercise_id)
        result.title = spec.title
        for case in spec.cases:
            result.cases.append(_run_case(case, candidate))
    except NotImplementedError:
        result.not_implemented, result.cases = True, []
    except (KeyError, ModuleNotFoundError, ValueError):
        result.error = f"there is no exercise {exercise_id!r}"
    except Exception as e:   # noqa: BLE001 - the promise is "never crashes the notebook"
        result.error = f"the check could not run: {type(e).__name__}: {e}"
    RESULTS[exercise_id] = result
    if not quiet:
        print(render(result))
    return result


def render(result: CheckResult) -> str:
    """The ✓/✗ table: one row per case with what was tried, expected and got; a hint under a failure."""
    head = f"Exercise {result.exercise}" + (f" · {result.title}" if result.title else "")
    if result.not_implemented:
        return (f"{head}\n  … not implemented yet: replace `raise NotImplementedError` with your code, "
                "then run this cell again.")
    if result.error:
        return f"{head}\n  ✗ {result.error}"
    rows = [("", "case", "expected", "got")] + [("✓" if c.ok else "✗", c.label, c.expected, c.got)
                                                for c in result.cases]
    widths = [max(_width(row[i]) for row in rows) for i in range(4)]
    lines = [head]
    for row, case in zip(rows, [None] + result.cases):
        lines.append("  " + "  ".join(_pad(cell, width) for cell, width in zip(row, widths)).rstrip())
        if case is not None and case.hint:
            lines.append(f"     hint: {case.hint}")
    done = sum(c.ok for c in result.cases)
    lines.append(f"  {done}/{len(result.cases)} passed" + (" ✓ well done" if result.passed else ""))
    return "\n".join(lines)


def summary() -> str:
    """All results of this kernel as JSON, for the grader."""
    return json.dumps({k: {"passed": r.passed, "not_implemented": r.not_implemented,
                           "passed_cases": sum(c.ok for c in r.cases), "cases": len(r.cases), "error": r.error}
                       for k, r in RESULTS.items()})
