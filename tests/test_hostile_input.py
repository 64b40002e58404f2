"""Hostile input, tried the way a careful user (or a confused model) would: nothing is lost, nothing hangs, no raw
traceback or absolute path reaches the model, every saved transcript is strict JSON.

Each test here failed before the fix it guards (issue 11). Timing is only ever a hang guard (SPEC §7)."""
import asyncio
import errno
import json
import os
import stat
import threading
from dataclasses import dataclass, field

import pytest

from course_lib import default_tools
from course_lib import workspace as ws   # the module; `workspace` is the fixture below
from course_lib.agent import Agent
from course_lib.courseware.approval import YES, ApprovalGate, approve, is_yes
from course_lib.dispatch import dispatch
from course_lib.models import ScriptedModel
from course_lib.tools import ToolError, calculator, list_files, read_file

HANG_GUARD = 20   # seconds; only a hang (a FIFO opened for writing, a read of gigabytes) can reach it


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    return tmp_path / "work"


def finishes(func, *args):
    """Run func(*args) in a thread; fail (instead of hanging the suite) if it is still running after the guard."""
    box = {}

    def go():
        try:
            box["value"] = func(*args)
        except BaseException as e:   # noqa: BLE001 - handed back to the test
            box["error"] = e
    worker = threading.Thread(target=go, daemon=True)
    worker.start()
    worker.join(HANG_GUARD)
    assert not worker.is_alive(), f"{getattr(func, '__name__', func)} hung"
    return box


def everything_in(folder):
    return sorted(p.name for p in folder.iterdir())


# ------------------------------------------------------------------ data loss
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


def test_a_failed_save_leaves_no_stray_temporary_file(workspace, monkeypatch):
    agent = Agent(default_tools(), ScriptedModel(['{"tool": "finish", "args": {"answer": "ok"}}']))
    agent.run("anything")
    (workspace / "runs").mkdir()
    (workspace / "runs" / "last.json").write_text('{"old": true}', encoding="utf-8")
    monkeypatch.setattr(ws.os, "replace", lambda src, dst, **where: (_ for _ in ()).throw(OSError(errno.EIO, "I/O")))
    with pytest.raises(OSError):
        agent.save("runs/last.json")
    assert everything_in(workspace / "runs") == ["last.json"]
    assert json.loads((workspace / "runs" / "last.json").read_text(encoding="utf-8")) == {"old": True}


def test_a_path_ending_in_a_slash_does_not_create_a_file_of_that_name(workspace):
    gate = ApprovalGate(approve)
    for path in ("drafts/", "drafts\\", "notes/drafts/ "):
        with pytest.raises(ToolError, match="names a folder"):
            gate.write_file(path, "text")
    assert everything_in(workspace) == [] and gate.decisions == []


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are a POSIX feature")
def test_a_named_pipe_is_refused_before_anyone_is_asked(workspace):
    os.mkfifo(workspace / "pipe")
    asked = []
    gate = ApprovalGate(lambda request: asked.append(request) or True)
    box = finishes(gate.write_file, "pipe", "data")
    assert isinstance(box.get("error"), ToolError) and "not a regular file" in str(box["error"])
    assert asked == []
    box = finishes(read_file, "pipe")   # opening a pipe for reading must not wait for a writer either
    assert isinstance(box.get("error"), ToolError) and "not a regular file" in str(box["error"])
    assert stat.S_ISFIFO(os.stat(workspace / "pipe").st_mode)


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


def test_a_person_stopping_the_run_at_the_approval_stops_it(workspace):
    def interrupted(request):
        raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        dispatch({"write_file": ApprovalGate(interrupted).write_file}, "write_file", {"path": "a", "content": "x"})


# ------------------------------------------------------------------ raw exceptions and leaked paths
def file_tools():
    return {"read_file": read_file, "list_files": list_files, "write_file": ApprovalGate(approve).write_file}


def assert_clean(obs, workspace, *phrases):
    assert obs.is_error and isinstance(obs.error, ToolError), obs.content
    assert str(workspace) not in obs.content and os.path.expanduser("~") + os.sep not in obs.content
    for phrase in phrases:
        assert phrase in obs.content, obs.content


@pytest.mark.parametrize("tool, args", [("read_file", {"path": "loop"}), ("list_files", {"directory": "loop"}),
                                        ("write_file", {"path": "loop/x.txt", "content": "x"})])
