"""dispatch (SPEC §4, course_lib.dispatch): check the model's call, run the tool, never raise.

Every failure becomes ``Observation(is_error=True)`` whose content starts with "Error:" and names the
culprit, so the model can correct itself; only ``KeyboardInterrupt`` gets through.
"""
import asyncio
import errno
import json
import os
from typing import Literal, Optional

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from course_lib.dispatch import MAX_RESULT_CHARS, Observation, call_key, dispatch
from course_lib.registry import ToolRegistry
from course_lib.tools import ToolError, calculator
from support import Tally


# ------------------------------------------------------------------ sample tools, one per kind of annotation

def add(a: int, b: int = 10) -> int:
    return a + b


def scale(x: float) -> float:
    return x * 1.5


def shout(text: str) -> str:
    return text.upper()


def toggle(flag: bool) -> str:
    return "on" if flag else "off"


def join_words(words: list[str]) -> str:
    return " ".join(words)


def maybe(n: Optional[int] = 0) -> str:
    return "nothing" if n is None else f"n={n}"


def maybe_new(n: int | None) -> str:
    return "nothing" if n is None else f"n={n}"


def pick(colour: Literal["red", "green"]) -> str:
    return colour


def greet(name: str, greeting: str = "Hello") -> str:
    return f"{greeting}, {name}!"


def flexible(a: int, **extra) -> dict:
    return {"a": a, **extra}


def price_sheet() -> dict:
    return {"단가": "1,200원", "품목": ["사과", "배"]}


def give(value=None):
    return value


def huge(n: int) -> str:
    return "x" * n


def refuses(topic: str) -> str:
    raise ToolError(f"nothing is known about '{topic}'; try 단가")


def crashes() -> str:
    raise ValueError("bad value 42")


def divides(n: int) -> float:
    return 1 / n


def recurses() -> str:
    def again(k):
        return again(k + 1)
    return again(0)


def interrupts() -> str:
    raise KeyboardInterrupt


TOOLS = {f.__name__: f for f in (calculator, add, scale, shout, toggle, join_words, maybe, maybe_new, pick,
                                  greet, flexible, price_sheet, give, huge, refuses, crashes, divides,
                                  recurses, interrupts)}


def assert_error(obs, *fragments):
    assert isinstance(obs, Observation)
    assert obs.is_error is True
    assert obs.content.startswith("Error:")
    for fragment in fragments:
        assert fragment in obs.content, f"{fragment!r} not in {obs.content!r}"


# ------------------------------------------------------------------ successful calls

SUCCESSES = [
    # (name, args, expected content)
    pytest.param("calculator", {"expression": "24*7"}, "168", id="calculator"),
    pytest.param("add", {"a": 1, "b": 2}, "3", id="int-result-as-text"),
    pytest.param("add", {"a": 1}, "11", id="default-honoured"),
    pytest.param("greet", {"name": "Ada"}, "Hello, Ada!", id="default-str-honoured"),
    pytest.param("greet", {"name": "Ada", "greeting": "Hi"}, "Hi, Ada!", id="default-overridden"),
    pytest.param("scale", {"x": 3}, "4.5", id="int-is-a-fine-float"),
    pytest.param("scale", {"x": 0.5}, "0.75", id="float"),
    pytest.param("toggle", {"flag": True}, "on", id="bool"),
    pytest.param("join_words", {"words": ["a"]}, "a", id="list-of-str"),
    pytest.param("join_words", {"words": []}, "", id="empty-list-of-str"),
    pytest.param("maybe", {"n": None}, "nothing", id="optional-int-none"),
    pytest.param("maybe", {"n": 3}, "n=3", id="optional-int-value"),
    pytest.param("maybe", {}, "n=0", id="optional-int-omitted"),
    pytest.param("maybe_new", {"n": None}, "nothing", id="pipe-union-none"),
    pytest.param("pick", {"colour": "green"}, "green", id="literal"),
    pytest.param("flexible", {"a": 1, "x": "y", "z": [1]}, json.dumps({"a": 1, "x": "y", "z": [1]}),
                 id="kwargs-accept-extras"),
    pytest.param("give", {"value": [1, 2, "셋"]}, '[1, 2, "셋"]', id="list-result-as-json"),
    pytest.param("give", {"value": 7}, "7", id="int-result"),
    pytest.param("give", {"value": "plain"}, "plain", id="str-result-unchanged"),
]


