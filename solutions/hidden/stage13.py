"""Hidden cases of stage 13 (see course_lib/courseware/hidden.py): the old hidden-test cells, as data.

The random inputs are drawn as the old cells drew them (the same seeds, the same draws in the same order), each
becoming one case; what they expect comes from course_lib's mcp_bridge or the rules written plainly, computed here,
in the grader."""
import copy
import json
import random

from course_lib.courseware.checks import Case
from course_lib.courseware.exercises.stage13 import (CAPABILITIES_KEY, VERSION_KEY, checked, checked_number, listed,
                                                     read_result, registry, replied)
from course_lib.courseware.observe import call, using
from course_lib.dispatch import dispatch
from course_lib.mcp_bridge import from_mcp_result, schema_problems


def _short(value, limit=40):
    text = " ".join(repr(value).split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


# ---- 13.1: many results, read as course_lib's from_mcp_result reads them, the result untouched; non-dicts refused
_BLOCKS = [{"type": "text", "text": "168"}, {"type": "text", "text": "개당 $24"}, {"type": "text", "text": ""},
           {"type": "text", "text": "line one\nline two"},
           {"type": "image", "data": "AA==", "mimeType": "image/jpeg"},
           {"type": "audio", "data": "AA==", "mimeType": "audio/wav"},
           {"type": "resource_link", "uri": "file:///a/b.txt", "name": "b.txt"},
           {"type": "resource", "resource": {"uri": "memo://1", "text": "회의는 목요일"}},
           {"type": "resource", "resource": {"uri": "memo://2", "blob": "AA=="}}, {"type": "video"},
           {"type": "image", "data": "AA=="}]


def _results_13_1():
    rng, drawn = random.Random(131), []
    for _ in range(300):
        result = {}
        if rng.random() < 0.9:
            result["content"] = [rng.choice(_BLOCKS) for _ in range(rng.randint(0, 4))] if rng.random() < 0.9 else None
        if rng.random() < 0.4:
            result["structuredContent"] = rng.choice([{"시각": "11:30"}, [1, 2], None, {"ok": True}, {}])
        if rng.random() < 0.7:
            result["isError"] = rng.choice([True, False, "true", 1, None])
        drawn.append(copy.deepcopy(result))
    return drawn


_CASES_13_1 = [
    *[Case(f"result #{n}: {_short(result)}", using(read_result, result),
           expected=(from_mcp_result(copy.deepcopy(result)), copy.deepcopy(result)),
           hint="(text, is_error): text blocks as they are, embedded text, other blocks named, one per line; "
                "structuredContent only without blocks; is_error only for isError true; the result unchanged")
      for n, result in enumerate(_results_13_1(), 1)],
    *[Case(f"{bad!r} is not a result", call(bad), raises=ValueError, hint="a result is a dict: else ValueError")
      for bad in [None, "168", 42]],
]


# ---- 13.2: many messages to several registries: the rules written plainly, an error's message left out
def _expected_13_2(message, tools):
    """The exercise's rules, written plainly (an error's message left out)."""
    if not isinstance(message, dict) or ("id" in message and type(message["id"]) not in (int, str)):
        return {"id": None, "error": -32600}
    method, params = message.get("method"), message.get("params")
    if message.get("jsonrpc") != "2.0" or not isinstance(method, str):
        return {"id": message.get("id"), "error": -32600}
    if "id" not in message:
        return None
    meta = params.get("_meta") if isinstance(params, dict) else None
    if not isinstance(meta, dict) or VERSION_KEY not in meta or CAPABILITIES_KEY not in meta:
        return {"id": message["id"], "error": -32602}
    if meta[VERSION_KEY] != "2026-07-28":
        return {"id": message["id"], "error": -32022, "data": {"supported": ["2026-07-28"]}}
    if method == "server/discover":
        return {"id": message["id"], "result": {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}}}
    if method == "tools/list":
        return {"id": message["id"], "result": {"tools": [listed(n, f) for n, f in tools.items()]}}
    if method != "tools/call":
        return {"id": message["id"], "error": -32601}
    if not isinstance(params.get("name"), str) or not isinstance(params.get("arguments", {}), dict) \
            or params["name"] not in tools:
        return {"id": message["id"], "error": -32602}
    seen = dispatch(tools, params["name"], params.get("arguments", {}))
    return {"id": message["id"], "result": {"content": [{"type": "text", "text": seen.content}],
                                            "isError": seen.is_error}}


