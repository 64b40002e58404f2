"""Stage 04 — parse_reply: find the one JSON action in messy model text.

Adds: ``parse_reply(text) -> ParsedReply``. Models wrap JSON in prose, code fences and ``<think>`` notes,
put ``args`` before ``tool``, escape Unicode, or send two objects. The parser ignores objects that start
inside closed ``<think>`` blocks (the text is not edited, so an answer that mentions ``<think>`` keeps it),
tries each other ``{`` that could start an object, in order, with ``json.JSONDecoder.raw_decode``,
and returns the first object that is a valid action. It never raises: every failure is ``ok=False`` with
an ``error`` the agent can send back to the model.

Linear time, also on hostile text: one pass over the brackets measures how deeply each ``{`` nests, and
starts nested more than ``MAX_NESTING`` deep are skipped, so no character is decoded more than about
``MAX_NESTING`` times (``"{" * 200_000`` or ``'{"a": ' * 20_000`` cannot make it quadratic). That count is
naive (brackets inside strings count too), so two guards back it up: starts skipped as deep are tried last
(an action whose strings hold many brackets is still found), and all decoding shares a budget of about
``MAX_NESTING`` passes over the text (brackets hidden in strings cannot make it quadratic either).

Leaves out: repairing broken JSON (single quotes, trailing commas); the model is asked to try again instead.
"""
from __future__ import annotations

import bisect
import json
import re
from dataclasses import dataclass, field

MAX_NESTING = 32
_DECODER = json.JSONDecoder()
_BRACKETS = re.compile(r"[{}\[\]]")
_OBJECT_START = re.compile(r"\{\s*\"")   # a JSON object with at least one key starts like this


@dataclass(slots=True)
class ParsedReply:
    ok: bool
    tool: str | None = None
    args: dict = field(default_factory=dict)
    error: str | None = None


def _fail(error: str) -> ParsedReply:
    return ParsedReply(ok=False, tool=None, args={}, error=error)


def _think_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of every closed <think>...</think> block: drafts in there are not the answer."""
    spans, pos = [], 0
    while (start := text.find("<think>", pos)) != -1:
        end = text.find("</think>", start)
        if end == -1:
            break
        pos = end + len("</think>")
        spans.append((start, pos))
    return spans


def _in_spans(spans: list[tuple[int, int]], index: int) -> bool:
    k = bisect.bisect_right(spans, (index, float("inf"))) - 1
    return k >= 0 and index < spans[k][1]


def _candidate_starts(text: str) -> list[int]:
    """Where an object may start: first the shallow ones (naive nesting at most MAX_NESTING) in order,
    then the deep ones."""
    if text.count("{") + text.count("[") <= MAX_NESTING:   # the usual short reply: nothing can nest deeper
        return [m.start() for m in _OBJECT_START.finditer(text)]
    stack: list[list[int]] = []   # [position, height of what is nested inside so far]
    keep = []
    for m in _BRACKETS.finditer(text):
        if text[m.start()] in "{[":
            stack.append([m.start(), 0])
        elif stack:
            start, height = stack.pop()
            if height <= MAX_NESTING and text[start] == "{":
                keep.append(start)
            if stack and stack[-1][1] <= height:
                stack[-1][1] = height + 1
    # Never closed: anything buried more than MAX_NESTING below the top is too deep, so look only at the top.
    height = -1
    for start, own in reversed(stack[-(MAX_NESTING + 1):]):
        height = max(own, height + 1)
        if height <= MAX_NESTING and text[start] == "{":
            keep.append(start)
    keep = sorted(start for start in keep if _OBJECT_START.match(text, start))
    kept = set(keep)
    return keep + [m.start() for m in _OBJECT_START.finditer(text) if m.start() not in kept]


def _check_action(data: dict) -> ParsedReply:
    tool, args = data.get("tool"), data.get("args", {})
    if not isinstance(tool, str) or not tool.strip():
        return _fail('the JSON object needs a "tool" field naming a tool, '
                     'e.g. {"tool": "calculator", "args": {"expression": "2+2"}}')
    if args is None:
        args = {}
    if not isinstance(args, dict):
        return _fail(f'"args" must be a JSON object like {{"name": value}}, not {type(args).__name__}')
    return ParsedReply(ok=True, tool=tool.strip(), args=args, error=None)


def parse_reply(text) -> ParsedReply:
    """Find the first valid ``{"tool": ..., "args": {...}}`` object in ``text``; never raises."""
    try:
        if isinstance(text, bytes):
            text = text.decode("utf-8", errors="replace")
        if not isinstance(text, str):
            return _fail(f"the reply must be text, got {type(text).__name__}")
        if not text or text.isspace():
            return _fail("the reply was empty; send one JSON object")
        if text.startswith('{"'):   # the well-behaved reply, one object and nothing else: try it first
            try:
                result = _check_action(_DECODER.raw_decode(text)[0])
                if result.ok:
                    return result
            except (ValueError, RecursionError):
                pass   # fall through to the full search, which also reports the problem
        thinking = _think_spans(text)
        first_problem = None
        work_left = (MAX_NESTING + 1) * len(text) + 10_000   # characters all decoding may scan
        for start in _candidate_starts(text):
            if work_left <= 0:
                first_problem = first_problem or "the reply is too tangled to read; send just one JSON object"
                break
            if thinking and _in_spans(thinking, start):
                continue
            try:
                data, end = _DECODER.raw_decode(text, start)
                work_left -= end - start
            except (ValueError, RecursionError) as e:
                # Charge from the start of the text, not of the object: a JSONDecodeError counts the lines
                # before its position to report them, so each failure costs that much (and a
                # RecursionError may have scanned everything).
                work_left -= max(1, getattr(e, "pos", len(text)))
                first_problem = first_problem or f"invalid JSON: {getattr(e, 'msg', e)}"
                continue
            if "tool" not in data:
                first_problem = first_problem or 'the JSON object has no "tool" field'
                continue
            result = _check_action(data)
            if result.ok:
                return result
            first_problem = first_problem or result.error
        if first_problem:
            return _fail(first_problem)
        return _fail("no JSON object found")
    except Exception as e:   # belt and braces: the contract is "never raises"
        return _fail(f"could not read the reply ({type(e).__name__})")
