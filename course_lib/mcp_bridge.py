"""Stage 13 — MCP: your tool registry as an MCP server, and any MCP server's tools as plain functions.

MCP is the registry (stage 02), the descriptions (03) and the dispatcher (05) over JSON-RPC, one message
per line on stdio: ``tools/list`` gives each tool's name, description and input schema, ``tools/call`` runs one.

Adds: ``tool_to_mcp`` (a registry entry as an MCP tool, from ``tool_spec``), ``from_mcp_result`` (a call's
result as ``(text, is_error)``) and ``schema_problems`` (what in a call does not fit an input schema);
``serve(tools)``, behind ``course mcp serve``: the official SDK's low-level ``Server``, every call through
``dispatch``, a tool's failure an ``isError`` result, an unknown tool JSON-RPC error -32602 (as the spec
says); ``connect_mcp(command)``: start a server and yield its tools as a name → function mapping for the
unchanged ``Agent``, each function with a signature and ``Args:`` docstring from the server's input schema
(so stages 03 and 05 describe and check it), checking its arguments against that schema. A tool error, a
refused call, a server that died or stayed silent for ``timeout`` seconds (the hang guard) raise
``ToolError``, which ``dispatch`` turns into an error observation: the run goes on.

Leaves out: resources, prompts, sampling, elicitation; the HTTP transport and its authorisation; the
2026-07-28 session-less era (the client uses the ``initialize`` handshake); change notifications (the tool
list is read once); structured output beyond its text; progress; and deciding which servers to trust: a
server is a program you run, with your permissions.
"""
from __future__ import annotations

import inspect
import json
import keyword
import logging
import os
import re
import sys
import tempfile
import typing
from collections.abc import Callable, Mapping
from contextlib import asynccontextmanager, contextmanager

from .describe import tool_spec
from .dispatch import _json_name, dispatch   # stage 05 names JSON types the same way
from .tools import ToolError

DEFAULT_TIMEOUT = 30.0   # seconds a server may take to start, or to answer one call
_TYPES = {"string": str, "integer": int, "number": float, "boolean": bool, "object": dict, "array": list,
          "null": type(None)}


# ---- the pieces, as plain data: what an MCP message holds
def tool_to_mcp(name: str, func: Callable) -> dict:
    """A registry entry as MCP lists it: ``{"name", "description", "inputSchema"}``, from stage 03. The name
    must be what the spec asks of tool names: 1 to 128 letters, digits, ``_``, ``-`` or ``.``."""
    if not (isinstance(name, str) and re.fullmatch(r"[A-Za-z0-9_.-]{1,128}", name)):
        raise ValueError(f"{name!r} is not a good MCP tool name: use 1 to 128 letters, digits, _, - or .")
    spec = tool_spec(name, func)
    return {"name": spec["name"], "description": spec["description"], "inputSchema": spec["parameters"]}


def from_mcp_result(result: Mapping) -> tuple[str, bool]:
    """A ``tools/call`` result as ``(text, is_error)``: text blocks joined, other blocks named."""
    if not isinstance(result, Mapping):
        raise ValueError(f"a tools/call result is a JSON object, not {_json_name(result)}")
    parts = []
    for block in result.get("content") or []:
        kind, inner = block.get("type"), block.get("resource") or {}
        if kind == "text" or (kind == "resource" and "text" in inner):
            parts.append(str(block["text"] if kind == "text" else inner["text"]))
        else:   # an image, audio, a resource link, a blob, or a kind newer than this code: named, not shown
            parts.append(f"[{kind}: {block.get('uri') or inner.get('uri') or block.get('mimeType') or 'not shown'}]")
    if not parts and result.get("structuredContent") is not None:
        parts.append(json.dumps(result["structuredContent"], ensure_ascii=False))
    return ("\n".join(parts) if parts else "(the tool returned nothing)"), result.get("isError") is True


def _fits(value, kind: str) -> bool:
    if kind == "integer":   # JSON has one number type: 3.0 is an integer, true is not
        return type(value) is int or (type(value) is float and value.is_integer())
    if kind == "number":
        return type(value) in (int, float)
    return type(value) is _TYPES.get(kind, object)


