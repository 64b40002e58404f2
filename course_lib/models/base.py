"""The model interface shared by every stage from 06 on: one method, one provider-neutral reply shape.

A model is any object with ``complete(messages, tools) -> Reply`` (or any plain function
``f(messages) -> str``). ``messages`` is the agent's history, a list of plain dicts; ``tools`` is the name →
function mapping, which native tool-calling adapters (stage 08) turn into their provider's format.

A ``Reply`` carries text, and optionally native ``tool_calls``: the agent runs those directly instead of
parsing the text, so the same ``Agent`` drives a scripted model, a text-JSON model and a real API.
A model that cannot answer raises ``ModelError``; the agent ends the run with ``stop_reason="model_error"``.
"""
from __future__ import annotations

from dataclasses import dataclass, field


class ModelError(Exception):
    """The model could not produce a reply (script ran out, API refused, network down, ...)."""


@dataclass(frozen=True, slots=True)
class ToolCall:
    name: str
    args: dict
    id: str = ""


@dataclass(frozen=True, slots=True)
class Reply:
    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    usage: dict | None = None   # {"input_tokens": n, "output_tokens": m} when the provider reports it

    @classmethod
    def coerce(cls, value) -> "Reply":
        """Accept a Reply, a plain string, or a dict like {"text": ..., "tool_calls": [{"name", "args"}]}."""
        if isinstance(value, Reply):
            return value
        if isinstance(value, str):
            return cls(text=value)
        if isinstance(value, dict):
            calls = tuple(c if isinstance(c, ToolCall) else
                          ToolCall(name=c["name"], args=c.get("args", {}), id=c.get("id") or f"call_{i + 1}")
                          for i, c in enumerate(value.get("tool_calls", ())))
            return cls(text=value.get("text", ""), tool_calls=calls, usage=value.get("usage"))
        raise ModelError(f"a model reply must be text, a dict or a Reply, not {type(value).__name__}")
