"""The two protocols the stage-06 Agent reads replies with: text (stage 04) and native tool calls (stage 07)."""
import pytest

from course_lib import default_tools
from course_lib.agent import Agent
from course_lib.describe import NATIVE_SYSTEM_PROMPT
from course_lib.dispatch import Observation
from course_lib.models import Reply, ScriptedModel, ToolCall
from course_lib.models.native import NATIVE, NativeProtocol
from course_lib.parsing import Reading, TextProtocol


def test_the_agent_takes_the_models_protocol_or_the_text_one():
    assert Agent(default_tools(), ScriptedModel([], native_tools=True)).protocol is NATIVE
    assert isinstance(Agent(default_tools(), ScriptedModel([])).protocol, TextProtocol)
    assert isinstance(Agent(default_tools(), lambda messages: "").protocol, TextProtocol)   # a plain function
    mine = NativeProtocol()
    assert Agent(default_tools(), ScriptedModel([]), protocol=mine).protocol is mine   # given: it wins


def test_native_reading_calls_answer_and_empty_reply():
    calls = (ToolCall("lookup", {"topic": "단가"}, "c1"), ToolCall("calculator", {"expression": "1+1"}, "c2"))
    reading = NATIVE.read(Reply("  let me check  ", calls))
    assert reading.calls == [("lookup", {"topic": "단가"}, "c1"), ("calculator", {"expression": "1+1"}, "c2")]
    assert reading.thought == "let me check" and reading.answer is None and reading.error is None
    assert NATIVE.read(Reply("", calls)).thought is None
    assert NATIVE.read(Reply("42")) == Reading(answer="42")
    empty = NATIVE.read(Reply("  "))
    assert empty.error == "the reply was empty" and "plain text" in empty.fix and empty.keep is False
    thinking_only = NATIVE.read(Reply("", raw={"content": [{"type": "thinking", "thinking": "hm"}]}))
    assert thinking_only.error and thinking_only.keep is True   # its thinking blocks still belong in the history


def test_native_message_keeps_calls_thinking_and_the_providers_content():
    raw = {"content": [{"type": "thinking", "thinking": "t", "signature": "s"}]}
    reply = Reply("half \ud83d", (ToolCall("lookup", {"topic": "x\ud83d"}, "c1"),), thinking="t", raw=raw)
    message = NATIVE.message(reply)
    assert message == {"role": "assistant", "content": "half \ufffd",
                       "tool_calls": [{"id": "c1", "name": "lookup", "args": {"topic": "x\ufffd"}}],
                       "thinking": "t", "raw": raw}
    assert message["raw"] is raw   # sent back exactly as it came
    assert NATIVE.message(Reply("plain")) == {"role": "assistant", "content": "plain"}


def test_native_result_answers_its_call_by_id():
    assert NATIVE.result(("lookup", {}, "c7"), Observation("oops \ud83d", True)) == {
        "role": "tool", "tool_call_id": "c7", "name": "lookup", "content": "oops \ufffd", "is_error": True}


def test_native_close_answers_only_the_calls_left_without_a_result():
    history = [{"role": "user", "content": "go"},
               {"role": "assistant", "content": "", "tool_calls": [{"id": "a", "name": "lookup", "args": {}}]},
               {"role": "tool", "tool_call_id": "a", "name": "lookup", "content": "ok", "is_error": False},
               {"role": "assistant", "content": "", "tool_calls": [{"id": "b", "name": "lookup", "args": {}},
                                                                   {"id": "c", "name": "calculator", "args": {}}]},
               {"role": "tool", "tool_call_id": "b", "name": "lookup", "content": "ok", "is_error": False}]
    assert NATIVE.close(history, "not run") == [
        {"role": "tool", "tool_call_id": "c", "name": "calculator", "content": "not run", "is_error": True}]
    assert NATIVE.close(history[:3], "not run") == []     # every call answered
    assert NATIVE.close(history[:1], "not run") == []     # no assistant turn yet
    assert NATIVE.close([{"role": "assistant", "content": "done"}], "x") == []   # an answer, no calls


def test_native_system_prompt_describes_every_tool_before_the_run():
    assert NATIVE.system_prompt(default_tools()) == NATIVE_SYSTEM_PROMPT

    def untyped(*args):   # *args cannot be told to an API as a schema
        """No schema possible."""

    with pytest.raises(Exception) as failed:
        NATIVE.system_prompt({"untyped": untyped})
    assert "untyped" in str(failed.value)


def test_text_protocol_reads_json_actions_and_closes_an_unanswered_call():
    text = TextProtocol()
    assert text.read(Reply('{"tool": "lookup", "args": {"topic": "x"}}')).calls == [("lookup", {"topic": "x"}, "")]
    assert text.read(Reply('{"tool": "finish", "args": {"answer": "42"}}')).answer == "42"
    bad = text.read(Reply('{"tool": "finish", "args": {}}'))
    assert bad.error and "answer" in bad.error and bad.fix
    assert text.result(("lookup", {}, ""), Observation("fine")) == {"role": "user", "content": "Observation: fine"}
    called = [{"role": "assistant", "content": '{"tool": "lookup", "args": {}}'}]
    assert text.close(called, "not run") == [{"role": "user", "content": "Observation: Error: not run"}]
    assert text.close([{"role": "assistant", "content": '{"tool": "finish", "args": {"answer": "a"}}'}], "x") == []
    assert text.close([{"role": "user", "content": "hi"}], "x") == []
    assert text.close([], "x") == []   # no history yet: nothing to close
    assert text.close([{"role": "user", "content": '{"tool": "lookup", "args": {}}'}], "x") == []   # not a call


def test_text_protocol_keeps_the_thought_of_an_unusable_reply_and_says_what_finish_needs():
    bad = TextProtocol().read(Reply('{"thought": "done, I think", "tool": "finish", "args": {}}'))
    assert (bad.error, bad.thought, bad.calls, bad.answer) == ('finish needs {"answer": "<text>"} in its args',
                                                              "done, I think", [], None)
