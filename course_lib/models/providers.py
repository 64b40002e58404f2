"""Stage 08 — a model from a provider's name: "anthropic", "openai", "openai-responses" or "ollama".

Adds: ``model_for(provider, **options)`` and ``ADAPTERS``, the one place that maps a name to its adapter, so the
lessons, ``course demo``, ``course eval`` and ``course live-check`` build models alike; ``PROVIDERS``, the names.

Leaves out: choosing a real API or the local stand-in (a lesson passes its ``base_url``), and whether Ollama runs.
"""
from __future__ import annotations

from .anthropic import AnthropicModel
from .openai import OpenAIModel, OpenAIResponsesModel

ADAPTERS = {"anthropic": AnthropicModel, "openai": OpenAIModel,   # openai: Chat Completions
            "openai-responses": OpenAIResponsesModel, "ollama": OpenAIModel.ollama}
PROVIDERS = tuple(ADAPTERS)


def model_for(provider: str, **options):
    """A model for ``provider`` (``ADAPTERS``: ``OpenAIModel.ollama()`` is a local Ollama server), given ``options``
    unchanged (``model``, default ``model_id(provider)``; ``base_url``, ``api_key``, ...). Nothing is sent yet; a
    key that is not set raises ``MissingKeyError``, another provider a ``ValueError``."""
    if provider not in ADAPTERS:
        raise ValueError(f"unknown provider {provider!r}: the known ones are {', '.join(PROVIDERS)}")
    return ADAPTERS[provider](**options)
