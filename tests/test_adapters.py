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


# -- the shared reply shape (course_lib/models/base.py): what a model may return, and the sentences it gets ------
from course_lib.models.base import MAX_ARGS_DEPTH, Reply, _deeper_than, ask, scrub  # noqa: E402
from course_lib.models.remote import checked_choice  # noqa: E402


def model_error(make) -> str:
    with pytest.raises(ModelError) as info:
        make()
    return str(info.value)


def nested(depth: int):
    """``depth`` lists inside each other around a number: [[ ... [0] ... ]]."""
    value = 0
    for _ in range(depth):
        value = [value]
    return value


def test_a_reply_dict_keeps_every_field():
    reply = Reply.coerce({"text": "t", "tool_calls": [{"name": "lookup", "args": {"topic": "x"}, "id": "c9"}],
                          "usage": {"input_tokens": 1, "output_tokens": 2}, "stop": "max_tokens",
                          "provider_stop": "length", "thinking": "hm"})
    assert reply == Reply(text="t", tool_calls=(ToolCall("lookup", {"topic": "x"}, "c9"),),
                          usage={"input_tokens": 1, "output_tokens": 2}, stop="max_tokens", provider_stop="length",
                          thinking="hm")


def test_a_reply_dict_defaults_and_tool_call_defaults():
    reply = Reply.coerce({"tool_calls": [{"name": "a"}, {"name": "b", "args": None}, {"name": "c", "args": "x"}]})
    assert reply.text == "" and reply.thinking == "" and reply.usage is None and reply.provider_stop is None
    assert reply.tool_calls == (ToolCall("a", {}, "call_1"), ToolCall("b", {}, "call_2"), ToolCall("c", "x", "call_3"))
    assert Reply.coerce({}) == Reply() and Reply.coerce("hi") == Reply(text="hi")


def test_a_misspelt_key_in_a_reply_or_call_names_the_keys_allowed():
    said = model_error(lambda: Reply.coerce({"txt": "hi", "tools": []}))
    assert said == ("a reply has unknown key(s) 'txt', 'tools'; it may have: text, tool_calls, usage, stop, "
                    "provider_stop, thinking")
    said = model_error(lambda: Reply.coerce({"tool_calls": [{"name": "a"}, {"tool": "lookup"}]}))
    assert said == "tool call 2 has unknown key(s) 'tool'; it may have: name, args, id"


def test_each_malformed_reply_is_a_sentence_naming_the_field():
    assert model_error(lambda: Reply.coerce({"text": 5})) == 'a reply\'s "text" must be text, not int'
    assert model_error(lambda: Reply.coerce({"tool_calls": "lookup"})) == (
        'a reply\'s "tool_calls" must be a list of calls, not str')
    assert model_error(lambda: Reply.coerce(42)) == "a model reply must be text, a dict or a Reply, not int"
    assert model_error(lambda: Reply.coerce({"tool_calls": [{"name": "a"}, "lookup"]})) == (
        'tool call 2 must be a dict like {"name": "calculator", "args": {...}}, not str')
    assert model_error(lambda: Reply.coerce({"tool_calls": [{"args": {}}]})) == (
        'tool call 1 needs a "name" naming the tool, e.g. {"name": "calculator", "args": {...}}')


@pytest.mark.parametrize("fields, said", [
    ({"text": None}, "a Reply's text must be text"),
    ({"text": 3, "stop": "refused"}, "a Reply's text must be text"),
    ({"tool_calls": ("lookup",)}, "a Reply's tool_calls must be a tuple of ToolCall"),
    ({"tool_calls": [ToolCall("lookup", {})]}, "a Reply's tool_calls must be a tuple of ToolCall"),
    ({"stop": "tired"}, "a Reply's unknown stop 'tired': use one of refused, max_tokens, context_full or leave it out"),
    ({"usage": "many"}, "a Reply's usage must be a dict of whole numbers, 0 or more, e.g. "
                        "{'input_tokens': 12, 'output_tokens': 3}"),
    ({"usage": {"input_tokens": -1}}, "a Reply's usage must be a dict of whole numbers"),
    ({"usage": {"input_tokens": 2.5}}, "a Reply's usage must be a dict of whole numbers"),
])
def test_a_malformed_reply_is_refused_with_its_sentence(fields, said):
    assert model_error(lambda: Reply(**fields)).startswith(said)