@pytest.mark.parametrize("name, args, expected", SUCCESSES)
def test_successful_call(name, args, expected):
    obs = dispatch(TOOLS, name, args)
    assert obs == Observation(content=expected, is_error=False)
    assert obs.error is None


def test_korean_dict_result_is_json_with_korean_intact():
    # The model reads Korean better than \uXXXX escapes: ensure_ascii=False.
    obs = dispatch(TOOLS, "price_sheet", {})
    assert not obs.is_error
    assert "단가" in obs.content and "사과" in obs.content
    assert "\\u" not in obs.content
    assert json.loads(obs.content) == {"단가": "1,200원", "품목": ["사과", "배"]}


def test_none_result_still_gives_the_model_some_text():
    # An empty observation would leave the model guessing whether the call happened.
    obs = dispatch(TOOLS, "give", {})
    assert obs.is_error is False
    assert isinstance(obs.content, str) and obs.content.strip()


def test_plain_dict_works_with_only_real_tools():
    # SPEC: any mapping of name -> function works; the course's calculator needs no wrapper.
    assert dispatch({"calculator": calculator}, "calculator", {"expression": "7/2"}).content == "3.5"


# ------------------------------------------------------------------ long results are cut with a note

@pytest.mark.parametrize("n, cut", [
    pytest.param(MAX_RESULT_CHARS, 0, id="exactly-the-limit-kept"),
    pytest.param(MAX_RESULT_CHARS + 1, 1, id="one-over"),
    pytest.param(1_000_000, 1_000_000 - MAX_RESULT_CHARS, id="1MB"),
])
def test_long_results_are_cut_with_a_note(n, cut):
    obs = dispatch(TOOLS, "huge", {"n": n})
    assert obs.is_error is False
    assert obs.content.startswith("x" * MAX_RESULT_CHARS)
    if cut:
        tail = obs.content[MAX_RESULT_CHARS:]
        assert "xxx" not in tail                          # nothing beyond the limit leaks through
        assert str(cut) in tail                           # the note says how much was left out
        assert len(obs.content) < MAX_RESULT_CHARS + 200
    else:
        assert obs.content == "x" * n


# ------------------------------------------------------------------ refused calls: each names the culprit

REFUSED = [
    # (name, args, fragments the message must contain)
    pytest.param("nope", {}, ["'nope'", "calculator", "add", "price_sheet"],
                 id="unknown-tool-lists-available"),
    pytest.param("Calculator", {"expression": "1"}, ["'Calculator'", "calculator"],
                 id="unknown-case-mismatch"),
    pytest.param(5, {}, ["5", "calculator"], id="name-int"),
    pytest.param(None, {}, ["None", "calculator"], id="name-none"),
    pytest.param(["calculator"], {}, ["calculator"], id="name-list-unhashable"),
    pytest.param("add", [1, 2], ["add", "object", "array"], id="args-list"),
    pytest.param("add", "a=1", ["add", "object", "string"], id="args-string"),
    pytest.param("add", None, ["add", "object", "null"], id="args-none"),
    pytest.param("add", {"a": 1, "c": 2}, ["add", "'c'", "unexpected"], id="unexpected-argument"),
    pytest.param("price_sheet", {"x": 1}, ["'x'", "no arguments"], id="unexpected-for-no-arg-tool"),
    pytest.param("add", {"b": 2}, ["add", "'a'", "missing"], id="missing-required"),
    pytest.param("calculator", {}, ["'expression'", "missing"], id="missing-required-real-tool"),
    # Wrong types, checked against the annotation before the tool runs.
    pytest.param("shout", {"text": 5}, ["'text'", "str", "5"], id="str-given-int"),
    pytest.param("calculator", {"expression": 5}, ["'expression'", "str"], id="real-tool-string-annotations"),
    pytest.param("add", {"a": True}, ["'a'", "int", "boolean true"], id="bool-is-not-int"),
    pytest.param("add", {"a": 1.5}, ["'a'", "int", "1.5"], id="float-is-not-int"),
    pytest.param("add", {"a": "1"}, ["'a'", "int"], id="numeric-string-is-not-int"),
    pytest.param("scale", {"x": True}, ["'x'", "float", "boolean true"], id="bool-is-not-float"),
    pytest.param("scale", {"x": "1.5"}, ["'x'", "float"], id="string-is-not-float"),
    pytest.param("toggle", {"flag": 1}, ["'flag'", "bool"], id="int-is-not-bool"),
    pytest.param("toggle", {"flag": "true"}, ["'flag'", "bool"], id="string-is-not-bool"),
    pytest.param("join_words", {"words": ["a", 1]}, ["'words'"], id="list-item-wrong-type"),
    pytest.param("join_words", {"words": "a b"}, ["'words'"], id="string-is-not-list"),
    pytest.param("maybe", {"n": "3"}, ["'n'"], id="optional-int-given-string"),
    pytest.param("maybe_new", {"n": 1.5}, ["'n'"], id="pipe-union-given-float"),
    pytest.param("pick", {"colour": "blue"}, ["'colour'", "blue"], id="literal-not-allowed"),
    pytest.param("flexible", {"a": "1", "x": 2}, ["'a'", "int"], id="kwargs-tool-still-checks-named"),
    pytest.param("flexible", {"x": 2}, ["'a'", "missing"], id="kwargs-tool-still-needs-required"),
]


