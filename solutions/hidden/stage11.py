"""Hidden cases of stage 11 (see course_lib/courseware/hidden.py): many corpora, plans, replies, trees and schemas,
judged against course_lib's finished versions."""
import copy
import random

from course_lib.courseware.checks import Case
from course_lib.courseware.exercises.stage11 import (one_leaf_twice, raw_scores, strict_and_after, ticked_and_after,
                                                     walk_copy)
from course_lib.courseware.observe import call, using
from course_lib.courseware.patterns_lab import strict_schema
from course_lib.courseware.standin.schemas import problem
from course_lib.orchestration import call_edges
from course_lib.planning import Todo, TodoList, parse_verdict
from course_lib.retrieval import BM25
from course_lib.tools import ToolError


# ---- 11.1: the same scores as course_lib's BM25 (itself checked against rank-bm25's BM25Okapi)
def _close_to(want):
    return lambda got: isinstance(got, list) and len(got) == len(want) and all(
        abs(g - w) < 1e-9 for g, w in zip(got, want))


def _corpora():
    rng, words, found = random.Random(111), ["a", "b", "c", "d", "the", "단가", "회의", "q3", "24"], []
    for _ in range(400):
        docs = [[rng.choice(words) for _ in range(rng.randint(0, 7))] for _ in range(rng.randint(1, 8))]
        query = [rng.choice(words + ["zzz"]) for _ in range(rng.randint(0, 5))]
        params = {"k1": rng.choice([0, 0.5, 1.2, 1.5, 2.0]), "b": rng.choice([0, 0.3, 0.75, 1]),
                  "epsilon": rng.choice([0, 0.25, 0.5])}
        found.append((query, docs, params))
    return found


def _bm25_case(number, query, docs, params):
    want = BM25(docs, **params).scores(query)
    return Case(f"random corpus {number}: {len(docs)} documents, {params}", using(raw_scores, query, docs, **params),
                test=_close_to(want), shows=f"{[round(w, 4) for w in want]} (±1e-9)")


TUPLES = (("a", "b"), ("c",), ("d",))
_BY_TUPLES = [round(s, 6) for s in BM25([list(d) for d in TUPLES]).scores(["a"])]


# ---- 11.2: the same plan, or a refusal, as course_lib's TodoList.mark_complete
def _oracle_plan(plan, index, note):
    todos = TodoList()
    todos.items = [Todo(t["text"], t["status"], t["note"]) for t in plan]
    try:
        todos.mark_complete(index, note)
    except ToolError:
        return "ToolError"
    return [{"text": t.text, "status": t.status, "note": t.note} for t in todos.items]


def _ticks():
    rng, found = random.Random(112), []
    notes = ["", "개당 $24", "  two\n lines ", "x" * 300, "x" * 301, "a\u200bb", "📦 무료", 42, None]
    for _ in range(400):
        plan = [{"text": f"단계 {n} step", "status": rng.choice(["todo", "todo", "done", "failed"]),
                 "note": rng.choice(["", "noted"])} for n in range(rng.randint(0, 6))]
        found.append((plan, rng.choice([0, 1, 2, 3, 4, 5, 6, 7, -1, True, 2.0, "2"]), rng.choice(notes)))
    return found


# ---- 11.3: the same reading as course_lib's parse_verdict
def _want(text):
    verdict = parse_verdict(text)
    return None if verdict.note else {"ok": verdict.ok, "feedback": verdict.feedback}


PIECES = ['{"ok": true}', '{"ok": false, "feedback": "add the shipping"}', '{"ok": false}', '{"ok": "no"}',
          '{"ok": true, "feedback": " fine\\n thanks "}', '{"note": 1}', "{broken", "}", "{", "<think>",
          "</think>", "Looks right.", "```json\n", "\n```", '{"a": {"ok": false, "feedback": "배송비"}}',
          '{"ok": false, "feedback": 3}', "{} " * 10, " " * 3000, '"ok": true', "null", "[1, 2]"]
_rng = random.Random(113)
REPLIES = ["".join(_rng.choice(PIECES) for _ in range(_rng.randint(0, 12))) for _ in range(600)]
EDGES = {"the 50th '{' is tried": "{} " * 49 + '{"ok": true}', "the 51st '{' is not": "{} " * 50 + '{"ok": true}',
         "the 50th broken '{' is tried": "{ " * 49 + '{"ok": true}',
         "the 51st broken '{' is not": "{ " * 50 + '{"ok": true}',
         "ending at character 20,000": " " * 19_988 + '{"ok": true}',
         "ending at character 20,001": " " * 19_989 + '{"ok": true}',
         "20,000 characters of draft": "<think>" + "x" * 20_000 + '</think>{"ok": true}',
         "feedback cut after joining": '{"ok": false, "feedback": "' + " \\n" * 700 + "x" * 2000 + '"}'}
