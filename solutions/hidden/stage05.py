"""Hidden cases of stage 05 (see course_lib/courseware/hidden.py): hints, sample tools and what plain data cannot
carry travel as Python text, which the public driver ``called_with`` of stage05 turns back into objects."""
import json

from course_lib.courseware.checks import Case
from course_lib.courseware.exercises.stage05 import called_with
from course_lib.courseware.observe import call, using

# ---------------------------------------------------------------- 05.1
_TYPING = "import typing\nfrom typing import Any, Optional"
_FITS = [   # (the value, the hint, both as Python text; does it fit?)
    ("False", "float", False), ("1.0", "int", False), ("True", "bool", True), ("1", "bool", False),
    ("-3", "float", True), ("2.5", "float", True), ('""', "str", True), ('b"x"', "str", False),
    ("None", "type(None)", True), ("0", "type(None)", False), ("[]", "list[int]", True),
    ("[1, True]", "list[int]", False), ("[1, 2.5]", "list[float]", True), ('[1, "a"]', "list", True),
    ('[1, "a"]', "typing.List", True), ('("a",)', "list[str]", False), ('{"a": 1}', "dict", True),
    ('{"a": "x"}', "dict[str, int]", True), ("[]", "dict", False), ("{}", "list", False),
    ('[["a"]]', "list[list[str]]", True), ('[["a", 2]]', "list[list[str]]", False),
    ("None", "Optional[list[str]]", True), ('["a"]', "Optional[list[str]]", True),
    ("[1]", "Optional[list[str]]", False), ('"x"', "typing.Union[int, str]", True), ("2.5", "int | str", False),
    ('["x", None]', "list[str | None]", True), ("object()", "Any", True),
    ('"red"', 'typing.Literal["red", "green"]', True),
]

# ---------------------------------------------------------------- 05.2
_TOOLS_05_2 = '''
def no_args() -> str:
    return "ok"

def pair(first: str, second: str = "b", *rest) -> str:
    return first + second

def log_event(message: str, **fields) -> str:
    return message

def order_total(unit_price: float, quantity: int) -> dict:
    return {"합계": unit_price * quantity}
'''


def _checked(func: str, args):
    """The probe of 05.2: check_call(the tool ``func`` names, ``args``)."""
    return using(called_with, func, repr(args), source=_TOOLS_05_2)


def _names(*words):
    return lambda got: isinstance(got, str) and all(w in got for w in words)


# ---------------------------------------------------------------- 05.3
_LOOP = "loop = []\nloop.append(loop)"
_FULL = json.dumps(list(range(1000)))


def _cut(text: str, kept: int, note: str, rest: bool = True):
    """A test: the first ``kept`` characters of ``text``, then a note that names ``note`` (``rest``: and has no
    more of the character cut)."""
    return lambda got: (isinstance(got, str) and got[:kept] == text[:kept] and note in got[kept:]
                        and not (rest and text[kept] in got[kept:]))


# ---------------------------------------------------------------- 05.4
_TOOLS_05_4 = '''
from course_lib.tools import calculator, lookup

def order_total(unit_price: float, quantity: int) -> dict:
    return {"단가": unit_price, "수량": quantity, "합계": unit_price * quantity}

def average(numbers: list[float]) -> float:
    return sum(numbers) / len(numbers)

def nothing() -> None:
    return None

def big() -> str:
    return "x" * 5000

def _interrupted() -> str:
    """A tool that is stopped by a person (Ctrl+C)."""
    raise KeyboardInterrupt

tools = {"calculator": calculator, "lookup": lookup, "order_total": order_total, "average": average,
         "nothing": nothing, "big": big, "max": max}
'''


def _dispatch(name, args, tools: str = "tools"):
    """The probe of 05.4: safe_dispatch(the tool set ``tools`` names, ``name``, ``args``)."""
    return using(called_with, tools, repr(name), repr(args), source=_TOOLS_05_4)


