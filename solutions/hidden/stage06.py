"""Hidden cases of stage 06 (see course_lib/courseware/hidden.py): the loop, repeats, the step cap, transcripts."""
import json
from pathlib import Path

from course_lib import default_tools
from course_lib.courseware.checks import Case
from course_lib.courseware.exercises.stage06 import env_cap, env_cap_error, loop, repeats, save_once, saves
from course_lib.courseware.observe import call, using
from course_lib.courseware.scenarios import SCENARIOS
from course_lib.describe import build_system_prompt


def _act(tool, **args):
    return json.dumps({"tool": tool, "args": args}, ensure_ascii=False)


# ---- 06.1 run_loop: loop(...) gives (answer, history, the messages of each model call)
TRIP = SCENARIOS["trip"]
TRIP_ANSWER = json.loads(TRIP["replies"][-1])["args"]["answer"]
SYSTEM = {"role": "system", "content": build_system_prompt(default_tools())}
LOOKUP = _act("lookup", topic="단가")
CORRECTION = "Your reply could not be used: "


def _corrections(history):
    return sum(isinstance(m, dict) and str(m.get("content", "")).startswith(CORRECTION) for m in history)


# ---- 06.2 repeated_call
A = _act("search_docs", query="규정")


def _hist(*replies):
    messages = [{"role": "system", "content": "prompt"}, {"role": "user", "content": "goal"}]
    for reply in replies:
        messages += [{"role": "assistant", "content": reply}, {"role": "user", "content": "Observation: ..."}]
    return messages


# ---- 06.3 step_cap_from_env
VAR = "COURSE_MAX_STEPS"
BAD_CAPS = ("-3", "+5", "1_000", "5.0", "1e3", "-0", "0x10", "²", "six", "3 4", "0", "00")

# ---- 06.4 save_transcript: saves(...) gives, after each save, (what it returned, {file: text})
HISTORY = [{"role": "user", "content": "출장비 규정 🧳"}, {"role": "assistant", "content": _act("finish", answer="끝")}]
C = ["a", "b", "c.json"]   # Path("a") / "b" / "c.json"


def _last_files(got):
    return got[-1][1]


