"""The course's adapters and the whole loop, fed the documented payloads of tests/fixtures/payloads/ through
the real SDKs (over httpx2.MockTransport, so nothing leaves the machine): thinking blocks go back verbatim,
every stop reason ends the run as SPEC §4 says, and each documented error becomes the right sentence."""
from __future__ import annotations

import json
import pathlib

import anthropic
import httpx2
import openai
import pytest

from course_lib import default_tools
from course_lib.agent import Agent
from course_lib.models.anthropic import AnthropicModel
from course_lib.models.openai import OpenAIModel
from course_lib.courseware.standin import StandInServer
from test_payload_fixtures import anthropic_client, assert_no_extra_fields, openai_client

PAYLOADS = pathlib.Path(__file__).parent / "fixtures" / "payloads"


def load(name: str) -> dict:
    return json.loads((PAYLOADS / name).read_text(encoding="utf-8"))


class Replay:
    """A mock transport handler: answers each request with the next fixture and keeps the request bodies."""

    def __init__(self, *names: str):
        self.queue, self.bodies = [load(n) for n in names], []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.bodies.append(json.loads(request.content))
        item = self.queue.pop(0)
        if "status" in item and "body" in item:   # an error fixture: {"status", "headers", "body"}
            return httpx2.Response(item["status"], json=item["body"], headers=item.get("headers"))
        return httpx2.Response(200, json=item)


def anthropic_model(replay: Replay, **kwargs) -> AnthropicModel:
    return AnthropicModel(client=anthropic_client(replay), **kwargs)   # the SDK over a mock transport


def openai_model(replay: Replay, provider="openai") -> OpenAIModel:
    return OpenAIModel(client=openai_client(replay), provider=provider)


@pytest.mark.parametrize("name, stop", [
    ("anthropic_thinking_tool_use.json", None), ("anthropic_thinking_summarized_parallel.json", None),
    ("anthropic_redacted_thinking_answer.json", None), ("anthropic_refusal.json", "refused"),
    ("anthropic_refusal_empty.json", "refused"), ("anthropic_max_tokens_tool_use.json", "max_tokens"),
    ("anthropic_max_tokens_text.json", "max_tokens"), ("anthropic_context_window_exceeded.json", "context_full")])
def test_each_anthropic_payload_becomes_a_reply_with_its_blocks_kept_verbatim(name, stop):
    reply = anthropic_model(Replay(name)).complete([{"role": "user", "content": "hi"}])
    assert reply.stop == stop and reply.provider_stop == load(name)["stop_reason"]
    assert reply.raw == {"format": "anthropic", "content": load(name)["content"]}


def test_the_whole_loop_sends_thinking_blocks_back_unchanged_through_the_sdk():
    replay = Replay("anthropic_thinking_summarized_parallel.json", "anthropic_thinking_tool_use.json",
                    "anthropic_redacted_thinking_answer.json")
    agent = Agent(default_tools(), anthropic_model(replay))
    answer = agent.run("What do seven units cost, and what is 15% of 2,340?")
    assert agent.stop_reason == "finish" and answer == load("anthropic_redacted_thinking_answer.json")["content"][1]["text"]
    first, second = load("anthropic_thinking_summarized_parallel.json"), load("anthropic_thinking_tool_use.json")
    sent = replay.bodies[2]["messages"]
    assert sent[1] == {"role": "assistant", "content": first["content"]}
    assert sent[3] == {"role": "assistant", "content": second["content"]}
    assert replay.bodies[1]["messages"] == sent[:3]   # append-only: the third request extends the second
    assert agent.history[2]["thinking"] == first["content"][0]["thinking"]   # readable when returned
    assert [len(s.runs) for s in agent.trace] == [2, 1, 0]


def test_a_tool_use_cut_off_by_max_tokens_is_never_run():
    agent = Agent(default_tools(), anthropic_model(Replay("anthropic_max_tokens_tool_use.json")))
    agent.run("What does the notes file say?")
    assert agent.stop_reason == "max_tokens" and agent.trace[0].runs == []
    assert "max_tokens" in agent.answer and agent.trace[0].reply.startswith("I'll open the notes file")


@pytest.mark.parametrize("name, stop", [("openai_parallel_tool_calls.json", None), ("openai_answer.json", None),
                                        ("openai_refusal.json", "refused"), ("openai_length.json", "max_tokens"),
                                        ("openai_content_filter.json", "refused")])
def test_each_openai_payload_becomes_a_reply(name, stop):
    reply = openai_model(Replay(name)).complete([{"role": "user", "content": "hi"}])
    assert reply.stop == stop


