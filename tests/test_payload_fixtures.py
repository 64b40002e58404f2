"""The hand-written provider payloads in tests/fixtures/payloads/ match what the installed SDKs expect.

Each success fixture is one response body, written by hand from the providers' documented examples (see the
README beside the fixtures). These tests hold them to the SDKs' own typed models, strictly: the SDK models
allow unknown keys (`extra="allow"`), so a field a model does not know would slip through `model_validate`
silently; `assert_no_extra_fields` walks the parsed tree and fails on any such key, and a round trip through
`model_dump` shows nothing was dropped either. Error fixtures are turned into exceptions the way the SDKs do
it. Ollama has no SDK installed here, so its fixtures are checked against a small schema written from its docs.
Nothing here touches the network: the SDK clients run over `httpx2.MockTransport`.
"""
from __future__ import annotations

import copy
import datetime
import json
import pathlib

import anthropic
import httpx2
import openai
import pydantic
import pytest
from anthropic.types import Message, RedactedThinkingBlock, TextBlock, ThinkingBlock, ToolUseBlock
from openai.types.chat import ChatCompletion
from openai.types.chat.chat_completion_message_function_tool_call import ChatCompletionMessageFunctionToolCall

PAYLOADS = pathlib.Path(__file__).parent / "fixtures" / "payloads"
ERRORS = PAYLOADS / "errors"

ANTHROPIC_MODEL = "claude-haiku-5-5"
OPENAI_MODEL = "gpt-5.4-mini"                        # what the course sends
OPENAI_SNAPSHOT = "gpt-5.4-mini-2026-03-17"          # what the API reports back for that alias
OLLAMA_MODEL = "qwen3:8b"
HAIKU_55_CONTEXT_WINDOW = 1_000_000

# The course's three tools and the one argument each takes.
TOOL_ARGS = {"lookup": "topic", "calculator": "expression", "read_file": "path"}

# fixture -> (stop_reason, the SDK class of each content block in order)
ANTHROPIC_SUCCESS = {
    "anthropic_thinking_tool_use.json": ("tool_use", [ThinkingBlock, TextBlock, ToolUseBlock]),
    "anthropic_thinking_summarized_parallel.json": ("tool_use", [ThinkingBlock, ToolUseBlock, ToolUseBlock]),
    "anthropic_redacted_thinking_answer.json": ("end_turn", [RedactedThinkingBlock, TextBlock]),
    "anthropic_refusal.json": ("refusal", [TextBlock]),
    "anthropic_refusal_empty.json": ("refusal", []),
    "anthropic_max_tokens_tool_use.json": ("max_tokens", [ThinkingBlock, TextBlock, ToolUseBlock]),
    "anthropic_max_tokens_text.json": ("max_tokens", [TextBlock]),
    "anthropic_context_window_exceeded.json": ("model_context_window_exceeded", [TextBlock]),
}

# fixture -> (finish_reason, names of the tools called, in order)
OPENAI_SUCCESS = {
    "openai_parallel_tool_calls.json": ("tool_calls", ["lookup", "calculator"]),
    "openai_refusal.json": ("stop", []),
    "openai_length.json": ("length", ["read_file"]),
    "openai_content_filter.json": ("content_filter", []),
    "openai_answer.json": ("stop", []),
}

# fixture -> (status, incomplete reason, the type of each output item in order, names of the tools called)
RESPONSES_SUCCESS = {
    "responses_reasoning_parallel_calls.json": ("completed", None, ["reasoning", "function_call", "function_call"],
                                                ["lookup", "calculator"]),
    "responses_answer.json": ("completed", None, ["message"], []),
    "responses_incomplete_max_output_tokens.json": ("incomplete", "max_output_tokens", ["reasoning"], []),
    "responses_refusal.json": ("completed", None, ["message"], []),
}

# fixture -> names of the tools called, in order
OLLAMA_SUCCESS = {
    "ollama_tool_call.json": ["calculator"],
    "ollama_answer.json": [],
}

