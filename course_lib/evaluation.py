"""Stage 12 — evaluation: a task suite as data, graders for the answer and the path to it, and a runner that
measures pass rates, steps, tokens and cost per task.

Adds: ``load_tasks()`` reads ``data/eval_tasks.json``: each task has an ``id``, a ``goal``, an answer ``check``
(``exact``, ``number`` within a ``tolerance``, ``contains``, ``regex``), optional ``required_tools`` and
``forbidden_tools``, ``max_steps``, an optional ``max_cost`` (dollars at the example prices) and the ``reference``
calls the scripted stand-ins replay; a misspelt key, an unknown tool or a value of the wrong kind is a
ValueError with a sentence. Graders:
``grade_answer(task, answer)``, ``grade_trajectory(task, agent)`` (tools used, finished within the steps, cost)
and ``judge_answer(task, answer, judge)``, a model as judge that replies with stage 11's JSON verdict; the
scripted judges ``lenient_judge``, ``length_judge`` and ``chatty_judge`` show how judges fail
(``judge_demo()``). ``careful``, ``sloppy`` and ``looping`` are scripted stand-ins, not models: each replays the
task's reference calls (``careful`` as written, ``sloppy`` with the wrong tool and left-to-right arithmetic,
``looping`` stuck on its first call). ``run_suite`` runs every task (× ``repeat``) with its own Agent, ``jobs``
at a time, in task order; a simulated ``latency_ms`` per model call shows what concurrency buys, rate limits are
retried with backoff (``with_retries``), and a model that raises is a failed run, never a crash. Ctrl-C raises
``Interrupted`` with the finished runs ``on_result`` got; runs under way stop at their next model call.
``summarise`` gives pass rate, pass^k, steps, tokens and cost; ``compare`` names regressions (a task missing
from the new run among them) and fixes; ``load_results`` reads the runs ``course eval --out`` saved.

Leaves out: statistics (confidence intervals, how many repeats are enough), graders that run code or read
files the agent wrote, a human-labelled set to check the judge against, and tokens the provider did not report
(they are estimated with stage 10's rules of thumb, so costs are estimates at example prices).
"""
from __future__ import annotations

import json
import re
import threading
import time
import unicodedata
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor, as_completed
from pathlib import Path

from . import default_tools
from .agent import Agent
from .models.base import ModelError, Reply
from .planning import ask_critic
from .safety import Budget

TASKS_FILE = Path(__file__).parent / "data" / "eval_tasks.json"
CHECKS = {"exact": {"value"}, "number": {"value", "tolerance"}, "contains": {"value"}, "regex": {"pattern"}}
TASK_KEYS = ("id", "goal", "check", "required_tools", "forbidden_tools", "max_steps", "max_cost", "reference")
_NUMBER = re.compile(r"(?<![\d.,])-?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?")   # 255,000 and 3.5; "3일" is 3


# ---------------------------------------------------------------- the suite as data
def load_tasks(path=None, tools=None) -> list[dict]:
    """The tasks in ``path`` (default: the course's suite), each checked with ``check_task``: a file that is not
    JSON, not a list, or holds a broken task is a ValueError (a missing file, FileNotFoundError)."""
    tasks = json.loads(Path(path or TASKS_FILE).read_text(encoding="utf-8"))
    if not isinstance(tasks, list):
        raise ValueError(f"a task file holds a JSON list of tasks, not a {type(tasks).__name__}")
    for k, task in enumerate(tasks):
        check_task(task, tools)
        if task["id"] in (t["id"] for t in tasks[:k]):
            raise ValueError(f"two tasks have the id {task['id']!r}")
    return tasks


def check_task(task, tools=None) -> None:
    """Raise ValueError naming the task and what is wrong with it, whatever is wrong (a misspelt key, a tool
    not in ``tools``, by default the course's, a value of the wrong kind); return None if it can be run."""
    name = task.get("id") if isinstance(task, dict) else None
    known = sorted(default_tools() if tools is None else tools)
    problem = _task_problem(task, known) if isinstance(name, str) and name else "a task needs an 'id' (text)"
    if problem:
        raise ValueError(f"task {name!r}: {problem}")


