"""Stage 07 · scripted models: a queue model, a recovery script, a model that reacts, a test that catches bugs."""
from __future__ import annotations

import copy
import json

from ... import default_tools
from ...agent import Agent
from ..checks import Case, Exercise
from ...models import ModelError, Reply, ScriptedModel, ToolCall
from ...models.native import NATIVE
from ..scenarios import SCENARIOS
from ...models.base import ask as ask_model
from ...parsing import parse_reply
from ...tools import ToolError

PRICE = SCENARIOS["price"]
PRICE_ANSWER = json.loads(PRICE["replies"][-1])["args"]["answer"]
DECODER = json.JSONDecoder()


def act(tool: str, **args) -> str:
    return json.dumps({"tool": tool, "args": args}, ensure_ascii=False)


def run(model, goal: str = PRICE["goal"], **options) -> Agent:
    """Run course_lib's Agent with the default tools and ``model``; the step cap is always given."""
    agent = Agent(default_tools(), model, **{"max_steps": 6, **options})
    agent.run(goal)
    return agent


def runs(agent: Agent) -> list:
    return [r for step in agent.trace for r in step.runs]


# ---- 07.1 QueueModel
def messages_per_call(cls) -> list[int]:
    model = cls(PRICE["replies"])
    run(model)
    return [len(call) for call in model.calls]


def direct_twice(cls):
    model = cls(["only reply"])
    model.complete([{"role": "user", "content": "hi"}])
    return model.complete([{"role": "user", "content": "hi"}])


def failing_call_recorded(cls) -> int:
    """How many calls a 1-reply model records after two calls, the second of which finds the script empty."""
    model = cls(["only reply"])
    model.complete([{"role": "user", "content": "hi"}])
    try:
        model.complete([{"role": "user", "content": "hi"}])
    except ModelError:
        pass
    return len(model.calls)


def same_reply(cls) -> str:
    """Whether complete() hands back the scripted reply object itself (here a Reply with a native tool call)."""
    reply = Reply(tool_calls=(ToolCall("calculator", {"expression": "6*7"}, id="c1"),))
    got = cls([reply]).complete([{"role": "user", "content": "6*7?"}])
    return "the same object" if got is reply else f"another object: {type(got).__name__}"


# ---- 07.2 recovery_script
def broken_json(reply) -> bool:
    """An attempted action whose JSON does not decode: '"tool"' in it, and no JSON value at its first '{'."""
    try:
        return isinstance(reply, str) and '"tool"' in reply and not DECODER.raw_decode(reply, reply.index("{"))
    except ValueError:   # raw_decode failed, or there is no '{' at all
        return "{" in reply


def recovery(f) -> dict:
    """What a run of the learner's script shows: stop reason, problems met, and whether it recovered."""
    script = f()
    model = ScriptedModel(script)
    agent = run(model)
    done = runs(agent)
    first_error = next((i for i, r in enumerate(done) if r.observation.is_error), None)
    unusable = [s.number for s in agent.trace if s.error and not s.runs and not s.error.startswith("model error")]
    broken = [n for n in unusable if n <= len(script) and broken_json(script[n - 1])]   # step n: reply n
    failed = [s.number for s in agent.trace if any(r.observation.is_error for r in s.runs)]
    return {"stop": agent.stop_reason, "answer": agent.answer or "", "left": model.remaining,
            "broken": len(broken),
            "tool_errors": sum(r.observation.is_error for r in done),
            "recovered": first_error is not None and any(not r.observation.is_error for r in done[first_error:]),
            "calc_168": any(r.tool == "calculator" and r.observation.content == "168" for r in done),
            "all_text": isinstance(script, list) and all(isinstance(r, str) for r in script),
            "json_first": bool(broken and failed and broken[0] < failed[0])}


# ---- 07.3 retrying_model
def history(goal: str, *turns: str) -> list[dict]:
    """A text-protocol history: system prompt, goal, then assistant reply / observation pairs."""
    messages = [{"role": "system", "content": "(system prompt)"}, {"role": "user", "content": goal}]
    for i, text in enumerate(turns):
        messages.append({"role": "assistant" if i % 2 == 0 else "user", "content": text})
    return messages


