"""The stand-in server is strict where the real APIs are strict, and answers the way they answer.

Each test drives the stand-in either with raw HTTP (urllib, to see the exact status, body and headers) or
through the real SDKs (to see the exception class and message a learner would get). The expected error
texts are the real APIs' words as users have reported them (see the comments in course_lib/courseware/standin/).
"""
import json
import re
import socket
import threading
import urllib.error
import urllib.request

import anthropic
import openai
import pytest

from course_lib.courseware.standin import StandInServer

OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))   # straight to 127.0.0.1
SYSTEM = "You answer price questions with the tools."
TOOLS = [{"name": "lookup", "description": "Look up a fact.",
          "input_schema": {"type": "object", "properties": {"topic": {"type": "string"}}, "required": ["topic"]}}]
GOAL = {"role": "user", "content": "What does one unit cost?"}
LOOKUP = {"name": "lookup", "args": {"topic": "단가"}}
BOUND = ("Invalid `signature` in `thinking` block. The block is bound to a different conversation. Remove the "
         "block, or set `thinking.block_binding.prefix_mismatch_behavior` to \"drop_block\". That setting "
         "requires the `thinking-binding-controls-2026-08-01` value in the `anthropic-beta` header.")


def post(server, path, body, key="k"):
    """(status, JSON body, lower-cased headers) of one raw POST."""
    headers = {"content-type": "application/json", **({"authorization": f"Bearer {key}"} if key else {})}
    request = urllib.request.Request(server.url + path, json.dumps(body).encode(), headers, method="POST")
    try:
        with OPENER.open(request, timeout=10) as response:
            return response.status, json.load(response), {k.lower(): v for k, v in response.headers.items()}
    except urllib.error.HTTPError as e:
        return e.code, json.load(e), {k.lower(): v for k, v in e.headers.items()}


def claude(server, retries=0):
    return anthropic.Anthropic(base_url=server.url, api_key="x", max_retries=retries)


def gpt(server, retries=0):
    return openai.OpenAI(base_url=server.url + "/v1", api_key="x", max_retries=retries)


def ask(client, messages, **kwargs):
    kwargs = {"model": "claude-haiku-5-5", "max_tokens": 1024, "system": SYSTEM, "tools": TOOLS, **kwargs}
    return client.messages.create(messages=messages, **kwargs)


def echoed(reply, content=None):
    """The next request's messages: the goal, the reply echoed back (or ``content``), the tool results."""
    blocks = [b.model_dump(exclude_none=True) for b in reply.content] if content is None else content
    results = [{"type": "tool_result", "tool_use_id": b.id, "content": "개당 $24"}
               for b in reply.content if b.type == "tool_use"]
    return [GOAL, {"role": "assistant", "content": blocks}, {"role": "user", "content": results}]


def rejected(client_call, error=anthropic.BadRequestError):
    with pytest.raises(error) as info:
        client_call()
    return info.value


def anthropic_message(exc):
    return exc.body["error"]["message"]


# -- thinking blocks ----------------------------------------------------------------------------------

def test_a_thinking_block_echoed_verbatim_is_accepted():
    with StandInServer([{"thinking": "The price is in the knowledge base.", "tool_calls": [LOOKUP]},
                        {"thinking": "", "text": "One unit costs $24."}]) as server:
        client = claude(server)
        first = ask(client, [GOAL])
        second = ask(client, echoed(first))
    assert [b.type for b in first.content] == ["thinking", "tool_use"] and first.stop_reason == "tool_use"
    assert first.content[0].thinking == "The price is in the knowledge base." and first.content[0].signature
    assert [b.type for b in second.content] == ["thinking", "text"]
    assert second.content[0].thinking == "" and second.content[0].signature   # text omitted, signature kept
    assert server.problems == [] and server.remaining == 0


def test_signatures_are_deterministic():
    signatures = []
    for _ in range(2):
        with StandInServer([{"thinking": "same", "redacted_thinking": True, "tool_calls": [LOOKUP]}]) as server:
            reply = ask(claude(server), [GOAL])
        signatures.append((reply.content[0].signature, reply.content[1].data))
    assert signatures[0] == signatures[1] and signatures[0][0] != signatures[0][1]


def test_dropping_the_thinking_block_is_refused():
    with StandInServer([{"thinking": "", "tool_calls": [LOOKUP]}, "unused"]) as server:
        client = claude(server)
        first = ask(client, [GOAL])
        without = [b.model_dump(exclude_none=True) for b in first.content if b.type != "thinking"]
        exc = rejected(lambda: ask(client, echoed(first, without)))
    assert exc.status_code == 400 and exc.request_id == "req_standin_02"
    assert anthropic_message(exc) == (
        "messages.1.content.0.type: Expected `thinking` or `redacted_thinking`, but found `tool_use`. When "
        "`thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the "
        "lastmost set of `tool_use` and `tool_result` blocks). We recommend you include thinking blocks from "
        "previous turns. To avoid this requirement, disable `thinking`. Please consult our documentation at "
        "https://docs.claude.com/en/docs/build-with-claude/extended-thinking")
    assert "Expected `thinking`" in str(exc) and server.problems == [anthropic_message(exc)]
    assert server.remaining == 1   # a refused request uses up no turn


@pytest.mark.parametrize("field, value", [("thinking", "I changed my mind."), ("signature", "Zm9yZ2Vk")])
def test_an_altered_thinking_block_is_refused(field, value):
    with StandInServer([{"thinking": "Look it up.", "tool_calls": [LOOKUP]}, "unused"]) as server:
        client = claude(server)
        first = ask(client, [GOAL])
        blocks = [b.model_dump(exclude_none=True) for b in first.content]
        blocks[0][field] = value
        exc = rejected(lambda: ask(client, echoed(first, blocks)))
    assert anthropic_message(exc) == "messages.1.content.0: Invalid `signature` in `thinking` block"


def test_an_altered_redacted_block_is_refused():
    with StandInServer([{"redacted_thinking": True, "tool_calls": [LOOKUP]}, "unused"]) as server:
        client = claude(server)
        first = ask(client, [GOAL])
        blocks = [b.model_dump(exclude_none=True) for b in first.content]
        blocks[0]["data"] = blocks[0]["data"][::-1]
        exc = rejected(lambda: ask(client, echoed(first, blocks)))
    assert anthropic_message(exc) == "messages.1.content.0: Invalid `signature` in `thinking` block"


def test_a_thinking_block_the_standin_never_issued_is_refused():
    with StandInServer([{"tool_calls": [LOOKUP]}, "unused"]) as server:
        client = claude(server)
        first = ask(client, [GOAL])
        forged = [{"type": "thinking", "thinking": "hm", "signature": "c2lnbmF0dXJl"}]
        exc = rejected(lambda: ask(client, echoed(first, forged + [b.model_dump() for b in first.content])))
    assert anthropic_message(exc) == "messages.1.content.0: Invalid `signature` in `thinking` block"


def test_reordered_thinking_blocks_are_refused():
    with StandInServer([{"thinking": "a", "redacted_thinking": True, "tool_calls": [LOOKUP]}, "unused"]) as server:
        client = claude(server)
        first = ask(client, [GOAL])
        blocks = [b.model_dump(exclude_none=True) for b in first.content]
        exc = rejected(lambda: ask(client, echoed(first, [blocks[1], blocks[0], blocks[2]])))
    assert anthropic_message(exc) == (f"messages.1.content.0: {BOUND} A thinking block before this one was left "
                                      "out or moved.")


def test_redacted_thinking_round_trip():
    with StandInServer([{"redacted_thinking": True, "thinking": "", "tool_calls": [LOOKUP]}, "$24."]) as server:
        client = claude(server)
        first = ask(client, [GOAL])
        second = ask(client, echoed(first))
    assert [b.type for b in first.content] == ["thinking", "redacted_thinking", "tool_use"]
    assert first.content[1].data and second.content[0].text == "$24." and server.problems == []


@pytest.mark.parametrize("change, what", [
    ({"system": "You are a different assistant."}, "The `system` prompt differs from the one this block was "
                                                   "created with."),
    ({"tools": TOOLS + [{"name": "calculator", "input_schema": {"type": "object"}}]},
     "The `tools` differ from the ones this block was created with."),
])
def test_a_changed_prefix_binds_the_block_to_a_different_conversation(change, what):
    with StandInServer([{"thinking": "", "tool_calls": [LOOKUP]}, "unused"]) as server:
        client = claude(server)
        first = ask(client, [GOAL])
        exc = rejected(lambda: ask(client, echoed(first), **change))
    assert anthropic_message(exc) == f"messages.1.content.0: {BOUND} {what}"
    assert "bound to a different conversation" in str(exc)


def test_an_edited_earlier_message_binds_the_block_to_a_different_conversation():
    with StandInServer([{"thinking": "", "tool_calls": [LOOKUP]}, "unused"]) as server:
        client = claude(server)
        first = ask(client, [GOAL])
        messages = echoed(first)
        messages[0] = {"role": "user", "content": "What do two units cost?"}
        exc = rejected(lambda: ask(client, messages))
    assert anthropic_message(exc) == (f"messages.1.content.0: {BOUND} `messages.0` differs from the one this "
                                      "block was created with.")


def test_stripping_an_earlier_turns_thinking_is_caught_by_the_later_block():
    script = [{"thinking": "one", "tool_calls": [LOOKUP]}, {"thinking": "two", "tool_calls": [LOOKUP]}, "unused"]
    with StandInServer(script) as server:
        client = claude(server)
        first = ask(client, [GOAL])
        history = echoed(first)
        second = ask(client, history)
        stripped = [dict(history[1], content=[b for b in history[1]["content"] if b["type"] != "thinking"])]
        third = history[:1] + stripped + history[2:] + echoed(second)[1:]
        exc = rejected(lambda: ask(client, third))
    assert anthropic_message(exc) == (f"messages.3.content.0: {BOUND} `messages.1` differs from the one this "
                                      "block was created with.")


