"""Stage 08: the whole loop through the real SDKs against the local stand-in server.

The SDKs (anthropic, openai) make real HTTP requests to 127.0.0.1; the stand-in answers from a script and
checks the shape of every request it gets, as the real API would.
"""
import json
import logging

import pytest

from course_lib import default_tools
from course_lib.agent import Agent
from course_lib.models.anthropic import AnthropicModel
from course_lib.models.openai import OpenAIModel
from course_lib.courseware.standin import StandInServer

SECRET = "sk-test-secret-value-0123456789abcdef"
PARALLEL_THEN_ANSWER = [
    {"text": "I will look up the price and try a division.",
     "tool_calls": [{"name": "lookup", "args": {"topic": "단가"}},
                    {"name": "calculator", "args": {"expression": "24/0"}}]},
    {"tool_calls": [{"name": "calculator", "args": {"expression": "24*7"}}]},
    {"text": "Seven units cost $168."},
]


def make_model(provider, server, **kwargs):
    if provider == "anthropic":
        return AnthropicModel(base_url=server.url, api_key=SECRET, **kwargs)
    return OpenAIModel(base_url=server.url + "/v1", api_key=SECRET, **kwargs)


@pytest.fixture(params=["anthropic", "openai"])
def provider(request):
    return request.param


def test_parallel_tool_calls_then_an_answer(provider):
    with StandInServer(PARALLEL_THEN_ANSWER) as server:
        agent = Agent(default_tools(), make_model(provider, server))
        answer = agent.run("How much do seven units cost?")
    assert answer == "Seven units cost $168." and agent.stop_reason == "finish" and agent.steps == 3
    assert server.problems == [] and server.remaining == 0
    assert [r["api"] for r in server.requests] == [provider] * 3
    first, second = server.requests[0]["body"], server.requests[1]["body"]
    assert {t.get("name") or t["function"]["name"] for t in first["tools"]} == set(default_tools())
    if provider == "anthropic":
        assert first["system"] == agent.system_prompt and first["max_tokens"] > 0
        results = second["messages"][-1]["content"]
        assert [b["type"] for b in results] == ["tool_result", "tool_result"]   # both results, one message
        assert results[0]["content"] == "개당 $24" and "is_error" not in results[0]
        assert results[1]["is_error"] is True and "division by zero" in results[1]["content"]
    else:
        assert first["messages"][0] == {"role": "system", "content": agent.system_prompt}
        tools = [m for m in second["messages"] if m["role"] == "tool"]
        assert [m["tool_call_id"] for m in tools] == ["call_standin_01_1", "call_standin_01_2"]
        assert tools[0]["content"] == "개당 $24" and "division by zero" in tools[1]["content"]
    assert [len(s.runs) for s in agent.trace] == [2, 1, 0]
    assert len(agent.usage) == 3 and agent.total_usage["input_tokens"] > 0
    # the memory is the array: every request carried the whole history so far
    sizes = [len(r["body"]["messages"]) for r in server.requests]
    assert sizes == sorted(sizes) and sizes[0] < sizes[-1]


def test_the_text_json_protocol_also_works_through_a_real_sdk(provider):
    script = ['{"tool": "lookup", "args": {"topic": "unit price"}}',
              '```json\n{"tool": "finish", "args": {"answer": "$24 each."}}\n```']
    with StandInServer(script) as server:
        agent = Agent(default_tools(), make_model(provider, server, native_tools=False))
        assert agent.run("Unit price?") == "$24 each."
    assert "tools" not in server.requests[0]["body"]
    body = server.requests[0]["body"]
    system = body.get("system") or body["messages"][0]["content"]
    assert '"tool": "finish"' in system   # the system prompt of stage 03, with the JSON protocol
    assert server.problems == []


def test_rate_limit_then_success_is_retried_by_the_sdk(provider):
    with StandInServer([{"status": 429}, {"text": "done"}]) as server:
        agent = Agent(default_tools(), make_model(provider, server, max_retries=2))
        assert agent.run("x") == "done" and agent.stop_reason == "finish"
    assert len(server.requests) == 2


def test_server_errors_after_retries_end_the_run_cleanly(provider):
    with StandInServer([{"status": 500}] * 3) as server:
        agent = Agent(default_tools(), make_model(provider, server, max_retries=1))
        answer = agent.run("x")
    assert agent.stop_reason == "model_error" and "server error (500)" in answer and len(server.requests) == 2


def test_authentication_error_ends_the_run_with_a_readable_answer(provider):
    with StandInServer([{"status": 401, "message": "invalid x-api-key"}]) as server:
        agent = Agent(default_tools(), make_model(provider, server))
        answer = agent.run("x")
    assert agent.stop_reason == "model_error" and "401" in answer and "API_KEY" in answer


