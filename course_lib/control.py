"""Stage 09 — control: every run has limits, and a run that gives up hands over to a person.

Adds: ``handoff(agent)``, the note for whoever takes over when the loop gave up (``GIVE_UPS``); ``Budget``, a
limit (``Agent(..., limits=[Budget(...)])``) that stops the run with ``stop_reason="budget"`` before a model call
would go over, counting with ``estimate_tokens``; ``with_time_limit``: a tool that never returns becomes an error.

Leaves out: a real tokenizer (reported usage wins), real prices (the examples say so), and a sandbox for tool code.
"""
from __future__ import annotations

import contextlib
import functools
import math
import os
import pickle
import re
import signal
from dataclasses import dataclass
from itertools import groupby

from .dispatch import to_json   # JSON as dispatch shows it
from .models.base import scrub
from .models.catalog import EXAMPLE_PRICES   # example prices, not any provider's price list
from .tools import ToolError

GIVE_UPS = ("max_steps", "repeated_call", "format_errors", "budget")   # the loop gave up: hand over to a person
_in_a_limited_child = False   # True in a with_time_limit child: a nested limit's child joins its process group


def _positive(value) -> bool:   # a real, finite number above zero (True, "5" and NaN are not)
    return type(value) in (int, float) and 0 < value < math.inf


# ---------------------------------------------------------------- handing over to a person
ADVICE = {"max_steps": "It used every step without an answer: allow more steps, answer from what it found, or "
                       "narrow the goal.",
          "repeated_call": "It kept making the same call: check that tool's result is what the goal needs, fix "
                           "the tool or its data, or answer yourself.",
          "format_errors": "Its replies could not be used: check the model and the reply format in the system "
                           "prompt, or try another model.",
          "budget": "Going on would cost more than the budget: decide whether the goal is worth more, or narrow it."}