def test_moved_cache_control_markers_do_not_break_the_binding():
    """The real prefix check leaves cache_control out, so moving the cache breakpoint is not an edit."""
    goal = {"role": "user", "content": [{"type": "text", "text": GOAL["content"]}]}
    with StandInServer([{"thinking": "", "tool_calls": [LOOKUP]}, "ok"]) as server:
        client = claude(server)
        first = ask(client, [goal])
        messages = [goal] + echoed(first)[1:]
        messages[0] = {"role": "user", "content": [dict(goal["content"][0], cache_control={"type": "ephemeral"})]}
        messages[2]["content"][0]["cache_control"] = {"type": "ephemeral"}
        assert ask(client, messages).content[0].text == "ok"
    assert server.problems == []


def test_drop_block_turns_the_prefix_error_off_but_only_with_its_beta_header():
    binding = {"type": "adaptive", "block_binding": {"prefix_mismatch_behavior": "drop_block"}}
    with StandInServer([{"thinking": "", "tool_calls": [LOOKUP]}, "ok"]) as server:
        client = claude(server)
        first = ask(client, [GOAL])
        with pytest.raises(anthropic.BadRequestError, match="block_binding: Extra inputs are not permitted"):
            ask(client, echoed(first), system="A changed system prompt.", extra_body={"thinking": binding})
        reply = ask(client, echoed(first), system="A changed system prompt.", extra_body={"thinking": binding},
                    extra_headers={"anthropic-beta": "thinking-binding-controls-2026-08-01"})
    assert reply.content[0].text == "ok" and server.problems == [
        "thinking.adaptive.block_binding: Extra inputs are not permitted (this field needs `anthropic-beta: "
        "thinking-binding-controls-2026-08-01`)"]   # the real API knows the field only with its beta header


def test_unknown_blocks_the_standin_issued_are_accepted_back_verbatim():
    block = {"type": "future_block_20270101", "payload": {"opaque": [1, 2, 3]}}
    with StandInServer([{"thinking": "", "blocks": [block], "tool_calls": [LOOKUP]}, "done"]) as server:
        request = {"model": "m", "max_tokens": 64, "system": SYSTEM, "tools": TOOLS, "messages": [GOAL]}
        status, first, _ = post(server, "/v1/messages", request)
        assert status == 200 and first["content"][1] == block
        results = [{"type": "tool_result", "tool_use_id": first["content"][2]["id"], "content": "개당 $24"}]
        messages = [GOAL, {"role": "assistant", "content": first["content"]}, {"role": "user", "content": results}]
        status, second, _ = post(server, "/v1/messages", dict(request, messages=messages))
    assert status == 200 and second["content"] == [{"type": "text", "text": "done"}] and server.problems == []


# -- stop reasons ---------------------------------------------------------------------------------------

ANTHROPIC_STOPS = ["refusal", "max_tokens", "model_context_window_exceeded", "pause_turn", "end_turn", "tool_use"]
OPENAI_FINISHES = ["length", "content_filter", "stop", "tool_calls"]


def test_anthropic_stop_reasons_are_sent_verbatim():
    with StandInServer([{"text": "partial", "stop_reason": s} for s in ANTHROPIC_STOPS]) as server:
        client = claude(server)
        seen = [ask(client, [GOAL]).stop_reason for _ in ANTHROPIC_STOPS]
    assert seen == ANTHROPIC_STOPS


SEARCHING = {"type": "server_tool_use", "id": "srvtoolu_01", "name": "web_search", "input": {"query": "unit price"}}


def test_a_paused_turn_goes_back_whole_and_its_continuation_is_one_reply():
    """pause_turn (platform.claude.com/docs/en/build-with-claude/handling-stop-reasons): "send the assistant content
    back to continue". The adapter does, and the stand-in takes that one assistant message last, and no other."""
    from course_lib.agent import Agent
    from course_lib.models.anthropic import AnthropicModel
    script = [{"blocks": [SEARCHING], "text": "Searching. ", "stop_reason": "pause_turn",
               "usage": {"input_tokens": 10, "output_tokens": 3}},
              {"text": "Still searching. ", "stop_reason": "pause_turn", "usage": {"input_tokens": 20, "output_tokens": 4}},
              {"text": "One unit costs $24.", "usage": {"input_tokens": 30, "output_tokens": 5}}]
    with StandInServer(script) as server:
        model = AnthropicModel("claude-haiku-5-5", base_url=server.url, api_key="sk-standin", max_retries=0)
        agent = Agent({}, model)
        answer = agent.run("What does one unit cost?")
        sent = [r["body"]["messages"] for r in server.requests]
    assert server.problems == [] and answer == "Searching. Still searching. One unit costs $24."
    assert agent.stop_reason == "finish" and agent.trace[0].usage == {"input_tokens": 60, "output_tokens": 12}
    assert [m["role"] for m in sent[0]] == ["user"]
    assert sent[1][-1] == {"role": "assistant", "content": [SEARCHING, {"type": "text", "text": "Searching. "}]}
    assert sent[2][-1]["content"] == sent[1][-1]["content"] + [{"type": "text", "text": "Still searching. "}]
    assert sent[1][:-1] == sent[2][:-1] == sent[0]   # the same conversation, the paused turn growing at its end
    kept = agent.history[-1]["raw"]["content"]   # the whole turn, as the API sent it, stays in the history
    assert kept == sent[2][-1]["content"] + [{"type": "text", "text": "One unit costs $24."}]


def test_a_turn_still_paused_after_three_continuations_fails_the_call_and_is_never_an_answer():
    from course_lib.agent import Agent
    from course_lib.models.anthropic import PAUSES, AnthropicModel
    with StandInServer([{"text": f"part {n}", "stop_reason": "pause_turn"} for n in range(PAUSES + 1)]) as server:
        agent = Agent({}, AnthropicModel("claude-haiku-5-5", base_url=server.url, api_key="sk-standin", max_retries=0))
        answer = agent.run("What does one unit cost?")
    assert len(server.requests) == PAUSES + 1 and server.problems == []
    assert agent.stop_reason == "model_error" and "part" not in answer
    assert f"still paused (pause_turn) after it was sent back {PAUSES} times" in agent.trace[-1].error, agent.trace


def test_only_a_paused_turn_as_it_was_issued_may_end_the_conversation():
    with StandInServer([{"text": "Searching.", "stop_reason": "pause_turn"}, {"text": "done"}]) as server:
        client = claude(server)
        paused = ask(client, [GOAL])
        blocks = [b.model_dump(exclude_none=True) for b in paused.content]
        for content in ([{"type": "text", "text": "Searching!"}], blocks + [{"type": "text", "text": "more"}]):
            with pytest.raises(anthropic.BadRequestError, match="does not support assistant message prefill"):
                ask(client, [GOAL, {"role": "assistant", "content": content}])
        assert ask(client, [GOAL, {"role": "assistant", "content": blocks}]).content[0].text == "done"


def test_openai_finish_reasons_are_sent_verbatim():
    with StandInServer([{"text": "partial", "finish_reason": f} for f in OPENAI_FINISHES]) as server:
        client = gpt(server)
        seen = [client.chat.completions.create(model="m", messages=[GOAL]).choices[0].finish_reason
                for _ in OPENAI_FINISHES]
    assert seen == OPENAI_FINISHES


def test_default_stop_reasons_are_unchanged():
    script = [{"tool_calls": [LOOKUP]}, "plain"]
    with StandInServer(script * 3) as server:
        client = claude(server)
        assert [ask(client, [GOAL]).stop_reason for _ in script] == ["tool_use", "end_turn"]
        finishes = [gpt(server).chat.completions.create(model="m", messages=[GOAL]).choices[0].finish_reason
                    for _ in script]
        assert finishes == ["tool_calls", "stop"]
        body = {"model": "qwen3:8b", "stream": False, "messages": [GOAL]}
        assert [post(server, "/api/chat", body)[1]["done_reason"] for _ in script] == ["stop", "stop"]


def test_openai_refusal():
    with StandInServer([{"refusal": "I can't help with that."}]) as server:
        reply = gpt(server).chat.completions.create(model="m", messages=[GOAL])
    message = reply.choices[0].message
    assert message.refusal == "I can't help with that." and message.content is None
    assert reply.choices[0].finish_reason == "stop"


def test_anthropic_refusal():
    with StandInServer([{"refusal": "This request was declined."}]) as server:
        reply = ask(claude(server), [GOAL])
    assert reply.stop_reason == "refusal" and reply.content == []
    assert reply.stop_details.type == "refusal" and reply.stop_details.explanation == "This request was declined."


def test_a_refusal_without_text():
    with StandInServer([{"refusal": True, "text": ""}] * 3) as server:
        anthropic_reply = ask(claude(server), [GOAL])
        openai_reply = gpt(server).chat.completions.create(model="m", messages=[GOAL])
        _, ollama_reply, _ = post(server, "/api/chat", {"model": "q", "stream": False, "messages": [GOAL]})
    assert anthropic_reply.content == [] and anthropic_reply.stop_reason == "refusal"
    assert anthropic_reply.stop_details.explanation is None and anthropic_reply.stop_details.category is None
    assert openai_reply.choices[0].message.refusal == "I'm sorry, but I can't help with that."
    assert ollama_reply["message"]["content"] == ""


def test_a_cut_off_tool_call_in_each_format():
    cut = {"tool_calls": [{"name": "lookup", "args": '{"topic": "단'}]}
    with StandInServer([cut] * 3) as server:
        openai_reply = gpt(server).chat.completions.create(model="m", messages=[GOAL])
        anthropic_reply = ask(claude(server), [GOAL])
        status, ollama_reply, _ = post(server, "/api/chat", {"model": "q", "stream": False, "messages": [GOAL]})
    choice = openai_reply.choices[0]
    assert choice.finish_reason == "length" and choice.message.tool_calls[0].function.arguments == '{"topic": "단'
    assert anthropic_reply.stop_reason == "max_tokens"
    assert anthropic_reply.content[-1].type == "tool_use" and anthropic_reply.content[-1].input == {}
    assert ollama_reply["done_reason"] == "length"
    assert ollama_reply["message"]["tool_calls"] == [{"function": {"name": "lookup", "arguments": {}}}]


