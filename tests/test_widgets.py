"""The stepper widget, driven through its button click handlers, shows the state of the loop."""
import pytest

pytest.importorskip("ipywidgets")   # part of the course extra; a clear skip reason if someone trims them

from course_lib import default_tools
from course_lib.agent import Agent
from course_lib.courseware.scenarios import scenario_model
from course_lib.models import ScriptedModel
from course_lib.courseware.widgets import AgentStepper


@pytest.fixture
def stepper():
    goal, model = scenario_model("price")
    return AgentStepper(Agent(default_tools(), model), goal)


def test_a_new_stepper_shows_the_goal_and_no_step(stepper):
    s = stepper.state()
    assert s["step"] == 0 and not s["done"] and s["tool_calls"] == []
    assert [role for role, _ in s["messages"]] == ["system", "user"]
    assert "step 0 / 6" in stepper.status.value and not stepper.step_button.disabled


def test_clicking_step_twice_shows_two_steps_and_the_last_tool_call(stepper):
    stepper.step_button.click()
    stepper.step_button.click()
    s = stepper.state()
    assert s["step"] == 2
    assert s["tool_calls"] == ['calculator({"expression": "24*7"})']
    assert s["observations"] == [("168", False)]
    assert "```json" in s["last_reply"]
    assert len(s["messages"]) == 6
    assert "step 2 / 6" in stepper.status.value and "calculator" in stepper.details.value
    assert repr(stepper) == "AgentStepper(step 2/6, 6 messages, done=False)"


def test_the_step_count_changes_last_so_a_browser_never_shows_a_new_count_beside_an_old_call(stepper):
    """The browser applies widget updates in the order they are sent; a test in JupyterLab read the call of step 1
    beside "step 2 / 6" when the count was sent first."""
    sent = []
    for name in ("status", "details", "messages", "arriving"):
        getattr(stepper, name).observe(lambda change, name=name: sent.append(name), names="value")
    stepper.step_button.click()
    assert sent and sent[-1] == "status" and "details" in sent


def test_errors_are_highlighted(stepper):
    for _ in range(3):
        stepper.step_button.click()
    assert stepper.state()["observations"][0][1] is True
    assert "color:var(--jp-error-color1, #c62828)" in stepper.details.value and "discount" in stepper.details.value


def test_run_to_end_then_reset_starts_the_script_again(stepper):
    stepper.run_button.click()
    s = stepper.state()
    assert s["done"] and s["stop_reason"] == "finish" and s["step"] == 4 and "168" in s["answer"]
    assert stepper.step_button.disabled and stepper.run_button.disabled
    stepper.step_button.click()                       # a finished run stays finished
    assert stepper.state()["step"] == 4
    stepper.reset_button.click()
    assert stepper.state()["step"] == 0 and not stepper.step_button.disabled
    stepper.run_button.click()
    assert stepper.state()["stop_reason"] == "finish"  # the scripted model started over


def test_the_stepper_shows_native_tool_calls_and_model_errors():
    from course_lib.models import Reply, ToolCall
    model = ScriptedModel([Reply("two at once", (ToolCall("lookup", {"topic": "단가"}, "a"),
                                                 ToolCall("calculator", {"expression": "1/0"}, "b")))],
                          native_tools=True)
    stepper = AgentStepper(Agent(default_tools(), model), "x")
    stepper.step()
    s = stepper.state()
    assert len(s["tool_calls"]) == 2 and s["observations"][1][1] is True
    assert s["messages"][-1][0] == "tool"
    stepper.step()                                     # the script has run out
    s = stepper.state()
    assert s["stop_reason"] == "model_error" and "ran out" in s["problem"]
    assert "color:var(--jp-error-color1, #c62828)" in stepper.details.value