@pytest.mark.parametrize("name, args, fragments", REFUSED)
def test_refused_call_is_an_error_observation(name, args, fragments):
    assert_error(dispatch(TOOLS, name, args), *fragments)


def test_refused_call_never_runs_the_tool():
    # The check happens before the call: a tool with side effects must not half-run.
    calls = []

    def record(n: int) -> str:
        calls.append(n)
        return "done"

    tools = {"record": record}
    for args in ({"n": True}, {"n": 1, "extra": 2}, {}, [1]):
        assert dispatch(tools, "record", args).is_error
    assert calls == []
    assert dispatch(tools, "record", {"n": 1}).content == "done" and calls == [1]


def test_unknown_tool_in_an_empty_mapping():
    assert_error(dispatch({}, "calculator", {"expression": "1"}), "'calculator'")


# ------------------------------------------------------------------ exceptions raised by the tool

@pytest.mark.parametrize("name, args, exc_type, fragments", [
    # ToolError messages are written for the model: passed through as they are.
    pytest.param("refuses", {"topic": "x"}, ToolError, ["refuses", "nothing is known about 'x'; try 단가"],
                 id="tool-error"),
    pytest.param("calculator", {"expression": "1/0"}, ToolError, ["calculator", "division by zero"],
                 id="real-tool-error"),
    pytest.param("calculator", {"expression": "__import__('os')"}, ToolError, ["calculator", "not allowed"],
                 id="real-tool-refuses-code"),
    # Anything else is a bug in the tool: the model sees type and message.
    pytest.param("crashes", {}, ValueError, ["crashes", "ValueError", "bad value 42"], id="value-error"),
    pytest.param("divides", {"n": 0}, ZeroDivisionError, ["divides", "ZeroDivisionError", "division by zero"],
                 id="zero-division"),
    pytest.param("recurses", {}, RecursionError, ["recurses", "RecursionError"], id="recursion-error"),
])
def test_exception_in_tool_becomes_an_error_observation(name, args, exc_type, fragments):
    obs = dispatch(TOOLS, name, args)
    assert_error(obs, *fragments)
    assert isinstance(obs.error, exc_type)   # kept for tests and logs, not shown to the model


class Cancelled(BaseException):
    pass


@pytest.mark.parametrize("exc", [asyncio.CancelledError(), GeneratorExit(), Cancelled("custom"), SystemExit(3)])
def test_dispatch_turns_every_exception_but_keyboard_interrupt_into_an_observation(exc):
    def tool() -> str:
        """Fails."""
        raise exc
    obs = dispatch({"tool": tool}, "tool", {})
    assert obs.is_error and type(exc).__name__ in obs.content and obs.error is exc


def test_keyboard_interrupt_still_stops_the_run():
    # A person pressing Ctrl-C must always be able to stop the agent.
    with pytest.raises(KeyboardInterrupt):
        dispatch(TOOLS, "interrupts", {})


def test_keyboard_interrupt_is_the_one_exception_a_tool_raises_that_escapes():
    def tool() -> str:
        """Interrupted."""
        raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        dispatch({"tool": tool}, "tool", {})


