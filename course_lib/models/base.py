"""Stage 06 — the model interface of every later stage: one method, one provider-neutral reply shape.

Adds: a model is an object with ``complete(messages, tools) -> Reply`` or a function ``f(messages) -> str``,
raising ``ModelError`` when it cannot answer. A ``Reply`` has text, native ``tool_calls``, ``stop`` when a real
API gave no usable answer (``"refused"``, ``"max_tokens"``, ``"context_full"``) and ``raw`` to send back as is.

Leaves out: any provider's wire format and request options such as ``tool_choice`` (the adapters of stage 08).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..workspace import whole

STOPS = {"refused": "The model refused this request ({why}), so there is no answer; rephrase the goal "
                    "or try another model.",
         "max_tokens": "The model ran out of output tokens ({why}) before it finished; its partial output is in "
                       "the trace, not used as the answer. Raise max_tokens or ask for less.",
         "context_full": "The conversation no longer fits the model's context window ({why}); trim or summarise "
                         "the history, or start a new run."}


class ModelError(Exception):
    """The model could not produce a reply (script ran out, API refused, network down, ...)."""
    stop_reason = "model_error"


class ContextFullError(ModelError):
    """The request is longer than the model's context window: the run stops with ``"context_full"``."""
    stop_reason = "context_full"


MAX_ARGS_DEPTH = 64   # tool arguments nested deeper than this are not a real call (and would exhaust the stack)


@dataclass(frozen=True, slots=True)
class ToolCall:
    name: str
    args: dict
    id: str = ""

    def __post_init__(self):   # a malformed call is the model's (or the script's) fault: a ModelError sentence
        if not isinstance(self.name, str) or not isinstance(self.id, str):
            raise ModelError(f"a tool call's name and id must be text, not {type(self.name).__name__} "
                             f"and {type(self.id).__name__}")
        if _deeper_than(self.args, MAX_ARGS_DEPTH):
            raise ModelError(f"the arguments of the call to {self.name[:60]} are nested more than "
                             f"{MAX_ARGS_DEPTH} levels deep")


@dataclass(frozen=True, slots=True)
class Reply:
    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    usage: dict | None = None   # {"input_tokens": n, "output_tokens": m} when the provider reports it
    stop: str | None = None     # None, or "refused" / "max_tokens" / "context_full": no usable answer
    provider_stop: str | None = None   # the provider's own stop/finish reason, e.g. "end_turn", "length"
    thinking: str = ""          # thinking text, when the provider returns it (often it does not)
    raw: dict | None = field(default=None, repr=False)   # {"format": "anthropic", "content": [blocks as sent]}

    def __post_init__(self):
        if type(self.text) is str and self.tool_calls == () and self.stop is None and self.usage is None:
            return   # the common plain reply: nothing to check (the loop makes one every step)
        problem = ("text must be text" if not isinstance(self.text, str) else
                   "tool_calls must be a tuple of ToolCall" if not isinstance(self.tool_calls, tuple)
                   or not all(isinstance(c, ToolCall) for c in self.tool_calls) else
                   f"unknown stop {self.stop!r}: use one of {', '.join(STOPS)} or leave it out"
                   if self.stop is not None and (not isinstance(self.stop, str) or self.stop not in STOPS) else
                   "usage must be a dict of whole numbers, 0 or more, e.g. {'input_tokens': 12, 'output_tokens': 3}"
                   if self.usage is not None and (not isinstance(self.usage, dict) or not all(
                       v is None or type(v) is int and v >= 0 for v in self.usage.values())) else None)
        if problem:
            raise ModelError(f"a Reply's {problem}")

    def __repr__(self) -> str:   # the fields that say something: a plain reply stays one short line
        shown = [f"text={self.text!r}", f"tool_calls={self.tool_calls!r}", f"usage={self.usage!r}"]
        shown += [f"{k}={getattr(self, k)!r}" for k in ("stop", "provider_stop", "thinking") if getattr(self, k)]
        return f"Reply({', '.join(shown)})"

    def stop_sentence(self) -> str:
        """Why there is no answer, when ``stop`` says the model stopped without one (a refusal quotes it)."""
        quoted = " ".join(self.text.split())[:200]   # a refusal's own words help the reader
        said = f' It said: "{quoted}".' if self.stop == "refused" and quoted else ""
        return STOPS[self.stop].format(why=self.provider_stop or self.stop) + said

    @classmethod
    def coerce(cls, value) -> "Reply":
        """Accept a Reply, a plain string, or a dict like {"text": ..., "tool_calls": [{"name", "args"}]}."""
        if isinstance(value, Reply):
            return value
        if isinstance(value, str):
            return cls(text=value)
        if isinstance(value, dict):
            _only(value, ("text", "tool_calls", "usage", "stop", "provider_stop", "thinking"), "a reply")
            if not isinstance(value.get("text", ""), str):
                raise ModelError(f'a reply\'s "text" must be text, not {type(value["text"]).__name__}')
            calls = value.get("tool_calls") or ()
            if not isinstance(calls, (list, tuple)):
                raise ModelError(f'a reply\'s "tool_calls" must be a list of calls, not {type(calls).__name__}')
            return cls(**{**value, "tool_calls": tuple(_tool_call(c, i) for i, c in enumerate(calls))})
        raise ModelError(f"a model reply must be text, a dict or a Reply, not {type(value).__name__}")


