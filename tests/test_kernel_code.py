"""The Python the grader runs inside a submission's kernel, imported normally and run in-process.

`course check` sends the *source* of course_lib.courseware.kernel_judge and kernel_borrows into the kernel (see
test_grading_cheats.py for that, with real kernels). Here the same functions run on a stand-in shell and on
answers defined as a notebook defines them, so coverage and mutation testing (scripts/mutate.py) see them.
"""
import functools
import inspect
import json
import sys
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

from course_lib.courseware import grader, kernel_borrows, kernel_judge
from course_lib.courseware.kernel_borrows import _borrows

# -- what the grader sends ---------------------------------------------------------------------------------------


def test_the_grader_sends_these_modules_source_each_with_its_call():
    assert grader.BORROWS == inspect.getsource(kernel_borrows)
    assert grader.RESET == inspect.getsource(kernel_judge) + "result = reset()\n"
    assert grader.JUDGE == inspect.getsource(kernel_judge) + "result = judge(STAGE, CANDIDATES, MAY_USE, _borrows)\n"


def test_the_sources_run_after_the_grader_s_header_and_keep_its_finished_modules():
    """Sent after other lines, the source may hold no `from __future__`; and the FINISHED the header set stays."""
    header = "STAGE = '04'\nCANDIDATES = {}\nFINISHED = {'course_lib.parsing'}\nMAY_USE = {}\n"
    space = {"__name__": "__main__"}
    exec(compile(header + grader.BORROWS + grader.JUDGE.rsplit("result =", 1)[0], "judge", "exec"), space)
    assert space["FINISHED"] == {"course_lib.parsing"} and callable(space["_borrows"]) and callable(space["judge"])
    assert space["_borrows"] is not kernel_borrows._borrows and space["judge"].__module__ == "__main__"   # not imported
    fresh = {}
    exec(grader.BORROWS, fresh)
    assert fresh["FINISHED"] == set()   # no header: none finished


# -- the reset ------------------------------------------------------------------------------------------------------
def _hook(module):
    def hook(*args):
        return None
    hook.__module__ = module
    return hook


class _Formatter:
    def __init__(self):
        self.type_printers, self.deferred_printers, self.singleton_printers = {int: repr}, {("m", "C"): repr}, {1: repr}


class _Shell:
    """The parts of an IPython shell that the reset and the judge touch."""

    def __init__(self):
        self.custom = ("ValueError", "a handler")
        self.kept = {name: _hook(name + ".x") for name in kernel_judge.OWN_HOOKS}
        self.events = SimpleNamespace(callbacks={
            "pre_run_cell": [self.kept["IPython"], _hook("__main__"), self.kept["ipykernel"]],
            "post_run_cell": [_hook("IPythonic"), self.kept["matplotlib"], 7, self.kept["matplotlib_inline"]],
            "shell_initialized": []})
        self.ast_transformers, self.input_transformers_post = ["a"], ["b"]
        self.input_transformer_manager = "patched"
        self.display_formatter = SimpleNamespace(formatters={"text/plain": _Formatter(), "text/html": _Formatter()})
        self.user_ns = {}
        self.mine = "an attribute of the shell's own"

    def set_custom_exc(self, exc_tuple, handler):
        self.custom = (exc_tuple, handler)

    def transform_cell(self, raw_cell):
        return raw_cell


@pytest.fixture
def tracers():
    """Whatever the reset does to the interpreter's tracers and excepthook is undone after the test."""
    saved = sys.gettrace(), sys.getprofile(), sys.excepthook, threading.gettrace(), threading.getprofile()
    yield
    sys.settrace(saved[0])
    sys.setprofile(saved[1])
    sys.excepthook = saved[2]
    threading.settrace(saved[3])
    threading.setprofile(saved[4])


