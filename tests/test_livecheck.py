"""`course live-check`: the scenario and report, run offline against the local stand-in server (which is
what a learner's key would reach, minus the model). The real thing runs with COURSE_LIVE=1 and a key."""
import os

import pytest

from course_lib.courseware.livecheck import GOAL, live_check
from course_lib.courseware.standin import StandInServer

SCRIPT = [
    {"text": "Both at once.", "tool_calls": [{"name": "lookup", "args": {"topic": "단가"}},
                                              {"name": "calculator", "args": {"expression": "10/0"}}]},
    {"tool_calls": [{"name": "calculator", "args": {"expression": "24*7"}}]},
    {"text": "Seven units cost $168 (7 × $24)."},
]


def point_at(monkeypatch, provider, server):
    if provider == "anthropic":
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-standin")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.url)
    else:
        monkeypatch.setenv("OPENAI_API_KEY", "sk-standin")
        monkeypatch.setenv("OPENAI_BASE_URL", server.url + "/v1")


@pytest.mark.parametrize("provider", ["anthropic", "openai", "openai-responses"])
def test_a_compatible_provider_passes_every_check(provider, monkeypatch):
    with StandInServer(SCRIPT) as server:
        point_at(monkeypatch, provider, server)
        report = live_check(provider)
    assert report.status == 0 and all(ok for ok, _ in report.checks), report.lines()
    text = "\n".join(report.lines())
    assert "parallel tool calls in one turn: yes, 2" in text and "lookup, calculator, calculator" in text
    assert "EXAMPLE prices" in text and "result: compatible" in text and "sk-" not in text
    first = server.requests[0]["body"]
    assert server.problems == [] and first["input" if provider == "openai-responses" else "messages"][-1] == {
        "role": "user", "content": GOAL}


def test_reasoning_items_that_made_the_round_trip_are_counted(monkeypatch):
    thought = [{**SCRIPT[0], "thinking": "Both tools now."}, {**SCRIPT[1], "thinking": ""}, SCRIPT[2]]
    with StandInServer(thought) as server:
        point_at(monkeypatch, "openai-responses", server)
        report = live_check("openai-responses")
    assert report.status == 0 and server.problems == [], report.lines()
    assert "  · reasoning items sent back unchanged and accepted: 2" in report.lines()


@pytest.mark.parametrize("provider", ["anthropic", "openai", "openai-responses"])
def test_an_api_error_fails_the_check_with_the_sentence(provider, monkeypatch):
    with StandInServer([{"status": 401, "message": "invalid x-api-key"}]) as server:
        point_at(monkeypatch, provider, server)
        report = live_check(provider)
    assert report.status == 1 and not report.checks[0][0]
    assert "rejected the API key" in "\n".join(report.lines()) and "API call failed" in report.lines()[-1]
    assert len(report.checks) == 1   # one line saying what failed, no guesses about the rest


def test_without_keys_it_says_what_to_set_and_exits_2(monkeypatch, capsys):
    for key in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(key, raising=False)
    from course_lib.courseware.cli import main
    status = main(["live-check", "anthropic"])
    out = capsys.readouterr().out
    assert status == 2 and "ANTHROPIC_API_KEY is not set" in out and "not checked" in out


def test_all_checks_every_provider_and_exits_2_when_none_is_set_up(monkeypatch, capsys):
    for key in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(key, raising=False)
    from course_lib.courseware.cli import main
    for argv in (["live-check", "all"], ["live-check"]):   # `all` is the default
        status = main(argv)
        out = capsys.readouterr().out
        assert status == 2 and out.count("course live-check") == 4 and "Nothing was checked" in out
        assert "ollama serve" in out and "OPENAI_API_KEY is not set" in out
        assert out.count("set OPENAI_API_KEY") == 1   # two OpenAI APIs, one key to set


@pytest.mark.parametrize("provider, key", [("anthropic", "ANTHROPIC_API_KEY"), ("openai", "OPENAI_API_KEY"),
                                           ("openai-responses", "OPENAI_API_KEY")])
@pytest.mark.skipif(os.environ.get("COURSE_LIVE") != "1", reason="live test: set COURSE_LIVE=1 and a key")
def test_live(provider, key):
    if not os.environ.get(key):
        pytest.skip(f"live test: {key} is not set")
    report = live_check(provider)
    assert report.status == 0, "\n".join(report.lines())