def test_the_whole_openai_loop_on_documented_payloads():
    replay = Replay("openai_parallel_tool_calls.json", "openai_answer.json")
    agent = Agent(default_tools(), openai_model(replay))
    answer = agent.run("price?")
    assert agent.stop_reason == "finish" and answer == load("openai_answer.json")["choices"][0]["message"]["content"]
    tool_ids = [m["tool_call_id"] for m in replay.bodies[1]["messages"] if m["role"] == "tool"]
    assert tool_ids == [c["id"] for c in load("openai_parallel_tool_calls.json")["choices"][0]["message"]["tool_calls"]]
    agent = Agent(default_tools(), openai_model(Replay("openai_length.json")))
    agent.run("read the notes")
    assert agent.stop_reason == "max_tokens" and agent.trace[0].runs == []


@pytest.mark.parametrize("provider, name, words, stop", [
    ("anthropic", "anthropic_401_authentication_error.json", "rejected the API key", "model_error"),
    ("anthropic", "anthropic_404_not_found_error.json", "base URL", "model_error"),
    ("anthropic", "anthropic_413_request_too_large.json", "too large (413)", "model_error"),
    ("anthropic", "anthropic_429_rate_limit_error.json", "rate-limiting", "model_error"),
    ("anthropic", "anthropic_529_overloaded_error.json", "overloaded", "model_error"),
    ("anthropic", "anthropic_400_usage_limits.json", "not a rate limit", "model_error"),      # a spend limit
    ("anthropic", "anthropic_429_extra_usage_required.json", "not a rate limit", "model_error"),   # nothing to wait for
    ("openai", "openai_429_insufficient_quota.json", "not a rate limit", "model_error"),
    ("openai", "openai_429_rate_limit_exceeded.json", "rate-limiting", "model_error"),
    ("openai", "openai_404_model_not_found.json", "model ID", "model_error"),
    ("openai", "openai_400_context_length_exceeded.json", "context window", "context_full"),
    ("openai", "openai_400_invalid_function_parameters.json", "400 bad request", "model_error"),
    ("ollama", "ollama_404_model_not_found.json", "ollama pull", "model_error")])
def test_each_documented_error_becomes_its_sentence(provider, name, words, stop):
    replay = Replay(f"errors/{name}")
    model = anthropic_model(replay) if provider == "anthropic" else openai_model(replay, provider)
    agent = Agent(default_tools(), model)
    agent.run("?")
    assert agent.stop_reason == stop and words in agent.answer, agent.answer
    message = load(f"errors/{name}")["body"]
    message = message["error"] if isinstance(message["error"], str) else message["error"]["message"]
    assert " ".join(message.split())[:60] in agent.answer   # the API's own words are kept
    assert "sk-" not in agent.answer and "\n" not in agent.answer


def test_the_standins_replies_are_exact_sdk_objects_like_the_documented_ones():
    """What the stand-in sends validates strictly against the SDKs' models, as the fixtures do."""
    script = [{"text": "Both.", "tool_calls": [{"name": "lookup", "args": {"topic": "단가"}}]}, "Done."]
    for provider in ("anthropic", "openai"):
        with StandInServer(script) as server:
            if provider == "anthropic":
                client = anthropic.Anthropic(api_key="k", base_url=server.url, max_retries=0)
                raw = client.messages.with_raw_response.create(
                    model="claude-haiku-5-5", max_tokens=100, messages=[{"role": "user", "content": "hi"}])
                assert_no_extra_fields(anthropic.types.Message.model_validate(json.loads(raw.http_response.content)))
            else:
                client = openai.OpenAI(api_key="k", base_url=server.url + "/v1", max_retries=0)
                raw = client.chat.completions.with_raw_response.create(
                    model="gpt-5.4-mini", messages=[{"role": "user", "content": "hi"}])
                assert_no_extra_fields(openai.types.chat.ChatCompletion.model_validate(json.loads(raw.http_response.content)))


def test_the_ollama_standin_answers_in_the_documented_shape():
    import urllib.request

    from test_payload_fixtures import OLLAMA_MESSAGE, OLLAMA_RESPONSE, check_shape   # from Ollama's docs
    with StandInServer([{"tool_calls": [{"name": "calculator", "args": {"expression": "0.15*2340"}}]}]) as server:
        body = json.dumps({"model": "qwen3:8b", "stream": False,
                           "messages": [{"role": "user", "content": "15% of 2340?"}]}).encode()
        request = urllib.request.Request(server.url + "/api/chat", data=body, method="POST",
                                         headers={"content-type": "application/json"})
        data = json.load(urllib.request.urlopen(request, timeout=10))
    check_shape(data, OLLAMA_RESPONSE, "$")
    check_shape(data["message"], OLLAMA_MESSAGE, "$.message")
    assert data["message"]["tool_calls"][0]["function"]["arguments"] == {"expression": "0.15*2340"}