def test_the_reset_puts_the_shell_back_as_ipython_made_it(tracers):
    from IPython.core.inputtransformer2 import TransformerManager
    shell = _Shell()
    for name in kernel_judge.SHELL_METHODS[::2]:   # patched on the instance; the others are not, and stay absent
        setattr(shell, name, lambda *args: "patched")
    sys.settrace(lambda *args: None)
    sys.setprofile(lambda *args: None)
    sys.excepthook = lambda *args: None
    threading.settrace(lambda *args: None)
    threading.setprofile(lambda *args: None)
    assert kernel_judge.reset(shell) == "reset"
    assert shell.custom == ((), None)
    assert shell.events.callbacks == {
        "pre_run_cell": [shell.kept["IPython"], shell.kept["ipykernel"]],
        "post_run_cell": [shell.kept["matplotlib"], shell.kept["matplotlib_inline"]], "shell_initialized": []}
    assert shell.ast_transformers == [] and shell.input_transformers_post == []
    assert isinstance(shell.input_transformer_manager, TransformerManager)
    for formatter in shell.display_formatter.formatters.values():
        assert formatter.type_printers == formatter.deferred_printers == formatter.singleton_printers == {}
    assert not set(kernel_judge.SHELL_METHODS) & set(vars(shell)) and shell.transform_cell("x = 1") == "x = 1"
    assert shell.mine == "an attribute of the shell's own"
    assert (sys.gettrace(), sys.getprofile(), threading.gettrace(), threading.getprofile()) == (None,) * 4
    assert sys.excepthook is sys.__excepthook__


def test_without_a_shell_the_reset_and_the_judge_use_the_running_kernel_s(monkeypatch):
    import IPython
    shell = _Shell()
    monkeypatch.setattr(IPython, "get_ipython", lambda: shell)
    assert kernel_judge._shell(None) is shell
    other = _Shell()
    assert kernel_judge._shell(other) is other


# -- the judge ------------------------------------------------------------------------------------------------------
class _Result:
    def __init__(self, exercise, answer):
        self.exercise, self.answer = exercise, answer

    def as_dict(self):
        return {"exercise": self.exercise, "answer": self.answer.__name__}


def test_findings_say_what_each_answer_is_and_run_its_cases():
    def mine(x):
        return x
    mine.__module__ = "__main__"
    seen = []

    def borrows(answer, may_use):
        seen.append((answer, may_use))
        return "course_lib.tools.calculator" if answer is len else None

    namespace = {"mine": mine, "lib": len, "bound": [].append}
    candidates = {"01.1": "mine", "01.2": "missing", "01.3": "lib", "01.4": "bound"}
    found = kernel_judge.findings(namespace, candidates, {"01.3": ["calculator", "lookup"]}, borrows, _Result)
    assert found == {
        "01.1": {"defined": True, "module": "__main__", "borrows": None,
                 "result": {"exercise": "01.1", "answer": "mine"}},
        "01.2": {"defined": False, "module": "", "borrows": None, "result": None},
        "01.3": {"defined": True, "module": "builtins", "borrows": "course_lib.tools.calculator",
                 "result": {"exercise": "01.3", "answer": "len"}},
        "01.4": {"defined": True, "module": "", "borrows": None, "result": {"exercise": "01.4", "answer": "append"}}}
    assert seen == [(mine, set()), (len, {"calculator", "lookup"}), (namespace["bound"], set())]


