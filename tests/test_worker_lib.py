"""What a submission's worker keeps of the finished modules (course_lib/courseware/worker_lib.py): for each stage,
exactly what its notebook hands out, and none of the functions its exercises ask a learner to write."""
from __future__ import annotations

import ast
import inspect
import glob
import subprocess
import sys

import nbformat
import pytest

from course_lib.courseware import grader, sandbox, worker_lib
from course_lib.courseware.grading import ROOT

STAGES = [f"{n:02d}" for n in range(1, 14)]
# What each stage's worker keeps, by the names the cut modules define (imports left out). Review a change here:
# every name is something an answer of that stage can use.
KEPT = {
    "01": {"workspace.py": ["ToolError"]},
    "02": {"registry.py": ["NAME_PATTERN", "RESERVED", "ToolRegistry", "_DECORATOR"]},
    "04": {"parsing.py": ["ParsedReply"]},
    "06": {"models/__init__.py": ["_LAZY", "__getattr__"],
           "models/base.py": ["MAX_ARGS_DEPTH", "ModelError", "Reply", "STOPS", "ToolCall", "_deeper_than", "_only",
                              "_tool_call", "scrub"],
           "models/native.py": ["NATIVE", "NativeProtocol"], "models/scripted.py": ["ScriptedModel"]},
    "07": {"models/__init__.py": ["_LAZY", "__getattr__"], "models/native.py": ["NATIVE", "NativeProtocol"],
           "models/scripted.py": ["ScriptedModel"]},
    "10": {"memory.py": ["split_steps"]},
    "11": {"retrieval.py": ["_HANGUL", "_RUNS", "tokenize"]},
}
# The finished functions each stage's exercises write again: none may be in that stage's worker.
ANSWERS = {"01": ["calculator", "read_file"], "02": ["register"], "03": ["tool_schema", "tool_description"],
           "04": ["parse_reply"], "05": ["dispatch"], "06": ["Agent", "ask"], "07": ["parse_reply", "ask"],
           "08": ["history_to_openai", "history_to_anthropic", "reply_from_openai"], "09": ["ToolPolicy", "handoff"],
           "10": ["trim_window", "MemoryStore"], "11": ["BM25", "parse_verdict", "call_edges"],
           "12": ["grade_answer", "grade_trajectory", "run_suite", "compare"],
           "13": ["schema_problems", "from_mcp_result", "connect_mcp", "build_server"]}


def setup(stage: str) -> tuple[str, ...]:
    nb = nbformat.read(glob.glob(str(ROOT / "solutions" / f"{stage}_*_exercises.ipynb"))[0], as_version=4)
    return tuple(c.source for c in nb.cells if c.cell_type == "code" and not grader._grade_id(c))


def start(stage: str) -> set:   # not grader._roots: that one is cached, and these tests are about worker_lib
    return worker_lib.roots(stage, list(setup(stage)), grader.finished(stage), grader.may_use(stage))


def kept(stage: str) -> dict:
    return worker_lib.available(stage, grader.finished(stage), start(stage))


@pytest.mark.parametrize("stage", STAGES)
def test_each_stage_s_worker_keeps_exactly_what_its_notebook_hands_out(stage):
    assert kept(stage) == KEPT.get(stage, {})


@pytest.mark.parametrize("stage", STAGES)
def test_no_function_an_exercise_asks_for_is_in_its_stage_s_worker(stage):
    names = {n for module in kept(stage).values() for n in module}
    assert names & set(ANSWERS[stage]) == set()


@pytest.mark.parametrize("stage", STAGES)
def test_every_cut_source_is_python_that_says_it_was_cut(stage):
    for path, source in worker_lib.cut(stage, grader.finished(stage), start(stage)).items():
        ast.parse(source)
        assert source.startswith(worker_lib.PLACEHOLDER) and path.is_file()


