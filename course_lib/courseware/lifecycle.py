"""Is a model ID still usable? The lifecycle check that ``course doctor`` runs (and notebook 08 shows).

``model_status(provider, model)`` says whether an ID still works, as a ``ModelStatus`` (status, note,
date), by comparing its retirement date with today's; ``course doctor`` prints the note:

- on or past its retirement (shutdown) date: ``"retired"``, requests fail;
- retiring within ``WARN_DAYS`` (60) days: ``"warning"``; doctor counts both as problems (exit 1);
- deprecated, retiring later: ``"ok"`` with a note giving the date: nothing to do yet;
- missing from the installed SDK's model list: ``"unknown"`` (a typo, or newer than the SDK). Ollama tags
  are free-form (``qwen3:8b``, your own models), so an Ollama ID is ``"ok"``;
- a table that cannot be read: ``"could not check (...)"``. The check never raises.

The dates come from the installed SDKs (anthropic's private ``_data.DEPRECATED_MODELS``, openai's
"Deprecated values" note under ``ChatModel``) and from the course's own ``RETIRED`` table. With an API key
set, ``check_model`` (what doctor calls) asks the provider's models endpoint too and prefers its answer;
without a key nothing goes over the network. The tables are read from the SDKs' files, not imported. The IDs and
their variables are stage 08's ``models/catalog.py``.
"""
from __future__ import annotations

import ast
import importlib.util
import os
import re
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path

from ..models.catalog import DEFAULTS, ENV_VARS
from ..models.remote import KEY_VARS

WARN_DAYS = 60   # Anthropic gives at least 60 days' notice of a retirement: inside that window, act now

# Retirement dates the course keeps itself: an SDK drops an ID from its table once it retires, just when a
# learner still using it most needs telling. Read on 2026-11-29 through the course's documentation search:
# Anthropic's model status table, https://platform.claude.com/docs/en/about-claude/model-deprecations (the
# copy found: docs.anthropic.com/zh-CN/docs/about-claude/model-deprecations) for Claude Instant, 2.x,
# Sonnet 3 and Opus 3; Anthropic's release notes, https://docs.claude.com/en/release-notes/overview
# ("2025-10-28: We've retired the Claude Sonnet 3.5 models"). The Haiku 3.5 / Sonnet 3.7 and Sonnet 4 /
# Opus 4 dates are as trackers quote that table: re-check them there. claude-sonnet-4-5 retires 2026-11-30
# (anthropic 2.14's own table): kept so doctor and notebook 08 answer the same once a later SDK drops it.
# openai 3.57 still lists its shut-down chat IDs with their dates (taken from
# https://developers.openai.com/api/docs/deprecations), so OpenAI needs no entries yet.
RETIRED = {"anthropic": {
    "claude-instant-1.2": "2024-11-06", "claude-2.0": "2025-07-21", "claude-2.1": "2025-07-21",
    "claude-3-sonnet-20240229": "2025-07-21", "claude-3-5-sonnet-20240620": "2025-10-28",
    "claude-3-5-sonnet-20241022": "2025-10-28", "claude-3-opus-20240229": "2026-01-05",
    "claude-3-5-haiku-20241022": "2026-02-19", "claude-3-7-sonnet-20250219": "2026-02-19",
    "claude-sonnet-4-20250514": "2026-06-15", "claude-opus-4-20250514": "2026-06-15",
    "claude-sonnet-4-5": "2026-11-30", "claude-sonnet-4-5-20250929": "2026-11-30"}, "openai": {}}
MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")


@dataclass(frozen=True)
class ModelStatus:
    """``status``: "ok", "warning", "retired", "unknown" or "could not check"; ``note``: the line
    ``course doctor`` prints after the ID; ``date``: the ISO retirement date, when one is known."""
    status: str
    note: str
    date: str | None = None

    @property
    def problem(self) -> bool:
        """Retired, retiring soon or a rejected key: doctor exits 1. Unknown and could-not-check only inform."""
        return self.status in ("retired", "warning", "key rejected")


def model_status(provider: str, model: str, *, today: date | None = None, deprecations=None,
                 known_models=None, live=None) -> ModelStatus:
    """Is ``model`` usable with ``provider`` today? Never raises.

    ``deprecations`` (ID -> date text) and ``known_models`` (IDs) default to the installed SDK's tables;
    tests pass their own. ``live`` is an SDK client: its models endpoint's answer wins over the tables."""
    today = today or date.today()
    try:
        offline = _from_tables(provider, model, today, deprecations, known_models)
    except Exception as e:   # ImportError, a moved or reshaped SDK table, a source file missing, ...
        reason = " ".join(str(e).split())[:100]
        offline = ModelStatus("could not check", f"could not check ({type(e).__name__}: {reason})")
    if live is None:
        return offline
    try:
        return _ask_provider(provider, model, live, today)
    except Exception as e:   # no network, a rejected key, a timeout. Only the type: messages may quote the key
        return _unless_ok(offline, f"{type(e).__name__} from the {provider} models endpoint")


