"""Stage 08 · real APIs: the tool-result messages of OpenAI and Anthropic, and OpenAI's tool calls read back."""
from __future__ import annotations

import copy
import json
import urllib.error
import urllib.request

from ..checks import Case, Exercise
from ...dispatch import Observation
from ...models import ToolCall
from ..standin import StandInServer

GOAL = {"role": "user", "content": "일곱 개 사면 얼마예요? 할인도 있나요?"}
CALLS = [ToolCall("lookup", {"topic": "단가"}, id="call_1"), ToolCall("lookup", {"topic": "할인"}, id="call_2")]
OBS = [Observation("개당 $24"), Observation("Error: no topic '할인'", is_error=True)]
TOOLU = [ToolCall(c.name, c.args, id=f"toolu_{i}") for i, c in enumerate(CALLS, 1)]


def _not_objects(messages) -> list[str]:
    """The stand-in assumes messages, blocks and tool calls are JSON objects: say so here instead."""
    for i, m in enumerate(messages):
        parts = [m] + (m.get("content") if isinstance(m, dict) and isinstance(m.get("content"), list) else []) \
            + (m.get("tool_calls") or [] if isinstance(m, dict) else [])
        if not all(isinstance(part, dict) for part in parts):
            return [f"messages[{i}]: a message, a content block or a tool call is not a JSON object"]
    return []


def standin_problems(api: str, messages: list[dict]) -> list[str]:
    """Send ``messages`` to the local stand-in server (127.0.0.1, never a real API); its shape complaints."""
    if _not_objects(messages):
        return _not_objects(messages)
    body = {"model": "stand-in", "messages": messages}
    headers = {"content-type": "application/json"}
    if api == "anthropic":
        body["max_tokens"], headers["x-api-key"], path = 64, "stand-in", "/v1/messages"
    else:
        headers["authorization"], path = "Bearer stand-in", "/v1/chat/completions"
    with StandInServer(["ok"]) as server:
        request = urllib.request.Request(server.url + path, json.dumps(body, ensure_ascii=False).encode(), headers)
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))   # straight to 127.0.0.1
        try:
            opener.open(request, timeout=5).read()
        except urllib.error.HTTPError:
            pass   # a 400: the reason is in server.problems
    return server.problems


def tool_use_turn(calls) -> dict:
    """The Anthropic assistant turn that asked for ``calls`` (what the results message answers)."""
    return {"role": "assistant", "content": [{"type": "tool_use", "id": c.id, "name": c.name, "input": c.args}
                                             for c in calls]}


def openai_message(*calls, content=None) -> dict:
    """An OpenAI ``choices[0].message``; each call is (id, name, arguments text)."""
    message = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = [{"id": i, "type": "function", "function": {"name": n, "arguments": a}}
                                 for i, n, a in calls]
    return message


def kinds(value) -> str:
    """'list of ToolCall': the container's type and its items' types, for a readable table cell."""
    items = sorted({type(item).__name__ for item in value}) if isinstance(value, (list, tuple)) else []
    return type(value).__name__ + (f" of {', '.join(items)}" if items else "")


TWO = openai_message(("call_1", "lookup", '{"topic": "단가"}'), ("call_2", "calculator", '{"expression": "2+2"}'))


def call(f, *args):
    """Call the learner's function on copies: a function that changes its input cannot spoil later cases."""
    return f(*copy.deepcopy(args))


def turn(f, text="", calls=CALLS, obs=OBS) -> list[dict]:
    return call(f, text, calls, obs)


def results(f, calls=TOOLU, obs=OBS) -> dict:
    return call(f, calls, obs)


BROKEN = openai_message(("c1", "lookup", '{"topic": "단가"'))
FALSY = openai_message(("c1", "lookup", "null"), ("c2", "lookup", "[]"), ("c3", "lookup", "0"))
FLAGGED = [Observation("Error codes: E4 means a paper jam"), Observation("timed out after 30 s", is_error=True)]

COUNT_HINT = "the numbers of calls and observations must match: raise ValueError"
NO_ID_HINT = "every call needs an id (the API matches results to calls by id): raise ValueError when one is empty"
SAME_ID_HINT = "ids must be unique, or the API cannot tell the results apart: raise ValueError"

