"""The visible cases catch plausible wrong solutions, and the reference solutions pass them.

Each ``ref_*`` function (and ``make_*`` with its defaults) is the reference solution of
``solutions/NN_*_exercises.ipynb``, copied: the notebook is the source, and ``tests/test_exercises.py`` grades
the notebook itself. Some take keyword-only switches; each switch turns on one plausible mistake, the kind a
learner makes, that the exercise text or the hidden tests rule out. Other wrong solutions are written out.
A wrong solution must fail the visible check (``run_cases``, the check without printing), and the case
named next to it must be one of the rows that catch it, so every requirement shows up in the table.
"""
from __future__ import annotations

import ast
import inspect
import json
import math
import operator
import os
import re
import tempfile
import types
import typing
from pathlib import Path
from typing import Any, Literal

import pytest

from course_lib import default_tools
from course_lib.courseware.checks import exercise, run_cases
from course_lib.describe import build_system_prompt
from course_lib.dispatch import dispatch
from course_lib.models import ModelError, Reply, ScriptedModel, ToolCall
from course_lib.parsing import ParsedReply, parse_reply
from course_lib.tools import ToolError

tools = default_tools()


def act(tool, **args):
    return json.dumps({"tool": tool, "args": args}, ensure_ascii=False)


def failed(exercise_id: str, candidate) -> list[str]:
    """The labels of the cases that `candidate` fails; the check itself must have run."""
    result = run_cases(exercise_id, candidate)
    assert result.error is None and not result.not_implemented, result
    return [c.label for c in result.cases if not c.ok]


# ================================================================ stage 01 (given code copied from the notebook)
BASE_OPERATORS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul}
SIGNS = {ast.UAdd: operator.pos, ast.USub: operator.neg}


def make_calculator(binary_ops):
    def evaluate(node):
        if isinstance(node, ast.Constant) and type(node.value) in (int, float):
            return node.value
        if isinstance(node, ast.UnaryOp) and type(node.op) in SIGNS:
            return SIGNS[type(node.op)](evaluate(node.operand))
        if isinstance(node, ast.BinOp) and type(node.op) in binary_ops:
            return binary_ops[type(node.op)](evaluate(node.left), evaluate(node.right))
        what = type(node.op if isinstance(node, (ast.BinOp, ast.UnaryOp)) else node).__name__
        raise ToolError(f"{what} is not allowed; use numbers, parentheses and this calculator's operators")

    def calculator(expression: str) -> str:
        if not isinstance(expression, str) or not 0 < len(expression) <= 200:
            raise ToolError('send the expression as text of 1 to 200 characters, for example "7 // 2"')
        try:
            tree = ast.parse(expression, mode="eval")
        except (SyntaxError, ValueError, RecursionError):
            raise ToolError("not a valid arithmetic expression") from None
        value = evaluate(tree.body)
        return repr(value) if isinstance(value, float) else str(value)

    return calculator


def ref_floordiv(a, b):
    if b == 0:
        raise ToolError("// by zero is undefined: the divisor after // is zero; change the divisor")
    result = a // b
    if isinstance(result, float) and not math.isfinite(result):
        raise ToolError("the result of // is too large for a floating-point number; use smaller numbers")
    return result


def ref_mod(a, b):
    if b == 0:
        raise ToolError("% by zero is undefined: the divisor after % is zero; change the divisor")
    return a % b


def calc(floordiv=ref_floordiv, mod=ref_mod):
    return make_calculator({**BASE_OPERATORS, ast.FloorDiv: floordiv, ast.Mod: mod})


def mod_copied_message(a, b):
    if b == 0:
        raise ToolError("// by zero is undefined: the divisor after // is zero; change the divisor")
    return a % b


def floordiv_only_plus_inf(a, b):
    if b == 0:
        raise ToolError("// by zero is undefined; change the divisor")
    result = a // b
    if result == math.inf:
        raise ToolError("the result of // is too large")
    return result


def floordiv_by_floor(a, b):
    if b == 0:
        raise ToolError("// by zero is undefined; change the divisor")
    quotient = a / b
    if not math.isfinite(quotient):
        raise ToolError("the result of // is too large")
    return math.floor(quotient)


def mod_truncating(a, b):
    if b == 0:
        raise ToolError("% by zero is undefined; change the divisor")
    return a - b * int(a / b)


def ref_read_lines(path: str, start: int = 1, end: int | None = None) -> str:
    if not isinstance(path, str) or not path.strip() or "\0" in path:
        raise ToolError('path must be a file name such as "notes.txt" (not empty, no NUL byte)')
    if type(start) is not int or not (end is None or type(end) is int):
        raise ToolError("start and end must be whole numbers, for example 1 and 20")
    if start < 1 or (end is not None and end < start):
        raise ToolError(f"lines count from 1, and start must not come after end (got {start} to {end})")
    root = Path.cwd().resolve()
    target = (root / path).resolve()
    if not target.is_relative_to(root):
        raise ToolError(f"'{path}' is outside the workspace; use a path inside the current folder")
    if not target.is_file():
        raise ToolError(f"there is no file '{path}' in the workspace; check the name")
    lines = target.read_text(encoding="utf-8", errors="replace").splitlines()
    if start > len(lines):
        raise ToolError(f"'{path}' has {len(lines)} lines; ask for a start of at most {len(lines)}")
    stop = len(lines) if end is None else min(end, len(lines))
    return "\n".join(f"{number}: {lines[number - 1]}" for number in range(start, stop + 1))


