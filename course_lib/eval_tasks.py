"""Stage 12 — the task suite as data: what each task asks, how its answer is checked, and what a run may do.

Adds: ``load_tasks`` (``data/eval_tasks.json``, or a file of the same shape); ``check_task``, so a hand-written
task with a misspelt key or an unknown tool fails at once, in one sentence; ``describe_check``, a check in words.

Leaves out: grading and running the tasks (``evaluation.py``), a schema language, tasks needing prepared files.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from . import default_tools

TASKS_FILE = Path(__file__).parent / "data" / "eval_tasks.json"
CHECKS = {"exact": {"value"}, "number": {"value", "tolerance"}, "contains": {"value"}, "regex": {"pattern"}}
TASK_KEYS = ("id", "goal", "check", "required_tools", "forbidden_tools", "max_steps", "max_cost", "reference")


def load_tasks(path=None, tools=None) -> list[dict]:
    """The tasks in ``path`` (default: the course's suite), each checked: a bad file or task is a ValueError."""
    tasks = json.loads(Path(path or TASKS_FILE).read_text(encoding="utf-8"))
    if not isinstance(tasks, list):
        raise ValueError(f"a task file holds a JSON list of tasks, not a {type(tasks).__name__}")
    for k, task in enumerate(tasks):
        check_task(task, tools)
        if task["id"] in (t["id"] for t in tasks[:k]):
            raise ValueError(f"two tasks have the id {task['id']!r}")
    return tasks


def check_task(task, tools=None) -> None:
    """Raise ValueError naming the task and what is wrong with it (``tools``: by default the course's)."""
    name = task.get("id") if isinstance(task, dict) else None
    known = sorted(default_tools() if tools is None else tools)
    if problem := (_task_problem(task, known) if isinstance(name, str) and name else "a task needs an 'id' (text)"):
        raise ValueError(f"task {name!r}: {problem}")


def _keys(mapping: dict, allowed) -> str | None:
    unknown = [repr(key) for key in mapping if key not in allowed]
    return f"unknown key(s) {', '.join(unknown)}; it may have {', '.join(allowed)}" if unknown else None


def _task_problem(task: dict, known: list) -> str | None:   # the first problem found, as a sentence
    check, required, forbidden = task.get("check"), task.get("required_tools", []), task.get("forbidden_tools", [])
    if unknown := _keys(task, TASK_KEYS):
        return unknown
    if not isinstance(task.get("goal"), str) or not task["goal"].strip():
        return "'goal' must be non-empty text"
    if not isinstance(check, dict) or check.get("type") not in tuple(CHECKS):
        return f"'check' must be a dict whose 'type' is one of {', '.join(CHECKS)}"
    kind, values = check["type"], check.get("value") if isinstance(check.get("value"), list) else [check.get("value")]
    if unknown := _keys(check, ("type", *sorted(CHECKS[kind]))):
        return f"the {kind} check has {unknown}"
    if kind == "number" and not (_is_number(check.get("value")) and ("tolerance" not in check or (
            _is_number(check["tolerance"]) and check["tolerance"] >= 0))):
        return "the number check needs a numeric 'value' and a 'tolerance' of 0 or more"
    if kind in ("exact", "contains") and not (values and all(isinstance(v, str) and v for v in values)):
        return f"the {kind} check needs a 'value': text (for contains, a list of texts also works)"
    if kind == "regex":
        try:
            re.compile(check.get("pattern"))
        except (re.error, TypeError) as e:
            return f"the regex 'pattern' does not compile: {e}"
    if type(task.get("max_steps")) is not int or task["max_steps"] < 1:
        return "'max_steps' must be a positive whole number"
    if "max_cost" in task and not (_is_number(task["max_cost"]) and task["max_cost"] > 0):
        return "'max_cost' must be a positive number of dollars"
    for key, tools in (("required_tools", required), ("forbidden_tools", forbidden)):
        if not isinstance(tools, list) or not all(isinstance(t, str) for t in tools):
            return f"'{key}' must be a list of tool names, such as [\"lookup\"]"
        if unknown := next((t for t in tools if t not in known), None):
            return f"{unknown!r} is not one of the tools ({', '.join(known)})"
    if set(required) & set(forbidden):
        return "no tool can be in both 'required_tools' and 'forbidden_tools'"
    return _reference_problem(task["reference"], known) if "reference" in task else None


def _reference_problem(reference, known: list) -> str | None:
    calls = reference.get("calls") if isinstance(reference, dict) else None
    if not (isinstance(calls, list) and isinstance(reference.get("answer"), str) and len(reference) == 2):
        return "'reference' must be a dict with 'calls' (a list of [tool, {args}] pairs) and an 'answer' (text)"
    for n, call in enumerate(calls, 1):
        if not (isinstance(call, list) and len(call) == 2 and isinstance(call[0], str) and isinstance(call[1], dict)):
            return f"reference call {n} must be a [tool, {{args}}] pair, not {json.dumps(call, ensure_ascii=False)}"
        if call[0] not in known:
            return f"reference call {n}: {call[0]!r} is not one of the tools ({', '.join(known)})"
    try:
        reference["answer"].format(result=0)
    except (LookupError, ValueError, TypeError, AttributeError) as e:   # {x}, {0}, {result[0]}, {result.x}
        return f"the reference 'answer' may use only {{result}}, the last calculator result ({type(e).__name__}: {e})"
    return None


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value


def describe_check(check: dict) -> str:
    """The check in words, for a grade's ``why`` and for a judge."""
    words = {"exact": "exactly {value!r}", "number": "the number {value:g} (± {tolerance:g})",
             "contains": "text containing {value!r}", "regex": "text matching the pattern {pattern!r}"}
    return words[check["type"]].format_map({"tolerance": 0, **check})
