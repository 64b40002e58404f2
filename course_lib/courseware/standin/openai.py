"""The stand-in's OpenAI Chat Completions API (``POST /v1/chat/completions``): the checks the real API makes,
in its words where we found them, ``tool_choice`` as it reads it, and a reply in its shape."""
from __future__ import annotations

import json
import re

from .common import _cut, _refusal, _Rejected

_SORRY = "I'm sorry, but I can't help with that."   # OpenAI's refusal text when the script gives none
_OPENAI_NAME = re.compile(r"[a-zA-Z0-9_-]+")


def check(body: dict) -> str | None:
    """Chat Completions' own checks, after the ones every API makes: every tool call answered, valid tools."""
    return _check_openai(body["messages"]) or _openai_tools(body.get("tools") or [])


def choice(choice, body: dict) -> tuple[str | None, str | None, bool]:
    """``tool_choice`` as (its kind, the tool it names, whether it forces a call), or a ``_Rejected``."""
    kind = choice if isinstance(choice, str) else "function" if isinstance(choice, dict) else None
    if not body.get("tools"):
        raise _Rejected("Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are "
                        "specified.", param="tool_choice")
    if kind not in ("none", "auto", "required", "function"):
        raise _Rejected(f"Invalid value: {choice!r}. Supported values are: 'none', 'auto', and 'required'.",
                        param="tool_choice", code="invalid_value")
    name = (choice.get("function") or {}).get("name") if kind == "function" else None
    return kind, name, kind in ("required", "function")


def _check_openai(messages: list[dict]) -> str | None:
    waiting: list[str] = []   # tool_call ids still to be answered
    for i, m in enumerate(messages):
        if m.get("role") == "tool":
            if m.get("tool_call_id") not in waiting:
                ours = f"messages[{i}]: tool message for unknown tool_call_id {m.get('tool_call_id')!r}"
                raise _Rejected("Invalid parameter: messages with role 'tool' must be a response to a preceeding "
                                "message with 'tool_calls'.", param=f"messages.[{i}].role", problem=ours)
            waiting.remove(m["tool_call_id"])
            continue
        if waiting:
            break
        if m.get("role") == "assistant":
            waiting = [c["id"] for c in m.get("tool_calls") or []]
    else:
        i = None   # every message was read: unanswered calls, if any, are the last ones
    if waiting:
        ours = (f"messages[{i}]: tool calls {waiting} were not answered by role 'tool' messages" if i is not None
                else f"the last tool calls {waiting} were not answered by role 'tool' messages")
        raise _Rejected("An assistant message with 'tool_calls' must be followed by tool messages responding to "
                        "each 'tool_call_id'. The following tool_call_ids did not have response messages: "
                        + ", ".join(waiting), problem=ours)
    return None


def _openai_tools(tools: list[dict]) -> None:
    for k, tool in enumerate(tools):
        name, where = (tool.get("function") or {}).get("name"), f"tools[{k}].function"
        if not (isinstance(name, str) and _OPENAI_NAME.fullmatch(name)):
            raise _Rejected(f"Invalid '{where}.name': string does not match pattern. Expected a string that "
                            "matches the pattern '^[a-zA-Z0-9_-]+$'.", param=f"{where}.name", code="invalid_value")
        if len(name) > 64:   # the same words as the Responses API's (standin/responses.py)
            raise _Rejected(f"Invalid '{where}.name': string too long. Expected a string with maximum length 64, "
                            f"but got a string with length {len(name)} instead.", param=f"{where}.name",
                            code="string_above_max_length")
        context = _array_without_items(tool["function"].get("parameters"))
        if context is not None:
            raise _Rejected(f"Invalid schema for function '{name}': In context={context!r}, array schema "
                            "missing items.", param=f"{where}.parameters", code="invalid_function_parameters")


def _array_without_items(schema, path: tuple = ()) -> tuple | None:
    """Where in a JSON schema an array has no ``items`` (OpenAI refuses those), or None."""
    if not isinstance(schema, dict):
        return None
    kinds = schema.get("type") if isinstance(schema.get("type"), list) else [schema.get("type")]
    if "array" in kinds and "items" not in schema:
        return path
    inner = [(("properties", k), v) for k, v in (schema.get("properties") or {}).items()]
    inner.append((("items",), schema.get("items")))
    inner += [((key, n), v) for key in ("anyOf", "oneOf", "allOf") for n, v in enumerate(schema.get(key) or [])]
    return next((w for step, sub in inner if (w := _array_without_items(sub, path + step)) is not None), None)


def reply(body, turn, usage, n) -> dict:
    """The turn as a chat completion: text (or a refusal) and tool calls with their arguments as JSON text."""
    calls = [{"id": f"call_standin_{n:02d}_{k}", "type": "function", "function": {"name": c["name"], "arguments": (
        c["args"] if isinstance(c.get("args"), str) else json.dumps(c.get("args", {}), ensure_ascii=False))}}
        for k, c in enumerate(turn.get("tool_calls", []), 1)]
    message = {"role": "assistant", "content": turn.get("text") or None,
               **({"refusal": _refusal(turn) or _SORRY} if turn.get("refusal") else {}),
               **({"tool_calls": calls} if calls else {})}
    finish = turn.get("finish_reason") or ("length" if _cut(turn) else "tool_calls" if calls else "stop")
    return {"id": f"chatcmpl-standin-{n:02d}", "object": "chat.completion", "created": 0, "model": body["model"],
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": {"prompt_tokens": usage["input_tokens"], "completion_tokens": usage["output_tokens"],
                      "total_tokens": usage["input_tokens"] + usage["output_tokens"],
                      "prompt_tokens_details": {"cached_tokens": usage.get("cached_tokens", 0)}}}
