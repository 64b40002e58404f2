"""A person approves or denies every write; a denied write is an observation, and the sandbox holds."""
import asyncio
import errno
import json
import os
import stat

import pytest

from course_lib import default_tools
from course_lib import workspace as ws   # the module; `workspace` is the fixture (conftest.py)
from course_lib.agent import Agent
from course_lib.courseware.approval import (YES, ApprovalGate, WriteRequest, approve, ask_in_terminal, default_policy,
                                            deny, is_yes)
from course_lib.dispatch import dispatch
from course_lib.models import ScriptedModel
from course_lib.tools import ToolError
from support import everything_in


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


# ------------------------------------------------------------------ nothing is lost, nothing is written through
def test_an_approved_overwrite_that_cannot_be_encoded_leaves_the_old_file_whole(workspace):
    (workspace / "plan.txt").write_text("the real plan", encoding="utf-8")
    asked = []
    gate = ApprovalGate(lambda request: asked.append(request) or True)
    obs = dispatch({"write_file": gate.write_file}, "write_file", {"path": "plan.txt", "content": "half \ud83d"})
    assert obs.is_error and "cannot be saved as UTF-8" in obs.content and "position 5" in obs.content
    assert (workspace / "plan.txt").read_text(encoding="utf-8") == "the real plan"
    assert asked == [], "nobody is asked to approve a write that cannot happen"
    assert everything_in(workspace) == ["plan.txt"]


def test_a_write_that_fails_half_way_keeps_the_old_file_and_leaves_no_temporary_file(workspace, monkeypatch):
    (workspace / "plan.txt").write_text("the real plan", encoding="utf-8")

    def disk_full(src, dst, **where):
        raise OSError(errno.ENOSPC, "No space left on device", str(dst))
    monkeypatch.setattr(ws.os, "replace", disk_full)
    obs = dispatch({"write_file": ApprovalGate(approve).write_file}, "write_file",
                   {"path": "plan.txt", "content": "new plan"})
    assert obs.is_error and "No space left on device" in obs.content and "nothing was changed" in obs.content
    assert str(workspace) not in obs.content
    assert (workspace / "plan.txt").read_text(encoding="utf-8") == "the real plan"
    assert everything_in(workspace) == ["plan.txt"], "the temporary file was left behind"


def test_a_path_ending_in_a_slash_does_not_create_a_file_of_that_name(workspace):
    gate = ApprovalGate(approve)
    for path in ("drafts/", "drafts\\", "notes/drafts/ "):
        with pytest.raises(ToolError, match="names a folder"):
            gate.write_file(path, "text")
    assert everything_in(workspace) == [] and gate.decisions == []


@pytest.mark.parametrize("path", ["foo/.", "newdir/sub/..", "foo/.\n", ".", "..", "notes\\.."])
def test_a_path_that_names_a_folder_never_creates_a_file(workspace, path):
    with pytest.raises(ToolError, match="names a folder"):
        ApprovalGate(approve).write_file(path, "x")
    assert everything_in(workspace) == []


def test_a_folder_is_refused_as_a_write_target(workspace):
    (workspace / "notes").mkdir()
    with pytest.raises(ToolError, match="is a folder"):
        ApprovalGate(approve).write_file("notes", "text")


def test_a_hard_link_to_a_file_outside_is_replaced_not_written_through(tmp_path, workspace):
    outside = tmp_path / "secret.txt"
    outside.write_text("outside, must not change", encoding="utf-8")
    os.link(outside, workspace / "inside.txt")
    print(ApprovalGate(approve).write_file("inside.txt", "written by the agent"))
    assert outside.read_text(encoding="utf-8") == "outside, must not change"
    assert (workspace / "inside.txt").read_text(encoding="utf-8") == "written by the agent"


def test_an_overwrite_keeps_the_file_permissions_and_a_new_file_gets_the_usual_ones(workspace):
    (workspace / "script.sh").write_text("old", encoding="utf-8")
    os.chmod(workspace / "script.sh", 0o750)
    gate = ApprovalGate(approve)
    gate.write_file("script.sh", "new")
    assert stat.S_IMODE(os.stat(workspace / "script.sh").st_mode) == 0o750
    gate.write_file("fresh.txt", "new")
    mask = os.umask(0)
    os.umask(mask)
    assert stat.S_IMODE(os.stat(workspace / "fresh.txt").st_mode) == 0o666 & ~mask   # not mkstemp's 0600


