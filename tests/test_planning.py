"""Stage 11, planning: the TodoList tools run by the real Agent (text protocol and native tool calls) and through
dispatch, the exact checklist and its history, replanning, every refusal's key phrase, and the evaluator–optimiser
loop's rounds, verdicts and stops, with scripted models and critics."""
import json
from pathlib import Path

import pytest

from course_lib import default_tools
from course_lib.agent import Agent
from course_lib.memory import ChatAgent
from course_lib.describe import build_system_prompt, tool_schema, tool_spec
from course_lib.dispatch import dispatch
from course_lib.models import ModelError, ScriptedModel
from course_lib.courseware.patterns_lab import PLAN_ANSWER, PLAN_CALLS, PLAN_GOAL, planning_demo, refine_demo, script
from course_lib.planning import (CRITIC_PROMPT, MAX_FEEDBACK_CHARS, MAX_ITEM_CHARS, MAX_NOTE_CHARS, MAX_TODOS,
                                 Refined, TodoList, Verdict, ask_critic, parse_verdict, refine)
from course_lib.tools import ToolError
from support import lesson_cell

FINAL = """\
1. ☑ 단가 확인 (unit price) — 개당 $24
2. ☑ 총액 계산 (total) — $720
3. ✗ 대량 할인율 확인 (bulk discount) — 할인 정보 없음 (no discount is listed) (replanned below)
4. ☑ 배송비 조건 확인 (shipping terms) — $500 이상 무료
5. ☑ 견적 정리 (write the quote) — 할인 없이 정리"""
AFTER_FAILURE = """\
1. ☑ 단가 확인 (unit price) — 개당 $24
2. ☑ 총액 계산 (total) — $720
3. ✗ 대량 할인율 확인 (bulk discount) — 할인 정보 없음 (no discount is listed)
4. ☐ 견적 정리 (write the quote)"""
CHANGES = ["plan created (4 steps)", "step 1 done", "step 2 done", "step 3 failed", "step 3 replanned as step 4",
           "step 4 done", "step 5 done"]


def planned(*items):
    todos = TodoList()
    todos.create_todos(list(items))
    return todos


def refusal(func, *args):
    with pytest.raises(ToolError) as caught:
        func(*args)
    return str(caught.value)


# ---------------------------------------------------------------- the scripted planning run
@pytest.mark.parametrize("native", [False, True])
def test_planning_demo_plans_works_fails_replans_and_answers(native):
    agent, todos = planning_demo(native)
    assert agent.goal == PLAN_GOAL and todos.items == []   # ready to run, nothing done yet
    answer = agent.run(agent.goal)

    assert (answer, agent.stop_reason, agent.steps) == (PLAN_ANSWER, "finish", len(PLAN_CALLS) + 1)
    runs = [run for step in agent.trace for run in step.runs]
    assert [(r.tool, r.args) for r in runs] == PLAN_CALLS
    assert [r.observation.is_error for r in runs] == [False] * 5 + [True] + [False] * 5   # only the 할인 lookup
    assert todos.checklist() == FINAL
    assert [h["change"] for h in todos.history] == CHANGES
    assert todos.history[3]["checklist"] == AFTER_FAILURE
    assert todos.history[0]["checklist"] == "\n".join(
        f"{n}. ☐ {text}" for n, text in enumerate(PLAN_CALLS[0][1]["items"], 1))
    assert runs[7].observation.content == "Step 3 replaced by step 4:\n" + todos.history[4]["checklist"]
    assert runs[-1].observation.content == "Step 5 done. Every step is finished: give your answer.\n" + FINAL
    assert repr(todos) == "TodoList(5 steps: 4 done, 1 failed, 0 to do)"
    if native:   # every tool result went back by its call's id
        results = [m for m in agent.history if m["role"] == "tool"]
        assert [m["tool_call_id"] for m in results] == [f"call_{n}" for n in range(1, 12)]
        assert [m["name"] for m in results] == [tool for tool, _ in PLAN_CALLS]
    else:
        observations = [m["content"] for m in agent.history if m["role"] == "user"][1:]
        assert observations[0].startswith("Observation: Plan saved (4 steps). Work through them in order")
        assert "create_todos(items: list[str])" in agent.history[0]["content"]   # the model was told of the tools


def test_the_plan_is_state_outside_the_history_and_each_list_is_its_own():
    agent, todos = planning_demo()
    other = TodoList()
    agent.run(agent.goal)
    assert other.items == [] and other.history == []
    snapshot = todos.history[0]["checklist"]
    todos.create_todos(["다음 주문"])   # every step is done or failed: a new plan may start
    assert todos.history[0]["checklist"] == snapshot   # history holds snapshots, not live views
    assert todos.history[-1] == {"change": "new plan (1 step)", "checklist": "1. ☐ 다음 주문"}