def test_a_reply_object_of_the_wrong_shape_is_refused_where_it_is_made():
    for make, phrase in [(lambda: Reply(stop="bogus"), "unknown stop"),
                         (lambda: Reply(tool_calls=({"name": "x"},)), "tuple of ToolCall"),
                         (lambda: Reply(text=None), "text must be text"),
                         (lambda: ToolCall(name=None, args={}), "must be text")]:
        with pytest.raises(ModelError, match=phrase):
            make()


def test_usage_may_leave_a_count_out_as_none():
    assert Reply(usage={"input_tokens": None, "output_tokens": 0}).usage == {"input_tokens": None, "output_tokens": 0}


def test_a_reply_s_repr_shows_only_the_fields_that_say_something():
    assert repr(Reply(text="hi")) == "Reply(text='hi', tool_calls=(), usage=None)"
    assert repr(Reply(stop="refused", provider_stop="refusal", thinking="hm")) == (
        "Reply(text='', tool_calls=(), usage=None, stop='refused', provider_stop='refusal', thinking='hm')")


def test_a_tool_call_s_name_and_id_must_be_text():
    assert model_error(lambda: ToolCall(5, {})) == "a tool call's name and id must be text, not int and str"
    assert model_error(lambda: ToolCall("a", {}, None)) == "a tool call's name and id must be text, not str and NoneType"


def test_arguments_nested_past_64_levels_are_refused_naming_the_tool():
    assert MAX_ARGS_DEPTH == 64
    assert ToolCall("t", {"a": nested(63)}).args   # the dict and 63 lists: 64 levels
    name = "n" * 60 + "TAIL"
    said = model_error(lambda: ToolCall(name, {"a": nested(64)}))
    assert said == f"the arguments of the call to {'n' * 60} are nested more than 64 levels deep"
    deep_dicts = {}
    for _ in range(70):
        deep_dicts = {"k": deep_dicts}
    assert "nested more than 64" in model_error(lambda: ToolCall("t", deep_dicts))


def test_depth_counting_stops_past_a_million_items():
    """A list that holds itself doubles at every level; past a million items counted the answer is 'too deep'."""
    assert _deeper_than([[0] * 999_999], 64) is False   # 1,000,000 items over two levels: still counted
    assert _deeper_than([[0] * 1_000_000], 64) is True    # one more: counting stops
    loop = []
    loop += [loop, loop]
    assert _deeper_than(loop, 64) is True


def test_scrub_turns_a_too_deep_reply_into_a_sentence():
    assert model_error(lambda: scrub(nested(5_000))) == (
        "the reply is nested too deeply to read; ask for flatter arguments")
    assert scrub({"a\ud83d": ["b\ud83d\ude00"]}) == {"a\ufffd": ["b\U0001F600"]}


def test_checked_choice_says_no_tools_only_when_none_were_given():
    with pytest.raises(ValueError) as info:
        checked_choice("calc", {"calculator": calculator})
    assert str(info.value) == "tool_choice must be one of auto, any, none or the name of a tool given, not 'calc'"
    with pytest.raises(ValueError) as info:
        checked_choice("calc", None)
    assert str(info.value).endswith("not 'calc' (no tools were given)")


def test_ask_calls_an_object_s_complete_with_the_tools_or_a_plain_function_with_the_messages():
    seen = []

    class Model:
        def complete(self, messages, tools):
            seen.append((messages, tools))
            return "from complete"

    tools = {"calculator": calculator}
    assert ask(Model(), [{"role": "user", "content": "q"}], tools) == Reply(text="from complete")
    assert seen == [([{"role": "user", "content": "q"}], tools)]
    assert ask(lambda messages: f"{len(messages)} message(s)", [{"role": "user", "content": "q"}]) == Reply(
        text="1 message(s)")
    reply = Reply(text="as is")
    assert ask(lambda messages: reply, []) is reply


