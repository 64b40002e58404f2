"""Stage 08 — the Anthropic Messages API, with native tool calling, behind the same one-method interface.

Adds: pure translations that unit tests feed plain dicts (``tools_to_anthropic``, ``history_to_anthropic``,
``reply_from_anthropic``) and ``AnthropicModel``, which calls the SDK with them. Thinking blocks (signed or redacted)
go back unchanged, in order, with their ``tool_use`` turn: ``Reply.raw`` keeps the blocks as they came, unknown types
too. Stop reasons: ``refusal`` → ``"refused"``, ``max_tokens`` (a cut-off ``tool_use`` never runs),
``model_context_window_exceeded`` → ``"context_full"``; a paused turn (``pause_turn``) is sent back to go on.

Leaves out: prompt caching, images and ``temperature`` (the current SDK's ``messages.create`` dropped it).
"""
from __future__ import annotations

import os
from collections.abc import Callable, Mapping

from ..describe import sent_spec
from .base import ModelError, Reply, ToolCall, scrub
from .catalog import model_id
from .remote import RemoteModel, checked_choice, make_client, send

# Room for adaptive thinking (it counts toward max_tokens) and still a plain, non-streaming request: the SDK
# refuses a non-streaming call whose max_tokens could take over ten minutes (about 21,000 tokens and up).
DEFAULT_MAX_TOKENS = 16000
STOPS = {"refusal": "refused", "max_tokens": "max_tokens", "model_context_window_exceeded": "context_full"}
COUNTS = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")   # usage
PAUSES = 3   # times a paused turn is sent back to go on: still paused after that, the call fails
THINKING = {"adaptive": {"type": "adaptive"}, "summarized": {"type": "adaptive", "display": "summarized"},
            "disabled": {"type": "disabled"}}
EFFORTS = ("low", "medium", "high", "xhigh", "max")


def tools_to_anthropic(tools: Mapping[str, Callable]) -> list[dict]:
    specs = (sent_spec(name, func) for name, func in tools.items())
    return [{"name": s["name"], "description": s["description"], "input_schema": s["parameters"]} for s in specs]


def choice_to_anthropic(choice: str) -> dict:
    """The course's tool_choice (``auto``, ``any``, ``none`` or a tool's name) as the Messages API writes it."""
    return {"type": choice} if choice in ("auto", "any", "none") else {"type": "tool", "name": choice}


def _blocks(content) -> list[dict]:
    return content if isinstance(content, list) else [{"type": "text", "text": content}]


def _assistant_content(m: dict) -> list[dict] | str:
    raw = m.get("raw")
    if isinstance(raw, dict) and raw.get("format") == "anthropic":
        return list(raw["content"])   # exactly what the API sent: thinking, signatures, unknown block types
    content = [{"type": "text", "text": m["content"]}] if m.get("content") else []
    content += [{"type": "tool_use", "id": c["id"], "name": c["name"], "input": c["args"]}
                for c in m.get("tool_calls") or []]
    return content if m.get("tool_calls") else m.get("content", "")


def history_to_anthropic(history: list[dict]) -> tuple[str, list[dict]]:
    """(system, messages) for ``messages.create``. Neighbouring messages of one role are merged, since
    the API wants user and assistant turns to alternate; tool results thus share one user message."""
    system = "\n\n".join(m["content"] for m in history if m["role"] == "system")
    messages: list[dict] = []
    for m in (m for m in history if m["role"] != "system"):   # the system messages went into ``system``
        if m["role"] == "assistant":
            message = {"role": "assistant", "content": _assistant_content(m)}
        elif m["role"] == "tool":
            result = {"type": "tool_result", "tool_use_id": m["tool_call_id"], "content": m["content"]}
            message = {"role": "user", "content": [{**result, "is_error": True} if m.get("is_error") else result]}
        else:
            message = {"role": m["role"], "content": m["content"]}
        if messages and messages[-1]["role"] == message["role"]:
            messages[-1] = {**messages[-1], "content": _blocks(messages[-1]["content"]) + _blocks(message["content"])}
        else:
            messages.append(message)
    return system, messages


def reply_from_anthropic(data: dict) -> Reply:
    blocks = data.get("content") or []
    calls = tuple(ToolCall(name=b["name"], args=scrub(b.get("input") or {}), id=b["id"])
                  for b in blocks if b.get("type") == "tool_use")
    usage, reason = data.get("usage") or {}, data.get("stop_reason")
    return Reply(text=scrub("".join(b.get("text", "") for b in blocks if b.get("type") == "text")), tool_calls=calls,
                 usage={k: usage.get(k) or 0 for k in COUNTS if k in COUNTS[:2] or usage.get(k)},
                 stop=STOPS.get(reason), provider_stop=reason,
                 thinking="\n".join(b["thinking"] for b in blocks if b.get("type") == "thinking" and b.get("thinking")),
                 raw={"format": "anthropic", "content": blocks})


