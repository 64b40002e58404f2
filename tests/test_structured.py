"""Stage 11, structured output: the answer as a forced tool call (real SDKs against the stand-in), checked by
stage 05's dispatcher and the answer function itself, next to asking nicely."""
import pytest

from course_lib.models import ModelError, ScriptedModel
from course_lib.models.anthropic import AnthropicModel
from course_lib.standin import StandInServer
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
