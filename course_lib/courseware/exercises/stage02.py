"""Stage 02 exercises: the registry, an allowlist of tools.

02.1 is a checked ``register(registry, func, name=None)`` over a plain dict, 02.2 a ``call_tool`` that
never looks outside the registry, and 02.3 a ``make_tool_decorator(registry)`` that works as ``@tool`` and
``@tool(name=...)``. Every case builds its own fresh registry.
"""
from __future__ import annotations

from functools import partial

from course_lib.courseware.checks import Case, Exercise
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


def two_decorators(make):
    """Two decorators on two fresh registries: shout into the first, shout and whisper into the second."""
    first, second = {}, {}
    tool_a, tool_b = make(first), make(second)
    tool_a(shout)
    tool_b(shout)
    tool_b(whisper)
    return list(first), list(second)


def plain_call(make):
    """``tool(shout, name="loud")`` on a fresh registry: (the names stored, what came back)."""
    registry: dict = {}
    got = make(registry)(shout, name="loud")
    return list(registry), same(got, shout)


# ---- drivers of the hidden cases: a "<name>" of TOOLS stands for that function, anything else for itself
TOOLS = {"<calculator>": calculator, "<lookup>": lookup, "<shout>": shout, "<partial(lookup)>": partial(lookup)}


def _thing(spec):
    return TOOLS[spec] if isinstance(spec, str) and spec in TOOLS else spec


def _held(registry, known=TOOLS) -> list:
    """A registry's (name, what it holds): a ``known`` function by its "<name>", anything else by its type."""
    return [(name, next((k for k, v in known.items() if v is func), type(func).__name__))
            for name, func in registry.items()]


def _did(call, func=None) -> str:
    """``outcome(call)``, but "returned the function" when ``call()`` gave ``func`` back."""
    try:
        got = call()
        return "returned the function" if func is not None and got is func else f"returned {got!r}"[:200]
    except NotImplementedError:   # a stub: the check says "not implemented yet"
        raise
    except Exception as e:   # noqa: BLE001 - the case looks at the type name
        return f"{type(e).__name__}: {e}"


def registering(register, calls, start=None):
    """(what each register(registry, *args) of ``calls`` did, the names and tools held), from ``start``."""
    registry = {name: TOOLS[spec] for name, spec in (start or {}).items()}
    done = [_did(lambda: register(registry, *args), args[0] if args else None)
            for args in [[_thing(a) for a in args] for args in calls]]
    return done, _held(registry)


def calling(call_tool, tools, name, args, mapping="dict"):
    """(what call_tool(registry, name, args) did, the names after), the registry a dict or ToolRegistry of tools."""
    funcs = [TOOLS[spec] for spec in tools]
    registry = ToolRegistry(funcs) if mapping == "ToolRegistry" else {f.__name__: f for f in funcs}
    return _did(lambda: call_tool(registry, name, args)), list(registry)


# steps: ["tool", thing] is tool(thing), ["tool", thing, name] tool(thing, name=name), ["named", name, thing]
# tool(name=name)(thing), ["echo"] defines _echo under @tool and calls it with "hi" (the decorated _echo is "<echo>"),
# ["other", thing] decorates thing with make({}), another registry, and gives that registry's names
def decorating(make, steps):
    """(what each of ``steps`` did with ``tool = make(registry)``, the names and tools the registry holds)."""
    registry, known, done = {}, dict(TOOLS), []
    tool = make(registry)
    for kind, *rest in steps:
        if kind == "echo":
            @tool
            def _echo(text: str) -> str:
                """Return the text unchanged."""
                return text
            known["<echo>"] = _echo
            done.append(_did(lambda: _echo("hi")))
        elif kind == "other":
            other = {}
            did = _did(lambda: make(other)(_thing(rest[0])))
            done.append(list(other) if did.startswith("returned") else did)
        elif kind == "named":
            done.append(_did(lambda: tool(name=rest[0])(_thing(rest[1])), _thing(rest[1])))
        else:
            more = {"name": rest[1]} if len(rest) > 1 else {}
            done.append(_did(lambda: tool(_thing(rest[0]), **more), _thing(rest[0])))
    return done, _held(registry, known)


