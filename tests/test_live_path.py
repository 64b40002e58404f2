"""Stage 08, the live path: thinking blocks sent back verbatim, every stop reason, honest error sentences,
half emojis, array schemas. Provider errors are built the way the real SDKs build them (from an httpx2
response with the provider's documented error body), then explained."""
import json
import typing

import httpx2
import pytest

from course_lib import default_tools
from course_lib.agent import Agent
from course_lib.describe import tool_schema
from course_lib.models import ModelError, ScriptedModel
from course_lib.models.anthropic import AnthropicModel, history_to_anthropic, reply_from_anthropic
from course_lib.models.base import ContextFullError, Reply, scrub
from course_lib.models.openai import OpenAIModel, history_to_openai, reply_from_openai
from course_lib.models.remote import TransientError, explain_api_error

THINKING = {"type": "thinking", "thinking": "", "signature": "EqQBCkYIBxgCKkB0c2lnbmF0dXJl"}
REDACTED = {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT"}
FUTURE = {"type": "some_future_block", "payload": {"x": 1}}


def anthropic_response(content, stop_reason="tool_use"):
    return {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-haiku-5-5",
            "content": content, "stop_reason": stop_reason, "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5}}


def openai_response(message, finish_reason="stop"):
    return {"id": "c1", "object": "chat.completion", "created": 0, "model": "gpt-5.4-mini",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": None, **message},
                         "finish_reason": finish_reason}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}}


# -- thinking blocks -------------------------------------------------------------------------------------
def test_thinking_blocks_and_unknown_blocks_go_back_verbatim_in_their_order():
    content = [THINKING, REDACTED, {"type": "text", "text": "Let me look."}, FUTURE,
               {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"topic": "단가"}}]
    reply = reply_from_anthropic(anthropic_response(content))
    assert reply.raw == {"format": "anthropic", "content": content} and reply.stop is None
    assert reply.text == "Let me look." and reply.tool_calls[0].args == {"topic": "단가"}
    model = ScriptedModel([reply, Reply(text="Seven units cost $168.")], native_tools=True)
    agent = Agent(default_tools(), model)
    agent.run("How much?")
    _, messages = history_to_anthropic(agent.history)
    assert messages[1] == {"role": "assistant", "content": content}   # nothing dropped, rewritten or reordered
    assert messages[2]["content"][0]["type"] == "tool_result"
    json.dumps(agent.transcript(), ensure_ascii=False)   # the raw blocks are plain data in the transcript


def test_thinking_text_is_readable_in_history_when_the_api_returns_it():
    summary = {"type": "thinking", "thinking": "The user wants the price; look it up.", "signature": "sig"}
    reply = reply_from_anthropic(anthropic_response([summary, {"type": "text", "text": "42"}], "end_turn"))
    assert reply.thinking == "The user wants the price; look it up."
    agent = Agent(default_tools(), ScriptedModel([reply], native_tools=True))
    assert agent.run("?") == "42" and agent.history[-1]["thinking"] == reply.thinking
    assert history_to_anthropic(agent.history)[1][-1]["content"] == [summary, {"type": "text", "text": "42"}]


def test_earlier_turns_are_never_rewritten_between_requests():
    turns = [reply_from_anthropic(anthropic_response(
        [THINKING, {"type": "tool_use", "id": f"t{n}", "name": "calculator", "input": {"expression": f"{n}*7"}}]))
        for n in (1, 2)]
    model = ScriptedModel([*turns, "done"], native_tools=True)
    seen = []

    class Recording:
        native_tools = True

        def complete(self, messages, tools=None):
            seen.append(json.dumps(history_to_anthropic(messages), sort_keys=True))
            return model.complete(messages, tools)

    Agent(default_tools(), Recording(), repeat_limit=None).run("?")
    for earlier, later in zip(seen, seen[1:]):   # append-only: each request starts with the previous one
        before, after = json.loads(earlier)[1], json.loads(later)[1]
        assert after[:len(before)] == before


