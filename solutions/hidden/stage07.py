"""Hidden cases of stage 07 (see course_lib/courseware/hidden.py): a queue model, a recovery script, a model that
reacts, a test that catches bugs."""
import json

from course_lib.courseware.checks import Case
from course_lib.courseware.exercises.stage07 import (left_as, lookups, native_run, on_agent, own_calls,
                                                     recovery_runs, reply_to, session, short_script, verdict_on)
from course_lib.courseware.observe import using


def _act(tool, **args):
    return json.dumps({"tool": tool, "args": args}, ensure_ascii=False)


# ---- 07.1 QueueModel: session(...) gives {"returned": each call's reply, "recorded": each call's length}
ONE, TWO = _act("finish", answer="one"), _act("finish", answer="two")
SESSION = using(session, [ONE, TWO])

# ---- 07.2 recovery_script: recovery_runs(...) gives the run's history (twice), trace, answer, what the model saw
RECOVERY = using(recovery_runs, "How much do seven units cost?")


def _format_steps(got):
    return [s.number for s in got["trace"] if s.error and not s.runs and not s.error.startswith("model error")]


def _failed_steps(got):
    return [s.number for s in got["trace"] if any(r.observation.is_error for r in s.runs)]


def _calc_168(got):
    return [s.number for s in got["trace"] for r in s.runs if r.tool == "calculator" and r.observation.content == "168"]


# ---- 07.3 retrying_model
def _history(goal, *turns):
    messages = [{"role": "system", "content": "(system prompt)"}, {"role": "user", "content": goal}]
    for i, text in enumerate(turns):
        messages.append({"role": "assistant" if i % 2 == 0 else "user", "content": text})
    return messages


def _error(topic):
    return (f"Observation: Error: lookup: nothing is known about '{topic}'. Known topics: unit price (단가), "
            "refund policy (환불 정책), shipping (배송), warranty (보증), support hours (고객센터 운영시간)")


NAMES = ["unit price", "refund policy", "shipping", "warranty", "support hours"]
WARRANTY = _history("  warranty \n")
ALL_TRIED = _history("cost", *[text for name in ["cost"] + NAMES
                              for text in (_act("lookup", topic=name), _error(name))])
CORRECTED = ALL_TRIED[:-1] + [{"role": "user", "content": "Your reply could not be used: no JSON object found."}]
GIVE_UP = ("finish", {"answer": "I could not find it."})
PICKY = {"known": "shipping", "fact": "Free shipping on orders of $500 or more",
         "listed": "unit price (단가), refund policy (환불 정책), shipping (배송)"}

HIDDEN = {
    "07.1": [
        Case("every model has its own calls list", using(own_calls), expected=([], 1),
             hint="set self.calls = [] in __init__, not on the class"),
        Case("call 1 returns reply 1 unchanged", SESSION, test=lambda got: got["returned"][0] == ONE,
             shows="reply 1, the same str"),
        Case("calls hold a copy of the messages", SESSION, test=lambda got: got["recorded"][0] == 1,
             shows="call 1 recorded 1 message", hint="append list(messages), not the caller's list"),
        Case("the model keeps its own list of replies", SESSION, test=lambda got: got["returned"][1] == TWO,
             shows="reply 2, after the caller cleared its list", hint="list(replies) in __init__, always"),
        Case("call 3 of a 2-reply script raises ModelError", SESSION,
             test=lambda got: got["returned"][2] == "raised ModelError", shows="raised ModelError"),
        Case("every call is recorded, the failing one too", SESSION, test=lambda got: len(got["recorded"]) == 3,
             shows="3 calls recorded"),
        Case("a native Reply reaches the agent unchanged", using(native_run, "What is 6 times 7?", "6*7", "42"),
             expected=("42", "42"), hint="return the scripted reply as it is: the agent reads its tool calls"),
        Case("a 2-reply script: model_error at step 3", using(short_script, 2), expected=("model_error", 3),
             hint="the call that finds the script empty raises ModelError"),
    ],
    "07.2": [
        Case("two runs give the same history", RECOVERY, test=lambda got: got["history"] == got["again"],
             shows="the same history twice", hint="a script is fixed text: no random or time-dependent replies"),
        Case("first a broken reply, then a failing tool", RECOVERY,
             test=lambda got: bool(_format_steps(got) and _failed_steps(got))
             and _format_steps(got)[0] < _failed_steps(got)[0], shows="an unusable step before a failed call"),
        Case("the model was told its reply was unusable", RECOVERY,
             test=lambda got: any(str(t).startswith("Your reply could not be used") for t in got["told"]),
             shows="the corrective message in the last call"),
        Case("the model saw the error observation", RECOVERY,
             test=lambda got: any(str(t).startswith("Observation: Error") for t in got["told"]),
             shows="an error observation in the last call"),
        Case("the calculator said 168 before the finish", RECOVERY,
             test=lambda got: bool(_calc_168(got)) and _calc_168(got)[0] < got["trace"][-1].number,
             shows="a calculator run giving 168, then a later step"),
        Case("the last step is the finish", RECOVERY,
             test=lambda got: got["trace"][-1].answer == got["answer"] and got["answer"] is not None,
             shows="the last step's answer is the run's"),
        Case("the answer mentions 168", RECOVERY, test=lambda got: "168" in got["answer"], shows="contains 168"),
    ],
    "07.3": [
        Case("strip the spaces around the goal", using(reply_to, WARRANTY), expected=("lookup", {"topic": "warranty"})),
        Case("the first call leaves the messages alone", using(left_as, WARRANTY), expected=WARRANTY,
             hint="only read messages: no changes to the agent's own history, not even a strip in place"),
        Case("every topic tried: give up", using(reply_to, ALL_TRIED), expected=GIVE_UP),
        Case("every topic tried: messages left alone", using(left_as, ALL_TRIED), expected=ALL_TRIED),
        Case("a corrective message: give up", using(reply_to, CORRECTED), expected=GIVE_UP,
             hint="finish with the fact only after an observation that is no error"),
        Case("Agent, Korean goal 단가: the answer in two steps", using(lookups, "단가"),
             expected=("개당 $24", ["단가"], 2)),
        Case("Agent, a lookup that knows only shipping: the answer", using(lookups, "할인", PICKY),
             test=lambda got: got[0] == PICKY["fact"], shows=repr(PICKY["fact"]),
             hint="keep trying the known topics not tried yet, as many as the error lists"),
        Case("Agent, a lookup that knows only shipping: the lookups", using(lookups, "할인", PICKY),
             test=lambda got: got[1] == ["할인", "unit price", "refund policy", "shipping"],
             shows="할인, unit price, refund policy, shipping"),
    ],
    "07.4": [
        Case("course_lib's Agent passes, every time", using(on_agent, 2), expected=[None, None],
             hint="build every model inside test_agent: a ScriptedModel is used up by one run"),
        Case("bug: finish is ignored", using(verdict_on, "IgnoresFinish"), expected="fails"),
        Case("bug: one step too few", using(verdict_on, "StopsOneStepEarly"), expected="fails"),
        Case("bug: model errors crash the run", using(verdict_on, "CrashesOnModelErrors"), expected="fails",
             hint="let an exception from agent.run through: no try/except around it"),
        Case("bug: a tool error ends the run", using(verdict_on, "StopsOnToolErrors"), expected="fails",
             hint="after the tool error, assert stop_reason == 'finish'"),
        Case("bug: the cap reported as finish", using(verdict_on, "CapAsFinish"), expected="fails",
             hint="assert stop_reason == 'max_steps'"),
        Case("bug: a model error reported as finish", using(verdict_on, "ModelErrorAsFinish"), expected="fails",
             hint="assert stop_reason == 'model_error'"),
    ],
}