def test_an_exception_that_cannot_say_what_it_is_still_becomes_an_observation():
    class Mute(Exception):
        def __str__(self):
            raise ValueError("str broke")

    def tool() -> str:
        """Fails oddly."""
        raise Mute()

    def refuses() -> str:
        """Refuses oddly."""
        raise ToolError(Mute())
    obs = dispatch({"tool": tool}, "tool", {})
    assert obs.is_error and "Mute: (its message could not be shown)" in obs.content
    assert dispatch({"refuses": refuses}, "refuses", {}).is_error


# ------------------------------------------------------------------ signature cache

def test_same_function_dispatched_twice_is_checked_both_times():
    # The cached signature must give the same answers on the second call, good and bad.
    for _ in range(2):
        assert dispatch(TOOLS, "add", {"a": 2}).content == "12"
        assert_error(dispatch(TOOLS, "add", {"a": True}), "'a'")


def _make_first():
    def tool(x: int) -> str:
        return f"first {x}"
    return tool


def _make_second():
    def tool(y: str) -> str:
        return f"second {y}"
    return tool


def test_cache_is_per_function_not_per_name():
    # Two different functions, same __name__ and same tool name: each is checked against its own signature.
    first, second = _make_first(), _make_second()
    assert first.__name__ == second.__name__ == "tool"
    assert dispatch({"t": first}, "t", {"x": 1}).content == "first 1"
    assert dispatch({"t": second}, "t", {"y": "a"}).content == "second a"
    assert_error(dispatch({"t": second}, "t", {"x": 1}), "'x'")
    assert_error(dispatch({"t": first}, "t", {"x": "1"}), "'x'", "int")


def test_a_stateful_callable_object_runs_and_its_arguments_are_checked():
    tally = Tally()
    assert Tally.__hash__ is None   # a dataclass with eq=True cannot be hashed: the natural way to write one
    assert dispatch({"tally": tally}, "tally", {"amount": 2}).content == "total is 2"
    assert dispatch({"tally": tally}, "tally", {"amount": 3}).content == "total is 5"
    wrong = dispatch({"tally": tally}, "tally", {"amount": "three"})
    assert wrong.is_error and "argument 'amount' of tally must be int, got string" in wrong.content
    assert "total" not in dispatch({"tally": tally}, "tally", {"total": 1}).content.split("takes:")[1]


def test_tool_registry_as_the_tools_mapping():
    registry = ToolRegistry()
    registry.register(add)
    registry.register(calculator)

    @registry.register(name="greeter")
    def _greet(name: str) -> str:
        return f"Hi {name}"

    for _ in range(2):   # the second round goes through the cache
        assert dispatch(registry, "add", {"a": 2, "b": 3}).content == "5"
        assert dispatch(registry, "calculator", {"expression": "2**10"}).content == "1024"
        assert dispatch(registry, "greeter", {"name": "Ada"}).content == "Hi Ada"
        assert_error(dispatch(registry, "add", {"a": "2"}), "'a'", "int")
        assert_error(dispatch(registry, "shout", {"text": "x"}), "'shout'", "add", "calculator", "greeter")


# ------------------------------------------------------------------ never raises, whatever the model sends

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(), children, max_size=3),
    max_leaves=10,
)
SAFE_TOOLS = ["calculator", "add", "scale", "shout", "toggle", "join_words", "maybe", "maybe_new", "pick",
              "greet", "flexible", "price_sheet", "give", "refuses", "crashes", "divides", "no_such_tool"]


@settings(max_examples=200, deadline=None, database=None)
@given(st.sampled_from(SAFE_TOOLS),
       st.dictionaries(st.sampled_from(["a", "b", "x", "n", "text", "expression", "words", "flag", "colour",
                                        "name", "value", "topic", "zzz"]), JSON_VALUES, max_size=3)
       | JSON_VALUES)
def test_fuzz_dispatch_never_raises(name, args):
    obs = dispatch(TOOLS, name, args)
    assert isinstance(obs, Observation) and isinstance(obs.content, str)
    if obs.is_error:
        assert obs.content.startswith("Error:")
    else:
        assert obs.error is None


# ---------------------------------------------------------------- failures that are not the tool's own
def test_a_tool_calling_sys_exit_is_an_observation_not_the_end():
    import sys

    def quitter() -> str:
        """Quit."""
        sys.exit(3)

    obs = dispatch({"quitter": quitter}, "quitter", {})
    assert obs.is_error and "SystemExit" in obs.content


