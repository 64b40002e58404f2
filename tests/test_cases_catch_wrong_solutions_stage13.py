"""Stage 13: the visible cases catch plausible wrong solutions, and the reference solutions pass them.

As in ``test_cases_catch_wrong_solutions.py``: each ``make_*`` function with its defaults builds the reference
solution of ``solutions/13_mcp_and_frameworks_exercises.ipynb``, copied (the notebook is the source, and
``tests/test_exercises.py`` grades the notebook itself); each keyword switch turns on one plausible mistake.
A wrong solution must fail the visible check, on the case named next to it.
"""
from __future__ import annotations

import json

import pytest

from course_lib import default_tools
from course_lib.courseware.exercises.stage13 import listed
from course_lib.dispatch import dispatch
from course_lib.courseware.mcp_serve import refusal
from course_lib.mcp_bridge import from_mcp_result, schema_problems
from test_cases_catch_wrong_solutions import caught_on, failed, only_slips   # tests/ is on sys.path (rootdir mode)

TYPES = {bool: "boolean", int: "integer", float: "number", str: "string", list: "array", dict: "object",
         type(None): "null"}


def json_type(value):
    return TYPES.get(type(value), type(value).__name__)


# ---- 13.1 from_mcp_result
def make_from_mcp_result(*, truthy_error=False, text_only=False, joiner="\n", structured=True, embedded=True,
                         check_type=True, null_content=True):
    def from_mcp_result(result):
        if check_type and not isinstance(result, dict):
            raise ValueError("a tools/call result is a JSON object")
        parts = []
        for block in (result.get("content") or [] if null_content else result.get("content", [])):
            kind, inner = block.get("type"), block.get("resource") or {}
            if kind == "text":
                parts.append(block["text"])
            elif embedded and kind == "resource" and "text" in inner:
                parts.append(inner["text"])
            elif not text_only:
                parts.append(f"[{kind}: {block.get('uri') or inner.get('uri') or block.get('mimeType') or 'not shown'}]")
        if structured and not parts and result.get("structuredContent") is not None:
            parts.append(json.dumps(result["structuredContent"], ensure_ascii=False))
        is_error = bool(result.get("isError")) if truthy_error else result.get("isError") is True
        return (joiner.join(parts) if parts else "(the tool returned nothing)"), is_error
    return from_mcp_result


# ---- 13.2 jsonrpc_reply
def make_jsonrpc_reply(*, answer_notifications=False, unknown_tool_as_result=False, unknown_method=-32601,
                       arguments_required=False, echo_id=True, check_version=True, null_arguments=False,
                       null_id=False, notification_first=False):
    def jsonrpc_reply(message, tools):
        ids = (int, str, type(None)) if null_id else (int, str)
        if not isinstance(message, dict) or ("id" in message and type(message["id"]) not in ids):
            return {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "Invalid Request"}}
        if notification_first and "id" not in message:
            return None
        n = message.get("id") if echo_id else 1

        def error(code, text):
            return {"jsonrpc": "2.0", "id": n, "error": {"code": code, "message": text}}

        def result(value):
            return {"jsonrpc": "2.0", "id": n, "result": value}

        method, params = message.get("method"), message.get("params")
        if (check_version and message.get("jsonrpc") != "2.0") or not isinstance(method, str):
            return error(-32600, "Invalid Request")
        if "id" not in message and not answer_notifications:
            return None
        if method == "ping":
            return result({})
        if method == "tools/list":
            return result({"tools": [listed(name, func) for name, func in tools.items()]})
        if method != "tools/call":
            return error(unknown_method, f"Method not found: {method}")
        if not (isinstance(params, dict) and isinstance(params.get("name"), str)
                and isinstance(params.get("arguments") or {} if null_arguments else params.get("arguments", {}),
                               dict)):
            return error(-32602, "Invalid params")
        if params["name"] not in tools and not unknown_tool_as_result:
            return error(-32602, f"Unknown tool: {params['name']}")
        arguments = params["arguments"] if arguments_required else params.get("arguments") or {}
        seen = dispatch(tools, params["name"], arguments)
        return result({"content": [{"type": "text", "text": seen.content}], "isError": seen.is_error})
    return jsonrpc_reply