def check_model(provider: str, model: str, *, today: date | None = None) -> ModelStatus:
    """``model_status`` as ``course doctor`` runs it: live when the provider's key is set, else offline only."""
    key = KEY_VARS.get(provider)
    if not (key and os.environ.get(key)):
        return model_status(provider, model, today=today)   # no key: no network call at all
    try:
        client = _sdk_client(provider)
    except Exception as e:
        return _unless_ok(model_status(provider, model, today=today), f"{type(e).__name__} building a client")
    return model_status(provider, model, today=today, live=client)


def _from_tables(provider, model, today, deprecations, known_models) -> ModelStatus:
    """The offline answer: a known date first (a retired ID is often missing from the list), then the list."""
    deprecations = sdk_deprecations(provider) if deprecations is None else deprecations
    known_models = sdk_models(provider) if known_models is None else known_models
    noted = {**RETIRED.get(provider, {}), **deprecations}.get(model)   # the SDK's date wins over ours
    if noted is not None:
        retires = parse_date(noted)
        return _by_date(provider, retires, today) if retires else ModelStatus(
            "warning", f"WARNING: deprecated ({noted}); {_fix(provider)}")
    if provider == "ollama":   # names are free-form tags of models you pulled yourself
        return ModelStatus("ok", "ok (not checked: `ollama list` shows the models you have)")
    if known_models is not None and model not in known_models:
        return ModelStatus("unknown", f"unknown to the installed {provider} SDK: check the spelling, or set "
                                      f"{ENV_VARS[provider]} to a listed ID (or update the SDK)")
    return ModelStatus("ok", "ok")


def _by_date(provider: str, retires: date, today: date) -> ModelStatus:
    """The date rules: retired on or after the date, a warning inside WARN_DAYS, else ok with the date."""
    days, when, fix = (retires - today).days, retires.isoformat(), _fix(provider)
    if days <= 0:   # requests fail from the retirement date on
        return ModelStatus("retired", f"RETIRED on {when}: {fix}", when)
    if days <= WARN_DAYS:
        return ModelStatus("warning", f"WARNING: deprecated (retires on {when}, in {days} day"
                                      f"{'s' * (days != 1)}); {fix}", when)
    return ModelStatus("ok", f"ok (deprecated: retires on {when}, in {days} days)", when)


def _fix(provider: str) -> str:
    return (f"set {ENV_VARS[provider]} to a current ID, or unset it to use the course default "
            f"{DEFAULTS[provider]}")


def _ask_provider(provider: str, model: str, client, today: date) -> ModelStatus:
    """The provider's own answer from its models endpoint; errors other than a 401 or 404 propagate."""
    fix = _fix(provider)
    try:
        info = client.models.retrieve(model)
    except Exception as e:
        if getattr(e, "status_code", None) == 401:   # the first thing a new key can get wrong
            return ModelStatus("key rejected", f"could not check: {KEY_VARS[provider]} is set, but the {provider} "
                                               "API rejected it (401); check the key")
        if getattr(e, "status_code", None) != 404:
            raise
        return ModelStatus("retired", f"RETIRED or unknown to your account (the {provider} models endpoint "
                                      f"answered 404): {fix}")
    # Anthropic's ModelInfo has lifecycle and retires_at (a datetime); OpenAI's Model has shutdown_date.
    lifecycle = getattr(info, "lifecycle", None)
    when = getattr(info, "retires_at", None) or getattr(info, "shutdown_date", None)
    retires = when.date() if isinstance(when, datetime) else parse_date(str(when)) if when else None
    if lifecycle == "retired":
        return ModelStatus("retired", f"RETIRED (so says the {provider} models endpoint): {fix}",
                           retires and retires.isoformat())
    if retires and retires <= today and lifecycle == "deprecated":   # Anthropic: overdue is not yet retired
        return ModelStatus("warning", f"WARNING: deprecated (retirement overdue since {retires}); {fix}",
                           retires.isoformat())
    if retires:
        return _by_date(provider, retires, today)
    return ModelStatus("ok", "ok (deprecated, no retirement date yet)" if lifecycle == "deprecated"
                       else f"ok (confirmed by the {provider} models endpoint)")


def _unless_ok(status: ModelStatus, reason: str) -> ModelStatus:
    """After a failed live check keep the tables' warning or error, but never call an unchecked ID ok."""
    return ModelStatus("could not check", f"could not check ({reason})") if status.note == "ok" else status


def _sdk_client(provider: str):
    """A client for one quick question: short timeout, no retries, so doctor never hangs on the network."""
    if provider == "anthropic":
        import anthropic
        return anthropic.Anthropic(timeout=5.0, max_retries=0)
    import openai
    return openai.OpenAI(timeout=5.0, max_retries=0)


def sdk_deprecations(provider: str) -> dict[str, str]:
    """The installed SDK's deprecated IDs: ID -> date text, or a note where it gives no date."""
    if provider == "anthropic":   # private: any release may move or reshape it
        table = literal(_assigned(sdk_source("anthropic._data.deprecated_models"), "DEPRECATED_MODELS"))
        if not (isinstance(table, dict) and all(isinstance(k, str) and isinstance(v, str) for k, v in table.items())):
            raise ValueError("anthropic's DEPRECATED_MODELS is no longer a table of ID -> date text")
        return table
    if provider == "openai":
        return parse_openai_notes(sdk_source("openai.types.shared.chat_model"))
    return {}   # Ollama: local models do not retire


