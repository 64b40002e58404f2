"""Which modules are each stage's finished version, and what an answer may use of them.

An answer of stage NN may not use the finished modules of its stage or a later one (``finished``): where
``course check`` grades it, they are cut to what the exercise notebook hands out (``worker_lib``). ``borrowed``
finds the finished versions an answer reaches all the same, for ``check()`` and nbgrader's hidden test, which
run where ``course_lib`` is whole.
"""
from __future__ import annotations

import functools
import json
import sys
import types

from .notebook_marks import ROOT, grade_id

STAGE_MODULES = {"01": ("course_lib.workspace", "course_lib.tools"), "02": ("course_lib.registry",),
                 "03": ("course_lib.describe",), "04": ("course_lib.parsing",), "05": ("course_lib.dispatch",),
                 "06": ("course_lib.agent", "course_lib.models.base"),
                 "07": ("course_lib.models.scripted", "course_lib.models.native", "course_lib.models"),
                 "08": ("course_lib.models.anthropic", "course_lib.models.openai", "course_lib.models.remote",
                        "course_lib.models.catalog", "course_lib.models.providers", "course_lib.courseware.standin"),
                 "09": ("course_lib.safety", "course_lib.control", "course_lib.courseware.injection_lab",
                        "course_lib.courseware.approval"),
                 "10": ("course_lib.memory", "course_lib.memory_store", "course_lib.courseware.memory_lab"),
                 "11": ("course_lib.retrieval", "course_lib.planning", "course_lib.orchestration",
                        "course_lib.structured", "course_lib.courseware.patterns_lab"),
                 "12": ("course_lib.eval_tasks", "course_lib.evaluation", "course_lib.courseware.eval_lab"),
                 "13": ("course_lib.mcp_bridge", "course_lib.mcp_client", "course_lib.courseware.mcp_serve")}


def finished(stage: str) -> set[str]:
    """The modules an answer of ``stage`` may not use: its own stage's finished version and every later one's."""
    return {m for s, modules in STAGE_MODULES.items() if s >= stage for m in modules}


def withheld(stage: str) -> dict[str, frozenset[str]]:
    """Finished names the notebook hands out that are an exercise's own answer (its stage module's ``WITHHELD``):
    graded in a worker of its own where they refuse to work."""
    from importlib import import_module
    module = import_module(f"course_lib.courseware.exercises.stage{stage}")
    return {ex: frozenset(names) for ex, names in getattr(module, "WITHHELD", {}).items()}


def may_use(stage: str) -> dict[str, list[str]]:
    """Finished functions an exercise hands to the learner on purpose (its stage module's ``MAY_USE``)."""
    from importlib import import_module
    try:
        module = import_module(f"course_lib.courseware.exercises.stage{stage}")
    except ImportError:
        return {}
    return {ex: sorted(names) for ex, names in getattr(module, "MAY_USE", {}).items()}


def _kept(exercise_id: str) -> dict[str, frozenset[str]] | None:
    """Each finished module's names that are there where ``exercise_id`` is graded: the worker's own cut
    (``worker_lib``), started from the course's exercise notebook's set-up cells, less the exercise's own answer
    (``WITHHELD``, a stand-in that refuses there). None with no exercise notebook to read (an installed copy)."""
    stage = exercise_id.split(".")[0]
    return _cut_names(stage, withheld(stage).get(exercise_id, frozenset()))


@functools.cache
def _cut_names(stage: str, out: frozenset[str]) -> dict[str, frozenset[str]] | None:
    from . import worker_lib
    paths = sorted((ROOT / "exercises").glob(f"{stage}_*.ipynb"))
    if not paths:
        return None
    setup = ["".join(c["source"]) for path in paths for c in json.loads(path.read_text(encoding="utf-8"))["cells"]
             if c["cell_type"] == "code" and not grade_id(c)]
    start = worker_lib.roots(stage, setup, finished(stage), may_use(stage))
    return {"course_lib." + path.removesuffix(".py").removesuffix("/__init__").replace("/", "."): frozenset(names) - out
            for path, names in worker_lib.available(stage, finished(stage), start, out).items()}


def _names(code) -> set[str]:
    """The global names a code object and the code nested in it (functions, comprehensions, classes) use."""
    names, todo = set(), [code]
    while todo:
        c = todo.pop()
        names |= set(c.co_names)
        todo += [k for k in c.co_consts if hasattr(k, "co_names")]
    return names


def borrowed(exercise_id: str, candidate) -> list[str]:
    """The finished versions an answer reaches that are not there where it is graded, as 'name (module)': names
    its code uses (and the code of the notebook's own functions it calls) bound to a function or class of a
    finished module of its stage or a later one (``finished``) that the worker's cut leaves out (``_kept``), a
    finished module whose left-out names it uses, or such a module imported inside its body. check() runs where
    course_lib is whole, so it says so instead of a plain ✓, and nbgrader's hidden test fails it."""
    kept = _kept(exercise_id)
    if kept is None:
        return []
    modules = finished(exercise_id.split(".")[0])

    def cut_from(module: str, used: set[str]) -> bool:   # does the code use a name of `module` the cut left out?
        real = sys.modules.get(module)
        return real is not None and any(hasattr(real, n) and n not in kept.get(module, ()) for n in used)

    found, seen, todo = set(), set(), [candidate]
    while todo:
        function = todo.pop()
        code, scope = getattr(function, "__code__", None), getattr(function, "__globals__", None)
        if code is None or not isinstance(scope, dict) or id(function) in seen:
            continue
        seen.add(id(function))
        used = _names(code)
        found |= {f"{name} (imported inside {function.__name__})" for name in used   # `from course_lib.x import y`
                  if name == "course_lib" or name in modules and cut_from(name, used)}
        for name in sorted(used & set(scope)):
            value = scope[name]
            if isinstance(value, types.ModuleType):
                if value.__name__ in modules and cut_from(value.__name__, used):
                    found.add(f"{name} ({value.__name__})")
            elif isinstance(value, (types.FunctionType, type)) and value.__module__ in modules:
                if value.__name__ not in kept.get(value.__module__, ()):   # whatever name it goes by here
                    found.add(f"{name} ({value.__module__})")
            elif isinstance(value, types.FunctionType) and value.__globals__ is scope:   # the notebook's own helper
                todo.append(value)
    return sorted(found)


def advice(exercise_id: str, candidate) -> str | None:
    """check()'s sentence for an answer that passed every visible case with a finished version, or None. Advice
    only: it never raises (a missing exercise notebook, say, leaves it unsaid)."""
    try:
        used = borrowed(exercise_id, candidate)
    except Exception:   # noqa: BLE001
        return None
    return (f"your answer uses {', '.join(used)}, course_lib's finished version: `course check "
            f"{exercise_id.split('.')[0]}` grades your own code, where it is not there. Write it yourself."
            if used else None)