def test_the_judge_resets_reloads_json_and_the_checks_then_answers_in_json(monkeypatch, tracers):
    import json.encoder

    from course_lib.courseware import checks
    from course_lib.courseware.exercises import stage04
    reloaded = []

    class Importlib:
        import_module = staticmethod(__import__("importlib").import_module)

        @staticmethod
        def reload(module):   # reloading for real would give this test process new classes
            reloaded.append(module)
            return module

    monkeypatch.setattr(kernel_judge, "importlib", Importlib)
    shell = _Shell()

    def validate_action(*args, **kwargs):
        return None
    validate_action.__module__ = "노트북"   # written as it is, not as \u escapes
    shell.user_ns["validate_action"] = validate_action
    text = kernel_judge.judge("04", {"04.1": "validate_action", "04.2": "find_action"}, {"04.1": ["parse_reply"]},
                              lambda answer, may_use: Path("course_lib/parsing.py") if may_use else None, shell)
    assert reloaded == [json.encoder, json, stage04, checks] and shell.custom == ((), None)
    assert '"module": "노트북"' in text
    found = json.loads(text)
    assert list(found) == ["04.1", "04.2"] and found["04.2"] == {"defined": False, "module": "", "borrows": None,
                                                                  "result": None}
    first = found["04.1"]
    assert (first["defined"], first["borrows"]) == (True, str(Path("course_lib/parsing.py")))
    expected = checks.run_cases("04.1", validate_action).as_dict()
    assert first["result"]["exercise"] == "04.1" and first["result"]["passed"] is False
    assert [row["label"] for row in first["result"]["cases"]] == [row["label"] for row in expected["cases"]]


# -- what an answer reaches: _borrows ---------------------------------------------------------------------------------
FINISHED = {"course_lib.parsing", "course_lib.registry", "course_lib.dispatch"}


@pytest.fixture
def finished(monkeypatch):
    monkeypatch.setattr(kernel_borrows, "FINISHED", set(FINISHED))


def notebook(source: str, name: str = "answer"):
    """What ``source`` defines under ``name``, defined as a notebook cell defines it (module ``__main__``)."""
    space = {"__name__": "__main__"}
    exec(source, space)
    return space[name]


def test_a_finished_function_class_instance_or_module_is_borrowing(finished):
    import course_lib
    from course_lib import parsing, registry
    assert _borrows(parsing.parse_reply, set()) == "course_lib.parsing.parse_reply"
    assert _borrows(registry.ToolRegistry, set()) == "course_lib.registry.ToolRegistry"
    assert _borrows(registry.ToolRegistry(), set()) == "course_lib.registry.ToolRegistry (an instance)"
    assert _borrows(parsing, set()) == "course_lib.parsing" and _borrows(course_lib, set()) == "course_lib"
    from course_lib import tools
    assert _borrows(tools, set()) is None and _borrows(tools.calculator, set()) is None   # stage 01: not finished
    assert _borrows(json, set()) is None


def test_what_an_exercise_hands_over_records_and_errors_are_not_borrowing(finished):
    from course_lib import dispatch, parsing, registry
    assert _borrows(parsing.parse_reply, {"parse_reply"}) is None
    assert _borrows(registry.ToolRegistry(), {"ToolRegistry"}) is None
    assert _borrows(parsing.ParsedReply, set()) is None   # a dataclass: a record both sides share
    assert _borrows(parsing.ParsedReply(True, "x", {}, None), set()) is None
    assert _borrows(dispatch.Observation("x", False), set()) is None

    class Failure(Exception):
        pass
    Failure.__module__ = "course_lib.dispatch"
    assert _borrows(Failure, set()) is None and _borrows(Failure("no"), set()) is None


