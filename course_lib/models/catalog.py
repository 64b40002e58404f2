"""Model IDs in one place, each overridable by an environment variable, and the deprecation check.

The defaults are current, non-deprecated IDs from the model lists shipped in the installed SDKs
(anthropic 2.14: ``anthropic.types.ModelParam``; openai 3.57: ``openai.types.ChatModel``). Provider
catalogues move faster than courses: set ``COURSE_ANTHROPIC_MODEL`` / ``COURSE_OPENAI_MODEL`` /
``COURSE_OLLAMA_MODEL`` to use another model without touching code; ``course doctor`` warns when a
configured ID is one the installed SDK marks as deprecated.
"""
from __future__ import annotations

import os
import re

DEFAULTS = {"anthropic": "claude-haiku-5-5", "openai": "gpt-5.4-mini", "ollama": "qwen3:8b"}
ENV_VARS = {"anthropic": "COURSE_ANTHROPIC_MODEL", "openai": "COURSE_OPENAI_MODEL",
            "ollama": "COURSE_OLLAMA_MODEL"}
OLLAMA_URL = "http://localhost:11434/v1"   # Ollama's OpenAI-compatible endpoint


def model_id(provider: str) -> str:
    """The model ID to use for ``provider``: its environment variable if set, else the default."""
    return os.environ.get(ENV_VARS[provider], "").strip() or DEFAULTS[provider]


def deprecation(provider: str, model: str) -> str | None:
    """The installed SDK's deprecation note for ``model`` (e.g. its end-of-life date), or None.

    Imports the SDK, so call it from ``course doctor``, not on import."""
    if provider == "anthropic":
        from anthropic._data import DEPRECATED_MODELS   # the table the SDK itself warns from
        return f"end of life {DEPRECATED_MODELS[model]}" if model in DEPRECATED_MODELS else None
    if provider == "openai":
        import inspect

        from openai.types.shared import chat_model
        # The SDK lists deprecated IDs in a note under ChatModel: '- "id", "id": Announced shutdown date: ...'
        notes = inspect.getsource(chat_model).partition('"""Deprecated values:')[2]
        for block in re.split(r"\n- ", notes):
            if f'"{model}"' in block:
                date = re.search(r"shutdown date:\s*([\d-]+)", block)
                return f"shutdown {date[1]}" if date else "not supported"
    return None
