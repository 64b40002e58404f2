"""Stage 06 exercises: the loop itself, a stop on repeated calls, the step cap from the environment, transcripts."""
from __future__ import annotations

import copy
import json
import os
import tempfile
from pathlib import Path

from course_lib import default_tools
from course_lib.courseware.checks import Case, Exercise
from course_lib.describe import build_system_prompt
from course_lib.courseware.scenarios import SCENARIOS
from course_lib.models import ScriptedModel

VAR = "COURSE_MAX_STEPS"
PRICE, REPEAT, DIVIDE = SCENARIOS["price"], SCENARIOS["repeat"], SCENARIOS["divide"]
PRICE_ANSWER = json.loads(PRICE["replies"][-1])["args"]["answer"]


def _act(tool, **args) -> str:
    return json.dumps({"tool": tool, "args": args}, ensure_ascii=False)


MESSY = ["Sure! I will multiply 24 by 7.", '{"tool": "calculator", "args": {"expression": "24*7"',
         _act("calculator", expression="24*7"), _act("finish", answer="24 × 7 = 168")]
A, B = _act("search_docs", query="규정"), _act("lookup", topic="단가")
A_AGAIN = [f"```json\n{A}\n```", f"Let me search once more.\n{A}",
           '{"args": {"query": "규정"}, "tool": "search_docs"}']
LIMITED = _act("search_docs", query="규정", limit=3)
LIMITED_AGAIN = '{"tool": "search_docs", "args": {"limit": 3, "query": "규정"}}'   # the same args, keys swapped
H = [{"role": "system", "content": "You are a careful assistant."}, {"role": "user", "content": PRICE["goal"]},
     {"role": "assistant", "content": B}, {"role": "user", "content": "Observation: 개당 $24"}]


def _run(f, replies, max_steps=6, goal="What is 24 times 7?"):
    """Run the learner's loop on a fresh scripted model (replies, or a scenario dict): (answer, history, model)."""
    if isinstance(replies, dict):
        replies, goal = replies["replies"], replies["goal"]
    model = ScriptedModel(replies)
    answer, history = f(model, default_tools(), goal, max_steps=max_steps)
    return answer, history, model


def _history(*replies) -> list[dict]:
    """An agent history: system prompt, goal, then each assistant reply followed by an observation."""
    messages = [{"role": "system", "content": "(the system prompt)"}, {"role": "user", "content": "(the goal)"}]
    for reply in replies:
        messages += [{"role": "assistant", "content": reply}, {"role": "user", "content": "Observation: ..."}]
    return messages


# Two real Agent runs (the scripted scenarios), recorded: the finished Agent is this stage's answer, so it is not
# where the grader runs submissions (tests/test_hidden_cases.py checks the record against a run of today's Agent).
RUNS = json.loads(Path(__file__).with_name("stage06_runs.json").read_text(encoding="utf-8"))


def _agent_history(scenario: str, max_steps: int) -> list[dict]:
    return copy.deepcopy(RUNS[f"{scenario}, max_steps={max_steps}"])


def _with_env(value, call):
    """call() with COURSE_MAX_STEPS set to `value` (None: unset); the old value is put back afterwards."""
    old = os.environ.pop(VAR, None)
    try:
        if value is not None:
            os.environ[VAR] = value
        return call()
    finally:
        os.environ.pop(VAR, None)
        if old is not None:
            os.environ[VAR] = old


def env_cap_error(f, value):
    """The message of the ValueError that f() raises with COURSE_MAX_STEPS=value ("" when it raises none)."""
    def call():
        try:
            return f() and ""
        except ValueError as e:
            return str(e)
    return _with_env(value, call)


def _in_temp(call):
    """call() inside a fresh temporary folder (the current folder meanwhile); the old folder is restored."""
    old = os.getcwd()
    with tempfile.TemporaryDirectory() as folder:
        os.chdir(folder)
        try:
            return call()
        finally:
            os.chdir(old)


def _saved_text(f, old=None):
    def go():
        if old is not None:
            Path("run.json").write_text(old, encoding="utf-8")
        f(H, "run.json")
        return Path("run.json").read_text(encoding="utf-8")
    return _in_temp(go)


