"""The data behind each figure, and that each figure renders to PNG."""
import io

import pytest

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

from course_lib import default_tools  # noqa: E402
from course_lib.agent import Agent  # noqa: E402
from course_lib.courseware.scenarios import scenario_model  # noqa: E402
from course_lib.models import Reply, ScriptedModel, ToolCall  # noqa: E402
from course_lib.courseware.plots import (growth_data, growth_plot, timeline_data, timeline_plot, usage_data,  # noqa: E402
                              usage_plot)


@pytest.fixture
def price_run():
    goal, model = scenario_model("price")
    agent = Agent(default_tools(), model)
    agent.run(goal)
    return agent


@pytest.fixture
def usage_run():
    model = ScriptedModel([
        Reply("", (ToolCall("lookup", {"topic": "단가"}, "a"),), {"input_tokens": 1000, "output_tokens": 50}),
        Reply("", (ToolCall("calculator", {"expression": "1/0"}, "b"),), {"input_tokens": 1200, "output_tokens": 40}),
        Reply("done", (), {"input_tokens": 1500, "output_tokens": 20})], native_tools=True)
    agent = Agent(default_tools(), model)
    agent.run("x")
    return agent


def png_bytes(fig) -> bytes:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png")
    matplotlib.pyplot.close(fig)
    return buffer.getvalue()


def test_growth_data_counts_what_each_call_sent(price_run):
    data = growth_data(price_run)
    assert [d["messages"] for d in data] == [2, 4, 6, 8]
    chars = [d["characters"] for d in data]
    assert chars == sorted(chars) and chars[0] > 100     # the system prompt is in every call


def test_usage_data_sums_tokens_and_cost(usage_run):
    data = usage_data(usage_run, prices={"input": 2.0, "output": 10.0})
    assert [d["input_tokens"] for d in data] == [1000, 1200, 1500]
    assert data[-1]["cumulative_cost"] == pytest.approx((3700 * 2.0 + 110 * 10.0) / 1e6)
    assert [d["cumulative_cost"] for d in data] == sorted(d["cumulative_cost"] for d in data)


def test_timeline_data_marks_errors(price_run, usage_run):
    assert timeline_data(price_run) == [{"step": 1, "tool": "lookup", "is_error": False},
                                        {"step": 2, "tool": "calculator", "is_error": False},
                                        {"step": 3, "tool": "lookup", "is_error": True}]
    assert [d["is_error"] for d in timeline_data(usage_run)] == [False, True]


@pytest.mark.parametrize("draw", [growth_plot, timeline_plot])
def test_figures_render_to_png_with_labels(price_run, draw):
    fig = draw(price_run)
    ax = fig.axes[0]
    assert ax.get_title() and ax.get_xlabel()
    assert tuple(fig.get_size_inches())[0] == 7.0
    assert png_bytes(fig).startswith(b"\x89PNG")


def test_usage_plot_renders(usage_run):
    fig = usage_plot(usage_run)
    assert "cost" in fig.axes[1].get_ylabel() and png_bytes(fig).startswith(b"\x89PNG")


def test_an_empty_run_still_draws(price_run):
    agent = Agent(default_tools(), ScriptedModel([]))
    agent.run("x")
    for draw in (growth_plot, usage_plot, timeline_plot):
        assert png_bytes(draw(agent)).startswith(b"\x89PNG")


# ---------------------------------------------------------------- stage 12: the evaluation figures
@pytest.fixture(scope="module")
def summaries():
    from course_lib.courseware.eval_lab import SCRIPTED
    from course_lib.evaluation import load_tasks, run_suite, summarise
    tasks = load_tasks()
    return {name: summarise(run_suite(tasks, make)) for name, make in SCRIPTED.items()}


def test_pass_rate_plot_has_a_bar_per_model_labelled_n_of_n(summaries):
    from course_lib.courseware.plots import pass_rate_plot
    fig = pass_rate_plot(summaries)
    ax = fig.axes[0]
    heights = [round(bar.get_height(), 6) for bar in ax.patches]
    assert heights == [100.0, round(100 * 10 / 18, 6), 0.0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["careful", "sloppy", "looping"]
    assert [t.get_text() for t in ax.texts] == ["18/18", "10/18", "0/18"]   # the empty bar still says 0/18
    assert ax.get_title() == "Runs passed, per model or stand-in" and ax.get_xlabel() == "model or stand-in"
    assert "passed (%)" in ax.get_ylabel()
    assert tuple(fig.get_size_inches()) == (7.0, 3.2) and png_bytes(fig).startswith(b"\x89PNG")


def test_cost_plot_has_one_labelled_point_per_model(summaries):
    from course_lib.courseware.plots import cost_plot
    fig = cost_plot(summaries)
    ax = fig.axes[0]
    points = [tuple(c.get_offsets()[0]) for c in ax.collections]
    assert [(round(x, 6), round(y, 6)) for x, y in points] == [
        (round(s["cost"], 6), round(100 * s["pass_rate"], 6)) for s in summaries.values()]
    assert [t.get_text() for t in ax.texts] == ["careful", "sloppy", "looping"]
    assert [t.xy for t in ax.texts] == [(s["cost"], 100 * s["pass_rate"]) for s in summaries.values()]
    assert summaries["looping"]["cost"] > summaries["careful"]["cost"]   # running to the cap costs more, for nothing
    assert ax.get_xlim()[1] > max(s["cost"] for s in summaries.values())   # no point sits on the edge
    assert "USD" in ax.get_xlabel() and "example prices" in ax.get_xlabel()
    assert ax.get_title() == "Cost against how often it passes, per model or stand-in"   # the stand-ins are not models
    assert png_bytes(fig).startswith(b"\x89PNG")


def test_evaluation_plots_draw_with_no_runs_at_all():
    from course_lib.courseware.plots import cost_plot, pass_rate_plot
    for draw in (pass_rate_plot, cost_plot):
        assert png_bytes(draw({})).startswith(b"\x89PNG")
