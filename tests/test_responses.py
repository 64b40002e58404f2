"""OpenAI's Responses API (stage 08): the adapter's translations, the whole loop through the real SDK against the
stand-in (and against the documented payloads), and the stand-in's /v1/responses as strict as the real API.

The rules and words come from the API's own error bodies as users posted them and from the docs (see
tests/fixtures/payloads/README.md); the SDK's types are ``openai/types/responses/`` of the installed openai."""
import json

import openai
import pytest

from course_lib import default_tools
from course_lib.agent import Agent
from course_lib.models.base import ModelError
from course_lib.models.openai import (OpenAIModel, OpenAIResponsesModel, history_to_responses,
                                      reply_from_responses)
from course_lib.courseware.standin import StandInServer
from test_documented_payloads import Replay, load
from test_payload_fixtures import assert_no_extra_fields, openai_client

SYSTEM = {"role": "system", "content": "Use the tools."}
GOAL = {"role": "user", "content": "What do seven units cost?"}
CALLS = {"role": "assistant", "content": "Looking it up.", "tool_calls": [
    {"id": "call_1", "name": "lookup", "args": {"topic": "단가"}},
    {"id": "call_2", "name": "calculator", "args": {"expression": "24*7"}}]}
RESULTS = [{"role": "tool", "tool_call_id": "call_1", "name": "lookup", "content": "개당 $24", "is_error": False},
           {"role": "tool", "tool_call_id": "call_2", "name": "calculator", "content": "168", "is_error": False}]
LOOKUP = {"type": "function", "name": "lookup", "strict": False,
          "parameters": {"type": "object", "properties": {"topic": {"type": "string"}}, "required": ["topic"]}}
ASKED = {"role": "user", "content": "price?"}
THOUGHT = [{"thinking": "Both tools at once.", "tool_calls": [{"name": "lookup", "args": {"topic": "단가"}},
                                                              {"name": "calculator", "args": {"expression": "24*7"}}]},
           {"text": "Seven units cost $168."}]


def model(server, **options) -> OpenAIResponsesModel:
    return OpenAIResponsesModel(base_url=server.url + "/v1", api_key="stand-in", max_retries=0, **options)


def client(server) -> openai.OpenAI:
    return openai.OpenAI(base_url=server.url + "/v1", api_key="stand-in", max_retries=0)


def refused(server, **request) -> str:
    """The message of the 400 the stand-in answers ``request`` with (through the SDK, as a learner meets it)."""
    with pytest.raises(openai.BadRequestError) as info:
        client(server).responses.create(**{"model": "gpt-5.4-mini", **request})
    assert info.value.body["type"] == "invalid_request_error"
    return info.value.body["message"]


# ---------------------------------------------------------------- the translations, on plain data
def test_the_history_becomes_instructions_and_items_each_result_matched_by_call_id():
    instructions, items = history_to_responses([SYSTEM, GOAL, CALLS, *RESULTS])
    assert instructions == "Use the tools."
    assert items == [
        {"role": "user", "content": "What do seven units cost?"},
        {"role": "assistant", "content": "Looking it up."},
        {"type": "function_call", "call_id": "call_1", "name": "lookup", "arguments": '{"topic": "단가"}'},
        {"type": "function_call", "call_id": "call_2", "name": "calculator", "arguments": '{"expression": "24*7"}'},
        {"type": "function_call_output", "call_id": "call_1", "output": "개당 $24"},
        {"type": "function_call_output", "call_id": "call_2", "output": "168"}]


def test_an_assistant_turn_the_api_made_goes_back_as_its_output_items_verbatim():
    output = load("responses_reasoning_parallel_calls.json")["output"]
    turn = {**CALLS, "raw": {"format": "openai-responses", "content": output}}
    assert history_to_responses([GOAL, turn])[1][1:] == output   # reasoning (encrypted) first, ids and all


def test_the_request_stores_nothing_asks_for_encrypted_reasoning_and_sends_tools_not_strict():
    request = OpenAIResponsesModel(api_key="k", max_tokens=500, reasoning={"effort": "low"}).request(
        [SYSTEM, GOAL], default_tools(), "calculator")
    assert request["store"] is False and request["include"] == ["reasoning.encrypted_content"]
    assert request["instructions"] == "Use the tools." and request["input"] == [GOAL]
    assert request["max_output_tokens"] == 500 and request["reasoning"] == {"effort": "low"}
    assert request["tool_choice"] == {"type": "function", "name": "calculator"}   # flat, unlike Chat Completions
    assert all(t["type"] == "function" and t["strict"] is False and "function" not in t for t in request["tools"])
    assert {t["name"] for t in request["tools"]} == set(default_tools())
    json.dumps(request)   # plain data
    any_call = OpenAIResponsesModel(api_key="k").request([GOAL], default_tools(), "any")
    assert any_call["tool_choice"] == "required" and "max_output_tokens" not in any_call and "reasoning" not in any_call
    assert "tools" not in OpenAIResponsesModel(api_key="k", native_tools=False).request([GOAL], default_tools())