WAYS = {
    "a global its code names": "from course_lib.parsing import parse_reply\ndef answer(t):\n    return parse_reply(t)",
    "a global a nested function names": ("from course_lib.parsing import parse_reply as p\ndef answer(t):\n"
                                         "    def inner():\n        return [p(x) for x in t]\n    return inner()"),
    "a default": "from course_lib.parsing import parse_reply\ndef answer(t, f=parse_reply):\n    return f(t)",
    "a keyword-only default": ("from course_lib.parsing import parse_reply\n"
                               "def answer(t, *, f=parse_reply):\n    return f(t)"),
    "a closure": ("from course_lib.parsing import parse_reply\ndef make():\n    f = parse_reply\n"
                  "    def answer(t):\n        return f(t)\n    return answer\nanswer = make()"),
    "a partial's function": ("import functools\nfrom course_lib.parsing import parse_reply\n"
                             "answer = functools.partial(parse_reply)"),
    "a partial's argument": ("import functools\nfrom course_lib.parsing import parse_reply\n"
                             "answer = functools.partial(map, parse_reply)"),
    "a partial's keyword": ("import functools\nfrom course_lib.parsing import parse_reply\n"
                            "def call(t, f):\n    return f(t)\nanswer = functools.partial(call, f=parse_reply)"),
    "a bound method's object": ("from course_lib.registry import ToolRegistry\nclass Box:\n"
                                "    def __init__(self):\n        self.r = ToolRegistry()\n"
                                "    def go(self):\n        return 1\nanswer = Box().go"),
    "a staticmethod": ("from course_lib.parsing import parse_reply\ndef f(t):\n    return parse_reply(t)\n"
                       "answer = staticmethod(f)"),
    "a classmethod": ("from course_lib.parsing import parse_reply\ndef f(cls, t):\n    return parse_reply(t)\n"
                      "answer = classmethod(f)"),
    "a base class": "from course_lib.registry import ToolRegistry\nclass answer(ToolRegistry):\n    pass",
    "a method's body": ("from course_lib.parsing import parse_reply\nclass answer:\n    def go(self, t):\n"
                        "        return parse_reply(t)"),
    "an instance's attribute": ("from course_lib.parsing import parse_reply\nclass Box:\n    pass\n"
                                "answer = Box()\nanswer.f = parse_reply"),
    "a list": "from course_lib.parsing import parse_reply\nanswer = [1, parse_reply]",
    "a tuple": "from course_lib.parsing import parse_reply\nanswer = (1, parse_reply)",
    "a set": "from course_lib.parsing import parse_reply\nanswer = {parse_reply}",
    "a frozenset": "from course_lib.parsing import parse_reply\nanswer = frozenset([parse_reply])",
    "a dict's value": "from course_lib.parsing import parse_reply\nanswer = {'k': parse_reply}",
}


@pytest.mark.parametrize("way", list(WAYS))
def test_a_finished_function_is_found_however_the_answer_reaches_it(finished, way):
    found = _borrows(notebook(WAYS[way]), set())
    expected = "course_lib.registry.ToolRegistry" if "ToolRegistry" in WAYS[way] else "course_lib.parsing.parse_reply"
    assert found in (expected, expected + " (an instance)"), found


def test_honest_answers_are_not_borrowing(finished):
    honest = notebook("import re\nfrom course_lib.tools import calculator\nfrom course_lib.parsing import ParsedReply\n"
                      "LIMIT = 3\ndef _words(t):\n    return re.findall(r'\\w+', t)\n"
                      "def answer(t, n=LIMIT, *, k=None):\n    return ParsedReply(True, calculator(t), {}, None)")
    assert _borrows(honest, set()) is None
    assert _borrows(notebook("def answer(x):\n    return answer(x)"), set()) is None   # it reaches itself: ends
    assert _borrows(notebook("answer = []\nanswer.append(answer)"), set()) is None
    assert _borrows([].append, set()) is None   # a builtin method: no module at all
    assert _borrows(functools.partial(len), set()) is None and _borrows(len, set()) is None


def test_code_from_outside_the_notebook_is_borrowing(finished):
    copied = notebook("def answer(t):\n    return t")
    copied.__module__ = "copy04"   # exec'd under another module name, or a third-party package
    assert _borrows(copied, set()) == "copy04.answer (code from outside the notebook)"
    third = notebook("def f():\n    pass\nanswer = f")
    third.__module__ = "rank_bm25.sub"
    assert _borrows(third, set()) == "rank_bm25.sub.f (code from outside the notebook)"
    for module in ("json.decoder", "course_lib.tools", "__main__"):   # the standard library, the course, the notebook
        plain = notebook("def f():\n    pass\nanswer = f")
        plain.__module__ = module
        assert _borrows(plain, set()) is None, module


