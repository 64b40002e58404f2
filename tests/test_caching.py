"""Prompt caching: the stand-in's cache behaves as Anthropic's docs describe, and what it reports is counted.

Sources: platform.claude.com/docs/en/build-with-claude/prompt-caching (the prefix order tools → system →
messages, automatic caching with a top-level ``cache_control``, at most four marked blocks, a minimum length
below which nothing is cached and nothing fails, a 20-block look-back, writes at 1.25× and reads at 0.1× the
input price) and the SDK's ``anthropic/types/usage.py`` (``cache_creation_input_tokens``,
``cache_read_input_tokens``).
"""
import json

import anthropic
import pytest

from course_lib import Agent
from course_lib.control import Budget
from course_lib.courseware.standin import StandInServer
from course_lib.courseware.memory_lab import CachedAnthropic as Cached   # automatic caching, as lesson 10 adds it
from course_lib.courseware.standin.caching import LOOKBACK, MINIMUM

POLICY = "Refunds are paid within 14 days of a return; opened software is not refunded. " * 60   # ~1,250 tokens
MODEL = "claude-sonnet-4-6"
AUTH = {"x-api-key": "sk-standin"}


def client(server):
    return anthropic.Anthropic(base_url=server.url, api_key="sk-standin", max_retries=0)


def ask(c, system, question, **extra):
    return c.messages.create(model=MODEL, max_tokens=100, system=system,
                             messages=[{"role": "user", "content": question}], **extra).usage


def marked(text):
    return [{"type": "text", "text": text, "cache_control": {"type": "ephemeral"}}]


def test_a_marked_prefix_is_written_once_then_read_and_the_three_counts_add_up_to_the_whole_prompt():
    with StandInServer(["a", "b", "c"]) as server:
        c = client(server)
        first, second = ask(c, marked(POLICY), "Can I return a game?"), ask(c, marked(POLICY), "And a book?")
        plain = ask(c, POLICY, "Can I return a game?")   # unmarked: the whole prompt at the input price
    assert first.cache_creation_input_tokens >= MINIMUM and first.cache_read_input_tokens == 0
    assert second.cache_read_input_tokens == first.cache_creation_input_tokens
    assert second.cache_creation_input_tokens == 0 and 0 < second.input_tokens < 100   # the question, and framing
    whole = len(json.dumps(server.requests[0]["body"], ensure_ascii=False)) // 4
    assert first.input_tokens + first.cache_creation_input_tokens == whole and first.input_tokens < 100
    assert plain.cache_read_input_tokens is None and plain.cache_creation_input_tokens is None   # nothing marked


def test_a_changed_front_breaks_the_cache_and_a_prefix_under_the_minimum_is_not_cached_and_not_refused():
    with StandInServer(["a", "b", "c", "d"]) as server:
        c = client(server)
        ask(c, marked(POLICY), "q")
        trimmed = ask(c, marked(POLICY[10:]), "q")   # the front of the prefix changed: nothing to read
        short = [ask(c, marked("Be brief."), "q") for _ in range(2)]
    assert trimmed.cache_read_input_tokens == 0 and trimmed.cache_creation_input_tokens >= MINIMUM
    assert [(u.cache_read_input_tokens, u.cache_creation_input_tokens) for u in short] == [(0, 0), (0, 0)]
    assert all(u.input_tokens > 0 for u in short)


def test_another_model_does_not_read_this_models_cache():
    with StandInServer(["a", "b"]) as server:
        c = client(server)
        ask(c, marked(POLICY), "q")
        other = c.messages.create(model="claude-opus-4-6", max_tokens=100, system=marked(POLICY),
                                  messages=[{"role": "user", "content": "q"}]).usage
    assert other.cache_read_input_tokens == 0 and other.cache_creation_input_tokens > 0


