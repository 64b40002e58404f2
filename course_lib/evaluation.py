"""Stage 12 — evaluation: grade answers and the paths to them, run a suite, measure pass rates, steps and cost.

Adds: graders (``grade_answer``, ``grade_trajectory``, ``judge_answer``: a model as judge); ``run_suite``, ``jobs``
runs at a time, transient errors retried and Ctrl-C an ``Interrupted``; ``summarise`` and ``compare``.

Leaves out: statistics (confidence intervals, how many repeats are enough), graders that run code or read files,
a human-labelled set to check the judge against, and exact costs (tokens not reported are estimated).
"""
from __future__ import annotations

import queue
import random
import re
import threading
import time
import unicodedata
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict

from . import default_tools
from .agent import Agent
from .control import Budget, handoff
from .eval_tasks import CHECKS, TASK_KEYS, TASKS_FILE, check_task, describe_check, load_tasks  # noqa: F401
from .models.base import ModelError, Reply, ask
from .models.remote import TransientError
from .planning import ask_critic

_NUMBER = re.compile(r"(?<![\d.,])(-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?)\s?(억|만|천)?")   # 255,000 · 3.5 · 25만


def _norm(text) -> str:   # NFC: Hangul typed on one system and decomposed on another compares equal
    return unicodedata.normalize("NFC", "" if text is None else str(text)).strip()


def numbers(text) -> list[float]:
    """Every number, units and falling-unit sums too: ``numbers("3일 2박: 25만 5천원")`` → [3, 2, 250000, 5000, 255000]."""
    found, last = [], None   # last: (unit, end, amount so far) of the number before, when it had a unit
    for m in _NUMBER.finditer(text := _norm(text)):
        unit = {"천": 1e3, "만": 1e4, "억": 1e8}.get(m.group(2), 1)
        found.append(float(m.group(1).replace(",", "")) * unit)
        if unit > 1 and last and last[0] > unit and not text[last[1]:m.start()].strip():
            found.append(last[2] + found[-1])
        last = (unit, m.end(), found[-1]) if unit > 1 else None
    return found


def grade_answer(task: dict, answer) -> dict:
    """``{"passed": bool, "why": str}`` under ``task["check"]``; a regex is searched for: anchor it with ^ and $."""
    check, text, kind = task["check"], _norm(answer), task["check"]["type"]
    if kind == "number":
        got, want, tol = numbers(text), check["value"], check.get("tolerance", 0)
        hits = [n for n in got if abs(n - want) <= tol + 1e-9 * max(1.0, abs(want))]   # 3.6 - 3.5 is 0.1000…09
        shown = ", ".join(f"{n:g}" for n in (hits or got)[:5]) + (", …" if len(hits or got) > 5 else "")
        return {"passed": bool(hits), "why": f"found {shown}; expected {describe_check(check)}" if got else
                f"no number in the answer; expected {describe_check(check)}"}
    if kind == "contains":
        values = check["value"] if isinstance(check["value"], list) else [check["value"]]
        missing = [v for v in values if _norm(v).casefold() not in text.casefold()]
        return {"passed": not missing, "why": f"missing {missing}" if missing else "contains every expected text"}
    ok = text == _norm(check["value"]) if kind == "exact" else re.search(check["pattern"], text) is not None
    return {"passed": ok, "why": ("" if ok else "not ") + describe_check(check)}


def cost_of(agent) -> dict:
    """``{"input_tokens": ..., "output_tokens": ..., "cost": ...}`` of ``agent``'s run so far, at the example prices
    (stage 09's ``Budget.spent``)."""
    return Budget(max_cost=1.0).spent(agent)


def grade_trajectory(task: dict, agent) -> dict:
    """``{"passed": bool, "why": str}``: required tools used, no forbidden one, finished within the limits."""
    used = [run.tool for step in agent.trace for run in step.runs]
    missing = [t for t in task.get("required_tools", []) if t not in used]
    banned = sorted(set(used) & set(task.get("forbidden_tools", [])))
    cost, cap = cost_of(agent)["cost"], task.get("max_cost") or 0
    problems = [problem for problem, found in (   # each problem's text, and whether this run has it
        (f"never called {', '.join(missing)}", missing), (f"called forbidden {', '.join(banned)}", banned),
        (f"did not finish (stop reason {agent.stop_reason!r})", agent.stop_reason != "finish"),
        (f"took {agent.steps} steps, over {task['max_steps']}", agent.steps > task["max_steps"]),
        (f"cost ${cost:.5f}, over ${cap:.5f}", cap and cost > cap)) if found]
    return {"passed": not problems, "why": "; ".join(problems) or f"finished in {agent.steps} steps"}