def _only(value: dict, allowed: tuple, what: str) -> None:   # a typo ("tool" for "name"): a sentence, no KeyError
    if unknown := [k for k in value if k not in allowed]:
        raise ModelError(f"{what} has unknown key(s) {', '.join(map(repr, unknown))}; "
                         f"it may have: {', '.join(allowed)}")


def _tool_call(call, i: int) -> ToolCall:
    if isinstance(call, ToolCall):
        return call
    what = f"tool call {i + 1}"
    if not isinstance(call, dict):
        raise ModelError(f'{what} must be a dict like {{"name": "calculator", "args": {{...}}}}, '
                         f"not {type(call).__name__}")
    _only(call, ("name", "args", "id"), what)
    if not isinstance(call.get("name"), str):
        raise ModelError(f'{what} needs a "name" naming the tool, e.g. {{"name": "calculator", "args": {{...}}}}')
    args = {} if call.get("args") is None else call["args"]   # args that are not a dict: dispatch says so
    return ToolCall(name=call["name"], args=args, id=call.get("id") or f"call_{i + 1}")


def scrub(value):
    """``value`` with every lone surrogate (half an emoji, e.g. from JSON ``"\\ud83d"``) replaced by U+FFFD, through
    dicts, lists and tuples: SDKs and ``json`` cannot encode such text as UTF-8. Pairs become the real character."""
    try:
        if isinstance(value, str):
            return whole(value)
        if isinstance(value, dict):
            return {scrub(k): scrub(v) for k, v in value.items()}
        return type(value)(scrub(v) for v in value) if isinstance(value, (list, tuple)) else value
    except RecursionError:   # nested deep enough to exhaust the stack (a hostile reply): a sentence, no traceback
        raise ModelError("the reply is nested too deeply to read; ask for flatter arguments") from None


def _deeper_than(value, limit: int) -> bool:
    """Whether lists and dicts nest more than ``limit`` deep, level by level: no recursion to exhaust the stack."""
    level, seen = [value], 0
    for _ in range(limit + 1):
        level = [v for c in level if isinstance(c, (dict, list, tuple))
                 for v in (c.values() if isinstance(c, dict) else c)]
        seen += len(level)
        if not level:
            return False
        if seen > 1_000_000:   # a list that holds itself twice doubles at every level: stop counting
            return True
    return True


def ask(model, messages: list[dict], tools=None) -> Reply:
    """One call of any model: an object with ``complete(messages, tools)`` or a function ``f(messages)``."""
    complete = getattr(model, "complete", None)
    return Reply.coerce(complete(messages, tools) if complete else model(messages))   # a Reply comes back as it is
