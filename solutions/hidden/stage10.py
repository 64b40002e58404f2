"""Hidden cases of stage 10 (see course_lib/courseware/hidden.py): many histories, windows, notes and queries."""
import random
import re
import string

from course_lib.courseware.checks import Case
from course_lib.courseware.exercises.stage10 import (CHAT, last_step_grown, names_where, names_used, recall_in,
                                                     refused, refused_windows, remembering, split_and_after,
                                                     windows_and_after)
from course_lib.courseware.observe import call, using
from course_lib.memory import split_steps, trim_window
from course_lib.tools import ToolError


def _history(rng):
    """A history as the agent builds it, ready for the next call: system prompt, goal, then steps of native tool
    calls (answered by id), text-protocol replies with an observation or a correction, or a chat turn."""
    history = [{"role": "system", "content": "(system prompt)"}, {"role": "user", "content": "the goal"}]
    for n in range(rng.randint(0, 7)):
        kind = rng.choice(["tools", "tools", "observation", "correction", "question"])
        if kind == "tools":
            asked = [{"id": f"h{n}_{k}", "name": "lookup", "args": {"topic": "단가"}} for k in range(rng.randint(1, 3))]
            history.append({"role": "assistant", "content": rng.choice(["", "Let me look."]), "tool_calls": asked})
            history += [{"role": "tool", "tool_call_id": c["id"], "name": "lookup", "content": "개당 $24",
                         "is_error": rng.random() < 0.3} for c in asked]
        else:
            said = {"observation": "Observation: 168", "question": f"그럼 {n}개는요? (And {n}?)",
                    "correction": "Your reply could not be used: no JSON object found."}[kind]
            history += [{"role": "assistant", "content": f"reply {n}"}, {"role": "user", "content": said}]
    return history


def _histories(seed, count):
    rng = random.Random(seed)
    return [_history(rng) for _ in range(count)]


def _steps(history) -> int:
    return len(split_steps(history)[1])


# ---- 10.2: the window as course_lib's trim_window keeps it (the same rules)
def _windows(history, most):
    return [trim_window(history, keep_last=keep) for keep in range(most + 1)]


# ---- 10.3: a refusal that repeats no part of the secret, and saves nothing
SEQUENCE = ("회의는 화요일", "budget: 255,000 won", "회의는\t화요일 ", "a third note")
COUNTED = ["Remembered as #1.", "Remembered as #2.", "Already remembered as #1.", "Remembered as #3."]
ODD = ['He said "50% off" -- really?', "O'Brien's 100% sure; --", "😀 웃는 얼굴"]
SECRETS = ["token ghp_16C7e42F292c6912E7710c838347Ae178B4a", "sk-ant-api03-Zm9vYmFyYmF6cXV4MTIzNDU2",
           "the access key AKIA2E0A8F3B244C9986 is old", "password=Q2hhbmdlTWVOb3cxMjM0NTY3ODkwYWJjZGVm"]
FINE = ["sk-short", "ask-me-anything-you-want-to-know", "0123456789abcdef0123456789abcdef",
        "PYTHONHASHSEED=0 keeps the outputs stable"]
WORDS = " ".join(["word"] * 100)   # 499 characters


def _refused_quietly(secret):
    return lambda got: (got[0] == "ToolError" and got[2] == []
                        and not any(len(part) >= 12 and part in got[1] for part in secret.split()))


# ---- 10.4: the exercise's rules, written plainly in Python
_FOLD = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)   # LIKE folds English letters only


def _expected(notes, query, limit=5):
    words = re.findall(r"\w+", query)[:10]
    scored = []
    for number, text in enumerate(notes, 1):
        matched = sum(word.translate(_FOLD) in text.translate(_FOLD) for word in words)
        if matched:
            scored.append((-matched, -number, f"#{number}: {text}"))
    lines = [line for *_, line in sorted(scored)][:limit]
    return "\n".join(lines) if lines else f"No memory matches '{' '.join(words)}'."


POOL = ["price", "Price", "PRICE", "부산", "부산은", "서울", "a_b", "aXb", "50%", "100", "x\\y", "naïve", "Busan",
        "list", "prices.txt", "O'Brien", "--", ";", "DROP", "table", "회의는", "화요일"]


def _queries():
    rng, found = random.Random(104), []
    for _ in range(150):
        notes = [" ".join(rng.choice(POOL) for _ in range(rng.randint(1, 4))) for _ in range(rng.randint(1, 9))]
        query = " ".join(rng.choice(POOL + ["?", "'", "%"]) for _ in range(rng.randint(1, 4)))
        found.append((notes, query, rng.randint(1, 10)))
    return found


def _recall_case(number, notes, query, limit):
    label, probe = f"random table {number}: {query!r}, limit {limit}", using(recall_in, notes, query, limit)
    if not re.findall(r"\w+", query):
        return Case(label, probe, raises=ToolError, hint="a query without words is refused")
    return Case(label, probe, expected=_expected(notes, query, limit))


GROWN = _histories(7, 1)[0] + [{"role": "assistant", "content": "done"}]

