"""Shared pytest set-up, and the fixtures several test files use. Notebook kernels started by nbval inherit this process's environment, so the
offline rules are applied here: a fixed hash seed and no API keys (unless COURSE_LIVE=1 asks for live runs)."""
import os

import pytest

os.environ["PYTHONHASHSEED"] = "0"
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