def _keys(mapping: dict, allowed) -> str | None:
    unknown = [repr(key) for key in mapping if key not in allowed]
    return f"unknown key(s) {', '.join(unknown)}; it may have {', '.join(allowed)}" if unknown else None


def _not_a_tool(tool: str, known: list) -> str:
    return f"{tool!r} is not one of the tools ({', '.join(known)})"


def _task_problem(task: dict, known: list) -> str | None:   # the first problem found, as a sentence
    check, required, forbidden = task.get("check"), task.get("required_tools", []), task.get("forbidden_tools", [])
    if unknown := _keys(task, TASK_KEYS):
        return unknown
    if not isinstance(task.get("goal"), str) or not task["goal"].strip():
        return "'goal' must be non-empty text"
    if not isinstance(check, dict) or check.get("type") not in tuple(CHECKS):
        return f"'check' must be a dict whose 'type' is one of {', '.join(CHECKS)}"
    kind, values = check["type"], check.get("value") if isinstance(check.get("value"), list) else [check.get("value")]
    if unknown := _keys(check, ("type", *sorted(CHECKS[kind]))):
        return f"the {kind} check has {unknown}"
    if kind == "number" and not (_is_number(check.get("value")) and ("tolerance" not in check or (
            _is_number(check["tolerance"]) and check["tolerance"] >= 0))):
        return "the number check needs a numeric 'value' and a 'tolerance' of 0 or more"
    if kind in ("exact", "contains") and not (values and all(isinstance(v, str) and v for v in values)):
        return f"the {kind} check needs a 'value': text (for contains, a list of texts also works)"
    if kind == "regex":
        try:
            re.compile(check.get("pattern"))
        except (re.error, TypeError) as e:
            return f"the regex 'pattern' does not compile: {e}"
    if type(task.get("max_steps")) is not int or task["max_steps"] < 1:
        return "'max_steps' must be a positive whole number"
    if "max_cost" in task and not (_is_number(task["max_cost"]) and task["max_cost"] > 0):
        return "'max_cost' must be a positive number of dollars"
    for key, tools in (("required_tools", required), ("forbidden_tools", forbidden)):
        if not isinstance(tools, list) or not all(isinstance(t, str) for t in tools):
            return f"'{key}' must be a list of tool names, such as [\"lookup\"]"
        if unknown := next((t for t in tools if t not in known), None):
            return _not_a_tool(unknown, known)
    if set(required) & set(forbidden):
        return "no tool can be in both 'required_tools' and 'forbidden_tools'"
    return _reference_problem(task["reference"], known) if "reference" in task else None


def _reference_problem(reference, known: list) -> str | None:
    calls = reference.get("calls") if isinstance(reference, dict) else None
    if not (isinstance(calls, list) and isinstance(reference.get("answer"), str) and len(reference) == 2):
        return "'reference' must be a dict with 'calls' (a list of [tool, {args}] pairs) and an 'answer' (text)"
    for n, call in enumerate(calls, 1):
        if not (isinstance(call, list) and len(call) == 2 and isinstance(call[0], str) and isinstance(call[1], dict)):
            return f"reference call {n} must be a [tool, {{args}}] pair, not {json.dumps(call, ensure_ascii=False)}"
        if call[0] not in known:
            return f"reference call {n}: {_not_a_tool(call[0], known)}"
    try:
        reference["answer"].format(result=0)
    except (LookupError, ValueError, TypeError, AttributeError) as e:   # {x}, {0}, {result[0]}, {result.x}
        return f"the reference 'answer' may use only {{result}}, the last calculator result ({type(e).__name__}: {e})"
    return None


def _is_number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value


# ---------------------------------------------------------------- graders
def _norm(text) -> str:   # NFC: Hangul typed on one system and decomposed on another compares equal
    return unicodedata.normalize("NFC", "" if text is None else str(text)).strip()


def first_number(text) -> float | None:
    """The first number in ``text`` (commas as thousands separators), or None: ``"255,000원"`` → 255000."""
    found = _NUMBER.search(_norm(text))
    return float(found.group().replace(",", "")) if found else None