def read_lines_variant(*, int_check=lambda v: type(v) is int, check_end=True, nul=True, absolute_ok=True,
                       where=lambda root, path: (root / path).resolve(), exists=lambda p: p.is_file(),
                       past_end_is_empty=False):
    """The reference with one piece swapped out."""
    def read_lines(path, start=1, end=None):
        if not isinstance(path, str) or not path.strip() or (nul and "\0" in path):
            raise ToolError("path must be a file name")
        if not int_check(start) or (check_end and not (end is None or int_check(end))):
            raise ToolError("start and end must be whole numbers")
        if start < 1 or (end is not None and end < start):
            raise ToolError("lines count from 1, and start must not come after end")
        if not absolute_ok and Path(path).is_absolute():
            raise ToolError("use a relative path")
        root = Path.cwd().resolve()
        target = where(root, path)
        if not target.is_relative_to(root):
            raise ToolError(f"'{path}' is outside the workspace")
        if not exists(target):
            raise ToolError(f"there is no file '{path}'")
        lines = target.read_text(encoding="utf-8").splitlines()
        if start > len(lines) and not past_end_is_empty:
            raise ToolError(f"'{path}' has {len(lines)} lines")
        stop = len(lines) if end is None else min(end, len(lines))
        return "\n".join(f"{n}: {lines[n - 1]}" for n in range(start, stop + 1))
    return read_lines


UNITS = {
    "m": ("length", 1.0), "km": ("length", 1000.0), "mi": ("length", 1609.344),
    "g": ("mass", 0.001), "kg": ("mass", 1.0), "lb": ("mass", 0.45359237),
}


def ref_convert_units(value: float, from_unit: str, to_unit: str, *, finite=True) -> str:
    if type(value) not in (int, float) or (finite and not math.isfinite(value)):
        raise ToolError("value must be a finite number such as 5 or 2.5, not text or true/false")
    names = []
    for unit in (from_unit, to_unit):
        name = unit.strip().lower() if isinstance(unit, str) else None
        if name not in UNITS:
            raise ToolError(f"unknown unit {unit!r}; known units: {', '.join(sorted(UNITS))}")
        names.append(name)
    (kind, size), (to_kind, to_size) = UNITS[names[0]], UNITS[names[1]]
    if kind != to_kind:
        raise ToolError(f"cannot convert {kind} ({names[0]}) into {to_kind} ({names[1]}); "
                        "use two units of the same kind")
    return f"{value} {names[0]} = {round(value * size / to_size, 3)} {names[1]}"


# ================================================================ stage 02
NAME_PATTERN = re.compile(r"[A-Za-z_][A-Za-z0-9_-]{0,63}")
RESERVED = {"finish"}


def ref_register(registry: dict, func, name=None, *, callable_first=True, name_must_be_text=True):
    def check_callable():
        if not callable(func):
            raise TypeError(f"a tool must be callable, got {type(func).__name__}")
    if callable_first:
        check_callable()
    if name is None:
        name = getattr(func, "__name__", "")
    if (name_must_be_text and not isinstance(name, str)) or not NAME_PATTERN.fullmatch(name):
        raise ValueError(f"{name!r} is not a valid tool name")
    if name in RESERVED:
        raise ValueError(f"'{name}' is reserved: the model uses it to end the run")
    if not callable_first:
        check_callable()
    if name in registry:
        raise ValueError(f"a tool named '{name}' is already registered; pick another name")
    registry[name] = func
    return func


def ref_call_tool(registry, name, args) -> str:
    if not isinstance(name, str):
        raise ToolError(f"the tool name must be text, got {type(name).__name__}")
    if name not in registry:
        available = ", ".join(sorted(registry)) or "(none)"
        raise ToolError(f"unknown tool '{name}'. Available tools: {available}")
    if not isinstance(args, dict):
        raise ToolError(f"args must be an object of argument names and values, got {type(args).__name__}")
    return str(registry[name](**args))


def call_tool_turning_errors_into_text(registry, name, args) -> str:
    if not isinstance(name, str) or name not in registry:
        raise ToolError(f"unknown tool '{name}'. Available tools: {', '.join(sorted(registry))}")
    if not isinstance(args, dict):
        raise ToolError("args must be an object")
    try:
        return str(registry[name](**args))
    except ToolError as e:
        return f"Error: {e}"


def call_tool_forgiving(registry, name, args) -> str:
    if isinstance(name, str):
        name = name.strip().lower()
    return ref_call_tool(registry, name, args)


def ref_make_tool_decorator(registry: dict):
    def tool(func=None, *, name=None):
        if func is None:
            return lambda f: tool(f, name=name)
        if not callable(func):
            raise TypeError(f"@tool got {func!r}, which is not a function; to give a name, write @tool(name=...)")
        key = func.__name__ if name is None else name
        if key in registry:
            raise ValueError(f"a tool named '{key}' is already registered; pick another name")
        registry[key] = func
        return func
    return tool


def decorator_name_means_later(registry: dict):
    def tool(func=None, name=None):
        if name is not None:                 # the slip: a name always means "@tool(name=...)"
            def decorator(f):
                if name in registry:
                    raise ValueError(f"'{name}' is taken")
                registry[name] = f
                return f
            return decorator
        if not callable(func):
            raise TypeError("write @tool(name=...)")
        if func.__name__ in registry:
            raise ValueError(f"'{func.__name__}' is taken")
        registry[func.__name__] = func
        return func
    return tool


def decorator_bare_form_unchecked(registry: dict):
    def tool(func=None, *, name=None):
        if func is None:
            def decorator(f):
                if name in registry:
                    raise ValueError(f"'{name}' is taken")
                registry[name] = f
                return f
            return decorator
        if not callable(func):
            raise TypeError("write @tool(name=...)")
        registry[func.__name__ if name is None else name] = func   # the slip: no duplicate check here
        return func
    return tool


def decorator_only_refusing_text(registry: dict):
    def tool(func=None, *, name=None):
        if func is None:
            return lambda f: tool(f, name=name)
        if isinstance(func, str):            # the slip: only the @tool("name") spelling is refused
            raise TypeError("write @tool(name=...)")
        key = func.__name__ if name is None else name
        if key in registry:
            raise ValueError(f"'{key}' is taken")
        registry[key] = func
        return func
    return tool


