"""Stage 11: agents as tools. Every test runs the real Agent loop with scripted models and real tools; the
sub-agent tool goes through describe and dispatch like any other tool."""
import inspect
import json

import pytest

from course_lib import orchestration
from course_lib.agent import Agent
from course_lib.describe import build_system_prompt, tool_description, tool_schema, tool_spec
from course_lib.dispatch import dispatch
from course_lib.models import ScriptedModel
from course_lib.courseware.patterns_lab import team_demo
from course_lib.orchestration import (MAX_DEPTH, MAX_TASK_CHARS, Orchestrator, SubRun, as_tool, call_edges,
                                      call_tree, orchestration_transcript, total_usage)
from course_lib.tools import ToolError, calculator, lookup
from support import lesson_cell

RESEARCH_TASK = "부품 단가와 배송비 조건을 찾아 주세요. (Find the unit price and the shipping terms.)"
TOTAL_TASK = "개당 $24인 부품 25개의 총액을 계산해 주세요. (Work out the total for 25 units at $24 each.)"
RESEARCH_ANSWER = "단가는 개당 $24, $500 이상 주문은 배송비 무료입니다. (Unit price $24; orders of $500+ ship free.)"
FINAL = ("총액은 $600입니다 (25 × $24). $500 이상이라 배송비는 무료입니다. (The total is $600; shipping is free on "
         "orders of $500 or more.)")


def said(text="", *calls, usage=None):
    """A native reply: text, tool calls given as (name, args), and the usage a provider would report."""
    reply = {"text": text, "tool_calls": [{"id": f"c{i}", "name": n, "args": a} for i, (n, a) in enumerate(calls)]}
    return {**reply, "usage": {"input_tokens": usage[0], "output_tokens": usage[1]}} if usage else reply


def act(tool, **args):
    return json.dumps({"tool": tool, "args": args}, ensure_ascii=False)


def native(*replies):
    return ScriptedModel(list(replies), native_tools=True)


def answering(answer, usage=None, counter=None):
    """A factory for a sub-agent that answers at once; ``counter`` counts how many agents it built."""
    def make():
        if counter is not None:
            counter.append(1)
        return Agent({"lookup": lookup}, native(said(answer, usage=usage)))
    return make


def observations(agent):
    return [(m["name"], m["content"], m["is_error"]) for m in agent.history if m["role"] == "tool"]


# ---------------------------------------------------------------- the scripted team
def test_team_demo_delegates_and_answers():
    goal, orchestrator, team = team_demo()
    assert isinstance(orchestrator, Orchestrator) and orchestrator.tools is team
    assert list(team) == ["researcher", "accountant"]
    assert orchestrator.run(goal) == FINAL and orchestrator.stop_reason == "finish" and orchestrator.steps == 3
    assert observations(orchestrator) == [("researcher", RESEARCH_ANSWER, False),
                                          ("accountant", "총액은 $600입니다 (25 × $24). (The total is $600.)", False)]
    research, = team["researcher"].runs
    assert (research.task, research.depth, research.caller, research.stop_reason, research.steps) == (
        RESEARCH_TASK, 1, None, "finish", 3)
    assert research.sub_agent.history[1] == {"role": "user", "content": RESEARCH_TASK}   # Korean, unharmed
    assert observations(research.sub_agent) == [("lookup", "개당 $24", False), ("lookup", "$500 이상 무료", False)]
    total, = team["accountant"].runs
    assert total.task == TOTAL_TASK and observations(total.sub_agent) == [("calculator", "600", False)]
    assert total.sub_agent.tools == {"calculator": calculator}   # each sub-agent has its own tools
    assert repr(research).startswith("SubRun(agent='researcher', task='부품 단가") and "order=" not in repr(research)


def test_team_demo_call_tree_and_edges_are_exact():
    goal, orchestrator, _ = team_demo()
    orchestrator.run(goal)
    assert call_tree(orchestrator) == {
        "agent": "orchestrator", "task": goal, "stop_reason": "finish", "steps": 3,
        "usage": {"input_tokens": 412 + 486 + 548, "output_tokens": 41 + 37 + 52},
        "calls": [{"agent": "researcher", "task": RESEARCH_TASK, "stop_reason": "finish", "steps": 3,
                   "usage": {"input_tokens": 305 + 351 + 398, "output_tokens": 22 + 20 + 31}, "calls": []},
                  {"agent": "accountant", "task": TOTAL_TASK, "stop_reason": "finish", "steps": 2,
                   "usage": {"input_tokens": 280 + 312, "output_tokens": 18 + 25}, "calls": []}]}
    assert call_edges(call_tree(orchestrator, "boss")) == [("boss", "researcher", RESEARCH_TASK),
                                                          ("boss", "accountant", TOTAL_TASK)]
    json.dumps(call_tree(orchestrator), allow_nan=False)   # plain data


