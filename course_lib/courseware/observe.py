"""What a case observed, as plain data: the wire between the sandboxed worker and the grader that judges.

``course check`` runs a submission's answers in a worker (a sandboxed kernel) and judges them somewhere else: in
the grader's own process, where no submission code ever ran. The worker is sent what to try, never what is
expected: a public case by its place in the exercise's table, a hidden case as a ``Probe`` (a driver's name and
plain-data arguments). It answers with one *outcome* per case, as JSON: the value that came back, encoded by
``encode``; or that the call raised (the exception's class names and message); or that it was a stub, or that it
ran out of time. The grader decodes each value (``decode``) and judges it with the case's own expectation, the
same ``checks.judge`` that ``check()`` uses in the notebook, so the two agree on honest work.

Whatever the worker says is only a claim about what an answer returned: a worker that lies can only claim
values, and to claim the right value for a hidden case's inputs, which it sees for the first time, it has to
compute it. Values travel as data: ``None``, booleans, numbers, strings, lists, dicts, tuples, sets, bytes and
records (dataclass instances). A record of a course_lib class comes back as that class; anything else (a
function, an object of the learner's own class) comes back as an ``Opaque`` stand-in that equals nothing.
"""
from __future__ import annotations

import base64
import copy
import dataclasses
import math
import pickle
from importlib import import_module
from pathlib import Path, PurePath
from typing import Any

MAX_NODES = 20_000   # values in one outcome; a bigger answer is sent as an Opaque "too large"
MAX_DEPTH = 40
MAX_TEXT = 200_000   # characters of one string
DRIVERS = "course_lib.courseware.exercises.stage"   # where a probe's driver lives: the public stage modules


class Opaque:
    """A value the wire cannot carry (or a record of a class the grader does not know): its type and repr."""

    def __init__(self, kind: str, text: str, fields: dict | None = None):
        self.kind, self.text, self.fields = kind, text, fields

    def __getattr__(self, name):
        fields = self.__dict__.get("fields") or {}
        if name in fields:
            return fields[name]
        raise AttributeError(f"{self.__dict__.get('kind')} object has no attribute {name!r} the grader can see")

    def __eq__(self, other):
        return False

    __hash__ = object.__hash__

    def __repr__(self):
        return self.text


class _TooLarge(Exception):
    pass


def encode(value: Any) -> Any:
    """``value`` as JSON-able data (tagged where JSON has no such type); never raises."""
    budget = [MAX_NODES]
    try:
        return _encode(value, budget, 0)
    except _TooLarge:
        return {"$opaque": type(value).__qualname__, "repr": f"<a {type(value).__qualname__} too large to send>"}
    except Exception as e:   # noqa: BLE001 - a learner's __repr__ or property that raises
        return {"$opaque": "?", "repr": f"<a value that could not be read: {type(e).__name__}>"}


def _encode(value, budget, depth):
    budget[0] -= 1
    if budget[0] < 0 or depth > MAX_DEPTH:
        raise _TooLarge
    kind = type(value)
    if value is None or kind in (bool, int, str):
        if kind is str and len(value) > MAX_TEXT:
            raise _TooLarge
        return value
    if kind is float:
        return value if math.isfinite(value) else {"$float": repr(value)}
    if kind is list:
        return [_encode(v, budget, depth + 1) for v in value]
    if kind is dict:
        pairs = [[_encode(k, budget, depth + 1), _encode(v, budget, depth + 1)] for k, v in value.items()]
        if all(type(k) is str and not k.startswith("$") for k, _ in pairs):
            return {k: v for k, v in pairs}
        return {"$dict": pairs}
    if kind in (tuple, set, frozenset):
        items = sorted(value, key=repr) if kind is not tuple else value
        return {f"${kind.__name__}": [_encode(v, budget, depth + 1) for v in items]}
    if isinstance(value, PurePath) and kind.__module__ == "pathlib":
        return {"$path": str(value)}
    if kind is bytes:
        return {"$bytes": base64.b64encode(value).decode()}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {f.name: _encode(getattr(value, f.name), budget, depth + 1) for f in dataclasses.fields(value)}
        return {"$record": f"{kind.__module__}:{kind.__qualname__}", "fields": fields, "repr": _repr(value)}
    return {"$opaque": kind.__qualname__, "repr": _repr(value)}


def _repr(value) -> str:
    try:
        text = repr(value)
    except Exception:   # noqa: BLE001
        text = f"<a {type(value).__qualname__}>"
    return text[:300]