HIDDEN = {
    "06.1": [
        Case("trip: the finish answer", using(loop, "trip"), test=lambda got: got[0] == TRIP_ANSWER,
             shows="the trip's finish answer", hint="on finish, return the answer from the parsed args"),
        Case("trip: message 0 is the system prompt", using(loop, "trip"), test=lambda got: got[1][0] == SYSTEM,
             shows="build_system_prompt(tools) as 'system'"),
        Case("trip: message 1 is the goal", using(loop, "trip"),
             test=lambda got: got[1][1] == {"role": "user", "content": TRIP["goal"]}, shows="the goal as 'user'"),
        Case("trip: two tool calls, then finish", using(loop, "trip"),
             test=lambda got: len(got[1]) == 7 and got[1][3]["content"].startswith("Observation: "),
             shows="7 messages, an observation at 3",
             hint="a reply with prose before its JSON is still one action"),
        Case("max_steps=1: finish on the first step", using(loop, [_act("finish", answer="hi")], "Say hi.", 1),
             test=lambda got: (got[0], len(got[1])) == ("hi", 3), shows='("hi", 3 messages)'),
        Case("max_steps=2: the cap counts model calls",
             using(loop, [LOOKUP] * 2 + [_act("finish", answer="too late")], "Price?", 2),
             test=lambda got: got[0].startswith("Stopped") and len(got[2]) == 2 and len(got[1]) == 6,
             shows='"Stopped …", 2 calls, 6 messages', hint="max_steps is the number of model calls"),
        Case("the model sees the observation", using(loop, [LOOKUP, _act("finish", answer="ok")], "Price?"),
             test=lambda got: got[2][1][-1] == {"role": "user", "content": "Observation: 개당 $24"},
             shows="call 2 ends with the observation"),
        Case("a failing API: the answer names it", using(loop, [], "Hi", error="API down"),
             test=lambda got: got[0].startswith("The model call failed: ") and "API down" in got[0],
             shows='"The model call failed: …API down…"', hint="put the ModelError's message in the answer"),
        Case("a failing API adds nothing", using(loop, [], "Hi", error="API down"), test=lambda got: len(got[1]) == 2,
             shows="2 messages (system, goal)"),
        Case("four unusable replies, four corrections",
             using(loop, ["no JSON here"] * 4 + [_act("finish", answer="done")], "Hi", 5),
             test=lambda got: got[0] == "done" and _corrections(got[1]) == 4, shows='"done", 4 corrections',
             hint="every unusable reply gets a correction, however many come in a row"),
        *[Case(f"max_steps={bad!r}", using(loop, [_act("finish", answer="x")], "Hi", bad), raises=ValueError,
               hint="max_steps must be an int (not a bool) of at least 1")
          for bad in (0, -1, True, 2.5, None, "6")],
    ],
    "06.2": [
        Case("limit 4: four same calls", call(_hist(A, A, A, A), 4), expected=True),
        Case("limit 4: only three", call(_hist(A, A, A), 4), expected=False,
             hint="use the limit you are given, not a fixed 3"),
        Case("limit 2", call(_hist(A, A), 2), expected=True),
        Case("missing args and {} are the same call",
             call(_hist(_act("list_files"), '{"tool": "list_files"}', '{"tool": "list_files", "args": {}}'), 3),
             expected=True, hint="compare what parse_reply finds"),
        Case("escaped Korean is the same text",
             call(_hist(A, A, r'{"tool": "search_docs", "args": {"query": "\uaddc\uc815"}}'), 3), expected=True),
        Case("a draft inside <think> is not the call",
             call(_hist(A, A, f"<think>{_act('lookup', topic='x')}</think>\n{A}"), 3), expected=True),
        Case("another tool, the same args", call(_hist(A, A, _act("lookup", query="규정")), 3), expected=False,
             hint="a call is the tool and its args together"),
        Case("the last message need not be an observation", call(_hist(A, A, A)[:-1], 3), expected=True),
        Case("user messages are not the model's calls", call([{"role": "user", "content": A}] * 5, 2),
             expected=False),
        Case("no replies yet", call(_hist(), 2), expected=False),
        Case("an empty history", call([], 2), expected=False),
        Case("a str is not a history", call("not a list", 2), expected=False),
        Case("a dict is not a history", call({"role": "assistant"}, 2), expected=False),
        Case("a long history (2000 replies)", using(repeats, A, 2000, 3), expected=True),
        *[Case(f"limit {bad!r}", call(_hist(A, A, A), bad), raises=ValueError,
               hint="limit must be an int (not a bool) of at least 2") for bad in (0, 1, -3, True, 2.5, None, "3")],
    ],
    "06.3": [
        Case("unset: the default given", using(env_cap, None, default=10), expected=10),
        Case("blank: the default (given by position)", using(env_cap, "   ", 3), expected=3),
        Case('"1" is the smallest cap', using(env_cap, "1"), expected=1, hint="a cap of 1 is allowed"),
        Case('"007": leading zeros are digits', using(env_cap, "007"), expected=7),
        Case('"\\t40 ": tabs around the value', using(env_cap, "\t40 "), expected=40),
        Case('"5" gives an int', using(env_cap, "5"), expected=5, hint="return int(raw), not the text"),
        *[Case(f"{bad!r}: a ValueError naming both", using(env_cap_error, bad),
               test=lambda got, bad=bad: isinstance(got, str) and VAR in got and bad in got,
               shows=f"a message with {VAR} and {bad!r}", hint="raise ValueError naming the variable and its value")
          for bad in BAD_CAPS],
    ],
    "06.4": [
        Case("a Path argument: returns it", using(saves, [(HISTORY, C)]),
             test=lambda got: isinstance(got[0][0], Path) and got[0][0] == Path(*C), shows="Path('a/b/c.json')"),
        Case("Korean and emoji written as they are", using(saves, [(HISTORY, C)]),
             test=lambda got: json.loads(_last_files(got)["a/b/c.json"]) == HISTORY
             and "출장비 규정 🧳" in _last_files(got)["a/b/c.json"], shows="the history, 🧳 as is"),
        Case("indent=2: one value per line", using(saves, [(HISTORY, C)]),
             test=lambda got: _last_files(got)["a/b/c.json"].count("\n") > 3, shows="many lines"),
        Case("a str path gives a Path", using(saves, [([], "empty.json")]),
             test=lambda got: isinstance(got[0][0], Path) and got[0][0] == Path("empty.json"),
             shows="Path('empty.json')"),
        Case("an empty history is []", using(saves, [([], "empty.json")]),
             test=lambda got: json.loads(_last_files(got)["empty.json"]) == [], shows="[] in empty.json"),
        Case("saving again leaves no temporary files", using(saves, [(HISTORY, C)] + [(HISTORY, "a/b/c.json")] * 3),
             test=lambda got: sorted(_last_files(got)) == ["a/b/c.json"], shows="only a/b/c.json"),
        Case("a set cannot become JSON", using(save_once, [{"tags": {"a", "b"}}], "new.json"), raises=TypeError),
        Case("a failed save creates no file",
             using(saves, [(HISTORY, C), ([], "empty.json"), ([{"tags": {"a", "b"}}], "new.json")]),
             test=lambda got: str(got[-1][0]).startswith("raised") and sorted(_last_files(got)) == ["a/b/c.json",
                                                                                               "empty.json"],
             shows="TypeError, no new file", hint="turn the history into JSON text before you create any file"),
        Case("the new content replaces the old", using(saves, [(HISTORY, C), (HISTORY[:1], "a/b/c.json")]),
             test=lambda got: json.loads(_last_files(got)["a/b/c.json"]) == HISTORY[:1], shows="the second history"),
    ],
}