def test_total_usage_sums_every_agent_exactly():
    goal, orchestrator, team = team_demo()
    orchestrator.run(goal)
    assert orchestrator.total_usage == {"input_tokens": 1446, "output_tokens": 130}   # its own calls only
    expected = {"input_tokens": 1446 + 1054 + 592, "output_tokens": 130 + 73 + 43}
    assert total_usage(orchestrator) == expected == {"input_tokens": 3092, "output_tokens": 246}
    assert total_usage(orchestrator, *team.values()) == expected
    assert total_usage(orchestrator, team["accountant"]) == {"input_tokens": 1446 + 592, "output_tokens": 130 + 43}


# ---------------------------------------------------------------- a plain tool
def test_the_generated_tool_is_described_like_any_tool():
    tool = as_tool("researcher", answering("ok"), "  Ask the researcher\n to find facts.  ")
    assert tool.__name__ == "researcher" and str(inspect.signature(tool)) == "(task: str) -> str"
    assert tool_schema(tool) == {
        "type": "object", "required": ["task"], "additionalProperties": False,
        "properties": {"task": {"type": "string", "description": "what the researcher should do, in a few "
                                "sentences; it sees only this text, not your conversation."}}}
    assert tool_spec("researcher", tool)["description"] == "Ask the researcher to find facts."
    assert tool_description({"researcher": tool}) == "- researcher(task: str): Ask the researcher to find facts."
    assert "- researcher(task: str): Ask the researcher to find facts." in build_system_prompt({"researcher": tool})
    Agent({"researcher": tool}, native())   # a native agent describes its tools at construction: no error


@pytest.mark.parametrize("args, says", [
    ({}, "researcher is missing required argument(s) 'task'"),
    ({"task": 7}, "argument 'task' of researcher must be str, got integer 7"),
    ({"task": "단가", "topic": "x"}, "researcher got unexpected argument(s) 'topic'. It takes: task."),
    ("단가", "the arguments for researcher must be a JSON object, not string"),
    ({"task": ""}, "researcher: the task is empty: write what the researcher should do"),
    ({"task": " \n\t"}, "the task is empty"),
    ({"task": "가" * (MAX_TASK_CHARS + 1)}, "the task is 4,001 characters, over the limit of 4,000"),
])
def test_bad_calls_are_observations_and_build_no_agent(args, says):
    built = []
    tool = as_tool("researcher", answering("ok", counter=built), "Ask the researcher.")
    obs = dispatch({"researcher": tool}, "researcher", args)
    assert obs.is_error and says in obs.content
    assert built == [] and tool.runs == []


def test_task_length_limit_is_exact_and_korean_counts_characters():
    built = []
    tool = as_tool("researcher", answering("네", counter=built), "Ask.", max_task_chars=10)
    assert dispatch({"researcher": tool}, "researcher", {"task": "가" * 10}).content == "네"
    obs = dispatch({"researcher": tool}, "researcher", {"task": "가" * 11})
    assert obs.is_error and "11 characters, over the limit of 10" in obs.content and len(built) == 1


def test_text_protocol_orchestrator_uses_the_tool_too():
    tool = as_tool("researcher", answering("개당 $24"), "Ask the researcher for facts.")
    boss = Agent({"researcher": tool}, ScriptedModel([act("researcher", task="단가를 알려 줘"),
                                                      act("finish", answer="단가는 $24입니다.")]))
    assert boss.run("단가는?") == "단가는 $24입니다."
    assert boss.history[3] == {"role": "user", "content": "Observation: 개당 $24"}
    assert tool.runs[0].task == "단가를 알려 줘"
    assert "- researcher(task: str): Ask the researcher for facts." in boss.system_prompt


def test_direct_calls_work_outside_any_agent():
    tool = as_tool("helper", answering("도움 완료"), "Ask the helper.")
    assert tool("도와줘") == "도움 완료" and tool.runs[0].depth == 1 and tool.runs[0].caller is None
    with pytest.raises(ToolError, match="the task is empty"):
        tool("   ")


