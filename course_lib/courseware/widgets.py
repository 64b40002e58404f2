"""Notebook widgets (ipywidgets 8): watch the loop step by step, and approve or deny a file write.

``AgentStepper(agent, goal)`` shows Step / Run to end / Reset buttons, the step count, the model's last
reply, the tool call it made, the observation (errors in red) and the messages array as it grows: the
messages the last click added are marked *new*, and a long one opens to its whole text. A model that streams
(``stream=True``, stage 08) shows its text as it arrives, piece by piece, while a step runs. Colours come from
JupyterLab's theme variables, so they read in the light and the dark theme. It
works with any model the ``Agent`` takes: scripted ones and the real adapters. ``ask_with_buttons`` is the
notebook policy of ``course_lib.courseware.approval.ApprovalGate``: it shows Approve / Deny and waits for a click.

Imported only where used: ``import course_lib`` never loads ipywidgets.
"""
from __future__ import annotations

import html
import json
import time

import ipywidgets as w

from .printing import clip, wrap

# JupyterLab's theme variables, so the colours read well in the light and the dark theme alike.
ROLE_COLOURS = {"system": "var(--jp-ui-font-color2, #888)", "user": "var(--jp-info-color0, #1f5fa8)",
                "assistant": "var(--jp-success-color0, #2e7d32)", "tool": "var(--jp-warn-color0, #8e5a00)"}
ERROR = "var(--jp-error-color1, #c62828)"
NEW = "var(--jp-brand-color1, #1976d2)"


