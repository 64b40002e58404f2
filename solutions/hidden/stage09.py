"""Hidden cases of stage 09 (see course_lib/courseware/hidden.py): taint at any depth and in every form, decisions as
course_lib's ToolPolicy makes them, a budget's edge for many sizes, and hand-over lines as handoff writes them."""
import copy
import json
import math
import os
import tempfile
import unicodedata
from pathlib import Path

from course_lib import default_tools
from course_lib.agent import Agent
from course_lib.control import handoff
from course_lib.courseware.approval import deny
from course_lib.courseware.checks import Case
from course_lib.courseware.exercises.stage09 import NOTICE, PAGE, deeply_nested, inputs_after, on_copies
from course_lib.courseware.observe import using as _using
from course_lib.models import ScriptedModel
from course_lib.safety import ToolPolicy


def call(*args, **kwargs):
    """The candidate called with these arguments, on copies each time it runs (on_copies): an answer that changes
    its input cannot change the case for the next run, or another case sharing the data."""
    return _using(on_copies, *copy.deepcopy(args), **copy.deepcopy(kwargs))


def using(driver, *args, **kwargs):
    """observe.using, with its own copies of the arguments."""
    return _using(driver, *copy.deepcopy(args), **copy.deepcopy(kwargs))


# ---- 09.1: calls a model might make after reading these texts, min_span 12
SEEN = [PAGE, NOTICE, "Pay invoice 2024-117 to account 110-234-567890 today."]
TAINT_12 = [
    ("an account number copied", {"body": "account 110-234-567890"}, "account 110-"),
    ("13 characters, 12 copied", {"body": "account 110-2"}, "account 110-"),
    ("11 characters: too short", {"body": "account 110"}, None),
    ("Korean in a tuple, deep", {"x": [{"y": ("AI는 이전 지시를 무시하고",)}]}, "ai는 이전 지시를 무"),
    ("a key in capitals", {"h": {"QA FOUND TWO small": 1}}, "qa found two"),
    ("numbers, None, a number key", {"n": [1, 2.5, None, True, {3: None}]}, None),
    ("an ideographic space, capitals", {"t": "THE\u3000EXPORT   screen."}, "the export s"),
    ("zero-width characters in words", {"t": "the\u200b export\ufeff screen"}, "the export s"),
    ("an argument in NFD form", {"t": unicodedata.normalize("NFD", "회의는 목요일 오후 3시로")}, "회의는 목요일 오후 3"),
    ("empty args", {}, None),
    ("an empty list as args", [], None),
]
FLAT_PAGE = " ".join(PAGE.split()).casefold()


def _run_of_15(got):
    return isinstance(got, str) and len(got) == 15 and got in FLAT_PAGE


# ---- 09.2: untainted, the same decisions as course_lib's ToolPolicy, for every rule, named or by default
RULE_SETS = [("named rules", {"lookup": "always", "send_email": "ask", "refund": "never"}),
             ("'*' always", {"lookup": "ask", "*": "always"}), ("'*' never", {"refund": "always", "*": "never"}),
             ("no rules", {})]
TOOLS_2 = ("lookup", "send_email", "refund", "메일_보내기")


def _policy_says(rules, tool) -> str:
    policy = ToolPolicy({k: v for k, v in rules.items() if k != "*"}, approver=deny, default=rules.get("*", "ask"),
                        taint=False)
    theirs = policy.decide(tool, {})
    return "allow" if theirs["allowed"] else "ask" if theirs["by"] == "a person" else "deny"


def _decision_naming(want, tool):
    return lambda got: len(got) == 2 and got[0] == want and isinstance(got[1], str) and tool in got[1]


def _decision(want):
    return lambda got: got[0] == want


TAINTED_2 = [(rule, want, span) for rule, want in (("always", "ask"), ("ask", "ask"), ("never", "deny"))
             for span in ('say "yes"', "이 페이지 전체를", "x" * 5000)]
BROKEN_2 = [{"t": "always "}, {"t": ["always"]}, {"*": "sometimes"}, {"t": 1}]


# ---- 09.3
def _tokens(tokens_in, tokens_out):
    return {"input_tokens": tokens_in, "output_tokens": tokens_out}


OVER = "Stopped before the next model call: it would bring the run to {:,} tokens, over the budget of {:,}."
EDGES_3 = [(spent, coming, spent + 100 + coming + 256) for spent in (0, 1, 999, 12_345) for coming in (1, 256, 4_000)]
BAD_LIMITS_3 = [("max_tokens 0", {"max_tokens": 0}), ("max_tokens -1", {"max_tokens": -1}),
                ("max_cost False", {"max_cost": False}), ("max_cost '0.5'", {"max_cost": "0.5"}),
                ("both limits None", {"max_tokens": None, "max_cost": None}),
                ("max_cost -inf", {"max_cost": -math.inf})]
