"""Stage 10 · memory and context: a history in whole steps, a window of the newest steps, and notes in SQLite."""
from __future__ import annotations

import copy
import sqlite3

from ..checks import Case, Exercise
from ...models.anthropic import history_to_anthropic
from ...models.openai import history_to_openai
from ...tools import ToolError
from .stage08 import standin_problems

# ---- histories as the agent of stage 06 leaves them, ready for the next model call
SYSTEM = {"role": "system", "content": "(system prompt)"}
GOAL = {"role": "user", "content": "일곱 개 사면 얼마예요? (What do seven units cost?)"}


def user(text: str) -> dict:
    return {"role": "user", "content": text}


def says(text: str) -> dict:
    return {"role": "assistant", "content": text}


def asks(*calls: tuple, text: str = "") -> dict:
    """An assistant message with native tool calls, each given as (id, tool, args)."""
    return {"role": "assistant", "content": text,
            "tool_calls": [{"id": i, "name": tool, "args": args} for i, tool, args in calls]}


def result(call_id: str, content: str, tool: str = "lookup", error: bool = False) -> dict:
    return {"role": "tool", "tool_call_id": call_id, "name": tool, "content": content, "is_error": error}


TWELVE, TWENTY = user("그럼 열두 개는요? (And twelve?)"), user("그럼 스무 개는요? (And twenty?)")
CHAT = [SYSTEM, GOAL,   # five steps; the user's latest question is the last message
        asks(("c1", "lookup", {"topic": "단가"})), result("c1", "개당 $24"),
        asks(("c2", "calculator", {"expression": "24*7"})), result("c2", "168", "calculator"),
        says("Seven units cost $168."), TWELVE,
        asks(("c3", "calculator", {"expression": "24*12"})), result("c3", "288", "calculator"),
        says("Twelve units cost $288."), TWENTY]
PARALLEL = [SYSTEM, GOAL,   # two calls in one step, one of them failed
            asks(("p1", "lookup", {"topic": "단가"}), ("p2", "lookup", {"topic": "할인"}), text="Both at once."),
            result("p1", "개당 $24"), result("p2", "Error: nothing is known about '할인'", error=True),
            asks(("p3", "calculator", {"expression": "24*7"})), result("p3", "168", "calculator"),
            says("Seven cost $168; no discount is listed."), user("Thanks! And eight?")]
TEXT = [SYSTEM, GOAL,   # the text protocol: every user message after the goal is the agent's own note
        says('{"tool": "lookup", "args": {"topic": "단가"}}'), user("Observation: 개당 $24"),
        says('{"tool": "calculator", "args": {"expression": "24*7"'),
        user("Your reply could not be used: invalid JSON. Reply with one JSON object."),
        says('{"tool": "calculator", "args": {"expression": "24*7"}}'), user("Observation: 168")]
MOVED = CHAT[:8] + [asks(("c3", "calculator", {"expression": "24*12"})), result("c3", "288", "calculator"),
                    asks(("c4", "lookup", {"topic": "배송"})), result("c4", "Free shipping on orders over $500")]
SAME = [SYSTEM, GOAL, says("ok"), TEXT[3], says("ok"), TEXT[7]]   # two equal replies: equal dicts, two steps
NOTED = [SYSTEM, GOAL, CHAT[6], TWELVE] + TEXT[2:]   # the question, then three steps that end in the agent's notes
HEAD, AT, AU = ["system", "user"], ["assistant", "tool"], ["assistant", "user"]   # roles of a head, of steps
LONG = [SYSTEM, GOAL] + [m for n in range(10_000)
                         for m in (asks((f"x{n}", "lookup", {"topic": "단가"})), result(f"x{n}", "개당 $24"))]


def on_copy(f, *args):
    """Call the learner's function on copies: a function that changes its input cannot spoil later cases."""
    return f(*copy.deepcopy(args))