def decode(data: Any, depth: int = 0) -> Any:
    """The value ``encode`` sent, rebuilt in the grader; what is not well formed raises ValueError."""
    if depth > MAX_DEPTH + 2:
        raise ValueError("nested too deeply")
    if data is None or type(data) in (bool, int, str):
        return data
    if type(data) is float:
        return data
    if type(data) is list:
        return [decode(v, depth + 1) for v in data]
    if type(data) is not dict:
        raise ValueError(f"not a value: {type(data).__name__}")
    tags = [k for k in data if k.startswith("$")]
    if not tags:
        return {k: decode(v, depth + 1) for k, v in data.items()}
    tag, body = tags[0], data[tags[0]]
    if tag == "$float" and body in ("nan", "inf", "-inf"):
        return float(body)
    if tag == "$dict" and type(body) is list and all(type(p) is list and len(p) == 2 for p in body):
        return {decode(k, depth + 1): decode(v, depth + 1) for k, v in body}   # an unhashable key: TypeError
    if tag in ("$tuple", "$set", "$frozenset") and type(body) is list:
        items = [decode(v, depth + 1) for v in body]
        return tuple(items) if tag == "$tuple" else set(items) if tag == "$set" else frozenset(items)
    if tag == "$path" and type(body) is str:
        return Path(body)
    if tag == "$bytes" and type(body) is str:
        return base64.b64decode(body, validate=True)
    if tag == "$record" and type(body) is str and type(data.get("fields")) is dict:
        fields = {str(k): decode(v, depth + 1) for k, v in data["fields"].items()}
        return _record(body, fields, str(data.get("repr", ""))[:300])
    if tag == "$opaque" and type(body) is str:
        return Opaque(body[:100], str(data.get("repr", ""))[:300])
    raise ValueError(f"an unknown or malformed tag {tag[:40]!r}")


def _record(where: str, fields: dict, text: str):
    """A course_lib record rebuilt as its own class (the grader's copy); any other class as an Opaque."""
    module, _, name = where.partition(":")
    if module.startswith("course_lib.") and name.isidentifier():
        try:
            cls = getattr(import_module(module), name)
        except (ImportError, AttributeError):
            cls = None
        if isinstance(cls, type) and dataclasses.is_dataclass(cls) and \
                set(fields) == {f.name for f in dataclasses.fields(cls)}:
            record = object.__new__(cls)
            for key, value in fields.items():
                object.__setattr__(record, key, value)
            return record
    return Opaque(name[:100], text, fields)


# -- what the worker is asked: probes -----------------------------------------------------------------------------
class Probe:
    """A hidden case's call, as data: ``driver(candidate, *args, **kwargs)`` (``driver`` a function of a public
    stage module), or ``candidate(*args, **kwargs)`` without one. Called with a candidate, it runs in place, so
    the same case works in ``verify`` (nbgrader's hidden-test cells) and in the worker."""

    def __init__(self, driver, args: tuple, kwargs: dict):
        if driver is not None and not (str(getattr(driver, "__module__", "")).startswith(DRIVERS)
                                       and getattr(import_module(driver.__module__), driver.__name__, None) is driver):
            raise ValueError(f"a probe's driver must be a function of a public stage module, not {driver!r}")
        self.driver, self.args, self.kwargs = driver, args, kwargs
        if decode(encode(args)) != args or decode(encode(kwargs)) != kwargs:
            raise ValueError(f"a probe's arguments must be plain data: {args!r}, {kwargs!r}")

    def __call__(self, candidate):   # on copies: an answer that changes its arguments spoils no later run
        try:   # pickle copies plain data 3-6 times faster than copy.deepcopy (a long chat, every probe)
            args, kwargs = pickle.loads(pickle.dumps((self.args, self.kwargs), pickle.HIGHEST_PROTOCOL))
        except Exception:   # noqa: BLE001 - a record whose class pickle cannot find by its name here
            args, kwargs = copy.deepcopy((self.args, self.kwargs))
        return self.driver(candidate, *args, **kwargs) if self.driver else candidate(*args, **kwargs)

    def spec(self) -> dict:
        driver = f"{self.driver.__module__}:{self.driver.__name__}" if self.driver else None
        return {"driver": driver, "args": encode(self.args), "kwargs": encode(self.kwargs)}

    def __repr__(self):
        name = self.driver.__name__ if self.driver else "candidate"
        return f"{name}({', '.join([repr(a) for a in self.args] + [f'{k}={v!r}' for k, v in self.kwargs.items()])})"


def call(*args, **kwargs) -> Probe:
    """A probe that calls the candidate with these plain-data arguments."""
    return Probe(None, args, kwargs)


def using(driver, *args, **kwargs) -> Probe:
    """A probe that runs ``driver(candidate, *args, **kwargs)``, a public stage module's function."""
    return Probe(driver, args, kwargs)


