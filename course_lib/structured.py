"""Stage 11 — structured output: the final answer as a call of a tool the API is told to make (``tool_choice``).

Adds: ``structured_answer``, one more model call after a run, with the answer's shape as the only tool (a plain
function, stage 03): ``force=True`` names it in ``tool_choice`` (Anthropic refuses that while thinking is on),
``force=False`` only asks. Stage 05's ``dispatch`` checks the arguments: a bad answer is a ``problem`` sentence.

Leaves out: strict tools and JSON output (lesson 11b builds them), nested answers, and asking again after a bad one.
"""
from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from dataclasses import dataclass

from .describe import tool_schema
from .dispatch import dispatch
from .models.base import Reply, ask
from .parsing import parse_reply


@dataclass
class Structured:
    data: dict | None      # the answer's fields, checked; None when there is a problem
    problem: str | None    # what was wrong, in a sentence
    forced: bool           # was the tool call required by tool_choice?
    reply: Reply


def takes_tool_choice(model) -> bool:
    """Can ``model.complete`` be given ``tool_choice``? (The adapters of stage 08 can; a scripted model cannot.)"""
    complete = getattr(model, "complete", None)
    try:
        return callable(complete) and "tool_choice" in inspect.signature(complete).parameters
    except (TypeError, ValueError):
        return False


def ask_nicely(answer_tool: Callable) -> str:
    """The request for the answer in stage 04's JSON action format, with the args' JSON Schema (stage 03)."""
    name = answer_tool.__name__
    return (f'Give your final answer now as exactly one JSON object and nothing else: {{"tool": "{name}", '
            f'"args": {{...}}}}, where the args follow this JSON Schema:\n'
            f"{json.dumps(tool_schema(answer_tool), ensure_ascii=False)}")


def structured_answer(model, history: list[dict], answer_tool: Callable, *, force: bool = True) -> Structured:
    """The answer to the conversation in ``history`` as ``answer_tool``'s checked arguments."""
    name = getattr(answer_tool, "__name__", "")
    if not callable(answer_tool) or not name.isidentifier():
        raise TypeError(f"answer_tool must be a named function, not {answer_tool!r}")
    if not isinstance(history, list) or not history:
        raise ValueError("history must be the non-empty list of messages of a conversation")
    if force and not takes_tool_choice(model):
        raise TypeError(f"{type(model).__name__} cannot be told which tool to call (its complete() takes no "
                        "tool_choice): use a real API's adapter, or force=False to ask in the prompt")
    tools, native = {name: answer_tool}, getattr(model, "native_tools", False)
    request = f"Give your final answer by calling {name}." if native else ask_nicely(answer_tool)
    messages = history + [{"role": "user", "content": request}]
    # force=False: the same request, and the model may or may not do as asked
    reply = Reply.coerce(model.complete(messages, tools, tool_choice=name)) if force else ask(model, messages, tools)
    calls = [c for c in reply.tool_calls if c.name == name]
    if calls:
        args = calls[0].args
    else:   # no native call: perhaps the JSON action of stage 04 in the text
        parsed = parse_reply(reply.text)
        if not parsed.ok or parsed.tool != name:
            why = parsed.error if not parsed.ok else f'it names "{parsed.tool}", not "{name}"'
            return Structured(None, f"the reply is not a usable {name} call: {why}", force, reply)
        args = parsed.args
    if (checked := dispatch(tools, name, args)).is_error:   # stage 05's checks, then the function's own
        return Structured(None, checked.content, force, reply)
    return Structured(json.loads(json.dumps(args)), None, force, reply)
