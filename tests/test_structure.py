"""The library stays small, in teaching order, and `import course_lib` stays cheap and quiet."""
import ast
import subprocess
import sys
from pathlib import Path

import pytest

import course_lib

PACKAGE = Path(course_lib.__file__).parent
# Line budgets (whole file, comments and docstrings included). Raise one only with a reason:
# tools.py holds five tools with their safety bounds, and agent.py the loop plus transcripts on disk and the
# real APIs' stop reasons. The stage-08 modules grew with what the live APIs really do (issue 9): thinking
# blocks and stop reasons in anthropic.py, one error table in remote.py, the date-aware model lifecycle with
# its cited retirement table in catalog.py, a stand-in as strict as the real APIs in standin.py, and
# `course doctor` checking every setting with the code that reads it (and for a Korean font) in cli.py. The grader (issue 10) is
# its own module: assemble from trusted cells, run sandboxed, judge from outside, batch; checks.py runs each
# case in a thread it can abandon (and, issue 12, shows an HTML table and explains a NameError), and stage06/07 have a case for every rule their exercise text states.
# Issue 11 (hostile input) grew the file tools in tools.py (bounded reads, pipes and devices refused, OS failures
# told in the workspace's terms, atomic writes done relative to the opened folder, so a folder swapped for a
# symlink mid-way cannot lead outside), approval.py (only an explicit yes approves; a notebook without a screen is denied at once, issue 12), dispatch.py (no
# exception but KeyboardInterrupt escapes; no absolute path reaches the model), base.py (a scripted reply with a
# typo, a wrong type or absurdly deep arguments is a ModelError sentence) and agent.py/describe.py (strict-JSON transcripts; cached tool descriptions).
# Issue 12 grew widgets.py (the stepper's new marks and expanders, the approval's paused/decided states, peek
# for long outputs). It grew standin.py by reading a hostile body as the APIs' front ends do (411, 413, chunks, nesting, UTF-8, half
# an emoji, each in the API's error shape; a stand-in bug a 500): the module was at its budget before.
# Issue 12's learner review grew checks.py (it names an earlier exercise that is still a stub) and stage03.py (03.4
# with its sample tool sets). Issue 13: agent.py gained a budget check, the hand-over note and chat() turns;
# safety.py (stage 09) holds three defences, a policy with taint, the hand-over, budgets with the course's one
# token estimate, and a time limit that really stops a blocking tool; memory.py (stage 10) a protocol-safe window,
# summaries, recovery from "context_full" and a SQLite store with its limits. The injection lab that measures the
# defences is courseware (injection_lab.py), so the stage module reads as the defences alone. grader.py looks
# at what an answer reaches (a wrapper, a default, an alias of a finished function), as a cheating student did.
# A red-team round grew safety.py: Unicode-aware taint, a time limit that ends the tool's whole process group
# (nested limits too), and a budget that records each call so trimming the history cannot hide spending.
# retrieval.py (stage 11, issue 14) reads the workspace with read_file's rules and bounds, and its tool bounds its output;
# planning.py holds two patterns (a todo checklist with replanning, the evaluator-optimiser loop) with their demos;
# evaluation.py (stage 12) four answer checks, trajectory checks, a judge with its failure modes, three scripted
# stand-ins of different quality and a concurrent runner with retries; cli.py gained `course eval`; base.py
# holds ask(), the one way the agent, summaries and critics call a model. approval.py names
# what it asks about (a write, or a tool call under a stage-09 policy). Stage 11's thought and tool_choice grew
# parsing/agent (an optional thought, shown only when there is one), both adapters and base.py (tool_choice in
# each API's words) and standin.py (tool_choice checked as each API documents and honoured by the script).
# Lesson 12: cli.py shows a counter row per finished `course eval` run and keeps what finished on Ctrl-C (exit
# 130), and serves MCP (`course mcp serve`, its code in mcp_bridge.py); plots.py draws pass rate per model and
# cost against pass rate. mcp_bridge.py (stage 13) holds a server, a client with a hang guard and the schema
# check, and says why a server failed (its last stderr lines; a print() on stdout named as the cause).
# A learner's review of lesson 12 grew evaluation.py: a task with a misspelt key or an unknown tool is refused
# with a sentence, a task missing from the new run counts as a regression, and saved runs are read with checks;
# cli.py's `course eval` gives one-line usage errors for files it cannot use. A cheating student grew grader.py.
# mcp_bridge.py's server answers what the SDK drops (-32700/-32600) and lets running calls finish when stdin
# closes; connect_mcp names echo programs and malformed answers in a sentence (a learner's review of lesson 13).
# Issue 16 (mutation testing) added a few lines of comment where a branch can never be taken or a flag matters
# (tools' open flags, remote's SDK defaults), anthropic's dict thinking and safety's shared Taint runs.
BUDGETS = {"tools.py": 400, "registry.py": 80, "describe.py": 195, "parsing.py": 165,
           "dispatch.py": 190, "agent.py": 370, "safety.py": 450, "memory.py": 400, "retrieval.py": 265, "planning.py": 310, "orchestration.py": 200, "structured.py": 100, "evaluation.py": 465, "models/base.py": 195, "models/scripted.py": 125,
           "models/anthropic.py": 170, "models/openai.py": 125, "models/catalog.py": 265,
           "models/remote.py": 140, "standin.py": 630, "courseware/cli.py": 465, "__init__.py": 45, "courseware/livecheck.py": 140, "courseware/grader.py": 700, "courseware/sandbox.py": 110,
           "courseware/checks.py": 470, "courseware/injection_lab.py": 180, "courseware/grading.py": 100, "courseware/exercises/__init__.py": 10, "courseware/__init__.py": 10,
           "approval.py": 180, "courseware/plots.py": 170, "courseware/widgets.py": 190,
           **{f"courseware/exercises/stage{n:02d}.py": 200 for n in range(1, 9)}, "courseware/exercises/stage06.py": 255,
           "courseware/exercises/stage07.py": 275, "courseware/exercises/stage03.py": 315,
           "courseware/exercises/stage09.py": 300, "courseware/exercises/stage10.py": 360,
           "courseware/exercises/stage11.py": 340, "courseware/exercises/stage12.py": 300,
           "courseware/exercises/stage13.py": 250, "mcp_bridge.py": 390}
