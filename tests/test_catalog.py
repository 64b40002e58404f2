"""Model IDs and making a model from a provider's name (stage 08), and the model lifecycle check of ``course doctor``
(courseware): dates against today, the SDKs' lists, the provider's own answer, never a crash.

Every rule is tested with fixture tables (``deprecations=``, ``known_models=``, ``today=``), so an SDK
release that changes its tables cannot break these tests. A few read the installed SDKs: the one marked below,
and the last ones, which hold the tables read from the SDKs' files to what importing the SDKs gives.
"""
import ast
import subprocess
import sys
from datetime import date, datetime, timedelta, timezone
from types import SimpleNamespace
from typing import get_args

import pytest

from course_lib.courseware import cli, lifecycle
from course_lib.courseware.lifecycle import (ModelStatus, check_model, deprecation, model_status, parse_date,
                                             parse_openai_notes)
from course_lib.models import catalog
from course_lib.models.catalog import DEFAULTS, OLLAMA_URL
from course_lib.models.providers import PROVIDERS, model_for
from course_lib.models.remote import MissingKeyError


# --- one function makes a model from a provider's name ------------------------------------------------------

@pytest.fixture
def keys(monkeypatch):
    """Both keys set (nothing is sent: a model only builds its client), no model ID overridden."""
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    for name in catalog.ENV_VARS.values():
        monkeypatch.delenv(name, raising=False)
    return monkeypatch


@pytest.mark.parametrize("provider, cls", [("anthropic", "AnthropicModel"), ("openai", "OpenAIModel"),
                                           ("openai-responses", "OpenAIResponsesModel"), ("ollama", "OpenAIModel")])
def test_model_for_makes_each_provider_s_adapter_with_the_catalog_s_model_id(keys, provider, cls):
    model = model_for(provider)
    service = "openai" if provider == "openai-responses" else provider   # both OpenAI APIs: one model ID
    assert type(model).__name__ == cls and model.model == DEFAULTS[service]
    assert getattr(model, "provider", "anthropic") == service
    assert PROVIDERS == ("anthropic", "openai", "openai-responses", "ollama")


def test_model_for_ollama_goes_to_the_local_server_and_openai_to_the_sdk_s_url(keys):
    keys.delenv("OPENAI_BASE_URL", raising=False)
    assert str(model_for("ollama").client.base_url).rstrip("/") == OLLAMA_URL
    assert "api.openai.com" in str(model_for("openai").client.base_url)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_model_for_takes_the_id_from_the_environment_variable(keys, provider):
    keys.setenv(catalog.ENV_VARS["openai" if provider == "openai-responses" else provider], f"{provider}-from-env")
    assert model_for(provider).model == f"{provider}-from-env"


def test_model_for_passes_its_options_to_the_class():
    model = model_for("anthropic", model="claude-x", base_url="http://127.0.0.1:9", api_key="stand-in",
                      max_retries=0, native_tools=False)
    assert (model.model, model.native_tools, model.client.api_key, model.client.max_retries) == (
        "claude-x", False, "stand-in", 0)
    assert str(model.client.base_url).rstrip("/") == "http://127.0.0.1:9"
    stand_in = model_for("openai", base_url="http://127.0.0.1:9/v1", api_key="stand-in")
    assert str(stand_in.client.base_url).rstrip("/") == "http://127.0.0.1:9/v1" and stand_in.provider == "openai"


