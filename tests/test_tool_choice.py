"""Stage 11: tool_choice through the real SDKs against the stand-in, which checks it as the docs describe
(a known kind, a tool that was sent, and for Anthropic no forced tool use while thinking is on) and honours it
(a forced call comes without text; a scripted turn that tool_choice rules out is the script's error)."""
import pytest

from course_lib import default_tools
from course_lib.models import ModelError
from course_lib.models.anthropic import AnthropicModel, choice_to_anthropic
from course_lib.models.remote import checked_choice
from course_lib.models.openai import OpenAIModel, choice_to_openai
from course_lib.courseware.standin import StandInServer

KEY = "sk-test-0123456789"
GOAL = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What do seven units cost?"}]
CALC = {"name": "calculator", "args": {"expression": "24*7"}}


def make(provider, server, **kwargs):
    if provider == "anthropic":
        return AnthropicModel(base_url=server.url, api_key=KEY, max_retries=0, **kwargs)
    return OpenAIModel(base_url=server.url + "/v1", api_key=KEY, max_retries=0, **kwargs)


@pytest.fixture(params=["anthropic", "openai"])
def provider(request):
    return request.param


@pytest.mark.parametrize("choice, anthropic, openai", [
    ("auto", {"type": "auto"}, "auto"), ("none", {"type": "none"}, "none"), ("any", {"type": "any"}, "required"),
    ("calculator", {"type": "tool", "name": "calculator"}, {"type": "function", "function": {"name": "calculator"}}),
])
def test_the_course_choice_in_each_api_s_words(choice, anthropic, openai):
    assert choice_to_anthropic(choice) == anthropic and choice_to_openai(choice) == openai


@pytest.mark.parametrize("choice, tools, said", [
    ("required", default_tools(), "not 'required'"), ("calc", default_tools(), "not 'calc'"),
    (None, default_tools(), "not None"), ("calculator", None, "(no tools were given)"),
    ("", default_tools(), "not ''"),
])
def test_a_choice_that_is_not_one_is_a_value_error_naming_the_options(choice, tools, said):
    with pytest.raises(ValueError, match="tool_choice must be one of auto, any, none or the name of a tool") as e:
        checked_choice(choice, tools)
    assert said in str(e.value)


def test_a_forced_tool_is_called_and_its_text_left_out(provider):
    with StandInServer([{"text": "Let me calculate.", "tool_calls": [CALC]}]) as server:
        reply = make(provider, server).complete(GOAL, default_tools(), tool_choice="calculator")
    assert [(c.name, c.args) for c in reply.tool_calls] == [("calculator", {"expression": "24*7"})]
    assert reply.text == "" and server.problems == []
    sent = server.requests[0]["body"]["tool_choice"]
    assert sent == ({"type": "tool", "name": "calculator"} if provider == "anthropic"
                    else {"type": "function", "function": {"name": "calculator"}})


def test_auto_keeps_the_text_and_any_is_sent_as_each_api_names_it(provider):
    with StandInServer([{"text": "Let me calculate.", "tool_calls": [CALC]}, {"tool_calls": [CALC]}]) as server:
        model = make(provider, server)
        assert model.complete(GOAL, default_tools(), tool_choice="auto").text == "Let me calculate."
        model.complete(GOAL, default_tools(), tool_choice="any")
        assert "tool_choice" not in model.request(GOAL, default_tools())   # not sent unless given
    assert server.requests[1]["body"]["tool_choice"] == ({"type": "any"} if provider == "anthropic" else "required")


@pytest.mark.parametrize("thinking", ["adaptive", "summarized"])
@pytest.mark.parametrize("choice", ["any", "calculator"])
def test_anthropic_refuses_forced_tool_use_while_thinking_is_on(thinking, choice):
    with StandInServer([{"tool_calls": [CALC]}]) as server:
        with pytest.raises(ModelError, match="Thinking may not be enabled when tool_choice forces tool use"):
            make("anthropic", server, thinking=thinking).complete(GOAL, default_tools(), tool_choice=choice)
    assert server.remaining == 1   # a refused request uses up no turn


def test_with_thinking_on_auto_works_and_thinking_disabled_may_force():
    with StandInServer([{"thinking": "multiply", "tool_calls": [CALC]}, {"tool_calls": [CALC]}]) as server:
        assert make("anthropic", server, thinking="adaptive").complete(GOAL, default_tools(), "auto").tool_calls
        assert make("anthropic", server, thinking="disabled").complete(GOAL, default_tools(), "any").tool_calls
    assert server.problems == []


@pytest.mark.parametrize("choice, turn, said", [
    ("none", {"tool_calls": [CALC]}, "calls 'calculator', but tool_choice is none"),
    ("any", {"text": "168"}, "calls no tool, but tool_choice forces a tool call"),
    ("lookup", {"tool_calls": [CALC]}, "calls 'calculator', but tool_choice forces 'lookup'"),
])
def test_a_scripted_turn_the_choice_rules_out_is_the_script_s_error(provider, choice, turn, said):
    with StandInServer([turn]) as server:
        with pytest.raises(ModelError, match=said):
            make(provider, server).complete(GOAL, default_tools(), tool_choice=choice)


def test_anthropic_checks_the_choice_itself():
    tools = [{"name": "calculator", "description": "d", "input_schema": {"type": "object"}}]
    cases = [({"type": "required"}, "does not match any of the expected tags: 'auto', 'any', 'tool', 'none'"),
             ({"type": "tool"}, "tool_choice.tool.name: Field required"),
             ({"type": "tool", "name": "lookup"}, "names the tool 'lookup', which is not among the tools sent")]
    with StandInServer([]) as server:
        client = make("anthropic", server).client
        for choice, said in cases:
            with pytest.raises(Exception, match=said) as e:
                client.messages.create(model="m", max_tokens=10, messages=GOAL[1:], tools=tools, tool_choice=choice)
            assert e.value.status_code == 400
        with pytest.raises(Exception, match="no tools were sent"):
            client.messages.create(model="m", max_tokens=10, messages=GOAL[1:], tool_choice={"type": "any"})


def test_openai_checks_the_choice_itself():
    tools = [{"type": "function", "function": {"name": "calculator", "parameters": {"type": "object"}}}]
    with StandInServer([]) as server:
        client = make("openai", server).client
        with pytest.raises(Exception, match="'tool_choice' is only allowed when 'tools' are specified") as e:
            client.chat.completions.create(model="m", messages=GOAL, tool_choice="auto")
        assert e.value.status_code == 400 and e.value.param == "tool_choice"
        with pytest.raises(Exception, match="Supported values are: 'none', 'auto', and 'required'"):
            client.chat.completions.create(model="m", messages=GOAL, tools=tools, tool_choice="any")
        with pytest.raises(Exception, match="names the tool 'lookup'"):
            client.chat.completions.create(model="m", messages=GOAL, tools=tools,
                                           tool_choice={"type": "function", "function": {"name": "lookup"}})


def test_a_subclass_whose_request_predates_tool_choice_still_works(provider):
    base = AnthropicModel if provider == "anthropic" else OpenAIModel

    class Older(base):   # notebook 08 overrides request(messages, tools) like this
        def request(self, messages, tools=None):
            return super().request(messages, tools)

    with StandInServer(["Seven units cost $168."]) as server:
        model = make(provider, server)
        model.__class__ = Older
        assert model.complete(GOAL, default_tools()).text == "Seven units cost $168."