def test_the_demos_can_be_stepped_one_model_call_at_a_time():
    agent, todos = planning_demo()
    agent.step()
    assert todos.checklist().startswith("1. ☐ 단가 확인") and len(todos.history) == 1
    agent.step(), agent.step()
    assert todos.history[-1]["change"] == "step 1 done"


# ---------------------------------------------------------------- tools the course can describe and dispatch
def test_every_tool_has_a_schema_and_the_default_tools_merge():
    todos = TodoList()
    tools = todos.tools()
    assert list(tools) == ["create_todos", "mark_complete", "mark_failed", "replan", "show_todos"]
    assert tool_schema(tools["create_todos"]) == {
        "type": "object", "required": ["items"], "additionalProperties": False,
        "properties": {"items": {"type": "array", "items": {"type": "string"},
                                 "description": 'the steps, each one short action, e.g. ["단가 확인", "총액 계산"]; '
                                                "at most 20."}}}
    complete = tool_schema(tools["mark_complete"])
    assert complete["required"] == ["index"] and complete["properties"]["note"]["default"] == ""
    assert complete["properties"]["index"]["type"] == "integer"
    assert tool_schema(tools["mark_failed"])["required"] == ["index", "reason"]
    assert tool_schema(tools["replan"])["required"] == ["index", "items"]
    assert tool_schema(tools["show_todos"])["properties"] == {}
    merged = {**default_tools(), **tools}
    assert [tool_spec(name, f)["name"] for name, f in merged.items()][-5:] == list(tools)
    assert "- mark_failed(index: int, reason: str): Mark a step" in build_system_prompt(merged)
    Agent(merged, ScriptedModel([], native_tools=True))   # native: every tool described up front, or it raises


@pytest.mark.parametrize("name, args, phrase", [
    ("mark_complete", {"index": True}, "argument 'index' of mark_complete must be int, got boolean"),
    ("mark_complete", {"index": "1"}, "must be int, got string"),
    ("mark_complete", {"index": 1.0}, "must be int, got number"),
    ("create_todos", {"items": "단가 확인"}, "argument 'items' of create_todos must be list[str]"),
    ("create_todos", {"items": ["ok", 3]}, "must be list[str]"),
    ("create_todos", {"steps": ["a"]}, "unexpected argument(s) 'steps'"),
    ("mark_failed", {"index": 1}, "missing required argument(s) 'reason'"),
    ("replan", {"index": 1, "items": ["x"]}, "replan: step 1 has not failed"),
    ("create_todos", {"items": ["again"]}, "create_todos: a plan is already open (2 of 2 steps still to do)"),
    ("mark_complete", {"index": 9}, "mark_complete: there is no step 9; index must be a step number from 1 to 2"),
])
def test_bad_calls_become_error_observations(name, args, phrase):
    todos = planned("단가 확인", "총액 계산")
    obs = dispatch(todos.tools(), name, args)
    assert obs.is_error and phrase in obs.content, obs.content
    assert [h["change"] for h in todos.history] == ["plan created (2 steps)"]   # nothing changed


def test_a_good_call_through_dispatch_returns_the_checklist():
    todos = TodoList()
    obs = dispatch(todos.tools(), "create_todos", {"items": ["단가 확인", "총액 계산"]})
    assert not obs.is_error
    assert obs.content == ("Plan saved (2 steps). Work through them in order and mark each one:\n"
                           "1. ☐ 단가 확인\n2. ☐ 총액 계산")
    obs = dispatch(todos.tools(), "mark_complete", {"index": 1})
    assert obs.content == "Step 1 done. 1 left.\n1. ☑ 단가 확인\n2. ☐ 총액 계산"
    assert dispatch(todos.tools(), "show_todos", {}).content == "1. ☑ 단가 확인\n2. ☐ 총액 계산"


# ---------------------------------------------------------------- the checklist, the history, replanning
def test_checklist_and_history_step_by_step():
    todos = TodoList()
    assert todos.checklist() == "(no plan yet)" and todos.history == []
    assert todos.show_todos() == "There is no plan yet; call create_todos with the steps."
    todos.create_todos(["a", "b", "c"])
    assert todos.mark_failed(2, "  no\n data  ") == ("Step 2 marked failed. Replan it with new steps, or go on "
                                                      "without it:\n1. ☐ a\n2. ✗ b — no data\n3. ☐ c")
    assert todos.replan(2, ["b1", "b2"]) == ("Step 2 replaced by steps 3-4:\n1. ☐ a\n"
                                             "2. ✗ b — no data (replanned below)\n3. ☐ b1\n4. ☐ b2\n5. ☐ c")
    todos.mark_complete(5, "")
    assert todos.left == 3
    assert [h["change"] for h in todos.history] == ["plan created (3 steps)", "step 2 failed",
                                                    "step 2 replanned as steps 3-4", "step 5 done"]
    assert todos.history[-1]["checklist"] == ("1. ☐ a\n2. ✗ b — no data (replanned below)\n3. ☐ b1\n4. ☐ b2\n"
                                              "5. ☑ c")
    assert repr(todos) == "TodoList(5 steps: 1 done, 1 failed, 3 to do)"


