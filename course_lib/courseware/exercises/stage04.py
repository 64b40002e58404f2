"""Stage 04 exercises: check an action's shape, find the JSON action in messy text, parse past <think> notes."""
from __future__ import annotations

import json

from course_lib.courseware.checks import Case, Exercise

PRICE = '{"tool": "lookup", "args": {"topic": "단가"}}'
TIMES = '{"tool": "calculator", "args": {"expression": "24*7"}}'
DRAFT = '{"tool": "calculator", "args": {"expression": "20*7"}}'
PRICE_D = {"tool": "lookup", "args": {"topic": "단가"}}
TIMES_D = {"tool": "calculator", "args": {"expression": "24*7"}}
SAYS_PRICE, SAYS_TIMES = 'lookup {"topic": "단가"}', 'calculator {"expression": "24*7"}'


def _message(*words):
    """A test: a non-empty message (str) that contains each of `words`."""
    return lambda got: isinstance(got, str) and bool(got.strip()) and all(w in got for w in words)


def _said(result):
    """A ParsedReply in a few words: 'lookup {"topic": "단가"}' or 'error: ...'; anything else as it is."""
    ok = getattr(result, "ok", None)
    if ok is True:
        return f"{result.tool} {json.dumps(result.args, ensure_ascii=False)}"
    if ok is False and isinstance(getattr(result, "error", None), str) and result.error.strip():
        return f"error: {result.error}"
    return result


def _fields(result):
    """A ParsedReply's ok, tool and args, for checking a failure beyond its error."""
    return result.ok, result.tool, result.args


def repeated(f, piece: str, times: int):
    """``f(piece * times)``: a long text built where the answer runs, not sent."""
    return f(piece * times)


_ERROR = _message("error: ")
NEEDS_TOOL = 'say that "tool" must be a non-empty string'
NEEDS_ARGS = 'say that "args" must be a JSON object (a dict)'
NO_ACTION = "no action found: return ParsedReply(ok=False, error=...) with a message for the model"