def _failed(*words):
    """A test: ("Error: ..." containing each of ``words``, True), as the old hidden cell's failed() had it."""
    return lambda got: (type(got) is tuple and got[1] is True and isinstance(got[0], str)
                        and got[0].startswith("Error:") and all(w in got[0] for w in words))


def _failing(label, name, args, *words, tools="tools"):
    shows = f"(\"Error: …\" naming {', '.join(words)}, True)" if words else '("Error: …", True)'
    return Case(label, _dispatch(name, args, tools), test=_failed(*words), shows=shows)


HIDDEN = {
    "05.1": [Case(f"{value} for {hint}", using(called_with, value, hint, source=_TYPING), expected=fits)
             for value, hint, fits in _FITS],
    "05.2": [
        Case("no parameters, no arguments", _checked("no_args", {}), expected=None),
        Case("no parameters takes no names", _checked("no_args", {"x": 1}), test=_names("x"), shows="names 'x'"),
        Case("*rest is never required", _checked("pair", {"first": "a"}), expected=None,
             hint="second has a default and *rest cannot be given by name: neither is required"),
        Case("*rest cannot be given by name", _checked("pair", {"first": "a", "rest": [1]}), test=_names("rest"),
             shows="names 'rest'"),
        Case("maxchars for max_chars", _checked("read_file", {"path": "a.txt", "maxchars": 5}),
             test=_names("maxchars", "max_chars"), shows="names 'maxchars' and 'max_chars'"),
        Case("**fields does not make message optional", _checked("log_event", {"level": "info"}),
             test=_names("message"), shows="names 'message'"),
        Case("the one that is missing", _checked("order_total", {"quantity": 7}), test=_names("unit_price"),
             shows="names 'unit_price'"),
        Case("types are not checked here", _checked("calculator", {"expression": 5}), expected=None),
        Case("**fields takes any extra names", _checked("log_event", {"message": "hi", "user": "김", "n": 3}),
             expected=None),
        *[Case(f"args={junk!r} is not a JSON object", _checked("calculator", junk),
               test=lambda got: isinstance(got, str) and bool(got.strip()), shows="a message")
          for junk in ([["expression", "1"]], 42, "expression=1", ("expression",), True)],
    ],
    "05.3": [
        Case("empty text stays empty", call(""), expected=""),
        Case("a list as JSON, Korean kept", call([1, "둘", None]), expected='[1, "둘", null]'),
        Case("a float as JSON", call(2.5), expected="2.5"),
        Case("False is JSON false", call(False), expected="false"),
        Case("a Path by default=str", using(called_with, '{"path": Path("reports/q3.txt")}',
                                            source="from pathlib import Path"),
             expected='{"path": "reports/q3.txt"}'),
        Case("a tuple as a JSON array", call(("a", 1)), expected='["a", 1]'),
        Case("a list that holds itself", using(called_with, "loop", source=_LOOP),
             test=lambda got: isinstance(got, str), shows="text, no exception"),
        Case("exactly the limit, in Korean", call("가" * 30, limit=30), expected="가" * 30),
        Case("one Korean character over", call("가" * 31, limit=30), test=_cut("가" * 31, 30, "1"),
             shows="30 characters + a note naming 1"),
        Case("long JSON is cut like text", call(list(range(1000)), limit=100),
             test=_cut(_FULL, 100, str(len(_FULL) - 100), rest=False),
             shows=f"100 characters + a note naming {len(_FULL) - 100}"),
        Case("the default limit is 2000", call("x" * 2000), expected="x" * 2000),
        Case("2001 characters: 1 cut", call("x" * 2001), test=_cut("x" * 2001, 2000, "1"),
             shows="2,000 characters + a note naming 1"),
    ],
    "05.4": [
        Case("a good call with Korean text", _dispatch("lookup", {"topic": "단가"}), expected=("개당 $24", False)),
        Case("ints fit list[float]", _dispatch("average", {"numbers": [1, 2, 3]}), expected=("2.0", False)),
        Case("a dict result as JSON", _dispatch("order_total", {"unit_price": 2.5, "quantity": 2}),
             expected=('{"단가": 2.5, "수량": 2, "합계": 5.0}', False)),
        Case("None becomes the note", _dispatch("nothing", {}), expected=("(the tool returned nothing)", False)),
        Case("long results are cut", _dispatch("big", {}),
             test=lambda got: (type(got) is tuple and got[1] is False and got[0][:2000] == "x" * 2000
                               and "3000" in got[0][2000:]), shows="(2,000 x + a note naming 3000, False)"),
        _failing("a string is not a list[float]", "average", {"numbers": "1, 2"}, "numbers"),
        _failing("'24' is text", "order_total", {"unit_price": "24", "quantity": 7}, "unit_price"),
        _failing("a missing argument", "order_total", {"unit_price": 24}, "quantity"),
        _failing("ToolError passed on", "lookup", {"topic": "discount"}, "lookup", "discount"),
        _failing("another ToolError", "calculator", {"expression": "2**"}, "calculator"),
        _failing("max: a signature inspect cannot read", "max", {"a": 1}),
        *[_failing(f"name={name!r} is not a tool", name, {}) for name in (None, 42, {"x": 1}, "", "Calculator")],
        _failing("no tools at all", "calculator", {"expression": "1"}, tools="{}"),
        *[_failing(f"args={args!r} is not a JSON object", "calculator", args) for args in (None, [], ["24*7"], 7)],
        Case("KeyboardInterrupt gets through", using(called_with, '{"stop": _interrupted}', "'stop'", "{}",
                                                     source=_TOOLS_05_4), raises=KeyboardInterrupt,
             hint="catch Exception, not BaseException: a person must be able to stop the run"),
    ],
}

