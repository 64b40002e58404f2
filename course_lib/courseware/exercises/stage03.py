"""Stage 03 exercises: describing tools to the model.

03.1 maps Python type hints to JSON Schema (``json_type``), 03.2 builds a tool's parameter schema with
defaults and ``required`` (``tool_schema``, over a given table of types), 03.3 parses a Google-style
``Args:`` section, continuation lines included (``arg_docs``), and 03.4 reviews a set of tools' descriptions
the way the model reads them (``description_problems``). The sample tools and docstrings are below.
"""
from typing import Literal, Optional

from course_lib.courseware.checks import Case, Exercise


def course_tools() -> dict:
    """course_lib's default tools, imported when a case needs them."""
    from course_lib import default_tools
    return default_tools()


def outcome(call) -> str:
    """What ``call()`` did, as text: ``returned <value>`` or ``<ExceptionType>: <message>``."""
    try:
        return f"returned {call()!r}"
    except Exception as e:   # noqa: BLE001 - the hidden tests look at the type name
        return f"{type(e).__name__}: {e}"


def given(f, *texts: str, source: str = ""):
    """f(value) for each Python expression of ``texts`` in turn (``source`` defines names): the last result."""
    space = dict(globals())
    exec(compile(source, "<hidden case>", "exec", dont_inherit=True), space)
    return [f(eval(text, space)) for text in texts][-1]


def table_kept(f, *texts: str, source: str = "") -> tuple[str, str]:
    """TYPE_SCHEMAS, the table ``f`` reads, as text before and after ``given(f, text, ...)`` for each text."""
    before = repr(getattr(f, "__globals__", {}).get("TYPE_SCHEMAS"))
    for text in texts:
        try:
            given(f, text, source=source)
        except ValueError:   # a tool f refuses: the others are still described
            pass
    return before, repr(getattr(f, "__globals__", {}).get("TYPE_SCHEMAS"))


def tools_kept(f, text: str, source: str = "") -> list:
    """After f(tools), the tool set ``text`` makes: each name, with whether it still holds the same tool."""
    tools = given(lambda value: value, text, source=source)
    before = dict(tools)
    f(tools)
    return [(name, tools[name] is before.get(name)) for name in tools]


# ---------------------------------------------------------------- sample tools for 03.2
def plan_trip(city: str, travellers: list[str], nights: int = 1, budget: float = 250000.0,
              business: bool = True) -> str:
    """Plan a business trip under the travel policy (출장비 규정)."""
    return city


def shout(text: str) -> str:
    """Return the text in capitals."""


def stringly(city: "str", nights: "int" = 2) -> "str":   # noqa: UP037 - annotations stored as text
    """Book a hotel (its annotations are strings, as under `from __future__ import annotations`)."""


def untyped(city, nights: int = 1) -> str:
    """Estimate a hotel bill."""


def flexible(*names: str) -> str:
    """Greet everyone."""


def binary(data: bytes) -> str:
    """Count bytes."""


def repeat(text: str, times: int) -> str:
    """Repeat a text (an int without a default, to see that plan_trip's nights=1 did not stick to int)."""


def tagged(tags: list[str] = {"a"}) -> str:   # noqa: B006 - a default that JSON cannot write, on purpose
    """Tag something."""


# ---------------------------------------------------------------- sample docstrings for 03.3
SIMPLE = "Read a text file.\n\nArgs:\n    path: a path inside the workspace.\n    max_chars: the most characters.\n"
WRAPPED = ("Convert won (원) into another currency.\n\nArgs:\n    amount: how many won to convert,\n"
           "        for example 150000.\n    currency: the currency to convert into.\n")
TYPED = 'Plan a trip.\n\nArgs:\n    city (str): the destination, for example "부산".\n    nights (int): how long.\n'
RETURNS = "Count words.\n\nArgs:\n    text: the text to count.\n\nReturns:\n    the count: a number, as text.\n"
COLON = ("Convert.\n\nArgs:\n    amount: how many won,\n        note: a whole number.\n"
         "    currency: the target.\n")