def test_a_failed_step_left_without_a_replan_closes_the_plan():
    todos = planned("a")
    todos.mark_failed(1, "blocked")
    assert todos.left == 0
    assert todos.create_todos(["b"]).startswith("Plan saved (1 step).")
    assert todos.checklist() == "1. ☐ b"


def test_korean_and_emoji_items_round_trip_through_the_text_protocol():
    items = ["  서울역 출발 시각\n확인 ", "부산까지 거리 계산 🚄", "만나는 시각 정리"]
    reply = json.dumps({"tool": "create_todos", "args": {"items": items}})   # \uXXXX escapes, as some models send
    todos = TodoList()
    agent = Agent(todos.tools(), ScriptedModel([reply, json.dumps(
        {"tool": "mark_complete", "args": {"index": 2, "note": "약 400km"}}), json.dumps(
        {"tool": "finish", "args": {"answer": "끝"}})]))
    assert agent.run("두 열차는 언제 만날까?") == "끝"
    assert [t.text for t in todos.items] == ["서울역 출발 시각 확인", "부산까지 거리 계산 🚄", "만나는 시각 정리"]
    assert todos.checklist() == "1. ☐ 서울역 출발 시각 확인\n2. ☑ 부산까지 거리 계산 🚄 — 약 400km\n3. ☐ 만나는 시각 정리"
    assert "부산까지 거리 계산 🚄" in agent.history[3]["content"]   # the observation is readable Korean


def test_half_an_emoji_is_mended_not_kept():
    todos = planned("bad \ud83d text")
    assert todos.items[0].text == "bad \ufffd text"


# ---------------------------------------------------------------- every refusal, at and just past its limits
def test_refusals_of_create_todos():
    todos = TodoList()
    assert "items must be a non-empty list of steps" in refusal(todos.create_todos, [])
    assert "items must be a non-empty list of steps" in refusal(todos.create_todos, "a, b")
    assert "step 2 of items is empty or not text" in refusal(todos.create_todos, ["a", "   "])
    assert "step 1 of items is empty or not text" in refusal(todos.create_todos, [7])
    assert "21 steps more would make the plan longer than 20 steps; merge small steps" in refusal(
        todos.create_todos, ["x"] * (MAX_TODOS + 1))
    assert (f"step 2 is {MAX_ITEM_CHARS + 1} characters long; keep each step under {MAX_ITEM_CHARS}"
            in refusal(todos.create_todos, ["a", "가" * (MAX_ITEM_CHARS + 1)]))
    assert "step 1 contains control characters; send plain text" in refusal(todos.create_todos, ["a\x00b"])
    assert "contains control characters" in refusal(todos.create_todos, ["zero\u200bwidth"])
    assert todos.history == []   # no refused call changed anything
    todos.create_todos(["가" * MAX_ITEM_CHARS] + ["x"] * (MAX_TODOS - 1))   # exactly at both limits
    assert len(todos.items) == MAX_TODOS


def test_a_second_plan_is_refused_while_one_is_open():
    todos = planned("a", "b")
    todos.mark_complete(1)
    message = refusal(todos.create_todos, ["c"])
    assert message.startswith("a plan is already open (1 of 2 steps still to do)")
    assert "mark_failed a step and replan it" in message
    assert [t.text for t in todos.items] == ["a", "b"]


@pytest.mark.parametrize("method", ["mark_complete", "mark_failed", "replan"])
def test_no_plan_yet(method):
    todos = TodoList()
    args = {"mark_complete": (1,), "mark_failed": (1, "x"), "replan": (1, ["x"])}[method]
    assert "there is no plan yet; call create_todos with the steps first" in refusal(getattr(todos, method), *args)


@pytest.mark.parametrize("index", [0, 3, -1, True, False, 1.0, "1", None])
def test_index_must_be_a_step_number(index):
    todos = planned("a", "b")
    message = refusal(todos.mark_complete, index)
    assert "index must be a step number from 1 to 2" in message and message.startswith("there is no step ")
    assert todos.left == 2


