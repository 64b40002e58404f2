"""Models: the one-method interface (``base``), the scripted stand-in of stage 07 (``scripted``);
the real Anthropic and OpenAI adapters of stage 08 will live beside them and import their SDKs only when used."""
from .base import ModelError, Reply, ToolCall
from .scripted import SCENARIOS, ScriptedModel, scenario_model

__all__ = ["ModelError", "Reply", "ToolCall", "ScriptedModel", "SCENARIOS", "scenario_model"]
