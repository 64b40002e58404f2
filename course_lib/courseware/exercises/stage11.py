"""Stage 11 · agent patterns: BM25 scores, a checklist step ticked off, a critic's verdict, who called whom, and a
schema strict mode takes."""
from __future__ import annotations

import copy

from ..checks import Case, Exercise
from ..standin.schemas import problem
from ...tools import ToolError

# ---- 11.1 bm25_scores: the expected numbers are fixed; tests/test_checks.py checks
# each against course_lib.retrieval.BM25 and rank-bm25's BM25Okapi (the textbook implementation).
DOCS = [["the", "unit", "price", "is", "24", "dollars"], ["orders", "of", "500", "dollars", "ship", "free"],
        ["the", "next", "review", "is", "on", "thursday"],
        ["ask", "finance", "about", "the", "travel", "allowance", "this", "year"], ["unit", "unit", "price"]]
SATURATE = [["x", "y", "y", "y"], ["x", "x", "y", "y"], ["x", "x", "x", "x"], ["a", "b", "c", "d"],
            ["e", "f", "g", "h"], ["i", "j", "k", "l"], ["m", "n", "o", "p"]]   # same length, x once, twice, 4 times
LENGTHS = [["x", "a"], ["x", "b", "c", "d", "e", "f"], ["g"], ["h"], ["i"]]        # x once, in a short and a long one
EVEN = [["x", "a"], ["x", "b"], ["c"], ["d"]]                                   # x in half of them: idf exactly 0
EMPTIES = [["a"], [], ["a", "b"], []]
KOREAN = [["단가", "가는", "개당", "24", "달러", "러입", "입니", "니다"],            # tokenize() of five memo lines
          ["출장", "장비", "규정", "정은", "사내", "문서", "서를", "확인", "인하", "하세", "세요"],
          ["다음", "회의", "의는", "목요", "요일", "일입", "입니", "니다"], ["회의", "메모"],
          ["출장", "보고", "고서", "서는", "금요", "요일", "일까", "까지", "내세", "세요"]]


def corpus(n: int = 5000) -> list[list[str]]:
    """``n`` documents of 5 to 24 words from a vocabulary of about 20,000: an index of a big folder."""
    return [[f"w{(i * 7919 + j * 104_729) % 20_011}" for j in range(5 + i % 20)] for i in range(n)]


def scored(query, docs, **params):
    """The learner's scores on copies, rounded to 4 decimals (a list that is not one is shown as it came)."""
    def call(f):
        got = f(copy.deepcopy(query), copy.deepcopy(docs), **params)
        return [round(x, 4) for x in got] if isinstance(got, list) and all(
            isinstance(x, (int, float)) and not isinstance(x, bool) for x in got) else got
    return call


def big(f) -> list:
    """The 5,000-document corpus in three numbers: how many scores, the best document and its score."""
    scores = f(["w1", "w17", "w9001"], corpus())
    best = max(range(len(scores)), key=scores.__getitem__)
    return [len(scores), best, round(scores[best], 4)]


def docs_untouched(f) -> str:
    docs = copy.deepcopy(DOCS)
    f(["unit", "the"], docs)
    return "unchanged" if docs == DOCS else "changed"


FORMULA = "idf · f·(k1+1) / (f + k1·(1 − b + b·dl/avgdl)), summed over the query's words"
FLOOR_HINT = ("'the' is in 3 of 5 documents, so ln((N − n + 0.5)/(n + 0.5)) < 0: use epsilon × the mean of the "
              "raw idf of every distinct word in the documents instead")


# ---- 11.2 complete: tick off one step of a checklist
def todo(text: str, status: str = "todo", note: str = "") -> dict:
    return {"text": text, "status": status, "note": note}


PLAN = [todo("단가 확인 (unit price)", "done", "개당 $24"), todo("총액 계산 (total)"),
        todo("대량 할인율 확인 (bulk discount)", "failed", "할인 정보 없음"), todo("견적 정리 (write the quote)")]
MARKS = {"todo": "☐", "done": "☑", "failed": "✗"}


def lines(todos) -> list:
    """A checklist as the lesson draws it, one line per step: '2. ☑ 총액 계산 (total) — $720'."""
    if not isinstance(todos, list) or not all(isinstance(t, dict) and set(t) == {"text", "status", "note"}
                                              for t in todos):
        return todos   # shown as it came: the expected value says what it should have been
    return [f"{n}. {MARKS.get(t['status'], t['status'])} {t['text']}" + (f" — {t['note']}" if t["note"] else "")
            for n, t in enumerate(todos, 1)]