def from_spec(spec: dict):
    """The call a probe's spec stands for, in the worker: a public stage module's driver, or the candidate."""
    driver = spec.get("driver")
    args, kwargs = decode(spec.get("args", {"$tuple": []})), decode(spec.get("kwargs", {}))
    if driver is None:
        return lambda candidate: candidate(*args, **kwargs)
    module, _, name = str(driver).partition(":")
    if not (module.startswith(DRIVERS) and module[len(DRIVERS):].isdigit() and name.isidentifier()):
        raise ValueError(f"not a driver: {driver!r}")
    function = getattr(import_module(module), name)
    return lambda candidate: function(candidate, *args, **kwargs)


# -- the worker's side: run what it is asked, report outcomes -----------------------------------------------------
def outcome(case, candidate) -> dict:
    """One case's call on ``candidate``, as an outcome: value, raised, or stub. Never raises."""
    from .checks import _stub_in, raised
    try:
        got = case.call(candidate)
    except NotImplementedError as e:
        return {"kind": "stub", "where": _stub_in(e).where}
    except BaseException as e:   # noqa: BLE001 - also SystemExit: a failed case, not a dead worker
        error = raised(e)
        return {"kind": "raised", "names": error.names, "text": error.text}
    return {"kind": "value", "value": encode(got)}


def observe_all(namespace: dict, plan: dict) -> dict:
    """In the worker: per exercise of ``plan`` ({exercise: {"name", "probes"}}), whether the answer is defined, the
    outcomes of its public cases, then of its probes (hidden cases' specs); none once a public case ran out of time."""
    from . import checks
    found = {}
    for exercise, asked in plan.items():
        if asked["name"] not in namespace:
            found[exercise] = {"defined": False}
            continue
        candidate = namespace[asked["name"]]
        public = _outcomes(list(checks.exercise(exercise).cases), candidate)
        probes = asked["probes"] if "timeout" not in {o["kind"] for o in public} else []   # it fails already
        hidden = [checks.Case(f"hidden {i + 1}", _call_of(spec)) for i, spec in enumerate(probes)]
        found[exercise] = {"defined": True, "qualname": str(getattr(candidate, "__qualname__", "") or ""),
                           "module": str(getattr(candidate, "__module__", "") or ""),
                           "public": public, "hidden": _outcomes(hidden, candidate)}
    return found


def _call_of(spec):
    try:
        return from_spec(spec)
    except Exception as e:   # noqa: BLE001 - a driver this worker does not have
        message = f"the worker cannot run this case ({type(e).__name__}: {e})"

        def missing(candidate):
            raise LookupError(message)
        return missing


def _outcomes(cases, candidate) -> list[dict]:
    from . import checks
    rows, timeouts = [], 0
    for case in cases:
        row, finished, stopped = checks._run_case(case, candidate, checks.CASE_SECONDS, evaluate=outcome)
        rows.append(row if finished else {"kind": "timeout", "stopped": stopped})
        timeouts += not finished
        if rows[-1].get("kind") == "stub" or timeouts >= checks.GIVE_UP_AFTER or not stopped:
            break
    return rows


# -- the grader's side: judge the outcomes -------------------------------------------------------------------------
def row_of(case, data, seconds: float):
    """(row or _Stub, finished, stopped) for ``checks.collect``: ``data``, one outcome the worker sent, judged by
    the case's own expectation. A malformed outcome is a failed row that says so."""
    from . import checks
    kind = data.get("kind") if type(data) is dict else None
    try:
        if kind == "value":
            return checks.judge(case, decode(data["value"])), True, True
        if kind == "raised" and type(data.get("names")) is list and all(type(n) is str for n in data["names"]):
            return checks.judge(case, error=checks.Raised(data["names"][:50], str(data.get("text", ""))[:70])), \
                True, True
        if kind == "stub" and type(data.get("where")) is str:
            return checks._Stub(data["where"][:200]), True, True
        if kind == "timeout":
            stopped = data.get("stopped") is not False
            return checks.gave_up(case, seconds, stopped), False, stopped
    except (ValueError, TypeError, KeyError, RecursionError, base64.binascii.Error):
        pass
    return checks.CaseResult(case.label, False, checks._expectation(case), "no outcome the grader could read",
                             case.hint), True, True


def judged(exercise: str, cases, outcomes, own: str | None):
    """The CheckResult of ``cases`` from the worker's ``outcomes`` (one per case, in order; fewer when it gave
    up), judged here."""
    from . import checks
    missing = {"kind": None}
    rows = iter(outcomes if type(outcomes) is list else [])
    return checks.collect(exercise, lambda case: row_of(case, next(rows, missing), checks.CASE_SECONDS),
                          cases, own)