# ================================================================ stage 03
def ref_json_type(hint, *, dict_origin=True, recursive_list=True, union="members") -> dict:
    simple = {str: "string", int: "integer", float: "number", bool: "boolean", dict: "object"}
    origin, args = typing.get_origin(hint), typing.get_args(hint)

    def again(h):
        return ref_json_type(h, dict_origin=dict_origin, recursive_list=recursive_list, union=union)

    if hint in simple:
        return {"type": simple[hint]}
    if origin is Literal:
        return {"enum": list(args)}
    if origin in (typing.Union, types.UnionType):
        if union == "first" and type(None) in args:          # the slip: Optional[X] taken as "the first one"
            return again(args[0])
        if union == "flat":                                  # the slip: members looked up, not described
            options = [{"type": simple[a]} for a in args if a is not type(None)]
        else:
            options = [again(a) for a in args if a is not type(None)]
        return options[0] if len(options) == 1 else {"anyOf": options}
    if origin is list:
        return {"type": "array", "items": again(args[0]) if recursive_list else {"type": simple[args[0]]}}
    if origin is dict and dict_origin:
        return {"type": "object"}
    raise ValueError(f"cannot describe the type {hint!r} in JSON Schema")


TYPE_SCHEMAS = {
    str: {"type": "string"}, int: {"type": "integer"}, float: {"type": "number"}, bool: {"type": "boolean"},
    list[str]: {"type": "array", "items": {"type": "string"}},
}


def ref_tool_schema(func, *, table=TYPE_SCHEMAS, copy_entry=True, check_default=True) -> dict:
    hints = typing.get_type_hints(func)
    properties, required = {}, []
    for p in inspect.signature(func).parameters.values():
        where = f"tool '{func.__name__}', parameter '{p.name}'"
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            raise ValueError(f"{where}: *args and **kwargs cannot be described; name each parameter")
        if p.name not in hints:
            raise ValueError(f"{where}: add a type hint so the model knows what to send")
        if hints[p.name] not in table:
            raise ValueError(f"{where}: cannot describe the type {hints[p.name]!r}")
        prop = dict(table[hints[p.name]]) if copy_entry else table[hints[p.name]]
        if p.default is inspect.Parameter.empty:
            required.append(p.name)
        else:
            if check_default:
                try:
                    json.dumps(p.default)
                except (TypeError, ValueError):
                    raise ValueError(f"{where}: the default {p.default!r} cannot be written as JSON") from None
            prop["default"] = p.default
        properties[p.name] = prop
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


def _schema_with_a_shared_table():
    table = {hint: dict(schema) for hint, schema in TYPE_SCHEMAS.items()}   # one table for the whole check
    return lambda func: ref_tool_schema(func, table=table, copy_entry=False)


def ref_arg_docs(doc):
    found, lines = {}, (doc or "").splitlines()
    starts = [i for i, line in enumerate(lines) if line.strip() == "Args:"]
    if not starts:
        return found
    header = len(lines[starts[0]]) - len(lines[starts[0]].lstrip())
    current, param_indent = None, None
    for line in lines[starts[0] + 1:]:
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        if indent <= header:
            break
        match = re.match(r"\s*(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)", line)
        if match and (param_indent is None or indent <= param_indent):
            current, param_indent = match[1], indent
            found[current] = match[2].strip()
        elif current is not None:
            found[current] = f"{found[current]} {line.strip()}"
    return found


def ref_description_problems(tools, *, lower=True, whole_word=True, stale=True, stop_at_missing=True):
    def first_line(func):
        doc = (inspect.getdoc(func) or "").strip()
        return doc.splitlines()[0].strip() if doc else ""

    def long_words(line):
        return set(re.findall(r"[^\W\d_]{5,}", line.lower() if lower else line))

    lines = {name: first_line(func) for name, func in tools.items()}
    problems = []
    for name, func in tools.items():
        line = lines[name]
        if not line:
            problems.append(f"{name}: no description")
            if stop_at_missing:
                continue
        params = inspect.signature(func).parameters
        described = ref_arg_docs(inspect.getdoc(func))
        problems += [f"{name}: parameter '{p}' has no Args: line" for p in params if p not in described]
        if stale:
            problems += [f"{name}: Args: describes '{a}', which is not a parameter" for a in described
                         if a not in params]
        for other, other_line in lines.items():
            if other == name or not other_line or not long_words(line) & long_words(other_line):
                continue
            named = re.search(rf"(?<!\w){re.escape(other)}(?!\w)", line) if whole_word else other in line
            if not named:
                problems.append(f"{name}: say when to use {other} instead")
    return problems


def arg_docs_fixed_margins(doc):
    """Parameters at four spaces, the section ends at column 0: right for inspect.getdoc, wrong for __doc__."""
    found, current, inside = {}, None, False
    for line in (doc or "").splitlines():
        if line.strip() == "Args:":
            inside = True
            continue
        if not inside or not line.strip():
            continue
        if not line.startswith(" "):
            break
        indent = len(line) - len(line.lstrip())
        match = re.match(r"\s*(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)", line)
        if match and indent <= 4:
            current = match[1]
            found[current] = match[2].strip()
        elif current is not None:
            found[current] += " " + line.strip()
    return found


def arg_docs_stopping_at_blank_lines(doc):
    text = (doc or "")
    cut = [line for line in text.splitlines()]
    for i, line in enumerate(cut):
        if line.strip() == "Args:":
            for j in range(i + 1, len(cut)):
                if not cut[j].strip():         # the slip: a blank line ends the section
                    return ref_arg_docs("\n".join(cut[:j]))
    return ref_arg_docs(text)


# ================================================================ stage 04
def ref_validate_action(data):
    if not isinstance(data, dict):
        return f'an action must be a JSON object like {{"tool": "<name>", "args": {{...}}}}, not {type(data).__name__}'
    tool = data.get("tool")
    if not isinstance(tool, str) or not tool.strip():
        return '"tool" must be a non-empty string naming a tool'
    args = data.get("args")
    if args is not None and not isinstance(args, dict):
        return f'"args" must be a JSON object like {{"name": value}}, not {type(args).__name__}'
    return None


def validate_action_or_empty(data):
    if not isinstance(data, dict):
        return "an action must be a JSON object"
    tool = data.get("tool")
    if not isinstance(tool, str) or not tool.strip():
        return '"tool" must be a non-empty string'
    args = data.get("args") or {}            # the slip: [], "" and false become {}
    if not isinstance(args, dict):
        return '"args" must be a JSON object'
    return None


DECODER = json.JSONDecoder()


