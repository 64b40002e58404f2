"""Pictures of a run: the messages array growing, tokens and cost per step, and the tool calls over time; and of
an evaluation (stage 12): the pass rate per model or scripted stand-in, and cost against pass rate.

Each plot has a ``*_data`` function that returns plain data (what tests check) and a function that draws
it and returns the matplotlib ``Figure`` (explicit size, labelled axes, no machine paths). matplotlib is
imported only when a figure is drawn, never by ``import course_lib``.
"""
from __future__ import annotations

from itertools import accumulate
from types import SimpleNamespace

from ..control import Budget
from ..models.catalog import EXAMPLE_PRICES   # not any provider's price list: pass yours to `usage_plot`


def _calls(history: list[dict]) -> list[list[dict]]:
    """The history as it stood at each model call: everything before each assistant message."""
    return [history[:i] for i, m in enumerate(history) if m["role"] == "assistant"]


def growth_data(agent) -> list[dict]:
    """Per model call: the call number, how many messages were sent, and how many characters they held."""
    return [{"call": n, "messages": len(sent), "characters": sum(len(str(m.get("content") or "")) for m in sent)}
            for n, sent in enumerate(_calls(agent.history), 1)]


def call_costs(usages: list[dict], prices: dict | None = None) -> list[dict]:
    """Each model call's reported ``usage`` as stage 09's ``Budget`` counts it: its input tokens (those read from
    or written to a prompt cache included), its output tokens, and its cost in dollars (example prices)."""
    budget = Budget(max_cost=1.0, prices=prices or EXAMPLE_PRICES)
    return [budget.spent(SimpleNamespace(model=None, history=[], trace=[SimpleNamespace(usage=u, runs=[], reply="")]))
            for u in usages]   # a run that is this one call


def usage_data(agent, prices: dict | None = None) -> list[dict]:
    """Per step: the input tokens sent (cached ones included) and the output tokens, as reported, and the running
    cost estimate in dollars (``call_costs``)."""
    calls = call_costs(agent.usage, prices)
    return [{"step": n, "input_tokens": c["input_tokens"], "output_tokens": c["output_tokens"],
             "cumulative_cost": round(total, 8)}
            for n, (c, total) in enumerate(zip(calls, accumulate(c["cost"] for c in calls)), 1)]


def timeline_data(agent) -> list[dict]:
    """One row per tool call: the step it happened in, the tool, and whether it failed."""
    return [{"step": step.number, "tool": run.tool, "is_error": run.observation.is_error}
            for step in agent.trace for run in step.runs]


def _figure(width: float = 7.0, height: float = 3.2):
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(width, height), dpi=100, layout="constrained")
    return fig, ax


def _line_on_right(fig, ax, x, y, *, color: str, label: str, ylabel: str, title: str):
    """A line on a second y axis (with headroom, so the last point is not cut), the title, one legend below."""
    right = ax.twinx()
    right.plot(x, y, color=color, marker="o", label=label)
    right.set_ylabel(ylabel)
    right.set_ylim(0, max(y, default=0) * 1.12 or 1)
    ax.set_title(title)
    fig.legend(loc="outside lower center", ncols=3, frameon=False)
    return fig


def growth_plot(agent, title: str = "The messages array only grows"):
    """Messages sent per model call (bars) and their characters (line): the agent's whole memory."""
    data = growth_data(agent)
    fig, ax = _figure()
    calls = [d["call"] for d in data]
    ax.bar(calls, [d["messages"] for d in data], color="#4c72b0", label="messages sent")
    ax.set_xlabel("model call")
    ax.set_ylabel("messages sent")
    ax.set_xticks(calls)
    return _line_on_right(fig, ax, calls, [d["characters"] for d in data], color="#dd8452",
                          label="characters sent", ylabel="characters sent", title=title)


def usage_plot(agent, prices: dict | None = None, title: str = "Tokens per step and cost so far"):
    """Input/output tokens per step (stacked bars) and the cumulative cost estimate (line)."""
    data = usage_data(agent, prices)
    fig, ax = _figure()
    steps = [d["step"] for d in data]
    inputs = [d["input_tokens"] for d in data]
    ax.bar(steps, inputs, color="#4c72b0", label="input tokens")
    ax.bar(steps, [d["output_tokens"] for d in data], bottom=inputs, color="#55a868", label="output tokens")
    ax.set_xlabel("step")
    ax.set_ylabel("tokens")
    ax.set_xticks(steps)
    return _line_on_right(fig, ax, steps, [d["cumulative_cost"] for d in data], color="#c44e52",
                          label="cumulative cost (USD, estimate)", ylabel="cumulative cost (USD)", title=title)


def memory_plot(data: dict[str, list[int]], title: str = "Tokens sent per model call",
                ylabel: str = "input tokens (estimate)"):
    """One line per way of handling memory: estimated input tokens of each call (``memory.context_growth_data``),
    or another number per call named by ``ylabel``."""
    fig, ax = _figure()
    for mode, tokens in data.items():
        ax.plot(range(1, len(tokens) + 1), tokens, marker=".", label=mode)
    ax.set(xlabel="model call", ylabel=ylabel, ylim=(0, None), title=title)
    fig.legend(loc="outside lower center", ncols=max(len(data), 1), frameon=False)
    return fig


