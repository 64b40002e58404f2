"""Stage 06 — the Agent: a loop around a model call, with a memory that is just a list of messages.

Adds: ``Agent(tools, model, max_steps)``. ``run(goal)`` puts the system prompt and the goal in ``history``,
then repeats ``step()``: ask the model, parse its reply (or take its native tool calls), dispatch, append
the observation, until the model calls ``finish`` or a limit is hit. The limits are checked before every
model call: ``max_steps`` (default 6, or the ``COURSE_MAX_STEPS`` environment variable), a cap on
consecutive unusable replies, an optional stop on the same call repeated, and an optional token and cost
``budget`` (stage 09, ``safety.Budget``). A reply that says the model stopped without an answer
(``Reply.stop``: refused, cut off, context full) ends the run with that reason, and a cut-off tool call is
never run. Each run leaves ``history``, ``steps``, ``answer``, ``stop_reason`` (``finish``, ``max_steps``,
``format_errors``, ``repeated_call``, ``budget``, ``model_error``, and from real APIs ``refused``,
``max_tokens``, ``context_full``), a ``trace`` of ``Step`` records, token ``usage``, and, when the loop gave
up (``GIVE_UPS``), a ``handoff`` note for the person who takes over (stage 09). ``chat(message)`` continues
the same history turn by turn (stage 10; ``max_steps`` counts per turn) and ``turns`` records each turn.
``save(path)`` writes the transcript as UTF-8 JSON, atomically. Progress goes to the standard ``logging``
module (logger ``course_lib.agent``); nothing is printed.

Leaves out: trimming or summarising long histories (memory management is a later stage), and
retries: a model failure ends the run cleanly with ``stop_reason="model_error"``.
"""
from __future__ import annotations

import json
import logging
import math
import os
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path

from .describe import build_system_prompt, tool_spec
from .dispatch import Observation, dispatch
from .models.base import STOPS, ModelError, Reply, ask, scrub
from .parsing import parse_reply
from .tools import write_atomically

log = logging.getLogger("course_lib.agent")
log.addHandler(logging.NullHandler())   # a library stays quiet unless the program configures logging
DEFAULT_MAX_STEPS = 6
GIVE_UPS = ("max_steps", "repeated_call", "format_errors", "budget")   # the loop gave up: hand over to a person


def default_max_steps() -> int:
    """``COURSE_MAX_STEPS`` if set to a positive whole number, else 6."""
    raw = os.environ.get("COURSE_MAX_STEPS", "").strip()
    if not raw:
        return DEFAULT_MAX_STEPS
    if not raw.isdigit() or int(raw) < 1:
        raise ValueError(f"COURSE_MAX_STEPS must be a positive whole number, not {raw!r}")
    return int(raw)


@dataclass(slots=True)
class ToolRun:
    tool: str
    args: dict
    observation: Observation


@dataclass(slots=True)
class Step:
    number: int
    reply: str = ""                                   # what the model said, as text
    thought: str | None = None                        # why it acted, if it said so (stage 11)
    runs: list[ToolRun] = field(default_factory=list)  # tool calls made in this step, with observations
    error: str | None = None                          # an unusable reply or a failed model call
    answer: str | None = None                         # set when the model finished
    usage: dict | None = field(default=None, repr=False)   # what this call cost, if reported (a Budget counts it)

    def __repr__(self) -> str:   # the thought only when there is one, as for ParsedReply
        return "Step(" + ", ".join(f"{k}={getattr(self, k)!r}" for k in ("number", "reply", "thought", "runs",
                                   "error", "answer") if k != "thought" or self.thought) + ")"