def test_a_scripted_finish_reason_wins_over_the_cut_off_default():
    turn = {"tool_calls": [{"name": "lookup", "args": '{"topic": '}], "finish_reason": "tool_calls",
            "done_reason": "stop"}
    with StandInServer([turn, turn]) as server:
        reply = gpt(server).chat.completions.create(model="m", messages=[GOAL])
        _, ollama_reply, _ = post(server, "/api/chat", {"model": "q", "stream": False, "messages": [GOAL]})
    assert reply.choices[0].finish_reason == "tool_calls" and ollama_reply["done_reason"] == "stop"


# -- provider-shaped errors --------------------------------------------------------------------------------

def test_anthropic_error_shape_and_headers():
    said = "Number of request tokens has exceeded your per-minute rate limit."
    with StandInServer([{"status": 429, "message": said}]) as server:
        status, body, headers = post(server, "/v1/messages", {"model": "m", "max_tokens": 5, "messages": [GOAL]})
    assert status == 429 and body == {"type": "error", "error": {"type": "rate_limit_error", "message": said},
                                      "request_id": "req_standin_01"}
    assert headers["request-id"] == "req_standin_01" and headers["retry-after-ms"] == "10"


@pytest.mark.parametrize("status, kind", [
    (400, "invalid_request_error"), (401, "authentication_error"), (402, "billing_error"),
    (403, "permission_error"), (404, "not_found_error"), (409, "invalid_request_error"),
    (413, "request_too_large"), (429, "rate_limit_error"), (500, "api_error"), (503, "api_error"),
    (504, "timeout_error"), (529, "overloaded_error")])
def test_anthropic_default_error_types(status, kind):
    with StandInServer([{"status": status}]) as server:
        got, body, _ = post(server, "/v1/messages", {"model": "m", "max_tokens": 5, "messages": [GOAL]})
    assert got == status and body["error"] == {"type": kind, "message": f"scripted error {status}"}


def test_anthropic_sdk_errors_carry_class_message_and_request_id():
    with StandInServer([{"status": 529, "message": "Overloaded"}, {"status": 402, "message": "credit balance"}]) as s:
        overloaded = rejected(lambda: ask(claude(s), [GOAL]), anthropic.APIStatusError)
        billing = rejected(lambda: ask(claude(s), [GOAL]), anthropic.APIStatusError)
    assert isinstance(overloaded, anthropic.InternalServerError) and overloaded.status_code == 529
    assert overloaded.body["error"]["type"] == "overloaded_error" and "Overloaded" in str(overloaded)
    assert overloaded.request_id == "req_standin_01" and billing.body["error"]["type"] == "billing_error"


def test_openai_error_shape_insufficient_quota_is_not_a_rate_limit():
    message = ("You exceeded your current quota, please check your plan and billing details. For more information "
               "on this error, read the docs: https://platform.openai.com/docs/guides/error-codes/api-errors.")
    turn = {"status": 429, "message": message, "type": "insufficient_quota", "code": "insufficient_quota"}
    with StandInServer([turn, turn]) as server:
        status, body, headers = post(server, "/v1/chat/completions", {"model": "m", "messages": [GOAL]})
        exc = rejected(lambda: gpt(server).chat.completions.create(model="m", messages=[GOAL]),
                       openai.RateLimitError)
    assert status == 429 and headers["x-request-id"] == "req_standin_01"
    assert body == {"error": {"message": message, "type": "insufficient_quota", "param": None,
                              "code": "insufficient_quota"}}
    assert exc.code == "insufficient_quota" and exc.type == "insufficient_quota" and message in str(exc)
    assert exc.request_id == "req_standin_02"


@pytest.mark.parametrize("turn, kind, code", [
    ({"status": 429}, "requests", "rate_limit_exceeded"),
    ({"status": 401}, "invalid_request_error", "invalid_api_key"),
    ({"status": 500}, "server_error", None),
    ({"status": 404, "message": "The model `gpt-0` does not exist or you do not have access to it.",
      "code": "model_not_found"}, "invalid_request_error", "model_not_found"),
    ({"status": 400, "code": "context_length_exceeded", "param": "messages"}, "invalid_request_error",
     "context_length_exceeded"),
])
def test_openai_default_and_scripted_error_types(turn, kind, code):
    with StandInServer([turn]) as server:
        status, body, _ = post(server, "/v1/chat/completions", {"model": "m", "messages": [GOAL]})
    assert status == turn["status"] and body["error"]["type"] == kind and body["error"]["code"] == code
    assert body["error"]["param"] == turn.get("param")


def test_openai_sdk_not_found_error_carries_the_code():
    turn = {"status": 404, "message": "The model `gpt-0` does not exist or you do not have access to it.",
            "code": "model_not_found"}
    with StandInServer([turn]) as server:
        exc = rejected(lambda: gpt(server).chat.completions.create(model="gpt-0", messages=[GOAL]),
                       openai.NotFoundError)
    assert exc.code == "model_not_found" and "does not exist" in str(exc) and exc.request_id == "req_standin_01"


def test_ollama_errors_are_plain_strings():
    turn = {"status": 404, "message": 'model "qwen3:8b" not found, try pulling it first'}
    with StandInServer([turn]) as server:
        status, body, headers = post(server, "/api/chat", {"model": "qwen3:8b", "stream": False, "messages": [GOAL]})
    assert status == 404 and body == {"error": 'model "qwen3:8b" not found, try pulling it first'}
    assert "request-id" not in headers and "x-request-id" not in headers


def test_retry_after_is_sent_in_seconds_as_scripted():
    with StandInServer([{"status": 429, "retry_after": 2}]) as server:
        status, _, headers = post(server, "/v1/messages", {"model": "m", "max_tokens": 5, "messages": [GOAL]})
    assert status == 429 and headers["retry-after"] == "2" and "retry-after-ms" not in headers


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_the_sdk_retries_a_429_with_a_short_retry_after(provider):
    with StandInServer([{"status": 429, "retry_after": 0.01}, "done"]) as server:
        if provider == "anthropic":
            text = ask(claude(server, retries=1), [GOAL]).content[0].text
        else:
            text = gpt(server, retries=1).chat.completions.create(model="m", messages=[GOAL]).choices[0].message.content
    assert text == "done" and len(server.requests) == 2


def test_successful_responses_carry_a_request_id_too():
    with StandInServer(["a", "b"]) as server:
        assert ask(claude(server), [GOAL])._request_id == "req_standin_01"
        assert gpt(server).chat.completions.create(model="m", messages=[GOAL])._request_id == "req_standin_02"


# -- request rules ----------------------------------------------------------------------------------------

def anthropic_400(messages, **extra):
    """The message a request with ``messages`` gets, and the problems it left."""
    with StandInServer(["unused"]) as server:
        status, body, _ = post(server, "/v1/messages", {"model": "m", "max_tokens": 5, "messages": messages, **extra})
    assert status == 400 and body["type"] == "error" and body["error"]["type"] == "invalid_request_error"
    assert server.remaining == 1 and len(server.problems) == 1
    return body["error"]["message"], server.problems[0]


