"""Hidden cases of stage 08 (see course_lib/courseware/hidden.py): three calls with an error among them, the
adapters' own messages as the expectation, the stand-in server, and 200 random streams read as the SDK reads them."""
import copy
import json
import random

from course_lib import default_tools
from course_lib.courseware.checks import Case
from course_lib.courseware.exercises.stage08 import call as on_copies
from course_lib.courseware.exercises.stage08 import (anthropic_results, anthropic_results_accepted, inputs_after,
                                                     openai_turn, openai_turn_accepted, responses_accepted,
                                                     responses_items, standin_chunks, standin_reply)
from course_lib.courseware.observe import using as _using
from course_lib.dispatch import dispatch
from course_lib.models.anthropic import history_to_anthropic
from course_lib.models.openai import history_to_openai, history_to_responses, reply_from_openai

TOOLS = default_tools()


def call(*args):
    """The candidate called with these arguments, on copies each time it runs (stage08.call): an answer that
    changes its input cannot change the case for the next run, or another case sharing the data."""
    return _using(on_copies, *copy.deepcopy(args))


def using(driver, *args, **kwargs):
    """observe.using, with its own copies of the arguments."""
    return _using(driver, *copy.deepcopy(args), **copy.deepcopy(kwargs))


def _observed(calls):
    """What the dispatcher makes of each [name, args, id] call, as [content, is_error]."""
    return [[o.content, o.is_error] for o in (dispatch(TOOLS, name, args) for name, args, _ in calls)]


def _neutral(text, calls, observations):
    """The agent's history of one tool turn, which course_lib's adapters translate."""
    return [{"role": "assistant", "content": text,
             "tool_calls": [{"id": i, "name": n, "args": a} for n, a, i in calls]},
            *[{"role": "tool", "tool_call_id": i, "name": n, "content": content, "is_error": is_error}
              for (n, a, i), (content, is_error) in zip(calls, observations)]]


# ---- 08.1: three calls, the last one refused by the dispatcher (no topic)
CALLS_1 = [["calculator", {"expression": "24*7"}, "call_a"], ["lookup", {"topic": "배송"}, "call_b"],
           ["lookup", {}, "call_c"]]
OBS_1 = _observed(CALLS_1)
TEXT_1 = "Three things at once."
OPENAI_1 = history_to_openai(_neutral(TEXT_1, CALLS_1, OBS_1))
ASKED_1, THANKS_1 = {"role": "user", "content": "Price, shipping?"}, {"role": "user", "content": "Thanks."}
ONE_1 = [["lookup", {"topic": "보증"}, "call_z"]]

# ---- 08.2: three results, the middle one an error
CALLS_2 = [["lookup", {"topic": "warranty"}, "toolu_a"], ["calculator", {"expression": "1/0"}, "toolu_b"],
           ["lookup", {"topic": "shipping"}, "toolu_c"]]
OBS_2 = _observed(CALLS_2)
GOAL_2 = {"role": "user", "content": "Warranty, 1/0 and shipping?"}
ANTHROPIC_2 = history_to_anthropic([GOAL_2, *_neutral("", CALLS_2, OBS_2)])[1][-1]
FAILED_2 = [["Error: a", True], ["Error: b", True]]


# ---- 08.3
def _message(*arguments):
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": f"call_{i}", "type": "function", "function": {"name": "lookup", "arguments": a}}
        for i, a in enumerate(arguments, 1)]}


MIXED_3 = _message(None, {"topic": "배송"}, "[1, 2]")
QUOTED_3 = "{'topic': '단가'}"
REFUSED_3 = dispatch(TOOLS, "lookup", QUOTED_3).is_error   # True: the dispatcher answers text arguments with an error
MSG_3 = _message('{"topic": "warranty"}', '{"topic": "환불"}', "")
ADAPTER_3 = list(reply_from_openai({"choices": [{"message": json.loads(json.dumps(MSG_3))}]}).tool_calls)

# ---- 08.4: three calls after a message and no reasoning; the last one refused by the dispatcher
CALLS_4 = [["calculator", {"expression": "24*7"}, "call_1"], ["lookup", {"topic": "배송"}, "call_2"],
           ["lookup", {}, "call_3"]]