def ref_find_action(text, *, on_recursion="next", skip_decoded=False, tool_must_be_text=False):
    if not isinstance(text, str):
        return None
    start = text.find("{")
    while start != -1:
        end = start + 1
        try:
            value, end = DECODER.raw_decode(text, start)
        except ValueError:
            value = None
        except RecursionError:
            if on_recursion == "stop":       # the slip: give up instead of trying the next "{"
                return None
            value = None
        if isinstance(value, dict) and "tool" in value and (not tool_must_be_text or isinstance(value["tool"], str)):
            return value
        start = text.find("{", end if skip_decoded and value is not None else start + 1)
    return None


def make_parse_action(*, strip_thinking=None, strip_name=True, args_default="or", failure_keeps_tool=False):
    def parse_action(text):
        if not isinstance(text, str):
            return ParsedReply(ok=False, error=f"the reply must be text, not {type(text).__name__}")
        if strip_thinking is not None:
            visible = strip_thinking(text)
        else:
            kept, pos = [], 0
            while (start := text.find("<think>", pos)) != -1:
                end = text.find("</think>", start)
                if end == -1:
                    break
                kept.append(text[pos:start])
                pos = end + len("</think>")
            visible = "".join(kept) + text[pos:]
        data = ref_find_action(visible)
        if data is None:
            return ParsedReply(ok=False, error='no JSON object with a "tool" field found; send one JSON object')
        problem = ref_validate_action(data)
        if problem:
            return ParsedReply(ok=False, tool=data.get("tool") if failure_keeps_tool else None, error=problem)
        tool = data["tool"].strip() if strip_name else data["tool"]
        args = data.get("args") or {} if args_default == "or" else data.get("args", {})
        return ParsedReply(ok=True, tool=tool, args=args)
    return parse_action


# ================================================================ stage 05
def ref_matches(value, hint, *, float_isinstance=False, bare_list_items=False, dict_origin=True,
                unknown=True, recursive_items=True):
    def again(v, h):
        return ref_matches(v, h, float_isinstance=float_isinstance, bare_list_items=bare_list_items,
                           dict_origin=dict_origin, unknown=unknown, recursive_items=recursive_items)

    if hint is Any:
        return True
    if hint is float:
        return isinstance(value, (int, float)) if float_isinstance else type(value) in (int, float)
    if hint in (int, str, bool, dict, type(None)) or (hint is list and not bare_list_items):
        return type(value) is hint
    origin, members = typing.get_origin(hint), typing.get_args(hint)
    if hint is list:
        origin, members = list, typing.get_args(hint)
    if origin in (typing.Union, types.UnionType):
        return any(again(value, member) for member in members)
    if origin is list:
        if bare_list_items:
            return type(value) is list and all(again(item, members[0]) for item in value)
        if not recursive_items:
            return type(value) is list and all(type(item) is members[0] for item in value)
        return type(value) is list and (not members or all(again(item, members[0]) for item in value))
    if origin is dict and dict_origin:
        return type(value) is dict
    return unknown


def ref_check_call(func, args, *, star_args_named=False, kwargs_takes_all=False):
    name = getattr(func, "__name__", "the tool")
    if not isinstance(args, dict):
        return f"the arguments for {name} must be a JSON object, not {type(args).__name__}."
    params = inspect.signature(func).parameters.values()
    takes_any = any(p.kind is p.VAR_KEYWORD for p in params)
    if takes_any and kwargs_takes_all:
        return None
    skipped = (inspect.Parameter.VAR_KEYWORD,) if star_args_named else (inspect.Parameter.VAR_POSITIONAL,
                                                                        inspect.Parameter.VAR_KEYWORD)
    named = [p for p in params if p.kind not in skipped]
    names = [p.name for p in named]
    unexpected = [a for a in args if a not in names]
    if unexpected and not takes_any:
        return (f"{name} got unexpected argument(s) {', '.join(map(repr, unexpected))}. "
                f"It takes: {', '.join(names) or 'no arguments'}.")
    missing = [p.name for p in named if p.default is p.empty and p.name not in args
               and p.kind is not inspect.Parameter.VAR_POSITIONAL]
    if missing:
        return f"{name} is missing required argument(s) {', '.join(map(repr, missing))}."
    return None


def ref_as_observation_text(result, limit=2000, *, none_test=lambda r: r is None):
    if isinstance(result, str) and not none_test(result):
        text = result
    elif none_test(result):
        text = "(the tool returned nothing)"
    else:
        try:
            text = json.dumps(result, ensure_ascii=False, default=str)
        except ValueError:
            text = str(result)
    if len(text) > limit:
        text = text[:limit] + f"\n[... cut: {len(text) - limit} more characters not shown]"
    return text


def make_safe_dispatch(*, catch=Exception, guard_signature=True):
    def safe_dispatch(tools, name, args):
        if not isinstance(name, str) or name not in tools:
            return f"Error: unknown tool {str(name)[:80]!r}. Available tools: {', '.join(tools) or '(none)'}.", True
        func = tools[name]
        if guard_signature:
            try:
                problem = ref_check_call(func, args)
            except Exception as e:   # noqa: BLE001
                return f"Error: the call to {name} could not be checked ({type(e).__name__}: {e}).", True
        else:
            problem = ref_check_call(func, args)
        if problem:
            return f"Error: {problem}", True
        try:
            hints = typing.get_type_hints(func)
        except Exception:   # noqa: BLE001
            hints = {}
        for arg, value in args.items():
            hint = hints.get(arg)
            if hint is not None and not ref_matches(value, hint):
                shown = hint.__name__ if isinstance(hint, type) else str(hint).replace("typing.", "")
                got = json.dumps(value, ensure_ascii=False, default=str)[:60]
                return f"Error: argument '{arg}' of {name} must be {shown}, got {got}.", True
        try:
            result = func(**args)
        except ToolError as e:
            return f"Error: {name}: {e}", True
        except catch as e:   # noqa: BLE001
            return f"Error: {name} raised {type(e).__name__}: {e}", True
        return ref_as_observation_text(result), False
    return safe_dispatch