def test_refusals_of_marking():
    todos = planned("a", "b", "c")
    todos.mark_complete(1, "ok")
    assert "step 1 is already done; mark a step still to do, or call show_todos" in refusal(todos.mark_complete, 1)
    assert "step 1 is already done" in refusal(todos.mark_failed, 1, "late")
    todos.mark_failed(2, "blocked")
    assert "step 2 failed; replan it with new steps instead of marking it done" in refusal(todos.mark_complete, 2)
    assert "step 2 is already failed" in refusal(todos.mark_failed, 2, "again")
    assert "reason must be plain text" in refusal(todos.mark_failed, 3, "   ")
    assert "say in a few words why the step cannot be done" in refusal(todos.mark_failed, 3, None)
    assert f"note must be plain text of at most {MAX_NOTE_CHARS} characters" in refusal(
        todos.mark_complete, 3, "n" * (MAX_NOTE_CHARS + 1))
    assert "note must be plain text" in refusal(todos.mark_complete, 3, 42)
    assert "note must be plain text" in refusal(todos.mark_complete, 3, "bell\x07")
    assert [h["change"] for h in todos.history] == ["plan created (3 steps)", "step 1 done", "step 2 failed"]
    todos.mark_complete(3, "n" * MAX_NOTE_CHARS)   # exactly at the limit
    assert todos.items[2].note == "n" * MAX_NOTE_CHARS


def test_refusals_of_replan():
    todos = planned("a", "b")
    assert ("step 1 has not failed; call mark_failed(1, reason) first, so the plan records why"
            in refusal(todos.replan, 1, ["x"]))
    todos.mark_failed(1, "blocked")
    assert "items must be a non-empty list" in refusal(todos.replan, 1, [])
    assert "19 steps more would make the plan longer than 20 steps" in refusal(todos.replan, 1, ["x"] * 19)
    todos.replan(1, ["x"] * (MAX_TODOS - 2))   # the plan is now exactly full
    assert len(todos.items) == MAX_TODOS
    assert "step 1 was already replanned; work on the steps after it" in refusal(todos.replan, 1, ["y"])
    todos.mark_failed(2, "blocked too")
    assert "1 step more would make the plan longer than 20 steps" in refusal(todos.replan, 2, ["z"])


# ---------------------------------------------------------------- verdicts
@pytest.mark.parametrize("text, verdict", [
    ('{"ok": true}', Verdict(True)),
    ('{"ok": true, "feedback": "good"}', Verdict(True, "good")),
    ('{"ok": false, "feedback": "Say whether\\n shipping is free."}', Verdict(False, "Say whether shipping is free.")),
    ('Looks right.\n```json\n{"ok": true}\n```', Verdict(True)),
    ('<think>{"ok": false, "feedback": "draft"}</think>{"ok": true}', Verdict(True)),
    ('Set {a} first, then {"note": 1} and {"ok": false, "feedback": "배송비를 빠뜨림"}',
     Verdict(False, "배송비를 빠뜨림")),
])
def test_parse_verdict_reads_the_first_object_with_ok(text, verdict):
    assert parse_verdict(text) == verdict


@pytest.mark.parametrize("text, note", [
    ("", "the critic's reply was empty"),
    ("   ", "the critic's reply was empty"),
    (None, "the critic's reply was empty"),
    ("Yes, this is fine.", 'held no JSON object with "ok"'),
    ('{"ok": tru}', 'held no JSON object with "ok"'),
    ('{"ok": "yes"}', '"ok" must be true or false, not "yes"'),
    ('{"ok": 1}', '"ok" must be true or false, not 1'),
    ('{"ok": false}', 'a rejection needs "feedback" text'),
    ('{"ok": false, "feedback": "  "}', 'a rejection needs "feedback" text'),
    ('{"ok": false, "feedback": ["x"]}', 'a rejection needs "feedback" text'),
    ("{" * 1_000_000, 'held no JSON object with "ok"'),
    ('{"ok": ' + "[" * 100_000, 'held no JSON object with "ok"'),
    ("{}" * 60 + '{"ok": true}', 'held no JSON object with "ok"'),   # only the first 50 braces are tried
])
def test_parse_verdict_never_raises_and_says_what_was_wrong(text, note):
    verdict = parse_verdict(text)
    assert verdict.ok is False and note in verdict.note


def test_feedback_is_cut_to_its_limit():
    verdict = parse_verdict(json.dumps({"ok": False, "feedback": "x" * 5000}))
    assert verdict.feedback == "x" * MAX_FEEDBACK_CHARS