def test_a_write_through_a_link_inside_the_workspace_updates_the_file_it_points_to(workspace):
    (workspace / "real.txt").write_text("old", encoding="utf-8")
    os.symlink("real.txt", workspace / "alias.txt")
    ApprovalGate(approve).write_file("alias.txt", "new")
    assert (workspace / "real.txt").read_text(encoding="utf-8") == "new"
    assert os.path.islink(workspace / "alias.txt")


# ------------------------------------------------------------------ approval fails closed
@pytest.mark.parametrize("answer", ["no", "deny", "No", "n", "", "nope", "yes please", 1, "1", None, [True],
                                    "false", object()])
def test_only_an_explicit_yes_approves(workspace, answer):
    gate = ApprovalGate(lambda request: answer)
    with pytest.raises(ToolError, match="did not approve"):
        gate.write_file("a.txt", "text")
    assert not (workspace / "a.txt").exists() and gate.decisions == [("a.txt", False)]


class Sly(str):
    def strip(self, *chars):
        return "yes"


@pytest.mark.parametrize("answer", [Sly("no"), "yes\u200b", "ｙｅｓ", b"yes"])
def test_text_that_only_pretends_to_say_yes_denies(workspace, answer):
    assert not is_yes(answer)


@pytest.mark.parametrize("answer", [True, *YES, "Yes", " YES "])
def test_a_yes_approves(workspace, answer):
    assert is_yes(answer)
    ApprovalGate(lambda request: answer).write_file("a.txt", "text")
    assert (workspace / "a.txt").read_text(encoding="utf-8") == "text"


def test_a_policy_that_fails_denies_and_says_why(workspace):
    def broken(request):
        raise ValueError("the widget is gone")
    gate = ApprovalGate(broken)
    obs = dispatch({"write_file": gate.write_file}, "write_file", {"path": "a.txt", "content": "x"})
    assert obs.is_error and "approval step failed" in obs.content and "the widget is gone" in obs.content
    assert not (workspace / "a.txt").exists() and gate.decisions == [("a.txt", False)]


@pytest.mark.parametrize("exc", [SystemExit(0), asyncio.CancelledError(), GeneratorExit()])
def test_a_policy_that_raises_anything_denies(workspace, exc):
    def policy(request):
        raise exc
    gate = ApprovalGate(policy)
    with pytest.raises(ToolError, match="approval step failed"):
        gate.write_file("a.txt", "x")
    assert gate.decisions == [("a.txt", False)] and not (workspace / "a.txt").exists()


def test_a_person_stopping_the_run_at_the_approval_stops_it(workspace):
    def interrupted(request):
        raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        dispatch({"write_file": ApprovalGate(interrupted).write_file}, "write_file", {"path": "a", "content": "x"})


def test_a_falsy_policy_object_is_still_the_policy(workspace, monkeypatch):
    monkeypatch.setenv("COURSE_APPROVAL", "approve")

    class AllowList(list):
        def __call__(self, request):
            return request.path in self
    gate = ApprovalGate(AllowList())
    assert gate.policy == [] and isinstance(gate.policy, AllowList)
    with pytest.raises(ToolError, match="did not approve"):
        gate.write_file("a.txt", "x")


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


# ------------------------------------------------------------------ a notebook run without a screen never waits
def test_in_a_notebook_without_a_screen_the_policy_denies_at_once(monkeypatch):
    from course_lib.courseware import approval
    from course_lib.courseware.widgets import ask_with_buttons
    monkeypatch.setattr(approval, "_in_notebook", lambda: True)
    monkeypatch.delenv("COURSE_APPROVAL", raising=False)
    monkeypatch.delenv("JPY_SESSION_NAME", raising=False)
    assert default_policy() is approval.deny_headless          # nbconvert, papermill, a grader
    monkeypatch.setenv("JPY_SESSION_NAME", "notebooks/06_agent_class.ipynb")
    assert default_policy() is ask_with_buttons                  # JupyterLab started this kernel
    monkeypatch.delenv("JPY_SESSION_NAME")
    monkeypatch.setenv("COURSE_APPROVAL", "ask")
    assert default_policy() is ask_with_buttons                  # asked for explicitly
    monkeypatch.setenv("COURSE_APPROVAL", "deny")
    assert default_policy() is deny