# ---------------------------------------------------------------- nesting: transcripts, tree, usage
def nested_team():
    translator = as_tool("translator", lambda: Agent({}, native(said("The unit price is $24.", usage=(50, 9)))),
                         "Ask the translator to translate a text.")
    researcher = as_tool("researcher", lambda: Orchestrator(
        {"lookup": lookup, "translator": translator}, native(
            said("", ("lookup", {"topic": "단가"}), usage=(100, 10)),
            said("", ("translator", {"task": "번역: 개당 $24"}), usage=(120, 12)),
            said("The unit price is $24.", usage=(140, 14))), name="researcher"),
        "Ask the researcher to find facts.")
    boss = Orchestrator({"researcher": researcher}, native(
        said("", ("researcher", {"task": "단가를 영어로 알려 줘"}), usage=(200, 20)),
        said("It is $24 per unit.", usage=(230, 23))), name="boss")
    return boss, researcher, translator


def test_nested_call_tree_transcript_and_usage_are_exact():
    boss, researcher, translator = nested_team()
    assert boss.run("단가?") == "It is $24 per unit."
    assert call_tree(boss) == {
        "agent": "boss", "task": "단가?", "stop_reason": "finish", "steps": 2,
        "usage": {"input_tokens": 430, "output_tokens": 43},
        "calls": [{"agent": "researcher", "task": "단가를 영어로 알려 줘", "stop_reason": "finish", "steps": 3,
                   "usage": {"input_tokens": 360, "output_tokens": 36},
                   "calls": [{"agent": "translator", "task": "번역: 개당 $24", "stop_reason": "finish", "steps": 1,
                              "usage": {"input_tokens": 50, "output_tokens": 9}, "calls": []}]}]}
    assert call_edges(call_tree(boss)) == [("boss", "researcher", "단가를 영어로 알려 줘"),
                                           ("researcher", "translator", "번역: 개당 $24")]
    assert total_usage(boss) == {"input_tokens": 430 + 360 + 50, "output_tokens": 43 + 36 + 9}
    sub, = translator.runs
    assert (sub.depth, sub.caller) == (2, "researcher") and researcher.runs[0].children == [sub]

    transcript = boss.transcript()
    assert transcript["agent"] == "boss" and transcript["answer"] == "It is $24 per unit."
    middle, = transcript["subagents"]
    assert (middle["agent"], middle["depth"], middle["goal"], middle["answer"]) == (
        "researcher", 1, "단가를 영어로 알려 줘", "The unit price is $24.")
    assert middle["usage"] == {"input_tokens": 360, "output_tokens": 36}
    inner, = middle["subagents"]
    assert (inner["agent"], inner["depth"], inner["goal"], inner["subagents"]) == ("translator", 2, "번역: 개당 $24", [])
    assert inner["history"][1] == {"role": "user", "content": "번역: 개당 $24"}
    assert [m["content"] for m in middle["history"] if m["role"] == "tool"] == ["개당 $24", "The unit price is $24."]


def test_saved_transcript_is_strict_utf8_json_with_the_sub_runs(tmp_path):
    goal, orchestrator, _ = team_demo()
    orchestrator.run(goal)
    path = orchestrator.save(tmp_path / "팀.json")   # Agent.save, with the nested transcript
    text = path.read_bytes().decode("utf-8")          # strict: raises on any invalid byte
    data = json.loads(text, parse_constant=lambda c: pytest.fail(f"non-strict JSON constant {c}"))
    assert data == json.loads(json.dumps(orchestrator.transcript(), ensure_ascii=False))
    assert data["agent"] == "orchestrator" and data["goal"] == goal and data["answer"] == FINAL
    assert [(s["agent"], s["goal"], s["stop_reason"]) for s in data["subagents"]] == [
        ("researcher", RESEARCH_TASK, "finish"), ("accountant", TOTAL_TASK, "finish")]
    assert "부품 단가와 배송비" in text and "\\ub" not in text   # Korean written as itself, not escaped


def test_a_plain_agent_can_report_its_sub_runs_too():
    tool = as_tool("helper", answering("네", usage=(5, 1)), "Ask the helper.")
    boss = Agent({"helper": tool}, native(said("", ("helper", {"task": "하나"}), usage=(10, 2)), said("끝", usage=(11, 3))))
    boss.run("시작")
    transcript = orchestration_transcript(boss, "main")
    assert transcript["agent"] == "main" and [s["goal"] for s in transcript["subagents"]] == ["하나"]
    assert call_tree(boss)["agent"] == "orchestrator" and total_usage(boss) == {"input_tokens": 26, "output_tokens": 6}