def test_more_than_four_marks_and_a_malformed_mark_are_the_apis_400():
    five = [{"type": "text", "text": f"part {i}", "cache_control": {"type": "ephemeral"}} for i in range(5)]
    with StandInServer(["never"]) as server:
        c = client(server)
        with pytest.raises(anthropic.BadRequestError, match=r"A maximum of 4 blocks with cache_control may be "
                                                            r"provided\. Found 5\."):
            ask(c, five, "q")
        for bad in ({"type": "persistent"}, {"type": "ephemeral", "ttl": "10m"}, "ephemeral"):
            with pytest.raises(anthropic.BadRequestError, match="system.0.cache_control"):
                ask(c, [{"type": "text", "text": "x", "cache_control": bad}], "q")
        with pytest.raises(anthropic.BadRequestError, match="body.cache_control"):
            ask(c, "x", "q", cache_control={"type": "ephemeral", "ttl": 300})
        with pytest.raises(anthropic.BadRequestError, match=r"Found 5\."):   # automatic caching takes a fifth slot
            ask(c, five[:4], "q", cache_control={"type": "ephemeral"})
        assert ask(c, five[:3], "q", cache_control={"type": "ephemeral"}).input_tokens > 0   # three and one
        assert server.remaining == 0   # the refused requests used no turn
    last_marked = {"model": MODEL, "max_tokens": 10, "system": five[:3],
                   "messages": [{"role": "user", "content": five[3:4]}]}   # four marks, the last block's among them
    server = StandInServer(["ok"])
    assert server.answer("anthropic", {**last_marked, "cache_control": {"type": "ephemeral"}}, AUTH)[0] == 200
    status, body, _ = server.answer("anthropic", {**last_marked, "cache_control": {"type": "ephemeral", "ttl": "1h"}},
                                    AUTH)
    assert status == 400 and "differ in ttl" in body["error"]["message"]


def lookup(topic: str) -> str:
    """Look up a fact about the shop.

    Args:
        topic: what to look up
    """
    return POLICY


def test_in_an_agent_loop_automatic_caching_reads_the_last_calls_prefix_and_writes_only_what_grew():
    turns = [{"tool_calls": [{"name": "lookup", "args": {"topic": "refunds"}}]},
             {"tool_calls": [{"name": "lookup", "args": {"topic": "games"}}]}, "No: opened software is not refunded."]
    with StandInServer(turns) as server:
        agent = Agent({"lookup": lookup}, Cached(base_url=server.url, api_key="sk-standin"), max_steps=5)
        assert agent.run("Can I return an opened game?") == "No: opened software is not refunded."
    first, second, third = (step.usage for step in agent.trace)
    assert "cache_read_input_tokens" not in first and "cache_creation_input_tokens" not in first   # under MINIMUM
    assert second["cache_creation_input_tokens"] >= MINIMUM and "cache_read_input_tokens" not in second
    assert third["cache_read_input_tokens"] == second["cache_creation_input_tokens"]   # the prefix it wrote
    assert 0 < third["cache_creation_input_tokens"] < second["cache_creation_input_tokens"]   # only the new step


def test_an_entry_more_than_twenty_blocks_before_the_mark_is_not_found():
    def body(blocks):
        return {"model": MODEL, "max_tokens": 10, "system": marked(POLICY) if blocks == 0 else POLICY,
                "messages": [{"role": "user", "content": [{"type": "text", "text": f"note {i}"} for i in
                                                          range(blocks)] + [{"type": "text", "text": "end",
                                                                             "cache_control": {"type": "ephemeral"}}]}]}
    near, far = StandInServer(["a", "b"]), StandInServer(["a", "b"])
    for server, gap in ((near, LOOKBACK - 2), (far, LOOKBACK - 1)):   # the mark at position gap + 1, then 20 back
        server.answer("anthropic", body(0), AUTH)   # writes the system prompt's entry (the mark at block 0)
        status, reply, _ = server.answer("anthropic", body(gap), AUTH)
        assert status == 200, reply
        server.usage = reply["usage"]
    assert near.usage["cache_read_input_tokens"] > MINIMUM   # the 20th position looking back, the mark the first
    assert far.usage["cache_read_input_tokens"] == 0   # the 21st: too far back, so written again, whole


