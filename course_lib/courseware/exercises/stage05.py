"""Stage 05 exercises: a JSON type check, argument names from the signature, results as text, a safe dispatch."""
from __future__ import annotations

import re
from datetime import date
from typing import Literal, Optional

from course_lib.courseware.checks import Case, Exercise
from course_lib.tools import calculator, list_files, lookup, read_file

ABSENT = ("pydantic",)   # a finished type check (TypeAdapter, strict): not importable where stage 05 is graded


def order_total(unit_price: float, quantity: int) -> dict:
    """Price an order (a tool that returns a dict with Korean keys)."""
    return {"단가": unit_price, "수량": quantity, "합계": unit_price * quantity}


def average(numbers: list[float]) -> float:
    """A careless tool: crashes on an empty list."""
    return sum(numbers) / len(numbers)


def log_event(message: str, **fields) -> str:
    """A tool that takes any extra keyword arguments."""
    return f"logged {message!r} with {sorted(fields)}"


def pair(first: str, second: str = "b", *rest) -> str:
    """A tool with a *rest parameter, which a JSON object cannot fill by name."""
    return first + second


def stop_button() -> str:
    """A tool interrupted by a person: Ctrl+C, or Stop in Jupyter."""
    raise KeyboardInterrupt


TOOLS = {f.__name__: f for f in (calculator, lookup, order_total, average)}


def interrupted(f) -> str:
    """Whether a KeyboardInterrupt raised inside a tool gets through the learner's dispatcher."""
    try:
        result = f({"stop_button": stop_button}, "stop_button", {})
    except KeyboardInterrupt:
        return "KeyboardInterrupt got through"
    return f"it was caught: returned {result!r}"


def called_with(f, *texts: str, source: str = ""):
    """f(*values), the values of the Python expressions ``texts`` (``source`` defines what they name)."""
    space = dict(globals())
    exec(compile(source, "<hidden case>", "exec", dont_inherit=True), space)
    return f(*[eval(text, space) for text in texts])


def _circular() -> dict:
    report = {"name": "report"}
    report["self"] = report
    return report


def _message(*words):
    """A test: a non-empty str containing every one of `words` as a whole word ('expr' is not in 'expression')."""
    return lambda got: isinstance(got, str) and bool(got.strip()) and all(
        re.search(rf"(?<!\w){re.escape(w)}(?!\w)", got) for w in words)


def _cut(kept: int, cut: int):
    """A test for 'a' * kept + 'b' * cut, cut at `kept`: the first `kept` characters, then a note naming `cut`."""
    return lambda got: (isinstance(got, str) and got[:kept] == "a" * kept and "bbb" not in got
                        and str(cut) in got[kept:] and len(got) < kept + 100)


def _error(*words):
    """A test for safe_dispatch: ("Error: ..." naming `words`, True)."""
    return lambda got: (type(got) is tuple and len(got) == 2 and got[1] is True
                        and _message("Error:", *words)(got[0]) and got[0].startswith("Error:"))


def _err_shows(*words):
    return f"(\"Error: …\" naming {', '.join(words)}, True)" if words else '("Error: …", True)'


