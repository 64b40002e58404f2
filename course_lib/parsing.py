"""Stage 04 — parse_reply: find the one JSON action in messy model text.

Adds: ``parse_reply(text) -> ParsedReply``, the first valid ``{"tool": ..., "args": {...}}`` (and an optional
``"thought"``, stage 11) among prose, code fences, ``<think>`` notes and extra objects. It never raises: a failure is
``ok=False`` with an ``error`` about the first object, the one the model most likely meant. Linear on hostile text:
regular expressions choose where to decode, and all decoding shares a budget of about ``MAX_NESTING`` passes over
the text. ``TextProtocol``: how stage 06's agent reads replies with it.

Leaves out: repairing broken JSON (single quotes, trailing commas); the model is asked to try again instead.
"""
from __future__ import annotations

import bisect
import contextlib
import json
import math
import re
from dataclasses import dataclass, field

from .describe import build_system_prompt
from .workspace import whole

MAX_NESTING = 32
_DECODER = json.JSONDecoder()
_OBJECT_START = re.compile(r"\{\s*\"")   # a JSON object with at least one key starts like this
# After a "{" or "[": the rest of a flat object or array none of whose strings is "tool" or has an escape (which
# could spell it): not an action. ``*+`` and ``++`` never give back a match, so nothing backtracks into quadratic time.
_FLAT_REST = r'(?=[^{}\[\]]*+[}\]])(?:[^"{}\[\]\\]++|"(?!tool")[^"{}\[\]\\]*+")*+[}\]]'
_WORTH_TRYING = re.compile(r"\{(?!" + _FLAT_REST + r')\s*"')
# A run of more than MAX_NESTING + 1 openers ("{" or "["), with only text and such flat ones between them.
_GAP = r"[^{}\[\]]*+(?:[{\[]" + _FLAT_REST + r"[^{}\[\]]*+)*+"
_RUN = r"(?P<run>(?:%s[{\[]){%d}(?:%s[{\[])*+)" % (_GAP, MAX_NESTING + 1, _GAP)
_RUN_OR_WORTH_TRYING = re.compile(r"[{\[](?:" + _RUN + r"|(?<=\{)(?!" + _FLAT_REST + r')\s*")')
_GAP_BACKWARDS = r"[^{}\[\]]*+(?:[}\]][^{}\[\]]*+[{\[][^{}\[\]]*+)*+"   # a run's gap, read from its end
_LAST_OPENERS = re.compile(r"(?:%s[{\[]){%d}" % (_GAP_BACKWARDS, MAX_NESTING + 1))


@dataclass(slots=True)
class ParsedReply:
    ok: bool
    tool: str | None = None
    args: dict = field(default_factory=dict)
    error: str | None = None
    thought: str | None = None   # the model's reasoning before this action, if it wrote one (stage 11)

    def __repr__(self) -> str:   # the thought only when there is one: stages 04-10 never see it
        thought = f", thought={self.thought!r}" if self.thought else ""
        return f"ParsedReply(ok={self.ok!r}, tool={self.tool!r}, args={self.args!r}, error={self.error!r}{thought})"


def _fail(error: str) -> ParsedReply:
    return ParsedReply(ok=False, error=error)   # tool None and a fresh empty args: the defaults