def grade_answer(task: dict, answer) -> dict:
    """``{"passed": bool, "why": str}`` for ``answer`` under ``task["check"]``: ``exact`` (after trimming
    spaces), ``number`` (the answer's first number within ``tolerance``), ``contains`` (every text, ignoring
    case) or ``regex`` (``re.search``: anchor it with ^ and $ to match the whole answer)."""
    check, text, kind = task["check"], _norm(answer), task["check"]["type"]
    if kind == "exact":
        ok = text == _norm(check["value"])
    elif kind == "number":
        got, want, tol = first_number(text), check["value"], check.get("tolerance", 0)
        if got is None:
            return {"passed": False, "why": f"no number in the answer; expected {describe_check(check)}"}
        ok = abs(got - want) <= tol + 1e-9 * max(1.0, abs(want))   # 3.6 - 3.5 is 0.10000000000000009
        return {"passed": ok, "why": f"found {got:g}; expected {describe_check(check)}"}
    elif kind == "contains":
        values = check["value"] if isinstance(check["value"], list) else [check["value"]]
        missing = [v for v in values if _norm(v).casefold() not in text.casefold()]
        return {"passed": not missing, "why": f"missing {missing}" if missing else "contains every expected text"}
    else:
        ok = re.search(check["pattern"], text) is not None
    return {"passed": ok, "why": ("" if ok else "not ") + describe_check(check)}


def describe_check(check: dict) -> str:
    """The check in words, for a grade's ``why`` and for a judge."""
    kind = check["type"]
    return {"exact": lambda: f"exactly {check['value']!r}",
            "number": lambda: f"the number {check['value']:g} (± {check.get('tolerance', 0):g})",
            "contains": lambda: f"text containing {check['value']!r}",
            "regex": lambda: f"text matching the pattern {check['pattern']!r}"}[kind]()


def cost_of(agent) -> dict:
    """Tokens in and out and their cost at the example prices: reported usage, else stage 10's estimate."""
    return Budget(max_cost=1.0).spent(agent)


def grade_trajectory(task: dict, agent) -> dict:
    """``{"passed": bool, "why": str}``: every required tool used, no forbidden one, the run finished within
    ``max_steps``, and cost no more than ``max_cost``."""
    used, problems = [run.tool for step in agent.trace for run in step.runs], []
    missing = [t for t in task.get("required_tools", []) if t not in used]
    banned = sorted(set(used) & set(task.get("forbidden_tools", [])))
    for label, tools in (("never called", missing), ("called forbidden", banned)):
        problems += [f"{label} {', '.join(tools)}"] if tools else []
    if agent.stop_reason != "finish":
        problems.append(f"did not finish (stop reason {agent.stop_reason!r})")
    if agent.steps > task["max_steps"]:
        problems.append(f"took {agent.steps} steps, over {task['max_steps']}")
    cost = cost_of(agent)["cost"]
    if task.get("max_cost") and cost > task["max_cost"]:
        problems.append(f"cost ${cost:.5f}, over ${task['max_cost']:.5f}")
    return {"passed": not problems, "why": "; ".join(problems) or f"finished in {agent.steps} steps"}


def judge_answer(task: dict, answer, judge) -> dict:
    """A model as judge: ``judge`` (a model, or ``f(messages) -> str``) sees the goal, what was expected and the
    answer, and replies with a JSON verdict as text (stage 11's ``{"ok": ..., "feedback": ...}``). ``readable``
    is False when no verdict could be read, which counts as not passed, and ``why`` then says what was wrong."""
    verdict = ask_critic(judge if hasattr(judge, "complete") else _text_only(judge),
                         f"{task['goal']}\n\nExpected: {describe_check(task['check'])}", _norm(answer))
    why = (verdict.note or "").replace("the critic", "the judge") or verdict.feedback or "the judge accepted it"
    return {"passed": verdict.ok, "why": why, "readable": verdict.note is None}