def test_the_critic_sees_only_the_goal_and_the_answer():
    seen = []
    assert ask_critic(lambda messages: seen.append(messages) or '{"ok": true}', "목표", "답") == Verdict(True)
    assert seen == [[{"role": "system", "content": CRITIC_PROMPT},
                     {"role": "user", "content": "Goal:\n목표\n\nAnswer:\n답"}]]


# ---------------------------------------------------------------- the evaluator–optimiser loop
@pytest.mark.parametrize("native", [False, True])
def test_refine_demo_rejects_then_accepts(native):
    agent, critic = refine_demo(native)
    result = refine(agent, agent.goal, critic)
    assert result == Refined(answer=PLAN_ANSWER, accepted=True, stop_reason="accepted", rounds=2,
                             answers=["총액은 $720입니다. (The total is $720.)", PLAN_ANSWER],
                             verdicts=[Verdict(False, "The goal also asks whether shipping is free; look up the "
                                                      "shipping terms and say so."), Verdict(True)])
    assert [t["stop_reason"] for t in agent.turns] == ["finish", "finish"]
    assert agent.turns[1]["message"] == (
        "A reviewer checked your answer against the goal and did not accept it: The goal also asks whether shipping "
        "is free; look up the shipping terms and say so.\nImprove the answer and give it again in full.")
    assert agent.history[1] == {"role": "user", "content": PLAN_GOAL}   # one history: the feedback continued it
    assert [c[1]["content"] for c in critic.calls] == [f"Goal:\n{PLAN_GOAL}\n\nAnswer:\n{a}" for a in result.answers]


def critic_of(*replies):
    return ScriptedModel(list(replies))


def two_answer_agent(*answers):   # a ChatAgent: refine sends the feedback with chat() (stage 10)
    return ChatAgent({}, ScriptedModel([json.dumps({"tool": "finish", "args": {"answer": a}}) for a in answers]))


REJECT = '{"ok": false, "feedback": "more detail"}'


def test_a_critic_that_never_accepts_stops_at_the_round_cap():
    agent, critic = two_answer_agent("a1", "a2", "a3", "a4"), critic_of(REJECT, REJECT, REJECT, REJECT)
    result = refine(agent, "goal", critic, rounds=3)
    assert (result.accepted, result.stop_reason, result.rounds, result.answer) == (False, "rounds", 3, "a3")
    assert result.answers == ["a1", "a2", "a3"] and result.verdicts == [Verdict(False, "more detail")] * 3
    assert len(critic.calls) == 3 and len(agent.turns) == 3 and agent.model.remaining == 1


def test_one_round_means_one_answer_and_no_chat():
    agent, critic = two_answer_agent("a1", "a2"), critic_of(REJECT)
    result = refine(agent, "goal", critic, rounds=1)
    assert (result.stop_reason, result.rounds, result.answers) == ("rounds", 1, ["a1"])
    assert len(agent.turns) == 1 and len(critic.calls) == 1
    assert refine(two_answer_agent("a1"), "goal", critic_of('{"ok": true}'), rounds=1).accepted is True


@pytest.mark.parametrize("rounds", [0, -1, True, 1.5, "2", None])
def test_rounds_must_be_a_positive_whole_number(rounds):
    with pytest.raises(ValueError, match="rounds must be a whole number, 1 or more"):
        refine(two_answer_agent("a1"), "goal", critic_of('{"ok": true}'), rounds=rounds)


def test_an_unreadable_verdict_stops_the_loop():
    agent, critic = two_answer_agent("a1", "a2"), critic_of("Seems fine, mostly.")
    result = refine(agent, "goal", critic, rounds=5)
    assert (result.accepted, result.stop_reason, result.rounds, result.answer) == (False, "critic_unreadable", 1, "a1")
    assert 'held no JSON object with "ok"' in result.verdicts[0].note and len(agent.turns) == 1


def test_a_critic_that_raises_stops_the_loop_with_its_error():
    def broken(messages):
        raise RuntimeError("critic offline")
    result = refine(two_answer_agent("a1", "a2"), "goal", broken, rounds=3)
    assert (result.stop_reason, result.accepted, result.rounds) == ("critic_error", False, 1)
    assert result.verdicts == [Verdict(False, note="the critic failed: RuntimeError: critic offline")]


def test_a_critic_model_that_runs_out_or_refuses_stops_the_loop():
    result = refine(two_answer_agent("a1", "a2", "a3"), "goal", critic_of(REJECT), rounds=3)
    assert (result.stop_reason, result.rounds, result.answer) == ("critic_error", 2, "a2")
    assert result.verdicts[1].note.startswith("the critic failed: ModelError: the script ran out")
    refused = refine(two_answer_agent("a1"), "goal", critic_of({"stop": "refused", "text": "no"}))
    assert refused.verdicts[0].note == "the critic failed: it stopped without a verdict (refused)"
    assert refused.stop_reason == "critic_error"