EXERCISES = {
    "08.1": Exercise("OpenAI: the messages of one tool turn", [
        Case("roles, in order", lambda f: [m["role"] for m in turn(f)], expected=["assistant", "tool", "tool"],
             hint="the assistant message first, then one tool message per call"),
        Case("tool messages: ids", lambda f: [m["tool_call_id"] for m in turn(f)[1:]], expected=["call_1", "call_2"],
             hint="each tool message has tool_call_id = call.id, in the order of the calls"),
        Case("tool messages: contents", lambda f: [m["content"] for m in turn(f)[1:]],
             expected=[o.content for o in OBS], hint="a tool message's content is observation.content, as it is"),
        Case("tool message keys", lambda f: sorted(turn(f)[2]), expected=["content", "role", "tool_call_id"],
             hint="no is_error and no name: OpenAI's tool message has only these three keys"),
        Case("arguments are JSON text", lambda f: turn(f)[0]["tool_calls"][0]["function"]["arguments"],
             expected='{"topic": "단가"}', hint="json.dumps(args, ensure_ascii=False)"),
        Case("no text: content None", lambda f: turn(f)[0]["content"], expected=None,
             hint="an empty text is sent as null: content is text or None"),
        Case("text is kept", lambda f: turn(f, "Let me check.", CALLS[:1], OBS[:1])[0]["content"],
             expected="Let me check.", hint="a text that is not empty is the assistant message's content"),
        Case("2 calls, 1 observation", lambda f: turn(f, obs=OBS[:1]), raises=ValueError,
             hint="every call needs exactly one observation"),
        Case("a call without an id", lambda f: turn(f, calls=[ToolCall("lookup", {"topic": "x"})], obs=OBS[:1]),
             raises=ValueError, hint=NO_ID_HINT),
        Case("the same id twice", lambda f: turn(f, calls=[CALLS[0], CALLS[0]]), raises=ValueError,
             hint=SAME_ID_HINT),
        Case("no calls at all", lambda f: turn(f, "done", [], []), raises=ValueError,
             hint="a turn without tool calls is a final answer, not a tool turn"),
    ]),
    "08.2": Exercise("Anthropic: all tool results in one user message", [
        Case("one user message", lambda f: results(f)["role"], expected="user",
             hint="return ONE message: {'role': 'user', 'content': [one block per call]}"),
        Case("one block per call, in order", lambda f: [b["tool_use_id"] for b in results(f)["content"]],
             expected=["toolu_1", "toolu_2"], hint="content is a list of tool_result blocks"),
        Case("block of a tool that worked: keys", lambda f: sorted(results(f)["content"][0]),
             expected=["content", "tool_use_id", "type"], hint="no is_error key when the tool worked"),
        Case("its type and content", lambda f: [results(f)["content"][0][k] for k in ("type", "content")],
             expected=["tool_result", "개당 $24"],
             hint="each block: {'type': 'tool_result', 'tool_use_id': call.id, 'content': observation.content}"),
        Case("failed tool: is_error", lambda f: results(f)["content"][1].get("is_error"), expected=True,
             hint="add 'is_error': True to the block of a call whose observation.is_error is set"),
        Case("is_error from the flag, not the text",
             lambda f: [b.get("is_error") for b in results(f, obs=FLAGGED)["content"]], expected=[None, True],
             hint="read observation.is_error: a result may start with 'Error' and be fine, an error may not"),
        Case("the stand-in server accepts it",
             lambda f: standin_problems("anthropic", [GOAL, tool_use_turn(TOOLU), results(f)]), expected=[],
             hint="'got' lists what the stand-in refused: one tool_result per tool_use id, in one user message"),
        Case("no calls at all", lambda f: results(f, [], []), raises=ValueError,
             hint="no calls: raise ValueError (the API refuses a message with empty content)"),
        Case("1 call, 2 observations", lambda f: results(f, TOOLU[:1]), raises=ValueError, hint=COUNT_HINT),
        Case("a call without an id", lambda f: results(f, [ToolCall("lookup", {"topic": "x"})], OBS[:1]),
             raises=ValueError, hint=NO_ID_HINT),
        Case("the same id twice", lambda f: results(f, [TOOLU[0], TOOLU[0]]), raises=ValueError,
             hint=SAME_ID_HINT),
    ]),
    "08.3": Exercise("OpenAI: read the tool calls of a reply", [
        Case("two calls: names", lambda f: [c.name for c in call(f, TWO)], expected=["lookup", "calculator"],
             hint="one ToolCall per entry of message['tool_calls'], in order; the name is in ['function']['name']"),
        Case("two calls: ids", lambda f: [c.id for c in call(f, TWO)], expected=["call_1", "call_2"],
             hint="each call's id is call['id']"),
        Case("two calls: args", lambda f: [c.args for c in call(f, TWO)],
             expected=[{"topic": "단가"}, {"expression": "2+2"}], hint="json.loads the arguments text"),
        Case("a list of ToolCall", lambda f: kinds(call(f, TWO)), expected="list of ToolCall",
             hint="build each call with ToolCall(name=..., args=..., id=...)"),
        Case("tool_calls is null", lambda f: call(f, {"role": "assistant", "content": "Hi", "tool_calls": None}),
             expected=[], hint="tool_calls may be None: message.get('tool_calls') or []"),
        Case("no tool_calls key", lambda f: call(f, openai_message(content="$168.")), expected=[],
             hint="a reply with only text may have no tool_calls key at all: use .get"),
        Case("broken JSON is kept as text", lambda f: call(f, BROKEN)[0].args, expected='{"topic": "단가"',
             hint="catch the JSON error and keep the raw text as args"),
        Case("empty arguments text", lambda f: call(f, openai_message(("c1", "list_files", "")))[0].args, expected={},
             hint="empty text means no arguments: {}"),
        Case("arguments null", lambda f: call(f, openai_message(("c1", "list_files", None)))[0].args, expected={},
             hint="None means no arguments too: json.loads(raw or '{}')"),
        Case("arguments already a dict", lambda f: call(f, openai_message(("c1", "lookup", {"topic": "배송"})))[0].args,
             expected={"topic": "배송"}, hint="Ollama sends the arguments as an object already: keep a dict as it is"),
        Case("'null', '[]' and '0' are kept", lambda f: [c.args for c in call(f, FALSY)], expected=[None, [], 0],
             hint="valid JSON is kept as it decodes, even when it is falsy: no `or {}` after json.loads"),
        Case("only spaces: kept as text", lambda f: call(f, openai_message(("c1", "list_files", "  ")))[0].args,
             expected="  ", hint="'  ' is neither empty nor valid JSON: keep the raw text, like broken JSON"),
        Case("valid JSON, not an object", lambda f: call(f, openai_message(("c1", "lookup", "[1, 2]")))[0].args,
             expected=[1, 2],
             hint="keep whatever valid JSON decodes to: the dispatcher tells the model it is no object"),
    ]),
}
