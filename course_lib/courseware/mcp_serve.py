"""``course mcp serve``: the course's tools over stdio, with the official SDK's server (``build_server``, stage 13)
and a thin layer before it for what the SDK leaves undone.

``refusal(line)`` is the answer JSON-RPC 2.0 gives a line that is not a message, which the SDK drops without a word
(a client waiting for that answer would wait for ever): -32700, -32600, -32602. ``serve(tools)`` keeps the
client's pipes for itself (a tool that reads stdin or prints reaches /dev/null and stderr instead), answers such
lines, and when stdin closes lets the calls still running answer before it stops (the SDK alone cancels them).
"""
from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping

from ..mcp_bridge import build_server


def refusal(line: str) -> dict | None:
    """The answer JSON-RPC 2.0 gives a line that is not a message (the SDK drops it without a word): -32700 if it
    is not JSON, -32600 if it is not a request, notification or response (id null unless it has a usable one: MCP
    ids are strings or integers), -32602 for params that are not an object. None: a message for the SDK."""
    from mcp.types import jsonrpc_message_adapter

    def error(code: int, n, text: str) -> dict:
        return {"jsonrpc": "2.0", "id": n, "error": {"code": code, "message": text}}
    try:
        message = json.loads(line)
    except (ValueError, RecursionError):
        return error(-32700, None, "Parse error: the line is not JSON")
    if not isinstance(message, dict):
        return error(-32600, None, "Invalid Request: a message is a JSON object (MCP sends no batches)")
    n = message.get("id")
    if "id" in message and type(n) not in (int, str):
        return error(-32600, None, "Invalid Request: an id is a string or an integer (MCP: never null)")
    try:
        jsonrpc_message_adapter.validate_python(message)   # (no field of the envelope has an alias)
        return None
    except ValueError:
        if message.get("jsonrpc") != "2.0" or not isinstance(message.get("method"), str):
            return error(-32600, n, 'Invalid Request: a request has "jsonrpc": "2.0", an id and a "method"')
        return None if "id" not in message else error(-32602, n, "Invalid params: params are an object in MCP")


def serve(tools: Mapping[str, Callable] | None = None) -> None:
    """Serve ``tools`` (default: the course's tools) over stdio until the client closes stdin and every call begun
    has been answered. A line the SDK would drop gets its ``refusal``; a tool's print() goes to stderr."""
    import anyio
    from mcp.shared.message import SessionMessage
    from mcp.types import JSONRPCRequest, jsonrpc_message_adapter

    server, running = build_server(tools), set()   # running: the ids of requests not answered yet
    wire = os.dup(0), os.dup(1)   # the client's pipes, for us alone: a tool that reads stdin or prints
    os.dup2(os.open(os.devnull, os.O_RDONLY), 0)   # reaches /dev/null and stderr instead
    os.dup2(2, 1)

    async def read(to_sdk, refused):
        async with to_sdk, refused:
            async for line in anyio.wrap_file(open(wire[0], encoding="utf-8", errors="replace", closefd=False)):
                if line.strip() and (answer := refusal(line)) is not None:
                    await refused.send(json.dumps(answer, ensure_ascii=False))
                elif line.strip():
                    message = jsonrpc_message_adapter.validate_python(json.loads(line))   # as refusal did
                    if isinstance(message, JSONRPCRequest):
                        running.add(repr(message.id))
                    elif getattr(message, "method", None) == "notifications/cancelled":   # never answered
                        running.discard(repr((message.params or {}).get("requestId")))
                    await to_sdk.send(SessionMessage(message))
            while running:   # stdin closed: the SDK would cancel the calls still running, so they finish first
                await anyio.sleep(0.02)

    async def write(answers):
        out = anyio.wrap_file(open(wire[1], "w", encoding="utf-8", newline="\n", closefd=False))
        async for item in answers:
            if isinstance(item, SessionMessage):
                if not hasattr(item.message, "method"):   # an answer, not a request or notification of the SDK's
                    running.discard(repr(item.message.id))
                item = item.message.model_dump_json(exclude_unset=True)   # result and params are dicts already
            await out.write(item + "\n")
            await out.flush()

    async def main():
        to_sdk, from_client = anyio.create_memory_object_stream(0)
        to_client, answers = anyio.create_memory_object_stream(0)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(read, to_sdk, to_client.clone())
            tasks.start_soon(write, answers)
            await server.run(from_client, to_client, server.create_initialization_options())
    try:
        anyio.run(main)
    finally:
        os.dup2(wire[0], 0)
        os.dup2(wire[1], 1)