def test_calls_are_ordered_as_made_across_tools():
    first = as_tool("first", answering("1"), "One.")
    second = as_tool("second", answering("2"), "Two.")
    boss = Orchestrator({"first": first, "second": second}, native(
        said("", ("second", {"task": "a"}), ("first", {"task": "b"})),   # parallel calls in one turn
        said("", ("second", {"task": "c"})), said("done")))
    boss.run("go")
    assert call_edges(call_tree(boss)) == [("orchestrator", "second", "a"), ("orchestrator", "first", "b"),
                                           ("orchestrator", "second", "c")]


def test_each_orchestrator_run_forgets_the_last_runs_sub_runs():
    tool = as_tool("helper", answering("네"), "Ask the helper.")
    boss = Orchestrator({"helper": tool}, native(said("", ("helper", {"task": "첫째"})), said("one"),
                                                 said("", ("helper", {"task": "둘째"})), said("two")))
    boss.run("first")
    boss.run("second")
    assert [r.task for r in tool.runs] == ["둘째"] and [c["task"] for c in call_tree(boss)["calls"]] == ["둘째"]


# ---------------------------------------------------------------- guards
def recursive_tool(max_depth):
    def make():
        return Agent({"delegate": tool}, native(said("", ("delegate", {"task": "더 깊이 (deeper)"})), said("이 단계 끝")))
    tool = as_tool("delegate", make, "Hand the task on.", max_depth=max_depth)
    return tool


@pytest.mark.parametrize("max_depth", [1, 2, MAX_DEPTH])
def test_depth_guard_stops_agents_that_delegate_forever(max_depth):
    tool = recursive_tool(max_depth)
    boss = Orchestrator({"delegate": tool}, native(said("", ("delegate", {"task": "시작"})), said("끝")))
    assert boss.run("재귀 시험") == "끝" and boss.stop_reason == "finish"
    assert [r.depth for r in tool.runs] == list(range(1, max_depth + 1))   # the refused call made no run
    deepest = tool.runs[-1]
    (name, content, is_error), = observations(deepest.sub_agent)
    assert is_error and f"agents are already nested {max_depth} deep and the limit is {max_depth}" in content
    edges = call_edges(call_tree(boss))
    assert len(edges) == max_depth and edges[0] == ("orchestrator", "delegate", "시작")
    assert all(e == ("delegate", "delegate", "더 깊이 (deeper)") for e in edges[1:])
    assert orchestration._RUNNING.get() is None   # the context variable is back where it started


def test_sub_agent_that_hits_its_step_cap_is_an_error_observation():
    loop = native(*[said("", ("lookup", {"topic": "단가"}))] * 20)
    tool = as_tool("researcher", lambda: Agent({"lookup": lookup}, loop, max_steps=10), "Ask.", max_steps=2)
    boss = Orchestrator({"researcher": tool}, native(said("", ("researcher", {"task": "단가?"})), said("모르겠습니다.")))
    assert boss.run("단가?") == "모르겠습니다." and boss.stop_reason == "finish"   # the orchestrator went on
    (_, content, is_error), = observations(boss)
    assert is_error and content.startswith("Error: researcher: the researcher stopped without an answer (max_steps)")
    assert "the step cap is 2" in content and "Try a smaller or clearer task" in content
    run, = tool.runs
    assert (run.stop_reason, run.steps, run.answer, run.sub_agent.max_steps) == (
        "max_steps", 2, "Stopped after 2 steps without an answer (the step cap is 2).", 2)
    assert call_tree(boss)["calls"][0]["stop_reason"] == "max_steps"
    assert boss.transcript()["subagents"][0]["handoff"]["stopped"] == "max_steps"


def test_a_lower_step_cap_of_the_sub_agent_is_kept():
    tool = as_tool("helper", lambda: Agent({}, native(said("네")), max_steps=1), "Ask.", max_steps=5)
    tool("하나")
    assert tool.runs[0].sub_agent.max_steps == 1


