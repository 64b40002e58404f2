"""The stand-in's OpenAI Responses API (``POST /v1/responses``): items in, items out, checked as the real API
checks them, in its words where we found them (quoted from error bodies users posted, see
tests/fixtures/payloads/README.md), ``tool_choice`` as it reads it, and a reply in its shape (the SDK's
``openai.types.responses.Response``).

What it holds between requests, like the real API: each response it was allowed to store (``store`` is true
unless sent false), for ``previous_response_id``; and every reasoning item it issued, with the calls that
followed it. A reasoning item comes back only as issued, and only with its encrypted content when nothing is
stored; a function call it issued after reasoning comes back only with that reasoning item before it; every
``function_call`` has its ``function_call_output`` (matched by ``call_id``) and no output lacks its call.
Tools: flat ``{"type": "function", "name", "parameters", "strict"}``, names of at most 64 characters; a
``strict: true`` schema, and a ``text.format`` of type ``json_schema``, must meet strict mode's rules (``schemas``).
"""
from __future__ import annotations

import base64
import hashlib
import json
import re

from .common import _cut, _refusal, _Rejected

_NAME = re.compile(r"[a-zA-Z0-9_-]+")
_NOT_STORED = ("Item with id '{}' not found. Items are not persisted when `store` is set to false. Try again with "
               "`store` set to true, or remove this item from your input.")   # a 404, as users posted it


def choice(choice, body: dict) -> tuple[str | None, str | None, bool]:
    """``tool_choice`` as (its kind, the tool it names, whether it forces a call), or a ``_Rejected``."""
    kind = choice if isinstance(choice, str) else (choice or {}).get("type") if isinstance(choice, dict) else None
    if kind not in ("none", "auto", "required", "function"):   # paraphrased, in the API's style
        raise _Rejected(f"Invalid value: {choice!r}. Supported values are: 'none', 'auto', and 'required'.",
                        param="tool_choice", code="invalid_value")
    name = choice.get("name") if kind == "function" else None
    if kind == "function" and not isinstance(name, str):
        raise _Rejected("Missing required parameter: 'tool_choice.name'.", param="tool_choice.name",
                        code="missing_required_parameter")
    return kind, name, kind in ("required", "function")


def _tools(tools) -> None:
    for k, tool in enumerate(tools or []):
        if tool.get("type") != "function":
            continue   # a built-in tool (web search, file search, ...): not the course's
        name, where = tool.get("name"), f"tools[{k}].name"
        if name is None:   # most often a Chat Completions tool ({"function": {...}}) sent to this API
            raise _Rejected(f"Missing required parameter: '{where}'.", param=where, code="missing_required_parameter")
        if not (isinstance(name, str) and _NAME.fullmatch(name)):
            raise _Rejected(f"Invalid '{where}': string does not match pattern. Expected a string that matches the "
                            "pattern '^[a-zA-Z0-9_-]+$'.", param=where, code="invalid_value")
        if len(name) > 64:
            raise _Rejected(f"Invalid '{where}': string too long. Expected a string with maximum length 64, but got "
                            f"a string with length {len(name)} instead.", param=where, code="string_above_max_length")


def _items(value) -> list[dict]:
    """``input`` as a list of items: text is one user message. (These two sentences are paraphrased.)"""
    if isinstance(value, str):
        return [{"role": "user", "content": value}]
    if not isinstance(value, list):
        raise _Rejected("Invalid type for 'input': expected a string or an array of input items.", param="input",
                        code="invalid_type")
    for k, item in enumerate(value):
        if not isinstance(item, dict):
            raise _Rejected(f"Invalid type for 'input[{k}]': expected an input item object, but got "
                            f"{'a string' if isinstance(item, str) else type(item).__name__} instead.",
                            param=f"input[{k}]", code="invalid_type")
    return value


def _bad(message: str) -> _Rejected:
    return _Rejected(message, param="input")


