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

from .mcp_bridge import as_function, one_line
from .tools import ToolError

DEFAULT_TIMEOUT = 30.0   # seconds a server may take to start, or to answer one call


class MCPTools(dict):
    """Name → function; ``server``: its name and version; ``left_out``: tools that cannot be Python functions."""


@contextmanager
def connect_mcp(command: list[str], *, timeout: float = DEFAULT_TIMEOUT, cwd: str | None = None,
                env: Mapping[str, str] | None = None):
    """Start the MCP server ``command`` (e.g. ``[sys.executable, "-m", "mcp_server_time"]``) and yield its tools
    until the block ends. Only ``env`` and basic variables (PATH, HOME, ...) reach it; not starting: ConnectionError."""
    params = _params(command, cwd, env)
    from anyio.from_thread import start_blocking_portal
    with tempfile.TemporaryDirectory() as folder, open(os.path.join(folder, "stderr"), "a+b") as errlog, \
            start_blocking_portal() as portal:   # "a": its writes land at the end, wherever we are reading
        server = _Server(command, timeout, errlog, portal)
        opened = portal.wrap_async_context_manager(_open(params, server))
        try:
            server.session, listed, name = opened.__enter__()
        except Exception as e:
            raise ConnectionError(f"could not start the MCP server `{server.shown}`: {server.why(e)}") from None
        try:
            yield server.tools(listed, name)
        finally:
            opened.__exit__(None, None, None)


def _params(command, cwd, env):
    """How the SDK starts the server; a command that is not a list of words is a ValueError."""
    if not (isinstance(command, (list, tuple)) and command and all(isinstance(c, str) and c for c in command)):
        raise ValueError(
            f"command must be a non-empty list of strings, e.g. ['python', '-m', 'server'], not {command!r}")
    from mcp import StdioServerParameters
    if not logging.getLogger("mcp").handlers:   # with no handler, Python would print the SDK's logs (tracebacks)
        logging.getLogger("mcp").addHandler(logging.NullHandler())
    return StdioServerParameters(command=command[0], args=list(command[1:]), cwd=cwd, env=dict(env or {}))


class _Server:
    """One started server, as ``connect_mcp`` talks to it: what it printed on stdout that was not JSON-RPC
    (``garbled``), whether it sent our own request back (``echo``), its stderr (``errlog``), and each call."""

    def __init__(self, command, timeout: float, errlog, portal):
        self.timeout, self.errlog, self.portal, self.session = timeout, errlog, portal, None
        self.garbled, self.echo = [], False
        shown = " ".join(["python" if command[0] == sys.executable else command[0], *command[1:]])   # as given
        self.shown = shown.replace(os.path.expanduser("~"), "~") if len(os.path.expanduser("~")) > 1 else shown

    def tools(self, listed: list[dict], name: str) -> MCPTools:
        tools = MCPTools()
        tools.server, tools.left_out = name, {}   # left_out: name → why
        for tool in listed:
            try:
                tools[tool["name"]] = as_function(tool, self.call)
            except ValueError as e:
                tools.left_out[tool["name"]] = str(e)
        return tools

    def call(self, name: str, args: dict) -> dict:
        from mcp.types import CONNECTION_CLOSED, REQUEST_TIMEOUT
        from pydantic import ValidationError
        since = 0 if self.errlog.closed else self.errlog.seek(0, os.SEEK_END)   # only what it says from now on
        try:
            reply = self.portal.call(self.session.call_tool, name, args)
            return reply.model_dump(by_alias=True, mode="json", exclude_none=True)
        except Exception as e:
            if getattr(e, "code", None) not in (None, CONNECTION_CLOSED, REQUEST_TIMEOUT):   # the server's own
                raise ToolError(f"the server refused the call: {e.message} (JSON-RPC error {e.code})") from None
            said = "gave an answer that does not fit" if isinstance(e, ValidationError) else "did not answer"
            raise ToolError(f"the MCP server `{self.shown}` {said}: {self.why(e, since)}") from None

    def why(self, e: BaseException, since: int = 0) -> str:
        """What went wrong, in a sentence: the error read, what it printed, its last words on stderr since ``since``."""
        from mcp.types import REQUEST_TIMEOUT
        from pydantic import ValidationError
        while isinstance(e, BaseExceptionGroup) and e.exceptions:   # anyio's task groups wrap what they raise
            e = e.exceptions[0]
        text = str(getattr(e, "message", "") or e) or type(e).__name__
        garbled = [one_line(g.errors()[0].get("input") if isinstance(g, ValidationError) else g)[:80]
                   for g in self.garbled[:1]]
        if getattr(e, "code", None) == REQUEST_TIMEOUT:   # the hang guard
            text = f"no answer within {self.timeout:g} seconds (the request was cancelled)"
        elif isinstance(e, OSError) and e.strerror:
            text = f"cannot run it ({e.strerror})"
        elif "portal is not running" in text:
            text = "the connection is closed (call its tools inside the `with connect_mcp(...)` block)"
        elif self.echo:
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
        said = ""
        if not self.errlog.closed:
            self.errlog.seek(since)
            said = self.errlog.read()[-4000:].decode("utf-8", "replace")
        last = [line.strip() for line in said.splitlines() if line.strip()][-3:]   # its last words on stderr
        return text + (f". Its last words on stderr: {' | '.join(last)}" if last else "")

    async def note(self, message) -> None:   # a line on stdout that is not JSON-RPC arrives here as an exception
        if isinstance(message, Exception):
            self.garbled.append(message)

    async def relay(self, read, to_session) -> None:   # the server's messages on their way: our `initialize` is an echo
        async with to_session:
            async for item in read:
                self.echo |= getattr(getattr(item, "message", None), "method", None) == "initialize"
                await to_session.send(item)

    async def list_tools(self, session) -> list[dict]:   # tools/list is paginated; the read timeout bounds a loop
        from mcp.types import PaginatedRequestParams
        page = await session.list_tools()
        tools = list(page.tools)
        while page.next_cursor is not None:
            page = await session.list_tools(params=PaginatedRequestParams(cursor=page.next_cursor))
            tools += page.tools
        return [t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in tools]


@asynccontextmanager
async def _open(params, server: _Server):
    """The SDK's stdio client and session, initialised, with every tool listed; every request times out."""
    import anyio
    from mcp import ClientSession, stdio_client
    async with stdio_client(params, errlog=server.errlog) as (read, write), anyio.create_task_group() as tasks:
        to_session, received = anyio.create_memory_object_stream(0)
        tasks.start_soon(server.relay, read, to_session)
        async with ClientSession(received, write, read_timeout_seconds=server.timeout,
                                 message_handler=server.note) as session:
            hello = await session.initialize()
            name = f"{hello.server_info.name} {hello.server_info.version}".strip()
            yield session, await server.list_tools(session), name
        tasks.cancel_scope.cancel()