def _think_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of every closed <think>...</think> block: drafts in there are not the answer."""
    spans, pos = [], 0
    while (start := text.find("<think>", pos)) >= 0 and (end := text.find("</think>", start)) >= 0:
        pos = end + len("</think>")
        spans.append((start, pos))
    return spans


def _think_end(spans: list[tuple[int, int]], index: int) -> int:
    """Where the closed <think> block holding ``index`` ends, or 0 if none holds it."""
    k = bisect.bisect_right(spans, (index, math.inf)) - 1
    return spans[k][1] if k >= 0 and index < spans[k][1] else 0


def _candidate_starts(text: str, thinking: list[tuple[int, int]]):
    """Where an object may start, in trying order: the first outside <think>, the others worth trying, the deep ones."""
    first = _OBJECT_START.search(text)
    while first and (end := _think_end(thinking, first.start())):
        first = _OBJECT_START.search(text, end)
    if not first:
        return
    yield (first := first.start())
    deep, pos = [], 0
    while m := _RUN_OR_WORTH_TRYING.search(text, pos):
        pos = m.start() + 1
        if m["run"]:   # only its last MAX_NESTING + 1 openers now: read the run backwards to find them
            pos = m.end() - _LAST_OPENERS.match(m["run"][::-1]).end()
            deep.append((m.start(), pos))
        elif m.start() != first:
            yield m.start()
    for start, end in deep:   # then the deep ones: brackets inside strings can make an action look deep
        yield from (m.start() for m in _WORTH_TRYING.finditer(text, start, end) if m.start() != first)


def _check_action(data: dict) -> ParsedReply:
    tool, args, thought = data.get("tool"), data.get("args"), data.get("thought")
    if "tool" not in data:
        return _fail('the JSON object has no "tool" field')
    if not isinstance(tool, str) or not tool.strip():
        return _fail('the JSON object needs a "tool" field naming a tool, '
                     'e.g. {"tool": "calculator", "args": {"expression": "2+2"}}')
    args = {} if args is None else args   # missing or null: no arguments
    if not isinstance(args, dict):
        return _fail(f'"args" must be a JSON object like {{"name": value}}, not {type(args).__name__}')
    if thought is not None and not isinstance(thought, str):
        return _fail(f'"thought" must be text (a sentence of reasoning), not {type(thought).__name__}')
    return ParsedReply(ok=True, tool=tool.strip(), args=args, thought=(thought or "").strip() or None)


def parse_reply(text) -> ParsedReply:
    """Find the first valid ``{"tool": ..., "args": {...}}`` object in ``text``; never raises."""
    try:
        if isinstance(text, bytes):
            text = text.decode(errors="replace")   # as UTF-8, the default
        if not isinstance(text, str):
            return _fail(f"the reply must be text, got {type(text).__name__}")
        if not text or text.isspace():
            return _fail("the reply was empty; send one JSON object")
        if text.startswith('{"'):   # the well-behaved reply, one object and nothing else: try it first
            with contextlib.suppress(ValueError, RecursionError):   # else the full search reports the problem
                if (result := _check_action(_DECODER.raw_decode(text)[0])).ok:
                    return result
        thinking, first_problem = _think_spans(text), None
        work_left = (MAX_NESTING + 1) * len(text) + 10_000   # characters all decoding may scan
        for start in _candidate_starts(text, thinking):
            if work_left <= 0:   # out of budget: report the first problem (the first start was always decoded)
                break
            if thinking and _think_end(thinking, start):
                continue
            try:
                data, end = _DECODER.raw_decode(text, start)
                work_left -= end - start
            except (ValueError, RecursionError) as e:
                # Charge from the start of the text: a JSONDecodeError counts the lines before its position to
                # report them, so each failure costs that much (and a RecursionError may have scanned everything).
                work_left -= max(1, getattr(e, "pos", len(text)))
                first_problem = first_problem or f"invalid JSON: {getattr(e, 'msg', e)}"
                continue
            if (result := _check_action(data)).ok:
                return result
            first_problem = first_problem or result.error
        return _fail(first_problem or "no JSON object found")
    except Exception as e:   # belt and braces: the contract is "never raises"
        return _fail(f"could not read the reply ({type(e).__name__})")


@dataclass(slots=True)
class Reading:
    """What a reply means to the agent's loop, as a protocol reads it: tool ``calls`` to run (``(name, args, id)``),
    an ``answer``, or an ``error`` with the ``fix`` to ask for; ``keep``: whether the reply joins the history."""
    calls: list = field(default_factory=list)
    answer: str | None = None
    error: str | None = None
    fix: str = ""
    thought: str | None = None
    keep: bool = True


class TextProtocol:
    """Stage 06's protocol: tools listed in the system prompt, one JSON action per reply, each result sent back as a
    user message ``Observation: ...``. A model whose API carries tools brings its own (``models/native.py``)."""
    fix = 'Reply with one JSON object: {"tool": "<name>", "args": {...}}'

    def system_prompt(self, tools) -> str:
        return build_system_prompt(tools)

    def message(self, reply) -> dict:   # the model's turn, as a history message
        return {"role": "assistant", "content": whole(reply.text)}

    def read(self, reply) -> Reading:
        p = parse_reply(reply.text)
        if p.ok and p.tool != "finish":
            return Reading(calls=[(p.tool, p.args, "")], thought=p.thought)
        if p.ok and isinstance(p.args.get("answer"), str):
            return Reading(answer=p.args["answer"], thought=p.thought)
        return Reading(error=p.error or 'finish needs {"answer": "<text>"} in its args', fix=self.fix,
                       thought=p.thought)

    def result(self, call: tuple, observation) -> dict:   # an Observation of stage 05: its text goes back
        return {"role": "user", "content": whole(f"Observation: {observation.content}")}

    def close(self, history: list[dict], note: str) -> list[dict]:
        """Results for the calls of the last message that never ran (a stop came first)."""
        p = parse_reply(history[-1].get("content")) if history and history[-1]["role"] == "assistant" else None
        return [{"role": "user", "content": f"Observation: Error: {note}"}] if p and p.ok and p.tool != "finish" else []