def parse_openai_notes(source: str) -> dict[str, str]:
    """ID -> ISO shutdown date (or the note, when it has no date) from openai's 'Deprecated values:' text.

    Entries look like '- "gpt-5", "o3": Announced shutdown date: 2026-12-11. See ...', wrapped at any
    space (even inside 'shutdown date'), so each entry's whitespace is joined first; one entry names many IDs."""
    notes = source.partition("Deprecated values:")[2].partition('"""')[0]
    table = {}
    for entry in re.split(r"\n\s*-\s", notes):
        if head := re.match(r'((?:"[^"]+",?\s*)+):\s*(.*)', " ".join(entry.split())):
            when = re.search(r"shutdown date:\s*(\d{4}-\d{2}-\d{2})", head[2], re.IGNORECASE)
            table.update(dict.fromkeys(re.findall(r'"([^"]+)"', head[1]),
                                       when[1] if when else head[2].split(". ")[0].rstrip(".")))
    if not table:   # the note moved or changed shape: say so rather than report "nothing deprecated"
        raise ValueError("found no deprecated IDs in openai's ChatModel notes")
    return table


def sdk_models(provider: str) -> frozenset[str] | None:
    """The model IDs the installed SDK lists (the strings of its Literal type); None for Ollama, whose tags are
    free-form."""
    where = {"anthropic": ("anthropic.types.model_param", "ModelParam"),   # Union[Literal["claude-...", ...], str]
             "openai": ("openai.types.shared.chat_model", "ChatModel")}    # Literal["gpt-...", ...]
    if provider not in where:
        return None
    module, name = where[provider]
    ids = {node.value for literal_type in ast.walk(_assigned(sdk_source(module), name))
           if isinstance(literal_type, ast.Subscript) and getattr(literal_type.value, "id", "") == "Literal"
           for node in ast.walk(literal_type.slice) if isinstance(node, ast.Constant) and isinstance(node.value, str)}
    if not ids:
        raise ValueError(f"found no model IDs in the {provider} SDK's model list")
    return frozenset(ids)


def sdk_source(module: str) -> str:
    """The text of one module of an installed SDK, read from its file: importing the SDK to read two tables cost
    ``course doctor`` about two seconds of processor time (anthropic's types are thousands of classes)."""
    package, _, rest = module.partition(".")
    spec = importlib.util.find_spec(package)   # finds the package without running it
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(f"No module named '{package}'")
    return Path(spec.submodule_search_locations[0], *rest.split(".")).with_suffix(".py").read_text(encoding="utf-8")


def _assigned(source: str, name: str) -> ast.expr:
    """The expression a module's text assigns to ``name`` (``NAME = ...`` or ``NAME: type = ...``)."""
    for node in ast.parse(source).body:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, ast.AnnAssign) and node.value is not None else []
        if any(isinstance(t, ast.Name) and t.id == name for t in targets):
            return node.value
    raise ValueError(f"found no {name} in the SDK's module")


def literal(expression: ast.expr):
    """The value of a literal expression (a dict of strings); ValueError for anything computed."""
    try:
        return ast.literal_eval(expression)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError) as e:
        raise ValueError(f"the SDK's table is no longer a literal ({type(e).__name__})") from None


def parse_date(text: str) -> date | None:
    """The first date in ``text``, ISO ('2026-11-30') or the anthropic SDK's ('November 30th, 2026'); else None."""
    try:
        if m := re.search(r"\b(\d{4})-(\d{1,2})-(\d{1,2})\b", text):
            return date(int(m[1]), int(m[2]), int(m[3]))
        if m := re.search(r"\b([A-Za-z]{3,9})\.?\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4})\b", text):
            return date(int(m[3]), MONTHS.index(m[1][:3].lower()) + 1, int(m[2]))
    except ValueError:   # February 30th, or a word that is not a month
        pass
    return None


def deprecation(provider: str, model: str) -> str | None:
    """The deprecation note without the date check: 'end of life November 30th, 2026' (anthropic),
    'shutdown 2026-12-11' or 'not supported' (openai), or None; doctor uses ``model_status``, which checks
    the date. Imports the SDK, so call it from doctor or a notebook, not on import."""
    noted = {**RETIRED.get(provider, {}), **sdk_deprecations(provider)}.get(model)
    if noted is None:
        return None
    day = parse_date(noted)
    if provider == "openai":
        return f"shutdown {day}" if day else "not supported"
    return f"end of life {_sdk_style(day) if day else noted}"


def _sdk_style(day: date) -> str:
    """A date as the anthropic SDK writes it, 'November 30th, 2026', so the course's own dates read the same."""
    suffix = "th" if day.day in (11, 12, 13) else {1: "st", 2: "nd", 3: "rd"}.get(day.day % 10, "th")
    return f"{day:%B} {day.day}{suffix}, {day.year}"
