"""conftest.py: its one retry (a notebook kernel that dies while starting is started again, at most 3 tries),
and how it spreads the tests over pytest-xdist's workers."""
import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

import conftest

ROOT = Path(__file__).resolve().parent.parent


def test_a_kernel_that_dies_at_start_is_started_again_up_to_three_times(monkeypatch):
    import nbval.kernel
    calls = []

    def dies_twice(*args, **kwargs):
        calls.append(args)
        if len(calls) < 3:
            raise RuntimeError("Kernel died before replying to kernel_info")
        return "manager", "client"

    monkeypatch.setattr(conftest, "_start_kernel", dies_twice)
    assert nbval.kernel.start_new_kernel(kernel_name="python3") == ("manager", "client") and len(calls) == 3
    calls.clear()
    monkeypatch.setattr(conftest, "_start_kernel", lambda *a, **k: calls.append(a) or (_ for _ in ()).throw(
        RuntimeError("Kernel died before replying to kernel_info")))
    with pytest.raises(RuntimeError, match="Kernel died"):
        nbval.kernel.start_new_kernel()
    assert len(calls) == 3


# -- how the tests are spread over pytest-xdist's workers -------------------------------------------------------
def test_a_notebooks_cells_are_one_unit_shared_tests_one_unit_and_every_other_test_its_own():
    unit = conftest.work_unit
    assert unit("notebooks/06_agent_class.ipynb::Cell 3") == unit("notebooks/06_agent_class.ipynb::Cell 40") \
        == "notebooks/06_agent_class.ipynb"
    assert unit("tests/test_nbgrader.py::test_export_csv_has_the_gradebook_totals") == "tests/test_nbgrader.py"
    trick = "tests/test_grading_cheats.py::test_a_trick_in_an_answer_cell_changes_nothing"
    assert unit(trick + "[the builtins]") == unit(trick + "[dunder access]") == trick
    assert unit(trick + "_and_more") == trick + "_and_more"   # a longer name is another test
    assert unit("tests/test_tools.py::test_x[1]") == "tests/test_tools.py::test_x[1]"
    assert all(Path(prefix.split("::")[0]).exists() for prefix in conftest.SHARED)


# Fixtures shared across tests that are cheap enough to set up once in each worker that needs them.
CHEAP = {"time_tools": "starts one mcp-server-time", "saved_careful": "one `course eval` run",
         "_shared_stores": "two SQLite files", "summaries": "18 scripted runs, in process"}


def _fixtures_shared_across_tests(tree) -> dict[str, bool]:
    """name -> autouse, for each fixture in a test file with a scope wider than one test."""
    found = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            for deco in node.decorator_list:
                keywords = {k.arg: k.value for k in getattr(deco, "keywords", [])}
                scope = keywords.get("scope")
                if isinstance(scope, ast.Constant) and scope.value != "function":
                    autouse = keywords.get("autouse")
                    found[node.name] = isinstance(autouse, ast.Constant) and autouse.value is True
    return found


def test_every_test_using_a_costly_shared_fixture_is_in_a_shared_unit():
    """Otherwise each worker that runs one of its tests sets the fixture up again."""
    for path in sorted((ROOT / "tests").glob("test_*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        shared = _fixtures_shared_across_tests(tree)
        for test in (n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("test_")):
            used = {a.arg for a in test.args.args} | {name for name, autouse in shared.items() if autouse}
            for name in (used & set(shared)) - set(CHEAP):
                nodeid = f"tests/{path.name}::{test.name}"
                assert conftest.work_unit(nodeid + "[x]") != nodeid + "[x]", \
                    f"{nodeid} uses the shared fixture {name}: name it in conftest.SHARED, or in CHEAP here"


def test_a_notebook_run_on_two_workers_stays_in_one_kernel():
    """The scheduler really is used: split over workers, a notebook's later cells would fail (no variables)."""
    done = subprocess.run([sys.executable, "-m", "pytest", "-n", "2", "-v", "-p", "no:cacheprovider",
                           "notebooks/00_welcome.ipynb"], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:]
    workers = set(re.findall(r"\[(gw\d+)\][^\n]*PASSED", done.stdout))
    assert len(workers) == 1, done.stdout[-3000:]