def timeline_plot(agent, title: str = "Tool calls per step"):
    """Each tool call as a mark at (step, tool); failed calls are red crosses."""
    data = timeline_data(agent)
    tools = list(dict.fromkeys(d["tool"] for d in data))   # first-seen order, stable
    fig, ax = _figure(height=max(2.2, 0.6 * len(tools) + 1.4))
    # Parallel calls of one tool in one step sit side by side instead of on top of each other.
    same = {}
    for d in data:
        same.setdefault((d["step"], d["tool"]), []).append(d)
    x = {id(d): d["step"] + (k - (len(group) - 1) / 2) * 0.15 for group in same.values() for k, d in enumerate(group)}
    for failed, marker, color, label in ((False, "o", "#4c72b0", "ok"), (True, "X", "#c44e52", "error")):
        rows = [d for d in data if d["is_error"] is failed]
        if rows:
            ax.scatter([x[id(d)] for d in rows], [tools.index(d["tool"]) for d in rows], marker=marker,
                       s=120, color=color, label=label, zorder=3)
    ax.set_yticks(range(len(tools)), tools)
    ax.set_ylim(max(len(tools), 1) - 0.5, -0.5)   # first tool used at the top; an empty run still draws
    ax.set_xlabel("step")
    steps = sorted({d["step"] for d in data}) or [1]
    ax.set_xticks(range(1, max(steps) + 1))
    ax.set_xlim(0.5, max(steps) + 0.5)
    ax.grid(axis="x", alpha=0.3)
    ax.set_title(title)
    if data:
        fig.legend(loc="outside lower center", ncols=2, frameon=False)
    return fig


def attack_plot(rates: list[dict], title: str = "Prompt injections that landed, per defence"):
    """Bars per defence and model: the share of attacks that landed, labelled n/N
    (``course_lib.courseware.injection_lab.success_rates``)."""
    defences, models = (list(dict.fromkeys(r[key] for r in rates)) for key in ("defence", "model"))
    fig, ax = _figure()
    for k, model in enumerate(models):   # the models' bars side by side within each defence, each labelled "n/N"
        mine, width = {r["defence"]: r for r in rates if r["model"] == model}, 0.8 / len(models)
        bars = ax.bar([i + (k - (len(models) - 1) / 2) * width for i in range(len(defences))],
                      [100 * mine[d]["rate"] if d in mine else 0 for d in defences], width, label=f"{model} reader",
                      color=("#c44e52", "#4c72b0", "#55a868", "#8172b2")[k % 4])
        ax.bar_label(bars, [f"{mine[d]['landed']}/{mine[d]['attacks']}" if d in mine else "" for d in defences],
                     fontsize=8)   # a 0 % bar is invisible: its label still says 0/9
    ax.set(xticks=range(len(defences)), xticklabels=defences, ylabel="attacks that landed (%)", ylim=(0, 112),
           title=title)
    fig.legend(loc="outside lower center", ncols=max(len(models), 1), frameon=False)
    return fig


_COLORS = ("#4c72b0", "#dd8452", "#c44e52", "#55a868", "#8172b2")


def pass_rate_plot(summaries: dict[str, dict], title: str = "Runs passed, per model or stand-in"):
    """One bar per model or stand-in: its pass rate (``evaluation.summarise``), labelled passed/runs (0/18 too)."""
    models = list(summaries)
    fig, ax = _figure()
    bars = ax.bar(range(len(models)), [100 * summaries[m]["pass_rate"] for m in models],
                  color=[_COLORS[k % len(_COLORS)] for k in range(len(models))])
    ax.bar_label(bars, [f"{summaries[m]['passed']}/{summaries[m]['runs']}" for m in models])
    ax.set(xticks=range(len(models)), xticklabels=models, xlabel="model or stand-in", ylabel="runs passed (%)",
           ylim=(0, 112), title=title)
    return fig


def cost_plot(summaries: dict[str, dict], title: str = "Cost against how often it passes, per model or stand-in"):
    """One labelled point per model or stand-in: the suite's cost at the example prices against its pass rate."""
    fig, ax = _figure()
    for k, (model, s) in enumerate(summaries.items()):
        ax.scatter(s["cost"], 100 * s["pass_rate"], s=80, color=_COLORS[k % len(_COLORS)], zorder=3)
        ax.annotate(model, (s["cost"], 100 * s["pass_rate"]), xytext=(7, 5), textcoords="offset points")
    ax.set(xlabel="cost of all its runs (USD, at example prices)", ylabel="runs passed (%)",
           xlim=(0, 1.25 * max((s["cost"] for s in summaries.values()), default=0) or 1), ylim=(-6, 112), title=title)
    ax.grid(alpha=0.3)
    return fig
