"""Stage 08 — what the real-API adapters share: an SDK client, and SDK errors as one readable sentence.

Adds: ``make_client``; ``call_api``, which turns an SDK error into a ``ModelError`` (``explain_api_error``): what
happened and what to do (a key without billing is not a rate limit, a 404 may be the base URL, a full context
ends the run with ``"context_full"``, a ``TransientError`` may work later), then the API's own words, key-like
text masked, and the request id; ``checked_choice``, a ``tool_choice`` both adapters accept (stage 11 uses it);
``RemoteModel``, what the adapters share; ``send``, one request sent or streamed (``read_stream``).

Leaves out: retries (the SDKs' ``max_retries=2`` retry 408, 409, 429 and 5xx). The SDKs load only when used.
"""
from __future__ import annotations

import os
import re

from .base import ContextFullError, ModelError
from .native import NATIVE

KEY_VARS = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}
URL_VARS = {"anthropic": "ANTHROPIC_BASE_URL", "openai": "OPENAI_BASE_URL"}
NAMES = {"anthropic": "Anthropic", "openai": "OpenAI", "ollama": "Ollama"}
_KEYISH = re.compile(r"\b(?:sk-[A-Za-z0-9_*-]{6,}|[A-Za-z0-9_-]{32,})")   # key-like tokens, masked in messages


class MissingKeyError(ModelError):
    """No API key in the environment and none given."""


