"""Stage 12: the visible cases catch plausible wrong solutions, and the reference solutions pass them.

As in ``test_cases_catch_wrong_solutions.py``: each ``make_*`` function with its defaults builds the reference
solution of ``solutions/12_evaluation_exercises.ipynb``, copied (the notebook is the source, and
``tests/test_exercises.py`` grades the notebook itself); each keyword switch turns on one plausible mistake.
A wrong solution must fail the visible check, on the case named next to it.
"""
from __future__ import annotations

import re
import unicodedata

import pytest

from test_cases_catch_wrong_solutions import caught_on, failed, only_slips   # tests/ is on sys.path: pytest puts it there (rootdir mode)

TYPES = ("exact", "number", "contains", "regex")
NUMBER = re.compile(r"-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?")


# ---- 12.1 answer_passes
def make_answer_passes(*, nfc=True, nfc_check=True, number=NUMBER, pick=lambda found: found[0], inclusive=True,
                       slack=1e-9, fold=str.casefold, exact_fold=False, every=all, search=re.search,
                       none_is_empty=False, as_bool=True, strict_type=True):
    def answer_passes(check, answer):
        if not isinstance(check, dict) or (strict_type and check.get("type") not in TYPES):
            raise ValueError("check must be a dict whose 'type' is exact, number, contains or regex")
        if answer is None:
            if not none_is_empty:
                return False
            answer = ""
        norm = (lambda text: unicodedata.normalize("NFC", str(text)).strip()) if nfc else (lambda t: str(t).strip())
        norm_check = norm if nfc_check else (lambda t: str(t).strip())   # the check's texts, maybe left as they are
        case = fold or (lambda text: text)
        text, kind = norm(answer), check["type"]
        if kind == "exact":
            return case(text) == case(norm_check(check["value"])) if exact_fold else text == norm_check(check["value"])
        if kind == "number":
            found = number.findall(text)
            if not found:
                return False
            gap, limit = abs(float(pick(found).replace(",", "")) - check["value"]), check.get("tolerance", 0) + slack
            return gap <= limit if inclusive else gap < limit
        if kind == "contains":
            values = check["value"] if isinstance(check["value"], list) else [check["value"]]
            return every(case(norm_check(v)) in case(text) for v in values)
        if kind == "regex":
            found = search(check["pattern"], text)
            return found is not None if as_bool else found
        return False
    return answer_passes


# ---- 12.2 pass_rates
def make_pass_rates(*, records=lambda r: isinstance(r.get("task"), str) and type(r.get("passed")) is bool,
                    equal_k=True, hat=lambda passed, k: all(passed), at=lambda passed: any(passed), empty=0.0,
                    container=list):
    def pass_rates(results):
        if not isinstance(results, container):
            raise ValueError("results must be a list of run records")
        by_task = {}
        for i, r in enumerate(results):
            if not isinstance(r, dict) or not records(r):
                raise ValueError(f"results[{i}] is not a run record")
            by_task.setdefault(r["task"], []).append(r["passed"])
        if empty is not None and not by_task:
            return {"runs": 0, "tasks": 0, "k": 0, "pass_rate": empty, "pass@k": empty, "pass^k": empty}
        counts = sorted({len(p) for p in by_task.values()})
        if equal_k and len(counts) > 1:
            raise ValueError(f"every task needs the same number of runs; these have {counts}")
        tasks, k = len(by_task), counts[-1]
        rate = sum(r["passed"] for r in results) / len(results)
        return {"runs": len(results), "tasks": tasks, "k": k, "pass_rate": rate,
                "pass@k": sum(at(p) for p in by_task.values()) / tasks,
                "pass^k": rate ** k if hat is None else sum(hat(p, k) for p in by_task.values()) / tasks}
    return pass_rates