def ticked(todos, index, *note):
    return lambda f: lines(f(copy.deepcopy(todos), index, *note))


def said(f, todos, index, note="") -> str:
    """The ToolError's message, or what came back instead."""
    try:
        got = f(copy.deepcopy(todos), index, note)
    except ToolError as e:
        return str(e)
    return f"no ToolError: returned {got!r}"[:80]


def plan_untouched(f) -> str:
    todos = copy.deepcopy(PLAN)
    got = f(todos, 2, "$720")
    return "changed" if todos != PLAN else "a new list" if got is not todos else "the input list itself"


def has(*words):
    return lambda got: isinstance(got, str) and not got.startswith("no ToolError") and all(w in got for w in words)


# ---- 11.3 parse_verdict
YES, OK, DRAFT = '{"ok": true}', {"ok": True, "feedback": ""}, '<think>{"ok": false, "feedback": "draft"}'
NO, SHIPPING = '{"ok": false, "feedback": "%s"}', {"ok": False, "feedback": "The goal also asks about shipping."}
REJECT = NO % SHIPPING["feedback"]   # NO % text: a rejection with that feedback


# ---- 11.4 edges: who called whom in a call_tree
def node(agent, task, *calls, **more) -> dict:
    return {"agent": agent, "task": task, **more, "calls": list(calls)}


RESEARCH, TOTAL = "부품 단가와 배송비 조건을 찾아 주세요.", "Work out the total for 25 units at $24 each."
TEAM = node("orchestrator", "What do 25 units cost?", node("researcher", RESEARCH), node("accountant", TOTAL))
NESTED = node("orchestrator", "Quote 25 units", node("researcher", RESEARCH, node("translator", "단가를 영어로")),
              node("accountant", TOTAL, node("checker", "Check 25*24", node("calculator_bot", "25*24"))))


def chain(depth: int) -> dict:
    tree = node(f"agent{depth}", "the last task")
    for n in range(depth - 1, -1, -1):
        tree = node(f"agent{n}", f"task {n}", tree)
    return tree


def walked(tree):
    return lambda f: f(copy.deepcopy(tree))


def loop_tree(f):
    tree = node("orchestrator", "goal", node("researcher", "find"))
    tree["calls"][0]["calls"].append(tree)   # a tree that contains itself: no call tree can
    return f(tree)


def tree_untouched(f) -> str:
    tree = copy.deepcopy(NESTED)
    f(tree)
    return "unchanged" if tree == NESTED else "changed"


# Finished functions the notebook hands over on purpose: the setup cell's tokenize, to try 11.1 on text.
MAY_USE = {"11.1": {"tokenize"}}
ABSENT = ("rank_bm25",)   # a finished BM25 (the test extra has it): not importable where stage 11 is graded

# ---- 11.5 strict_schema: stage 03's schemas and hand-written ones, checked by the stand-in's strict rules
def prop(kind, description="", **extra) -> dict:
    return {"type": kind, **({"description": description} if description else {}), **extra}


def closed(properties: dict, required=None) -> dict:
    return {"type": "object", "properties": properties, "required": list(properties) if required is None else required,
            "additionalProperties": False}


TRIP = closed({"city": prop("string", "where the trip goes"), "nights": prop("integer", "nights away")})
EXPENSE = {"type": "object", "properties": {"city": prop("string", "어디 (where)"),
                                            "nights": prop("integer", "nights away", default=1, minimum=1)},
           "required": ["city"], "additionalProperties": False}


def strict(schema):
    return lambda f: f(copy.deepcopy(schema))


def both_accept(f) -> list:
    """What the stand-in's strict checks say of the result, Anthropic's and OpenAI's: [None, None] if both take it."""
    from ...describe import tool_schema
    from ...tools import calculator, lookup, search_docs
    found = []
    for tool in (calculator, lookup, search_docs):
        out = f(tool_schema(tool))
        found.append([problem(out, api) for api in ("anthropic", "openai")])
    out = f(copy.deepcopy(NESTED_SCHEMA))
    return found + [[problem(out, api) for api in ("anthropic", "openai")]]


NESTED_SCHEMA = {"type": "object", "properties": {
    "stops": {"type": "array", "minItems": 1, "items": {"type": "object", "properties": {
        "city": {"type": "string"}, "nights": {"type": "integer", "minimum": 1}}, "required": ["city"]}},
    "when": {"type": "string", "format": "date"}}, "required": ["stops"]}