USE = {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_a", "name": "lookup", "input": {}}]}
RESULT = {"type": "tool_result", "tool_use_id": "toolu_a", "content": "개당 $24"}


@pytest.mark.parametrize("content", ["", []])
def test_empty_content_is_refused(content):
    message, _ = anthropic_400([{"role": "user", "content": content}])
    assert message == "messages.0: all messages must have non-empty content except for the optional final " \
                      "assistant message"


def test_an_empty_text_block_is_refused():
    message, _ = anthropic_400([{"role": "user", "content": [{"type": "text", "text": ""}]}])
    assert message == "messages: text content blocks must be non-empty"


def test_assistant_prefill_is_refused():
    message, _ = anthropic_400([GOAL, {"role": "assistant", "content": "The answer is"}])
    assert message == "This model does not support assistant message prefill. The conversation must end with a " \
                      "user message."


def test_text_before_the_tool_results_is_refused():
    message, _ = anthropic_400([GOAL, USE, {"role": "user", "content": [{"type": "text", "text": "here"}, RESULT]}])
    assert message == ("messages.2: Did not find 1 `tool_result` block(s) at the beginning of this message. "
                       "Messages following `tool_use` blocks must begin with a matching number of `tool_result` "
                       "blocks.")


def test_a_missing_tool_result_gets_the_real_message_and_the_old_problem_text():
    two = {"role": "assistant", "content": USE["content"] + [dict(USE["content"][0], id="toolu_b")]}
    message, problem = anthropic_400([GOAL, two, {"role": "user", "content": [RESULT]}])
    assert message == ("messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: "
                       "toolu_b. Each `tool_use` block must have a corresponding `tool_result` block in the next "
                       "message.")
    assert problem == ("messages[2]: the tool_use ids ['toolu_a', 'toolu_b'] need exactly one tool_result each in "
                       "the next user message, got ['toolu_a']")


def test_an_unexpected_tool_result_is_refused():
    message, _ = anthropic_400([GOAL, USE, {"role": "user", "content": [RESULT, dict(RESULT, tool_use_id="x")]}])
    assert message == ("messages.2.content.1: unexpected `tool_use_id` found in `tool_result` blocks: x. Each "
                       "`tool_result` block must have a corresponding `tool_use` block in the previous message.")


@pytest.mark.parametrize("name", ["get weather", "", "a" * 129, "lookup.v2"])
def test_anthropic_tool_names_must_match_the_pattern(name):
    message, _ = anthropic_400([GOAL], tools=[dict(TOOLS[0], name=name)])
    assert message == "tools.0.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'"


def test_a_128_character_tool_name_is_fine():
    with StandInServer(["ok"]) as server:
        reply = ask(claude(server), [GOAL], tools=[dict(TOOLS[0], name="a" * 128)])
    assert reply.content[0].text == "ok"


@pytest.mark.parametrize("schema, said", [({"type": "array", "items": {}}, "Input should be 'object'"),
                                          ({"properties": {}}, "Field required")])
def test_anthropic_input_schema_must_be_an_object(schema, said):
    message, _ = anthropic_400([GOAL], tools=[dict(TOOLS[0], input_schema=schema)])
    assert message == f"tools.0.custom.input_schema.type: {said}"


def test_anthropic_rules_through_the_sdk():
    with StandInServer(["unused"]) as server:
        exc = rejected(lambda: ask(claude(server), [GOAL, {"role": "assistant", "content": "Sure:"}]))
    assert exc.status_code == 400 and "does not support assistant message prefill" in str(exc)


def openai_400(body, path="/v1/chat/completions"):
    with StandInServer(["unused"]) as server:
        status, answer, _ = post(server, path, {"model": "m", "messages": [GOAL], **body})
    assert status == 400 and len(server.problems) == 1 and server.remaining == 1
    return answer["error"]


def test_openai_function_names_must_match_the_pattern():
    error = openai_400({"tools": [{"type": "function", "function": {"name": "get weather", "parameters": {}}}]})
    assert error == {"message": "Invalid 'tools[0].function.name': string does not match pattern. Expected a string "
                                "that matches the pattern '^[a-zA-Z0-9_-]+$'.", "type": "invalid_request_error",
                     "param": "tools[0].function.name", "code": "invalid_value"}


def test_openai_function_names_are_at_most_64_characters_and_anthropic_s_128():
    long = {"type": "function", "function": {"name": "x" * 65, "parameters": {}}}
    assert openai_400({"tools": [long]}) == {
        "message": "Invalid 'tools[0].function.name': string too long. Expected a string with maximum length 64, but "
                   "got a string with length 65 instead.", "type": "invalid_request_error",
        "param": "tools[0].function.name", "code": "string_above_max_length"}
    with StandInServer(["ok"]) as server:   # 64 is fine
        tool = {"type": "function", "function": {"name": "x" * 64, "parameters": {"type": "object"}}}
        assert gpt(server).chat.completions.create(model="m", messages=[GOAL], tools=[tool]).choices[0].message.content


def test_openai_array_parameters_need_items():
    tool = {"type": "function", "function": {"name": "tag", "parameters": {
        "type": "object", "properties": {"tags": {"type": "array", "description": "labels"}}}}}
    error = openai_400({"tools": [tool]})
    assert error == {"message": "Invalid schema for function 'tag': In context=('properties', 'tags'), array schema "
                                "missing items.", "type": "invalid_request_error",
                     "param": "tools[0].function.parameters", "code": "invalid_function_parameters"}
    with StandInServer(["unused"]) as server:
        exc = rejected(lambda: gpt(server).chat.completions.create(model="m", messages=[GOAL], tools=[tool]),
                       openai.BadRequestError)
    assert exc.code == "invalid_function_parameters" and "array schema missing items" in str(exc)


def test_openai_nested_arrays_need_items_too():
    nested = {"type": "object", "properties": {"rows": {"type": "array", "items": {
        "type": "object", "properties": {"cells": {"type": ["array", "null"]}}}}}}
    error = openai_400({"tools": [{"type": "function", "function": {"name": "t", "parameters": nested}}]})
    assert "In context=('properties', 'rows', 'items', 'properties', 'cells')" in error["message"]


def test_openai_unanswered_tool_calls_and_orphan_tool_messages():
    call = {"role": "assistant", "content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}]}
    error = openai_400({"messages": [GOAL, call, {"role": "user", "content": "and?"}]})
    assert error["message"] == ("An assistant message with 'tool_calls' must be followed by tool messages responding "
                                "to each 'tool_call_id'. The following tool_call_ids did not have response "
                                "messages: c1")
    error = openai_400({"messages": [GOAL, {"role": "tool", "tool_call_id": "c9", "content": "x"}]})
    assert error["message"] == ("Invalid parameter: messages with role 'tool' must be a response to a preceeding "
                                "message with 'tool_calls'.") and error["param"] == "messages.[1].role"


def test_chat_completions_without_v1_is_a_404_like_the_real_host():
    with StandInServer(["unused"]) as server:
        status, body, _ = post(server, "/chat/completions", {"model": "m", "messages": [GOAL]})
        client = openai.OpenAI(base_url=server.url, api_key="x", max_retries=0)   # the /v1 forgotten
        exc = rejected(lambda: client.chat.completions.create(model="m", messages=[GOAL]), openai.NotFoundError)
    assert status == 404 and body == {"error": {"message": "Invalid URL (POST /chat/completions)",
                                                "type": "invalid_request_error", "param": None, "code": None}}
    assert "Invalid URL (POST /chat/completions)" in str(exc) and server.requests == []


def test_ollama_tool_call_arguments_must_be_objects():
    call = {"role": "assistant", "content": "", "tool_calls": [
        {"function": {"name": "lookup", "arguments": '{"topic": "단가"}'}}]}
    body = {"model": "qwen3:8b", "stream": False, "messages": [GOAL, call, {"role": "tool", "content": "개당 $24"}]}
    with StandInServer(["unused"]) as server:
        status, answer, _ = post(server, "/api/chat", body)
    assert status == 400 and answer == {"error": "json: cannot unmarshal string into Go struct field ChatRequest."
                                                 "messages.tool_calls.function.arguments of type "
                                                 "api.ToolCallFunctionArguments"}


# -- concurrency and bookkeeping ----------------------------------------------------------------------------

def test_twenty_concurrent_clients_are_all_answered():
    start, results = threading.Barrier(20, timeout=30), [None] * 20

    def one(k):
        start.wait()
        try:
            results[k] = post(server, "/v1/messages", {"model": "m", "max_tokens": 5, "messages": [GOAL]})
        except OSError as e:   # the old listen backlog of 5 reset some connections
            results[k] = e

    with StandInServer([f"answer {k}" for k in range(20)]) as server:
        threads = [threading.Thread(target=one, args=(k,)) for k in range(20)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=60)
    assert [r if isinstance(r, Exception) else r[0] for r in results] == [200] * 20 and server.remaining == 0
    assert sorted(r[1]["content"][0]["text"] for r in results) == sorted(f"answer {k}" for k in range(20))
    assert len({r[1]["id"] for r in results}) == 20


def test_problems_records_every_rule_broken():
    with StandInServer(["ok"]) as server:
        post(server, "/v1/messages", {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": ""}]})
        post(server, "/v1/messages", {"model": "m", "max_tokens": 5, "messages": [GOAL]}, key=None)
        post(server, "/v1/chat/completions", {"model": "m", "messages": [GOAL], "tool_choice": "required"})
        post(server, "/api/chat", {"model": "m", "stream": False, "messages": [GOAL, {"role": "assistant", "content": "",
             "tool_calls": [{"function": {"name": "lookup", "arguments": "{}"}}]}]})
        status, body, _ = post(server, "/v1/messages", {"model": "m", "max_tokens": 5, "messages": [GOAL]})
    assert len(server.problems) == 4 and status == 200 and body["content"][0]["text"] == "ok"
    assert "no API key was sent" in server.problems[1]


# -- learners write scripts: their mistakes are named, not blamed on the network -----------------------------
@pytest.mark.parametrize("turn, words", [({"txt": "hello"}, "unknown key(s) 'txt'"),
                                         ({"tool_calls": [{"name": "lookup", "arguments": {}}]}, "each tool call"),
                                         (42, "must be text or a dict"),
                                         ({"status": 429, "text": "x"}, "unknown key(s) 'text'")])
def test_a_misspelt_turn_is_refused_when_the_script_is_given(turn, words):
    with pytest.raises(ValueError, match=re.escape(words)):
        StandInServer(["fine", turn])


def test_a_script_that_runs_out_says_so_and_is_not_retried():
    from course_lib import default_tools
    from course_lib.agent import Agent
    from course_lib.models.anthropic import AnthropicModel
    with StandInServer([{"tool_calls": [{"name": "lookup", "args": {"topic": "단가"}}]}]) as server:
        agent = Agent(default_tools(), AnthropicModel(base_url=server.url, api_key="k"))   # 2 retries allowed
        agent.run("price?")
    assert len(server.requests) == 2   # no retries: the SDK was told not to (x-should-retry: false)
    assert agent.stop_reason == "model_error" and "script ran out: it had 1 turn(s) and request 2" in agent.answer


def test_half_an_emoji_in_a_scripted_turn_arrives_as_the_escape_models_send():
    from course_lib import default_tools
    from course_lib.agent import Agent
    from course_lib.models.openai import OpenAIModel
    with StandInServer(["price \ud83d"]) as server:
        agent = Agent(default_tools(), OpenAIModel(base_url=server.url + "/v1", api_key="k", max_retries=0))
        agent.run("price?")
    assert agent.stop_reason == "finish" and agent.answer == "price \ufffd"


# -- hostile requests: always an answer in the API's shape, never a hang, a dropped connection or a traceback --
PATHS = {"anthropic": "/v1/messages", "openai": "/v1/chat/completions", "ollama": "/api/chat"}
VALID = {"anthropic": {"model": "m", "max_tokens": 5, "messages": [GOAL]}, "openai": {"model": "m", "messages": [GOAL]},
         "ollama": {"model": "m", "stream": False, "messages": [GOAL]}}


def raw(server, path, body=b"", *, length="auto", headers=()):
    """(status, JSON body) of one POST written byte for byte on a socket, so every header is the test's own."""
    lines = [f"POST {path} HTTP/1.1", "Host: 127.0.0.1", "Authorization: Bearer k", *headers]
    lines += [] if length is None else [f"Content-Length: {len(body) if length == 'auto' else length}"]
    port = int(server.url.rsplit(":", 1)[1])
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:   # a hang guard, not a time budget
        sock.sendall("\r\n".join(lines).encode() + b"\r\n\r\n" + body)
        reply = b"".join(iter(lambda: sock.recv(65536), b""))
    assert reply, "the stand-in dropped the connection without an answer"
    head, _, payload = reply.partition(b"\r\n\r\n")
    return int(head.split()[1]), json.loads(payload)


def words(api, body, kind="invalid_request_error"):
    """The message of an error body, after checking it has the API's shape (``kind``: Anthropic's, OpenAI's)."""
    kinds = (kind, kind) if isinstance(kind, str) else kind
    if api == "anthropic":
        assert set(body) <= {"type", "error", "request_id"} and body["type"] == "error"
        assert set(body["error"]) == {"type", "message"} and body["error"]["type"] == kinds[0]
        return body["error"]["message"]
    if api == "openai":
        assert set(body) == {"error"} and set(body["error"]) == {"message", "type", "param", "code"}
        assert body["error"]["type"] == kinds[1]
        return body["error"]["message"]
    assert set(body) == {"error"} and isinstance(body["error"], str)
    return body["error"]


NOT_JSON = {"anthropic": "The request body is not valid JSON: ", "openai": "We could not parse the JSON body of your "
            "request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects "
            "a JSON payload, but what was sent was not valid JSON.", "ollama": "not valid JSON"}


@pytest.mark.parametrize("api", PATHS)
@pytest.mark.parametrize("body", [b"[" * 100000, b"[" * 100000 + b"]" * 100000, b'{"a": ' * 100000,
                                  json.dumps(dict(VALID["openai"], system=json.loads("[" * 200 + "]" * 200))).encode()])
def test_a_deeply_nested_body_is_a_400(api, body, capfd):
    with StandInServer(["unused"]) as server:
        status, answer = raw(server, PATHS[api], body)
    message = words(api, answer)
    assert status == 400 and NOT_JSON[api] in message and server.remaining == 1
    assert api == "openai" or "nested more than 128 levels deep" in message
    assert capfd.readouterr().err == ""


@pytest.mark.parametrize("lists, status", [(123, 200), (124, 400)])   # under 5 levels: body, messages, ...
def test_json_nested_right_up_to_the_limit_is_answered(lists, status, capfd):
    block = {"type": "text", "text": "hi", "x": json.loads("[" * lists + "]" * lists)}
    messages = [{"role": "user", "content": [block]}]
    with StandInServer(["fine"]) as server:
        got, answer = raw(server, "/v1/messages", json.dumps(dict(VALID["anthropic"], messages=messages)).encode())
    assert got == status and ("fine" if status == 200 else "nested more than 128") in json.dumps(answer)
    assert capfd.readouterr().err == ""


def test_an_openai_tool_schema_nested_hundreds_deep_is_a_400(capfd):
    schema = {"type": "string"}
    for _ in range(600):   # the schema walk recursed once per level and hit Python's limit
        schema = {"type": "array", "items": schema}
    tool = {"type": "function", "function": {"name": "t", "parameters": schema}}
    with StandInServer(["unused"]) as server:
        status, answer = raw(server, PATHS["openai"], json.dumps(dict(VALID["openai"], tools=[tool])).encode())
    assert status == 400 and words("openai", answer).startswith(NOT_JSON["openai"]) and capfd.readouterr().err == ""


@pytest.mark.parametrize("api, length", [("anthropic", "-1"), ("openai", "-1"), ("ollama", "-1"),
                                         ("anthropic", "abc"), ("openai", "1.5"), ("anthropic", "")])
def test_a_content_length_that_is_not_a_byte_count_is_a_400(api, length, capfd):
    with StandInServer(["unused"]) as server:
        status, answer = raw(server, PATHS[api], length=length)   # no body: -1 used to wait for one forever
    assert status == 400 and "Content-Length" in words(api, answer) and server.requests == []
    assert capfd.readouterr().err == ""


@pytest.mark.parametrize("api", PATHS)
def test_a_body_without_a_length_is_a_411(api, capfd):
    with StandInServer(["unused"]) as server:
        status, answer = raw(server, PATHS[api], length=None)
    assert status == 411 and "Content-Length" in words(api, answer) and server.requests == []
    assert capfd.readouterr().err == ""


@pytest.mark.parametrize("api", PATHS)
@pytest.mark.parametrize("length", [32 * 2**20 + 1, 10**12, 10**40])
def test_a_body_over_32_mb_is_a_413_without_reading_it(api, length, capfd):
    with StandInServer(["unused"]) as server:
        status, answer = raw(server, PATHS[api], length=length)   # nothing sent: reading would wait for it
    message = words(api, answer, ("request_too_large", "invalid_request_error"))
    assert status == 413 and "Request exceeds the maximum allowed number of bytes" in message
    assert server.requests == [] and capfd.readouterr().err == ""


def chunked(data: bytes, size: int = 7) -> bytes:
    pieces = [data[k:k + size] for k in range(0, len(data), size)]
    return b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces) + b"0\r\n\r\n"


@pytest.mark.parametrize("api", PATHS)
def test_a_chunked_body_is_read_like_any_other(api, capfd):
    with StandInServer(["chunks arrived"]) as server:
        status, answer = raw(server, PATHS[api], chunked(json.dumps(VALID[api]).encode()), length=None,
                             headers=["Transfer-Encoding: chunked"])
    assert status == 200 and "chunks arrived" in json.dumps(answer) and server.requests[0]["body"] == VALID[api]
    assert capfd.readouterr().err == ""


@pytest.mark.parametrize("body, status, said", [(b"zz\r\n{}\r\n0\r\n\r\n", 400, "chunk"),
                                                (b"-2\r\n{}\r\n0\r\n\r\n", 400, "chunk"),
                                                (b"2\r\n{}", 400, "chunk"),   # the connection ends mid-body
                                                (b"FFFFFFFFFF\r\n", 413, "maximum allowed number of bytes")])
def test_a_broken_or_huge_chunked_body_is_refused(body, status, said, capfd):
    with StandInServer(["unused"]) as server:
        port = int(server.url.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
            sock.sendall(b"POST /v1/messages HTTP/1.1\r\nHost: x\r\nx-api-key: k\r\nTransfer-Encoding: chunked\r\n\r\n"
                         + body)
            sock.shutdown(socket.SHUT_WR)   # the body ends here
            reply = b"".join(iter(lambda: sock.recv(65536), b""))
    head, _, payload = reply.partition(b"\r\n\r\n")
    assert int(head.split()[1]) == status and said in json.loads(payload)["error"]["message"]
    assert server.requests == [] and capfd.readouterr().err == ""


@pytest.mark.parametrize("api", PATHS)
@pytest.mark.parametrize("body", [b'{"model": "\xff", "messages": []}', b'{"model": "\xed\xa0\x80"}',
                                  b"{'model': 'm'}", b'{"model": "m"'])
def test_a_body_that_is_not_utf8_json_is_a_400(api, body, capfd):
    with StandInServer(["unused"]) as server:
        status, answer = raw(server, PATHS[api], body)
    assert status == 400 and NOT_JSON[api] in words(api, answer) and server.requests == []
    assert capfd.readouterr().err == ""


@pytest.mark.parametrize("api", PATHS)
@pytest.mark.parametrize("body", [b"[]", b'"x"', b"null", b"42"])
def test_json_that_is_not_an_object_is_a_400(api, body, capfd):
    with StandInServer(["unused"]) as server:
        status, answer = raw(server, PATHS[api], body)
    assert status == 400 and words(api, answer) == "the request body is not a JSON object"
    assert capfd.readouterr().err == ""


@pytest.mark.parametrize("escaped, said, at", [
    ("\\ud800", "no low surrogate in string", 17), ("\\udc00", "invalid high surrogate in string", 11),
    ("\\ud83d\\u0041", "invalid low surrogate in string", 17), ("\\ud83d", "no low surrogate in string", 17),
    ("\\uDB00", "no low surrogate in string", 17), ("\\udb00", "no low surrogate in string", 17)])
def test_half_an_emoji_in_an_anthropic_request_is_refused_as_the_real_api_does(escaped, said, at, capfd):
    body = '{"model": "' + escaped + '", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}'
    with StandInServer(["unused"]) as server:
        status, answer = raw(server, "/v1/messages", body.encode())
    assert status == 400 and words("anthropic", answer) == (f"The request body is not valid JSON: {said}: line 1 "
                                                            f"column {at + 1} (char {at})")
    assert capfd.readouterr().err == ""


@pytest.mark.parametrize("escaped", ["\\ud83d\\ude00", "\\\\ud800", "\\u00e9"])   # a pair; a backslash; é
def test_escapes_that_are_not_half_an_emoji_are_fine(escaped, capfd):
    body = '{"model": "' + escaped + '", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}'
    with StandInServer(["ok"]) as server:
        status, answer = raw(server, "/v1/messages", body.encode())
    assert status == 200 and answer["model"] == json.loads(f'"{escaped}"') and capfd.readouterr().err == ""


@pytest.mark.parametrize("api", ["openai", "ollama"])
def test_other_apis_take_a_model_name_with_half_an_emoji_like_any_other(api, capfd):
    body = json.dumps(dict(VALID[api], model="m\ud800"))   # ensure_ascii: sent as the escape \\ud800
    with StandInServer(["ok"]) as server:
        status, answer = raw(server, PATHS[api], body.encode())
    assert status == 200 and answer["model"] == "m\ud800" and capfd.readouterr().err == ""


@pytest.mark.parametrize("api", PATHS)
def test_a_stand_in_bug_is_a_500_in_the_apis_shape(api, monkeypatch, capfd):
    from course_lib.courseware.standin import server as standin

    def broken(*_):
        raise KeyError("a bug in the stand-in")
    monkeypatch.setitem(standin._FORMATS, api, broken)
    with StandInServer(["unused"]) as server:
        status, answer = raw(server, PATHS[api], json.dumps(VALID[api]).encode())
    message = words(api, answer, ("api_error", "server_error"))
    assert status == 500 and "stand-in" in message and "KeyError" in message and capfd.readouterr().err == ""


def test_an_unknown_path_is_a_404_whatever_the_body(capfd):
    with StandInServer(["unused"]) as server:
        status, answer = raw(server, "/v1/complete", b"not json")
    assert status == 404 and words("openai", answer) == "Invalid URL (POST /v1/complete)"
    assert capfd.readouterr().err == ""


def test_a_client_that_hangs_up_leaves_no_traceback(capfd):
    with StandInServer([]) as server:
        try:
            raise ConnectionResetError("the client hung up mid-reply")
        except ConnectionResetError:
            server._server.handle_error(None, ("127.0.0.1", 1))
    assert capfd.readouterr().err == ""


# -- exact replies and rules, checked in-process through StandInServer.answer (no HTTP, no thread) -------------
AUTH = {"authorization": "Bearer k"}


def answer(server, api, body, headers=AUTH):
    """(status, body, headers) of one request handed straight to the stand-in, as its HTTP handler does."""
    return server.answer(api, body, headers)


def test_each_api_s_plain_text_reply_exactly():
    """The whole reply of a text turn with scripted usage, in each API's documented shape, fixed to the byte."""
    usage = {"input_tokens": 7, "output_tokens": 3}
    server = StandInServer([{"text": "hi", "usage": usage}] * 3)
    _, anthropic_reply, _ = answer(server, "anthropic", VALID["anthropic"])
    _, openai_reply, _ = answer(server, "openai", VALID["openai"])
    _, ollama_reply, _ = answer(server, "ollama", VALID["ollama"])
    assert anthropic_reply == {"id": "msg_standin_01", "type": "message", "role": "assistant", "model": "m",
                               "content": [{"type": "text", "text": "hi"}], "stop_reason": "end_turn",
                               "stop_sequence": None, "usage": usage}
    assert openai_reply == {"id": "chatcmpl-standin-02", "object": "chat.completion", "created": 0, "model": "m",
                            "choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"},
                                         "finish_reason": "stop"}],
                            "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10,
                                      "prompt_tokens_details": {"cached_tokens": 0}}}
    assert ollama_reply == {"model": "m", "created_at": "1970-01-01T00:00:00Z",
                            "message": {"role": "assistant", "content": "hi"}, "done": True, "done_reason": "stop",
                            "prompt_eval_count": 7, "eval_count": 3}