def test_settings_for_thinking_and_effort(monkeypatch):
    model = AnthropicModel(api_key="x", thinking="summarized", effort="low")
    request = model.request([{"role": "user", "content": "hi"}])
    assert request["thinking"] == {"type": "adaptive", "display": "summarized"}
    assert request["output_config"] == {"effort": "low"} and request["max_tokens"] == 16000
    default = AnthropicModel(api_key="x").request([{"role": "user", "content": "hi"}])
    assert "thinking" not in default and "output_config" not in default   # the model's own default
    monkeypatch.setenv("COURSE_ANTHROPIC_EFFORT", "high")
    monkeypatch.setenv("COURSE_ANTHROPIC_THINKING", "disabled")
    request = AnthropicModel(api_key="x").request([{"role": "user", "content": "hi"}])
    assert request["output_config"] == {"effort": "high"} and request["thinking"] == {"type": "disabled"}
    monkeypatch.setenv("COURSE_ANTHROPIC_EFFORT", "extreme")
    with pytest.raises(ValueError, match="effort must be one of low, medium"):
        AnthropicModel(api_key="x")
    with pytest.raises(ValueError, match="max_tokens"):
        AnthropicModel(api_key="x", effort="low", max_tokens=0)


# -- stop reasons ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("provider_stop, stop", [("refusal", "refused"), ("max_tokens", "max_tokens"),
                                                 ("model_context_window_exceeded", "context_full")])
def test_anthropic_stop_reasons(provider_stop, stop):
    reply = reply_from_anthropic(anthropic_response([{"type": "text", "text": "Half an ans"}], provider_stop))
    assert (reply.stop, reply.provider_stop) == (stop, provider_stop)
    agent = Agent(default_tools(), ScriptedModel([reply], native_tools=True))
    answer = agent.run("?")
    assert agent.stop_reason == stop and provider_stop in answer
    # a refusal's own words are quoted as what the model said; a cut-off text is never offered as the answer
    assert ('It said: "Half an ans".' in answer) if stop == "refused" else ("Half an ans" not in answer)
    assert agent.trace[-1].reply == "Half an ans"   # the partial text stays in the trace
    assert answer.count(". ") <= 2 and answer.endswith(".")


def test_a_tool_call_cut_off_by_max_tokens_is_never_run():
    ran = []

    def record(topic: str) -> str:
        """Record a topic.

        Args:
            topic: what to record.
        """
        ran.append(topic)
        return "ok"

    cut = anthropic_response([THINKING, {"type": "tool_use", "id": "t1", "name": "record", "input": {}}],
                             "max_tokens")
    agent = Agent({"record": record}, ScriptedModel([reply_from_anthropic(cut)], native_tools=True))
    agent.run("record something")
    assert ran == [] and agent.stop_reason == "max_tokens" and agent.trace[-1].runs == []
    openai_cut = openai_response({"tool_calls": [{"id": "c1", "type": "function", "function": {
        "name": "record", "arguments": '{"topic": "hal'}}]}, "length")
    agent = Agent({"record": record}, ScriptedModel([reply_from_openai(openai_cut)], native_tools=True))
    agent.run("record something")
    assert ran == [] and agent.stop_reason == "max_tokens"


@pytest.mark.parametrize("message, finish, stop", [
    ({"content": "Partial"}, "length", "max_tokens"),
    ({"content": None}, "content_filter", "refused"),
    ({"refusal": "I can't help with that."}, "stop", "refused")])
def test_openai_stop_reasons(message, finish, stop):
    reply = reply_from_openai(openai_response(message, finish))
    assert reply.stop == stop
    agent = Agent(default_tools(), ScriptedModel([reply], native_tools=True))
    agent.run("?")
    assert agent.stop_reason == stop and agent.answer.startswith("The model")


def test_scripted_models_can_stop_in_every_way_and_unknown_stops_are_refused():
    for stop in ("refused", "max_tokens", "context_full"):
        agent = Agent(default_tools(), ScriptedModel([{"stop": stop, "text": "..."}]))
        agent.run("?")
        assert agent.stop_reason == stop
    agent = Agent(default_tools(), ScriptedModel([{"stop": "tired"}]))
    agent.run("?")
    assert agent.stop_reason == "model_error" and "unknown stop 'tired'" in agent.answer


def test_a_context_error_stops_with_context_full():
    agent = Agent(default_tools(), ScriptedModel([ContextFullError("The conversation no longer fits.")]))
    agent.run("?")
    assert agent.stop_reason == "model_error"   # a scripted exception is a plain model failure ...

    class Full:
        def complete(self, messages, tools=None):
            raise ContextFullError("The conversation no longer fits the model's context window.")

    agent = Agent(default_tools(), Full())
    agent.run("?")
    assert agent.stop_reason == "context_full" and "context window" in agent.answer   # ... a real one is not