def test_the_adapter_keeps_cache_counts_only_when_reported_and_sums_them_over_a_paused_turn():
    from course_lib.models.anthropic import reply_from_anthropic
    plain = reply_from_anthropic({"content": [], "usage": {"input_tokens": 5, "output_tokens": 1,
                                                           "cache_read_input_tokens": 0,
                                                           "cache_creation_input_tokens": None}})
    assert plain.usage == {"input_tokens": 5, "output_tokens": 1}
    read = reply_from_anthropic({"content": [], "usage": {"input_tokens": 5, "output_tokens": 1,
                                                          "cache_read_input_tokens": 900}})
    assert read.usage == {"input_tokens": 5, "output_tokens": 1, "cache_read_input_tokens": 900}
    paused = {"blocks": [{"type": "server_tool_use", "id": "srvtoolu_01", "name": "web_search",
                          "input": {"query": "refund law"}}], "stop_reason": "pause_turn"}
    with StandInServer([paused, "Done."]) as server:
        reply = Cached(base_url=server.url, api_key="sk-standin").complete(
            [{"role": "system", "content": POLICY}, {"role": "user", "content": "Look it up."}])
    assert reply.text == "Done." and reply.usage["cache_creation_input_tokens"] > MINIMUM
    assert reply.usage["cache_read_input_tokens"] > MINIMUM   # the second request read what the first wrote


def test_the_budget_counts_cached_tokens_as_input_and_prices_writes_at_1_25_and_reads_at_0_1():
    class Step:
        def __init__(self, usage):
            self.usage, self.runs, self.reply = usage, [], ""

    class Run:
        model, history = None, []
        trace = [Step({"input_tokens": 100, "output_tokens": 10, "cache_creation_input_tokens": 1000}),
                 Step({"input_tokens": 100, "output_tokens": 10, "cache_read_input_tokens": 1000})]
    budget = Budget(max_cost=1.0, prices={"input": 1.0, "output": 5.0})
    spent = budget.spent(Run())
    assert spent["input_tokens"] == 2200 and spent["output_tokens"] == 20
    assert spent["cost"] == pytest.approx((100 + 1250 + 100 + 100) / 1e6 + 100 / 1e6)
    uncached = budget.spent(type("Run", (), {"model": None, "history": [], "trace": [
        Step({"input_tokens": 1100, "output_tokens": 10}), Step({"input_tokens": 1100, "output_tokens": 10})]})())
    assert uncached["input_tokens"] == spent["input_tokens"] and uncached["cost"] > spent["cost"]


def test_lesson_10s_three_runs_cached_costs_less_and_a_trimmed_window_never_reads_the_cache():
    """The numbers lesson 10 prints and plots (caching_data): the same 30 calls through the SDK and the stand-in."""
    from course_lib.courseware.memory_lab import caching_data
    data = caching_data()
    assert [len(calls) for calls in data.values()] == [30, 30, 30]
    total = {way: sum(c["cost"] for c in calls) for way, calls in data.items()}
    plain, cached, window = data["not cached"], data["cached"], data["cached + window"]
    assert not any(c["cache_read_input_tokens"] or c["cache_creation_input_tokens"] for c in plain + window)
    first = next(i for i, c in enumerate(cached) if c["cache_creation_input_tokens"])
    assert first == 12 and cached[first]["cache_creation_input_tokens"] >= MINIMUM   # lesson 10: "at call 13"
    assert all(c["cache_read_input_tokens"] > 0 for c in cached[first + 1:])
    assert cached[first]["cost"] > plain[first]["cost"]   # the write costs more than sending it plainly, once
    assert total["cached"] < total["cached + window"] < total["not cached"] / 2
    whole = [[c["input_tokens"] + c["cache_read_input_tokens"] + c["cache_creation_input_tokens"] for c in calls]
             for calls in (plain, cached)]   # the same prompts, however the input is split (the mark: a few more)
    assert all(0 <= with_mark - without <= 30 for without, with_mark in zip(*whole)), whole


# ---------------------------------------------------------------- token counting
# platform.claude.com/docs/en/build-with-claude/token-counting (POST /v1/messages/count_tokens: the same body as a
# message without max_tokens, {"input_tokens": n} back); the openai SDK's resources/responses/input_tokens.py
# (POST /responses/input_tokens, types/responses/input_token_count_response.py).
def test_counting_tokens_checks_the_request_as_a_message_would_be_and_matches_the_replys_usage():
    request = dict(model=MODEL, system=marked(POLICY),
                   messages=[{"role": "user", "content": "다음 주 화요일에 부산으로 출장을 갑니다."}])   # Korean too
    with StandInServer(["a"]) as server:
        c = client(server)
        counted = c.messages.count_tokens(**request).input_tokens
        assert server.remaining == 1   # no turn used
        usage = c.messages.create(max_tokens=16000, **request).usage
        assert 0 <= usage.input_tokens + usage.cache_creation_input_tokens - counted <= 1   # the digits of max_tokens
        with pytest.raises(anthropic.BadRequestError, match="roles must alternate"):
            c.messages.count_tokens(model=MODEL, messages=[{"role": "assistant", "content": "hi"}])
        with pytest.raises(anthropic.BadRequestError, match="A maximum of 4 blocks"):
            c.messages.count_tokens(model=MODEL, messages=[{"role": "user", "content": [
                {"type": "text", "text": str(i), "cache_control": {"type": "ephemeral"}} for i in range(5)]}])
        status, body, _ = server.count("anthropic", request, {})   # as the handler hands it over: no key sent
        assert status == 401 and "no API key" in body["error"]["message"]
        status, body, _ = server.count("anthropic", {**request, "thinking": {"type": "adaptive", "block_binding": {}}},
                                       AUTH)   # a beta field without its header, as for a message
        assert status == 400 and "anthropic-beta" in body["error"]["message"]
    assert [r["api"] for r in server.requests][:2] == ["anthropic token count", "anthropic"]