def test_model_for_without_a_key_names_the_variable_to_set(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(MissingKeyError, match="OPENAI_API_KEY is not set"):
        model_for("openai")


@pytest.mark.parametrize("name", ["gemini", "Anthropic", "scripted", ""])
def test_an_unknown_provider_is_a_value_error_naming_the_known_ones(name):
    with pytest.raises(ValueError) as info:
        model_for(name)
    assert str(info.value) == f"unknown provider {name!r}: the known ones are anthropic, openai, openai-responses, ollama"


def test_the_example_prices_live_in_the_catalog_and_the_plots_use_them():
    from course_lib.courseware import plots
    assert catalog.EXAMPLE_PRICES == {"input": 1.0, "output": 5.0} and plots.EXAMPLE_PRICES is catalog.EXAMPLE_PRICES


# --- the lifecycle check ------------------------------------------------------------------------------------

TODAY = date(2026, 3, 1)
KNOWN = {"claude-current", "claude-old", "claude-soon", "claude-later"}


def status(model, days=None, *, note=None, provider="anthropic", **kw):
    """model_status with a fixture table: ``model`` retires ``days`` after TODAY (or carries ``note``)."""
    table = {model: note} if note else {} if days is None else {model: str(TODAY + timedelta(days=days))}
    return model_status(provider, model, today=TODAY, deprecations=table, known_models=KNOWN | {model}, **kw)


# --- the date rules ---------------------------------------------------------------------------------------

def test_an_id_past_its_retirement_date_is_retired_and_a_problem():
    s = status("claude-old", -30)
    assert s == ModelStatus("retired", "RETIRED on 2026-01-30: set COURSE_ANTHROPIC_MODEL to a current ID, or unset it to use the course default claude-haiku-5-5",
                            "2026-01-30")
    assert s.problem


def test_the_retirement_day_itself_is_retired():
    assert status("claude-old", 0).status == "retired"


@pytest.mark.parametrize("days, expected", [(1, "warning"), (30, "warning"), (60, "warning"), (61, "ok"),
                                            (365, "ok")])
def test_a_warning_only_within_60_days(days, expected):
    s = status("claude-soon", days)
    assert s.status == expected and s.problem is (expected == "warning")
    assert s.date == str(TODAY + timedelta(days=days)) and s.date in s.note


def test_warning_and_far_future_notes_name_the_date_and_the_days_left():
    assert status("claude-soon", 1).note == ("WARNING: deprecated (retires on 2026-03-02, in 1 day); "
                                             "set COURSE_ANTHROPIC_MODEL to a current ID, or unset it to use the course default claude-haiku-5-5")
    assert "in 45 days" in status("claude-soon", 45).note
    far = status("claude-later", 200)   # deprecated, but nothing to do yet: ok, with the date for planning
    assert far.note == "ok (deprecated: retires on 2026-09-17, in 200 days)" and not far.problem


def test_a_current_id_is_plainly_ok():
    assert status("claude-current") == ModelStatus("ok", "ok")


def test_a_deprecation_without_a_date_is_a_warning_quoting_the_note():
    s = status("gpt-odd", note="Not a supported model ID", provider="openai")
    assert s.status == "warning" and "Not a supported model ID" in s.note and "COURSE_OPENAI_MODEL" in s.note


def test_an_id_missing_from_the_sdk_list_is_unknown_not_a_crash_or_a_problem():
    s = model_status("anthropic", "claude-haiku-5-5-typo", today=TODAY, deprecations={}, known_models=KNOWN)
    assert s.status == "unknown" and "unknown to the installed anthropic SDK" in s.note and not s.problem


def test_ollama_tags_are_free_form(monkeypatch):
    def no_sdk(provider):
        raise AssertionError("Ollama has no SDK list to read")
    monkeypatch.setattr(lifecycle, "sdk_models", lambda p: None if p == "ollama" else no_sdk(p))
    status = model_status("ollama", "my-own-model:latest", today=TODAY)
    assert status.status == "ok" and "ollama list" in status.note and not status.problem


def test_the_course_table_knows_ids_the_sdks_dropped():
    """claude-2.1 and Sonnet 3.5 showed "ok" when doctor read only the SDK's list of upcoming retirements."""
    for model, retired_on in [("claude-2.1", "2025-07-21"), ("claude-3-5-sonnet-20241022", "2025-10-28")]:
        s = model_status("anthropic", model, today=TODAY, deprecations={}, known_models=KNOWN)
        assert (s.status, s.date) == ("retired", retired_on)
    # a date the SDK itself gives wins over the course's (a provider may postpone a retirement)
    later = model_status("anthropic", "claude-2.1", today=TODAY, deprecations={"claude-2.1": "2027-01-01"},
                         known_models=KNOWN)
    assert later.status == "ok" and later.date == "2027-01-01"


# --- reading dates and the SDKs' notes --------------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ("November 30th, 2026", date(2026, 11, 30)), ("January 22nd, 2027", date(2027, 1, 22)),
    ("June 1st, 2026", date(2026, 6, 1)), ("March 3rd, 2026", date(2026, 3, 3)),
    ("Nov 30, 2026", date(2026, 11, 30)), ("2026-11-30", date(2026, 11, 30)),
    ("Announced shutdown date: 2026-12-11. See", date(2026, 12, 11)),
    ("February 30th, 2026", None), ("Smarch 3rd, 2026", None), ("soon", None), ("", None)])