def test_what_a_kept_name_needs_in_its_own_module_is_kept_and_a_lazy_table_keeps_only_its_names():
    cut = worker_lib.cut("06", grader.finished("06"), {("course_lib.models", "ScriptedModel")})
    models = cut[worker_lib.PACKAGE / "models" / "__init__.py"]
    assert "_LAZY = {'ScriptedModel': '.scripted'}" in models and "AnthropicModel" not in models
    scripted = cut[worker_lib.PACKAGE / "models" / "scripted.py"]
    assert "class ScriptedModel" in scripted
    assert worker_lib.PLACEHOLDER == cut[worker_lib.PACKAGE / "agent.py"]   # nothing of the loop


def test_a_submodule_imported_as_a_module_needs_only_the_attributes_read_from_it():
    tree = ast.parse("from course_lib import tools\nx = tools.calculator\ndef f():\n    return tools.lookup('a')\n")
    assert sorted(worker_lib.imports("__main__", tree)) == [("course_lib.tools", "calculator"),
                                                            ("course_lib.tools", "lookup")]
    tree = ast.parse("from course_lib import tools\nuse(tools)\n")
    assert worker_lib.imports("__main__", tree) == [("course_lib.tools", None)]
    tree = ast.parse("def f():\n    from course_lib.parsing import parse_reply\n")
    assert worker_lib.imports("__main__", tree, nested=False) == []


def test_a_worker_that_would_need_a_finished_module_whole_is_a_grader_error_not_a_leak():
    with pytest.raises(ValueError, match="would need all of course_lib.parsing"):
        worker_lib.cut("04", grader.finished("04"), {("course_lib.parsing", None)})


@pytest.mark.skipif(sandbox.isolation() != "bubblewrap", reason="the cut files are bound only by bubblewrap")
def test_in_the_sandbox_the_finished_function_is_gone_whatever_the_route(tmp_path):
    """The files themselves are the cut ones, their compiled copies hidden, the git history empty."""
    scratch = tmp_path / "s"
    for sub in ("work", "home", "tmp"):
        (scratch / sub).mkdir(parents=True)
    lib = tmp_path / "lib"
    lib.mkdir()
    replaced = worker_lib.prepare(grader._cut("04", setup("04"), frozenset()), lib)
    probe = ("import importlib, pathlib, course_lib\n"
             "from course_lib.parsing import ParsedReply\n"
             "m = importlib.import_module('course_lib.parsing')\n"
             "root = pathlib.Path(course_lib.__file__).parents[1]\n"
             "seen = lambda p: sorted(x.name for x in p.iterdir()) if p.is_dir() else 'absent'\n"
             "print(hasattr(m, 'parse_reply'), 'def parse_reply' in (root / 'course_lib' / 'parsing.py').read_text(),"
             " seen(root / 'course_lib' / '__pycache__'), seen(root / 'solutions'), seen(root / 'notebooks'),"
             " seen(root / '.git') in ([], 'absent'))\n")
    command = sandbox.wrapper("bubblewrap", scratch, [], replaced) + [   # this copy of the course, compiled nowhere
        "env", "PYTHONDONTWRITEBYTECODE=1", f"PYTHONPATH={worker_lib.PACKAGE.parent}", sys.executable, "-c", probe]
    out = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert out.stdout.strip() == "False False [] [] [] True", out.stderr


@pytest.mark.parametrize("stage, exercise, name", [("07", "07.1", "ScriptedModel"), ("10", "10.1", "split_steps")])
def test_a_name_handed_out_for_another_exercise_refuses_to_work_where_its_own_exercise_is_graded(stage, exercise,
                                                                                                  name):
    assert grader.withheld(stage) == {exercise: frozenset({name})}
    sources = worker_lib.cut(stage, grader.finished(stage), start(stage), grader.withheld(stage)[exercise])
    space = {}
    exec(next(s for s in sources.values() if f" {name}" in s and "LookupError" in s), space)
    with pytest.raises(LookupError, match=f"{name}: this exercise asks you to write it"):
        space[name]([])