def _shape(answer):
    """The answer as _expected_13_2 writes it; AssertionError (a failed case) for one that is no JSON-RPC answer."""
    if answer is None:
        return None
    assert isinstance(answer, dict) and answer.get("jsonrpc") == "2.0", answer
    assert ("result" in answer) != ("error" in answer), f"an answer has a result or an error: {answer}"
    json.dumps(answer, ensure_ascii=False)   # an answer must be JSON, to be sent as one line
    if "error" in answer:
        assert isinstance(answer["error"].get("message"), str) and answer["error"]["message"], answer
        return {"id": answer["id"], "error": answer["error"]["code"],
                **({"data": answer["error"]["data"]} if answer["error"]["code"] == -32022 else {})}
    return {"id": answer["id"], "result": answer["result"]}


def _answer_test(want):
    return lambda got: _shape(got) == want


def _shown(want):
    if want is None:
        return "None (a notification)"
    return f"error {want['error']}, id {want['id']!r}" if "error" in want else f"a result, id {want['id']!r}"


_REGISTRIES = ["default", "echo", "echo and calculator", "none"]
_CALLS = [("calculator", {"expression": "2**8"}), ("calculator", {"expression": "x+1"}), ("calculator", {}),
          ("echo", {"text": "부산"}), ("echo", {"text": "a", "times": 5}), ("echo", {"text": "b", "times": "2"}),
          ("lookup", {"topic": "단가"}), ("weather", {"city": "Seoul"}), ("echo", None), (["echo"], {}),
          ("echo", "text"), ("echo", {"text": "c", "extra": 1}), ("echo", "null")]
_ENVELOPES = [{VERSION_KEY: "2026-07-28", CAPABILITIES_KEY: {}}] * 4 + [
    {VERSION_KEY: "2025-11-25", CAPABILITIES_KEY: {}}, {VERSION_KEY: "2026-07-28"}, {CAPABILITIES_KEY: {}},
    {VERSION_KEY: None, CAPABILITIES_KEY: {"sampling": {}}}, [VERSION_KEY], None]


def _messages_13_2():
    rng, drawn = random.Random(132), []
    for _ in range(300):
        tools = rng.choice(_REGISTRIES)
        name, args = rng.choice(_CALLS)
        params = {"name": name, **({} if args is None else {"arguments": None if args == "null" else args})}
        if rng.random() < 0.9:
            params["_meta"] = rng.choice(_ENVELOPES)
        message = {"jsonrpc": rng.choice(["2.0", "2.0", "2.0", "1.0"]), "id": rng.choice([1, "x-9", 0, 2, None, True]),
                   "method": rng.choice(["tools/call", "tools/call", "tools/list", "server/discover", "ping",
                                         "initialize", "prompts/list", 7]),
                   "params": rng.choice([params, params, params, [name], None])}
        if rng.random() < 0.15:
            del message["id"]
        if rng.random() < 0.1:
            message = rng.choice([[1, 2], "ping", None])
        drawn.append((copy.deepcopy(message), tools))
    return drawn


def _method(message):
    return message.get("method") if isinstance(message, dict) else message


_CASES_13_2 = [
    Case(f"message #{n}: {_short(_method(message), 16)} to {tools}", using(replied, message, tools),
         test=_answer_test(want), shows=_shown(want),
         hint="the envelope and its version before the method; a JSON-RPC answer with a result or an error "
              "(a code and a message), or None for a notification")
    for n, (message, tools) in enumerate(_messages_13_2(), 1)
    for want in [_expected_13_2(message, registry(tools))]
]


# ---- 13.3: many schemas and values: problems at the places course_lib's schema_problems finds, inputs untouched
_LEAVES = [{"type": "string"}, {"type": "integer", "minimum": 0, "maximum": 9}, {"type": "number", "minimum": -1.5},
           {"type": "boolean"}, {"type": ["string", "null"]}, {"enum": ["a", 1, True, None]}, {},
           {"type": "integer", "enum": [1, 2, 3]}, {"type": "array", "items": {"type": "integer"}},
           {"enum": [0, 2.0, "2", False]}, {"minimum": 1}, {"maximum": 0.5}]


def _schema(rng, depth=0):
    if depth > 2 or rng.random() < 0.4:
        return rng.choice(_LEAVES)
    if rng.random() < 0.3:
        return {"type": "array", "items": _schema(rng, depth + 1)}
    names = rng.sample(["a", "b", "c", "부산"], rng.randint(0, 3))
    schema = {"type": "object", "properties": {n: _schema(rng, depth + 1) for n in names}}
    if names and rng.random() < 0.6:
        schema["required"] = rng.sample(names, rng.randint(1, len(names)))
    if rng.random() < 0.6:
        schema["additionalProperties"] = rng.choice([False, False, True, {"type": "integer"}, _schema(rng, depth + 1)])
    if not names and rng.random() < 0.5:
        del schema["properties"]
    return schema