# -- errors ----------------------------------------------------------------------------------------------
def sdk_error(provider, status, body, headers=None):
    request = httpx2.Request("POST", "https://api.example.test/v1/messages")
    response = httpx2.Response(status, json=body, headers=headers or {}, request=request)
    if provider == "anthropic":
        import anthropic
        client = anthropic.Anthropic(api_key="sk-ant-test")
    else:
        import openai
        client = openai.OpenAI(api_key="sk-test")
    return client._make_status_error(f"Error code: {status}", body=body, response=response)


def explain(provider, status, body, headers=None, model="m-1"):
    error = explain_api_error(sdk_error("openai" if provider == "ollama" else provider, status, body, headers),
                              provider, model, "https://api.example.test")
    assert isinstance(error, ModelError)
    return error


QUOTA = {"error": {"message": "You exceeded your current quota, please check your plan and billing details.",
                   "type": "insufficient_quota", "param": None, "code": "insufficient_quota"}}
RATE = {"error": {"message": "Rate limit reached for gpt-5.4-mini on tokens per min (TPM).",
                  "type": "requests", "param": None, "code": "rate_limit_exceeded"}}


def test_a_key_without_billing_is_not_called_a_rate_limit():
    text = str(explain("openai", 429, QUOTA, {"x-request-id": "req_abc"}))
    assert "no credit or quota" in text and "not a rate limit" in text and "rate-limiting" not in text
    assert "You exceeded your current quota" in text and "req_abc" in text
    text = str(explain("openai", 429, RATE))
    assert "rate-limiting" in text and "Rate limit reached" in text
    text = str(explain("anthropic", 400, {"type": "error", "error": {"type": "invalid_request_error",
               "message": "Your credit balance is too low to access the Anthropic API."}}))
    assert "no credit" in text and "credit balance is too low" in text


def test_404_names_both_the_model_id_and_the_base_url_and_ollama_says_pull():
    body = {"type": "error", "error": {"type": "not_found_error", "message": "model: claude-2.1"}}
    text = str(explain("anthropic", 404, body, {"request-id": "req_011"}, model="claude-2.1"))
    assert "model ID 'claude-2.1'" in text and "base URL" in text and "ANTHROPIC_BASE_URL" in text
    assert "req_011" in text
    text = str(explain("ollama", 404, {"error": {"message": 'model "qwen9" not found, try pulling it first'}},
                       model="qwen9"))
    assert "ollama pull qwen9" in text


@pytest.mark.parametrize("status, body, words", [
    (529, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}, "overloaded"),
    (413, {"type": "error", "error": {"type": "request_too_large", "message": "Request exceeds the maximum size"}},
     "too large"),
    (500, {"type": "error", "error": {"type": "api_error", "message": "Internal server error"}}, "server error"),
    (401, {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}},
     "ANTHROPIC_API_KEY")])
def test_each_anthropic_error_is_one_sentence_with_the_apis_message(status, body, words):
    text = str(explain("anthropic", status, body))
    assert words in text and body["error"]["message"] in text and "\n" not in text


def test_a_context_overflow_error_becomes_context_full():
    body = {"error": {"message": "This model's maximum context length is 128000 tokens.", "type":
                      "invalid_request_error", "param": "messages", "code": "context_length_exceeded"}}
    error = explain("openai", 400, body)
    assert isinstance(error, ContextFullError) and error.stop_reason == "context_full"
    body = {"type": "error", "error": {"type": "invalid_request_error",
                                       "message": "prompt is too long: 1000001 tokens > 1000000 maximum"}}
    assert isinstance(explain("anthropic", 400, body), ContextFullError)


def test_key_like_text_in_an_api_message_is_masked_and_long_messages_trimmed():
    body = {"error": {"message": "Incorrect API key provided: sk-proj-abcdefghijklmnop1234. " + "x" * 900,
                      "type": "invalid_request_error", "param": None, "code": "invalid_api_key"}}
    text = str(explain("openai", 401, body))
    assert "abcdefghijklmnop1234" not in text and len(text) < 600


