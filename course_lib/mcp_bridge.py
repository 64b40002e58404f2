"""Stage 13 — MCP: your tool registry as an MCP server, and an MCP server's tools as plain functions.

Adds: ``tool_to_mcp``, ``from_mcp_result``, ``schema_problems`` (MCP is stages 02, 03 and 05 over JSON-RPC);
``build_server``, the SDK's ``Server`` over a registry, structured output too; ``as_function``: an MCP tool, a function.

Leaves out: sampling, elicitation, list-change notifications, progress; resources and prompts are the server's own.
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
          "null": type(None)}   # a JSON type as the Python annotation stage 05 checks


def tool_to_mcp(name: str, func: Callable, hints: Mapping | None = None) -> dict:
    """A registry entry as MCP lists it, from stage 03 (``outputSchema`` if it returns an object, ``annotations``:
    ``hints``). The name must be what the spec asks: 1 to 128 letters, digits, ``_``, ``-`` or ``.``."""
    if not (isinstance(name, str) and re.fullmatch(r"[A-Za-z0-9_.-]{1,128}", name)):
        raise ValueError(f"{name!r} is not a good MCP tool name: use 1 to 128 letters, digits, _, - or .")
    spec = tool_spec(name, func)
    listed = {"name": spec["name"], "description": spec["description"], "inputSchema": spec["parameters"]}
    returns = typing.get_type_hints(func).get("return", str)
    if returns not in (str, None, type(None), typing.Any):   # structure: its JSON Schema, by pydantic
        from pydantic import TypeAdapter
        schema = TypeAdapter(returns).json_schema()
        if schema.get("type") != "object":   # the spec: an output schema describes an object
            raise ValueError(f"{name} returns {returns!r}: an MCP tool returns text or an object")
        listed["outputSchema"] = schema
    return listed | ({"annotations": dict(hints)} if hints else {})


def from_mcp_result(result: Mapping) -> tuple[str, bool]:
    """A ``tools/call`` result as ``(text, is_error)``: text blocks joined, other blocks named."""
    if not isinstance(result, Mapping):
        raise ValueError(f"a tools/call result is a JSON object, not {json_name(result)}")
    parts = []
    for block in result.get("content") or []:
        if not isinstance(block, Mapping) or block.get("type") == "text" and not isinstance(block.get("text"), str):
            raise ValueError(f"the MCP server's result has a malformed content block: {json.dumps(block)[:80]}")
        kind, inner = block.get("type"), block.get("resource") or {}
        if kind == "text" or (kind == "resource" and "text" in inner):
            parts.append(str(block["text"] if kind == "text" else inner["text"]))
        else:   # an image, audio, a resource link, a blob, or a kind newer than this code: named, not shown
            parts.append(f"[{kind}: {block.get('uri') or inner.get('uri') or block.get('mimeType') or 'not shown'}]")
    if not parts and result.get("structuredContent") is not None:
        parts.append(json.dumps(result["structuredContent"], ensure_ascii=False))
    return ("\n".join(parts) if parts else "(the tool returned nothing)"), result.get("isError") is True


def build_server(tools: Mapping[str, Callable] | None = None, name: str = "course-lib",
                 hints: Mapping[str, Mapping] | None = None, **handlers):
    """The official SDK's low-level ``Server``: ``tools/list`` and ``tools/call`` from a registry (``structuredContent``
    too for an ``outputSchema``); ``hints``: name → annotations; ``handlers``: the SDK's others, as they are."""
    import anyio
    import mcp.types as types
    from mcp.server.lowlevel import Server
    from mcp.shared.exceptions import MCPError

    from . import __version__, default_tools
    tools = default_tools() if tools is None else tools
    listed = [types.Tool.model_validate(tool_to_mcp(n, f, (hints or {}).get(n))) for n, f in tools.items()]
    structured = {t.name for t in listed if t.output_schema}   # stage 03, refused loudly above

    async def list_tools(ctx, params):
        return types.ListToolsResult(tools=listed)

    async def call_tool(ctx, params):
        if params.name not in tools:   # a protocol error (spec: server/tools, "Error Handling")
            raise MCPError(types.INVALID_PARAMS, f"Unknown tool: {params.name}. Available tools: {', '.join(tools)}.")
        seen = await anyio.to_thread.run_sync(dispatch, tools, params.name, params.arguments or {})   # stage 05
        text, failed, data = seen.content, seen.is_error, None
        if params.name in structured and not failed:   # its JSON, as structuredContent and as text (the spec)
            try:
                data = json.loads(text)
            except ValueError:   # cut at stage 05's limit, or not the object it promised
                text, failed = f"Error: {params.name} did not return the JSON object its output schema promises", True
        return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=data, is_error=failed)

    return Server(name, version=__version__, on_list_tools=list_tools, on_call_tool=call_tool, **handlers)


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
    _checkable(tool)   # a server's schema that cannot be checked leaves its tool out, before anything is sent
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
        text, is_error = from_mcp_result(result := call(name, args))
        if tool.get("outputSchema") and not is_error:   # the SDK has checked it against the schema: JSON it is
            text = json.dumps(result.get("structuredContent"), ensure_ascii=False)
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
    mcp_tool.annotations = dict(tool.get("annotations") or {})   # hints from the server, as trusted as it is
    return mcp_tool