def test_the_widget_displays_with_a_stable_text_form_that_says_where_the_buttons_are(stepper):
    """A saved notebook keeps only the text form: opened before its cell runs, it must not leave a learner looking
    for a Step button the lesson's text mentions (issue 30)."""
    bundle = stepper._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert bundle["text/plain"] == ("AgentStepper(step 0/6, 2 messages, done=False)\n"
                                    "(run this cell to get the stepper's buttons)")


def test_the_stepper_drives_a_real_adapter_too():
    """The same widget over AnthropicModel and the real SDK, against the local stand-in server."""
    from course_lib.models.anthropic import AnthropicModel
    from course_lib.courseware.standin import StandInServer
    script = [{"tool_calls": [{"name": "lookup", "args": {"topic": "단가"}}]}, {"text": "Seven units cost $168."}]
    with StandInServer(script) as server:
        stepper = AgentStepper(Agent(default_tools(), AnthropicModel(base_url=server.url, api_key="stand-in")),
                               "How much do seven units cost?")
        stepper.step_button.click()
        assert stepper.state()["tool_calls"] == ['lookup({"topic": "단가"})']
        assert stepper.state()["messages"][-1] == ("tool", "개당 $24")
        stepper.run_button.click()
    assert stepper.state()["answer"] == "Seven units cost $168." and stepper.state()["stop_reason"] == "finish"


def test_a_streaming_model_shows_its_text_as_it_arrives_in_the_stepper():
    """stream=True: the stepper takes the model's on_text and shows each piece while the step runs."""
    from course_lib.models.openai import OpenAIModel
    from course_lib.courseware.standin import StandInServer
    script = [{"text": "Looking it up.", "tool_calls": [{"name": "lookup", "args": {"topic": "단가"}}]},
              {"text": "Seven units cost $168 (일곱 개)."}]
    seen = []
    with StandInServer(script) as server:
        model = OpenAIModel(base_url=server.url + "/v1", api_key="stand-in", stream=True)
        stepper = AgentStepper(Agent(default_tools(), model), "How much do seven units cost?")
        stepper.arriving.observe(lambda change: seen.append(change["new"]), "value")
        stepper.step_button.click()
        assert stepper.state()["arrived"] == "Looking it up." and "Looking it up." in stepper.arriving.value
        stepper.step_button.click()
    assert stepper.state()["arrived"] == "Seven units cost $168 (일곱 개)."
    pieces = [v for v in seen if v.startswith("<b>arriving</b>")]
    assert len(pieces) >= 4 and pieces[0] != pieces[-1], seen   # shown piece by piece, not all at once at the end
    stepper.reset_button.click()
    assert stepper.arriving.value == "" and stepper.state()["arrived"] == ""


def test_a_stepper_shows_the_text_beside_a_models_own_on_text_and_a_second_stepper_shows_it_too():
    from course_lib.models.openai import OpenAIModel
    from course_lib.courseware.standin import StandInServer
    mine = []
    with StandInServer(["First answer, streamed.", "Second answer, streamed."]) as server:
        model = OpenAIModel(base_url=server.url + "/v1", api_key="stand-in", stream=True, on_text=mine.append)
        AgentStepper(Agent(default_tools(), model), "goal").step()        # a first stepper, left behind
        second = AgentStepper(Agent(default_tools(), model), "goal")      # the cell run again
        second.step()
    assert second.state()["arrived"] == "Second answer, streamed." and "streamed" in second.arriving.value
    assert "".join(mine) == "First answer, streamed.Second answer, streamed." and model.on_text == mine.append


def test_a_broken_stream_is_shown_as_a_failed_step_not_as_text_that_arrived():
    from course_lib.models.openai import OpenAIModel
    from course_lib.courseware.standin import StandInServer
    with StandInServer([{"text": "A long answer that never ends", "stream_cut": 3}]) as server:
        stepper = AgentStepper(Agent(default_tools(), OpenAIModel(base_url=server.url + "/v1", api_key="stand-in",
                                                                   stream=True, max_retries=0)), "goal")
        stepper.step()
    assert stepper.state()["stop_reason"] == "model_error" and "then the step failed" in stepper.arriving.value