# -- the Anthropic adapter (course_lib/models/anthropic.py) ----------------------------------------------------
from course_lib.models.anthropic import AnthropicModel  # noqa: E402


class Recorder:
    """A stand-in SDK client: keeps each create() call's keyword arguments and answers with ``response``,
    or raises ``error``."""

    def __init__(self, response=None, error=None, base_url="http://recorded.test"):
        self.calls, self.response, self.error = [], response, error
        if base_url is not None:
            self.base_url = base_url
        self.messages = self.completions = self
        self.chat = self

    def create(self, **kwargs):
        self.calls.append(kwargs)
        if self.error:
            raise self.error
        return self

    def model_dump(self, **kwargs):
        return self.response


ANSWER = {"content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn",
          "usage": {"input_tokens": 3, "output_tokens": 1}}


def test_anthropic_request_sends_system_thinking_and_effort_as_set():
    history = [{"role": "system", "content": "Be brief."}, {"role": "system", "content": "Use tools."},
               {"role": "user", "content": "hi"}]
    request = AnthropicModel(api_key="x", thinking="adaptive", effort="low").request(history)
    assert request == {"model": AnthropicModel(api_key="x").model, "max_tokens": 16000,
                       "messages": [{"role": "user", "content": "hi"}], "system": "Be brief.\n\nUse tools.",
                       "thinking": {"type": "adaptive"}, "output_config": {"effort": "low"}}
    assert "system" not in AnthropicModel(api_key="x").request(history[2:])


def test_a_thinking_dict_is_sent_as_it_is():
    """Bug fixed: a dict (allowed by the signature, e.g. a budget) used to crash request() with TypeError."""
    setting = {"type": "enabled", "budget_tokens": 2000}
    assert AnthropicModel(api_key="x", thinking=setting).request([{"role": "user", "content": "hi"}])[
        "thinking"] == setting


def test_anthropic_complete_sends_the_tools_and_explains_errors_with_the_model_and_url():
    client = Recorder(ANSWER)
    reply = AnthropicModel("claude-x", client=client).complete([{"role": "user", "content": "hi"}],
                                                              {"calculator": calculator})
    assert reply.text == "ok" and [t["name"] for t in client.calls[0]["tools"]] == ["calculator"]
    import anthropic
    request = httpx2_request()
    with pytest.raises(ModelError) as info:
        AnthropicModel("claude-x", client=Recorder(error=anthropic.APIConnectionError(request=request))).complete(
            [{"role": "user", "content": "hi"}])
    assert str(info.value).startswith("could not reach the Anthropic server at http://recorded.test (")
    with pytest.raises(ModelError) as info:
        AnthropicModel("claude-x", client=Recorder(error=anthropic.APIConnectionError(request=request),
                                                   base_url=None)).complete([{"role": "user", "content": "hi"}])
    assert str(info.value).startswith("could not reach the Anthropic server (")
    gone = anthropic.NotFoundError("gone", response=httpx2_response(404), body=None)
    with pytest.raises(ModelError, match="the model ID 'claude-x' is retired"):
        AnthropicModel("claude-x", client=Recorder(error=gone)).complete([{"role": "user", "content": "hi"}])


def httpx2_request():
    import httpx2
    return httpx2.Request("POST", "http://recorded.test/v1/messages")


def httpx2_response(status):
    import httpx2
    return httpx2.Response(status, request=httpx2_request())


