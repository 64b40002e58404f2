"""Stage 08 — model IDs in one place, each overridable by an environment variable, and example prices.

Adds: ``DEFAULTS``, current IDs from the model lists of the installed SDKs (anthropic 2.14, openai 3.57), and
``model_id(provider)``, which the adapters use when no ID is given: set ``COURSE_ANTHROPIC_MODEL`` and the others
of ``ENV_VARS`` to use another model without touching code. ``OLLAMA_URL``: where a local Ollama server answers.

Leaves out: making a model from a provider's name (``models.providers``) and whether an ID still works
(``course doctor``'s check, ``courseware/lifecycle.py``).
"""
from __future__ import annotations

import os

DEFAULTS = {"anthropic": "claude-haiku-5-5", "openai": "gpt-5.4-mini", "ollama": "qwen3:8b"}
ENV_VARS = {"anthropic": "COURSE_ANTHROPIC_MODEL", "openai": "COURSE_OPENAI_MODEL", "ollama": "COURSE_OLLAMA_MODEL"}
OLLAMA_URL = "http://localhost:11434/v1"   # Ollama's OpenAI-compatible endpoint
# US dollars per million tokens for the course's cost estimates (plots, budgets, `course eval`), NOT any
# provider's current price list: pass your provider's prices where a function takes `prices`.
EXAMPLE_PRICES = {"input": 1.00, "output": 5.00}


def model_id(provider: str) -> str:
    """The model ID to use for ``provider``: its environment variable if set, else the default."""
    return os.environ.get(ENV_VARS[provider], "").strip() or DEFAULTS[provider]