def test_the_messages_the_last_click_added_are_marked_new(stepper):
    stepper.step()
    assert stepper.state()["new_from"] == 2
    items = stepper.messages.value.split("<li")[1:]
    assert [">new</b>" in item for item in items] == [False, False, True, True]
    stepper.step()
    items = stepper.messages.value.split("<li")[1:]
    assert [">new</b>" in item for item in items] == [False] * 4 + [True, True]
    stepper.reset()
    assert ">new</b>" not in stepper.messages.value and stepper.state()["new_from"] == 2


def test_a_long_message_opens_to_its_whole_text(stepper):
    system = stepper.agent.history[0]["content"]
    assert len(system) > 60
    html_text = stepper.messages.value
    assert "<details>" in html_text and "</summary>" in html_text
    import html
    assert html.escape(system) in html_text   # the whole system prompt, one click away
    assert "<details>" not in html_text.split("<li")[2]   # the short goal needs no click


def test_colours_come_from_the_theme(stepper):
    stepper.step()
    shown = stepper.messages.value + stepper.details.value
    assert "var(--jp-" in shown and "#1f5fa8'" not in shown
    assert "white-space:nowrap" in stepper.details.value   # labels stay on one line


# -- peek: a long output folded to its first lines, the rest one click away ------------------------------
from course_lib.courseware.widgets import peek   # noqa: E402


def test_peek_keeps_a_short_text_whole():
    bundle = peek("one\ntwo\nthree")._repr_mimebundle_()
    assert bundle["text/plain"] == "one\ntwo\nthree"


def test_peek_shows_the_first_lines_and_says_how_many_more_there_are():
    text = "\n".join(f"line {i}" for i in range(1, 31))
    plain = peek(text, lines=5)._repr_mimebundle_()["text/plain"].splitlines()
    assert plain[:5] == ["line 1", "line 2", "line 3", "line 4", "line 5"] and len(plain) == 6
    assert plain[-1].startswith("… 25 more lines")


def test_peek_html_opens_to_the_whole_escaped_text():
    text = "\n".join(["<b>&</b>"] + [f"line {i}" for i in range(30)])
    page = peek(text, title="log")._repr_mimebundle_()["text/html"]
    first, folded = page.split("<details>")
    assert "line 10" in first and "line 11" not in first   # the first 12 lines show without a click
    assert folded.startswith("<summary>… 19 more lines (log: 31 lines): click to show</summary>")
    assert "line 11" in folded and "line 29" in folded and page.endswith("</pre></details>")
    assert "&lt;b&gt;&amp;&lt;/b&gt;" in page and "<b>" not in page


def test_peek_pretty_prints_a_dict_as_json_and_names_its_keys_keeping_korean():
    data = {"model": "m", "messages": [{"role": "user", "content": "일곱 개 사면 얼마예요?"}]}
    p = peek(data, lines=3, title="request body")
    bundle = p._repr_mimebundle_()
    assert bundle["text/plain"].splitlines()[:3] == ["{", '  "model": "m",', '  "messages": [']
    assert "(request body: 9 lines, keys model, messages): click to show</summary>" in bundle["text/html"]
    assert "일곱 개 사면 얼마예요?" in bundle["text/html"] and "\\u" not in p.text


def test_peek_wraps_a_long_line_at_spaces_as_say_does_and_counts_the_lines_shown():
    from course_lib.courseware.printing import WIDTH, columns, wrap
    line = "    The model call failed: " + "a rejected key, " * 15
    rows = wrap(line)
    assert len(rows) == 3 and all(row.startswith("        ") for row in rows[1:])   # say's hanging indent
    shown = peek(line + "\nshort", lines=2)._repr_mimebundle_()["text/plain"].splitlines()
    assert shown[:2] == rows[:2] and all(columns(row) <= WIDTH for row in shown[:2])
    assert shown[2].startswith("… 2 more lines") and len(shown) == 3   # the third row and "short"
