"""Hidden cases of stage 12 (see course_lib/courseware/hidden.py): the old hidden-test cells, as data.

The random inputs are drawn as the old cells drew them (the same seeds, the same draws in the same order), each
becoming one case; what they expect comes from course_lib's evaluation module, computed here, in the grader."""
import copy
import random
import unicodedata

from course_lib.courseware.checks import Case
from course_lib.courseware.exercises.stage12 import graded, judged_path, looping_run, rated, regressed
from course_lib.courseware.observe import using
from course_lib.evaluation import compare, grade_answer, summarise

# The setup cell's TASK and RUNS.
TASK = {"id": "unit-price-7", "goal": "How much do seven units cost, in dollars?",
        "check": {"type": "number", "value": 168, "tolerance": 0.01},
        "required_tools": ["lookup", "calculator"], "forbidden_tools": ["search_docs"], "max_steps": 4}
RUNS = [{"task": "unit-price-7", "repeat": 0, "passed": True}, {"task": "unit-price-7", "repeat": 1, "passed": True},
        {"task": "unit-price-7", "repeat": 2, "passed": False}, {"task": "trip-cap-ko", "repeat": 0, "passed": True},
        {"task": "trip-cap-ko", "repeat": 1, "passed": True}, {"task": "trip-cap-ko", "repeat": 2, "passed": True}]


