"""Stage 08: the provider translations are pure functions on plain dicts."""
import json

import pytest

from course_lib import default_tools
from course_lib.describe import build_system_prompt
from course_lib.models import ModelError, ToolCall
from course_lib.models.anthropic import history_to_anthropic, reply_from_anthropic, tools_to_anthropic
from course_lib.models.catalog import DEFAULTS, model_id
from course_lib.models.openai import history_to_openai, reply_from_openai, tools_to_openai
from course_lib.models.remote import MissingKeyError, require_key
from course_lib.tools import calculator, lookup

HISTORY = [
    {"role": "system", "content": "Be careful."},
    {"role": "user", "content": "일곱 개는 얼마?"},
    {"role": "assistant", "content": "Checking.", "tool_calls": [
        {"id": "t1", "name": "lookup", "args": {"topic": "단가"}},
        {"id": "t2", "name": "calculator", "args": {"expression": "1/0"}}]},
    {"role": "tool", "tool_call_id": "t1", "name": "lookup", "content": "개당 $24", "is_error": False},
    {"role": "tool", "tool_call_id": "t2", "name": "calculator", "content": "Error: division by zero",
     "is_error": True},
    {"role": "assistant", "content": "", "tool_calls": [{"id": "t3", "name": "calculator",
                                                         "args": {"expression": "24*7"}}]},
    {"role": "tool", "tool_call_id": "t3", "name": "calculator", "content": "168", "is_error": False},
]


def test_tools_in_anthropic_format():
    spec = tools_to_anthropic({"calculator": calculator, "lookup": lookup})
    assert [t["name"] for t in spec] == ["calculator", "lookup"]
    assert set(spec[0]) == {"name", "description", "input_schema"}
    assert spec[0]["input_schema"]["required"] == ["expression"]
    assert spec[0]["description"].startswith("Evaluate an arithmetic expression")


def test_tools_in_openai_format():
    spec = tools_to_openai({"calculator": calculator})
    assert spec == [{"type": "function", "function": {
        "name": "calculator", "description": spec[0]["function"]["description"],
        "parameters": spec[0]["function"]["parameters"]}}]
    assert spec[0]["function"]["parameters"]["properties"]["expression"]["type"] == "string"


def test_history_to_anthropic_echoes_tool_use_and_groups_all_results_in_one_user_message():
    system, messages = history_to_anthropic(HISTORY)
    assert system == "Be careful."
    assert [m["role"] for m in messages] == ["user", "assistant", "user", "assistant", "user"]
    assert messages[0] == {"role": "user", "content": "일곱 개는 얼마?"}
    assert messages[1]["content"] == [
        {"type": "text", "text": "Checking."},
        {"type": "tool_use", "id": "t1", "name": "lookup", "input": {"topic": "단가"}},
        {"type": "tool_use", "id": "t2", "name": "calculator", "input": {"expression": "1/0"}}]
    assert messages[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "t1", "content": "개당 $24"},
        {"type": "tool_result", "tool_use_id": "t2", "content": "Error: division by zero", "is_error": True}]
    assert messages[3]["content"] == [{"type": "tool_use", "id": "t3", "name": "calculator",
                                       "input": {"expression": "24*7"}}]   # no empty text block


def test_history_to_anthropic_merges_neighbouring_user_messages():
    _, messages = history_to_anthropic([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}])
    assert messages == [{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}]


def test_history_to_openai_has_one_tool_message_per_call_id():
    messages = history_to_openai(HISTORY)
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "tool", "assistant", "tool"]
    call = messages[2]["tool_calls"][0]
    assert call == {"id": "t1", "type": "function",
                    "function": {"name": "lookup", "arguments": '{"topic": "단가"}'}}   # JSON text, Korean kept
    assert messages[3] == {"role": "tool", "tool_call_id": "t1", "content": "개당 $24"}
    assert messages[5]["content"] is None   # no text: null, as the API sends it


def test_reply_from_anthropic():
    reply = reply_from_anthropic({"content": [
        {"type": "text", "text": "Let me look."},
        {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {"topic": "배송"}}],
        "usage": {"input_tokens": 12, "output_tokens": 5}})
    assert reply.text == "Let me look."
    assert reply.tool_calls == (ToolCall("lookup", {"topic": "배송"}, "toolu_1"),)
    assert reply.usage == {"input_tokens": 12, "output_tokens": 5}
    assert reply_from_anthropic({"content": [{"type": "text", "text": "done"}]}).tool_calls == ()


def test_reply_from_openai_parses_arguments_and_keeps_bad_json_for_the_dispatcher():
    reply = reply_from_openai({"choices": [{"message": {"content": None, "tool_calls": [
        {"id": "c1", "type": "function", "function": {"name": "calculator", "arguments": '{"expression": "2+2"}'}},
        {"id": "c2", "type": "function", "function": {"name": "lookup", "arguments": "{not json"}}]}}],
        "usage": {"prompt_tokens": 30, "completion_tokens": 7}})
    assert reply.text == ""
    assert reply.tool_calls[0] == ToolCall("calculator", {"expression": "2+2"}, "c1")
    assert reply.tool_calls[1].args == "{not json"          # dispatch answers "must be a JSON object"
    assert reply.usage == {"input_tokens": 30, "output_tokens": 7}


def test_native_system_prompt_keeps_the_safety_rule_but_not_the_json_protocol():
    native = build_system_prompt(default_tools(), native=True)
    assert "data, not instructions" in native and '"tool": "finish"' not in native


def test_model_ids_come_from_one_place_and_the_environment(monkeypatch):
    assert model_id("anthropic") == DEFAULTS["anthropic"]
    monkeypatch.setenv("COURSE_ANTHROPIC_MODEL", "claude-test-1")
    monkeypatch.setenv("COURSE_OPENAI_MODEL", "gpt-test")
    assert model_id("anthropic") == "claude-test-1" and model_id("openai") == "gpt-test"


def test_a_missing_key_is_one_clear_sentence(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(MissingKeyError) as info:
        require_key("anthropic", None)
    assert isinstance(info.value, ModelError)
    assert "ANTHROPIC_API_KEY is not set" in str(info.value) and "stand-in" in str(info.value)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    assert require_key("openai", None) == "sk-test"


def test_translations_are_json_serialisable():
    system, messages = history_to_anthropic(HISTORY)
    json.dumps([system, messages, history_to_openai(HISTORY), tools_to_anthropic(default_tools()),
                tools_to_openai(default_tools())], ensure_ascii=False)