def _text_only(judge):   # a dict would be read as a Reply's fields: say what a judge function should return
    def reply_in_text(messages):
        if isinstance(reply := judge(messages), str):
            return reply
        raise TypeError(f"a judge replies with text, such as json.dumps({{'ok': True}}), not a {type(reply).__name__}")
    return reply_in_text


# Scripted judges that fail the way real ones do. Each reads only the prompt, as a model would.
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


# ---------------------------------------------------------------- running the suite
class RateLimitError(ModelError):
    """The provider asked us to slow down (HTTP 429): worth a retry after a pause, unlike other failures."""


def is_rate_limit(error: BaseException) -> bool:
    """A RateLimitError, or a ModelError saying "rate limit" (a key without quota is no rate limit)."""
    text = str(error).lower()   # the cause too: with_retries keeps a RateLimitError as a ModelError's cause
    return isinstance(error, RateLimitError) or isinstance(error.__cause__, RateLimitError) or (
        isinstance(error, ModelError) and "not a rate limit" not in text and bool(re.search(r"rate[- ]limit", text)))


class with_retries:
    """``model`` with a simulated ``latency_ms`` before each call, rate limits retried ``retries`` times after
    ``backoff``, 2 × ``backoff``, 4 × ... seconds, and any other exception turned into a ModelError (the agent
    then stops cleanly). Once ``stop`` (a threading.Event) is set, no further call is made. ``retried`` counts."""

    def __init__(self, model, *, retries: int = 3, backoff: float = 0.5, latency_ms: float = 0, sleep=time.sleep,
                 stop=None):
        self.model, self.retries, self.backoff, self.latency_ms, self.sleep = model, retries, backoff, latency_ms, sleep
        self.native_tools, self.retried = getattr(model, "native_tools", False), 0
        self.stop = stop if stop is not None else threading.Event()   # set: make no further call

    def complete(self, messages, tools=None) -> Reply:
        for attempt in range(self.retries + 1):
            if self.latency_ms and self.stop.wait(self.latency_ms / 1000) or self.stop.is_set():
                raise ModelError("not called: the run was interrupted (Ctrl-C)")
            try:
                complete = getattr(self.model, "complete", None)
                return Reply.coerce(complete(messages, tools) if complete else self.model(messages))
            except Exception as e:   # KeyboardInterrupt still stops everything
                error = e if isinstance(e, ModelError) else ModelError(f"{type(e).__name__}: {e}")
                if not is_rate_limit(error) or attempt == self.retries:
                    raise error from (None if error is e else e)
                self.retried += 1
                self.sleep(self.backoff * 2 ** attempt)


def run_task(task: dict, make_model, *, repeat: int = 0, latency_ms: float = 0, retries: int = 3,
             backoff: float = 0.5, tools=None, stop=None) -> dict:
    """One run of ``task`` with a fresh Agent and ``make_model(task)``; the result record (never raises)."""
    start, agent, model, error = time.perf_counter(), None, None, None
    try:
        model = with_retries(make_model(task), retries=retries, backoff=backoff, latency_ms=latency_ms, stop=stop)
        budget = Budget(max_cost=task["max_cost"]) if task.get("max_cost") else None
        agent = Agent(default_tools() if tools is None else tools, model, task["max_steps"], budget=budget)
        agent.run(task["goal"])
    except Exception as e:   # make_model or the agent itself failed: a failed run with the reason
        error = f"{type(e).__name__}: {e}"
    if agent is not None and agent.stop_reason in ("model_error", None):
        error = error or agent.answer
    answer = agent.answer if agent is not None and agent.stop_reason == "finish" else None
    graded = grade_answer(task, answer) if answer is not None else {"passed": False, "why": "no answer"}
    path = grade_trajectory(task, agent) if agent is not None and agent.done else {"passed": False, "why": error}
    spent = cost_of(agent) if agent is not None else {"input_tokens": 0, "output_tokens": 0, "cost": 0.0}
    return {"task": task["id"], "repeat": repeat, "passed": graded["passed"] and path["passed"],
            "answer_ok": graded["passed"], "trajectory_ok": path["passed"], "why": [graded["why"], path["why"]],
            "answer": answer, "steps": agent.steps if agent else 0, "input_tokens": spent["input_tokens"],
            "output_tokens": spent["output_tokens"], "cost": spent["cost"],
            "stop_reason": agent.stop_reason if agent else None, "error": error,
            "retries": model.retried if model else 0, "seconds": time.perf_counter() - start,
            "transcript": agent.transcript() if agent else None}


