"""Stage 13 — MCP: your tool registry as an MCP server, and an MCP server's tools as plain functions.

Adds: ``tool_to_mcp``, ``from_mcp_result``, ``schema_problems`` (MCP is stages 02, 03 and 05 over JSON-RPC);
``build_server``, the SDK's ``Server`` over a registry; ``as_function``, a listed MCP tool as a function.

Leaves out: resources, prompts, sampling, elicitation, the HTTP transport, list-change notifications, progress.
"""
from __future__ import annotations

import inspect
import json
import keyword
import re
import typing
from collections.abc import Callable, Mapping

from .describe import tool_spec
from .dispatch import dispatch, json_name   # stage 05 names JSON types the same way
from .tools import ToolError

_TYPES = {"string": str, "integer": int, "number": float, "boolean": bool, "object": dict, "array": list,
          "null": type(None)}


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
        raise ValueError(f"a tools/call result is a JSON object, not {json_name(result)}")
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
    """What in ``value`` does not fit ``schema`` (type, enum, required, properties, items, ...), one sentence each."""
    kinds = schema.get("type")
    kinds = [kinds] if isinstance(kinds, str) else kinds
    if kinds and not any(_fits(value, k) for k in kinds):
        return [f"{where} must be {' or '.join(kinds)}, not {json_name(value)}"]
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


def build_server(tools: Mapping[str, Callable] | None = None, name: str = "course-lib"):
    """The official SDK's low-level ``Server`` answering ``tools/list`` and ``tools/call`` from a registry."""
    import anyio
    import mcp.types as types
    from mcp.server.lowlevel import Server
    from mcp.shared.exceptions import MCPError

    from . import __version__, default_tools
    tools = default_tools() if tools is None else tools
    listed = [types.Tool.model_validate(tool_to_mcp(n, f)) for n, f in tools.items()]   # stage 03, refused loudly

    async def list_tools(ctx, params):
        return types.ListToolsResult(tools=listed)

    async def call_tool(ctx, params):
        if params.name not in tools:   # a protocol error (spec: server/tools, "Error Handling")
            raise MCPError(types.INVALID_PARAMS, f"Unknown tool: {params.name}. Available tools: {', '.join(tools)}.")
        seen = await anyio.to_thread.run_sync(dispatch, tools, params.name, params.arguments or {})   # stage 05
        return types.CallToolResult(content=[types.TextContent(text=seen.content)], is_error=seen.is_error)

    return Server(name, version=__version__, on_list_tools=list_tools, on_call_tool=call_tool)


def _hint(schema: Mapping):
    """A Python annotation for a JSON Schema, for stages 03 and 05: what it cannot say exactly is ``Any``."""
    if schema.get("enum") and all(type(v) in (str, int, bool) for v in schema["enum"]):
        return typing.Literal[tuple(schema["enum"])]
    kinds, hints = schema.get("type"), []
    for kind in [kinds] if isinstance(kinds, str) else kinds or []:
        if kind == "array":
            item = _hint(schema.get("items") or {})
            hints.append(typing.Any if item is typing.Any else list[item])
        else:
            hints.append(_TYPES.get(kind, typing.Any))
    return typing.Any if not hints or typing.Any in hints else typing.Union[tuple(hints)]   # of one type: that type


def as_function(tool: Mapping, call: Callable[[str, dict], Mapping]) -> Callable:
    """A listed MCP tool as a function sending ``call(name, args)``, its signature and ``Args:`` from its schema."""
    name, schema = tool["name"], tool.get("inputSchema") or {"type": "object"}
    required, parameters, lines = set(schema.get("required") or []), [], []
    for param, prop in (schema.get("properties") or {}).items():
        if not param.isidentifier() or keyword.iskeyword(param):
            raise ValueError(f"its parameter {param!r} is not a Python name")
        default = inspect.Parameter.empty if param in required else prop.get("default")
        parameters.append(inspect.Parameter(param, inspect.Parameter.KEYWORD_ONLY, default=default,
                                            annotation=_hint(prop)))
        lines.append(f"    {param}: {one_line(prop.get('description')) or '(the server did not describe it)'}")

    def mcp_tool(**args):
        if problems := schema_problems(schema, args):
            raise ToolError(f"the arguments do not fit the tool's input schema: {'; '.join(problems)}")
        text, is_error = from_mcp_result(call(name, args))
        if is_error:   # without the "Error: <tool>: " of stage 05 (or the SDK's MCPServer), which dispatch adds back
            for prefix in (f"Error executing tool {name}: ", "Error: ", f"{name}: "):
                text = text.removeprefix(prefix)
            raise ToolError(text)
        return text

    mcp_tool.__name__ = mcp_tool.__qualname__ = name if name.isidentifier() else "mcp_tool"
    summary = one_line(tool.get("description")) or f"The MCP tool {name} (its server gave no description)."
    mcp_tool.__doc__ = summary + ("\n\nArgs:\n" + "\n".join(lines) if lines else "")
    mcp_tool.__signature__ = inspect.Signature(parameters, return_annotation=str)
    mcp_tool.__annotations__ = {p.name: p.annotation for p in parameters} | {"return": str}
    mcp_tool.input_schema = schema   # the server's own, which the function checks
    return mcp_tool


def one_line(text) -> str:   # a server's text as one line: its newlines cannot fake lines in a docstring
    return " ".join(str(text).split()) if text else ""
