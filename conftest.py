"""Shared pytest set-up, and the fixtures several test files use. Notebook kernels started by nbval inherit this process's environment, so the
offline rules are applied here: a fixed hash seed and no API keys (unless COURSE_LIVE=1 asks for live runs)."""
import os
import sys

import pytest

os.environ["PYTHONHASHSEED"] = "0"
# Compiled modules are kept (in __pycache__, which git ignores) even where the environment asks Python not to write
# them (PYTHONDONTWRITEBYTECODE=1): the suite starts hundreds of Python processes (kernels, `course` commands,
# graders, stand-in servers), and each compiling course_lib, and pytest rewriting every test file, from source again
# made `make test` twice as slow on 2 cores.
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
sys.dont_write_bytecode = False
os.environ["COURSE_APPROVAL"] = "deny"   # nobody can click Approve in CI: writes are denied, as the notebooks show
if os.environ.get("COURSE_LIVE") != "1":
    for key in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL", "COURSE_MAX_STEPS",
                "COURSE_ANTHROPIC_MODEL", "COURSE_OPENAI_MODEL", "COURSE_OLLAMA_MODEL"):
        os.environ.pop(key, None)

try:   # property tests never fail for being slow: a loaded CI machine must not reject a correct submission
    from hypothesis import HealthCheck, settings

    settings.register_profile("course", deadline=None, suppress_health_check=[HealthCheck.too_slow])
    settings.load_profile("course")
except ImportError:   # hypothesis comes with the test extra
    pass

try:   # a notebook's kernel that dies while starting is started again (at most 3 tries): with many kernels
    import nbval.kernel as _nbval_kernel   # starting at once on two cores, one can die before its first reply
    # (seen once in 3,000-test runs: "Kernel died before replying to kernel_info"); a failing cell still fails.
    _start_kernel = _nbval_kernel.start_new_kernel

    def _start_kernel_again_if_it_died(*args, **kwargs):
        for attempt in range(3):
            try:
                return _start_kernel(*args, **kwargs)
            except RuntimeError:
                if attempt == 2:
                    raise

    _nbval_kernel.start_new_kernel = _start_kernel_again_if_it_died
except ImportError:   # nbval comes with the test extra
    pass


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    """An empty folder as the current directory: the workspace the file tools see. (test_tools.py and
    test_retrieval.py have their own, with files in them.)"""
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    return tmp_path / "work"


# -- how `make test` spreads the tests over processes (pytest-xdist) ----------------------------------------------
# Each test is a unit of its own, given to whichever worker is free, except where tests share something: a
# notebook's cells (one kernel, in order), and the tests below, which share a fixture that is costly to set up
# (set up once per worker that runs them, it would be paid up to once per worker). tests/test_conftest.py checks
# that every test using a fixture shared across tests is named here or uses one of the cheap ones it lists.
SHARED = ("tests/test_nbgrader.py",                                                      # an nbgrader course
          "tests/test_browser.py",                                                       # JupyterLab and Chromium
          "tests/test_judge_cheats.py",                                                  # two batch grades
          "tests/test_grading_cheats.py::test_a_trick_in_an_answer_cell_changes_nothing",   # one batch grade
          "tests/test_grading_cheats.py::test_an_answer_that_reaches_into_the_interpreter_runs_earns_nothing_and_"
          "the_notes_say_what_it_reached_for",                                              # and another
          "tests/test_grading_cheats.py::test_an_answer_that_reaches_a_finished_function_earns_no_mark_however_it_"
          "gets_there")                                                                   # and a third


def work_unit(nodeid: str) -> str:
    """The unit of work a test belongs to: the notebook for a notebook's cell, a SHARED prefix, or the test."""
    path = nodeid.split("::", 1)[0]
    if path.endswith(".ipynb"):
        return path
    return next((prefix for prefix in SHARED if nodeid == prefix or nodeid.startswith((prefix + "::", prefix + "["))),
                nodeid)


@pytest.hookimpl(optionalhook=True)   # pytest-xdist's hooks: unknown where it is off (-p no:xdist)
def pytest_xdist_auto_num_workers(config):
    """Two workers per core: about half of a worker's time is spent waiting (for a kernel to start, a server to
    answer, a browser to draw), and a second worker on the same core runs tests meanwhile."""
    return 2 * (os.cpu_count() or 1)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    from xdist.scheduler import LoadScopeScheduling

    class ByWorkUnit(LoadScopeScheduling):
        """pytest-xdist's scope scheduling with `work_unit` as the scope (biggest units first, as there)."""
        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid)

    return ByWorkUnit(config, log)