def test_dates_in_the_sdk_form_and_iso(text, expected):
    assert parse_date(text) == expected


OPENAI_NOTES = '''
ChatModel: TypeAlias = Literal["gpt-new", "gpt-a", "gpt-b"]
"""Deprecated values:

- "gpt-a", "gpt-a-2025-01-01", "gpt-b",
  "gpt-b-2025-02-02": Announced shutdown date: 2026-04-01. See
  https://developers.openai.com/api/docs/deprecations for details.
- "gpt-c": Not a supported model ID. Retained for SDK compatibility.
- "gpt-d", "gpt-e": Announced shutdown
  date: 2026-03-26. See https://developers.openai.com/api/docs/deprecations for
  details and recommended replacements.
- "gpt-f": Announced shutdown date:
  2025-10-27.
"""
'''


def test_openai_notes_are_read_across_wrapped_lines_with_several_ids_per_entry():
    assert parse_openai_notes(OPENAI_NOTES) == {
        "gpt-a": "2026-04-01", "gpt-a-2025-01-01": "2026-04-01", "gpt-b": "2026-04-01",
        "gpt-b-2025-02-02": "2026-04-01", "gpt-c": "Not a supported model ID",
        "gpt-d": "2026-03-26", "gpt-e": "2026-03-26", "gpt-f": "2025-10-27"}


def test_openai_notes_that_moved_are_an_error_not_an_empty_table():
    with pytest.raises(ValueError):
        parse_openai_notes('ChatModel = Literal["gpt-a"]\n"""Every model is fine."""')


def test_the_deprecation_wrapper_keeps_notebook_08s_text(monkeypatch):
    tables = {"anthropic": {"claude-x": "January 22nd, 2027"}, "openai": parse_openai_notes(OPENAI_NOTES)}
    monkeypatch.setattr(lifecycle, "sdk_deprecations", lambda provider: tables.get(provider, {}))
    assert deprecation("anthropic", "claude-x") == "end of life January 22nd, 2027"
    # once an SDK release drops claude-sonnet-4-5, the course's table still gives the same sentence
    assert deprecation("anthropic", "claude-sonnet-4-5") == "end of life November 30th, 2026"
    assert deprecation("anthropic", "claude-2.1") == "end of life July 21st, 2025"
    assert deprecation("openai", "gpt-d") == "shutdown 2026-03-26" and deprecation("openai", "gpt-c") == "not supported"
    assert deprecation("anthropic", "claude-current") is None and deprecation("ollama", "qwen3:8b") is None


# --- never a crash ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("reader, error", [("sdk_deprecations", ValueError("table changed shape")),
                                           ("sdk_models", AttributeError("no ModelParam")),
                                           ("sdk_models", ImportError("No module named 'anthropic'"))])
def test_a_failing_sdk_reader_gives_could_not_check(monkeypatch, reader, error):
    def broken(provider):
        raise error
    monkeypatch.setattr(lifecycle, reader, broken)
    s = model_status("anthropic", "claude-haiku-5-5", today=TODAY)
    assert s.status == "could not check" and type(error).__name__ in s.note and not s.problem


def sdk_file(monkeypatch, module: str, text: str):
    """The installed SDK's ``module`` (dotted) reads as ``text``; its other modules as they are."""
    real = lifecycle.sdk_source
    monkeypatch.setattr(lifecycle, "sdk_source", lambda name: text if name == module else real(name))


@pytest.mark.parametrize("text", ['DEPRECATED_MODELS = {"claude-x": date(2027, 1, 1)}',
                                  'DEPRECATED_MODELS: Dict[str, str] = {"claude-x": 20270101}',
                                  'DEPRECATED_MODELS = ["claude-x"]', "DEPRECATED = {}", "DEPRECATED_MODELS = {"])
def test_an_sdk_table_of_the_wrong_shape_is_could_not_check(monkeypatch, text):
    sdk_file(monkeypatch, "anthropic._data.deprecated_models", text)
    s = model_status("anthropic", "claude-x", today=TODAY)
    assert s.status == "could not check" and s.note.startswith(("could not check (ValueError", "could not check ("
                                                                                              "SyntaxError")), s.note


