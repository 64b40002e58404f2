"""The hidden cases of ``solutions/hidden/``: the reference solutions pass them, the stubs do not, and the grader's
way (the worker's outcomes sent as JSON and judged elsewhere) gives exactly the rows the in-place run gives.

The reference solution of an exercise is built as ``test_wrong_solutions`` builds it: the notebook's cells before
the answer, the answer, and the check cell's candidate; its wrong solutions fail visible cases. The wrong solutions
that pass every visible case are in each hidden file's ``CAUGHT``: each must fail the hidden case named for it."""
from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import types
import warnings

import pytest

from course_lib.courseware import checks, hidden, observe
from course_lib.courseware.notebook_marks import ROOT, SOLUTION, stub
from test_wrong_solutions import WRONG, _parts, exercise_ids, solution

MINIMUM = 5   # hidden cases per exercise


def worker_way(exercise_id, candidate, cases):
    """The rows the grader gives: outcomes observed as the worker does, through JSON, judged as the grader does."""
    outcomes = json.loads(json.dumps(observe._outcomes(cases, candidate)))
    return observe.judged(exercise_id, cases, outcomes, getattr(candidate, "__qualname__", None))


def both_ways(exercise_id, candidate, cases):
    """(the rows in place, the rows the grader's way) from one call of each case: what the call gave, judged at
    once as check() judges it, and that call's outcome as the worker sends it (through JSON), judged as the
    grader judges it. A case that ran out of time did so once, for both: no race between two runs."""
    rows = {}

    def given(what):
        if isinstance(what, BaseException):
            raise what
        return what

    def remembered(n, case):
        def call(c):
            try:
                got = case.call(c)
            except BaseException as e:
                rows[n] = checks._evaluate(dataclasses.replace(case, call=lambda _: given(e)), c)
                raise
            rows[n] = checks._evaluate(dataclasses.replace(case, call=lambda _: got), c)   # before anything else runs
            return got
        return dataclasses.replace(case, call=call)

    outcomes = json.loads(json.dumps(observe._outcomes([remembered(n, c) for n, c in enumerate(cases)], candidate)))
    graded = observe.judged(exercise_id, cases, outcomes, getattr(candidate, "__qualname__", None))
    numbered = {id(c): n for n, c in enumerate(cases)}

    def in_place(case):
        n = numbered[id(case)]
        if n not in rows:   # it did not finish: given up as check() gives it up
            stopped = outcomes[n].get("stopped") is not False
            return checks.gave_up(case, checks.CASE_SECONDS, stopped), False, stopped
        return rows[n], True, True

    own = getattr(candidate, "__qualname__", None) if isinstance(candidate, types.FunctionType) else None
    return checks.collect(exercise_id, in_place, cases, own), graded


def stubbed(exercise_id):
    before, source, check_cell = _parts(exercise_id)
    namespace, handed = {"__name__": "__main__"}, []
    with warnings.catch_warnings(), contextlib.redirect_stdout(io.StringIO()):
        for code in before:
            exec(code, namespace)
        exec(compile(SOLUTION.sub(stub, source), "stub", "exec"), namespace)
        namespace["check"] = lambda eid, candidate, **_: handed.append(candidate)
        exec(check_cell, namespace)
    return handed[0]


@pytest.mark.parametrize("exercise_id", exercise_ids())
def test_the_reference_passes_every_hidden_case_in_place_and_the_grader_s_way(exercise_id):
    cases = hidden.cases(exercise_id)
    assert len(cases) >= MINIMUM
    assert all(isinstance(c.call, observe.Probe) for c in cases), "a hidden case's call must be a Probe (data)"
    assert len({c.label for c in cases}) == len(cases), "hidden case labels must be unique"
    in_place, graded = both_ways(exercise_id, solution(exercise_id), cases)
    assert [(c.label, c.got) for c in in_place.cases if not c.ok] == []
    assert [(c.label, c.ok, c.got) for c in graded.cases] == [(c.label, c.ok, c.got) for c in in_place.cases]
    hidden.verify(exercise_id, solution(exercise_id))


@pytest.mark.parametrize("exercise_id", exercise_ids())
def test_the_stub_fails_the_hidden_cases_and_nbgrader_s_cell(exercise_id):
    result = worker_way(exercise_id, stubbed(exercise_id), hidden.cases(exercise_id))
    assert result.not_implemented or not result.passed
    with pytest.raises(AssertionError):
        hidden.verify(exercise_id, stubbed(exercise_id))


@pytest.mark.parametrize("exercise_id", exercise_ids())
def test_the_public_cases_judged_the_grader_s_way_agree_with_check(exercise_id):
    in_place, graded = both_ways(exercise_id, solution(exercise_id), list(checks.exercise(exercise_id).cases))
    assert [(c.label, c.ok, c.got) for c in graded.cases] == [(c.label, c.ok, c.got) for c in in_place.cases]
    assert in_place.passed


