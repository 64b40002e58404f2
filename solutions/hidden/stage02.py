"""Hidden cases of stage 02 (see course_lib/courseware/hidden.py): register, call_tool, the tool decorator.

In the drivers' arguments a "<name>" (TOOLS of the public module) stands for that function: "<calculator>" is
course_lib's calculator, while "calculator" is the text.
"""
from course_lib.courseware.checks import Case
from course_lib.courseware.exercises.stage02 import calling, decorating, registering
from course_lib.courseware.observe import using

# ---- 02.1: a registry holding lookup and calc (calculator), as the old cell's after its first register
START = {"lookup": "<lookup>", "calc": "<calculator>"}
HELD = [("lookup", "<lookup>"), ("calc", "<calculator>")]
_REFUSED = [("None, 'x'", [None, "x"], "TypeError"), ("'calculator' (text)", ["calculator"], "TypeError"),
            ("42, 'finish'", [42, "finish"], "TypeError"),
            ("calculator, 'calc\\n'", ["<calculator>", "calc\n"], "ValueError"),
            ("calculator, '9lives'", ["<calculator>", "9lives"], "ValueError"),
            ("calculator, 'x' * 65", ["<calculator>", "x" * 65], "ValueError"),
            ("calculator, '계산기'", ["<calculator>", "계산기"], "ValueError"),
            ("calculator, ''", ["<calculator>", ""], "ValueError"),
            ("calculator, 42", ["<calculator>", 42], "ValueError"),
            ("calculator, '-rf'", ["<calculator>", "-rf"], "ValueError"),
            ("lookup (taken)", ["<lookup>"], "ValueError"), ("partial(lookup)", ["<partial(lookup)>"], "ValueError"),
            ("calculator, 'calc' (taken)", ["<calculator>", "calc"], "ValueError")]


def _first_raised(error):
    return lambda got: got[0][0].startswith(error + ":")


# ---- 02.2: the old cell's registry, lookup then calculator
BOX = ["<lookup>", "<calculator>"]
BOX_NAMES = ["lookup", "calculator"]
_NOT_TOOLS = ["get", "keys", "items", "__class__", "__getitem__", "globals", "print", "open", "", "Calculator",
              "calculator ", None, 7, ("calculator",)]
_NOT_ARGS = [[], ["24*7"], 42, "expression=24*7", ("24*7",)]


def _tool_error(got):
    return got[0].startswith("ToolError:") and got[1] == BOX_NAMES


# ---- 02.3: the old cell's steps: tool(calculator, name="calc"), then @tool on _echo
CALC, ECHO = ["tool", "<calculator>", "calc"], ["echo"]
BOTH = [("calc", "<calculator>"), ("_echo", "<echo>")]
_NOT_CALLABLE = [42, "calc", ["calc"]]


def _last_raised(error):
    return lambda got: isinstance(got[0][-1], str) and got[0][-1].startswith(error + ":")


