"""Stage 06 — the Agent: a loop around a model call, with a memory that is just a list of messages.

Adds: ``Agent(tools, model).run(goal)``: ask the model, read the reply, run each call, write each result back, until
``finish`` or a stop (``max_steps``, 6 or ``COURSE_MAX_STEPS``; ``format_errors``; ``repeated_call`` with a
``repeat_limit``; ``model_error``; a model's or a limit's reason). ``history``, ``trace``, ``usage``, ``save()`` and
``logging`` keep the run. Later stages plug in: ``limits``, ``loop(prepare)``, ``protocol``, ``on_step``.
Leaves out: memory management (the history only grows) and retries (a model failure ends the run cleanly).
"""
import json
import logging
import os
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from .dispatch import ToolRun, call_key, dispatch
from .models.base import ModelError, Reply, ask, scrub
from .parsing import Reading, TextProtocol
from .workspace import write_json

log = logging.getLogger("course_lib.agent")
log.addHandler(logging.NullHandler())   # a library stays quiet unless the program configures logging


def default_max_steps() -> int:
    """``COURSE_MAX_STEPS`` if set to a positive whole number, else 6."""
    if not (raw := os.environ.get("COURSE_MAX_STEPS", "").strip() or "6").isdigit() or int(raw) < 1:
        raise ValueError(f"COURSE_MAX_STEPS must be a positive whole number, not {raw!r}")
    return int(raw)


@dataclass(slots=True)
class Step:
    number: int
    reply: str = ""                                   # what the model said, as text
    thought: str | None = None                        # why it acted, if it said so
    runs: list[ToolRun] = field(default_factory=list)  # tool calls made in this step, with observations
    error: str | None = None                          # an unusable reply or a failed model call
    answer: str | None = None                         # set when the model finished
    usage: dict | None = field(default=None, repr=False)   # what this call cost, if the model reported it

    def __repr__(self) -> str:   # the thought only when there is one, as for ParsedReply
        return f"Step({', '.join(f'{k}={getattr(self, k)!r}' for k in self.__slots__[:-1] if k != 'thought' or self.thought)})"