def test_a_symlink_loop_is_a_tool_error_in_workspace_terms(workspace, tool, args):
    os.symlink("loop2", workspace / "loop")
    os.symlink("loop", workspace / "loop2")
    assert_clean(dispatch(file_tools(), tool, args), workspace, "loops back on itself")


@pytest.mark.parametrize("tool, key", [("read_file", "path"), ("list_files", "directory"), ("write_file", "path")])
def test_a_name_too_long_is_a_tool_error(workspace, tool, key):
    args = {key: "x" * 1000, **({"content": "x"} if tool == "write_file" else {})}   # a name over 255 bytes
    obs = dispatch(file_tools(), tool, args)
    assert_clean(obs, workspace, "too long for the file system")
    assert len(obs.content) < 300, "the 1,000-character name is shortened in the message"


@pytest.mark.parametrize("tool, key", [("read_file", "path"), ("list_files", "directory"), ("write_file", "path")])
def test_a_path_too_long_is_refused_before_any_work(workspace, tool, key):
    args = {key: "a/" * 300_000 + "x", **({"content": "x"} if tool == "write_file" else {})}
    box = finishes(dispatch, file_tools(), tool, args)   # resolving it would take seconds per megabyte
    assert_clean(box["value"], workspace, f"longer than {ws.MAX_PATH_CHARS} characters")


@pytest.mark.parametrize("tool, key", [("read_file", "path"), ("list_files", "directory"), ("write_file", "path")])
def test_half_an_emoji_in_a_path_is_a_tool_error(workspace, tool, key):
    args = {key: "notes\ud83d.txt", **({"content": "x"} if tool == "write_file" else {})}
    assert_clean(dispatch(file_tools(), tool, args), workspace, "no file name can hold")


def test_permission_denied_names_the_path_the_model_gave(workspace, monkeypatch):
    (workspace / "locked.txt").write_text("x", encoding="utf-8")
    real_open = os.open

    def locked(path, flags, *rest):
        if str(path).endswith("locked.txt"):
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_open(path, flags, *rest)
    monkeypatch.setattr(ws.os, "open", locked)   # running as root, chmod 000 would not stop the read
    assert_clean(dispatch(file_tools(), "read_file", {"path": "locked.txt"}), workspace,
                 "'locked.txt'", "permission denied")


@pytest.mark.parametrize("max_chars", [10**18, 2**63, 10**100])
def test_a_huge_max_chars_reads_the_file(workspace, max_chars):
    (workspace / "a.txt").write_text("short", encoding="utf-8")
    assert read_file("a.txt", max_chars) == "short"


def test_an_error_from_any_tool_does_not_show_the_workspace_or_home_folder(workspace):
    home = os.path.expanduser("~")

    def leaky(name: str) -> str:
        """A learner's tool that lets an OSError through."""
        raise FileNotFoundError(errno.ENOENT, "No such file", os.path.join(os.getcwd(), "data", name))

    def from_home(name: str) -> str:
        """Another that mentions the home folder."""
        raise RuntimeError(f"cannot read {home}/.config/{name}")
    obs = dispatch({"leaky": leaky}, "leaky", {"name": "x.csv"})
    assert obs.is_error and str(workspace) not in obs.content and "'data/x.csv'" in obs.content
    obs = dispatch({"from_home": from_home}, "from_home", {"name": "app"})
    assert home + "/" not in obs.content and "~/.config/app" in obs.content


# ------------------------------------------------------------------ unbounded work
def test_reading_the_start_of_a_huge_file_does_not_read_all_of_it(workspace):
    with open(workspace / "huge.log", "wb") as f:   # sparse: 3 GiB that take no disk space
        f.truncate(3 * 2**30)
    box = finishes(read_file, "huge.log", 100)
    text = box["value"]
    assert text.startswith("\0" * 100)
    assert f"more than {ws.MAX_COUNTED:,} more characters not shown" in text


def test_a_cut_below_the_counting_limit_gives_the_exact_count(workspace):
    (workspace / "a.txt").write_text("가" * 1000, encoding="utf-8")
    assert read_file("a.txt", 10).endswith("[... cut: 990 more characters not shown; "
                                           "pass a larger max_chars to see more]")


def test_a_max_chars_past_the_limit_says_what_the_limit_is(workspace, monkeypatch):
    monkeypatch.setattr(ws, "MAX_READ_CHARS", 10)
    (workspace / "a.txt").write_text("x" * 25, encoding="utf-8")
    assert read_file("a.txt", 1000) == "x" * 10 + ("\n[... cut: 15 more characters not shown; "
                                                 "read_file returns at most 10 characters]")


