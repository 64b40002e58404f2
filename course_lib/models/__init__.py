"""Models: the one-method interface (``base``), the scripted stand-in of stage 07 (``scripted``), and the
real adapters of stage 08 (``anthropic``, ``openai``), whose SDKs are imported only when a model is built.
``from course_lib.models import AnthropicModel`` works too: those names are fetched on first use."""
from importlib import import_module

from .base import ModelError, Reply, ToolCall
from .scripted import ScriptedModel

__all__ = ["ModelError", "Reply", "ToolCall", "ScriptedModel", "AnthropicModel", "OpenAIModel"]
_LAZY = {"AnthropicModel": ".anthropic", "OpenAIModel": ".openai"}


def __getattr__(name):
    if name in _LAZY:
        return getattr(import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module 'course_lib.models' has no attribute {name!r}")
