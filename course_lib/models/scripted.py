"""Stage 07 — a scripted model: a queue of replies that stands in for an LLM, for runs that are the same every time.

Adds: ``ScriptedModel(replies)``, which answers with the replies in order (text in the JSON protocol of stage 04,
a dict or ``Reply`` with native tool calls or a ``stop`` such as ``"refused"``, or an exception to raise as an API
failure), records each call's messages, and raises ``ModelError`` once the script runs out. The course's own
scripts (the price question, the loop's four scenarios) are ``courseware/scenarios.py``.

Leaves out: any intelligence. It does not read the conversation; that is the point: a test knows exactly what
the "model" will say, so it checks the agent, not the model.
"""
from __future__ import annotations

from .base import ModelError, Reply
from .native import NATIVE


class ScriptedModel:
    """Answers with ``replies`` in order; records each call's messages in ``calls``."""

    def __init__(self, replies, *, native_tools: bool = False):
        self.replies = list(replies)
        self.native_tools = native_tools   # True: a reply without tool calls is the final answer
        self.calls: list[list[dict]] = []

    @property
    def protocol(self):   # how the Agent talks to it: native tool calls, or None for the text protocol
        return NATIVE if self.native_tools else None

    def complete(self, messages: list[dict], tools=None) -> Reply:
        self.calls.append(list(messages))
        turn = len(self.calls) - 1
        if turn >= len(self.replies):
            count = f"{len(self.replies)} repl{'y' if len(self.replies) == 1 else 'ies'}"
            raise ModelError(f"the script ran out: it has {count} and call {turn + 1} asked for another; "
                             "add replies to the script or lower max_steps.")
        reply = self.replies[turn]
        if isinstance(reply, BaseException):
            raise ModelError(str(reply)) from reply
        reply = Reply.coerce(reply)
        if reply.tool_calls and not self.native_tools:   # the text protocol has no place for them: say so
            raise ModelError(f"reply {turn + 1} of the script has native tool calls, but this model speaks the text "
                             "protocol: use ScriptedModel(..., native_tools=True), or write the call as JSON text")
        return reply

    def restart(self) -> None:
        """Start the script again from its first reply (the stepper's Reset button uses this)."""
        self.calls.clear()

    @property
    def remaining(self) -> int:
        return max(0, len(self.replies) - len(self.calls))

    def __repr__(self) -> str:
        return f"ScriptedModel({len(self.calls)}/{len(self.replies)} replies used)"
