"""Stage 08 — model IDs in one place, each overridable by an environment variable, and example prices.

Adds: ``DEFAULTS``, current IDs from the model lists shipped in the installed SDKs (anthropic 2.14:
``anthropic.types.ModelParam``; openai 3.57: ``openai.types.ChatModel``), and ``model_id(provider)``, which
the adapters use when no ID is given. Provider catalogues move faster than courses: set
``COURSE_ANTHROPIC_MODEL`` / ``COURSE_OPENAI_MODEL`` / ``COURSE_OLLAMA_MODEL`` (``ENV_VARS``) to use another
model without touching code. ``OLLAMA_URL``: where a local Ollama server answers. ``EXAMPLE_PRICES``: US
dollars per million tokens for the course's cost estimates (plots, budgets, ``course eval``), NOT any
provider's current price list: pass your provider's prices where a function takes ``prices``.

Leaves out: making a model from a provider's name (``models.providers.model_for``, which needs the adapters
that import this module), and whether an ID still works: retirement dates, the SDKs' model lists and the
provider's models endpoint are ``course doctor``'s check (``courseware/lifecycle.py``).
"""
from __future__ import annotations

import os

DEFAULTS = {"anthropic": "claude-haiku-5-5", "openai": "gpt-5.4-mini", "ollama": "qwen3:8b"}
ENV_VARS = {"anthropic": "COURSE_ANTHROPIC_MODEL", "openai": "COURSE_OPENAI_MODEL",
            "ollama": "COURSE_OLLAMA_MODEL"}
OLLAMA_URL = "http://localhost:11434/v1"   # Ollama's OpenAI-compatible endpoint

# Example prices in US dollars per million tokens. They are NOT any provider's current price list:
# pass your provider's prices (to `usage_plot`, a `Budget`, ...) for a real estimate.
EXAMPLE_PRICES = {"input": 1.00, "output": 5.00}


def model_id(provider: str) -> str:
    """The model ID to use for ``provider``: its environment variable if set, else the default."""
    return os.environ.get(ENV_VARS[provider], "").strip() or DEFAULTS[provider]
