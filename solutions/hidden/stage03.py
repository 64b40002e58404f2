"""Hidden cases of stage 03 (see course_lib/courseware/hidden.py): hints and sample tools travel as Python text,
which the public drivers ``given``, ``table_kept`` and ``tools_kept`` of stage03 turn back into objects."""
import inspect

from course_lib import default_tools
from course_lib.courseware.checks import Case
from course_lib.courseware.exercises.stage03 import given, table_kept, tools_kept
from course_lib.describe import tool_schema as _library_schema
from course_lib.courseware.observe import call, using

# ---------------------------------------------------------------- 03.1
_TYPING = "import pathlib, typing"
_DESCRIBED = [
    ("int", {"type": "integer"}), ("float", {"type": "number"}), ("dict", {"type": "object"}),
    ("dict[str, int]", {"type": "object"}),
    ("typing.List[int]", {"type": "array", "items": {"type": "integer"}}),
    ("list[list[int]]", {"type": "array", "items": {"type": "array", "items": {"type": "integer"}}}),
    ("Optional[list[str]]", {"type": "array", "items": {"type": "string"}}),
    ("list[bool] | None", {"type": "array", "items": {"type": "boolean"}}),
    ("Literal[1, 2, 3]", {"enum": [1, 2, 3]}),
    ('Optional[Literal["train", "plane"]]', {"enum": ["train", "plane"]}),
    ("int | str | None", {"anyOf": [{"type": "integer"}, {"type": "string"}]}),
    ("typing.Union[float, bool]", {"anyOf": [{"type": "number"}, {"type": "boolean"}]}),
]
_REFUSED = ["list", "complex", "set", "tuple[int, int]", "pathlib.Path", "list[bytes]", "Optional[bytes]"]

# ---------------------------------------------------------------- 03.2
_TOOLS_03_2 = '''
def _repeat(text: str, times: int, sep: str = " ") -> str:
    """Repeat a text."""
    return sep.join([text] * times)


def _now() -> str:
    """Tell the time."""
    return "noon"


def _note(text: str = None) -> str:
    """Write a note."""
    return text or ""


def _tagged(tags: list[str] = {"a"}) -> str:
    """Tag something."""
    return ""


def _options(city: str, **options: str) -> str:
    """Plan with options."""
    return city


def _choice(mode: Literal["fast", "slow"]) -> str:
    """Pick a mode."""
    return mode
'''


def _schema(text, test, shows, *first):
    """A case of 03.2: tool_schema of the tool ``text`` names (after those of ``first``), judged by ``test``."""
    return dict(call=using(given, *first, text, source=_TOOLS_03_2), test=test, shows=shows)


_prop = lambda name, want: lambda got: got["properties"][name] == want

# ---------------------------------------------------------------- 03.3
_RAW = ("Plan a stay.\n\n    Args:\n        days: how many days,\n            counting the day you arrive\n"
        "            and the day you leave.\n\n        city: where to stay.\n\n    Returns:\n        a plan.\n    ")
_STAY = {"days": "how many days, counting the day you arrive and the day you leave.", "city": "where to stay."}
_COURSE = [(name, inspect.getdoc(func), {p: s["description"] for p, s in _library_schema(func)["properties"].items()})
           for name, func in default_tools().items()]

# ---------------------------------------------------------------- 03.4
_TOOLS_03_4 = '''
def _fetch(url: str, timeout: float = 10.0) -> str:
    """Fetch a web page; use read_file for files in the workspace.

    Args:
        url: the address of the page.
        timeout: seconds to wait.
    """


def _read(path: str) -> str:
    """Read a text file in the workspace; for a web page, use fetch."""


def _noargs() -> str:
    """Return the current time in Seoul."""


def _two_lines(query: str) -> str:
    """Search the company documents.

    For one known fact, use lookup (this line is not the first line).

    Args:
        query: a word.
    """


def _lookup(topic: str) -> str:
    """Look up one known fact in the company documents.

    Args:
        topic: the fact.
    """


def _size(path: str) -> str:
    """Report the size of a file; at most 20000 bytes are read.

    Args:
        path: a file in the workspace.
    """


def _limit(text: str) -> str:
    """Cut a text to 20000 characters.

    Args:
        text: the text to cut.
    """


def _shouting(query: str) -> str:
    """Search the company documents; for one known fact, use LOOKUP.

    Args:
        query: a word.
    """


class _Tools:
    def convert(self, amount: float) -> str:
        """Convert won into dollars.

        Args:
            amount: how many won.
        """
'''
_FETCH_READ = '{"fetch": _fetch, "read_file": _read, "now": _noargs}'