@pytest.mark.parametrize("name, stop, why", [
    ("responses_reasoning_parallel_calls.json", None, "completed"), ("responses_answer.json", None, "completed"),
    ("responses_incomplete_max_output_tokens.json", "max_tokens", "max_output_tokens"),
    ("responses_refusal.json", "refused", "refusal")])
def test_each_documented_response_becomes_a_reply(name, stop, why):
    data = load(name)
    reply = reply_from_responses(data)
    assert (reply.stop, reply.provider_stop) == (stop, why) and reply.raw == {"format": "openai-responses",
                                                                              "content": data["output"]}
    hit = data["usage"]["input_tokens_details"]["cached_tokens"]   # inside input_tokens: the course counts it apart
    assert reply.usage == {"input_tokens": data["usage"]["input_tokens"] - hit, "output_tokens": data["usage"][
        "output_tokens"], **({"cache_read_input_tokens": hit} if hit else {})}
    calls = [i for i in data["output"] if i["type"] == "function_call"]
    assert [(c.id, c.name, c.args) for c in reply.tool_calls] == [
        (i["call_id"], i["name"], json.loads(i["arguments"])) for i in calls]


def test_reply_text_thinking_refusal_and_a_content_filter():
    answer = reply_from_responses(load("responses_answer.json"))
    assert answer.text.startswith("15% of 2,340 is 351") and answer.tool_calls == ()
    thought = reply_from_responses(load("responses_reasoning_parallel_calls.json"))
    assert thought.thinking.startswith("**Planning two calls**") and thought.text == ""
    assert reply_from_responses(load("responses_refusal.json")).text == "I'm sorry, but I can't help with that."
    filtered = reply_from_responses({"status": "incomplete", "incomplete_details": {"reason": "content_filter"}})
    assert (filtered.stop, filtered.provider_stop) == ("refused", "content_filter")


def test_arguments_that_are_not_json_reach_the_dispatcher_as_text_and_a_failed_response_is_a_model_error():
    cut = {"output": [{"type": "function_call", "call_id": "c", "name": "lookup", "arguments": '{"to'}]}
    assert reply_from_responses(cut).tool_calls[0].args == '{"to'
    with pytest.raises(ModelError, match="could not finish this response: The model crashed"):
        reply_from_responses({"status": "failed", "error": {"code": "server_error", "message": "The model crashed"}})


def test_the_two_openai_adapters_share_options_and_show_which_api_they_are():
    responses = OpenAIResponsesModel("gpt-x", api_key="k", native_tools=False)
    assert isinstance(responses, OpenAIModel) and responses.provider == "openai"
    assert repr(responses) == "OpenAIResponsesModel(model='gpt-x', provider='openai', native_tools=False)"
    with pytest.raises(ValueError, match="max_tokens must be a positive whole number"):
        OpenAIResponsesModel(api_key="k", max_tokens=0)


# ---------------------------------------------------------------- the loop, through the real SDK
def test_the_whole_loop_sends_reasoning_items_back_before_their_calls_and_answers_each_call_id():
    with StandInServer(THOUGHT) as server:
        agent = Agent(default_tools(), model(server))
        answer = agent.run("What do seven units cost?")
    assert agent.stop_reason == "finish" and answer == "Seven units cost $168." and server.problems == []
    first, second = (r["body"] for r in server.requests)
    assert first["store"] is False and first["input"] == [{"role": "user", "content": "What do seven units cost?"}]
    items = second["input"][1:]
    assert [i.get("type") for i in items] == ["reasoning", "function_call", "function_call",
                                              "function_call_output", "function_call_output"]
    assert items[0]["encrypted_content"].startswith("gAAAAB") and items[0]["summary"][0]["text"] == "Both tools at once."
    assert [i["call_id"] for i in items[3:]] == [i["call_id"] for i in items[1:3]]
    assert agent.history[2]["thinking"] == "Both tools at once."


def test_the_documented_payloads_run_the_loop_and_a_cut_off_turn_runs_nothing():
    replay = Replay("responses_reasoning_parallel_calls.json", "responses_answer.json")
    agent = Agent(default_tools(), OpenAIResponsesModel(client=openai_client(replay)))
    answer = agent.run("What is 15% of 2,340, and what is prompt caching?")
    assert agent.stop_reason == "finish" and answer.startswith("15% of 2,340 is 351")
    sent = replay.bodies[1]["input"]
    assert sent[1:4] == load("responses_reasoning_parallel_calls.json")["output"]   # verbatim, reasoning first
    assert [i["call_id"] for i in sent[4:]] == [i["call_id"] for i in sent[2:4]]
    cut = Agent(default_tools(), OpenAIResponsesModel(client=openai_client(Replay(
        "responses_incomplete_max_output_tokens.json"))))
    cut.run("?")
    assert cut.stop_reason == "max_tokens" and cut.trace[0].runs == [] and "max_output_tokens" in cut.answer