KNOWN = [m for history in (CHAT, PARALLEL, TEXT, MOVED) for m in history]
NAMES = {SYSTEM["content"]: "system", GOAL["content"]: "goal", TWELVE["content"]: "question 12",
         TWENTY["content"]: "question 20", PARALLEL[-1]["content"]: "question 8", TEXT[3]["content"]: "observation 1",
         TEXT[5]["content"]: "correction", TEXT[7]["content"]: "observation 2", CHAT[6]["content"]: "answer 7",
         CHAT[10]["content"]: "answer 12", PARALLEL[7]["content"]: "answer 7 and 8", TEXT[2]["content"]: "reply 1",
         TEXT[4]["content"]: "reply 2 (broken)", TEXT[6]["content"]: "reply 3"}


def tag(m) -> str:
    """A message in two words: 'goal', 'call c3', 'result c3', 'answer', 'question 12'; '(changed)' if altered."""
    if not isinstance(m, dict):
        return f"not a message: {m!r}"
    if m.get("tool_calls"):
        text = "call " + ",".join(str(c.get("id")) for c in m["tool_calls"])
    elif m.get("role") == "tool":
        text = f"result {m.get('tool_call_id')}"
    else:
        text = NAMES.get(m.get("content"), "answer" if m.get("role") == "assistant" else str(m.get("role")))
    return text if m in KNOWN else text + " (changed)"


def tags(messages) -> list:   # what is not a list stays as it is, for the table
    return [tag(m) for m in messages] if isinstance(messages, list) else messages


def window(f, history, keep) -> list:
    """What ``trim_steps`` kept, one tag per message."""
    return tags(on_copy(f, history, keep))


# ---- 10.1 group_steps
def grouped(f, history) -> list:
    """[head roles, [step roles, ...]]: a readable shape of what ``group_steps`` returned."""
    roles = lambda messages: [m["role"] for m in messages] if isinstance(messages, list) else messages
    head, steps = on_copy(f, history)
    return [roles(head), [roles(step) for step in steps]]


def untouched(f, history, *args) -> str:
    kept = copy.deepcopy(history)
    f(history, *args)
    return "unchanged" if history == kept else "changed"


def names_where(f, history, where: str) -> str:
    try:
        f(history)
    except ValueError as e:
        return f"names {where}" if where in str(e) else f"does not name {where}: {e}"[:70]
    return "no ValueError"


def joined_back(f) -> bool:
    head, steps = f(list(PARALLEL))
    return head + [m for step in steps for m in step] == PARALLEL


def fresh(f, history, *args) -> str:   # a new list, or the input list itself (from group_steps: as the head)
    got = f(history, *args)
    return "the input list itself" if any(x is history for x in (got, *got[:1])) else "a new list"


# ---- 10.2 trim_steps
def protocol_problems(history) -> list[str]:
    """What an API would refuse in ``history``: a tool result with no call just before it, a call left unanswered."""
    problems, waiting = [], set()
    for i, m in enumerate(history):
        if m["role"] == "tool" and m.get("tool_call_id") not in waiting:
            problems.append(f"[{i}] answers {m.get('tool_call_id')!r}, which no call just before it made")
        waiting.discard(m.get("tool_call_id"))
        if m["role"] == "assistant" or i == len(history) - 1:
            problems += [f"call {c!r} has no result" for c in sorted(waiting)]
            waiting = {c["id"] for c in m.get("tool_calls") or []} if m["role"] == "assistant" else set()
    return problems


def every_window_keeps_the_protocol(f) -> list[str]:
    return [f"keep={k}: {p}" for history in (CHAT, PARALLEL, MOVED) for k in range(6)
            for p in protocol_problems(on_copy(f, history, k))]


