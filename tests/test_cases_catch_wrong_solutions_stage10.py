"""Stage 10: the visible cases catch plausible wrong solutions, and the reference solutions pass them.

As in ``test_cases_catch_wrong_solutions.py``: each ``make_*`` function with its defaults builds the reference
solution of ``solutions/10_memory_and_context_exercises.ipynb``, copied (the notebook is the source, and
``tests/test_exercises.py`` grades the notebook itself); each keyword switch turns on one plausible mistake.
A wrong solution must fail the visible check, on the case named next to it.
"""
from __future__ import annotations

import re

import pytest

from course_lib.memory import split_steps
from course_lib.tools import ToolError
from test_cases_catch_wrong_solutions import caught_on, failed, only_slips   # tests/ is on sys.path: pytest puts it there (rootdir mode)

ROLES = ("system", "user", "assistant", "tool")
AGENT_NOTES = ("Observation: ", "Your reply could not be used")


# ---- 10.1 group_steps
def make_group_steps(*, check_items=True, check_roles=True, fresh_head=True, boundary=("assistant",)):
    def group_steps(history):
        if not isinstance(history, list):
            raise ValueError(f"a history is a list of message dicts, not {type(history).__name__}")
        for i, m in enumerate(history):
            if check_items and not isinstance(m, dict):
                raise ValueError(f"history[{i}] is not a message")
            if check_roles and m.get("role") not in ROLES:
                raise ValueError(f"history[{i}] is not a message: a dict whose 'role' is one of {', '.join(ROLES)}")
        if not fresh_head and not any(m.get("role") == "assistant" for m in history):
            return history, []   # the slip: the input list itself as the head
        head, steps = [], []
        for m in history:
            if m.get("role") in boundary:
                steps.append([m])
            elif steps:
                steps[-1].append(m)
            else:
                head.append(m)
        return head, steps
    return group_steps


# ---- 10.2 trim_steps
def make_trim_steps(*, keep_ok=lambda k: type(k) is int and k >= 0, pin=True, notes=AGENT_NOTES,
                    slice_from_end=False):
    def trim_steps(history, keep):
        if not keep_ok(keep):
            raise ValueError(f"keep must be a whole number, 0 or more, not {keep!r}")
        head, steps = split_steps(history)
        kept_steps = steps[-keep:] if slice_from_end else steps[max(0, len(steps) - keep):]
        first = len(steps) - len(kept_steps)
        said = [(k, m) for k, step in enumerate(steps) for m in step
                if m["role"] == "user" and not str(m.get("content")).startswith(notes)]
        pinned = [said[-1][1]] if pin and said and said[-1][0] < first else []
        return head + pinned + [m for step in kept_steps for m in step]
    return trim_steps


def trim_by_messages(history, keep):
    """A cut by messages, not steps: keep the head and the last 2·keep messages (one call and one result each)."""
    if type(keep) is not int or keep < 0:
        raise ValueError("keep must be a whole number, 0 or more")
    head, steps = split_steps(history)
    rest = [m for step in steps for m in step]
    return head + (rest[-2 * keep:] if keep else [])


# ---- 10.3 remember
KEY_PREFIX = re.compile(r"\b(?:sk-|ghp_|AKIA)[A-Za-z0-9_-]{12,}")
LONG_RUN = re.compile(r"[A-Za-z0-9+/_=-]{32,}")


def make_remember(*, collapse=True, prefix=KEY_PREFIX, long_runs=True, quote=False, sql_text=False,
                  measure_raw=False):
    def looks_secret(text):
        mixed = lambda run: re.search("[a-z]", run) and re.search("[A-Z]", run) and re.search("[0-9]", run)
        return bool(prefix.search(text)) or long_runs and any(mixed(run) for run in LONG_RUN.findall(text))

    def remember(db, text):
        if not isinstance(text, str) or not text.strip():
            raise ToolError("text must be a non-empty sentence")
        if measure_raw and len(text) > 500:
            raise ToolError("the note is too long")
        text = " ".join(text.split()) if collapse else text
        if len(text) > 500:
            raise ToolError(f"the note is {len(text)} characters long; the limit is 500")
        if looks_secret(text):
            raise ToolError(f"refused {text!r}: it looks like a secret" if quote else "this looks like a secret")
        with db:
            if sql_text:
                found = db.execute(f"SELECT id FROM notes WHERE text = '{text}'").fetchone()
            else:
                found = db.execute("SELECT id FROM notes WHERE text = ?", (text,)).fetchone()
            if found:
                return f"Already remembered as #{found[0]}."
            cursor = db.execute("INSERT INTO notes (text) VALUES (?)", (text,))
        return f"Remembered as #{cursor.lastrowid}."
    return remember