def test_doctor_runs_to_the_end_when_the_sdk_tables_cannot_be_read(monkeypatch, capsys):
    def broken(provider):
        if provider != "ollama":   # Ollama reads no SDK table
            raise ValueError("table changed shape")
        return {}
    monkeypatch.setattr(lifecycle, "sdk_deprecations", broken)
    for key in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", *catalog.ENV_VARS.values()):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setattr(cli, "_notebook_dir", lambda: None)   # leave the kernels out of the exit code
    assert cli.main(["doctor"]) == 0
    out = capsys.readouterr().out
    assert "anthropic model        claude-haiku-5-5  could not check (ValueError: table changed shape)" in out
    assert "openai model           gpt-5.4-mini  could not check (ValueError: table changed shape)" in out
    assert "ollama model           qwen3:8b  ok" in out and "Notebooks" in out   # and on to the notebooks


# --- the provider's own answer ----------------------------------------------------------------------------

class FakeClient:
    """Stands in for anthropic.Anthropic / openai.OpenAI: ``models.retrieve`` answers or raises."""
    def __init__(self, answer):
        self.asked = []
        self.models = SimpleNamespace(retrieve=self.retrieve)
        self.answer = answer

    def retrieve(self, model):
        self.asked.append(model)
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


def not_found(sdk):
    import httpx2
    module = __import__(sdk)
    request = httpx2.Request("GET", "https://api.example.test/v1/models/x")
    return module.NotFoundError("model not found", response=httpx2.Response(404, request=request), body=None)


@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_a_404_from_the_models_endpoint_wins_over_tables_that_say_ok(provider):
    client = FakeClient(not_found(provider))
    s = status("claude-current", provider=provider, live=client)
    assert client.asked == ["claude-current"]
    assert s.status == "retired" and s.problem and "RETIRED or unknown to your account" in s.note


def test_a_model_the_provider_knows_is_ok_even_if_the_tables_say_retired():
    client = FakeClient(SimpleNamespace(id="claude-2.1", lifecycle="active", retires_at=None))
    s = model_status("anthropic", "claude-2.1", today=TODAY, deprecations={}, known_models=KNOWN, live=client)
    assert s == ModelStatus("ok", "ok (confirmed by the anthropic models endpoint)")


def test_the_providers_own_dates_and_lifecycle_are_used():
    openai_model = SimpleNamespace(id="gpt-x", shutdown_date="2026-03-15")   # OpenAI's Model.shutdown_date
    assert status("gpt-x", provider="openai", live=FakeClient(openai_model)).note.startswith(
        "WARNING: deprecated (retires on 2026-03-15, in 14 days)")
    retired = SimpleNamespace(lifecycle="retired", retires_at=datetime(2026, 1, 5, tzinfo=timezone.utc))
    assert status("claude-current", live=FakeClient(retired)).status == "retired"
    overdue = SimpleNamespace(lifecycle="deprecated", retires_at=datetime(2026, 2, 1, tzinfo=timezone.utc))
    s = status("claude-current", live=FakeClient(overdue))   # Anthropic: overdue is not yet retired
    assert s.status == "warning" and "overdue since 2026-02-01" in s.note
    undated = SimpleNamespace(lifecycle="deprecated", retires_at=None)
    assert status("claude-current", live=FakeClient(undated)).note == "ok (deprecated, no retirement date yet)"


def test_a_failed_live_check_keeps_a_table_warning_but_never_says_ok():
    import anthropic
    import httpx2
    offline = anthropic.APIConnectionError(request=httpx2.Request("GET", "https://api.example.test/v1/models"))
    s = status("claude-current", live=FakeClient(offline))
    assert s == ModelStatus("could not check",
                            "could not check (APIConnectionError from the anthropic models endpoint)")
    assert status("claude-old", -5, live=FakeClient(offline)).status == "retired"


def test_an_error_message_from_the_live_check_is_not_printed():
    """Some providers quote part of a rejected key in the message: only the error's type is shown."""
    s = status("claude-current", live=FakeClient(RuntimeError("Incorrect API key provided: sk-secret-123")))
    assert s.status == "could not check" and "RuntimeError" in s.note and "sk-secret" not in s.note


# --- doctor: no key, no network -----------------------------------------------------------------------------

@pytest.fixture
def fixture_tables(monkeypatch):
    """The SDK readers answer from fixtures, so doctor's output does not depend on the installed SDKs."""
    monkeypatch.setattr(lifecycle, "sdk_deprecations", lambda provider: {})
    monkeypatch.setattr(lifecycle, "sdk_models", lambda p: None if p == "ollama" else set(DEFAULTS.values()))