def test_the_sdks_streaming_valueerror_becomes_a_sentence():
    import anthropic
    client = anthropic.Anthropic(api_key="sk-ant-test", base_url="http://127.0.0.1:9", max_retries=0)
    model = AnthropicModel(client=client, max_tokens=100_000)
    agent = Agent(default_tools(), model)
    agent.run("?")
    assert agent.stop_reason == "model_error" and "16000 or less" in agent.answer


# -- half an emoji ---------------------------------------------------------------------------------------
def test_lone_surrogates_become_the_replacement_character():
    assert scrub("x\ud83d") == "x\ufffd" and scrub("\ud83d\ude00") == "😀"
    assert scrub({"k\udc00": ["a", ("\ud83d",)]}) == {"k\ufffd": ["a", ("\ufffd",)]}
    args = json.loads('{"content": "price \\ud83d"}')
    reply = reply_from_openai(openai_response({"tool_calls": [{"id": "c1", "type": "function", "function": {
        "name": "lookup", "arguments": json.dumps(args)}}]}, "tool_calls"))
    assert reply.tool_calls[0].args == {"content": "price \ufffd"}


@pytest.mark.parametrize("make", [lambda: AnthropicModel(api_key="x"), lambda: OpenAIModel(api_key="x")])
def test_requests_never_carry_lone_surrogates(make):
    history = [{"role": "user", "content": "half \ud83d emoji"},
               {"role": "assistant", "content": "", "tool_calls": [{"id": "t1", "name": "lookup",
                                                                   "args": {"topic": "\udc00"}}]},
               {"role": "tool", "tool_call_id": "t1", "name": "lookup", "content": "\ud83d", "is_error": False}]
    request = make().request(history, default_tools())
    json.dumps(request, ensure_ascii=False).encode("utf-8")   # would raise on a lone surrogate


def test_a_transcript_with_half_an_emoji_is_saved(tmp_path):
    agent = Agent(default_tools(), ScriptedModel(['{"tool": "finish", "args": {"answer": "ok \\ud83d"}}']))
    agent.run("say \ud83d")
    path = agent.save(tmp_path / "run.json")
    saved = json.loads(path.read_text(encoding="utf-8"))
    assert saved["answer"] == "ok \ufffd" and saved["goal"] == "say \ufffd"


# -- array schemas ---------------------------------------------------------------------------------------
def _tool(annotation):
    def tool(values) -> str:
        """Use values.

        Args:
            values: the values.
        """
        return ""
    tool.__annotations__ = {"values": annotation, "return": str}
    return tool


@pytest.mark.parametrize("annotation, items", [
    (list[str], {"type": "string"}), (tuple[float, ...], {"type": "number"}),
    (set[int], {"type": "integer"}), (list[list[int]], {"type": "array", "items": {"type": "integer"}})])
def test_every_array_schema_says_what_its_items_are(annotation, items):
    assert tool_schema(_tool(annotation))["properties"]["values"]["items"] == items


def test_a_fixed_tuple_lists_its_item_types_and_length():
    prop = tool_schema(_tool(tuple[int, str]))["properties"]["values"]
    assert prop == {"type": "array", "items": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
                    "minItems": 2, "maxItems": 2, "description": "the values."}


@pytest.mark.parametrize("annotation", [list, tuple, set, list[typing.Any]])
def test_an_array_without_item_type_is_refused_with_the_fix(annotation):
    with pytest.raises(ValueError, match=r"list\[str\]"):
        tool_schema(_tool(annotation))


def test_history_to_openai_is_unchanged_by_raw_anthropic_content():
    reply = reply_from_anthropic(anthropic_response(
        [THINKING, {"type": "tool_use", "id": "t1", "name": "lookup", "input": {"topic": "단가"}}]))
    agent = Agent(default_tools(), ScriptedModel([reply, Reply(text="done")], native_tools=True))
    agent.run("?")
    converted = history_to_openai(agent.history)
    assert converted[2]["tool_calls"][0]["function"]["arguments"] == '{"topic": "단가"}'
    assert all("raw" not in m for m in converted)