def _short(value, limit=36):
    text = " ".join(repr(value).split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _raises_value_error(label, probe, hint):
    return Case(label, probe, raises=ValueError, hint=hint)


# ---- 12.1: many answers and checks of every type, judged as grade_answer judges them, the check untouched
_NFD = unicodedata.normalize("NFD", "십 개")
_PIECES = ["168", "$168", "168.5", "167.49", "-4.5", "4.5", "255,000원", "255,001원", "3일", "2박", "1,024", "1024",
           "1024.", "Laptop", "LAPTOP", "laptop", "09:00", "18:00", "평일", "십", _NFD, "30일", "30 일", "No:", "no",
           "No", "yes", "undefined", "division by zero", "3.6", "3.61", "87", "87.01", "12,5", "0.1", "STRASSE",
           "Straße", "strasse",
           "25만", "5천원", "25만 5천원", "2만5천원", "1.5만", "1,2,3", "천천히", "1억", "-3만"]
_CHECKS = [{"type": "exact", "value": "1024"}, {"type": "exact", "value": "십 개"}, {"type": "exact", "value": "no"},
           {"type": "number", "value": 168, "tolerance": 0.5}, {"type": "number", "value": 255000},
           {"type": "number", "value": 3.5, "tolerance": 0.1}, {"type": "number", "value": -4.5},
           {"type": "number", "value": 1024, "tolerance": 0}, {"type": "number", "value": 87, "tolerance": 0.01},
           {"type": "contains", "value": "laptop"}, {"type": "contains", "value": ["09:00", "18:00"]},
           {"type": "contains", "value": ["십", "개"]}, {"type": "contains", "value": "30일"},
           {"type": "regex", "pattern": r"^(?i:no)\b"}, {"type": "regex", "pattern": r"^\d+$"},
           {"type": "regex", "pattern": r"(?i)division by zero|undefined"},
           {"type": "regex", "pattern": r"\d{3},\d{3}"},
           {"type": "exact", "value": "No"}, {"type": "exact", "value": _NFD}, {"type": "contains", "value": "straße"},
           {"type": "contains", "value": [unicodedata.normalize("NFD", "십")]}, {"type": "number", "value": 87},
           {"type": "number", "value": 250000}, {"type": "number", "value": 5000}, {"type": "number", "value": 123},
           {"type": "number", "value": 15000}, {"type": "number", "value": 100250000},
           {"type": "number", "value": -30000}]


def _drawn_12_1():
    """The old cell's 600 (check, answer) pairs, with grade_answer's verdict."""
    rng, drawn = random.Random(121), []
    for _ in range(600):
        answer = rng.choice(["", " ", "\n"]) + " ".join(rng.choice(_PIECES) for _ in range(rng.randint(1, 4)))
        check = copy.deepcopy(rng.choice(_CHECKS))
        drawn.append((check, answer, grade_answer({"check": check}, answer)["passed"]))
    return drawn


def _nfc(text):
    """Text as a label shows it: decomposed Hangul (NFD) composed, and marked."""
    nfc = unicodedata.normalize("NFC", text)
    return text if nfc == text else f"{nfc} (NFD)"


def _what(check):
    shown = check.get("value", check.get("pattern"))
    return f"{check['type']} {_nfc(shown) if isinstance(shown, str) else _nfc(_short(shown, 24))}"


_BAD_CHECKS = [None, [], "number", {"type": "EXACT", "value": "1"}, {"type": None}, {"value": "1"}]
_CASES_12_1 = [
    *[Case(f"#{n} {_what(check)} on {_nfc(_short(answer))}", using(graded, check, answer),
           expected=(want, copy.deepcopy(check)),
           hint="the verdict the spec's rules give (True or False), and the check left as it was")
      for n, (check, answer, want) in enumerate(_drawn_12_1(), 1)],
    *[Case(f"no answer: {_what(check)} #{n}", using(graded, check, None), test=lambda got: got[0] is False,
           shows="False", hint="answer None (no answer) passes no check")
      for n, check in enumerate(_CHECKS, 1)],
    *[_raises_value_error(f"bad check {bad!r}, answer {answer!r}", using(graded, bad, answer),
                          "a check must be a dict whose 'type' is exact, number, contains or regex: else ValueError")
      for bad in _BAD_CHECKS for answer in ["1", None]],
]


# ---- 12.2: many shuffled suites: course_lib's pass rate and pass^k, pass@k by its definition, the input untouched
def _rates_test(results):
    before = copy.deepcopy(results)
    want = summarise([dict(r, input_tokens=0, output_tokens=0, cost=0.0, stop_reason="finish") for r in results])
    k = len(results) // want["tasks"]
    at_k = len({r["task"] for r in results if r["passed"]}) / want["tasks"]

    def test(got):
        rates, after = got
        return (after == before and (rates["runs"], rates["tasks"], rates["k"]) == (want["runs"], want["tasks"], k)
                and abs(rates["pass_rate"] - want["pass_rate"]) < 1e-12
                and abs(rates["pass^k"] - want["pass^k"]) < 1e-12
                and abs(rates["pass@k"] - at_k) < 1e-12 and rates["pass^k"] <= rates["pass_rate"] <= rates["pass@k"])
    shows = f"runs {want['runs']}, tasks {want['tasks']}, k {k}, pass_rate {want['pass_rate']:.4g}, " \
            f"pass@k {at_k:.4g}, pass^k {want['pass^k']:.4g}; results unchanged"
    return test, shows


def _suites_12_2():
    rng, drawn = random.Random(122), []
    for _ in range(300):
        k = rng.randint(1, 5)
        results = [{"task": f"t{t}", "repeat": r, "passed": rng.random() < p, "steps": 2}
                   for t, p in enumerate(rng.random() for _ in range(rng.randint(1, 7))) for r in range(k)]
        rng.shuffle(results)
        drawn.append(results)
    return drawn


_RECORD = ("every record is a dict with 'task' (text) and 'passed' (True/False), every task as many runs: "
           "else ValueError")
_CASES_12_2 = [
    *[Case(f"suite #{n}: {len(results)} runs", using(rated, results), test=test, shows=shows,
           hint="group the runs by task (they come in any order); pass@k: any of k passed, pass^k: all k passed")
      for n, results in enumerate(_suites_12_2(), 1) for test, shows in [_rates_test(results)]],
    Case("no runs: the rates are floats", using(rated, []),
         test=lambda got: all(type(got[0][key]) is float for key in ("pass_rate", "pass@k", "pass^k")),
         shows="0.0 for each rate", hint="the rates are 0.0, floats, when there are no runs"),
    *[_raises_value_error(label, using(rated, bad), _RECORD) for label, bad in [
        ("a with 2 runs, b with 1", [{"task": "a", "passed": True}, {"task": "a", "passed": True},
                                     {"task": "b", "passed": False}]),
        ("passed is None", [{"task": "a", "passed": None}]), ("task is 7", [{"task": 7, "passed": True}]),
        ("a record that is a list", [["a", True]]), ("results None", None), ("results 'a'", "a"),
        ("results a tuple", ({"task": "a", "passed": True},))]],
]


# ---- 12.3: many tasks and runs: the rules in their order, the inputs untouched; a real capped run; bad steps
def _expected_12_3(task, calls, steps, stop_reason):
    """The exercise's rules, written plainly."""
    problems = []
    for tool in task.get("required_tools", []):
        results = [not c["is_error"] for c in calls if c["tool"] == tool]
        if not results:
            problems.append(f"never called {tool}")
        elif not any(results):
            problems.append(f"every call of {tool} failed")
    for tool in task.get("forbidden_tools", []):
        if any(c["tool"] == tool for c in calls):
            problems.append(f"called forbidden {tool}")
    if stop_reason != "finish":
        problems.append(f"did not finish (stop reason {stop_reason!r})")
    if task.get("max_steps") is not None and steps > task["max_steps"]:
        problems.append(f"took {steps} steps, over {task['max_steps']}")
    return problems


def _runs_12_3():
    tools, rng, drawn = ["lookup", "calculator", "search_docs", "read_file", "list_files"], random.Random(123), []
    for _ in range(400):
        shuffled = rng.sample(tools, len(tools))
        cut = rng.randint(0, 3)
        task = {"required_tools": shuffled[:cut], "forbidden_tools": shuffled[cut:cut + rng.randint(0, 2)]}
        if rng.random() < 0.8:
            task["max_steps"] = rng.randint(1, 6)
        calls = [{"step": n, "tool": rng.choice(tools), "is_error": rng.random() < 0.3}
                 for n in range(1, rng.randint(1, 7))]
        steps = len(calls) + rng.randint(0, 2)
        reason = rng.choice(["finish", "finish", "max_steps", "model_error", "repeated_call", None])
        drawn.append((task, calls, steps, reason))
    return drawn


_CASES_12_3 = [
    *[Case(f"run #{n}: {len(calls)} calls, {steps} steps, {reason!r}", using(judged_path, task, calls, steps, reason),
           expected=(_expected_12_3(task, calls, steps, reason), copy.deepcopy(task), copy.deepcopy(calls)),
           hint="required tools (never called, every call failed), forbidden tools, finishing, steps: in that "
                "order; and task and calls left as they were")
      for n, (task, calls, steps, reason) in enumerate(_runs_12_3(), 1)],
    Case("a real run stopped by its step cap", using(looping_run, TASK, 3),
         expected=["never called calculator", "did not finish (stop reason 'max_steps')"],
         hint="three lookups, then the cap: the calculator never ran and the run did not finish"),
    *[_raises_value_error(f"steps={steps!r}", using(judged_path, TASK, [], steps, "finish"),
                          "steps is a whole number (type int, not bool), 0 or more: else ValueError")
      for steps in [1.0, "3", None, False, -2]],
]


# ---- 12.4: many pairs of suites: course_lib's compare's regressions, the inputs untouched; bad records refused
def _expected_12_4(old, new):
    """course_lib's compare: its regressions, the tasks new lost among them (with after None)."""
    return [{"task": row["task"], "before": row["before"], "after": row["after"]}
            for row in compare(old, new) if row["change"] == "regression"]


def _pairs_12_4():
    rng, drawn = random.Random(124), []
    for _ in range(300):
        names = [f"task-{n}" for n in range(rng.randint(1, 8))]
        old = [{"task": t, "passed": rng.random() < 0.6} for t in names for _ in range(rng.randint(1, 4))]
        new = [{"task": t, "passed": rng.random() < 0.6} for t in names + ["extra"] if rng.random() < 0.85
               for _ in range(rng.randint(1, 4))]
        rng.shuffle(old)
        rng.shuffle(new)
        drawn.append((old, new))
    return drawn


_CASES_12_4 = [
    *[Case(f"pair #{n}: {len(old)} runs, then {len(new)}", using(regressed, old, new),
           expected=(_expected_12_4(old, new), copy.deepcopy(old), copy.deepcopy(new)),
           hint="the tasks whose share of passing runs went down or that new lost (after None), in old's order; "
                "and old and new left as they were")
      for n, (old, new) in enumerate(_pairs_12_4(), 1)],
    Case("RUNS against themselves, reversed", using(regressed, RUNS, list(reversed(RUNS))),
         test=lambda got: got[0] == [], shows="[]", hint="the same runs in another order: nothing regressed"),
    *[_raises_value_error(label, using(regressed, old, new), _RECORD.replace(", every task as many runs", ""))
      for label, (old, new) in [
          ("old: passed is 0", ([{"task": "a", "passed": 0}], [])),
          ("new: task is None", ([], [{"task": None, "passed": True}])),
          ("old is None", (None, [])), ("new is 'a'", ([], "a")),
          ("old: passed is 1", ([{"task": "a", "passed": 1}], [])),
          ("new: task is 7", ([], [{"task": 7, "passed": False}])), ("old is ()", ((), [])),
          ("new is a tuple", ([], ({"task": "a", "passed": True},)))]],
]

HIDDEN = {"12.1": _CASES_12_1, "12.2": _CASES_12_2, "12.3": _CASES_12_3, "12.4": _CASES_12_4}

# Wrong solutions that pass every visible case and fail a hidden one (the old hidden-test cell failed them too):
# (exercise, the hidden case's label it fails, [(old, new) edits of the solution cell], the mistake in a few words)
CAUGHT = [
    ("12.1", "#359 regex ^\\d+$ on ' 168'",
     [('re.search(check["pattern"], text)', 're.search(check["pattern"], str(answer))')], "regex on the raw answer"),
    ("12.1", "#31 exact 십 개 (NFD) on '12,5 1,024 1024. 3.61'",
     [('        return text == norm(check["value"])',
       '        check["value"] = norm(check["value"])\n        return text == check["value"]')],
     "the normalised text written back into the check"),
    ("12.2", "a record that is a list", [("if not isinstance(record, dict) or not isinstance", "if not isinstance")],
     "records not checked for dicts"),
    ("12.2", "suite #2: 4 runs", [("    counts = {len(passed)",
                                   '    results.sort(key=lambda r: r["task"])\n    counts = {len(passed)')],
     "the caller's runs sorted in place"),
    ("12.3", "run #43: 6 calls, 6 steps, None", [('elif all(call.get("is_error") for call in mine):',
                                                 'elif mine[-1].get("is_error"):')], "the last call decides"),
    ("12.3", "run #48: 4 calls, 4 steps, None",
     [('for tool in forbidden if tool in used]',
       'for tool in dict.fromkeys(c["tool"] for c in calls) if tool in forbidden]')],
     "forbidden tools in the order called"),
    ("12.3", "steps=1.0", [("if type(steps) is not int or steps < 0:", "if isinstance(steps, bool) or steps < 0:")],
     "only bools refused as steps"),
    ("12.4", "new is a tuple", [("if not isinstance(old, list) or not isinstance(new, list):",
                                 "if not isinstance(old, list):")], "only old checked for a list"),
    ("12.4", "new: task is 7", [('not isinstance(record.get("task"), str)', 'record.get("task") is None')],
     "only a missing task refused"),
]