NOT_TEXT = {"42": 42, "bytes": b'{"ok": true}', "a list": ['{"ok": true}'], "a dict": {"ok": True}}


# ---- 11.4: the same edges as course_lib's call_edges, each task on one line
def _tree(rng, depth=0):
    calls = [] if depth == 4 else [_tree(rng, depth + 1) for _ in range(rng.choice([0, 0, 1, 2, 3]))]
    return {"agent": rng.choice(["orchestrator", "researcher", "accountant", "검토자"]),
            "task": rng.choice(["find the price", "총액을 계산", "check\n  it", " padded "]),
            "steps": rng.randint(1, 4), "calls": calls}


def _joined(tree):   # call_edges keeps a task as it is; edges joins its whitespace
    return [(a, b, " ".join(t.split())) for a, b, t in call_edges(tree)]


_rng = random.Random(114)
TREES = [_tree(_rng) for _ in range(300)]
LEAF = {"agent": "r", "task": "t", "calls": []}

# ---- 11.5: the same schema as the finished strict_schema, which both providers' strict modes take
LEAVES = [{"type": "string"}, {"type": "integer", "minimum": 0}, {"type": "number", "maximum": 1.5},
          {"type": "boolean", "default": True}, {"enum": ["bus", "기차"]}, {"const": 3}, {"type": ["string", "null"]},
          {"type": "string", "enum": ["bus", "기차"]},
          {"type": "string", "format": "date"}, {"type": "string", "format": "iri", "description": "링크"},
          {"type": "string", "pattern": "^[a-z]+$", "maxLength": 9, "description": "a code"},
          {"anyOf": [{"type": "integer"}, {"type": "string", "minLength": 1}]}]


def _schema(rng, depth=0):
    roll = rng.random()
    if depth < 3 and roll < 0.3:
        names = rng.sample(["city", "nights", "도시", "tags", "mode", "x"], rng.randint(1, 4))
        return {"type": "object", "properties": {n: _schema(rng, depth + 1) for n in names},
                "required": [n for n in names if rng.random() < 0.5],
                **({"additionalProperties": rng.choice([True, False])} if rng.random() < 0.5 else {}),
                **({"description": "한 구간 (one leg)"} if rng.random() < 0.3 else {})}
    if depth < 3 and roll < 0.45:
        return {"type": "array", "items": _schema(rng, depth + 1),
                **({"minItems": rng.choice([0, 1, 2])} if rng.random() < 0.5 else {}),
                **({"maxItems": 5} if rng.random() < 0.3 else {})}
    return copy.deepcopy(rng.choice(LEAVES))


_rng = random.Random(115)
SCHEMAS = [{"type": "object", "properties": {"a": _schema(_rng), "b": _schema(_rng)}, "required": ["a"]}
           for _ in range(300)]
STRICT = [strict_schema(copy.deepcopy(s)) for s in SCHEMAS]
# equal to these is accepted by both: the stand-in's strict rules take every one of them
assert all(problem(s, api) is None for s in STRICT for api in ("anthropic", "openai"))
BAD_SCHEMAS = {"an object in an array": {"type": "object", "properties": {"a": {"type": "array",
                                                                                "items": {"type": "object"}}}},
               "{} in an anyOf": {"type": "object", "properties": {"a": {"anyOf": [{"type": "string"}, {}]}}},
               "a str": "string", "None": None}