def ask(f, messages: list[dict]) -> str:
    """The learner's reply to a copy of ``messages``, in short: 'lookup: unit price', 'finish: ...'."""
    text = f(copy.deepcopy(messages))
    parsed = parse_reply(text) if isinstance(text, str) else None
    if not (parsed and parsed.ok):
        return f"unusable: {text!r}"
    values = list(parsed.args.values())
    return f"{parsed.tool}: " + (values[0] if len(values) == 1 and isinstance(values[0], str)
                                 else json.dumps(parsed.args, ensure_ascii=False))


def error_obs(topic: str) -> str:
    return (f"Observation: Error: lookup: nothing is known about '{topic}'. Known topics: unit price (단가), "
            "refund policy (환불 정책), shipping (배송), warranty (보증), support hours (고객센터 운영시간)")


FACT = history("unit price", act("lookup", topic="unit price"), "Observation: $24 per unit")
FAILED = history("cost", act("lookup", topic="cost"), error_obs("cost"))
FAILED_TWICE = FAILED + [{"role": "assistant", "content": act("lookup", topic="unit price")},
                         {"role": "user", "content": error_obs("unit price")}]
NO_LIST = FAILED[:-1] + [{"role": "user",
                          "content": "Observation: Error: lookup is missing required argument(s) 'topic'."}]
CORRECTED = FAILED[:-1] + [{"role": "user", "content": "Your reply could not be used: no JSON object found."}]
TOPICS = ["unit price", "refund policy", "shipping", "warranty", "support hours"]
ALL_TRIED = history("cost", *[text for topic in ["cost"] + TOPICS
                              for text in (act("lookup", topic=topic), error_obs(topic))])


def untouched(f) -> str:
    """Whether the learner's model leaves the messages it is given as they were."""
    messages = copy.deepcopy(FAILED)
    f(messages)
    return "unchanged" if messages == FAILED else "changed"


# ---- 07.4 test_agent: agents with one bug each; a good test fails on every one of them
class _Results:
    """An agent's protocol with a bug in how tool results go back (``bug(observation)`` runs first)."""

    def __init__(self, protocol, bug):
        self.protocol, self.bug = protocol, bug

    def __getattr__(self, name):
        return getattr(self.protocol, name)

    def result(self, call, observation):
        return self.protocol.result(call, self.bug(observation))


def _crash(observation):
    if observation.is_error:
        raise RuntimeError(observation.content)
    return observation


def _hide(observation):
    observation.is_error = False   # the trace's own record: the error no longer shows
    return observation


class _Buggy(Agent):
    """course_lib's Agent with a bug: its step cap moved by ``shift`` (None: no cap at all), or each of ``bugs``
    run on every tool result before it goes back."""
    shift, bugs = 0, ()

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.max_steps = 1000 if self.shift is None else self.max_steps + self.shift
        for bug in self.bugs:
            self.protocol = _Results(self.protocol, bug)


CrashesOnToolErrors = type("CrashesOnToolErrors", (_Buggy,), {"bugs": (_crash,)})
HidesToolErrors = type("HidesToolErrors", (_Buggy,), {"bugs": (_hide,)})
IgnoresStepCap = type("IgnoresStepCap", (_Buggy,), {"shift": None})
StopsOneStepEarly = type("StopsOneStepEarly", (_Buggy,), {"shift": -1})
OneStepTooMany = type("OneStepTooMany", (_Buggy,), {"shift": 1})


class IgnoresFinish(Agent):
    def _stop(self, reason, answer):
        if reason != "finish":
            return super()._stop(reason, answer)
        self.history.append({"role": "user", "content": "Observation: (finish ignored)"})   # the bug: it goes on


class SwallowsModelErrors(Agent):
    def __init__(self, tools, model, *args, **kwargs):
        super().__init__(tools, _Swallowing(model), *args, **kwargs)


class _Swallowing:   # the model, except that a failed call looks like an empty reply (the bug)
    def __init__(self, model):
        self.model = model

    def __getattr__(self, name):   # native_tools, protocol, calls...: the model's own
        return getattr(self.model, name)

    def complete(self, messages, tools=None):
        try:
            return ask_model(self.model, messages, tools)
        except ModelError:
            return Reply("")


