"""Stage 10: counting, trimming and summarising the history, carrying on after "context_full", and a SQLite
memory. Trimmed histories go through BOTH real SDK adapters to the local stand-in server, which refuses a
broken conversation with the real API's 400, so "the window never breaks the protocol" is checked the way
a real provider would check it."""
import copy
import io
import json
import sqlite3
import threading
import unicodedata

import matplotlib
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from course_lib import default_tools
from course_lib import control, memory, memory_store
from course_lib.agent import Agent
from course_lib.control import estimate_tokens, text_tokens, tokens_per_call
from course_lib.courseware import memory_lab
from course_lib.courseware.memory_lab import context_growth_data, savings_run
from course_lib.describe import tool_schema, tool_spec
from course_lib.dispatch import dispatch
from course_lib.memory import (as_transcript, continue_after_trim, resend_cost, run_with_memory, split_steps, summarise,
                               trim_window)
from course_lib.memory_store import MemoryStore, fts5_available, looks_like_secret
from course_lib.courseware.scenarios import scenario_model
from course_lib.models import ModelError, Reply, ScriptedModel, ToolCall
from course_lib.models.anthropic import AnthropicModel
from course_lib.models.openai import OpenAIModel
from course_lib.courseware.standin import StandInServer
from course_lib.tools import ToolError, calculator, lookup

matplotlib.use("Agg")
TOOLS = {"lookup": lookup, "calculator": calculator}
ORPHAN = {"anthropic": "unexpected `tool_use_id` found in `tool_result` blocks",
          "openai": "messages with role 'tool' must be a response to a preceeding message with 'tool_calls'"}


def make_model(provider, server):
    if provider == "anthropic":
        return AnthropicModel(base_url=server.url, api_key="stand-in", max_retries=0)
    return OpenAIModel(base_url=server.url + "/v1", api_key="stand-in", max_retries=0)


def call(tool, id_, **args):
    return {"id": id_, "name": tool, "args": args}


def result(id_, content, tool="lookup", is_error=False):
    return {"role": "tool", "tool_call_id": id_, "name": tool, "content": content, "is_error": is_error}


SYSTEM = {"role": "system", "content": "You answer price questions with the tools."}
GOAL = {"role": "user", "content": "일곱 개는 얼마? (How much do seven cost?)"}
NATIVE = [SYSTEM, GOAL,
          {"role": "assistant", "content": "Checking both.",
           "tool_calls": [call("lookup", "a1", topic="단가"), call("calculator", "a2", expression="1/0")]},
          result("a1", "개당 $24"), result("a2", "Error: division by zero", "calculator", True),
          {"role": "assistant", "content": "", "tool_calls": [call("calculator", "b1", expression="24*7")]},
          result("b1", "168", "calculator"),
          {"role": "assistant", "content": "Seven cost $168."},
          {"role": "user", "content": "그럼 여덟 개는? (And eight?)"}]


# ---------------------------------------------------------------- counting
def test_text_tokens_counts_four_characters_or_one_hangul_character_per_token():
    assert text_tokens("") == 0
    assert text_tokens("abcd" * 10) == 10 and text_tokens("abcde") == 2   # rounded up
    assert text_tokens("한국어") == 3 and text_tokens("日本語です") == 5
    assert text_tokens("부산 is nice") == 2 + 2 and text_tokens("부산 is nice!") == 2 + 3   # 8, then 9 others


def test_estimate_adds_per_message_and_per_tool_overheads():
    assert estimate_tokens([]) == 0
    assert estimate_tokens([{"role": "user", "content": ""}]) == control.MESSAGE_OVERHEAD == 4
    assert estimate_tokens([{"role": "user", "content": "abcd" * 25}]) == 4 + 25
    one_call = {"role": "assistant", "content": "", "tool_calls": [call("lookup", "c1", topic="x")]}
    assert estimate_tokens([one_call]) == 4 + control.TOOL_OVERHEAD + text_tokens('c1 lookup {"topic": "x"}')
    assert estimate_tokens([result("c1", "")]) == 4 + 10 + text_tokens("c1")
    korean, english = "가" * 40, "a" * 40   # same length, four times the tokens
    assert estimate_tokens([{"role": "user", "content": korean}]) - 4 == 4 * (estimate_tokens(
        [{"role": "user", "content": english}]) - 4)


@pytest.mark.parametrize("bad, words", [("not a list", "list of message dicts"), ([{"content": "x"}], "history[0]"),
                                        ([{"role": "user", "content": "x"}, "hi"], "history[1]"),
                                        ([{"role": "robot", "content": "x"}], "'role'")])
def test_estimate_refuses_what_is_not_a_history(bad, words):
    with pytest.raises(ValueError, match=words.replace("[", r"\[").replace("]", r"\]")):
        estimate_tokens(bad)


@pytest.mark.parametrize("calls", [[None], ["calculator"], "calculator"])
def test_a_history_with_malformed_tool_calls_gets_a_value_error_not_an_attribute_error(calls):
    # A hand-built history with tool_calls that are not call dicts is refused with a sentence (ValueError).
    history = [{"role": "system", "content": "s"}, {"role": "user", "content": "goal"},
               {"role": "assistant", "content": "", "tool_calls": calls}]
    with pytest.raises(ValueError):
        estimate_tokens(history)
    with pytest.raises(ValueError):
        trim_window(history, max_tokens=1000)


def _price_history():
    goal, model = scenario_model("price")
    agent = Agent(default_tools(), model)
    agent.run(goal)
    return agent.history[:-1]   # as the last call sent it


def _savings_history():
    goal, model = savings_run(12)
    agent = Agent({"calculator": calculator}, model, max_steps=20)
    agent.run(goal)
    return agent.history[:-1]


def _trip_history():
    goal, model = scenario_model("trip")
    agent = Agent(default_tools(), model)
    agent.run(goal)
    return agent.history[:-1]


ENGLISH = [{"role": "system", "content": "You are a careful assistant. " * 20},
           {"role": "user", "content": "Explain how an agent remembers a conversation. " * 30}]
KOREAN = [{"role": "system", "content": "You are a careful assistant."},
          {"role": "user", "content": "에이전트의 기억은 메시지 배열입니다. " * 30}]


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
@pytest.mark.parametrize("make", [_price_history, _savings_history, _trip_history, lambda: ENGLISH],
                         ids=["text-protocol run", "native tool run", "mixed Korean run", "English prose"])
def test_the_estimate_is_within_25_percent_of_the_standins_usage(provider, make):
    """The stand-in reports input_tokens as len(JSON body) // 4 when its script gives no usage: for English
    and tool runs our estimate lands within 25% of it (measured: 0.77 to 0.97 of it)."""
    history = make()
    with StandInServer(["ok"]) as server:
        reported = make_model(provider, server).complete(history, None).usage["input_tokens"]
    assert 0.75 * reported <= estimate_tokens(history) <= 1.25 * reported


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_korean_text_is_estimated_higher_than_the_standin_counts_it(provider):
    """The stand-in counts four Hangul characters per token, as if they were ASCII; no tokenizer does, so on
    Korean prose our estimate is 2 to 3.5 times its number (measured: 2.8)."""
    with StandInServer(["ok"]) as server:
        reported = make_model(provider, server).complete(KOREAN, None).usage["input_tokens"]
    assert 2 * reported <= estimate_tokens(KOREAN) <= 3.5 * reported