NAME_HINT = "the WHOLE name must match: NAME_PATTERN.fullmatch(name), not .match"
SORTED_HINT = "list the registry's names with ', '.join(sorted(registry))"
ARGS_HINT = "check isinstance(args, dict) before calling"
DUPLICATE_HINT = "a name that is already in the registry raises ValueError, and the registry stays as it was"

EXERCISES = {
    "02.1": Exercise("register: a checked way into a dict registry", [
        Case("stored under __name__", lambda f: registered(f, (count_words,)), expected=["count_words"],
             hint="with name=None, store func under func.__name__"),
        Case("name= overrides it", lambda f: registered(f, (lookup, "facts")), expected=["facts"],
             hint="a name that is given wins over func.__name__"),
        Case("returns the function", lambda f: same(f({}, shout), shout), expected="the same function",
             hint="end with `return func`, so register can build decorators"),
        Case("same function, two names", lambda f: registered(f, (shout,), (shout, "loud")),
             expected=["shout", "loud"], hint="only the name must be new: one function may be stored twice"),
        Case("duplicate name", lambda f: registered(f, (shout,), (whisper, "shout")), raises=ValueError,
             hint=DUPLICATE_HINT),
        Case("not callable: 42", lambda f: f({}, 42, "calc"), raises=TypeError,
             hint="callable(func) is False for 42: raise TypeError"),
        Case("not callable, named 'finish'", lambda f: f({}, 42, "finish"), raises=TypeError,
             hint="check callable(func) first, as step 1 of the text says: the name comes after"),
        Case("name 'word count'", lambda f: f({}, count_words, "word count"), raises=ValueError, hint=NAME_HINT),
        Case("name 'calc\\n' (a newline at the end)", lambda f: f({}, count_words, "calc\n"), raises=ValueError,
             hint="fullmatch: a pattern ending in $ still matches before a final newline, so re.match(p + '$') fails"),
        Case("name 42 (not text)", lambda f: f({}, count_words, 42), raises=ValueError,
             hint="a name that is not a str is an invalid name: check isinstance(name, str) before fullmatch"),
        Case("a lambda needs a name", lambda f: f({}, lambda text: text), raises=ValueError,
             hint="'<lambda>' is not a valid name: check the derived name too"),
        Case("a partial has no __name__", lambda f: f({}, partial(shout)), raises=ValueError,
             hint="use getattr(func, '__name__', '') so a missing name is an invalid name"),
        Case("reserved 'finish'", lambda f: f({}, shout, "finish"), raises=ValueError,
             hint="'finish' is in RESERVED: the model says it to end the run, so no tool may take it"),
    ]),
    "02.2": Exercise("call_tool: only registered tools run", [
        Case("calculator 24*7", lambda f: f(toolbox(), "calculator", {"expression": "24*7"}), expected="168",
             hint="call registry[name](**args) and return what it gives, as text"),
        Case("lookup 단가", lambda f: f(toolbox(), "lookup", {"topic": "단가"}), expected="개당 $24",
             hint="pass args as keyword arguments: registry[name](**args)"),
        Case("an int result becomes text", lambda f: f(toolbox(), "count_words", {"text": "a b c"}),
             expected="3", hint="return str(result)"),
        Case("unknown tool 'eval'", lambda f: f(toolbox(), "eval", {"source": "2+2"}), raises=ToolError,
             hint="raise ToolError when the name is not in the registry"),
        Case("the message lists the tools", lambda f: outcome(lambda: f(toolbox(), "rm", {})),
             test=lambda m: m.startswith("ToolError") and "'rm'" in m and "calculator, count_words, lookup" in m,
             shows="'rm' + sorted names", hint=SORTED_HINT),
        Case("'Calculator' (other case)", lambda f: f(toolbox(), "Calculator", {"expression": "1"}),
             raises=ToolError, hint="names are exact: no .lower() or .strip(), so 'Calculator' is unknown"),
        Case("'__import__' is no tool", lambda f: f(toolbox(), "__import__", {"name": "os"}), raises=ToolError,
             hint="look names up in the registry only: never globals() or builtins"),
        Case("name ['calculator'] (a list)", lambda f: f(toolbox(), ["calculator"], {}), raises=ToolError,
             hint="check that the name is a str before looking it up"),
        Case("args '24*7' (not a dict)", lambda f: f(toolbox(), "calculator", "24*7"), raises=ToolError,
             hint=ARGS_HINT),
        Case("args None", lambda f: f(toolbox(), "calculator", None), raises=ToolError, hint=ARGS_HINT),
        Case("the tool's own ToolError", lambda f: outcome(lambda: f(toolbox(), "lookup", {"topic": "discount"})),
             expected=outcome(lambda: lookup(topic="discount")),
             hint="do not catch what the tool raises: its ToolError goes through unchanged, message and all"),
        Case("a ToolRegistry works too", lambda f: f(ToolRegistry([calculator]), "calculator", {"expression": "2+2"}),
             expected="4", hint="use only `in` and [name], which every mapping has"),
    ]),
    "02.3": Exercise("A tool decorator: @tool and @tool(name=...)", [
        Case("@tool: stored by __name__", lambda make: list(decorated(make, None)[0]), expected=["shout"],
             hint="tool(func) stores func under func.__name__"),
        Case("@tool returns the function", lambda make: same(decorated(make, None)[1][0], shout),
             expected="the same function",
             hint="the decorator must `return func` unchanged"),
        Case("@tool(name='loud')", lambda make: list(decorated(make, "loud")[0]), expected=["loud"],
             hint="with no function given, return a decorator that remembers the name"),
        Case("@tool(name=...) returns it", lambda make: same(decorated(make, "loud")[1][0], shout),
             expected="the same function", hint="the decorator that tool(name=...) returns gives func back too"),
        Case("tool(shout, name='loud')", plain_call, expected=(["loud"], "the same function"),
             hint="a function AND a name: register it at once; only tool(name=...) without a function waits"),
        Case("both forms, two tools", lambda make: list(decorated(make, None, "quiet")[0]),
             expected=["shout", "quiet"], hint="each use of the decorator adds one tool to the same registry"),
        Case("writes into the given dict", into_existing, expected=["calculator", "shout"],
             hint="add to the registry you were given; do not make a copy"),
        Case("two decorators, two registries", two_decorators, expected=(["shout"], ["shout", "whisper"]),
             hint="keep no global state: each tool writes into, and checks, only the registry it was made for"),
        Case("duplicate name, @tool(name=...)", lambda make: decorated(make, None, "shout"), raises=ValueError,
             hint=DUPLICATE_HINT),
        Case("duplicate name, bare @tool", lambda make: decorated(make, "whisper", None), raises=ValueError,
             hint="the bare @tool form must refuse a name that is already taken too"),
        Case("@tool('loud'): not keyword", lambda make: make({})("loud"), raises=TypeError,
             hint="a positional argument that is not callable is a mistake: raise TypeError"),
        Case("the TypeError shows @tool(name=", lambda make: outcome(lambda: make({})("loud")),
             test=lambda m: m.startswith("TypeError") and "@tool(name=" in m, shows="TypeError naming @tool(name=…)",
             hint="the message shows the right spelling, for example: write @tool(name=\"loud\")"),
        Case("tool(42): not callable", lambda make: make({})(42), raises=TypeError,
             hint="refuse anything positional that is not callable (callable(func)), not only text"),
    ]),
}
