"""Stage 08 — a model from a provider's name: "anthropic", "openai", "openai-responses" or "ollama".

Adds: ``model_for(provider, **options)`` and ``PROVIDERS``: the one place that maps a name to its adapter, so the
lessons, ``course demo``, ``course eval`` and ``course live-check`` build models alike.

Leaves out: choosing a real API or the local stand-in (a lesson passes its ``base_url``), and whether Ollama runs.
"""
from __future__ import annotations

from .anthropic import AnthropicModel
from .openai import OpenAIModel, OpenAIResponsesModel

PROVIDERS = ("anthropic", "openai", "openai-responses", "ollama")   # openai: Chat Completions


def model_for(provider: str, **options):
    """A model for ``provider``: ``AnthropicModel``, ``OpenAIModel``, ``OpenAIResponsesModel`` or
    ``OpenAIModel.ollama()`` (a local Ollama server), given ``options`` unchanged (``model``, default ``model_id(provider)``; ``base_url``, ``api_key``, ...).
    Nothing is sent yet; a key that is not set raises ``MissingKeyError``, another provider a ``ValueError``."""
    if provider == "anthropic":
        return AnthropicModel(**options)
    if provider == "openai":
        return OpenAIModel(**options)
    if provider == "openai-responses":
        return OpenAIResponsesModel(**options)
    if provider == "ollama":
        return OpenAIModel.ollama(**options)
    raise ValueError(f"unknown provider {provider!r}: the known ones are {', '.join(PROVIDERS)}")
