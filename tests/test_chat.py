"""Stage 10: a conversation in one history — ``ChatAgent.chat`` turn by turn, ``turns``, and the calls a stopped
turn left without a result answered before the next turn. (These were the stage-06 Agent's own tests until the
Agent went back to stage 06 and chat became a stage-10 subclass.)"""
import json
import logging

import pytest

from course_lib import default_tools
from course_lib.control import handoff
from course_lib.memory import ChatAgent
from course_lib.courseware.scenarios import scenario_model
from course_lib.models import Reply, ScriptedModel, ToolCall


def act(tool, **args):
    return json.dumps({"tool": tool, "args": args}, ensure_ascii=False)


def finish(answer):
    return act("finish", answer=answer)


@pytest.fixture
def tools():
    return default_tools()


def every_call_answered(history):
    """Each assistant message with tool_calls is followed by one tool result per call id, before anything else."""
    for i, m in enumerate(history):
        if m.get("tool_calls"):
            after = [r["tool_call_id"] for r in history[i + 1:i + 1 + len(m["tool_calls"])] if r["role"] == "tool"]
            assert after == [c["id"] for c in m["tool_calls"]], f"message {i} has unanswered tool calls"
    return True


def test_chat_continues_the_same_history_turn_by_turn(tools):
    model = ScriptedModel([act("lookup", topic="단가"), finish("$24 each."),
                           act("calculator", expression="24*7"), finish("Seven cost $168.")])
    agent = ChatAgent(tools, model)
    assert agent.chat("What is the unit price?") == "$24 each."
    assert [m["role"] for m in agent.history] == ["system", "user", "assistant", "user", "assistant"]
    assert agent.chat("And seven of them?") == "Seven cost $168."
    assert model.calls[2][:5] == agent.history[:5] and model.calls[2][5] == {"role": "user",
                                                                              "content": "And seven of them?"}
    assert agent.turns == [
        {"message": "What is the unit price?", "answer": "$24 each.", "stop_reason": "finish", "steps": 2},
        {"message": "And seven of them?", "answer": "Seven cost $168.", "stop_reason": "finish", "steps": 2}]
    assert agent.goal == "What is the unit price?" and agent.steps == 2 and len(agent.trace) == 4
    assert agent.transcript()["turns"] == agent.turns and agent.history[0]["role"] == "system"


def test_max_steps_counts_per_turn_and_a_stopped_turn_does_not_stop_the_next(tools):
    model = ScriptedModel([act("lookup", topic="단가")] * 2 + [act("lookup", topic="배송"),
                                                              finish("Free over $50.")])
    agent = ChatAgent(tools, model, max_steps=2)
    agent.chat("price?")
    assert agent.stop_reason == "max_steps" and handoff(agent, agent.request).goal == "price?"
    assert agent.chat("shipping?") == "Free over $50."
    assert [t["steps"] for t in agent.turns] == [2, 2] and handoff(agent) is None
    assert [t["stop_reason"] for t in agent.turns] == ["max_steps", "finish"]


def test_run_starts_afresh_and_records_its_turn(tools):
    goal, model = scenario_model("price")
    agent = ChatAgent(tools, ScriptedModel([finish("hi")]))
    agent.chat("hello")
    agent.model = model
    agent.run(goal)
    assert agent.turns == [{"message": goal, "answer": agent.answer, "stop_reason": "finish", "steps": 4}]
    assert agent.history[1] == {"role": "user", "content": goal} and len(agent.history) == 9


def test_a_native_turn_stopped_with_a_call_pending_leaves_no_unanswered_call(tools):
    call = Reply("", (ToolCall("lookup", {"topic": "단가"}, "a"), ToolCall("lookup", {"topic": "단가"}, "b")))
    model = ScriptedModel([call, Reply("", (ToolCall("lookup", {"topic": "단가"}, "c"),
                                            ToolCall("lookup", {"topic": "단가"}, "d"))), "It is $24."],
                          native_tools=True)
    agent = ChatAgent(tools, model, repeat_limit=2)
    agent.chat("price?")
    assert agent.stop_reason == "repeated_call" and every_call_answered(agent.history)
    closing = agent.history[-2:]
    assert [m["tool_call_id"] for m in closing] == ["c", "d"] and all(m["is_error"] for m in closing)
    assert closing[0]["content"] == "Not run: the turn stopped (repeated_call) before this call ran."
    assert agent.chat("Just tell me.") == "It is $24." and every_call_answered(agent.history)


def test_a_cut_off_call_after_run_is_answered_before_the_next_turn(tools):
    model = ScriptedModel([{"text": "", "tool_calls": [{"name": "lookup", "args": {"topic": "단"}, "id": "x"}],
                            "stop": "max_tokens"}, "Sorry, $24."], native_tools=True)
    agent = ChatAgent(tools, model)
    agent.run("price?")
    assert agent.stop_reason == "max_tokens" and agent.history[-1]["tool_calls"]   # run() leaves history as it was
    agent.chat("Try again?")
    assert every_call_answered(agent.history) and agent.history[3]["tool_call_id"] == "x"
    assert agent.history[4] == {"role": "user", "content": "Try again?"}