OUTPUT_4 = [{"id": "msg_9", "type": "message", "status": "completed", "role": "assistant",
             "content": [{"type": "output_text", "text": "Three things.", "annotations": []}]}] + [
    {"id": f"fc_{k}", "type": "function_call", "status": "completed", "call_id": i, "name": n,
     "arguments": json.dumps(a, ensure_ascii=False)} for k, (n, a, i) in enumerate(CALLS_4, 1)]
OBS_4 = _observed(CALLS_4)
_TURN_4 = {**_neutral("Three things.", CALLS_4, OBS_4)[0], "raw": {"format": "openai-responses", "content": OUTPUT_4}}
RESPONSES_4 = history_to_responses([_TURN_4, *_neutral("Three things.", CALLS_4, OBS_4)[1:]])[1]

# ---- 08.5: the old hidden cell's 200 random turns (seed 85), streamed by the stand-in; the SDK's reader decides
_WORDS = ["단가", "shipping", "😀", " is ", "$24", "개당", "\n", "{", "\"", "무료"]


def _turns(n=200, seed=85):
    rng, turns = random.Random(seed), []
    for _ in range(n):
        turn = {"text": "".join(rng.choice(_WORDS) for _ in range(rng.randint(0, 12)))}
        turn["tool_calls"] = [{"name": rng.choice(["lookup", "calculator"]),
                               "args": {"topic": "".join(rng.choice(_WORDS) for _ in range(rng.randint(0, 6)))}}
                              for _ in range(rng.randint(0, 3))]
        if rng.random() < 0.2 and turn["tool_calls"]:   # cut off at the token limit: the last call's text half sent
            turn["tool_calls"][-1]["args"] = '{"topic": "' + rng.choice(_WORDS)
        turns.append(turn)
    return turns


def _cuts(turn) -> list[int]:
    """Every k for which the stream's first k chunks (short of the usage chunk and [DONE]) hold no finish_reason."""
    stream = standin_chunks(turn)
    return [k for k in range(1, len(stream) - 2)
            if not any(c.get("choices") and c["choices"][0].get("finish_reason") for c in stream[:k])]


def _sdk_reply(turn):
    """(text, finish_reason, [(id, name, arguments)]) as the openai SDK's own stream reader puts the stream together;
    arguments as assemble must give them: a JSON object decoded, anything else as its text."""
    from openai.lib.streaming.chat import ChatCompletionStreamState
    from openai.types.chat import ChatCompletionChunk
    state = ChatCompletionStreamState()
    for chunk in standin_chunks(turn)[:-1]:
        state.handle_chunk(ChatCompletionChunk.construct(**chunk))
    want = state.current_completion_snapshot.choices[0]   # the snapshot: a cut-off one too
    calls = []
    for c in want.message.tool_calls or []:
        try:
            value = json.loads(c.function.arguments or "{}")
        except ValueError:
            value = c.function.arguments
        calls.append((c.id, c.function.name, value if isinstance(value, dict) else c.function.arguments))
    return want.message.content or "", want.finish_reason, calls


def _like_the_sdk(turn):
    want = []   # the SDK's reply, worked out at the first judging and kept: every wrong solution is judged on it

    def test(got):
        text, finish, calls = want[0] if want else want.append(_sdk_reply(turn)) or want[0]
        return (got["text"] == text and got["finish_reason"] == finish
                and [(c["id"], c["name"]) for c in got["tool_calls"]] == [c[:2] for c in calls]
                and all(mine["arguments"] == arguments for mine, (_, _, arguments) in zip(got["tool_calls"], calls)))
    return test


TURNS_5 = _turns()