class TransientError(ModelError):
    """Worth asking again later, after the SDK's own retries; ``retry_after``: the server's ``Retry-After``, or None."""
    def __init__(self, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.retry_after = retry_after


def require_key(provider: str, api_key: str | None) -> str:
    key = api_key or os.environ.get(KEY_VARS[provider])
    if not key:
        raise MissingKeyError(f"{KEY_VARS[provider]} is not set: to run live, set it in the terminal (`export "
                              f"{KEY_VARS[provider]}=...`) before starting JupyterLab or `course`; without it the "
                              "notebooks use the local stand-in server.")
    return key


def make_client(provider: str, *, base_url: str | None, api_key: str | None, max_retries: int):
    """An SDK client; key and base URL default to the standard environment variables (the SDK reads the URL one)."""
    key, sdk = require_key(provider, api_key), __import__(provider)   # the SDK (anthropic or openai) loads only now
    return getattr(sdk, NAMES[provider])(api_key=key, base_url=base_url or None, max_retries=max_retries)


def call_api(provider: str, model: str, send, base_url: str = ""):
    """``send()`` an SDK request; an SDK error becomes a one-sentence ModelError, anything else (a bug) raises."""
    try:
        return send()
    except Exception as e:
        if (explained := explain_api_error(e, provider, model, base_url)) is None:
            raise
        raise explained from None


def _error_fields(error) -> tuple[str, str, str]:
    """(message, type, code) from an SDK error's body: a provider's error object, Ollama's plain string, or with
    no JSON body the SDK's own "Error code: ..." text."""
    inner = error.body.get("error", error.body) if isinstance(error.body, dict) else error.body
    if isinstance(inner, dict):
        return str(inner.get("message") or ""), str(inner.get("type") or ""), str(inner.get("code") or "")
    return (inner if isinstance(inner, str) else str(error.message or "")), "", ""


def _quote(message: str, request_id: str | None, limit: int = 300) -> str:
    """' The API said: "..." (request id ...).' to follow a sentence, or '' when there is nothing to quote."""
    message = _KEYISH.sub(lambda m: m[0][:3] + "…", " ".join(message.split()))
    message = message if len(message) <= limit else message[:limit - 1] + "…"
    if not message:
        return f" Request id: {request_id}." if request_id else ""
    return f' The API said: "{message}"' + (f" (request id {request_id})" if request_id else "") + "."


def explain_api_error(error: Exception, provider: str, model: str, base_url: str = "") -> ModelError | None:
    """A ModelError with one sentence saying what went wrong and what to do; None if not an SDK error."""
    name = NAMES[provider]
    if isinstance(error, ValueError) and "Streaming is required" in str(error):
        return ModelError(f"{name}: this max_tokens is too large for a request without streaming (the SDK refuses "
                          "ones that could take over ten minutes, about 21,000 tokens and up); use 16000 or less")
    module = __import__("anthropic" if provider == "anthropic" else "openai")
    if isinstance(error, module.APIConnectionError):
        where = f" at {base_url}" if base_url else ""
        hint = "is `ollama serve` running?" if provider == "ollama" else "check the network or the base URL"
        return TransientError(f"could not reach the {name} server{where} ({type(error).__name__}): {hint}")
    if not isinstance(error, module.APIStatusError):
        return None
    status, (message, kind, code) = error.status_code, _error_fields(error)
    said, low = _quote(message, error.request_id), f"{message} {kind} {code}".lower()   # request_id: None if unsent

    def again(what: str, todo: str) -> TransientError:   # what the SDKs retry themselves, still failing after that
        wait = str(error.response.headers.get("retry-after", "")).strip()   # seconds; an HTTP date is left to the SDK
        return TransientError(f"{what}, still after the SDK's retries: {todo}.{said}",
                              float(wait) if wait.replace(".", "", 1).isdigit() else None)
    if status == 413 or kind == "request_too_large":
        text = f"{name} refused the request as too large (413): trim the conversation or the tool results"
    elif "context_length" in low or "prompt is too long" in low or "context window" in low:
        return ContextFullError(f"The conversation no longer fits the model's context window ({name}, {status}): "
                                f"trim or summarise the history, or start a new run.{said}")
    elif status == 402 or any(w in low for w in ("billing_error", "insufficient_quota", "credit", "usage limit",
                                                 "extra usage")):   # Anthropic's spend limits: a 400, or a 429
        text = (f"{name} says this key has no credit or quota left ({status} {code or kind or 'billing'}): this is "
                "not a rate limit and waiting will not help; add billing or credit to the account, or use another key")
    elif status == 401:
        text = f"{name} rejected the API key (401 authentication error); check {KEY_VARS.get(provider, 'the API key')}"
    elif status == 403:
        text = f"{name} refused access (403 permission denied): this key may not use model '{model}'"
    elif status == 404 and provider == "ollama":
        text = (f"Ollama has no model '{model}' (404): run `ollama pull {model}`, or set COURSE_OLLAMA_MODEL to a "
                "model you have (`ollama list`)")
    elif status == 404 and "item with id" in low:   # the Responses API: an input item it does not know
        text = f"{name} does not know an item this request sends back (404)"
    elif status == 404:
        v1 = ", which for OpenAI ends in /v1" if provider == "openai" else ""
        text = (f"{name} answered 404 not found: either the model ID '{model}' is retired or misspelt (set "
                f"COURSE_{provider.upper()}_MODEL to a current one; `course doctor` checks it) or the base URL is "
                f"wrong (check base_url= or {URL_VARS[provider]}{v1})")
    elif status == 400:
        text = f"{name} rejected the request (400 bad request)"
    elif status == 429:
        return again(f"{name} is rate-limiting this key (429)", "wait a minute and try again")
    elif status == 529 or kind == "overloaded_error" or (status == 503 and "overloaded" in low):
        return again(f"{name}'s API is overloaded right now ({status})", "try again later")
    elif status >= 500 or status in (408, 409):
        what = "a server error" if status >= 500 else "a request timeout" if status == 408 else "a conflict"
        return again(f"{name} had {what} ({status})", "try again later")
    else:
        text = f"{name} answered with an error ({status})"
    return ModelError(text + "." + said)


TOOL_CHOICES = ("auto", "any", "none")   # or a tool's name: that tool must be called (stage 11)


def checked_choice(choice: str, tools) -> str:
    """``choice`` if it is one of TOOL_CHOICES or the name of one of ``tools``; else a ValueError that says why."""
    if choice in TOOL_CHOICES or (isinstance(choice, str) and choice in (tools or {})):
        return choice
    raise ValueError(f"tool_choice must be one of {', '.join(TOOL_CHOICES)} or the name of a tool given, "
                     f"not {choice!r}" + ("" if tools else " (no tools were given)"))


class RemoteModel:
    """What the adapters share; with ``stream=True`` a reply is read as it arrives (``send``), text to ``on_text``."""

    @property
    def protocol(self):   # how the Agent talks to it: native tool calls, or None for the text protocol
        return NATIVE if self.native_tools else None

    def __repr__(self) -> str:
        provider = f", provider={self.provider!r}" if hasattr(self, "provider") else ""
        return f"{type(self).__name__}(model={self.model!r}{provider}, native_tools={self.native_tools})"


# -- streaming: the reply read as it arrives; the loop never needs it, a chat window does (issue 25)
TEXT_EVENTS = {"text": "text", "content.delta": "delta", "response.output_text.delta": "delta"}   # per SDK reader
LAST_EVENTS = ("response.completed", "response.incomplete", "response.failed")   # the Responses API's, whole


def send(model, provider: str, api, request: dict, final: str | None):
    """``api.create(**request)`` through ``call_api``, as plain data; with ``model.stream``, read as ``read_stream``."""
    if not isinstance(model.stream, bool) or not (model.on_text is None or callable(model.on_text)):
        raise TypeError(f"stream is True or False and on_text a function of each piece of text, not "
                        f"{model.stream!r} and {model.on_text!r}")
    streamed = (lambda: api.stream(**request)) if final else (lambda: api.create(**request, stream=True))
    go = (lambda: read_stream(streamed(), final, model.on_text)) if model.stream else (lambda: api.create(**request))
    reply = call_api(provider, model.model, go, base_url=str(getattr(model.client, "base_url", "")))
    return reply.model_dump(exclude_unset=True, mode="json")


def read_stream(opened, final: str | None, on_text=None):
    """The whole reply of an SDK stream read to its end (``final``: the reader's method or property that gives it;
    None: the last event carries it), ``on_text`` shown each piece of text. A stream that broke off (no last event,
    no stop reason, a dropped connection, an error event) is a TransientError: what came is no reply, and a call
    cut off never runs."""
    import httpx2   # the HTTP client under both SDKs
    reply, reading, said = None, False, ""
    try:
        with opened as stream:
            reading = True   # the request was sent and the stream has begun
            for event in stream:
                kind = getattr(event, "type", None)
                if on_text is not None and kind in TEXT_EVENTS:
                    on_text(getattr(event, TEXT_EVENTS[kind]))
                reply = event.response if kind in LAST_EVENTS else reply
                said = getattr(event, "message", "") if kind == "error" else said   # the Responses API's error event
            reply = getattr(stream, final) if final else reply   # a reader's method, or its snapshot (a property)
            reply = reply() if callable(reply) else reply
    except UnicodeError:   # the Anthropic SDK's reader cannot take half an emoji in a tool call's arguments
        raise ModelError("the streamed reply holds half an emoji, which the SDK's stream reader cannot read: send "
                         "this request without streaming") from None
    except Exception as e:   # mid-stream: the connection dropped, or the server sent an error event (an SDK's APIError)
        sdk = any(kind.__name__ == "APIError" for kind in type(e).__mro__)   # what both SDKs' errors derive from
        if not reading or not (isinstance(e, httpx2.TransportError) or sdk):
            raise
        reply, said = None, _error_fields(e)[0] if getattr(e, "body", None) is not None else ""   # its words
    stops = [getattr(reply, "stop_reason", ""), *(c.finish_reason for c in getattr(reply, "choices", None) or [])]
    if reply is None or None in stops:
        raise TransientError(f"the reply's stream broke off before it ended, so none of it is used: try again."
                             + _quote(said, None))
    return reply