HIDDEN = {
    "02.1": [
        Case("'calc' goes in after 'lookup'", using(registering, [["<calculator>", "calc"]], {"lookup": "<lookup>"}),
             expected=(["returned the function"], HELD), hint="register adds to the registry it is given, in order"),
        *[Case(f"register(registry, {shown}) raises {error}", using(registering, [args], START),
               test=_first_raised(error), shows=f"raises {error}") for shown, args, error in _REFUSED],
        Case("refused tools leave the registry as it was", using(registering, [a for _, a, _ in _REFUSED], START),
             test=lambda got: got[1] == HELD, shows="lookup and calc, unchanged"),
        Case("a name of exactly 64 characters", using(registering, [["<calculator>", "x" * 64]], START),
             expected=(["returned the function"], HELD + [("x" * 64, "<calculator>")])),
        Case("letters, digits, _ and -: 'read-file_2'", using(registering, [["<calculator>", "read-file_2"]], START),
             expected=(["returned the function"], HELD + [("read-file_2", "<calculator>")])),
        Case("a partial with a name given", using(registering, [["<partial(lookup)>", "facts"]], START),
             test=lambda got: got[0][0].startswith("returned") and got[0][0] != "returned None"
             and "facts" in [name for name, _ in got[1]], shows="stored as 'facts', returned"),
    ],
    "02.2": [
        Case("a ToolRegistry is a registry too", using(calling, ["<lookup>"], "lookup", {"topic": "unit price"},
                                                       mapping="ToolRegistry"),
             expected=("returned '$24 per unit'", ["lookup"])),
        Case("any registered function can be called", using(calling, ["<shout>"], "shout", {"text": "hi"}),
             expected=("returned 'HI'", ["shout"])),
        Case("a call leaves the registry as it was", using(calling, BOX, "calculator", {"expression": "24*7"}),
             expected=("returned '168'", BOX_NAMES)),
        *[Case(f"name {name!r} is refused", using(calling, BOX, name, {}), test=_tool_error,
               shows="a ToolError, the registry unchanged") for name in _NOT_TOOLS],
        *[Case(f"args {args!r} is refused", using(calling, BOX, "calculator", args), test=_tool_error,
               shows="a ToolError, the registry unchanged") for args in _NOT_ARGS],
        Case("a ToolRegistry's tools listed sorted", using(calling, ["<shout>", "<lookup>", "<calculator>"], "rm", {},
                                                            mapping="ToolRegistry"),
             test=lambda got: "calculator, lookup, shout" in got[0], shows="'calculator, lookup, shout'"),
        Case("the tool's own ToolError passes through", using(calling, BOX, "lookup", {"topic": "discount"}),
             test=lambda got: got[0].startswith("ToolError:") and "Known topics" in got[0],
             shows="lookup's ToolError, unchanged"),
    ],
    "02.3": [
        Case("tool(calculator, name='calc')", using(decorating, [CALC]),
             expected=(["returned the function"], [("calc", "<calculator>")])),
        Case("@tool leaves the function usable", using(decorating, [CALC, ECHO]),
             expected=(["returned the function", "returned 'hi'"], BOTH)),
        Case("each decorator writes into its own registry", using(decorating, [CALC, ECHO, ["other", "<lookup>"]]),
             expected=(["returned the function", "returned 'hi'", ["lookup"]], BOTH)),
        Case("a duplicate name keeps the first tool", using(decorating, [CALC, ECHO, ["tool", "<lookup>", "calc"]]),
             test=lambda got: _last_raised("ValueError")(got) and got[1] == BOTH,
             shows="ValueError, calc still the calculator"),
        Case("@tool(name=...) refuses a duplicate too", using(decorating, [CALC, ECHO, ["named", "_echo", "<shout>"]]),
             test=_last_raised("ValueError"), shows="raises ValueError"),
        *[Case(f"tool({thing!r}) raises TypeError", using(decorating, [CALC, ECHO, ["tool", thing]]),
               test=_last_raised("TypeError"), shows="raises TypeError") for thing in _NOT_CALLABLE],
        Case("refused tools leave the registry unchanged",
             using(decorating, [CALC, ECHO, ["tool", "<lookup>", "calc"], ["named", "_echo", "<shout>"],
                                *[["tool", thing] for thing in _NOT_CALLABLE]]),
             test=lambda got: got[1] == BOTH, shows="calc and _echo, unchanged"),
    ],
}

# Wrong solutions that pass every visible case and fail a hidden one (the old hidden-test cell failed them too):
# (exercise, the hidden case's label it fails, [(old, new) edits of the solution cell], the mistake in a few words)
CAUGHT = [
    ("02.1", "register(registry, calculator, '계산기') raises ValueError",
     [("not NAME_PATTERN.fullmatch(name)", "not name.isidentifier() or len(name) > 64")],
     "str.isidentifier for the name: it takes Korean letters and refuses '-'"),
    ("02.1", "register(registry, calculator, 'x' * 65) raises ValueError",
     [("not NAME_PATTERN.fullmatch(name)", 'not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", name)')],
     "its own pattern, without the limit of 64 characters"),
    ("02.1", "register(registry, None, 'x') raises TypeError",
     [("if not callable(func):", "if isinstance(func, (int, float)):")],
     "refuses numbers only, not every non-callable"),
    ("02.2", "name 'calculator ' is refused", [("    if name not in registry:\n",
                                               "    name = name.strip()\n    if name not in registry:\n")],
     "the name is tidied with .strip(): 'calculator ' runs the calculator"),
    ("02.2", "args [] is refused", [("if not isinstance(args, dict):", "if args is None or isinstance(args, str):")],
     "only text and None are refused as args, not every non-dict"),
    ("02.3", "tool(['calc']) raises TypeError", [("if not callable(func):", "if isinstance(func, (str, int)):")],
     "refuses text and numbers only, not every non-callable"),
    ("02.3", "a duplicate name keeps the first tool",
     [("        if key in registry:\n", "        size = len(registry)\n        registry[key] = func\n"
                                      "        if len(registry) == size:\n")],
     "stores first and tells a duplicate by the registry's size: the first tool is overwritten"),
]