def test_a_result_that_cannot_become_text_is_blamed_on_the_result():
    def circular() -> list:
        """Return a list that contains itself."""
        items = []
        items.append(items)
        return items

    obs = dispatch({"circular": circular}, "circular", {})
    assert obs.is_error and "cannot be turned into text" in obs.content and "raised" not in obs.content


def test_an_unknown_huge_tool_name_is_not_echoed_in_full():
    obs = dispatch({"calculator": len}, "x" * 1_000_000, {})
    assert obs.is_error and len(obs.content) < 300


def test_literal_checks_compare_types_too():
    def pick(n: Literal[1, 2]) -> int:
        """Pick one or two."""
        return n

    assert not dispatch({"pick": pick}, "pick", {"n": 1}).is_error
    assert dispatch({"pick": pick}, "pick", {"n": True}).is_error     # True == 1, but it is not the literal 1
    assert dispatch({"pick": pick}, "pick", {"n": 1.0}).is_error


# ---------------------------------------------------------------- every test starts with a cold signature cache
# The cache lives as long as the process: without this, a test would see the signature facts an earlier test (or
# an earlier run in the same process) worked out, and a wrong fact worked out now could go unnoticed.
@pytest.fixture(autouse=True)
def cold_signature_cache():
    from course_lib.dispatch import _cached_spec
    _cached_spec.cache_clear()


def test_the_signature_is_worked_out_once_per_tool():
    # The loop dispatches every step: the second call to the same tool reads the cached facts.
    from course_lib.dispatch import _cached_spec
    for _ in range(3):
        assert dispatch(TOOLS, "add", {"a": 2}).content == "12"
    info = _cached_spec.cache_info()
    assert (info.misses, info.hits) == (1, 2)


# ---------------------------------------------------------------- the exact words of the messages (SPEC §8)
def test_unknown_tool_message_lists_the_tools_in_order():
    obs = dispatch({"lookup": shout, "calculator": calculator}, "serch", {})
    assert obs.content == "Error: unknown tool 'serch'. Available tools: lookup, calculator."
    assert dispatch({}, "serch", {}).content == "Error: unknown tool 'serch'. Available tools: (none)."


def test_an_unknown_tool_name_is_cut_at_80_characters():
    obs = dispatch(TOOLS, "y" * 500, {})
    assert "unknown tool '" + "y" * 80 + "'. Available tools:" in obs.content


@pytest.mark.parametrize("args, kind", [([1, 2], "array"), ("a=1", "string"), (None, "null"), (3, "integer"),
                                        (2.5, "number"), (True, "boolean")])
def test_arguments_that_are_not_an_object_are_named_by_their_json_type(args, kind):
    obs = dispatch(TOOLS, "add", args)
    assert obs.content == f"Error: the arguments for add must be a JSON object, not {kind}."


def test_unexpected_arguments_are_all_named_with_what_the_tool_takes():
    obs = dispatch(TOOLS, "add", {"a": 1, "c": 2, "d": 3})
    assert obs.content == "Error: add got unexpected argument(s) 'c', 'd'. It takes: a, b."
    obs = dispatch(TOOLS, "price_sheet", {"x": 1})
    assert obs.content == "Error: price_sheet got unexpected argument(s) 'x'. It takes: no arguments."


def test_missing_arguments_are_only_the_required_ones_not_given():
    def box(width: int, height: int, depth: int = 1, label: str = "") -> str:
        return "ok"

    tools = {"box": box}
    assert dispatch(tools, "box", {"label": "x"}).content == \
        "Error: box is missing required argument(s) 'width', 'height'."
    assert dispatch(tools, "box", {"height": 2}).content == "Error: box is missing required argument(s) 'width'."
    assert dispatch(tools, "box", {"width": 1, "height": 2}).content == "ok"   # the defaults need not be sent


