"""``course live-check [anthropic|openai|openai-responses|ollama|all]``: the first thing to run with a new key.

It runs one short scenario against the real API with the course's own ``Agent`` and tools — two tool calls
in one turn (one of them fails on purpose, a division by zero), then a third call, then an answer — and
reports what the provider did: the model ID, the stop reasons it sent, whether parallel calls came, whether
the tool error went back with ``is_error`` and the model carried on, whether thinking blocks made the round
trip (and OpenAI's reasoning items: the APIs reject a follow-up that drops or alters them), tokens, and a cost at *example* prices.

Exit status: 0 when the run finished with an answer, tools ran and the tool error was handled; 1 when the
API or the loop failed; 2 when there is nothing to check against (no key, no Ollama server).
"""
from __future__ import annotations

from dataclasses import dataclass, field

from ..agent import Agent
from ..models.base import ModelError
from ..models.catalog import EXAMPLE_PRICES, OLLAMA_URL
from ..models.providers import PROVIDERS, model_for
from ..models.remote import MissingKeyError
from .plots import usage_data
from .. import default_tools

GOAL = ("Two things at once, please: look up the unit price (topic: 단가) and compute 10/0 with the calculator; "
        "call both tools in the same turn. Then compute 24*7 with the calculator and tell me, in one sentence, "
        "what seven units cost.")


class _Recorder:
    """Wraps a model and keeps every Reply, so the report can say what the provider sent."""

    def __init__(self, model):
        self.model, self.replies = model, []
        self.native_tools = getattr(model, "native_tools", False)
        self.protocol = getattr(model, "protocol", None)   # the Agent talks to the model's own protocol

    def complete(self, messages, tools=None):
        reply = self.model.complete(messages, tools)
        self.replies.append(reply)
        return reply


@dataclass
class LiveReport:
    provider: str
    model: str = ""
    checks: list[tuple[bool, str]] = field(default_factory=list)   # (passed, sentence): these decide the result
    notes: list[str] = field(default_factory=list)                  # information only
    status: int = 0                                                 # 0 compatible, 1 failed, 2 not checked
    api_failed: bool = False                                        # the API call itself failed

    def lines(self) -> list[str]:
        head = f"course live-check {self.provider}" + (f": model {self.model}" if self.model else "")
        body = [f"  {'✓' if ok else '✗'} {text}" for ok, text in self.checks] + [f"  · {n}" for n in self.notes]
        verdict = {0: "compatible: the course's loop works with this model",
                   1: "NOT compatible: see the ✗ lines above", 2: "not checked"}[self.status]
        if self.api_failed:
            verdict = "could not check: the API call failed (see the ✗ line)"
        return [head, *body, f"  result: {verdict}"]


def live_model(provider: str):
    """A real model for ``provider`` (for ``course demo``, ``course eval`` and this check), or a ModelError
    saying what is missing: its key (``MissingKeyError``), or a local Ollama server that answers."""
    if provider == "ollama":
        import urllib.request
        try:   # is a local Ollama server listening? (loopback only, a short timeout)
            urllib.request.urlopen(OLLAMA_URL.rsplit("/v1", 1)[0] + "/api/tags", timeout=2).close()
        except OSError:
            raise ModelError("no Ollama server answers at localhost:11434: install Ollama, run `ollama serve` "
                             "and `ollama pull qwen3:8b` (or set COURSE_OLLAMA_MODEL to a model you have)") from None
    return model_for(provider)