def test_a_scripted_cut_off_call_refusal_and_forced_choice_through_the_stand_in():
    with StandInServer([{"tool_calls": [{"name": "lookup", "args": '{"top'}]}, {"refusal": True},
                        {"text": "ignored", "tool_calls": [{"name": "calculator", "args": {"expression": "1+1"}}]}]
                       ) as server:
        cut = Agent(default_tools(), model(server))
        cut.run("?")
        no = Agent(default_tools(), model(server))
        no.run("?")
        forced = model(server).complete([GOAL], default_tools(), tool_choice="calculator")
    assert cut.stop_reason == "max_tokens" and cut.trace[0].runs == []
    assert no.stop_reason == "refused" and "can't help" in no.answer
    assert forced.text == "" and [c.name for c in forced.tool_calls] == ["calculator"]
    assert server.requests[2]["body"]["tool_choice"] == {"type": "function", "name": "calculator"}


def test_the_standin_s_responses_are_exact_sdk_objects():
    from openai.types.responses import Response
    with StandInServer([THOUGHT[0], {"refusal": "no"}, {"tool_calls": [{"name": "lookup", "args": '{"x'}]}]) as server:
        for _ in range(3):
            raw = client(server).responses.with_raw_response.create(
                model="gpt-5.4-mini", input="hi", store=False, include=["reasoning.encrypted_content"], tools=[LOOKUP])
            assert_no_extra_fields(Response.model_validate(json.loads(raw.http_response.content)))


def test_an_api_error_is_the_same_sentence_as_for_chat_completions():
    with StandInServer([{"status": 429, "message": "Rate limit reached", "retry_after": 0}]) as server:
        agent = Agent(default_tools(), model(server))
        agent.run("?")
    assert agent.stop_reason == "model_error" and "rate-limiting" in agent.answer and "OpenAI" in agent.answer


# ---------------------------------------------------------------- the stand-in, as strict as the API
def thought_and_calls(server, **request):
    """The first response of THOUGHT (a reasoning item and two calls), and the input that answers its calls."""
    first = client(server).responses.create(model="gpt-5.4-mini", input="price?", tools=[LOOKUP],
                                            include=["reasoning.encrypted_content"], **request)
    output = [i.model_dump(exclude_unset=True, mode="json") for i in first.output]
    answers = [{"type": "function_call_output", "call_id": i["call_id"], "output": "ok"}
               for i in output if i["type"] == "function_call"]
    return output, answers


def test_a_dropped_reasoning_item_is_the_api_s_400():
    with StandInServer(THOUGHT) as server:
        output, answers = thought_and_calls(server, store=False)
        said = refused(server, input=[ASKED, *output[1:], *answers], store=False, tools=[LOOKUP])
    assert said == (f"Item '{output[1]['id']}' of type 'function_call' was provided without its required "
                    f"'reasoning' item: '{output[0]['id']}'.")


def test_a_reasoning_item_without_its_encrypted_content_is_not_found_when_nothing_is_stored():
    with StandInServer(THOUGHT) as server:
        output, answers = thought_and_calls(server, store=False)
        bare = {k: v for k, v in output[0].items() if k != "encrypted_content"}
        with pytest.raises(openai.NotFoundError) as info:   # a 404, not a 400
            client(server).responses.create(model="m", input=[ASKED, bare, *output[1:], *answers], store=False)
        said = info.value.body["message"]
        altered = {**output[0], "encrypted_content": output[0]["encrypted_content"] + "x"}
        changed = refused(server, input=[ASKED, altered, *output[1:], *answers], store=False)
        alone = refused(server, input=[ASKED, output[0]], store=False)
    assert said == (f"Item with id '{output[0]['id']}' not found. Items are not persisted when `store` is set to "
                    "false. Try again with `store` set to true, or remove this item from your input.")
    assert "could not be verified" in changed
    assert alone == f"Item '{output[0]['id']}' of type 'reasoning' was provided without its required following item."


def test_every_call_needs_its_output_and_every_output_its_call():
    with StandInServer(THOUGHT) as server:
        output, answers = thought_and_calls(server, store=False)
        missing = refused(server, input=[ASKED, *output, answers[0]], store=False)
        stray = refused(server, input=[ASKED, {"type": "function_call_output", "call_id": "call_x", "output": "1"}])
    assert missing == f"No tool output found for function call {output[2]['call_id']}."
    assert stray == "No tool call found for function call output with call_id call_x."