def schema_untouched(f) -> str:
    given = copy.deepcopy(NESTED_SCHEMA)
    f(given)
    return "unchanged" if given == NESTED_SCHEMA else "changed"


EXERCISES = {
    "11.1": Exercise("BM25 scores, as rank-bm25 computes them", [
        Case("one word in one document", scored(["thursday"], DOCS), expected=[0.0, 0.0, 1.0818, 0.0, 0.0],
             hint=f"a document scores {FORMULA}; a document without the word gets 0 from it"),
        Case("two words add up", scored(["unit", "price"], DOCS), expected=[0.6627, 0.0, 0.0, 0.0, 0.9988],
             hint="add one term per query word: the short document 5 holds 'unit' twice and 'price' once"),
        Case("a query word twice counts twice", scored(["price", "price"], DOCS), expected=[0.6627, 0, 0, 0, 0.8597],
             hint="loop over the query's tokens as they are, repeats included: no set(query_tokens)"),
        Case("more matches help less and less", scored(["x"], SATURATE), expected=[0.2513, 0.359, 0.4569, 0, 0, 0, 0],
             hint="f is how many times the word is in that document: f·(k1+1)/(f + k1·…) grows ever more slowly"),
        Case("a longer document is discounted", scored(["x"], LENGTHS), expected=[0.3508, 0.1893, 0.0, 0.0, 0.0],
             hint="dl is the document's length in tokens and avgdl the mean length of all documents"),
        Case("k1=0: only whether the word is there", scored(["unit", "price"], DOCS, k1=0),
             expected=[0.6729, 0.0, 0.0, 0.0, 0.6729],
             hint="with k1=0 a document without the word would divide 0 by 0: only score the documents holding it"),
        Case("b=0: no length discount", scored(["unit", "price"], DOCS, b=0), expected=[0.6729, 0, 0, 0, 0.8171],
             hint="use the b you are given: 1 − b + b·dl/avgdl"),
        Case("in most documents: the epsilon floor", scored(["the"], DOCS), expected=[0.2203, 0.0, 0.2203, 0.1911, 0],
             hint=FLOOR_HINT),
        Case("every word common: a floor below 0", scored(["a"], [["a"], ["a"], ["a", "b"]]),
             expected=[-0.2021, -0.2021, -0.1464], hint="a mean idf below 0 makes a floor below 0: no abs()"),
        Case("epsilon=0: a common word adds nothing", scored(["the"], DOCS, epsilon=0), expected=[0, 0, 0, 0, 0],
             hint="the floor is epsilon × the mean idf: with epsilon=0 it is 0"),
        Case("a common and a rare word", scored(["the", "review"], DOCS), expected=[0.2203, 0, 1.3021, 0.1911, 0],
             hint=FLOOR_HINT),
        Case("idf exactly 0 is not floored", scored(["x"], EVEN), expected=[0.0, 0.0, 0.0, 0.0],
             hint="only an idf below 0 is replaced: x in 2 of 4 documents has idf ln(2.5/2.5) = 0, which stays"),
        Case("empty documents count", scored(["b"], EMPTIES), expected=[0.0, 0.0, 0.4842, 0.0],
             hint="an empty document is one of the N documents and has length 0 in the mean length"),
        Case("Korean pairs", scored(["다음", "회의"], KOREAN), expected=[0.0, 0.0, 1.4187, 0.5057, 0.0],
             hint="tokens are tokens: Korean pairs score like any other word"),
        Case("a word in no document", scored(["weather"], DOCS), expected=[0.0] * 5,
             hint="a word no document holds adds nothing (and must not raise a KeyError)"),
        Case("an empty query", scored([], DOCS), expected=[0.0] * 5, hint="nothing to add: every score is 0.0"),
        Case("no documents", scored(["unit"], []), expected=[], hint="no documents, no scores: return []"),
        Case("every document empty", scored(["unit"], [[], []]), expected=[0.0, 0.0],
             hint="avgdl is 0 here: never divide by it for a document that does not hold the word"),
        Case("the documents are not changed", docs_untouched, expected="unchanged",
             hint="count with collections.Counter(doc); never sort or remove from the lists you are given"),
        Case("5,000 documents", big, expected=[5000, 2441, 9.8667],
             hint="Counter(doc) once per document, n per word in a dict: scanning every document per word is too slow"),
        Case("text instead of tokens", lambda f: f(["unit"], ["the unit price", "next review"]), raises=TypeError,
             hint="a document that is a str is a mistake (its 'tokens' would be letters): raise TypeError"),
        Case("a query as text", lambda f: f("unit price", DOCS), raises=TypeError,
             hint="query_tokens that is a str is a mistake too: raise TypeError"),
        Case("k1=-1", lambda f: f(["unit"], DOCS, k1=-1), raises=ValueError, hint="k1 must be 0 or more"),
        Case("b=1.5", lambda f: f(["unit"], DOCS, b=1.5), raises=ValueError, hint="b must be from 0 to 1"),
    ]),
    "11.2": Exercise("Tick off one step of a checklist", [
        Case("step 2 done, with a note", ticked(PLAN, 2, "$720"),
             expected=lines(PLAN[:1] + [todo(PLAN[1]["text"], "done", "$720")] + PLAN[2:]),
             hint="return a new list in which step 2 (counted from 1) is done, with the note"),
        Case("the last step", ticked(PLAN, 4, "할인 없이 정리"),
             expected=lines(PLAN[:3] + [todo(PLAN[3]["text"], "done", "할인 없이 정리")]),
             hint="index runs from 1 to len(todos): the last step is todos[len(todos) - 1]"),
        Case("no note", ticked(PLAN, 2), expected=lines(PLAN[:1] + [todo(PLAN[1]["text"], "done")] + PLAN[2:]),
             hint="note defaults to '': def complete(todos, index, note='')"),
        Case("the note on one line", ticked(PLAN, 2, "$720\n  (VAT 별도)\t"),
             expected=lines(PLAN[:1] + [todo(PLAN[1]["text"], "done", "$720 (VAT 별도)")] + PLAN[2:]),
             hint="' '.join(note.split()): newlines and runs of spaces become one space"),
        Case("a fake line in the note", ticked(PLAN, 2, "$720\n5. ☑ 송금 완료 (payment sent)"),
             expected=lines(PLAN[:1] + [todo(PLAN[1]["text"], "done", "$720 5. ☑ 송금 완료 (payment sent)")] + PLAN[2:]),
             hint="a note with a newline could add a step of its own to the checklist: make it one line"),
        Case("emoji round-trip", ticked([todo("배송 확인 📦")], 1, "무료 ✅"), expected=["1. ☑ 배송 확인 📦 — 무료 ✅"],
             hint="text is kept as it is, apart from the whitespace"),
        Case("a new list; the plan is not changed", plan_untouched, expected="a new list",
             hint="copy: [dict(t) for t in todos], then change the copy of the step (the caller keeps the old plan)"),
        Case("already done", lambda f: said(f, PLAN, 1, "again"), test=has("step 1", "already done"),
             shows="ToolError: 'step 1 … already done'",
             hint="a step that is done cannot be done again: ToolError naming the step"),
        Case("already done, with a bad note", lambda f: said(f, PLAN, 1, "x" * 301), test=has("step 1", "already done"),
             shows="ToolError: 'step 1 … already done'",
             hint="check the step before the note: a step that is done is refused as done, whatever the note says"),
        Case("a failed step", lambda f: said(f, PLAN, 3), test=has("step 3", "replan"),
             shows="ToolError: 'step 3 … replan'", hint="a failed step is replanned, not ticked off: say so"),
        Case("index 0", lambda f: said(f, PLAN, 0), test=has("from 1 to 4"), shows="ToolError: '… from 1 to 4'",
             hint="steps are numbered from 1: say which numbers exist"),
        Case("index -1", lambda f: said(f, PLAN, -1), test=has("from 1 to 4"), shows="ToolError: '… from 1 to 4'",
             hint="todos[-1] is Python's last item, not a step number: check 1 <= index <= len(todos) first"),
        Case("index 5 of 4", lambda f: said(f, PLAN, 5), test=has("from 1 to 4"), shows="ToolError: '… from 1 to 4'",
             hint="there is no step 5 in a plan of 4"),
        Case("index True", lambda f: said(f, PLAN, True), test=has("from 1 to 4"), shows="ToolError: '… from 1 to 4'",
             hint="True is an int in Python: test type(index) is int"),
        Case("index 2.0", lambda f: said(f, PLAN, 2.0), test=has("from 1 to 4"), shows="ToolError: '… from 1 to 4'",
             hint="a step number is a whole number (type int), not a float"),
        Case("index '2'", lambda f: said(f, PLAN, "2"), test=has("from 1 to 4"), shows="ToolError: '… from 1 to 4'",
             hint="the model may send text: a str is no step number"),
        Case("no plan yet", lambda f: said(f, [], 1), test=has("no plan"), shows="ToolError: '… no plan …'",
             hint="an empty list has no steps: say there is no plan yet"),
        Case("300 characters of note", lambda f: lines(f(copy.deepcopy(PLAN), 2, " " + "x" * 300 + " "))[1][-3:],
             expected="xxx", hint="measure the note after joining its whitespace: 300 characters are fine"),
        Case("301 characters of note", lambda f: said(f, PLAN, 2, "x" * 301), test=has("300"),
             shows="ToolError: '… 300 …'", hint="a note over 300 characters is refused, naming the limit"),
        Case("a note that is not text", lambda f: said(f, PLAN, 2, ["$720"]), test=has("300"),
             shows="ToolError: '… 300 …'", hint="the note must be a str: the same ToolError"),
        Case("an invisible character", lambda f: said(f, PLAN, 2, "$7\u200b20"), test=has("300"),
             shows="ToolError: '… 300 …'",
             hint="a zero-width space hides in the checklist: refuse a note that is not note.isprintable()"),
    ]),
    "11.3": Exercise("Read a critic's verdict", [
        Case("accepted", lambda f: f('{"ok": true}'), expected=OK, hint="return {'ok': True, 'feedback': ''}"),
        Case("rejected, with feedback", lambda f: f(REJECT), expected=SHIPPING, hint="a rejection keeps its feedback"),
        Case("amid chatter and a fence", lambda f: f("Checked.\n```json\n" + REJECT + "\n```\nHope that helps!"),
             expected=SHIPPING, hint="try json.JSONDecoder().raw_decode(text, i) at each '{'"),
        Case("skip objects without ok", lambda f: f('Set {a} first, then {"note": 1} and '
                                                    '{"ok": false, "feedback": "배송비를 빠뜨림"}'),
             expected={"ok": False, "feedback": "배송비를 빠뜨림"},
             hint="{a} is no JSON and {\"note\": 1} has no 'ok': go on to the next '{'"),
        Case("inside another object", lambda f: f('{"verdict": {"ok": true}}'), expected=OK,
             hint="the outer object has no 'ok'; the '{' inside it starts one that has"),
        Case("a draft in <think> is not the verdict", lambda f: f(DRAFT + "</think>" + YES), expected=OK,
             hint="read only what follows the last '</think>'"),
        Case("after the last </think> only", lambda f: f("<think>a</think>" + REJECT + "</think>" + YES),
             expected=OK, hint="text.rpartition('</think>')[2]: the last one ends the draft, even without a '<think>'"),
        Case("only a draft", lambda f: f('<think>{"ok": true}</think>Let me look again.'), expected=None,
             hint="after '</think>' there is no verdict: None"),
        Case("feedback on one line", lambda f: f(NO % "Say whether\\n  shipping is free."),
             expected={"ok": False, "feedback": "Say whether shipping is free."}, hint="' '.join(feedback.split())"),
        Case("feedback of 5,000 characters", lambda f: len(f(NO % ("x" * 5000))["feedback"]), expected=1000,
             hint="cut the feedback to its first 1,000 characters"),
        Case("feedback after 1,000 spaces", lambda f: f(NO % (" " * 1000 + "Add shipping.")),
             expected={"ok": False, "feedback": "Add shipping."}, hint="join the whitespace first, then cut to 1,000"),
        Case("accepted with a comment", lambda f: f('{"ok": true, "feedback": "Clear and\\n  complete."}'),
             expected={"ok": True, "feedback": "Clear and complete."}, hint="keep a yes's feedback too, on one line"),
        Case("accepted, feedback not text", lambda f: f('{"ok": true, "feedback": 5}'), expected=OK,
             hint="feedback that is not a str counts as ''"),
        Case('"ok": "yes"', lambda f: f('{"ok": "yes"}'), expected=None,
             hint="ok must be true or false (type bool): anything else is no verdict"),
        Case('"ok": 1', lambda f: f('{"ok": 1}'), expected=None, hint="1 is not true: check type(ok) is bool"),
        Case('"ok": null', lambda f: f('{"ok": null}'), expected=None, hint="None is not a verdict either"),
        Case("the first ok decides", lambda f: f('{"ok": "maybe"} then {"ok": true}'), expected=None,
             hint="the first object with 'ok' is the verdict; if it is unusable, there is none"),
        Case("rejected without feedback", lambda f: f('{"ok": false}'), expected=None,
             hint="a no without feedback gives the agent nothing to fix: None"),
        Case("feedback of spaces", lambda f: f('{"ok": false, "feedback": " \\n "}'), expected=None,
             hint="feedback that is empty after joining its whitespace is no feedback"),
        Case("feedback as a list", lambda f: f('{"ok": false, "feedback": ["add shipping"]}'), expected=None,
             hint="feedback must be a str"),
        Case("prose only", lambda f: f("Looks good to me!"), expected=None, hint="no JSON object: None"),
        Case("broken JSON", lambda f: f('{"ok": tru}'), expected=None, hint="catch the decoder's ValueError"),
        Case("empty", lambda f: f(""), expected=None, hint="nothing to read: None"),
        Case("not text: None, 42, bytes", lambda f: [f(x) for x in (None, 42, b'{"ok": true}')], expected=[None] * 3,
             hint="not a str: None, never an exception; bytes are not text either (no str() or decode())"),
        Case("a million {", lambda f: f("{" * 1_000_000), expected=None, hint="read only the first 20,000 characters"),
        Case("nested 100,000 deep", lambda f: f('{"ok": ' + "[" * 100_000), expected=None,
             hint="the decoder raises RecursionError on deep nesting: catch it like a ValueError"),
        Case("the 50th '{' is tried, the 51st is not", lambda f: [f("{} " * 49 + YES), f("{} " * 50 + YES)],
             expected=[OK, None], hint="try at most the first 50 '{', the 50th included: junk must not cost much"),
        Case("60 broken '{' first", lambda f: f("{ " * 60 + YES), expected=None,
             hint="every '{' tried counts toward the 50, whether it decodes or not"),
        Case("ending at character 20,000, or 20,001", lambda f: [f(" " * 19_988 + YES), f(" " * 19_989 + YES)],
             expected=[OK, None], hint="only the first 20,000 characters (after the last '</think>') are read"),
        Case("a long draft, then the verdict", lambda f: f(DRAFT + "x" * 20_000 + "</think>" + YES), expected=OK,
             hint="find the last '</think>' in the whole reply first, then keep 20,000 characters of what follows it"),
    ]),
    "11.4": Exercise("Who called whom", [
        Case("no calls", walked(node("orchestrator", "goal")), expected=[], hint="no one was called: no edges"),
        Case("a team of two", walked(TEAM),
             expected=[("orchestrator", "researcher", RESEARCH), ("orchestrator", "accountant", TOTAL)],
             hint="one (caller, callee, task) tuple per call, in the order of 'calls'"),
        Case("nested: depth first", walked(NESTED),
             expected=[("orchestrator", "researcher", RESEARCH), ("researcher", "translator", "단가를 영어로"),
                       ("orchestrator", "accountant", TOTAL), ("accountant", "checker", "Check 25*24"),
                       ("checker", "calculator_bot", "25*24")],
             hint="after each call, everything that callee called, before the caller's next call"),
        Case("the same agent twice", walked(node("o", "g", node("r", "first"), node("r", "second"))),
             expected=[("o", "r", "first"), ("o", "r", "second")], hint="each call is an edge, even to the same agent"),
        Case("a task on one line", walked(node("o", "g", node("r", "Find\n  the price\t"))),
             expected=[("o", "r", "Find the price")], hint="' '.join(task.split()): a task keeps to one line"),
        Case("other keys are ignored", walked(node("o", "g", node("r", "t", steps=3, usage={"input_tokens": 5}),
                                                   stop_reason="finish")),
             expected=[("o", "r", "t")], hint="only 'agent', 'task' and 'calls' matter"),
        Case("300 deep", lambda f: (lambda e: [len(e), e[-1]])(f(chain(300))),
             expected=[300, ("agent299", "agent300", "the last task")], hint="one edge per level of a chain"),
        Case("5,000 calls", lambda f: len(f(node("o", "g", *[node(f"a{i}", f"t{i}") for i in range(5000)]))),
             expected=5000, hint="one pass: append to one list"),
        Case("the tree is not changed", tree_untouched, expected="unchanged", hint="only read the tree"),
        Case("not a dict", lambda f: f([("o", "r", "t")]), raises=ValueError, hint="a tree is a dict: ValueError"),
        Case("no agent", lambda f: f({"task": "g", "calls": []}), raises=ValueError,
             hint="every node needs an 'agent' that is a str"),
        Case("agent not text", lambda f: f(node(None, "g")), raises=ValueError, hint="'agent' must be a str"),
        Case("calls is None", lambda f: f({"agent": "o", "task": "g", "calls": None}), raises=ValueError,
             hint="'calls' must be a list: check isinstance(node.get('calls'), list) before walking it"),
        Case("no calls key", lambda f: f(node("o", "g", {"agent": "r", "task": "t"})), raises=ValueError,
             hint="every node needs 'calls', a leaf too: an empty list"),
        Case("a call that is not a dict", lambda f: f(node("o", "g", "researcher")), raises=ValueError,
             hint="each item of 'calls' is a node: a dict"),
        Case("a call that is None, between two good ones", walked(node("o", "g", node("a", "t"), None, node("b", "t"))),
             raises=ValueError, hint="None is not a node either: check every item (None is no end marker)"),
        Case("a call without a task", lambda f: f(node("o", "g", {"agent": "r", "calls": []})), raises=ValueError,
             hint="each call needs its 'task' as a str (only the top node's task is not used)"),
        Case("the top node without a task", walked({"agent": "o", "calls": [node("r", "t")]}),
             expected=[("o", "r", "t")], hint="the top node's task is never used: it may have none"),
        Case("calls as a tuple", walked({"agent": "o", "task": "g", "calls": (node("r", "t"),)}), raises=ValueError,
             hint="'calls' must be a list, as call_tree gives it: isinstance(node.get('calls'), list), no tuple"),
        Case("a tree that contains itself", loop_tree, raises=ValueError,
             hint="remember the id() of each node you visit: a node met twice is a loop, not a tree"),
    ]),
    "11.5": Exercise("A schema strict mode takes", [
        Case("already strict: the same", strict(TRIP), expected=TRIP,
             hint="every property required, additionalProperties false: nothing to change (a new dict, equal)"),
        Case("an optional property becomes nullable", strict(closed({"city": prop("string"), "n": prop("integer")},
                                                                    ["city"])),
             expected=closed({"city": prop("string"), "n": prop(["integer", "null"])}),
             hint="list every property in 'required'; one that was optional takes null: type [\"integer\", \"null\"]"),
        Case("a default moves to the description", strict(EXPENSE),
             expected=closed({"city": prop("string", "어디 (where)"),
                              "nights": prop(["integer", "null"], 'nights away\n\n{"default": 1, "minimum": 1}')}),
             hint="keywords strict mode cannot enforce go into the description: description + '\\n\\n' + "
                  "json.dumps({...}, ensure_ascii=False), in the order they came"),
        Case("no description yet", strict(closed({"n": prop("integer", maximum=9)})),
             expected=closed({"n": prop("integer", '{"maximum": 9}')}), hint="with no description, the JSON alone"),
        Case("Korean in a moved value", strict(closed({"c": prop("string", default="부산")}, [])),
             expected=closed({"c": prop(["string", "null"], '{"default": "부산"}')}),
             hint="json.dumps(..., ensure_ascii=False): the model reads 부산, not \\ubd80\\uc0b0"),
        Case("an optional enum takes None", strict(closed({"m": {"enum": ["bus", "train"]}}, [])),
             expected=closed({"m": {"enum": ["bus", "train", None]}}), hint="an enum is nullable with None among it"),
        Case("an optional anyOf takes null", strict(closed({"x": {"anyOf": [prop("integer"), prop("string")]}}, [])),
             expected=closed({"x": {"anyOf": [prop("integer"), prop("string"), prop("null")]}}),
             hint='an anyOf is nullable with {"type": "null"} among its options'),
        Case("an optional type and enum together", strict(closed({"m": prop("string", enum=["bus", "train"])}, [])),
             expected=closed({"m": prop(["string", "null"], enum=["bus", "train", None])}),
             hint="a schema may have both (pydantic writes both for a Literal): add null to the type and None to the "
                  "enum, or null fits one and not the other"),
        Case("already nullable: no second null", strict(closed({"x": prop(["string", "null"])}, [])),
             expected=closed({"x": prop(["string", "null"])}), hint="add null only where it is missing"),
        Case("a const alone", strict(closed({"v": {"const": 2}}, [])),
             expected=closed({"v": {"anyOf": [{"const": 2}, prop("null")]}}),
             hint='no type, enum or anyOf to extend: wrap it, {"anyOf": [schema, {"type": "null"}]}'),
        Case("a required property takes no null", strict(closed({"n": prop("integer")})),
             expected=closed({"n": prop("integer")}), hint="only a property that was optional may be null"),
        Case("objects inside arrays too", strict(NESTED_SCHEMA), expected=closed({
            "stops": {"type": "array", "minItems": 1, "items": closed({
                "city": prop("string"), "nights": prop(["integer", "null"], '{"minimum": 1}')})},
            "when": prop(["string", "null"], format="date")}),
             hint="recurse into 'properties', 'items' and 'anyOf': every object, however deep, is closed the same way"),
        Case("minItems 0 or 1 stays, others move", strict(closed({"a": prop("array", items=prop("string"), minItems=2,
                                                                          maxItems=3)})),
             expected=closed({"a": prop("array", '{"minItems": 2, "maxItems": 3}', items=prop("string"))}),
             hint="Anthropic takes minItems only as 0 or 1, and no maxItems"),
        Case("a format it knows stays, others move", strict(closed({"e": prop("string", format="email"),
                                                                    "c": prop("string", format="credit-card")})),
             expected=closed({"e": prop("string", format="email"), "c": prop("string", '{"format": "credit-card"}')}),
             hint="keep a format from FORMATS; any other format moves to the description"),
        Case("title stays, pattern moves", strict(closed({"z": prop("string", title="Zip", pattern="^[0-9]{5}$")})),
             expected=closed({"z": prop("string", '{"pattern": "^[0-9]{5}$"}', title="Zip")}),
             hint="keep type, enum, const, anyOf, description, title, items, properties; move the rest"),
        Case("extra keys allowed before: not any more", strict({"type": "object", "properties": {"a": prop("string")},
                                                              "additionalProperties": True}),
             expected=closed({"a": prop(["string", "null"])}),
             hint="additionalProperties is false in strict mode, whatever it was (no 'required': none were)"),
        Case("both providers accept the results", both_accept, expected=[[None, None]] * 4,
             shows="[[None, None]] × 4", hint="the stand-in's own strict checks ran on your result for stage 03's "
                                             "calculator, lookup and search_docs, and the nested schema"),
        Case("the schema given is not changed", schema_untouched, expected="unchanged",
             hint="build new dicts (copy.deepcopy a value you keep): never set keys on the schema you were given"),
        Case("an object without properties", lambda f: f({"type": "object"}), raises=ValueError,
             hint="a free-form dict cannot be strict (no other keys allowed: only {} would fit): ValueError"),
        Case("a nested one too", lambda f: f(closed({"meta": {"type": "object"}})), raises=ValueError,
             hint="check every object as you recurse"),
        Case("a schema that allows anything", lambda f: f(closed({"x": {"description": "anything"}})),
             raises=ValueError,
             hint="no type, enum, const or anyOf: strict mode cannot constrain it, ValueError"),
        Case("not a dict", lambda f: f([("type", "string")]), raises=ValueError,
             hint="a schema is a dict: check isinstance(schema, dict), ValueError otherwise (no dict(schema))"),
    ]),
}


# ---- drivers of course check's hidden cases: they run where the answer runs and return what the grader judges
def raw_scores(f, query, docs, **params):
    """The learner's scores for copies of the query and the documents, as they came (not rounded)."""
    return f(copy.deepcopy(query), copy.deepcopy(docs), **params)


def ticked_and_after(f, todos, index, note) -> list:
    """[the new plan, or 'ToolError' if refused; the copy of ``todos`` it was given, afterwards]."""
    todos = copy.deepcopy(todos)
    try:
        got = f(todos, index, note)
    except ToolError:
        got = "ToolError"
    return [got, todos]


def walk_copy(f, tree):
    """edges of a copy of ``tree``."""
    return f(copy.deepcopy(tree))


def one_leaf_twice(f, leaf):
    """edges of a tree whose top node calls the very same ``leaf`` dict twice."""
    return f({"agent": "o", "task": "g", "calls": [leaf, leaf]})


def strict_and_after(f, schema) -> list:
    """[strict_schema of a copy of ``schema``, that copy afterwards]."""
    schema = copy.deepcopy(schema)
    return [f(schema), schema]