@pytest.mark.parametrize("status, words", [(403, "permission denied"), (400, "bad request")])
def test_permission_and_bad_request_errors(provider, status, words):
    with StandInServer([{"status": status, "message": "nope"}]) as server:
        agent = Agent(default_tools(), make_model(provider, server))
        answer = agent.run("x")
    assert agent.stop_reason == "model_error" and words in answer and "nope" in answer


def test_a_retired_model_id_is_a_readable_404(provider):
    with StandInServer([{"status": 404, "message": "model not found"}]) as server:
        model = make_model(provider, server)
        model.model = "retired-model-1"
        agent = Agent(default_tools(), model)
        answer = agent.run("x")
    assert agent.stop_reason == "model_error"
    assert "retired-model-1" in answer and "404" in answer and "_MODEL" in answer


def test_the_standin_rejects_unanswered_tool_calls(provider):
    """The stand-in checks shape like the real API: a tool call without its result is a 400."""
    with StandInServer(["unused"]) as server:
        model = make_model(provider, server)
        history = [{"role": "user", "content": "x"},
                   {"role": "assistant", "content": "", "tool_calls": [{"id": "a", "name": "lookup", "args": {}}]},
                   {"role": "user", "content": "no result given"}]
        with pytest.raises(Exception) as info:
            model.complete(history, default_tools())
    assert "400" in str(info.value) and server.problems


def test_a_request_without_a_key_is_refused_by_the_standin():
    import urllib.error
    import urllib.request
    with StandInServer(["hi"]) as server:
        request = urllib.request.Request(server.url + "/v1/messages", method="POST", data=json.dumps(
            {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}).encode())
        with pytest.raises(urllib.error.HTTPError) as info:
            urllib.request.urlopen(request, timeout=10)
    assert info.value.code == 401


def test_ollama_native_wire_format():
    import urllib.request
    script = [{"tool_calls": [{"name": "lookup", "args": {"topic": "배송"}}]}]
    with StandInServer(script) as server:
        body = {"model": "qwen3:8b", "stream": False, "messages": [{"role": "user", "content": "배송비?"}]}
        request = urllib.request.Request(server.url + "/api/chat", data=json.dumps(body).encode(), method="POST")
        reply = json.load(urllib.request.urlopen(request, timeout=10))
    assert reply["done"] is True and reply["message"]["role"] == "assistant"
    assert reply["message"]["tool_calls"] == [{"function": {"name": "lookup", "arguments": {"topic": "배송"}}}]


def test_ollama_through_the_openai_compatible_endpoint():
    with StandInServer(PARALLEL_THEN_ANSWER) as server:
        model = OpenAIModel.ollama(base_url=server.url + "/v1")
        agent = Agent(default_tools(), model)
        assert agent.run("price?") == "Seven units cost $168."
    assert model.provider == "ollama" and server.requests[0]["body"]["model"] == "qwen3:8b"


def test_no_key_leaks_into_history_transcripts_logs_or_errors(provider, tmp_path, caplog):
    with caplog.at_level(logging.DEBUG):
        with StandInServer(PARALLEL_THEN_ANSWER + [{"status": 401}]) as server:
            model = make_model(provider, server)
            agent = Agent(default_tools(), model)
            agent.run("price?")
            path = agent.save(tmp_path / "run.json")
            failed = Agent(default_tools(), model)
            failed.run("again")
    everything = [json.dumps(agent.history), path.read_text(encoding="utf-8"), failed.answer, repr(model),
                  caplog.text, json.dumps([r["body"] for r in server.requests])]
    assert not [text for text in everything if SECRET in text]


# The live tests (COURSE_LIVE=1 and a key) are `course live-check`'s scenario: tests/test_livecheck.py::test_live.


def post(server, path, body, key="k"):
    import urllib.error
    import urllib.request
    request = urllib.request.Request(server.url + path, data=json.dumps(body).encode(), method="POST",
                                     headers={"Authorization": f"Bearer {key}", "content-type": "application/json"})
    try:
        return 200, json.load(urllib.request.urlopen(request, timeout=10))
    except urllib.error.HTTPError as e:
        return e.code, json.load(e)


@pytest.mark.parametrize("path, messages", [
    ("/v1/messages", [{"role": "user", "content": "x"}, ["oops"]]),
    ("/v1/messages", [{"role": "user", "content": ["not a block"]}]),
    ("/v1/chat/completions", ["oops"]),
])
def test_malformed_messages_get_a_400_not_a_dropped_connection(path, messages):
    with StandInServer(["unused"]) as server:
        status, body = post(server, path, {"model": "m", "max_tokens": 5, "messages": messages})
    assert status == 400 and "malformed" in json.dumps(body)


def test_openai_tool_calls_left_unanswered_at_the_end_are_refused():
    messages = [{"role": "user", "content": "x"},
                {"role": "assistant", "content": None, "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}]}]
    with StandInServer(["unused"]) as server:
        status, body = post(server, "/v1/chat/completions", {"model": "m", "messages": messages})
    assert status == 400 and "c1" in body["error"]["message"]