@pytest.mark.parametrize("name, args, says", [
    ("shout", {"text": 5}, "argument 'text' of shout must be str, got integer 5."),
    ("shout", {"text": 1.5}, "argument 'text' of shout must be str, got number 1.5."),
    ("shout", {"text": ["a"]}, 'argument \'text\' of shout must be str, got array ["a"].'),
    ("shout", {"text": {"k": 1}}, 'argument \'text\' of shout must be str, got object {"k": 1}.'),
    ("shout", {"text": None}, "argument 'text' of shout must be str, got null."),
    ("add", {"a": "사과"}, 'argument \'a\' of add must be int, got string "사과".'),   # Korean as is, not \uXXXX
    ("add", {"a": "9" * 100}, "got string \"" + "9" * 59 + "."),                      # the value cut at 60
    ("maybe", {"n": "3"}, "argument 'n' of maybe must be Optional[int], got string \"3\"."),
    ("pick", {"colour": "blue"}, "argument 'colour' of pick must be Literal['red', 'green'], got string \"blue\"."),
])
def test_a_wrong_type_names_the_argument_the_type_wanted_and_what_came(name, args, says):
    obs = dispatch(TOOLS, name, args)
    assert obs.is_error and obs.content.endswith(says), obs.content


def test_a_python_value_no_json_can_hold_is_still_described():
    # dispatch is called from Python too (tests, a notebook): a date where an int belongs is named, not a crash.
    from datetime import date
    obs = dispatch(TOOLS, "add", {"a": date(2024, 5, 17)})
    assert obs.content == 'Error: argument \'a\' of add must be int, got date "2024-05-17".'


def test_a_tool_error_is_passed_on_without_its_type():
    # A ToolError is written for the model: its message is the whole story.
    obs = dispatch(TOOLS, "refuses", {"topic": "x"})
    assert obs.content == "Error: refuses: nothing is known about 'x'; try 단가"


def test_the_tool_returning_nothing_is_said_in_words():
    assert dispatch(TOOLS, "give", {}).content == "(the tool returned nothing)"


# ---------------------------------------------------------------- annotations beyond the plain types
def test_dict_parameters_take_only_an_object():
    def tally(counts: dict[str, int]) -> int:
        return sum(counts.values())

    tools = {"tally": tally}
    assert dispatch(tools, "tally", {"counts": {"a": 1, "b": 2}}).content == "3"
    assert dispatch(tools, "tally", {"counts": {}}).content == "0"
    obs = dispatch(tools, "tally", {"counts": [1, 2]})
    assert obs.content == "Error: argument 'counts' of tally must be dict[str, int], got array [1, 2]."


def test_abstract_and_unknown_annotations_get_the_benefit_of_the_doubt():
    from collections.abc import Sequence

    def total(xs: Sequence[int]) -> int:
        return sum(xs)

    assert dispatch({"total": total}, "total", {"xs": [1, 2, 3]}).content == "6"


def test_a_real_number_annotation_is_checked_with_isinstance():
    import numbers

    def half(x: numbers.Real) -> float:
        return x / 2

    tools = {"half": half}
    assert dispatch(tools, "half", {"x": 3}).content == "1.5"
    assert dispatch(tools, "half", {"x": 0.5}).content == "0.25"
    obs = dispatch(tools, "half", {"x": "3"})
    assert obs.content == "Error: argument 'x' of half must be Real, got string \"3\"."


def test_any_takes_every_json_value():
    from typing import Any

    def echo(value: Any) -> str:
        return repr(value)

    for value in (1, "a", None, [1], {"k": True}, 2.5, False):
        assert dispatch({"echo": echo}, "echo", {"value": value}).content == repr(value)


def test_an_annotation_that_cannot_be_resolved_is_simply_not_checked():
    def later(x) -> str:
        return f"got {x}"
    later.__annotations__["x"] = "NotDefinedAnywhere"   # as if written `x: "NotDefinedAnywhere"`

    assert dispatch({"later": later}, "later", {"x": 5}).content == "got 5"
    assert dispatch({"later": later}, "later", {}).content == "Error: later is missing required argument(s) 'x'."


def test_an_extra_argument_called_return_is_not_checked_against_the_return_annotation():
    assert dispatch(TOOLS, "flexible", {"a": 1, "return": 5}).content == '{"a": 1, "return": 5}'


# ---------------------------------------------------------------- results that are not JSON
def test_results_json_has_no_word_for_become_their_text():
    from datetime import date
    from pathlib import PurePosixPath

    def when() -> dict:
        return {"due": date(2024, 5, 17), "file": PurePosixPath("notes/a.txt"), "품목": "사과"}

    assert dispatch({"when": when}, "when", {}).content == \
        '{"due": "2024-05-17", "file": "notes/a.txt", "품목": "사과"}'
    assert dispatch({"today": lambda: date(2024, 5, 17)}, "today", {}).content == '"2024-05-17"'