@pytest.mark.parametrize("row", [w for w in WRONG], ids=lambda w: w.id)
def test_a_wrong_solution_gets_the_same_rows_the_grader_s_way(row, monkeypatch):
    # Both ways judge one call, so a case given up is given up for both, whatever the limit: a second keeps the
    # slow-by-design wrong solutions (10.1's history.index(), 11.1's every word in every document) from spending
    # 5 s of CPU on each case they give up (test_wrong_solutions holds them to the real limit).
    monkeypatch.setattr(checks, "CASE_SECONDS", 1)
    candidate = solution(row.exercise, row.edits)
    for cases in (list(checks.exercise(row.exercise).cases), hidden.cases(row.exercise)):
        in_place, graded = both_ways(row.exercise, candidate, cases)
        assert [(c.label, c.ok) for c in graded.cases] == [(c.label, c.ok) for c in in_place.cases]


CAUGHT = [(stage, *row) for stage in sorted({e.split(".")[0] for e in exercise_ids()})
          if (ROOT / "solutions" / "hidden" / f"stage{stage}.py").is_file()   # a missing file fails the tests above
          for row in getattr(hidden.module(stage), "CAUGHT", [])]


@pytest.mark.parametrize("stage, exercise_id, label, edits, note", CAUGHT, ids=[f"{r[1]}-{r[4]}" for r in CAUGHT])
def test_a_wrong_solution_only_hidden_cases_catch_passes_check_and_fails_its_hidden_case(stage, exercise_id, label,
                                                                                          edits, note):
    candidate = solution(exercise_id, edits)
    assert checks.run_cases(exercise_id, candidate).passed, f"{note}: it should pass every visible case"
    rows = {c.label: c for c in worker_way(exercise_id, candidate, hidden.cases(exercise_id)).cases}
    assert label in rows and not rows[label].ok, f"{note}: the hidden case {label!r} should fail it"


def test_every_exercise_has_at_least_two_wrong_solutions_that_only_hidden_cases_catch():
    counts = {e: sum(row[1] == e for row in CAUGHT) for e in exercise_ids()}
    assert {e: n for e, n in counts.items() if n < 2} == {}


def test_the_agent_runs_stage_06_s_cases_read_are_what_today_s_agent_does():
    """Stage 06's cases read two recorded Agent runs (the finished Agent is not where the grader runs answers)."""
    from course_lib import default_tools
    from course_lib.agent import Agent
    from course_lib.courseware.exercises import stage06
    from course_lib.courseware.scenarios import SCENARIOS
    from course_lib.models import ScriptedModel
    for key, recorded in stage06.RUNS.items():
        name, steps = key.split(", max_steps=")
        agent = Agent(default_tools(), ScriptedModel(SCENARIOS[name]["replies"]), max_steps=int(steps))
        agent.run(SCENARIOS[name]["goal"])
        assert agent.history == recorded, key


def test_the_suites_stage_12_s_cases_read_are_what_today_s_run_suite_returns():
    """Stage 12's cases read recorded suites (the finished evaluation module is not where answers run)."""
    from course_lib.courseware.eval_lab import careful, sloppy
    from course_lib.courseware.exercises import stage12
    from course_lib.evaluation import load_tasks, run_suite
    live = {"careful, four tasks, twice": run_suite(load_tasks()[:4], careful, repeat=2),
            "careful": run_suite(load_tasks(), careful), "sloppy": run_suite(load_tasks(), sloppy)}
    timeless = lambda runs: [{k: v for k, v in r.items() if k != "seconds"} for r in runs]
    assert {k: timeless(v) for k, v in stage12.RUNS.items()} == {k: timeless(v) for k, v in live.items()}


def test_nbgrader_s_hidden_cell_fails_first_on_a_failed_check_then_on_a_finished_version():
    """What makes nbgrader's verdict `course check`'s: the visible cases must pass, and the answer be one's own."""
    from course_lib.parsing import parse_reply
    with pytest.raises(AssertionError, match=r"the check of 04\.1 above did not pass"):
        hidden.verify("04.1", lambda data: None)
    with pytest.raises(AssertionError, match=r"the answer to 04\.3 \('parse_reply'\) is course_lib's finished"):
        hidden.verify("04.3", parse_reply)


def test_a_hidden_case_that_fails_is_named_with_what_was_expected_and_what_came_back():
    def wrong(data):   # the reference, but blind to a tool name of tabs and newlines
        if not isinstance(data, dict):
            return "an action must be a JSON object"
        tool = data.get("tool")
        if not isinstance(tool, str) or tool.strip(" ") == "":
            return '"tool" must be a non-empty string'
        args = data.get("args")
        return None if args is None or isinstance(args, dict) else '"args" must be a JSON object'
    with pytest.raises(AssertionError, match=r"hidden case\(s\) failed; the first: .*expected .*, got None"):
        hidden.verify("04.1", wrong)


def test_nbgrader_s_hidden_cell_shows_where_nested_values_first_differ():
    wrong = solution("10.2", [("[m for step in steps[first:] for m in step]",   # a call and at most two results
                               "[m for step in steps[first:] for m in step[:3]]")])
    with pytest.raises(AssertionError, match=r"the first: random history 4: keep 0 to 7: expected .*, got .* \(first "
                                             r"difference: at item 0 → at item 4 → at item 5 → at key 'role'"):
        hidden.verify("10.2", wrong)