def _short(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


@dataclass
class Handoff:
    """What a person needs to take over a run the loop gave up on; ``print()`` it to read it as a note."""
    goal: str | None
    stopped: str              # the stop reason
    why: str                  # the agent's own sentence
    tried: list[str]          # each tool call and its outcome, repeats folded
    last_error: str | None
    decide: str               # what the person should decide

    def __str__(self) -> str:
        tried = "".join(f"\n  - {t}" for t in self.tried) or "\n  (no tool was called)"
        return (f"Handed over to a person (stop reason: {self.stopped})\nGoal: {self.goal}\nWhy: {self.why}\n"
                f"Tried:{tried}\nLast error: {self.last_error or 'none'}\nTo decide: {self.decide}")


def handoff(agent, goal: str | None = None) -> Handoff | None:
    """When the loop gave up (``GIVE_UPS``): the note for the run that just stopped (its last ``agent.steps``
    steps), asked ``goal`` (default ``agent.goal``); else None."""
    if agent.stop_reason not in GIVE_UPS:
        return None
    this_run = agent.trace[len(agent.trace) - agent.steps:]   # a trace may hold earlier runs' steps too
    return handoff_note(agent.goal if goal is None else goal, agent.stop_reason, agent.answer, this_run)


def handoff_note(goal: str | None, reason: str, why: str, steps) -> Handoff:
    """The note for a run that stopped with ``reason``, from its ``steps``."""
    calls, last_error = [], None
    for step in steps:
        for run in step.runs:
            calls.append(f"{run.tool}({_short(to_json(run.args), 60)}) → "
                         f"{'error' if run.observation.is_error else 'ok'}: {_short(run.observation.content, 80)}")
            last_error = _short(run.observation.content, 200) if run.observation.is_error else last_error
        last_error = step.error or last_error
    tried = [c if n == 1 else f"{c} (×{n})" for c, n in ((c, len(list(g))) for c, g in groupby(calls))]
    tried = tried if len(tried) <= 12 else tried[:11] + [f"… and {len(tried) - 11} more"]
    note = (goal, reason, why, tried, last_error, ADVICE.get(reason, "Decide how to go on."))
    return Handoff(*scrub(note))   # half an emoji (a lone surrogate) in a goal or a call cannot be printed


# ---------------------------------------------------------------- budgets, and the rule of thumb they count with
CHARS_PER_TOKEN = 4    # English and code: about four characters per token
MESSAGE_OVERHEAD = 4   # each message's role and separators
TOOL_OVERHEAD = 10     # the structure around each tool call and each tool result
_ROLES = ("system", "user", "assistant", "tool")
_WIDE = re.compile("[\u1100-\u11ff\u3040-\u30ff\u3130-\u318f\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")


def text_tokens(text: str) -> int:
    """Estimated tokens in ``text``: one per Hangul, kana or Chinese character, one per 4 other characters."""
    narrow = len(_WIDE.sub("", text))
    return (len(text) - narrow) + math.ceil(narrow / CHARS_PER_TOKEN)


def estimate_tokens(history: list[dict]) -> int:
    """Estimated input tokens of ``history`` (not tool definitions or images); the reported ``usage`` is the bill."""
    return sum(_message_tokens(m) for m in check_history(history))


def tokens_per_call(history: list[dict]) -> list[int]:
    """Estimated input tokens of each model call in an untrimmed history: a call sent all before its reply."""
    return [estimate_tokens(history[:i]) for i, m in enumerate(check_history(history)) if m["role"] == "assistant"]


def _message_tokens(m: dict) -> int:
    calls = m.get("tool_calls") or []
    sent = [m.get("content"), m.get("thinking"), m.get("tool_call_id")]
    sent += [f"{c.get('id')} {c.get('name')} {to_json(c.get('args'))}" for c in calls]
    tools = len(calls) + (m["role"] == "tool")
    return MESSAGE_OVERHEAD + TOOL_OVERHEAD * tools + text_tokens(" ".join(str(t) for t in sent if t))


def check_history(history) -> list[dict]:
    """``history`` itself if it is a list of message dicts (known role, tool calls as dicts); else a ValueError."""
    if not isinstance(history, list):
        raise ValueError(f"a history is a list of message dicts, not {type(history).__name__}")
    bad = next((i for i, m in enumerate(history) if not isinstance(m, dict) or m.get("role") not in _ROLES
                or not isinstance(m.get("tool_calls") or [], list)
                or not all(isinstance(c, dict) for c in m.get("tool_calls") or [])), None)
    if bad is not None:
        raise ValueError(f"history[{bad}] is not a message: each one is a dict whose 'role' is {', '.join(_ROLES)}, "
                         "and whose 'tool_calls', if any, is a list of call dicts")
    return history


class Budget:
    """A token and cost budget for a run (a chat: the whole conversation), checked before every model call.
    Spent: each call's reported usage, else an estimate of what it sent (noted by ``check``, as a trimmed history
    no longer shows it) and of its reply. The next call: what it sends, estimated, plus ``reply_tokens`` back."""

    def __init__(self, max_tokens: int | None = None, max_cost: float | None = None, *,
                 prices: dict | None = None, reply_tokens: int = 256):
        for name, value in (("max_tokens", max_tokens), ("max_cost", max_cost), ("reply_tokens", reply_tokens)):
            if (value is not None or name == "reply_tokens") and not _positive(value):
                raise ValueError(f"{name} must be a positive number, not {value!r}")
        if max_tokens is None and max_cost is None:
            raise ValueError("a Budget needs max_tokens, max_cost (in dollars) or both")
        self.prices = EXAMPLE_PRICES if prices is None else prices   # dollars per million tokens
        if not isinstance(self.prices, dict) or not all(_positive(self.prices.get(k)) or self.prices.get(k) == 0
                                                        for k in ("input", "output")):
            raise ValueError('prices must be a dict like {"input": 1.0, "output": 5.0} (dollars per million tokens)')
        self.max_tokens, self.max_cost, self.reply_tokens = max_tokens, max_cost, reply_tokens
        self.sent: list[int] = []   # estimated input tokens of each model call check let through, step by step

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        return (input_tokens * self.prices["input"] + output_tokens * self.prices["output"]) / 1e6

    def spent(self, agent) -> dict:
        """Tokens in and out so far, and what they cost: each step of ``agent.trace`` is one model call."""
        sent = self.sent if len(self.sent) == len(agent.trace) else tokens_per_call(agent.history)   # unwatched
        native, tokens_in, tokens_out, cut = getattr(agent.model, "native_tools", False), 0, 0, 0.0
        for step, sending in zip(agent.trace, sent + [0] * len(agent.trace)):
            calls = [{"id": "", "name": r.tool, "args": r.args} for r in step.runs] if native else []   # ids unknown
            reply = estimate_tokens([{"role": "assistant", "content": step.reply, "tool_calls": calls}])
            usage = step.usage or {"input_tokens": sending, "output_tokens": reply}
            written, read = usage.get("cache_creation_input_tokens") or 0, usage.get("cache_read_input_tokens") or 0
            tokens_in += (usage.get("input_tokens") or 0) + written + read   # a provider may leave one out
            cut += 0.9 * read - 0.25 * written   # Anthropic's cache: writes 1.25× input (5-min TTL), reads 0.1×
            tokens_out += usage.get("output_tokens") or 0
        return {"input_tokens": tokens_in, "output_tokens": tokens_out, "cost": self.cost(tokens_in - cut, tokens_out)}

    def check(self, agent) -> str | None:
        """None if the next model call fits the budget; else the sentence the run stops with."""
        spent, sending = self.spent(agent), estimate_tokens(agent.history)
        tokens = spent["input_tokens"] + spent["output_tokens"] + sending + self.reply_tokens
        cost = spent["cost"] + self.cost(sending, self.reply_tokens)
        call = f"the next model call (about {sending:,} tokens to send, up to {self.reply_tokens:,} back)"
        if self.max_tokens is not None and tokens > self.max_tokens:
            return f"Stopped before {call}: it would bring the run to about {tokens:,} tokens, over the budget " \
                   f"of {self.max_tokens:,}."
        if self.max_cost is not None and cost > self.max_cost:
            return f"Stopped before {call}: it would bring the cost to about ${cost:.4f}, over the budget of " \
                   f"${self.max_cost:.4f} (at example prices, not any provider's)."
        self.sent[len(agent.trace):] = [sending]   # this call's entry (a new run, with no steps yet, starts afresh)
        return None

    stop_reason = "budget"
    __call__ = check   # the Agent's limits are functions of the agent: budget(agent) is budget.check(agent)


# ---------------------------------------------------------------- a tool that never returns
def with_time_limit(tool, seconds: float):
    """``tool`` in a child process, killed with the processes it started if it has not returned after ``seconds``
    (at most a day): the hang becomes a ``ToolError`` and the loop goes on; name, signature and docstring stay.
    A process because Python cannot stop a thread, and ``signal.alarm`` works only in the main thread on Unix,
    between bytecodes (a long call in C finishes first). The price: arguments, result and exceptions travel by
    pickle, changes to Python objects are lost (files stay), and with spawn (Windows) the tool must be importable."""
    if not callable(tool):
        raise TypeError(f"with_time_limit needs a function, not {type(tool).__name__}")
    if not _positive(seconds) or seconds > 86_400:   # the operating system cannot wait much longer in one go
        raise ValueError(f"the time limit must be a positive number of seconds, not {seconds!r}, and at most a "
                         "day (86,400); a tool that may take longer needs no time limit")

    @functools.wraps(tool)
    def limited(*args, **kwargs):
        import multiprocessing
        import warnings
        context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn")
        reader, writer = context.Pipe(duplex=False)
        # Not a daemon, so that the tool may start processes of its own (multiprocessing, a nested time limit).
        child = context.Process(target=_call_in_child, args=(tool, args, kwargs, writer))
        with warnings.catch_warnings():   # Python 3.12+ warns about fork beside threads (a notebook kernel has
            warnings.simplefilter("ignore", DeprecationWarning)   # some): a child stuck that way is killed too
            child.start()
        writer.close()   # only the child writes now: if it dies, the pipe reports the end
        try:
            if not reader.poll(seconds):
                raise ToolError(f"stopped after {seconds:g} seconds without returning (the call was ended); "
                                "try a smaller request or another way")
            try:
                kind, value = reader.recv()
            except EOFError:   # it died: wait a moment for it to be gone, to say how it ended
                child.join(1)
                kind, value = "raised", ToolError(f"its process ended without an answer (exit code {child.exitcode})")
        finally:   # always end it, with every process it started (its group), and reap it
            with contextlib.suppress(AttributeError, OSError):   # no process groups (Windows), or none of it left
                os.killpg(child.pid, signal.SIGKILL)
            if child.is_alive():   # ended before it made its group, or where there are no groups
                child.kill()
            child.join()
            reader.close()
        if kind == "raised":
            raise value
        return value
    return limited


def _call_in_child(tool, args, kwargs, writer) -> None:
    global _in_a_limited_child
    if hasattr(os, "setsid") and not _in_a_limited_child:   # a process group of its own, which the parent kills whole
        os.setsid()
    _in_a_limited_child = True
    try:
        outcome = ("returned", tool(*args, **kwargs))
    except BaseException as e:
        outcome = ("raised", e)
    try:
        data = pickle.dumps(outcome)
        pickle.loads(data)   # rebuilt here first: what cannot be rebuilt here cannot be rebuilt in the parent
    except Exception as e:   # a result or an exception that pickle cannot carry
        data = pickle.dumps(("raised", ToolError(f"its {outcome[0]} value, a {type(outcome[1]).__name__}, cannot be "
                                                 f"sent back from the child process ({type(e).__name__})")))
    writer.send_bytes(data)