def test_the_responses_api_counts_input_tokens_too():
    import openai
    with StandInServer(["Seven units cost $168."]) as server:
        o = openai.OpenAI(base_url=server.url + "/v1", api_key="sk-standin", max_retries=0)
        counted = o.responses.input_tokens.count(model="gpt-5.5", input="What do seven units cost?")
        assert counted.object == "response.input_tokens" and server.remaining == 1
        reply = o.responses.create(model="gpt-5.5", input="What do seven units cost?")
    assert counted.input_tokens == reply.usage.input_tokens > 0


# -- OpenAI: automatic caching, reported inside the input count --------------------------------------------------
# Sources: developers.openai.com/api/docs/guides/prompt-caching (automatic for prompts of 1,024 tokens or more, exact
# prefix matches only, tools included, hits in increments of 128 tokens, no write fee before the GPT-5.6 models) and
# the SDK's openai/types/completion_usage.py (``prompt_tokens_details.cached_tokens``: "Cached tokens present in the
# prompt") and openai/types/responses/response_usage.py (``input_tokens_details``: ``cached_tokens`` and
# ``cache_write_tokens``, both required).

def test_openai_caches_a_long_prompt_by_itself_and_reports_hits_inside_prompt_tokens_in_steps_of_128():
    import openai
    from course_lib.courseware.standin.caching import STEP
    with StandInServer(["a", "b", "c", "d", "e"]) as server:
        c = openai.OpenAI(base_url=server.url + "/v1", api_key="sk-standin", max_retries=0)

        def chat(system, question, model="gpt-5.4-mini"):
            return c.chat.completions.create(model=model, messages=[
                {"role": "system", "content": system}, {"role": "user", "content": question}]).usage
        first, second = chat(POLICY, "Can I return a game?"), chat(POLICY, "And a book?")
        other, trimmed, short = chat(POLICY, "q", "gpt-5.4"), chat(POLICY[10:], "q"), chat("Be brief.", "q")
    assert first.prompt_tokens_details.cached_tokens == 0 and first.prompt_tokens >= MINIMUM   # nothing to read yet
    hit = second.prompt_tokens_details.cached_tokens
    assert MINIMUM <= hit < second.prompt_tokens and (hit - MINIMUM) % STEP == 0   # the shared prefix, rounded down
    assert second.prompt_tokens - hit < STEP + 30   # what is left: the question, and less than one step
    assert other.prompt_tokens_details.cached_tokens == 0   # another model has its own cache
    assert trimmed.prompt_tokens_details.cached_tokens == 0   # the front changed: an exact prefix match only
    assert short.prompt_tokens_details.cached_tokens == 0 and short.prompt_tokens < MINIMUM


