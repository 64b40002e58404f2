"""The exercise check engine: a ✓/✗ table, never a crash, never a hang."""
import pytest

from course_lib import checks
from course_lib.checks import Case, CheckResult, Exercise, check, render


@pytest.fixture
def toy_exercise(monkeypatch):
    """Register a throw-away exercise "00.1" so these tests do not depend on the course's own cases."""
    spec = Exercise("double a number", [
        Case("2 -> 4", lambda f: f(2), expected=4, hint="multiply by two"),
        Case("text is refused", lambda f: f("x"), raises=TypeError, hint="raise TypeError for text"),
        Case("result is an int", lambda f: f(5), test=lambda got: type(got) is int, shows="an int"),
    ])
    monkeypatch.setattr(checks, "exercise", lambda exercise_id: {"00.1": spec}[exercise_id])
    return spec


def double(x):
    if not isinstance(x, int):
        raise TypeError("numbers only")
    return 2 * x


def test_a_correct_solution_passes_and_prints_a_table(toy_exercise, capsys):
    result = check("00.1", double)
    out = capsys.readouterr().out
    assert result.passed and isinstance(result, CheckResult) and checks.RESULTS["00.1"] is result
    assert out.splitlines()[0] == "Exercise 00.1 · double a number"
    assert "✓  2 -> 4" in out and "3/3 passed ✓ well done" in out and "✗" not in out


def test_a_wrong_solution_shows_expected_got_and_the_hint(toy_exercise, capsys):
    result = check("00.1", lambda x: x * 3)
    out = capsys.readouterr().out
    assert not result.passed
    assert [c.ok for c in result.cases] == [False, False, True]
    assert "✗  2 -> 4" in out and "hint: multiply by two" in out
    assert result.cases[0].expected == "4" and result.cases[0].got == "6"
    assert result.cases[1].got == "'xxx'" and "0/3" not in out and "1/3 passed" in out


def test_a_stub_says_not_implemented_yet_not_a_traceback(toy_exercise, capsys):
    def stub(x):
        raise NotImplementedError()
    result = check("00.1", stub)
    out = capsys.readouterr().out
    assert result.not_implemented and not result.passed and result.cases == []
    assert "not implemented yet" in out and "Traceback" not in out


def test_exceptions_in_the_learners_code_are_failed_cases(toy_exercise, capsys):
    result = check("00.1", lambda x: 1 / 0)
    assert not result.passed
    assert result.cases[0].got == "raised ZeroDivisionError: division by zero"
    assert "raised ZeroDivisionError" in capsys.readouterr().out


def test_an_endless_loop_is_stopped(toy_exercise, monkeypatch):
    monkeypatch.setattr(checks, "CASE_SECONDS", 1)

    def forever(x):
        while True:
            pass
    result = check("00.1", forever, quiet=True)
    assert not result.passed and all(c.got == "no answer after 1 s" for c in result.cases)


def test_an_unknown_exercise_or_a_wrong_kind_of_candidate_never_crashes(capsys):
    result = check("42.9", double)
    assert result.error == "there is no exercise '42.9'" and not result.passed
    assert "✗ there is no exercise" in capsys.readouterr().out


def test_equal_values_of_another_type_do_not_pass(toy_exercise):
    result = check("00.1", lambda x: 4.0 if x == 2 else double(x), quiet=True)
    assert not result.cases[0].ok        # 4.0 == 4 in Python, but the exercise asked for an int


def test_render_and_repr_are_stable():
    result = CheckResult("00.1", "t", [checks.CaseResult("a", True, "1", "1")])
    assert repr(result) == "CheckResult('00.1', 1/1 cases passed)"
    assert render(result).endswith("1/1 passed ✓ well done")


def test_long_dicts_and_lists_that_differ_say_where(monkeypatch, capsys):
    schema = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"],
              "additionalProperties": False}
    spec = Exercise("schema", [Case("whole schema", lambda f: f(), expected=schema),
                               Case("list", lambda f: [1, 2, 3], expected=[1, 2, 4])])
    monkeypatch.setattr(checks, "exercise", lambda exercise_id: spec)
    result = check("00.2", lambda: {k: v for k, v in schema.items() if k != "additionalProperties"})
    assert "key 'additionalProperties' is missing" in result.cases[0].hint
    assert "at item 2, expected 4, got 3" in result.cases[1].hint
    assert "first difference" in capsys.readouterr().out