def _replaced_in_same_folder(f):
    """Did save_transcript move a file from the target's own folder onto it with os.replace?"""
    calls, real = [], os.replace

    def spy(src, dst, *args, **kwargs):
        calls.append(Path(src).resolve().parent == Path(dst).resolve().parent)
        return real(src, dst, *args, **kwargs)
    os.replace = spy
    try:
        _in_temp(lambda: f(H, "runs/run.json"))
    finally:
        os.replace = real
    return bool(calls) and all(calls)


def _failed_save(f):
    def go():
        Path("run.json").write_text("old", encoding="utf-8")
        try:
            f([{"role": "user", "content": object()}], "run.json")
        except TypeError:
            pass
        return Path("run.json").read_text(encoding="utf-8"), sorted(os.listdir("."))
    return _in_temp(go)


def _first_two(f) -> list[str]:
    """The first two messages of the loop's history, in short: the system prompt of the tools, then the goal."""
    names = {build_system_prompt(default_tools()): "the system prompt", PRICE["goal"]: "the goal"}
    return [f"{m.get('role')}: {names.get(m.get('content'), m.get('content'))}" if isinstance(m, dict) else m
            for m in _run(f, PRICE)[1][:2]]


def _starts(prefix):
    return lambda got: isinstance(got, str) and got.startswith(prefix)


CAP_HINT = "max_steps must be an int of at least 1 (not a bool): raise ValueError before anything else"
LIMIT_HINT = "limit must be an int of at least 2 (not a bool): otherwise raise ValueError"
DEFAULT_HINT = "no value, or only spaces: return the `default` argument"

