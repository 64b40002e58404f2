"""Strict schemas: what the stand-in refuses in a strict tool's schema or a structured output's, and what a scripted
reply must fit where the real API would have constrained the model to a schema.

Strict mode (constrained decoding) makes a model's tool arguments, or its JSON text, fit a schema, so both APIs take
only a subset of JSON Schema for it. The rules here come from the SDKs' own helpers, which rewrite a schema into
that subset, and from the providers' structured-outputs guides:

- Anthropic (``strict: true`` beside a tool's ``input_schema``; ``output_config.format``, always constrained):
  anthropic/lib/_parse/_transform.py ``transform_schema`` keeps only the keywords below, sets
  ``additionalProperties: false`` on every object, keeps ``minItems`` only when 0 or 1 and string formats only from
  its list, and moves everything else into the description; platform.claude.com/docs/en/build-with-claude/
  structured-outputs adds: no recursive schemas, no numeric or length constraints.
- OpenAI (``strict: true`` on a function; ``response_format`` / ``text.format`` of type ``json_schema``):
  openai/lib/_pydantic.py ``_ensure_strict_json_schema`` sets ``additionalProperties: false`` on every object and
  lists every property in ``required``; developers.openai.com/api/docs/guides/structured-outputs adds: the root an
  object (not ``anyOf``), a ``type`` on every schema, objects nested at most 10 deep, no ``not`` / ``if`` /
  ``dependent*`` / ``patternProperties``.

OpenAI's sentences are its own where users posted them ("Invalid schema for function ...: In context=(...), ...");
Anthropic's are paraphrased in the style of its validation errors. A refusal, a reply cut off at the token limit
and a scripted error are not held to a schema: the guides say those may not fit it.
"""
from __future__ import annotations

import json

from .common import _cut, _Rejected

ANTHROPIC_KEYWORDS = {"type", "enum", "const", "anyOf", "allOf", "$ref", "$defs", "definitions", "description",
                      "title", "properties", "required", "additionalProperties", "format", "items", "minItems"}
ANTHROPIC_FORMATS = {"date-time", "time", "date", "duration", "email", "hostname", "uri", "ipv4", "ipv6", "uuid"}
OPENAI_REFUSED = {"not", "if", "then", "else", "dependentRequired", "dependentSchemas", "patternProperties"}
OPENAI_DEPTH = 10
_TYPED = ("type", "anyOf", "allOf", "enum", "const", "$ref")   # what says which values a schema allows


def problem(schema, api: str) -> tuple[tuple, str] | None:
    """Where a schema breaks strict mode's rules for ``api`` ("anthropic", "openai" or "responses"), and how."""
    if api != "anthropic" and (not isinstance(schema, dict) or schema.get("type") != "object"):
        got = schema.get("type") if isinstance(schema, dict) else type(schema).__name__
        return (), f"schema must be a JSON Schema of 'type: \"object\"', got 'type: \"{got}\"'."
    return _walk(schema, (), api, schema, [])


def _walk(node, path: tuple, api: str, root: dict, resolving: list) -> tuple[tuple, str] | None:
    if not isinstance(node, dict):
        return path, "each schema must be a JSON object."
    if not any(key in node for key in _TYPED):
        return path, ("schema must have a 'type' key." if api != "anthropic" else
                      "a schema needs a 'type', 'anyOf', 'allOf', '$ref', 'const' or a non-empty 'enum'.")
    if api == "anthropic":
        found = _anthropic_keyword(node)
    else:
        found = next((f"'{k}' is not permitted in strict mode." for k in node if k in OPENAI_REFUSED), None)
        if found is None and "properties" in node and sum(p in ("properties", "items") for p in path) >= OPENAI_DEPTH:
            found = f"objects are nested more than {OPENAI_DEPTH} levels deep (the root is the first)."
    if found:
        return path, found
    kinds = node.get("type") if isinstance(node.get("type"), list) else [node.get("type")]
    if "object" in kinds or "properties" in node:
        if node.get("additionalProperties") is not False:
            return path, ("'additionalProperties' is required to be supplied and to be false." if api != "anthropic"
                          else "for 'object' type, 'additionalProperties' must be explicitly set to false.")
        missing = [p for p in node.get("properties") or {} if p not in (node.get("required") or [])]
        if missing and api != "anthropic":
            return path, ("'required' is required to be supplied and to be an array including every key in "
                          f"properties. Missing '{missing[0]}'.")
    ref = node.get("$ref")
    if ref is not None:
        if not isinstance(ref, str) or not ref.startswith("#/"):
            return path, f"only local references ('#/...') are supported, not {ref!r}."
        if ref in resolving:
            if api == "anthropic":
                return path, f"recursive schemas are not supported ({ref!r} refers back to itself)."
        else:
            target = _resolve(root, ref)
            if target is None:
                return path, f"the reference {ref!r} points to no definition."
            if (found := _walk(target, path, api, root, resolving + [ref])) is not None:
                return found
    inner = [(("properties", k), v) for k, v in (node.get("properties") or {}).items()]
    inner += [((key, k), v) for key in ("$defs", "definitions") for k, v in (node.get(key) or {}).items()]
    inner += [((key, n), v) for key in ("anyOf", "allOf") for n, v in enumerate(node.get(key) or [])]
    inner += [(("items",), node["items"])] if "items" in node else []
    return next((f for step, sub in inner if (f := _walk(sub, path + step, api, root, resolving)) is not None), None)