def live_check(provider: str, model=None, max_steps: int = 6) -> LiveReport:
    """Run the scenario once against ``provider`` (or the given model object) and report."""
    report = LiveReport(provider)
    try:
        model = model or live_model(provider)
    except MissingKeyError as e:
        report.notes.append(str(e))
        report.status = 2
        return report
    except ModelError as e:   # no Ollama server
        report.notes.append(str(e))
        report.status = 2
        return report
    report.model = getattr(model, "model", type(model).__name__)
    recorder = _Recorder(model)
    agent = Agent(default_tools(), recorder, max_steps=max_steps)
    agent.run(GOAL)
    replies = recorder.replies
    if agent.stop_reason == "model_error":   # the key, the network or the ID: nothing else can be judged
        report.checks.append((False, f"the API call failed at step {agent.steps}: {agent.answer}"))
        report.notes.append("fix what the line above says, then run `course live-check` again")
        report.status, report.api_failed = 1, True
        return report
    runs = [run for step in agent.trace for run in step.runs]
    errors = [i for i, m in enumerate(agent.history) if m.get("role") == "tool" and m.get("is_error")]
    report.checks.append((agent.stop_reason == "finish",
                          f"the run finished: stop reason {agent.stop_reason} after {agent.steps} step(s)"
                          + ("" if agent.stop_reason == "finish" else f" ({agent.answer})")))
    report.checks.append((bool(runs), "tool calls ran: " + (", ".join(r.tool for r in runs) or "none")))
    went_on = bool(errors) and any(m["role"] == "assistant" for m in agent.history[errors[0]:])
    report.checks.append((went_on, "a tool error went back with is_error and the model carried on" if went_on
                          else "no tool error was sent back and answered (the model skipped 10/0, or stopped)"))
    widest = max((len(r.tool_calls) for r in replies), default=0)
    report.notes.append(f"parallel tool calls in one turn: {'yes, ' + str(widest) if widest > 1 else 'not seen'}"
                        " (models may choose not to; the course handles both)")
    thinking = [b for r in replies[:-1] for b in ((r.raw or {}).get("content") or [])
                if b.get("type") in ("thinking", "redacted_thinking")]
    if provider == "anthropic":
        report.notes.append(f"thinking blocks sent back unchanged and accepted: {len(thinking)}")
    if provider == "openai-responses":
        sent = sum(b.get("type") == "reasoning" for r in replies[:-1] for b in (r.raw or {}).get("content") or [])
        report.notes.append(f"reasoning items sent back unchanged and accepted: {sent}")
    seen = [r.provider_stop or ("tool_calls" if r.tool_calls else "stop") for r in replies]
    report.notes.append("stop reasons seen: " + (", ".join(seen) or "none"))
    if agent.stop_reason == "finish":
        report.notes.append(f"answer: {' '.join(agent.answer.split())[:200]}")
    rows = usage_data(agent)   # at EXAMPLE_PRICES, as the plots; cached input tokens counted in, at their rates
    tokens_in, tokens_out = sum(r["input_tokens"] for r in rows), sum(r["output_tokens"] for r in rows)
    cached = sum(u.get("cache_read_input_tokens") or 0 for u in agent.usage)
    cost = rows[-1]["cumulative_cost"] if rows else 0.0
    report.notes.append(f"tokens: {tokens_in:,} in" + (f" ({cached:,} read from the prompt cache)" if cached else "")
                        + f", {tokens_out:,} out; about ${cost:.4f} at "
                        f"EXAMPLE prices (${EXAMPLE_PRICES['input']:.2f} / ${EXAMPLE_PRICES['output']:.2f} per "
                        "million tokens in / out), not your provider's price list")
    report.status = 0 if all(ok for ok, _ in report.checks) else 1
    return report


def cmd_live_check(args) -> int:
    """Check each provider asked for; ``all`` checks every one that is set up and skips the others."""
    providers = PROVIDERS if args.provider == "all" else (args.provider,)
    statuses = []
    for provider in providers:
        report = live_check(provider)
        print("\n".join(report.lines()), flush=True)
        statuses.append(report.status)
    if all(s == 2 for s in statuses):
        what = {"anthropic": "set ANTHROPIC_API_KEY", "openai": "set OPENAI_API_KEY",
                "openai-responses": "set OPENAI_API_KEY", "ollama": "start Ollama (`ollama serve`)"}
        print(f"Nothing was checked: {' or '.join(dict.fromkeys(what[p] for p in providers))}, then run it again.")
        return 2
    return 1 if 1 in statuses else 0
