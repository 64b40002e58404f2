"""The stand-in's streams: a reply it has built (in its API's shape, from the same script) sent as that API streams
it, so an SDK's stream reader or an adapter's delta assembler can be tried offline against the real wire format.

- Anthropic (``"stream": true``): server-sent events ``message_start``, ``ping``, then per content block
  ``content_block_start`` / ``content_block_delta`` (``text_delta``, ``input_json_delta``, ``thinking_delta`` then
  ``signature_delta``) / ``content_block_stop``, then ``message_delta`` (stop reason, output tokens) and
  ``message_stop`` (platform.claude.com/docs/en/build-with-claude/streaming; anthropic/types/raw_*_event.py).
- Chat Completions: ``data:`` lines of ``chat.completion.chunk`` objects, the role first, then content or refusal
  pieces and ``tool_calls`` pieces matched by ``index`` (id and name in the first, the arguments' text after), then
  the ``finish_reason``; a usage chunk with empty ``choices`` when ``stream_options.include_usage`` is set; then
  ``data: [DONE]`` (openai/types/chat/chat_completion_chunk.py).
- Responses: typed events with a ``sequence_number``: ``response.created``, ``response.in_progress``, per output
  item ``response.output_item.added``, its parts and deltas (``response.output_text.delta``,
  ``response.refusal.delta``, ``response.function_call_arguments.delta``) and their ``.done`` events,
  ``response.output_item.done``, then ``response.completed`` or ``response.incomplete`` with the whole response
  (openai/types/responses/response_stream_event.py).
- Ollama (``/api/chat`` streams unless sent ``"stream": false``): one JSON object per line, ``"done": false`` with a
  piece of the message (tool calls whole, in one line), then ``"done": true`` with the reason and the token counts.

A call cut off by the token limit (``args`` as text in the script) streams that text as its argument pieces. A turn
with ``"stream_cut": n`` stops after ``n`` events (lines, for Ollama) and closes the connection without the last
chunk of its HTTP body: a stream that broke off, as the SDK's HTTP client meets one. ``"stream_error": n``: after
``n`` events, the API's error event (an overload, a server error), and the stream ends.
"""
from __future__ import annotations

import json
from typing import NamedTuple

_DELTA_USAGE = ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
PIECE = 8   # characters per delta: small, so a reader meets a word, a Korean syllable or a JSON token split in two


def _pieces(text: str) -> list[str]:
    return [text[i:i + PIECE] for i in range(0, len(text), PIECE)]


def _sse(event: str | None, data) -> bytes:
    line = data if isinstance(data, str) else json.dumps(data)   # \u escapes: half an emoji cannot break a line
    return (f"event: {event}\n" if event else "").encode() + f"data: {line}\n\n".encode()


class Streamed(NamedTuple):   # what the handler writes piece by piece, then closes the connection
    content_type: str
    pieces: list[bytes]
    broken: bool = False   # stopped short: the connection closes mid-stream


def events(api: str, body: dict, reply: dict, turn: dict) -> Streamed:
    """The stream of ``reply`` as ``api`` sends it: its content type and its pieces, in order."""
    pieces = {"anthropic": _anthropic, "openai": _chat, "responses": _responses, "ollama": _ollama}[api](
        body, reply, [c.get("args") if isinstance(c.get("args"), str) else None for c in turn.get("tool_calls", [])])
    cut, kind = turn.get("stream_cut"), "application/x-ndjson" if api == "ollama" else "text/event-stream"
    if isinstance(turn.get("stream_error"), int):   # the server's error event after that many events, and the end
        return Streamed(kind, pieces[:turn["stream_error"]] + [_error_event(api, turn["stream_error"])])
    return Streamed(kind, pieces[:cut], True) if isinstance(cut, int) else Streamed(kind, pieces)


