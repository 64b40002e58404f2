"""Stage 12 · evaluation: grade an answer, pass rates over repeats, the path a run took, regressions between runs."""
from __future__ import annotations

import copy
import json
from pathlib import Path

from ..checks import Case, Exercise

# ---- 12.1 answer_passes
NFD_SIP = "\u1109\u1175\u11b8"   # 십 typed as three separate jamo (NFD), as some systems store Hangul


def grading(check: dict, answer):
    """Call the learner's function on a copy of the check: a function that changes it spoils no later case."""
    return lambda f: f(copy.deepcopy(check), answer)


def check_untouched(f) -> str:
    check = {"type": "contains", "value": ["Laptop", "Mentor"]}
    f(check, "a laptop and a mentor")
    return "unchanged" if check == {"type": "contains", "value": ["Laptop", "Mentor"]} else f"changed: {check}"


NUMBER = {"type": "number", "value": 168, "tolerance": 0.5}
WON = {"type": "number", "value": 255000, "tolerance": 0}
EVERY = {"type": "contains", "value": ["09:00", "18:00"]}


# ---- 12.2 pass_rates
def run(task: str, passed, **more) -> dict:
    return {"task": task, "passed": passed, **more}


def runs(pattern: dict[str, str]) -> list[dict]:
    """{"a": "✓✓✗"} → the runs of task a: passed, passed, failed (repeats next to each other)."""
    return [run(task, mark == "✓", repeat=k) for task, marks in pattern.items() for k, mark in enumerate(marks)]


def interleaved(pattern: dict[str, str]) -> list[dict]:
    """The same runs as ``runs``, in the order a concurrent suite may finish them: repeat 0 of every task first."""
    return sorted(runs(pattern), key=lambda r: r["repeat"])


def rates(results):
    return lambda f: f(copy.deepcopy(results))


def results_untouched(f) -> str:
    results = runs({"a": "✓✗", "b": "✓✓"})
    f(results)
    return "unchanged" if results == runs({"a": "✓✗", "b": "✓✓"}) else "changed"


# Real suites, recorded: what run_suite returned for the scripted solvers of eval_lab (transcripts and all). The
# finished evaluation module is this stage's answer, so it is not where the grader runs submissions
# (tests/test_hidden_cases.py checks the record against today's run_suite).
RUNS = json.loads(Path(__file__).with_name("stage12_runs.json").read_text(encoding="utf-8"))


def real_runs(f) -> dict:
    """Records as run_suite returns them (transcripts and all): careful on four tasks, twice each."""
    return f(copy.deepcopy(RUNS["careful, four tasks, twice"]))


FLAKY = {"a": "✓✓✗", "b": "✓✓✓", "c": "✗✗✗"}


def row(runs_: int, tasks: int, k: int, rate: float, at_k: float, hat_k: float) -> dict:
    return {"runs": runs_, "tasks": tasks, "k": k, "pass_rate": rate, "pass@k": at_k, "pass^k": hat_k}


# ---- 12.3 trajectory_problems
PRICE_TASK = {"id": "unit-price-7", "required_tools": ["lookup", "calculator"], "forbidden_tools": ["search_docs"],
              "max_steps": 4}


def called(*marks: str) -> list[dict]:
    """called("lookup", "calculator!") → one call per step, as timeline_data returns them; ! marks a failed call."""
    return [{"step": n, "tool": m.rstrip("!"), "is_error": m.endswith("!")} for n, m in enumerate(marks, 1)]


def path(task, calls, steps, stop_reason="finish"):
    return lambda f: f(copy.deepcopy(task), copy.deepcopy(calls), steps, stop_reason)


def inputs_untouched(f) -> str:
    task, calls = copy.deepcopy(PRICE_TASK), called("search_docs", "calculator!")
    f(task, calls, 5, "max_steps")
    return "unchanged" if (task, calls) == (PRICE_TASK, called("search_docs", "calculator!")) else "changed"


