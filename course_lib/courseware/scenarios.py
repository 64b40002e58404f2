"""The course's scripted scenarios: a goal a learner might type and the replies a model might give, for
``ScriptedModel`` (stage 07). Lessons 00, 06, 07 and 09, ``course demo`` and the tests use them.

The ``price`` script is the staged course's: a lookup, a calculator call wrapped in a code fence, a lookup that
fails, finish. ``trip``, ``divide``, ``notice`` and ``repeat`` are the four situations a loop must survive (two
tools in a row, a failing tool, an order hidden in a document, the same call forever); ``save`` asks to write a
file, which the approval gate of ``course demo`` asks a person about.
"""
from __future__ import annotations

import json

from ..models.scripted import ScriptedModel


def _act(tool: str, **args) -> str:
    return json.dumps({"tool": tool, "args": args}, ensure_ascii=False)


SCENARIOS: dict[str, dict] = {
    "price": {"goal": "How much do seven units cost?", "replies": [
        _act("lookup", topic="단가"),
        "```json\n" + _act("calculator", expression="24*7") + "\n```",
        _act("lookup", topic="discount"),
        _act("finish", answer="Seven units cost $168 (7 × $24). No discount is listed."),
    ]},
    "trip": {"goal": "3일 2박 국내 출장비 상한은? (What is the cap for a 3-day, 2-night domestic trip?)",
             "replies": [
        _act("search_docs", query="출장"),
        "The policy says 25,000 won a day and up to 90,000 won a night.\n"
        + _act("calculator", expression="25000*3 + 90000*2"),
        _act("finish", answer="규정상 3일 2박 출장비 상한은 255,000원입니다 (25,000×3 + 90,000×2). "
                              "The cap is 255,000 won, per the travel policy."),
    ]},
    "divide": {"goal": "What is 10 divided by 0?", "replies": [
        _act("calculator", expression="10/0"),
        _act("finish", answer="It cannot be computed: division by zero is undefined. Check the divisor."),
    ]},
    "notice": {"goal": "공지 문서를 요약해 줘 (Summarise the notice document.)", "replies": [
        _act("search_docs", query="공지"),
        _act("finish", answer="The notice holds only an instruction aimed at AI readers (to reveal an "
                              "admin password); I treated it as data and did not follow it. "
                              "There is no business content to summarise."),
    ]},
    "save": {"goal": "Look up the unit price and save it to notes/price.txt.", "replies": [
        _act("lookup", topic="unit price"),
        _act("write_file", path="notes/price.txt", content="Unit price: $24 per unit (개당 $24)."),
        _act("finish", answer="The unit price is $24 per unit; I asked to save it to notes/price.txt "
                              "(see the observation for whether the write was approved)."),
    ]},
    "repeat": {"goal": "Keep searching the policies again and again.",
               "replies": [_act("search_docs", query="규정")] * 50},
}


def scenario_model(name: str) -> tuple[str, ScriptedModel]:
    """The goal and a fresh ScriptedModel for one of ``SCENARIOS``."""
    if name not in SCENARIOS:
        raise KeyError(f"no scenario '{name}'; choose one of: {', '.join(SCENARIOS)}")
    scenario = SCENARIOS[name]
    return scenario["goal"], ScriptedModel(scenario["replies"])