EXERCISES = {
    "04.1": Exercise("Check the shape of an action", [
        Case("a good action", lambda f: f(PRICE_D), expected=None,
             hint="a dict with a non-empty str tool and a dict args is fine: return None"),
        Case("args missing: fine", lambda f: f({"tool": "list_files"}), expected=None,
             hint="a tool without arguments may leave out args"),
        Case("args null: fine", lambda f: f({"tool": "list_files", "args": None}), expected=None,
             hint="treat args: null like missing args"),
        Case("no tool", lambda f: f({"args": {"topic": "단가"}}), test=_message("tool"),
             shows='a message naming "tool"', hint=NEEDS_TOOL),
        Case("tool is blank", lambda f: f({"tool": "   ", "args": {}}), test=_message("tool"),
             shows='a message naming "tool"', hint="a tool name of only spaces is as bad as none"),
        Case("tool is a number", lambda f: f({"tool": 42}), test=_message("tool"),
             shows='a message naming "tool"', hint=NEEDS_TOOL),
        Case("args is a string", lambda f: f({"tool": "calculator", "args": "24*7"}), test=_message("args"),
             shows='a message naming "args"', hint=NEEDS_ARGS),
        Case("args is a list", lambda f: f({"tool": "calculator", "args": ["24*7"]}), test=_message("args"),
             shows='a message naming "args"', hint=NEEDS_ARGS),
        Case("args is an empty list", lambda f: f({"tool": "calculator", "args": []}), test=_message("args"),
             shows='a message naming "args"',
             hint="only missing args or null mean none: `data.get('args') or {}` lets [] through; test `is not None`"),
        Case("not a dict: None", lambda f: f(None), test=_message(), shows="a message",
             hint="check isinstance(data, dict) first, and return a message instead of raising"),
        Case("not a dict: a list", lambda f: f(["lookup", {"topic": "단가"}]), test=_message(), shows="a message",
             hint="a JSON array is not an action"),
    ]),
    "04.2": Exercise("Find the JSON action in messy text", [
        Case("plain JSON", lambda f: f(PRICE), expected=PRICE_D,
             hint="decode with DECODER.raw_decode(text, i) at the first '{' and return the dict"),
        Case("```json fence", lambda f: f(f"```json\n{TIMES}\n```"), expected=TIMES_D,
             hint="start decoding at a '{', not at the start of the text"),
        Case("chatty prose around it", lambda f: f(f"Sure! First the price.\n{PRICE}\nThen I multiply."),
             expected=PRICE_D, hint="raw_decode stops after one value: the prose behind it is never read"),
        Case("braces in prose first", lambda f: f("The set {1, 2} has two items.\n" + TIMES), expected=TIMES_D,
             hint="when decoding fails at one '{', move on to the next '{'"),
        Case("two objects: first wins", lambda f: f(f"{PRICE}\n{TIMES}"), expected=PRICE_D,
             hint="return the first object with a tool key: stop scanning there"),
        Case("args before tool", lambda f: f('{"args": {"expression": "24*7"}, "tool": "calculator"}'),
             expected=TIMES_D, hint="the outer object has the tool key; the inner one does not"),
        Case("an action inside an object", lambda f: f('{"note": ' + PRICE + "}"), expected=PRICE_D,
             hint="an object without a tool key may hold the action: try the very next '{', not the end of it"),
        Case('{"tool": 5} is still found', lambda f: f('{"tool": 5} ' + PRICE), expected={"tool": 5},
             hint="return the first object with a tool key as it is: checking it is validate_action's job"),
        Case("wrong key names", lambda f: f('{"name": "calculator", "arguments": {"expression": "1"}}'),
             expected=None, hint='only an object with a "tool" key is an action'),
        Case("broken JSON", lambda f: f(TIMES[:-1]), expected=None,
             hint='the inner {"expression": ...} decodes, but it has no "tool" key'),
        Case("not text: None", lambda f: f(None), expected=None, hint="anything that is not a str: return None"),
        Case("too deep to decode", lambda f: f('{"tool": "finish", "args": {"answer": ' + "[" * 100_000),
             expected=None, hint="the decoder can raise RecursionError, which is not a ValueError: catch it too"),
        Case("too deep, then an action", lambda f: f('{"a": ' + "[" * 100_000 + " " + PRICE),
             expected=PRICE_D, hint="after a RecursionError, go on with the next '{', as after any failed decode"),
        Case("1 MB of prose, then JSON", lambda f: f("All work and no play. " * 48_000 + PRICE), expected=PRICE_D,
             hint="jump from '{' to '{' with text.find(\"{\", i): never slice or copy the long text in a loop"),
    ]),
    "04.3": Exercise("Parse a reply that thinks out loud", [
        Case("draft in <think> skipped", lambda f: _said(f(f"<think>Maybe {DRAFT}? No.</think>\n{PRICE}")),
             expected=SAYS_PRICE, hint="remove closed <think>...</think> blocks before looking for the action"),
        Case("a '<' inside <think>", lambda f: _said(f(f"<think>Is 20 < 24? Maybe {DRAFT}.</think>\n{PRICE}")),
             expected=SAYS_PRICE, hint="a block ends at the first '</think>', whatever is inside: [^<]* stops at '<'"),
        Case("unclosed <think>", lambda f: _said(f(f"<think>I need the price first. {PRICE}")),
             expected=SAYS_PRICE, hint="a <think> that is never closed hides nothing"),
        Case("only a draft", lambda f: _said(f(f"<think>{DRAFT}</think>\nLet me think more.")), test=_ERROR,
             shows="ok=False with an error", hint="the draft is not the answer: report that no action was found"),
        Case("two <think> blocks", lambda f: _said(f(f"<think>a</think>\n{TIMES}\n<think>{DRAFT}</think>")),
             expected=SAYS_TIMES, hint="each block ends at its OWN </think> (a greedy match eats the action)"),
        Case("two blocks side by side", lambda f: _said(f(f"<think>a</think><think>{DRAFT}</think>\n{PRICE}")),
             expected=SAYS_PRICE, hint="remove EVERY closed block, not only the first: loop, or re.sub without count=1"),
        Case("<think> over many lines", lambda f: _said(f(f"<think>\nfirst {DRAFT}\nno wait\n</think>\n{PRICE}")),
             expected=SAYS_PRICE, hint="a block can span lines (regex: re.DOTALL)"),
        Case("missing args", lambda f: _said(f('{"tool": "list_files"}')), expected="list_files {}",
             hint="missing args become {}"),
        Case("args null", lambda f: _said(f('{"tool": "list_files", "args": null}')), expected="list_files {}",
             hint="args null becomes {} too: data.get('args', {}) gives None here, data.get('args') or {} gives {}"),
        Case("spaces around the name", lambda f: _said(f('{"tool": "  lookup  ", "args": {"topic": "단가"}}')),
             expected=SAYS_PRICE, hint="the tool is the name with the spaces around it removed: .strip()"),
        Case("args not an object", lambda f: _said(f('{"tool": "calculator", "args": "24*7"}')),
             test=_message("error: ", "args"), shows="an error naming args", hint="use your validate_action"),
        Case("a failure: tool None, args {}", lambda f: _fields(f('{"tool": "calculator", "args": "24*7"}')),
             expected=(False, None, {}), hint="a failed parse is ParsedReply(ok=False, error=...): tool None, args {}"),
        Case("no JSON at all", lambda f: _said(f("Seven units cost $168.")), test=_ERROR,
             shows="ok=False with an error", hint=NO_ACTION),
        Case("not text: 42", lambda f: _said(f(42)), test=_ERROR, shows="ok=False with an error",
             hint="check the type first; never raise"),
        Case("empty reply", lambda f: _said(f("  \n ")), test=_ERROR, shows="ok=False with an error",
             hint="an empty or blank reply holds no action: ok=False with an error, never an exception"),
    ]),
}