def test_the_headless_denial_says_why_in_the_cell_and_to_the_model(workspace, capsys):
    from course_lib.courseware.approval import deny_headless
    obs = dispatch({"write_file": ApprovalGate(deny_headless).write_file}, "write_file",
                   {"path": "notes/a.txt", "content": "x"})
    assert obs.is_error and "nobody was there to approve writing 'notes/a.txt'; nothing was written" in obs.content
    assert "Nobody can approve here" in capsys.readouterr().out and not (workspace / "notes").exists()


@pytest.mark.parametrize("click, approved, outcome", [(0, True, "✓ You approved this write."),
                                                      (1, False, "✗ You denied this write: nothing is written."),
                                                      (None, False, "✗ No answer within 0.2 s: denied")])
def test_the_buttons_say_the_notebook_is_paused_then_what_was_decided(monkeypatch, click, approved, outcome):
    pytest.importorskip("ipywidgets")
    import contextlib

    import IPython.display
    import jupyter_ui_poll
    from course_lib.courseware.widgets import ask_with_buttons
    shown, seen = [], []
    monkeypatch.setattr(IPython.display, "display", lambda box: shown.append(box))

    @contextlib.contextmanager
    def ui_events():   # stands in for the front end: it sees the box, then clicks
        def poll(n):
            box = shown[0]
            seen.append(box.children[-1].value)
            if click is not None:
                box.children[1].children[click].click()
        yield poll
    monkeypatch.setattr(jupyter_ui_poll, "ui_events", ui_events)
    assert ask_with_buttons(WriteRequest("a.txt", "text"), timeout=0.2) is approved
    assert "Paused — waiting for your decision; other cells will wait" in seen[0]
    box = shown[0]
    assert len(box.children) == 2 and outcome in box.children[1].value   # the buttons are gone
    assert "write 4 characters to &#x27;a.txt&#x27;" in box.children[0].value   # escaped HTML


def test_jupyter_nbconvert_runs_lesson_06_to_the_end_without_anyone_clicking(tmp_path):
    import subprocess
    import sys
    from pathlib import Path
    root = Path(__file__).parent.parent
    env = {k: v for k, v in os.environ.items() if k not in ("COURSE_APPROVAL", "JPY_SESSION_NAME")}
    jupyter = Path(sys.executable).with_name("jupyter")
    result = subprocess.run([str(jupyter), "nbconvert", "--to", "notebook", "--execute",
                             "--ExecutePreprocessor.timeout=120", "--output-dir", str(tmp_path),
                             str(root / "notebooks" / "06_agent_class.ipynb")],
                            capture_output=True, text=True, env=env, timeout=600)   # a hang guard only
    assert result.returncode == 0, result.stderr[-2000:]
    executed = (tmp_path / "06_agent_class.ipynb").read_text(encoding="utf-8")
    assert "Nobody can approve here" in executed and "nobody was there to approve writing" in executed


# ------------------------------------------------------------------ the exact words, limits and choices (pinned)
def test_without_a_policy_the_gate_uses_the_default_one(monkeypatch):
    """ApprovalGate() asks default_policy() who decides (COURSE_APPROVAL here)."""
    monkeypatch.setenv("COURSE_APPROVAL", "approve")
    assert ApprovalGate().policy is approve
    monkeypatch.setenv("COURSE_APPROVAL", "deny")
    assert ApprovalGate().policy is deny


def test_a_policy_that_fails_names_the_exception_type(workspace):
    def broken(request):
        raise ValueError("the widget is gone")
    with pytest.raises(ToolError) as e:
        ApprovalGate(broken).write_file("a.txt", "x")
    assert ("the approval step failed (ValueError: the widget is gone), so writing 'a.txt' was denied; "
            "nothing was written.") in str(e.value)


def test_a_plain_no_says_the_person_did_not_approve_and_not_to_retry(workspace):
    with pytest.raises(ToolError) as e:
        ApprovalGate(deny).write_file("a.txt", "x")
    assert str(e.value) == ("the person did not approve writing 'a.txt'; nothing was written. "
                            "Do not retry the same write; continue without it.")


def test_the_policy_is_shown_the_path_and_the_content(workspace):
    seen = []
    ApprovalGate(lambda request: seen.append((request.path, request.content, request.what)) or True
                 ).write_file("notes/a.txt", "hello")
    assert seen == [("notes/a.txt", "hello", "writing 'notes/a.txt'")]


def test_content_that_is_not_text_is_refused_with_a_clear_message(workspace):
    asked = []
    with pytest.raises(ToolError) as e:
        ApprovalGate(lambda request: asked.append(request) or True).write_file("a.txt", b"bytes")
    assert str(e.value) == "content must be text" and asked == []