@pytest.fixture
def no_clients(monkeypatch):
    """Record every attempt to build an SDK client (doctor must make none without a key)."""
    import anthropic
    import openai
    built = []
    def record(*args, **kwargs):
        built.append(kwargs)
        raise AssertionError("an SDK client was built")
    monkeypatch.setattr(anthropic, "Anthropic", record)
    monkeypatch.setattr(openai, "OpenAI", record)
    return built


def test_doctor_makes_no_network_call_without_a_key(monkeypatch, capsys, no_clients):
    for key in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(key, raising=False)
    cli.main(["doctor"])
    assert no_clients == [] and "anthropic model" in capsys.readouterr().out


def test_with_a_key_doctor_asks_the_provider(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    client = FakeClient(not_found("anthropic"))
    monkeypatch.setattr(lifecycle, "_sdk_client", lambda provider: client)
    assert check_model("anthropic", "claude-current").status == "retired" and client.asked == ["claude-current"]
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    check_model("anthropic", "claude-current")
    assert len(client.asked) == 1   # without the key, the client is not asked again


def test_a_client_that_cannot_be_built_is_could_not_check(monkeypatch, no_clients, fixture_tables):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    s = check_model("openai", DEFAULTS["openai"])
    assert len(no_clients) == 1 and no_clients[0]["max_retries"] == 0 and no_clients[0]["timeout"] <= 10
    assert s.status == "could not check" and "AssertionError building a client" in s.note


@pytest.mark.parametrize("override, line, exit_code", [
    ("claude-2.1", "claude-2.1  RETIRED on 2025-07-21: set COURSE_ANTHROPIC_MODEL to a current ID, or unset it to use the course default claude-haiku-5-5", 1),
    ("claude-soon", "claude-soon  WARNING: deprecated (retires on {in_1}, in 1 day); set COURSE_ANTHROPIC_MODEL", 1),
    ("claude-later", "claude-later  ok (deprecated: retires on {in_100}, in 100 days)", 0),
    ("claude-typo", "claude-typo  unknown to the installed anthropic SDK", 0),
    (None, "claude-haiku-5-5  ok\n", 0)])
def test_doctor_prints_one_line_per_provider_and_exits_1_only_for_retiring_ids(
        monkeypatch, capsys, override, line, exit_code):
    today = date.today()   # doctor checks against the real date, so the fixture dates follow it
    in_1, in_100 = str(today + timedelta(days=1)), str(today + timedelta(days=100))
    monkeypatch.setattr(lifecycle, "sdk_deprecations", lambda p: {"claude-soon": in_1, "claude-later": in_100})
    monkeypatch.setattr(lifecycle, "sdk_models", lambda p: None if p == "ollama" else set(DEFAULTS.values()))
    monkeypatch.setattr(cli, "_notebook_dir", lambda: None)   # leave the kernels out of the exit code
    for key in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", *catalog.ENV_VARS.values()):
        monkeypatch.delenv(key, raising=False)
    if override:
        monkeypatch.setenv("COURSE_ANTHROPIC_MODEL", override)
    assert cli.main(["doctor"]) == exit_code
    out = capsys.readouterr().out
    assert "anthropic model        " + line.format(in_1=in_1, in_100=in_100) in out
    assert "openai model           gpt-5.4-mini  ok\n" in out and "ollama model           qwen3:8b  ok (not checked" in out
    assert "openai-responses       the same ID, through the Responses API\n" in out


def test_course_doctor_flags_a_retired_override(monkeypatch, capsys, fixture_tables):
    """The whole command, notebooks included, as a learner runs it with an old ID."""
    for key in ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", *catalog.ENV_VARS.values()):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("COURSE_ANTHROPIC_MODEL", "claude-2.1")
    assert cli.main(["doctor"]) == 1
    assert ("anthropic model        claude-2.1  RETIRED on 2025-07-21: set COURSE_ANTHROPIC_MODEL to a current ID, or unset it to use the course default claude-haiku-5-5"
            in capsys.readouterr().out)


# --- the one test that reads the installed SDKs ----------------------------------------------------------

@pytest.mark.parametrize("provider", ["anthropic", "openai"])
def test_course_defaults_are_listed_by_the_installed_sdks_and_not_retiring(provider):
    """Fails when the pinned SDK drops a default, or a default is retired or retires within 60 days:
    time to pick a new default in DEFAULTS (and re-record notebook 08)."""
    assert DEFAULTS[provider] in lifecycle.sdk_models(provider)
    assert model_status(provider, DEFAULTS[provider]).status == "ok"


def test_a_rejected_key_is_a_problem_that_says_so():
    """The first thing a new key can get wrong: doctor must not call that "could not check" and exit 0."""
    import anthropic
    import httpx2

    class Models:
        def retrieve(self, model):
            response = httpx2.Response(401, json={"type": "error", "error": {"type": "authentication_error",
                                       "message": "invalid x-api-key"}},
                                       request=httpx2.Request("GET", "https://api.example.test/v1/models/x"))
            raise anthropic.AuthenticationError("Error code: 401", response=response, body=None)

    client = type("Client", (), {"models": Models()})()
    status = model_status("anthropic", "claude-haiku-5-5", today=TODAY, deprecations={}, known_models=KNOWN,
                          live=client)
    assert status.status == "key rejected" and status.problem
    assert "ANTHROPIC_API_KEY is set, but the anthropic API rejected it (401)" in status.note


# --- the small pieces, word for word ------------------------------------------------------------------------

def test_the_sdk_style_date_suffixes():
    days = {1: "1st", 2: "2nd", 3: "3rd", 4: "4th", 10: "10th", 11: "11th", 12: "12th", 13: "13th", 14: "14th",
            21: "21st", 22: "22nd", 23: "23rd", 30: "30th", 31: "31st"}
    assert {d: lifecycle._sdk_style(date(2026, 1, d)).split()[1].rstrip(",") for d in days} == days
    assert lifecycle._sdk_style(date(2026, 11, 3)) == "November 3rd, 2026"


def test_a_deprecation_note_without_a_date_is_quoted(monkeypatch):
    monkeypatch.setattr(lifecycle, "sdk_deprecations", lambda provider: {"claude-y": "soon"})
    assert deprecation("anthropic", "claude-y") == "end of life soon"


def test_the_quick_check_client_has_a_short_timeout_and_no_retries(monkeypatch):
    import anthropic
    import openai
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    for provider, kind in (("anthropic", anthropic.Anthropic), ("openai", openai.OpenAI)):
        client = lifecycle._sdk_client(provider)
        assert type(client) is kind and client.timeout == 5.0 and client.max_retries == 0


def test_check_model_uses_the_given_day_on_every_path(monkeypatch):
    """``today`` reaches the date rules whether the check is offline, live, or live but without a client."""
    monkeypatch.setattr(lifecycle, "sdk_deprecations", lambda provider: {"claude-x": "2026-04-01"})
    monkeypatch.setattr(lifecycle, "sdk_models", lambda provider: {"claude-x"})
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    offline = check_model("anthropic", "claude-x", today=TODAY)
    assert offline.status == "warning" and "in 31 days" in offline.note
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")
    asked = []

    def unbuildable(provider):
        asked.append(provider)
        raise RuntimeError("no client")
    monkeypatch.setattr(lifecycle, "_sdk_client", unbuildable)
    assert check_model("anthropic", "claude-x", today=TODAY) == offline and asked == ["anthropic"]
    client = FakeClient(SimpleNamespace(lifecycle="deprecated", retires_at=datetime(2026, 4, 1, tzinfo=timezone.utc)))
    monkeypatch.setattr(lifecycle, "_sdk_client", lambda provider: asked.append(provider) or client)
    live = check_model("anthropic", "claude-x", today=TODAY)
    assert live.status == "warning" and "in 31 days" in live.note and asked == ["anthropic", "anthropic"]


def test_openai_notes_end_with_their_docstring_and_keep_a_note_s_own_words():
    source = OPENAI_NOTES + '''
Other: TypeAlias = Literal["gpt-z"]
"""Deprecated values:

- "gpt-z": Announced shutdown date: 2030-01-01.
"""
'''
    source = source.replace('- "gpt-c": Not a supported model ID.', '- "gpt-c": Replaced by gpt-X.\n- "gpt-g": '
                                                                    'Announced Shutdown Date: 2026-05-05. Not')
    table = parse_openai_notes(source)
    assert "gpt-z" not in table and table["gpt-c"] == "Replaced by gpt-X" and table["gpt-g"] == "2026-05-05"


def test_unreadable_sdk_tables_say_what_is_missing(monkeypatch):
    with pytest.raises(ValueError) as info:
        parse_openai_notes('"""Every model is fine."""')
    assert str(info.value) == "found no deprecated IDs in openai's ChatModel notes"
    sdk_file(monkeypatch, "anthropic.types.model_param", "ModelParam: TypeAlias = str")
    with pytest.raises(ValueError) as info:
        lifecycle.sdk_models("anthropic")
    assert str(info.value) == "found no model IDs in the anthropic SDK's model list"


FIX = "set COURSE_ANTHROPIC_MODEL to a current ID, or unset it to use the course default claude-haiku-5-5"


def test_the_provider_s_retired_and_overdue_answers_word_for_word():
    retired = SimpleNamespace(lifecycle="retired", retires_at=None)
    assert status("claude-current", live=FakeClient(retired)) == ModelStatus(
        "retired", f"RETIRED (so says the anthropic models endpoint): {FIX}", None)
    dated = SimpleNamespace(lifecycle="retired", retires_at=datetime(2027, 1, 5, tzinfo=timezone.utc))
    assert status("claude-current", live=FakeClient(dated)) == ModelStatus(
        "retired", f"RETIRED (so says the anthropic models endpoint): {FIX}", "2027-01-05")
    due_today = SimpleNamespace(lifecycle="deprecated", retires_at=datetime(2026, 3, 1, tzinfo=timezone.utc))
    assert status("claude-current", live=FakeClient(due_today)) == ModelStatus(
        "warning", f"WARNING: deprecated (retirement overdue since 2026-03-01); {FIX}", "2026-03-01")


def test_a_long_reason_for_could_not_check_is_cut_at_100_characters(monkeypatch):
    def broken(provider):
        raise ValueError("x" * 150)
    monkeypatch.setattr(lifecycle, "sdk_deprecations", broken)
    assert model_status("anthropic", "claude-x", today=TODAY).note == f"could not check (ValueError: {'x' * 100})"


def test_the_sdk_deprecation_tables_are_read_per_provider(monkeypatch):
    assert lifecycle.sdk_deprecations("openai") and lifecycle.sdk_deprecations("ollama") == {}
    sdk_file(monkeypatch, "anthropic._data.deprecated_models", 'DEPRECATED_MODELS = {"claude-x": 1}')
    with pytest.raises(ValueError) as info:
        lifecycle.sdk_deprecations("anthropic")
    assert str(info.value) == "anthropic's DEPRECATED_MODELS is no longer a table of ID -> date text"


def test_the_sdk_tables_read_from_the_files_are_what_the_imported_sdks_hold():
    """The tables are read as text (importing anthropic costs ~2 s of processor time): the same as importing."""
    import inspect

    from anthropic._data import DEPRECATED_MODELS
    from anthropic.types import ModelParam
    from openai.types import ChatModel
    from openai.types.shared import chat_model

    def strings(hint) -> set[str]:   # every string in a Literal, through any Union around it
        return {a for a in get_args(hint) if isinstance(a, str)}.union(
            *(strings(a) for a in get_args(hint) if not isinstance(a, str)))
    assert lifecycle.sdk_models("anthropic") == strings(ModelParam) and len(strings(ModelParam)) > 5
    assert lifecycle.sdk_models("openai") == strings(ChatModel) and len(strings(ChatModel)) > 5
    assert lifecycle.sdk_deprecations("anthropic") == dict(DEPRECATED_MODELS)
    assert lifecycle.sdk_deprecations("openai") == parse_openai_notes(inspect.getsource(chat_model))


def test_the_sdk_tables_are_read_without_importing_the_sdks():
    code = ("import sys; from course_lib.courseware import lifecycle as l; "
            "[(l.sdk_models(p), l.sdk_deprecations(p)) for p in ('anthropic', 'openai', 'ollama')]; "
            "print(sorted(m for m in sys.modules if m.split('.')[0] in ('anthropic', 'openai')))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout, done.stderr) == (0, "[]\n", "")


def test_a_missing_sdk_is_an_import_error_and_a_model_list_in_a_union_or_alone_is_read():
    with pytest.raises(ImportError, match="No module named 'no_such_sdk_xyz'"):
        lifecycle.sdk_source("no_such_sdk_xyz.types")
    alone = lifecycle._assigned('X = 1\nChatModel: TypeAlias = Literal["a", "b"]\n', "ChatModel")
    assert isinstance(alone, ast.Subscript)
    with pytest.raises(ValueError, match="found no ModelParam"):
        lifecycle._assigned("ModelParam: TypeAlias\n", "ModelParam")   # declared, never given a value