TYPE_HINT = "compare type(value) exactly: bool is a subclass of int"
UNION_HINT = "a union fits when the value fits at least one member: check each with matches itself"
EXERCISES = {
    "05.1": Exercise("Does a JSON value fit the annotation?", [
        Case("7 for int", lambda f: f(7, int), expected=True, hint="an int fits int: type(value) is int"),
        Case("true for int", lambda f: f(True, int), expected=False, hint=TYPE_HINT),
        Case("7 for float", lambda f: f(7, float), expected=True,
             hint="JSON writes 24 for 24.0: an int is a fine float"),
        Case("true for float", lambda f: f(True, float), expected=False,
             hint="a bool is no number here either: type(value) in (int, float), not isinstance"),
        Case("7.5 for int", lambda f: f(7.5, int), expected=False, hint="7.5 is a float, and a float is no int"),
        Case('"7" for int', lambda f: f("7", int), expected=False,
             hint="text is no number, even when it reads like one"),
        Case("null for int", lambda f: f(None, int), expected=False,
             hint="None (JSON null) fits only NoneType, Optional[...] or ... | None"),
        Case('["a", "b"] for list[str]', lambda f: f(["a", "b"], list[str]), expected=True,
             hint="typing.get_origin(list[str]) is list"),
        Case('["a", 1] for list[str]', lambda f: f(["a", 1], list[str]), expected=False,
             hint="check every item against the type inside the brackets (typing.get_args)"),
        Case("[None] for list[str | None]", lambda f: f([None], list[str | None]), expected=True,
             hint="check each item with matches itself, so a union inside a list works"),
        Case('"a, b" for list[str]', lambda f: f("a, b", list[str]), expected=False, hint="a str is no list"),
        Case("[1, 'a'] for list", lambda f: f([1, "a"], list), expected=True,
             hint="a bare list names no item type (typing.get_args(list) is ()): check only that it is a list"),
        Case("[] for dict[str, int]", lambda f: f([], dict[str, int]), expected=False,
             hint="dict[K, V] has origin dict: the value must be a dict (keys and values are not checked)"),
        Case("null for Optional[int]", lambda f: f(None, Optional[int]), expected=True,
             hint="Optional[int] is Union[int, None]: the value fits if it fits any member"),
        Case("3 for int | None", lambda f: f(3, int | None), expected=True,
             hint="int | None is a types.UnionType; its members come from typing.get_args too"),
        Case('"3" for int | None', lambda f: f("3", int | None), expected=False, hint=UNION_HINT),
        Case("'red' for Literal[...]", lambda f: f("red", Literal["red", "green"]), expected=True,
             hint="an annotation you do not check (Literal, Any, ...) gets the benefit of the doubt: True"),
    ]),
    "05.2": Exercise("Check the argument names against the signature", [
        Case("a good call", lambda f: f(calculator, {"expression": "24*7"}), expected=None,
             hint="every name is a parameter and every required one is there: return None"),
        Case("optional argument given", lambda f: f(read_file, {"path": "notes.txt", "max_chars": 100}),
             expected=None, hint="a parameter with a default may be given too"),
        Case("no args, all optional", lambda f: f(list_files, {}), expected=None,
             hint="{} is fine when every parameter has a default"),
        Case("misspelled name", lambda f: f(calculator, {"expr": "24*7"}), test=_message("expr", "expression"),
             shows="names 'expr' and 'expression'",
             hint="check unexpected names (step 2) before missing ones; name 'expr' AND the names the tool takes"),
        Case("two unexpected names", lambda f: f(lookup, {"topic": "단가", "lang": "ko", "limit": 3}),
             test=_message("lang", "limit"), shows="names 'lang' and 'limit'",
             hint="name every unexpected argument, not only the first"),
        Case("missing required", lambda f: f(read_file, {}), test=_message("path"), shows="names 'path'",
             hint="a parameter without a default is required"),
        Case("two missing", lambda f: f(order_total, {}), test=_message("unit_price", "quantity"),
             shows="names both", hint="name every missing required argument"),
        Case("**fields takes any name", lambda f: f(log_event, {"message": "hi", "level": "info"}), expected=None,
             hint="a VAR_KEYWORD parameter (**fields) accepts every extra name"),
        Case("**fields: message still required", lambda f: f(log_event, {"level": "info"}),
             test=_message("message"), shows="names 'message'",
             hint="**fields accepts extra names, but the required parameters are still required"),
        Case("*rest is no name", lambda f: f(pair, {"first": "a", "rest": [1]}), test=_message("rest"),
             shows="names 'rest'", hint="a *args parameter cannot be given by name: leave VAR_POSITIONAL out"),
        Case("args is a string", lambda f: f(calculator, "24*7"), test=_message(), shows="a message",
             hint="check that args is a dict before anything else"),
        Case("args is None", lambda f: f(calculator, None), test=_message(), shows="a message",
             hint="null is not a JSON object: return a message, do not raise"),
    ]),
    "05.3": Exercise("Turn any result into observation text", [
        Case("text passes through", lambda f: f("개당 $24"), expected="개당 $24", hint="a str comes back as it is"),
        Case("a number", lambda f: f(168), expected="168", hint="anything that is not text becomes JSON"),
        Case("0 is not nothing", lambda f: f(0), expected="0",
             hint="test `result is None`, not `not result`: 0, False and '' are real results"),
        Case("Korean stays Korean", lambda f: f({"단가": 24, "수량": 7}), expected='{"단가": 24, "수량": 7}',
             hint="json.dumps escapes Korean unless you pass ensure_ascii=False"),
        Case("True is JSON true", lambda f: f(True), expected="true", hint="json.dumps(True) is 'true'"),
        Case("None gets a note", lambda f: f(None), expected="(the tool returned nothing)",
             hint="None becomes exactly '(the tool returned nothing)'"),
        Case("a date becomes text", lambda f: f({"day": date(2024, 3, 1)}), expected='{"day": "2024-03-01"}',
             hint="json.dumps(..., default=str) turns what JSON cannot hold into text"),
        Case("a dict that holds itself", lambda f: f(_circular()), test=_message("report"), shows="text, no exception",
             hint="json.dumps raises ValueError on a circular structure: fall back to str(result)"),
        Case("exactly at the limit", lambda f: f("a" * 50, limit=50), expected="a" * 50,
             hint="cut only text LONGER than the limit"),
        Case("2,500 chars, limit 2,000", lambda f: f("a" * 2000 + "b" * 500), test=_cut(2000, 500),
             shows="2,000 chars + a note naming 500", hint="keep text[:limit], then a note with the number cut"),
        Case("10,000 chars, limit 10", lambda f: f("a" * 10 + "b" * 9990, limit=10), test=_cut(10, 9990),
             shows="10 chars + a note naming 9990",
             hint="use the limit you are given; the note names len(text) - limit"),
    ]),
    "05.4": Exercise("A dispatcher that never raises", [
        Case("a good call", lambda f: f(TOOLS, "calculator", {"expression": "24*7"}), expected=("168", False),
             hint="run tools[name](**args) and return (as_observation_text(result), False)"),
        Case("a dict result", lambda f: f(TOOLS, "order_total", {"unit_price": 24, "quantity": 7}),
             test=lambda got: type(got) is tuple and got == ('{"단가": 24, "수량": 7, "합계": 168}', False),
             shows="('{\"단가\": 24, …, \"합계\": 168}', False)", hint="use your as_observation_text"),
        Case("unknown tool", lambda f: f(TOOLS, "calculate", {"expression": "1"}),
             test=_error("calculate", "calculator"), shows=_err_shows("calculate", "calculator"),
             hint="name the unknown tool and list the ones that exist"),
        Case("name is not text", lambda f: f(TOOLS, ["calculator"], {}), test=_error(), shows=_err_shows(),
             hint="a list cannot be a dict key: check the type of name first"),
        Case("misspelled argument", lambda f: f(TOOLS, "calculator", {"expr": "1"}), test=_error("expr"),
             shows=_err_shows("expr"), hint="use your check_call"),
        Case("args not an object", lambda f: f(TOOLS, "calculator", "24*7"), test=_error(), shows=_err_shows(),
             hint="your check_call finds args that are not a dict: return its message as an error"),
        Case("true for an int", lambda f: f(TOOLS, "order_total", {"unit_price": 24, "quantity": True}),
             test=_error("quantity", "true"), shows=_err_shows("quantity", "true"),
             hint="check each value with your matches; show the value as JSON (json.dumps: true), not True"),
        Case("a signature inspect cannot read", lambda f: f({**TOOLS, "max": max}, "max", {"a": 1}),
             test=_error(), shows=_err_shows(),
             hint="inspect.signature(max) raises ValueError: catch it around check_call and report an error"),
        Case("tool refuses: ToolError", lambda f: f(TOOLS, "calculator", {"expression": "10/0"}),
             test=_error("division by zero"), shows=_err_shows("the tool's message"),
             hint="pass a ToolError's message on"),
        Case("tool crashes", lambda f: f(TOOLS, "average", {"numbers": []}), test=_error("ZeroDivisionError"),
             shows=_err_shows("ZeroDivisionError"), hint="any other exception: name its type"),
        Case("Stop (KeyboardInterrupt)", interrupted, expected="KeyboardInterrupt got through",
             hint="catch Exception, not BaseException or a bare except: a person must be able to stop the run"),
    ]),
}
