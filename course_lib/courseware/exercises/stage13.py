"""Stage 13 · MCP: read a tool's result, answer one JSON-RPC message as a server, check arguments against a schema."""
from __future__ import annotations

import copy

from ..checks import Case, Exercise
from ... import default_tools

TOOLS = default_tools()


# ---- 13.1 from_mcp_result
def text(value: str) -> dict:
    return {"type": "text", "text": value}


IMAGE = {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}
LINK = {"type": "resource_link", "uri": "file:///docs/출장.md", "name": "출장.md", "mimeType": "text/markdown"}
EMBEDDED = {"type": "resource", "resource": {"uri": "file:///memo.txt", "mimeType": "text/plain", "text": "회의는 목요일"}}
BLOB = {"type": "resource", "resource": {"uri": "file:///chart.png", "mimeType": "image/png", "blob": "AAAA"}}
WHAT_HINT = "any other block is '[<type>: <what>]': the block's uri, else its resource's uri, else its mimeType"


def read(f, result):
    """``from_mcp_result`` on a copy: a function that changes its input cannot spoil later cases."""
    return f(copy.deepcopy(result))


# ---- 13.2 jsonrpc_reply: one message in, one answer (or None) out
VERSION_KEY, CAPABILITIES_KEY = "io.modelcontextprotocol/protocolVersion", "io.modelcontextprotocol/clientCapabilities"
META = {VERSION_KEY: "2026-07-28", CAPABILITIES_KEY: {}}   # the envelope every request of 2026-07-28 carries
DISCOVERED = {"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}}


def request(method, params=None, n=1, meta=META) -> dict:
    """A request as a 2026-07-28 client sends it: ``meta`` in its params (unless None, or params are no dict)."""
    if meta is not None and (params is None or isinstance(params, dict)):
        params = {**(params or {}), "_meta": meta}
    return {"jsonrpc": "2.0", "id": n, "method": method, **({} if params is None else {"params": params})}


def call(name, arguments=None, n=1) -> dict:
    return request("tools/call", {"name": name, **({} if arguments is None else {"arguments": arguments})}, n)


def listed(name, func) -> dict:
    """What tools/list shows for one tool (the setup cell's helper)."""
    from ...describe import tool_spec
    spec = tool_spec(name, func)
    return {"name": name, "description": spec["description"], "inputSchema": spec["parameters"]}


def answered(f, message, tools=TOOLS):
    """The learner's answer, with an error's message shown as '<a message>' (the wording is theirs)."""
    reply = f(copy.deepcopy(message), tools)
    if isinstance(reply, dict) and isinstance(reply.get("error"), dict):
        error = dict(reply["error"])
        if isinstance(error.get("message"), str) and error["message"].strip():
            error["message"] = "<a message>"
        reply = {**reply, "error": error}
    return reply


def result(text_: str, is_error: bool = False, n=1) -> dict:
    return {"jsonrpc": "2.0", "id": n, "result": {"content": [{"type": "text", "text": text_}], "isError": is_error}}


def error(code: int, n=1, **data) -> dict:
    return {"jsonrpc": "2.0", "id": n, "error": {"code": code, "message": "<a message>", **data}}


def names_the_tool(f) -> bool:
    reply = f(call("weather", {"city": "Busan"}), TOOLS)
    return "weather" in str(reply.get("error", {}).get("message", "")) if isinstance(reply, dict) else False


def one_tool(f) -> dict:
    def shout(text: str) -> str:
        """Say it loudly.

        Args:
            text: what to say
        """
        return text.upper() + "!"
    return f(request("tools/list", n="a"), {"shout": shout})


# ---- 13.3 schema_problems
TRIP = {"type": "object", "additionalProperties": False, "required": ["city", "nights"],
        "properties": {"city": {"type": "string", "enum": ["Busan", "Seoul", "Jeju"]},
                       "nights": {"type": "integer", "minimum": 1, "maximum": 30},
                       "guests": {"type": "array", "items": {"type": "string"}},
                       "budget": {"type": ["number", "null"], "minimum": 0},
                       "rooms": {"type": "array", "items": {"type": "object", "required": ["beds"],
                                                           "properties": {"beds": {"type": "integer"}}}}}}


def where(f, value, schema=TRIP):
    """Where the learner found problems: the first word of each sentence (a path), sorted."""
    found = f(copy.deepcopy(schema), copy.deepcopy(value))
    if not isinstance(found, list) or not all(isinstance(p, str) and p for p in found):
        return found
    return sorted(p.split()[0] for p in found)


def sentences(f) -> list:
    found = f(copy.deepcopy(TRIP), {"city": "Busan", "nights": "two"})
    return found if not isinstance(found, list) else [isinstance(p, str) and " " in p.strip() for p in found]


OTHERS_ARE_INTEGERS = {"type": "object", "properties": {"city": {"type": "string"}},
                       "additionalProperties": {"type": "integer"}}
PATH_HINT = "each sentence starts with the path of the value at fault: arguments, arguments.city, arguments.guests[1]"

# ---- drivers of the hidden cases (course check): the answer runs on copies; they return what is judged
def read_result(f, result):
    """from_mcp_result on a copy of ``result``: (its answer, the result afterwards)."""
    mine = copy.deepcopy(result)
    return f(mine), mine


def echo(text: str, times: int = 1) -> str:
    """Repeat the text.

    Args:
        text: what to repeat
        times: how often
    """
    if times > 3:
        raise ValueError("at most 3 times")
    return text * times


def registry(name: str) -> dict:
    """A fresh registry of tools, by name: "default", "echo", "echo and calculator" or "none"."""
    return {"default": dict(TOOLS), "echo": {"echo": echo}, "none": {},
            "echo and calculator": {"echo": echo, "calculator": TOOLS["calculator"]}}[name]


def replied(f, message, tools):
    """jsonrpc_reply to a copy of ``message``, with the registry named ``tools``: its answer."""
    return f(copy.deepcopy(message), registry(tools))


def checked(f, schema, value, **where):
    """schema_problems on copies: (its problems, the schema and the value afterwards)."""
    schema, value = copy.deepcopy(schema), copy.deepcopy(value)
    return f(schema, value, **where), schema, value


def checked_number(f, schema, number: str):
    """schema_problems of ``float(number)`` ("inf", "nan": values a case cannot send as data)."""
    return f(copy.deepcopy(schema), float(number))


EXERCISES = {
    "13.1": Exercise("A tool's result, as text for the model", [
        Case("one text block", lambda f: read(f, {"content": [text("168")], "isError": False}), expected=("168", False),
             hint="return (text, is_error): here ('168', False)"),
        Case("two text blocks, one per line", lambda f: read(f, {"content": [text("a"), text("b")]}),
             expected=("a\nb", False), hint="join the texts with '\\n'; isError missing means False"),
        Case("isError: true", lambda f: read(f, {"content": [text("bad timezone")], "isError": True}),
             expected=("bad timezone", True), hint="is_error is True exactly when result['isError'] is True"),
        Case("isError must be JSON true", lambda f: read(f, {"content": [text("ok")], "isError": "false"}),
             expected=("ok", False), hint="the text 'false' is truthy in Python: test `is True`, not truthiness"),
        Case("an empty text block is a piece", lambda f: read(f, {"content": [text("a"), text(""), text("b")]}),
             expected=("a\n\nb", False), hint="a text block gives its text, even '': keep it as a piece"),
        Case("an image is named", lambda f: read(f, {"content": [text("chart:"), IMAGE]}),
             expected=("chart:\n[image: image/png]", False), hint=WHAT_HINT),
        Case("a resource link", lambda f: read(f, {"content": [LINK]}),
             expected=("[resource_link: file:///docs/출장.md]", False), hint=WHAT_HINT),
        Case("an embedded text resource", lambda f: read(f, {"content": [EMBEDDED]}), expected=("회의는 목요일", False),
             hint="a 'resource' block whose resource has 'text' gives that text"),
        Case("an embedded binary resource", lambda f: read(f, {"content": [BLOB]}),
             expected=("[resource: file:///chart.png]", False), hint=WHAT_HINT),
        Case("a kind of block from the future", lambda f: read(f, {"content": [{"type": "hologram"}]}),
             expected=("[hologram: not shown]", False), hint="with no uri and no mimeType, <what> is 'not shown'"),
        Case("structured content only", lambda f: read(f, {"content": [], "structuredContent": {"시각": "11:30"}}),
             expected=('{"시각": "11:30"}', False),
             hint="no blocks: json.dumps(result['structuredContent'], ensure_ascii=False)"),
        Case("structured content {}", lambda f: read(f, {"content": [], "structuredContent": {}}),
             expected=("{}", False), hint="{} is structured content too: test `is not None`, not its truth"),
        Case("text blocks before structured content",
             lambda f: read(f, {"content": [text("11:30")], "structuredContent": {"시각": "11:30"}}),
             expected=("11:30", False), hint="structuredContent is used only when there are no blocks at all"),
        Case("an empty text block before structured content",
             lambda f: read(f, {"content": [text("")], "structuredContent": {"시각": "11:30"}}),
             expected=("", False), hint="a block is a block, even one whose text is '': structuredContent only "
                                        "when there are none (test the list of pieces, not what they hold)"),
        Case("structured content null", lambda f: read(f, {"content": [], "structuredContent": None}), expected=(
            "(the tool returned nothing)", False), hint="null (None) is no structured content: not `in result`"),
        Case("nothing at all", lambda f: read(f, {}), expected=("(the tool returned nothing)", False),
             hint="no blocks and no structuredContent: '(the tool returned nothing)'"),
        Case("content null", lambda f: read(f, {"content": None, "isError": True}),
             expected=("(the tool returned nothing)", True),
             hint="here content is None (JSON null): no blocks, as when it is missing (None cannot be looped over)"),
        Case("the result is not changed", lambda f: (lambda r: (f(r), r)[1])({"content": [text("x"), IMAGE]}),
             expected={"content": [text("x"), IMAGE]}, hint="only read the result"),
        Case("not a result", lambda f: f(["168"]), raises=ValueError, hint="a result is a dict: raise ValueError"),
    ]),
    "13.2": Exercise("A server's answer to one JSON-RPC message", [
        Case("tools/call calculator 24*7", lambda f: answered(f, call("calculator", {"expression": "24*7"})),
             expected=result("168"), hint="run dispatch(tools, name, arguments) and wrap its observation"),
        Case("a tool that fails: isError", lambda f: answered(f, call("calculator", {"expression": "1/0"}, n=2)),
             expected=result("Error: calculator: division by zero is undefined; check the divisor", True, n=2),
             hint="a failed call is still a result: its text, and isError set to the observation's is_error"),
        Case("the id comes back", lambda f: answered(f, call("lookup", {"topic": "단가"}, n="req-7")),
             expected=result("개당 $24", n="req-7"), hint="the answer carries the request's own id, whatever it is"),
        Case("no arguments", lambda f: answered(f, call("list_files", n=3)),
             test=lambda r: isinstance(r, dict) and r.get("id") == 3 and r.get("result", {}).get("isError") is False,
             shows="a result, not an error", hint="no 'arguments' in params means {}"),
        Case("missing argument: isError", lambda f: answered(f, call("calculator", {})),
             expected=result("Error: calculator is missing required argument(s) 'expression'.", True),
             hint="stage 05 finds it: it is a tool error the model can fix, not a protocol error"),
        Case("tools/list", lambda f: answered(f, request("tools/list", n=4)),
             expected={"jsonrpc": "2.0", "id": 4, "result": {"tools": [listed(n, t) for n, t in TOOLS.items()]}},
             hint="result {'tools': [listed(name, func) for each tool]}, in the registry's order"),
        Case("tools/list of other tools", one_tool,
             expected={"jsonrpc": "2.0", "id": "a", "result": {"tools": [
                 {"name": "shout", "description": "Say it loudly.", "inputSchema": {
                     "type": "object", "properties": {"text": {"type": "string", "description": "what to say"}},
                     "required": ["text"], "additionalProperties": False}}]}},
             hint="list the tools you were given, not default_tools()"),
        Case("server/discover", lambda f: answered(f, request("server/discover", n=5)),
             expected={"jsonrpc": "2.0", "id": 5, "result": DISCOVERED}, hint=f"the result {DISCOVERED}"),
        Case("no envelope", lambda f: answered(f, request("tools/list", n=8, meta=None)), expected=error(-32602, n=8),
             hint="a 2026-07-28 request carries params['_meta'] with VERSION_KEY and CAPABILITIES_KEY: else -32602"),
        Case("params without _meta", lambda f: answered(f, request("server/discover", {}, n=9, meta=None)),
             expected=error(-32602, n=9), hint="params with no '_meta' carry no envelope: -32602"),
        Case("an envelope without capabilities", lambda f: answered(f, request("tools/list", meta={
            VERSION_KEY: "2026-07-28"})), expected=error(-32602), hint="both keys, CAPABILITIES_KEY too: else -32602"),
        Case("_meta that is not an object", lambda f: answered(f, request("tools/list", meta=[VERSION_KEY])),
             expected=error(-32602), hint="params['_meta'] must be a dict holding both keys: a list is not"),
        Case("a version this server does not speak", lambda f: answered(f, request("tools/list", n=10, meta={
            VERSION_KEY: "2025-11-25", CAPABILITIES_KEY: {}})),
             expected=error(-32022, n=10, data={"supported": ["2026-07-28"]}),
             hint="another version: -32022, with 'data': {'supported': ['2026-07-28']} so the client can choose"),
        Case("the version is checked before the method",
             lambda f: answered(f, request("weather/today", meta={VERSION_KEY: "1999-01-01", CAPABILITIES_KEY: {}})),
             expected=error(-32022, data={"supported": ["2026-07-28"]}),
             hint="check the envelope and its version (-32022, with the data) before you look at the method"),
        Case("both keys before the version", lambda f: answered(f, request("tools/list", meta={VERSION_KEY: "1.0"})),
             expected=error(-32602), hint="an envelope without CAPABILITIES_KEY is -32602, whatever its version"),
        Case("ping is gone", lambda f: answered(f, request("ping", n=11)), expected=error(-32601, n=11),
             hint="2026-07-28 has no session to keep alive: ping is a method this server does not have (-32601)"),
        Case("initialize is gone", lambda f: answered(f, request("initialize", {"protocolVersion": "2025-11-25"})),
             expected=error(-32601), hint="this server speaks only 2026-07-28, which has no handshake: -32601"),
        Case("an unknown tool is a protocol error", lambda f: answered(f, call("weather", {"city": "Busan"})),
             expected=error(-32602), hint="no tool can run: error code -32602, not an isError result"),
        Case("the unknown tool is named", names_the_tool, expected=True,
             hint="say which tool is unknown, e.g. 'Unknown tool: weather'"),
        Case("an unknown method", lambda f: answered(f, request("resources/list")), expected=error(-32601),
             hint="a method this server does not have: -32601 (Method not found)"),
        Case("params that are not an object", lambda f: answered(f, request("tools/call", ["calculator"])),
             expected=error(-32602), hint="tools/call needs params {'name': ..., 'arguments': {...}}: else -32602"),
        Case("arguments that are not an object", lambda f: answered(f, call("calculator", "24*7")),
             expected=error(-32602), hint="arguments must be an object when given: else -32602"),
        Case("a name that is not text", lambda f: answered(f, call(["calculator"], {})), expected=error(-32602),
             hint="here the name is a list, ['calculator']: check that it is a str before looking it up in tools "
                  "(a list cannot be a dict key: 'unhashable type'); not a str: -32602"),
        Case("arguments null", lambda f: answered(f, request("tools/call", {"name": "calculator", "arguments": None})),
             expected=error(-32602), hint="'arguments' is there but None (JSON null), which is not a dict: -32602; "
                                          "only a missing 'arguments' means {}"),
        Case("a notification gets no answer", lambda f: f({"jsonrpc": "2.0", "method": "notifications/cancelled",
                                                           "params": {"requestId": 3}}, TOOLS), expected=None,
             hint="no 'id': return None (a notification needs no envelope either)"),
        Case("not JSON-RPC 2.0", lambda f: answered(f, {"jsonrpc": "1.0", "id": 6, "method": "ping"}),
             expected=error(-32600, n=6), hint="'jsonrpc' must be '2.0' and 'method' a str: else -32600"),
        Case("no method", lambda f: answered(f, {"jsonrpc": "2.0", "id": 7}), expected=error(-32600, n=7),
             hint="'jsonrpc' must be '2.0' and 'method' a str: else -32600"),
        Case("not a message at all", lambda f: answered(f, ["ping"]), expected=error(-32600, n=None),
             hint="here the message is a list, ['ping']: not a dict, so -32600 with id None"),
        Case("a float is no id", lambda f: answered(f, {"jsonrpc": "2.0", "id": 1.5, "method": "ping"}),
             expected=error(-32600, n=None), hint="an id is a str or an int: 1.5 (a float) is neither, -32600 with "
                                                  "id None; and type(id) is not bool"),
        Case("true is no id", lambda f: answered(f, {"jsonrpc": "2.0", "id": True, "method": "ping"}),
             expected=error(-32600, n=None), hint="True is an int in Python, but no id: type(id) in (int, str), "
                                                  "not isinstance"),
        Case("an id that is null", lambda f: answered(f, {"jsonrpc": "2.0", "id": None, "method": "ping"}),
             expected=error(-32600, n=None), hint="MCP: an id is a str or an int, never None: -32600 with id None"),
        Case("invalid, even without an id", lambda f: answered(f, {"jsonrpc": "2.0", "method": 1}),
             expected=error(-32600, n=None), hint="method 1 is not a str: an invalid message is answered (-32600, "
                                                   "id None) even without an id; check it before the notification"),
    ]),
    "13.3": Exercise("Arguments against an input schema", [
        Case("a good call", lambda f: where(f, {"city": "Busan", "nights": 2}), expected=[],
             hint="nothing wrong: return []"),
        Case("every field, all good", lambda f: where(f, {"city": "Jeju", "nights": 30, "guests": ["민지", "Tom"],
                                                          "budget": None, "rooms": [{"beds": 2}]}), expected=[],
             hint="'null' in a list of types allows None; maximum is inclusive"),
        Case("a missing argument", lambda f: where(f, {"city": "Busan"}), expected=["arguments"],
             hint="a missing required name is a problem of the object itself: 'arguments is missing ...'"),
        Case("a wrong type", lambda f: where(f, {"city": "Busan", "nights": "two"}), expected=["arguments.nights"],
             hint=PATH_HINT),
        Case("true is not an integer", lambda f: where(f, {"city": "Busan", "nights": True}),
             expected=["arguments.nights"], hint="bool is a subclass of int in Python; not in JSON Schema"),
        Case("'2' is not an integer", lambda f: where(f, {"city": "Busan", "nights": "2"}),
             expected=["arguments.nights"], hint="'2' is a string: JSON Schema checks the type, it converts nothing"),
        Case("2.0 is an integer", lambda f: where(f, {"city": "Busan", "nights": 2.0}), expected=[],
             hint="JSON has one kind of number: 2.0 is an integer, 2.5 is not"),
        Case("not in the enum", lambda f: where(f, {"city": "Tokyo", "nights": 2}), expected=["arguments.city"],
             hint="the value must be one of schema['enum']"),
        Case("2.0 is 2 in an enum", lambda f: where(f, 2.0, schema={"type": "integer", "enum": [1, 2, 3]}),
             expected=[], hint="as in 'type', numbers compare by value: 2.0 equals 2"),
        Case("true is not 1 in an enum", lambda f: where(f, True, schema={"enum": [1, 2]}), expected=["arguments"],
             hint="True == 1 in Python, but true is not a number in JSON: compare the type too, numbers aside"),
        Case("no minimum for true", lambda f: where(f, True, schema={"maximum": 0}), expected=[],
             hint="minimum and maximum are for numbers; true and false are not numbers"),
        Case("infinity is not an integer", lambda f: where(f, float("inf"), schema={"type": "integer"}),
             expected=["arguments"], hint="inf is no whole number: float.is_integer() says so, where int(inf) raises "
                                          "OverflowError"),
        Case("at the minimum", lambda f: where(f, {"city": "Busan", "nights": 1, "budget": 0}), expected=[],
             hint="minimum is inclusive: only a value < minimum is a problem, not one equal to it"),
        Case("below the minimum", lambda f: where(f, {"city": "Busan", "nights": 0}), expected=["arguments.nights"],
             hint="minimum and maximum are inclusive"),
        Case("no extra arguments", lambda f: where(f, {"city": "Busan", "nights": 2, "pets": 1}),
             expected=["arguments"], hint="additionalProperties: false: a name not in properties is a problem"),
        Case("no properties, no extras", lambda f: where(f, {"x": 1}, schema={"type": "object",
                                                                             "additionalProperties": False}),
             expected=["arguments"], hint="no 'properties' means none are listed: with additionalProperties false, "
                                          "every key is a problem"),
        Case("extra keys against a schema", lambda f: where(f, {"city": "Busan", "nights": 2, "note": "x"},
                                                            schema=OTHERS_ARE_INTEGERS), expected=["arguments.note"],
             hint="additionalProperties may be a schema: each key not in properties is checked against it, at "
                  "path.key (only False refuses them all)"),
        Case("items of an array", lambda f: where(f, {"city": "Busan", "nights": 2, "guests": ["민지", 7]}),
             expected=["arguments.guests[1]"], hint="check each item against schema['items'], at path[i]"),
        Case("objects inside an array", lambda f: where(f, {"city": "Busan", "nights": 2, "rooms": [{"beds": 1}, {}]}),
             expected=["arguments.rooms[1]"], hint="recurse: an item that is an object is checked like the top"),
        Case("every problem, not the first", lambda f: where(f, {"city": "Tokyo", "nights": 0, "pets": 1}),
             expected=["arguments", "arguments.city", "arguments.nights"], hint="collect them all, then return"),
        Case("a type mismatch stops there", lambda f: where(f, {"city": "Busan", "nights": 40.5}),
             expected=["arguments.nights"],
             hint="a value of the wrong type gets one problem: do not check its minimum, maximum or enum as well"),
        Case("an enum mismatch stops there", lambda f: where(f, 3, schema={"type": "integer", "enum": [1, 2],
                                                                             "minimum": 5}),
             expected=["arguments"], hint="a value outside the enum gets one problem: do not check its minimum too"),
        Case("a string where a list belongs", lambda f: where(f, {"city": "Busan", "nights": 2, "guests": "민지"}),
             expected=["arguments.guests"], hint="'민지' is a string, not an array of strings"),
        Case("not an object at all", lambda f: where(f, ["Busan", 2]), expected=["arguments"],
             hint="the top is checked too: an array where an object belongs"),
        Case("problems are sentences", sentences, expected=[True],
             hint="return sentences such as 'arguments.nights must be integer, not string'"),
        Case("an empty schema allows anything", lambda f: where(f, {"anything": [1, {"x": None}]}, schema={}),
             expected=[], hint="check only the keywords the schema has"),
    ]),
}
