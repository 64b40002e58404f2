"""Stage 11, reason then act: an optional "thought" in the action object, kept in the trace, the transcript and
the stepper; in native mode the text beside the tool calls plays the same part. Nothing else changes."""
import json

import pytest

from course_lib import default_tools
from course_lib.agent import Agent
from course_lib.describe import build_system_prompt
from course_lib.models import Reply, ScriptedModel, ToolCall
from course_lib.parsing import parse_reply


def act(tool, thought=None, **args):
    action = {"tool": tool, "args": args}
    if thought is not None:
        action = {"thought": thought, **action}
    return json.dumps(action, ensure_ascii=False)


@pytest.mark.parametrize("reply, thought", [
    (act("calculator", "24 a unit, 7 units: multiply.", expression="24*7"), "24 a unit, 7 units: multiply."),
    (act("calculator", "  padded  ", expression="1+1"), "padded"),
    (act("calculator", expression="1+1"), None),
    (act("calculator", "", expression="1+1"), None),
    (act("calculator", "   ", expression="1+1"), None),
    ('{"thought": null, "tool": "calculator", "args": {"expression": "1+1"}}', None),
    ('Sure.\n```json\n{"tool": "lookup", "args": {"topic": "단가"}, "thought": "단가를 먼저 찾자"}\n```',
     "단가를 먼저 찾자"),
    (act("finish", "I have both numbers.", answer="$168"), "I have both numbers."),
])
def test_the_thought_comes_back_and_the_action_is_unchanged(reply, thought):
    parsed = parse_reply(reply)
    assert parsed.ok and parsed.thought == thought
    assert parsed.tool in ("calculator", "lookup", "finish") and "thought" not in parsed.args


@pytest.mark.parametrize("value, kind", [(7, "int"), (["a"], "list"), ({"why": "x"}, "dict"), (True, "bool")])
def test_a_thought_that_is_not_text_is_refused_with_a_reason(value, kind):
    parsed = parse_reply(json.dumps({"thought": value, "tool": "calculator", "args": {"expression": "1"}}))
    assert not parsed.ok and parsed.thought is None
    assert parsed.error == f'"thought" must be text (a sentence of reasoning), not {kind}'


def test_the_agent_keeps_each_thought_in_its_trace_and_the_saved_history(tmp_path):
    model = ScriptedModel([act("lookup", "I need the unit price first.", topic="단가"),
                           act("calculator", expression="24*7"),
                           act("finish", "168 is the total.", answer="$168")])
    agent = Agent(default_tools(), model)
    assert agent.run("What do seven units cost?") == "$168"
    assert [s.thought for s in agent.trace] == ["I need the unit price first.", None, "168 is the total."]
    saved = json.loads(agent.save(tmp_path).read_text(encoding="utf-8"))
    said = [json.loads(m["content"]).get("thought") for m in saved["history"] if m["role"] == "assistant"]
    assert said == ["I need the unit price first.", None, "168 is the total."]   # the history keeps what it said


def test_a_bad_thought_is_a_format_error_the_model_can_fix():
    model = ScriptedModel(['{"thought": 3, "tool": "calculator", "args": {"expression": "2*3"}}',
                           act("finish", "fixed", answer="6")])
    agent = Agent(default_tools(), model)
    assert agent.run("2*3?") == "6" and agent.trace[0].error.startswith('"thought" must be text')
    assert '"thought" must be text' in model.calls[1][-1]["content"]


def test_native_text_beside_tool_calls_is_the_thought_and_a_plain_answer_has_none():
    calls = (ToolCall("calculator", {"expression": "24*7"}, "c1"),)
    model = ScriptedModel([Reply(text=" Seven units at $24: multiply. ", tool_calls=calls),
                           Reply(tool_calls=(ToolCall("lookup", {"topic": "단가"}, "c2"),)),
                           Reply(text="$168")], native_tools=True)
    agent = Agent(default_tools(), model)
    assert agent.run("What do seven units cost?") == "$168"
    assert [s.thought for s in agent.trace] == ["Seven units at $24: multiply.", None, None]


def test_the_prompt_asks_for_a_thought_only_when_told():
    tools = default_tools()
    plain, asking = build_system_prompt(tools), build_system_prompt(tools, thought=True)
    assert '"thought"' not in plain and asking.startswith(plain)
    assert '{"thought": "<why this step>", "tool": "<tool name>", "args": {...}}' in asking
    native, native_asking = build_system_prompt(tools, native=True), build_system_prompt(tools, native=True,
                                                                                          thought=True)
    assert "why" not in native and native_asking.startswith(native) and "why you make it" in native_asking


def test_the_stepper_shows_the_thought_escaped_and_only_when_there_is_one():
    pytest.importorskip("ipywidgets")
    from course_lib.courseware.widgets import AgentStepper
    model = ScriptedModel([act("calculator", "<b>multiply</b> & add", expression="24*7"),
                           act("finish", answer="$168")])
    stepper = AgentStepper(Agent(default_tools(), model), "7 units?")
    assert stepper.state()["thought"] is None and "thought" not in stepper.details.value
    stepper.step_button.click()
    assert stepper.state()["thought"] == "<b>multiply</b> & add"
    assert "<b>thought</b>" in stepper.details.value
    assert "<i>&lt;b&gt;multiply&lt;/b&gt; &amp; add</i>" in stepper.details.value
    stepper.step_button.click()
    assert stepper.state()["thought"] is None and "<b>thought</b>" not in stepper.details.value


def test_reprs_show_a_thought_only_when_there_is_one():
    plain = parse_reply(act("calculator", expression="1+1"))
    assert repr(plain) == "ParsedReply(ok=True, tool='calculator', args={'expression': '1+1'}, error=None)"
    assert repr(parse_reply(act("calculator", "add", expression="1+1"))).endswith("error=None, thought='add')")
    agent = Agent(default_tools(), ScriptedModel([act("finish", "done", answer="2"), act("finish", answer="3")]))
    agent.run("1+1?")
    assert repr(agent.trace[0]) == ("Step(number=1, reply='{\"thought\": \"done\", \"tool\": \"finish\", \"args\": "
                                    "{\"answer\": \"2\"}}', thought='done', runs=[], error=None, answer='2')")
    agent.run("again")
    assert "thought" not in repr(agent.trace[0])


def test_the_step_cap_message_counts_one_step_as_one_step():
    from course_lib.models import ScriptedModel as Model
    one = Agent(default_tools(), Model([act("calculator", expression="1+1")]), max_steps=1)
    one.run("2?")
    assert one.answer.startswith("Stopped after 1 step without an answer (the step cap is 1)")
    two = Agent(default_tools(), Model([act("calculator", expression="1+1"), act("calculator", expression="2+2")]),
                max_steps=2)
    two.run("2?")
    assert two.answer.startswith("Stopped after 2 steps without an answer")