# ================================================================ stage 06
def make_run_loop(*, answer=lambda args: args.get("answer", "(the model finished without an answer)"),
                  system=build_system_prompt, steps_ok=lambda n: type(n) is int and n >= 1, note_failure=False):
    def run_loop(model, tools, goal, max_steps=6):
        if not steps_ok(max_steps):
            raise ValueError(f"max_steps must be a positive whole number, not {max_steps!r}")
        history = [{"role": "system", "content": system(tools)}, {"role": "user", "content": goal}]
        for _ in range(max_steps):
            try:
                reply = model.complete(history, tools)
            except ModelError as e:
                if note_failure:
                    history.append({"role": "assistant", "content": f"(model failed: {e})"})
                return f"The model call failed: {e}", history
            history.append({"role": "assistant", "content": reply.text})
            parsed = parse_reply(reply.text)
            if not parsed.ok:
                history.append({"role": "user", "content": f"Your reply could not be used: {parsed.error}."})
            elif parsed.tool == "finish":
                return answer(parsed.args), history
            else:
                observation = dispatch(tools, parsed.tool, parsed.args)
                history.append({"role": "user", "content": f"Observation: {observation.content}"})
        return f"Stopped after {max_steps} steps without an answer.", history
    return run_loop


def make_repeated_call(*, same=lambda call: call, stride=False):
    def repeated_call(history, limit=3):
        if type(limit) is not int or limit < 2:
            raise ValueError(f"limit must be a whole number of at least 2, not {limit!r}")
        if not isinstance(history, list):
            return False
        if stride:   # the slip: replies taken as every second message from the end
            replies = [m["content"] for m in history[-2 * limit::2]
                       if isinstance(m, dict) and isinstance(m.get("content"), str)]
        else:
            replies = [m["content"] for m in history
                       if isinstance(m, dict) and m.get("role") == "assistant" and isinstance(m.get("content"), str)]
        if len(replies) < limit:
            return False
        calls = []
        for reply in replies[-limit:]:
            parsed = parse_reply(reply)
            if not parsed.ok:
                return False
            calls.append(same((parsed.tool, parsed.args)))
        return all(call == calls[0] for call in calls)
    return repeated_call


def ref_step_cap_from_env(default=6):
    raw = os.environ.get("COURSE_MAX_STEPS", "").strip()
    if not raw:
        return default
    if not (raw.isascii() and raw.isdigit()) or int(raw) < 1:
        raise ValueError(f"COURSE_MAX_STEPS must be a positive whole number, not {raw!r}")
    return int(raw)


def step_cap_with_int(default=6):
    raw = os.environ.get("COURSE_MAX_STEPS", "").strip()
    if not raw:
        return default
    try:
        value = int(raw)                     # the slip: int() also reads "+5" and "1_000"
    except ValueError:
        raise ValueError(f"COURSE_MAX_STEPS must be a positive whole number, not {raw!r}") from None
    if value < 1:
        raise ValueError(f"COURSE_MAX_STEPS must be a positive whole number, not {raw!r}")
    return value


def step_cap_isdigit_only(default=6):
    raw = os.environ.get("COURSE_MAX_STEPS", "").strip()
    if not raw:
        return default
    if not raw.isdigit():                    # the slip: "²" is a digit too, and int("²") fails on its own
        raise ValueError(f"COURSE_MAX_STEPS must be a positive whole number, not {raw!r}")
    if int(raw) < 1:
        raise ValueError(f"COURSE_MAX_STEPS must be a positive whole number, not {raw!r}")
    return int(raw)


def step_cap_fixed_default(default=6):
    return ref_step_cap_from_env() if os.environ.get("COURSE_MAX_STEPS", "").strip() else 6


def step_cap_strip_late(default=6):
    raw = os.environ.get("COURSE_MAX_STEPS")
    if not raw:                              # the slip: "   " is not empty until it is stripped
        return default
    raw = raw.strip()
    if not (raw.isascii() and raw.isdigit()) or int(raw) < 1:
        raise ValueError(f"COURSE_MAX_STEPS must be a positive whole number, not {raw!r}")
    return int(raw)


def make_save_transcript(*, indent=2):
    def save_transcript(history, path):
        path = Path(path)
        text = json.dumps(history, ensure_ascii=False, indent=indent)
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=path.parent, suffix=".tmp",
                                         delete=False) as tmp:
            tmp.write(text + "\n")
        os.replace(tmp.name, path)
        return path
    return save_transcript


# ================================================================ stage 07
class RefQueueModel:
    def __init__(self, replies):
        self.replies = list(replies)
        self.calls = []

    def complete(self, messages, tools=None):
        self.calls.append(list(messages))
        if len(self.calls) > len(self.replies):
            raise ModelError(f"the script ran out: no reply left for call {len(self.calls)}")
        return self.replies[len(self.calls) - 1]


class QueueModelCheckingFirst(RefQueueModel):
    def complete(self, messages, tools=None):
        if len(self.calls) >= len(self.replies):   # the slip: the failing call is not recorded
            raise ModelError("the script ran out")
        self.calls.append(list(messages))
        return self.replies[len(self.calls) - 1]


class QueueModelWrapping(RefQueueModel):
    def complete(self, messages, tools=None):
        return Reply(text=str(super().complete(messages, tools)))   # the slip: the reply is not passed on as it is


def ref_recovery_script():
    return [
        '{"tool": "lookup", "args": {"topic": "단가"}',
        act("lookup", topic="discount"),
        act("lookup", topic="단가"),
        act("calculator", expression="24*7"),
        act("finish", answer="Seven units cost $168 (7 × $24); no discount is listed."),
    ]


def recovery_script_tool_error_first():
    return [
        act("lookup", topic="discount"),
        '{"tool": "lookup", "args": {"topic": "단가"}',
        act("lookup", topic="단가"),
        act("calculator", expression="24*7"),
        act("finish", answer="Seven units cost $168 (7 × $24); no discount is listed."),
    ]


