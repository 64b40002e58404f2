"""Stage 08 · real APIs: the tool-result messages of OpenAI and Anthropic, OpenAI's tool calls read back, the
Responses API's items after a tool turn, and a streamed Chat Completions reply put together."""
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


def _post(server, path: str, body: dict) -> dict | None:
    """POST ``body`` to the stand-in (127.0.0.1, never a real API); its JSON reply, or None when it refused."""
    headers = {"content-type": "application/json", "x-api-key": "stand-in", "authorization": "Bearer stand-in"}
    request = urllib.request.Request(server.url + path, json.dumps(body, ensure_ascii=False).encode(), headers)
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))   # straight to 127.0.0.1
    try:
        with opener.open(request, timeout=5) as response:
            return json.load(response)
    except urllib.error.HTTPError:
        return None   # a 400: the reason is in server.problems


def standin_problems(api: str, messages: list[dict]) -> list[str]:
    """Send ``messages`` to the local stand-in server (127.0.0.1, never a real API); its shape complaints."""
    if _not_objects(messages):
        return _not_objects(messages)
    body = {"model": "stand-in", "messages": messages, **({"max_tokens": 64} if api == "anthropic" else {})}
    with StandInServer(["ok"]) as server:
        _post(server, "/v1/messages" if api == "anthropic" else "/v1/chat/completions", body)
    return server.problems


THOUGHT = [{"thinking": "Both at once.", "tool_calls": [{"name": "lookup", "args": {"topic": "단가"}},
                                                        {"name": "lookup", "args": {"topic": "할인"}}]}, "ok"]


def responses_problems(f, observations=OBS) -> list[str]:
    """Ask the stand-in's Responses API for one thought-out tool turn, send back ``f(output, observations)`` as
    the next request's new items, and return what the stand-in refused (127.0.0.1, never a real API)."""
    body = {"model": "stand-in", "input": [GOAL], "store": False, "include": ["reasoning.encrypted_content"]}
    with StandInServer(THOUGHT) as server:
        items = call(f, _post(server, "/v1/responses", body)["output"], observations)
        if not (isinstance(items, list) and all(isinstance(i, dict) for i in items)):
            return ["the items are not a list of JSON objects"]
        _post(server, "/v1/responses", {**body, "input": [GOAL, *items]})
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
# a Responses API output as the API sends it: reasoning, a message, two calls (made up, in the documented shape)
OUTPUT = [{"id": "rs_1", "type": "reasoning", "summary": [], "encrypted_content": "gAAAAB-made-up"},
          {"id": "msg_1", "type": "message", "status": "completed", "role": "assistant",
           "content": [{"type": "output_text", "text": "Both at once.", "annotations": []}]},
          {"id": "fc_1", "type": "function_call", "status": "completed", "call_id": "call_a1", "name": "lookup",
           "arguments": '{"topic": "단가"}'},
          {"id": "fc_2", "type": "function_call", "status": "completed", "call_id": "call_a2", "name": "lookup",
           "arguments": '{"topic": "할인"}'}]
CALL_ID_HINT = "name the call's call_id (call_…), not its id (fc_…): the id is the item's own, the call_id its result's"
NO_ID_HINT = "every call needs an id (the API matches results to calls by id): raise ValueError when one is empty"
SAME_ID_HINT = "ids must be unique, or the API cannot tell the results apart: raise ValueError"

# ---- 08.5 assemble: Chat Completions chunks, as the stand-in streams them (standin/stream.py) and as written here
def chunk(delta=None, finish=None, index=0, **extra) -> dict:
    return {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 0, "model": "gpt-x",
            "choices": [{"index": index, "delta": delta or {}, "finish_reason": finish, "logprobs": None}], **extra}


def piece(k, arguments="", call_id=None, name=None) -> dict:
    first = {"id": call_id, "type": "function"} if call_id else {}
    return chunk({"tool_calls": [{"index": k, **first, "function": {**({"name": name} if name else {}),
                                                                    "arguments": arguments}}]})