class Agent:
    """A tool-using agent: ``Agent(tools, model).run(goal)`` returns the answer (see the module's docstring)."""

    def __init__(self, tools, model, max_steps: int | None = None, *, system_prompt: str | None = None,
                 max_format_errors: int = 3, repeat_limit: int | None = None, on_step=None, limits=(),
                 protocol=None):
        self.tools, self.model, self.limits = tools, model, list(limits)
        self.max_steps = default_max_steps() if max_steps is None else max_steps
        if type(self.max_steps) is not int or self.max_steps < 1:
            raise ValueError(f"max_steps must be a positive whole number, not {self.max_steps!r}")
        for x in filter(lambda x: not callable(x), self.limits):
            raise TypeError(f"each limit must be a function limit(agent) -> str | None, not {type(x).__name__}")
        self.protocol = protocol or getattr(model, "protocol", None) or TextProtocol()
        self.system_prompt = self.protocol.system_prompt(tools) if system_prompt is None else system_prompt
        self.max_format_errors, self.repeat_limit = max_format_errors, repeat_limit
        self.on_step = on_step or (lambda step: None)   # called with each Step as it is recorded
        self.reset()

    def reset(self, goal: str | None = None) -> None:
        """Forget the last run; with a goal, start a new history ready for ``step()``."""
        self.goal, self.trace, self.usage, self.steps = goal, [], [], 0
        self.resume([] if goal is None else [{"role": "system", "content": self.system_prompt},
                                             {"role": "user", "content": scrub(goal)}])   # no half emoji

    def resume(self, history: list[dict] | None = None) -> None:
        """Go on after a stop: forget how the run ended (steps taken still count), with ``history`` if given."""
        self.answer = self.stop_reason = self._last_call = None
        self._bad_replies, self._repeats, self.history = 0, 0, self.history if history is None else history

    @property
    def done(self) -> bool:
        return self.stop_reason is not None

    def run(self, goal: str) -> str:
        """Run the loop on ``goal`` until it finishes or a limit stops it; return the answer."""
        self.reset(goal)
        log.info("goal: %s", goal)
        return self.loop()

    def loop(self, prepare=None) -> str:
        """``step()`` until the run stops; ``prepare(history)``, if given, replaces the history before each step."""
        while not self.done:
            self.history = self.history if prepare is None else prepare(self.history)
            self.step()
        return self.answer

    def step(self) -> Step | None:
        """One step: a model call and what follows from it. Returns the Step, or None once done."""
        if self.goal is None:
            raise RuntimeError("no goal yet: call agent.reset(goal) or agent.run(goal) first")
        if self.steps >= self.max_steps and not self.done:
            self._stop("max_steps", f"Stopped after {self.steps} step{'s' * (self.steps != 1)} without an answer "
                                    f"(the step cap is {self.max_steps}).")
        for limit in self.limits:   # before the call: a limit is there to prevent it; the first to object stops
            if not self.done and (why := limit(self)):
                self._stop(getattr(limit, "stop_reason", "limit"), why)
        if self.done:
            return None
        self.steps += 1
        step = Step(self.steps)
        try:
            self._take(ask(self.model, self.history, self.tools), step)
        except ModelError as e:
            step.error, reason = f"model error: {e}", e.stop_reason   # e.g. "context_full" for a ContextFullError
            log.error("step %d: the model call failed: %s", self.steps, e)
            self._stop(reason, str(e) if reason != "model_error" else f"The model call failed: {e}")
        self.trace.append(step)
        self.on_step(step)
        return step

    def _take(self, reply: Reply, step: Step) -> None:
        reading = Reading() if reply.stop else self.protocol.read(reply)
        step.reply, step.thought, step.usage = reply.text, reading.thought, dict(reply.usage or {}) or None
        self.usage += [step.usage] if step.usage else []
        self.history += [self.protocol.message(reply)] if reading.keep else []
        if reply.stop:   # refused, cut off or out of room: no answer, and a cut-off tool call never runs
            step.error = f"{reply.stop}: the model stopped with '{reply.provider_stop or reply.stop}'"
            return self._stop(reply.stop, reply.stop_sentence())
        if reading.answer is not None:
            step.answer = reading.answer
            log.info("step %d: finished", self.steps)
            return self._stop("finish", reading.answer)
        if reading.error:   # an unusable reply: the model is told why, up to max_format_errors in a row
            step.error, self._bad_replies = reading.error, self._bad_replies + 1
            log.warning("step %d: unusable reply: %s", self.steps, reading.error)
            if self._bad_replies >= self.max_format_errors:
                return self._stop("format_errors", f"Stopped: {self._bad_replies} unusable replies in a row "
                                                   f"(last problem: {reading.error}).")
            return self.history.append({"role": "user", "content": scrub(f"Your reply could not be used: "
                                                                         f"{reading.error}. {reading.fix}")})
        key, self._bad_replies = call_key([call[:2] for call in reading.calls]), 0   # the same calls, the same key
        self._repeats, self._last_call = self._repeats + 1 if key == self._last_call else 1, key
        if self.repeat_limit and self._repeats >= self.repeat_limit:
            return self._stop("repeated_call", f"Stopped: the model made the same call {self._repeats} times "
                                               "in a row without progress.")
        for call in reading.calls:
            step.runs.append(ToolRun(*call[:2], obs := dispatch(self.tools, *call[:2])))   # parallel calls: all
            if log.isEnabledFor(logging.INFO):   # skip the formatting work when nobody listens
                log.info("step %d: %s(%s) -> %.50s", self.steps, call[0], json.dumps(call[1], ensure_ascii=False), obs.content)
            self.history.append(self.protocol.result(call, obs))   # each answered in turn

    def _stop(self, reason: str, answer: str) -> None:
        self.stop_reason, self.answer = reason, scrub(answer)
        if reason != "finish":
            log.warning("stopped (%s): %s", reason, answer)

    @property
    def total_usage(self) -> dict:
        return {key: sum(u.get(key) or 0 for u in self.usage) for key in ("input_tokens", "output_tokens")}

    def transcript(self, **extra) -> dict:
        """The run as plain data; ``extra`` fields (plain data or dataclasses) go in before the history."""
        return {"goal": self.goal, "stop_reason": self.stop_reason, "steps": self.steps, "answer": self.answer,
                "usage": self.total_usage, **extra, "history": self.history}

    def save(self, path: str | os.PathLike = "transcripts", **extra) -> Path:
        """Write the transcript as JSON. A folder (or a path without a suffix) gets a new time-stamped file."""
        if (path := Path(path)).is_dir() or not path.suffix:
            path = path / f"run-{datetime.now().strftime('%Y%m%d-%H%M%S-%f')}.json"
        write_json(path, self.transcript(**extra))   # strict JSON, a temporary file then a rename: never half
        log.debug("transcript saved to %s", path)   # debug: the time-stamped name differs every run
        return path

    def __repr__(self) -> str:
        return f"Agent(steps={self.steps}/{self.max_steps}, messages={len(self.history)}, stop_reason={self.stop_reason!r})"