KOREAN = "단가를 찾는다.\n\nArgs:\n    topic: 찾을 주제, 예: 단가.\n"
# A raw func.__doc__ keeps the indentation of the source (Python 3.13 strips it: so it is written out here).
INDENTED = ("Plan a stay.\n\n    Args:\n        days: how many days,\n            counting the day you arrive.\n\n"
            "        city: where to stay.\n\n    Returns:\n        a plan.\n    ")
PROSE = "Convert an amount.\n\nArgs marked optional may be left out.\n\nArgs:\n    amount: how much.\n"

# ---------------------------------------------------------------- sample tool sets for 03.4
def lookup_vague(topic: str) -> str:
    """Look up information.

    Args:
        topic: what to look up.
    """


def search_vague(query: str) -> str:
    """Search for information in the documents.

    Args:
        query: a word to look for.
    """


def lookup_clear(topic: str) -> str:
    """Look up one known fact (unit price, shipping) by topic; to search documents, use search_docs.

    Args:
        topic: the fact to look up, for example "단가".
    """


def search_clear(query: str) -> str:
    """Search the company documents for a word; for one known fact, such as a price, use lookup.

    Args:
        query: a word to look for, for example "출장".
    """


def weather(city: str) -> str:
    return city


def blank(city: str) -> str:
    """   """


def discount(price: float, percent: float) -> str:
    """Apply a percentage discount to a price.

    Args:
        percent: the discount, for example 10 for 10%.
    """


def convert(amount: float, currency: str = "USD") -> str:
    """Convert won into another currency.

    Args:
        amount: how many won.
        currency: the currency to convert into.
        rate: the exchange rate to use.
    """


def price(item: str) -> str:
    """Find the current price of one product; not for totals, which need a calculation first.

    Args:
        item: the product.
    """


def total(expression: str) -> str:
    """Work out totals from current prices that are already known.

    Args:
        expression: the sum, for example "24*7".
    """


def shout_loud(text: str) -> str:
    """SEARCH the text for lower-case letters and make them capitals.

    Args:
        text: the text.
    """


def book(city: str) -> str:
    """출장 숙소를 예약한다 (book a hotel for a business trip).

    Args:
        city: 도시 이름, 예: 부산.
    """


def now() -> str:
    """Return the current time in Seoul."""


def clients() -> str:
    """고객 데이터베이스를 보여준다."""


def orders() -> str:
    """주문 데이터베이스를 보여준다."""


ENUM_HINT = "Literal[...] becomes {'enum': [its values]}: typing.get_args gives them"
UNION_HINT = "for Optional[X] and X | None, describe X: typing.Union and types.UnionType are both origins"
REFUSE_HINT = "anything not in the table must raise ValueError, not return {}"
HINTS_HINT = "read the hints with typing.get_type_hints(func), which turns 'str' back into str"
CONT_HINT = "a line indented deeper than the parameter lines continues the description before it"
WHEN_HINT = ("two first lines that share a word of five or more letters sound alike: each must name the "
             "other tool")

