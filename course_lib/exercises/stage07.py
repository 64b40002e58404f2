"""Stage 07 · scripted models: a queue model, a recovery script, a model that reacts, a test that catches bugs."""
from __future__ import annotations

import copy
import json

from .. import default_tools
from ..agent import Agent
from ..checks import Case, Exercise
from ..dispatch import Observation
from ..models import SCENARIOS, ModelError, Reply, ScriptedModel
from ..parsing import parse_reply

PRICE = SCENARIOS["price"]
PRICE_ANSWER = json.loads(PRICE["replies"][-1])["args"]["answer"]


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


# ---- 07.2 recovery_script
def recovery(f) -> dict:
    """What a run of the learner's script shows: stop reason, problems met, and whether it recovered."""
    script = f()
    model = ScriptedModel(script)
    agent = run(model)
    done = runs(agent)
    first_error = next((i for i, r in enumerate(done) if r.observation.is_error), None)
    return {"stop": agent.stop_reason, "answer": agent.answer or "", "left": model.remaining,
            "format_errors": sum(1 for s in agent.trace if s.error and not s.error.startswith("model error")),
            "tool_errors": sum(r.observation.is_error for r in done),
            "recovered": first_error is not None and any(not r.observation.is_error for r in done[first_error:]),
            "calc_168": any(r.tool == "calculator" and r.observation.content == "168" for r in done),
            "all_text": isinstance(script, list) and all(isinstance(r, str) for r in script)}


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


# ---- 07.4 test_agent: agents with one bug each; a good test fails on every one of them
class CrashesOnToolErrors(Agent):
    def _dispatch(self, step, tool, args):
        obs = super()._dispatch(step, tool, args)
        if obs.is_error:
            raise RuntimeError(obs.content)
        return obs


class HidesToolErrors(Agent):
    def _dispatch(self, step, tool, args):
        obs = super()._dispatch(step, tool, args)
        step.runs[-1].observation = Observation(obs.content, is_error=False)
        return step.runs[-1].observation


class IgnoresStepCap(Agent):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.max_steps = 1000


class OneStepTooMany(Agent):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.max_steps += 1


class SwallowsModelErrors(Agent):
    def _ask_model(self):
        try:
            return super()._ask_model()
        except ModelError:
            return Reply("")   # the bug: a failed model call looks like an empty reply


def verdict(test, agent_class) -> str:
    """'fails' when the learner's test raises on ``agent_class`` (any exception), else 'passes'."""
    try:
        test(agent_class)
    except NotImplementedError:
        raise
    except Exception:   # noqa: BLE001 - an assert or a crash: either way the test caught the bug
        return "fails"
    return "passes"


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
        Case("replies from a generator", lambda Q: run(Q(r for r in PRICE["replies"])).stop_reason,
             expected="finish", hint="turn replies into a list in __init__: list(replies)"),
    ]),
    "07.2": Exercise("A script that exercises error recovery", [
        Case("the run finishes", lambda f: recovery(f)["stop"], expected="finish",
             hint="end with a finish reply within 6 steps"),
        Case("answer mentions 168", lambda f: recovery(f)["answer"], test=lambda a: "168" in a, shows="contains 168"),
        Case("unusable replies (bad JSON)", lambda f: recovery(f)["format_errors"], test=lambda n: n >= 1,
             shows="at least 1", hint="one reply must be broken JSON, e.g. a missing closing brace"),
        Case("failed tool calls", lambda f: recovery(f)["tool_errors"], test=lambda n: n >= 1, shows="at least 1",
             hint="call a tool with input it refuses: lookup an unknown topic, or 10/0"),
        Case("a tool works after the failure", lambda f: recovery(f)["recovered"], expected=True),
        Case("calculator returned 168", lambda f: recovery(f)["calc_168"], expected=True,
             hint="let the calculator compute 24*7"),
        Case("replies left unused", lambda f: recovery(f)["left"], expected=0,
             hint="every reply should be used: finish is the last one"),
        Case("every reply is text", lambda f: recovery(f)["all_text"], expected=True,
             hint="return a list of str, as act(...) produces"),
    ]),
    "07.3": Exercise("A model that reacts to the history", [
        Case("1st call: look up the goal", lambda f: ask(f, history("unit price")),
             expected="lookup: unit price"),
        Case("a fact: finish with it", lambda f: ask(f, FACT), expected="finish: $24 per unit",
             hint="drop the 'Observation: ' prefix"),
        Case("an error: next known topic", lambda f: ask(f, FAILED), expected="lookup: unit price",
             hint="the English name only: the part before ' ('"),
        Case("skips topics already tried", lambda f: ask(f, FAILED_TWICE), expected="lookup: refund policy",
             hint="collect the topics of all earlier lookups in the history"),
        Case("error, no topic list: give up", lambda f: ask(f, NO_LIST), expected="finish: I could not find it."),
        Case("Agent, goal 'cost': answer", lambda f: run(f, "cost").answer, expected="$24 per unit"),
        Case("Agent, goal 'cost': lookups", lambda f: [r.args.get("topic") for r in runs(run(f, "cost"))],
             expected=["cost", "unit price"]),
    ]),
    "07.4": Exercise("A test that catches agent bugs", [
        Case("course_lib's Agent", lambda t: verdict(t, Agent), expected="passes",
             hint="your test fails on a correct agent: print agent.trace to see why"),
        Case("bug: tool errors crash the run", lambda t: verdict(t, CrashesOnToolErrors), expected="fails"),
        Case("bug: errors not flagged", lambda t: verdict(t, HidesToolErrors), expected="fails",
             hint="assert the observation's is_error"),
        Case("bug: no step cap", lambda t: verdict(t, IgnoresStepCap), expected="fails",
             hint="assert stop_reason == 'max_steps'"),
        Case("bug: one step too many", lambda t: verdict(t, OneStepTooMany), expected="fails",
             hint="assert the exact number of steps"),
        Case("bug: model errors hidden", lambda t: verdict(t, SwallowsModelErrors), expected="fails",
             hint="assert stop_reason == 'model_error' when the script runs out"),
    ]),
}
