"""The evaluation lab of stage 12: scripted judges that fail the way real ones do, and scripted stand-ins of
different quality to run the suite with, so the lesson's numbers are the same on every machine.

``lenient_judge``, ``length_judge`` and ``chatty_judge`` read only the prompt ``judge_answer`` sends, as a model
would: the first passes any answer that sounds sure of itself, the second any long one, and the third never
answers in the asked-for format. ``judge_demo()`` sets them against the rule-based grade on answers chosen to
expose them. ``careful``, ``sloppy`` and ``looping`` are scripted stand-ins, not models: each replays the task's
reference calls (``careful`` as written, ``sloppy`` with the wrong tool and left-to-right arithmetic,
``looping`` stuck on its first call); ``SCRIPTED`` names them for ``course eval --model``. The graders and the
runner themselves are the stage module, ``course_lib/evaluation.py``; this file is what the lesson runs them on.
"""
from __future__ import annotations

import json
import re

from ..evaluation import grade_answer, judge_answer, load_tasks


# ---------------------------------------------------------------- scripted judges
# Each reads only the prompt, as a model would.
def _judged(messages) -> str:
    return messages[-1]["content"].rpartition("Answer:\n")[2]


def _verdict(ok: bool, feedback: str) -> str:
    return json.dumps({"ok": ok, **({} if ok else {"feedback": feedback})})


def lenient_judge(messages) -> str:
    """Accepts any answer that sounds sure of itself: a confident wrong answer passes, an honest "cannot" fails."""
    hedges = ("not sure", "cannot", "can't", "might", "maybe", "unknown", "모르", "없습니다")
    hedged = any(h in _judged(messages).casefold() for h in hedges)
    return _verdict(not hedged, "the answer is not confident")


def length_judge(messages) -> str:
    """Swayed by length: 40 characters or more passes, whatever they say; a short right answer fails."""
    return _verdict(len(_judged(messages)) >= 40, "the answer is too brief to be complete")


def chatty_judge(messages) -> str:
    """Never gives a verdict in the asked-for format: every grade is unreadable."""
    return "Looks good to me! The agent clearly tried hard, so I would give it a pass."


def judge_demo(tasks=None) -> list[dict]:
    """Rule-based grade vs each scripted judge on answers chosen to expose them: one row per (answer, judge)."""
    by_id = {t["id"]: t for t in (tasks or load_tasks())}
    confident = "Definitely 186 dollars: seven units at $24 each, I checked the price list carefully."
    cases = [("unit-price-7", "168 dollars."), ("unit-price-7", confident),
             ("divide-by-zero", "It cannot be computed: division by zero is undefined."), ("power-of-two", "1024")]
    rows = []
    for task_id, answer in cases:
        rule = grade_answer(by_id[task_id], answer)["passed"]
        for judge in (lenient_judge, length_judge, chatty_judge):
            verdict = judge_answer(by_id[task_id], answer, judge)
            rows.append({"task": task_id, "answer": answer, "judge": judge.__name__, "rule": rule,
                         "judge_says": verdict["passed"], "agrees": verdict["passed"] == rule, "why": verdict["why"]})
    return rows


# ---------------------------------------------------------------- scripted stand-ins of different quality
def _act(tool: str, args: dict) -> str:
    return json.dumps({"tool": tool, "args": args}, ensure_ascii=False)


def _last_number(messages):
    """The newest observation that is a bare number (a calculator result), as an int or float."""
    for m in reversed(messages):
        text = str(m.get("content")).removeprefix("Observation: ").strip()   # None is "None": no number
        if m["role"] == "user" and re.fullmatch(r"-?\d+(\.\d+)?(e[-+]?\d+)?", text):
            return int(text) if re.fullmatch(r"-?\d+", text) else float(text)
    return None


def left_to_right(expression: str) -> str:
    """The expression as a careless reader computes it, left to right, ignoring precedence and parentheses:
    ``15 + 24*3`` → ``((15+24)*3)``."""
    tokens = re.findall(r"\d+(?:\.\d+)?|\*\*|//|[-+*/%]", expression)
    out = tokens[0] if tokens else expression
    for op, number in zip(tokens[1::2], tokens[2::2]):
        out = f"({out}{op}{number})"
    return out


def _solver(task: dict, style: str):
    calls, answer = task["reference"]["calls"], task["reference"]["answer"]

    def model(messages) -> str:
        turn = sum(m["role"] == "assistant" for m in messages)
        if style == "looping":
            return _act(*calls[0])
        if turn >= len(calls):
            return _act("finish", {"answer": answer.format(result=_last_number(messages))})
        tool, args = calls[turn]
        if style == "sloppy" and tool == "lookup":          # the wrong tool for a known fact
            tool, args = "search_docs", {"query": args["topic"]}
        elif style == "sloppy" and tool == "calculator":    # arithmetic without precedence
            args = {"expression": left_to_right(args["expression"])}
        return _act(tool, args)
    model.__name__ = model.__qualname__ = f"{style}({task['id']})"
    return model


def careful(task: dict):
    """A scripted stand-in (not a model): makes the task's reference calls, then answers from the result."""
    return _solver(task, "careful")


def sloppy(task: dict):   # searches documents instead of looking facts up, and computes left to right
    return _solver(task, "sloppy")


def looping(task: dict):   # repeats the task's first call until the step cap stops it
    return _solver(task, "looping")


SCRIPTED = {"careful": careful, "sloppy": sloppy, "looping": looping}