# The helpers one by one, on a small package of their own (worker_lib.PACKAGE pointed at it), so each rule of the
# cut is pinned by a case a wrong rule would fail.
FAKE = {
    "__init__.py": '"""The fake course_lib."""\n',
    "tools.py": "def calculator(x):\n    return x\n\ndef lookup(k):\n    return k\n",
    "agent.py": ('"""The loop."""\nfrom __future__ import annotations\n\nimport json\nimport os as system\n'
                 "from .tools import calculator, lookup\n\nLIMIT = 3\nOTHER = 4\n\n"
                 "def helper():\n    return LIMIT + calculator(1)\n\n"
                 "class Agent:\n    def run(self):\n        return helper()\n\n"
                 "def unused():\n    return json.dumps(OTHER) + system.sep + lookup('x')\n"),
    "models/__init__.py": ('"""Models."""\nfrom importlib import import_module\n\nfrom .base import Reply\n\n'
                           "_LAZY = {'Scripted': '.scripted', 'Remote': '.remote'}\n\n"
                           "def __getattr__(name):\n    return getattr(import_module(_LAZY[name], __name__), name)\n"),
    "models/base.py": "class Reply:\n    pass\n",
    "models/scripted.py": "from .base import Reply\n\nclass Scripted:\n    kind = Reply\n",
    "models/remote.py": "from ..tools import lookup\n\nclass Remote:\n    pass\n",
}


@pytest.fixture
def fake(tmp_path, monkeypatch):
    package = tmp_path / "course_lib"
    for name, source in FAKE.items():
        (package / name).parent.mkdir(parents=True, exist_ok=True)
        (package / name).write_text(source)
    monkeypatch.setattr(worker_lib, "PACKAGE", package)
    return package


def test_file_finds_a_module_or_a_package_of_the_course_only(fake):
    assert worker_lib._file("course_lib.tools") == fake / "tools.py"
    assert worker_lib._file("course_lib.models") == fake / "models" / "__init__.py"
    assert worker_lib._file("course_lib.models.base") == fake / "models" / "base.py"
    assert worker_lib._file("course_lib") == fake / "__init__.py"
    assert worker_lib._file("course_lib.missing") is None and worker_lib._file("json") is None
    assert worker_lib._file("other.tools") is None


def test_a_relative_import_is_read_from_the_module_or_the_package_it_is_in(fake):
    node = lambda source: ast.parse(source).body[0]
    assert worker_lib._absolute("course_lib.agent", node("from .tools import x")) == "course_lib.tools"
    assert worker_lib._absolute("course_lib.agent", node("from . import tools")) == "course_lib"
    assert worker_lib._absolute("course_lib.models.remote", node("from ..tools import x")) == "course_lib.tools"
    assert worker_lib._absolute("course_lib.models.remote", node("from .base import x")) == "course_lib.models.base"
    assert worker_lib._absolute("course_lib.models", node("from .base import x")) == "course_lib.models.base"
    assert worker_lib._absolute("course_lib.models", node("from ..tools import x")) == "course_lib.tools"
    assert worker_lib._absolute("course_lib.agent", node("from json import x")) == "json"


def test_imports_names_each_course_pair_and_leaves_out_other_packages(fake):
    tree = ast.parse("import json\nimport course_lib.tools\nfrom course_lib.agent import Agent as A, LIMIT\n"
                     "from collections import deque\nclass C:\n    from course_lib.tools import lookup\n"
                     "f = lambda: 1\ndef g():\n    from course_lib.agent import helper\n")
    assert worker_lib.imports("__main__", tree) == [("course_lib.tools", None), ("course_lib.agent", "Agent"),
                                                    ("course_lib.agent", "LIMIT"), ("course_lib.tools", "lookup"),
                                                    ("course_lib.agent", "helper")]
    assert sorted(worker_lib.imports("__main__", tree, nested=False), key=str) == sorted([
        ("course_lib.tools", None), ("course_lib.agent", "Agent"), ("course_lib.agent", "LIMIT"),
        ("course_lib.tools", "lookup")], key=str)   # a class body runs on import, a function body does not
    lam = ast.parse("g = lambda: __import__('x')\nh = (lambda: 0)\n")
    assert list(worker_lib._run_on_import(lam))[0] is lam and not any(
        isinstance(n, ast.Call) for n in worker_lib._run_on_import(lam))