def test_an_empty_final_turn_is_not_an_answer():
    """Real models sometimes end a turn with nothing in it: that is an unusable reply, not a blank answer."""
    thinking_only = reply_from_anthropic(anthropic_response([THINKING], "end_turn"))
    model = ScriptedModel([thinking_only, Reply(text=""), Reply(text="Seven units cost $168.")], native_tools=True)
    agent = Agent(default_tools(), model)
    assert agent.run("?") == "Seven units cost $168." and agent.stop_reason == "finish"
    assert [s.error for s in agent.trace][:2] == ["the reply was empty"] * 2
    nudges = [m["content"] for m in agent.history if m["role"] == "user"][1:]
    assert nudges == ["Your reply could not be used: the reply was empty. Answer in plain text, or call one of "
                      "the tools."] * 2
    _, messages = history_to_anthropic(agent.history)
    assert messages[1] == {"role": "assistant", "content": [THINKING]}   # kept: its thinking block
    assert all(m["content"] for m in messages)   # the empty turn without blocks is not sent back
    agent = Agent(default_tools(), ScriptedModel([Reply(text="  ")] * 3, native_tools=True))
    agent.run("?")
    assert agent.stop_reason == "format_errors" and agent.answer.startswith("Stopped: 3 unusable replies")


def test_a_tool_the_api_cannot_be_told_about_fails_when_the_agent_is_built():
    with pytest.raises(ValueError, match="does not say what the items are"):
        Agent({"tag": _tool(list)}, ScriptedModel([], native_tools=True))
    Agent({"tag": _tool(list)}, ScriptedModel([]))   # the text protocol describes tools in prose: fine


def test_half_an_emoji_never_reaches_the_history():
    agent = Agent(default_tools(), ScriptedModel([{"tool_calls": [{"name": "lookup", "args": {"topic": "\ud83d"}}]},
                                                  "done \ud83d"], native_tools=True))
    agent.run("what is \ud83d this?")
    text = json.dumps(agent.history, ensure_ascii=False)
    text.encode("utf-8")   # would raise on a lone surrogate
    assert agent.history[1]["content"] == "what is \ufffd this?" and agent.answer == "done \ufffd"


def test_openai_max_tokens_is_sent_by_its_current_name():
    assert OpenAIModel(api_key="x", max_tokens=500).request([{"role": "user", "content": "hi"}])[
        "max_completion_tokens"] == 500
    assert "max_completion_tokens" not in OpenAIModel(api_key="x").request([{"role": "user", "content": "hi"}])
    ollama = OpenAIModel.ollama(max_tokens=500).request([{"role": "user", "content": "hi"}])
    assert ollama["max_tokens"] == 500
    with pytest.raises(ValueError, match="max_tokens"):
        OpenAIModel(api_key="x", max_tokens=0)


# -- every error sentence, word for word (course_lib/models/remote.py) ------------------------------------------
from course_lib.models.remote import call_api, make_client  # noqa: E402


def anthropic_body(message, kind="invalid_request_error"):
    return {"type": "error", "error": {"type": kind, "message": message}}