def test_a_file_name_with_a_newline_cannot_fake_extra_entries(workspace):
    (workspace / "real.txt").write_text("x", encoding="utf-8")
    (workspace / "a.txt\nsecret_plans.txt").write_text("x", encoding="utf-8")
    (workspace / "tab\there").mkdir()
    lines = list_files().splitlines()
    assert lines == ["'a.txt\\nsecret_plans.txt'", "'tab\\there'/", "real.txt"]


def test_a_file_name_that_is_not_utf8_is_listed_escaped(workspace):
    try:
        open(os.path.join(os.fsencode(workspace), b"caf\xe9.txt"), "w").close()
    except OSError:
        pytest.skip("this file system only takes UTF-8 names")
    assert list_files() == "'caf\\udce9.txt'"
    json.dumps(list_files(), ensure_ascii=False).encode("utf-8")   # the listing can be sent and saved


@pytest.mark.parametrize("count, note", [(200, ""), (201, "\n[... 1 more not shown]")])
def test_list_files_shows_two_hundred_entries(workspace, count, note):
    for i in range(count):
        (workspace / f"f{i:03d}.txt").touch()
    listing = list_files()
    assert listing.endswith(note) and len(listing.splitlines()) == 200 + bool(note)


def test_list_files_looks_at_a_bounded_number_of_entries(workspace, monkeypatch):
    monkeypatch.setattr(ws, "MAX_SCANNED", 30)
    for i in range(31):
        (workspace / f"f{i:02d}.txt").touch()
    listing = list_files()
    assert listing.endswith("[... the folder has more than 30 entries; only some are listed]")
    assert len(listing.splitlines()) == 31
    for i in range(30, 31):
        (workspace / f"f{i:02d}.txt").unlink()
    assert "more than" not in list_files()


# ------------------------------------------------------------------ exceptions that escape
class Cancelled(BaseException):
    pass


@pytest.mark.parametrize("exc", [asyncio.CancelledError(), GeneratorExit(), Cancelled("custom"), SystemExit(3)])
def test_dispatch_turns_every_exception_but_keyboard_interrupt_into_an_observation(exc):
    def tool() -> str:
        """Fails."""
        raise exc
    obs = dispatch({"tool": tool}, "tool", {})
    assert obs.is_error and type(exc).__name__ in obs.content and obs.error is exc


def test_keyboard_interrupt_still_stops_the_run():
    def tool() -> str:
        """Interrupted."""
        raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        dispatch({"tool": tool}, "tool", {})


@dataclass
class Tally:
    """Count things and return the running total."""
    total: int = 0
    seen: list = field(default_factory=list)

    def __call__(self, amount: int) -> str:
        """Add to the tally.

        Args:
            amount: how much to add.
        """
        self.total += amount
        return f"total is {self.total}"


def test_a_stateful_callable_object_runs_and_its_arguments_are_checked():
    tally = Tally()
    assert Tally.__hash__ is None   # a dataclass with eq=True cannot be hashed: the natural way to write one
    assert dispatch({"tally": tally}, "tally", {"amount": 2}).content == "total is 2"
    assert dispatch({"tally": tally}, "tally", {"amount": 3}).content == "total is 5"
    wrong = dispatch({"tally": tally}, "tally", {"amount": "three"})
    assert wrong.is_error and "argument 'amount' of tally must be int, got string" in wrong.content
    assert "total" not in dispatch({"tally": tally}, "tally", {"total": 1}).content.split("takes:")[1]


def test_an_agent_runs_with_a_stateful_callable_object():
    tally = Tally()
    model = ScriptedModel(['{"tool": "tally", "args": {"amount": 4}}', '{"tool": "tally", "args": {"amount": 5}}',
                           '{"tool": "finish", "args": {"answer": "9"}}'])
    agent = Agent({"tally": tally}, model)
    assert "- tally(amount: int): Add to the tally." in agent.system_prompt or "tally(amount" in agent.system_prompt
    assert agent.run("count") == "9" and tally.total == 9


@pytest.mark.parametrize("reply, phrase", [
    ({"tool_calls": [{"tool": "calculator", "args": {"expression": "1+1"}}]}, "unknown key(s) 'tool'"),
    ({"tool_calls": [{"args": {"expression": "1+1"}}]}, 'needs a "name"'),
    ({"tool_calls": ["calculator"]}, "must be a dict"),
    ({"txt": "hello"}, "unknown key(s) 'txt'"),
    ({"text": 42}, '"text" must be text'),
])
def test_a_scripted_reply_with_a_typo_ends_the_run_with_a_sentence(reply, phrase):
    agent = Agent(default_tools(), ScriptedModel([reply], native_tools=True))
    answer = agent.run("add one and one")
    assert agent.stop_reason == "model_error" and phrase in answer, answer


