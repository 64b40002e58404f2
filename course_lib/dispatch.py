"""Stage 05 — the dispatcher: check the model's call, run the tool, and turn every failure into an observation.

Adds: ``dispatch(tools, name, args) -> Observation``. The call is checked against the signature first (the tool
exists, ``args`` is an object, no unexpected or missing arguments, each value of its annotated type: a ``bool`` is not
an ``int``); a failed check or a tool's exception becomes an error observation naming the culprit and what to do.
``ToolRun`` records a call with its observation; ``call_key`` tells repeated calls apart (stage 06 uses both).

Leaves out: timeouts and approval (later stages). Only ``KeyboardInterrupt`` escapes: a person can always stop the run.
"""
from __future__ import annotations

import inspect
import json
import os
import types
import typing
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache

from .tools import ToolError

MAX_RESULT_CHARS = 20_000


@dataclass(slots=True)
class Observation:
    content: str
    is_error: bool = False
    error: BaseException | None = field(default=None, repr=False, compare=False)   # kept for tests


@dataclass(slots=True)
class ToolRun:   # a call as the agent's trace records it (stage 06)
    tool: str
    args: dict
    observation: Observation


@dataclass(frozen=True)
class _Spec:
    params: tuple[str, ...]
    names: frozenset[str]
    required: frozenset[str]
    hints: dict
    takes_any: bool   # the function has **kwargs


def _read_spec(func: Callable) -> _Spec:
    params = inspect.signature(func).parameters
    try:   # a callable object (a class instance with __call__) keeps its parameters' hints on __call__
        hints = typing.get_type_hints(func if inspect.isroutine(func) else type(func).__call__)
    except Exception:   # an annotation that cannot be resolved is simply not checked
        hints = {}
    named = [p for p in params.values() if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD)]
    return _Spec(params=tuple(p.name for p in named), names=frozenset(p.name for p in named),
                 required=frozenset(p.name for p in named if p.default is p.empty),
                 hints={n: h for n, h in hints.items() if n != "return"},
                 takes_any=any(p.kind is p.VAR_KEYWORD for p in params.values()))


_cached_spec = lru_cache(maxsize=512)(_read_spec)   # each tool read once, unless it cannot be hashed


def _matches(value, hint) -> bool:
    """Does a JSON value fit the annotation? Unknown kinds of annotation are given the benefit of the doubt."""
    if type(value) is hint or hint is typing.Any:   # the common case first: the loop calls this every step
        return True
    if hint is float:   # an int is a fine float
        return type(value) is int
    if hint in (int, str, bool, dict, list, type(None)):   # exact types, already compared: a bool is not an int
        return False
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return any(_matches(value, a) for a in args)
    if origin is typing.Literal:   # compare types too: True == 1 in Python, but not here
        return any(value == a and type(value) is type(a) for a in args)
    if origin is list:
        return type(value) is list and (not args or all(_matches(v, args[0]) for v in value))
    if origin is dict:
        return type(value) is dict
    return isinstance(value, hint) if isinstance(hint, type) else True


def json_name(value) -> str:   # the JSON name of a value's type, as error messages say it: "boolean", "array"
    return {bool: "boolean", int: "integer", float: "number", str: "string", list: "array",
            dict: "object", type(None): "null"}.get(type(value), type(value).__name__)


def to_json(value) -> str:   # JSON as the model reads it best: Korean as is, anything else as its text
    return json.dumps(value, ensure_ascii=False, default=str)


def _error(text: str, exc: BaseException | None = None) -> Observation:
    return Observation(content=f"Error: {_relative(text)}", is_error=True, error=exc)


def _message(e: BaseException) -> str:   # even from an exception whose __str__ fails or gives no text
    try:
        return str(e)
    except Exception:
        return "(its message could not be shown)"


def _said(e: BaseException) -> str:   # an exception as text, with its type: "ValueError: bad value"
    return f"{type(e).__name__}: {_message(e)}"


def _relative(text: str) -> str:
    """Error text names paths relative to the workspace: its absolute path (home folder, user name) stays here."""
    try:
        root = os.getcwd()
    except OSError:   # the working folder was deleted
        return text
    if len(root) > 1:   # not "/": that would rewrite every path
        text = text.replace(root + os.sep, "").replace(root, ".")
    home = os.path.expanduser("~")
    return text.replace(home, "~") if len(home) > 1 else text


def _check_call(tools: Mapping[str, Callable], name, args) -> Observation | None:
    if not isinstance(name, str) or name not in tools:
        return _error(f"unknown tool '{str(name)[:80]}'. Available tools: {', '.join(tools) or '(none)'}.")
    if not isinstance(args, dict):
        return _error(f"the arguments for {name} must be a JSON object, not {json_name(args)}.")
    spec = (_cached_spec if type(tools[name]).__hash__ is not None else _read_spec)(tools[name])
    if not (args.keys() <= spec.names or spec.takes_any):   # set operations: cheap on every step
        return _error(f"{name} got unexpected argument(s) {', '.join(repr(a) for a in args if a not in spec.names)}. "
                      f"It takes: {', '.join(spec.params) or 'no arguments'}.")
    if not spec.required <= args.keys():
        missing = [p for p in spec.params if p in spec.required and p not in args]
        return _error(f"{name} is missing required argument(s) {', '.join(map(repr, missing))}.")
    for arg, value in args.items():
        if (hint := spec.hints.get(arg)) is not None and not _matches(value, hint):
            wanted = hint.__name__ if isinstance(hint, type) else str(hint).replace("typing.", "")
            got = "null" if value is None else f"{json_name(value)} {to_json(value):.60}"   # not "null null"
            return _error(f"argument '{arg}' of {name} must be {wanted}, got {got}.")
    return None


def as_text(result, limit: int | None = None) -> str:
    """A tool's result as the model reads it: None is a sentence, not "null"; past ``limit`` characters, cut."""
    text = "(the tool returned nothing)" if result is None else result if isinstance(result, str) else to_json(result)
    if limit is not None and len(text) > limit:
        text = text[:limit] + f"\n[... cut: {len(text) - limit} more characters not shown]"
    return text


def dispatch(tools: Mapping[str, Callable], name: str, args: dict) -> Observation:
    """Run ``tools[name](**args)`` after checking the call; every failure becomes an error observation."""
    try:
        problem = _check_call(tools, name, args)
    except KeyboardInterrupt:
        raise
    except BaseException as e:   # e.g. a signature inspect cannot read: the tool never ran
        return _error(f"the call to {name} could not be checked ({_said(e)}).", e)
    if problem:
        return problem
    try:
        result = tools[name](**args)
    except ToolError as e:
        return _error(f"{name}: {_message(e)}", e)
    except KeyboardInterrupt:   # the one way out: a person can always stop the run
        raise
    except BaseException as e:   # sys.exit(), a cancelled task or a GeneratorExit must not end the agent
        return _error(f"{name} raised {_said(e)}", e)
    try:
        return Observation(content=as_text(result, MAX_RESULT_CHARS))
    except KeyboardInterrupt:
        raise
    except BaseException as e:   # e.g. a circular structure that JSON cannot hold
        return _error(f"{name} returned a {type(result).__name__} that cannot be turned into text ({_said(e)}).", e)


def call_key(calls: list) -> object:
    """What tells one step's calls from another's: equal only for the same calls with the same arguments."""
    try:
        return json.dumps(calls, sort_keys=True, default=repr)
    except (ValueError, TypeError, RecursionError):   # arguments no JSON can hold: never equal to anything
        return object()