def test_a_submodule_bound_under_another_name_is_followed_by_that_name(fake):
    tree = ast.parse("from course_lib import tools as t\nt.calculator(1)\ntools.lookup\n")
    assert worker_lib.imports("__main__", tree) == [("course_lib.tools", "calculator")]
    tree = ast.parse("from course_lib import tools\ntools.calculator.__name__\n")
    assert worker_lib._attributes(tree, "course_lib.tools", "tools") == [("course_lib.tools", "calculator")]
    assert worker_lib._attributes(ast.parse("print(tools)"), "course_lib.tools", "tools") == [
        ("course_lib.tools", None)]
    assert worker_lib._attributes(ast.parse("x.tools.y"), "course_lib.tools", "tools") == []


def test_defines_and_uses_name_what_a_statement_binds_and_reads():
    first = lambda source: ast.parse(source).body[0]
    assert worker_lib._defines(first("def f(a):\n    b = 1")) == {"f"}
    assert worker_lib._defines(first("async def f():\n    pass")) == {"f"}
    assert worker_lib._defines(first("class C(B):\n    x = 1")) == {"C"}
    assert worker_lib._defines(first("import os.path, json as j")) == {"os", "j"}
    assert worker_lib._defines(first("from a import b, c as d")) == {"b", "d"}
    assert worker_lib._defines(first("x, (y, z) = w")) == {"x", "y", "z"}
    assert worker_lib._defines(first("n += m")) == {"n"}
    assert worker_lib._defines(first("print(q)")) == set()
    assert worker_lib._uses(first("x = f(y) + z.attr")) == {"x", "f", "y", "z"}


def test_lazy_reads_either_table_and_only_at_the_top(fake):
    assert worker_lib._lazy(ast.parse("_LAZY = {'A': '.a'}")) == {"A": ".a"}
    assert worker_lib._lazy(ast.parse("x = 1\n_EXPORTS = {'B': 'b'}")) == {"B": "b"}
    assert worker_lib._lazy(ast.parse("TABLE = {'A': '.a'}\ndef f():\n    _LAZY = {'C': 'c'}")) == {}
    assert worker_lib._lazy(ast.parse("a.b = 1\n_LAZY = {}")) == {}


def test_a_withheld_class_or_function_raises_lookup_error_naming_itself():
    space = {}
    exec(worker_lib._withheld("Store") + worker_lib._withheld("split"), space)
    assert isinstance(space["Store"], type) and inspect.isfunction(space["split"])
    for name in ("Store", "split"):
        with pytest.raises(LookupError) as caught:
            space[name](1, key=2)
        assert caught.value.args == (f"{name}: this exercise asks you to write it",)


def test_slice_keeps_what_the_names_need_in_order_and_prunes_the_imports(fake):
    tree = ast.parse(FAKE["agent.py"])
    source, needed = worker_lib._slice("course_lib.agent", tree, {"Agent"})
    assert source.startswith(worker_lib.PLACEHOLDER)
    body = ast.parse(source).body
    assert ast.get_docstring(ast.parse(source)) == "The loop."
    assert [ast.unparse(s).split("\n")[0] for s in body[1:]] == [
        "from __future__ import annotations", "from .tools import calculator", "LIMIT = 3", "def helper():",
        "class Agent:"]
    assert needed == {("course_lib.tools", "calculator")}
    source, needed = worker_lib._slice("course_lib.agent", tree, {"unused"})
    assert "import json" in source and "import os as system" in source and "LIMIT" not in source
    assert needed == {("course_lib.tools", "lookup")}
    source, _ = worker_lib._slice("course_lib.agent", tree, set())
    assert ast.unparse(ast.parse(source)).strip() == '"""The loop."""\nfrom __future__ import annotations'