HIDDEN = {
    "08.1": [
        Case("three calls: course_lib's messages", using(openai_turn, TEXT_1, CALLS_1, OBS_1), expected=OPENAI_1,
             hint="the assistant message (content, tool_calls with type 'function'), then one tool message per call"),
        Case("empty args are the JSON text {}", using(openai_turn, TEXT_1, CALLS_1, OBS_1),
             test=lambda got: got[0]["tool_calls"][2]["function"]["arguments"] == "{}", shows="arguments '{}'",
             hint="json.dumps({}) is '{}': a call without arguments still sends its JSON text"),
        Case("the stand-in accepts the three",
             using(openai_turn_accepted, TEXT_1, CALLS_1, OBS_1, [ASKED_1], [THANKS_1]), expected=[],
             hint="'got' lists what the stand-in refused: every call answered by a tool message with its id"),
        Case("one call, no text: course_lib's messages", using(openai_turn, "", ONE_1, _observed(ONE_1)),
             expected=history_to_openai(_neutral("", ONE_1, _observed(ONE_1))), hint="an empty text is None"),
        Case("the same id twice is refused", using(openai_turn, "", [CALLS_1[0], CALLS_1[0]], OBS_1[:2]),
             raises=ValueError, hint="two calls with one id: raise ValueError"),
        Case("the input lists are not changed", using(openai_turn, TEXT_1, CALLS_1, OBS_1, after=True),
             expected=(CALLS_1, OBS_1), hint="build new lists and dicts: never change the calls or observations"),
    ],
    "08.2": [
        Case("three results: course_lib's message", using(anthropic_results, CALLS_2, OBS_2), expected=ANTHROPIC_2,
             hint="one user message, a tool_result block per call, is_error: True only on a failed one"),
        Case("is_error only on the failed call", using(anthropic_results, CALLS_2, OBS_2),
             test=lambda got: [b.get("is_error") for b in got["content"]] == [None, True, None],
             shows="is_error [None, True, None]", hint="read each observation's own is_error"),
        Case("each content is the observation's text", using(anthropic_results, CALLS_2, OBS_2),
             test=lambda got: [b["content"] for b in got["content"]] == [c for c, _ in OBS_2]
             and all(isinstance(b["content"], str) for b in got["content"]), shows="the three contents as text"),
        Case("the stand-in accepts the three", using(anthropic_results_accepted, GOAL_2, CALLS_2, OBS_2), expected=[],
             hint="'got' lists what the stand-in refused"),
        Case("every tool failed: every block says so", using(anthropic_results, CALLS_2[:2], FAILED_2),
             test=lambda got: [b.get("is_error") for b in got["content"]] == [True, True],
             shows="is_error [True, True]", hint="is_error on every block whose observation failed"),
        Case("a call without an id is refused", using(anthropic_results, [["lookup", {"topic": "x"}, ""]], OBS_2[:1]),
             raises=ValueError, hint="every call needs an id: raise ValueError"),
    ],
    "08.3": [
        Case("None, a dict and [1, 2] as arguments", call(MIXED_3),
             test=lambda got: [c.args for c in got] == [{}, {"topic": "배송"}, [1, 2]],
             shows="args [{}, {'topic': '배송'}, [1, 2]]", hint="None is {}, a dict stays, valid JSON is kept"),
        Case("three calls: ids in order", call(MIXED_3),
             test=lambda got: [c.id for c in got] == ["call_1", "call_2", "call_3"], shows="ids call_1, 2, 3"),
        Case("single-quoted JSON stays text", call(_message(QUOTED_3)),
             test=lambda got: len(got) == 1 and got[0].name == "lookup" and got[0].args == QUOTED_3 and REFUSED_3,
             shows=f"args {QUOTED_3!r}", hint="only json.loads decides: text it cannot read goes to the dispatcher"),
        Case("three calls: reply_from_openai's", call(MSG_3), expected=ADAPTER_3,
             hint="the same ToolCalls as course_lib's adapter: '' arguments are {}"),
        Case("the message is not changed", using(inputs_after, MSG_3), expected=[MSG_3],
             hint="read the message; never write the decoded arguments back into it"),
        Case("tool_calls []", call({"role": "assistant", "content": "", "tool_calls": []}), expected=[]),
    ],
    "08.4": [
        Case("three calls: course_lib's items", using(responses_items, OUTPUT_4, OBS_4), expected=RESPONSES_4,
             hint="the output items as they came, then one function_call_output per call"),
        Case("results in the calls' order", using(responses_items, OUTPUT_4, OBS_4),
             test=lambda got: [i.get("call_id") for i in got[4:]] == ["call_1", "call_2", "call_3"],
             shows="call_ids call_1, 2, 3 after the 4 items"),
        Case("an error's output is its text", using(responses_items, OUTPUT_4, OBS_4),
             test=lambda got: got[-1] == {"type": "function_call_output", "call_id": "call_3", "output": OBS_4[2][0]},
             shows="the last result: its three keys", hint="no is_error in the Responses API: the text says it"),
        Case("nothing else is added", using(responses_items, OUTPUT_4, OBS_4), test=lambda got: len(got) == 7,
             shows="7 items"),
        Case("the output items are not changed", using(responses_items, OUTPUT_4, OBS_4, after=True),
             expected=OUTPUT_4, hint="copy, do not edit: list(output) + results"),
        Case("the stand-in accepts an error second", using(responses_accepted, [OBS_4[2], OBS_4[0]]), expected=[],
             hint="'got' lists what the stand-in refused after a turn whose second result is an error"),
    ],
    "08.5": [
        *[Case(f"stream {n}: read as the SDK reads it", using(standin_reply, turn), test=_like_the_sdk(turn),
               shows="the SDK's text, finish_reason and calls",
               hint="join the text; the calls by index; arguments an object, else their text")
          for n, turn in enumerate(TURNS_5, 1)],
        *[Case(f"stream {n}: cut short, refused", using(standin_reply, turn, cuts=_cuts(turn)),
               test=lambda got: set(got) == {"raised ValueError"}, shows="ValueError for every cut",
               hint="a stream without its finish_reason broke off: raise ValueError")
          for n, turn in enumerate(TURNS_5, 1)],
    ],
}