# ---- 12.3 trajectory_problems
def make_trajectory_problems(*, working_only=True, once=True, failed_forbidden=True, over=lambda s, m: s > m,
                             check_finish=True, steps_ok=lambda s: type(s) is int and s >= 0, both=True,
                             finished=lambda stop_reason: stop_reason == "finish"):
    def trajectory_problems(task, calls, steps, stop_reason):
        required, forbidden = task.get("required_tools", []), task.get("forbidden_tools", [])
        if both and set(required) & set(forbidden):
            raise ValueError("a tool cannot be both required and forbidden")
        if not steps_ok(steps):
            raise ValueError("steps must be a whole number, 0 or more")
        for i, call in enumerate(calls):
            if not isinstance(call, dict) or not isinstance(call.get("tool"), str):
                raise ValueError(f"calls[{i}] is not a tool call")
        problems = []
        for tool in required:
            mine = [c for c in calls if c["tool"] == tool]
            if not mine:
                problems.append(f"never called {tool}")
            elif working_only and all(c.get("is_error") for c in mine):
                problems.append(f"every call of {tool} failed")
        counted = [c["tool"] for c in calls if failed_forbidden or not c.get("is_error")]
        if once:
            problems += [f"called forbidden {tool}" for tool in forbidden if tool in counted]
        else:
            problems += [f"called forbidden {tool}" for tool in counted if tool in forbidden]
        if check_finish and not finished(stop_reason):
            problems.append(f"did not finish (stop reason {stop_reason!r})")
        if "max_steps" in task and over(steps, task["max_steps"]):
            problems.append(f"took {steps} steps, over {task['max_steps']}")
        return problems
    return trajectory_problems


# ---- 12.4 regressions
def make_regressions(*, missing=True, share=lambda passed: sum(passed) / len(passed), order="old",
                     worse=lambda now, was: now < was, check_records=True, pairwise=False):
    def regressions(old, new):
        if not isinstance(old, list) or not isinstance(new, list):
            raise ValueError("old and new must be lists of run records")
        tallies = []
        for results in (old, new):
            by_task = {}
            for i, r in enumerate(results):
                ok = isinstance(r, dict) and isinstance(r.get("task"), str) and type(r.get("passed")) is bool
                if check_records and not ok:
                    raise ValueError(f"results[{i}] is not a run record")
                by_task.setdefault(r["task"], []).append(r["passed"])
            tallies.append(by_task)
        before, after = tallies
        tasks = {"old": list(before), "sorted": sorted(before), "new": [t for t in after if t in before]}[order]
        found = []
        for task in tasks:
            now = share(after[task]) if task in after else None
            dropped = pairwise and any(b and not a for b, a in zip(before[task], after.get(task, [])))
            if now is None and missing or now is not None and (dropped or worse(now, share(before[task]))):
                found.append({"task": task, "before": share(before[task]), "after": now})
        return found
    return regressions


REFERENCES = {"12.1": make_answer_passes, "12.2": make_pass_rates, "12.3": make_trajectory_problems,
              "12.4": make_regressions}


@pytest.mark.parametrize("exercise_id", sorted(REFERENCES))
def test_the_reference_solution_passes_every_visible_case(exercise_id):
    assert failed(exercise_id, REFERENCES[exercise_id]()) == []


