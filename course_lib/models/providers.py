"""Stage 08 — a model from a provider's name: the one place that maps "anthropic", "openai" or "ollama" to
its adapter, so the lessons, ``course demo``, ``course eval`` and ``course live-check`` build models alike.

Adds: ``model_for(provider, **options)`` and ``PROVIDERS``.

Leaves out: choosing between a real API and the local stand-in server (a lesson passes the stand-in's
``base_url`` and a fake key), and checking that a local Ollama server is running (``course live-check``
does that before it sends anything).
"""
from __future__ import annotations

from .anthropic import AnthropicModel
from .openai import OpenAIModel

PROVIDERS = ("anthropic", "openai", "ollama")


def model_for(provider: str, **options):
    """A model for ``provider``: ``"anthropic"`` → ``AnthropicModel``, ``"openai"`` → ``OpenAIModel``,
    ``"ollama"`` → ``OpenAIModel.ollama()`` (a local Ollama server, through its OpenAI-compatible endpoint).

    ``options`` go to the class unchanged: ``model`` (default ``model_id(provider)``, so ``COURSE_ANTHROPIC_MODEL``
    and friends apply), ``base_url`` and ``api_key`` (default: the SDK's environment variables; Ollama's local
    URL), ``max_retries``, ``native_tools``, ... Nothing is sent yet; a key that is not set raises
    ``MissingKeyError`` here, naming the variable. Any other provider is a ``ValueError`` naming the known ones.
    """
    if provider == "anthropic":
        return AnthropicModel(**options)
    if provider == "openai":
        return OpenAIModel(**options)
    if provider == "ollama":
        return OpenAIModel.ollama(**options)
    raise ValueError(f"unknown provider {provider!r}: the known ones are {', '.join(PROVIDERS)}")