def _problems(tools: str):
    """The probe of 03.4: description_problems of the tool set that ``tools`` (Python text) makes."""
    return using(given, tools, source=_TOOLS_03_4)


HIDDEN = {
    "03.1": [
        *[Case(text, using(given, text, source=_TYPING), expected=schema) for text, schema in _DESCRIBED],
        *[Case(f"{text} is refused", using(given, text, source=_TYPING), raises=ValueError) for text in _REFUSED],
        Case("the text 'str' is refused", call("str"), raises=ValueError,
             hint="a hint written as text is not a type: typing.get_type_hints resolves those, json_type does not"),
    ],
    "03.2": [
        Case("properties in signature order", **_schema(
            "plan_trip", lambda got: list(got["properties"]) == ["city", "travellers", "nights", "budget", "business"],
            "city, travellers, nights, budget, business, in order")),
        Case("a float default", **_schema("plan_trip", _prop("budget", {"type": "number", "default": 250000.0}),
                                          "{'type': 'number', 'default': 250000.0}")),
        Case("a bool default", **_schema("plan_trip", _prop("business", {"type": "boolean", "default": True}),
                                         "{'type': 'boolean', 'default': True}")),
        Case("the object wrapper", **_schema(
            "plan_trip", lambda got: got["additionalProperties"] is False and got["type"] == "object",
            "type object, additionalProperties False")),
        Case("no default left over from plan_trip", **_schema("_repeat", _prop("times", {"type": "integer"}),
                                                              "{'type': 'integer'}", "plan_trip"),
             hint="copy the TYPE_SCHEMAS entry before adding 'default'"),
        Case("TYPE_SCHEMAS is not changed",
             using(table_kept, "plan_trip", "_repeat", "_now", "_note", "_tagged", "_options", "_choice",
                   source=_TOOLS_03_2),
             test=lambda got: type(got) is tuple and len(got) == 2 and got[0] == got[1],
             shows="the table as it was", hint="tool_schema must not change TYPE_SCHEMAS: copy its entries"),
        Case("required: text and times", **_schema("_repeat", lambda got: got["required"] == ["text", "times"],
                                                   "['text', 'times']")),
        Case("no parameters, an empty schema", using(given, "_now", source=_TOOLS_03_2),
             expected={"type": "object", "properties": {}, "required": [], "additionalProperties": False}),
        Case("None is a JSON default", **_schema("_note", _prop("text", {"type": "string", "default": None}),
                                                 "{'type': 'string', 'default': None}")),
        Case("a set as the default is refused", using(given, "_tagged", source=_TOOLS_03_2), raises=ValueError),
        Case("**options is refused", using(given, "_options", source=_TOOLS_03_2), raises=ValueError),
        Case("Literal is not in the table", using(given, "_choice", source=_TOOLS_03_2), raises=ValueError),
    ],
    "03.3": [
        Case("raw __doc__, two continuation lines", call(_RAW), expected=_STAY),
        Case("the same, from inspect.getdoc", call(inspect.cleandoc(_RAW)), expected=_STAY,
             hint="inspect.getdoc and __doc__ must give the same descriptions"),
        Case("an empty docstring", call(""), expected={}),
        Case("Args: and nothing more", call("Args:"), expected={}),
        Case("the section ends back at its margin",
             call("Note: not a parameter.\n\nArgs:\n    x: the x.\nMore text.\n    y: not in Args."),
             expected={"x": "the x."}, hint="only the Args: section counts: a line at its margin ends it"),
        Case("a type with a comma, two spaces", call("Args:\n  a (list[str], optional): names.\n  b: ok."),
             expected={"a": "names.", "b": "ok."}),
        *[Case(f"the course tool {name}", call(doc), expected=want) for name, doc, want in _COURSE],
    ],
    "03.4": [
        Case("fetch and read_file name each other", _problems(_FETCH_READ),
             expected=["read_file: parameter 'path' has no Args: line"]),
        Case("the tool set is not changed", using(tools_kept, _FETCH_READ, source=_TOOLS_03_4),
             expected=[("fetch", True), ("read_file", True), ("now", True)]),
        Case("no tools, no problems", _problems("{}"), expected=[]),
        Case("no parameters, no Args: needed", _problems('{"now": _noargs}'), expected=[]),
        Case("a lambda has no docstring", _problems('{"a": lambda x: x}'), expected=["a: no description"]),
        Case("only the first line counts", _problems('{"search_docs": _two_lines, "lookup": _lookup}'),
             expected=["search_docs: say when to use lookup instead", "lookup: say when to use search_docs instead"]),
        Case("in the dict's order, not sorted",
             _problems('{"lookup": _lookup, "search_docs": _two_lines, "empty": lambda: None}'),
             expected=["lookup: say when to use search_docs instead", "search_docs: say when to use lookup instead",
                       "empty: no description"]),
        Case("a shared number is no word", _problems('{"size": _size, "limit": _limit}'), expected=[]),
        Case("LOOKUP does not name lookup", _problems('{"lookup": _lookup, "search_docs": _shouting}'),
             test=lambda got: got[1:] == ["search_docs: say when to use lookup instead"],
             shows="…, 'search_docs: say when to use lookup instead'"),
        Case("a bound method has no self", _problems('{"convert": _Tools().convert}'), expected=[]),
    ],
}