S_ROLE = chunk({"role": "assistant", "content": ""})
S_TEXT = [S_ROLE, chunk({"content": "개당 $"}), chunk({"content": "24 😀"}), chunk({}, "stop")]
S_ONE = [S_ROLE, piece(0, "", "call_1", "lookup"), piece(0, '{"top'), piece(0, 'ic": "단'), piece(0, '가"}'),
       chunk({}, "tool_calls")]
S_TWO = [S_ROLE, piece(0, '{"topic"', "call_1", "lookup"), piece(1, '{"expression"', "call_2", "calculator"),
       piece(0, ': "단가"}'), piece(1, ': "7*24"}'), chunk({}, "tool_calls")]
S_USAGE = {"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17}


def standin_chunks(turn) -> list:
    """The stand-in's own stream of ``turn``, as JSON: what a real Chat Completions stream sends."""
    from ..standin import openai as wire, stream
    body = {"model": "gpt-x", "messages": [GOAL], "stream_options": {"include_usage": True}}
    reply = wire.reply(body, turn, {"input_tokens": 12, "output_tokens": 5}, 1)
    lines = [p.decode().removeprefix("data: ").strip() for p in stream.events("openai", body, reply, turn).pieces]
    return [line if line == "[DONE]" else json.loads(line) for line in lines]


def assembled(chunks, *keys):   # chunks: a list, or a function that makes it when the case runs
    def call(f):
        got = f(copy.deepcopy(chunks() if callable(chunks) else chunks))
        return [got.get(k) for k in keys] if isinstance(got, dict) else got   # anything else: shown as it came
    return call


def chunks_untouched(f) -> str:
    given = copy.deepcopy(S_TWO)
    f(given)
    return "unchanged" if given == S_TWO else "changed"


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
    ]),    "08.4": Exercise("Responses API: the items after a tool turn", [
        Case("the output items first, unchanged", lambda f: call(f, OUTPUT, OBS)[:4], expected=OUTPUT,
             hint="start with the response's output items exactly as they came: reasoning, message and calls"),
        Case("then one result per call, in order", lambda f: [i.get("call_id") for i in call(f, OUTPUT, OBS)[4:]],
             expected=["call_a1", "call_a2"], hint=CALL_ID_HINT),
        Case("result item keys", lambda f: sorted(call(f, OUTPUT, OBS)[4]), expected=["call_id", "output", "type"],
             hint="{'type': 'function_call_output', 'call_id': ..., 'output': observation.content}, nothing more"),
        Case("its type and output", lambda f: [call(f, OUTPUT, OBS)[5][k] for k in ("type", "output")],
             expected=["function_call_output", OBS[1].content],
             hint="output is observation.content, as it is: an error shows only in the text (no is_error here)"),
        Case("nothing else is added", lambda f: len(call(f, OUTPUT, OBS)), expected=6,
             hint="the four output items, then the two results"),
        Case("the stand-in server accepts it", lambda f: responses_problems(f), expected=[],
             hint="'got' lists what the stand-in refused: keep every output item, reasoning first, then the results"),
        Case("calls without a reasoning item", lambda f: [i["type"] for i in call(f, OUTPUT[2:], OBS)],
             expected=["function_call"] * 2 + ["function_call_output"] * 2,
             hint="not every response thinks or writes text: answer the function_call items, whatever else is there"),
        Case("no calls at all", lambda f: call(f, OUTPUT[:2], []), raises=ValueError,
             hint="a response without function_call items is an answer, not a tool turn: raise ValueError"),
        Case("2 calls, 1 observation", lambda f: call(f, OUTPUT, OBS[:1]), raises=ValueError, hint=COUNT_HINT),
        Case("a call without a call_id", lambda f: call(f, [OUTPUT[2], {**OUTPUT[3], "call_id": ""}], OBS),
             raises=ValueError, hint="every call needs a call_id (its result names it): raise ValueError"),
        Case("the same call_id twice", lambda f: call(f, [OUTPUT[2], {**OUTPUT[3], "call_id": "call_a1"}], OBS),
             raises=ValueError, hint=SAME_ID_HINT),
    ]),
    "08.5": Exercise("Put a streamed reply together", [
        Case("text in pieces", assembled(S_TEXT, "text", "tool_calls", "finish_reason"),
             expected=["개당 $24 😀", [], "stop"],
             hint="join every choices[0].delta.content in order; the last chunk's finish_reason says how it ended"),
        Case("content null in a piece", assembled([S_ROLE, chunk({"content": None}), chunk({"content": "ok"}),
                                                   chunk({}, "stop")], "text"), expected=["ok"],
             hint="a piece may carry content None, or no content at all: count it as ''"),
        Case("one call, its arguments in pieces", assembled(S_ONE, "tool_calls", "finish_reason"),
             expected=[[{"id": "call_1", "name": "lookup", "arguments": {"topic": "단가"}}], "tool_calls"],
             hint="the first piece of a call has its id and name; join the arguments' pieces, then json.loads them"),
        Case("two calls, pieces interleaved", assembled(S_TWO, "tool_calls"),
             expected=[[{"id": "call_1", "name": "lookup", "arguments": {"topic": "단가"}},
                        {"id": "call_2", "name": "calculator", "arguments": {"expression": "7*24"}}]],
             hint="each piece names its call by 'index': keep one call per index and add each piece to its own"),
        Case("calls in order of index", assembled([S_ROLE, piece(1, "{}", "call_b", "b"), piece(0, "{}", "call_a", "a"),
                                                   chunk({}, "tool_calls")], "tool_calls"),
             expected=[[{"id": "call_a", "name": "a", "arguments": {}},
                        {"id": "call_b", "name": "b", "arguments": {}}]],
             hint="return the calls sorted by index, whichever arrived first"),
        Case("no arguments at all", assembled([S_ROLE, piece(0, "", "call_1", "list_files"), chunk({}, "tool_calls")],
                                              "tool_calls"),
             expected=[[{"id": "call_1", "name": "list_files", "arguments": {}}]],
             hint="arguments whose text is empty are {}, as a call without arguments"),
        Case("cut off at the token limit", assembled([*S_ONE[:3], chunk({}, "length")], "tool_calls", "finish_reason"),
             expected=[[{"id": "call_1", "name": "lookup", "arguments": '{"top'}], "length"],
             hint="arguments that are not JSON stay as their text: the finish_reason 'length' says the call was cut"),
        Case("JSON, but not an object", assembled([S_ROLE, piece(0, "[1, 2]", "call_1", "lookup"),
                                                   chunk({}, "tool_calls")], "tool_calls"),
             expected=[[{"id": "call_1", "name": "lookup", "arguments": "[1, 2]"}]],
             hint="arguments are an object or nothing: anything else stays as its text"),
        Case("a refusal in pieces", assembled([S_ROLE, chunk({"refusal": "I can't"}), chunk({"refusal": " help."}),
                                               chunk({}, "stop")], "refusal", "text"), expected=["I can't help.", ""],
             hint="delta.refusal comes in pieces too: join them apart from the text"),
        Case("usage from the last chunk", assembled([*S_TEXT, {**chunk(), "choices": [], "usage": S_USAGE}, "[DONE]"],
                                                   "usage", "text"), expected=[S_USAGE, "개당 $24 😀"],
             hint="with stream_options include_usage, a last chunk has no choices and the usage: keep it"),
        Case("no usage chunk", assembled(S_TEXT, "usage"), expected=[None], hint="no usage chunk: usage is None"),
        Case("[DONE] ends it", assembled([*S_TEXT, "[DONE]"], "text"), expected=["개당 $24 😀"],
             hint="the stream's last line is the text [DONE]: skip it"),
        Case("another choice is not ours", assembled([S_ROLE, chunk({"content": "A"}), chunk({"content": "B"}, index=1),
                                                      chunk({}, "stop")], "text"), expected=["A"],
             hint="only the choice with index 0 is the reply (n=1): skip the others"),
        Case("the stand-in's stream", assembled(lambda: standin_chunks({"text": "배송비는 무료입니다 (shipping is free).",
                                                                "tool_calls": [{"name": "lookup", "args": {
                                                                    "topic": "배송 (shipping)"}}]}),
                                               "text", "tool_calls", "finish_reason"),
             expected=["배송비는 무료입니다 (shipping is free).",
                       [{"id": "call_standin_01_1", "name": "lookup", "arguments": {"topic": "배송 (shipping)"}}],
                       "tool_calls"], hint="a real stream, pieces of 8 characters: the same rules"),
        Case("a stream that broke off", lambda f: f(copy.deepcopy(S_ONE[:5])), raises=ValueError,
             hint="no finish_reason anywhere: the stream ended early, and none of it may be used; raise ValueError"),
        Case("another choice's finish is not ours", lambda f: f([*S_TEXT[:3], chunk({}, "stop", index=1)]),
             raises=ValueError, hint="only choice 0's finish_reason ends the reply: choice 1's says nothing of it"),
        Case("broke off after its text", lambda f: f(copy.deepcopy(S_TEXT[:3])), raises=ValueError,
             hint="complete-looking text is no answer without a finish_reason either"),
        Case("a piece before its call's first", lambda f: f([S_ROLE, piece(0, '{"a": 1}'), chunk({}, "tool_calls")]),
             raises=ValueError, hint="the first piece of each index must bring its id and name: else ValueError"),
        Case("a chunk that is not a dict", lambda f: f([S_ROLE, "data: {}", chunk({}, "stop")]), raises=ValueError,
             hint="each chunk is one data: line read as JSON (a dict); only the text '[DONE]' is not"),
        Case("the chunks are not changed", chunks_untouched, expected="unchanged",
             hint="build your own lists and dicts: never write into the chunks"),
    ]),
}