def both_apis(f) -> list[str]:
    """What the local stand-in server (127.0.0.1; not a model, not a real API) refuses in each window."""
    problems = []
    for keep in range(4):
        kept = on_copy(f, PARALLEL, keep)
        for api, messages in (("Anthropic", history_to_anthropic(kept)[1]), ("OpenAI", history_to_openai(kept))):
            problems += [f"keep={keep}, {api}: {p}" for p in standin_problems(api.lower(), messages)]
    return problems


# ---- 10.3 remember and 10.4 recall: notes in SQLite (a database in memory: nothing is written to disk)
def new_notes() -> sqlite3.Connection:
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE notes (id INTEGER PRIMARY KEY AUTOINCREMENT, text TEXT NOT NULL)")
    return db


def saved(db) -> list[str]:
    return [text for (text,) in db.execute("SELECT text FROM notes ORDER BY id")]


def remembering(f, *texts) -> list:
    """What each call of ``remember`` answered, then the texts in the table."""
    db = new_notes()
    return [f(db, text) for text in texts] + [saved(db)]


def refusing(f) -> list:   # [does remember's refusal of KEY_TEXT repeat the key, the table after it]
    db = new_notes()
    try:
        f(db, KEY_TEXT)
    except ToolError as e:
        return ["repeats the key" if KEY in str(e) else "does not repeat it", saved(db)]
    return ["no ToolError", saved(db)]


KEY = "sk-proj-AbCdEf0123456789XyZ"   # shaped like an OpenAI key, made up
COMMIT = "512300b9a3c0f7e2d1a4b5c6d7e8f90123456789"   # long, but lower case and digits only
KEY_TEXT = f"My OpenAI key is {KEY}"
NOTES = ["The unit price is $24 (개당 $24).", "The user lives in Busan (부산에 산다).",
         "Shipping is free on orders over $500.", "The price list for Busan is in prices.txt.",
         "a_b costs 5", "aXb costs 6", "Robert'); DROP TABLE notes; --"]


def recalling(query, limit=None, notes=NOTES):
    def call(f):   # recall on a table of its own, and a word if it changed the table
        db = new_notes()
        db.executemany("INSERT INTO notes (text) VALUES (?)", [(n,) for n in notes])
        answer = f(db, query) if limit is None else f(db, query, limit)
        return answer if saved(db) == notes else f"{answer!r}, but the table changed"
    return call


BEST = ["Busan weather", "Busan price list", "Busan tea"]   # the best match is neither the oldest nor the newest
ONCE, TWICE = ["Price: BUSAN", "busan, busan, busan"], ["price", "tea"]
WORDS_12 = "one two three four five six seven eight nine ten eleven twelve"
REMEMBERED = "Remembered as #1."
SECRET_HINT = "refuse text with a key prefix (sk-, ghp_, AKIA) followed by 12+ letters, digits, _ or -"
RUN_HINT = "refuse a run of 32+ characters from A-Za-z0-9+/_=- that mixes upper case, lower case and digits"

# Finished functions the notebook hands over on purpose: 10.2 may use split_steps (10.1 is its own version).
MAY_USE = {"10.2": {"split_steps"}}
WITHHELD = {"10.1": {"split_steps"}}   # when 10.1 is graded, the worker's split_steps refuses

