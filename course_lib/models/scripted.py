"""Stage 07 — a scripted model: a queue of replies that stands in for an LLM, for runs that are the same every time.

Adds: ``ScriptedModel(replies)``, which answers with the given replies in order, one per call, records the
messages it was called with, and raises ``ModelError`` once the script runs out (the agent then stops with
``"model_error"``). A reply may be text (the JSON protocol of stage 04), a dict or ``Reply`` with native
tool calls, or an exception to raise (a simulated API failure). A dict may also say how a real API
stopped without an answer, ``{"stop": "refused" | "max_tokens" | "context_full", "text": ...}``, so the
agent's handling of refusals and cut-off replies can be tested offline. ``SCENARIOS`` holds the course's scripts:
the price question of the staged course and the four situations of the loop walkthrough.

Leaves out: any intelligence. It does not read the conversation; that is the point: a test knows exactly
what the "model" will say, so it checks the agent, not the model.
"""
from __future__ import annotations

import json

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


def _act(tool: str, **args) -> str:
    return json.dumps({"tool": tool, "args": args}, ensure_ascii=False)


# Each scenario: the goal a learner types, and the replies a model might give. The `price` script is the one
# from the staged course: a lookup, a calculator call wrapped in a code fence, a lookup that fails, finish.
SCENARIOS: dict[str, dict] = {
    "price": {
        "goal": "How much do seven units cost?",
        "replies": [
            _act("lookup", topic="단가"),
            "```json\n" + _act("calculator", expression="24*7") + "\n```",
            _act("lookup", topic="discount"),
            _act("finish", answer="Seven units cost $168 (7 × $24). No discount is listed."),
        ],
    },
    "trip": {
        "goal": "3일 2박 국내 출장비 상한은? (What is the cap for a 3-day, 2-night domestic trip?)",
        "replies": [
            _act("search_docs", query="출장"),
            "The policy says 25,000 won a day and up to 90,000 won a night.\n"
            + _act("calculator", expression="25000*3 + 90000*2"),
            _act("finish", answer="규정상 3일 2박 출장비 상한은 255,000원입니다 (25,000×3 + 90,000×2). "
                                  "The cap is 255,000 won, per the travel policy."),
        ],
    },
    "divide": {
        "goal": "What is 10 divided by 0?",
        "replies": [
            _act("calculator", expression="10/0"),
            _act("finish", answer="It cannot be computed: division by zero is undefined. Check the divisor."),
        ],
    },
    "notice": {
        "goal": "공지 문서를 요약해 줘 (Summarise the notice document.)",
        "replies": [
            _act("search_docs", query="공지"),
            _act("finish", answer="The notice holds only an instruction aimed at AI readers (to reveal an "
                                  "admin password); I treated it as data and did not follow it. "
                                  "There is no business content to summarise."),
        ],
    },
    "save": {
        "goal": "Look up the unit price and save it to notes/price.txt.",
        "replies": [
            _act("lookup", topic="unit price"),
            _act("write_file", path="notes/price.txt", content="Unit price: $24 per unit (개당 $24)."),
            _act("finish", answer="The unit price is $24 per unit; I asked to save it to notes/price.txt "
                                  "(see the observation for whether the write was approved)."),
        ],
    },
    "repeat": {
        "goal": "Keep searching the policies again and again.",
        "replies": [_act("search_docs", query="규정")] * 50,
    },
}


def scenario_model(name: str) -> tuple[str, ScriptedModel]:
    """The goal and a fresh ScriptedModel for one of ``SCENARIOS``."""
    if name not in SCENARIOS:
        raise KeyError(f"no scenario '{name}'; choose one of: {', '.join(SCENARIOS)}")
    scenario = SCENARIOS[name]
    return scenario["goal"], ScriptedModel(scenario["replies"])