def judge_answer(task: dict, answer, judge) -> dict:
    """``judge`` (a model, or ``f(messages) -> str``) gives stage 11's verdict on the answer; unreadable: not passed."""
    def reply_in_text(messages):   # a dict would be read as a Reply's fields: say what a judge function should return
        if isinstance(reply := judge(messages), str):
            return reply
        raise TypeError(f"a judge replies with text, such as json.dumps({{'ok': True}}), not a {type(reply).__name__}")
    verdict = ask_critic(judge if hasattr(judge, "complete") else reply_in_text,
                         f"{task['goal']}\n\nExpected: {describe_check(task['check'])}", _norm(answer))
    why = (verdict.note or "").replace("the critic", "the judge") or verdict.feedback or "the judge accepted it"
    return {"passed": verdict.ok, "why": why, "readable": verdict.note is None}


class RateLimitError(TransientError):
    """A scripted stand-in's 429: the provider asked us to slow down. Retried after a pause, as transient."""


def is_transient(error: BaseException) -> bool:
    """Worth asking again: a TransientError (stage 08 says which), or a scripted one behind a ScriptedModel's error."""
    return isinstance(error, TransientError) or isinstance(error.__cause__, TransientError)


class with_retries:
    """``model`` with ``latency_ms`` per call; a transient error (left after an SDK's retries) is retried after
    ``backoff``, doubling, less up to ``jitter`` of it at random, or a longer ``Retry-After`` (≤ ``max_wait``)."""
    def __init__(self, model, *, retries: int = 3, backoff: float = 0.5, latency_ms: float = 0, sleep=time.sleep,
                 stop=None, max_wait: float = 60, jitter: float = 0.25, random=random.random):
        self.model, self.retries, self.backoff, self.latency_ms, self.sleep = model, retries, backoff, latency_ms, sleep
        self.native_tools, self.protocol = getattr(model, "native_tools", False), getattr(model, "protocol", None)
        self.retried, self.stop, self.max_wait = 0, stop if stop is not None else threading.Event(), max_wait
        self.jitter, self.random = jitter, random   # clients that failed together do not all retry together

    def complete(self, messages, tools=None) -> Reply:
        for attempt in range(self.retries + 1):
            if self.latency_ms and self.stop.wait(self.latency_ms / 1000) or self.stop.is_set():
                raise ModelError("not called: the run was interrupted (Ctrl-C)")
            try:
                return ask(self.model, messages, tools)
            except Exception as e:   # KeyboardInterrupt still stops everything
                error = e if isinstance(e, ModelError) else ModelError(f"{type(e).__name__}: {e}")
                if not is_transient(error) or attempt == self.retries:
                    raise error from (None if error is e else e)   # as a ModelError
                self.retried += 1
                asked = getattr(error, "retry_after", None) or getattr(error.__cause__, "retry_after", None) or 0
                backoff = self.backoff * 2 ** attempt * (1 - self.jitter * self.random())
                self.sleep(min(max(backoff, asked), self.max_wait))   # as anthropic/_base_client.py does


def run_task(task: dict, make_model, *, repeat: int = 0, latency_ms: float = 0, retries: int = 3,
             backoff: float = 0.5, tools=None, stop=None) -> dict:
    """One run of ``task`` with a fresh Agent and ``make_model(task)``; the result record (never raises)."""
    start, agent, model, error = time.perf_counter(), None, None, None
    try:
        model = with_retries(make_model(task), retries=retries, backoff=backoff, latency_ms=latency_ms, stop=stop)
        limits = [Budget(max_cost=task["max_cost"])] if task.get("max_cost") else []
        agent = Agent(default_tools() if tools is None else tools, model, task["max_steps"], limits=limits)
        agent.run(task["goal"])
    except Exception as e:   # make_model or the agent itself failed: a failed run with the reason
        error = f"{type(e).__name__}: {e}"
    error = error or (agent.answer if agent is not None and agent.stop_reason in ("model_error", None) else None)
    answer = agent.answer if agent is not None and agent.stop_reason == "finish" else None
    graded = grade_answer(task, answer) if answer is not None else {"passed": False, "why": "no answer"}
    path = grade_trajectory(task, agent) if agent is not None and agent.done else {"passed": False, "why": error}
    spent = cost_of(agent) if agent is not None else {"input_tokens": 0, "output_tokens": 0, "cost": 0.0}
    note = handoff(agent) if agent is not None else None   # stage 09's note for a person, if the run gave up
    return {"task": task["id"], "repeat": repeat, "passed": graded["passed"] and path["passed"],
            "answer_ok": graded["passed"], "trajectory_ok": path["passed"], "why": [graded["why"], path["why"]],
            "answer": answer, "steps": agent.steps if agent else 0, **spent,   # input_tokens, output_tokens, cost
            "stop_reason": agent.stop_reason if agent else None, "error": error,
            "retries": model.retried if model else 0, "seconds": time.perf_counter() - start,
            "transcript": agent.transcript(handoff=None if note is None else asdict(note)) if agent else None}