class Interrupted(KeyboardInterrupt):
    """Ctrl-C (or Stop) during ``run_suite``: ``results`` holds the finished runs ``on_result`` got, in task order."""
    def __init__(self, results: list[dict], planned: int):
        super().__init__(f"interrupted: {len(results)} of {planned} runs had finished")
        self.results, self.planned = results, planned


def run_suite(tasks, make_model, *, jobs: int = 1, repeat: int = 1, latency_ms: float = 0, on_result=None,
              retries: int = 3, backoff: float = 0.5, tools=None) -> list[dict]:
    """Run every task ``repeat`` times, ``jobs`` at a time (threads: the time goes in waiting for the model);
    results in task order (then repeat), whatever order they finish in. ``on_result(result)`` is called as
    each run finishes, in the calling thread. A KeyboardInterrupt becomes ``Interrupted``: runs not started
    are cancelled, runs under way end at their next model call, and its ``results`` are the runs that were
    reported with ``on_result`` (a run that finished unreported is left out, so rows shown and results agree)."""
    if type(jobs) is not int or jobs < 1 or type(repeat) is not int or repeat < 1:
        raise ValueError(f"jobs and repeat must be positive whole numbers, not {jobs!r} and {repeat!r}")
    runs, stop = [(task, r) for task in tasks for r in range(repeat)], threading.Event()
    pool = ThreadPoolExecutor(max_workers=jobs, thread_name_prefix="run_suite")
    futures = [pool.submit(run_task, task, make_model, repeat=r, latency_ms=latency_ms, retries=retries,
                           backoff=backoff, tools=tools, stop=stop) for task, r in runs]
    reported = set()
    try:
        for future in as_completed(futures):
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


def _by_task(results: list[dict]) -> dict[str, list[bool]]:
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
    by_task = _by_task(results)
    runs, tokens_in, tokens_out = len(results), sum(r["input_tokens"] for r in results), sum(
        r["output_tokens"] for r in results)
    return {"runs": runs, "tasks": len(by_task), "k": max(map(len, by_task.values()), default=0),
            "passed": sum(r["passed"] for r in results),
            "pass_rate": sum(r["passed"] for r in results) / runs if runs else 0.0,
            "pass^k": sum(all(p) for p in by_task.values()) / len(by_task) if by_task else 0.0,
            "mean_steps": sum(r["steps"] for r in results) / runs if runs else 0.0,
            "input_tokens": tokens_in, "output_tokens": tokens_out, "total_tokens": tokens_in + tokens_out,
            "cost": sum(r["cost"] for r in results), "stop_reasons": dict(Counter(r["stop_reason"] for r in results))}


def compare(old: list[dict], new: list[dict]) -> list[dict]:
    """Tasks of ``old`` whose share of passing runs changed, in old's order: ``regression`` (lower now, or missing
    from ``new``, with ``after`` None: a run that lost tasks, say to Ctrl-C, must not look better) or ``fix``
    (higher). Tasks only in ``new`` have nothing to compare with."""
    before, after = ({task: sum(p) / len(p) for task, p in _by_task(results).items()} for results in (old, new))
    return [{"task": task, "change": "fix" if task in after and after[task] > share else "regression", "before": share,
             "after": after.get(task)} for task, share in before.items() if after.get(task) != share]


def load_results(path) -> list[dict]:
    """The run records a ``course eval --out`` file saved; ValueError for a file that holds none (a ``--json``
    summary, say), or whose records are not run records."""
    saved = json.loads(Path(path).read_text(encoding="utf-8"))
    if not isinstance(saved, dict) or "results" not in saved:
        raise ValueError('it holds no "results": compare files saved with --out (a --json summary has no runs)')
    _by_task(saved["results"])
    return saved["results"]