def verdict(test, agent_class) -> str:
    """'fails' when the learner's test raises on ``agent_class`` (any exception), else 'passes'."""
    try:
        test(agent_class)
    except NotImplementedError:
        raise
    except Exception:   # noqa: BLE001 - an assert or a crash: either way the test caught the bug
        return "fails"
    return "passes"


GIVE_UP = "finish: I could not find it."

# Finished pieces the notebook hands over on purpose: 07.4 builds a test agent on the finished ScriptedModel
# (07.1 is the learner's own queue model, and uses none).
MAY_USE = {"07.4": {"ScriptedModel"}}
# ... which is the finished version of 07.1's answer: when 07.1 is graded, the worker's ScriptedModel refuses.
WITHHELD = {"07.1": {"ScriptedModel"}}

EXERCISES = {
    "07.1": Exercise("A scripted model of your own", [
        Case("price script: the answer", lambda Q: run(Q(PRICE["replies"])).answer, expected=PRICE_ANSWER,
             hint="complete() returns the replies in order, one per call"),
        Case("records a copy per call", messages_per_call,
             expected=[2, 4, 6, 8], hint="append list(messages), a copy, not the agent's own list"),
        Case("empty script: model_error", lambda Q: run(Q([])).stop_reason, expected="model_error",
             hint="when no reply is left, raise ModelError (the agent catches only that)"),
        Case("call 2 of a 1-reply script", direct_twice, raises=ModelError,
             hint="raise ModelError once the replies are used up"),
        Case("the failing call is recorded", failing_call_recorded, test=lambda n: n == 2, shows="2 calls recorded",
             hint="append the copy of messages first, then check whether a reply is left: every call counts"),
        Case("the script stays intact", lambda Q: (lambda model: run(model) and model.replies)(Q(PRICE["replies"])),
             expected=list(PRICE["replies"]),
             hint="read self.replies[i] by the call's number; pop() and del change the script while it runs"),
        Case("a reply comes back unchanged", same_reply, expected="the same object",
             hint="return self.replies[i] as it is: no str() or Reply(...) around it"),
        Case("replies from a generator", lambda Q: run(Q(r for r in PRICE["replies"])).stop_reason,
             expected="finish", hint="turn replies into a list in __init__: list(replies)"),
    ]),
    "07.2": Exercise("A script that exercises error recovery", [
        Case("the run finishes", lambda f: recovery(f)["stop"], expected="finish",
             hint="end with a finish reply within 6 steps"),
        Case("answer mentions 168", lambda f: recovery(f)["answer"], test=lambda a: "168" in a, shows="contains 168",
             hint="the answer of the finish reply must contain 168"),
        Case("unusable replies (bad JSON)", lambda f: recovery(f)["broken"], test=lambda n: n >= 1,
             shows="at least 1", hint='broken JSON: an action with "tool" in it that does not decode (drop a brace); '
                                      "prose or valid JSON without a tool key is no broken JSON"),
        Case("failed tool calls", lambda f: recovery(f)["tool_errors"], test=lambda n: n >= 1, shows="at least 1",
             hint="call a tool with input it refuses: lookup an unknown topic, or 10/0"),
        Case("broken JSON comes first", lambda f: recovery(f)["json_first"], expected=True,
             hint="keep the story's order: the broken JSON reply before the first failing tool call"),
        Case("a tool works after the failure", lambda f: recovery(f)["recovered"], expected=True,
             hint="after the failing call, make one that works, e.g. lookup of 단가"),
        Case("calculator returned 168", lambda f: recovery(f)["calc_168"], expected=True,
             hint="let the calculator compute 24*7"),
        Case("replies left unused", lambda f: recovery(f)["left"], expected=0,
             hint="every reply should be used: finish is the last one"),
        Case("every reply is text", lambda f: recovery(f)["all_text"], expected=True,
             hint="return a list of str, as act(...) produces"),
    ]),
    "07.3": Exercise("A model that reacts to the history", [
        Case("1st call: look up the goal", lambda f: ask(f, history("unit price")),
             expected="lookup: unit price",
             hint="no lookup in the history yet: look up the content of the first user message"),
        Case("goal with spaces around it", lambda f: ask(f, history("  warranty \n")), expected="lookup: warranty",
             hint="strip the spaces around the goal before you look it up"),
        Case("a fact: finish with it", lambda f: ask(f, FACT), expected="finish: $24 per unit",
             hint="drop the 'Observation: ' prefix"),
        Case("an error: next known topic", lambda f: ask(f, FAILED), expected="lookup: unit price",
             hint="the English name only: the part before ' ('"),
        Case("skips topics already tried", lambda f: ask(f, FAILED_TWICE), expected="lookup: refund policy",
             hint="collect the topics of all earlier lookups in the history"),
        Case("every topic tried: give up", lambda f: ask(f, ALL_TRIED), expected=GIVE_UP,
             hint="when every known topic has been looked up already, finish with 'I could not find it.'"),
        Case("error, no topic list: give up", lambda f: ask(f, NO_LIST), expected=GIVE_UP,
             hint="an error without 'Known topics: ' ends the search: finish with 'I could not find it.'"),
        Case("not an observation: give up", lambda f: ask(f, CORRECTED), expected=GIVE_UP,
             hint="finish with the fact only after a message that starts with 'Observation: ' and is no error"),
        Case("messages are not changed", untouched, expected="unchanged",
             hint="only read messages: no pop, append, sort or reverse on the agent's own history"),
        Case("Agent, goal 'cost': answer", lambda f: run(f, "cost").answer, expected="$24 per unit",
             hint="run it yourself: Agent(tools, retrying_model).run('cost'), then print agent.trace"),
        Case("Agent, goal 'cost': lookups", lambda f: [r.args.get("topic") for r in runs(run(f, "cost"))],
             expected=["cost", "unit price"], hint="first the goal, then the first known topic not tried yet"),
    ]),
    "07.4": Exercise("A test that catches agent bugs", [
        Case("course_lib's Agent", lambda t: verdict(t, Agent), expected="passes",
             hint="your test fails on a correct agent: print agent.trace to see why"),
        Case("bug: tool errors crash the run", lambda t: verdict(t, CrashesOnToolErrors), expected="fails",
             hint="run the 10/0 script with agent_class and let any exception through (no try/except)"),
        Case("bug: errors not flagged", lambda t: verdict(t, HidesToolErrors), expected="fails",
             hint="assert the observation's is_error"),
        Case("bug: finish is ignored", lambda t: verdict(t, IgnoresFinish), expected="fails",
             hint="in (a), also assert stop_reason == 'finish' after the tool error"),
        Case("bug: no step cap", lambda t: verdict(t, IgnoresStepCap), expected="fails",
             hint="assert stop_reason == 'max_steps'"),
        Case("bug: one step too many", lambda t: verdict(t, OneStepTooMany), expected="fails",
             hint="assert the exact number of steps"),
        Case("bug: one step too few", lambda t: verdict(t, StopsOneStepEarly), expected="fails",
             hint="assert agent.steps == 3 exactly: stopping early is a bug too, so not <= 3"),
        Case("bug: model errors hidden", lambda t: verdict(t, SwallowsModelErrors), expected="fails",
             hint="assert stop_reason == 'model_error' when the script runs out"),
    ]),
}


