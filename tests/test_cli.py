"""The `course` command: demo prints the steps and the answer; bad arguments get one line, not a traceback."""
import json
import subprocess
import sys

import pytest

from course_lib.courseware import cli


def run_cli(*args, env=None):
    import os
    full_env = {**os.environ, **(env or {})}
    return subprocess.run([sys.executable, "-m", "course_lib.courseware.cli", *args], capture_output=True, text=True,
                          encoding="utf-8", env=full_env, timeout=60)


def test_demo_prints_the_seed_scenario():
    result = run_cli("demo")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "Goal: How much do seven units cost?" in out
    assert "scripted" in out                                       # the stand-in is named as such
    assert '[1] lookup({"topic": "단가"}) -> 개당 $24' in out
    assert '[2] calculator({"expression": "24*7"}) -> 168' in out
    assert '[3] lookup({"topic": "discount"}) -> Error:' in out
    assert "[4] finish" in out and "Answer: Seven units cost $168" in out
    assert result.stderr == ""


@pytest.mark.parametrize("goal, expected", [("3일 2박 국내 출장비 상한은?", "255,000"),
                                            ("10 나누기 0은?", "division by zero"),
                                            ("공지 문서 요약해 줘", "did not follow")])
def test_demo_picks_the_matching_scenario(goal, expected, capsys):
    assert cli.main(["demo", goal]) == 0
    assert expected in capsys.readouterr().out


def test_demo_with_an_unknown_goal_says_what_the_scripted_model_can_do(capsys):
    assert cli.main(["demo", "What is the weather in Seoul?"]) == 0
    out = capsys.readouterr().out
    assert "scripted demo model, not a real LLM" in out and "stage 08" in out


def test_demo_respects_max_steps(capsys):
    assert cli.main(["demo", "repeat the search", "--max-steps", "3"]) == 0
    out = capsys.readouterr().out
    assert "[3] search_docs" in out and "[4]" not in out and "stop reason: max_steps" in out


def test_course_version_prints_the_version_and_exits_0_as_command_line_tools_do():
    from course_lib import __version__
    result = run_cli("--version")
    assert (result.returncode, result.stdout, result.stderr) == (0, f"course {__version__}\n", "")


@pytest.mark.parametrize("args", [["bogus"], [], ["demo", "--max-steps", "0"], ["demo", "--max-steps", "x"],
                                  ["demo", "a", "b"]])
def test_bad_arguments_get_usage_and_a_one_line_error(args):
    result = run_cli(*args)
    assert result.returncode == 2
    assert "usage: course" in result.stderr and "error:" in result.stderr
    assert "Traceback" not in result.stderr


def test_bad_environment_step_cap_is_one_line():
    result = run_cli("demo", env={"COURSE_MAX_STEPS": "many"})
    assert result.returncode == 2 and "COURSE_MAX_STEPS" in result.stderr and "Traceback" not in result.stderr


def test_doctor_reports_keys_without_values():
    secret = "sk-ant-doctor-test-value-123"
    # The base URL is a closed local port: with a key doctor asks the models endpoint, and here it must
    # fail fast and say so, without sending anything off this machine.
    result = run_cli("doctor", env={"ANTHROPIC_API_KEY": secret, "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"})
    assert result.returncode in (0, 1)
    assert "claude-haiku-5-5  could not check (APIConnectionError" in result.stdout
    assert "ANTHROPIC_API_KEY" in result.stdout and "set" in result.stdout
    assert secret not in result.stdout + result.stderr
    assert "Python" in result.stdout and "anthropic" in result.stdout
    assert "Traceback" not in result.stderr


def test_demo_with_a_real_model_and_no_key_explains_what_is_missing():
    result = run_cli("demo", "--model", "anthropic", env={"ANTHROPIC_API_KEY": ""})
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "ANTHROPIC_API_KEY is not set" in result.stderr and "scripted" in result.stderr