# Wrong solutions that pass every visible case and fail a hidden one (the old hidden-test cell failed them too):
# (exercise, the hidden case's label it fails, [(old, new) edits of the solution cell], the mistake in a few words)
CAUGHT = [
    ("03.1", "dict", [('bool: "boolean", dict: "object"}', 'bool: "boolean"}')], "a bare dict left out of the table"),
    ("03.1", "tuple[int, int] is refused", [("if origin is list:", "if origin in (list, tuple):")],
     "a tuple read as a list"),
    ("03.1", "typing.List[int]", [("if origin is list:", "if type(hint) is types.GenericAlias and origin is list:")],
     "list[...] recognised only as a types.GenericAlias"),
    ("03.1", "Literal[1, 2, 3]", [('{"enum": list(args)}', '{"enum": [str(a) for a in args]}')],
     "enum values written as text"),
    ("03.2", "no parameters, an empty schema",
     [('"required": required, "additionalProperties": False}',
       '**({"required": required} if required else {}), "additionalProperties": False}')],
     "no required list when it is empty"),
    ("03.2", "None is a JSON default", [("if p.default is inspect.Parameter.empty:",
                                         "if p.default in (inspect.Parameter.empty, None):")],
     "a None default read as no default"),
    ("03.2", "**options is refused", [("if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):",
                                       "if p.kind is p.VAR_POSITIONAL:")], "**kwargs described as a parameter"),
    ("03.2", "properties in signature order",
     [('return {"type": "object", "properties": properties,',
       'return {"type": "object", "properties": dict(sorted(properties.items())),')], "properties sorted by name"),
    ("03.3", "the section ends back at its margin",
     [("if indent <= header:", 'if indent <= header and line.strip().endswith(":"):')],
     "only a header line ends the section"),
    ("03.3", "a type with a comma, two spaces", [(r"(?:\([^)]*\))?", r"(?:\(\w+\))?")],
     "a type in brackets read as one word"),
    ("03.3", "a type with a comma, two spaces", [("if match and (param_indent is None or indent <= param_indent):",
                                                  "if match and indent == header + 4:")],
     "parameters indented exactly four spaces"),
    ("03.4", "only the first line counts",
     [(r'if not re.search(rf"(?<!\w){re.escape(other)}(?!\w)", line):',
       r'if not re.search(rf"(?<!\w){re.escape(other)}(?!\w)", inspect.getdoc(func)):')],
     "the other name looked for in the whole docstring"),
    ("03.4", "a bound method has no self", [("params = inspect.signature(func).parameters",
                                             "params = inspect.getfullargspec(func).args")],
     "getfullargspec, which keeps self"),
    ("03.4", "a shared number is no word", [(r'r"[^\W\d_]{5,}"', r'r"\w{5,}"')], r"\w{5,}: numbers count as words"),
]