# error fixture -> the exception class the SDK raises for it
ANTHROPIC_ERRORS = {
    "anthropic_400_invalid_request_error.json": anthropic.BadRequestError,
    "anthropic_400_usage_limits.json": anthropic.BadRequestError,
    "anthropic_429_extra_usage_required.json": anthropic.RateLimitError,
    "anthropic_401_authentication_error.json": anthropic.AuthenticationError,
    "anthropic_404_not_found_error.json": anthropic.NotFoundError,
    "anthropic_413_request_too_large.json": anthropic.ContentTooLargeError,
    "anthropic_429_rate_limit_error.json": anthropic.RateLimitError,
    "anthropic_529_overloaded_error.json": anthropic.OverloadedError,
}
OPENAI_ERRORS = {
    "openai_400_context_length_exceeded.json": openai.BadRequestError,
    "openai_400_invalid_function_parameters.json": openai.BadRequestError,
    "openai_404_model_not_found.json": openai.NotFoundError,
    "openai_429_insufficient_quota.json": openai.RateLimitError,
    "openai_429_rate_limit_exceeded.json": openai.RateLimitError,
}
OLLAMA_ERRORS = {"ollama_404_model_not_found.json": 404}

ANTHROPIC_URL = "https://api.anthropic.com"
OPENAI_URL = "https://api.openai.com/v1"


