"""Stage 02 — the registry: an explicit allowlist, name → function.

The model only ever sends a tool *name*; the registry is the one place that turns it into a function.
It behaves like a read-only dict, and it refuses anything that would confuse the model or the APIs.
"""
from collections.abc import Mapping

import pytest

from course_lib.describe import tool_description
from course_lib.registry import ToolRegistry
from course_lib.tools import calculator, list_files, lookup, read_file


def test_registry_is_a_read_only_mapping():
    reg = ToolRegistry([calculator, lookup, read_file])
    assert isinstance(reg, Mapping)
    assert len(reg) == 3
    assert list(reg) == ["calculator", "lookup", "read_file"]   # registration order is kept
    assert "lookup" in reg
    assert "eval" not in reg
    assert reg["calculator"] is calculator
    assert reg.get("eval") is None
    assert dict(reg) == {"calculator": calculator, "lookup": lookup, "read_file": read_file}
    with pytest.raises(KeyError):
        reg["eval"]


def test_register_directly_returns_the_function():
    reg = ToolRegistry()
    assert reg.register(calculator) is calculator
    assert reg.register(lookup, name="facts") is lookup
    assert dict(reg) == {"calculator": calculator, "facts": lookup}


def test_register_as_a_decorator_keeps_the_original_function():
    """Decorating must not wrap or replace the function: it stays callable as before."""
    reg = ToolRegistry()

    @reg.register
    def shout(text: str) -> str:
        """Return the text in capitals."""
        return text.upper()

    assert reg["shout"] is shout
    assert shout("hi") == "HI"


@pytest.mark.parametrize("decorator_args", [{"name": "calc"}, {}])
def test_register_as_a_decorator_with_arguments(decorator_args):
    reg = ToolRegistry()

    @reg.register(**decorator_args)
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    expected_name = decorator_args.get("name", "add")
    assert list(reg) == [expected_name]
    assert reg[expected_name] is add
    assert add(2, 3) == 5


def test_registry_from_a_dict_uses_its_names():
    reg = ToolRegistry({"calc": calculator, "ls": list_files})
    assert list(reg) == ["calc", "ls"]
    assert reg["calc"] is calculator


def test_registry_from_a_list_uses_function_names():
    assert list(ToolRegistry([lookup, calculator])) == ["lookup", "calculator"]


def test_empty_registry():
    reg = ToolRegistry()
    assert len(reg) == 0
    assert list(reg) == []
    assert "empty" in repr(reg)


def test_repr_lists_the_names():
    """Printing a registry in a notebook shows what the model may call."""
    assert repr(ToolRegistry([calculator, lookup])) == "ToolRegistry(calculator, lookup)"


def test_refuses_a_duplicate_name_and_keeps_the_first():
    reg = ToolRegistry([calculator])
    with pytest.raises(ValueError, match="calculator"):
        reg.register(lambda expression: "0", name="calculator")
    assert reg["calculator"] is calculator


def test_refuses_duplicates_when_constructed():
    with pytest.raises(ValueError, match="already registered"):
        ToolRegistry([calculator, calculator])


@pytest.mark.parametrize("not_a_function", [42, "calculator", ["calculator"], object()])
def test_refuses_things_that_are_not_callable(not_a_function):
    with pytest.raises(TypeError, match="callable"):
        ToolRegistry().register(not_a_function, name="tool")


@pytest.mark.parametrize("tools", [{"calc": None}, [None], [calculator, 42]])
def test_constructor_refuses_things_that_are_not_callable(tools):
    """A typo like {"calc": None} must fail loudly, not leave a silently missing tool."""
    with pytest.raises(TypeError, match="callable"):
        ToolRegistry(tools)


@pytest.mark.parametrize(
    "name",
    [
        "bad name",      # spaces: the APIs reject them
        "",
        "9x",            # must start with a letter or _
        "a" * 65,        # at most 64 characters
        "calc!",
        "계산기",         # the provider APIs accept only ASCII letters
        "calc\n",
        5,
    ],
)
def test_refuses_invalid_names(name):
    with pytest.raises(ValueError, match="not a valid tool name"):
        ToolRegistry().register(calculator, name=name)


@pytest.mark.parametrize("name", ["a" * 64, "_private", "read-file", "Calc2"])
def test_accepts_valid_names(name):
    reg = ToolRegistry()
    reg.register(calculator, name=name)
    assert name in reg


def test_refuses_a_function_without_a_usable_name():
    """A lambda is called "<lambda>", which no API accepts: give it a name explicitly."""
    with pytest.raises(ValueError):
        ToolRegistry([lambda x: x])
    reg = ToolRegistry()
    reg.register(lambda x: x, name="identity")
    assert "identity" in reg


def test_refuses_the_reserved_name_finish():
    """ "finish" is how the model ends a run (stage 04); a tool must not shadow it."""
    with pytest.raises(ValueError, match="reserved"):
        ToolRegistry().register(calculator, name="finish")

    def finish(answer: str) -> str:
        """Pretend to finish."""
        return answer

    with pytest.raises(ValueError, match="reserved"):
        ToolRegistry([finish])


def test_a_plain_dict_and_a_registry_describe_the_same():
    """Everything that takes "tools" accepts any mapping, so a plain dict works as well."""
    as_dict = {"calculator": calculator, "lookup": lookup}
    as_registry = ToolRegistry([calculator, lookup])
    assert tool_description(as_dict) == tool_description(as_registry)
    assert tool_description(as_dict).startswith("- calculator(expression: str): ")


def test_register_none_is_refused_not_mistaken_for_the_decorator_form():
    registry = ToolRegistry()
    with pytest.raises(TypeError, match="callable"):
        registry.register(None, name="calc")
    assert len(registry) == 0


def test_the_not_callable_error_shows_no_memory_address():
    with pytest.raises(TypeError) as info:
        ToolRegistry().register(object(), name="thing")
    assert "0x" not in str(info.value) and "object" in str(info.value)


def test_an_empty_registry_prints_as_empty():
    """A learner printing a fresh registry sees the word, not a blank pair of brackets."""
    assert repr(ToolRegistry()) == "ToolRegistry(empty)"


def test_the_invalid_name_error_states_the_whole_naming_rule():
    """SPEC §8: the message says what was wrong and what to do — the full rule, in the learner's words."""
    with pytest.raises(ValueError) as info:
        ToolRegistry().register(calculator, name="bad name")
    message = str(info.value)
    assert message.startswith("'bad name' is not a valid tool name")
    assert "use letters, digits, _ or -, starting with a letter or _, at most 64 characters" in message


def test_a_callable_without_a_name_needs_one_given_explicitly():
    """A partial or a callable object has no ``__name__``: it is refused as the empty name (not registered under
    a made-up one, and not an AttributeError), and registers fine once a name is given."""
    import functools

    nameless = functools.partial(calculator)
    with pytest.raises(ValueError) as info:
        ToolRegistry([nameless])
    assert str(info.value).startswith("'' is not a valid tool name")
    reg = ToolRegistry()
    reg.register(nameless, name="calc")
    assert list(reg) == ["calc"]
