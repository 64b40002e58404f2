"""`answered`: the check of a your-turn cell waits while `...` is left in what the learner writes."""
import pytest

from course_lib.courseware.your_turn import answered


def unwritten(messages):
    """A docstring is not an answer."""
    ...


def written(messages):
    return "..."   # the text "..." is an answer, and so is a comment: ...


def nested_unwritten(x):
    if x:
        return 1
    ...


@pytest.mark.parametrize("value", [..., {"a": ...}, {...: True}, [1, ...], (..., 2), {1, ...}, [[{"k": ...}]],
                                   frozenset({...}), unwritten, nested_unwritten])
def test_a_placeholder_anywhere_waits_and_says_what_to_write(value, capsys):
    assert answered(value, what="your guess") is False
    printed = capsys.readouterr().out
    assert printed == ("your turn: write your guess in place of the ..., then run this cell again (the course's "
                       "answer is folded in\n    the cell below)\n")   # wrapped at spaces, as say wraps it


@pytest.mark.parametrize("value", [0, None, "", "...", False, [], {"a": 1}, (1, "..."), written, print, len,
                                   lambda x: x])
def test_an_answer_of_any_kind_goes_on_silently(value, capsys):
    assert answered(value) is True
    assert capsys.readouterr().out == ""


def test_every_value_counts_and_the_default_asks_for_a_prediction(capsys):
    assert answered(1, 2, ...) is False and "write your prediction in place" in capsys.readouterr().out
    assert answered(1, 2, 3) is True


def test_a_function_without_source_is_taken_as_written():
    space = {}
    exec("def made(x):\n    ...\n", space)   # exec keeps no source file: nothing to read, so nothing to wait for
    assert answered(space["made"]) is True