# Wrong solutions that pass every visible case and fail a hidden one (the old hidden-test cell failed them too):
# (exercise, the hidden case's label it fails, [(old, new) edits of the solution cell], the mistake in a few words)
CAUGHT = [
    ("05.1", "1.0 for int", [("    if hint is float:\n", "    if hint is int and type(value) is float:\n"
                                                         "        return value.is_integer()\n    if hint is float:\n")],
     "1.0 taken for an int"),
    ("05.1", '("a",) for list[str]', [("return type(value) is list and (",
                                       "return isinstance(value, (list, tuple)) and (")],
     "a tuple taken for a JSON array"),
    ("05.1", "[1, True] for list[int]", [("all(matches(item, members[0]) for item in value)",
                                          "all(isinstance(item, members[0]) for item in value)")],
     "items checked with isinstance"),
    ("05.1", '{"a": "x"} for dict[str, int]',
     [("        return type(value) is dict\n    return True",
       "        return type(value) is dict and all(matches(v, members[1]) for v in value.values())\n    return True")],
     "a dict's values checked too"),
    ("05.1", '[1, "a"] for typing.List', [("(not members or all(", "(all(")],
     "typing.List, which names no item type, not handled"),
    ("05.2", "args=42 is not a JSON object", [("if not isinstance(args, dict):",
                                               "if args is None or isinstance(args, str):")],
     "only None and text refused as args"),
    ("05.2", "*rest is never required", [("missing = [p.name for p in named if",
                                          "missing = [p.name for p in params if p.kind is not p.VAR_KEYWORD and")],
     "*rest counted as required"),
    ("05.3", "empty text stays empty", [("if isinstance(result, str):", "if isinstance(result, str) and result:"),
                                        ("elif result is None:", 'elif result is None or result == "":')],
     "empty text taken for nothing"),
    ("05.3", "long JSON is cut like text", [("if len(text) > limit:",
                                             "if isinstance(result, str) and len(text) > limit:")],
     "only text results are cut"),
    ("05.4", "ToolError passed on", [('return f"Error: {name}: {e}", True', 'return f"Error: {e}", True')],
     "a ToolError's message without the tool's name"),
    ("05.4", "a string is not a list[float]", [("if hint is not None and not matches(value, hint):",
                                                "if isinstance(hint, type) and not matches(value, hint):")],
     "only plain types checked, not list[float]"),
]