class Interrupted(KeyboardInterrupt):
    """Ctrl-C (or Stop) during ``run_suite``: ``results`` holds the finished runs ``on_result`` got, in task order."""
    def __init__(self, results: list[dict], planned: int):
        super().__init__(f"interrupted: {len(results)} of {planned} runs had finished")
        self.results, self.planned = results, planned


def run_suite(tasks, make_model, *, jobs: int = 1, repeat: int = 1, latency_ms: float = 0, on_result=None,
              retries: int = 3, backoff: float = 0.5, tools=None) -> list[dict]:
    """Run every task ``repeat`` times, ``jobs`` at a time (threads: the time goes in waiting for the model), in
    task order; ``on_result`` sees each run as it ends. On Ctrl-C, runs under way end at their next model call."""
    if type(jobs) is not int or jobs < 1 or type(repeat) is not int or repeat < 1:
        raise ValueError(f"jobs and repeat must be positive whole numbers, not {jobs!r} and {repeat!r}")
    runs, stop, ended = [(task, r) for task in tasks for r in range(repeat)], threading.Event(), queue.SimpleQueue()
    pool = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="run_suite")
    futures = [pool.submit(run_task, task, make_model, repeat=r, latency_ms=latency_ms, retries=retries,
                           backoff=backoff, tools=tools, stop=stop) for task, r in runs]
    for future in futures:   # each run is reported as it ends, with one job in task order (as_completed reports
        future.add_done_callback(ended.put)   # the runs that ended before it was called in a set's order)
    reported = set()   # a run that finished unreported is left out: rows shown and results agree
    try:
        for future in (ended.get() for _ in futures):
            try:
                if on_result is not None:
                    on_result(future.result())
            finally:   # reported, even if Ctrl-C comes in the middle of on_result (while its row is printed)
                reported.add(future)
    except KeyboardInterrupt:
        raise Interrupted([f.result() for f in futures if f in reported], len(runs)) from None
    finally:
        stop.set()
        pool.shutdown(wait=False, cancel_futures=True)
    return [f.result() for f in futures]


def passes_by_task(results: list[dict]) -> dict[str, list[bool]]:
    """Each task's passed values, in the order tasks first appear; ValueError unless these are run records."""
    if not isinstance(results, list):
        raise ValueError(f"results must be a list of run records, not a {type(results).__name__}")
    by_task = defaultdict(list)
    for i, r in enumerate(results):
        if not (isinstance(r, dict) and isinstance(r.get("task"), str) and type(r.get("passed")) is bool):
            raise ValueError(f"results[{i}] is not a run record: a dict with a 'task' (text) and 'passed' (a bool)")
        by_task[r["task"]].append(r["passed"])
    return by_task


def summarise(results: list[dict]) -> dict:
    """Pass rate over runs; pass^k: the share of tasks whose k repeats all passed; steps, tokens and cost."""
    by_task, runs = passes_by_task(results), len(results)
    total = {key: sum(r[key] for r in results) for key in ("input_tokens", "output_tokens", "passed", "steps", "cost")}
    return {"runs": runs, "tasks": len(by_task), "k": max(map(len, by_task.values()), default=0),
            "passed": total["passed"], "pass_rate": total["passed"] / runs if runs else 0.0,
            "pass^k": sum(all(p) for p in by_task.values()) / len(by_task) if by_task else 0.0,
            "mean_steps": total["steps"] / runs if runs else 0.0, "input_tokens": total["input_tokens"],
            "output_tokens": total["output_tokens"], "total_tokens": total["input_tokens"] + total["output_tokens"],
            "cost": total["cost"], "stop_reasons": dict(Counter(r["stop_reason"] for r in results))}


def compare(old: list[dict], new: list[dict]) -> list[dict]:
    """Tasks of ``old`` whose share of passing runs changed, in old's order: ``regression`` (lower now, or missing
    from ``new``, ``after`` None: a run that lost tasks, say to Ctrl-C, must not look better) or ``fix`` (higher)."""
    before, after = ({task: sum(p) / len(p) for task, p in passes_by_task(results).items()} for results in (old, new))
    return [{"task": task, "change": "fix" if task in after and after[task] > share else "regression", "before": share,
             "after": after.get(task)} for task, share in before.items() if after.get(task) != share]