EXERCISES = {
    "03.1": Exercise("json_type: Python type hints to JSON Schema", [
        Case("str", lambda f: f(str), expected={"type": "string"},
             hint="look plain types up in a dict by their exact class: str -> {'type': 'string'}"),
        Case("bool (not integer!)", lambda f: f(bool), expected={"type": "boolean"},
             hint="look the exact class up in a dict; isinstance-style checks mistake bool for int"),
        Case("dict[str, int]", lambda f: f(dict[str, int]), expected={"type": "object"},
             hint="dict and dict[K, V] are both {'type': 'object'}: typing.get_origin(dict[str, int]) is dict"),
        Case("list[str]", lambda f: f(list[str]), expected={"type": "array", "items": {"type": "string"}},
             hint="typing.get_origin gives list, typing.get_args gives (str,)"),
        Case("list[list[int]]", lambda f: f(list[list[int]]),
             expected={"type": "array", "items": {"type": "array", "items": {"type": "integer"}}},
             hint="describe the items with json_type itself (call it again), so lists of lists work"),
        Case("Optional[int]", lambda f: f(Optional[int]), expected={"type": "integer"}, hint=UNION_HINT),
        Case("float | None", lambda f: f(float | None), expected={"type": "number"}, hint=UNION_HINT),
        Case("Optional[list[str]]", lambda f: f(Optional[list[str]]),
             expected={"type": "array", "items": {"type": "string"}},
             hint="describe each member of a union with json_type itself, so Optional[list[str]] works"),
        Case("Literal['train', 'car']", lambda f: f(Literal["train", "car"]),
             expected={"enum": ["train", "car"]}, hint=ENUM_HINT),
        Case("str | int", lambda f: f(str | int),
             expected={"anyOf": [{"type": "string"}, {"type": "integer"}]},
             hint="a union of several non-None types becomes {'anyOf': [...]}"),
        Case("int | str | None", lambda f: f(int | str | None),
             expected={"anyOf": [{"type": "integer"}, {"type": "string"}]},
             hint="drop only None from a union: the rest may still be several types, so {'anyOf': [...]}"),
        Case("a bare list is refused", lambda f: f(list), raises=ValueError,
             hint="a bare list does not say what its items are, and the APIs reject an array without 'items'"),
        Case("set[str] is refused", lambda f: f(set[str]), raises=ValueError, hint=REFUSE_HINT),
        Case("bytes is refused", lambda f: f(bytes), raises=ValueError, hint=REFUSE_HINT),
    ]),
    "03.2": Exercise("tool_schema: types, defaults and required", [
        Case("required: no default", lambda f: f(plan_trip)["required"], expected=["city", "travellers"],
             hint="a parameter is required when p.default is inspect.Parameter.empty"),
        Case("list[str] parameter", lambda f: f(plan_trip)["properties"]["travellers"],
             expected={"type": "array", "items": {"type": "string"}},
             hint="look each parameter's hint up in TYPE_SCHEMAS: list[str] is there"),
        Case("a default is recorded", lambda f: f(plan_trip)["properties"]["nights"],
             expected={"type": "integer", "default": 1},
             hint="a parameter with a default gets 'default': its value, next to its type"),
        Case("the table is not changed", lambda f: (f(plan_trip), f(repeat))[1]["properties"]["times"],
             expected={"type": "integer"},
             hint="copy the entry (dict(TYPE_SCHEMAS[hint])) before adding 'default'; then run the "
                  "TYPE_SCHEMAS cell again to repair the table"),
        Case("the whole schema of shout", lambda f: f(shout),
             expected={"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"],
                       "additionalProperties": False},
             hint="wrap the properties: type object, properties, required, additionalProperties False"),
        Case("annotations stored as text", lambda f: f(stringly)["properties"],
             expected={"city": {"type": "string"}, "nights": {"type": "integer", "default": 2}}, hint=HINTS_HINT),
        Case("no type hint on 'city'", lambda f: f(untyped), raises=ValueError,
             hint="raise ValueError naming the parameter that has no hint"),
        Case("*names cannot be described", lambda f: f(flexible), raises=ValueError,
             hint="refuse p.kind VAR_POSITIONAL and VAR_KEYWORD"),
        Case("bytes is not in the table", lambda f: f(binary), raises=ValueError,
             hint="a hint missing from TYPE_SCHEMAS must raise ValueError"),
        Case("a set as the default", lambda f: f(tagged), raises=ValueError,
             hint="try json.dumps(p.default): a default that JSON cannot write raises ValueError"),
    ]),
    "03.3": Exercise("arg_docs: the Args: section, continuation lines included", [
        Case("two parameters", lambda f: f(SIMPLE),
             expected={"path": "a path inside the workspace.", "max_chars": "the most characters."},
             hint="after the 'Args:' line, each 'name: text' line is a parameter; strip the text"),
        Case("a continuation line", lambda f: f(WRAPPED)["amount"],
             expected="how many won to convert, for example 150000.", hint=CONT_HINT),
        Case("a type in brackets", lambda f: f(TYPED),
             expected={"city": 'the destination, for example "부산".', "nights": "how long."},
             hint="`city (str): ...` describes `city`: skip the part in brackets"),
        Case("stops at Returns:", lambda f: f(RETURNS), expected={"text": "the text to count."},
             hint="a non-blank line indented no deeper than Args: ends the section"),
        Case("a raw, indented __doc__", lambda f: f(INDENTED),
             expected={"days": "how many days, counting the day you arrive.", "city": "where to stay."},
             hint="measure indentation from the Args: line (here 4 spaces), and skip blank lines"),
        Case("a prose line that starts with Args", lambda f: f(PROSE), expected={"amount": "how much."},
             hint="the section starts at the line that is exactly 'Args:' once stripped, not one that starts with Args"),
        Case("no Args: section", lambda f: f("Return the time."), expected={},
             hint="no line that is exactly 'Args:' once stripped: return {}"),
        Case("no docstring (None)", lambda f: f(None), expected={}, hint="treat None like an empty docstring"),
        Case("continuation with a colon", lambda f: f(COLON),
             expected={"amount": "how many won, note: a whole number.", "currency": "the target."},
             hint=CONT_HINT),
        Case("Korean text is kept", lambda f: f(KOREAN), expected={"topic": "찾을 주제, 예: 단가."},
             hint="keep the description as it is: strip only the spaces around it"),
    ]),
    "03.4": Exercise("description_problems: read the descriptions as the model will", [
        Case("vague lookup and search", lambda f: f({"lookup": lookup_vague, "search_docs": search_vague}),
             expected=["lookup: say when to use search_docs instead", "search_docs: say when to use lookup instead"],
             hint=WHEN_HINT),
        Case("each names the other", lambda f: f({"lookup": lookup_clear, "search_docs": search_clear}),
             expected=[], hint="a first line that names the other tool as a whole word says when to use it"),
        Case("no docstring", lambda f: f({"weather": weather}), expected=["weather: no description"],
             hint="no first line: report 'no description' and nothing else for that tool"),
        Case("a blank docstring", lambda f: f({"weather": blank, "lookup": lookup_clear}),
             expected=["weather: no description"],
             hint="a docstring of spaces is no description; a tool without one has no line to compare"),
        Case("a parameter without Args:", lambda f: f({"discount": discount}),
             expected=["discount: parameter 'price' has no Args: line"],
             hint="compare inspect.signature(func).parameters with arg_docs(inspect.getdoc(func))"),
        Case("Args: for a parameter that is gone", lambda f: f({"convert": convert}),
             expected=["convert: Args: describes 'rate', which is not a parameter"],
             hint="a name in Args: that the signature does not have is a description that drifted"),
        Case("'prices' does not name 'price'", lambda f: f({"price": price, "total": total}),
             expected=["price: say when to use total instead", "total: say when to use price instead"],
             hint="look for the other tool's name as a whole word: "
                  "re.search(rf'\\b{re.escape(name)}\\b', line)"),
        Case("SEARCH sounds like Search", lambda f: f({"search_docs": search_vague, "shout": shout_loud}),
             expected=["search_docs: say when to use shout instead", "shout: say when to use search_docs instead"],
             hint="compare the words in lower case"),
        Case("SEARCH does not name search", lambda f: f({"search": search_vague, "shout": shout_loud}),
             expected=["search: say when to use shout instead", "shout: say when to use search instead"],
             hint="the name exactly as written: no re.IGNORECASE, so SEARCH does not name the tool search"),
        Case("Korean words count", lambda f: f({"clients": clients, "orders": orders}),
             expected=["clients: say when to use orders instead", "orders: say when to use clients instead"],
             hint="a word is 5+ letters of any script: re.findall(r'[^\\W\\d_]{5,}', ...), not [a-z]"),
        Case("in the dict's order", lambda f: f({"weather": weather, "lookup": lookup_vague, "search_docs": search_vague}),
             expected=["weather: no description", "lookup: say when to use search_docs instead",
                       "search_docs: say when to use lookup instead"],
             hint="go through the tools in the dict's order, each tool's problems together; do not sort them"),
        Case("no shared long word", lambda f: f({"now": now, "book": book, "shout": shout_loud}), expected=[],
             hint="only words of five or more letters count: 'from', 'the' and '24' are not"),
        Case("the course's own tools", lambda f: f(course_tools()), expected=[],
             hint="course_lib's five tools describe themselves well: a problem here is a false alarm"),
    ]),
}