def test_only_the_calls_without_a_result_are_answered(tools):
    agent = ChatAgent(tools, ScriptedModel(["All done."], native_tools=True))
    agent.history = [{"role": "system", "content": "s"}, {"role": "user", "content": "two lookups"},
                     {"role": "assistant", "content": "", "tool_calls": [{"id": "a", "name": "lookup", "args": {}},
                                                                          {"id": "b", "name": "lookup", "args": {}}]},
                     {"role": "tool", "tool_call_id": "a", "name": "lookup", "content": "개당 $24",
                      "is_error": False}]
    assert agent.chat("Go on.") == "All done."
    assert [m.get("tool_call_id") for m in agent.history[3:5]] == ["a", "b"] and agent.history[5]["content"] == "Go on."
    assert agent.goal == "Go on." and agent.turns[0]["steps"] == 1   # a history from elsewhere: its first goal


def test_a_text_turn_stopped_on_a_repeated_call_gets_an_observation(tools):
    goal, model = scenario_model("repeat")
    agent = ChatAgent(tools, model, repeat_limit=2)
    agent.chat(goal)
    assert agent.stop_reason == "repeated_call"
    assert agent.history[-1] == {"role": "user", "content": "Observation: Error: Not run: the turn stopped "
                                                            "(repeated_call) before this call ran."}


def test_chat_needs_text(tools):
    with pytest.raises(TypeError, match="message must be text, not dict"):
        ChatAgent(tools, ScriptedModel([])).chat({"role": "user"})


def test_bad_replies_logged_and_chat_messages_logged(tools, caplog):
    agent = ChatAgent(tools, ScriptedModel(["?", finish("hi")]))
    with caplog.at_level(logging.INFO, logger="course_lib.agent"):
        agent.chat("hello")
    messages = [r.getMessage() for r in caplog.records]
    assert messages[:2] == ["message: hello", "step 1: unusable reply: no JSON object found"]


def test_a_turn_that_failed_before_any_reply_does_not_stop_the_next(tools):
    agent = ChatAgent(tools, ScriptedModel([ConnectionError("down"), finish("hi")]))
    agent.chat("hello")
    assert agent.stop_reason == "model_error"
    assert agent.chat("again?") == "hi"
    assert [m["role"] for m in agent.history] == ["system", "user", "user", "assistant"]


def test_a_text_turn_stopped_after_its_observation_gets_no_extra_note(tools):
    agent = ChatAgent(tools, ScriptedModel([act("lookup", topic="단가"), finish("$24")]), max_steps=1)
    agent.chat("price?")
    assert agent.stop_reason == "max_steps"
    assert agent.history[-1] == {"role": "user", "content": "Observation: 개당 $24"}   # it did run
    assert agent.chat("so?") == "$24"


def test_the_handoff_of_a_later_turn_names_that_turn(tools):
    """Stage 09's handoff knows no chat: the turn's message is ``request``, passed as the note's goal."""
    agent = ChatAgent(tools, ScriptedModel([finish("hi"), act("lookup", topic="단가")]), max_steps=1)
    agent.chat("hello")
    agent.chat("price?")
    assert agent.stop_reason == "max_steps" and agent.request == "price?" and agent.goal == "hello"
    assert handoff(agent, agent.request).goal == "price?" and handoff(agent).goal == "hello"
    assert handoff(agent).tried == ["lookup({\"topic\": \"단가\"}) → ok: 개당 $24"]   # this turn's steps only


def test_the_closing_note_for_a_native_call_is_a_whole_tool_result(tools):
    call = Reply("", (ToolCall("lookup", {"topic": "단가"}, "a"),))
    agent = ChatAgent(tools, ScriptedModel([call, call, "ok"], native_tools=True), repeat_limit=2)
    agent.chat("x")
    assert agent.history[-1] == {"role": "tool", "tool_call_id": "a", "name": "lookup", "is_error": True,
                                 "content": "Not run: the turn stopped (repeated_call) before this call ran."}


def test_a_native_answer_that_looks_like_a_text_tool_call_gets_no_closing_note(tools):
    # For a native model, text is the answer even when it reads like a JSON tool call: nothing is pending.
    looks_like_a_call = act("lookup", topic="단가")
    agent = ChatAgent(tools, ScriptedModel([looks_like_a_call, "Fine."], native_tools=True))
    assert agent.chat("x") == looks_like_a_call
    assert agent.chat("and?") == "Fine."
    assert [m["role"] for m in agent.history] == ["system", "user", "assistant", "user", "assistant"]


def test_a_saved_conversation_keeps_its_turns_and_any_extra_fields(tools, tmp_path):
    agent = ChatAgent(tools, ScriptedModel([finish("hi"), finish("bye")]))
    agent.chat("hello")
    agent.chat("goodbye")
    saved = json.loads(agent.save(tmp_path / "chat.json", note="kept").read_text(encoding="utf-8"))
    assert saved["note"] == "kept" and [t["message"] for t in saved["turns"]] == ["hello", "goodbye"]
    assert list(saved)[-1] == "history" and saved["goal"] == "hello" and saved["answer"] == "bye"


def test_turns_record_each_message_as_utf8_text_like_the_history():
    # agent.turns is part of the transcript: a half emoji in a chat message becomes U+FFFD there as in history.
    agent = ChatAgent({}, ScriptedModel(["네", "좋아요"], native_tools=True))
    agent.chat("안녕 \ud83d")
    agent.chat("\udc00 또")
    json.dumps(agent.turns, ensure_ascii=False).encode("utf-8")