def a_real_run(f) -> list:
    """A real Agent run with a scripted model (a fixed list of replies, not a model), read with timeline_data."""
    from ... import default_tools
    from ...agent import Agent
    from ...models import ScriptedModel
    from ..plots import timeline_data
    act = lambda tool, **args: json.dumps({"tool": tool, "args": args})
    agent = Agent(default_tools(), ScriptedModel([
        act("search_docs", query="price"), act("lookup", topic="unit price"), act("calculator", expression="24*"),
        act("calculator", expression="24*7"), act("finish", answer="168")]))
    agent.run("How much do seven units cost?")
    return f(copy.deepcopy(PRICE_TASK), timeline_data(agent), agent.steps, agent.stop_reason)


# ---- 12.4 regressions
def compared(old, new):
    return lambda f: f(copy.deepcopy(old), copy.deepcopy(new))


def both_untouched(f) -> str:
    old, new = runs({"a": "✓✓", "b": "✓"}), runs({"a": "✗✓"})
    f(old, new)
    return "unchanged" if (old, new) == (runs({"a": "✓✓", "b": "✓"}), runs({"a": "✗✓"})) else "changed"


def careful_then_sloppy(f) -> list:
    return [r["task"] for r in f(copy.deepcopy(RUNS["careful"]), copy.deepcopy(RUNS["sloppy"]))]


def drop(task: str, before: float, after: float | None) -> dict:
    return {"task": task, "before": before, "after": after}


SLOPPY_REGRESSIONS = ["unit-price-7", "trip-cap-ko", "refund-window-ko", "shipping-20-units", "support-hours-ko",
                      "order-with-shipping", "discount-12-units", "order-15-ko"]
RECORD_HINT = "every run is a dict with a 'task' (text) and 'passed' (True or False): else raise ValueError"

# ---- drivers of the hidden cases (course check): the answer runs on copies; they return what is judged
def graded(f, check, answer):
    """answer_passes on a copy of ``check``: (its verdict, the check afterwards)."""
    mine = copy.deepcopy(check)
    return f(mine, answer), mine


def rated(f, results):
    """pass_rates on a copy of ``results``: (its rates, the results afterwards)."""
    mine = copy.deepcopy(results)
    return f(mine), mine


def judged_path(f, task, calls, steps, stop_reason):
    """trajectory_problems on copies of ``task`` and ``calls``: (its problems, the task, the calls afterwards)."""
    task, calls = copy.deepcopy(task), copy.deepcopy(calls)
    return f(task, calls, steps, stop_reason), task, calls


def looping_run(f, task, max_steps):
    """trajectory_problems of a real run: a scripted model that looks the unit price up until the step cap."""
    from ... import default_tools
    from ...agent import Agent
    from ...models import ScriptedModel
    from ..plots import timeline_data
    reply = json.dumps({"tool": "lookup", "args": {"topic": "unit price"}})
    agent = Agent(default_tools(), ScriptedModel([reply] * max_steps), max_steps=max_steps)
    agent.run(task["goal"])
    return f(copy.deepcopy(task), timeline_data(agent), agent.steps, agent.stop_reason)


def regressed(f, old, new):
    """regressions on copies of ``old`` and ``new``: (its rows, old and new afterwards)."""
    old, new = copy.deepcopy(old), copy.deepcopy(new)
    return f(old, new), old, new