@pytest.mark.parametrize("provider, status, body, sentence", [
    ("anthropic", 413, {"error": {"message": "too big", "type": "invalid_request_error"}},
     'Anthropic refused the request as too large (413): trim the conversation or the tool results. The API said: '
     '"too big".'),
    ("anthropic", 400, anthropic_body("big", "request_too_large"),
     'Anthropic refused the request as too large (413): trim the conversation or the tool results. The API said: '
     '"big".'),
    ("anthropic", 400, anthropic_body("input length and `max_tokens` exceed context window limit"),
     "The conversation no longer fits the model's context window (Anthropic, 400): trim or summarise the history, "
     'or start a new run. The API said: "input length and `max_tokens` exceed context window limit".'),
    ("anthropic", 402, anthropic_body("Pay up.", "invalid_request_error"),
     "Anthropic says this key has no credit or quota left (402 invalid_request_error): this is not a rate limit and "
     "waiting will not help; add billing or credit to the account, or use another key. The API said: \"Pay up.\"."),
    ("anthropic", 400, anthropic_body("No money.", "billing_error"),
     "Anthropic says this key has no credit or quota left (400 billing_error): this is not a rate limit and "
     'waiting will not help; add billing or credit to the account, or use another key. The API said: "No money.".'),
    ("openai", 429, {"error": {"message": "Quota.", "type": "requests", "code": "insufficient_quota"}},
     "OpenAI says this key has no credit or quota left (429 insufficient_quota): this is not a rate limit and "
     'waiting will not help; add billing or credit to the account, or use another key. The API said: "Quota.".'),
    ("ollama", 402, {"error": "no credit"},
     "Ollama says this key has no credit or quota left (402 billing): this is not a rate limit and "
     'waiting will not help; add billing or credit to the account, or use another key. The API said: "no credit".'),
    ("anthropic", 401, anthropic_body("invalid x-api-key", "authentication_error"),
     'Anthropic rejected the API key (401 authentication error); check ANTHROPIC_API_KEY. The API said: '
     '"invalid x-api-key".'),
    ("ollama", 401, {"error": "unauthorized"},
     'Ollama rejected the API key (401 authentication error); check the API key. The API said: "unauthorized".'),
    ("openai", 403, {"error": {"message": "no", "type": "permission_error"}},
     "OpenAI refused access (403 permission denied): this key may not use model 'm-1'. The API said: \"no\"."),
    ("ollama", 404, {"error": "model not found"},
     "Ollama has no model 'm-1' (404): run `ollama pull m-1`, or set COURSE_OLLAMA_MODEL to a model you have "
     '(`ollama list`). The API said: "model not found".'),
    ("openai", 404, {"error": {"message": "gone", "type": "invalid_request_error"}},
     "OpenAI answered 404 not found: either the model ID 'm-1' is retired or misspelt (set COURSE_OPENAI_MODEL to a "
     "current one; `course doctor` checks it) or the base URL is wrong (check base_url= or OPENAI_BASE_URL, which "
     'for OpenAI ends in /v1). The API said: "gone".'),
    ("anthropic", 404, anthropic_body("gone", "not_found_error"),
     "Anthropic answered 404 not found: either the model ID 'm-1' is retired or misspelt (set "
     "COURSE_ANTHROPIC_MODEL to a current one; `course doctor` checks it) or the base URL is wrong (check base_url= "
     'or ANTHROPIC_BASE_URL). The API said: "gone".'),
    ("openai", 400, {"error": {"message": "bad", "type": "invalid_request_error"}},
     'OpenAI rejected the request (400 bad request). The API said: "bad".'),
    ("anthropic", 429, anthropic_body("slow down", "rate_limit_error"),
     "Anthropic is rate-limiting this key (429), still after the SDK's retries: wait a minute and try again. "
     'The API said: "slow down".'),
    ("anthropic", 529, anthropic_body("Overloaded", "overloaded_error"),
     "Anthropic's API is overloaded right now (529), still after the SDK's retries: try again later. The API said: "
     '"Overloaded".'),
    ("openai", 529, {"error": {"message": "busy", "type": "server_error"}},
     "OpenAI's API is overloaded right now (529), still after the SDK's retries: try again later. The API said: "
     '"busy".'),
    ("anthropic", 500, anthropic_body("busy", "overloaded_error"),
     "Anthropic's API is overloaded right now (500), still after the SDK's retries: try again later. The API said: "
     '"busy".'),
    ("openai", 503, {"error": {"message": "The engine is currently overloaded.", "type": "server_error"}},
     "OpenAI's API is overloaded right now (503), still after the SDK's retries: try again later. The API said: "
     '"The engine is currently overloaded.".'),
    ("openai", 503, {"error": {"message": "Service unavailable.", "type": "server_error"}},
     "OpenAI had a server error (503), still after the SDK's retries: try again later. The API said: "
     '"Service unavailable.".'),
    ("openai", 504, {"error": {"message": "Upstream overloaded.", "type": "server_error"}},
     "OpenAI had a server error (504), still after the SDK's retries: try again later. The API said: "
     '"Upstream overloaded.".'),
    ("anthropic", 500, anthropic_body("Internal server error", "api_error"),
     "Anthropic had a server error (500), still after the SDK's retries: try again later. The API said: "
     '"Internal server error".'),
    ("anthropic", 409, anthropic_body("conflict"),
     "Anthropic had a conflict (409), still after the SDK's retries: try again later. The API said: \"conflict\"."),
    ("openai", 408, {"error": {"message": "slow", "type": "timeout"}},
     "OpenAI had a request timeout (408), still after the SDK's retries: try again later. The API said: \"slow\"."),
    ("anthropic", 418, anthropic_body("teapot"), 'Anthropic answered with an error (418). The API said: "teapot".'),
])
def test_each_status_gets_its_sentence_word_for_word(provider, status, body, sentence):
    assert str(explain(provider, status, body)) == sentence