def test_a_result_that_cannot_become_text_names_its_type_and_the_reason():
    def circular() -> list:
        items = []
        items.append(items)
        return items

    obs = dispatch({"circular": circular}, "circular", {})
    assert obs.content == ("Error: circular returned a list that cannot be turned into text "
                           "(ValueError: Circular reference detected).")
    assert isinstance(obs.error, ValueError)


def test_a_tool_whose_signature_cannot_be_read_is_an_observation():
    # Some built-ins (max, for one) have no signature inspect can read: the call cannot be checked, so it is not run.
    obs = dispatch({"max": max}, "max", {"a": 1})
    assert obs.is_error and isinstance(obs.error, ValueError)
    assert obs.content == "Error: the call to max could not be checked (ValueError: no signature found for " \
                          "builtin <built-in function max>)."


# ---------------------------------------------------------------- paths in error text
def _fails_with(message):
    def tool() -> str:
        raise ToolError(message)
    return {"tool": tool}


def test_the_workspace_itself_is_named_dot(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    obs = dispatch(_fails_with(f"{tmp_path} is read-only; {tmp_path}/a.txt too"), "tool", {})
    assert obs.content == "Error: tool: . is read-only; a.txt too"


def test_a_workspace_at_the_root_leaves_paths_alone(monkeypatch):
    monkeypatch.chdir("/")
    obs = dispatch(_fails_with("no file at /etc/course.cfg"), "tool", {})
    assert obs.content == "Error: tool: no file at /etc/course.cfg"


def test_a_two_letter_workspace_is_still_hidden(monkeypatch):
    monkeypatch.setattr("os.getcwd", lambda: "/w")
    obs = dispatch(_fails_with("no file at /w/data/a.csv"), "tool", {})
    assert obs.content == "Error: tool: no file at data/a.csv"


@pytest.mark.parametrize("home, says", [
    pytest.param("/", "no file at /etc/course.cfg or /h/x", id="home-is-the-root: nothing to hide"),
    pytest.param("/h", "no file at /etc/course.cfg or ~/x", id="a-short-home-is-still-hidden"),
])
def test_the_home_folder_is_named_tilde_unless_it_is_the_root(home, says, monkeypatch):
    monkeypatch.setenv("HOME", home)
    obs = dispatch(_fails_with("no file at /etc/course.cfg or /h/x"), "tool", {})
    assert obs.content == "Error: tool: " + says


def test_an_error_from_any_tool_does_not_show_the_workspace_or_home_folder(workspace):
    home = os.path.expanduser("~")

    def leaky(name: str) -> str:
        """A learner's tool that lets an OSError through."""
        raise FileNotFoundError(errno.ENOENT, "No such file", os.path.join(os.getcwd(), "data", name))

    def from_home(name: str) -> str:
        """Another that mentions the home folder."""
        raise RuntimeError(f"cannot read {home}/.config/{name}")
    obs = dispatch({"leaky": leaky}, "leaky", {"name": "x.csv"})
    assert obs.is_error and str(workspace) not in obs.content and "'data/x.csv'" in obs.content
    obs = dispatch({"from_home": from_home}, "from_home", {"name": "app"})
    assert home + "/" not in obs.content and "~/.config/app" in obs.content


def test_call_key_is_equal_only_for_the_same_calls_with_the_same_arguments():
    assert call_key([("lookup", {"topic": "단가"})]) == call_key([("lookup", {"topic": "단가"})])
    assert call_key([("lookup", {"topic": "단가"})]) != call_key([("lookup", {"topic": "배송"})])
    assert call_key([("f", {"a": 1, "b": 2})]) == call_key([("f", {"b": 2, "a": 1})])   # key order is no difference
    assert call_key([("f", {"s": {1, 2}})]) == call_key([("f", {"s": {1, 2}})])   # not JSON: compared by repr
    loop = []
    loop.append(loop)   # no JSON can hold it: a key equal to nothing, not even the same call again
    assert call_key([("f", {"x": loop})]) != call_key([("f", {"x": loop})])