def _setting(value, variable: str, allowed, what: str):
    value = value if value is not None else (os.environ.get(variable, "").strip() or None)
    if value is not None and not isinstance(value, dict) and value not in allowed:
        raise ValueError(f"{what} must be one of {', '.join(allowed)} (or unset for the model's default), "
                         f"not {value!r}; check {variable}")
    return value


class AnthropicModel(RemoteModel):
    """Claude through the Messages API. ``AnthropicModel()`` reads ANTHROPIC_API_KEY / ANTHROPIC_BASE_URL.
    ``thinking``: None (the model decides), ``"adaptive"``, ``"summarized"`` (with a summary of the thinking),
    ``"disabled"``, or a dict sent as it is; ``effort``: None (the model's default) or one of ``EFFORTS``.
    Left None, they come from COURSE_ANTHROPIC_THINKING and COURSE_ANTHROPIC_EFFORT when set."""

    def __init__(self, model: str | None = None, *, client=None, base_url: str | None = None,
                 api_key: str | None = None, max_tokens: int = DEFAULT_MAX_TOKENS, native_tools: bool = True,
                 max_retries: int = 2, thinking: str | dict | None = None, effort: str | None = None,
                 stream: bool = False, on_text=None):
        self.model, self.stream, self.on_text = model or model_id("anthropic"), stream, on_text
        if type(max_tokens) is not int or max_tokens < 1:
            raise ValueError(f"max_tokens must be a positive whole number, not {max_tokens!r}")
        self.max_tokens, self.native_tools = max_tokens, native_tools
        self.thinking = _setting(thinking, "COURSE_ANTHROPIC_THINKING", tuple(THINKING), "thinking")
        self.effort = _setting(effort, "COURSE_ANTHROPIC_EFFORT", EFFORTS, "effort")
        self.client = client or make_client("anthropic", base_url=base_url, api_key=api_key, max_retries=max_retries)

    def request(self, messages: list[dict], tools: Mapping[str, Callable] | None = None,
                tool_choice: str | None = None) -> dict:
        """The keyword arguments for ``client.messages.create``: plain data, handy to print. ``tool_choice`` (stage 11):
        ``"auto"``, ``"any"``, ``"none"`` or a tool's name; the API refuses a forced one while thinking is on."""
        system, converted = history_to_anthropic(messages)
        request = {"model": self.model, "max_tokens": self.max_tokens, "messages": converted,
                   **({"system": system} if system else {})}
        if tools and self.native_tools:
            request["tools"] = tools_to_anthropic(tools)
        if tool_choice is not None:
            request["tool_choice"] = choice_to_anthropic(checked_choice(tool_choice, tools))
        if self.thinking is not None:   # a named setting, or a dict sent as it is (a dict cannot be a key of THINKING)
            request["thinking"] = self.thinking if isinstance(self.thinking, dict) else THINKING[self.thinking]
        if self.effort is not None:
            request["output_config"] = {"effort": self.effort}
        return scrub(request)   # half an emoji cannot be sent as UTF-8: it becomes U+FFFD

    def complete(self, messages: list[dict], tools: Mapping[str, Callable] | None = None,
                 tool_choice: str | None = None) -> Reply:
        # a subclass written before stage 11 may override request(messages, tools): pass tool_choice only if set
        request = self.request(messages, tools) if tool_choice is None else self.request(messages, tools, tool_choice)
        content, usage, sent = [], {}, request["messages"]
        for _ in range(1 + PAUSES):   # pause_turn: a server tool's loop paused the turn; sent back, it goes on
            data = send(self, "anthropic", self.client.messages, request, "get_final_message")
            content, counts = content + (data.get("content") or []), data.get("usage") or {}
            usage = {k: usage.get(k, 0) + (counts.get(k) or 0) for k in COUNTS}
            if data.get("stop_reason") != "pause_turn":
                return reply_from_anthropic({**data, "content": content, "usage": usage})
            request = {**request, "messages": [*sent, {"role": "assistant", "content": content}]}
        raise ModelError(f"the model's turn was still paused (pause_turn) after it was sent back {PAUSES} times")


__all__ = ["AnthropicModel", "ModelError", "choice_to_anthropic", "history_to_anthropic", "reply_from_anthropic",
           "tools_to_anthropic"]
