"""Lesson 10's lab: one long, dull run (a balance worked out a month per calculator call), run three ways —
with no trimming, with a window of the last steps, and summarised — to see what each sends per call. The
numbers behind ``plots.memory_plot`` and the README's "Stage 10 in numbers". A scripted model and a scripted
summariser (the same note every time): no model is asked anything."""
from __future__ import annotations

from ..agent import Agent
from ..control import estimate_tokens
from ..memory import run_with_memory, summarise, trim_window
from ..models.anthropic import AnthropicModel
from ..models.scripted import ScriptedModel
from ..tools import calculator
from .plots import call_costs
from .standin import StandInServer


def savings_run(months: int = 29) -> tuple[str, ScriptedModel]:
    """A long, dull task: a balance worked out one month per calculator call (1% a month, whole won), then
    the answer: ``months + 1`` model calls."""
    balance, replies = 1_000_000, []
    for month in range(1, months + 1):
        replies.append({"tool_calls": [{"id": f"month_{month}", "name": "calculator",
                                        "args": {"expression": f"{balance} + {balance} // 100"}}]})
        balance += balance // 100
    replies.append(f"After {months} months the balance is {balance:,} won ({months}개월 후 잔액: {balance:,}원).")
    goal = (f"1,000,000원을 월 1% 복리로 {months}개월 맡기면? Work it out one month at a time with the calculator, "
            "rounding the interest down to whole won.")
    return goal, ScriptedModel(replies, native_tools=True)


def _note_taker(messages: list[dict]) -> str:   # a scripted summariser: the same note every time
    return "Each month so far was one calculator call, balance + balance // 100; the newest balance is below."


def context_growth_data(steps: int = 30, keep_last: int = 4, summary_over: int = 800) -> dict[str, list[int]]:
    """Estimated input tokens of each model call in the same ``steps``-call run: with no trimming, with a
    window of ``keep_last`` steps, and summarised (keeping ``keep_last``) whenever it grows past
    ``summary_over`` (the summariser's own calls not counted). The numbers behind ``plots.memory_plot``."""
    modes = {"no trimming": None,
             "window": lambda h: trim_window(h, keep_last=keep_last),
             "summary": lambda h: summarise(h, _note_taker, keep_last=keep_last)
             if estimate_tokens(h) > summary_over else h}
    data = {}
    for mode, shrink in modes.items():
        goal, model = savings_run(steps - 1)
        run_with_memory(Agent({"calculator": calculator}, model, max_steps=steps), goal, shrink)
        data[mode] = [estimate_tokens(sent) for sent in model.calls]
    return data


class CachedAnthropic(AnthropicModel):
    """Automatic prompt caching: the adapter's request with one more field, a top-level ``cache_control``."""
    def request(self, messages, tools=None, tool_choice=None):
        return {**super().request(messages, tools, tool_choice), "cache_control": {"type": "ephemeral"}}


def caching_data(steps: int = 30, keep_last: int = 4) -> dict[str, list[dict]]:
    """Each call's usage and cost (example prices, as stage 09's ``Budget`` counts them) in the same
    ``steps``-call run through the Anthropic SDK and the stand-in: not cached, cached (automatic caching), and
    cached with a window of ``keep_last`` steps. The stand-in's prompt cache is the docs' rules, not a model."""
    ways = {"not cached": (AnthropicModel, None), "cached": (CachedAnthropic, None),
            "cached + window": (CachedAnthropic, lambda h: trim_window(h, keep_last=keep_last))}
    data = {}
    for way, (kind, shrink) in ways.items():
        goal, script = savings_run(steps - 1)
        turns = [{"tool_calls": [{k: c[k] for k in ("name", "args")} for c in r["tool_calls"]]} if isinstance(r, dict)
                 else r for r in script.replies]   # the stand-in gives each call its own id
        with StandInServer(turns) as server:
            agent = Agent({"calculator": calculator}, kind(base_url=server.url, api_key="sk-standin"),
                          max_steps=steps)
            run_with_memory(agent, goal, shrink)
        usages = [step.usage for step in agent.trace]
        data[way] = [{"cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, **usage, "cost": call["cost"]}
                     for usage, call in zip(usages, call_costs(usages))]
    return data
