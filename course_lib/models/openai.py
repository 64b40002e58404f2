"""Stage 08 — OpenAI's two APIs with native tool calling: Chat Completions (also Ollama's OpenAI-compatible
endpoint) and the Responses API, which OpenAI recommends for new projects.

Adds: ``tools_to_openai``, ``history_to_openai`` (arguments sent back as JSON text, each result a ``"tool"`` message),
``reply_from_openai`` (arguments that are not JSON reach the dispatcher as text, for the model to fix; ``"length"`` →
``"max_tokens"``, ``"content_filter"`` or a refusal → ``"refused"``) and ``OpenAIModel``, ``.ollama()`` for Ollama.
For the Responses API, ``history_to_responses`` (the history as *items*: each result a ``function_call_output``
matched by ``call_id``), ``reply_from_responses`` (status ``incomplete`` → ``"max_tokens"`` or ``"refused"``) and
``OpenAIResponsesModel``. It stores nothing at OpenAI (``store: false``): the whole history goes each time, so
reasoning items come back encrypted (``include``) and return verbatim before the calls they led to; each tool says
``strict: false`` (left out, the Responses API would make every optional argument required).

Both move tokens read from OpenAI's prompt cache out of the input count, to ``cache_read_input_tokens`` (stage 09).

Leaves out: ``previous_response_id`` (the stored, stateful way), structured outputs (lesson 11b) and images.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Mapping

from ..describe import sent_spec
from .base import ModelError, Reply, ToolCall, scrub
from .catalog import OLLAMA_URL, model_id
from .remote import RemoteModel, checked_choice, make_client, send

STOPS = {"length": "max_tokens", "content_filter": "refused"}


def tools_to_openai(tools: Mapping[str, Callable]) -> list[dict]:
    return [{"type": "function", "function": sent_spec(name, func)} for name, func in tools.items()]


def choice_to_openai(choice: str, flat: bool = False):
    """The course's tool_choice (``auto``, ``any``, ``none`` or a tool's name) as Chat Completions writes it
    (``flat``: as the Responses API writes it, the name beside the type)."""
    if choice in ("auto", "any", "none"):
        return "required" if choice == "any" else choice
    return {"type": "function", "name": choice} if flat else {"type": "function", "function": {"name": choice}}


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
    usage = data.get("usage") or {}   # cached tokens are counted inside prompt_tokens: the course counts them apart
    hit = min((usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0, usage.get("prompt_tokens") or 0)
    reason = choice.get("finish_reason")   # a refusal overrides it
    stop, reason = ("refused", "refusal") if message.get("refusal") else (STOPS.get(reason), reason)
    return Reply(text=scrub(message.get("content") or message.get("refusal") or ""), tool_calls=calls,
                 usage={"input_tokens": (usage.get("prompt_tokens") or 0) - hit, "output_tokens": usage.get(
                     "completion_tokens") or 0, **({"cache_read_input_tokens": hit} if hit else {})},
                 stop=stop, provider_stop=reason)


class OpenAIModel(RemoteModel):
    """GPT models through Chat Completions. ``OpenAIModel()`` reads OPENAI_API_KEY / OPENAI_BASE_URL."""

    def __init__(self, model: str | None = None, *, client=None, base_url: str | None = None,
                 api_key: str | None = None, native_tools: bool = True, max_retries: int = 2,
                 provider: str = "openai", max_tokens: int | None = None, stream: bool = False, on_text=None):
        self.provider, self.model = provider, model or model_id(provider)   # provider "ollama": a local Ollama server
        if max_tokens is not None and (type(max_tokens) is not int or max_tokens < 1):
            raise ValueError(f"max_tokens must be a positive whole number or None, not {max_tokens!r}")
        self.native_tools, self.max_tokens, self.stream, self.on_text = native_tools, max_tokens, stream, on_text
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
        if self.stream:   # without this, a stream reports no token counts
            request["stream_options"] = {"include_usage": True}
        return scrub(request)   # half an emoji cannot be sent as UTF-8: it becomes U+FFFD

    def complete(self, messages: list[dict], tools: Mapping[str, Callable] | None = None,
                 tool_choice: str | None = None) -> Reply:
        # a subclass written before stage 11 may override request(messages, tools): pass tool_choice only if set
        request = self.request(messages, tools) if tool_choice is None else self.request(messages, tools, tool_choice)
        chat = self.client.chat.completions
        return reply_from_openai(send(self, self.provider, chat, request, "current_completion_snapshot"))


# -- the Responses API ---------------------------------------------------------------------------------
INCOMPLETE = {"max_output_tokens": "max_tokens", "content_filter": "refused"}   # incomplete_details.reason


def _assistant_items(m: dict) -> list[dict]:
    raw = m.get("raw")
    if isinstance(raw, dict) and raw.get("format") == "openai-responses":
        return list(raw["content"])   # exactly the output items sent: reasoning (encrypted), message, calls
    items = [{"role": "assistant", "content": m["content"]}] if m.get("content") else []
    return items + [{"type": "function_call", "call_id": c["id"], "name": c["name"],
                     "arguments": json.dumps(c["args"], ensure_ascii=False)} for c in m.get("tool_calls") or []]


def history_to_responses(history: list[dict]) -> tuple[str, list[dict]]:
    """(instructions, input items) for ``responses.create``: the system messages become ``instructions``."""
    instructions = "\n\n".join(m["content"] for m in history if m["role"] == "system")
    items: list[dict] = []
    for m in history:
        if m["role"] == "assistant":
            items += _assistant_items(m)
        elif m["role"] == "tool":
            items.append({"type": "function_call_output", "call_id": m["tool_call_id"], "output": m["content"]})
        elif m["role"] != "system":
            items.append({"role": m["role"], "content": m["content"]})
    return instructions, items


def reply_from_responses(data: dict) -> Reply:
    output, status = data.get("output") or [], data.get("status")
    if status == "failed":   # the response object itself says the model failed
        raise ModelError(f"OpenAI could not finish this response: {(data.get('error') or {}).get('message')}")
    parts = [p for i in output if i.get("type") == "message" for p in i.get("content") or []]
    refusals = [p.get("refusal") or "" for p in parts if p.get("type") == "refusal"]
    reason = (data.get("incomplete_details") or {}).get("reason")
    stop, why = (("refused", "refusal") if refusals else   # any other incomplete reason: cut off too
                 (INCOMPLETE.get(reason, "max_tokens"), reason or status) if status == "incomplete" else (None, status))
    calls = tuple(ToolCall(name=i["name"], args=scrub(_arguments(i.get("arguments"))), id=i["call_id"])
                  for i in output if i.get("type") == "function_call")
    text = "".join(refusals) or "".join(p.get("text", "") for p in parts if p.get("type") == "output_text")
    thinking = [s.get("text", "") for i in output if i.get("type") == "reasoning" for s in i.get("summary") or []]
    usage = data.get("usage") or {}   # as in Chat Completions: cached tokens taken out of the input count
    hit = min((usage.get("input_tokens_details") or {}).get("cached_tokens") or 0, usage.get("input_tokens") or 0)
    return Reply(text=scrub(text), tool_calls=calls, stop=stop, provider_stop=why, thinking="\n".join(thinking),
                 usage={"input_tokens": (usage.get("input_tokens") or 0) - hit, "output_tokens": usage.get(
                     "output_tokens") or 0, **({"cache_read_input_tokens": hit} if hit else {})},
                 raw={"format": "openai-responses", "content": output})


class OpenAIResponsesModel(OpenAIModel):
    """GPT models through the Responses API (``client.responses.create``); options as ``OpenAIModel``'s, and
    ``reasoning``, e.g. ``{"effort": "low", "summary": "auto"}``, sent as it is."""

    def __init__(self, model: str | None = None, *, reasoning: dict | None = None, **options):
        super().__init__(model, **options)
        self.reasoning = reasoning

    def request(self, messages: list[dict], tools: Mapping[str, Callable] | None = None,
                tool_choice: str | None = None) -> dict:
        """The keyword arguments for ``client.responses.create``: plain data, handy to print."""
        instructions, items = history_to_responses(messages)
        request = {"model": self.model, "input": items, "store": False, "include": ["reasoning.encrypted_content"]}
        if instructions:
            request["instructions"] = instructions
        if tools and self.native_tools:
            request["tools"] = [{"type": "function", **sent_spec(n, f), "strict": False} for n, f in tools.items()]
        if tool_choice is not None:
            request["tool_choice"] = choice_to_openai(checked_choice(tool_choice, tools), flat=True)
        if self.max_tokens:
            request["max_output_tokens"] = self.max_tokens
        if self.reasoning is not None:
            request["reasoning"] = self.reasoning
        return scrub(request)

    def complete(self, messages: list[dict], tools: Mapping[str, Callable] | None = None,
                 tool_choice: str | None = None) -> Reply:
        request = self.request(messages, tools) if tool_choice is None else self.request(messages, tools, tool_choice)
        return reply_from_responses(send(self, "openai", self.client.responses, request, None))
