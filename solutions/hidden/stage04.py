"""Hidden cases of stage 04 (see course_lib/courseware/hidden.py): validate_action, find_action, parse_action."""
from course_lib.courseware.checks import Case
from course_lib.courseware.exercises.stage04 import repeated
from course_lib.courseware.observe import call, using
from course_lib.parsing import ParsedReply

_names_tool = lambda got: isinstance(got, str) and "tool" in got
_names_args = lambda got: isinstance(got, str) and "args" in got
_a_message = lambda got: isinstance(got, str) and bool(got.strip())

_PRICE = '{"tool": "lookup", "args": {"topic": "단가"}}'
_DRAFT = '{"tool": "calculator", "args": {"expression": "20*7"}}'
PRICE = {"tool": "lookup", "args": {"topic": "단가"}}
_GOOD = ParsedReply(ok=True, tool="lookup", args={"topic": "단가"}, error=None)


def _failed(result):
    """A failed parse: a ParsedReply with ok=False, an error, tool None and args {}."""
    return isinstance(result, ParsedReply) and result.ok is False and bool(result.error) and result.tool is None \
        and result.args == {}

HIDDEN = {
    "04.1": [
        Case("another good action", call({"tool": "calculator", "args": {"expression": "2+2"}}), expected=None),
        Case("empty args are fine", call({"tool": "list_files", "args": {}}), expected=None),
        Case("key order does not matter", call({"args": {}, "tool": "finish"}), expected=None),
        Case("spaces around a name are fine", call({"tool": " lookup ", "args": {"topic": "x"}}), expected=None),
        Case("extra keys are ignored", call({"tool": "lookup", "args": {}, "thought": "hm"}), expected=None),
        *[Case(f"tool={bad!r} needs a message naming tool", call({"tool": bad, "args": {}}), test=_names_tool,
               shows='a message naming "tool"')
          for bad in (None, "", "\n\t", ["lookup"], {"name": "lookup"}, True, 3.5)],
        *[Case(f"args={bad!r} needs a message naming args", call({"tool": "calculator", "args": bad}),
               test=_names_args, shows='a message naming "args"') for bad in ("x", 7, True, ["a"], ("a",), 0.5)],
        *[Case(f"{junk!r} is not an action", call(junk), test=_a_message, shows="a message")
          for junk in (42, "lookup", b"{}", 3.5, set(), ("tool", "args"))],
    ],
    "04.2": [
        Case("braces inside a JSON string", call('{"tool": "finish", "args": {"answer": "Done {really}."}}'),
             expected={"tool": "finish", "args": {"answer": "Done {really}."}},
             hint="braces inside a JSON string belong to the string: let the decoder read it"),
        Case("a space after { is fine", call('noise } { "tool": "list_files" } more'), expected={"tool": "list_files"}),
        Case("the first object with a tool key wins", call('{"tool": 5} {"tool": "lookup"}'), expected={"tool": 5}),
        Case("escaped Korean decodes", call(r'{"tool": "lookup", "args": {"topic": "\ub2e8\uac00"}}'), expected=PRICE),
        Case("scanning goes on inside an object", call('{"a": {"tool": "lookup"}}'), expected={"tool": "lookup"}),
        Case("after a RecursionError, scanning goes on", call('{"a": ' + "[" * 5000 + " " + _PRICE), expected=PRICE),
        *[Case(f"{text[:30]!r} holds no action", call(text), expected=None)
          for text in ("", "   ", "{}", "{" * 1000, '["calculator", "24*7"]', '{"tool" "lookup"}', "}{")],
        *[Case(f"{junk!r} is not text", call(junk), expected=None)
          for junk in (None, 42, b'{"tool": "lookup"}', ["{"], {"tool": "lookup"})],
    ],
    "04.3": [
        Case("the whole ParsedReply, error=None", call(f"<think>Maybe {_DRAFT}?</think>\n{_PRICE}"), expected=_GOOD),
        Case("blocks side by side", call(f"<think>one</think><think>two {_DRAFT}</think> so: {_PRICE}"),
             expected=_GOOD),
        Case("a block with Windows line ends", call(f"<think>\r\n{_DRAFT}\r\n</think>{_PRICE}"), expected=_GOOD),
        Case("no <think> at all is fine", call(f"Thinking aloud: {_PRICE}"), expected=_GOOD),
        Case("spaces around the name go", call('{"tool": "  lookup  ", "args": {"topic": "단가"}}'), expected=_GOOD),
        Case("args null becomes {}", call('{"tool": "list_files", "args": null}'),
             expected=ParsedReply(ok=True, tool="list_files", args={})),
        Case("an unclosed <think> is left alone",
             call('{"tool": "finish", "args": {"answer": "Models write <think> notes."}}'),
             test=lambda r: r.args == {"answer": "Models write <think> notes."}, shows="the answer's text unchanged"),
        Case("an action only inside <think> is none", call(f"<think>{_PRICE}</think>"),
             test=lambda r: r.ok is False and bool(r.error), shows="ok=False with an error"),
        Case("validate_action's message is the error", call('{"tool": "", "args": {}}'),
             test=lambda r: r.ok is False and "tool" in r.error, shows="ok=False, an error naming tool"),
        *[Case(f"{label}: a failure", probe, test=_failed, shows="ok=False, an error, tool None, args {}")
          for label, probe in [("None", call(None)), ("42", call(42)), ("['x']", call(["x"])), ("b''", call(b"")),
                               ("{'tool': 'lookup'}", call({"tool": "lookup"})), ("''", call("")),
                               ("1,000,000 x's", using(repeated, "x", 1_000_000)),
                               ("'<think>' * 3", call("<think>" * 3))]],
    ],
}

# Wrong solutions that pass every visible case and fail a hidden one (the old hidden-test cell failed them too):
# (exercise, the hidden case's label it fails, [(old, new) edits of the solution cell], the mistake in a few words)
CAUGHT = [
    ("04.1", "tool='' needs a message naming tool", [("not tool.strip()", "tool.isspace()")],
     "a blank name found with isspace(), which is False for ''"),
    ("04.1", "args=7 needs a message naming args",
     [("if args is not None and not isinstance(args, dict):", "if isinstance(args, (str, list)):")],
     "refuses text and lists as args, not every non-dict"),
    ("04.1", "42 is not an action", [("if not isinstance(data, dict):", "if data is None or isinstance(data, list):")],
     "only None and lists are refused as actions: 42.get raises"),
    ("04.2", "42 is not text", [("if not isinstance(text, str):", "if text is None:")],
     "only None is refused as text: 42.find raises"),
    ("04.2", "a space after { is fine", [('start = text.find("{")', "start = text.find('{\"')"),
                                         ('start = text.find("{", start + 1)', "start = text.find('{\"', start + 1)")],
     "it looks for '{\"', so an object written '{ \"tool\"' is missed"),
    ("04.3", "the whole ParsedReply, error=None",
     [('args=data.get("args") or {})', 'args=data.get("args") or {}, error="")')],
     "a success carries error='' instead of None"),
    ("04.3", "an unclosed <think> is left alone",
     [("            break                        # never closed: hide nothing",
       "            kept.append(text[pos:start])\n            pos = start + len(\"<think>\")\n            continue")],
     "an unclosed <think> tag is dropped, even inside a JSON string"),
    ("04.3", "b'': a failure", [("if not isinstance(text, str):", "if not isinstance(text, (str, bytes)):")],
     "bytes are let through as text: b''.find('<think>') raises"),
]