HIDDEN = {
    "11.1": [
        *[_bm25_case(n, *asked) for n, asked in enumerate(_corpora(), 1)],
        Case("tuples of tokens are fine", using(raw_scores, ("a",), TUPLES),
             test=lambda got: [round(s, 6) for s in got] == _BY_TUPLES, shows=f"{_BY_TUPLES} (to 6 places)"),
        *[Case(f"documents {bad!r}: TypeError", using(raw_scores, ["a"], bad), raises=TypeError)
          for bad in ([["a"], "b c"], "a b c")],
        *[Case(f"{params}: ValueError", using(raw_scores, ["a"], [["a"]], **params), raises=ValueError)
          for params in ({"k1": -0.1}, {"b": -0.01}, {"b": 1.01})],
    ],
    "11.2": [Case(f"random plan {n}: step {index!r}, note {note!r:.20}", using(ticked_and_after, plan, index, note),
                  expected=[_oracle_plan(plan, index, note), plan], hint="the plan given must stay as it was")
             for n, (plan, index, note) in enumerate(_ticks(), 1)],
    "11.3": [
        *[Case(f"random reply {n} ({len(text)} characters)", call(text), expected=_want(text))
          for n, text in enumerate(REPLIES, 1)],
        *[Case(label, call(text), expected=_want(text)) for label, text in EDGES.items()],
        *[Case(f"{kind} is not text: None", call(odd), expected=None) for kind, odd in NOT_TEXT.items()],
    ],
    "11.4": [
        *[Case(f"random tree {n}", using(walk_copy, tree), expected=_joined(tree)) for n, tree in enumerate(TREES, 1)],
        Case("the same node twice is a loop", using(one_leaf_twice, LEAF), raises=ValueError,
             hint="a node met a second time, even when it is not its own ancestor"),
        Case("the top node without a task", using(walk_copy, {"agent": "o", "calls": [LEAF]}),
             expected=[("o", "r", "t")]),
        Case("calls as a tuple", using(walk_copy, {"agent": "o", "task": "g", "calls": (LEAF,)}), raises=ValueError),
    ],
    "11.5": [
        *[Case(f"random schema {n}", using(strict_and_after, given), expected=[want, given],
               hint="the finished version's schema, and the schema given left as it was")
          for n, (given, want) in enumerate(zip(SCHEMAS, STRICT), 1)],
        *[Case(f"{kind}: ValueError", call(bad), raises=ValueError) for kind, bad in BAD_SCHEMAS.items()],
    ],
}

# Wrong solutions that pass every visible case and fail a hidden one (the old hidden-test cell failed them too):
# (exercise, the hidden case's label it fails, [(old, new) edits of the solution cell], the mistake in a few words)
CAUGHT = [
    ("11.1", "random corpus 1: 4 documents, {'k1': 1.5, 'b': 1, 'epsilon': 0}",
     [("if not 0 <= b <= 1:", "if not 0 <= b < 1:")], "b=1 refused"),
    ("11.1", "{'b': -0.01}: ValueError", [("if not 0 <= b <= 1:", "if b > 1:")], "a b below 0 let through"),
    ("11.1", "tuples of tokens are fine",
     [("if isinstance(query_tokens, str) or isinstance(docs, str) or any(isinstance(doc, str) for doc in docs):",
       "if not isinstance(query_tokens, list) or not all(isinstance(doc, list) for doc in docs):")],
     "only lists taken: tuples of tokens refused"),
    ("11.2", "random plan 5: step 4, note None",
     [('    note = " ".join(note.split()) if isinstance(note, str) else None\n',
       '    note = "" if note is None else note\n'
       '    note = " ".join(note.split()) if isinstance(note, str) else None\n')], "note=None taken as no note"),
    ("11.2", "random plan 8: step 1, note ''",
     [('plan[index - 1].update(status="done", note=note)',
       'plan[index - 1].update(status="done", note=note or plan[index - 1]["note"])')],
     "an empty note keeps the step's old note"),
    ("11.3", "random reply 6 (110 characters)",
     [('            return {"ok": ok, "feedback": feedback} if ok or feedback else None\n',
       '            if ok or feedback:\n                return {"ok": ok, "feedback": feedback}\n')],
     "a no without feedback skipped: a later object decides"),
    ("11.3", "a list is not text: None",
     [("    if not isinstance(text, str) or not text.strip():\n        return None\n",
       "    if text is None or isinstance(text, bytes):\n        return None\n    text = str(text)\n")],
     "str() of what is not text"),
    ("11.4", "the same node twice is a loop",
     [("            walk(call)\n", "            walk(call)\n            seen.discard(id(call))\n")],
     "only a node's ancestors count as a loop"),
    ("11.4", "the same node twice is a loop",
     [("        if id(node) in seen:", '        if node["calls"] and id(node) in seen:')],
     "a leaf met twice is let through"),
    ("11.5", "random schema 2",
     [("out[key] = [strict_schema(sub) for sub in value]", "out[key] = json.loads(json.dumps(value))")],
     "anyOf options copied, not made strict"),
    ("11.5", "random schema 2", [('("type", "enum", "const", "description", "title")',
                                  '("type", "enum", "const", "description", "title", "minLength", "maxLength")')],
     "minLength and maxLength kept"),
]