def schema_problems(schema: Mapping, value, where: str = "arguments") -> list[str]:
    """What in ``value`` does not fit ``schema`` (type, enum, required, properties, additionalProperties,
    items, minimum, maximum), one sentence each; an empty list when it fits."""
    kinds = schema.get("type")
    kinds = [kinds] if isinstance(kinds, str) else kinds
    if kinds and not any(_fits(value, k) for k in kinds):
        return [f"{where} must be {' or '.join(kinds)}, not {_json_name(value)}"]
    if "enum" in schema and not any(value == v and type(value) is type(v) for v in schema["enum"]):
        return [f"{where} must be one of {', '.join(json.dumps(v, ensure_ascii=False) for v in schema['enum'])}"]
    problems = []
    if type(value) in (int, float):
        if "minimum" in schema and value < schema["minimum"]:
            problems.append(f"{where} must be at least {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            problems.append(f"{where} must be at most {schema['maximum']}")
    if isinstance(value, dict):
        properties = schema.get("properties") or {}
        problems += [f"{where} is missing '{name}'" for name in schema.get("required") or [] if name not in value]
        for name, item in value.items():
            if name in properties:
                problems += schema_problems(properties[name], item, f"{where}.{name}")
            elif schema.get("additionalProperties") is False:
                problems.append(f"{where} has no '{name}' (it takes: {', '.join(properties) or 'nothing'})")
    if isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for i, item in enumerate(value):
            problems += schema_problems(schema["items"], item, f"{where}[{i}]")
    return problems


# ---- the server: `course mcp serve`
def build_server(tools: Mapping[str, Callable] | None = None, name: str = "course-lib"):
    """The official SDK's low-level ``Server`` answering ``tools/list`` and ``tools/call`` from a registry."""
    import anyio
    import mcp.types as types
    from mcp.server.lowlevel import Server
    from mcp.shared.exceptions import MCPError

    if tools is None:
        from . import default_tools
        tools = default_tools()
    listed = [types.Tool.model_validate(tool_to_mcp(n, f)) for n, f in tools.items()]   # stage 03, refused loudly

    async def list_tools(ctx, params):
        return types.ListToolsResult(tools=listed)

    async def call_tool(ctx, params):
        if params.name not in tools:   # a protocol error (spec: server/tools, "Error Handling")
            raise MCPError(types.INVALID_PARAMS, f"Unknown tool: {params.name}. Available tools: {', '.join(tools)}.")
        seen = await anyio.to_thread.run_sync(dispatch, tools, params.name, params.arguments or {})   # stage 05
        text = seen.content.removeprefix("Error: ").removeprefix(f"{params.name}: ") if seen.is_error else seen.content
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=seen.is_error)

    from . import __version__
    return Server(name, version=__version__, on_list_tools=list_tools, on_call_tool=call_tool)


def serve(tools: Mapping[str, Callable] | None = None) -> None:
    """Serve ``tools`` (default: the course's tools) over stdio until the client closes stdin."""
    import anyio
    from mcp.server.stdio import stdio_server

    async def main(server=build_server(tools)):
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())
    anyio.run(main)


# ---- the client: any MCP server's tools as functions for the Agent
class MCPTools(dict):
    """Name → function; ``server``: its name and version; ``left_out``: tools that cannot be Python functions."""


@contextmanager
def connect_mcp(command: list[str], *, timeout: float = DEFAULT_TIMEOUT, cwd: str | None = None,
                env: Mapping[str, str] | None = None):
    """Start the MCP server ``command`` (e.g. ``[sys.executable, "-m", "mcp_server_time"]``) and yield its tools as
    an ``MCPTools`` mapping; the server stops when the block ends. Only ``env`` and a few basic variables
    (PATH, HOME, ...) reach it: not your API keys. A server that cannot start raises ``ConnectionError``."""
    if not (isinstance(command, (list, tuple)) and command and all(isinstance(c, str) and c for c in command)):
        raise ValueError(f"command must be a non-empty list of strings, e.g. ['python', '-m', 'server'], not {command!r}")
    from anyio.from_thread import start_blocking_portal
    from mcp import StdioServerParameters
    from mcp.types import CONNECTION_CLOSED, REQUEST_TIMEOUT

    sdk_log = logging.getLogger("mcp")   # its logs reach only a program that configured logging; with no handler
    if not sdk_log.handlers:             # at all Python prints them (a traceback for a garbled line, explained below)
        sdk_log.addHandler(logging.NullHandler())

    params = StdioServerParameters(command=command[0], args=list(command[1:]), cwd=cwd, env=dict(env or {}))
    program = "python" if command[0] == sys.executable else os.path.basename(command[0])   # no folder of yours
    shown = " ".join([program, *command[1:]])   # in messages
    garbled: list = []   # lines on the server's stdout that were not JSON-RPC
    with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as errlog, \
            start_blocking_portal() as portal:
        def why(e: BaseException) -> str:
            while isinstance(e, BaseExceptionGroup) and e.exceptions:   # anyio's task groups wrap what they raise
                e = e.exceptions[0]
            text = str(getattr(e, "message", "") or e) or type(e).__name__
            if getattr(e, "code", None) == REQUEST_TIMEOUT:   # the hang guard
                text = f"no answer within {timeout:g} seconds (the request was cancelled)"
            elif isinstance(e, OSError) and e.strerror:
                text = f"cannot run it ({e.strerror})"
            elif "portal is not running" in text:
                text = "the connection is closed (call its tools inside the `with connect_mcp(...)` block)"
            elif garbled:   # the commonest bug of a stdio server: a print() on stdout
                text = "it wrote a line on stdout that is not a JSON-RPC message (logs go to stderr)"
            elif "closed" in text.lower():
                text = "it stopped (the connection closed)"
            lines = [] if errlog.closed or errlog.seek(0) else errlog.read()[-4000:].splitlines()
            last = [line.strip() for line in lines if line.strip()][-3:]   # the server's last words on stderr
            return text + (f". Its last words on stderr: {' | '.join(last)}" if last else "")

        opened = portal.wrap_async_context_manager(_open(params, errlog, timeout, garbled))
        try:
            session, listed, server = opened.__enter__()
        except Exception as e:
            raise ConnectionError(f"could not start the MCP server `{shown}`: {why(e)}") from None

        def call(name: str, args: dict) -> dict:
            try:
                return portal.call(session.call_tool, name, args).model_dump(by_alias=True, mode="json",
                                                                             exclude_none=True)
            except Exception as e:
                if getattr(e, "code", None) not in (None, CONNECTION_CLOSED, REQUEST_TIMEOUT):   # the server's own
                    raise ToolError(f"the server refused the call: {e.message} (JSON-RPC error {e.code})") from None
                raise ToolError(f"the MCP server `{shown}` did not answer: {why(e)}") from None

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
async def _open(params, errlog, timeout: float, garbled: list):
    """The SDK's stdio client and session, initialised, with every tool listed; every request times out."""
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client
    from mcp.types import PaginatedRequestParams

    async def note(message):   # a line on stdout that is not JSON-RPC arrives here as an exception
        if isinstance(message, Exception):
            garbled.append(message)

    async with stdio_client(params, errlog=errlog) as (read, write), \
            ClientSession(read, write, read_timeout_seconds=timeout, message_handler=note) as session:
        hello = await session.initialize()
        page = await session.list_tools()
        tools = list(page.tools)
        while page.next_cursor is not None:   # tools/list is paginated; the read timeout bounds a loop
            page = await session.list_tools(params=PaginatedRequestParams(cursor=page.next_cursor))
            tools += page.tools
        yield session, [t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in tools], \
            f"{hello.server_info.name} {hello.server_info.version}".strip()