EXERCISES = {
    "10.1": Exercise("A history in whole steps", [
        Case("a chat: head and steps", lambda f: grouped(f, CHAT),
             expected=[HEAD, [AT, AT, AU, AT, AU]],
             hint="each step starts at an assistant message and runs up to the next one"),
        Case("two results in one step", lambda f: grouped(f, PARALLEL),
             expected=[HEAD, [["assistant", "tool", "tool"], AT, AU]],
             hint="every message after an assistant message belongs to its step, up to the next assistant"),
        Case("text protocol: notes stay in their step", lambda f: grouped(f, TEXT), expected=[HEAD, [AU] * 3],
             hint="an observation or a correction is a user message: it joins the step before it"),
        Case("two equal replies ('ok')", lambda f: grouped(f, SAME), expected=[HEAD, [AU, AU]],
             hint="equal messages are still two messages: no history.index(m), which finds the first equal one"),
        Case("no assistant message yet", lambda f: grouped(f, [SYSTEM, GOAL]), expected=[HEAD, []],
             hint="with no assistant message, everything is the head and there are no steps"),
        Case("starts with an assistant", lambda f: grouped(f, CHAT[2:6]), expected=[[], [AT, AT]],
             hint="the head is what comes before the first assistant message: here nothing"),
        Case("an empty history", lambda f: on_copy(f, []), expected=([], []), hint="return ([], []): a tuple"),
        Case("the same messages, in order", joined_back, expected=True,
             hint="head + all steps joined must give back the history, message for message"),
        Case("the history is not changed", lambda f: untouched(f, copy.deepcopy(CHAT)), expected="unchanged",
             hint="only read the history: build new lists"),
        Case("a new head list", lambda f: fresh(f, [SYSTEM, GOAL]), expected="a new list",
             hint="return a copy, e.g. list(history[:first]): the caller may change what you return"),
        Case("a long chat (20,002 messages)", lambda f: len(f(LONG)[1]), expected=10_000,
             hint="one pass over the history: no history.index() or slicing inside the loop"),
        Case("not a list", lambda f: f("system: hi"), raises=ValueError, hint="a history is a list: raise ValueError"),
        Case("None", lambda f: f(None), raises=ValueError, hint="not a list: raise ValueError"),
        Case("a tuple", lambda f: f(tuple(CHAT)), raises=ValueError, hint="a history is a list, not a tuple"),
        Case("a message without a role", lambda f: f([SYSTEM, {"content": "hi"}]), raises=ValueError,
             hint="every message needs a 'role': raise ValueError"),
        Case("the role 'robot'", lambda f: f([SYSTEM, GOAL, {"role": "robot", "content": "beep"}]),
             raises=ValueError, hint="the roles are system, user, assistant and tool: anything else is ValueError"),
        Case("a string among the messages", lambda f: f([SYSTEM, GOAL, "assistant: hi"]), raises=ValueError,
             hint="every item must be a dict: check isinstance(m, dict) before m.get('role')"),
        Case("the message names history[2]", lambda f: names_where(f, [SYSTEM, GOAL, {"role": None}], "history[2]"),
             expected="names history[2]", hint="say where the bad message is: f'history[{i}] ...'"),
    ]),
    "10.2": Exercise("A window of whole steps", [
        Case("keep 1", lambda f: window(f, CHAT, 1), expected=tags(CHAT[:2] + CHAT[-2:]),
             hint="the head, then the newest step, whole"),
        Case("keep 2", lambda f: window(f, CHAT, 2), expected=tags(CHAT[:2] + CHAT[-4:]),
             hint="the head, then the two newest steps, in order"),
        Case("keep more than there are", lambda f: window(f, CHAT, 9), expected=tags(CHAT),
             hint="nothing to drop: the same messages as the history"),
        Case("keep 0: the question stays", lambda f: window(f, CHAT, 0), expected=tags(CHAT[:2] + [TWENTY]),
             hint="keep=0 drops every step (careful: steps[-0:] is the whole list), but the user's question stays"),
        Case("only the goal: kept once", lambda f: window(f, CHAT[:6], 0), expected=tags(CHAT[:2]),
             hint="the goal is in the head, which is always kept: look for the user's latest message in the steps"),
        Case("the question moves up", lambda f: window(f, MOVED, 1), expected=tags(MOVED[:2] + [TWELVE] + MOVED[-2:]),
             hint="the user's latest message is in a dropped step: put it right after the head"),
        Case("kept in its step: not twice", lambda f: window(f, MOVED, 3), expected=tags(MOVED[:2] + MOVED[6:]),
             hint="when the step holding the user's latest message is kept, do not add it again"),
        Case("an observation is not the user's", lambda f: window(f, NOTED, 1),
             expected=tags(NOTED[:2] + [TWELVE] + NOTED[-2:]),
             hint="'Observation: ...' and 'Your reply could not be used...' are the agent's notes, not the user's"),
        Case("every result follows its call", every_window_keeps_the_protocol, expected=[],
             hint="'got' lists the broken windows: keep whole steps, so no tool result loses its call"),
        Case("the stand-in accepts every window", both_apis, expected=[],
             hint="'got' is what the local stand-in server refused, in the APIs' words"),
        Case("the history is not changed", lambda f: untouched(f, copy.deepcopy(MOVED), 1), expected="unchanged",
             hint="build a new list; never pop or del from the history"),
        Case("a new list, even with nothing to drop", lambda f: fresh(f, list(CHAT), 99), expected="a new list",
             hint="return a copy, e.g. head + kept: the caller may change it"),
        Case("keep=-1", lambda f: on_copy(f, CHAT, -1), raises=ValueError, hint="keep must be 0 or more"),
        Case("keep=True", lambda f: on_copy(f, CHAT, True), raises=ValueError,
             hint="True is an int in Python: test type(keep) is int"),
        Case("keep=1.5", lambda f: on_copy(f, CHAT, 1.5), raises=ValueError, hint="keep must be a whole number"),
        Case("keep='2'", lambda f: on_copy(f, CHAT, "2"), raises=ValueError, hint="keep must be a whole number"),
        Case("not a history", lambda f: f([SYSTEM, {"role": "robot"}], 1), raises=ValueError,
             hint="split_steps (or your group_steps) raises ValueError for it: let it through"),
    ]),
    "10.3": Exercise("Remember a note in SQLite", [
        Case("the first note", lambda f: remembering(f, NOTES[0]), expected=[REMEMBERED, [NOTES[0]]],
             hint="insert the text and answer f'Remembered as #{cursor.lastrowid}.'"),
        Case("a second note", lambda f: remembering(f, NOTES[0], NOTES[1])[1], expected="Remembered as #2.",
             hint="the number is the new row's id"),
        Case("the same note, other spaces", lambda f: remembering(f, NOTES[0], f"  {NOTES[0]}  ".replace(" ", "  ")),
             expected=[REMEMBERED, "Already remembered as #1.", [NOTES[0]]],
             hint="collapse the spaces first (' '.join(text.split())), then look for the same text"),
        Case("saved as one line", lambda f: remembering(f, "first line\n#9: a fake second line")[-1],
             expected=["first line #9: a fake second line"], hint="' '.join(text.split()): newlines become spaces"),
        Case("Korean round-trips", lambda f: remembering(f, "부산 사무소는 해운대에 있다")[-1],
             expected=["부산 사무소는 해운대에 있다"], hint="store the text itself; sqlite3 keeps Unicode as it is"),
        Case("SQL in the note is only text", lambda f: remembering(f, NOTES[-1]), expected=[REMEMBERED, [NOTES[-1]]],
             hint="pass the text as a parameter: db.execute('... VALUES (?)', (text,)), never inside the SQL"),
        Case("an OpenAI-style key", lambda f: f(new_notes(), KEY_TEXT), raises=ToolError, hint=SECRET_HINT),
        Case("an AWS access key id", lambda f: f(new_notes(), "AKIAIOSFODNN7EXAMPLE is the access key"),
             raises=ToolError, hint=SECRET_HINT),
        Case("a long token of mixed characters", lambda f: f(new_notes(), "secret=dGhpcyBpcyBhIHZlcnkgc2VjcmV0IDEy"),
             raises=ToolError, hint=RUN_HINT),
        Case("the refusal does not repeat the key", lambda f: refusing(f)[0], expected="does not repeat it",
             hint="say why it was refused without quoting the text: the message goes back to the model"),
        Case("a refused note is not saved", lambda f: refusing(f)[1], expected=[], hint="check first, insert after"),
        Case("naming OPENAI_API_KEY is fine", lambda f: remembering(f, "The key is in OPENAI_API_KEY.")[0],
             expected=REMEMBERED, hint="where a key is kept is worth remembering: only the key itself is refused"),
        Case("a commit hash is fine", lambda f: remembering(f, f"fixed in {COMMIT}")[0],
             expected=REMEMBERED, hint="a run needs upper case, lower case AND digits to look like a key"),
        Case("sk- and 11 characters is fine", lambda f: remembering(f, "The docs use sk-test-000001.")[0],
             expected=REMEMBERED, hint="at least 12 characters after the prefix: 11 are not enough, {12,}"),
        Case("SK- in capitals is fine", lambda f: remembering(f, "Order SK-2024-0001234 shipped.")[0],
             expected=REMEMBERED, hint="the prefixes are sk-, ghp_ and AKIA exactly as written: no re.I"),
        Case("a CamelCase name (no digit) is fine", lambda f: remembering(f, "See AbstractSingletonProxyFactoryBean.")[0],
             expected=REMEMBERED, hint="a run needs upper case, lower case AND a digit to look like a key"),
        Case("'task-management' is no key", lambda f: remembering(f, "The task-management-tool meeting moved.")[0],
             expected=REMEMBERED, hint="a prefix counts only at the start of a word: \\bsk- in a regular expression"),
        Case("500 characters, spaces around", lambda f: remembering(f, "  " + "x" * 500 + "  ")[0],
             expected=REMEMBERED, hint="measure the length after collapsing the spaces"),
        Case("501 characters", lambda f: f(new_notes(), "x" * 501), raises=ToolError,
             hint="longer than 500 characters: raise ToolError"),
        Case("an empty note", lambda f: f(new_notes(), ""), raises=ToolError, hint="nothing to save: ToolError"),
        Case("only spaces", lambda f: f(new_notes(), " \n\t "), raises=ToolError,
             hint="text.strip() is empty: ToolError"),
        Case("None", lambda f: f(new_notes(), None), raises=ToolError, hint="text must be a str: ToolError"),
    ]),
    "10.4": Exercise("Recall notes by their words", [
        Case("one word", recalling("shipping"), expected="#3: " + NOTES[2], hint="'#<id>: <text>' per match"),
        Case("inside a longer word (부산은)", recalling("부산", notes=["부산은 바다가 좋다", "서울 출장"]),
             expected="#1: 부산은 바다가 좋다", hint="a word matches anywhere in a note: LIKE '%' || word || '%'"),
        Case("upper or lower case", recalling("SHIPPING"), expected="#3: " + NOTES[2],
             hint="SQL's LIKE ignores the case of English letters"),
        Case("more words matched first", recalling("Busan price"),
             expected="\n".join(["#4: " + NOTES[3], "#2: " + NOTES[1], "#1: " + NOTES[0]]),
             hint="count the words each note matches; most first"),
        Case("newest first among equals", recalling("price", notes=["coffee price", "tea price", "milk price"]),
             expected="#3: milk price\n#2: tea price\n#1: coffee price",
             hint="same number of words matched: the highest id first"),
        Case("limit=1: the best of all", recalling("Busan price", 1, notes=BEST), expected="#2: " + BEST[1],
             hint="at most `limit` lines, the best: rank every match first (most words, then newest), then cut"),
        Case("each word once, in any case", recalling("busan price", notes=ONCE),
             expected=f"#1: {ONCE[0]}\n#2: {ONCE[1]}", hint="1 per word held, case ignored as in LIKE: busan ×3 is 1"),
        Case("a word twice in the query counts twice", recalling("price price tea", notes=TWICE),
             expected=f"#1: {TWICE[0]}\n#2: {TWICE[1]}", hint="score each of the words, repeats too: no set(words)"),
        Case("no match: the words, not the query", recalling("weather, tomorrow?"),
             expected="No memory matches 'weather tomorrow'.", hint="the words joined by spaces, not the query"),
        Case("punctuation is not a word", recalling("shipping?!"), expected="#3: " + NOTES[2],
             hint="words = re.findall(r'\\w+', query)"),
        Case("at most 10 words are used", recalling(WORDS_12, notes=["eleven", "one"]), expected="#2: one",
             hint="re.findall(r'\\w+', query)[:10]: the 11th and 12th words are not used"),
        Case("SQL in the query is only text", recalling("'; DROP TABLE notes; --"), expected="#7: " + NOTES[-1],
             hint="pass each pattern as a parameter: text LIKE ?, never inside the SQL"),
        Case("_ is not a wildcard", recalling("a_b"), expected="#5: a_b costs 5",
             hint="in LIKE, _ matches any character: escape \\, % and _ and add ESCAPE '\\'"),
        Case("% alone has no words", recalling("%"), raises=ToolError, hint="no words to look for: raise ToolError"),
        Case("an empty query", recalling(""), raises=ToolError, hint="no words: ToolError"),
        Case("None", recalling(None), raises=ToolError, hint="query must be a str: ToolError"),
        Case("201 characters", recalling("a" * 201), raises=ToolError, hint="a query over 200 characters: ToolError"),
        Case("limit=0", recalling("price", 0), raises=ToolError, hint="limit is 1 to 10"),
        Case("limit=11", recalling("price", 11), raises=ToolError, hint="limit is 1 to 10"),
        Case("limit=True", recalling("price", True), raises=ToolError, hint="True is an int: test type(limit) is int"),
    ]),
}


