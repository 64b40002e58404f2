"""What the real-API adapters of stage 08 share: building an SDK client, and turning SDK errors into one
readable sentence (``ModelError``) so a failed call ends the run cleanly instead of with a traceback.

The SDKs are imported here only inside functions, when a real model is constructed or fails: ``import
course_lib`` never loads them. No message built here contains an API key.
"""
from __future__ import annotations

import os

from .base import ModelError

KEY_VARS = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}
URL_VARS = {"anthropic": "ANTHROPIC_BASE_URL", "openai": "OPENAI_BASE_URL"}
NAMES = {"anthropic": "Anthropic", "openai": "OpenAI", "ollama": "Ollama"}


class MissingKeyError(ModelError):
    """No API key in the environment and none given."""


def require_key(provider: str, api_key: str | None) -> str:
    key = api_key or os.environ.get(KEY_VARS[provider], "")
    if not key:
        raise MissingKeyError(
            f"{KEY_VARS[provider]} is not set: set it (for example `export {KEY_VARS[provider]}=...` before "
            "starting JupyterLab) to run live; without it the notebooks use the local stand-in server.")
    return key


def make_client(provider: str, *, base_url: str | None, api_key: str | None, max_retries: int):
    """An SDK client; base_url and key default to the standard environment variables."""
    key = require_key(provider, api_key)
    base_url = base_url or os.environ.get(URL_VARS[provider]) or None
    if provider == "anthropic":
        import anthropic
        return anthropic.Anthropic(api_key=key, base_url=base_url, max_retries=max_retries)
    import openai
    return openai.OpenAI(api_key=key, base_url=base_url, max_retries=max_retries)


def call_api(provider: str, model: str, send):
    """``send()`` an SDK request; an SDK error becomes a one-sentence ModelError, anything else (a bug) raises."""
    try:
        return send()
    except Exception as e:
        explained = explain_api_error(e, provider, model)
        if explained is None:
            raise
        raise explained from None


def _detail(error) -> str:
    body = getattr(error, "body", None)
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and inner.get("message"):
            return str(inner["message"])
    return str(getattr(error, "message", "") or error)


def explain_api_error(error: Exception, provider: str, model: str) -> ModelError | None:
    """A ModelError with one sentence saying what went wrong and what to do; None if not an SDK error."""
    name = NAMES[provider]
    module = __import__("anthropic" if provider == "anthropic" else "openai")
    if isinstance(error, module.APIConnectionError):
        return ModelError(f"could not reach the {name} server ({type(error).__name__}); check the network "
                          "or the base URL, or use the local stand-in server")
    if not isinstance(error, module.APIStatusError):
        return None
    status, detail = error.status_code, _detail(error)
    key_var, model_var = KEY_VARS.get(provider, "the API key"), f"COURSE_{provider.upper()}_MODEL"
    if status == 401:
        text = f"{name} rejected the API key (401 authentication error); check {key_var}"
    elif status == 403:
        text = f"{name} refused access (403 permission denied): {detail}"
    elif status == 404:
        text = (f"{name} does not know model '{model}' (404 not found): it may be retired or misspelt; "
                f"set {model_var} to a current model ID")
    elif status == 400:
        text = f"{name} rejected the request (400 bad request): {detail}"
    elif status == 429:
        text = f"{name} is rate-limiting this key (429), still after the SDK's retries: wait and try again"
    elif status >= 500:
        text = f"{name} had a server error ({status}), still after the SDK's retries: try again later"
    else:
        text = f"{name} answered with an error ({status}): {detail}"
    return ModelError(text)