class AgentStepper:
    """Step through ``agent.run(goal)`` one model call at a time."""

    def __init__(self, agent, goal: str):
        self.agent, self.goal = agent, goal
        self.step_button = w.Button(description="Step", button_style="primary", icon="step-forward")
        self.run_button = w.Button(description="Run to end", icon="fast-forward")
        self.reset_button = w.Button(description="Reset", icon="undo")
        self.step_button.on_click(lambda _: self.step())
        self.run_button.on_click(lambda _: self.run_to_end())
        self.reset_button.on_click(lambda _: self.reset())
        self.status = w.HTML()
        self.arriving = w.HTML()   # a streaming model's text, as it arrives
        self._arrived = ""
        self.details = w.HTML()
        self.messages = w.HTML()
        self.box = w.VBox([w.HBox([self.step_button, self.run_button, self.reset_button]), self.status,
                           self.arriving, self.details, w.HTML("<b>messages array</b>"), self.messages])
        self.reset()

    # -- actions (the buttons call these; tests and notebooks may too) -------------------------------
    def _steps(self, until_done: bool) -> None:
        """One step, or all of them, a streaming model's text shown as it arrives (its own on_text still called)."""
        self._new_from, self._arrived, model = len(self.agent.history), "", self.agent.model
        own = getattr(model, "on_text", None)

        def arrive(piece: str) -> None:
            self._arrived += piece
            self.arriving.value = f"<b>arriving</b> {html.escape(self._arrived)}"
            if own is not None:
                own(piece)
        if getattr(model, "stream", False):
            model.on_text = arrive
        try:
            while not self.agent.done:
                self.agent.step()
                if not until_done:
                    break
        finally:
            if getattr(model, "stream", False):
                model.on_text = own
        self.refresh()

    def step(self) -> None:
        self._steps(until_done=False)   # what this click adds is marked "new"

    def run_to_end(self) -> None:
        self._steps(until_done=True)

    def reset(self) -> None:
        restart = getattr(self.agent.model, "restart", None)
        if callable(restart):   # a scripted model starts its script again
            restart()
        self.agent.reset(self.goal)
        self._new_from, self._arrived = len(self.agent.history), ""
        self.refresh()

    # -- what is shown ----------------------------------------------------------------------------
    def state(self) -> dict:
        """What the widget shows, as plain data (tests and nbval compare this, not the pixels)."""
        last = self.agent.trace[-1] if self.agent.trace else None
        calls = [f"{r.tool}({json.dumps(r.args, ensure_ascii=False)})" for r in last.runs] if last else []
        observations = [(r.observation.content, r.observation.is_error) for r in last.runs] if last else []
        return {"step": self.agent.steps, "max_steps": self.agent.max_steps, "done": self.agent.done,
                "stop_reason": self.agent.stop_reason, "last_reply": last.reply if last else "",
                "thought": getattr(last, "thought", None),   # why the model acted, if it said (stage 11)
                "tool_calls": calls, "observations": observations, "problem": last.error if last else None,
                "answer": self.agent.answer, "new_from": self._new_from,   # the last click added messages[new_from:]
                "arrived": self._arrived,   # a streaming model's text, as it arrived during the last click
                "messages": [(m["role"], clip(m.get("content"), 60)) for m in self.agent.history]}

    def refresh(self) -> None:
        s = self.state()
        where = "finished" if s["done"] else "ready"
        said = "streamed" if not s["problem"] else "streamed, then the step failed"   # a broken stream's part
        self.arriving.value = f"<b>{said}</b> {html.escape(s['arrived'])}" if s["arrived"] else ""
        rows = [("thought", f"<i>{html.escape(clip(s['thought'], 300))}</i>")] if s["thought"] else []
        rows += [("model said", html.escape(clip(s["last_reply"], 200)) or "—"),
                ("tool call", "<br>".join(f"<code class='stepper-call'>{html.escape(c)}</code>"
                                          for c in s["tool_calls"]) or "—")]
        for content, is_error in s["observations"]:
            colour = ERROR if is_error else "inherit"
            rows.append(("observation", f"<span style='color:{colour}'>{html.escape(clip(content, 200))}</span>"))
        if s["problem"]:
            rows.append(("problem", f"<span style='color:{ERROR}'>{html.escape(s['problem'])}</span>"))
        if s["answer"] and s["done"]:
            rows.append(("answer", html.escape(s["answer"])))
        self.details.value = "<table>" + "".join(
            f"<tr><td style='padding-right:1em;vertical-align:top;white-space:nowrap'><b>{k}</b></td><td>{v}</td></tr>"
            for k, v in rows) + "</table>"
        self.messages.value = "<ol start='0' style='margin:0'>" + "".join(
            self._message(i, message) for i, message in enumerate(self.agent.history)) + "</ol>"
        for button in (self.step_button, self.run_button):
            button.disabled = s["done"]
        # The count last: the browser applies the updates in order, so when it shows a step the rest shows it too.
        self.status.value = (f"<b class='stepper-count'>step {s['step']} / {s['max_steps']}</b> · {where}"
                             + (f" · stop reason: <code>{s['stop_reason']}</code>" if s["stop_reason"] else ""))

    def _message(self, i: int, message: dict) -> str:
        """One message: its role and first line; click it to read the whole text. New ones are marked."""
        role, text = message.get("role", "?"), str(message.get("content") or "")
        new = i >= self._new_from
        mark = f" <b style='color:{NEW}'>new</b>" if new else ""
        border = f"border-left:3px solid {NEW};padding-left:4px" if new else "padding-left:7px"
        head = (f"<b style='color:{ROLE_COLOURS.get(role, 'inherit')}'>{html.escape(role)}</b>{mark} "
                f"{html.escape(clip(text, 60))}")
        if len(" ".join(text.split())) <= 60:
            return f"<li style='{border}'>{head}</li>"
        return (f"<li style='{border}'><details><summary style='cursor:pointer'>{head}</summary>"
                f"<pre style='white-space:pre-wrap;margin:2px 0 4px'>{html.escape(text)}</pre></details></li>")

    def __repr__(self) -> str:
        s = self.state()
        return f"AgentStepper(step {s['step']}/{s['max_steps']}, {len(s['messages'])} messages, done={s['done']})"

    def _repr_mimebundle_(self, **kwargs):
        bundle = self.box._repr_mimebundle_(**kwargs)
        # a stable text form for nbval; the widget itself for people, once the cell has run (a saved notebook
        # keeps no widget, only this text, so it says where the buttons are)
        bundle["text/plain"] = f"{self!r}\n(run this cell to get the stepper's buttons)"
        return bundle


