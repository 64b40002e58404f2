"""The stand-in streams (standin/stream.py): the same scripted turn, streamed, reads back through each SDK's own
stream reader as the same reply; every event is one of the SDK's event types; a call cut off at the token limit
streams its partial arguments; a broken stream ends early; a refused request is an error before any stream."""
from __future__ import annotations

import json

import anthropic
import httpx
import openai
import pytest
from anthropic.types import RawMessageStreamEvent
from openai.types.chat import ChatCompletionChunk
from openai.types.responses import ResponseStreamEvent
from pydantic import TypeAdapter

from course_lib import default_tools
from course_lib.agent import Agent
from course_lib.courseware.standin import StandInServer
from course_lib.courseware.standin.stream import PIECE
from course_lib.models import AnthropicModel, OpenAIModel
from course_lib.models.openai import OpenAIResponsesModel
from course_lib.models.remote import TransientError

SCHEMA = {"type": "object", "properties": {"topic": {"type": "string"}}, "required": ["topic"]}
TURN = {"thinking": "먼저 단가를 봅니다 (the unit price first).", "text": "Let me check 😀 단가.",
        "tool_calls": [{"name": "lookup", "args": {"topic": "단가 (unit price)"}}]}
CUT = {"text": "Looking it up.", "tool_calls": [{"name": "lookup", "args": '{"topic": "단가 (un'}]}
HI = [{"role": "user", "content": "부산 출장 (a trip to Busan)"}]
TOOLS = {"anthropic": [{"name": "lookup", "description": "Look a topic up.", "input_schema": SCHEMA}],
         "openai": [{"type": "function", "function": {"name": "lookup", "parameters": SCHEMA}}],
         "responses": [{"type": "function", "name": "lookup", "parameters": SCHEMA, "strict": False}]}
REQUEST = {"anthropic": {"model": "claude-standin", "max_tokens": 200, "messages": HI, "tools": TOOLS["anthropic"],
                         "thinking": {"type": "adaptive"}},
           "openai": {"model": "gpt-standin", "messages": HI, "tools": TOOLS["openai"]},
           "responses": {"model": "gpt-standin", "input": "hi", "tools": TOOLS["responses"], "store": False,
                         "include": ["reasoning.encrypted_content"]}}
PATH = {"anthropic": "/v1/messages", "openai": "/v1/chat/completions", "responses": "/v1/responses",
        "ollama": "/api/chat"}


def served(turn, call):
    """``call(server)`` against a fresh stand-in playing ``turn`` (fresh: ids and signatures count requests)."""
    with StandInServer([turn]) as server:
        return call(server)


def claude(server):
    return anthropic.Anthropic(base_url=server.url, api_key="k", max_retries=0)


def gpt(server):
    return openai.OpenAI(base_url=server.url + "/v1", api_key="k", max_retries=0)


def raw(api: str, body: dict, turn=TURN) -> tuple[httpx.Response, list]:
    """The stream as sent, and its events as JSON: (event name, data) per server-sent event; a dict per line for
    Ollama."""
    def call(server):   # read chunk by chunk: a stream that breaks off ends in an incomplete body
        with httpx.stream("POST", server.url + PATH[api], json=body, timeout=30,
                          headers={"x-api-key": "k", "authorization": "Bearer k"}) as response:
            data = bytearray()
            try:
                for part in response.iter_bytes():
                    data += part
            except httpx.RemoteProtocolError:
                response.broken = True
            response.text_read = data.decode()
            return response
    response = served(turn, call)
    text = response.text_read
    if api == "ollama":
        return response, [json.loads(line) for line in text.splitlines()]
    found = []
    for block in text.split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if "data" in fields:
            found.append((fields.get("event"), fields["data"] if fields["data"] == "[DONE]" else json.loads(fields["data"])))
    return response, found


def without(dumped, *keys):   # a stream helper's parsed copy adds fields of its own (parsed, parsed_arguments)
    if isinstance(dumped, dict):
        return {k: without(v, *keys) for k, v in dumped.items() if k not in keys}
    return [without(v, *keys) for v in dumped] if isinstance(dumped, list) else dumped


# ---- the same reply, streamed or not, read by the SDKs' own stream readers --------------------------------------
def test_anthropic_stream_reads_back_as_the_message_create_returns():
    def streamed(server):
        with claude(server).messages.stream(**REQUEST["anthropic"]) as stream:
            return "".join(stream.text_stream), stream.get_final_message()
    created = served(TURN, lambda server: claude(server).messages.create(**REQUEST["anthropic"]))
    text, final = served(TURN, streamed)
    assert final.model_dump() == created.model_dump() and text == TURN["text"]
    assert [b.type for b in final.content] == ["thinking", "text", "tool_use"]
    assert final.content[2].input == TURN["tool_calls"][0]["args"] and final.stop_reason == "tool_use"