def make_retrying_model(*, strip_goal=True, keep_messages=True, give_up_when_all_tried=True,
                        fact_unless_error=False):
    def retrying_model(messages):
        if not keep_messages:
            last_message = messages.pop()      # the slip: the agent's own history loses its last message
            messages = messages + [last_message]
        tried = []
        for m in messages:
            if m["role"] == "assistant":
                parsed = parse_reply(m["content"])
                if parsed.ok and parsed.tool == "lookup":
                    tried.append(parsed.args.get("topic"))
        if not tried:
            goal = next(m["content"] for m in messages if m["role"] == "user")
            return act("lookup", topic=goal.strip() if strip_goal else goal)
        last = messages[-1]["content"]
        if fact_unless_error and not last.startswith("Observation: Error"):
            return act("finish", answer=last.removeprefix("Observation: "))
        if last.startswith("Observation: ") and not last.startswith("Observation: Error"):
            return act("finish", answer=last.removeprefix("Observation: "))
        if last.startswith("Observation: Error") and "Known topics: " in last:
            topics = [item.split(" (")[0].strip() for item in last.split("Known topics: ", 1)[1].split(", ")]
            for topic in topics:
                if topic not in tried:
                    return act("lookup", topic=topic)
            if not give_up_when_all_tried:
                return act("lookup", topic=topics[0])
        return act("finish", answer="I could not find it.")
    return retrying_model


def make_test_agent(*, assert_finish=True, exact_steps=True):
    def test_agent(agent_class):
        agent = agent_class(tools, ScriptedModel([act("calculator", expression="10/0"),
                                                  act("finish", answer="Division by zero is undefined.")]))
        agent.run("What is 10 divided by 0?")
        assert agent.trace[0].runs[0].observation.is_error, "the failed calculator call should be flagged is_error"
        if assert_finish:
            assert agent.stop_reason == "finish", f"a tool error should not end the run, got {agent.stop_reason}"
        agent = agent_class(tools, ScriptedModel([act("lookup", topic="단가")] * 20), max_steps=3)
        agent.run("Loop forever.")
        assert agent.stop_reason == "max_steps", f"expected max_steps, got {agent.stop_reason}"
        if exact_steps:
            assert agent.steps == 3, f"expected exactly 3 steps, got {agent.steps}"
        else:
            assert agent.steps <= 3, f"expected at most 3 steps, got {agent.steps}"
        agent = agent_class(tools, ScriptedModel([act("lookup", topic="단가")]))
        agent.run("One lookup only.")
        assert agent.stop_reason == "model_error", f"expected model_error, got {agent.stop_reason}"
    return test_agent


# ================================================================ stage 08
def _ids_problem(calls, *, need_ids=True, unique=True):
    ids = [call.id for call in calls]
    return (need_ids and not all(ids)) or (unique and len(set(ids)) != len(ids))


def make_openai_turn_messages(**id_rules):
    def openai_turn_messages(text, calls, observations):
        if not calls:
            raise ValueError("a reply without tool calls is a final answer, not a tool turn")
        if len(calls) != len(observations):
            raise ValueError(f"{len(calls)} call(s) but {len(observations)} observation(s): each call needs one")
        if _ids_problem(calls, **id_rules):
            raise ValueError(f"every call needs an id of its own, got {[c.id for c in calls]}")
        assistant = {"role": "assistant", "content": text or None, "tool_calls": [
            {"id": call.id, "type": "function",
             "function": {"name": call.name, "arguments": json.dumps(call.args, ensure_ascii=False)}}
            for call in calls]}
        return [assistant] + [{"role": "tool", "tool_call_id": call.id, "content": observation.content}
                              for call, observation in zip(calls, observations)]
    return openai_turn_messages


def make_anthropic_results_message(**id_rules):
    def anthropic_results_message(calls, observations):
        if not calls:
            raise ValueError("there are no tool calls to answer")
        if len(calls) != len(observations):
            raise ValueError(f"{len(calls)} call(s) but {len(observations)} observation(s): each call needs one")
        if _ids_problem(calls, **id_rules):
            raise ValueError(f"every call needs an id of its own, got {[c.id for c in calls]}")
        blocks = []
        for call, observation in zip(calls, observations):
            block = {"type": "tool_result", "tool_use_id": call.id, "content": observation.content}
            if observation.is_error:
                block["is_error"] = True
            blocks.append(block)
        return {"role": "user", "content": blocks}
    return anthropic_results_message


def ref_parse_openai_tool_calls(message):
    calls = []
    for call in message.get("tool_calls") or []:
        raw = call["function"].get("arguments")
        if isinstance(raw, dict):
            args = raw
        else:
            try:
                args = json.loads(raw or "{}")
            except (TypeError, ValueError):
                args = raw
        calls.append(ToolCall(name=call["function"]["name"], args=args, id=call["id"]))
    return calls


def parse_calls_empty_text_only(message):
    calls = []
    for call in message.get("tool_calls") or []:
        raw = call["function"]["arguments"]
        try:
            args = json.loads(raw) if raw != "" else {}   # the slip: None is not "" (and a dict is not text)
        except json.JSONDecodeError:
            args = raw
        calls.append(ToolCall(name=call["function"]["name"], args=args, id=call["id"]))
    return calls


def parse_calls_text_only(message):
    calls = []
    for call in message.get("tool_calls") or []:
        raw = call["function"].get("arguments")
        try:
            args = json.loads(raw or "{}")
        except json.JSONDecodeError:        # the slip: a dict (Ollama) makes json.loads raise TypeError
            args = raw
        calls.append(ToolCall(name=call["function"]["name"], args=args, id=call["id"]))
    return calls


def parse_calls_objects_only(message):
    calls = []
    for call in message.get("tool_calls") or []:
        raw = call["function"].get("arguments")
        try:
            args = raw if isinstance(raw, dict) else json.loads(raw or "{}")
        except ValueError:
            args = raw
        if not isinstance(args, dict):      # the slip: valid JSON that is not an object is thrown away
            args = raw
        calls.append(ToolCall(name=call["function"]["name"], args=args, id=call["id"]))
    return calls