# ------------------------------------------------------------------ transcripts are strict JSON
def strict_load(path):
    def refuse(constant):
        raise ValueError(f"{constant} is not JSON")
    raw = path.read_bytes()
    return json.loads(raw.decode("utf-8"), parse_constant=refuse)


def test_nan_and_infinity_in_arguments_are_saved_as_text(workspace):
    # A text model and a native one, each in its own run (one model speaks one protocol).
    text_model = ScriptedModel(['{"tool": "calculator", "args": {"expression": NaN}}',   # json reads NaN as a float
                                '{"tool": "finish", "args": {"answer": "done"}}'])
    native_model = ScriptedModel([{"tool_calls": [{"name": "calculator", "args": {"x": float("-inf"), 7: "seven"}}]},
                                  {"tool_calls": [{"name": "lookup", "args": {"topic": float("nan")}}]},
                                  "done"], native_tools=True)   # a native model finishes with plain text
    texts = []
    for model in (text_model, native_model):
        agent = Agent(default_tools(), model)
        agent.run("hostile numbers")
        saved = strict_load(agent.save(f"run-{len(texts)}.json"))
        assert saved["answer"] == "done"
        texts.append(json.dumps(saved))
    assert '"-Infinity"' in texts[1] and '"7": "seven"' in texts[1] and '"NaN"' in texts[1]


def test_half_an_emoji_anywhere_still_saves(workspace):
    model = ScriptedModel(['{"tool": "lookup", "args": {"topic": "\\ud83d"}}',
                           '{"tool": "finish", "args": {"answer": "half \\ud83d"}}'])
    agent = Agent(default_tools(), model)
    agent.run("goal \ud83d")
    saved = strict_load(agent.save("run.json"))
    assert saved["goal"] == "goal \ufffd" and saved["answer"] == "half \ufffd"


# ------------------------------------------------------------------ numbers: underflow is refused like overflow
@pytest.mark.parametrize("expression", ["10**-400", "1e-200*1e-200", "1e-400", "1/10**400", "1e-300/1e300",
                                        "2.0**-1100", "-1e-400"])
def test_a_result_too_small_for_a_float_is_refused_like_one_too_large(expression):
    with pytest.raises(ToolError, match="too small for a floating-point number"):
        calculator(expression)


@pytest.mark.parametrize("expression, expected", [("0.0*5", "0.0"), ("5*0.0", "0.0"), ("0e5", "0.0"),
                                                  ("1e-310", "1e-310"), ("1e-300//1e300", "0.0"),
                                                  ("0**2", "0"), ("0.0**2", "0.0"), ("1e-300-1e-300", "0.0"),
                                                  ("2**-3", "0.125"), ("5e-324", "5e-324")])
def test_zero_that_is_really_zero_is_still_an_answer(expression, expected):
    assert calculator(expression) == expected


def test_overflow_and_underflow_say_which_way_it_went():
    with pytest.raises(ToolError, match="out of range"):
        calculator("1e308*10")
    with pytest.raises(ToolError, match="rounded to 0"):
        calculator("1e-308/1e100")


# ------------------------------------------------------------------ found by a red-team review (issue 11)
def swap_for_link(folder, outside):
    """Replace `folder` by a symlink to `outside`, as an attacker racing the tool would."""
    os.rename(folder, str(folder) + "_old")
    os.symlink(outside, folder)


def test_a_folder_swapped_for_a_link_while_the_person_decides_is_not_written_through(tmp_path, workspace):
    outside = tmp_path / "outside"
    outside.mkdir()
    (workspace / "notes").mkdir()

    def sneaky(request):   # anything that acts while the approval buttons are up
        swap_for_link(workspace / "notes", outside)
        return True
    obs = dispatch({"write_file": ApprovalGate(sneaky).write_file}, "write_file",
                   {"path": "notes/p.txt", "content": "PWNED"})
    assert obs.is_error and "outside the workspace" in obs.content
    assert list(outside.iterdir()) == []


@pytest.mark.skipif(not os.path.exists("/proc/self/fd"), reason="the opened file is named through /proc")
@pytest.mark.parametrize("tool, args", [("read_file", {"path": "real/secret.txt"}),
                                        ("list_files", {"directory": "real"})])