@pytest.mark.parametrize("replies, says", [   # replies, not a model: a fresh script each time the test runs
    ([RuntimeError("연결이 끊겼습니다")], "(model_error): The model call failed: 연결이 끊겼습니다"),
    ([], "(model_error): The model call failed: the script ran out"),
    ([{"stop": "refused", "text": "할 수 없습니다"}], "(refused)"),
])
def test_a_sub_agent_whose_model_fails_is_an_error_observation(replies, says):
    tool = as_tool("researcher", lambda: Agent({"lookup": lookup}, native(*replies)), "Ask.")
    boss = Agent({"researcher": tool}, native(said("", ("researcher", {"task": "단가?"})), said("실패했습니다.")))
    assert boss.run("단가?") == "실패했습니다."
    (_, content, is_error), = observations(boss)
    assert is_error and "the researcher stopped without an answer " + says in content


def test_a_model_raising_past_the_loop_still_gives_a_sentence_and_resets_depth():
    class Broken:
        native_tools = True

        def complete(self, messages, tools=None):
            raise ValueError("모델 내부 오류")

    models = [Broken(), native(said("괜찮아요"))]
    tool = as_tool("helper", lambda: Agent({}, models.pop(0)), "Ask.")
    boss = Agent({"helper": tool}, native(said("", ("helper", {"task": "하나"})), said("", ("helper", {"task": "둘"})),
                                          said("끝")))
    boss.run("시작")
    (_, first, first_error), (_, second, second_error) = observations(boss)
    assert first_error and "(error): The helper failed: ValueError: 모델 내부 오류" in first
    assert (second, second_error) == ("괜찮아요", False)
    assert [(r.depth, r.stop_reason) for r in tool.runs] == [(1, "error"), (1, "finish")]


def test_make_agent_that_builds_no_agent_is_an_observation_not_a_crash():
    tool = as_tool("helper", lambda: {"not": "an agent"}, "Ask.")
    obs = dispatch({"helper": tool}, "helper", {"task": "하나"})
    assert obs.is_error and "make_agent for helper must return an Agent, not dict" in obs.content


def test_one_reused_agent_gets_a_fresh_history_each_call_and_refuses_to_nest_in_itself():
    tools = {}
    agent = Agent(tools, native(said("첫 답"), said("", ("me", {"task": "다시"})), said("둘째 답")))
    tools["me"] = tool = as_tool("me", agent, "Ask me.")
    assert tool("첫 질문") == "첫 답"
    assert tool("둘째 질문") == "둘째 답"
    first, second = tool.runs
    assert first.transcript["history"][1:] == [{"role": "user", "content": "첫 질문"},
                                               {"role": "assistant", "content": "첫 답"}]
    assert second.transcript["history"][1]["content"] == "둘째 질문"
    (_, content, is_error), = [(m["name"], m["content"], m["is_error"]) for m in second.transcript["history"]
                               if m["role"] == "tool"]
    assert is_error and "the me is busy with another task" in content


def test_a_reused_agent_runs_each_task_under_the_tool_s_cap_and_gets_its_own_back():
    agent = Agent({"lookup": lookup}, native(*[said("", ("lookup", {"topic": "단가"}))] * 5), max_steps=10)
    tool = as_tool("researcher", agent, "Ask.", max_steps=2)
    with pytest.raises(ToolError, match=r"stopped without an answer \(max_steps\)"):
        tool("단가?")
    assert tool.runs[0].steps == 2 and agent.max_steps == 10   # capped for the task, the caller's own cap after


def test_an_orchestrator_saves_extra_fields_like_any_agent(tmp_path):
    tool = as_tool("helper", lambda: Agent({}, native(said("네"))), "Ask.")
    boss = Orchestrator({"helper": tool}, native(said("", ("helper", {"task": "하나"})), said("끝")))
    boss.run("goal")
    saved = json.loads(boss.save(tmp_path / "run.json", note="kept").read_text(encoding="utf-8"))
    assert saved["note"] == "kept" and saved["subagents"][0]["answer"] == "네" and saved["answer"] == "끝"
    assert list(saved)[-2:] == ["history", "subagents"] and list(saved).index("note") < list(saved).index("history")


@pytest.mark.parametrize("kwargs, error", [
    ({"name": "has space"}, ValueError), ({"name": ""}, ValueError), ({"name": "a" * 65}, ValueError),
    ({"name": 3}, ValueError), ({"description": "  "}, ValueError), ({"description": None}, ValueError),
    ({"make_agent": 42}, TypeError), ({"max_steps": 0}, ValueError), ({"max_depth": True}, ValueError),
    ({"max_task_chars": 2.5}, ValueError),
])
def test_as_tool_refuses_bad_settings_loudly(kwargs, error):
    settings = {"name": "helper", "make_agent": answering("네"), "description": "Ask.", **kwargs}
    with pytest.raises(error):
        as_tool(settings.pop("name"), settings.pop("make_agent"), settings.pop("description"), **settings)