# ---- 13.3 schema_problems
def make_schema_problems(*, bool_is_int=False, float_integer=True, first_only=False, additional=True, items=True,
                         enum="json", stop_at_type=True, digit_strings=False, additional_needs_properties=False,
                         additional_schema="check", bounds_on_bools=False):
    def check(schema, value, where):
        def fits(kind):
            if kind == "integer":
                whole = type(value) is float and value.is_integer() if float_integer else False
                digits = digit_strings and type(value) is str and value.isdigit()
                return (isinstance(value, int) if bool_is_int else type(value) is int) or whole or digits
            if kind == "number":
                return type(value) in (int, float) or (bool_is_int and type(value) is bool)
            return type(value) is {"string": str, "boolean": bool, "object": dict, "array": list,
                                   "null": type(None)}.get(kind)

        kinds = schema.get("type")
        kinds = [kinds] if isinstance(kinds, str) else kinds
        problems = []
        if kinds and not any(fits(kind) for kind in kinds):
            problems.append(f"{where} must be {' or '.join(kinds)}, not {json_type(value)}")
            if stop_at_type:
                return problems
        same = {"json": lambda v: value == v and (type(value) is type(v) or {type(value), type(v)} <= {int, float}),
                "same type": lambda v: value == v and type(value) is type(v), "python": lambda v: value == v}[enum]
        if "enum" in schema and not any(same(v) for v in schema["enum"]):
            return problems + [f"{where} must be one of {schema['enum']}"]
        if isinstance(value, (int, float)) if bounds_on_bools else type(value) in (int, float):
            if "minimum" in schema and value < schema["minimum"]:
                problems.append(f"{where} must be at least {schema['minimum']}")
            if "maximum" in schema and value > schema["maximum"]:
                problems.append(f"{where} must be at most {schema['maximum']}")
        if isinstance(value, dict):
            properties = schema.get("properties") or {}
            problems += [f"{where} is missing '{name}'" for name in schema.get("required") or [] if name not in value]
            others = schema.get("additionalProperties")
            if additional_schema == "as false" and isinstance(others, dict):
                others = False
            for name, item in value.items():
                if name in properties:
                    problems += check(properties[name], item, f"{where}.{name}")
                elif additional_schema == "check" and isinstance(others, dict):
                    problems += check(others, item, f"{where}.{name}")
                elif additional and others is False and ("properties" in schema or not additional_needs_properties):
                    problems.append(f"{where} has no '{name}'")
        if items and isinstance(value, list) and isinstance(schema.get("items"), dict):
            for i, item in enumerate(value):
                problems += check(schema["items"], item, f"{where}[{i}]")
        return problems

    def schema_problems(schema, value, where="arguments"):
        found = check(schema, value, where)
        return found[:1] if first_only else found
    return schema_problems


REFERENCES = {"13.1": make_from_mcp_result, "13.2": make_jsonrpc_reply, "13.3": make_schema_problems}


@pytest.mark.parametrize("exercise_id", sorted(REFERENCES))
def test_the_reference_solution_passes_every_visible_case(exercise_id):
    assert failed(exercise_id, REFERENCES[exercise_id]()) == []


def test_the_finished_versions_pass_the_cases_they_share_with_the_exercises():
    assert failed("13.1", from_mcp_result) == []
    assert failed("13.3", schema_problems) == []


def test_the_reference_answers_like_course_mcp_serve_where_both_answer():
    """13.2's reference and the real server agree on codes, ids and a tool error's text: the exercise teaches the
    real thing. tests/test_mcp.py pins the server's answers; ``refusal`` is its layer before the SDK. The one
    difference, which the exercise states: the SDK reads "arguments": null as missing (the spec's schema, and the
    exercise, refuse it: -32602)."""
    reply = make_jsonrpc_reply()
    tools = default_tools()
    for message in [{"id": 5, "method": "ping"}, {"jsonrpc": "1.0", "id": 6, "method": "ping"}, [1, 2], "ping",
                    {"jsonrpc": "2.0", "id": None, "method": "ping"}, {"jsonrpc": "2.0", "id": True, "method": "ping"},
                    {"jsonrpc": "2.0", "id": 7}, {"jsonrpc": "2.0", "method": 1}]:
        ours, served = reply(message, tools), refusal(json.dumps(message))
        assert (ours["id"], ours["error"]["code"]) == (served["id"], served["error"]["code"]), message
    failed_call = {"jsonrpc": "2.0", "id": 8, "method": "tools/call",
                   "params": {"name": "calculator", "arguments": {"expression": "1/0"}}}
    assert reply(failed_call, tools)["result"]["content"][0]["text"] == \
        dispatch(tools, "calculator", {"expression": "1/0"}).content   # what the server sends, word for word
    assert reply({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "calculater"}},
                 tools)["error"]["code"] == -32602
    assert reply({"jsonrpc": "2.0", "id": 6, "method": "resources/list"}, tools)["error"]["code"] == -32601
    assert reply({"jsonrpc": "2.0", "id": 7, "method": "ping"}, tools) == {"jsonrpc": "2.0", "id": 7, "result": {}}


