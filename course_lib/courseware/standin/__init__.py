"""A local stand-in server for the model APIs, so stage 08 runs with no key and no network.

``StandInServer`` is a stdlib HTTP server on 127.0.0.1 (a random free port) speaking the Anthropic Messages
API (``POST /v1/messages``), OpenAI Chat Completions (``POST /v1/chat/completions``), OpenAI's Responses API
(``POST /v1/responses``) and Ollama's ``POST /api/chat``, and counts tokens as the first and third do
(``POST /v1/messages/count_tokens``, ``/v1/responses/input_tokens``: its own estimate). It is not a model: it
answers from a script of turns, one per request, and checks each request as the real API would, refusing a
broken one with that API's status, error shape and (where we found them) words: a key is sent; each tool call
is answered by its id, results first; no empty message, no assistant prefill; valid tool names and schemas;
thinking blocks come back unchanged, in a conversation that has only grown since; strict tools and JSON outputs
(structured outputs) use only the JSON Schema that strict mode takes, and a scripted reply must fit them. Point
the real SDKs at it with ``base_url``:

    with StandInServer([{"tool_calls": [{"name": "lookup", "args": {"topic": "단가"}}]},
                        {"text": "Seven units cost $168."}]) as server:
        model = AnthropicModel(base_url=server.url, api_key="stand-in")

A turn is a dict (a plain string is a text turn): ``text``; ``tool_calls`` ``[{"name", "args"}]`` (``args``
as a string: a call cut off mid-way, sent as OpenAI's ``arguments`` text, as empty input elsewhere);
``usage``; ``thinking`` (text, ``""`` if omitted) and ``redacted_thinking: True``: signed Anthropic blocks
that open the reply; ``blocks``: more Anthropic blocks, sent as they are; ``stop_reason``,
``finish_reason``, ``done_reason`` (Anthropic, OpenAI, Ollama), verbatim; ``incomplete``: the Responses API's
``incomplete_details.reason``; ``refusal`` (text, or ``True``; OpenAI's ``message.refusal`` or a refusal item,
Anthropic's ``stop_reason: "refusal"`` with ``stop_details``). ``thinking`` is a reasoning item for the
Responses API (encrypted when the request ``include``s it). ``stream_cut: n``: a streamed reply breaks off after
``n`` events; ``stream_error: n``: the API's error event after ``n`` events. An error turn:
``{"status": 429, "message", "type", "code", "param", "retry_after": seconds}``. Unscripted usage is an
estimate, a token per four characters; for Anthropic, prefixes marked ``cache_control`` are kept as the API's
prompt cache keeps them and the usage says what was written and read (``caching``). ``requests`` keeps every
request body, ``problems`` a sentence per rule broken (for the tool-result checks the stand-in's own plainer
one; the reply has the API's words).

A request with ``"stream": true`` (for Ollama, one without ``"stream": false``) gets the same reply streamed as
that API streams it: server-sent events, or Ollama's lines of JSON (``stream``).

The parts: ``server`` (the script and each request's checks), ``handler`` (the HTTP side), ``common`` (errors
and turns), ``caching`` (the prompt caches), ``schemas`` (strict mode), ``stream``, and one module per wire format:
``anthropic``, ``openai``, ``responses``, ``ollama``.

It leaves out any intelligence: the replies are whatever the script says. Error texts we could not find are
paraphrased, and a comment says so.
"""
from .server import StandInServer

__all__ = ["StandInServer"]