def test_content_may_be_exactly_the_limit_but_not_one_character_more(workspace):
    from course_lib.courseware.approval import MAX_WRITE_CHARS
    assert MAX_WRITE_CHARS == 100_000
    gate = ApprovalGate(approve)
    assert gate.write_file("a.txt", "x" * MAX_WRITE_CHARS) == "Wrote 100000 characters to 'a.txt'."
    with pytest.raises(ToolError) as e:
        gate.write_file("b.txt", "x" * (MAX_WRITE_CHARS + 1))
    assert "content is longer than 100000 characters; write less" in str(e.value)
    assert not (workspace / "b.txt").exists() and gate.decisions == [("a.txt", True)]


def test_content_that_cannot_be_saved_says_what_to_do(workspace):
    with pytest.raises(ToolError) as e:
        ApprovalGate(approve).write_file("a.txt", "half \ud83d")
    assert str(e.value) == ("content has a character at position 5 that cannot be saved as UTF-8 "
                            "(half of an emoji?); send the text without it")


def test_a_path_naming_a_folder_suggests_a_file_name_inside_it(workspace):
    with pytest.raises(ToolError) as e:
        ApprovalGate(approve).write_file(" drafts/ ", "text")
    assert "give a file name such as ' drafts/note.txt'" in str(e.value)   # trailing blanks go, leading stay


def test_the_preview_shows_up_to_300_characters_then_an_ellipsis():
    assert WriteRequest("a.txt", "x" * 300).preview() == "write 300 characters to 'a.txt':\n" + "x" * 300
    assert WriteRequest("a.txt", "x" * 301).preview() == "write 301 characters to 'a.txt':\n" + "x" * 300 + "…"
    assert WriteRequest("a.txt", "abcdef").preview(limit=3) == "write 6 characters to 'a.txt':\nabc…"


def test_the_terminal_prompt_asks_and_accepts_yes_in_any_case(monkeypatch, capsys):
    prompts = []
    for answer, approved in [("yes", True), (" YES ", True), ("Y", True), ("yess", False), ("no", False)]:
        monkeypatch.setattr("builtins.input", lambda prompt: prompts.append(prompt) or answer)
        assert ask_in_terminal(WriteRequest("a.txt", "hello")) is approved, answer
    assert set(prompts) == {"Allow this write? [y/N] "}


def test_a_terminal_or_an_explicit_ask_gets_the_prompt(monkeypatch):
    from course_lib.courseware import approval
    monkeypatch.setattr(approval, "_in_notebook", lambda: False)
    monkeypatch.delenv("COURSE_APPROVAL", raising=False)
    monkeypatch.setattr("sys.stdin.isatty", lambda: True, raising=False)
    assert default_policy() is ask_in_terminal                 # someone at a terminal can answer
    monkeypatch.setattr("sys.stdin.isatty", lambda: False, raising=False)
    monkeypatch.setenv("COURSE_APPROVAL", " Ask ")
    assert default_policy() is ask_in_terminal                 # asked for explicitly, even without a terminal


def test_a_notebook_is_recognised_by_its_kernel_shell(monkeypatch):
    """_in_notebook: only an IPython kernel's shell (ZMQInteractiveShell) counts; a terminal IPython does not."""
    import sys
    import types

    from course_lib.courseware.approval import _in_notebook

    def ipython_with(shell):
        monkeypatch.setitem(sys.modules, "IPython", types.SimpleNamespace(get_ipython=lambda: shell))

    ZMQInteractiveShell = type("ZMQInteractiveShell", (), {})
    TerminalInteractiveShell = type("TerminalInteractiveShell", (), {})
    ipython_with(ZMQInteractiveShell())
    assert _in_notebook() is True
    ipython_with(TerminalInteractiveShell())
    assert _in_notebook() is False
    ipython_with(None)                                           # IPython imported, but no shell running
    assert _in_notebook() is False
    monkeypatch.delitem(sys.modules, "IPython")                  # plain Python
    assert not _in_notebook()


def test_the_headless_denial_says_how_to_decide_instead(capsys):
    from course_lib.courseware.approval import deny_headless
    assert deny_headless(WriteRequest("a.txt", "x")) is False
    out = capsys.readouterr().out
    assert "so writing 'a.txt' was denied at once. Set COURSE_APPROVAL=approve to allow it" in out
    assert out.endswith("in such runs, or open the notebook in JupyterLab to decide with the buttons.\n")