def test_slice_turns_a_withheld_name_into_its_stand_in_and_drops_what_only_it_needed(fake):
    tree = ast.parse(FAKE["agent.py"])
    source, needed = worker_lib._slice("course_lib.agent", tree, {"Agent", "helper"}, frozenset({"Agent"}))
    assert "return helper()" not in source and "def helper" in source
    assert source.endswith(worker_lib._withheld("Agent")) and needed == {("course_lib.tools", "calculator")}
    source, _ = worker_lib._slice("course_lib.agent", tree, {"helper"}, frozenset({"Agent"}))
    assert "Agent" not in source   # withheld but not asked for: neither the class nor a stand-in


def test_slice_of_a_lazy_package_keeps_the_table_of_the_names_asked_for(fake):
    tree = ast.parse(FAKE["models/__init__.py"])
    source, needed = worker_lib._slice("course_lib.models", tree, {"Scripted"})
    assert "_LAZY = {'Scripted': '.scripted'}" in source and "def __getattr__" in source
    assert "from importlib import import_module" in source and "from .base import Reply" not in source
    assert needed == {("course_lib.models.scripted", "Scripted")}
    _, needed = worker_lib._slice("course_lib.models", tree, {"Reply"})
    assert needed == {("course_lib.models.base", "Reply")}


def test_cut_follows_names_across_modules_and_leaves_a_placeholder_where_nothing_is_needed(fake):
    finished = {"course_lib.agent", "course_lib.models", "course_lib.models.remote", "course_lib.models.scripted"}
    sources = worker_lib.cut("06", finished, {("course_lib.models", "Scripted"), ("course_lib.nothing", "x"),
                                              ("json", None)})
    assert set(sources) == {fake / "agent.py", fake / "models" / "__init__.py", fake / "models" / "remote.py",
                            fake / "models" / "scripted.py"}
    assert sources[fake / "agent.py"] == sources[fake / "models" / "remote.py"] == worker_lib.PLACEHOLDER
    assert "class Scripted" in sources[fake / "models" / "scripted.py"]
    assert "'Remote'" not in sources[fake / "models" / "__init__.py"]


def test_cut_follows_a_module_kept_whole_and_its_package(fake):
    (fake / "models" / "uses.py").write_text("from ..agent import helper\n")
    sources = worker_lib.cut("06", {"course_lib.agent", "course_lib.models"}, {("course_lib.models.uses", None)})
    agent = sources[fake / "agent.py"]
    assert "def helper" in agent and "class Agent" not in agent
    assert sources[fake / "models" / "__init__.py"] == worker_lib.PLACEHOLDER   # runs, and hands out nothing
    assert worker_lib.cut("06", {"course_lib.agent"}, {("course_lib.tools", None)}) == {
        fake / "agent.py": worker_lib.PLACEHOLDER}   # tools, kept whole, imports nothing finished
    with pytest.raises(ValueError, match="stage 06's worker would need all of course_lib.agent"):
        worker_lib.cut("06", {"course_lib.agent"}, {("course_lib.models.uses", None), ("course_lib.agent", None)})


def test_prepare_writes_each_cut_source_under_a_numbered_name(tmp_path):
    sources = {tmp_path / "b" / "x.py": "B\n", tmp_path / "a" / "x.py": "A\n"}
    folder = tmp_path / "out"
    folder.mkdir()
    replaced = worker_lib.prepare(sources, folder)
    assert replaced == {tmp_path / "a" / "x.py": folder / "00_x.py", tmp_path / "b" / "x.py": folder / "01_x.py"}
    assert (folder / "00_x.py").read_text() == "A\n" and (folder / "01_x.py").read_text() == "B\n"


def test_available_lists_the_names_kept_without_imports_and_leaves_out_empty_modules(fake):
    kept = worker_lib.available("06", {"course_lib.agent", "course_lib.models"}, {("course_lib.agent", "Agent")})
    assert kept == {"agent.py": ["Agent", "LIMIT", "helper"]}