def test_an_assistant_turn_without_tool_calls_goes_back_as_plain_text():
    _, messages = history_to_anthropic([{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"},
                                        {"role": "user", "content": "c"}, {"role": "assistant"},
                                        {"role": "user", "content": "d"}])
    assert [m["content"] for m in messages] == ["a", "b", "c", "", "d"]


def test_reply_from_anthropic_joins_text_blocks_and_non_empty_thinking():
    reply = reply_from_anthropic({"content": [
        {"type": "thinking", "thinking": "", "signature": "s0"}, {"type": "thinking", "thinking": "one", "signature": "s1"},
        {"type": "thinking", "thinking": "two", "signature": "s2"}, {"type": "text", "text": "Seven "},
        {"type": "text"}, {"type": "text", "text": "units."}]})
    assert reply.text == "Seven units." and reply.thinking == "one\ntwo"
    assert reply.usage == {"input_tokens": 0, "output_tokens": 0}   # no usage reported: zero, not missing


# -- the OpenAI adapter (course_lib/models/openai.py) ----------------------------------------------------------
from course_lib.models.catalog import OLLAMA_URL  # noqa: E402
from course_lib.models.openai import OpenAIModel  # noqa: E402

OPENAI_ANSWER = {"choices": [{"message": {"content": "ok"}, "finish_reason": "stop"}],
                 "usage": {"prompt_tokens": 3, "completion_tokens": 1}}


def test_openai_model_builds_its_client_and_checks_max_tokens():
    import openai
    model = OpenAIModel("gpt-x", api_key="k")
    assert type(model.client) is openai.OpenAI and model.client.max_retries == 2 and model.max_tokens is None
    assert OpenAIModel(api_key="k", max_tokens=1).max_tokens == 1
    for bad in (0, -5, True, "5", 2.0):
        with pytest.raises(ValueError) as info:
            OpenAIModel(api_key="k", max_tokens=bad)
        assert str(info.value) == f"max_tokens must be a positive whole number or None, not {bad!r}"


def test_ollama_is_the_same_class_pointed_at_the_local_server():
    model = OpenAIModel.ollama("qwen-x", max_tokens=5)
    assert (model.model, model.provider, model.client.api_key) == ("qwen-x", "ollama", "ollama")
    assert str(model.client.base_url).rstrip("/") == OLLAMA_URL
    assert model.request([{"role": "user", "content": "hi"}]) == {
        "model": "qwen-x", "messages": [{"role": "user", "content": "hi"}], "max_tokens": 5}
    assert str(OpenAIModel.ollama(base_url="http://o:1/v1").client.base_url).rstrip("/") == "http://o:1/v1"
    assert OpenAIModel("gpt-x", api_key="k", max_tokens=7).request([{"role": "user", "content": "hi"}])[
        "max_completion_tokens"] == 7


def test_openai_complete_sends_the_tools_and_explains_errors_with_the_model_and_url():
    client = Recorder(OPENAI_ANSWER)
    reply = OpenAIModel("gpt-x", client=client).complete([{"role": "user", "content": "hi"}],
                                                         {"calculator": calculator})
    assert reply.text == "ok" and [t["function"]["name"] for t in client.calls[0]["tools"]] == ["calculator"]
    import openai
    failing = Recorder(error=openai.APIConnectionError(request=httpx2_request()))
    with pytest.raises(ModelError) as info:
        OpenAIModel("gpt-x", client=failing, provider="ollama").complete([{"role": "user", "content": "hi"}])
    assert str(info.value) == ("could not reach the Ollama server at http://recorded.test (APIConnectionError): is "
                               "`ollama serve` running?")
    failing = Recorder(error=openai.APIConnectionError(request=httpx2_request()), base_url=None)
    with pytest.raises(ModelError, match=r"^could not reach the OpenAI server \("):
        OpenAIModel("gpt-x", client=failing).complete([{"role": "user", "content": "hi"}])
    gone = openai.NotFoundError("gone", response=httpx2_response(404), body=None)
    with pytest.raises(ModelError, match="the model ID 'gpt-x' is retired"):
        OpenAIModel("gpt-x", client=Recorder(error=gone)).complete([{"role": "user", "content": "hi"}])


def test_history_to_openai_keeps_plain_turns_plain_and_the_text_beside_tool_calls():
    messages = history_to_openai([{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"},
                                  HISTORY[2]])
    assert messages[:2] == [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
    assert messages[2]["content"] == "Checking."


def test_reply_from_openai_refusal_empty_arguments_and_missing_usage():
    reply = reply_from_openai({"choices": [{"message": {"content": None, "refusal": "I can't help with that."},
                                            "finish_reason": "stop"}]})
    assert (reply.text, reply.stop, reply.provider_stop) == ("I can't help with that.", "refused", "refusal")
    assert reply.usage == {"input_tokens": 0, "output_tokens": 0}
    reply = reply_from_openai({"choices": [{"message": {"tool_calls": [
        {"id": "c1", "function": {"name": "lookup", "arguments": ""}},
        {"id": "c2", "function": {"name": "lookup", "arguments": None}}]}, "finish_reason": "tool_calls"}]})
    assert [c.args for c in reply.tool_calls] == [{}, {}] and reply.provider_stop == "tool_calls"


def test_anthropic_model_settings_come_from_arguments_or_the_environment_and_are_checked(monkeypatch):
    import anthropic
    model = AnthropicModel(api_key="k")
    assert type(model.client) is anthropic.Anthropic and model.client.max_retries == 2
    assert (model.max_tokens, model.thinking, model.effort) == (16000, None, None)
    assert AnthropicModel(api_key="k", max_tokens=1).max_tokens == 1
    for bad in (0, True, 2.0):
        with pytest.raises(ValueError) as info:
            AnthropicModel(api_key="k", max_tokens=bad)
        assert str(info.value) == f"max_tokens must be a positive whole number, not {bad!r}"
    monkeypatch.setenv("COURSE_ANTHROPIC_THINKING", " summarized ")
    monkeypatch.setenv("COURSE_ANTHROPIC_EFFORT", "max")
    model = AnthropicModel(api_key="k")
    assert (model.thinking, model.effort) == ("summarized", "max")
    assert (AnthropicModel(api_key="k", thinking="disabled", effort="low").thinking, "low") == ("disabled", "low")
    monkeypatch.setenv("COURSE_ANTHROPIC_THINKING", "")
    with pytest.raises(ValueError) as info:
        AnthropicModel(api_key="k", thinking="deep")
    assert str(info.value) == ("thinking must be one of adaptive, summarized, disabled (or unset for the model's "
                               "default), not 'deep'; check COURSE_ANTHROPIC_THINKING")
    with pytest.raises(ValueError) as info:
        AnthropicModel(api_key="k", effort="extreme")
    assert str(info.value) == ("effort must be one of low, medium, high, xhigh, max (or unset for the model's "
                               "default), not 'extreme'; check COURSE_ANTHROPIC_EFFORT")
    assert AnthropicModel(api_key="k", thinking={"type": "enabled", "budget_tokens": 1024}).thinking == {
        "type": "enabled", "budget_tokens": 1024}


# -- the scripted model (course_lib/models/scripted.py) ----------------------------------------------------------
from course_lib.courseware.scenarios import _act, scenario_model  # noqa: E402
from course_lib.models.scripted import ScriptedModel  # noqa: E402


def test_a_script_that_runs_out_says_how_long_it_was_and_which_call_asked():
    for replies, count in ((["only"], "1 reply"), (["a", "b"], "2 replies"), ([], "0 replies")):
        model = ScriptedModel(replies)
        for _ in replies:
            model.complete([])
        said = model_error(lambda: model.complete([]))
        assert said == (f"the script ran out: it has {count} and call {len(replies) + 1} asked for another; add "
                        "replies to the script or lower max_steps.")


def test_a_text_protocol_script_refuses_a_native_call_saying_which_reply_and_what_to_do():
    call = Reply(tool_calls=(ToolCall("lookup", {"topic": "단가"}, id="c1"),))
    model = ScriptedModel(["plain text", call])
    model.complete([])
    assert model_error(lambda: model.complete([])) == (
        "reply 2 of the script has native tool calls, but this model speaks the text protocol: use "
        "ScriptedModel(..., native_tools=True), or write the call as JSON text")
    assert ScriptedModel([call], native_tools=True).complete([]) is call


def test_a_scripted_action_is_the_json_protocol_with_korean_kept():
    assert _act("lookup", topic="단가") == '{"tool": "lookup", "args": {"topic": "단가"}}'


def test_an_unknown_scenario_lists_the_ones_there_are():
    with pytest.raises(KeyError) as info:
        scenario_model("nope")
    assert info.value.args[0] == "no scenario 'nope'; choose one of: price, trip, divide, notice, save, repeat"


def test_an_openai_model_without_a_key_names_openai_s_variable(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(MissingKeyError, match="^OPENAI_API_KEY is not set"):
        OpenAIModel()