def _anthropic_keyword(node: dict) -> str | None:
    unknown = [k for k in node if k not in ANTHROPIC_KEYWORDS]
    if unknown:
        return f"'{unknown[0]}' is not supported in strict mode."
    if "format" in node and node["format"] not in ANTHROPIC_FORMATS:
        return f"the string format {node['format']!r} is not supported."
    if "minItems" in node and node["minItems"] not in (0, 1):
        return f"'minItems' may only be 0 or 1, not {node['minItems']!r}."
    if any(isinstance(v, (dict, list)) for v in node.get("enum") or []):
        return "'enum' values must be strings, numbers, booleans or null."
    return None


def _resolve(root: dict, ref: str):
    node = root
    for key in ref[2:].split("/"):
        node = node.get(key) if isinstance(node, dict) else None
    return node if isinstance(node, dict) else None


def strict_schemas(api: str, body: dict) -> tuple[dict, tuple | None]:
    """The strict schemas of a request: {tool name: (where, schema)}, and the output format's (where, name, schema)."""
    tools, output = {}, None
    for k, tool in enumerate(body.get("tools") or [] if isinstance(body.get("tools"), list) else []):
        spec = (tool.get("function") if api == "openai" else tool) if isinstance(tool, dict) else None
        if isinstance(spec, dict) and spec.get("strict") is True:
            key = "input_schema" if api == "anthropic" else "parameters"
            where = f"tools.{k}.custom.input_schema" if api == "anthropic" else f"tools[{k}]" + (
                ".function.parameters" if api == "openai" else ".parameters")
            tools[spec.get("name")] = (where, spec.get(key))
    if api == "anthropic":
        form = (body.get("output_config") or {}).get("format") if isinstance(body.get("output_config"), dict) else None
        output = ("output_config.format.schema", None, form.get("schema")) if isinstance(form, dict) else None
    else:
        form = body.get("response_format") if api == "openai" else (body.get("text") or {}).get("format") \
            if isinstance(body.get("text"), dict) else None
        if isinstance(form, dict) and form.get("type") == "json_schema":
            spec = form.get("json_schema") if api == "openai" else form
            spec = spec if isinstance(spec, dict) else {}
            where = "response_format" if api == "openai" else "text.format"
            output = (where, spec.get("name"), spec.get("schema")) if spec.get("strict") is True else None
    return tools, output


def check(api: str, body: dict) -> None:
    """Raise the API's 400 for a strict schema that strict mode cannot take."""
    if api == "anthropic":
        form = (body.get("output_config") or {}).get("format") if isinstance(body.get("output_config"), dict) else None
        if form is not None and (not isinstance(form, dict) or form.get("type") != "json_schema"
                                 or not isinstance(form.get("schema"), dict)):
            raise _Rejected("output_config.format: a format is {\"type\": \"json_schema\", \"schema\": {...}}")
    tools, output = strict_schemas(api, body)
    for name, (where, schema) in tools.items():
        if (found := problem(schema, api)) is not None:
            raise _rejected(api, f"function '{name}'", where, found, code="invalid_function_parameters")
    if output is not None:
        where, name, schema = output
        if (found := problem(schema, api)) is not None:
            raise _rejected(api, f"response_format '{name}'", where, found, code="invalid_json_schema")


def _rejected(api: str, what: str, where: str, found: tuple, code: str) -> _Rejected:
    path, sentence = found
    if api == "anthropic":
        return _Rejected(f"{'.'.join([where, *map(str, path)])}: {sentence}")
    return _Rejected(f"Invalid schema for {what}: In context={path!r}, {sentence}", param=where, code=code)


def fits(value, schema: dict) -> str | None:
    """Why ``value`` does not fit ``schema`` (JSON Schema 2020-12), in a sentence, or None."""
    import jsonschema   # here, not at the top: it takes longer to import than the rest of the stand-in
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(schema).iter_errors(value))
    if error is None:
        return None
    where = "".join(f"[{p!r}]" for p in error.absolute_path)
    return f"{where or 'the value'}: {error.message}"


def against(api: str, body: dict, turn: dict) -> str | None:
    """What in a scripted turn a strict schema rules out (the script's fault: the real API could not send it)."""
    if "status" in turn or turn.get("refusal") or _cut(turn) or api == "ollama":
        return None
    tools, output = strict_schemas(api, body)
    for call in turn.get("tool_calls") or []:
        if call["name"] in tools and (why := fits(call.get("args", {}), tools[call["name"]][1])):
            return (f"calls {call['name']!r} with arguments that do not fit its strict schema ({why}); strict mode "
                    "could not have sent them: script arguments that fit")
    if output is not None and not turn.get("tool_calls"):
        try:
            value = json.loads(turn.get("text") or "")
        except ValueError:
            return f"answers {turn.get('text', '')[:40]!r}, which is not JSON, but the request asks for JSON output"
        if why := fits(value, output[2]):
            return f"answers JSON that does not fit the requested output schema ({why}): script JSON that fits"
    return None
