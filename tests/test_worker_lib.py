"""What a submission's worker keeps of the finished modules (course_lib/courseware/worker_lib.py): for each stage,
exactly what its notebook hands out, and none of the functions its exercises ask a learner to write."""
from __future__ import annotations

import ast
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


def kept(stage: str) -> dict:
    return worker_lib.available(stage, grader.finished(stage), grader._roots(stage, setup(stage)))


@pytest.mark.parametrize("stage", STAGES)
def test_each_stage_s_worker_keeps_exactly_what_its_notebook_hands_out(stage):
    assert kept(stage) == KEPT.get(stage, {})


@pytest.mark.parametrize("stage", STAGES)
def test_no_function_an_exercise_asks_for_is_in_its_stage_s_worker(stage):
    names = {n for module in kept(stage).values() for n in module}
    assert names & set(ANSWERS[stage]) == set()


@pytest.mark.parametrize("stage", STAGES)
def test_every_cut_source_is_python_that_says_it_was_cut(stage):
    for path, source in worker_lib.cut(stage, grader.finished(stage), grader._roots(stage, setup(stage))).items():
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
    sources = grader._cut(stage, setup(stage), grader.withheld(stage)[exercise])
    space = {}
    exec(next(s for s in sources.values() if f" {name}" in s and "LookupError" in s), space)
    with pytest.raises(LookupError, match=f"{name}: this exercise asks you to write it"):
        space[name]([])