def _value(rng, depth=0):
    if depth > 2 or rng.random() < 0.5:
        return rng.choice(["a", "", 0, 1, 2, 2.0, 2.5, -3, 10, True, False, None, "부산", "2"])
    if rng.random() < 0.4:
        return [_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    return {n: _value(rng, depth + 1) for n in rng.sample(["a", "b", "c", "부산", "zz"], rng.randint(0, 4))}


def _pairs_13_3():
    rng, drawn = random.Random(133), []
    for _ in range(400):
        schema, value = _schema(rng), _value(rng)
        drawn.append((copy.deepcopy(schema), copy.deepcopy(value)))
    return drawn


def _places(problems):
    return sorted(p.split()[0] for p in problems)


def _problems_test(schema, value):
    want, before = _places(schema_problems(copy.deepcopy(schema), copy.deepcopy(value))), copy.deepcopy((schema, value))

    def test(got):
        found, *after = got
        return isinstance(found, list) and all(isinstance(p, str) and " " in p for p in found) \
            and _places(found) == want and tuple(after) == before
    return test, f"sentences at {want}; inputs unchanged"


_CASES_13_3 = [
    *[Case(f"pair #{n}: {_short(value, 30)}", using(checked, schema, value), test=test, shows=shows,
           hint="one sentence per problem, starting with its path; the schema and the value left as they were")
      for n, (schema, value) in enumerate(_pairs_13_3(), 1) for test, shows in [_problems_test(schema, value)]],
    Case("an empty object, where='args'", using(checked, {"type": "object"}, {}, where="args"),
         test=lambda got: got[0] == [], shows="[]", hint="an object with no keywords to break: []"),
    *[Case(f"{number} is no whole number", using(checked_number, {"type": "integer"}, number),
           test=lambda got: [p.split()[0] for p in got] == ["arguments"], shows="one problem, at arguments",
           hint="inf, -inf and nan are no integers: float.is_integer() says so without a crash")
      for number in ["inf", "-inf", "nan"]],
    Case("1 is at the minimum 1", using(checked, {"type": "integer", "minimum": 1}, 1),
         test=lambda got: got[0] == [], shows="[]", hint="minimum is inclusive"),
    Case("0.0 is at the minimum 0", using(checked, {"minimum": 0}, 0.0),
         test=lambda got: got[0] == [], shows="[]", hint="minimum is inclusive, and 0.0 is a number like 0"),
    Case("the path starts with where", using(checked, {"type": "string"}, 5, where="args.x"),
         test=lambda got: got[0][0].startswith("args.x "), shows="a sentence starting 'args.x '",
         hint="each sentence starts with where, the path it was given"),
]

HIDDEN = {"13.1": _CASES_13_1, "13.2": _CASES_13_2, "13.3": _CASES_13_3}

# Wrong solutions that pass every visible case and fail a hidden one (the old hidden-test cell failed them too):
# (exercise, the hidden case's label it fails, [(old, new) edits of the solution cell], the mistake in a few words)
CAUGHT = [
    ("13.1", "result #12: {'isError': 1}", [('result.get("isError") is True', 'result.get("isError") == True')],
     "isError == True lets 1 in"),
    ("13.1", "result #48: {'content': [], 'structuredContent': [1…",
     [('if not parts and result.get("structuredContent") is not None:',
       'if not parts and isinstance(result.get("structuredContent"), dict):')], "structured content only as a dict"),
    ("13.1", "None is not a result", [("if not isinstance(result, dict):", "if isinstance(result, list):")],
     "only a list refused"),
    ("13.2", "message #4: 'tools/call' to echo and calculator",
     [('    if "id" not in message:\n        return None', '    if not message.get("id"):\n        return None')],
     "id 0 taken for a notification"),
    ("13.2", "message #65: 'prompts/list' to echo and calculator",
     [('    if message.get("jsonrpc") != "2.0" or not isinstance(method, str):', '    if not isinstance(method, str):'),
      ('        return None   # a notification: no answer\n',
       '        return None   # a notification: no answer\n    if message.get("jsonrpc") != "2.0":\n'
       '        return error(-32600, "Invalid Request: not JSON-RPC 2.0")\n')],
     "the version checked only for requests"),
    ("13.3", "pair #191: True", [("return type(value) in (int, float)\n", "return isinstance(value, (int, float))\n")],
     "True taken for a number"),
    ("13.3", "pair #54: {'부산': True, 'c': {'zz': [Non…", [("elif isinstance(others, dict):", "elif others:")],
     "additionalProperties true read as a schema"),
]