class Responses:
    """What one server keeps: stored responses (for ``previous_response_id``) and the reasoning items it issued."""

    def __init__(self):
        self.stored: dict[str, list[dict]] = {}   # response id -> every item of that conversation, output included
        self.reasoning: dict[str, dict] = {}      # reasoning item id -> the item as issued
        self.after: dict[str, str] = {}           # function_call item id -> the reasoning item id it followed

    def check(self, body: dict) -> list[dict]:
        """Every item of the conversation (stored ones first), after the API's checks; or a ``_Rejected``."""
        if not isinstance(body.get("model"), str):
            raise _Rejected("Missing required parameter: 'model'.", param="model", code="missing_required_parameter")
        limit = body.get("max_output_tokens")
        if limit is not None and (type(limit) is not int or limit < 16):
            raise _Rejected("Invalid 'max_output_tokens': integer below minimum value. Expected a value >= 16, but "
                            f"got {limit} instead.", param="max_output_tokens", code="integer_below_min_value")
        _tools(body.get("tools"))
        previous = body.get("previous_response_id")
        if previous is not None and previous not in self.stored:
            raise _Rejected(f"Previous response with id '{previous}' not found.", param="previous_response_id",
                            code="previous_response_not_found")
        items = self.conversation(body)
        if not items:
            raise _Rejected("Invalid 'input': empty array. Expected an array with minimum length 1.", param="input")
        self._check_items(items, body.get("store") is False)
        return items

    def _check_items(self, items: list[dict], stateless: bool) -> None:
        calls: list[str] = []   # call_ids asked for, in order
        for k, item in enumerate(items):
            kind = item.get("type", "message")
            if kind == "reasoning":
                issued = self.reasoning.get(item.get("id"))
                if issued is None or stateless and not item.get("encrypted_content"):
                    raise _Rejected(_NOT_STORED.format(item.get("id")), param="input", status=404)
                if any(item.get(key) != value for key, value in issued.items() if key != "status"):
                    raise _bad(f"The encrypted content for item {item.get('id')} could not be verified.")   # ours
                following = items[k + 1] if k + 1 < len(items) else {}
                if following.get("type", "message") == "reasoning" or k + 1 == len(items):
                    raise _bad(f"Item '{item['id']}' of type 'reasoning' was provided without its required "
                               "following item.")
            elif kind == "function_call":
                if not isinstance(item.get("call_id"), str) or not isinstance(item.get("arguments"), str):
                    raise _bad(f"Invalid 'input[{k}]': a function_call needs a call_id and its arguments as a "
                               "JSON string.")   # paraphrased
                needs = self.after.get(item.get("id"))
                if needs and not any(i.get("type") == "reasoning" and i.get("id") == needs for i in items[:k]):
                    raise _bad(f"Item '{item['id']}' of type 'function_call' was provided without its required "
                               f"'reasoning' item: '{needs}'.")
                calls.append(item["call_id"])
            elif kind == "function_call_output":
                if item.get("call_id") not in calls:
                    raise _bad(f"No tool call found for function call output with call_id {item.get('call_id')}.")
                calls.remove(item["call_id"])
            elif kind == "message":
                if item.get("role") not in ("user", "assistant", "system", "developer"):
                    raise _bad(f"Invalid value: '{item.get('role')}'. Supported values are: 'assistant', 'system', "
                               "'developer', and 'user'.")
                if not isinstance(item.get("content"), (str, list)):
                    raise _bad(f"Invalid 'input[{k}].content': expected a string or an array of content parts.")
        if calls:
            raise _bad(f"No tool output found for function call {calls[0]}.")

    def conversation(self, body: dict) -> list[dict]:
        """The stored items ``previous_response_id`` names, then the request's own ``input``."""
        previous = body.get("previous_response_id")
        return (self.stored[previous] if previous else []) + _items(body.get("input"))

    def remember(self, body: dict, response: dict) -> None:   # after check() accepted the request
        last = None
        for item in response["output"]:
            if item["type"] == "reasoning":
                self.reasoning[item["id"]], last = dict(item), item["id"]
            elif item["type"] == "function_call" and last:
                self.after[item["id"]] = last
        if body.get("store") is not False:
            self.stored[response["id"]] = self.conversation(body) + response["output"]


def _encrypted(body: dict, n: int, text: str) -> str:
    """Deterministic, so a notebook that prints one stays reproducible (the real one is opaque, and longer)."""
    seed = f"{n}|{text}|{json.dumps(body.get('input'), sort_keys=True, default=str)}".encode("utf-8", "surrogatepass")
    return "gAAAAB" + base64.urlsafe_b64encode(hashlib.sha256(seed).digest()).decode()


def reply(body, turn, usage, n) -> dict:
    """The turn as a Response: a reasoning item (when the turn thought), a message, then the function calls."""
    output = []
    if turn.get("thinking") is not None:
        summary = [{"type": "summary_text", "text": turn["thinking"]}] if turn["thinking"] else []
        item = {"id": f"rs_standin_{n:02d}", "type": "reasoning", "summary": summary}
        if "reasoning.encrypted_content" in (body.get("include") or []):
            item["encrypted_content"] = _encrypted(body, n, turn["thinking"])
        output.append(item)
    refused = turn.get("refusal")
    content = ([{"type": "refusal", "refusal": _refusal(turn) or "I'm sorry, but I can't help with that."}]
               if refused else [{"type": "output_text", "text": turn["text"], "annotations": [], "logprobs": []}]
               if turn.get("text") else [])
    if content:
        output.append({"id": f"msg_standin_{n:02d}", "type": "message", "status": "completed", "role": "assistant",
                       "content": content})
    output += [{"id": f"fc_standin_{n:02d}_{k}", "type": "function_call", "status": "completed",
                "call_id": f"call_standin_{n:02d}_{k}", "name": c["name"],
                "arguments": c["args"] if isinstance(c.get("args"), str) else json.dumps(c.get("args", {}),
                                                                                        ensure_ascii=False)}
               for k, c in enumerate(turn.get("tool_calls", []), 1)]
    reason = turn.get("incomplete") or ("max_output_tokens" if _cut(turn) else None)
    tokens = {"input_tokens": usage["input_tokens"], "output_tokens": usage["output_tokens"]}
    return {"id": f"resp_standin_{n:02d}", "object": "response", "created_at": 0,
            "status": "incomplete" if reason else "completed", "error": None,
            "incomplete_details": {"reason": reason} if reason else None, "instructions": body.get("instructions"),
            "max_output_tokens": body.get("max_output_tokens"), "model": body["model"], "output": output,
            "parallel_tool_calls": body.get("parallel_tool_calls", True),
            "previous_response_id": body.get("previous_response_id"), "temperature": 1.0,
            "tool_choice": body.get("tool_choice", "auto"), "tools": body.get("tools") or [], "top_p": 1.0,
            "truncation": "disabled", "metadata": {},
            "usage": {**tokens, "input_tokens_details": {"cached_tokens": usage.get("cached_tokens", 0),
                                                         "cache_write_tokens": 0},
                      "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": sum(tokens.values())}}