def test_subrun_is_plain_data():
    tool = as_tool("helper", answering("네", usage=(3, 1)), "Ask.")
    tool("하나")
    run = tool.runs[0]
    assert isinstance(run, SubRun) and run.usage == {"input_tokens": 3, "output_tokens": 1} and run.children == []


def test_odd_text_in_a_task_never_escapes_dispatch_and_still_saves(tmp_path):
    task = "이모지 😀 반쪽 \ud83d 그리고 NUL \x00 끝"   # a lone surrogate: half an emoji
    tool = as_tool("helper", answering("받았습니다"), "Ask the helper.")
    boss = Orchestrator({"helper": tool}, native(said("", ("helper", {"task": task})), said("끝")))
    assert boss.run("시작") == "끝" and observations(boss) == [("helper", "받았습니다", False)]
    data = json.loads(boss.save(tmp_path / "odd.json").read_bytes().decode("utf-8"))
    assert data["subagents"][0]["goal"] == "이모지 😀 반쪽 \ufffd 그리고 NUL \x00 끝"


def test_a_tools_step_cap_is_read_at_each_call_so_it_can_be_changed_between_runs():
    """Lesson 11 lowers the accountant's cap on the tool (``tool.max_steps``), as ``as_tool(max_steps=...)`` does."""
    for cap, is_error, says in [(1, True, "the accountant stopped without an answer (max_steps): Stopped after 1 "
                                          "step without an answer (the step cap is 1)."),
                                (2, False, "총액은 $600입니다 (25 × $24). (The total is $600.)")]:
        goal, orchestrator, team = team_demo()
        team["accountant"].max_steps = cap
        orchestrator.run(goal)
        (_, content, error), = [o for o in observations(orchestrator) if o[0] == "accountant"]
        assert error is is_error and says in content
        assert team["accountant"].runs[0].sub_agent.max_steps == cap


def test_each_call_is_drawn_once_depth_first_for_a_diagram():
    """Lesson 11 draws call_edges of a delegation chain: one edge per level, in the order the calls were made."""
    def make_helper():
        return Agent({"delegate": delegate}, native(said("", ("delegate", {"task": "이 일을 맡아 주세요."})),
                                                    said("I passed it on.")))
    delegate = as_tool("delegate", make_helper, "Hand the task on.")
    boss = Orchestrator({"delegate": delegate}, native(said("", ("delegate", {"task": "견적"})), said("끝.")))
    boss.run("30개 견적")
    tree = call_tree(boss)
    assert [(call["agent"], call["stop_reason"], call["steps"]) for call in [tree["calls"][0],
            tree["calls"][0]["calls"][0], tree["calls"][0]["calls"][0]["calls"][0]]] == [("delegate", "finish", 2)] * 3
    assert call_edges(tree) == [("orchestrator", "delegate", "견적")] + [("delegate", "delegate", "이 일을 맡아 주세요.")] * 2
    deepest = delegate.runs[-1]
    assert deepest.depth == MAX_DEPTH and deepest.sub_agent.trace[0].runs[0].observation.content == (
        "Error: delegate: not run: agents are already nested 3 deep and the limit is 3. Do this part yourself with "
        "your tools, or answer with what you have.")


# ---------------------------------------------------------------- pinned for mutation testing (issue 16)
def said_in(agent):
    """What each of the agent's model turns said, and the ids of the calls it made."""
    return [(m["content"], [c["id"] for c in m.get("tool_calls", [])]) for m in agent.history if m["role"] == "assistant"]


def test_team_demo_s_script_as_the_lesson_shows_it():
    """The orchestrator says what it is doing before each hand-off; the sub-agents call tools without text; call ids
    are unique within the demo; the team's descriptions are what the orchestrating model reads; its step cap is 4."""
    from course_lib.tools import search_docs
    goal, orchestrator, team = team_demo()
    assert orchestrator.max_steps == 4
    orchestrator.run(goal)
    assert said_in(orchestrator) == [("먼저 단가를 알아봅니다.", ["call_412_0"]), ("이제 총액을 계산합니다.", ["call_486_0"]),
                                     (FINAL, [])]
    research, total = team["researcher"].runs[0].sub_agent, team["accountant"].runs[0].sub_agent
    assert said_in(research) == [("", ["call_305_0"]), ("", ["call_351_0"]), (RESEARCH_ANSWER, [])]
    assert said_in(total) == [("", ["call_280_0"]), ("총액은 $600입니다 (25 × $24). (The total is $600.)", [])]
    assert research.tools == {"lookup": lookup, "search_docs": search_docs}
    assert tool_spec("researcher", team["researcher"])["description"] == (
        "Ask the researcher to find facts (prices, policies) in the company's knowledge base.")
    assert tool_spec("accountant", team["accountant"])["description"] == (
        "Ask the accountant to work out a total, or any other arithmetic, step by step.")