BAD_SPENT_3 = [("input_tokens None", _tokens(None, 1)), ("output_tokens missing", {"input_tokens": 1}),
               ("input_tokens True", _tokens(True, 1)), ("output_tokens 2.0", _tokens(1, 2.0))]


# ---- 09.4: real runs of an agent that gives up, and the lines course_lib's handoff writes for them
def _act(tool, **args):
    return json.dumps({"tool": tool, "args": args}, ensure_ascii=False)


SCRIPTS_4 = [
    ("repeats, errors, Korean", [_act("lookup", topic="단가")] * 3 + [_act("calculator", expression="1/0")] * 2
     + [_act("lookup", topic="단가")]),
    ("eight searches in a row", [_act("search_docs", query="규정")] * 8),
    ("15 calls: 11 and a count", [_act("calculator", expression=f"{n}*2") for n in range(15)]),
    ("a missing file, a folder, a lookup", [_act("read_file", path="없는 파일.txt"), _act("list_files", directory="."),
                                            _act("lookup", topic="배송")]),
]


def _runs():
    """(label, the calls as what_was_tried takes them, handoff's lines) of each script, run in an empty folder of
    its own (list_files lists it), so that the grader's own folder never shows."""
    runs, here = [], os.getcwd()
    with tempfile.TemporaryDirectory() as folder:
        os.chdir(folder)
        try:
            Path("notes.txt").write_text("보증 1년\n", encoding="utf-8")
            for label, script in SCRIPTS_4:
                agent = Agent(default_tools(), ScriptedModel(script + [_act("lookup", topic="보증")] * 20),
                              max_steps=len(script))
                agent.run("hand-over test")
                calls = [{"tool": r.tool, "args": r.args, "ok": not r.observation.is_error,
                          "result": r.observation.content} for step in agent.trace for r in step.runs]
                runs.append((label, calls, list(handoff(agent).tried)))
        finally:
            os.chdir(here)
    return runs


GIVEN_4 = [{"tool": "lookup", "args": {"topic": "단가"}, "ok": True, "result": "개당 $24"} for _ in range(2)]

HIDDEN = {
    "09.1": [
        *[Case(label, call(args, SEEN, 12), expected=want) for label, args, want in TAINT_12],
        Case("min_span 15: a run of 15", call({"a": ["zz", {"b": "Budget: QA found two small bugs today"}]}, SEEN, 15),
             test=_run_of_15, shows="15 characters of the normalised page",
             hint="the run is min_span characters of the normalised argument"),
        Case("100 levels deep", using(deeply_nested, "qa found two small bugs", 100, [PAGE], 20),
             expected="qa found two small b", hint="search every level of nesting"),
        Case("min_span longer than any text", call({"b": PAGE}, [PAGE], 10**6), expected=None,
             hint="a text shorter than min_span cannot match"),
        Case("an empty list, default min_span", call([], [PAGE]), expected=None),
        Case("repeated characters", call({"b": "A" * 30}, ["a" * 50], 20), expected="a" * 20),
        *[Case(f"min_span {bad!r} is refused", call({"b": "x"}, [PAGE], bad), raises=ValueError,
               hint="min_span must be an int (not a bool) of at least 8") for bad in (8.0, None, False, -20)],
    ],
    "09.2": [
        *[Case(f"{name}: {tool}", call(dict(rules), tool), test=_decision_naming(_policy_says(rules, tool), tool),
               shows=f"{_policy_says(rules, tool)!r}, a reason naming {tool}",
               hint="a named rule first, else rules['*'], else 'ask'")
          for name, rules in RULE_SETS for tool in TOOLS_2],
        *[Case(f"{rule}, tainted by {span[:12]!r}", call({"t": rule}, "t", span), test=_decision(want),
               shows=f"{want!r}", hint="taint turns always into ask; never stays never")
          for rule, want, span in TAINTED_2],
        *[Case(f"broken {broken!r} denies", call(broken, "t"), test=_decision("deny"), shows="'deny'",
               hint="a rule that is not exactly 'always', 'ask' or 'never' denies") for broken in BROKEN_2],
    ],
    "09.3": [
        *[Case(f"{spent:,} + {coming:,}: {total:,} on the limit", call(_tokens(spent, 100), _tokens(coming, 256),
                                                                         {"max_tokens": total}), expected=None,
               hint="exactly on the limit runs") for spent, coming, total in EDGES_3],
        *[Case(f"{spent:,} + {coming:,}: one over {total - 1:,}", call(_tokens(spent, 100), _tokens(coming, 256),
                                                                          {"max_tokens": total - 1}),
               expected=OVER.format(total, total - 1), hint="one token over stops")
          for spent, coming, total in EDGES_3],
        Case("$1.00 exactly is within $1", call(_tokens(10**6, 0), _tokens(0, 0), {"max_cost": 1}), expected=None),
        Case("a token over $1", call(_tokens(10**6, 0), _tokens(1, 0), {"max_cost": 1}),
             test=lambda got: got.endswith("$1.0000, over the budget of $1.0000."),
             shows="ends '$1.0000, over the budget of $1.0000.'"),
        Case("huge numbers keep their commas", call(_tokens(10**12, 0), _tokens(0, 256), {"max_tokens": 10**6}),
             test=lambda got: "1,000,000,000,256 tokens" in got, shows="'1,000,000,000,256 tokens'"),
        Case("the inputs are not changed", using(inputs_after, _tokens(5, 5), _tokens(5, 5), {"max_tokens": 100}),
             expected=[_tokens(5, 5), _tokens(5, 5), {"max_tokens": 100}], hint="do not change the inputs"),
        *[Case(f"limit {name} is refused", call(_tokens(1, 1), _tokens(1, 1), bad), raises=ValueError,
               hint="a limit is None or a positive, finite int or float (not a bool): else ValueError")
          for name, bad in BAD_LIMITS_3],
        *[Case(f"spent {name} is refused", call(bad, _tokens(1, 1), {"max_tokens": 100}), raises=ValueError,
               hint="each token count is an int (not a bool) of 0 or more: else ValueError")
          for name, bad in BAD_SPENT_3],
    ],
    "09.4": [
        *[Case(label, call(calls), expected=tried, hint="the same lines as course_lib's handoff(agent).tried")
          for label, calls, tried in _runs()],
        Case("two equal calls fold", call(GIVEN_4), expected=['lookup({"topic": "단가"}) → ok: 개당 $24 (×2)']),
        Case("the calls are not changed", using(inputs_after, GIVEN_4), expected=[GIVEN_4], hint="do not change calls"),
    ],
}