def test_a_streamed_thinking_block_goes_back_signed_as_issued():
    with StandInServer([TURN, "Seven units cost $168."]) as server:
        with claude(server).messages.stream(**REQUEST["anthropic"]) as stream:
            final = stream.get_final_message()
        blocks = [b.model_dump(exclude_none=True) for b in final.content]
        follow = [*HI, {"role": "assistant", "content": blocks},
                  {"role": "user", "content": [{"type": "tool_result", "tool_use_id": blocks[2]["id"], "content": "$24"}]}]
        answer = claude(server).messages.create(**{**REQUEST["anthropic"], "messages": follow})
    assert answer.content[0].text == "Seven units cost $168." and server.problems == []


def test_chat_completions_stream_reads_back_as_create_returns_it():
    def streamed(server):
        with gpt(server).chat.completions.stream(**REQUEST["openai"], stream_options={"include_usage": True}) as s:
            return s.get_final_completion()
    created = served(TURN, lambda server: gpt(server).chat.completions.create(**REQUEST["openai"]))
    final = served(TURN, streamed)
    assert without(final.choices[0].message.model_dump(), "parsed", "parsed_arguments", "index") == \
        created.choices[0].message.model_dump()
    assert final.choices[0].finish_reason == "tool_calls" and final.usage == created.usage


def test_responses_stream_reads_back_as_create_returns_it():
    def streamed(server):
        with gpt(server).responses.stream(**REQUEST["responses"]) as stream:
            return stream.get_final_response()
    created = served(TURN, lambda server: gpt(server).responses.create(**REQUEST["responses"]))
    final = served(TURN, streamed)
    assert without(final.model_dump(), "parsed", "parsed_arguments") == created.model_dump()
    assert [item.type for item in final.output] == ["reasoning", "message", "function_call"]


def test_ollama_streams_unless_told_not_to_and_the_lines_add_up_to_the_reply():
    body = {"model": "qwen3:8b", "messages": HI}
    response, lines = raw("ollama", body)
    _, whole = raw("ollama", {**body, "stream": False})
    reply = whole[0]
    assert response.headers["content-type"] == "application/x-ndjson" and len(lines) > 3
    assert [line["done"] for line in lines] == [False] * (len(lines) - 1) + [True]
    assert "".join(line["message"].get("content", "") for line in lines) == reply["message"]["content"]
    assert "".join(line["message"].get("thinking", "") for line in lines) == reply["message"]["thinking"]
    assert [c for line in lines for c in line["message"].get("tool_calls", [])] == reply["message"]["tool_calls"]
    last = lines[-1]
    assert {k: last[k] for k in ("done_reason", "prompt_eval_count", "eval_count")} == \
        {k: reply[k] for k in ("done_reason", "prompt_eval_count", "eval_count")}


# ---- every event is the SDK's own type -----------------------------------------------------------------------
def test_every_anthropic_event_is_a_raw_message_stream_event_in_order():
    response, found = raw("anthropic", {**REQUEST["anthropic"], "stream": True})
    assert response.headers["content-type"] == "text/event-stream"
    events = [TypeAdapter(RawMessageStreamEvent).validate_python(data) for name, data in found if name != "ping"]
    assert all(name == data["type"] for name, data in found)   # the event line names the data's type
    kinds = [e.type for e in events]
    assert kinds[0] == "message_start" and kinds[-2:] == ["message_delta", "message_stop"]
    assert kinds.count("content_block_start") == kinds.count("content_block_stop") == 3
    deltas = [e.delta.type for e in events if e.type == "content_block_delta"]
    assert {"thinking_delta", "signature_delta", "text_delta", "input_json_delta"} == set(deltas)
    assert all(len(getattr(e.delta, "text", "")) <= PIECE for e in events if e.type == "content_block_delta")


def test_every_chat_chunk_is_a_chat_completion_chunk_and_the_stream_ends_with_done():
    _, found = raw("openai", {**REQUEST["openai"], "stream": True, "stream_options": {"include_usage": True}})
    assert found[-1] == (None, "[DONE]")
    chunks = [ChatCompletionChunk.model_validate(data) for _, data in found[:-1]]
    assert chunks[0].choices[0].delta.role == "assistant" and chunks[-1].choices == [] and chunks[-1].usage
    calls = [c for chunk in chunks for choice in chunk.choices for c in choice.delta.tool_calls or []]
    assert calls[0].id and calls[0].function.name == "lookup" and all(c.id is None for c in calls[1:])
    assert json.loads("".join(c.function.arguments for c in calls)) == TURN["tool_calls"][0]["args"]


