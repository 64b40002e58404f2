"""The stand-in's Ollama chat API (``POST /api/chat``, Ollama's own format: tool-call arguments as an object) and
a reply in its shape; it has no ``tool_choice``. Ollama's OpenAI-compatible endpoint is served by ``openai``."""
from __future__ import annotations

from .common import _args, _cut, _refusal


def check(body: dict) -> str | None:
    """Ollama's refusal of tool-call arguments sent back as JSON text (OpenAI's way) instead of an object."""
    if any(isinstance((c.get("function") or {}).get("arguments"), str)
           for m in body["messages"] for c in m.get("tool_calls") or []):
        return ("json: cannot unmarshal string into Go struct field ChatRequest.messages.tool_calls.function."
                "arguments of type api.ToolCallFunctionArguments")
    return None


def reply(body, turn, usage, n) -> dict:
    """The turn as a /api/chat response (not streamed): the message, why it stopped, and token counts."""
    calls = [{"function": {"name": c["name"], "arguments": _args(c)}} for c in turn.get("tool_calls", [])]
    message = {"role": "assistant", "content": turn.get("text") or _refusal(turn) or "",
               # Ollama leaves the reasoning out when the request says "think": false
               **({"thinking": turn["thinking"]} if turn.get("thinking") and body.get("think") is not False else {}),
               **({"tool_calls": calls} if calls else {})}
    return {"model": body["model"], "created_at": "1970-01-01T00:00:00Z", "message": message, "done": True,
            "done_reason": turn.get("done_reason") or ("length" if _cut(turn) else "stop"),
            "prompt_eval_count": usage["input_tokens"], "eval_count": usage["output_tokens"]}