def test_a_folder_swapped_for_a_link_between_check_and_open_is_caught(tmp_path, workspace, monkeypatch, tool, args):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("outside secret", encoding="utf-8")
    (workspace / "real").mkdir()
    (workspace / "real" / "secret.txt").write_text("inside", encoding="utf-8")
    real_open, swapped = os.open, []

    def racing_open(path, *rest, **kw):   # the swap lands exactly in the window between check and open
        if not swapped:
            swapped.append(swap_for_link(workspace / "real", outside))
        return real_open(path, *rest, **kw)
    monkeypatch.setattr(ws.os, "open", racing_open)
    obs = dispatch(file_tools(), tool, args)
    assert swapped and obs.is_error and "outside the workspace" in obs.content
    assert "outside secret" not in obs.content and "secret.txt" not in obs.content.split("'")[-1]


@pytest.mark.parametrize("reply, phrase", [
    ({"text": "", "tool_calls": 5}, '"tool_calls" must be a list'),
    ({"text": "x", "stop": ["refused"]}, "unknown stop"),
    ({"text": "hi", "usage": "lots"}, "usage must be a dict of whole numbers"),
    ({"text": "hi", "usage": {"input_tokens": "ten"}}, "usage must be a dict of whole numbers"),
    ({"tool_calls": [{"name": 7, "args": {}}]}, 'needs a "name"'),
])
def test_a_scripted_reply_of_the_wrong_shape_ends_the_run_with_a_sentence(reply, phrase):
    for native in (False, True):
        agent = Agent(default_tools(), ScriptedModel([reply], native_tools=native))
        answer = agent.run("go")
        assert agent.stop_reason == "model_error" and phrase in answer, answer


def test_a_reply_object_of_the_wrong_shape_is_refused_where_it_is_made():
    from course_lib.models.base import ModelError, Reply, ToolCall
    for make, phrase in [(lambda: Reply(stop="bogus"), "unknown stop"),
                         (lambda: Reply(tool_calls=({"name": "x"},)), "tuple of ToolCall"),
                         (lambda: Reply(text=None), "text must be text"),
                         (lambda: ToolCall(name=None, args={}), "must be text")]:
        with pytest.raises(ModelError, match=phrase):
            make()


def nested(depth):
    value = 1
    for _ in range(depth):
        value = [value]
    return value


@pytest.mark.parametrize("args", [{"expression": nested(600)}, {"expression": nested(65)}])
def test_arguments_nested_absurdly_deep_end_the_run_cleanly(args):
    agent = Agent(default_tools(), ScriptedModel([{"tool_calls": [{"name": "calculator", "args": args}]}],
                                                 native_tools=True))
    assert "nested more than 64 levels deep" in agent.run("go") and agent.stop_reason == "model_error"


def test_a_self_containing_argument_ends_the_run_cleanly():
    loop = []
    loop.append(loop)
    loop.append(loop)   # it doubles at every level
    agent = Agent(default_tools(), ScriptedModel([{"tool_calls": [{"name": "calculator", "args": {"x": loop}}]}],
                                                 native_tools=True))
    assert "nested more than" in agent.run("go")