def test_every_responses_event_is_a_response_stream_event_numbered_in_order():
    _, found = raw("responses", {**REQUEST["responses"], "stream": True})
    events = [TypeAdapter(ResponseStreamEvent).validate_python(data) for _, data in found]
    assert [e.sequence_number for e in events] == list(range(len(events)))
    assert events[0].type == "response.created" and events[-1].type == "response.completed"
    arguments = "".join(e.delta for e in events if e.type == "response.function_call_arguments.delta")
    assert json.loads(arguments) == TURN["tool_calls"][0]["args"]
    assert "".join(e.delta for e in events if e.type == "response.output_text.delta") == TURN["text"]


# ---- cut off: at the token limit, and a stream that broke ---------------------------------------------------
def test_a_call_cut_off_at_the_token_limit_streams_its_partial_arguments():
    _, anthropic_events = raw("anthropic", {**REQUEST["anthropic"], "stream": True}, CUT)
    partial = "".join(d["delta"]["partial_json"] for _, d in anthropic_events if d.get("delta", {}).get("type")
                      == "input_json_delta")
    assert partial == CUT["tool_calls"][0]["args"]
    assert [d["delta"]["stop_reason"] for _, d in anthropic_events if d["type"] == "message_delta"] == ["max_tokens"]
    _, chunks = raw("openai", {**REQUEST["openai"], "stream": True}, CUT)
    assert [c["choices"][0]["finish_reason"] for _, c in chunks[:-1] if c["choices"][0]["finish_reason"]] == ["length"]
    _, events = raw("responses", {**REQUEST["responses"], "stream": True}, CUT)
    assert events[-1][1]["type"] == "response.incomplete"
    assert events[-1][1]["response"]["incomplete_details"] == {"reason": "max_output_tokens"}


@pytest.mark.parametrize("api", ["anthropic", "openai", "responses", "ollama"])
def test_a_stream_that_breaks_stops_after_its_scripted_events_without_the_end_of_its_body(api):
    body = {**REQUEST.get(api, {"model": "q", "messages": HI}), "stream": True}
    response, whole = raw(api, body)
    cut, broken = raw(api, body, {**TURN, "stream_cut": 4})
    assert broken == whole[:4] and len(whole) > 4
    assert response.headers["transfer-encoding"] == "chunked" and not getattr(response, "broken", False)
    assert cut.broken   # the HTTP client read an incomplete chunked body, as when a real connection drops


@pytest.mark.parametrize("sdk", ["anthropic", "openai"])
def test_the_sdks_readers_raise_their_http_clients_error_when_a_stream_breaks_off(sdk):
    import httpx2

    def streamed(server):
        if sdk == "anthropic":
            with claude(server).messages.stream(**REQUEST["anthropic"]) as stream:
                return stream.get_final_message()
        with gpt(server).chat.completions.stream(**REQUEST["openai"]) as stream:
            return stream.get_final_completion()
    with pytest.raises((httpx2.TransportError, openai.APIConnectionError)):
        served({**TURN, "stream_cut": 6}, streamed)


class _Reader:   # a stream reader that ended cleanly but without its last event: no stop reason
    def __init__(self, final):
        self.final = final

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def __iter__(self):
        return iter([])

    def get_final_message(self):
        return self.final


def test_a_stream_that_ends_without_its_stop_reason_is_no_reply_either():
    from types import SimpleNamespace
    from course_lib.models.remote import read_stream
    with pytest.raises(TransientError, match="stream broke off"):
        read_stream(_Reader(SimpleNamespace(stop_reason=None)), "get_final_message")
    with pytest.raises(TransientError, match="stream broke off"):   # the Responses API: no last event came
        read_stream(_Reader(None), None)
    done = SimpleNamespace(stop_reason="end_turn")
    assert read_stream(_Reader(done), "get_final_message") is done


def test_an_error_before_the_stream_begins_is_not_taken_for_a_broken_stream():
    from course_lib.models.remote import read_stream

    class Refused(_Reader):
        def __enter__(self):
            raise ValueError("the request itself failed")
    with pytest.raises(ValueError, match="the request itself failed"):
        read_stream(Refused(None), "get_final_message")


