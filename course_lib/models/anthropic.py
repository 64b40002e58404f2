"""Stage 08 — the Anthropic Messages API, with native tool calling, behind the same one-method interface.

Adds: three pure translation functions that unit tests feed plain dicts — ``tools_to_anthropic`` (each
tool's ``tool_spec`` as ``{"name", "description", "input_schema"}``), ``history_to_anthropic`` (the agent's
provider-neutral history → ``system`` plus ``messages``: the assistant's ``tool_use`` turn echoed back,
and every ``tool_result`` of that turn, ``is_error`` where a tool failed, in ONE user message) and
``reply_from_anthropic`` (response → ``Reply`` with text, tool calls and token usage) — and
``AnthropicModel``, which calls the real SDK with them. The ``Agent`` of stage 06 is unchanged.

Leaves out: streaming, prompt caching, extended thinking and images. ``temperature`` is not sent: the
current SDK's ``messages.create`` no longer takes it.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping

from ..describe import tool_spec
from .base import ModelError, Reply, ToolCall
from .catalog import model_id
from .remote import call_api, make_client


def tools_to_anthropic(tools: Mapping[str, Callable]) -> list[dict]:
    specs = (tool_spec(name, func) for name, func in tools.items())
    return [{"name": s["name"], "description": s["description"], "input_schema": s["parameters"]} for s in specs]


def _blocks(content) -> list[dict]:
    return content if isinstance(content, list) else [{"type": "text", "text": content}]


def history_to_anthropic(history: list[dict]) -> tuple[str, list[dict]]:
    """(system, messages) for ``messages.create``. Neighbouring messages of one role are merged, since
    the API wants user and assistant turns to alternate; tool results thus share one user message."""
    system = "\n\n".join(m["content"] for m in history if m["role"] == "system")
    messages: list[dict] = []
    for m in history:
        if m["role"] == "system":
            continue
        if m["role"] == "assistant" and m.get("tool_calls"):
            content = [{"type": "text", "text": m["content"]}] if m.get("content") else []
            content += [{"type": "tool_use", "id": c["id"], "name": c["name"], "input": c["args"]}
                        for c in m["tool_calls"]]
            message = {"role": "assistant", "content": content}
        elif m["role"] == "tool":
            result = {"type": "tool_result", "tool_use_id": m["tool_call_id"], "content": m["content"]}
            if m.get("is_error"):
                result["is_error"] = True
            message = {"role": "user", "content": [result]}
        else:
            message = {"role": m["role"], "content": m["content"]}
        if messages and messages[-1]["role"] == message["role"]:
            messages[-1]["content"] = _blocks(messages[-1]["content"]) + _blocks(message["content"])
        else:
            messages.append(message)
    return system, messages


def reply_from_anthropic(data: dict) -> Reply:
    blocks = data.get("content") or []
    calls = tuple(ToolCall(name=b["name"], args=b.get("input") or {}, id=b["id"])
                  for b in blocks if b.get("type") == "tool_use")
    usage = data.get("usage") or {}
    return Reply(text="".join(b.get("text", "") for b in blocks if b.get("type") == "text"), tool_calls=calls,
                 usage={"input_tokens": usage.get("input_tokens") or 0,
                        "output_tokens": usage.get("output_tokens") or 0})


class AnthropicModel:
    """Claude through the Messages API. ``AnthropicModel()`` reads ANTHROPIC_API_KEY / ANTHROPIC_BASE_URL."""

    def __init__(self, model: str | None = None, *, client=None, base_url: str | None = None,
                 api_key: str | None = None, max_tokens: int = 1024, native_tools: bool = True,
                 max_retries: int = 2):
        self.model = model or model_id("anthropic")
        self.max_tokens, self.native_tools = max_tokens, native_tools
        self.client = client or make_client("anthropic", base_url=base_url, api_key=api_key,
                                            max_retries=max_retries)

    def request(self, messages: list[dict], tools: Mapping[str, Callable] | None = None) -> dict:
        """The keyword arguments for ``client.messages.create``: plain data, handy to print."""
        system, converted = history_to_anthropic(messages)
        request = {"model": self.model, "max_tokens": self.max_tokens, "messages": converted}
        if system:
            request["system"] = system
        if tools and self.native_tools:
            request["tools"] = tools_to_anthropic(tools)
        return request

    def complete(self, messages: list[dict], tools: Mapping[str, Callable] | None = None) -> Reply:
        request = self.request(messages, tools)
        response = call_api("anthropic", self.model, lambda: self.client.messages.create(**request))
        return reply_from_anthropic(response.model_dump())

    def __repr__(self) -> str:
        return f"AnthropicModel(model={self.model!r}, native_tools={self.native_tools})"


__all__ = ["AnthropicModel", "ModelError", "history_to_anthropic", "reply_from_anthropic", "tools_to_anthropic"]