# Wrong solutions that pass every visible case and fail a hidden one (the old hidden-test cell failed them too):
# (exercise, the hidden case's label it fails, [(old, new) edits of the solution cell], the mistake in a few words)
CAUGHT = [
    ("08.1", "three calls: course_lib's messages", [('{"id": call.id, "type": "function",\n', '{"id": call.id,\n')],
     'no "type": "function" in a tool call'),
    ("08.1", "empty args are the JSON text {}",
     [("json.dumps(call.args, ensure_ascii=False)", 'json.dumps(call.args, ensure_ascii=False) if call.args else ""')],
     "no arguments sent as empty text"),
    ("08.1", "the input lists are not changed",
     [("for call, observation in zip(calls, observations)]",
       "for call, observation in zip(calls, [observations.pop(0) for _ in calls])]")],
     "the observations popped off the caller's list"),
    ("08.2", "is_error only on the failed call",
     [('        if observation.is_error:\n            block["is_error"] = True\n        blocks.append(block)\n',
       '        blocks.append(block)\n    if observation.is_error:\n        block["is_error"] = True\n')],
     "the is_error test after the loop: only the last block can be marked"),
    ("08.2", "three results: course_lib's message",
     [('"content": observation.content}', '"content": observation.content.removeprefix("Error: ")}')],
     "'Error: ' dropped from a failed result's text"),
    ("08.3", "the message is not changed",
     [("        calls.append(ToolCall(",
       '        call["function"]["arguments"] = args\n        calls.append(ToolCall(')],
     "the decoded arguments written back into the message"),
    ("08.3", "single-quoted JSON stays text",
     [("                args = raw   # the dispatcher",
       "                import ast\n                try:\n                    args = ast.literal_eval(raw)\n"
       "                except (ValueError, SyntaxError):\n                    args = raw   # the dispatcher")],
     "Python's literal_eval as a fallback: {'topic': ...} read as a dict"),
    ("08.4", "the output items are not changed", [("    return list(output) + results\n",
                                                   "    output.extend(results)\n    return output\n")],
     "the results appended to the caller's output list"),
    ("08.4", "three calls: course_lib's items",
     [('"output": observation.content}',
       '"output": observation.content, **({"is_error": True} if observation.is_error else {})}')],
     "is_error on a failed result, which the Responses API does not have"),
    ("08.5", "stream 2: read as the SDK reads it", [('"text": "".join(text)', '"text": "".join(text).strip()')],
     "the text stripped"),
    ("08.5", "stream 10: read as the SDK reads it",
     [("    except ValueError:\n        return arguments\n",
       "    except ValueError:\n        try:\n            value = json.loads(arguments + '\"}')   # cut off: close it\n"
       "        except ValueError:\n            return arguments\n")], "a cut-off call's JSON closed and read"),
    ("08.5", "stream 1: cut short, refused",
     [("    if finish is None:\n", "    if finish is None and (any(text) or calls):\n")],
     "a stream with nothing in it yet taken for an empty reply"),
]