def test_an_orchestrator_passes_its_step_cap_and_options_to_the_agent():
    boss = Orchestrator({}, native(said("끝")), 7, system_prompt="Delegate.", name="boss")
    assert (boss.max_steps, boss.system_prompt, boss.name) == (7, "Delegate.", "boss")


def test_a_sub_agent_s_step_cap_is_four_unless_told():
    tool = as_tool("helper", answering("네"), "Ask.")
    assert tool.max_steps == 4
    tool("하나")
    assert tool.runs[0].sub_agent.max_steps == 4   # the sub-agent's own default (6) was lowered


@pytest.mark.parametrize("kwargs, error, message", [
    ({"name": "has space"}, ValueError,
     "name must be a tool name of letters, digits, _ or - (at most 64), not 'has space'"),
    ({"description": " "}, ValueError,
     "description must say in one line what this agent does: it is all the model reads"),
    ({"make_agent": 42}, TypeError, "make_agent must be an Agent or a function that builds one, not int"),
    ({"max_steps": 0}, ValueError, "max_steps must be a positive whole number, not 0"),
    ({"max_depth": True}, ValueError, "max_depth must be a positive whole number, not True"),
    ({"max_task_chars": 2.5}, ValueError, "max_task_chars must be a positive whole number, not 2.5"),
])
def test_as_tool_s_refusals_are_exact(kwargs, error, message):
    settings = {"name": "helper", "make_agent": answering("네"), "description": "Ask.", **kwargs}
    with pytest.raises(error) as e:
        as_tool(settings.pop("name"), settings.pop("make_agent"), settings.pop("description"), **settings)
    assert str(e.value) == message


def test_a_stopped_sub_agent_s_observation_ends_with_what_to_do():
    tool = as_tool("helper", lambda: Agent({}, native()), "Ask.")
    obs = dispatch({"helper": tool}, "helper", {"task": "하나"})
    assert obs.is_error and obs.content.endswith(" Try a smaller or clearer task, or go on without it.")


def test_a_nested_orchestrator_keeps_the_runs_its_caller_is_reporting():
    """An Orchestrator used as a sub-agent clears no tool's runs, neither when it is built nor when it runs: called
    twice in one run, its translator keeps both calls."""
    translator = as_tool("translator", lambda: Agent({}, native(said("done"))), "Translate.")
    researcher = as_tool("researcher", lambda: Orchestrator({"translator": translator}, native(
        said("", ("translator", {"task": "번역"})), said("translated")), name="researcher"), "Research.")
    boss = Orchestrator({"researcher": researcher}, native(
        said("", ("researcher", {"task": "첫째"})), said("", ("researcher", {"task": "둘째"})), said("끝")))
    boss.run("go")
    assert [(r.caller, r.depth) for r in translator.runs] == [("researcher", 2), ("researcher", 2)]
    assert [len(r.children) for r in researcher.runs] == [1, 1]


def test_building_a_sub_orchestrator_keeps_the_calls_its_caller_made_of_a_shared_tool():
    """Regression (found by mutation testing): a sub-orchestrator sharing a tool with its caller, built by
    ``make_agent`` during the caller's run, cleared that tool's runs, and the caller's own earlier call vanished
    from its call tree, transcript and total_usage."""
    translator = as_tool("translator", lambda: Agent({}, native(said("done", usage=(3, 1)))), "Translate.")
    researcher = as_tool("researcher", lambda: Orchestrator({"translator": translator}, native(
        said("found", usage=(5, 2))), name="researcher"), "Research.")
    boss = Orchestrator({"translator": translator, "researcher": researcher}, native(
        said("", ("translator", {"task": "번역"})), said("", ("researcher", {"task": "찾기"})), said("끝")))
    boss.run("go")
    assert call_edges(call_tree(boss)) == [("orchestrator", "translator", "번역"), ("orchestrator", "researcher", "찾기")]
    assert [s["agent"] for s in boss.transcript()["subagents"]] == ["translator", "researcher"]
    assert total_usage(boss) == {"input_tokens": 8, "output_tokens": 3}
    boss.reset()   # a reset of the top orchestrator (not its construction) still forgets the last run's calls
    assert translator.runs == [] and researcher.runs == []


