"""The model interface shared by every stage from 06 on: one method, one provider-neutral reply shape.

A model is any object with ``complete(messages, tools) -> Reply`` (or any plain function
``f(messages) -> str``). ``messages`` is the agent's history, a list of plain dicts; ``tools`` is the name →
function mapping, which native tool-calling adapters (stage 08) turn into their provider's format.

A ``Reply`` carries text, and optionally native ``tool_calls``: the agent runs those directly instead of
parsing the text, so the same ``Agent`` drives a scripted model, a text-JSON model and a real API.
A model that cannot answer raises ``ModelError``; the agent ends the run with ``stop_reason="model_error"``
(or the error's own ``stop_reason``, e.g. ``"context_full"`` when the conversation no longer fits).

Real APIs can also stop *without* a usable answer: they refuse, run out of output tokens, or find the context
window full. A ``Reply`` says so in ``stop``: ``"refused"``, ``"max_tokens"`` or ``"context_full"`` (``None``
is a normal reply), with the provider's own word in ``provider_stop``. ``raw`` holds the provider's assistant
content exactly as it came (e.g. Claude's signed thinking blocks), which the adapter must send back unchanged.
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
        why = self.provider_stop or self.stop
        quoted = " ".join(self.text.split())[:200]   # a refusal's own words help the reader
        return STOPS[self.stop].format(why=why) + (f' It said: "{quoted}".' if self.stop == "refused" and quoted else "")

    @classmethod
    def coerce(cls, value) -> "Reply":
        """Accept a Reply, a plain string, or a dict like {"text": ..., "tool_calls": [{"name", "args"}]}."""
        if isinstance(value, Reply):
            return value
        if isinstance(value, str):
            return cls(text=value)
        if isinstance(value, dict):
            _only(value, _REPLY_KEYS, "a reply")
            if not isinstance(value.get("text", ""), str):
                raise ModelError(f'a reply\'s "text" must be text, not {type(value["text"]).__name__}')
            calls = value.get("tool_calls") or ()
            if not isinstance(calls, (list, tuple)):
                raise ModelError(f'a reply\'s "tool_calls" must be a list of calls, not {type(calls).__name__}')
            calls = tuple(_tool_call(c, i) for i, c in enumerate(calls))
            stop = value.get("stop")
            return cls(text=value.get("text", ""), tool_calls=calls, usage=value.get("usage"), stop=stop,
                       provider_stop=value.get("provider_stop"), thinking=value.get("thinking", ""))
        raise ModelError(f"a model reply must be text, a dict or a Reply, not {type(value).__name__}")


_REPLY_KEYS = ("text", "tool_calls", "usage", "stop", "provider_stop", "thinking")
_CALL_KEYS = ("name", "args", "id")


def _only(value: dict, allowed: tuple, what: str) -> None:
    """A typo in a scripted reply (``"tool"`` for ``"name"``) is a ModelError with a sentence, not a KeyError."""
    unknown = [k for k in value if k not in allowed]
    if unknown:
        raise ModelError(f"{what} has unknown key(s) {', '.join(map(repr, unknown))}; "
                         f"it may have: {', '.join(allowed)}")


def _tool_call(call, i: int) -> ToolCall:
    if isinstance(call, ToolCall):
        return call
    what = f"tool call {i + 1}"
    if not isinstance(call, dict):
        raise ModelError(f'{what} must be a dict like {{"name": "calculator", "args": {{...}}}}, '
                         f"not {type(call).__name__}")
    _only(call, _CALL_KEYS, what)
    if not isinstance(call.get("name"), str):
        raise ModelError(f'{what} needs a "name" naming the tool, e.g. {{"name": "calculator", "args": {{...}}}}')
    args = {} if call.get("args") is None else call["args"]   # args that are not a dict: dispatch says so
    return ToolCall(name=call["name"], args=args, id=call.get("id") or f"call_{i + 1}")


def scrub(value):
    """``value`` with every lone surrogate (half an emoji) replaced by U+FFFD; see ``_scrub``. Data nested so
    deep that it exhausts the stack (a hostile reply) is a ModelError, not a RecursionError."""
    try:
        return _scrub(value)
    except RecursionError:
        raise ModelError("the reply is nested too deeply to read; ask for flatter arguments") from None


def _scrub(value):
    """``value`` with every lone surrogate (half an emoji, e.g. from a JSON ``"\\ud83d"``) replaced by U+FFFD.

    Such text cannot be encoded as UTF-8, so the SDKs and ``json`` writers would raise on it. Pairs that
    belong together become the real character. Works through dicts, lists and tuples; other values pass."""
    if isinstance(value, str):
        return whole(value)
    if isinstance(value, dict):
        return {_scrub(k): _scrub(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_scrub(v) for v in value)
    return value


def _deeper_than(value, limit: int) -> bool:
    """Whether lists and dicts nest more than ``limit`` deep, found level by level (no recursion, so a
    self-containing list or 10,000 levels cannot exhaust the stack)."""
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


TOOL_CHOICES = ("auto", "any", "none")   # or a tool's name: that tool must be called (stage 11)


def checked_choice(choice: str, tools) -> str:
    """``choice`` if it is one of TOOL_CHOICES or the name of one of ``tools``; else a ValueError that says why."""
    if choice in TOOL_CHOICES or (isinstance(choice, str) and choice in (tools or {})):
        return choice
    raise ValueError(f"tool_choice must be one of {', '.join(TOOL_CHOICES)} or the name of a tool given, "
                     f"not {choice!r}" + ("" if tools else " (no tools were given)"))


def ask(model, messages: list[dict], tools=None) -> Reply:
    """One call of any model: an object with ``complete(messages, tools)`` or a function ``f(messages)``."""
    complete = getattr(model, "complete", None)
    raw = complete(messages, tools) if complete else model(messages)
    return Reply.coerce(raw)   # a Reply comes back as it is