WRONG = [
    # 13.1 truthiness for isError; only text; no newline between blocks; no structured fallback; embedded text lost
    ("13.1", lambda: make_from_mcp_result(truthy_error=True), "isError must be JSON true"),
    ("13.1", lambda: make_from_mcp_result(text_only=True), "an image is named"),
    ("13.1", lambda: make_from_mcp_result(joiner=""), "two text blocks, one per line"),
    ("13.1", lambda: make_from_mcp_result(structured=False), "structured content only"),
    ("13.1", lambda: make_from_mcp_result(embedded=False), "an embedded text resource"),
    ("13.1", lambda: make_from_mcp_result(check_type=False), "not a result"),
    ("13.1", lambda: make_from_mcp_result(null_content=False), "content null"),   # result.get("content", [])
    # 13.2 answering a notification; an unknown tool as a result; the wrong code; arguments required; a fixed id
    ("13.2", lambda: make_jsonrpc_reply(answer_notifications=True), "a notification gets no answer"),
    ("13.2", lambda: make_jsonrpc_reply(unknown_tool_as_result=True), "an unknown tool is a protocol error"),
    ("13.2", lambda: make_jsonrpc_reply(unknown_method=-32602), "an unknown method"),
    ("13.2", lambda: make_jsonrpc_reply(arguments_required=True), "no arguments"),
    ("13.2", lambda: make_jsonrpc_reply(echo_id=False), "the id comes back"),
    ("13.2", lambda: make_jsonrpc_reply(check_version=False), "not JSON-RPC 2.0"),
    # null arguments read as {}; a null id accepted; a notification decided before the message is checked
    ("13.2", lambda: make_jsonrpc_reply(null_arguments=True), "arguments null"),
    ("13.2", lambda: make_jsonrpc_reply(null_id=True), "an id that is null"),
    ("13.2", lambda: make_jsonrpc_reply(notification_first=True), "invalid, even without an id"),
    # 13.3 True as an integer; 2.0 refused; only the first problem; extras allowed; arrays unchecked; 1 == True
    ("13.3", lambda: make_schema_problems(bool_is_int=True), "true is not an integer"),
    ("13.3", lambda: make_schema_problems(float_integer=False), "2.0 is an integer"),
    ("13.3", lambda: make_schema_problems(first_only=True), "every problem, not the first"),
    ("13.3", lambda: make_schema_problems(additional=False), "no extra arguments"),
    ("13.3", lambda: make_schema_problems(items=False), "items of an array"),
    ("13.3", lambda: make_schema_problems(stop_at_type=False), "a type mismatch stops there"),
    # a digit string as an integer; additionalProperties only beside properties, or a schema read as false or
    # ignored; minimum and maximum applied to booleans; enum by type (2.0 is not 2) or by Python's == (True is 1)
    ("13.3", lambda: make_schema_problems(digit_strings=True), "'2' is not an integer"),
    ("13.3", lambda: make_schema_problems(additional_needs_properties=True), "no properties, no extras"),
    ("13.3", lambda: make_schema_problems(additional_schema="as false"), "extra keys against a schema"),
    ("13.3", lambda: make_schema_problems(additional_schema="ignored"), "extra keys against a schema"),
    ("13.3", lambda: make_schema_problems(bounds_on_bools=True), "no minimum for true"),
    ("13.3", lambda: make_schema_problems(enum="same type"), "2.0 is 2 in an enum"),
    ("13.3", lambda: make_schema_problems(enum="python"), "true is not 1 in an enum"),
]


@pytest.mark.parametrize("exercise_id, make, label", WRONG, ids=[f"{e}-{label}" for e, _, label in WRONG])
def test_a_plausible_wrong_solution_fails_on_the_case_made_for_it(exercise_id, make, label):
    caught_on(exercise_id, make, label)


def test_the_wrong_solutions_above_are_plausible_slips_not_broken_code():
    only_slips(WRONG)


def test_every_exercise_of_stage_13_has_a_wrong_solution_here():
    assert {e for e, _, _ in WRONG} == set(REFERENCES) == {"13.1", "13.2", "13.3"}
