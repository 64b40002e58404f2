"""Stage 07 — native tool calls: the protocol a model brings when its API carries the tools and the calls.

Adds: ``NativeProtocol``, which the stage-06 ``Agent`` uses instead of its text protocol when ``model.protocol``
says so. Tools go to the API as schemas; a reply's ``tool_calls`` all run (parallel calls), each result going back
as a ``tool`` message that answers its call's id; text beside calls is a thought, text alone is the answer. The
provider's own content (``Reply.raw``, e.g. Claude's signed thinking blocks) stays with the message, sent back as is.

Leaves out: the providers' wire formats (each adapter of stage 08 turns these messages into its API's shape).
"""
from __future__ import annotations

from ..describe import build_system_prompt, tool_spec
from ..dispatch import Observation
from ..parsing import Reading
from .base import Reply, scrub


class NativeProtocol:
    """Tool calls and results as structured messages, matched by id."""

    def system_prompt(self, tools) -> str:
        for name, func in tools.items():   # every tool described now: one the API cannot take fails here
            tool_spec(name, func)
        return build_system_prompt(tools, native=True)

    def message(self, reply: Reply) -> dict:
        """The model's turn as a history message: its text, its calls, and the provider's content as sent."""
        message = {"role": "assistant", "content": scrub(reply.text)}
        if reply.tool_calls:
            message["tool_calls"] = [{"id": c.id, "name": c.name, "args": scrub(c.args)} for c in reply.tool_calls]
        if reply.thinking:
            message["thinking"] = reply.thinking
        if reply.raw is not None:
            message["raw"] = reply.raw
        return message

    def read(self, reply: Reply) -> Reading:
        if reply.tool_calls:   # the text beside the calls plays the part of a thought
            return Reading(calls=[(c.name, c.args, c.id) for c in reply.tool_calls], thought=reply.text.strip() or None)
        if reply.text.strip():
            return Reading(answer=reply.text)
        return Reading(error="the reply was empty", fix="Answer in plain text, or call one of the tools.",
                       keep=bool(reply.raw and reply.raw.get("content")))   # thinking blocks stay in the history

    def result(self, call: tuple, observation: Observation) -> dict:   # call: (name, args, id)
        return {"role": "tool", "tool_call_id": call[2], "name": call[0], "content": scrub(observation.content),
                "is_error": observation.is_error}

    def close(self, history: list[dict], note: str) -> list[dict]:
        """A result for every call of the last assistant message that has none (a stop came between)."""
        last = max((i for i, m in enumerate(history) if m["role"] == "assistant"), default=None)
        if last is None:
            return []
        answered = {m.get("tool_call_id") for m in history[last + 1:] if m["role"] == "tool"}
        return [self.result((c["name"], None, c["id"]), Observation(note, True))
                for c in history[last].get("tool_calls") or [] if c["id"] not in answered]


NATIVE = NativeProtocol()