def test_what_was_seen_is_not_looked_into_again_and_the_look_has_a_limit(finished):
    from course_lib.parsing import parse_reply
    seen = set()
    assert _borrows(parse_reply, set(), seen) == "course_lib.parsing.parse_reply" and id(parse_reply) in seen
    assert _borrows(parse_reply, set(), {id(parse_reply)}) is None
    assert _borrows(parse_reply, set(), set(range(5000))) == "course_lib.parsing.parse_reply"
    assert _borrows(parse_reply, set(), set(range(5001))) is None
    few = [[object() for _ in range(9)] for _ in range(400)] + [parse_reply]   # 4,000 objects looked at first
    assert _borrows(few, set()) == "course_lib.parsing.parse_reply"
    many = [[object() for _ in range(9)] for _ in range(600)] + [parse_reply]   # 6,000: the look stops before it
    assert _borrows(many, set()) is None


def test_only_the_first_thousand_items_of_a_container_are_looked_into(finished):
    from course_lib.parsing import parse_reply
    assert _borrows([0] * 999 + [parse_reply], set()) == "course_lib.parsing.parse_reply"
    assert _borrows([0] * 1000 + [parse_reply], set()) is None
    assert _borrows({i: 0 for i in range(999)} | {"f": parse_reply}, set()) == "course_lib.parsing.parse_reply"
    assert _borrows({i: 0 for i in range(1000)} | {"f": parse_reply}, set()) is None


def test_an_object_that_cannot_be_looked_into_is_not_the_course_s(finished):
    class Odd:
        def __getattribute__(self, name):
            if name == "__dict__":
                raise RuntimeError("no")
            return object.__getattribute__(self, name)
    Odd.__module__ = "__main__"
    from course_lib.parsing import parse_reply
    assert _borrows([Odd(), parse_reply], set()) == "course_lib.parsing.parse_reply"   # the look goes on after it


def test_the_name_shown_is_the_qualified_one_and_the_plain_name_without_one(finished):
    from course_lib import registry
    assert _borrows(registry.ToolRegistry.register, set()) == "course_lib.registry.ToolRegistry.register"

    class Named:   # a callable with a name of its own but no __qualname__ (an instance has none)
        def __call__(self):
            return 1
    Named.__module__ = "course_lib.parsing"
    thing = Named()
    thing.__name__ = "thing"
    assert _borrows(thing, set()) == "course_lib.parsing.thing"


def test_an_object_without_a_module_or_a_name_is_shown_as_it_is(finished):
    hidden = notebook("class Hidden:   # hides __module__ and __name__, as an odd extension object might\n"
                      "    def __call__(self):\n        return 1\n"
                      "    def __getattribute__(self, name):\n"
                      "        if name in ('__module__', '__name__'):\n            raise AttributeError(name)\n"
                      "        return object.__getattribute__(self, name)\nanswer = Hidden()")
    assert _borrows(hidden, set()) is None   # no module: not code from outside the notebook
    outside = notebook("class Outside:\n    def __call__(self):\n        return 1\nanswer = Outside()")
    type(outside).__module__ = "copy04"
    assert _borrows(outside, set()) == "copy04. (code from outside the notebook)"   # a module, and no name


def test_every_nested_function_is_looked_into_and_a_notebook_instance_through_its_class(finished):
    siblings = ("from course_lib.parsing import parse_reply\ndef answer(t):\n    def a():\n        return parse_reply(t)\n"
                "    def b():\n        return 1\n    return a(), b()")
    assert _borrows(notebook(siblings), set()) == "course_lib.parsing.parse_reply"
    assert _borrows(notebook("class C:\n    def __call__(self):\n        return 1\nanswer = C()"), set()) is None
    through_class = ("from course_lib.parsing import parse_reply\nclass Box:\n    def go(self, t):\n"
                     "        return parse_reply(t)\nanswer = Box()")
    assert _borrows(notebook(through_class), set()) == "course_lib.parsing.parse_reply"