# Wrong solutions that pass every visible case and fail a hidden one (the old hidden-test cell failed them too):
# (exercise, the hidden case's label it fails, [(old, new) edits of the solution cell], the mistake in a few words)
LINE_09_4 = "    lines = [f\"{c['tool']}("
END_09_4 = "{short(c['result'], 80)}\" for c in calls]"
CAUGHT = [
    ("09.1", "min_span None is refused",
     [("    if type(min_span) is not int or min_span < 8:\n",
       "    if min_span is None:   # None: the default\n        min_span = 20\n"
       "    if type(min_span) is not int or min_span < 8:\n")], "None taken for the default min_span"),
    ("09.1", "100 levels deep",
     [("def texts(value):", "def texts(value, depth=0):"),
      ("        if isinstance(value, str):\n            yield value\n",
       "        if depth > 50:   # a guard against endless nesting\n            return\n"
       "        if isinstance(value, str):\n            yield value\n"),
      ("yield from texts(key)\n                yield from texts(item)",
       "yield from texts(key, depth + 1)\n                yield from texts(item, depth + 1)"),
      ("for item in value:\n                yield from texts(item)",
       "for item in value:\n                yield from texts(item, depth + 1)")],
     "nesting searched 50 levels deep only"),
    ("09.2", "'*' always: lookup", [("    if tool in rules:\n", '    if tool in rules and "*" not in rules:\n')],
     "'*' taken for every tool, over the named rules"),
    ("09.2", "no rules: lookup",
     [("    if tool in rules:\n",
       '    if not rules:\n        return "deny", f"there are no rules, so {tool} is denied"\n'
       "    if tool in rules:\n")],
     "no rules at all denies every tool"),
    ("09.3", "spent output_tokens 2.0 is refused",
     [("if type(n) is not int or n < 0:",
       "if type(n) is bool or not isinstance(n, (int, float)) or n < 0 or n != int(n):")],
     "a whole float (2.0) taken for a token count"),
    ("09.3", "limit max_cost '0.5' is refused", [("type(limit) not in (int, float) or ", "type(limit) is bool or ")],
     "only booleans refused by type: a text limit raises TypeError"),
    ("09.4", "repeats, errors, Korean",
     [("{short(c['result'], 80)}",
       "{short(c['result'] if c['ok'] else c['result'].removeprefix('Error: '), 80)}")],
     "'Error: ' dropped after 'error:'"),
    ("09.4", "the calls are not changed",
     [(LINE_09_4, "    for c in calls:   # each call keeps its line\n        c[\"line\"] = (f\"{c['tool']}("),
      (END_09_4, "{short(c['result'], 80)}\")\n    lines = [c[\"line\"] for c in calls]")],
     "each line stored in its call's dict"),
]
