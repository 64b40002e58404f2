"""Models: the one-method interface (``base``, stage 06), the scripted stand-in and the native protocol (``scripted``,
``native``, stage 07), and the real adapters of stage 08 (``anthropic``, ``openai``). Importing this package loads
only ``base``: every other name is fetched from its module on first use, so stage 06 never loads a later stage and
``import course_lib.models`` loads no SDK."""
from importlib import import_module

from .base import ModelError, Reply, ToolCall

__all__ = ["ModelError", "Reply", "ToolCall", "ScriptedModel", "AnthropicModel", "OpenAIModel", "OpenAIResponsesModel"]
_LAZY = {"ScriptedModel": ".scripted", "AnthropicModel": ".anthropic", "OpenAIModel": ".openai",
         "OpenAIResponsesModel": ".openai"}


def __getattr__(name):
    if name in _LAZY:
        return getattr(import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module 'course_lib.models' has no attribute {name!r}")