def test_a_tool_call_without_args_is_sent_as_an_empty_object_in_each_api():
    server = StandInServer([{"tool_calls": [{"name": "lookup"}]}] * 3)
    assert answer(server, "anthropic", VALID["anthropic"])[1]["content"] == [
        {"type": "tool_use", "id": "toolu_standin_01_1", "name": "lookup", "input": {}}]
    assert answer(server, "openai", VALID["openai"])[1]["choices"][0]["message"]["tool_calls"] == [
        {"id": "call_standin_02_1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}]
    assert answer(server, "ollama", VALID["ollama"])[1]["message"]["tool_calls"] == [
        {"function": {"name": "lookup", "arguments": {}}}]


def test_openai_arguments_keep_korean_as_text_not_escapes():
    server = StandInServer([{"tool_calls": [LOOKUP]}])
    call = answer(server, "openai", VALID["openai"])[1]["choices"][0]["message"]["tool_calls"][0]
    assert call["function"]["arguments"] == '{"topic": "단가"}'


def test_ollama_sends_thinking_text_when_the_turn_has_some():
    server = StandInServer([{"thinking": "Look it up first.", "text": "ok"}, {"thinking": "", "text": "ok"}])
    assert answer(server, "ollama", VALID["ollama"])[1]["message"] == {
        "role": "assistant", "content": "ok", "thinking": "Look it up first."}
    assert answer(server, "ollama", VALID["ollama"])[1]["message"] == {"role": "assistant", "content": "ok"}


@pytest.mark.parametrize("think, shown", [(True, True), ("high", True), (None, True), (False, False)])
def test_ollama_leaves_the_thinking_out_when_the_request_says_think_false(think, shown):
    """Lesson 08b: Ollama's `think` option; false switches thinking off, so no `message.thinking` comes back."""
    server = StandInServer([{"thinking": "7 × 24 = 168.", "text": "$168."}])
    body = dict(VALID["ollama"], **({} if think is None else {"think": think}))
    message = answer(server, "ollama", body)[1]["message"]
    assert message["content"] == "$168." and ("thinking" in message) is shown


def test_a_thinking_block_is_checked_against_the_block_issued_for_its_own_conversation():
    """Blocks are remembered by their signature (redacted ones by their data): a block from another
    conversation on the same server does not stand in for the one this conversation was given."""
    for turn in ({"thinking": "", "tool_calls": [LOOKUP]}, {"redacted_thinking": True, "tool_calls": [LOOKUP]}):
        server = StandInServer([turn, turn, "done"])
        request = {"model": "m", "max_tokens": 64, "system": SYSTEM, "tools": TOOLS, "messages": [GOAL]}
        _, first, _ = answer(server, "anthropic", request)
        _, other, _ = answer(server, "anthropic", dict(request, system="Another conversation."))
        assert first["content"][0] != other["content"][0]   # signed for their own request
        results = [{"type": "tool_result", "tool_use_id": first["content"][1]["id"], "content": "개당 $24"}]
        messages = [GOAL, {"role": "assistant", "content": first["content"]}, {"role": "user", "content": results}]
        status, reply, _ = answer(server, "anthropic", dict(request, messages=messages))
        assert (status, reply["content"]) == (200, [{"type": "text", "text": "done"}]), reply
        assert server.problems == []


def test_a_signature_depends_on_the_conversation_it_was_made_for():
    turn = {"thinking": "same", "tool_calls": [LOOKUP]}
    signatures = []
    for system in ("One prompt.", "Another prompt."):
        server = StandInServer([turn])
        body = {"model": "m", "max_tokens": 64, "system": system, "tools": TOOLS, "messages": [GOAL]}
        signatures.append(answer(server, "anthropic", body)[1]["content"][0]["signature"])
    assert signatures[0] != signatures[1]


def test_messages_inserted_before_a_thinking_turn_unbind_it():
    server = StandInServer([{"thinking": "", "tool_calls": [LOOKUP]}, "unused"])
    request = {"model": "m", "max_tokens": 64, "system": SYSTEM, "tools": TOOLS, "messages": [GOAL]}
    _, first, _ = answer(server, "anthropic", request)
    results = [{"type": "tool_result", "tool_use_id": first["content"][1]["id"], "content": "개당 $24"}]
    messages = [GOAL, {"role": "assistant", "content": "Earlier."}, {"role": "user", "content": "And then?"},
                {"role": "assistant", "content": first["content"]}, {"role": "user", "content": results}]
    status, reply, _ = answer(server, "anthropic", dict(request, messages=messages))
    assert status == 400 and reply["error"]["message"] == (
        f"messages.3.content.0: {BOUND} `messages.1` differs from the one this block was created with.")


def test_every_missing_tool_result_is_named():
    two = {"role": "assistant", "content": USE["content"] + [dict(USE["content"][0], id="toolu_b")]}
    message, _ = anthropic_400([GOAL, two, {"role": "user", "content": "no results"}])
    assert "immediately after: toolu_a, toolu_b. Each `tool_use` block" in message


def test_an_orphan_openai_tool_message_is_recorded_in_the_stand_in_s_words():
    server = StandInServer(["unused"])
    messages = [GOAL, {"role": "tool", "tool_call_id": "zz", "content": "x"}]
    status, reply, _ = answer(server, "openai", {"model": "m", "messages": messages})
    assert status == 400 and reply["error"]["param"] == "messages.[1].role"
    assert "must be a response to a preceeding message with 'tool_calls'" in reply["error"]["message"]
    assert server.problems == ["messages[1]: tool message for unknown tool_call_id 'zz'"]


@pytest.mark.parametrize("key", ["anyOf", "oneOf", "allOf"])
def test_openai_finds_an_array_without_items_inside_anyof_oneof_allof(key):
    schema = {"type": "object", "properties": {"q": {key: [{"type": "string"}, {"type": "array"}]}}}
    tools = [{"type": "function", "function": {"name": "find", "parameters": schema}}]
    server = StandInServer(["unused"])
    status, reply, _ = answer(server, "openai", dict(VALID["openai"], tools=tools))
    assert status == 400 and reply["error"]["code"] == "invalid_function_parameters"
    assert reply["error"]["message"] == (f"Invalid schema for function 'find': In context=('properties', 'q', "
                                         f"'{key}', 1), array schema missing items.")


def test_openai_takes_a_parameter_schema_without_a_type():
    schema = {"type": "object", "properties": {"anything": {"description": "any JSON value"}}}
    tools = [{"type": "function", "function": {"name": "find", "parameters": schema}}]
    server = StandInServer(["fine"])
    status, reply, _ = answer(server, "openai", dict(VALID["openai"], tools=tools))
    assert status == 200 and server.problems == []


def test_signatures_are_the_same_in_every_run_and_version():
    """A notebook that prints a stand-in reply stays reproducible: the signed blocks of a fixed request are fixed
    values (sha256 of the conversation, the request number, the block kind and its text). Change them only on
    purpose."""
    server = StandInServer([{"thinking": "Look it up.", "redacted_thinking": True, "text": "ok"}])
    _, reply, _ = answer(server, "anthropic", {"model": "m", "max_tokens": 5, "messages": [{"role": "user",
                                                                                              "content": "hi"}]})
    assert reply["content"][:2] == [
        {"type": "thinking", "thinking": "Look it up.", "signature": "JRVHy+d9XTVveKMZCfwyprDytDp7q3PPi8ovGqz34I/RyWWO"
                                                                     "xYAQTf04usRPHL/2cq1hpMvxllDULefBCVx+pQ=="},
        {"type": "redacted_thinking", "data": "J5tyfQwPpO1WqxWXd92UKXU4SbVbxJAx/lqNYnAwixo3Ma4pHxI86qwOxxtWtocu3kUpVkwU"
                                              "gunN1vrPs9PevA=="}]


def test_each_request_and_each_thought_gets_its_own_signature():
    turn = {"thinking": "same", "redacted_thinking": True, "text": "ok"}
    server = StandInServer([turn, turn])
    first, second = (answer(server, "anthropic", VALID["anthropic"])[1]["content"] for _ in range(2))
    assert first[0]["signature"] != second[0]["signature"] and first[1]["data"] != second[1]["data"]
    texts = [answer(StandInServer([{"thinking": t}]), "anthropic", VALID["anthropic"])[1]["content"][0]
             for t in ("a", "b")]
    assert texts[0]["signature"] != texts[1]["signature"]


def refused(server, api, body, headers=AUTH, status=400):
    """The error body of a request the stand-in refuses, after checking its status and that no turn was used."""
    before = server.remaining
    got, reply, _ = answer(server, api, body, headers)
    assert got == status and server.remaining == before, reply
    return reply["error"]


def test_a_key_is_required_as_each_sdk_sends_it():
    server = StandInServer(["a", "b", "c"])
    assert refused(server, "anthropic", VALID["anthropic"], {}, 401)["message"] == (
        "no API key was sent (x-api-key or Authorization: Bearer header)")
    assert refused(server, "openai", VALID["openai"], {"x-api-key": "k"}, 401) == {
        "message": "no API key was sent (Authorization: Bearer header)", "type": "invalid_request_error",
        "param": None, "code": "invalid_api_key"}
    assert refused(server, "openai", VALID["openai"], {"authorization": "Basic k"}, 401)["code"] == "invalid_api_key"
    assert answer(server, "anthropic", VALID["anthropic"], {"x-api-key": "k"})[0] == 200
    assert answer(server, "anthropic", VALID["anthropic"], {"authorization": "Bearer k"})[0] == 200
    assert answer(server, "ollama", VALID["ollama"], {})[0] == 200   # Ollama takes no key
    assert server.problems == ["no API key was sent (x-api-key or Authorization: Bearer header)",
                               "no API key was sent (Authorization: Bearer header)",
                               "no API key was sent (Authorization: Bearer header)"]


@pytest.mark.parametrize("api, body, said", [
    ("anthropic", {"max_tokens": 5, "messages": [GOAL]}, "the request needs a model name and a non-empty messages list"),
    ("openai", {"model": "m", "messages": []}, "the request needs a model name and a non-empty messages list"),
    ("openai", {"model": "m", "messages": "hi"}, "the request needs a model name and a non-empty messages list"),
    ("anthropic", {"model": "m", "messages": [GOAL]}, "max_tokens is required"),
    ("anthropic", {"model": "m", "max_tokens": "5", "messages": [GOAL]}, "max_tokens is required"),
    ("anthropic", dict(VALID["anthropic"], temperature=0.5, thinking={"type": "enabled", "budget_tokens": 1024}),
     "temperature cannot be combined with thinking"),
    ("anthropic", {"model": "m", "max_tokens": 5, "messages": [GOAL, ["oops"]]},
     "malformed request (AttributeError): every message and content block must be an object"),
])
def test_each_basic_rule_has_its_sentence(api, body, said):
    server = StandInServer([])
    error = refused(server, api, body)
    assert error["message"] == said and server.problems == [said]


def test_temperature_without_thinking_is_fine():
    assert answer(StandInServer(["ok"]), "anthropic", dict(VALID["anthropic"], temperature=0.5))[0] == 200


def test_a_script_that_ran_out_or_is_ruled_out_is_a_500_not_to_be_retried():
    server = StandInServer([])
    status, reply, headers = answer(server, "anthropic", VALID["anthropic"])
    assert status == 500 and reply["error"] == {"type": "api_error", "message": (
        "the stand-in's script ran out: it had 0 turn(s) and request 1 asked for another; add turns to the script")}
    assert headers == {"request-id": "req_standin_01", "retry-after-ms": "10", "x-should-retry": "false"}
    server = StandInServer([{"text": "168"}])
    body = dict(VALID["openai"], tools=[{"type": "function", "function": {"name": "calc", "parameters": {}}}],
                tool_choice="required")
    status, reply, headers = answer(server, "openai", body)
    assert status == 500 and reply["error"]["message"] == (
        "turn 1 of the stand-in's script calls no tool, but tool_choice forces a tool call: script one")
    assert reply["error"]["type"] == "server_error" and headers["x-should-retry"] == "false"
    assert server.remaining == 0 and server.problems == []


def test_unscripted_usage_is_a_token_per_four_characters():
    body = VALID["anthropic"]
    server = StandInServer(["a" * 40, ""])
    usage = answer(server, "anthropic", body)[1]["usage"]
    assert usage == {"input_tokens": len(json.dumps(body, ensure_ascii=False)) // 4,
                     "output_tokens": len(json.dumps({"text": "a" * 40})) // 4}
    assert answer(server, "anthropic", body)[1]["usage"]["output_tokens"] == 3   # '{"text": ""}' is 12 characters
    assert answer(StandInServer(["단가" * 8]), "anthropic", body)[1]["usage"]["output_tokens"] == 7   # characters
    assert answer(StandInServer([{}]), "anthropic", body)[1]["usage"]["output_tokens"] == 1   # at least one


def test_a_forced_call_comes_without_the_scripted_text_and_auto_keeps_it():
    tools = [{"name": "lookup", "input_schema": {"type": "object"}}]
    turn = {"text": "Let me look.", "tool_calls": [LOOKUP]}
    server = StandInServer([turn, turn])
    forced = answer(server, "anthropic", dict(VALID["anthropic"], tools=tools, tool_choice={"type": "any"}))[1]
    auto = answer(server, "anthropic", dict(VALID["anthropic"], tools=tools, tool_choice={"type": "auto"}))[1]
    assert [b["type"] for b in forced["content"]] == ["tool_use"]
    assert [b["type"] for b in auto["content"]] == ["text", "tool_use"]


@pytest.mark.parametrize("status, retry", [(429, "10"), (500, "10"), (529, "10"), (503, None), (400, None)])
def test_errors_the_sdks_retry_come_with_a_10_ms_hint(status, retry):
    _, _, headers = answer(StandInServer([{"status": status}]), "anthropic", VALID["anthropic"])
    assert headers.get("retry-after-ms") == retry and headers["request-id"] == "req_standin_01"


def test_openai_error_code_defaults_only_when_neither_type_nor_code_is_scripted():
    server = StandInServer([{"status": 429, "type": "tokens"}, {"status": 429, "code": "x"}, {"status": 503}])
    assert answer(server, "openai", VALID["openai"])[1]["error"] == {
        "message": "scripted error 429", "type": "tokens", "param": None, "code": None}
    assert answer(server, "openai", VALID["openai"])[1]["error"]["type"] == "requests"
    assert answer(server, "openai", VALID["openai"])[1]["error"] == {
        "message": "scripted error 503", "type": "server_error", "param": None, "code": None}


@pytest.mark.parametrize("turn, said", [
    ({"txt": "hello"}, "turn 1 has unknown key(s) 'txt'; a turn may have blocks, done_reason, finish_reason, "
                       "incomplete, redacted_thinking, refusal, stop_reason, stream_cut, stream_error, text, thinking, "
                       "tool_calls, usage"),
    ({"status": 429, "text": "x", "usage": {}}, "turn 1 has unknown key(s) 'text', 'usage'; a turn may have code, "
                                                 "message, param, retry_after, status, type"),
    (42, "turn 1 must be text or a dict, not int"),
    ({"tool_calls": [{"name": "lookup", "arguments": {}}]},
     "turn 1: each tool call is {\"name\": ..., \"args\": {...}}, not {'name': 'lookup', 'arguments': {}}"),
    ({"tool_calls": [{"args": {}}]}, "turn 1: each tool call is {\"name\": ..., \"args\": {...}}, not {'args': {}}"),
    ({"tool_calls": ["lookup"]}, "turn 1: each tool call is {\"name\": ..., \"args\": {...}}, not 'lookup'"),
])
def test_a_misspelt_turn_is_named_word_for_word(turn, said):
    with pytest.raises(ValueError) as info:
        StandInServer(["fine", turn])
    assert str(info.value) == said


def test_the_script_is_kept_as_given_and_counted():
    turns = ["plain", {"text": "t", "tool_calls": [{"name": "lookup"}]}]
    server = StandInServer(turns)
    assert server.turns == [{"text": "plain"}, {"text": "t", "tool_calls": [{"name": "lookup"}]}]
    assert server.turns[1] is not turns[1] and server.remaining == 2 and server.requests == []
    answer(server, "anthropic", VALID["anthropic"])
    assert server.remaining == 1 and server.requests == [{"api": "anthropic", "body": VALID["anthropic"]}]


def test_the_url_of_a_server_that_is_not_running_is_an_error():
    server = StandInServer([])
    with pytest.raises(RuntimeError) as info:
        server.url
    assert str(info.value) == "the stand-in server is not running: use it in a `with` block"
    with server:
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+", server.url)
    with pytest.raises(RuntimeError):
        server.url   # stopped again
    server.stop()   # stopping twice is harmless


CALC_TOOL = {"name": "calc", "input_schema": {"type": "object"}}
CALC_FUNCTION = {"type": "function", "function": {"name": "calc", "parameters": {"type": "object"}}}


@pytest.mark.parametrize("extra, error", [
    ({"tools": [CALC_TOOL], "tool_choice": {"type": "required"}},
     "tool_choice: Input tag 'required' found using 'type' does not match any of the expected tags: 'auto', 'any', "
     "'tool', 'none'"),
    ({"tools": [CALC_TOOL], "tool_choice": "auto"},
     "tool_choice: Input tag None found using 'type' does not match any of the expected tags: 'auto', 'any', "
     "'tool', 'none'"),
    ({"tools": [CALC_TOOL], "tool_choice": {"type": "tool"}}, "tool_choice.tool.name: Field required"),
    ({"tools": [CALC_TOOL], "tool_choice": {"type": "tool", "name": "calc"}, "thinking": {"type": "enabled"}},
     "Thinking may not be enabled when tool_choice forces tool use."),
    ({"tools": [CALC_TOOL], "tool_choice": {"type": "any"}, "thinking": {"type": "adaptive"}},
     "Thinking may not be enabled when tool_choice forces tool use."),
    ({"tools": [CALC_TOOL], "tool_choice": {"type": "tool", "name": "lookup"}},
     "tool_choice names the tool 'lookup', which is not among the tools sent"),
    ({"tool_choice": {"type": "any"}}, "tool_choice forces a tool call, but no tools were sent"),
])
def test_anthropic_tool_choice_errors_word_for_word(extra, error):
    assert refused(StandInServer([]), "anthropic", dict(VALID["anthropic"], **extra))["message"] == error


@pytest.mark.parametrize("extra, error", [
    ({"tool_choice": "auto"}, {"message": "Invalid value for 'tool_choice': 'tool_choice' is only allowed when "
                                          "'tools' are specified.", "param": "tool_choice", "code": None}),
    ({"tools": [CALC_FUNCTION], "tool_choice": "any"},
     {"message": "Invalid value: 'any'. Supported values are: 'none', 'auto', and 'required'.",
      "param": "tool_choice", "code": "invalid_value"}),
    ({"tools": [CALC_FUNCTION], "tool_choice": 5},
     {"message": "Invalid value: 5. Supported values are: 'none', 'auto', and 'required'.",
      "param": "tool_choice", "code": "invalid_value"}),
    ({"tools": [CALC_FUNCTION], "tool_choice": {"type": "function", "function": {"name": "lookup"}}},
     {"message": "tool_choice names the tool 'lookup', which is not among the tools sent", "param": "tool_choice",
      "code": None}),
])
def test_openai_tool_choice_errors_word_for_word(extra, error):
    got = refused(StandInServer([]), "openai", dict(VALID["openai"], **extra))
    assert got == {"type": "invalid_request_error", **error}


@pytest.mark.parametrize("api, extra", [
    ("anthropic", {"tools": [CALC_TOOL], "tool_choice": {"type": "any"}, "thinking": {"type": "disabled"}}),
    ("anthropic", {"tools": [CALC_TOOL], "tool_choice": {"type": "tool", "name": "calc"}}),
    ("anthropic", {"tools": [CALC_TOOL], "tool_choice": {"type": "auto"}, "thinking": {"type": "enabled"}}),
    ("openai", {"tools": [CALC_FUNCTION], "tool_choice": {"type": "function", "function": {"name": "calc"}}}),
    ("openai", {"tools": [CALC_FUNCTION], "tool_choice": "required"}),
    ("ollama", {"tool_choice": "anything"}),   # /api/chat has no tool_choice: not checked
])
def test_a_valid_forced_choice_gets_its_call(api, extra):
    server = StandInServer([{"tool_calls": [{"name": "calc", "args": {}}]}])
    status, reply, _ = answer(server, api, dict(VALID[api], **extra))
    assert status == 200 and server.problems == [] and "calc" in json.dumps(reply)


@pytest.mark.parametrize("api, choice, turn, said", [
    ("anthropic", {"type": "none"}, {"tool_calls": [{"name": "calc"}, {"name": "x"}]},
     "calls 'calc', but tool_choice is none: script a text reply"),
    ("openai", "none", {"tool_calls": [{"name": "calc"}]}, "calls 'calc', but tool_choice is none: script a text reply"),
    ("anthropic", {"type": "tool", "name": "calc"}, {"tool_calls": [{"name": "calc"}, {"name": "x"}]},
     "calls 'calc', but tool_choice forces 'calc': script that call"),
    ("openai", {"type": "function", "function": {"name": "calc"}}, {"tool_calls": [{"name": "x"}]},
     "calls 'x', but tool_choice forces 'calc': script that call"),
])
def test_a_scripted_turn_against_the_choice_is_named(api, choice, turn, said):
    tools = {"anthropic": [CALC_TOOL, dict(CALC_TOOL, name="x")], "openai": [CALC_FUNCTION]}[api]
    status, reply, _ = answer(StandInServer([turn]), api, dict(VALID[api], tools=tools, tool_choice=choice))
    assert status == 500 and reply["error"]["message"] == f"turn 1 of the stand-in's script {said}"


def test_a_choice_of_none_with_a_text_turn_and_a_scripted_error_under_a_forced_choice_pass():
    server = StandInServer(["fine", {"status": 429}])
    body = dict(VALID["anthropic"], tools=[CALC_TOOL], tool_choice={"type": "none"})
    assert answer(server, "anthropic", body)[0] == 200
    assert answer(server, "anthropic", dict(body, tool_choice={"type": "any"}))[0] == 429


@pytest.mark.parametrize("messages, said", [
    ([{"role": "assistant", "content": "hi"}, GOAL], "messages[0]: roles must alternate user/assistant, starting with user"),
    ([GOAL, GOAL], "messages[1]: roles must alternate user/assistant, starting with user"),
])
def test_anthropic_roles_must_alternate(messages, said):
    message, problem = anthropic_400(messages)
    assert message == problem == said


def test_a_tool_result_given_twice_is_refused_in_the_stand_in_s_words():
    message, problem = anthropic_400([GOAL, USE, {"role": "user", "content": [RESULT, RESULT]}])
    assert message == problem == ("messages[2]: the tool_use ids ['toolu_a'] need exactly one tool_result each in "
                                  "the next user message, got ['toolu_a', 'toolu_a']")


def test_anthropic_tool_rules_name_the_tool_s_index_and_skip_server_tools():
    web = {"type": "web_search_20250305", "name": "web search"}   # a server tool: not a custom tool's name
    message, _ = anthropic_400([GOAL], tools=[web, CALC_TOOL, dict(CALC_TOOL, input_schema="object")])
    assert message == "tools.2.custom.input_schema: Input should be a valid dictionary"
    message, _ = anthropic_400([GOAL], tools=[dict(CALC_TOOL, type="custom", name=5)])
    assert message == "tools.0.custom.name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'"
    assert answer(StandInServer(["ok"]), "anthropic", dict(VALID["anthropic"], tools=[web, CALC_TOOL]))[0] == 200


def test_a_forged_thinking_block_after_a_text_block_is_still_found():
    forged = {"type": "thinking", "thinking": "hm", "signature": "c2lnbmF0dXJl"}
    messages = [GOAL, {"role": "assistant", "content": [{"type": "text", "text": "Hi."}, forged]},
                {"role": "user", "content": "More?"}]
    error = refused(StandInServer(["unused"]), "anthropic", dict(VALID["anthropic"], messages=messages))
    assert error["message"] == "messages.1.content.1: Invalid `signature` in `thinking` block"


def test_the_count_of_missing_tool_results_is_the_uses_before_the_first_other_block():
    two = {"role": "assistant", "content": USE["content"] + [dict(USE["content"][0], id="toolu_b")]}
    later = dict(RESULT, tool_use_id="toolu_b")
    message, _ = anthropic_400([GOAL, two, {"role": "user", "content": [RESULT, {"type": "text", "text": "x"},
                                                                        later]}])
    assert message.startswith("messages.2: Did not find 1 `tool_result` block(s) at the beginning of this message.")


def test_a_thinking_block_stays_bound_when_the_sdk_reorders_the_keys_of_earlier_messages():
    server = StandInServer([{"thinking": "", "tool_calls": [LOOKUP]}, "ok"])
    request = {"model": "m", "max_tokens": 64, "system": SYSTEM, "tools": TOOLS, "messages": [GOAL]}
    _, first, _ = answer(server, "anthropic", request)
    results = [{"type": "tool_result", "tool_use_id": first["content"][1]["id"], "content": "개당 $24"}]
    goal = {"content": GOAL["content"], "role": "user"}   # the same message, its keys in another order
    messages = [goal, {"role": "assistant", "content": first["content"]}, {"role": "user", "content": results}]
    status, reply, _ = answer(server, "anthropic", dict(request, messages=messages))
    assert (status, server.problems) == (200, []), reply


def test_errors_outside_a_request_have_no_request_id_and_a_scripted_retry_after_is_kept():
    from course_lib.courseware.standin.common import _error
    assert _error("anthropic", 413, "too big") == (413, {"type": "error", "error": {
        "type": "request_too_large", "message": "too big"}}, {})
    _, _, headers = answer(StandInServer([{"status": 429, "retry_after": 2}]), "anthropic", VALID["anthropic"])
    assert headers == {"request-id": "req_standin_01", "retry-after": "2"}


def test_unanswered_openai_tool_calls_are_listed_in_the_reply_and_placed_in_problems():
    calls = {"role": "assistant", "content": None, "tool_calls": [
        {"id": i, "type": "function", "function": {"name": "lookup", "arguments": "{}"}} for i in ("c1", "c2")]}
    said = ("An assistant message with 'tool_calls' must be followed by tool messages responding to each "
            "'tool_call_id'. The following tool_call_ids did not have response messages: c1, c2")
    server = StandInServer([])
    assert refused(server, "openai", dict(VALID["openai"], messages=[GOAL, calls, GOAL]))["message"] == said
    assert refused(server, "openai", dict(VALID["openai"], messages=[GOAL, calls]))["message"] == said
    assert server.problems == ["messages[2]: tool calls ['c1', 'c2'] were not answered by role 'tool' messages",
                               "the last tool calls ['c1', 'c2'] were not answered by role 'tool' messages"]


def test_an_anthropic_refusal_s_stop_details_exactly():
    _, reply, _ = answer(StandInServer([{"refusal": "Declined."}]), "anthropic", VALID["anthropic"])
    assert reply["stop_details"] == {"type": "refusal", "category": None, "explanation": "Declined."}


@pytest.mark.parametrize("messages, said", [
    ([{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_1", "content": "168"}]}],
     "messages[0]: tool_result ['call_1'] answers no tool_use: no message comes before it"),
    ([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"},
      {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_1", "content": "168"}]}],
     "messages[2]: tool_result ['call_1'] answers no tool_use: the assistant message before it has none"),
])
def test_a_tool_result_with_no_call_before_it_is_named_so_in_the_stand_in_s_words(messages, said):
    """Lesson 10's cut that starts the window at a tool result: the course's own sentence names the result,
    and the API's words say the same (unexpected `tool_use_id`)."""
    from course_lib.courseware.standin.anthropic import _Rejected, _check_anthropic
    with pytest.raises(_Rejected) as caught:
        _check_anthropic(messages)
    assert caught.value.problem == said
    assert "unexpected `tool_use_id` found in `tool_result` blocks: call_1" in str(caught.value)