WRONG = [
    # 12.1 Unicode forms (of the answer, of the check's texts); thousands commas; the last number; a number cut at a
    # word boundary; the tolerance's edge and float slack; case (ignored in exact, lower() for casefold(), not at
    # all); all vs any; re.match; None read as ""; a Match object; an unknown type passed over
    ("12.1", lambda: make_answer_passes(nfc=False), "exact: decomposed Hangul (NFD)"),
    ("12.1", lambda: make_answer_passes(nfc=False), "contains: decomposed Hangul (NFD)"),
    ("12.1", lambda: make_answer_passes(nfc_check=False), "exact: the check's text decomposed (NFD)"),
    ("12.1", lambda: make_answer_passes(nfc_check=False), "contains: the check's text decomposed (NFD)"),
    ("12.1", lambda: make_answer_passes(exact_fold=True), "exact: case counts"),
    ("12.1", lambda: make_answer_passes(fold=str.lower), "contains: ß casefolds to ss"),
    ("12.1", lambda: make_answer_passes(number=re.compile(r"-?\b(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?\b")),
     "number: 3일 is 3"),
    ("12.1", lambda: make_answer_passes(inclusive=False, slack=0), "number: no tolerance, exactly right"),
    ("12.1", lambda: make_answer_passes(number=re.compile(r"-?\d+(?:\.\d+)?")), "number: 255,000원"),
    ("12.1", lambda: make_answer_passes(pick=lambda found: found[-1]), "number: the first number counts"),
    ("12.1", lambda: make_answer_passes(number=re.compile(r"\d+(?:,\d{3})*(?:\.\d+)?")), "number: a minus sign"),
    ("12.1", lambda: make_answer_passes(inclusive=False, slack=0), "number: at the edge, 168.5"),
    ("12.1", lambda: make_answer_passes(slack=0), "number: 3.6 within 0.1 of 3.5"),
    ("12.1", lambda: make_answer_passes(fold=None), "contains: case does not matter"),
    ("12.1", lambda: make_answer_passes(every=any), "contains: every text must be there"),
    ("12.1", lambda: make_answer_passes(search=re.match), "regex: a search, not a match"),
    ("12.1", lambda: make_answer_passes(none_is_empty=True), "no answer never passes"),
    ("12.1", lambda: make_answer_passes(as_bool=False), "returns a bool"),
    ("12.1", lambda: make_answer_passes(strict_type=False), "an unknown type"),
    # 12.2 pass^k as pass_rate ** k; any and all swapped; unequal repeats let through; truthy records; 0/0; an int
    # 0 for no runs; a tuple taken for a list
    ("12.2", lambda: make_pass_rates(hat=None), "pass^k is not pass rate ** k"),
    ("12.2", lambda: make_pass_rates(hat=lambda p, k: any(p), at=lambda p: all(p)), "three repeats, one flaky task"),
    ("12.2", lambda: make_pass_rates(equal_k=False), "unequal repeats"),
    ("12.2", lambda: make_pass_rates(records=lambda r: isinstance(r.get("task"), str) and "passed" in r),
     "passed is 1, not True"),
    ("12.2", lambda: make_pass_rates(records=lambda r: "passed" in r), "a run without a task"),
    ("12.2", lambda: make_pass_rates(empty=None), "no runs"),
    ("12.2", lambda: make_pass_rates(empty=0), "no runs: the rates are floats"),
    ("12.2", lambda: make_pass_rates(container=(list, tuple)), "a tuple, not a list"),
    # 12.3 a failed call counted as using the tool; a forbidden tool once per call; >= at the cap; the stop
    # reason ignored, or None taken for a finish; only working forbidden calls; True as steps; a task at odds
    # with itself
    ("12.3", lambda: make_trajectory_problems(working_only=False), "only failed calls"),
    ("12.3", lambda: make_trajectory_problems(once=False), "the forbidden tool twice"),
    ("12.3", lambda: make_trajectory_problems(over=lambda s, m: s >= m), "exactly at the cap"),
    ("12.3", lambda: make_trajectory_problems(check_finish=False), "stopped at the cap"),
    ("12.3", lambda: make_trajectory_problems(finished=lambda reason: reason in ("finish", None)), "stop reason None"),
    ("12.3", lambda: make_trajectory_problems(failed_forbidden=False), "forbidden, even when it failed"),
    ("12.3", lambda: make_trajectory_problems(steps_ok=lambda s: isinstance(s, int) and s >= 0), "steps=True"),
    ("12.3", lambda: make_trajectory_problems(both=False), "a tool both required and forbidden"),
    # 12.4 a vanished task ignored; the first run only; sorted or new's order; run by run instead of shares;
    # any change instead of a drop; bad records
    ("12.4", lambda: make_regressions(missing=False), "a task that is gone"),
    ("12.4", lambda: make_regressions(share=lambda passed: float(passed[0])), "repeats: 2 of 3, then 1 of 3"),
    ("12.4", lambda: make_regressions(order="sorted"), "in the old run's order"),
    ("12.4", lambda: make_regressions(order="new"), "in the old run's order"),
    ("12.4", lambda: make_regressions(pairwise=True), "the same share, other runs"),
    ("12.4", lambda: make_regressions(worse=lambda now, was: now != was), "fixes are not regressions"),
    ("12.4", lambda: make_regressions(check_records=False), "passed is 'no'"),
]


@pytest.mark.parametrize("exercise_id, make, label", WRONG, ids=[f"{e}-{label}" for e, _, label in WRONG])
def test_a_plausible_wrong_solution_fails_on_the_case_made_for_it(exercise_id, make, label):
    caught_on(exercise_id, make, label)


def test_the_wrong_solutions_above_are_plausible_slips_not_broken_code():
    only_slips(WRONG)


def test_every_exercise_of_stage_12_has_a_wrong_solution_here():
    assert {e for e, _, _ in WRONG} == set(REFERENCES) == {"12.1", "12.2", "12.3", "12.4"}