def test_an_agent_that_stops_without_an_answer_ends_the_loop():
    agent = ChatAgent({}, ScriptedModel([json.dumps({"tool": "finish", "args": {"answer": "a1"}}), ModelError("down")]))
    critic = critic_of(REJECT, '{"ok": true}')
    result = refine(agent, "goal", critic, rounds=3)
    assert (result.stop_reason, result.rounds, result.answer, result.answers) == ("agent_stopped", 2, "a1", ["a1"])
    assert len(critic.calls) == 1
    first = refine(ChatAgent({}, ScriptedModel([])), "goal", critic_of('{"ok": true}'))
    assert first.stop_reason == "agent_stopped" and first.answers == [] and "script ran out" in first.answer


def test_a_plain_agent_is_refused_with_what_to_use_instead():
    with pytest.raises(TypeError) as refused:
        refine(Agent({}, ScriptedModel([])), "goal", critic_of('{"ok": true}'))
    assert str(refused.value) == ("refine sends the critic's feedback with chat(): give it a ChatAgent (stage 10), "
                                  "not an Agent")


def test_a_bare_model_is_wrapped_in_an_agent_with_the_given_tools():
    model = ScriptedModel(script([("calculator", {"expression": "24*30"})], "720"))
    result = refine(model, "24×30?", lambda messages: '{"ok": true}', tools={"calculator": default_tools()["calculator"]})
    assert result.accepted and result.answer == "720" and len(model.calls) == 2


# ---------------------------------------------------------------- through the real SDKs (the local stand-in server)
def _sdk_model(provider, server):
    from course_lib.models.anthropic import AnthropicModel
    from course_lib.models.openai import OpenAIModel
    if provider == "anthropic":
        return AnthropicModel(base_url=server.url, api_key="sk-standin-test")
    return OpenAIModel(base_url=server.url + "/v1", api_key="sk-standin-test")


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_the_planning_tools_pass_both_apis_checks_through_the_stand_in(provider):
    """Lesson 11 runs the demo's script through both SDKs: the tools' schemas (an array of strings for items)
    and every request are ones the APIs accept."""
    from course_lib.courseware.standin import StandInServer
    turns = [{"tool_calls": [{"name": tool, "args": args}]} for tool, args in PLAN_CALLS] + [PLAN_ANSWER]
    with StandInServer(turns) as server:
        todos = TodoList()
        agent = Agent({**default_tools(), **todos.tools()}, _sdk_model(provider, server), max_steps=15)
        assert agent.run(PLAN_GOAL) == PLAN_ANSWER
        assert server.problems == [] and server.remaining == 0
    assert (agent.stop_reason, agent.steps, todos.checklist()) == ("finish", 12, FINAL)
    sent = server.requests[0]["body"]["tools"]
    items = next(t for t in sent if (t.get("name") or t["function"]["name"]) == "create_todos")
    schema = items.get("input_schema") or items["function"]["parameters"]
    assert schema["properties"]["items"] == {"type": "array", "items": {"type": "string"},
                                             "description": schema["properties"]["items"]["description"]}


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_a_critic_can_be_a_real_api_model(provider):
    """Lesson 11's "a real critic": ask_critic sends the prompt through the SDK and reads the verdict it gets."""
    from course_lib.courseware.standin import StandInServer
    with StandInServer(['{"ok": false, "feedback": "It does not say whether shipping is free."}',
                        'Both parts are answered.\n{"ok": true}']) as server:
        critic = _sdk_model(provider, server)
        verdicts = [ask_critic(critic, PLAN_GOAL, answer) for answer in ("총액은 $720입니다.", PLAN_ANSWER)]
        assert server.problems == []
    assert verdicts == [Verdict(False, "It does not say whether shipping is free."), Verdict(True)]


# ---------------------------------------------------------------- pinned for mutation testing (issue 16)
def test_every_refusal_message_is_exact():
    """SPEC §8: the whole sentence, so nothing is added around what was wrong and what to do."""
    todos = TodoList()
    assert refusal(todos.mark_complete, 1) == "there is no plan yet; call create_todos with the steps first"
    assert refusal(todos.create_todos, []) == 'items must be a non-empty list of steps, e.g. ["단가 확인", "총액 계산"]'
    assert refusal(todos.create_todos, ["a", "b" * (MAX_ITEM_CHARS + 1)]) == (
        "step 2 is 201 characters long; keep each step under 200 characters: one action per step")
    todos.create_todos(["a", "b"])
    assert refusal(todos.create_todos, ["c"]) == (
        "a plan is already open (2 of 2 steps still to do); work through it, or mark_failed a step and replan it, "
        "instead of starting another")
    assert refusal(todos.mark_complete, 1, 42) == "note must be plain text of at most 300 characters"
    assert refusal(todos.mark_failed, 1, "") == ("reason must be plain text of at most 300 characters; say in a few "
                                                 "words why the step cannot be done")