# ---- drivers of course check's hidden cases: they run where the answer runs and return what the grader judges
def split_and_after(f, history) -> list:
    """[what the function returned for a copy of ``history``, that copy afterwards]."""
    history = copy.deepcopy(history)
    return [f(history), history]


def last_step_grown(f, history) -> list:
    """Add a message to the last step returned: [len(history) afterwards, messages in the head and steps]."""
    history = copy.deepcopy(history)
    head, steps = f(history)
    steps[-1].append(user("added"))
    return [len(history), len(head) + sum(len(step) for step in steps)]


def windows_and_after(f, history, most) -> list:
    """[[f(history, keep) for keep = 0 … most], all on one copy of ``history``; that copy afterwards]."""
    history = copy.deepcopy(history)
    return [[f(history, keep) for keep in range(most + 1)], history]


def refused_windows(f, history, most) -> list[str]:
    """What the local stand-in refuses of each window, keep = 0 … most, sent as Anthropic and OpenAI requests."""
    problems = []
    for keep in range(most + 1):
        kept = on_copy(f, history, keep)
        for api, messages in (("anthropic", history_to_anthropic(kept)[1]), ("openai", history_to_openai(kept))):
            problems += [f"keep={keep}, {api}: {p}" for p in standin_problems(api, messages)]
    return problems


def names_used(f) -> list[str]:
    """The global names the function's code uses (co_names, its inner functions' too), sorted."""
    names, codes = set(), [getattr(f, "__code__", None)]
    while codes:
        code = codes.pop()
        if code is not None and hasattr(code, "co_names"):
            names.update(code.co_names)
            codes += [c for c in code.co_consts if hasattr(c, "co_names")]
    return sorted(names)


def refused(f, text) -> list:
    """remember(text) on an empty table: ['ToolError', its message, the table after], or what came back."""
    db = new_notes()
    try:
        got = f(db, text)
    except ToolError as e:
        return ["ToolError", str(e), saved(db)]
    return ["no ToolError", got, saved(db)]


def recall_in(f, notes, query, limit=None):
    """recall(query, limit) on a table of ``notes``, as ``recalling`` runs it (a word if the table changed)."""
    return recalling(query, limit, notes)(f)