def _hint(schema: Mapping):
    """A Python annotation for a JSON Schema, for stages 03 and 05: what it cannot say exactly is ``Any``."""
    if schema.get("enum") and all(type(v) in (str, int, bool) for v in schema["enum"]):
        return typing.Literal[tuple(schema["enum"])]
    kinds = schema.get("type")
    hints = []
    for kind in [kinds] if isinstance(kinds, str) else kinds or []:
        if kind == "array":
            item = _hint(schema.get("items") or {})
            hints.append(typing.Any if item is typing.Any else list[item])
        else:
            hints.append(_TYPES.get(kind, typing.Any))
    if not hints or typing.Any in hints:
        return typing.Any
    return hints[0] if len(hints) == 1 else typing.Union[tuple(hints)]


def as_function(tool: Mapping, call: Callable[[str, dict], Mapping]) -> Callable:
    """A listed MCP tool as a Python function: keyword-only parameters, annotations and an ``Args:`` docstring
    from its ``inputSchema``; ``call(name, args)`` sends ``tools/call``. Raises ``ValueError`` for a tool whose
    parameter names cannot be Python names."""
    name, schema = tool["name"], tool.get("inputSchema") or {"type": "object"}
    required, parameters, lines = set(schema.get("required") or []), [], []
    for param, prop in (schema.get("properties") or {}).items():
        if not param.isidentifier() or keyword.iskeyword(param):
            raise ValueError(f"its parameter {param!r} is not a Python name")
        default = inspect.Parameter.empty if param in required else prop.get("default")
        parameters.append(inspect.Parameter(param, inspect.Parameter.KEYWORD_ONLY, default=default,
                                            annotation=_hint(prop)))
        lines.append(f"    {param}: {_one_line(prop.get('description')) or '(the server did not describe it)'}")

    def mcp_tool(**args):
        problems = schema_problems(schema, args)
        if problems:
            raise ToolError(f"the arguments do not fit the tool's input schema: {'; '.join(problems)}")
        text, is_error = from_mcp_result(call(name, args))
        if is_error:
            raise ToolError(text)
        return text

    mcp_tool.__name__ = mcp_tool.__qualname__ = name if name.isidentifier() else "mcp_tool"
    summary = _one_line(tool.get("description")) or f"The MCP tool {name} (its server gave no description)."
    mcp_tool.__doc__ = summary + ("\n\nArgs:\n" + "\n".join(lines) if lines else "")
    mcp_tool.__signature__ = inspect.Signature(parameters, return_annotation=str)
    mcp_tool.__annotations__ = {p.name: p.annotation for p in parameters} | {"return": str}
    mcp_tool.input_schema = schema   # the server's own, which the function checks
    return mcp_tool


def _one_line(text) -> str:
    return " ".join(str(text).split()) if text else ""
