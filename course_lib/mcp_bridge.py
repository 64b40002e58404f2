"""Stage 13 — MCP: your tool registry as an MCP server, and any MCP server's tools as plain functions.

MCP is the registry (stage 02), the descriptions (03) and the dispatcher (05) over JSON-RPC, one message
per line on stdio: ``tools/list`` gives each tool's name, description and input schema, ``tools/call`` runs one.

Adds: ``tool_to_mcp`` (a registry entry as an MCP tool, from ``tool_spec``), ``from_mcp_result`` (a call's
result as ``(text, is_error)``) and ``schema_problems`` (what in a call does not fit an input schema);
``serve(tools)``, behind ``course mcp serve``: the official SDK's low-level ``Server``, every call through
``dispatch``, a tool's failure an ``isError`` result with the observation's text, an unknown tool JSON-RPC error
-32602 (as the spec says); before the SDK, a thin stdio layer that answers what the SDK drops without a word
(``refusal``: -32700, -32600, as JSON-RPC 2.0 says) and, when stdin closes, lets the calls still running answer
(the SDK alone cancels them); ``connect_mcp(command)``: start a server and yield its tools as a name → function
mapping for the unchanged ``Agent``, each function with a signature and ``Args:`` docstring from the server's
input schema (so stages 03 and 05 describe and check it), checking its arguments against that schema. A tool
error, a refused call, a server that died or stayed silent for ``timeout`` seconds (the hang guard) raise
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
    return type(value) is _TYPES.get(kind)   # a type this code does not know: nothing fits it


def schema_problems(schema: Mapping, value, where: str = "arguments") -> list[str]:
    """What in ``value`` does not fit ``schema`` (type, enum, required, properties, additionalProperties: false
    or a schema, items, minimum, maximum), one sentence each; an empty list when it fits."""
    kinds = schema.get("type")
    kinds = [kinds] if isinstance(kinds, str) else kinds
    if kinds and not any(_fits(value, k) for k in kinds):
        return [f"{where} must be {' or '.join(kinds)}, not {_json_name(value)}"]
    if "enum" in schema and not any(value == v and (type(value) is type(v) or {type(value), type(v)} <= {int, float})
                                    for v in schema["enum"]):   # as JSON Schema: 2.0 is 2, true is not 1
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
            elif isinstance(schema.get("additionalProperties"), Mapping):   # a schema for every other key
                problems += schema_problems(schema["additionalProperties"], item, f"{where}.{name}")
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
        return types.CallToolResult(content=[types.TextContent(text=seen.content)], is_error=seen.is_error)

    from . import __version__
    return Server(name, version=__version__, on_list_tools=list_tools, on_call_tool=call_tool)


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
    from pydantic import ValidationError

    sdk_log = logging.getLogger("mcp")   # its logs reach only a program that configured logging; with no handler
    if not sdk_log.handlers:             # at all Python prints them (a traceback for a garbled line, explained below)
        sdk_log.addHandler(logging.NullHandler())

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
                return portal.call(session.call_tool, name, args).model_dump(by_alias=True, mode="json",
                                                                             exclude_none=True)
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
    from mcp import ClientSession
    from mcp.client.stdio import stdio_client
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
            hello = await session.initialize()
            page = await session.list_tools()
            tools = list(page.tools)
            while page.next_cursor is not None:   # tools/list is paginated; the read timeout bounds a loop
                page = await session.list_tools(params=PaginatedRequestParams(cursor=page.next_cursor))
                tools += page.tools
            yield session, [t.model_dump(by_alias=True, mode="json", exclude_none=True) for t in tools], \
                f"{hello.server_info.name} {hello.server_info.version}".strip()
        tasks.cancel_scope.cancel()


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
    return typing.Union[tuple(hints)]   # of one type: that type


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
        if is_error:   # without the "Error: <tool>: " of stage 05 (or the SDK's MCPServer), which dispatch adds back
            for prefix in (f"Error executing tool {name}: ", "Error: ", f"{name}: "):
                text = text.removeprefix(prefix)
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
