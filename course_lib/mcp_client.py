"""Stage 13 — an MCP client: start any MCP server and use its tools in the unchanged ``Agent``.

Adds: ``connect_mcp(command)``: a server started without your API keys, its tools (by the official SDK) as
functions in an ``MCPTools``; every request times out, and a failure is a ``ToolError`` saying why.

Leaves out: the session-less 2026-07-28 protocol, the HTTP transport, and deciding which servers to trust.
"""
from __future__ import annotations

import logging
import os
import sys
import tempfile
from collections.abc import Mapping
from contextlib import asynccontextmanager, contextmanager

from .mcp_bridge import _one_line, as_function
from .tools import ToolError

DEFAULT_TIMEOUT = 30.0   # seconds a server may take to start, or to answer one call


class MCPTools(dict):
    """Name → function; ``server``: its name and version; ``left_out``: tools that cannot be Python functions."""


@contextmanager
def connect_mcp(command: list[str], *, timeout: float = DEFAULT_TIMEOUT, cwd: str | None = None,
                env: Mapping[str, str] | None = None):
    """Start the MCP server ``command`` (e.g. ``[sys.executable, "-m", "mcp_server_time"]``) and yield its tools
    until the block ends. Only ``env`` and basic variables (PATH, HOME, ...) reach it; not starting: ConnectionError."""
    if not (isinstance(command, (list, tuple)) and command and all(isinstance(c, str) and c for c in command)):
        raise ValueError(
            f"command must be a non-empty list of strings, e.g. ['python', '-m', 'server'], not {command!r}")
    from anyio.from_thread import start_blocking_portal
    from mcp import StdioServerParameters
    from mcp.types import CONNECTION_CLOSED, REQUEST_TIMEOUT
    from pydantic import ValidationError

    if not logging.getLogger("mcp").handlers:   # with no handler, Python would print the SDK's logs (tracebacks)
        logging.getLogger("mcp").addHandler(logging.NullHandler())
    params = StdioServerParameters(command=command[0], args=list(command[1:]), cwd=cwd, env=dict(env or {}))
    shown = " ".join(["python" if command[0] == sys.executable else command[0], *command[1:]])   # as given
    shown = shown.replace(os.path.expanduser("~"), "~") if len(os.path.expanduser("~")) > 1 else shown
    heard: dict = {"garbled": [], "echo": False}   # lines on its stdout that were not JSON-RPC; our request back
    with tempfile.TemporaryFile("a+b") as errlog, start_blocking_portal() as portal:   # a+: it writes at the end
        def why(e: BaseException, since: int = 0) -> str:
            while isinstance(e, BaseExceptionGroup) and e.exceptions:   # anyio's task groups wrap what they raise
                e = e.exceptions[0]
            text = str(getattr(e, "message", "") or e) or type(e).__name__
            garbled = [_one_line(g.errors()[0].get("input") if isinstance(g, ValidationError) else g)[:80]
                       for g in heard["garbled"][:1]]
            if getattr(e, "code", None) == REQUEST_TIMEOUT:   # the hang guard
                text = f"no answer within {timeout:g} seconds (the request was cancelled)"
            elif isinstance(e, OSError) and e.strerror:
                text = f"cannot run it ({e.strerror})"
            elif "portal is not running" in text:
                text = "the connection is closed (call its tools inside the `with connect_mcp(...)` block)"
            elif heard["echo"]:
                text = ("it is not an MCP server: it sent our `initialize` request back, as a program that echoes "
                        "what it reads (such as `cat`) does")
            elif isinstance(e, ValidationError):   # the spec's shape, checked by the SDK's pydantic models
                where = ".".join(map(str, e.errors()[0]["loc"]))
                text = (f"its answer does not follow the MCP spec: {e.title} has {e.error_count()} problem"
                        f"{'s' * (e.error_count() > 1)}, the first: {where}: {e.errors()[0]['msg']}")
            elif "closed" in text.lower():   # a print() on stdout is the commonest bug of a stdio server
                text = (f"it printed {garbled[0]!r} on stdout, which is not a JSON-RPC message (a server's logs go "
                        "to stderr), then stopped" if garbled else "it stopped (the connection closed)")
                garbled = []
            if garbled:
                text += f"; it also printed {garbled[0]!r} on stdout, which is not a JSON-RPC message"
            said = "" if errlog.closed or errlog.seek(since) < 0 else errlog.read()[-4000:].decode("utf-8", "replace")
            last = [line.strip() for line in said.splitlines() if line.strip()][-3:]   # its last words on stderr
            return text + (f". Its last words on stderr: {' | '.join(last)}" if last else "")

        opened = portal.wrap_async_context_manager(_open(params, errlog, timeout, heard))
        try:
            session, listed, server = opened.__enter__()
        except Exception as e:
            raise ConnectionError(f"could not start the MCP server `{shown}`: {why(e)}") from None

        def call(name: str, args: dict) -> dict:
            since = 0 if errlog.closed else errlog.seek(0, os.SEEK_END)   # only what it says from now on
            try:
                reply = portal.call(session.call_tool, name, args)
                return reply.model_dump(by_alias=True, mode="json", exclude_none=True)
            except Exception as e:
                if getattr(e, "code", None) not in (None, CONNECTION_CLOSED, REQUEST_TIMEOUT):   # the server's own
                    raise ToolError(f"the server refused the call: {e.message} (JSON-RPC error {e.code})") from None
                said = "gave an answer that does not fit" if isinstance(e, ValidationError) else "did not answer"
                raise ToolError(f"the MCP server `{shown}` {said}: {why(e, since)}") from None

        tools = MCPTools()
        tools.server, tools.left_out = server, {}   # left_out: name → why
        for tool in listed:
            try:
                tools[tool["name"]] = as_function(tool, call)
            except ValueError as e:
                tools.left_out[tool["name"]] = str(e)
        try:
            yield tools
        finally:
            opened.__exit__(None, None, None)


@asynccontextmanager
async def _open(params, errlog, timeout: float, heard: dict):
    """The SDK's stdio client and session, initialised, with every tool listed; every request times out."""
    import anyio
    from mcp import ClientSession, stdio_client
    from mcp.types import PaginatedRequestParams

    async def note(message):   # a line on stdout that is not JSON-RPC arrives here as an exception
        if isinstance(message, Exception):
            heard["garbled"].append(message)

    async def relay(read, to_session):   # the server's messages on their way: our own `initialize` is an echo
        async with to_session:
            async for item in read:
                heard["echo"] |= getattr(getattr(item, "message", None), "method", None) == "initialize"
                await to_session.send(item)

    async with stdio_client(params, errlog=errlog) as (read, write), anyio.create_task_group() as tasks:
        to_session, received = anyio.create_memory_object_stream(0)
        tasks.start_soon(relay, read, to_session)
        async with ClientSession(received, write, read_timeout_seconds=timeout, message_handler=note) as session:
            hello, page = await session.initialize(), await session.list_tools()
            tools = list(page.tools)
            while page.next_cursor is not None:   # tools/list is paginated; the read timeout bounds a loop
                page = await session.list_tools(params=PaginatedRequestParams(cursor=page.next_cursor))
                tools += page.tools
            yield session, [t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in tools], \
                f"{hello.server_info.name} {hello.server_info.version}".strip()
        tasks.cancel_scope.cancel()
