"""Hidden cases: what ``course check`` also tries, beyond the cases the learner's ``check()`` shows.

They live beside the solutions, one file per stage, ``solutions/hidden/stageNN.py``: ``HIDDEN`` maps an exercise
("04.1") to a list of ``checks.Case``. Each case's call is a ``Probe`` (``observe.call(...)`` or
``observe.using(driver, ...)``): plain-data inputs, and at most the name of a driver from the public stage module,
so the grader can send the inputs to the worker where the answer runs and keep the expectation to itself. The
sandbox hides ``solutions/``: no submission ever sees these files.

``verify(exercise, candidate)`` is the solution notebooks' hidden-test cell for nbgrader: the same cases, run in
place, raising ``AssertionError`` with the first failing case, so nbgrader and ``course check`` agree.
"""
from __future__ import annotations

import functools
import importlib.util
import re
from pathlib import Path

from .checks import Case, run_cases
from .notebook_marks import ROOT


def module(stage: str, solutions: Path | None = None):
    """``solutions/hidden/stageNN.py`` (the course's, or that of the ``solutions`` folder given), loaded once
    while the file stays as it is (some compute their expectations, which takes a second or two)."""
    path = (Path(solutions or ROOT / "solutions") / "hidden" / f"stage{stage}.py").resolve()
    info = path.stat()
    return _load(stage, path, info.st_mtime_ns, info.st_size)


@functools.cache
def _load(stage: str, path: Path, mtime: int, size: int):
    spec = importlib.util.spec_from_file_location(f"course_hidden_stage{stage}", path)
    loaded = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loaded)
    return loaded


def cases(exercise: str, solutions: Path | None = None) -> list[Case]:
    """The hidden cases of ``exercise``."""
    return list(module(exercise.split(".")[0], solutions).HIDDEN[exercise])


def verify(exercise: str, candidate) -> None:
    """nbgrader's hidden test: the visible cases pass, the answer is the learner's own, and every hidden case
    passes; otherwise AssertionError naming the first failure."""
    public = run_cases(exercise, candidate)
    assert public.passed, f"the check of {exercise} above did not pass: run its cell and fix every ✗ first"
    module = str(getattr(candidate, "__module__", "") or "")
    assert not module.startswith("course_lib"), (f"the answer to {exercise} ({getattr(candidate, '__name__', '?')!r}) "
                                                 "is course_lib's finished version, not your own: the exercise asks "
                                                 "you to write it")
    from .stages import borrowed
    used = borrowed(exercise, candidate)
    assert not used, (f"the answer to {exercise} uses {', '.join(used)}, course_lib's finished version, which is not "
                      "there where course check grades: the exercise asks you to write it")
    result = run_cases(exercise, candidate, cases(exercise))
    failing = [c for c in result.cases if not c.ok]
    assert not result.not_implemented, "a function this answer calls still raises NotImplementedError"
    assert result.error is None, result.error
    assert not failing, (f"{len(failing)} of {len(result.cases)} hidden case(s) failed; the first: {failing[0].label}: "
                         f"expected {failing[0].expected}, got {failing[0].got}{where_it_differs(failing[0])}")


def where_it_differs(row) -> str:
    """' (first difference: ...)' from a failing row's hint, or "": cut short, nested values can look the same."""
    found = re.search(r"\((?:first difference|expected \d+ items).*\)$", row.hint or "")
    return f" {found[0]}" if found else ""