# ================================================================ the reference solutions pass
REFERENCES = {
    "01.1": lambda: calc(),
    "01.2": lambda: ref_read_lines,
    "01.3": lambda: ref_convert_units,
    "02.1": lambda: ref_register,
    "02.2": lambda: ref_call_tool,
    "02.3": lambda: ref_make_tool_decorator,
    "03.1": lambda: ref_json_type,
    "03.2": lambda: ref_tool_schema,
    "03.3": lambda: ref_arg_docs,
    "03.4": lambda: ref_description_problems,
    "04.1": lambda: ref_validate_action,
    "04.2": lambda: ref_find_action,
    "04.3": lambda: make_parse_action(),
    "05.1": lambda: ref_matches,
    "05.2": lambda: ref_check_call,
    "05.3": lambda: ref_as_observation_text,
    "05.4": lambda: make_safe_dispatch(),
    "06.1": lambda: make_run_loop(),
    "06.2": lambda: make_repeated_call(),
    "06.3": lambda: ref_step_cap_from_env,
    "06.4": lambda: make_save_transcript(),
    "07.1": lambda: RefQueueModel,
    "07.2": lambda: ref_recovery_script,
    "07.3": lambda: make_retrying_model(),
    "07.4": lambda: make_test_agent(),
    "08.1": lambda: make_openai_turn_messages(),
    "08.2": lambda: make_anthropic_results_message(),
    "08.3": lambda: ref_parse_openai_tool_calls,
}


@pytest.mark.parametrize("exercise_id", sorted(REFERENCES))
def test_the_reference_solution_passes_every_visible_case(exercise_id):
    assert failed(exercise_id, REFERENCES[exercise_id]()) == []


# ================================================================ each wrong solution fails, on the case named
def _no_think_tags_with_lt(text):
    return re.sub(r"<think>[^<]*</think>", "", text)