def _error_event(api: str, n: int) -> bytes:
    """An error in the middle of a stream, as each API sends one (Anthropic: an ``error`` event, documented for an
    overload; Chat Completions: a chunk that is an ``error`` object; Responses: an ``error`` event; Ollama: a line
    with ``error``); the messages are ours."""
    if api == "anthropic":
        return _sse("error", {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    if api == "responses":
        return _sse("error", {"type": "error", "code": "server_error", "message": "The server had an error while "
                              "processing your request.", "param": None, "sequence_number": n})
    error = {"message": "The server had an error while processing your request.", "type": "server_error"}
    if api == "openai":
        return _sse(None, {"error": error})
    return (json.dumps({"error": error["message"]}) + "\n").encode()


def _anthropic(body: dict, reply: dict, cut: list) -> list[bytes]:
    usage = reply["usage"]
    start = {**reply, "content": [], "stop_reason": None, "stop_sequence": None,
             "usage": {**usage, "output_tokens": min(1, usage.get("output_tokens", 0))}}
    out = [_sse("message_start", {"type": "message_start", "message": start}), _sse("ping", {"type": "ping"})]
    calls = iter(cut)
    for i, block in enumerate(reply["content"]):
        kind, deltas = block.get("type"), []
        if kind == "text":
            opened = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": p} for p in _pieces(block["text"])]
        elif kind == "thinking":
            opened = {"type": "thinking", "thinking": "", "signature": ""}
            deltas = [{"type": "thinking_delta", "thinking": p} for p in _pieces(block["thinking"])]
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
        elif kind == "tool_use":
            opened = {**block, "input": {}}
            text = next(calls, None)
            text = text if text is not None else json.dumps(block["input"], ensure_ascii=False)
            deltas = [{"type": "input_json_delta", "partial_json": p} for p in _pieces(text)]
        else:   # redacted thinking, server tools' blocks, anything else: whole, in its start event
            opened = block
        out.append(_sse("content_block_start", {"type": "content_block_start", "index": i, "content_block": opened}))
        out += [_sse("content_block_delta", {"type": "content_block_delta", "index": i, "delta": d}) for d in deltas]
        out.append(_sse("content_block_stop", {"type": "content_block_stop", "index": i}))
    counts = {k: v for k, v in usage.items() if k in _DELTA_USAGE}   # totals so far (anthropic MessageDeltaUsage)
    delta = {"stop_reason": reply["stop_reason"], "stop_sequence": reply["stop_sequence"],
             **({"stop_details": reply["stop_details"]} if "stop_details" in reply else {})}
    out.append(_sse("message_delta", {"type": "message_delta", "delta": delta, "usage": counts}))
    return out + [_sse("message_stop", {"type": "message_stop"})]


def _chat(body: dict, reply: dict, cut: list) -> list[bytes]:
    choice, head = reply["choices"][0], {k: reply[k] for k in ("id", "created", "model")}
    message = choice["message"]

    def chunk(delta: dict, finish=None) -> bytes:
        return _sse(None, {**head, "object": "chat.completion.chunk",
                           "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}]})
    out = [chunk({"role": "assistant", "content": ""})]
    out += [chunk({"content": p}) for p in _pieces(message.get("content") or "")]
    out += [chunk({"refusal": p}) for p in _pieces(message.get("refusal") or "")]
    for k, call in enumerate(message.get("tool_calls") or []):
        out.append(chunk({"tool_calls": [{"index": k, "id": call["id"], "type": "function",
                                          "function": {"name": call["function"]["name"], "arguments": ""}}]}))
        out += [chunk({"tool_calls": [{"index": k, "function": {"arguments": p}}]})
                for p in _pieces(call["function"]["arguments"])]
    out.append(chunk({}, choice["finish_reason"]))
    if (body.get("stream_options") or {}).get("include_usage"):
        out.append(_sse(None, {**head, "object": "chat.completion.chunk", "choices": [], "usage": reply["usage"]}))
    return out + [_sse(None, "[DONE]")]


def _responses(body: dict, reply: dict, cut: list) -> list[bytes]:
    out: list[bytes] = []

    def send(kind: str, **fields) -> None:
        out.append(_sse(kind, {"type": kind, "sequence_number": len(out), **fields}))
    opening = {**reply, "status": "in_progress", "output": [], "usage": None, "incomplete_details": None}
    send("response.created", response=opening)
    send("response.in_progress", response=opening)
    for i, item in enumerate(reply["output"]):
        at = {"item_id": item["id"], "output_index": i}
        if item["type"] == "message":
            send("response.output_item.added", output_index=i, item={**item, "status": "in_progress", "content": []})
            for j, part in enumerate(item["content"]):
                text = part["text"] if part["type"] == "output_text" else part["refusal"]
                empty = {**part, "text": ""} if part["type"] == "output_text" else {**part, "refusal": ""}
                send("response.content_part.added", **at, content_index=j, part=empty)
                kind = "response.output_text" if part["type"] == "output_text" else "response.refusal"
                for p in _pieces(text):
                    send(f"{kind}.delta", **at, content_index=j, delta=p,
                         **({"logprobs": []} if part["type"] == "output_text" else {}))
                send(f"{kind}.done", **at, content_index=j,
                     **({"text": text, "logprobs": []} if part["type"] == "output_text" else {"refusal": text}))
                send("response.content_part.done", **at, content_index=j, part=part)
        elif item["type"] == "function_call":
            send("response.output_item.added", output_index=i, item={**item, "status": "in_progress",
                                                                     "arguments": ""})
            for p in _pieces(item["arguments"]):
                send("response.function_call_arguments.delta", **at, delta=p)
            send("response.function_call_arguments.done", **at, name=item["name"], arguments=item["arguments"])
        else:   # a reasoning item: whole, when added and when done
            send("response.output_item.added", output_index=i, item=item)
        send("response.output_item.done", output_index=i, item=item)
    send("response.incomplete" if reply["status"] == "incomplete" else "response.completed", response=reply)
    return out


def _ollama(body: dict, reply: dict, cut: list) -> list[bytes]:
    message, head = reply["message"], {"model": reply["model"], "created_at": reply["created_at"]}

    def line(part: dict, **end) -> bytes:
        return (json.dumps({**head, "message": {"role": "assistant", "content": "", **part}, "done": bool(end),
                            **end}) + "\n").encode()
    out = [line({"content": "", "thinking": p}) for p in _pieces(message.get("thinking") or "")]
    out += [line({"content": p}) for p in _pieces(message.get("content") or "")]
    out += [line({"tool_calls": message["tool_calls"]})] if message.get("tool_calls") else []
    return out + [line({}, **{k: reply[k] for k in ("done_reason", "prompt_eval_count", "eval_count")})]
