"""Stage 13 — an MCP client: reach any MCP server and use its tools in the unchanged ``Agent``.

Adds: ``connect_mcp(server)``: a command, started without your API keys (stdio), or a URL (streamable HTTP); the
stateless 2026-07-28 revision first, the ``initialize`` handshake for older servers. Its tools (by the official SDK)
become functions in an ``MCPTools``: structured results as the JSON the model reads, checked against the tool's
schema; annotations as ``rules`` for stage 09. Every request times out; a failure is a ``ToolError`` saying why.

Leaves out: sampling, elicitation, subscriptions, authorization (OAuth), and deciding which servers to trust.
"""
from __future__ import annotations

import functools
import logging
import os
import re
import sys
import tempfile
from collections.abc import Mapping
from contextlib import asynccontextmanager, contextmanager

from .mcp_bridge import as_function, from_mcp_result, one_line
from .tools import ToolError

DEFAULT_TIMEOUT = 30.0   # seconds a server may take to start, or to answer one call
MAX_PAGES = 100          # pages of one list (tools, resources, prompts): a server that always has more is stopped
USERINFO = re.compile(r"(?<=://)[^/?#\s]*@")   # a URL's user:password@, shown as ***@ in every message


@contextmanager
def connect_mcp(server: list[str] | str, *, timeout: float = DEFAULT_TIMEOUT, cwd: str | None = None,
                env: Mapping[str, str] | None = None, era: str = "auto"):
    """Start the server command ``server`` (``[sys.executable, "-m", "mcp_server_time"]``), or reach the URL ``server``
    (``"http://127.0.0.1:8000/mcp"``); yield its tools until the block ends. Only ``env`` and basic variables (PATH,
    HOME, ...) reach a started server. ``era``: "auto" (discover, else the handshake), "legacy" or "2026-07-28".
    ``timeout``: seconds to wait for each answer; in "auto" the SDK's server/discover probe keeps its own limit."""
    target = _target(server, cwd, env, era)
    from anyio.from_thread import start_blocking_portal
    with tempfile.TemporaryDirectory() as folder, open(os.path.join(folder, "stderr"), "a+b") as errlog, \
            start_blocking_portal() as portal:   # "a": its writes land at the end, wherever we are reading
        reached = _Server(server, timeout, errlog, portal, era)
        opened = portal.wrap_async_context_manager(_open(target, reached, era))
        try:
            reached.client, listed = opened.__enter__()
        except Exception as e:
            raise ConnectionError(f"could not {'reach' if isinstance(server, str) else 'start'} the MCP server "
                                  f"`{reached.shown}`: {reached.why(e)}") from None
        try:
            yield reached.tools(listed)
        finally:
            opened.__exit__(None, None, None)


def _target(server, cwd, env, era):
    if era not in ("auto", "legacy", "2026-07-28"):
        raise ValueError(f"era must be 'auto', 'legacy' or '2026-07-28', not {era!r}")
    if not logging.getLogger("mcp").handlers:   # with no handler, Python would print the SDK's logs (tracebacks)
        logging.getLogger("mcp").addHandler(logging.NullHandler())
    if isinstance(server, str) and server.startswith(("http://", "https://")):
        if cwd is not None or env is not None:
            raise ValueError("cwd and env are for a server connect_mcp starts, not for one at a URL")
        return server
    if not (isinstance(server, (list, tuple)) and server and all(isinstance(c, str) and c for c in server)):
        raise ValueError(f"server must be a URL (http://...) or a command, a non-empty list of strings such as "
                         f"['python', '-m', 'server'], not {USERINFO.sub('***@', repr(server))}")
    from mcp import StdioServerParameters
    return StdioServerParameters(command=server[0], args=list(server[1:]), cwd=cwd, env=dict(env or {}))