EXERCISES = {
    "06.1": Exercise("The agent loop", [
        Case("price: the answer", lambda f: _run(f, PRICE)[0], expected=PRICE_ANSWER,
             hint="on finish, return (the answer from parsed.args, history)"),
        Case("price: 9 messages", lambda f: len(_run(f, PRICE)[1]), expected=9,
             hint="per step: ask, append the reply, parse, then finish / dispatch / correct"),
        Case("the first two messages", _first_two, expected=["system: the system prompt", "user: the goal"],
             hint="start with {'role': 'system', 'content': build_system_prompt(tools)}, then the goal as 'user'"),
        Case("an observation", lambda f: _run(f, PRICE)[1][3], expected=H[3],
             hint='append {"role": "user", "content": "Observation: " + obs.content}'),
        Case("the model sees everything", lambda f: [len(c) for c in _run(f, PRICE)[2].calls],
             expected=[2, 4, 6, 8], hint="pass the whole history to model.complete on every step"),
        Case("a tool error is observed", lambda f: _run(f, DIVIDE)[1][3]["content"],
             test=_starts("Observation: Error:"), shows='"Observation: Error: …"',
             hint="dispatch never raises: append what it returns"),
        Case("bad replies: it recovers", lambda f: _run(f, MESSY)[0], expected="24 × 7 = 168",
             hint="an unusable reply costs one step: append the correction and go on"),
        Case("bad reply: a correction", lambda f: _run(f, MESSY)[1][3]["content"],
             test=_starts("Your reply could not be used: "), shows='"Your reply could not be used: …"',
             hint='append {"role": "user", "content": "Your reply could not be used: " + parsed.error}'),
        Case("finish without an answer", lambda f: len(_run(f, [_act("finish")])[1]), test=lambda n: n == 3,
             shows="the run ends: 3 messages",
             hint="a finish may leave out the answer: parsed.args.get('answer', ...), not ['answer']"),
        Case("step cap 3: stops", lambda f: (lambda r: (r[0], len(r[2].calls)))(_run(f, REPEAT, max_steps=3)),
             test=lambda got: _starts("Stopped")(got[0]) and got[1] == 3, shows='("Stopped …", 3 calls)',
             hint="ask the model at most max_steps times, then return a sentence that begins with 'Stopped'"),
        Case("script runs out", lambda f: _run(f, [B], max_steps=5)[0], test=_starts("The model call failed: "),
             shows='"The model call failed: …"', hint="catch ModelError around the model call"),
        Case("a failed call adds nothing", lambda f: len(_run(f, [])[1]), test=lambda n: n == 2,
             shows="2 messages (system, goal)",
             hint="when model.complete raises ModelError, return at once: add nothing to the history"),
        Case("max_steps=0", lambda f: _run(f, PRICE, max_steps=0), raises=ValueError, hint=CAP_HINT),
        Case('max_steps="3"', lambda f: _run(f, PRICE, max_steps="3"), raises=ValueError, hint=CAP_HINT),
        Case("max_steps=True", lambda f: _run(f, PRICE, max_steps=True), raises=ValueError,
             hint="True is a bool, and isinstance(True, int) is True: check type(max_steps) is int"),
    ]),
    "06.2": Exercise("Stop when the model repeats itself", [
        Case("three same calls", lambda f: f(_history(A, A, A), 3), expected=True,
             hint="parse the last `limit` assistant replies: all usable and the same (tool, args) gives True"),
        Case("only two so far", lambda f: f(_history(A, A), 3), expected=False,
             hint="fewer than `limit` assistant replies: False"),
        Case("same call, other wording", lambda f: f(_history(*A_AGAIN), 3), expected=True,
             hint="compare what parse_reply finds (tool, args), not the text"),
        Case("args in another key order", lambda f: f(_history(LIMITED, LIMITED, LIMITED_AGAIN), 3), expected=True,
             hint="compare args as dicts (==), which ignores key order; json.dumps(args) does not"),
        Case("args differ", lambda f: f(_history(A, A, _act("search_docs", query="출장")), 3), expected=False,
             hint="the same tool with other args is another call"),
        Case("the latest one differs", lambda f: f(_history(A, A, A, B), 3), expected=False,
             hint="only the last `limit` assistant replies count"),
        Case("an older one differs", lambda f: f(_history(B, A, A, A), 3), expected=True,
             hint="an older, different reply before the last `limit` does not matter"),
        Case("the last message is a reply", lambda f: f(_history(A, A, A)[:-1], 3), expected=True,
             hint="pick the assistant messages by their role, wherever they are: do not count positions"),
        Case("a bad reply breaks it", lambda f: f(_history(A, "Hmm, let me think.", A, A), 3), expected=False,
             hint="a reply that is not a usable action is not the same call"),
        Case("three bad replies are no repeat", lambda f: f(_history("Hmm.", "Hmm.", "Hmm."), 3), expected=False,
             hint="an unusable reply is no call: check parsed.ok, or three failures look like one repeated call"),
        Case("a real Agent run: repeat", lambda f: f(_agent_history("repeat", 4), 3), expected=True,
             hint="the Agent's history has the same shape: system, goal, then assistant and user turns"),
        Case("a real Agent run: price", lambda f: f(_agent_history("price", 6), 3), expected=False,
             hint="the price run makes different calls: False"),
        Case("history is None", lambda f: f(None, 3), expected=False,
             hint="a history that is not a list counts as empty: False"),
        Case("junk messages", lambda f: f([None, 42, "text", {"role": "assistant"}], 2), expected=False,
             hint="skip anything that is not a dict with a str content"),
        Case("limit 1", lambda f: f(_history(A), 1), raises=ValueError, hint=LIMIT_HINT),
        Case('limit "3"', lambda f: f(_history(A, A, A), "3"), raises=ValueError, hint=LIMIT_HINT),
    ]),
    "06.3": Exercise("The step cap from the environment", [
        Case("unset: the default", lambda f: _with_env(None, f), expected=6, hint=DEFAULT_HINT),
        Case("unset, default=10", lambda f: _with_env(None, lambda: f(default=10)), expected=10,
             hint="return the default you were given, not a fixed 6"),
        Case('"12"', lambda f: _with_env("12", f), expected=12, hint="os.environ values are text: convert"),
        Case('" 8\\n" (spaces around)', lambda f: _with_env(" 8\n", f), expected=8,
             hint="strip the value before you look at it"),
        Case('"" (blank): the default', lambda f: _with_env("", f), expected=6, hint=DEFAULT_HINT),
        Case('"   " (only spaces)', lambda f: _with_env("   ", f), expected=6,
             hint="strip first, then test for blank: '   ' means unset too"),
        Case('"0"', lambda f: _with_env("0", f), raises=ValueError, hint="a cap must be at least 1"),
        Case('"ten"', lambda f: _with_env("ten", f), raises=ValueError,
             hint="anything but the digits 0-9 raises ValueError"),
        Case('"2.5"', lambda f: _with_env("2.5", f), raises=ValueError, hint="a cap is a whole number"),
        Case('"+5"', lambda f: _with_env("+5", f), raises=ValueError,
             hint="int() also reads '+5' and '1_000': check raw.isascii() and raw.isdigit() first"),
        Case("the message says what", lambda f: env_cap_error(f, "ten"), test=lambda got: VAR in got and "ten" in got,
             shows="names COURSE_MAX_STEPS and 'ten'", hint="name the variable and the bad value"),
        Case('the message for "²"', lambda f: env_cap_error(f, "²"), test=lambda got: VAR in got and "²" in got,
             shows="names COURSE_MAX_STEPS and '²'",
             hint="'²'.isdigit() is True and int('²') fails with its own message: add raw.isascii()"),
    ]),
    "06.4": Exercise("Save a transcript, atomically", [
        Case("returns the Path", lambda f: _in_temp(lambda: f(H, "run.json")), expected=Path("run.json"),
             hint="return Path(path), also when path was given as a str"),
        Case("reads back as the history", _saved_text, test=lambda got: json.loads(got) == H, shows="H, loaded",
             hint="write json.dumps(history, ...) and nothing else into the file"),
        Case("Korean written as is", _saved_text, test=lambda got: "개당 $24" in got and "\\u" not in got,
             shows="개당 $24, no \\u escapes", hint="json.dumps(..., ensure_ascii=False), file in UTF-8"),
        Case("indent=2: one value per line", _saved_text, test=lambda got: got.count("\n") > 3,
             shows="many lines", hint="json.dumps(history, ensure_ascii=False, indent=2): readable for people"),
        Case("creates parent folders", lambda f: _in_temp(lambda: [f(H, "runs/06/run.json"),
             Path("runs/06/run.json").is_file()][-1]), expected=True, hint="Path.mkdir(parents=True, exist_ok=True)"),
        Case("replaces an old file", lambda f: _saved_text(f, old="old"), test=lambda got: json.loads(got) == H,
             shows="H, loaded", hint="os.replace moves the new file onto the old one"),
        Case("no temporary file left", lambda f: _in_temp(lambda: [f(H, "run.json"), f(H, "run.json"),
             sorted(os.listdir("."))][-1]), expected=["run.json"],
             hint="move the temporary file onto the target: nothing else may stay in the folder"),
        Case("os.replace, same folder", _replaced_in_same_folder, expected=True,
             hint="write a temporary file in the target's folder, then os.replace it onto the target"),
        Case("unsavable: old file kept", _failed_save, expected=("old", ["run.json"]),
             hint="turn the history into JSON text before you create any file"),
    ]),
}