HIDDEN = {
    "10.1": [
        *[Case(f"random history {n} ({len(h)} messages)", using(split_and_after, h), expected=[split_steps(h), h],
               hint="the same split as the exercise describes, and the history left as it was")
          for n, h in enumerate(_histories(101, 300), 1)],
        Case("each step is a new list", using(last_step_grown, GROWN), expected=[len(GROWN), len(GROWN) + 1],
             hint="adding to a step you returned must not change the history"),
        *[Case(f"{kind} is not a history", call(bad), raises=ValueError)
          for kind, bad in [("a tuple", tuple(CHAT)), ("a dict", {"role": "user"}), ("42", 42)]],
        *[Case(f"the message names {where}", using(names_where, bad, where), expected=f"names {where}")
          for bad, where in [([CHAT[0], CHAT[1], {"role": None}], "history[2]"), ([["user", "hi"]], "history[0]"),
                             ([CHAT[0], {"role": "USER", "content": "hi"}], "history[1]")]],
    ],
    "10.2": [
        Case("course_lib's trim_window is not called", using(names_used), test=lambda got: "trim_window" not in got,
             shows="no trim_window among the names", hint="the exercise asks you to write the window yourself"),
        *[Case(f"random history {n}: keep 0 to {_steps(h) + 1}", using(windows_and_after, h, _steps(h) + 1),
               expected=[_windows(h, _steps(h) + 1), h], hint="whole steps, the user's latest message kept")
          for n, h in enumerate(_histories(102, 200), 1)],
        *[Case(f"the stand-in accepts random history {n}", using(refused_windows, h, _steps(h)), expected=[])
          for n, h in enumerate(_histories(103, 5), 1)],
    ],
    "10.3": [
        Case("numbers count up; a repeat keeps #1", using(remembering, *SEQUENCE),
             expected=[*COUNTED, ["회의는 화요일", "budget: 255,000 won", "a third note"]]),
        Case("quotes, % and emoji are only text", using(remembering, *SEQUENCE, *ODD),
             expected=[*COUNTED, "Remembered as #4.", "Remembered as #5.", "Remembered as #6.",
                       ["회의는 화요일", "budget: 255,000 won", "a third note", *ODD]]),
        *[Case(f"secret refused, not repeated, not saved: {secret[:24]}…", using(refused, secret),
               test=_refused_quietly(secret), shows="ToolError, no part of the secret in it, nothing saved")
          for secret in SECRETS],
        *[Case(f"{fine!r} is no secret", using(remembering, fine), expected=["Remembered as #1.", [fine]])
          for fine in FINE],
        Case("499 characters are fine", using(remembering, WORDS), expected=["Remembered as #1.", [WORDS]]),
        *[Case(f"{kind} is refused", using(remembering, bad), raises=ToolError)
          for kind, bad in [("a list", ["a", "list"]), ("42", 42), ("600 characters", "z" * 600)]],
    ],
    "10.4": [_recall_case(n, *asked) for n, asked in enumerate(_queries(), 1)],
}

# Wrong solutions that pass every visible case and fail a hidden one (the old hidden-test cell failed them too):
# (exercise, the hidden case's label it fails, [(old, new) edits of the solution cell], the mistake in a few words)
CAUGHT = [
    ("10.1", "the message names history[0]",
     [('        if not isinstance(m, dict) or m.get("role") not in roles:\n',
       '        if not isinstance(m, dict):\n            raise ValueError("every message must be a dict")\n'
       '        if m.get("role") not in roles:\n')], "a message that is no dict: no position named"),
    ("10.1", "the message names history[1]",
     [('m.get("role") not in roles', 'str(m.get("role")).lower() not in roles')],
     "roles in any case: USER let through"),
    ("10.2", "course_lib's trim_window is not called",
     [("    head, steps = split_steps(history)\n",
       "    from course_lib.memory import trim_window\n    return trim_window(history, keep_last=keep)\n")],
     "course_lib's trim_window does the work"),
    ("10.2", "random history 4: keep 0 to 7", [("[m for step in steps[first:] for m in step]",
                                                 "[m for step in steps[first:] for m in step[:3]]")],
     "a step taken as a call and at most two results (the visible ones have two)"),
    ("10.3", "a list is refused", [("if not isinstance(text, str) or not text.strip():",
                                    "if not text or not text.strip():")], "no str check: a list reaches .strip()"),
    ("10.3", "secret refused, not repeated, not saved: password=Q2hhbmdlTWVOb3c…",
     [("    if key_prefix or mixed_runs:                  # say why, without repeating the text\n",
       "    if mixed_runs:\n        raise ToolError(f\"{mixed_runs[0]!r} looks like a token; it is not saved\")\n"
       "    if key_prefix:\n")], "the refusal of a long run quotes it"),
    ("10.4", "random table 8: 'Busan', limit 4",
     [('words = re.findall(r"\\w+", query)[:10]', 'words = re.findall(r"\\w+", query.lower())[:10]')],
     "the words lowered: the no-match message changes them"),
    ("10.4", 'random table 10: "O\'Brien prices.txt list", limit 9',
     [('re.findall(r"\\w+", query)[:10]', '[w for w in (re.sub(r"\\W", "", w) for w in query.split()) if w][:10]')],
     "words split at spaces, punctuation dropped inside them"),
]