@pytest.mark.parametrize("provider, status, body", [
    ("anthropic", 429, anthropic_body("slow down", "rate_limit_error")), ("openai", 429, RATE),
    ("anthropic", 529, anthropic_body("Overloaded", "overloaded_error")), ("openai", 500, {"error": {"message": "x"}}),
    ("openai", 503, {"error": {"message": "x"}}), ("anthropic", 408, anthropic_body("t")),
    ("anthropic", 409, anthropic_body("c"))])
def test_what_the_sdks_retry_is_transient_with_the_servers_retry_after(provider, status, body):
    """The SDKs retry 408, 409, 429 and 5xx (`_should_retry`): after their retries these are worth asking again."""
    error = explain(provider, status, body, {"retry-after": "7"})
    assert type(error) is TransientError and error.retry_after == 7.0 and error.stop_reason == "model_error"
    assert explain(provider, status, body, {"retry-after": " 1.5 "}).retry_after == 1.5
    assert explain(provider, status, body).retry_after is None


@pytest.mark.parametrize("headers", [{"retry-after": "soon"}, {"retry-after": "-3"}, {"retry-after": "inf"},
                                     {"retry-after": "nan"}, {"retry-after": "1.2.3"}, {"retry-after": ""},
                                     {"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}, {"retry-after-ms": "1500"}])
def test_a_retry_after_that_is_no_number_of_seconds_is_none(headers):
    assert explain("anthropic", 429, anthropic_body("slow", "rate_limit_error"), headers).retry_after is None


@pytest.mark.parametrize("provider, status, body", [
    ("openai", 429, QUOTA), ("anthropic", 400, anthropic_body("bad")), ("anthropic", 401, anthropic_body("key")),
    ("anthropic", 404, anthropic_body("gone")), ("anthropic", 413, anthropic_body("big")),
    ("anthropic", 400, anthropic_body("prompt is too long: 210000 tokens > 200000 maximum")),
    ("anthropic", 418, anthropic_body("teapot"))])
def test_what_waiting_cannot_fix_is_not_transient(provider, status, body):
    assert not isinstance(explain(provider, status, body, {"retry-after": "7"}), TransientError)


def test_a_dropped_connection_is_transient():
    import httpx
    import anthropic
    error = anthropic.APIConnectionError(request=httpx.Request("POST", "https://api.example.test/v1/messages"))
    assert type(explain_api_error(error, "anthropic", "m-1")) is TransientError


def test_what_the_api_said_is_quoted_with_its_request_id_trimmed_and_masked():
    def said(message, headers=None):
        return str(explain("openai", 400, {"error": {"message": message, "type": "x"}}, headers)).split(
            "(400 bad request).")[1]

    assert said("bad", {"x-request-id": "req_7"}) == ' The API said: "bad" (request id req_7).'
    assert said("", {"x-request-id": "req_7"}) == " Request id: req_7."
    assert said("") == ""
    assert said("  two\n lines ") == ' The API said: "two lines".'
    assert said("abc." * 75) == f' The API said: "{"abc." * 75}".'   # 300 characters fit
    assert said("abc." * 75 + "d") == f' The API said: "{("abc." * 75)[:299]}…".'
    assert said("Incorrect API key provided: sk-proj-abcdefghijklmnop1234.") == (
        ' The API said: "Incorrect API key provided: sk-….".')


def test_the_message_comes_from_whatever_body_the_sdk_kept():
    no_message = explain("anthropic", 402, {"type": "error", "error": {"type": "billing_error"}})
    assert str(no_message).endswith("(402 billing_error): this is not a rate limit and waiting will not help; add "
                                    "billing or credit to the account, or use another key.")
    assert str(explain("openai", 402, "upstream said no")).endswith('The API said: "upstream said no".')
    billing = "(402 billing): this is not a rate limit"   # neither a type nor a code to quote
    assert billing in str(explain("anthropic", 402, {"error": "no credit"}))   # Ollama-style: the error is text
    assert billing in str(explain("anthropic", 402, {"type": "error", "error": {"message": "m"}}))
    assert billing in str(explain("openai", 402, None))
    import openai
    quiet = openai.APIStatusError("", response=httpx2.Response(402, request=httpx2.Request("POST", "http://h")),
                                  body=None)
    assert str(explain_api_error(quiet, "openai", "m")).endswith("use another key.")   # nothing to quote
    text = str(explain("openai", 502, None))
    assert text == 'OpenAI had a server error (502), still after the SDK\'s retries: try again later. The API said: ' \
                   '"Error code: 502".'


def test_a_connection_failure_says_where_and_what_to_check():
    import anthropic
    import openai
    request = httpx2.Request("POST", "http://127.0.0.1:9/v1/messages")
    assert str(explain_api_error(anthropic.APIConnectionError(request=request), "anthropic", "m", "http://h")) == (
        "could not reach the Anthropic server at http://h (APIConnectionError): check the network or the base URL")
    assert str(explain_api_error(openai.APITimeoutError(request=request), "openai", "m")) == (
        "could not reach the OpenAI server (APITimeoutError): check the network or the base URL")
    assert str(explain_api_error(openai.APIConnectionError(request=request), "ollama", "m", "http://o")) == (
        "could not reach the Ollama server at http://o (APIConnectionError): is `ollama serve` running?")


def test_the_streaming_valueerror_is_a_sentence_and_other_errors_are_not_explained():
    said = explain_api_error(ValueError("Streaming is required for operations that may take longer than 10 "
                                        "minutes."), "anthropic", "m")
    assert str(said) == ("Anthropic: this max_tokens is too large for a request without streaming (the SDK refuses "
                         "ones that could take over ten minutes, about 21,000 tokens and up); use 16000 or less")
    assert explain_api_error(ValueError("another"), "anthropic", "m") is None
    assert explain_api_error(KeyError("bug"), "openai", "m") is None


def test_call_api_explains_sdk_errors_with_the_model_and_url_and_lets_bugs_raise():
    import openai
    request = httpx2.Request("POST", "http://127.0.0.1:9/v1/chat/completions")

    def fail(error):
        def send():
            raise error
        return send

    assert call_api("openai", "m", lambda: "reply") == "reply"
    with pytest.raises(ModelError) as info:
        call_api("openai", "gpt-x", fail(openai.APIConnectionError(request=request)), base_url="http://h/v1")
    assert str(info.value) == ("could not reach the OpenAI server at http://h/v1 (APIConnectionError): check the "
                               "network or the base URL") and info.value.__cause__ is None
    with pytest.raises(ModelError, match=r"^could not reach the OpenAI server \(APIConnectionError\)"):
        call_api("openai", "gpt-x", fail(openai.APIConnectionError(request=request)))
    with pytest.raises(ModelError, match="the model ID 'gpt-x' is retired"):
        call_api("openai", "gpt-x", fail(sdk_error("openai", 404, {"error": {"message": "gone"}})))
    with pytest.raises(KeyError):
        call_api("openai", "gpt-x", fail(KeyError("a bug")))


def test_make_client_builds_each_sdk_s_client_with_the_key_url_and_retries(monkeypatch):
    import anthropic
    import openai
    client = make_client("anthropic", base_url="http://h:1", api_key="k1", max_retries=5)
    assert type(client) is anthropic.Anthropic and (client.api_key, client.max_retries) == ("k1", 5)
    assert str(client.base_url).rstrip("/") == "http://h:1"
    client = make_client("openai", base_url="http://h:2/v1", api_key="k2", max_retries=4)
    assert type(client) is openai.OpenAI and (client.api_key, client.max_retries) == ("k2", 4)
    assert str(client.base_url).rstrip("/") == "http://h:2/v1"
    monkeypatch.setenv("OPENAI_API_KEY", "k-env")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://env:3/v1")
    client = make_client("openai", base_url=None, api_key=None, max_retries=0)
    assert client.api_key == "k-env" and str(client.base_url).rstrip("/") == "http://env:3/v1"
    monkeypatch.delenv("OPENAI_API_KEY")
    with pytest.raises(ModelError) as info:
        make_client("openai", base_url=None, api_key="", max_retries=0)
    assert str(info.value) == ("OPENAI_API_KEY is not set: to run live, set it in the terminal (`export "
                               "OPENAI_API_KEY=...`) before starting JupyterLab or `course`; without it the notebooks "
                               "use the local stand-in server.")