def test_a_stored_response_continues_with_previous_response_id_and_only_the_new_items():
    with StandInServer(THOUGHT) as server:
        output, answers = thought_and_calls(server)   # store left out: true, as the API defaults
        last = client(server).responses.create(model="gpt-5.4-mini", input=answers, previous_response_id="resp_standin_01")
        assert last.output_text == "Seven units cost $168."
    with StandInServer(THOUGHT) as server:
        thought_and_calls(server, store=False)
        said = refused(server, input=[{"role": "user", "content": "go on"}], previous_response_id="resp_standin_01")
        unknown = refused(server, input=[{"role": "user", "content": "go on"}], previous_response_id="resp_nope")
    assert said == "Previous response with id 'resp_standin_01' not found." and "resp_nope" in unknown


def test_tools_are_flat_named_like_the_api_wants_and_strict_schemas_follow_strict_mode():
    nested = {"type": "function", "function": {"name": "lookup", "parameters": {"type": "object"}}}
    optional = {**LOOKUP, "strict": True, "parameters": {"type": "object", "properties": {
        "topic": {"type": "string"}, "lang": {"type": "string"}}, "required": ["topic"], "additionalProperties": False}}
    with StandInServer(["ok", "ok", "ok"]) as server:
        assert refused(server, input="hi", tools=[nested]) == "Missing required parameter: 'tools[0].name'."
        assert "string too long. Expected a string with maximum length 64, but got a string with length 65" in \
            refused(server, input="hi", tools=[{**LOOKUP, "name": "x" * 65}])
        assert "does not match pattern" in refused(server, input="hi", tools=[{**LOOKUP, "name": "look up"}])
        assert refused(server, input="hi", tools=[{**LOOKUP, "strict": True}]) == (
            "Invalid schema for function 'lookup': In context=(), 'additionalProperties' is required to be supplied "
            "and to be false.")
        assert "array including every key in properties. Missing 'lang'" in refused(server, input="hi", tools=[optional])
        fine = {**optional, "parameters": {**optional["parameters"], "required": ["topic", "lang"]}}
        for tools in ([{**LOOKUP, "name": "x" * 64}], [LOOKUP], [fine]):   # strict false, or a strict schema
            assert client(server).responses.create(model="m", input="hi", tools=tools).output_text == "ok"


def test_limits_and_an_empty_input_are_refused_in_the_api_s_words():
    with StandInServer(["ok"]) as server:
        assert refused(server, input="hi", max_output_tokens=8) == (
            "Invalid 'max_output_tokens': integer below minimum value. Expected a value >= 16, but got 8 instead.")
        assert "empty array" in refused(server, input=[])
        assert "Invalid type for 'input[1]': expected an input item object, but got a string" in refused(
            server, input=[ASKED, "more text"])
        assert "Supported values are: 'none', 'auto', and 'required'" in refused(server, input="hi", tool_choice="any")
        assert server.remaining == 1   # a refused request uses up no turn


def test_a_request_without_a_key_is_a_401_and_the_script_s_contradiction_a_500():
    with StandInServer(["just text"]) as server:
        with pytest.raises(openai.InternalServerError, match="tool_choice forces a tool call"):
            client(server).responses.create(model="m", input="hi", tools=[LOOKUP], tool_choice="required")
    with StandInServer(["ok"]) as server:
        import urllib.request
        request = urllib.request.Request(server.url + "/v1/responses", data=b'{"model": "m", "input": "hi"}',
                                         headers={"content-type": "application/json"}, method="POST")
        with pytest.raises(urllib.error.HTTPError) as info:
            urllib.request.build_opener(urllib.request.ProxyHandler({})).open(request, timeout=10)
        assert info.value.code == 401


def test_an_item_the_api_does_not_know_is_its_own_sentence_not_a_retired_model():
    with StandInServer(THOUGHT) as server:
        output, _ = thought_and_calls(server, store=False)
        bare = [{k: v for k, v in i.items() if k != "encrypted_content"} for i in output]   # as if never asked for
        turn = {"role": "assistant", "content": "", "raw": {"format": "openai-responses", "content": bare},
                "tool_calls": [{"id": i["call_id"], "name": i["name"], "args": {}} for i in output[1:]]}
        results = [{"role": "tool", "tool_call_id": i["call_id"], "name": i["name"], "content": "ok"} for i in output[1:]]
        with pytest.raises(ModelError) as info:
            model(server).complete([ASKED, turn, *results], {})
    said = str(info.value)
    assert said.startswith("OpenAI does not know an item this request sends back (404).") and "rs_standin_01" in said
    assert "retired" not in said and "base URL" not in said