# ---- drivers: what `course check` runs for its hidden cases; each returns what the answer did, as plain data
def own_calls(cls):
    """Two models, one call on the first: (the second's calls, how many calls the first recorded)."""
    first, second = cls(["a"]), cls(["b"])
    first.complete([{"role": "user", "content": "1"}])
    return second.calls, len(first.calls)


def session(cls, replies):
    """A model of (a list of) `replies`, called once more than it has them, the messages growing and the list
    cleared after call 1: {"returned": each call's reply (or "raised <class>"), "recorded": each call's length}."""
    replies, messages, got = list(replies), [{"role": "user", "content": "hi"}], []
    model = cls(replies)
    for n in range(len(replies) + 1):
        try:
            got.append(model.complete(messages))
        except NotImplementedError:
            raise
        except Exception as e:   # noqa: BLE001 - what it raised is what the case judges
            got.append(f"raised {'ModelError' if isinstance(e, ModelError) else type(e).__name__}")
        messages.append({"role": "user", "content": f"more {n}"})
        replies.clear()
    return {"returned": got, "recorded": [len(c) for c in model.calls]}


def native_run(cls, goal, expression, answer):
    """course_lib's Agent (native protocol) on a model of a calculator call for `expression`, then `answer` as
    text: (the run's answer, the first tool call's observation)."""
    model = cls([Reply(tool_calls=(ToolCall("calculator", {"expression": expression}, id="c1"),)), answer])
    agent = Agent(default_tools(), model, max_steps=6, protocol=NATIVE)
    return agent.run(goal), agent.trace[0].runs[0].observation.content