def test_the_transcript_s_default_name_and_its_choice_of_tools():
    first, second = as_tool("first", answering("1"), "One."), as_tool("second", answering("2"), "Two.")
    boss = Agent({"first": first, "second": second}, native(
        said("", ("first", {"task": "a"}), ("second", {"task": "b"})), said("done")))
    boss.run("go")
    assert orchestration_transcript(boss)["agent"] == "orchestrator"
    assert [s["agent"] for s in orchestration_transcript(boss)["subagents"]] == ["first", "second"]
    assert [s["agent"] for s in orchestration_transcript(boss, "main", [second])["subagents"]] == ["second"]


def test_a_team_that_reports_no_tokens_used_none():
    tool = as_tool("helper", answering("네"), "Ask.")
    boss = Agent({"helper": tool}, native(said("", ("helper", {"task": "하나"})), said("끝")))
    boss.run("시작")
    assert total_usage(boss) == {"input_tokens": 0, "output_tokens": 0}


def test_an_orchestrator_with_plain_tools_too_reports_only_its_agent_tools():
    """Plain tools (no ``is_agent_tool``) sit next to agent tools: they are run, never reported as sub-agents."""
    tool = as_tool("helper", answering("네"), "Ask the helper.")
    boss = Orchestrator({"lookup": lookup, "helper": tool}, native(
        said("", ("lookup", {"topic": "단가"}), ("helper", {"task": "하나"})), said("끝")))
    assert boss.run("go") == "끝" and observations(boss) == [("lookup", "개당 $24", False), ("helper", "네", False)]
    assert call_edges(call_tree(boss)) == [("orchestrator", "helper", "하나")]
    assert orchestration.agent_tools(boss.tools) == [tool]


# ---------------------------------------------------------------- lesson 11b's your-turn: a sub-agent as a tool
_BODY = ('        agent = make_agent()                        # fresh: its own history and its own step cap\n'
         '        answer = agent.run(task)                    '
         '# it sees the task, nothing of the caller\'s conversation\n'
         '        if agent.stop_reason != "finish":\n'
         '            raise ToolError(f"the {name} stopped without an answer ({agent.stop_reason}): {answer}")\n'
         '        return answer\n')


def _as_tool_cell(edits: dict) -> str:
    return lesson_cell("11b_teams_critics_schemas.ipynb", "tools = default_tools()", "def my_as_tool(", edits)


def test_the_sub_agent_cell_takes_the_course_s_answer():
    printed = _as_tool_cell({})
    assert "✓ the same team run as as_tool's" in printed and "✗" not in printed, printed


@pytest.mark.parametrize("body, said", [
    ("        return make_agent().run(task)\n", "your tool passed its sentence off as one: check agent.stop_reason"),
    (_BODY.replace("raise ToolError(", "raise RuntimeError("), "✗ your tool raised RuntimeError: raise ToolError"),
    (_BODY.replace("        agent = make_agent()", "        agent = made_once"),   # one agent for every task
     "✗ two tasks should run two fresh agents"),
    (_BODY.replace("return answer", "return f'{name}: {answer}'"), "✗ the team's run with your tools differs"),
    (_BODY.replace('if agent.stop_reason != "finish":', "if agent.steps >= agent.max_steps:"),   # a last-step answer
     "✗ two tasks should run two fresh agents, each giving its answer (one that finishes on its last allowed step"),
    (_BODY.replace('if agent.stop_reason != "finish":', 'if agent.stop_reason == "max_steps":'),
     "✗ a sub-agent whose model failed has no answer"),
    (_BODY.replace("answer = agent.run(task)", "answer = agnet.run(task)"),   # a typo: a crash, named as one
     "✗ your tool crashed: Error: researcher raised NameError: name 'agnet' is not defined"),
])
def test_the_sub_agent_cell_names_what_a_wrong_tool_gets_wrong(body, said):
    edits = {_BODY: body}
    if "made_once" in body:   # the agent made when the tool is, outside tool(): the shape of this mistake
        edits["    def tool(task: str) -> str:\n"] = "    made_once = make_agent()\n    def tool(task: str) -> str:\n"
    printed = _as_tool_cell(edits)
    assert said in printed and "✓ the same team run" not in printed, printed