def load(path: pathlib.Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def payload(name: str) -> dict:
    return load(PAYLOADS / name)


def error(name: str) -> dict:
    return load(ERRORS / name)


# --- the strictness helper ------------------------------------------------------------------------------


def assert_no_extra_fields(value: object, where: str = "$") -> None:
    """Fail if any pydantic model in the tree holds a key its class does not declare.

    The SDK models are configured with `extra="allow"`, so `model_validate` keeps unknown keys in
    `model_extra` instead of rejecting them. Walking every model (and every list/dict of models) and
    checking `model_extra` is what makes validation strict."""
    if isinstance(value, pydantic.BaseModel):
        extra = value.model_extra or {}
        assert not extra, f"{where} ({type(value).__name__}) has fields the SDK does not know: {sorted(extra)}"
        for name in type(value).model_fields:
            assert_no_extra_fields(getattr(value, name), f"{where}.{name}")
    elif isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            assert_no_extra_fields(item, f"{where}[{index}]")
    elif isinstance(value, dict):
        for key, item in value.items():
            assert_no_extra_fields(item, f"{where}.{key}")


def strict_validate(model_class: type[pydantic.BaseModel], data: dict) -> pydantic.BaseModel:
    """Validate (a missing required field raises), forbid unknown fields, and require a lossless round trip."""
    parsed = model_class.model_validate(data)
    assert_no_extra_fields(parsed)
    assert parsed.model_dump(mode="json", exclude_unset=True) == data, "the SDK model changed or dropped a value"
    return parsed


def test_every_fixture_file_is_tested_and_listed_in_the_readme():
    on_disk = {p.relative_to(PAYLOADS).as_posix() for p in PAYLOADS.rglob("*.json")}
    tested = (set(ANTHROPIC_SUCCESS) | set(OPENAI_SUCCESS) | set(RESPONSES_SUCCESS) | set(OLLAMA_SUCCESS)
              | {f"errors/{n}" for n in (*ANTHROPIC_ERRORS, *OPENAI_ERRORS, *OLLAMA_ERRORS)})
    assert on_disk == tested, f"untested: {sorted(on_disk - tested)}, missing: {sorted(tested - on_disk)}"
    readme = (PAYLOADS / "README.md").read_text(encoding="utf-8")
    unlisted = sorted(name for name in on_disk if f"`{name}`" not in readme)
    assert not unlisted, f"the fixtures README does not list: {unlisted}"
    assert "hand-written" in readme and "not recorded" in readme


def test_the_strictness_helper_catches_extra_and_missing_fields():
    data = payload("anthropic_thinking_tool_use.json")
    with_extra = copy.deepcopy(data)
    with_extra["content"][2]["caller_note"] = "not an API field"     # an unknown key, deep in the tree
    with pytest.raises(AssertionError, match=r"content\[2\].*caller_note"):
        strict_validate(Message, with_extra)
    with_extra_usage = copy.deepcopy(data)
    with_extra_usage["usage"]["iterations"] = []
    with pytest.raises(AssertionError, match=r"usage.*iterations"):
        strict_validate(Message, with_extra_usage)
    missing = copy.deepcopy(data)
    del missing["content"][0]["signature"]                          # a required field
    with pytest.raises(pydantic.ValidationError):
        strict_validate(Message, missing)
    completion = payload("openai_answer.json")
    completion["choices"][0]["message"]["reasoning_content"] = "..."  # a field other vendors add
    with pytest.raises(AssertionError, match="reasoning_content"):
        strict_validate(ChatCompletion, completion)


# --- Anthropic Messages API -----------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(ANTHROPIC_SUCCESS))
def test_anthropic_fixture_is_an_exact_sdk_message(name):
    data = payload(name)
    message = strict_validate(Message, data)
    stop_reason, block_classes = ANTHROPIC_SUCCESS[name]
    assert message.stop_reason == stop_reason
    assert [type(block) for block in message.content] == block_classes
    assert message.model == ANTHROPIC_MODEL and message.role == "assistant" and message.type == "message"
    assert message.id.startswith("msg_01") and message.stop_sequence is None
    usage = message.usage
    if usage.output_tokens_details is not None:
        assert usage.output_tokens_details.thinking_tokens <= usage.output_tokens
    assert usage.cache_creation.ephemeral_5m_input_tokens + usage.cache_creation.ephemeral_1h_input_tokens \
        == usage.cache_creation_input_tokens
    if stop_reason == "refusal":
        assert message.stop_details is not None and message.stop_details.type == "refusal"
    else:
        assert message.stop_details is None


@pytest.mark.parametrize("name", sorted(ANTHROPIC_SUCCESS))
def test_anthropic_blocks_are_consistent(name):
    message = Message.model_validate(payload(name))
    tool_uses = [b for b in message.content if isinstance(b, ToolUseBlock)]
    assert len({b.id for b in tool_uses}) == len(tool_uses)
    for block in tool_uses:
        assert block.id.startswith("toolu_01") and block.name in TOOL_ARGS
        complete = not (message.stop_reason == "max_tokens" and block is message.content[-1])
        assert (set(block.input) == {TOOL_ARGS[block.name]}) is complete
    for block in message.content:
        if isinstance(block, (ThinkingBlock, RedactedThinkingBlock)):
            assert block is message.content[0], "thinking comes first in the turn"
            assert (block.signature if isinstance(block, ThinkingBlock) else block.data)
    if message.stop_reason == "tool_use":
        assert isinstance(message.content[-1], ToolUseBlock)


def test_anthropic_thinking_display_omitted_and_summarized():
    omitted = Message.model_validate(payload("anthropic_thinking_tool_use.json")).content[0]
    assert omitted.thinking == "" and len(omitted.signature) > 100       # Haiku 5.5 default: text left out
    summarized = Message.model_validate(payload("anthropic_thinking_summarized_parallel.json")).content[0]
    assert summarized.thinking.strip() and len(summarized.signature) > 100


def test_anthropic_truncated_tool_use_is_missing_its_argument():
    message = Message.model_validate(payload("anthropic_max_tokens_tool_use.json"))
    last = message.content[-1]
    assert message.stop_reason == "max_tokens" and isinstance(last, ToolUseBlock)
    assert last.name == "read_file" and "path" not in last.input     # the cut-off value never arrived


def test_anthropic_refusals():
    partial = Message.model_validate(payload("anthropic_refusal.json"))
    assert partial.content[0].text and partial.stop_details.category == "cyber"
    assert partial.stop_details.explanation
    empty = Message.model_validate(payload("anthropic_refusal_empty.json"))
    assert empty.content == [] and empty.usage.output_tokens == 0
    assert empty.stop_details.category is None and empty.stop_details.explanation is None


def test_anthropic_context_window_is_exactly_full():
    usage = Message.model_validate(payload("anthropic_context_window_exceeded.json")).usage
    total = (usage.input_tokens + usage.cache_creation_input_tokens + usage.cache_read_input_tokens
             + usage.output_tokens)
    assert total == HAIKU_55_CONTEXT_WINDOW


ANTHROPIC_TOOLS = [
    {"name": "lookup", "description": "Look up a topic in the course notes.",
     "input_schema": {"type": "object", "properties": {"topic": {"type": "string"}}, "required": ["topic"]}},
    {"name": "calculator", "description": "Evaluate an arithmetic expression.",
     "input_schema": {"type": "object", "properties": {"expression": {"type": "string"}},
                      "required": ["expression"]}},
    {"name": "read_file", "description": "Read a text file inside the workspace.",
     "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}, "required": ["path"]}},
]


def anthropic_client(handler) -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key="x", base_url=ANTHROPIC_URL, max_retries=0,
                               http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
                               _strict_response_validation=True)


@pytest.mark.parametrize("name", sorted(ANTHROPIC_SUCCESS))
def test_anthropic_fixture_through_the_real_client(name):
    data = payload(name)
    sent = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        sent.append(request)
        return httpx2.Response(200, json=data, headers={"request-id": "req_011CMockTransport0000000"})

    message = anthropic_client(handler).messages.create(
        model=ANTHROPIC_MODEL, max_tokens=4096, tools=ANTHROPIC_TOOLS,
        thinking={"type": "adaptive", "display": "summarized"},
        messages=[{"role": "user", "content": "What is 15% of 2,340?"}])
    assert isinstance(message, Message)
    assert message.model_dump(mode="json", exclude_unset=True) == data
    assert message._request_id == "req_011CMockTransport0000000"
    (request,) = sent
    assert request.method == "POST" and request.url.path == "/v1/messages"
    assert json.loads(request.content)["model"] == ANTHROPIC_MODEL


# --- OpenAI Chat Completions ----------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(OPENAI_SUCCESS))
def test_openai_fixture_is_an_exact_sdk_chat_completion(name):
    completion = strict_validate(ChatCompletion, payload(name))
    finish_reason, tool_names = OPENAI_SUCCESS[name]
    (choice,) = completion.choices
    assert choice.index == 0 and choice.finish_reason == finish_reason and choice.logprobs is None
    assert completion.object == "chat.completion" and completion.model == OPENAI_SNAPSHOT
    assert completion.id.startswith("chatcmpl-")
    usage = completion.usage
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    assert usage.completion_tokens_details.reasoning_tokens <= usage.completion_tokens
    assert usage.prompt_tokens_details.cached_tokens <= usage.prompt_tokens
    calls = choice.message.tool_calls or []
    assert all(isinstance(call, ChatCompletionMessageFunctionToolCall) for call in calls)
    assert [call.function.name for call in calls] == tool_names
    assert len({call.id for call in calls}) == len(calls) and all(c.id.startswith("call_") for c in calls)
    if calls:
        assert choice.message.content is None


def test_openai_tool_call_arguments_are_json_strings():
    (choice,) = ChatCompletion.model_validate(payload("openai_parallel_tool_calls.json")).choices
    for call in choice.message.tool_calls:
        assert json.loads(call.function.arguments).keys() == {TOOL_ARGS[call.function.name]}
    (cut,) = ChatCompletion.model_validate(payload("openai_length.json")).choices[0].message.tool_calls
    with pytest.raises(json.JSONDecodeError):                          # finish_reason "length" cut it off
        json.loads(cut.function.arguments)


def test_openai_refusal_and_content_filter():
    refusal = ChatCompletion.model_validate(payload("openai_refusal.json")).choices[0].message
    assert refusal.content is None and refusal.refusal
    filtered = ChatCompletion.model_validate(payload("openai_content_filter.json")).choices[0].message
    assert filtered.content is None and filtered.refusal is None and not filtered.tool_calls


OPENAI_TOOLS = [{"type": "function", "function": {"name": t["name"], "description": t["description"],
                                                  "parameters": t["input_schema"]}} for t in ANTHROPIC_TOOLS]


def openai_client(handler) -> openai.OpenAI:
    return openai.OpenAI(api_key="x", base_url=OPENAI_URL, max_retries=0,
                         http_client=httpx2.Client(transport=httpx2.MockTransport(handler)),
                         _strict_response_validation=True)


@pytest.mark.parametrize("name", sorted(OPENAI_SUCCESS))
def test_openai_fixture_through_the_real_client(name):
    data = payload(name)
    sent = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        sent.append(request)
        return httpx2.Response(200, json=data, headers={"x-request-id": "req_0123456789abcdef0123456789abcdef"})

    completion = openai_client(handler).chat.completions.create(
        model=OPENAI_MODEL, tools=OPENAI_TOOLS, max_completion_tokens=1024,
        messages=[{"role": "user", "content": "What is 15% of 2,340?"}])
    assert isinstance(completion, ChatCompletion)
    assert completion.model_dump(mode="json", exclude_unset=True) == data
    assert completion._request_id == "req_0123456789abcdef0123456789abcdef"
    (request,) = sent
    assert request.method == "POST" and request.url.path == "/v1/chat/completions"
    assert json.loads(request.content)["model"] == OPENAI_MODEL


# --- OpenAI Responses API ------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(RESPONSES_SUCCESS))
def test_responses_fixture_is_an_exact_sdk_response(name):
    from openai.types.responses import Response
    response = strict_validate(Response, payload(name))
    status, reason, kinds, tool_names = RESPONSES_SUCCESS[name]
    assert response.object == "response" and response.model == OPENAI_SNAPSHOT and response.id.startswith("resp_")
    assert response.status == status and (response.incomplete_details and response.incomplete_details.reason) == reason
    assert [item.type for item in response.output] == kinds
    calls = [item for item in response.output if item.type == "function_call"]
    assert [c.name for c in calls] == tool_names and all(c.call_id.startswith("call_") for c in calls)
    assert len({c.call_id for c in calls}) == len(calls)
    for call in calls:   # arguments are JSON text, as in Chat Completions
        assert json.loads(call.arguments).keys() == {TOOL_ARGS[call.name]}
    prefixes = {"reasoning": "rs_", "function_call": "fc_", "message": "msg_"}
    assert all(item.id.startswith(prefixes[item.type]) for item in response.output)
    usage = response.usage
    assert usage.total_tokens == usage.input_tokens + usage.output_tokens
    assert usage.input_tokens_details.cached_tokens <= usage.input_tokens
    assert usage.output_tokens_details.reasoning_tokens <= usage.output_tokens
    assert all(tool.strict is False for tool in response.tools)   # the course sends strict: false


def test_responses_reasoning_items_are_encrypted_and_an_incomplete_one_used_every_token():
    first = payload("responses_reasoning_parallel_calls.json")["output"][0]
    assert first["encrypted_content"].startswith("gAAAA") and first["summary"][0]["type"] == "summary_text"
    cut = payload("responses_incomplete_max_output_tokens.json")
    assert cut["usage"]["output_tokens"] == cut["max_output_tokens"] == cut["usage"]["output_tokens_details"][
        "reasoning_tokens"]   # the reasoning guide: the limit can be reached before any visible output
    refusal = payload("responses_refusal.json")["output"][0]["content"]
    assert [part["type"] for part in refusal] == ["refusal"] and refusal[0]["refusal"]


@pytest.mark.parametrize("name", sorted(RESPONSES_SUCCESS))
def test_responses_fixture_through_the_real_client(name):
    from openai.types.responses import Response
    data = payload(name)
    sent = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        sent.append(request)
        return httpx2.Response(200, json=data, headers={"x-request-id": "req_0123456789abcdef0123456789abcdef"})

    response = openai_client(handler).responses.create(
        model=OPENAI_MODEL, input="What is 15% of 2,340?", store=False, include=["reasoning.encrypted_content"],
        tools=[{"type": "function", "name": "calculator", "parameters": {"type": "object"}, "strict": False}])
    assert isinstance(response, Response) and response.model_dump(mode="json", exclude_unset=True) == data
    (request,) = sent
    assert request.method == "POST" and request.url.path == "/v1/responses"


# --- Ollama /api/chat (no SDK installed: a schema written from docs/openapi.yaml and api/types.go) --------

# key -> (type, required). From ChatResponse in Ollama's docs/openapi.yaml; `done_reason` is documented as
# optional but the server sets it on every finished non-streaming reply.
OLLAMA_RESPONSE = {
    "model": (str, True), "created_at": (str, True), "message": (dict, True), "done": (bool, True),
    "done_reason": (str, True), "total_duration": (int, False), "load_duration": (int, False),
    "prompt_eval_count": (int, False), "prompt_eval_duration": (int, False), "eval_count": (int, False),
    "eval_duration": (int, False), "logprobs": (list, False),
}
OLLAMA_MESSAGE = {
    "role": (str, True), "content": (str, True), "thinking": (str, False), "tool_calls": (list, False),
    "images": (list, False),
}
# `id` and `function.index` are not in the docs' ToolCall schema, but api/types.go serialises them and
# server/routes.go fills `id` with "call_" + 8 characters on every tool call.
OLLAMA_TOOL_CALL = {"id": (str, False), "function": (dict, True)}
OLLAMA_FUNCTION = {"index": (int, False), "name": (str, True), "description": (str, False),
                   "arguments": (dict, True)}


def check_shape(obj: dict, schema: dict, where: str) -> None:
    unknown = set(obj) - set(schema)
    assert not unknown, f"{where} has keys the Ollama docs do not describe: {sorted(unknown)}"
    for key, (kind, required) in schema.items():
        if key not in obj:
            assert not required, f"{where} is missing {key!r}"
            continue
        assert isinstance(obj[key], kind) and not (kind is int and isinstance(obj[key], bool)), \
            f"{where}.{key} should be {kind.__name__}, got {type(obj[key]).__name__}"


@pytest.mark.parametrize("name", sorted(OLLAMA_SUCCESS))
def test_ollama_fixture_matches_the_documented_chat_response(name):
    data = payload(name)
    check_shape(data, OLLAMA_RESPONSE, "$")
    check_shape(data["message"], OLLAMA_MESSAGE, "$.message")
    assert data["model"] == OLLAMA_MODEL and data["done"] is True and data["done_reason"] == "stop"
    assert data["message"]["role"] == "assistant"
    created = datetime.datetime.fromisoformat(data["created_at"][:26] + "+00:00")   # ns precision, 'Z'
    assert created.tzinfo is not None
    assert data["total_duration"] >= data["load_duration"] + data["prompt_eval_duration"] + data["eval_duration"]
    calls = data["message"].get("tool_calls", [])
    for index, call in enumerate(calls):
        check_shape(call, OLLAMA_TOOL_CALL, f"$.message.tool_calls[{index}]")
        check_shape(call["function"], OLLAMA_FUNCTION, f"$.message.tool_calls[{index}].function")
        function = call["function"]
        assert function["index"] == index and call["id"].startswith("call_")
        assert set(function["arguments"]) == {TOOL_ARGS[function["name"]]}   # an object, not a JSON string
    assert [c["function"]["name"] for c in calls] == OLLAMA_SUCCESS[name]
    assert data["message"]["thinking"].strip()                        # qwen3 with "think": true
    assert (data["message"]["content"] == "") == bool(calls)


# --- error bodies ---------------------------------------------------------------------------------------


def all_error_names():
    return sorted((*ANTHROPIC_ERRORS, *OPENAI_ERRORS, *OLLAMA_ERRORS))


@pytest.mark.parametrize("name", all_error_names())
def test_error_fixture_wrapper(name):
    fixture = error(name)
    assert set(fixture) == {"status", "headers", "body"}
    assert isinstance(fixture["status"], int) and 400 <= fixture["status"] <= 599
    assert fixture["headers"] and all(isinstance(k, str) and isinstance(v, str) and k == k.lower()
                                      for k, v in fixture["headers"].items())
    assert fixture["headers"]["content-type"].startswith("application/json")
    assert str(fixture["status"]) in name


def error_response(fixture: dict, url: str) -> httpx2.Response:
    return httpx2.Response(fixture["status"], json=fixture["body"], headers=fixture["headers"],
                           request=httpx2.Request("POST", url))


@pytest.mark.parametrize("name", sorted(ANTHROPIC_ERRORS))
def test_anthropic_error_becomes_the_sdk_exception(name):
    fixture = error(name)
    body, headers = fixture["body"], fixture["headers"]
    client = anthropic_client(lambda request: httpx2.Response(500))
    exc = client._make_status_error_from_response(error_response(fixture, f"{ANTHROPIC_URL}/v1/messages"))
    assert type(exc) is ANTHROPIC_ERRORS[name]
    assert exc.status_code == fixture["status"] and exc.body == body
    assert exc.api_message == body["error"]["message"] and body["error"]["message"] in str(exc)
    assert exc.type == body["error"]["type"]
    assert exc.request_id == headers.get("request-id") == body.get("request_id")
    if "type" in body:                     # the 413 comes from the edge, outside the SDK's ErrorResponse union
        strict_validate(anthropic.types.ErrorResponse, body)


def test_anthropic_error_kinds():
    assert issubclass(anthropic.OverloadedError, anthropic.InternalServerError)
    assert error("anthropic_529_overloaded_error.json")["status"] == 529
    rate_limit = error("anthropic_429_rate_limit_error.json")["headers"]
    assert int(rate_limit["retry-after"]) > 0
    assert rate_limit["anthropic-ratelimit-input-tokens-remaining"] == "0"
    too_large = error("anthropic_413_request_too_large.json")["body"]
    assert "request_id" not in too_large and too_large["error"]["type"] == "request_too_large"
    spend_cap = error("anthropic_429_extra_usage_required.json")   # a 429 with nothing to wait for
    assert "retry-after" not in spend_cap["headers"] and spend_cap["body"]["error"]["type"] == "rate_limit_error"
    limits = error("anthropic_400_usage_limits.json")["body"]["error"]   # a spend limit is a 400
    assert limits["type"] == "invalid_request_error" and "regain access on" in limits["message"]


@pytest.mark.parametrize("name", sorted(OPENAI_ERRORS))
def test_openai_error_becomes_the_sdk_exception(name):
    fixture = error(name)
    body, headers = fixture["body"], fixture["headers"]
    strict_validate(openai.types.shared.ErrorObject, body["error"])
    client = openai_client(lambda request: httpx2.Response(500))
    exc = client._make_status_error_from_response(error_response(fixture, f"{OPENAI_URL}/chat/completions"))
    assert type(exc) is OPENAI_ERRORS[name]
    assert exc.status_code == fixture["status"]
    assert exc.body == body["error"]                         # the SDK unwraps the "error" object
    assert exc.code == body["error"]["code"] and exc.type == body["error"]["type"]
    assert exc.param == body["error"]["param"] and body["error"]["message"] in str(exc)
    assert exc.request_id == headers["x-request-id"]


def test_openai_429s_differ_by_code():
    quota = error("openai_429_insufficient_quota.json")["body"]["error"]
    assert quota["code"] == "insufficient_quota"
    assert quota["message"].startswith("You exceeded your current quota, please check your plan and billing details")
    limit = error("openai_429_rate_limit_exceeded.json")
    assert limit["body"]["error"]["code"] == "rate_limit_exceeded"
    assert limit["headers"]["x-ratelimit-remaining-tokens"].isdigit()


@pytest.mark.parametrize("name", sorted(ANTHROPIC_ERRORS))
def test_anthropic_error_through_the_real_client(name):
    fixture = error(name)
    client = anthropic_client(lambda request: httpx2.Response(fixture["status"], json=fixture["body"],
                                                              headers=fixture["headers"]))
    with pytest.raises(ANTHROPIC_ERRORS[name]) as raised:
        client.messages.create(model=ANTHROPIC_MODEL, max_tokens=1024,
                               messages=[{"role": "user", "content": "What is 15% of 2,340?"}])
    assert raised.value.body == fixture["body"]


@pytest.mark.parametrize("name", sorted(OPENAI_ERRORS))
def test_openai_error_through_the_real_client(name):
    fixture = error(name)
    client = openai_client(lambda request: httpx2.Response(fixture["status"], json=fixture["body"],
                                                           headers=fixture["headers"]))
    with pytest.raises(OPENAI_ERRORS[name]) as raised:
        client.chat.completions.create(model=OPENAI_MODEL,
                                       messages=[{"role": "user", "content": "What is 15% of 2,340?"}])
    assert raised.value.body == fixture["body"]["error"]


def test_ollama_error_is_a_bare_string():
    fixture = error("ollama_404_model_not_found.json")
    assert fixture["status"] == 404
    assert set(fixture["body"]) == {"error"} and isinstance(fixture["body"]["error"], str)
    assert fixture["body"]["error"] == f"model '{OLLAMA_MODEL}' not found"