def short_script(cls, n):
    """course_lib's Agent on a model of the price script's first `n` replies: (stop reason, steps taken)."""
    agent = run(cls(PRICE["replies"][:n]))
    return agent.stop_reason, agent.steps


def recovery_runs(f, goal):
    """The learner's script run twice on `goal`: both histories, the first run's trace and answer, and the user
    messages of its model's last call."""
    def once():
        model = ScriptedModel(f())
        return run(model, goal), model
    (agent, model), (again, _) = once(), once()
    last = model.calls[-1] if model.calls else []
    return {"history": agent.history, "again": again.history, "trace": agent.trace, "answer": agent.answer,
            "told": [m.get("content") for m in last if m.get("role") == "user"]}


def reply_to(f, messages):
    """f's reply to a copy of `messages`, parsed: (tool, args), or ("unusable", the reply)."""
    text = f(copy.deepcopy(messages))
    parsed = parse_reply(text) if isinstance(text, str) else None
    return (parsed.tool, parsed.args) if parsed and parsed.ok else ("unusable", text)


def left_as(f, messages):
    """The messages (a copy of `messages`) as f leaves them after one call."""
    messages = copy.deepcopy(messages)
    f(messages)
    return messages


def lookups(f, goal, tools=None):
    """course_lib's Agent with f as its model on `goal` (tools: the default ones, or {"lookup": a lookup that
    knows only tools["known"], with the fact tools["fact"], and lists tools["listed"] in its error}; with those,
    repeat_limit=2): (answer, the topics looked up, steps)."""
    def lookup(topic: str) -> str:
        """Look up a fact.

        Args:
            topic: the topic to look up.
        """
        if topic == tools["known"]:
            return tools["fact"]
        raise ToolError(f"nothing is known about '{topic}'. Known topics: {tools['listed']}")
    agent = Agent({"lookup": lookup} if tools else default_tools(), f, max_steps=6, repeat_limit=2 if tools else None)
    agent.run(goal)
    return agent.answer, [r.args.get("topic") for r in runs(agent)], len(agent.trace)


class CrashesOnModelErrors(Agent):   # a model error escapes instead of ending the run cleanly
    def step(self):
        before, step = len(self.trace), super().step()
        if step is not None and len(self.trace) > before and step.error and step.error.startswith("model error"):
            raise RuntimeError(step.error)
        return step


class StopsOnToolErrors(Agent):   # a failing tool ends the run
    def _take(self, reply, step):
        super()._take(reply, step)
        if any(r.observation.is_error for r in step.runs) and not self.done:
            self._stop("tool_error", "Stopped: a tool failed.")


class _AsFinish(Agent):   # a stop for ``reason`` reported as a finish
    reason = ""

    def _stop(self, reason, answer):
        super()._stop("finish" if reason == self.reason else reason, answer)


CapAsFinish = type("CapAsFinish", (_AsFinish,), {"reason": "max_steps"})
ModelErrorAsFinish = type("ModelErrorAsFinish", (_AsFinish,), {"reason": "model_error"})


BUGGY = {c.__name__: c for c in (IgnoresFinish, StopsOneStepEarly, CrashesOnModelErrors, StopsOnToolErrors,
                                 CapAsFinish, ModelErrorAsFinish)}


def verdict_on(t, name):
    """verdict(t, the buggy agent class of that name)."""
    return verdict(t, BUGGY[name])


def on_agent(t, times):
    """What t returns on course_lib's Agent, `times` times in a row."""
    return [t(Agent) for _ in range(times)]