# ---- refused before any stream -------------------------------------------------------------------------------
def test_a_refused_streaming_request_is_an_error_with_no_stream_and_uses_no_turn():
    with StandInServer(["unused"]) as server:
        with pytest.raises(anthropic.BadRequestError):
            with claude(server).messages.stream(model="m", max_tokens=5, messages=[]) as stream:
                stream.get_final_message()
        with pytest.raises(openai.BadRequestError):
            gpt(server).chat.completions.create(model="m", messages=HI, stream=True, tool_choice="required")
        assert server.remaining == 1


def test_a_scripted_error_is_sent_as_an_error_not_a_stream():
    with StandInServer([{"status": 529, "message": "Overloaded"}]) as server:
        with pytest.raises(anthropic.APIStatusError) as caught:
            with claude(server).messages.stream(model="m", max_tokens=5, messages=HI) as stream:
                stream.get_final_message()
    assert caught.value.status_code == 529


# ---- the adapters, streaming or not: the same run -------------------------------------------------------------

GOAL = "단가가 얼마예요? (What is the unit price?)"
SCENARIO = [{"text": "I will look it up.", "tool_calls": [{"name": "lookup", "args": {"topic": "unit price"}}]},
            "The unit price is $24 (개당 24달러) 😀."]
ADAPTERS = {"anthropic": lambda server, **kw: AnthropicModel(base_url=server.url, api_key="k", **kw),
            "openai-responses": lambda server, **kw: OpenAIResponsesModel(base_url=server.url + "/v1", api_key="k",
                                                                          **kw),
            "openai": lambda server, **kw: OpenAIModel(base_url=server.url + "/v1", api_key="k", **kw),
            "ollama": lambda server, **kw: OpenAIModel.ollama(base_url=server.url + "/v1", **kw)}


def run(name: str, script, **kwargs):
    with StandInServer(script) as server:
        agent = Agent(default_tools(), ADAPTERS[name](server, **kwargs), max_steps=4)
        agent.run(GOAL)
    return agent, server


@pytest.mark.parametrize("name", list(ADAPTERS))
def test_the_same_scenario_runs_through_each_adapter_streamed_or_not(name):
    pieces = []
    plain, _ = run(name, SCENARIO)
    streamed, server = run(name, SCENARIO, stream=True, on_text=pieces.append)
    assert streamed.stop_reason == plain.stop_reason == "finish" and streamed.answer == plain.answer
    assert [[(r.tool, r.args, r.observation) for r in s.runs] for s in streamed.trace] == \
        [[(r.tool, r.args, r.observation) for r in s.runs] for s in plain.trace]
    assert streamed.total_usage == plain.total_usage and streamed.total_usage["input_tokens"] > 0
    assert "".join(pieces) == "I will look it up." + SCENARIO[1] and len(pieces) > 3
    assert all(r["body"].get("stream") is True for r in server.requests)
    if name in ("openai", "ollama"):   # without this, a streamed chat completion has no token counts
        assert all(r["body"]["stream_options"] == {"include_usage": True} for r in server.requests)


IN_THE_CALL = {"anthropic": 9, "openai-responses": 12, "openai": 6, "ollama": 6}   # events until part of the call


@pytest.mark.parametrize("name", list(ADAPTERS))
@pytest.mark.parametrize("where", ["in the text", "in the call"])
def test_a_stream_that_breaks_off_is_a_transient_error_and_its_call_never_runs(name, where):
    ran, cut = [], 3 if where == "in the text" else IN_THE_CALL[name]

    def lookup(topic: str) -> str:
        """Look a topic up.

        Args:
            topic: what to look up
        """
        ran.append(topic)
        return "$24"
    with StandInServer([{**SCENARIO[0], "stream_cut": cut}]) as server:
        model = ADAPTERS[name](server, stream=True, max_retries=0)
        with pytest.raises(TransientError, match="stream broke off"):
            model.complete([{"role": "user", "content": GOAL}], {"lookup": lookup})
    if where == "in the call":   # the stream did get as far as the call: some of its arguments were sent
        _, events = raw({"openai-responses": "responses", "ollama": "openai"}.get(name, name),
                        {**REQUEST.get({"openai-responses": "responses"}.get(name, name), REQUEST["openai"]),
                         "stream": True}, {**SCENARIO[0], "stream_cut": cut})
        assert "unit" in json.dumps(events[-1]) or "topic" in json.dumps(events[-1]), events[-1]
    with StandInServer([{**SCENARIO[0], "stream_cut": cut}]) as server:
        agent = Agent({"lookup": lookup}, ADAPTERS[name](server, stream=True, max_retries=0), max_steps=2)
        agent.run(GOAL)
    assert ran == [] and agent.answer != "I will look it up." and "stream broke off" in agent.answer


