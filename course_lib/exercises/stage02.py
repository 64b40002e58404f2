"""Stage 02 exercises: the registry, an allowlist of tools.

02.1 is a checked ``register(registry, func, name=None)`` over a plain dict, 02.2 a ``call_tool`` that
never looks outside the registry, and 02.3 a ``make_tool_decorator(registry)`` that works as ``@tool`` and
``@tool(name=...)``. Every case builds its own fresh registry.
"""
from __future__ import annotations

from functools import partial

from course_lib.checks import Case, Exercise
from course_lib.registry import ToolRegistry
from course_lib.tools import ToolError, calculator, lookup


def count_words(text: str) -> int:
    """Count the words in a text (returns an int, on purpose)."""
    return len(text.split())


def shout(text: str) -> str:
    """Return the text in capitals."""
    return text.upper()


def whisper(text: str) -> str:
    """Return the text in lower case."""
    return text.lower()


def outcome(call) -> str:
    """What ``call()`` did, as text: ``returned <value>`` or ``<ExceptionType>: <message>``."""
    try:
        return f"returned {call()!r}"
    except Exception as e:   # noqa: BLE001 - the hidden tests look at the type name
        return f"{type(e).__name__}: {e}"


def same(got, func) -> str:
    """Whether a decorator or ``register`` gave ``func`` back unchanged, as a short text for the table."""
    return "the same function" if got is func else f"not the function: {type(got).__name__}"


def registered(register, *calls) -> list[str]:
    """The names in a fresh dict after ``register(registry, *args)`` for each ``args`` in ``calls``."""
    registry: dict = {}
    for args in calls:
        register(registry, *args)
    return list(registry)


def toolbox() -> dict:
    """A registry in an order that is not alphabetical, so a sorted list is visible in messages."""
    return {"lookup": lookup, "calculator": calculator, "count_words": count_words}


def decorated(make, *names):
    """Decorate ``shout`` (then ``whisper``) with a fresh registry: ``@tool`` for None, else ``@tool(name=n)``."""
    registry: dict = {}
    tool = make(registry)
    results = [tool(f) if n is None else tool(name=n)(f) for f, n in zip((shout, whisper), names)]
    return registry, results


def into_existing(make) -> list[str]:
    registry = {"calculator": calculator}
    make(registry)(shout)
    return list(registry)


NAME_HINT = "the WHOLE name must match: NAME_PATTERN.fullmatch(name), not .match"
SORTED_HINT = "list the registry's names with ', '.join(sorted(registry))"

EXERCISES = {
    "02.1": Exercise("register: a checked way into a dict registry", [
        Case("stored under __name__", lambda f: registered(f, (count_words,)), expected=["count_words"]),
        Case("name= overrides it", lambda f: registered(f, (lookup, "facts")), expected=["facts"]),
        Case("returns the function", lambda f: same(f({}, shout), shout), expected="the same function",
             hint="end with `return func`, so register can build decorators"),
        Case("same function, two names", lambda f: registered(f, (shout,), (shout, "loud")),
             expected=["shout", "loud"]),
        Case("duplicate name", lambda f: registered(f, (shout,), (whisper, "shout")), raises=ValueError),
        Case("not callable: 42", lambda f: f({}, 42, "calc"), raises=TypeError),
        Case("name 'word count'", lambda f: f({}, count_words, "word count"), raises=ValueError, hint=NAME_HINT),
        Case("a lambda needs a name", lambda f: f({}, lambda text: text), raises=ValueError,
             hint="'<lambda>' is not a valid name: check the derived name too"),
        Case("a partial has no __name__", lambda f: f({}, partial(shout)), raises=ValueError,
             hint="use getattr(func, '__name__', '') so a missing name is an invalid name"),
        Case("reserved 'finish'", lambda f: f({}, shout, "finish"), raises=ValueError),
    ]),
    "02.2": Exercise("call_tool: only registered tools run", [
        Case("calculator 24*7", lambda f: f(toolbox(), "calculator", {"expression": "24*7"}), expected="168"),
        Case("lookup 단가", lambda f: f(toolbox(), "lookup", {"topic": "단가"}), expected="개당 $24"),
        Case("an int result becomes text", lambda f: f(toolbox(), "count_words", {"text": "a b c"}),
             expected="3", hint="return str(result)"),
        Case("unknown tool 'eval'", lambda f: f(toolbox(), "eval", {"source": "2+2"}), raises=ToolError,
             hint="raise ToolError when the name is not in the registry"),
        Case("the message lists the tools", lambda f: outcome(lambda: f(toolbox(), "rm", {})),
             test=lambda m: m.startswith("ToolError") and "'rm'" in m and "calculator, count_words, lookup" in m,
             shows="'rm' + sorted names", hint=SORTED_HINT),
        Case("'__import__' is no tool", lambda f: f(toolbox(), "__import__", {"name": "os"}), raises=ToolError,
             hint="look names up in the registry only: never globals() or builtins"),
        Case("name ['calculator'] (a list)", lambda f: f(toolbox(), ["calculator"], {}), raises=ToolError,
             hint="check that the name is a str before looking it up"),
        Case("args '24*7' (not a dict)", lambda f: f(toolbox(), "calculator", "24*7"), raises=ToolError,
             hint="check isinstance(args, dict) before calling"),
        Case("args None", lambda f: f(toolbox(), "calculator", None), raises=ToolError,
             hint="check isinstance(args, dict) before calling"),
        Case("a ToolRegistry works too", lambda f: f(ToolRegistry([calculator]), "calculator", {"expression": "2+2"}),
             expected="4", hint="use only `in` and [name], which every mapping has"),
    ]),
    "02.3": Exercise("A tool decorator: @tool and @tool(name=...)", [
        Case("@tool: stored by __name__", lambda make: list(decorated(make, None)[0]), expected=["shout"]),
        Case("@tool returns the function", lambda make: same(decorated(make, None)[1][0], shout),
             expected="the same function",
             hint="the decorator must `return func` unchanged"),
        Case("@tool(name='loud')", lambda make: list(decorated(make, "loud")[0]), expected=["loud"],
             hint="with no function given, return a decorator that remembers the name"),
        Case("@tool(name=...) returns it", lambda make: same(decorated(make, "loud")[1][0], shout),
             expected="the same function"),
        Case("both forms, two tools", lambda make: list(decorated(make, None, "quiet")[0]),
             expected=["shout", "quiet"]),
        Case("writes into the given dict", into_existing, expected=["calculator", "shout"],
             hint="add to the registry you were given; do not make a copy"),
        Case("duplicate name", lambda make: decorated(make, None, "shout"), raises=ValueError),
        Case("@tool('loud'): not keyword", lambda make: make({})("loud"), raises=TypeError,
             hint="a positional argument that is not callable is a mistake: raise TypeError"),
    ]),
}