WRONG = [
    # 01.1 a zero divisor, an infinite result, Python's own rules
    ("01.1", lambda: calc(mod=mod_copied_message), "7 % 0: the message says why"),
    ("01.1", lambda: calc(floordiv=floordiv_only_plus_inf), "-1e308 // 1e-308 (-inf)"),
    ("01.1", lambda: calc(floordiv=floordiv_by_floor), "7.5 // 2 (a float)"),
    ("01.1", lambda: calc(mod=mod_truncating), "-7 % 3 (Python: 2)"),
    # 01.2 what is a line number, what is a file, what is inside
    ("01.2", lambda: read_lines_variant(int_check=lambda v: isinstance(v, int)), "start True"),
    ("01.2", lambda: read_lines_variant(check_end=False), "end 2.0 (a float)"),
    ("01.2", lambda: read_lines_variant(exists=lambda p: p.exists()), "a folder: sub"),
    ("01.2", lambda: read_lines_variant(past_end_is_empty=True), "start 5, past the last line"),
    ("01.2", lambda: read_lines_variant(nul=False), "a NUL byte in the path"),
    ("01.2", lambda: read_lines_variant(absolute_ok=False), "absolute path inside"),
    ("01.2", lambda: read_lines_variant(where=lambda root, path: Path(os.path.abspath(root / path))),
     "a link that points outside"),
    # 01.3
    ("01.3", lambda: lambda v, a, b: ref_convert_units(v, a, b, finite=False), "value nan"),
    # 02.1 the order of the checks, a name that is not text
    ("02.1", lambda: lambda r, f, n=None: ref_register(r, f, n, callable_first=False), "not callable, named 'finish'"),
    ("02.1", lambda: lambda r, f, n=None: ref_register(r, f, n, name_must_be_text=False), "name 42 (not text)"),
    # 02.2 a tool's own ToolError goes through; names are exact
    ("02.2", lambda: call_tool_turning_errors_into_text, "the tool's own ToolError"),
    ("02.2", lambda: call_tool_forgiving, "'Calculator' (other case)"),
    # 02.3 the plain call with a name, a duplicate through @tool, a non-callable that is not text
    ("02.3", lambda: decorator_name_means_later, "tool(shout, name='loud')"),
    ("02.3", lambda: decorator_bare_form_unchecked, "duplicate name, bare @tool"),
    ("02.3", lambda: decorator_only_refusing_text, "tool(42): not callable"),
    # 03.1 dict[...], recursion into lists and unions, unions with None and more
    ("03.1", lambda: lambda h: ref_json_type(h, dict_origin=False), "dict[str, int]"),
    ("03.1", lambda: lambda h: ref_json_type(h, recursive_list=False), "list[list[int]]"),
    ("03.1", lambda: lambda h: ref_json_type(h, union="flat"), "Optional[list[str]]"),
    ("03.1", lambda: lambda h: ref_json_type(h, union="first"), "int | str | None"),
    # 03.2 the shared table, a default JSON cannot write
    ("03.2", _schema_with_a_shared_table, "the table is not changed"),
    ("03.2", lambda: lambda f: ref_tool_schema(f, check_default=False), "a set as the default"),
    # 03.3 a raw, indented __doc__ with a blank line
    ("03.3", lambda: arg_docs_fixed_margins, "a raw, indented __doc__"),
    ("03.3", lambda: arg_docs_stopping_at_blank_lines, "a raw, indented __doc__"),
    # 03.4 case, whole words, drifted Args:, nothing more for an undescribed tool
    ("03.4", lambda: lambda t: ref_description_problems(t, lower=False), "SEARCH sounds like Search"),
    ("03.4", lambda: lambda t: ref_description_problems(t, whole_word=False), "'prices' does not name 'price'"),
    ("03.4", lambda: lambda t: ref_description_problems(t, stale=False), "Args: for a parameter that is gone"),
    ("03.4", lambda: lambda t: ref_description_problems(t, stop_at_missing=False), "no docstring"),
    ("03.4", lambda: lambda t: sorted(ref_description_problems(t)), "in the dict's order"),
    # 04.1 falsy args that are not objects
    ("04.1", lambda: validate_action_or_empty, "args is an empty list"),
    # 04.2 keep scanning after a RecursionError and inside an object; no checks on the action
    ("04.2", lambda: lambda t: ref_find_action(t, on_recursion="stop"), "too deep, then an action"),
    ("04.2", lambda: lambda t: ref_find_action(t, skip_decoded=True), "an action inside an object"),
    ("04.2", lambda: lambda t: ref_find_action(t, tool_must_be_text=True), '{"tool": 5} is still found'),
    # 04.3 a "<" inside <think>, the name's spaces, args null, a failure's fields
    ("04.3", lambda: make_parse_action(strip_thinking=_no_think_tags_with_lt), "a '<' inside <think>"),
    ("04.3", lambda: make_parse_action(strip_name=False), "spaces around the name"),
    ("04.3", lambda: make_parse_action(args_default="get"), "args null"),
    ("04.3", lambda: make_parse_action(failure_keeps_tool=True), "a failure: tool None, args {}"),
    # 05.1 bool is no float, bare list, dict[...], anything else fits, nested hints
    ("05.1", lambda: lambda v, h: ref_matches(v, h, float_isinstance=True), "true for float"),
    ("05.1", lambda: lambda v, h: ref_matches(v, h, bare_list_items=True), "[1, 'a'] for list"),
    ("05.1", lambda: lambda v, h: ref_matches(v, h, dict_origin=False), "[] for dict[str, int]"),
    ("05.1", lambda: lambda v, h: ref_matches(v, h, unknown=False), "'red' for Literal[...]"),
    ("05.1", lambda: lambda v, h: ref_matches(v, h, recursive_items=False), "[None] for list[str | None]"),
    # 05.2 *rest is no name; **fields does not make the others optional
    ("05.2", lambda: lambda f, a: ref_check_call(f, a, star_args_named=True), "*rest is no name"),
    ("05.2", lambda: lambda f, a: ref_check_call(f, a, kwargs_takes_all=True), "**fields: message still required"),
    # 05.3 falsy results are not "nothing"
    ("05.3", lambda: lambda r, limit=2000: ref_as_observation_text(r, limit, none_test=lambda x: not x),
     "0 is not nothing"),
    # 05.4 Stop gets through; a signature inspect cannot read
    ("05.4", lambda: make_safe_dispatch(catch=BaseException), "Stop (KeyboardInterrupt)"),
    ("05.4", lambda: make_safe_dispatch(guard_signature=False), "a signature inspect cannot read"),
    # 06.1 finish without an answer, the first messages, max_steps=True, a failed call adds nothing
    ("06.1", lambda: make_run_loop(answer=lambda args: args["answer"]), "finish without an answer"),
    ("06.1", lambda: make_run_loop(system=lambda tools: "You are a helpful agent."), "the first two messages"),
    ("06.1", lambda: make_run_loop(steps_ok=lambda n: isinstance(n, int) and n >= 1), "max_steps=True"),
    ("06.1", lambda: make_run_loop(note_failure=True), "a failed call adds nothing"),
    # 06.2 the same args in another key order, the last message is a reply
    ("06.2", lambda: make_repeated_call(same=lambda call: (call[0], json.dumps(call[1]))),
     "args in another key order"),
    ("06.2", lambda: make_repeated_call(stride=True), "the last message is a reply"),
    # 06.3 only the digits 0-9, the message for every bad value, the default given, blank means unset
    ("06.3", lambda: step_cap_with_int, '"+5"'),
    ("06.3", lambda: step_cap_isdigit_only, 'the message for "²"'),
    ("06.3", lambda: step_cap_fixed_default, "unset, default=10"),
    ("06.3", lambda: step_cap_strip_late, '"   " (only spaces)'),
    # 06.4 indent=2
    ("06.4", lambda: make_save_transcript(indent=None), "indent=2: one value per line"),
    # 07.1 the failing call is recorded; the reply is passed on unchanged
    ("07.1", lambda: QueueModelCheckingFirst, "the failing call is recorded"),
    ("07.1", lambda: QueueModelWrapping, "a reply comes back unchanged"),
    # 07.2 the order of the story
    ("07.2", lambda: recovery_script_tool_error_first, "broken JSON comes first"),
    # 07.3 the goal stripped, messages untouched, everything tried, not an observation
    ("07.3", lambda: make_retrying_model(strip_goal=False), "goal with spaces around it"),
    ("07.3", lambda: make_retrying_model(keep_messages=False), "messages are not changed"),
    ("07.3", lambda: make_retrying_model(give_up_when_all_tried=False), "every topic tried: give up"),
    ("07.3", lambda: make_retrying_model(fact_unless_error=True), "not an observation: give up"),
    # 07.4 exactly 3 steps, and the run finishes after a tool error
    ("07.4", lambda: make_test_agent(exact_steps=False), "bug: one step too few"),
    ("07.4", lambda: make_test_agent(assert_finish=False), "bug: finish is ignored"),
    # 08.x ids: none missing, none twice; None, a dict and non-objects as arguments
    ("08.1", lambda: make_openai_turn_messages(unique=False), "the same id twice"),
    ("08.2", lambda: make_anthropic_results_message(need_ids=False), "a call without an id"),
    ("08.3", lambda: parse_calls_empty_text_only, "arguments null"),
    ("08.3", lambda: parse_calls_text_only, "arguments already a dict"),
    ("08.3", lambda: parse_calls_objects_only, "valid JSON, not an object"),
]


def caught_on(exercise_id: str, make, label: str) -> None:
    """The wrong solution `make()` fails the visible check, on the case named `label` among others."""
    labels = [case.label for case in exercise(exercise_id).cases]
    assert label in labels, f"{exercise_id} has no case {label!r}"
    assert label in failed(exercise_id, make())


def only_slips(wrong: list) -> None:
    """Each wrong solution still passes most of its exercise's cases: it is one mistake, not a stub."""
    for exercise_id, make, label in wrong:
        result = run_cases(exercise_id, make())
        passed = sum(c.ok for c in result.cases)
        assert passed >= len(result.cases) // 2, (exercise_id, label, [c.label for c in result.cases if not c.ok])


@pytest.mark.parametrize("exercise_id, make, label", WRONG, ids=[f"{e}-{label}" for e, _, label in WRONG])
def test_a_plausible_wrong_solution_fails_on_the_case_made_for_it(exercise_id, make, label):
    caught_on(exercise_id, make, label)


def test_the_wrong_solutions_above_are_plausible_slips_not_broken_code():
    only_slips(WRONG)