def test_deep_arguments_from_a_real_api_reply_are_a_model_error():
    from course_lib.models.base import ModelError
    from course_lib.models.openai import reply_from_openai
    deep = '{"expression": ' + "[" * 600 + "1" + "]" * 600 + "}"
    message = {"choices": [{"finish_reason": "tool_calls", "message": {"role": "assistant", "content": None,
               "tool_calls": [{"id": "c1", "type": "function",
                               "function": {"name": "calculator", "arguments": deep}}]}}]}
    with pytest.raises(ModelError, match="nested"):
        reply_from_openai(message)
    deeper = '{"expression": ' + "[" * 5000 + "1" + "]" * 5000 + "}"   # deeper than json.loads can go
    message["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = deeper
    obs = Agent(default_tools(), ScriptedModel([reply_from_openai(message)], native_tools=True))
    assert obs.run("go") and obs.trace[0].runs[0].observation.is_error   # "arguments must be a JSON object"


def test_save_writes_strict_json_whatever_the_arguments_hold(workspace):
    from pathlib import Path

    class Unprintable:
        def __str__(self):
            raise ValueError("no")
    args = {"path": Path("a\ud83d"), "big": 10**5000, "odd": Unprintable(), "set": {1, 2}, (1, 2): "tuple key"}
    agent = Agent(default_tools(), ScriptedModel([{"tool_calls": [{"name": "calculator", "args": args}]},
                                                 {"text": "done"}], native_tools=True))
    agent.run("go")
    saved = strict_load(agent.save("run.json"))
    call = saved["history"][2]["tool_calls"][0]["args"]
    assert call["path"] == "a\ufffd" and call["big"] == "(a whole number of 16,610 bits)"
    assert call["odd"] == "(a Unprintable that cannot be shown)" and call["(1, 2)"] == "tuple key"
    assert everything_in(workspace) == ["run.json"]


def test_an_exception_that_cannot_say_what_it_is_still_becomes_an_observation():
    class Mute(Exception):
        def __str__(self):
            raise ValueError("str broke")

    def tool() -> str:
        """Fails oddly."""
        raise Mute()

    def refuses() -> str:
        """Refuses oddly."""
        raise ToolError(Mute())
    obs = dispatch({"tool": tool}, "tool", {})
    assert obs.is_error and "Mute: (its message could not be shown)" in obs.content
    assert dispatch({"refuses": refuses}, "refuses", {}).is_error


@pytest.mark.parametrize("failure", [MemoryError(), ValueError("odd"), OverflowError("big")])
def test_any_failure_inside_a_file_tool_is_a_tool_error(workspace, monkeypatch, failure):
    (workspace / "a.txt").write_text("text", encoding="utf-8")

    def broken(*args, **kwargs):
        raise failure
    gate = ApprovalGate(approve)
    for module, name, call, phrase in [(ws.os, "urandom", lambda: gate.write_file("a.txt", "new"),
                                        "nothing was changed"),
                                       (ws.os, "scandir", lambda: list_files("."), "cannot use '.'"),
                                       (ws.os, "fstat", lambda: read_file("a.txt"), "cannot use 'a.txt'")]:
        with monkeypatch.context() as patch:   # undone at once: pytest itself needs os.scandir
            patch.setattr(module, name, broken)
            with pytest.raises(ToolError, match=phrase):
                call()
    assert (workspace / "a.txt").read_text(encoding="utf-8") == "text" and everything_in(workspace) == ["a.txt"]


@pytest.mark.parametrize("path", ["foo/.", "newdir/sub/..", "foo/.\n", ".", "..", "notes\\.."])
def test_a_path_that_names_a_folder_never_creates_a_file(workspace, path):
    with pytest.raises(ToolError, match="names a folder"):
        ApprovalGate(approve).write_file(path, "x")
    assert everything_in(workspace) == []


@pytest.mark.parametrize("exc", [SystemExit(0), asyncio.CancelledError(), GeneratorExit()])
def test_a_policy_that_raises_anything_denies(workspace, exc):
    def policy(request):
        raise exc
    gate = ApprovalGate(policy)
    with pytest.raises(ToolError, match="approval step failed"):
        gate.write_file("a.txt", "x")
    assert gate.decisions == [("a.txt", False)] and not (workspace / "a.txt").exists()


def test_a_falsy_policy_object_is_still_the_policy(workspace, monkeypatch):
    monkeypatch.setenv("COURSE_APPROVAL", "approve")

    class AllowList(list):
        def __call__(self, request):
            return request.path in self
    gate = ApprovalGate(AllowList())
    assert gate.policy == [] and isinstance(gate.policy, AllowList)
    with pytest.raises(ToolError, match="did not approve"):
        gate.write_file("a.txt", "x")


def test_an_absolute_path_inside_the_workspace_is_shown_relative(workspace, monkeypatch):
    long_name = workspace / ("d" * 90) / "missing.txt"
    obs = dispatch(file_tools(), "read_file", {"path": str(long_name)})
    assert obs.is_error and str(workspace) not in obs.content and "'ddd" in obs.content


def test_a_huge_expression_is_refused_before_any_work():
    box = finishes(calculator, "1 + " * 5_000_000)
    assert "longer than 200 characters" in str(box["error"])


def test_the_limits_the_readme_states_are_the_limits_in_the_code():
    from pathlib import Path
    readme = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("What the library holds to on hostile input"):readme.index("## Performance")]
    assert f"up to {ws.MAX_READ_CHARS:,}" in section and f"more than {ws.MAX_COUNTED:,} more" in section
    assert f"{ws.MAX_SCANNED:,} entries at most" in section and f"at most {ws.MAX_PATH_CHARS:,} characters" in section
    assert all(f'"{word}"' in section for word in YES)