# ---- drivers of the hidden cases: calls arrive as [name, args, id], observations as [content, is_error]
def _calls(data) -> list[ToolCall]:
    return [ToolCall(name, args, id=id) for name, args, id in data]


def _observations(data) -> list[Observation]:
    return [Observation(content, is_error=is_error) for content, is_error in data]


def openai_turn(f, text, calls, observations, after=False):
    """f(text, calls, observations); after=True: the calls and observations as the call left them, as data."""
    calls, observations = _calls(calls), _observations(observations)
    got = f(text, calls, observations)
    return ([[c.name, c.args, c.id] for c in calls], [[o.content, o.is_error] for o in observations]) if after else got


def openai_turn_accepted(f, text, calls, observations, before, after) -> list[str]:
    """What the stand-in refuses of the messages ``before``, then f(text, calls, observations), then ``after``."""
    return standin_problems("openai", [*before, *f(text, _calls(calls), _observations(observations)), *after])


def anthropic_results(f, calls, observations):
    """f(calls, observations), both given as data."""
    return f(_calls(calls), _observations(observations))


def anthropic_results_accepted(f, goal, calls, observations) -> list[str]:
    """What the stand-in refuses of ``goal``, the tool_use turn of ``calls`` and f(calls, observations)."""
    asked = tool_use_turn(_calls(calls))
    return standin_problems("anthropic", [goal, asked, f(_calls(calls), _observations(observations))])


def responses_items(f, output, observations, after=False):
    """f(output, observations); after=True: the output items as the call left them."""
    output = copy.deepcopy(output)
    got = f(output, _observations(observations))
    return output if after else got


def responses_accepted(f, observations) -> list[str]:
    """responses_problems(f, observations), the observations given as data."""
    return responses_problems(f, _observations(observations))


def inputs_after(f, *args) -> list:
    """Call f on copies of ``args``; the copies as the call left them."""
    args = copy.deepcopy(args)
    f(*args)
    return list(args)


def standin_reply(f, turn, cuts=None):
    """f(the stand-in's stream of turn); with cuts, what f did with each stream[:k]: 'returned' or 'raised X'."""
    stream = standin_chunks(turn)
    if cuts is None:
        return f(stream)
    done = []
    for k in cuts:
        try:
            f(copy.deepcopy(stream[:k]))
            done.append("returned")
        except NotImplementedError:
            raise
        except ValueError:
            done.append("raised ValueError")
        except Exception as e:   # noqa: BLE001 - a wrong answer's own error, reported as data
            done.append(f"raised {type(e).__name__}")
    return done