@pytest.mark.parametrize("provider", ["openai", "openai-responses"])   # Chat Completions and the Responses API
def test_demo_goes_live_through_the_sdk_when_a_server_and_key_are_there(provider):
    """The same command a learner runs with a key, pointed at the local stand-in server instead."""
    from course_lib.courseware.standin import StandInServer
    script = [{"tool_calls": [{"name": "lookup", "args": {"topic": "단가"}}]},
              {"tool_calls": [{"name": "calculator", "args": {"expression": "24*7"}}]},
              {"text": "Seven units cost $168."}]
    with StandInServer(script) as server:
        result = run_cli("demo", "--model", provider,
                         env={"OPENAI_API_KEY": "sk-standin-only", "OPENAI_BASE_URL": server.url + "/v1"})
    assert result.returncode == 0, result.stderr
    assert f"Model: {provider}, live" in result.stdout and server.problems == []
    assert {r["api"] for r in server.requests} == {"responses" if provider == "openai-responses" else "openai"}
    assert '[1] lookup({"topic": "단가"}) -> 개당 $24' in result.stdout and "Answer: Seven units cost $168." in result.stdout
    assert "sk-standin-only" not in result.stdout + result.stderr


def test_doctor_flags_a_retired_model_id():
    result = run_cli("doctor", env={"COURSE_ANTHROPIC_MODEL": "claude-2.1"})
    assert "claude-2.1  RETIRED on 2025-07-21" in result.stdout and result.returncode == 1
    # the settings section does not call it ok first: a model ID's verdict is the model check's alone
    assert "COURSE_ANTHROPIC_MODEL     claude-2.1  see the models below" in result.stdout
    assert not [line for line in result.stdout.splitlines() if "claude-2.1" in line and line.endswith("ok")]


@pytest.mark.parametrize("answer, written", [("y\n", True), ("n\n", False), ("", False)])
def test_demo_asks_before_writing_a_file(tmp_path, answer, written):
    result = subprocess.run([sys.executable, "-m", "course_lib.courseware.cli", "demo", "save the price to a file"],
                            input=answer, capture_output=True, text=True, encoding="utf-8", timeout=60,
                            cwd=tmp_path, env={**__import__("os").environ, "COURSE_APPROVAL": "ask"})
    assert result.returncode == 0, result.stderr
    assert "Allow this write? [y/N]" in result.stdout
    assert (tmp_path / "notes" / "price.txt").exists() is written
    assert ("Wrote" in result.stdout) is written and ("did not approve" in result.stdout) is not written


def test_demo_without_a_terminal_denies_writes(tmp_path):
    result = subprocess.run([sys.executable, "-m", "course_lib.courseware.cli", "demo", "save the price"], input="y\n",
                            capture_output=True, text=True, encoding="utf-8", timeout=60, cwd=tmp_path,
                            env={k: v for k, v in __import__("os").environ.items() if k != "COURSE_APPROVAL"})
    assert "did not approve" in result.stdout and not (tmp_path / "notes").exists()


def test_demo_exits_1_when_the_api_call_fails():
    result = run_cli("demo", "--model", "anthropic",
                     env={"ANTHROPIC_API_KEY": "sk-ant-fake", "ANTHROPIC_BASE_URL": "http://127.0.0.1:9"})
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "could not reach the Anthropic server" in result.stdout and "stop reason: model_error" in result.stdout


def test_doctor_checks_settings_with_the_code_that_reads_them():
    result = run_cli("doctor", env={"COURSE_ANTHROPIC_EFFORT": "extreme", "COURSE_MAX_STEPS": "abc",
                                    "COURSE_ANTHROPIC_THINKING": "summarized",
                                    "OPENAI_BASE_URL": "http://user:secret@127.0.0.1:9/v1"})
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "COURSE_ANTHROPIC_EFFORT    extreme  INVALID: effort must be one of low" in result.stdout
    assert "COURSE_MAX_STEPS           abc  INVALID" in result.stdout
    assert "COURSE_ANTHROPIC_THINKING  summarized  ok" in result.stdout
    assert "OPENAI_BASE_URL            http://127.0.0.1:9/v1  ok" in result.stdout and "secret" not in result.stdout


def test_doctor_sends_a_learner_to_make_lab_and_test_tools_to_make_test(monkeypatch, capsys):
    from importlib import metadata

    from course_lib.courseware import cli
    real = metadata.version

    def version(package):
        if package in ("matplotlib", "nbval"):
            raise metadata.PackageNotFoundError(package)
        return real(package)
    monkeypatch.setattr(cli.metadata, "version", version)
    cli.cmd_doctor(None)
    out = capsys.readouterr().out
    assert "matplotlib  missing (run `make lab`, or `pip install -e '.[course]'`)" in out
    assert "nbval       not installed (`make test` adds it)" in out
    assert ".[dev]" not in out


