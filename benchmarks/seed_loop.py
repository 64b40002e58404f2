"""The reference for the per-run benchmark: the loop of seed article 003, re-created for timing only.

Article 003 builds a four-step price agent in one file: string tools, a system prompt rebuilt from
``inspect`` on every run, a parser that decodes from the first ``{`` to the last ``}``, a dispatcher that
reads the signature on every call, and a scripted model that answers by counting assistant turns. This is
the same work, in this course's words, so ``make bench`` can set our ``Agent`` beside it: a fresh agent per
run, as a learner writes it. Two things are left out of *both* sides: logging output (the level is WARNING)
and saving a transcript (our ``run`` does not save either). Not course code; nothing imports it.
"""
from __future__ import annotations

import inspect
import json
import logging

log = logging.getLogger("seed_reference")
log.setLevel(logging.WARNING)

SCRIPT = [
    '{"tool":"lookup", "args":{"topic":"단가"}}',
    '```json\n{"tool":"calculator", "args":{"expr":"24*7"}}\n```',
    '{"tool":"lookup", "args":{"topic":"discount"}}',
    '{"tool":"finish", "args":{"answer":"Seven units cost 168."}}',
]
GOAL = "How much do seven units cost?"


def calculator(expr: str) -> str:
    """Evaluate simple arithmetic such as (20*4)+15."""
    expr = expr.replace(" ", "")
    if not expr or not set(expr) <= set("0123456789+-*/()."):
        return "error: only digits and + - * / ( ) . are allowed"
    try:
        return str(eval(expr))   # the seed's own choice; the course's calculator never uses eval
    except (SyntaxError, ZeroDivisionError) as e:
        return f"ERROR: {type(e).__name__}"


def lookup(topic: str) -> str:
    """Look up a fact in the internal knowledge base."""
    facts = {"환불 정책": "within 30 days of delivery", "단가": "$24 each", "배송": "free over $500"}
    return facts.get(topic.lower(), f"error: nothing is known about '{topic}'")


TOOLS = {"calculator": calculator, "lookup": lookup}


def system_prompt(tools: dict) -> str:
    lines = []
    for name, func in tools.items():
        params = ",".join(inspect.signature(func).parameters)
        lines.append(f"- {name}({params}):{(inspect.getdoc(func) or '').splitlines()[0]}")
    return ("You are a careful assistant that works in steps.\nTools available:\n" + "\n".join(lines)
            + '\nReply with ONE JSON object: {"tool": "<name or finish>", "args": {...}}')


def call_model(messages: list[dict]) -> dict:
    turn = sum(1 for m in messages if m["role"] == "assistant")
    if turn < len(SCRIPT):
        return {"ok": True, "text": SCRIPT[turn], "error": None}
    return {"ok": False, "text": None, "error": "no reply"}


def parse_reply(text: str) -> dict:
    if not text or not text.strip():
        return {"ok": False, "tool": None, "args": {}, "error": "empty reply"}
    start, end = text.find("{"), text.rfind("}")
    if start == -1 or end == -1:
        return {"ok": False, "tool": None, "args": {}, "error": "no JSON found"}
    try:
        data = json.loads(text[start:end + 1])
    except json.JSONDecodeError as e:
        return {"ok": False, "tool": None, "args": {}, "error": f"bad JSON: {e.msg}"}
    return {"ok": True, "tool": data.get("tool"), "args": data.get("args", {}), "error": None}


class SeedAgent:
    def __init__(self, tools: dict, max_steps: int = 6):
        self.tools, self.max_steps, self.steps, self.history, self.answer = tools, max_steps, 0, [], None

    def add(self, role: str, content: str) -> None:
        self.history.append({"role": role, "content": content})

    def dispatch(self, name: str, args: dict) -> str:
        if name not in self.tools:
            return f"ERROR: unknown tool '{name}'. Available: {','.join(self.tools)}"
        if not isinstance(args, dict):
            return "ERROR: args must be an object"
        func = self.tools[name]
        unknown = set(args) - set(inspect.signature(func).parameters)
        if unknown:
            return f"ERROR: unexpected argument(s): {sorted(unknown)}"
        required = {n for n, p in inspect.signature(func).parameters.items() if p.default is p.empty}
        if required - set(args):
            return f"ERROR: missing argument(s): {sorted(required - set(args))}"
        try:
            return str(func(**args))
        except Exception as e:
            return f"ERROR: {type(e).__name__}: {e}"

    def run(self, goal: str) -> str:
        self.add("system", system_prompt(self.tools))
        self.add("user", goal)
        log.info("goal: %s", goal)
        while self.answer is None and self.steps < self.max_steps:
            self.steps += 1
            reply = call_model(self.history)
            if not reply["ok"]:
                break
            self.add("assistant", reply["text"])
            parsed = parse_reply(reply["text"])
            if not parsed["ok"]:
                self.add("user", f"That was not valid JSON ({parsed['error']}). Try again.")
                continue
            if parsed["tool"] == "finish":
                self.answer = parsed["args"].get("answer", "(no answer given)")
                break
            observation = self.dispatch(parsed["tool"], parsed["args"])
            log.info("step %d: %s -> %s", self.steps, parsed["tool"], observation)
            self.add("tool", f"Observation: {observation}")
        if self.answer is None:
            self.answer = f"Stopped after {self.steps} steps without an answer."
        return self.answer