def one_line(text) -> str:   # a server's text as one line: its newlines cannot fake lines in a docstring
    return " ".join(str(text).split()) if text else ""


# -- JSON Schema from any server: all of it, by jsonschema's validator, in the course's sentences (exercise 13.3)
def schema_problems(schema: Mapping, value, where: str = "arguments") -> list[str]:
    """What in ``value`` does not fit ``schema``, one sentence each, by jsonschema's Draft 2020-12 validator: all of
    JSON Schema, a ``$ref`` only inside the schema (nothing is fetched). A value of the wrong type or outside its
    ``enum`` gets that one sentence; a schema that is not JSON Schema is a ValueError."""
    from jsonschema import Draft202012Validator, SchemaError
    from referencing import Registry
    from referencing.exceptions import Unresolvable
    try:
        Draft202012Validator.check_schema(schema)
        found = sorted(Draft202012Validator(schema, registry=Registry()).iter_errors(value),   # parents first
                       key=lambda e: [(type(k) is str, k) for k in e.path])
    except (SchemaError, Unresolvable) as e:
        raise ValueError(f"it is not a JSON Schema that can be checked: {getattr(e, 'message', e)}") from None
    stops = {}   # a value of the wrong type, or outside its enum: that one sentence, and nothing more at or below it
    for e in found:
        if e.validator in ("type", "enum", "const") and getattr(stops.get(tuple(e.path)), "validator", "") != "type":
            stops[tuple(e.path)] = e
    kept = [e for e in found if stops.get(tuple(e.path), e) is e and not any(
        tuple(e.path)[:k] in stops for k in range(len(e.path)))]
    problems = [_sentence(e, where + "".join(f"[{k}]" if type(k) is int else f".{k}" for k in e.path)) for e in kept]
    return list(dict.fromkeys(p for group in problems for p in group))   # each once, in the validator's order


def _sentence(e, where: str) -> list[str]:
    """The course's words for one of jsonschema's errors; its own words for the rarer keywords."""
    said, value = e.validator_value, e.instance
    if e.validator == "type":
        return [f"{where} must be {' or '.join([said] if isinstance(said, str) else said)}, not {json_name(value)}"]
    if e.validator in ("enum", "const"):
        return [f"{where} must be {'one of ' if e.validator == 'enum' else ''}"
                f"{', '.join(json.dumps(v, ensure_ascii=False) for v in (said if e.validator == 'enum' else [said]))}"]
    if e.validator == "required":
        return [f"{where} is missing '{name}'" for name in said if name not in value]
    if e.validator == "additionalProperties" and said is False:
        takes = e.schema.get("properties") or {}
        return [f"{where} has no '{name}' (it takes: {', '.join(takes) or 'nothing'})" for name in value
                if name not in takes and not any(re.search(p, name) for p in e.schema.get("patternProperties", {}))]
    bound = {"minimum": "at least", "maximum": "at most", "exclusiveMinimum": "more than", "exclusiveMaximum": "below"}
    if e.validator in bound:
        return [f"{where} must be {bound[e.validator]} {said}"]
    if e.validator in ("anyOf", "oneOf"):
        return [f"{where} fits {'none' if e.validator == 'anyOf' else 'not exactly one'} of the {len(said)} schemas "
                f"of its {e.validator}"]
    return [f"{where}: {e.message}"]


def _checkable(tool: Mapping) -> None:
    """A ValueError if the tool's input or output schema is not JSON Schema that can be checked."""
    for kind, given in (("input", tool.get("inputSchema") or {}), ("output", tool.get("outputSchema") or {})):
        try:
            schema_problems(given, {})
        except ValueError as e:
            raise ValueError(f"its {kind} schema {str(e).removeprefix('it ')}") from None
