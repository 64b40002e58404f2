"""Stage 11, structured output: the answer as a forced tool call (real SDKs against the stand-in), checked by
stage 05's dispatcher and the answer function itself, next to asking nicely."""
import pytest

from course_lib.models import ModelError, ScriptedModel
from course_lib.models.anthropic import AnthropicModel
from course_lib.models.base import Reply
from course_lib.courseware.standin import StandInServer
from course_lib.structured import ask_nicely, structured_answer, takes_tool_choice
from course_lib.tools import ToolError
from test_tool_choice import KEY, make, provider  # noqa: F401  (provider: the fixture, both APIs)

HISTORY = [{"role": "system", "content": "Be brief."},
           {"role": "user", "content": "부산 출장 2박, 모두 얼마예요?"},
           {"role": "assistant", "content": "Two nights in Busan come to 255,000 won."}]
GOOD = {"city": "Busan", "nights": 2, "total_won": 255000}


def trip_report(city: str, nights: int, total_won: int) -> str:
    """Report what a business trip costs.

    Args:
        city: where the trip goes
        nights: nights away, 1 or more
        total_won: the whole cost in won
    """
    if nights < 1:
        raise ToolError(f"nights must be 1 or more, not {nights}")
    return "recorded"


def call(args, text=""):
    return {"text": text, "tool_calls": [{"name": "trip_report", "args": args}]}


def test_forced_the_answer_is_the_call_s_checked_arguments(provider):
    with StandInServer([call(GOOD, text="Here is the report.")]) as server:
        result = structured_answer(make(provider, server), HISTORY, trip_report)
    assert result.data == GOOD and result.problem is None and result.forced and result.reply.text == ""
    body = server.requests[0]["body"]
    assert body["tool_choice"] in ({"type": "tool", "name": "trip_report"},
                                   {"type": "function", "function": {"name": "trip_report"}})
    names = [t.get("name") or t["function"]["name"] for t in body["tools"]]
    assert names == ["trip_report"]   # the answer's shape is the only tool offered
    last = body["messages"][-1]
    assert "Give your final answer by calling trip_report." in str(last["content"])


@pytest.mark.parametrize("args, said", [
    ({"city": "Busan", "nights": "two", "total_won": 255000}, "nights"),
    ({"city": "Busan", "total_won": 255000}, "nights"),
    ({**GOOD, "currency": "KRW"}, "currency"),
    ({**GOOD, "nights": 0}, "nights must be 1 or more, not 0"),
    ({**GOOD, "nights": True}, "nights"),
])
def test_a_call_with_a_wrong_field_is_a_problem_not_data(provider, args, said):
    with StandInServer([call(args)]) as server:
        result = structured_answer(make(provider, server), HISTORY, trip_report)
    assert result.data is None and said in result.problem


def test_asked_nicely_a_native_model_may_answer_in_prose_and_nothing_forces_it(provider):
    with StandInServer(["Two nights in Busan: 255,000 won.", call(GOOD)]) as server:
        model = make(provider, server)
        prose = structured_answer(model, HISTORY, trip_report, force=False)
        called = structured_answer(model, HISTORY, trip_report, force=False)
    assert prose.data is None and not prose.forced
    assert prose.problem.startswith("the reply is not a usable trip_report call: no JSON object found")
    assert called.data == GOOD and called.problem is None
    assert all("tool_choice" not in r["body"] for r in server.requests)


def test_anthropic_with_thinking_on_refuses_the_forced_call_but_asking_works():
    with StandInServer([{"thinking": "sum it", "tool_calls": [{"name": "trip_report", "args": GOOD}]}]) as server:
        model = make("anthropic", server, thinking="adaptive")
        with pytest.raises(ModelError, match="Thinking may not be enabled when tool_choice forces tool use"):
            structured_answer(model, HISTORY, trip_report)
        assert structured_answer(model, HISTORY, trip_report, force=False).data == GOOD


@pytest.mark.parametrize("reply, data, said", [
    ('{"tool": "trip_report", "args": {"city": "Busan", "nights": 2, "total_won": 255000}}', GOOD, None),
    ('Sure! ```json\n{"tool": "trip_report", "args": {"city": "부산", "nights": 2, "total_won": 255000}}\n```',
     {**GOOD, "city": "부산"}, None),
    ('{"tool": "finish", "args": {"answer": "255,000 won"}}', None, 'it names "finish", not "trip_report"'),
    ("255,000 won for two nights.", None, "no JSON object found"),
    ('{"tool": "trip_report", "args": {"city": "Busan", "nights": 2}}', None, "total_won"),
])
def test_a_text_model_asked_nicely_is_read_with_parse_reply(reply, data, said):
    model = ScriptedModel([reply])
    result = structured_answer(model, HISTORY, trip_report, force=False)
    assert result.data == data and (said is None and result.problem is None or said in result.problem)
    assert model.calls[0][-1]["content"] == ask_nicely(trip_report)
    assert '{"tool": "trip_report", "args": {...}}' in ask_nicely(trip_report)
    assert '"nights": {"type": "integer", "description": "nights away, 1 or more"}' in ask_nicely(trip_report)
    assert '"required": ["city", "nights", "total_won"]' in ask_nicely(trip_report)


def test_a_model_that_takes_no_tool_choice_cannot_be_forced():
    assert not takes_tool_choice(ScriptedModel([])) and not takes_tool_choice(lambda messages: "x")
    assert takes_tool_choice(AnthropicModel(api_key=KEY, base_url="http://127.0.0.1:9"))
    with pytest.raises(TypeError, match="ScriptedModel cannot be told which tool to call"):
        structured_answer(ScriptedModel(["{}"]), HISTORY, trip_report)