# Wrong solutions that pass every visible case and fail a hidden one (the old hidden-test cell failed them too):
# (exercise, the hidden case's label it fails, [(old, new) edits of the solution cell], the mistake in a few words)
CAUGHT = [
    ("06.1", "four unusable replies, four corrections",
     [("    for _ in range(max_steps):\n", "    bad = 0\n    for _ in range(max_steps):\n"),
      ("        if not parsed.ok:\n", "        if not parsed.ok:\n            bad += 1\n            if bad == 3:\n"
       "                return \"Stopped: three unusable replies.\", history\n")], "gives up after 3 bad replies"),
    ("06.1", "a failing API: the answer names it", [('f"The model call failed: {e}"',
                                                     '"The model call failed: no reply came back."')],
     "the error's message left out"),
    ("06.1", "max_steps=-1", [("max_steps < 1", "max_steps == 0")], "only 0 refused"),
    ("06.2", "limit 4: only three", [("    if len(replies) < limit:", "    if len(replies) < 3:"),
                                     ("replies[-limit:]", "replies[-3:]")], "a fixed limit of 3"),
    ("06.2", "another tool, the same args", [("calls.append((parsed.tool, parsed.args))",
                                              "calls.append(parsed.args)")], "args compared without the tool"),
    ("06.3", '"1" is the smallest cap', [("int(raw) < 1", "int(raw) <= 1")], "1 refused"),
    ("06.3", "'0': a ValueError naming both",
     [(" or int(raw) < 1:", ":"), ('not {raw!r}")\n', 'not {raw!r}")\n    if int(raw) < 1:\n'
                                  '        raise ValueError("COURSE_MAX_STEPS must be at least 1")\n')],
     "the message for 0 without the value"),
    ("06.4", "a Path argument: returns it",
     [("    path = Path(path)\n", ""), ("    path.parent.mkdir", "    Path(path).parent.mkdir"),
      ('    with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=path.parent, suffix=".tmp",\n'
       "                                     delete=False) as tmp:",
       '    with open(path + ".tmp", "w", encoding="utf-8") as tmp:'),
      ("os.replace(tmp.name, path)", 'os.replace(path + ".tmp", path)'),
      ("    return path\n", "    return Path(path)\n")],
     "path + '.tmp': a str only"),
    ("06.4", "a failed save creates no file",
     [("    path.parent.mkdir(parents=True, exist_ok=True)\n", ""),
      ("    text = json.dumps(", "    path.parent.mkdir(parents=True, exist_ok=True)\n"
       "    path.touch()   # os.replace needs a file to replace\n    text = json.dumps(")], "the target touched first"),
]