def test_a_call_cut_off_at_the_token_limit_in_a_stream_is_not_run_either():
    with StandInServer([CUT]) as server:
        reply = AnthropicModel(base_url=server.url, api_key="k", stream=True).complete(HI, {})
    assert reply.stop == "max_tokens" and reply.provider_stop == "max_tokens"


@pytest.mark.parametrize("name", list(ADAPTERS))
def test_an_error_the_server_sends_mid_stream_is_a_transient_error_in_its_words_and_nothing_runs(name):
    ran = []

    def lookup(topic: str) -> str:
        """Look a topic up.

        Args:
            topic: what to look up
        """
        ran.append(topic)
        return "$24"
    said = "Overloaded" if name == "anthropic" else "The server had an error while processing your request."
    with StandInServer([{**SCENARIO[0], "stream_error": 3}, {**SCENARIO[0], "stream_error": 3}]) as server:
        with pytest.raises(TransientError) as caught:
            ADAPTERS[name](server, stream=True, max_retries=0).complete([{"role": "user", "content": GOAL}],
                                                                        {"lookup": lookup})
        agent = Agent({"lookup": lookup}, ADAPTERS[name](server, stream=True, max_retries=0), max_steps=2)
        agent.run(GOAL)
    assert "stream broke off" in str(caught.value) and f'The API said: "{said}"' in str(caught.value)
    assert agent.stop_reason == "model_error" and ran == []


def test_each_error_event_is_what_the_sdk_reads_as_one():
    from openai.types.responses import ResponseErrorEvent
    _, events = raw("anthropic", {**REQUEST["anthropic"], "stream": True}, {**TURN, "stream_error": 2})
    assert events[-1] == ("error", {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}})
    _, events = raw("responses", {**REQUEST["responses"], "stream": True}, {**TURN, "stream_error": 2})
    assert ResponseErrorEvent.model_validate(events[-1][1]).sequence_number == 2
    _, chunks = raw("openai", {**REQUEST["openai"], "stream": True}, {**TURN, "stream_error": 2})
    assert set(chunks[-1][1]) == {"error"} and len(chunks) == 3   # no [DONE] after it
    with StandInServer([{**TURN, "stream_error": 2}]) as server:
        with pytest.raises(openai.APIError, match="The server had an error"):
            list(gpt(server).chat.completions.create(**REQUEST["openai"], stream=True))


@pytest.mark.parametrize("name", ["openai", "ollama"])
@pytest.mark.parametrize("turn, stop", [({"text": "Looking.", "tool_calls": [{"name": "lookup", "args": '{"topic": "단'}]},
                                         "max_tokens"), ({"text": "Part of it", "finish_reason": "length"}, "max_tokens"),
                                        ({"text": "Part of it", "finish_reason": "content_filter"}, "refused")],
                         ids=["cut call", "length", "content filter"])
def test_a_streamed_chat_reply_cut_by_length_or_the_filter_stops_as_it_does_unstreamed(name, turn, stop):
    plain, _ = run(name, [turn])
    streamed, _ = run(name, [turn], stream=True)
    assert streamed.stop_reason == plain.stop_reason == stop and streamed.answer == plain.answer


def test_half_an_emoji_in_streamed_anthropic_arguments_is_a_sentence_not_a_traceback():
    from course_lib.models import ModelError
    turn = {"tool_calls": [{"name": "lookup", "args": {"topic": "half \ud83d"}}]}
    with StandInServer([turn]) as server:
        with pytest.raises(ModelError, match="half an emoji.*without streaming"):
            ADAPTERS["anthropic"](server, stream=True).complete(HI, {})


@pytest.mark.parametrize("options", [{"stream": "yes"}, {"stream": True, "on_text": "print"}])
def test_stream_and_on_text_of_the_wrong_kind_say_so(options):
    with StandInServer(["unused"]) as server:
        with pytest.raises(TypeError, match="stream is True or False and on_text a function"):
            ADAPTERS["openai"](server, **options).complete(HI)
        assert server.requests == []   # nothing was sent


def test_a_lone_surrogate_in_scripted_thinking_is_signed_not_a_500():
    for name in ("anthropic", "openai-responses"):
        with StandInServer([{"thinking": "half \ud83d", "text": "ok"}]) as server:
            reply = ADAPTERS[name](server, stream=True).complete(HI)
        assert reply.text == "ok" and server.problems == []