@pytest.mark.parametrize("which, listed, says", [
    ("/usr/bin/fc-list", "NanumGothic,나눔고딕\nNoto Sans CJK KR\n", "Korean font NanumGothic"),
    ("/usr/bin/fc-list", "", "Korean font none found: Korean text in the lessons shows as boxes. Install one"),
    (None, "", "Korean font cannot check (no fc-list)"),
])
def test_doctor_says_whether_korean_text_can_be_shown(monkeypatch, which, listed, says):
    import shutil
    import subprocess

    from course_lib.courseware import cli
    monkeypatch.setattr(shutil, "which", lambda name: which)
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(a, 0, listed, ""))
    assert cli._korean_font().startswith(says)
    assert "fonts-nanum" in cli._korean_font() or listed or which is None


def test_doctor_prints_the_font_line():
    assert "Korean font " in run_cli("doctor").stdout


def test_the_readme_and_ci_give_the_same_font_advice_as_doctor():
    from pathlib import Path

    from course_lib.courseware import cli
    root = Path(__file__).parent.parent
    readme, ci = (root / "README.md").read_text(encoding="utf-8"), (root / ".ci" / "run").read_text()
    assert "sudo apt-get install fonts-nanum" in readme and "`course doctor` says whether one is installed" in readme
    assert "apt_install fonts-nanum" in ci
    import inspect
    assert "sudo apt-get install fonts-nanum" in inspect.getsource(cli._korean_font)


# ---------------------------------------------------------------- course eval (stage 12)
def test_eval_runs_the_suite_with_a_scripted_stand_in_and_prints_a_summary_as_json():
    result = run_cli("eval", "--model", "careful", "--jobs", "4", "--repeat", "2", "--json")
    assert result.returncode == 0, result.stderr
    summary = json.loads(result.stdout)["summary"]
    assert (summary["runs"], summary["tasks"], summary["k"]) == (36, 18, 2)
    assert summary["pass_rate"] == 1.0 and summary["pass^k"] == 1.0 and summary["stop_reasons"] == {"finish": 36}


def test_eval_prints_a_row_per_run_with_the_reason_a_run_failed():
    result = run_cli("eval", "--model", "sloppy")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == "18 tasks × 1, model: sloppy (a scripted stand-in, not a model), 1 at a time"
    rows = lines[1:-1]
    assert [row[:7] for row in rows] == [f"[{n:>2}/18]" for n in range(1, 19)]   # a counter as runs finish
    assert len(rows) == 18 and sum(row[7:].startswith(" ✗") for row in rows) == 8
    unit = next(row for row in rows if " unit-price-7 #1 " in row)   # only the grade that failed is shown
    assert unit.startswith("[ 1/18] ✗") and unit.endswith("never called lookup; called forbidden search_docs")
    assert rows[2].startswith("[ 3/18] ✓ divide-by-zero #1") and " steps  2 " in rows[2]   # as lesson 12 shows it
    trip = next(row for row in rows if " trip-cap-ko #1 " in row)
    assert trip.endswith("found 330000, 25000, 3, 90000, 2; expected the number 255000 (± 0)")   # every number
    assert lines[-1].startswith("passed 10/18 (56%), pass^1 56%") and "at example prices" in lines[-1]
    assert result.stderr == ""


def test_eval_json_prints_progress_on_stderr_and_only_the_report_on_stdout():
    result = run_cli("eval", "--model", "sloppy", "--jobs", "3", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)   # stdout is one JSON document, nothing else
    assert (report["model"], report["planned"], report["interrupted"]) == ("sloppy", 18, False)
    assert report["summary"]["passed"] == 10
    # floats as a person reads them: 0.555556, not 0.5555555555555556 (the saved runs keep every digit)
    assert (report["summary"]["pass_rate"], report["summary"]["mean_steps"]) == (0.555556, 2.555556)
    assert all(len(repr(v).split(".")[-1]) <= 6 for v in report["summary"].values() if type(v) is float)
    progress = result.stderr.splitlines()
    assert progress[0] == "18 tasks × 1, model: sloppy (a scripted stand-in, not a model), 3 at a time"
    assert [line[:7] for line in progress[1:]] == [f"[{n:>2}/18]" for n in range(1, 19)]
    assert sum(" ✗ " in line for line in progress) == 8 and any(line.endswith("✓ refund-docs #1") for line in progress)