def ask_with_buttons(request, timeout: float = 600.0) -> bool:
    """Show the request (a write, or a tool call under stage 09's policy) and Approve / Deny buttons; wait (up to ``timeout`` seconds) for a click.

    While it waits, the box says the notebook is paused; after the decision the buttons give way to the
    outcome, so a glance at the output tells what happened."""
    from IPython.display import display
    from jupyter_ui_poll import ui_events

    decision: dict[str, bool] = {}
    approve = w.Button(description="Approve", button_style="success", icon="check")
    deny = w.Button(description="Deny", button_style="danger", icon="times")
    approve.on_click(lambda _: decision.setdefault("ok", True))
    deny.on_click(lambda _: decision.setdefault("ok", False))
    note = w.HTML(f"<b>The agent asks to</b> <pre style='margin:0'>{html.escape(request.preview())}</pre>")
    status = w.HTML("<b>Paused — waiting for your decision; other cells will wait.</b>")
    box = w.VBox([note, w.HBox([approve, deny]), status],
                 layout=w.Layout(border="1px solid var(--jp-border-color1, #bbb)", padding="6px"))
    display(box)
    deadline = time.monotonic() + timeout
    with ui_events() as poll:   # let the button clicks reach the kernel while this cell waits
        while "ok" not in decision and time.monotonic() < deadline:
            poll(10)
            time.sleep(0.05)
    approved = decision.get("ok", False)
    kind, undone = request.kind, "nothing is written" if request.kind == "write" else "it does not run"
    outcome = (f"✓ You approved this {kind}." if approved else
               f"✗ You denied this {kind}: {undone}." if "ok" in decision else
               f"✗ No answer within {timeout:g} s: denied, {undone}.")
    box.children = (note, w.HTML(f"<b>{outcome}</b>"))
    return approved


# JupyterLab gives a <pre> that is a direct child of an HTML output margins (1.5em 2em) and one inside <details>
# none, and breaks its lines at any letter: a peek's two halves are set alike and wrap at spaces.
PRE = "<pre style='margin:0;word-break:normal;overflow-wrap:anywhere'>"


class Peek:
    """A long output, folded: its first ``lines`` lines, then how many more there are. In JupyterLab that line
    opens to the rest (a ``<details>`` that names ``title``, the size and a dict's keys); nbval and terminals
    read the text form. Dicts and lists are shown as indented JSON."""

    def __init__(self, text_or_obj, lines: int = 12, title: str = ""):
        obj = text_or_obj
        self.text = obj if isinstance(obj, str) else json.dumps(obj, indent=2, ensure_ascii=False)
        self.lines, self.all = lines, [row for line in self.text.splitlines() for row in wrap(line)]   # as say does
        shape = f"{len(self.all)} lines" + (f", keys {', '.join(map(str, obj))}" if isinstance(obj, dict) else "")
        self.summary = f"{title}: {shape}" if title else shape

    def _repr_mimebundle_(self, include=None, exclude=None) -> dict:
        more = len(self.all) - self.lines
        if more <= 1:
            whole = "\n".join(self.all)
            return {"text/plain": whole, "text/html": f"{PRE}{html.escape(whole)}</pre>"}
        head, rest = "\n".join(self.all[:self.lines]), "\n".join(self.all[self.lines:])
        return {"text/plain": f"{head}\n… {more} more lines (open the output in JupyterLab to see them all)",
                "text/html": (f"{PRE}{html.escape(head)}</pre>" if self.lines else "")
                + f"<details><summary>… {more} more lines ({html.escape(self.summary)}): click to show</summary>"
                  f"{PRE}{html.escape(rest)}</pre></details>"}


def peek(text_or_obj, lines: int = 12, title: str = "") -> Peek:
    """Show a long text, dict or list folded to its first ``lines`` lines, the rest one click away."""
    return Peek(text_or_obj, lines, title)