STAGES = {"tools.py": "Stage 01", "registry.py": "Stage 02", "describe.py": "Stage 03",
          "parsing.py": "Stage 04", "dispatch.py": "Stage 05", "agent.py": "Stage 06",
          "models/scripted.py": "Stage 07", "models/anthropic.py": "Stage 08", "models/openai.py": "Stage 08",
          "standin.py": "Stage 08", "safety.py": "Stage 09", "memory.py": "Stage 10", "retrieval.py": "Stage 11", "planning.py": "Stage 11",
          "orchestration.py": "Stage 11", "structured.py": "Stage 11", "evaluation.py": "Stage 12", "mcp_bridge.py": "Stage 13"}


def test_every_module_has_a_budget():
    modules = {str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py")} - {"models/__init__.py"}
    assert modules == set(BUDGETS), "add new modules to BUDGETS"


@pytest.mark.parametrize("name, budget", sorted(BUDGETS.items()))
def test_module_is_within_its_line_budget(name, budget):
    lines = len((PACKAGE / name).read_text(encoding="utf-8").splitlines())
    assert lines <= budget, f"{name} has {lines} lines, over its budget of {budget}"


@pytest.mark.parametrize("name, stage", sorted(STAGES.items()))
def test_module_docstring_names_its_stage_and_what_it_leaves_out(name, stage):
    doc = ast.get_docstring(ast.parse((PACKAGE / name).read_text(encoding="utf-8")))
    assert doc.startswith(stage) and "Adds:" in doc and "Leaves out:" in doc


def test_import_is_quiet_and_loads_no_sdk_or_plotting():
    code = ("import sys, course_lib; from course_lib import Agent, ScriptedModel, parse_reply; from course_lib.dispatch import dispatch;"
            "bad = [m for m in ('anthropic', 'openai', 'httpx', 'httpx2', 'matplotlib', 'ipywidgets',"
            " 'IPython', 'numpy') if m in sys.modules]; print(bad)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]" and result.stderr == ""


def test_adapter_modules_import_their_sdk_only_when_a_model_is_built():
    code = ("import sys; from course_lib.models.anthropic import AnthropicModel; "
            "from course_lib.models.openai import OpenAIModel; import course_lib.standin; "
            "print([m for m in ('anthropic', 'openai') if m in sys.modules])")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.stdout.strip() == "[]", result.stderr


def test_bare_import_loads_no_stage_module():
    result = subprocess.run([sys.executable, "-c", "import sys, course_lib; print(sorted(m for m in sys.modules "
                             "if m.startswith('course_lib.')))"], capture_output=True, text=True, timeout=60)
    assert result.stdout.strip() == "[]"


def test_exported_functions_stay_functions_after_their_modules_load():
    code = ("import course_lib.agent; from course_lib import parse_reply, Agent, calculator; "
            "import inspect; print(all(inspect.isfunction(f) or inspect.isclass(f) "
            "for f in (parse_reply, Agent, calculator)))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert result.stdout.strip() == "True", result.stderr


def test_lazy_exports_resolve_and_unknown_names_fail():
    for name in course_lib.__all__:
        assert getattr(course_lib, name) is not None
    with pytest.raises(AttributeError):
        course_lib.no_such_thing


def test_ls_course_lib_reads_as_the_stage_map():
    """The stage modules at the top, the course's own machinery (checks, grader, widgets, plots, CLI) in
    course_lib/courseware/ (SPEC §3)."""
    top = sorted(p.name for p in PACKAGE.iterdir() if not p.name.startswith(("_", ".")) or p.name == "__init__.py")
    assert top == ["__init__.py", "agent.py", "approval.py", "courseware", "data", "describe.py", "dispatch.py",
                   "evaluation.py", "mcp_bridge.py", "memory.py", "models", "orchestration.py", "parsing.py", "planning.py", "registry.py",
                   "retrieval.py", "safety.py", "standin.py", "structured.py", "tools.py"]
    machinery = {p.stem for p in (PACKAGE / "courseware").glob("*.py")} - {"__init__"}
    assert machinery == {"checks", "cli", "grader", "grading", "injection_lab", "livecheck", "plots", "sandbox",
                         "widgets"}
