"""A person approves or denies every write; a denied write is an observation, and the sandbox holds."""
import json

import pytest

from course_lib import default_tools
from course_lib.agent import Agent
from course_lib.approval import ApprovalGate, WriteRequest, approve, ask_in_terminal, default_policy, deny
from course_lib.dispatch import dispatch
from course_lib.models import ScriptedModel


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    return tmp_path / "work"


def write_call(path, content="안녕하세요"):
    return json.dumps({"tool": "write_file", "args": {"path": path, "content": content}}, ensure_ascii=False)


def test_an_approved_write_happens_and_is_logged(workspace):
    gate = ApprovalGate(approve)
    obs = dispatch({"write_file": gate.write_file}, "write_file", {"path": "notes/a.txt", "content": "안녕"})
    assert not obs.is_error and "Wrote 2 characters" in obs.content
    assert (workspace / "notes" / "a.txt").read_text(encoding="utf-8") == "안녕"
    assert gate.decisions == [("notes/a.txt", True)]


def test_a_denied_write_is_an_observation_the_model_sees(workspace):
    gate = ApprovalGate(deny)
    tools = {**default_tools(), "write_file": gate.write_file}
    model = ScriptedModel([write_call("report.txt"),
                           '{"tool": "finish", "args": {"answer": "I could not save the report."}}'])
    agent = Agent(tools, model)
    assert agent.run("save a report") == "I could not save the report."
    obs = agent.trace[0].runs[0].observation
    assert obs.is_error and "did not approve" in obs.content
    assert "did not approve" in model.calls[1][-1]["content"]      # it reached the model
    assert not (workspace / "report.txt").exists() and gate.decisions == [("report.txt", False)]


@pytest.mark.parametrize("path", ["../outside.txt", "/tmp/x.txt", "a\0b", ""])
def test_the_write_is_sandboxed_before_anyone_is_asked(workspace, path):
    asked = []
    gate = ApprovalGate(lambda request: asked.append(request) or True)
    obs = dispatch({"write_file": gate.write_file}, "write_file", {"path": path, "content": "x"})
    assert obs.is_error and asked == []
    assert not (workspace.parent / "outside.txt").exists()


def test_the_terminal_prompt_defaults_to_no(monkeypatch, capsys):
    request = WriteRequest("a.txt", "hello")
    monkeypatch.setattr("builtins.input", lambda prompt: "y")
    assert ask_in_terminal(request) is True
    monkeypatch.setattr("builtins.input", lambda prompt: "")
    assert ask_in_terminal(request) is False

    def closed(prompt):
        raise EOFError
    monkeypatch.setattr("builtins.input", closed)
    assert ask_in_terminal(request) is False
    assert "write 5 characters to 'a.txt'" in capsys.readouterr().out


def test_policy_from_the_environment_and_auto_deny_without_a_terminal(monkeypatch):
    monkeypatch.setenv("COURSE_APPROVAL", "approve")
    assert default_policy() is approve
    monkeypatch.setenv("COURSE_APPROVAL", "deny")
    assert default_policy() is deny
    monkeypatch.delenv("COURSE_APPROVAL")
    monkeypatch.setattr("sys.stdin.isatty", lambda: False, raising=False)
    assert default_policy() is deny          # CI: nobody can answer, so no write happens


def test_write_file_is_a_describable_tool():
    from course_lib.describe import tool_description, tool_schema
    gate = ApprovalGate(deny)
    assert tool_description({"write_file": gate.write_file}).startswith("- write_file(path: str, content: str):")
    assert tool_schema(gate.write_file)["required"] == ["path", "content"]
