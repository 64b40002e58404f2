"""Stage 08 — the OpenAI Chat Completions API (and Ollama's OpenAI-compatible endpoint) with native tool calling.

Adds: ``tools_to_openai``, ``history_to_openai`` (arguments sent back as JSON text, each result a ``"tool"`` message),
``reply_from_openai`` (arguments that are not JSON reach the dispatcher as text, for the model to fix; ``"length"`` →
``"max_tokens"``, ``"content_filter"`` or a refusal → ``"refused"``) and ``OpenAIModel``, ``.ollama()`` for Ollama.

Leaves out: the newer Responses API, streaming, structured outputs and images.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Mapping

from ..describe import tool_spec
from .base import Reply, ToolCall, scrub
from .catalog import OLLAMA_URL, model_id
from .native import NATIVE
from .remote import call_api, checked_choice, make_client

STOPS = {"length": "max_tokens", "content_filter": "refused"}


def tools_to_openai(tools: Mapping[str, Callable]) -> list[dict]:
    return [{"type": "function", "function": tool_spec(name, func)} for name, func in tools.items()]


def choice_to_openai(choice: str):
    """The course's tool_choice (``auto``, ``any``, ``none`` or a tool's name) as Chat Completions writes it."""
    if choice in ("auto", "any", "none"):
        return "required" if choice == "any" else choice
    return {"type": "function", "function": {"name": choice}}


def history_to_openai(history: list[dict]) -> list[dict]:
    messages = []
    for m in history:
        if m["role"] == "assistant" and m.get("tool_calls"):
            messages.append({"role": "assistant", "content": m.get("content") or None, "tool_calls": [
                {"id": c["id"], "type": "function",
                 "function": {"name": c["name"], "arguments": json.dumps(c["args"], ensure_ascii=False)}}
                for c in m["tool_calls"]]})
        elif m["role"] == "tool":
            messages.append({"role": "tool", "tool_call_id": m["tool_call_id"], "content": m["content"]})
        else:
            messages.append({"role": m["role"], "content": m["content"]})
    return messages


def _arguments(raw):
    try:
        return json.loads(raw or "{}")
    except (TypeError, ValueError, RecursionError):   # a dict already (some servers send one), or not JSON text
        return raw   # not JSON: the dispatcher answers "arguments must be a JSON object" and the model can retry


def reply_from_openai(data: dict) -> Reply:
    choice = (data.get("choices") or [{}])[0]
    message = choice.get("message") or {}
    calls = tuple(ToolCall(name=c["function"]["name"], args=scrub(_arguments(c["function"].get("arguments"))),
                           id=c["id"]) for c in message.get("tool_calls") or [] if c.get("function"))
    usage = data.get("usage") or {}
    reason = choice.get("finish_reason")   # a refusal overrides it
    stop, reason = ("refused", "refusal") if message.get("refusal") else (STOPS.get(reason), reason)
    return Reply(text=scrub(message.get("content") or message.get("refusal") or ""), tool_calls=calls,
                 usage={"input_tokens": usage.get("prompt_tokens") or 0,
                        "output_tokens": usage.get("completion_tokens") or 0}, stop=stop, provider_stop=reason)


class OpenAIModel:
    """GPT models through Chat Completions. ``OpenAIModel()`` reads OPENAI_API_KEY / OPENAI_BASE_URL."""

    def __init__(self, model: str | None = None, *, client=None, base_url: str | None = None,
                 api_key: str | None = None, native_tools: bool = True, max_retries: int = 2,
                 provider: str = "openai", max_tokens: int | None = None):
        self.provider, self.model = provider, model or model_id(provider)   # provider "ollama": a local Ollama server
        if max_tokens is not None and (type(max_tokens) is not int or max_tokens < 1):
            raise ValueError(f"max_tokens must be a positive whole number or None, not {max_tokens!r}")
        self.native_tools, self.max_tokens = native_tools, max_tokens   # None: the model's own limit
        self.client = client or make_client("openai", base_url=base_url, api_key=api_key, max_retries=max_retries)

    @classmethod
    def ollama(cls, model: str | None = None, *, base_url: str = OLLAMA_URL, api_key: str = "ollama",
               **kwargs) -> "OpenAIModel":
        """A local Ollama server through its OpenAI-compatible endpoint (it ignores the key)."""
        return cls(model, base_url=base_url, api_key=api_key, provider="ollama", **kwargs)

    def request(self, messages: list[dict], tools: Mapping[str, Callable] | None = None,
                tool_choice: str | None = None) -> dict:
        """The keyword arguments for ``client.chat.completions.create``: plain data, handy to print.
        ``tool_choice`` (stage 11): ``"auto"``, ``"any"`` (sent as ``"required"``), ``"none"`` or a tool's name."""
        request = {"model": self.model, "messages": history_to_openai(messages)}
        if tools and self.native_tools:
            request["tools"] = tools_to_openai(tools)
        if tool_choice is not None:
            request["tool_choice"] = choice_to_openai(checked_choice(tool_choice, tools))
        if self.max_tokens:   # OpenAI's current name for the output limit; Ollama's endpoint knows the old one
            request["max_completion_tokens" if self.provider == "openai" else "max_tokens"] = self.max_tokens
        return scrub(request)   # half an emoji cannot be sent as UTF-8: it becomes U+FFFD

    @property
    def protocol(self):   # how the Agent talks to it: native tool calls, or None for the text protocol
        return NATIVE if self.native_tools else None

    def complete(self, messages: list[dict], tools: Mapping[str, Callable] | None = None,
                 tool_choice: str | None = None) -> Reply:
        # a subclass written before stage 11 may override request(messages, tools): pass tool_choice only if set
        request = self.request(messages, tools) if tool_choice is None else self.request(messages, tools, tool_choice)
        response = call_api(self.provider, self.model, lambda: self.client.chat.completions.create(**request),
                            base_url=str(getattr(self.client, "base_url", "")))
        return reply_from_openai(response.model_dump())

    def __repr__(self) -> str:
        return f"OpenAIModel(model={self.model!r}, provider={self.provider!r}, native_tools={self.native_tools})"