# ---- drivers: what `course check` runs for its hidden cases; each returns what the answer did, as plain data
def loop(f, replies, goal="What is 24 times 7?", max_steps=6, error=None):
    """The loop on a scripted model of `replies` (a scenario's name, or replies then a failing call with the
    message `error`): (answer, history, the messages of every model call)."""
    script = SCENARIOS[replies] if isinstance(replies, str) else [*replies, *[RuntimeError(error)] * bool(error)]
    answer, history, model = _run(f, script, max_steps, goal)
    return answer, history, model.calls


def repeats(f, reply, times, limit):
    """f on a history of the same `reply` `times` times (too long a history to send), with `limit`."""
    return f(_history(*[reply] * times), limit)


def env_cap(f, value, *args, **kwargs):
    """f(*args, **kwargs) with COURSE_MAX_STEPS set to `value` (None: unset)."""
    return _with_env(value, lambda: f(*args, **kwargs))


def saves(f, steps):
    """f(history, path) for each (history, path) of `steps` in a fresh folder (a path given as a list of parts is
    passed as a Path): after each, what it returned (or "raised <class>") and every file there with its text."""
    def go():
        done = []
        for history, path in copy.deepcopy(steps):
            try:
                got = f(history, Path(*path) if isinstance(path, list) else path)
            except NotImplementedError:
                raise
            except Exception as e:   # noqa: BLE001 - what it raised is what the case judges
                got = f"raised {type(e).__name__}"
            done.append((got, {p.as_posix(): p.read_text(encoding="utf-8", errors="replace")
                               for p in sorted(Path(".").rglob("*")) if p.is_file()}))
        return done
    return _in_temp(go)


def save_once(f, history, path):
    """f(history, path) in a fresh folder."""
    return _in_temp(lambda: f(copy.deepcopy(history), path))