def _ctrl_c_as_in_a_terminal():
    """A job started in the background (`cmd &` in a script) inherits SIGINT ignored, and Python then keeps
    ignoring it; in a terminal Ctrl-C is delivered, so the child gets the default back before it starts."""
    import signal
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _interrupted_eval(tmp_path, *extra):
    """`course eval` with a slow simulated model, sent SIGINT (Ctrl-C) once the first finished run shows."""
    import signal
    import threading
    out = tmp_path / "partial.json"
    process = subprocess.Popen([sys.executable, "-m", "course_lib.courseware.cli", "eval", "--latency-ms", "400",
                                "--out", str(out), *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, encoding="utf-8", preexec_fn=_ctrl_c_as_in_a_terminal)
    guard = threading.Timer(120, process.kill)   # a hang guard only: no test here measures time
    guard.start()
    try:
        watched = process.stderr if "--json" in extra else process.stdout
        seen = [watched.readline(), watched.readline()]   # the header, then the first finished run
        process.send_signal(signal.SIGINT)
        stdout, stderr = process.communicate()
    finally:
        guard.cancel()
        if process.poll() is None:
            process.kill()
    return process.returncode, seen, stdout, stderr, json.loads(out.read_text(encoding="utf-8"))


def test_ctrl_c_keeps_what_finished_prints_its_summary_and_exits_130(tmp_path):
    code, seen, stdout, stderr, saved = _interrupted_eval(tmp_path)
    assert code == 130 and "Traceback" not in stderr, stderr
    assert seen[1].startswith("[ 1/18] ✓ unit-price-7 #1")
    kept = saved["results"]
    assert saved["interrupted"] is True and saved["planned"] == 18 and 1 <= len(kept) < 18
    from course_lib.evaluation import load_tasks
    assert [r["task"] for r in kept] == [t["id"] for t in load_tasks()[:len(kept)]]   # one at a time: the first n
    assert all(r["passed"] and r["stop_reason"] == "finish" for r in kept)   # finished runs only: none cut short
    assert saved["summary"]["runs"] == len(kept) and saved["summary"]["passed"] == len(kept)
    assert stdout.splitlines()[-1].startswith(f"passed {len(kept)}/{len(kept)} (100%)")
    assert f"interrupted: {len(kept)} of 18 runs had finished" in stderr


def test_ctrl_c_with_json_still_prints_the_report(tmp_path):
    code, seen, stdout, stderr, saved = _interrupted_eval(tmp_path, "--json", "--jobs", "2")
    assert code == 130 and "Traceback" not in stderr, stderr
    assert seen[1][:7] == "[ 1/18]"
    report = json.loads(stdout)
    assert report["interrupted"] is True and report["summary"] == saved["summary"]
    kept = report["summary"]["runs"]
    assert 1 <= kept < 18 and report["summary"]["stop_reasons"] == {"finish": kept}   # finished runs only


def test_eval_saves_runs_and_compare_names_the_regressions(tmp_path):
    careful, looping = tmp_path / "careful.json", tmp_path / "looping.json"
    assert run_cli("eval", "--model", "careful", "--out", str(careful)).returncode == 0
    assert run_cli("eval", "--model", "looping", "--out", str(looping), "--json").returncode == 0
    saved = json.loads(careful.read_text(encoding="utf-8"))
    assert len(saved["results"]) == 18 and saved["results"][0]["transcript"]["history"]
    worse = run_cli("eval", "--compare", str(careful), str(looping))
    assert worse.returncode == 1 and worse.stdout.splitlines()[-1] == "18 regression(s), 0 fix(es)"
    better = run_cli("eval", "--compare", str(looping), str(careful))
    assert better.returncode == 0 and better.stdout.splitlines()[-1] == "0 regression(s), 18 fix(es)"


@pytest.mark.parametrize("provider", ["openai", "openai-responses"])
def test_eval_with_a_real_model_and_no_key_says_what_to_set_and_exits_2(provider):
    result = run_cli("eval", "--model", provider)   # the test set-up removes the keys
    assert result.returncode == 2 and "OPENAI_API_KEY" in result.stderr and "Traceback" not in result.stderr


@pytest.mark.parametrize("args", [("--jobs", "0"), ("--latency-ms", "-5"), ("--repeat", "x"), ("--model", "gpt")])
def test_eval_refuses_bad_options_with_a_usage_error(args):
    result = run_cli("eval", *args)
    assert result.returncode == 2 and "usage: course eval" in result.stderr and "Traceback" not in result.stderr


def test_the_course_eval_command_lesson_12_shows_prints_what_the_lesson_recorded():
    """Lesson 12 runs `course eval --model sloppy --json` and shows its JSON: the same command, run here."""
    import ast
    from pathlib import Path
    cells = json.loads((Path(__file__).parent.parent / "notebooks" / "12_evaluation.ipynb").read_text(encoding="utf-8"))
    cell = next(c for c in cells["cells"] if "".join(c["source"]).startswith("command = ["))
    command = ast.literal_eval("".join(cell["source"]).split("\n")[0].split("=", 1)[1].strip())
    assert command == ["course", "eval", "--model", "sloppy", "--json"]
    shown = "".join(cell["outputs"][0]["text"])
    result = run_cli(*command[1:])
    assert result.returncode == 0 and f"$ {' '.join(command)}    (exit status 0)" in shown
    recorded = shown.split("\n", 1)[1].rsplit("\n(and on stderr", 1)[0]
    assert json.loads(recorded) == json.loads(result.stdout)
    assert f"(and on stderr, {len(result.stderr.splitlines())} progress lines" in shown


def test_eval_runs_a_task_file_of_your_own(tmp_path):
    own = [{"id": "twelve-units", "goal": "What do twelve units cost, in dollars?",
            "check": {"type": "number", "value": 288, "tolerance": 0.01}, "required_tools": ["lookup", "calculator"],
            "max_steps": 4, "reference": {"calls": [["lookup", {"topic": "단가"}], ["calculator", {"expression": "24*12"}]],
                                          "answer": "{result} dollars."}}]
    path = tmp_path / "tasks.json"
    path.write_text(json.dumps(own, ensure_ascii=False), encoding="utf-8")
    result = run_cli("eval", "--tasks", str(path), "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert (report["planned"], report["summary"]["passed"]) == (1, 1)
    path.write_text(json.dumps([dict(own[0], check={"type": "numbr", "value": 288})]), encoding="utf-8")
    broken = run_cli("eval", "--tasks", str(path))
    assert broken.returncode == 2 and "task 'twelve-units'" in broken.stderr and "Traceback" not in broken.stderr
    assert broken.stderr.startswith("usage: course eval")   # under eval's usage, not the top-level one


def _last_line(result):
    return result.stderr.strip().splitlines()[-1]


@pytest.mark.parametrize("text, says", [(None, "cannot read it (No such file or directory)"),
                                        ("[{", "not JSON (Expecting property name"),
                                        ('{"tasks": []}', "a task file holds a JSON list of tasks, not a dict"),
                                        ('[{"id": "x"}]', "task 'x': 'goal' must be non-empty text"),
                                        ("[" * 100_000 + "]" * 100_000, "its JSON is nested too deeply to read")])
def test_eval_with_a_task_file_it_cannot_use_gives_one_line_under_its_usage(tmp_path, text, says):
    path = tmp_path / "tasks.json"
    if text is not None:
        path.write_text(text, encoding="utf-8")
    result = run_cli("eval", "--tasks", str(path))
    assert result.returncode == 2 and result.stderr.startswith("usage: course eval"), result.stderr
    assert "Traceback" not in result.stderr and _last_line(result).startswith(
        f"course eval: error: --tasks {path}: {says}"), result.stderr


@pytest.fixture(scope="module")
def saved_careful(tmp_path_factory):
    path = tmp_path_factory.mktemp("saved") / "careful.json"
    assert run_cli("eval", "--model", "careful", "--out", str(path), "--json").returncode == 0
    return path


@pytest.mark.parametrize("text, says", [(None, "cannot read it (No such file or directory)"),
                                        ("nope", "not JSON (Expecting value: line 1 column 1 (char 0))"),
                                        ("summary", 'it holds no "results": compare files saved with --out'),
                                        ('{"results": [{"task": "a"}]}', "results[0] is not a run record"),
                                        ('{"results": ' + "[" * 100_000, "its JSON is nested too deeply to read")])
def test_compare_with_a_file_it_cannot_use_gives_one_line_and_exit_2(tmp_path, saved_careful, text, says):
    path = tmp_path / "new.json"
    if text == "summary":   # what `course eval --json > new.json` writes: the report, without the runs
        text = run_cli("eval", "--model", "sloppy", "--json").stdout
    if text is not None:
        path.write_text(text, encoding="utf-8")
    for old, new in ((saved_careful, path), (path, saved_careful)):
        result = run_cli("eval", "--compare", str(old), str(new))
        assert result.returncode == 2 and result.stderr.startswith("usage: course eval"), result.stderr
        assert "Traceback" not in result.stderr and _last_line(result).startswith(
            f"course eval: error: --compare {path}: {says}"), result.stderr


def test_compare_counts_tasks_missing_from_the_new_run_so_a_stopped_run_fails(tmp_path, saved_careful):
    from course_lib.evaluation import load_tasks
    saved, partial = json.loads(saved_careful.read_text(encoding="utf-8")), tmp_path / "partial.json"
    partial.write_text(json.dumps(dict(saved, interrupted=True, results=saved["results"][:5])), encoding="utf-8")
    result = run_cli("eval", "--compare", str(saved_careful), str(partial))
    assert result.returncode == 1, result.stderr
    lines, ids = result.stdout.splitlines(), [t["id"] for t in load_tasks()]
    assert lines[:-1] == [f"regression {task:<28} passed 100% → missing from NEW" for task in ids[5:]]
    assert lines[-1] == "13 regression(s), 0 fix(es); 13 task(s) of OLD missing from NEW"
    as_json = run_cli("eval", "--compare", str(saved_careful), str(partial), "--json")
    report = json.loads(as_json.stdout)
    assert as_json.returncode == 1 and (report["regressions"], report["fixes"], report["missing"]) == (13, 0, 13)
    assert report["changes"][0] == {"task": ids[5], "change": "regression", "before": 1.0, "after": None}
    same = run_cli("eval", "--compare", str(saved_careful), str(saved_careful), "--json")
    assert same.returncode == 0 and json.loads(same.stdout) == {"regressions": 0, "fixes": 0, "missing": 0,
                                                                 "changes": []}


def test_compare_lists_regressions_first(tmp_path, saved_careful):
    saved = json.loads(saved_careful.read_text(encoding="utf-8"))
    first, second = saved["results"][0]["task"], saved["results"][1]["task"]
    for name, failing in (("old", 0), ("new", 1)):   # the first task is fixed in NEW, the second regresses
        runs = [dict(r, passed=k != failing) for k, r in enumerate(saved["results"])]
        (tmp_path / f"{name}.json").write_text(json.dumps({"results": runs}), encoding="utf-8")
    result = run_cli("eval", "--compare", str(tmp_path / "old.json"), str(tmp_path / "new.json"))
    assert result.returncode == 1 and result.stdout.splitlines() == [
        f"regression {second:<28} passed 100% → 0%", f"fix        {first:<28} passed 0% → 100%",
        "1 regression(s), 1 fix(es)"]


def test_ctrl_c_rows_and_the_summary_count_the_same_runs(monkeypatch, capsys):
    """Every run has finished when Ctrl-C comes after the second row: the summary counts the two runs shown."""
    from course_lib import evaluation
    from tests.test_evaluation import every_run_ends_before_the_first_row
    monkeypatch.setattr(evaluation, "queue", every_run_ends_before_the_first_row(18, ctrl_c_after=2))
    assert cli.main(["eval", "--model", "careful", "--jobs", "4"]) == 130
    out, err = capsys.readouterr()
    assert len([line for line in out.splitlines() if line.startswith("[")]) == 2
    assert out.splitlines()[-1].startswith("passed 2/2 (100%)") and "interrupted: 2 of 18 runs had finished" in err


@pytest.mark.parametrize("found, sandbox, says", [
    ({"make", "npm"}, "bubblewrap", ["make        ok", "sandbox     bubblewrap: `course check` grades each notebook "
                                     "isolated", "npm         ok"]),
    (set(), "none", ["make        not found: the README's \"Without make\" gives the three commands `make lab` runs",
                     "sandbox     none: `course check` grades with your network and files", "npm         not found"]),
])
def test_doctor_names_the_programs_around_python_that_are_missing_and_what_needs_them(monkeypatch, found, sandbox,
                                                                                     says):
    """Issue 29: on Windows or a bare machine a learner is told what is missing (make, a sandbox, npm), and that
    none of them is needed to learn."""
    import shutil

    from course_lib.courseware import cli, sandbox as box
    monkeypatch.setattr(shutil, "which", lambda name: f"/usr/bin/{name}" if name in found else None)
    monkeypatch.setattr(box, "isolation", lambda: sandbox)
    lines = cli._tools()
    assert [line[:len(said)] for line, said in zip(lines, says)] == says and len(lines) == 3
    from pathlib import Path
    assert "**Without make**" in (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