def test_tokens_per_call_rebuilds_what_each_model_call_sent():
    goal, model = scenario_model("price")
    agent = Agent(default_tools(), model)
    agent.run(goal)
    assert tokens_per_call(agent.history) == [estimate_tokens(sent) for sent in model.calls]
    assert len(model.calls) == 4


def test_resending_everything_grows_with_the_square_of_the_steps():
    """The same lookup ten times: every step adds the same tokens, so the running total is exactly
    n·b + d·n(n-1)/2, and twenty steps cost about four times what ten do."""
    def sizes(n):
        replies = [{"tool_calls": [{"name": "lookup", "args": {"topic": "단가"}, "id": "same"}]}] * n + ["done"]
        agent = Agent(default_tools(), ScriptedModel(replies, native_tools=True), max_steps=n + 1)
        agent.run("Look up the unit price again and again.")
        return tokens_per_call(agent.history)
    ten = sizes(10)
    b, d = ten[0], ten[1] - ten[0]
    assert d > 0 and all(later - earlier == d for earlier, later in zip(ten, ten[1:]))
    total = resend_cost(ten)
    assert total == [k * b + d * k * (k - 1) // 2 for k in range(1, 12)]
    assert 3.0 < resend_cost(sizes(20))[-1] / total[-1] < 4.0
    assert resend_cost([]) == [] and resend_cost([5, 7]) == [5, 12]


# ---------------------------------------------------------------- splitting and trimming
def test_split_steps_keeps_each_tool_call_with_its_results():
    head, steps = split_steps(NATIVE)
    assert head == [SYSTEM, GOAL]
    assert [[m["role"] for m in s] for s in steps] == [["assistant", "tool", "tool"], ["assistant", "tool"],
                                                       ["assistant", "user"]]
    assert split_steps([SYSTEM, GOAL]) == ([SYSTEM, GOAL], [])


def test_trim_window_keeps_the_head_and_the_newest_whole_steps():
    before = copy.deepcopy(NATIVE)
    assert trim_window(NATIVE, keep_last=1) == [SYSTEM, GOAL] + NATIVE[-2:]
    assert trim_window(NATIVE, keep_last=2) == [SYSTEM, GOAL] + NATIVE[5:]
    assert trim_window(NATIVE, keep_last=3) == NATIVE and trim_window(NATIVE, keep_last=99) == NATIVE
    assert trim_window(NATIVE, keep_last=0) == [SYSTEM, GOAL, NATIVE[-1]]   # the user's latest message stays
    assert NATIVE == before   # the input is never changed


def test_the_users_latest_message_moves_up_when_its_step_is_dropped():
    chat = NATIVE + [{"role": "assistant", "content": "", "tool_calls": [call("calculator", "c1", expression="24*8")]},
                     result("c1", "192", "calculator"),
                     {"role": "assistant", "content": "", "tool_calls": [call("lookup", "d1", topic="discount")]},
                     result("d1", "Error: nothing is known about 'discount'", is_error=True)]
    question = NATIVE[-1]
    assert trim_window(chat, keep_last=1) == [SYSTEM, GOAL, question] + chat[-2:]
    assert trim_window(chat, keep_last=2) == [SYSTEM, GOAL, question] + chat[-4:]
    assert trim_window(chat, keep_last=3) == [SYSTEM, GOAL] + chat[-6:]   # in its own step: not repeated


def test_an_observation_is_the_agents_note_not_the_users_message():
    goal, model = scenario_model("price")
    agent = Agent(default_tools(), model)
    agent.run(goal)
    history = agent.history[:-1]
    assert history[-1]["content"].startswith("Observation: ")
    assert trim_window(history, keep_last=1) == history[:2] + history[-2:]
    assert trim_window(history, keep_last=0) == history[:2]


def test_trim_window_by_tokens_keeps_what_fits_and_says_when_nothing_can():
    for keep in range(4):
        fits = estimate_tokens(trim_window(NATIVE, keep_last=keep))
        assert trim_window(NATIVE, max_tokens=fits) == trim_window(NATIVE, keep_last=keep)
        assert estimate_tokens(trim_window(NATIVE, max_tokens=fits + 3)) <= fits + 3
    assert trim_window(NATIVE, 10_000, keep_last=1) == trim_window(NATIVE, keep_last=1)   # both limits hold
    least = estimate_tokens([SYSTEM, GOAL, NATIVE[-1]])
    assert trim_window(NATIVE, max_tokens=least) == [SYSTEM, GOAL, NATIVE[-1]]
    with pytest.raises(ValueError, match=f"the latest request alone take about {least} tokens, more than "
                                         f"max_tokens={least - 1}"):
        trim_window(NATIVE, max_tokens=least - 1)


@pytest.mark.parametrize("kwargs, words", [({}, "needs max_tokens"), ({"keep_last": -1}, "keep_last must be"),
                                           ({"keep_last": True}, "keep_last must be"),
                                           ({"keep_last": 1.5}, "keep_last must be"),
                                           ({"max_tokens": 0}, "max_tokens must be a whole number, 1 or more"),
                                           ({"max_tokens": "100"}, "max_tokens must be")])
def test_trim_window_refuses_unclear_limits(kwargs, words):
    with pytest.raises(ValueError, match=words):
        trim_window(NATIVE, **kwargs)


texts = st.text(min_size=1, max_size=30).filter(str.strip)


@st.composite
def histories(draw):
    """A history as the agent builds it, ready for the next model call: system, goal, then steps of native
    tool calls (one to three, answered by id), text-protocol observations, or a chat answer and a new question."""
    history = [{"role": "system", "content": draw(texts)}, {"role": "user", "content": draw(texts)}]
    for n, kind in enumerate(draw(st.lists(st.sampled_from(["tools", "text", "chat"]), min_size=1, max_size=6))):
        if kind == "tools":
            calls = [call("lookup", f"call_{n}_{k}", topic=draw(texts)) for k in range(draw(st.integers(1, 3)))]
            history.append({"role": "assistant", "content": draw(st.sampled_from(["", "Let me look."])),
                            "tool_calls": calls})
            history += [result(c["id"], draw(texts), is_error=draw(st.booleans())) for c in calls]
        else:
            said = "Observation: " if kind == "text" else ""
            history += [{"role": "assistant", "content": draw(texts)}, {"role": "user", "content": said + draw(texts)}]
    return history


def _accepted(model, history):
    reply = model.complete(history, TOOLS)
    return reply.text == "ok"


def _expected(history, keep):
    """What a window of ``keep`` steps must hold, worked out plainly: head, the user's latest message if its
    step is dropped, then the newest ``keep`` steps whole."""
    head, steps = split_steps(history)
    first = max(0, len(steps) - keep)
    dropped = [m for step in steps[:first] for m in step]
    said = [m for step in steps for m in step if m["role"] == "user" and not m["content"].startswith("Observation: ")]
    pinned = [said[-1]] if said and any(m is said[-1] for m in dropped) else []
    return head + pinned + [m for step in steps[first:] for m in step]


@settings(max_examples=30)
@given(histories())
def test_every_trim_is_accepted_by_both_apis_and_every_orphaning_cut_is_refused(history):
    head, steps = split_steps(history)
    for provider in ("anthropic", "openai"):
        with StandInServer(["ok"] * (len(steps) + 1)) as server:
            model = make_model(provider, server)
            for keep in range(len(steps) + 1):
                trimmed = trim_window(history, keep_last=keep)
                assert trimmed == _expected(history, keep)
                assert _accepted(model, trimmed), (provider, keep)
            assert server.problems == []
            for k, m in enumerate(history):   # a naive cut: keep the head, start the rest at a tool result
                if m["role"] == "tool":
                    with pytest.raises(ModelError, match="400") as refused:
                        model.complete(head + history[k:], TOOLS)
                    assert ORPHAN[provider] in str(refused.value)


@settings(max_examples=40)
@given(histories(), st.integers(0, 400))
def test_a_token_window_fits_and_keeps_as_many_whole_steps_as_fit(history, slack):
    head, steps = split_steps(history)
    limit = estimate_tokens(head) + slack
    try:
        trimmed = trim_window(history, max_tokens=limit)
    except ValueError as e:   # the head and the user's latest message alone are over the limit
        assert estimate_tokens(_expected(history, 0)) > limit and "alone take about" in str(e)
        return
    kept = sum(m["role"] == "assistant" for m in trimmed)
    assert trimmed == _expected(history, kept) and estimate_tokens(trimmed) <= limit
    assert kept == len(steps) or estimate_tokens(_expected(history, kept + 1)) > limit


def test_anthropic_refuses_a_cut_that_drops_the_goal_and_trim_window_never_makes_one():
    with StandInServer(["ok"]) as server:
        model = make_model("anthropic", server)
        with pytest.raises(ModelError, match="400"):
            model.complete([SYSTEM] + NATIVE[7:], TOOLS)   # starts with an assistant turn
        assert "starting with user" in server.problems[0]
        assert _accepted(model, trim_window(NATIVE, keep_last=1))


# ---------------------------------------------------------------- Claude's thinking blocks
LOOK = {"name": "lookup", "args": {"topic": "단가"}}
TIMES = {"name": "calculator", "args": {"expression": "24*8"}}
THOUGHTFUL = [{"thinking": "Find the price first.", "tool_calls": [LOOK]}, {"thinking": "", "text": "One costs $24."},
              {"thinking": "Multiply by eight.", "tool_calls": [TIMES]}, {"thinking": "", "text": "Eight cost $192."}]


def ask(agent, message):
    """One more turn of the same conversation (what Agent.chat does), written out with public pieces."""
    agent.history.append({"role": "user", "content": message})
    agent.stop_reason = agent.answer = None
    while not agent.done:
        agent.step()
    return agent.answer


def _thinking_chat(server):
    model = make_model("anthropic", server)
    agent = Agent(TOOLS, model, max_steps=10)
    agent.run("What does one unit cost?")
    ask(agent, "And eight?")
    return model, agent.history + [{"role": "user", "content": "And nine?"}]


def test_after_a_finished_answer_every_trim_drops_thinking_and_is_accepted():
    with StandInServer(THOUGHTFUL + ["ok"] * 10) as server:
        model, history = _thinking_chat(server)
        head, steps = split_steps(history)
        assert any(m.get("raw") and m["raw"]["content"][0]["type"] == "thinking" for m in history)
        for keep in range(len(steps) + 1):
            trimmed = trim_window(history, keep_last=keep)
            assert _accepted(model, trimmed), keep
            if keep < len(steps):   # something dropped: no thinking block is left to fail the prefix check
                blocks = [b for m in trimmed for b in (m.get("raw") or {}).get("content", [])]
                assert not any(b["type"] == "thinking" for b in blocks)
        assert server.problems == []


def test_a_trim_that_keeps_thinking_blocks_is_refused_as_bound_to_another_conversation():
    with StandInServer(THOUGHTFUL + ["unused"]) as server:
        model, history = _thinking_chat(server)
        head, steps = split_steps(history)
        naive = head + [m for s in steps[2:] for m in s]   # whole steps, but the thinking left in
        with pytest.raises(ModelError, match="bound to a different conversation"):
            model.complete(naive, TOOLS)


def test_in_the_middle_of_a_thinking_tool_loop_trim_refuses_and_says_why():
    with StandInServer(THOUGHTFUL + ["ok"] * 3) as server:
        model, history = _thinking_chat(server)
        open_loop = history[:-2]   # ends with the calculator call made with thinking, and its result
        assert open_loop[-1]["role"] == "tool"
        with pytest.raises(ValueError, match="tool call made with Claude's thinking.*Trim after the answer"):
            trim_window(open_loop, keep_last=1)
        with pytest.raises(ValueError, match="made with Claude's thinking"):
            summarise(open_loop, ScriptedModel(["never asked"]), keep_last=1)
        assert trim_window(open_loop, keep_last=10) == open_loop   # nothing to drop: nothing to refuse
        assert _accepted(model, trim_window(open_loop, keep_last=0))   # the whole loop dropped: a fresh start
        # Why it refuses: with the thinking stripped from the open call, the API wants it back.
        stripped = trim_window(open_loop, keep_last=0) + [memory._without_thinking(open_loop[-2]), open_loop[-1]]
        with pytest.raises(ModelError, match="Expected `thinking` or `redacted_thinking`"):
            model.complete(stripped, TOOLS)


def test_an_assistant_message_of_thinking_alone_is_dropped_with_it():
    thought_only = {"role": "assistant", "content": "", "raw": {"format": "anthropic", "content": [
        {"type": "thinking", "thinking": "", "signature": "c2ln"}]}}
    history = NATIVE[:7] + [thought_only, {"role": "user", "content": "Your reply could not be used: empty."}]
    trimmed = trim_window(history, keep_last=1)
    assert trimmed == [SYSTEM, GOAL, {"role": "user", "content": "Your reply could not be used: empty."}]


# ---------------------------------------------------------------- summaries
def test_summarise_replaces_old_steps_with_one_summary_from_the_model():
    summariser = ScriptedModel(["The unit price is $24 (개당 $24); 1/0 failed; seven cost $168."])
    summarised = summarise(NATIVE, summariser, keep_last=1)
    assert summarised[:2] == [SYSTEM, GOAL] and summarised[3:] == NATIVE[-2:]
    note = summarised[2]
    assert note["role"] == "user" and note["summary"] is True
    assert note["content"] == memory.SUMMARY_LABEL + "\nThe unit price is $24 (개당 $24); 1/0 failed; seven cost $168."
    [asked] = summariser.calls
    assert asked[0] == {"role": "system", "content": memory.SUMMARY_PROMPT}
    shown = asked[1]["content"]
    assert 'assistant called lookup({"topic": "단가"})' in shown and "calculator failed: Error: division" in shown
    assert "lookup returned: 개당 $24" in shown and "Seven cost" not in shown   # only the dropped steps


def test_a_second_summary_folds_in_the_first():
    first = summarise(NATIVE, ScriptedModel(["first summary"]), keep_last=2)
    later = first + [{"role": "assistant", "content": "Eight cost $192."}, {"role": "user", "content": "Thanks!"}]
    summariser = ScriptedModel(["second summary"])
    again = summarise(later, summariser, keep_last=1)
    assert [m.get("summary") for m in again].count(True) == 1
    assert again[2]["content"].endswith("second summary") and again[3:] == later[-2:]
    assert "(earlier summary) " + memory.SUMMARY_LABEL in summariser.calls[0][1]["content"]


def test_nothing_to_summarise_means_no_model_call():
    summariser = ScriptedModel(["unused"])
    assert summarise(NATIVE, summariser, keep_last=3) == NATIVE and summariser.calls == []
    with pytest.raises(ValueError, match="keep_last must be"):
        summarise(NATIVE, summariser, keep_last=-1)


@pytest.mark.parametrize("make_summariser, words", [   # made afresh for each run: a script is used up
    (lambda: ScriptedModel([]), "the script ran out"),
    (lambda: ScriptedModel([RuntimeError("overloaded")]), "overloaded"),
    (lambda: ScriptedModel([""]), "held no summary"),
    (lambda: ScriptedModel([{"text": "partial", "stop": "max_tokens"}]), "stop: max_tokens"),
    (lambda: ScriptedModel([Reply("", (ToolCall("lookup", {"topic": "x"}, "t"),))], native_tools=True),
     "tool calls: 1"),
    (lambda: lambda messages: 42, "must be text, a dict or a Reply"),
])
def test_a_failing_summariser_leaves_the_history_unchanged_and_says_so(make_summariser, words):
    before = copy.deepcopy(NATIVE)
    with pytest.raises(ModelError) as failed:
        summarise(NATIVE, make_summariser(), keep_last=1)
    message = str(failed.value)
    assert message.startswith("Could not summarise the earlier steps") and words in message
    assert "The history is unchanged" in message and "trim_window" in message
    assert NATIVE == before


def test_a_function_summariser_that_raises_is_reported_as_a_model_error():
    # The docstring: if the summariser fails, summarise raises ModelError saying so (a function is a summariser).
    history = [{"role": "system", "content": "s"}, {"role": "user", "content": "goal"},
               {"role": "assistant", "content": "a"}, {"role": "user", "content": "b"},
               {"role": "assistant", "content": "c"}]

    def summariser(messages):
        raise ConnectionError("the summariser's server is down")

    with pytest.raises(ModelError, match="Could not summarise the earlier steps"):
        summarise(history, summariser, keep_last=1)


def test_a_function_can_be_the_summariser_and_a_long_summary_is_cut():
    summarised = summarise(NATIVE, lambda messages: "요약 " * 5000, keep_last=1)
    assert len(summarised[2]["content"]) == len(memory.SUMMARY_LABEL) + 1 + memory.MAX_SUMMARY_CHARS


def test_the_transcript_quotes_each_message_briefly():
    text = as_transcript([{"role": "user", "content": "x" * 5000}, result("a", "line one\nline two")])
    first, second = text.split("\n")
    assert first == "user: " + "x" * memory.MAX_QUOTED_CHARS + " [...]"
    assert second == "lookup returned: line one line two"


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_a_summarised_history_is_accepted_by_both_apis(provider):
    summarised = summarise(NATIVE, ScriptedModel(["Price $24; seven cost $168."]), keep_last=2)
    with StandInServer(["ok"]) as server:
        assert _accepted(make_model(provider, server), summarised) and server.problems == []


# ---------------------------------------------------------------- carrying on after "context_full"
TWO_LOOKUPS = [{"tool_calls": [LOOK]}, {"tool_calls": [TIMES]}]
FULL = {"anthropic": {"text": "I was about to", "stop_reason": "model_context_window_exceeded"},
        "openai": {"status": 400, "code": "context_length_exceeded", "message": "This model's maximum context "
                   "length is 128000 tokens. However, your messages resulted in 131072 tokens."}}


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_a_run_that_filled_the_context_is_trimmed_and_finishes(provider):
    with StandInServer(TWO_LOOKUPS + [FULL[provider], "Eight cost $192."]) as server:
        agent = Agent(TOOLS, make_model(provider, server), max_steps=10)
        agent.run("What do eight units cost?")
        assert agent.stop_reason == "context_full"
        answer = continue_after_trim(agent, keep_last=1)
        last = server.requests[-1]["body"]["messages"]
    assert answer == "Eight cost $192." and agent.stop_reason == "finish" and server.problems == []
    assert agent.history[:2] == [{"role": "system", "content": agent.system_prompt},
                                 {"role": "user", "content": "What do eight units cost?"}]
    assert [m["role"] for m in agent.history[2:]] == ["assistant", "tool", "assistant"]   # one step kept
    assert last[-1]["role"] == "user" if provider == "anthropic" else last[-1]["role"] == "tool"
    assert "I was about to" not in json.dumps(agent.history)   # the reply that stopped the run was dropped


def test_continuing_offline_keeps_the_window_for_the_rest_of_the_run():
    replies = [{"tool_calls": [LOOK]}, {"tool_calls": [LOOK]}, {"stop": "context_full"},
               {"tool_calls": [TIMES]}, {"tool_calls": [TIMES]}, "done"]
    model = ScriptedModel(replies, native_tools=True)
    agent = Agent(TOOLS, model, max_steps=10)
    agent.run("Price of eight?")
    assert agent.stop_reason == "context_full"
    assert continue_after_trim(agent, keep_last=1) == "done"
    assert [len(sent) for sent in model.calls] == [2, 4, 6, 4, 4, 4]   # head + at most one step after the stop


def test_continue_after_trim_refuses_runs_that_did_not_fill_the_context_and_changes_nothing_on_failure():
    goal, model = scenario_model("price")
    agent = Agent(default_tools(), model)
    with pytest.raises(ValueError, match="this one has not stopped"):
        continue_after_trim(agent, keep_last=1)
    agent.run(goal)
    with pytest.raises(ValueError, match="this one stopped with 'finish'"):
        continue_after_trim(agent, keep_last=1)
    full = Agent(TOOLS, ScriptedModel([{"tool_calls": [LOOK]}, {"stop": "context_full"}], native_tools=True))
    full.run("x")
    before = copy.deepcopy(full.history)
    with pytest.raises(ValueError, match="more than max_tokens=5"):
        continue_after_trim(full, max_tokens=5)
    assert full.history == before and full.stop_reason == "context_full"


def test_run_with_memory_trims_before_every_model_call():
    goal, model = savings_run(8)
    agent = Agent({"calculator": calculator}, model, max_steps=10)
    answer = run_with_memory(agent, goal, lambda h: trim_window(h, keep_last=2))
    assert answer.startswith("After 8 months the balance is 1,082,856 won")
    assert [len(sent) for sent in model.calls] == [2, 4, 6, 6, 6, 6, 6, 6, 6]


# ---------------------------------------------------------------- the numbers for a plot
def test_context_growth_data_grows_stays_flat_or_saws():
    data = context_growth_data()
    assert list(data) == ["no trimming", "window", "summary"] and all(len(v) == 30 for v in data.values())
    plain, window, summary = data.values()
    assert plain == sorted(plain) and len(set(plain)) == 30   # every call sends more
    assert plain[:5] == window[:5] and len(set(window[4:])) == 1   # four steps kept: flat from call 5
    assert max(summary) <= 800 + 48 and summary.index(max(summary)) < 29   # summarised past 800, then grows again
    assert [b < a for a, b in zip(summary, summary[1:])].count(True) >= 2   # a saw: at least two drops
    totals = [resend_cost(v)[-1] for v in data.values()]
    assert totals[0] > totals[2] > totals[1]


def test_memory_plot_draws_with_labelled_axes_and_legend():
    from course_lib.courseware.plots import memory_plot
    data = context_growth_data()
    fig = memory_plot(data)
    ax = fig.axes[0]
    assert ax.get_xlabel() == "model call" and "tokens" in ax.get_ylabel()
    assert [t.get_text() for t in fig.legends[0].get_texts()] == list(data)
    assert [list(line.get_ydata()) for line in ax.get_lines()] == list(data.values())
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    matplotlib.pyplot.close(fig)
    assert buffer.getvalue().startswith(b"\x89PNG")


# ---------------------------------------------------------------- long-term memory in SQLite
@pytest.fixture(params=[None, False], ids=["fts5-where-available", "like-fallback"])
def store(request, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    return MemoryStore("memory.sqlite3", fts=request.param)


@pytest.fixture
def default_store(tmp_path, monkeypatch):
    """A store as MemoryStore() makes it (FTS5 where SQLite has it), in a scratch folder: unlike ``store``, not
    run once in each search mode."""
    monkeypatch.chdir(tmp_path)
    return MemoryStore("memory.sqlite3")


def _all_at_once(count: int, work) -> list:
    """``work(i)`` in ``count`` real threads released together; what each returned or raised."""
    go, done = threading.Barrier(count), [None] * count

    def run(i):
        go.wait()
        try:
            done[i] = work(i)
        except Exception as e:   # noqa: BLE001 - kept for the assertions
            done[i] = e
    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)   # a hang guard only
    return done


def test_threads_that_remember_the_same_fact_store_it_once(store):
    said = _all_at_once(12, lambda i: store.remember("The user lives in Busan."))
    assert sorted(said, key=str) == sorted(["Remembered as #1."] + ["Already remembered as #1."] * 11)
    assert store.recall("Busan") == "#1: The user lives in Busan."


def test_racing_writers_do_not_pass_the_note_cap(store, monkeypatch):
    monkeypatch.setattr(memory_store, "MAX_NOTES", 5)
    said = _all_at_once(16, lambda i: store.remember(f"Fact number {i} about the trip."))
    assert sum(isinstance(s, str) and s.startswith("Remembered") for s in said) == 5
    assert all(isinstance(s, ToolError) and "the memory is full" in str(s) for s in said if not isinstance(s, str))
    with sqlite3.connect(store.path) as db:
        assert db.execute("SELECT count(*) FROM memories").fetchone()[0] == 5


def test_a_forgotten_note_leaves_no_word_in_the_file_its_search_index_included(store):
    for n in range(30):
        store.remember(f"Ordinary note {n} about prices and trips.")
    number = store.remember("The door code is zanzibarquux.").removeprefix("Remembered as #").rstrip(".")
    store.forget(int(number))
    with sqlite3.connect(store.path) as db:   # what a VACUUM would keep, too
        db.execute("VACUUM")
    assert b"zanzibarquux" not in store.path.read_bytes()
    assert store.recall("zanzibarquux").startswith("No memory matches")


def test_fts5_is_used_where_sqlite_has_it(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert MemoryStore().fts is fts5_available() and MemoryStore(fts=False).fts is False
    monkeypatch.setattr(memory_store, "fts5_available", lambda: False)
    with pytest.raises(ValueError, match="has no FTS5"):
        MemoryStore(fts=True)
    assert MemoryStore().fts is False


def test_remember_recall_forget(store):
    assert store.remember("The user lives in Busan (사용자는 부산에 산다).") == "Remembered as #1."
    assert store.remember("The unit price is $24.") == "Remembered as #2."
    assert store.remember("  The unit price   is $24. ") == "Already remembered as #2."
    assert store.recall("부산") == "#1: The user lives in Busan (사용자는 부산에 산다)."
    assert store.recall("PRICE") == "#2: The unit price is $24."
    assert store.recall("weather") == "No memory matches 'weather'."
    assert store.forget(1) == "Forgot #1: The user lives in Busan (사용자는 부산에 산다)."
    assert store.recall("Busan") == "No memory matches 'Busan'."
    assert store.remember("The user moved to Seoul.") == "Remembered as #3."
    assert store.forget(3).startswith("Forgot #3")
    assert store.remember("Seoul, again.") == "Remembered as #4."   # a forgotten number is never used again
    assert repr(store) == f"MemoryStore('memory.sqlite3', 2 notes, search={'FTS5' if store.fts else 'LIKE'})"


def test_korean_round_trips_and_matches_words_with_particles(store):
    store.remember("부산은 바다가 좋다")
    store.remember("서울 출장은 다음 주")
    assert store.recall("부산") == "#1: 부산은 바다가 좋다"   # "부산은": the word with its particle
    assert store.recall("출장") == "#2: 서울 출장은 다음 주"
    assert store.recall("바다 출장", limit=1).count("\n") == 0 and store.recall("바다 출장").count("#") == 2


def test_recall_finds_korean_notes_whatever_their_unicode_normalisation_form(default_store):
    # A note saved from NFD text (a macOS file name) is found by the NFC word a model writes, and the other way round.
    default_store.remember(unicodedata.normalize("NFD", "회의는 화요일 오후 세시"))
    default_store.remember("사무실은 부산 해운대에 있다")
    assert "회의는" in unicodedata.normalize("NFC", default_store.recall("화요일"))
    assert "해운대" in default_store.recall(unicodedata.normalize("NFD", "해운대"))


def test_recall_ranks_the_memory_matching_more_words_first(store):
    for text in ("price list for Busan", "Busan weather", "price of coffee"):
        store.remember(text)
    assert store.recall("Busan price").splitlines()[0] == "#1: price list for Busan"


def test_memories_survive_a_restart_in_either_search_mode(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    MemoryStore("notes.db", fts=False).remember("회의는 화요일 (the meeting is on Tuesday)")
    MemoryStore("notes.db").remember("The budget is 255,000 won")
    for fts in (None, False):   # a new object, a new connection, the same file
        again = MemoryStore("notes.db", fts=fts)
        assert again.recall("회의는") == "#1: 회의는 화요일 (the meeting is on Tuesday)"
        assert again.recall("budget") == "#2: The budget is 255,000 won"
    assert (tmp_path / "notes.db").exists()


SECRETS = ["my key is sk-proj-AbCdEf0123456789XyZ", "sk-ant-api03-Zm9vYmFyYmF6cXV4MTIzNDU2",
           "token ghp_16C7e42F292c6912E7710c838347Ae178B4a", "AKIAIOSFODNN7EXAMPLE is the access key",
           "secret=dGhpcyBpcyBhIHZlcnkgc2VjcmV0IHZhbHVlIDEyMw=="]


@pytest.mark.parametrize("secret", SECRETS)
def test_secrets_are_never_stored_and_never_repeated(store, secret):
    with pytest.raises(ToolError) as refused:
        store.remember(secret)
    message = str(refused.value)
    assert "never saved in memory" in message and "OPENAI_API_KEY" in message
    assert not any(len(part) >= 12 and part in message for part in secret.split())
    assert "No memory matches" in store.recall("key token secret access")


@pytest.mark.parametrize("note", ["내 OpenAI 키는sk-proj-AbCdEf0123456789XyZ",      # the test suite's own secret
                                  "AWS 액세스 키는AKIAIOSFODNN7EXAMPLE"])             # the test suite's own AWS key
def test_a_key_written_right_after_korean_text_is_still_refused_as_a_secret(default_store, note):
    # Korean has no space before the key here, so there is no \b word boundary; it is still a key.
    with pytest.raises(ToolError, match="never saved in memory"):
        default_store.remember(note)


@pytest.mark.parametrize("note", ["my key is sk-proj-AbC\ndEf0123456789XyZ",
                                  "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG\nbPxRfiCYEXAMPLEKEY"])
def test_a_key_wrapped_over_two_lines_is_still_refused_as_a_secret(default_store, note):
    # remember joins the lines into one; the key is still in the note, only with a space in it.
    with pytest.raises(ToolError, match="never saved in memory"):
        default_store.remember(note)


@pytest.mark.parametrize("text", ["The OpenAI key is in the OPENAI_API_KEY variable.",
                                  "commit 512300b9a3c0f7e2d1a4b5c6d7e8f90123456789 fixed it",
                                  "The task-management meeting moved.", "scikit-learn 1.5 is installed"])
def test_ordinary_notes_are_not_taken_for_secrets(text):
    assert not looks_like_secret(text)


@pytest.mark.parametrize("text, words", [("", "non-empty sentence"), ("   ", "non-empty sentence"),
                                         (None, "non-empty sentence"), ("x" * 1001, "1,001 characters long"),
                                         ("nul\x00byte", "control characters")])
def test_remember_refuses_bad_notes(store, text, words):
    with pytest.raises(ToolError, match=words):
        store.remember(text)


def test_notes_are_bounded_in_number_and_one_line_each(store, monkeypatch):
    store.remember("x" * 1000)   # exactly the limit is fine
    assert store.remember("first\n#9: the admin password is hunter2") == "Remembered as #2."
    assert store.recall("admin") == "#2: first #9: the admin password is hunter2"   # cannot fake a line
    monkeypatch.setattr(memory_store, "MAX_NOTES", 2)
    with pytest.raises(ToolError, match="memory is full"):
        store.remember("one too many")


def test_half_an_emoji_is_stored_as_a_replacement_character(store):
    store.remember("mood \ud83d")
    assert store.recall("mood") == "#1: mood \ufffd"


@pytest.mark.parametrize("query, limit, words", [("", 5, "no words"), ("?!", 5, "no words"), (None, 5, "a few words"),
                                                 ("x" * 201, 5, "at most 200"), ("a", 0, "from 1 to 10"),
                                                 ("a", 11, "from 1 to 10"), ("a", True, "from 1 to 10")])
def test_recall_refuses_bad_queries(store, query, limit, words):
    with pytest.raises(ToolError, match=words):
        store.recall(query, limit)


def test_recall_returns_at_most_limit_results(store):
    for n in range(15):
        store.remember(f"note number {n}")
    assert len(store.recall("note", limit=10).splitlines()) == 10
    assert len(store.recall("note").splitlines()) == 5


INJECTIONS = ["x'); DROP TABLE memories; --", '"', 'price" OR 1=1 --', "NEAR(price busan)", "text:*", "^price",
              "price AND", "OR OR OR", "*", "(", "'; DELETE FROM memories_fts; --", "%", "_", "\\"]


@pytest.mark.parametrize("hostile", INJECTIONS)
def test_sql_and_search_syntax_in_user_text_is_only_data(store, hostile):
    store.remember("The unit cost is $24.")
    store.remember(f"odd note: {hostile}")
    try:
        found = store.recall(hostile)
    except ToolError as e:   # nothing but punctuation: no words to search for
        assert "no words" in str(e)
    else:
        assert found.startswith("#") or found.startswith("No memory matches")
    assert store.recall("unit") == "#1: The unit cost is $24."   # the table and the index are intact
    assert store.recall("odd") == f"#2: odd note: {hostile}"


def test_the_like_fallback_treats_wildcards_as_plain_characters(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    plain = MemoryStore(fts=False)
    plain.remember("a_b costs 5")
    plain.remember("aXb costs 6")
    assert plain.recall("a_b") == "#1: a_b costs 5"   # "_" is not LIKE's any-character here


@settings(max_examples=60)
@given(st.text(max_size=60))
def test_any_query_gives_text_or_a_tool_error_never_a_database_error(query):
    for fts in (None, False):
        try:
            answer = _SHARED[fts].recall(query)
        except ToolError:
            continue
        assert isinstance(answer, str)


@pytest.fixture(scope="module", autouse=True)
def _shared_stores(tmp_path_factory):
    folder = tmp_path_factory.mktemp("shared")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(folder)
        _SHARED.update({fts: MemoryStore(f"shared-{fts}.db", fts=fts) for fts in (None, False)})
        for store in _SHARED.values():
            store.remember("부산은 바다가 좋다 (Busan has the sea)")
    yield


_SHARED: dict = {}


@pytest.mark.parametrize("memory_id, words", [(7, "there is no memory #7"), (0, "no memory #0"),
                                              (-1, "no memory #-1"), (2**80, "no memory"),
                                              (True, "whole number"), ("1", "whole number")])
def test_forget_refuses_numbers_it_does_not_hold(store, memory_id, words):
    store.remember("keep me")
    with pytest.raises(ToolError, match=words):
        store.forget(memory_id)
    assert store.recall("keep") == "#1: keep me"


def test_the_file_lives_in_the_workspace_and_a_broken_one_gets_a_sentence(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ToolError, match="outside the workspace"):
        MemoryStore("../elsewhere.db")
    (tmp_path / "broken.db").write_bytes(b"this is not a database at all" * 100)
    with pytest.raises(ToolError, match="memory file 'broken.db' could not be used .*DatabaseError"):
        MemoryStore("broken.db")


def test_the_methods_are_tools_the_course_can_describe_and_dispatch(store):
    tools = store.tools()
    assert list(tools) == ["remember", "recall", "forget"]
    assert tool_schema(tools["recall"])["required"] == ["query"]
    assert tool_schema(tools["forget"])["properties"]["memory_id"]["type"] == "integer"
    assert "never a secret" in tool_spec("remember", tools["remember"])["description"]
    assert dispatch(tools, "remember", {"text": "부산 사무소는 해운대에 있다"}).content == "Remembered as #1."
    assert dispatch(tools, "forget", {"memory_id": "1"}).is_error   # a string is refused before the tool runs
    refused = dispatch(tools, "remember", {"text": SECRETS[0]})
    assert refused.is_error and "sk-proj-AbCdEf" not in refused.content


def test_a_follow_up_question_in_a_new_conversation_is_answered_from_memory(tmp_path, monkeypatch):
    """Monday's run saves a fact; Tuesday's run (a new agent, a new store object) finds it again."""
    monkeypatch.chdir(tmp_path)
    monday = ScriptedModel([{"tool_calls": [{"name": "remember", "args": {"text": "사용자의 출장지는 부산이다"}}]},
                            "Noted: your trip is to Busan."], native_tools=True)
    Agent({**TOOLS, **MemoryStore().tools()}, monday).run("제 출장지는 부산이에요. 기억해 주세요.")
    tuesday = ScriptedModel([{"tool_calls": [{"name": "recall", "args": {"query": "출장지"}}]},
                             "Your trip is to Busan (부산)."], native_tools=True)
    agent = Agent({**TOOLS, **MemoryStore().tools()}, tuesday)
    assert agent.run("제 출장지가 어디였죠?") == "Your trip is to Busan (부산)."
    assert agent.history[3]["content"] == "#1: 사용자의 출장지는 부산이다"



# ---------------------------------------------------------------- pinned: exact words, limits and defaults
def test_a_trim_drops_every_kind_of_thinking_and_keeps_what_else_a_message_holds():
    thinking = {"type": "thinking", "thinking": "hmm", "signature": "c2ln"}
    redacted = {"type": "redacted_thinking", "data": "c2Vj"}
    text = {"type": "text", "text": "Looking."}
    raw_only = {"role": "assistant", "content": "", "thinking": "hmm",
                "raw": {"format": "anthropic", "content": [thinking, redacted, text]}}
    thought_text = {"role": "assistant", "content": "Done.", "thinking": "hmm"}          # no raw blocks at all
    calls_only = {"role": "assistant", "content": "", "tool_calls": [call("lookup", "t1", topic="단가")],
                  "raw": {"format": "anthropic", "content": [redacted]}}
    odd_user = {"role": "user", "content": "next?", "thinking": "not the model's"}        # only assistants think
    history = [SYSTEM, GOAL, {"role": "assistant", "content": "old"}, {"role": "user", "content": "first"},
               raw_only, {"role": "user", "content": "Observation: ok"}, thought_text, odd_user,
               calls_only, result("t1", "개당 $24"), {"role": "assistant", "content": "The end."}]
    assert trim_window(history, keep_last=4) == [
        SYSTEM, GOAL,
        {"role": "assistant", "content": "", "raw": {"format": "anthropic", "content": [text]}},
        {"role": "user", "content": "Observation: ok"},
        {"role": "assistant", "content": "Done."}, odd_user,
        {"role": "assistant", "content": "", "tool_calls": [call("lookup", "t1", topic="단가")]},
        result("t1", "개당 $24"), {"role": "assistant", "content": "The end."}]


def test_the_transcript_names_unnamed_tools_skips_empty_text_and_cuts_at_1000_characters():
    messages = [{"role": "assistant", "content": None, "tool_calls": [call("lookup", "t1", topic="단가")]},
                {"role": "tool", "tool_call_id": "t1", "content": "개당 $24"},
                {"role": "user", "content": "x" * 1000}, {"role": "user", "content": "y" * 1001}]
    assert as_transcript(messages).splitlines() == ['assistant called lookup({"topic": "단가"})',
                                                    "tool returned: 개당 $24", "user: " + "x" * 1000,
                                                    "user: " + "y" * 1000 + " [...]"]


def test_summarise_keeps_two_steps_by_default_and_may_keep_none():
    summariser = ScriptedModel(["short", "shorter"])
    assert summarise(NATIVE, summariser)[3:] == NATIVE[5:]            # the last two steps stay
    everything = summarise(NATIVE, summariser, keep_last=0)
    assert everything == [SYSTEM, GOAL, {"role": "user", "content": f"{memory.SUMMARY_LABEL}\nshorter",
                                         "summary": True}, NATIVE[-1]]   # the user's latest request stays


def test_the_summariser_gets_the_prompt_the_transcript_and_no_tools():
    seen = []

    class Recorder:
        def complete(self, messages, tools):
            seen.append((messages, tools))
            return "a summary"
    summarise(NATIVE, Recorder(), keep_last=1)
    (messages, tools), = seen
    head, steps = split_steps(NATIVE)
    assert messages == [{"role": "system", "content": memory.SUMMARY_PROMPT},
                        {"role": "user", "content": as_transcript([m for s in steps[:2] for m in s])}]
    assert tools == {}


def test_a_summariser_failure_is_quoted_as_the_model_said_it_or_as_the_exception():
    def broken(messages):
        raise ValueError("boom")
    tail = ". The history is unchanged; try again, or drop the old steps with trim_window instead."
    with pytest.raises(ModelError) as failed:
        summarise(NATIVE, broken, keep_last=1)
    assert str(failed.value) == "Could not summarise the earlier steps: ValueError('boom')" + tail
    with pytest.raises(ModelError) as failed:
        summarise(NATIVE, ScriptedModel([RuntimeError("overloaded")]), keep_last=1)
    assert str(failed.value) == "Could not summarise the earlier steps: overloaded" + tail


def test_trim_window_says_exactly_what_it_needs():
    with pytest.raises(ValueError) as e:
        trim_window(NATIVE)
    assert str(e.value) == "trim_window needs max_tokens=..., keep_last=... or both"
    with pytest.raises(ValueError) as e:
        trim_window(NATIVE, max_tokens=1)
    assert str(e.value).endswith("more than max_tokens=1; shorten them or raise the limit")


def test_run_with_memory_ends_as_run_does_and_sends_the_shrunk_history():
    goal, model = savings_run(2)
    plain = Agent({"calculator": calculator}, model, max_steps=5)
    plain.run(goal)
    goal, model = savings_run(2)
    agent = Agent({"calculator": calculator}, model, max_steps=5)
    assert run_with_memory(agent, goal, lambda h: trim_window(h, keep_last=1)) == plain.answer
    assert (agent.stop_reason, agent.steps, agent.goal) == (plain.stop_reason, plain.steps, plain.goal) == \
        ("finish", 3, goal)
    assert [len(sent) for sent in model.calls] == [2, 4, 4]   # a window of one step before each call


def test_continue_after_trim_keeps_a_token_window_for_the_rest_of_the_run():
    replies = [{"tool_calls": [LOOK]}, {"tool_calls": [LOOK]}, {"stop": "context_full"},
               {"tool_calls": [TIMES]}, "done"]
    model = ScriptedModel(replies, native_tools=True)
    agent = Agent(TOOLS, model, max_steps=10)
    agent.run("Price of eight?")
    window = estimate_tokens(trim_window(agent.history[:-1], keep_last=1))
    assert continue_after_trim(agent, max_tokens=window) == "done"
    assert all(estimate_tokens(sent) <= window for sent in model.calls[3:])


def test_the_savings_run_has_29_months_of_calculator_calls_by_default():
    goal, model = savings_run()
    assert goal.endswith("Work it out one month at a time with the calculator, rounding the interest down "
                         "to whole won.") and "29개월" in goal
    agent = Agent({"calculator": calculator}, model, max_steps=30)
    answer = agent.run(goal)
    results = [run.observation for step in agent.trace for run in step.runs]
    assert len(results) == 29 and not any(r.is_error for r in results)
    assert answer.startswith(f"After 29 months the balance is {int(results[-1].content):,} won")


def test_the_growth_data_is_what_the_runs_sent_and_summarises_only_past_the_threshold():
    goal, model = savings_run(9)   # 10 calls: 9 months (a one-digit count in the goal), then the answer
    Agent({"calculator": calculator}, model, max_steps=10).run(goal)
    plain = [estimate_tokens(sent) for sent in model.calls]
    data = context_growth_data(steps=10, keep_last=3, summary_over=plain[4])
    assert data["no trimming"] == plain
    assert data["window"][:4] == plain[:4] and len(set(data["window"][3:])) == 1   # three steps kept
    assert data["summary"][:5] == plain[:5]                       # call 5 sends exactly the threshold: kept whole
    assert data["summary"][5] < plain[5]                          # call 6 would go past it: summarised
    note = {"role": "user", "content": f"{memory.SUMMARY_LABEL}\n{memory_lab._note_taker([])}"}
    assert data["summary"][5] == data["window"][5] + estimate_tokens([note])   # the same three steps, and the note


def test_fts5_available_asks_sqlite_itself(monkeypatch):
    with sqlite3.connect(":memory:") as db:
        built_with = any("FTS5" in row[0] for row in db.execute("PRAGMA compile_options"))
    assert fts5_available() is built_with

    class NoFts5:
        def execute(self, sql):
            raise sqlite3.OperationalError("no such module: fts5")

        def close(self):
            pass
    monkeypatch.setattr(memory_store.sqlite3, "connect", lambda path: NoFts5())
    assert fts5_available() is False


def test_the_store_defaults_to_memory_sqlite3_and_fts_true_means_fts5(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert MemoryStore().path == tmp_path / "memory.sqlite3"
    if fts5_available():
        assert MemoryStore(fts=True).fts is True
    monkeypatch.setattr(memory_store, "fts5_available", lambda: False)
    with pytest.raises(ValueError) as e:
        MemoryStore(fts=True)
    assert str(e.value) == "this Python's SQLite has no FTS5; use fts=None or fts=False for the LIKE search"


def test_the_stores_refusals_say_what_to_do(store):
    refusals = [(lambda: store.remember(""), 'text must be a non-empty sentence, e.g. "The user prefers answers '
                                             'in Korean"'),
                (lambda: store.remember("x" * 1001), "the note is 1,001 characters long; the limit is 1,000: save "
                                                     "one short fact at a time"),
                (lambda: store.remember("a\x7fb"), "the note contains control characters; save plain text"),
                (lambda: store.remember("sk-proj-AbCdEf0123456789XyZ"),
                 "this looks like an API key or another secret (a key prefix such as sk-, or a long run of mixed "
                 "letters and digits); secrets are never saved in memory. Save where it is kept instead, e.g. "
                 '"the OpenAI key is in the OPENAI_API_KEY variable".'),
                (lambda: store.recall("?!"), 'query has no words to look for; send one or more words, e.g. "부산" '
                                             'or "price"'),
                (lambda: store.forget("1"), 'memory_id must be a whole number, e.g. 3 for the "#3" that recall shows')]
    for call_it, message in refusals:
        with pytest.raises(ToolError) as e:
            call_it()
        assert str(e.value) == message


def test_a_query_may_be_200_characters_and_no_match_names_every_word(store):
    assert store.recall("a" * 200) == f"No memory matches '{'a' * 200}'."
    assert store.recall("sea weather") == "No memory matches 'sea weather'."


def test_forget_shows_80_characters_and_takes_any_number_sqlite_can_hold(store):
    store.remember("z" * 100)
    assert store.forget(1) == "Forgot #1: " + "z" * 80
    with sqlite3.connect(store.path) as db:   # a note numbered as another program may have numbered it
        db.execute("INSERT INTO memories (id, text) VALUES (?, ?)", (2**62, "far away"))
    assert store.forget(2**62) == f"Forgot #{2**62}: far away"
    for too_big in (2**63, 2**64):
        with pytest.raises(ToolError, match=f"there is no memory #{too_big}"):
            store.forget(too_big)


def test_ordinary_notes_that_only_look_long_are_not_secrets():
    assert not looks_like_secret("commit 512300b9a3c0f7e2\nd1a4b5c6d7e8f901 fixed it")   # a hash wrapped over lines
    assert not looks_like_secret("The serial number is 4F3A9C2B7D1E8F60A5B4C3D2E1F0A9B8")   # no lower case


def test_dropping_even_one_step_before_an_open_thinking_tool_call_is_refused():
    open_call = {"role": "assistant", "content": "", "tool_calls": [call("calculator", "c1", expression="24*8")],
                 "raw": {"format": "anthropic", "content": [{"type": "thinking", "thinking": "x", "signature": "s"}]}}
    history = [SYSTEM, GOAL, {"role": "assistant", "content": "One costs $24."},
               {"role": "user", "content": "And eight?"}, open_call, result("c1", "192", "calculator")]
    with pytest.raises(ValueError) as refused:
        trim_window(history, keep_last=1)
    assert str(refused.value).startswith("the last step is a tool call made with Claude's thinking, whose blocks "
                                         "are bound to every message before them: nothing before it can be "
                                         "dropped until the model has answered.")
    assert trim_window(history, keep_last=0) == [SYSTEM, GOAL, {"role": "user", "content": "And eight?"}]