# Wrong solutions that pass every visible case and fail a hidden one (the old hidden-test cell failed them too):
# (exercise, the hidden case's label it fails, [(old, new) edits of the solution cell], the mistake in a few words)
CAUGHT = [
    ("07.1", "the model keeps its own list of replies",
     [("self.replies = list(replies)", "self.replies = replies if isinstance(replies, list) else list(replies)")],
     "a list kept as it came"),
    ("07.1", "call 1 returns reply 1 unchanged",
     [("return self.replies[len(self.calls) - 1]", "reply = self.replies[len(self.calls) - 1]\n"
       "        return Reply(text=reply) if isinstance(reply, str) else reply")], "text wrapped in a Reply"),
    ("07.2", "two runs give the same history",
     [('act("lookup", topic="discount")', 'act("lookup", topic=str(uuid.uuid4()))'),
      ("def recovery_script():", "import uuid\n\n\ndef recovery_script():")], "a random unknown topic"),
    ("07.2", "two runs give the same history",
     [("act(\"finish\", answer=\"Seven", "act(\"finish\", answer=f\"[{secrets.token_hex(8)}] Seven"),
      ("def recovery_script():", "import secrets\n\n\ndef recovery_script():")], "a run id in the answer"),
    ("07.3", "the first call leaves the messages alone",
     [("        goal = next(m[\"content\"] for m in messages if m[\"role\"] == \"user\")\n"
       "        return act(\"lookup\", topic=goal.strip())\n",
       "        goal = next(m for m in messages if m[\"role\"] == \"user\")\n"
       "        goal[\"content\"] = goal[\"content\"].strip()\n"
       "        return act(\"lookup\", topic=goal[\"content\"])\n")], "the goal stripped in place"),
    ("07.3", "Agent, a lookup that knows only shipping: the lookups",
     [("    if not tried:\n", "    if len(tried) >= 3:\n"
                            "        return act(\"finish\", answer=\"I could not find it.\")\n    if not tried:\n")],
     "gives up after three lookups"),
    ("07.4", "bug: model errors crash the run",
     [('    agent.run("One lookup only.")\n', '    try:\n        agent.run("One lookup only.")\n'
       "    except Exception:\n        pass   # the script runs out: the run may raise\n")], "the run's crash caught"),
    ("07.4", "course_lib's Agent passes, every time",
     [("    agent = agent_class(tools, ScriptedModel([act(\"calculator\", expression=\"10/0\"),\n"
       "                                              act(\"finish\", answer=\"Division by zero is undefined.\")]))\n",
       "    agent = agent_class(tools, DIVIDE)\n"),
      ("def test_agent(agent_class):", "DIVIDE = ScriptedModel([act(\"calculator\", expression=\"10/0\"),\n"
       "                        act(\"finish\", answer=\"Division by zero is undefined.\")])\n\n\n"
       "def test_agent(agent_class):")], "a model made once, outside the test"),
]