@pytest.mark.parametrize("tool, history, error", [
    (lambda city: city, HISTORY, TypeError), ("trip_report", HISTORY, TypeError),
    (trip_report, [], ValueError), (trip_report, "hello", ValueError),
])
def test_bad_arguments_are_refused_before_any_call(tool, history, error):
    model = ScriptedModel([])
    with pytest.raises(error):
        structured_answer(model, history, tool, force=False)
    assert model.calls == []


def test_the_data_is_a_copy_the_reply_cannot_change():
    model = ScriptedModel(['{"tool": "trip_report", "args": {"city": "Busan", "nights": 2, "total_won": 1}}'])
    result = structured_answer(model, HISTORY, trip_report, force=False)
    result.data["city"] = "Seoul"
    assert structured_answer(ScriptedModel([result.reply]), HISTORY, trip_report, force=False).data["city"] == "Busan"


# --- pinned for mutation testing (issue 16): messages, the `forced` flag, and models that are only a function ---

def test_refusals_say_what_was_wrong():
    """SPEC §8: each refusal names the problem and what to do instead."""
    with pytest.raises(TypeError) as e:
        structured_answer(ScriptedModel([]), HISTORY, "trip_report", force=False)
    assert "answer_tool must be a named function, not 'trip_report'" in str(e.value)
    with pytest.raises(ValueError) as e:
        structured_answer(ScriptedModel([]), [], trip_report, force=False)
    assert str(e.value) == "history must be the non-empty list of messages of a conversation"
    with pytest.raises(TypeError) as e:
        structured_answer(ScriptedModel([]), HISTORY, trip_report)
    assert str(e.value) == ("ScriptedModel cannot be told which tool to call (its complete() takes no tool_choice): "
                            "use a real API's adapter, or force=False to ask in the prompt")


def test_a_callable_without_a_name_is_refused_as_an_answer_tool():
    """An answer tool with no __name__ (a functools.partial, a callable object) has no tool name to ask for."""
    import functools

    model = ScriptedModel([])
    with pytest.raises(TypeError, match="answer_tool must be a named function"):
        structured_answer(model, HISTORY, functools.partial(trip_report, "Busan"), force=False)
    assert model.calls == []


def test_a_plain_function_model_is_asked_in_the_json_action_format():
    """A model that is only a function of the messages (no complete(), no native_tools) gets stage 04's request
    and its text reply is read with parse_reply."""
    seen = []

    def model(messages):
        seen.append(messages)
        return '{"tool": "trip_report", "args": {"city": "Busan", "nights": 2, "total_won": 255000}}'

    result = structured_answer(model, HISTORY, trip_report, force=False)
    assert result.data == GOOD and result.problem is None and result.forced is False
    assert seen[0][:-1] == HISTORY and seen[0][-1] == {"role": "user", "content": ask_nicely(trip_report)}


def test_asked_nicely_a_model_with_complete_is_offered_the_answer_tool():
    """force=False still sends the answer tool (only tool_choice is left out)."""
    offered = []

    class Native:
        native_tools = True

        def complete(self, messages, tools=None):
            offered.append((messages[-1]["content"], tools))
            return Reply.coerce({"text": "", "tool_calls": [{"name": "trip_report", "args": GOOD}]})

    result = structured_answer(Native(), HISTORY, trip_report, force=False)
    assert result.data == GOOD and result.forced is False
    assert offered == [("Give your final answer by calling trip_report.", {"trip_report": trip_report})]


def test_a_problem_keeps_the_forced_flag_and_the_reply():
    """A refused answer still says whether the call was forced and carries the model's reply for inspection."""
    class Forced:
        native_tools = True

        def complete(self, messages, tools=None, tool_choice=None):
            assert tool_choice == "trip_report"
            return Reply.coerce(call({**GOOD, "nights": 0}))

    forced = structured_answer(Forced(), HISTORY, trip_report)
    assert forced.problem and forced.forced is True
    assert [(c.name, c.args) for c in forced.reply.tool_calls] == [("trip_report", {**GOOD, "nights": 0})]
    text = ScriptedModel(["255,000 won."])
    asked = structured_answer(text, HISTORY, trip_report, force=False)
    assert asked.problem and asked.forced is False and asked.reply.text == "255,000 won."
    bad = ScriptedModel(['{"tool": "trip_report", "args": {"city": "Busan", "nights": 0, "total_won": 1}}'])
    refused = structured_answer(bad, HISTORY, trip_report, force=False)
    assert "nights must be 1 or more, not 0" in refused.problem
    assert refused.forced is False and refused.reply.text.startswith('{"tool": "trip_report"')


def test_the_schema_in_the_request_keeps_non_ascii_text_readable():
    """ask_nicely writes the schema with ensure_ascii=False: a Korean description reaches the model as Korean."""
    def 출장_보고(도시: str) -> str:
        """출장 보고.

        Args:
            도시: 출장 가는 도시
        """
        return 도시

    asked = ask_nicely(출장_보고)
    assert '"도시": {"type": "string", "description": "출장 가는 도시"}' in asked and "\\u" not in asked


def test_a_complete_whose_signature_cannot_be_read_is_not_assumed_to_take_tool_choice():
    """takes_tool_choice answers False, rather than crashing, when inspect cannot read complete()'s signature."""
    class Opaque:
        complete = max   # a builtin: inspect.signature raises ValueError

    assert takes_tool_choice(Opaque()) is False
