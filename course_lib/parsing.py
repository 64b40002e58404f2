"""Stage 04 — parse_reply: find the one JSON action in messy model text.

Adds: ``parse_reply(text) -> ParsedReply``, the first valid ``{"tool": ..., "args": {...}}`` (and an optional
``"thought"``, stage 11) among prose, code fences, ``<think>`` notes and extra objects. It never raises: a failure is
``ok=False`` with an ``error`` about the first object, the one the model most likely meant. Linear on hostile text:
regular expressions choose where to decode, an object decoded is not read again from inside (objects in it are
looked at in it), and all decoding shares a budget of about ``MAX_NESTING`` passes over the text (the last section).
``TextProtocol``: how stage 06's agent reads replies with it.

Leaves out: repairing broken JSON (single quotes, trailing commas); the model is asked to try again instead.
"""
from __future__ import annotations

import bisect
import contextlib
import functools
import json
import math
import re
from dataclasses import dataclass, field

from .describe import build_system_prompt
from .workspace import whole

MAX_NESTING = 32
_DECODER = json.JSONDecoder()
_OBJECT_START = re.compile(r"\{\s*\"")   # a JSON object with at least one key starts like this


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
        thinking, read, first_problem = _think_spans(text), [], None
        work_left = (MAX_NESTING + 1) * len(text) + 10_000   # characters all decoding may scan
        for start in _candidate_starts(text, thinking, read):
            if work_left <= 0:   # out of budget: report the first problem (the first start was always decoded)
                break
            try:
                try:   # raw_decode without its Python wrapper, which costs a third on junk of small objects
                    data, end = _DECODER.scan_once(text, start)
                except StopIteration as missing:   # what the wrapper adds: no value where one must be
                    raise json.JSONDecodeError("Expecting value", text, missing.value) from None
                work_left -= end - start
            except (ValueError, RecursionError) as e:
                # Charge from the start of the text: a JSONDecodeError counts the lines before its position to
                # report them, so each failure costs that much (and a RecursionError may have scanned everything).
                work_left -= max(1, getattr(e, "pos", len(text)))
                first_problem = first_problem or f"invalid JSON: {getattr(e, 'msg', e)}"
                continue
            read.append((start, end))
            if first_problem is None or isinstance(data.get("tool"), str) and isinstance(data.get("args") or {}, dict):
                if (result := _check_action(data)).ok:
                    return result
                first_problem = first_problem or result.error
            if text.find("{", start + 1, end) > 0 and _TOOL_KEY.search(text, start + 1, end):
                work_left -= end - start
                if result := _action_inside(data):
                    return result
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


# -- the search through hostile text: which starts to decode, in linear time on any input
# From one candidate start to the next: text, and objects passed over whole (never read again from inside) when
# they cannot be an action: up to four deep, no key "tool" holding a string (spelt any way JSON can: \u0074...), and
# no "{" in a string that could start an object (read from there, strings and the rest swap places). ``*+`` and
# ``++`` never give back a match, so nothing backtracks into quadratic time.
_TOOL_KEY = r'"(?:t|\\u0074)(?:o|\\u006[fF]){2}(?:l|\\u006[cC])"\s*+:\s*+"'
_REST = r'(?:[^"{}\[\]\\]++|(?!' + _TOOL_KEY + r')"(?:[^"\\{]++|\\[^{]|\{(?!\s*"))*+"%s)*+[}\]]'
_NEXT_START = re.compile(r'(?:[^{]++|\{(?:%s|(?!\s*")))*+(?P<start>\{)?' % functools.reduce(
    lambda inner, _: _REST % (r"|[{\[]" + inner), range(3), _REST % ""))   # four deep
_TOOL_KEY = re.compile(_TOOL_KEY)
# A run: more than MAX_NESTING + 1 openers ("{" or "["), with only text and flat containers that are no action
# between them. One pass finds them all: a shorter chain of openers is passed over whole, never read from inside.
_FLAT_REST = r'(?=[^{}\[\]]*+[}\]])(?:[^"{}\[\]\\]++|"(?!tool")[^"{}\[\]\\]*+")*+[}\]]'
_LINK = r"(?:[^{}\[\]]*+(?:[{\[]" + _FLAT_REST + r"[^{}\[\]]*+)*+[{\[])"   # the chain goes on: text, then an opener
_NEXT_RUN = re.compile(r"(?:[^{\[]++|[{\[]%s{0,%d}+(?!%s))*+(?P<run>[{\[]%s{%d,}+)?"
                       % (_LINK, MAX_NESTING, _LINK, _LINK, MAX_NESTING + 1))
_GAP_BACKWARDS = r"[^{}\[\]]*+(?:[}\]][^{}\[\]]*+[{\[][^{}\[\]]*+)*+"   # a run's gap, read from its end
_LAST_OPENERS = re.compile(r"(?:%s[{\[]){%d}" % (_GAP_BACKWARDS, MAX_NESTING + 1))


def _end_of(spans: list[tuple[int, int]], index: int) -> int:
    """Where the span of ``spans`` (sorted, apart) holding ``index`` ends, or 0 if none holds it."""
    k = bisect.bisect_right(spans, (index, math.inf)) - 1
    return spans[k][1] if k >= 0 and index < spans[k][1] else 0


def _candidate_starts(text: str, thinking: list[tuple[int, int]], read: list[tuple[int, int]]):
    """Where an object may start, in trying order: the first outside <think>, the others worth trying, the deep ones
    (in the early part of a run). ``read``: the objects decoded, as parse_reply adds them: none is read from inside."""
    first = _OBJECT_START.search(text)
    while first and (end := _end_of(thinking, first.start())):
        first = _OBJECT_START.search(text, end)
    if not first:
        return
    yield (first := first.start())
    runs, pos = [], 0   # each run's part before its last MAX_NESTING + 1 openers, found by reading it backwards
    while (m := _NEXT_RUN.match(text, pos))["run"]:
        runs.append((m.start("run"), m.end() - _LAST_OPENERS.match(m["run"][::-1]).end()))
        pos = m.end()
    edges = [0] + [edge for run in runs for edge in run] + [len(text)]   # text between runs, then the deep ones
    for lo, hi in list(zip(edges[::2], edges[1::2])) + runs:                # (brackets in strings look deep too)
        pos = hi if (lo, hi) in runs and _end_of(sorted(read), lo) else lo
        while pos < hi and (start := _NEXT_START.match(text, pos, hi).start("start")) >= 0:
            pos = start + 1
            if read and read[-1][0] <= start < read[-1][1]:   # inside the object decoded last: on after it
                pos = read[-1][1]
            elif thinking and (jump := _end_of(thinking, start)):
                pos = jump
            elif start != first:
                yield start
                pos = read[-1][1] if read and read[-1][0] == start else pos   # decoded: on after it


def _action_inside(data: dict) -> ParsedReply | None:
    """The first action among the objects inside ``data``, in the order they start in the text."""
    stack = list(reversed(data.values()))
    while stack:
        if isinstance(value := stack.pop(), dict):
            if isinstance(value.get("tool"), str) and (found := _check_action(value)).ok:
                return found
            stack += reversed(value.values())
        elif isinstance(value, list):
            stack += reversed(value)
    return None