class _Server:
    """One server as ``connect_mcp`` talks to it: stray stdout (``garbled``), an echo, its stderr, each request."""

    def __init__(self, server, timeout: float, errlog, portal, era: str = "auto"):
        self.timeout, self.errlog, self.portal, self.client, self.garbled = timeout, errlog, portal, None, []
        self.era = era
        self.echo = False   # it sent our own request back
        shown = USERINFO.sub("***@", server if isinstance(server, str) else " ".join(
            ["python" if server[0] == sys.executable else server[0], *server[1:]]))   # as given, but no password
        self.shown = shown.replace(os.path.expanduser("~"), "~") if len(os.path.expanduser("~")) > 1 else shown

    def tools(self, listed: list[dict]) -> MCPTools:
        tools = MCPTools(self)
        for tool in listed:
            try:
                tools[tool["name"]] = as_function(tool, functools.partial(self.request, self.client.call_tool))
            except ValueError as e:
                tools.left_out[tool["name"]] = str(e)
        tools.rules = {n: "always" if f.annotations.get("readOnlyHint") is True else "ask" for n, f in tools.items()}
        return tools

    def request(self, function, *args):
        """``function(*args)`` on the SDK's loop (a client method, or ``_pages``) as JSON data; a failure: ToolError."""
        from mcp.types import CONNECTION_CLOSED, REQUEST_TIMEOUT
        from pydantic import ValidationError
        since = 0 if self.errlog.closed else self.errlog.seek(0, os.SEEK_END)   # only what it says from now on
        try:
            got = self.portal.call(function, *args)   # an SDK model, or a list of JSON data already (_pages)
            return got.model_dump(by_alias=True, mode="json", exclude_none=True) if hasattr(got, "model_dump") else got
        except Exception as e:
            if getattr(e, "code", None) not in (None, CONNECTION_CLOSED, REQUEST_TIMEOUT):   # the server's own
                raise ToolError(f"the server refused the call: {e.message} (JSON-RPC error {e.code})") from None
            if isinstance(e, RuntimeError) and "structured content" in str(e):   # the SDK read it against its schema
                raise ToolError(f"the MCP server `{self.shown}` gave a result that does not fit the tool's own "
                                f"output schema ({str(e).splitlines()[0]})") from None   # its first line: no dump
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
            if self.client is None and self.era == "auto":   # connecting: the SDK's probe waited first
                from mcp.client.session import DISCOVER_TIMEOUT_SECONDS as probe
                text = text[:-1] + (f"; before it, the SDK's server/discover probe waits up to {probe:g} seconds, "
                                    'its own limit, in era "auto")')
        elif isinstance(e, OSError) and e.strerror:
            text = f"cannot run it ({e.strerror})"
        elif "portal is not running" in text:
            text = "the connection is closed (call its tools inside the `with connect_mcp(...)` block)"
        elif self.echo:
            text = ("it is not an MCP server: it sent our own request back, as a program that echoes "
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
        if not self.errlog.closed:
            self.errlog.seek(since)
        said = "" if self.errlog.closed else self.errlog.read()[-4000:].decode("utf-8", "replace")
        last = [line.strip() for line in said.splitlines() if line.strip()][-3:]   # its last words on stderr
        return USERINFO.sub("***@", text + (f". Its last words on stderr: {' | '.join(last)}" if last else ""))

    async def note(self, message) -> None:   # a line on stdout that is not JSON-RPC arrives here as an exception
        self.garbled += [message] if isinstance(message, Exception) else []

    async def relay(self, read, to_session) -> None:   # the server's messages on their way: our own request is an echo
        async with to_session:
            async for item in read:
                self.echo |= getattr(getattr(item, "message", None), "method", "") in ("server/discover", "initialize")
                await to_session.send(item)


@asynccontextmanager
async def _open(target, server: _Server, era: str):
    from mcp import Client
    async with Client(_transport(target, server), mode=era, read_timeout_seconds=server.timeout,
                      message_handler=server.note, cache=None) as client:
        server.client = client
        yield client, await _pages(server, "list_tools", "tools")


@asynccontextmanager
async def _transport(target, server: _Server):
    """(read, write): a URL's streamable HTTP, or a started command's stdio through ``server.relay``."""
    import anyio
    from mcp import stdio_client
    from mcp.client.streamable_http import streamable_http_client
    if isinstance(target, str):
        async with streamable_http_client(target) as (read, write):
            yield read, write
        return
    async with stdio_client(target, errlog=server.errlog) as (read, write), anyio.create_task_group() as tasks:
        to_session, received = anyio.create_memory_object_stream(0)
        tasks.start_soon(server.relay, read, to_session)
        yield received, write
        tasks.cancel_scope.cancel()


# -- lists and beyond tools: every page of a list (bounded), and a server's resources and prompts (MCP's other two)
async def _pages(server: _Server, method: str, field: str) -> list[dict]:
    """Every page of a paginated list (``list_tools``, ...), at most MAX_PAGES; none if the server has no such list."""
    from mcp.shared.exceptions import MCPError
    from mcp.types import METHOD_NOT_FOUND
    try:
        page = await getattr(server.client, method)()
    except MCPError as e:
        if e.code == METHOD_NOT_FOUND:   # e.g. resources/list from a server of tools only
            return []
        raise
    found = list(getattr(page, field))
    for _ in range(MAX_PAGES - 1):
        if page.next_cursor is None:
            return [item.model_dump(by_alias=True, mode="json", exclude_none=True) for item in found]
        page = await getattr(server.client, method)(cursor=page.next_cursor)
        found += getattr(page, field)
    raise ConnectionError(f"it sent {MAX_PAGES} pages of {field} and still had more (a nextCursor on every "
                          "page), so connect_mcp stopped there")


class MCPTools(dict):
    """Name → function, from one server. ``server``: its name and version; ``protocol``: the revision spoken;
    ``left_out``: tools that cannot be Python functions, and why; ``rules``: stage 09's rule for each tool from
    its annotations ("always" if read-only, else "ask"), which are hints, as trustworthy as the server."""

    def __init__(self, reached: _Server):
        super().__init__()
        info = reached.client.server_info   # a 2026 server need not name itself
        self.server = f"{info.name} {info.version}".strip() if info else "(a server with no name)"
        self.protocol, self.left_out, self.rules = reached.client.protocol_version, {}, {}
        self._reached = reached

    def resources(self) -> list[dict]:
        """The resources the server lists: each a dict with its ``uri``, ``name`` and, often, ``mimeType``."""
        return self._reached.request(_pages, self._reached, "list_resources", "resources")

    def read(self, uri: str) -> str:
        """A resource's contents as text: each text part, and a binary one named."""
        parts = self._reached.request(self._reached.client.read_resource, uri)["contents"]
        return "\n".join(p["text"] if "text" in p else f"[{p.get('mimeType') or 'blob'}: {p['uri']}]" for p in parts)

    def prompts(self) -> list[dict]:
        """The prompts the server lists: each a dict with its ``name``, ``description`` and ``arguments``."""
        return self._reached.request(_pages, self._reached, "list_prompts", "prompts")

    def prompt(self, name: str, **arguments: str) -> list[dict]:
        """A prompt's messages, as stage 06's history holds them: ``{"role": ..., "content": <text>}``."""
        got = self._reached.request(self._reached.client.get_prompt, name, arguments)["messages"]
        return [{"role": m["role"], "content": from_mcp_result({"content": [m["content"]]})[0]} for m in got]