EXERCISES = {
    "12.1": Exercise("Does the answer pass its check?", [
        Case("exact: spaces around are trimmed", grading({"type": "exact", "value": "1024"}, " 1024\n"), expected=True,
             hint="compare after .strip() on both sides"),
        Case("exact: nothing else is forgiven", grading({"type": "exact", "value": "1024"}, "1024."), expected=False,
             hint="exact means equal after trimming: '1024.' is not '1024'"),
        Case("exact: decomposed Hangul (NFD)", grading({"type": "exact", "value": "십"}, NFD_SIP), expected=True,
             hint="unicodedata.normalize('NFC', text) on both sides: the same syllable can be stored two ways"),
        Case("exact: the check's text decomposed (NFD)", grading({"type": "exact", "value": NFD_SIP}, "십"),
             expected=True, hint="normalise the check's text too, not only the answer: either can arrive as NFD"),
        Case("exact: case counts", grading({"type": "exact", "value": "No"}, "no"), expected=False,
             hint="exact means equal after normalising: only contains ignores case"),
        Case("number: no tolerance, exactly right", grading({"type": "number", "value": 87}, "87 dollars"),
             expected=True, hint="0 away is within a tolerance of 0: abs(found - value) <= tolerance, not <"),
        Case("number: in a sentence", grading(NUMBER, "$168 in all"), expected=True,
             hint="a number: -?, digits with optional thousands commas, then optional .digits"),
        Case("number: at the edge, 168.5", grading(NUMBER, "168.5"), expected=True,
             hint="within the tolerance includes its edge: abs(found - value) <= tolerance"),
        Case("number: just past it, 168.51", grading(NUMBER, "168.51"), expected=False,
             hint="0.51 away is more than the tolerance of 0.5"),
        Case("number: 3.6 within 0.1 of 3.5", grading({"type": "number", "value": 3.5, "tolerance": 0.1}, "3.6"),
             expected=True, hint="3.6 - 3.5 is 0.10000000000000009 in floats: allow 1e-9 more than the tolerance"),
        Case("number: 255,000원", grading(WON, "255,000원입니다"), expected=True,
             hint="commas between groups of three digits are thousands separators: remove them before float()"),
        Case("number: the inputs restated first", grading(WON, "3일 2박이면 255,000원입니다."), expected=True,
             hint="look at every number, not only the first: 3 and 2 restate the question, 255,000 is the answer"),
        Case("number: none of them is right", grading(WON, "3일 2박: 250,000원"), expected=False,
             hint="3, 2 and 250000 are all wrong: it passes only when one of the numbers is within the tolerance"),
        Case("number: 1,2,3 is not 123", grading({"type": "number", "value": 123}, "1,2,3"), expected=False,
             hint="a comma is a thousands separator only before exactly three digits: '1,2,3' holds 1 (the rest "
                  "follow a comma, so they are not numbers), never 123: remove commas inside a match, not everywhere"),
        Case("number: 25만 is 250,000", grading({"type": "number", "value": 250000}, "25만 원"), expected=True,
             hint="a number with 만 right after it (a space allowed) counts ten-thousands: multiply by 10,000"),
        Case("number: 25만 5천원 adds up", grading(WON, "25만 5천원입니다"), expected=True,
             hint="neighbouring amounts with falling units add up: 25만 then 5천 is 250,000 + 5,000 = 255,000"),
        Case("number: 5천 25만 does not", grading(WON, "5천 25만"), expected=False,
             hint="only falling units add up (억, then 만, then 천): 5천 then 25만 are two amounts, 5,000 and 250,000"),
        Case("number: 25만원이 아니라 5천원", grading(WON, "25만원이 아니라 5천원"), expected=False,
             hint="amounts add up only with nothing but spaces between them: here '원이 아니라' stands in between"),
        Case("number: 3일 is 3", grading({"type": "number", "value": 3, "tolerance": 0.5}, "3일"), expected=True,
             hint="a number ends where the digits end, even with a letter right after it: '3일' holds the number 3"),
        Case("number: a minus sign", grading({"type": "number", "value": -4.5, "tolerance": 0}, "-4.5 degrees"),
             expected=True, hint="a '-' right before the digits belongs to the number"),
        Case("number: no tolerance given", grading({"type": "number", "value": 87}, "87.01 dollars"), expected=False,
             hint="a missing tolerance is 0: check.get('tolerance', 0)"),
        Case("number: no number at all", grading(NUMBER, "no idea"), expected=False,
             hint="no number in the answer: it does not pass (and does not crash)"),
        Case("contains: case does not matter", grading({"type": "contains", "value": "Laptop"}, "a LAPTOP on day one"),
             expected=True, hint="compare with .casefold() on both sides"),
        Case("contains: every text must be there", grading(EVERY, "평일 09:00-17:00"), expected=False,
             hint="a list of texts: every one of them must be in the answer (all, not any)"),
        Case("contains: a list, all there", grading(EVERY, "평일 09:00-18:00"), expected=True,
             hint="value may be a list of texts: check each"),
        Case("contains: 30일 is not 30 일", grading({"type": "contains", "value": "30일"}, "30 일 이내"), expected=False,
             hint="only case is ignored, not spaces"),
        Case("contains: decomposed Hangul (NFD)", grading({"type": "contains", "value": "십"}, f"{NFD_SIP} 개"),
             expected=True, hint="normalise both texts to NFC before looking"),
        Case("contains: the check's text decomposed (NFD)", grading({"type": "contains", "value": [NFD_SIP]}, "십 개"),
             expected=True, hint="normalise each of the check's texts too, not only the answer"),
        Case("contains: ß casefolds to ss", grading({"type": "contains", "value": "straße"}, "STRASSE 12"),
             expected=True, hint="str.lower() keeps ß, so use .casefold() as the spec says: it turns ß into ss"),
        Case("regex: a search, not a match", grading({"type": "regex", "pattern": r"\d+"}, "It is 168."), expected=True,
             hint="re.search finds the pattern anywhere; re.match only at the start"),
        Case("regex: anchored with ^ and $", grading({"type": "regex", "pattern": r"^\d+$"}, "168 units"),
             expected=False, hint="the pattern itself says 'the whole answer': just use re.search"),
        Case("no answer never passes", grading({"type": "regex", "pattern": ".*"}, None), expected=False,
             hint="answer None (the run gave no answer) is False, even for a pattern that matches empty text"),
        Case("returns a bool", lambda f: type(f({"type": "regex", "pattern": r"\d+"}, "168 units")).__name__,
             expected="bool", hint="return True or False, not the match object: bool(re.search(...)) or `is not None`"),
        Case("the check is not changed", check_untouched, expected="unchanged",
             hint="build new texts; do not write the normalised ones back into check"),
        Case("an unknown type", grading({"type": "fuzzy", "value": "x"}, "x"), raises=ValueError,
             hint="the types are exact, number, contains and regex: anything else is ValueError"),
        Case("a check that is not a dict", grading("exact", "x"), raises=ValueError,
             hint="check must be a dict with a 'type': else raise ValueError"),
        Case("no check, and no answer", grading(None, None), raises=ValueError,
             hint="check the check first: a bad one raises ValueError whatever the answer, None included"),
    ]),
    "12.2": Exercise("Pass rate, pass@k and pass^k", [
        Case("one run per task", rates(runs({"a": "✓", "b": "✗", "c": "✓", "d": "✓"})),
             expected=row(4, 4, 1, 3 / 4, 3 / 4, 3 / 4), hint="with k=1 the three numbers are the same"),
        Case("three repeats, one flaky task", rates(runs(FLAKY)), expected=row(9, 3, 3, 5 / 9, 2 / 3, 1 / 3),
             hint="pass@k: at least one of a task's k runs passed; pass^k: all k passed; then the share of tasks"),
        Case("always passing", rates(runs({"a": "✓✓", "b": "✓✓"})),
             expected=row(4, 2, 2, 1.0, 1.0, 1.0), hint="every run passed: every rate is 1.0"),
        Case("the order of the runs", rates(interleaved(FLAKY)), expected=row(9, 3, 3, 5 / 9, 2 / 3, 1 / 3),
             hint="a concurrent suite returns runs in any order: group them by task first"),
        Case("pass^k is not pass rate ** k", lambda f: rates(runs({"a": "✓✗", "b": "✓✗"}))(f)["pass^k"],
             expected=0.0, hint="neither task passed both of its runs: 0.0, whatever 0.5 ** 2 says"),
        Case("Korean task ids", rates(runs({"출장비": "✓", "환불": "✗"})),
             expected=row(2, 2, 1, 1 / 2, 1 / 2, 1 / 2), hint="a task id is any text"),
        Case("records from run_suite", real_runs, expected=row(8, 4, 2, 1.0, 1.0, 1.0),
             hint="real records hold more keys (steps, cost, transcript): use 'task' and 'passed' only"),
        Case("no runs", rates([]), expected=row(0, 0, 0, 0.0, 0.0, 0.0),
             hint="an empty list: zeros everywhere (0.0 for the rates), not an error of any kind"),
        Case("no runs: the rates are floats", lambda f: {k: type(v).__name__ for k, v in rates([])(f).items()},
             expected={"runs": "int", "tasks": "int", "k": "int", "pass_rate": "float", "pass@k": "float",
                       "pass^k": "float"},
             hint="the rates are floats even for no runs: 0.0, not 0 (runs, tasks and k stay whole numbers)"),
        Case("the runs are not changed", results_untouched, expected="unchanged", hint="only read the records"),
        Case("unequal repeats", rates(runs({"a": "✓✓✓", "b": "✓✓"})), raises=ValueError,
             hint="pass^k compares tasks on equal terms: every task needs the same number of runs, else ValueError"),
        Case("passed is 1, not True", rates([run("a", 1)]), raises=ValueError, hint=RECORD_HINT),
        Case("passed is 'yes'", rates([run("a", "yes")]), raises=ValueError, hint=RECORD_HINT),
        Case("a run without a task", rates([run("a", True), {"passed": True}]), raises=ValueError, hint=RECORD_HINT),
        Case("a task that is not text", rates([run("a", True), run(7, True)]), raises=ValueError, hint=RECORD_HINT),
        Case("not a list", rates({"task": "a", "passed": True}), raises=ValueError,
             hint="results is a list of run records: else raise ValueError"),
        Case("a tuple, not a list", rates(tuple(runs({"a": "✓"}))), raises=ValueError,
             hint="the spec says a list: anything else, a tuple too, raises ValueError (isinstance(results, list))"),
    ]),
    "12.3": Exercise("Check the path a run took", [
        Case("a good run", path(PRICE_TASK, called("lookup", "calculator"), 3), expected=[],
             hint="every required tool succeeded once, nothing forbidden, finished within 4 steps: no problems"),
        Case("exactly at the cap", path(PRICE_TASK, called("lookup", "lookup", "lookup", "calculator"), 4), expected=[],
             hint="max_steps steps is allowed: only more is a problem"),
        Case("answered without tools", path(PRICE_TASK, [], 1),
             expected=["never called lookup", "never called calculator"],
             hint="one line per required tool never called, in the task's order"),
        Case("only failed calls", path(PRICE_TASK, called("lookup", "calculator!", "calculator!"), 4),
             expected=["every call of calculator failed"],
             hint="a required tool counts only if at least one of its calls worked (is_error False)"),
        Case("a failure, then a fix", path(PRICE_TASK, called("lookup", "calculator!", "calculator"), 4), expected=[],
             hint="one working call of each required tool is enough"),
        Case("a forbidden tool", path(PRICE_TASK, called("search_docs", "lookup", "calculator"), 4),
             expected=["called forbidden search_docs"], hint="a forbidden tool that was called: 'called forbidden X'"),
        Case("the forbidden tool twice",
             path(PRICE_TASK, called("search_docs", "search_docs", "lookup", "calculator"), 4),
             expected=["called forbidden search_docs"], hint="one line per forbidden tool, however often it is called"),
        Case("forbidden, even when it failed", path(PRICE_TASK, called("search_docs!", "lookup", "calculator"), 4),
             expected=["called forbidden search_docs"], hint="calling it is the problem, whether it worked or not"),
        Case("stop reason None", path(PRICE_TASK, called("lookup", "calculator"), 2, None),
             expected=["did not finish (stop reason None)"],
             hint="None is not 'finish' either: test stop_reason != 'finish', not its truth"),
        Case("stopped at the cap", path(PRICE_TASK, called("lookup", "lookup", "lookup", "lookup"), 4, "max_steps"),
             expected=["never called calculator", "did not finish (stop reason 'max_steps')"],
             hint="stop_reason other than 'finish': f\"did not finish (stop reason {stop_reason!r})\""),
        Case("one step over", path(PRICE_TASK, called("lookup", "lookup", "lookup", "lookup", "calculator"), 5),
             expected=["took 5 steps, over 4"], hint="steps > max_steps: f'took {steps} steps, over {max_steps}'"),
        Case("everything at once", path(PRICE_TASK, called("search_docs", "calculator!"), 5, "max_steps"),
             expected=["never called lookup", "every call of calculator failed", "called forbidden search_docs",
                       "did not finish (stop reason 'max_steps')", "took 5 steps, over 4"],
             hint="the order: required tools, forbidden tools, then finishing, then steps"),
        Case("a task without rules", path({"id": "open"}, called("search_docs"), 9), expected=[],
             hint="no required_tools, forbidden_tools or max_steps: nothing to break"),
        Case("a real run, read with timeline_data", a_real_run,
             expected=["called forbidden search_docs", "took 5 steps, over 4"],
             hint="the calculator failed once, then worked; search_docs is forbidden; the answer was step 5"),
        Case("the inputs are not changed", inputs_untouched, expected="unchanged", hint="only read task and calls"),
        Case("a tool both required and forbidden",
             path({"required_tools": ["lookup"], "forbidden_tools": ["lookup"]}, [], 1), raises=ValueError,
             hint="a task cannot require and forbid the same tool: raise ValueError"),
        Case("steps=True", path(PRICE_TASK, [], True), raises=ValueError, hint="True is an int: type(steps) is int"),
        Case("steps=-1", path(PRICE_TASK, [], -1), raises=ValueError, hint="steps is a whole number, 0 or more"),
        Case("a call without a tool", path(PRICE_TASK, [{"step": 1, "is_error": False}], 1), raises=ValueError,
             hint="every call is a dict with a 'tool' (text): else raise ValueError"),
    ]),
    "12.4": Exercise("Name the regressions", [
        Case("the same results", compared(runs(FLAKY), runs(FLAKY)), expected=[], hint="no task's share went down"),
        Case("one task got worse", compared(runs({"a": "✓", "b": "✓"}), runs({"a": "✓", "b": "✗"})),
             expected=[drop("b", 1.0, 0.0)], hint="{'task', 'before', 'after'}: the shares of passing runs"),
        Case("fixes are not regressions", compared(runs({"a": "✗", "b": "✓"}), runs({"a": "✓", "b": "✓"})),
             expected=[], hint="a task that passes more often now is good news: leave it out"),
        Case("repeats: 2 of 3, then 1 of 3", compared(runs({"a": "✓✓✗"}), runs({"a": "✗✓✗"})),
             expected=[drop("a", 2 / 3, 1 / 3)], hint="compare shares over all of a task's runs, not its first run"),
        Case("the same share, other runs", compared(runs({"a": "✓✗"}), runs({"a": "✗✓"})),
             expected=[], hint="1 of 2 before and after: not lower, so not a regression"),
        Case("a task that is gone", compared(runs({"a": "✓", "b": "✓"}), runs({"a": "✓"})),
             expected=[drop("b", 1.0, None)],
             hint="a task missing from new is a regression with after None: a shrunken suite must not look better"),
        Case("a new task is not compared", compared(runs({"a": "✓"}), runs({"a": "✓", "new": "✗"})),
             expected=[], hint="tasks only in the new run have nothing to regress from"),
        Case("in the old run's order", compared(interleaved({"z": "✓✓", "a": "✓✓", "m": "✓✓"}),
                                                runs({"a": "✗✗", "m": "✓✓", "z": "✗✓"})),
             expected=[drop("z", 1.0, 0.5), drop("a", 1.0, 0.0)],
             hint="list them in the order their tasks first appear in old, not sorted, not in new's order"),
        Case("careful, then sloppy (real runs)", careful_then_sloppy, expected=SLOPPY_REGRESSIONS,
             hint="the eight tasks sloppy fails that careful passes, in the suite's order"),
        Case("the runs are not changed", both_untouched, expected="unchanged", hint="only read both lists"),
        Case("passed is 'no'", compared([run("a", "no")], [run("a", True)]), raises=ValueError, hint=RECORD_HINT),
        Case("passed is 0, not False", compared([run("a", 0)], [run("a", True)]), raises=ValueError, hint=RECORD_HINT),
        Case("a run without a task", compared([], [{"passed": True}]), raises=ValueError, hint=RECORD_HINT),
        Case("a task that is None", compared([run("a", True)], [run(None, True)]), raises=ValueError, hint=RECORD_HINT),
        Case("not lists", compared({"results": []}, []), raises=ValueError,
             hint="old and new are lists of run records (a saved --out file holds them under 'results')"),
        Case("a tuple, not a list", compared(tuple(runs({"a": "✓"})), []), raises=ValueError,
             hint="a list, as the spec says: a tuple is refused too (isinstance(old, list), not (list, tuple))"),
    ]),
}