def test_roots_start_from_the_set_up_cells_the_cases_module_and_what_is_handed_over():
    finished = grader.finished("10")
    found = worker_lib.roots("10", ["from course_lib.tools import calculator\n"], finished,
                             {"10.2": ["split_steps"], "10.3": []})
    assert {("course_lib.courseware.exercises.stage10", None), ("course_lib.courseware.checks", None),
            ("course_lib.courseware.observe", None), ("course_lib.tools", "calculator"),
            ("course_lib.memory", "split_steps")} <= found
    assert not {(m, "split_steps") for m in finished if m != "course_lib.memory"} & found   # defined there only


def test_a_module_without_a_docstring_keeps_no_first_statement_it_does_not_need(fake):
    tree = ast.parse("X = 1\nY = 2\n")
    assert worker_lib._slice("course_lib.tools", tree, {"Y"})[0] == worker_lib.PLACEHOLDER + "Y = 2\n"
    assert worker_lib._slice("course_lib.tools", ast.parse(""), set())[0] == worker_lib.PLACEHOLDER + "\n"


def test_slice_keeps_a_dotted_import_by_its_first_name_and_every_stand_in(fake):
    tree = ast.parse("import os.path\nimport sys\nclass A:\n    pass\ndef b():\n    return os.path.sep\n")
    source, _ = worker_lib._slice("course_lib.tools", tree, {"A", "b"}, frozenset({"A", "b"}))
    assert source == worker_lib.PLACEHOLDER + "\n" + worker_lib._withheld("A") + worker_lib._withheld("b")
    source, _ = worker_lib._slice("course_lib.tools", tree, {"b"})
    assert "import os.path" in source and "import sys" not in source


def test_a_lazy_package_that_also_defines_names_keeps_both_kinds(fake):
    tree = ast.parse(FAKE["models/__init__.py"])
    source, needed = worker_lib._slice("course_lib.models", tree, {"Scripted", "Reply"})
    assert "from .base import Reply" in source and "_LAZY = {'Scripted': '.scripted'}" in source
    assert needed == {("course_lib.models.base", "Reply"), ("course_lib.models.scripted", "Scripted")}


def test_the_package_s_exports_table_names_modules_without_a_dot(fake):
    (fake / "__init__.py").write_text(
        "from importlib import import_module\n_EXPORTS = {'calculator': 'tools', 'Agent': 'agent'}\n"
        "__all__ = sorted(_EXPORTS)\n\ndef __getattr__(name):\n"
        "    return getattr(import_module(f'.{_EXPORTS[name]}', __name__), name)\n")
    source, needed = worker_lib._slice("course_lib", worker_lib._tree(fake / "__init__.py"), {"calculator"})
    assert "_EXPORTS = {'calculator': 'tools'}" in source and "__all__" not in source
    assert needed == {("course_lib.tools", "calculator")}
    sources = worker_lib.cut("06", {"course_lib", "course_lib.agent"}, {("course_lib", "Agent")})
    assert "class Agent" in sources[fake / "agent.py"] and "'calculator'" not in sources[fake / "__init__.py"]


def test_cut_goes_on_past_a_module_it_cannot_find(fake):
    for unknown in ("course_lib.nothing", "json"):   # popped first: the roots are taken from the end
        sources = worker_lib.cut("06", {"course_lib.agent"}, [("course_lib.agent", "Agent"), (unknown, None)])
        assert "class Agent" in sources[fake / "agent.py"]


def test_what_only_a_withheld_name_needed_is_not_kept_in_another_module(fake):
    finished = {"course_lib.agent", "course_lib.tools"}
    sources = worker_lib.cut("06", finished, [("course_lib.agent", "unused")], frozenset({"unused"}))
    assert sources[fake / "tools.py"] == worker_lib.PLACEHOLDER
    assert sources[fake / "agent.py"].endswith(worker_lib._withheld("unused"))
    sources = worker_lib.cut("06", finished, [("course_lib.agent", "unused")])
    assert "def lookup" in sources[fake / "tools.py"] and "def calculator" not in sources[fake / "tools.py"]


def test_available_names_the_stage_when_the_cut_cannot_be_made(fake):
    with pytest.raises(ValueError, match="stage 09's worker would need all of course_lib.agent"):
        worker_lib.available("09", {"course_lib.agent"}, {("course_lib.agent", None)})