@pytest.mark.parametrize("index, shown", [
    ("이", '"이"'),                                   # Korean as itself, not \\uc774
    ("x" * 100, '"' + "x" * 39),                      # cut to 40 characters
    ({1, 2}, '"{1, 2}"'),                             # not JSON: its repr, never a crash
])
def test_a_bad_index_is_quoted_short_and_readable(index, shown):
    assert refusal(planned("a").mark_complete, index) == (
        f"there is no step {shown}; index must be a step number from 1 to 1")


@pytest.mark.parametrize("text, note", [
    ("", "the critic's reply was empty"),
    ('{"ok": false}', 'a rejection needs "feedback" text saying what to fix'),
    ("Fine.", 'the critic\'s reply held no JSON object with "ok"; it should be {"ok": true} or {"ok": false, '
              '"feedback": "..."}'),
    ('{"ok": "네"}', '"ok" must be true or false, not "네"'),
    (json.dumps({"ok": "y" * 100}), '"ok" must be true or false, not "' + "y" * 39),
])
def test_verdict_notes_are_exact(text, note):
    assert parse_verdict(text) == Verdict(False, note=note)


def test_a_critic_model_is_offered_no_tools_and_a_stopped_one_is_a_rejection():
    offered = []

    class Critic:
        def complete(self, messages, tools=None):
            offered.append(tools)
            return {"stop": "refused", "text": ""}

    verdict = ask_critic(Critic(), "goal", "answer")
    assert offered == [{}] and verdict.ok is False and verdict.note.startswith("the critic failed: it stopped")


def test_refine_judges_two_answers_unless_told_otherwise():
    agent, critic = two_answer_agent("a1", "a2", "a3"), critic_of(REJECT, REJECT, REJECT)
    result = refine(agent, "goal", critic)
    assert (result.stop_reason, result.rounds, result.answers) == ("rounds", 2, ["a1", "a2"])


def test_a_bare_model_really_gets_the_tools_it_is_given():
    model = ScriptedModel(script([("calculator", {"expression": "24*30"})], "720"))
    refine(model, "24×30?", lambda messages: '{"ok": true}', tools={"calculator": default_tools()["calculator"]})
    assert model.calls[1][-1] == {"role": "user", "content": "Observation: 720"}


def test_the_demos_default_to_the_text_protocol_with_room_for_every_call():
    agent, _ = planning_demo()
    assert agent.model.native_tools is False and agent.max_steps == len(PLAN_CALLS) + 3 == 14
    agent, _ = refine_demo()
    assert agent.model.native_tools is False


@pytest.mark.parametrize("native", [False, True])
def test_refine_demo_s_agent_uses_its_tools_without_error(native):
    """The demo's two answers come from a real calculator and lookup call, not from failed calls."""
    agent, critic = refine_demo(native)
    refine(agent, agent.goal, critic)
    runs = [(r.tool, r.args, r.observation.content, r.observation.is_error)
            for step in agent.trace for r in step.runs]
    assert runs == [("calculator", {"expression": "24*30"}, "720", False),
                    ("lookup", {"topic": "배송"}, "$500 이상 무료", False)]


def test_scripted_replies_keep_korean_as_text():
    assert script([("lookup", {"topic": "단가"})], "끝") == ['{"tool": "lookup", "args": {"topic": "단가"}}',
                                                           '{"tool": "finish", "args": {"answer": "끝"}}']


# ---------------------------------------------------------------- lesson 11a's your-turn cells: wrong answers fail
CALLS = '("lookup", {"topic": "단가"}),\n    ("mark_complete", {"index": 1, "note": "개당 $24"}),\n' \
        '    ("calculator", {"expression": "24*12"}),\n    ("mark_complete", {"index": 2, "note": "$288"}),'


_THOUGHT_SETUP = """
import json
from course_lib.describe import build_system_prompt
prompt = build_system_prompt(tools, thought=True)
def action(tool, thought=None, **args):
    return json.dumps({**({"thought": thought} if thought else {}), "tool": tool, "args": args}, ensure_ascii=False)
"""


def _plan_cell(calls: str) -> str:
    return lesson_cell("11a_reason_plan_retrieve.ipynb", "tools = default_tools()", "MY_CALLS = [",
                       {CALLS: calls}, extra="from course_lib.planning import TodoList")


def test_the_plan_cell_takes_the_course_s_answer():
    assert "✓ every step closed" in _plan_cell(CALLS)