# ---- 10.4 recall
def make_recall(*, escape=True, sql_text=False, newest_first=True, limit_ok=lambda n: type(n) is int,
                max_words=10):
    def recall(db, query, limit=5):
        if not isinstance(query, str) or len(query) > 200:
            raise ToolError("query must be a few words, at most 200 characters")
        words = (query.split() if sql_text else re.findall(r"\w+", query))[:max_words]
        if not words:
            raise ToolError("query has no words to look for")
        if not limit_ok(limit) or not 1 <= limit <= 10:
            raise ToolError("limit must be a whole number from 1 to 10")
        if sql_text:
            hits = " + ".join(f"(text LIKE '%{w}%')" for w in words)
            rows = db.execute(f"SELECT id, text FROM notes WHERE {hits} > 0 ORDER BY {hits} DESC, id DESC "
                              f"LIMIT {limit}").fetchall()
        else:
            patterns = ["%" + (re.sub(r"([\\%_])", r"\\\1", w) if escape else w) + "%" for w in words]
            like = "(text LIKE ? ESCAPE '\\')" if escape else "(text LIKE ?)"
            hits = " + ".join([like] * len(words))
            order = "id DESC" if newest_first else "id"
            rows = db.execute(f"SELECT id, text FROM notes WHERE {hits} > 0 ORDER BY {hits} DESC, {order} LIMIT ?",
                              [*patterns, *patterns, limit]).fetchall()
        if not rows:
            return f"No memory matches '{' '.join(words)}'."
        return "\n".join(f"#{number}: {text}" for number, text in rows)
    return recall


REFERENCES = {"10.1": make_group_steps, "10.2": make_trim_steps, "10.3": make_remember, "10.4": make_recall}


@pytest.mark.parametrize("exercise_id", sorted(REFERENCES))
def test_the_reference_solution_passes_every_visible_case(exercise_id):
    assert failed(exercise_id, REFERENCES[exercise_id]()) == []


WRONG = [
    # 10.1 a step starts at every assistant message only; every item is a dict; the head is a new list
    ("10.1", lambda: make_group_steps(boundary=("assistant", "user")), "a chat: head and steps"),
    ("10.1", lambda: make_group_steps(check_roles=False), "the role 'robot'"),
    ("10.1", lambda: make_group_steps(check_items=False), "a string among the messages"),
    ("10.1", lambda: make_group_steps(fresh_head=False), "a new head list"),
    # 10.2 the classic steps[-0:]; the question forgotten; notes taken for the user; True is an int; messages
    ("10.2", lambda: make_trim_steps(slice_from_end=True), "keep 0: the question stays"),
    ("10.2", lambda: make_trim_steps(pin=False), "the question moves up"),
    ("10.2", lambda: make_trim_steps(notes=("Observation: ",)), "an observation is not the user's"),
    ("10.2", lambda: make_trim_steps(keep_ok=lambda k: isinstance(k, int) and k >= 0), "keep=True"),
    ("10.2", lambda: trim_by_messages, "every result follows its call"),
    ("10.2", lambda: trim_by_messages, "the stand-in accepts every window"),
    # 10.3 SQL built from the text; spaces; only prefixes; the key quoted back; the length before collapsing
    ("10.3", lambda: make_remember(sql_text=True), "SQL in the note is only text"),
    ("10.3", lambda: make_remember(collapse=False), "the same note, other spaces"),
    ("10.3", lambda: make_remember(long_runs=False), "a long token of mixed characters"),
    ("10.3", lambda: make_remember(quote=True), "the refusal does not repeat the key"),
    ("10.3", lambda: make_remember(prefix=re.compile(r"(?:sk-|ghp_|AKIA)[A-Za-z0-9_-]{12,}")),
     "'task-management' is no key"),
    ("10.3", lambda: make_remember(measure_raw=True), "500 characters, spaces around"),
    # 10.4 LIKE's wildcards; SQL built from words split at spaces; oldest first; True as a limit; every word used
    ("10.4", lambda: make_recall(escape=False), "_ is not a wildcard"),
    ("10.4", lambda: make_recall(sql_text=True), "SQL in the query is only text"),
    ("10.4", lambda: make_recall(newest_first=False), "newest first among equals"),
    ("10.4", lambda: make_recall(limit_ok=lambda n: isinstance(n, int)), "limit=True"),
    ("10.4", lambda: make_recall(max_words=None), "at most 10 words are used"),
]


@pytest.mark.parametrize("exercise_id, make, label", WRONG, ids=[f"{e}-{label}" for e, _, label in WRONG])
def test_a_plausible_wrong_solution_fails_on_the_case_made_for_it(exercise_id, make, label):
    caught_on(exercise_id, make, label)


def test_the_wrong_solutions_above_are_plausible_slips_not_broken_code():
    only_slips(WRONG)


def test_every_exercise_of_stage_10_has_a_wrong_solution_here():
    assert {e for e, _, _ in WRONG} == set(REFERENCES) == {"10.1", "10.2", "10.3", "10.4"}
