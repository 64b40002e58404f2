"""Shared pytest set-up. Notebook kernels started by nbval inherit this process's environment, so the
offline rules are applied here: a fixed hash seed and no API keys (unless COURSE_LIVE=1 asks for live runs)."""
import os

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