def test_the_openai_adapters_move_cached_tokens_out_of_the_input_and_the_budget_prices_them_as_reads():
    from course_lib.models.openai import OpenAIModel, OpenAIResponsesModel, reply_from_openai, reply_from_responses
    chat = reply_from_openai({"choices": [{"message": {"content": "ok"}, "finish_reason": "stop"}], "usage": {
        "prompt_tokens": 1300, "completion_tokens": 4, "prompt_tokens_details": {"cached_tokens": 1152}}})
    assert chat.usage == {"input_tokens": 148, "output_tokens": 4, "cache_read_input_tokens": 1152}
    plain = reply_from_responses({"status": "completed", "output": [], "usage": {
        "input_tokens": 40, "output_tokens": 2, "input_tokens_details": {"cached_tokens": 0, "cache_write_tokens": 0}}})
    assert plain.usage == {"input_tokens": 40, "output_tokens": 2}   # no hit: the two counts, as before
    odd = reply_from_openai({"choices": [{"message": {"content": "ok"}}], "usage": {   # a server that over-reports
        "prompt_tokens": 10, "completion_tokens": 1, "prompt_tokens_details": {"cached_tokens": 99}}})
    assert odd.usage == {"input_tokens": 0, "output_tokens": 1, "cache_read_input_tokens": 10}   # never below 0
    assert reply_from_openai({"choices": [{"message": {"content": ""}}]}).usage == {"input_tokens": 0,
                                                                                  "output_tokens": 0}
    turns = [{"tool_calls": [{"name": "lookup", "args": {"topic": "games"}}]}, "No: opened software is not refunded."]
    for make in (OpenAIModel, OpenAIResponsesModel):
        with StandInServer(turns) as server:
            model = make(base_url=server.url + "/v1", api_key="sk-standin", max_retries=0)
            agent = Agent({"lookup": lookup}, model, max_steps=3, system_prompt=POLICY)
            assert agent.run("Can I return an opened game?") == "No: opened software is not refunded.", make
        sent = [len(json.dumps(r["body"], ensure_ascii=False)) // 4 for r in server.requests]   # whole prompts
        first, second = (step.usage for step in agent.trace)
        assert "cache_read_input_tokens" not in first and first["input_tokens"] == sent[0], make
        assert second["cache_read_input_tokens"] >= MINIMUM and 0 < second["input_tokens"] < sent[1] - MINIMUM, make
        assert second["input_tokens"] + second["cache_read_input_tokens"] == sent[1], make   # inside it, on the wire
        spent = Budget(max_cost=1.0, prices={"input": 1e6, "output": 0}).spent(agent)   # $1 an input token
        assert spent["input_tokens"] == sum(sent), make   # every token sent counts toward a token budget
        assert spent["cost"] == pytest.approx(sum(sent) - 0.9 * second["cache_read_input_tokens"]), make


def test_the_responses_api_caches_a_long_string_input_and_the_same_words_as_instructions_are_another_prefix():
    import openai
    with StandInServer(["a", "b", "c"]) as server:
        c = openai.OpenAI(base_url=server.url + "/v1", api_key="sk-standin", max_retries=0)
        first = c.responses.create(model="gpt-5.4-mini", input=POLICY).usage
        again = c.responses.create(model="gpt-5.4-mini", input=POLICY).usage   # the very same prompt
        instead = c.responses.create(model="gpt-5.4-mini", instructions=POLICY, input="q").usage
    assert first.input_tokens_details.cached_tokens == 0 and first.input_tokens_details.cache_write_tokens == 0
    assert MINIMUM <= again.input_tokens_details.cached_tokens <= again.input_tokens   # all of it, rounded down
    assert instead.input_tokens_details.cached_tokens == 0   # the same words as instructions: another prefix


def test_the_usage_plot_and_live_check_count_cached_tokens_in_and_price_them_at_their_rates(monkeypatch):
    from course_lib.courseware.livecheck import live_check
    from course_lib.courseware.plots import usage_data
    from test_livecheck import SCRIPT, point_at
    run = type("Run", (), {"usage": [{"input_tokens": 100, "output_tokens": 10, "cache_creation_input_tokens": 1000},
                                     {"input_tokens": 100, "output_tokens": 10, "cache_read_input_tokens": 1000}]})()
    data = usage_data(run, prices={"input": 1.0, "output": 5.0})
    assert [d["input_tokens"] for d in data] == [1100, 1100]   # every token sent, cached or not
    assert [d["cumulative_cost"] for d in data] == pytest.approx([(100 + 1250 + 50) / 1e6, (1400 + 200 + 50) / 1e6])
    hits = [dict(turn, usage={"input_tokens": 1300, "output_tokens": 5, "cached_tokens": 1152 * (n > 0)})
            for n, turn in enumerate(SCRIPT)]   # a script may say what the cache reported
    with StandInServer(hits) as server:
        point_at(monkeypatch, "openai", server)
        text = "\n".join(live_check("openai").lines())
    assert "tokens: 3,900 in (2,304 read from the prompt cache), 15 out; about $0.0019" in text, text