@pytest.mark.parametrize("calls, said", [
    ('("lookup", {"topic": "단가"}),\n("mark_complete", {"index": 1}),\n("calculator", {"expression": "288"}),\n'
     '("mark_complete", {"index": 2}),', "✗ the calculation typed the total in ('288')"),
    ('("mark_complete", {"index": 1}),\n("calculator", {"expression": "24*12"}),\n("mark_complete", {"index": 2}),\n'
     '("lookup", {"topic": "단가"}),', "✗ the calculation came before the lookup"),
    ('("mark_complete", {"index": 1}),\n("lookup", {"topic": "단가"}),\n("calculator", {"expression": "24*12"}),\n'
     '("mark_complete", {"index": 2}),', "✗ a step was ticked off before its work was done"),
    ('("lookup", {"topic": "단가"}),\n("mark_failed", {"index": 1, "reason": "x"}),\n'
     '("calculator", {"expression": "24*12"}),\n("mark_failed", {"index": 2, "reason": "x"}),',
     "✗ step 1 was marked failed and nothing replaced it"),
])
def test_the_plan_cell_fails_a_typed_total_work_out_of_order_and_steps_left_failed(calls, said):
    printed = _plan_cell(calls)
    assert said in printed and "✓" not in printed.replace("☑", ""), printed


def test_the_thought_cell_says_a_reply_is_text_when_given_a_dict():
    printed = lesson_cell("11a_reason_plan_retrieve.ipynb", "tools = default_tools()", "my_reply = '{",
                          {"""my_reply = '{"thought": 42, "tool": "calculator", "args": {"expression": "24*7"}}'""":
                           """my_reply = {"thought": 42, "tool": "calculator", "args": {"expression": "24*7"}}"""},
                          extra=_THOUGHT_SETUP)
    assert "\n✗ my_reply is a dict: a model replies with text, so write the JSON in quotes" in printed, printed
    assert "the agent said" not in printed and "no correction" not in printed



def _todos_cell(edits: dict) -> str:
    lesson = Path(__file__).parent.parent / "notebooks" / "11a_reason_plan_retrieve.ipynb"
    cells = json.loads(lesson.read_text(encoding="utf-8"))["cells"]
    cell = next("".join(c["source"]) for c in cells if "def short(" in "".join(c["source"]))
    helpers = "def short(" + cell.split("def short(")[1].split("\n\n\n")[0]   # the lesson's own short()
    return lesson_cell("11a_reason_plan_retrieve.ipynb", "tools = default_tools()", "class MiniTodos:", edits,
                       extra="from course_lib.planning import MARKS, TodoList\n" + helpers)


_RANGE = "        if not 1 <= index <= len(self.items):\n            raise ToolError(f\"there is no step {index}\")\n"
_STATUS = 'if self.items[index - 1][1] != "todo":'
_INSERT = "self.items[index:index] = [[text, \"todo\"] for text in items]"
_REPLAN_GUARD = ('        if not 1 <= index <= len(self.items) or self.items[index - 1][1] != "failed":\n'
                 '            raise ToolError(f"step {index} has not failed: mark_failed it first")\n')


def test_the_todo_list_cell_takes_the_course_s_answer():
    printed = _todos_cell({})
    assert "✓ yours accepts and refuses the same calls as TodoList" in printed and "✗ not" not in printed, printed


@pytest.mark.parametrize("edits, said", [
    ({_RANGE: ""}, "mark_complete(index=0, note='done'): yours accepted it"),   # items[-1]: the last step
    ({_RANGE: _RANGE.replace("ToolError", "ValueError")},
     "mark_complete(index=3, note='done'): yours crashed (ValueError), not a ToolError"),
    ({_STATUS: 'if self.items[index - 1][1] == "done":'}, "mark_complete(index=1, note='$24'): yours accepted it"),
    ({_REPLAN_GUARD: ""}, "replan(index=3, items=['again']): yours accepted it"),
    ({_INSERT: _INSERT.replace("[index:index]", "[index - 1:index]")}, "the plan at the end is"),
])
def test_the_todo_list_cell_names_the_call_a_wrong_rule_gets_wrong(edits, said):
    printed = _todos_cell(edits)
    assert "✗ not the same as TodoList: " in printed and said in printed and "✓ yours" not in printed, printed


def test_the_todo_list_cell_catches_a_replan_without_a_range_check():
    printed = _todos_cell({_REPLAN_GUARD: _REPLAN_GUARD.replace("not 1 <= index <= len(self.items) or ", "")})
    assert "replan(index=9, items=['x']): yours crashed (IndexError), not a ToolError" in printed, printed