class Agent:
    """A tool-using agent: ``Agent(tools, model).run(goal)`` returns the answer."""

    def __init__(self, tools, model, max_steps: int | None = None, *, system_prompt: str | None = None,
                 max_format_errors: int = 3, repeat_limit: int | None = None, on_step=None, budget=None):
        self.tools, self.model = tools, model
        self.max_steps = default_max_steps() if max_steps is None else max_steps
        if type(self.max_steps) is not int or self.max_steps < 1:
            raise ValueError(f"max_steps must be a positive whole number, not {self.max_steps!r}")
        if _native(model):   # describe every tool now: a tool the API cannot be told about fails here, not mid-run
            for name, func in tools.items():
                tool_spec(name, func)
        self.system_prompt = build_system_prompt(tools, _native(model)) if system_prompt is None else system_prompt
        self.max_format_errors, self.repeat_limit, self.on_step = max_format_errors, repeat_limit, on_step
        if budget is not None and not callable(getattr(budget, "check", None)):
            raise TypeError(f"budget must be a course_lib.safety.Budget, not {type(budget).__name__}")
        self.budget = budget
        self.reset()

    def reset(self, goal: str | None = None) -> None:
        """Forget the last run; with a goal, start a new history ready for ``step()``."""
        self.goal = goal
        self.history: list[dict] = []
        self.trace: list[Step] = []
        self.usage: list[dict] = []
        self.turns: list[dict] = []   # one record per run() or chat() turn
        self._new_turn(goal)
        if goal is not None:   # scrub: half an emoji (a lone surrogate) cannot be printed, sent or saved
            self.history = [{"role": "system", "content": self.system_prompt},
                             {"role": "user", "content": scrub(goal)}]

    def _new_turn(self, message: str | None) -> None:
        self.steps, self.answer, self.stop_reason = 0, None, None
        self._bad_replies, self._last_call, self._repeats = 0, None, 0
        self._turn = (message, len(self.trace))   # the turn's message and its first step, for the handoff

    @property
    def done(self) -> bool:
        return self.stop_reason is not None

    def run(self, goal: str) -> str:
        """Run the loop on ``goal`` until it finishes or a limit stops it; return the answer."""
        self.reset(goal)
        log.info("goal: %s", goal)
        return self._loop(goal)

    def chat(self, message: str) -> str:
        """One turn of a conversation: add ``message`` to the same history (a new one, with the system prompt,
        if there is none yet) and run the loop until this turn ends; ``max_steps`` counts per turn."""
        if not isinstance(message, str):
            raise TypeError(f"message must be text, not {type(message).__name__}")
        if not self.history:
            self.reset(message)
        else:
            self._close_pending()
            self._new_turn(message)
            self.goal = message if self.goal is None else self.goal
            self._add("user", message)
        log.info("message: %s", message)
        answer = self._loop(message)
        self._close_pending()   # the next turn must not start after a tool call that never got its result
        return answer

    def _loop(self, message: str) -> str:
        while not self.done:
            self.step()
        self.turns.append({"message": scrub(message), "answer": self.answer, "stop_reason": self.stop_reason,
                           "steps": self.steps})
        return self.answer

    def step(self) -> Step | None:
        """One step: a model call and what follows from it. Returns the Step, or None once done."""
        if self.goal is None:
            raise RuntimeError("no goal yet: call agent.reset(goal) or agent.run(goal) first")
        if self.done:
            return None
        if self.steps >= self.max_steps:
            self._stop("max_steps", f"Stopped after {self.steps} step{'s' * (self.steps != 1)} without an answer "
                                    f"(the step cap is {self.max_steps}).")
            return None
        over = self.budget.check(self) if self.budget is not None else None   # stage 09: before, not after
        if over:
            self._stop("budget", over)
            return None
        self.steps += 1
        step = Step(self.steps)
        try:
            reply = self._ask_model()
        except ModelError as e:
            step.error = f"model error: {e}"
            log.error("step %d: the model call failed: %s", self.steps, e)
            reason = e.stop_reason   # "model_error", or e.g. "context_full" for a ContextFullError
            self._stop(reason, str(e) if reason != "model_error" else f"The model call failed: {e}")
        else:
            step.reply = reply.text
            if reply.usage:
                step.usage = dict(reply.usage)
                self.usage.append(step.usage)
            if reply.stop:   # refused, cut off or out of room: no answer, and a cut-off tool call never runs
                self._add_reply(reply)
                why = reply.provider_stop or reply.stop
                step.error = f"{reply.stop}: the model stopped with '{why}'"
                quoted = " ".join(reply.text.split())[:200]   # a refusal's own words help the reader
                said = f' It said: "{quoted}".' if reply.stop == "refused" and quoted else ""
                self._stop(reply.stop, STOPS[reply.stop].format(why=why) + said)
            elif reply.tool_calls:
                self._run_native(reply, step)
            elif _native(self.model) and reply.text.strip():
                self._add_reply(reply)
                self._finish(step, reply.text)
            elif _native(self.model):   # a turn with nothing in it is no answer
                if reply.raw and reply.raw.get("content"):     # its thinking blocks still belong in history
                    self._add_reply(reply)
                self._bad_reply(step, "the reply was empty", "Answer in plain text, or call one of the tools.")
            else:
                self._run_text(reply.text, step)
        self.trace.append(step)
        if self.on_step:
            self.on_step(step)
        return step

    # -- the pieces of a step ------------------------------------------------------------------
    def _ask_model(self) -> Reply:
        return ask(self.model, self.history, self.tools)

    def _run_text(self, text: str, step: Step) -> None:
        self._add("assistant", text)
        parsed = parse_reply(text)
        step.thought = parsed.thought
        if parsed.ok and parsed.tool == "finish":
            if isinstance(parsed.args.get("answer"), str):
                return self._finish(step, parsed.args["answer"])
            return self._bad_reply(step, 'finish needs {"answer": "<text>"} in its args')
        if not parsed.ok:
            return self._bad_reply(step, parsed.error)
        self._bad_replies = 0
        if self._repeated([(parsed.tool, parsed.args)]):
            return
        obs = self._dispatch(step, parsed.tool, parsed.args)
        self._add("user", f"Observation: {obs.content}")

    def _run_native(self, reply: Reply, step: Step) -> None:
        self._add_reply(reply)
        step.thought = reply.text.strip() or None   # the text beside native tool calls plays the same part
        self._bad_replies = 0
        if self._repeated([(c.name, c.args) for c in reply.tool_calls]):
            return
        for call in reply.tool_calls:   # parallel calls: run them all, answer each by its id
            obs = self._dispatch(step, call.name, call.args)
            self.history.append({"role": "tool", "tool_call_id": call.id, "name": call.name,
                                 "content": scrub(obs.content), "is_error": obs.is_error})

    def _dispatch(self, step: Step, tool: str, args: dict) -> Observation:
        obs = dispatch(self.tools, tool, args)
        step.runs.append(ToolRun(tool, args, obs))
        if log.isEnabledFor(logging.INFO):   # skip the formatting work when nobody listens
            log.info("step %d: %s(%s) -> %s", self.steps, tool, _compact(args), obs.content[:200])
        return obs

    def _bad_reply(self, step: Step, error: str,
                   fix: str = 'Reply with one JSON object: {"tool": "<name>", "args": {...}}') -> None:
        step.error, self._bad_replies = error, self._bad_replies + 1
        log.warning("step %d: unusable reply: %s", self.steps, error)
        if self._bad_replies >= self.max_format_errors:
            return self._stop("format_errors", f"Stopped: {self._bad_replies} unusable replies in a row "
                                               f"(last problem: {error}).")
        self._add("user", f"Your reply could not be used: {error}. {fix}")

    def _repeated(self, calls) -> bool:
        if not self.repeat_limit:
            return False
        try:
            key = json.dumps(calls, sort_keys=True, default=repr)   # only compared: the same call, the same key
        except (ValueError, TypeError, RecursionError):   # arguments no JSON can hold: never a repeat
            key = object()
        self._repeats = self._repeats + 1 if key == self._last_call else 1
        self._last_call = key
        if self._repeats >= self.repeat_limit:
            self._stop("repeated_call", f"Stopped: the model made the same call {self._repeats} times "
                                        "in a row without progress.")
            return True
        return False

    def _finish(self, step: Step, answer: str) -> None:
        step.answer = answer
        log.info("step %d: finished", self.steps)
        self._stop("finish", answer)

    def _stop(self, reason: str, answer: str) -> None:
        self.stop_reason, self.answer = reason, scrub(answer)
        if reason != "finish":
            log.warning("stopped (%s): %s", reason, answer)

    def _add(self, role: str, content: str) -> None:
        self.history.append({"role": role, "content": scrub(content)})

    def _close_pending(self) -> None:
        """Answer every tool call the last reply left without a result (a stop came between the call and its
        run): an API refuses a history where a tool call has no result, and a text model would think it ran."""
        last = max((i for i, m in enumerate(self.history) if m["role"] == "assistant"), default=None)
        message, after = (self.history[last], self.history[last + 1:]) if last is not None else ({}, [])
        note = f"Not run: the turn stopped ({self.stop_reason}) before this call ran."
        if message.get("tool_calls"):
            answered = {m.get("tool_call_id") for m in after if m["role"] == "tool"}
            self.history += [{"role": "tool", "tool_call_id": c["id"], "name": c["name"], "content": note,
                              "is_error": True} for c in message["tool_calls"] if c["id"] not in answered]
        elif message and not after and not _native(self.model):
            parsed = parse_reply(message.get("content"))
            if parsed.ok and parsed.tool != "finish":
                self._add("user", f"Observation: Error: {note}")

    def _add_reply(self, reply: Reply) -> None:
        """The model's turn as a history message. With native tool calls it carries them; with a real API it
        also carries the provider's own content (``raw``), which goes back unchanged on the next request."""
        message = {"role": "assistant", "content": scrub(reply.text)}
        if reply.tool_calls:
            message["tool_calls"] = [{"id": c.id, "name": c.name, "args": scrub(c.args)} for c in reply.tool_calls]
        if reply.thinking:
            message["thinking"] = reply.thinking
        if reply.raw is not None:
            message["raw"] = reply.raw
        self.history.append(message)

    # -- after a run -----------------------------------------------------------------------------
    @property
    def total_usage(self) -> dict:
        total = {"input_tokens": 0, "output_tokens": 0}
        for u in self.usage:
            for key in total:
                total[key] += u.get(key) or 0
        return total

    @property
    def handoff(self):
        """When the loop gave up (``GIVE_UPS``): a note for the person who takes over (stage 09); else None."""
        if self.stop_reason not in GIVE_UPS:
            return None
        from .safety import handoff_note   # the stage that teaches it
        message, first = self._turn
        return handoff_note(message, self.stop_reason, self.answer, self.trace[first:])

    def transcript(self) -> dict:
        handoff = self.handoff
        return {"goal": self.goal, "stop_reason": self.stop_reason, "steps": self.steps,
                "answer": self.answer, "usage": self.total_usage, "turns": self.turns,
                "handoff": None if handoff is None else asdict(handoff), "history": self.history}

    def save(self, path: str | os.PathLike = "transcripts") -> Path:
        """Write the transcript as JSON. A folder (or a path without a suffix) gets a new time-stamped file."""
        path = Path(path)
        if path.is_dir() or not path.suffix:
            stamp = datetime.now().strftime("%Y%m%d-%H%M%S-%f")
            path = path / f"run-{stamp}.json"
        # Strict JSON in UTF-8: half an emoji (a lone surrogate) becomes U+FFFD, a NaN in a model's arguments
        # becomes the text "NaN", an object JSON cannot hold its str() (see _strict: none is left).
        text = json.dumps(scrub(_strict(self.transcript())), ensure_ascii=False, indent=2)
        # A temporary file beside the target, then a rename: a failure never leaves half a transcript or a
        # stray temporary file.
        write_atomically(path, (text + "\n").encode())   # UTF-8, Python's default
        log.debug("transcript saved to %s", path)   # debug: the time-stamped name differs every run
        return path

    def __repr__(self) -> str:
        return (f"Agent(steps={self.steps}/{self.max_steps}, messages={len(self.history)}, "
                f"stop_reason={self.stop_reason!r})")


def _native(model) -> bool:   # native tool calling (stage 08): the API carries the tool list and the calls
    return getattr(model, "native_tools", False)


def _strict(value):
    """``value`` with what JSON cannot hold made into text: NaN and infinities, whole numbers too long to
    write, keys that are not text, and any other object (its ``str``, or a note if even that fails)."""
    if value is None or isinstance(value, (str, bool)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else json.dumps(value)   # "NaN", "Infinity" or "-Infinity"
    if isinstance(value, int):
        return value if value.bit_length() < 14_000 else f"(a whole number of {value.bit_length():,} bits)"
    if isinstance(value, dict):
        return {k if isinstance(k, str) else _strict_text(k): _strict(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_strict(v) for v in value]
    return _strict_text(value)


def _strict_text(value) -> str:
    try:
        return str(value)
    except Exception:   # a __str__ that raises, or returns something that is not text
        return f"(a {type(value).__name__} that cannot be shown)"


def _compact(args: dict) -> str:
    return json.dumps(args, ensure_ascii=False)
