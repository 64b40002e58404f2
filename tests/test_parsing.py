"""parse_reply (SPEC §4, course_lib.parsing): find the first valid JSON action in messy model text.

The contract: one object ``{"tool": NAME, "args": {...}}`` is found even inside prose, code fences,
``<think>`` notes or other braces; every failure is ``ok=False, tool=None, args={}`` with an error the
agent can send back; it never raises and stays linear on long or hostile text.
"""
import json
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from course_lib.parsing import ParsedReply, parse_reply

FINISH = '{"tool": "finish", "args": {"answer": "ok"}}'
CALC = '{"tool": "calculator", "args": {"expression": "24*7"}}'


def ok(tool, args):
    return ParsedReply(ok=True, tool=tool, args=args, error=None)


def assert_failed(reply):
    """The failure shape every caller relies on: nothing half-parsed leaks out."""
    assert isinstance(reply, ParsedReply)
    assert reply.ok is False
    assert reply.tool is None
    assert reply.args == {}
    assert isinstance(reply.error, str) and reply.error.strip()


def assert_consistent(reply):
    """ok ⇒ a usable action and no error; not ok ⇒ no tool and a real error message."""
    assert isinstance(reply, ParsedReply)
    if reply.ok:
        assert isinstance(reply.tool, str) and reply.tool.strip()
        assert isinstance(reply.args, dict)
        assert reply.error is None
    else:
        assert reply.tool is None
        assert reply.args == {}
        assert isinstance(reply.error, str) and reply.error.strip()
    # The catch-all in parse_reply is a safety net; text input should never need it (it would hide a bug).
    assert not (reply.error or "").startswith("could not read the reply")


# ------------------------------------------------------------------ finding the action

FOUND = [
    # The protocol itself.
    pytest.param(CALC, ok("calculator", {"expression": "24*7"}), id="plain-json"),
    pytest.param(json.dumps({"tool": "calculator", "args": {"expression": "1+1"}}, indent=2),
                 ok("calculator", {"expression": "1+1"}), id="pretty-printed"),
    # Code fences, with and without a language tag.
    pytest.param(f"```json\n{CALC}\n```", ok("calculator", {"expression": "24*7"}), id="fence-json"),
    pytest.param(f"```\n{CALC}\n```", ok("calculator", {"expression": "24*7"}), id="fence-plain"),
    # Chatty models talk before and after the action.
    pytest.param(f"Sure! Let me work that out.\n\n{CALC}\n\nI'll report back once I have the result.",
                 ok("calculator", {"expression": "24*7"}), id="prose-around"),
    # A draft action inside <think> is not the answer: the one after the block wins.
    pytest.param('<think>Maybe {"tool": "calculator", "args": {"expression": "1+1"}}? '
                 'No, I already know it.</think>\n{"tool": "finish", "args": {"answer": "2"}}',
                 ok("finish", {"answer": "2"}), id="think-draft-ignored"),
    pytest.param('<think>a</think> {"tool": "calculator", "args": {"expression": "1"}} '
                 '<think>{"tool": "lookup", "args": {}}</think>',
                 ok("calculator", {"expression": "1"}), id="think-blocks-on-both-sides"),
    # A model cut off before </think> still sent its action: find it.
    pytest.param(f"<think>I need the calculator for this. {CALC}",
                 ok("calculator", {"expression": "24*7"}), id="think-unclosed"),
    # Two actions: the first valid one wins.
    pytest.param(CALC + "\n" + FINISH, ok("calculator", {"expression": "24*7"}), id="two-actions-first-wins"),
    pytest.param('{"tool": "", "args": {}} ' + FINISH, ok("finish", {"answer": "ok"}),
                 id="invalid-then-valid"),
    pytest.param('{"tool": "x", "args": { ' + FINISH, ok("finish", {"answer": "ok"}), id="broken-then-valid"),
    # An object that is not an action is skipped.
    pytest.param('{"note": 1} {"tool": "lookup", "args": {"topic": "shipping"}}',
                 ok("lookup", {"topic": "shipping"}), id="non-action-first"),
    # An action wrapped in another object is still found.
    pytest.param('{"action": {"tool": "x", "args": {}}}', ok("x", {}), id="nested-in-wrapper"),
    # Korean: \u escapes are decoded, raw text is kept.
    pytest.param(r'{"tool": "lookup", "args": {"topic": "\ub2e8\uac00"}}', ok("lookup", {"topic": "단가"}),
                 id="korean-escaped"),
    pytest.param('단가를 찾아볼게요. {"tool": "lookup", "args": {"topic": "단가"}} 잠시만요.',
                 ok("lookup", {"topic": "단가"}), id="korean-raw"),
    # Key order is irrelevant.
    pytest.param('{"args": {"expression": "2+2"}, "tool": "calculator"}',
                 ok("calculator", {"expression": "2+2"}), id="args-first"),
    # Missing or null args mean "no arguments".
    pytest.param('{"tool": "list_files"}', ok("list_files", {}), id="args-missing"),
    pytest.param('{"tool": "list_files", "args": null}', ok("list_files", {}), id="args-null"),
    # Surrounding whitespace in the tool name is not part of the name.
    pytest.param('{"tool": "  calculator\\n", "args": {}}', ok("calculator", {}), id="tool-name-stripped"),
    # Braces inside JSON strings must not confuse the search.
    pytest.param('{"tool":"calculator","args":{"expression":"{"}}', ok("calculator", {"expression": "{"}),
                 id="open-brace-in-string"),
    pytest.param('{"tool":"calculator","args":{"expression":"}}"}}', ok("calculator", {"expression": "}}"}),
                 id="close-braces-in-string"),
    # ... nor other braces in the prose.
    pytest.param('set {1,2} then {"tool": "calculator", "args": {"expression": "1+2"}}',
                 ok("calculator", {"expression": "1+2"}), id="braces-in-prose-before"),
    pytest.param(CALC + " } ] { [ {", ok("calculator", {"expression": "24*7"}), id="stray-brackets-after"),
    # Regression: brackets inside the action's own strings once made it look "too deep" to try, and
    # a closed <think> block inside an answer string was silently cut out of the answer.
    pytest.param('{"tool": "finish", "args": {"answer": "' + "[" * 40 + '"}}',
                 ok("finish", {"answer": "[" * 40}), id="many-brackets-in-string"),
    pytest.param('{"tool": "finish", "args": {"answer": "' + "{" * 40 + '"}}',
                 ok("finish", {"answer": "{" * 40}), id="many-braces-in-string"),
    pytest.param('{"tool": "finish", "args": {"answer": ' + "[" * 40 + "]" * 40 + "}}",
                 ok("finish", {"answer": json.loads("[" * 40 + "]" * 40)}), id="deeply-nested-args"),
    pytest.param('{"tool": "finish", "args": {"answer": "wrap notes in <think>like this</think>"}}',
                 ok("finish", {"answer": "wrap notes in <think>like this</think>"}),
                 id="think-tags-inside-string"),
    pytest.param('{"tool": "finish", "args": {"answer": "an unclosed <think>"}} then </think>',
                 ok("finish", {"answer": "an unclosed <think>"}), id="think-tag-in-string-closed-later"),
    # Bytes from a raw HTTP body are decoded as UTF-8.
    pytest.param('{"tool": "lookup", "args": {"topic": "단가"}}'.encode(),
                 ok("lookup", {"topic": "단가"}), id="bytes"),
]


@pytest.mark.parametrize("text, expected", FOUND)
def test_finds_the_action(text, expected):
    assert parse_reply(text) == expected


# ------------------------------------------------------------------ failures

FAILURES = [
    # (input, a word the error should contain so the model knows what to fix)
    pytest.param("", "empty", id="empty"),
    pytest.param("   \n\t  ", "empty", id="whitespace"),
    pytest.param(None, "text", id="none"),
    pytest.param(42, "text", id="int"),
    pytest.param(["tool", "calculator"], "text", id="python-list"),
    pytest.param({"tool": "calculator", "args": {}}, "text", id="python-dict-not-text"),
    pytest.param("The answer is 4. No tool needed.", "JSON", id="no-json"),
    pytest.param('{"tool": "x", "args": {', "invalid JSON", id="invalid-json"),
    pytest.param("{'tool': 'calculator', 'args': {}}", "JSON", id="single-quotes"),
    pytest.param('[1, 2, 3]', "JSON", id="json-array"),
    pytest.param('["calculator", "2+2"]', "JSON", id="json-array-of-strings"),
    pytest.param('{"args": {"expression": "2+2"}}', '"tool"', id="missing-tool"),
    pytest.param('{"tool": "", "args": {}}', '"tool"', id="empty-tool"),
    pytest.param('{"tool": "   ", "args": {}}', '"tool"', id="blank-tool"),
    pytest.param('{"tool": 5, "args": {}}', '"tool"', id="tool-not-string"),
    pytest.param('{"tool": null, "args": {}}', '"tool"', id="tool-null"),
    pytest.param('{"tool": "calculator", "args": ["2+2"]}', '"args"', id="args-list"),
    pytest.param('{"tool": "calculator", "args": "2+2"}', '"args"', id="args-string"),
    pytest.param('{"tool": "calculator", "args": 3}', '"args"', id="args-number"),
    # The only action sits inside a closed <think>: it was a draft, so there is no action.
    pytest.param('<think>{"tool": "calculator", "args": {"expression": "1"}}</think> Not sure yet.', "JSON",
                 id="only-action-in-think"),
    pytest.param(b"\xff\xfe\xfd", "JSON", id="bytes-not-utf8"),
]


@pytest.mark.parametrize("value, hint", FAILURES)
def test_failures_are_clean(value, hint):
    reply = parse_reply(value)
    assert_failed(reply)
    assert hint in reply.error


def test_failure_args_is_a_fresh_dict():
    # A caller that mutates the args of one failure must not see it in the next.
    first = parse_reply("")
    first.args["x"] = 1
    assert parse_reply("").args == {}


# ------------------------------------------------------------------ property-based fuzzing

FAST = settings(max_examples=250, deadline=None, database=None)

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(), children, max_size=4),
    max_leaves=15,
)

FRAGMENTS = ['{', '}', '"tool"', ':', '"args"', ',', '[', ']', '"', '\\', 'finish', ' ', '\n', '```',
             '<think>', '</think>', '"calculator"', '{}', 'null']


@FAST
@given(st.text())
def test_fuzz_arbitrary_text_never_raises(text):
    assert_consistent(parse_reply(text))


@FAST
@given(st.lists(st.sampled_from(FRAGMENTS), max_size=60).map("".join))
def test_fuzz_json_fragments_never_raise(text):
    assert_consistent(parse_reply(text))


@FAST
@given(JSON_VALUES, st.booleans(), st.sampled_from([None, 2]))
def test_fuzz_any_json_value_never_raises(value, ensure_ascii, indent):
    assert_consistent(parse_reply(json.dumps(value, ensure_ascii=ensure_ascii, indent=indent)))


# Prose without braces (and without '<', so it cannot wrap the action in a <think> block by chance).
PROSE = st.text(alphabet=st.characters(blacklist_characters="{}<", blacklist_categories=("Cs",)))


@FAST
@given(PROSE, st.text(min_size=1).filter(lambda t: t.strip()),
       st.dictionaries(st.text(), JSON_VALUES, max_size=4), PROSE, st.booleans())
def test_fuzz_valid_action_in_prose_is_found(before, tool, args, after, ensure_ascii):
    action = json.dumps({"tool": tool, "args": args}, ensure_ascii=ensure_ascii)
    reply = parse_reply(f"{before}{action}{after}")
    # The parser strips whitespace around the tool name (see id=tool-name-stripped); nothing else changes.
    assert reply == ok(tool.strip(), args)


# ------------------------------------------------------------------ adversarial size (hang/quadratic guards)

ADVERSARIAL = [
    pytest.param("{" * 200_000 + FINISH, id="200k-open-braces"),
    pytest.param('{"a": ' * 20_000 + FINISH, id="20k-unclosed-objects"),
    pytest.param("All work and no play. " * 48_000 + FINISH, id="1MB-prose"),
    pytest.param("}" * 200_000 + FINISH, id="200k-close-braces"),
    pytest.param("<think>" * 100_000 + FINISH, id="100k-unclosed-think"),
]


# Timing in tests is a hang guard only (SPEC §7): generous enough that a loaded machine cannot trip it. Whether
# the work stays linear is asked by measuring twice in the same test: doubling the input must not quadruple it.
HANG_GUARD = 20.0


def timed(text: str):
    started = time.perf_counter()
    reply = parse_reply(text)
    return reply, time.perf_counter() - started


def best_time(text: str, runs: int = 3) -> float:
    return min(timed(text)[1] for _ in range(runs))


@pytest.mark.parametrize("text", ADVERSARIAL)
def test_adversarial_text_still_parses_quickly(text):
    reply, elapsed = timed(text)
    assert reply == ok("finish", {"answer": "ok"})
    assert elapsed < HANG_GUARD, f"took {elapsed:.2f}s: a hang"


HOSTILE_FAILURES = [
    pytest.param("[" * 100_000, id="100k-open-brackets"),
    pytest.param('{"a": [' * 50_000, id="50k-unclosed-mixed"),
    pytest.param('{"a": "' + "x" * 1_000_000, id="1MB-unterminated-string"),
    # Brackets hidden in strings defeat a naive nesting count; each start nests deeply, so without a
    # shared decoding budget this took seconds (every start decoded to the recursion limit).
    pytest.param('{"a": "]", "b": ' * 20_000, id="20k-starts-hidden-nesting"),
    pytest.param('{"a": "}", "b": ' * 20_000, id="20k-starts-hidden-nesting-braces"),
    # Every '{"' is a start that fails a character later; a JSONDecodeError counts the lines before its
    # position, so without charging that to the budget this took seconds.
    pytest.param('{"' * 100_000, id="100k-failing-starts"),
    pytest.param('{"x' * 100_000, id="100k-failing-starts-with-keys"),
]


@pytest.mark.parametrize("text", HOSTILE_FAILURES)
def test_hostile_text_fails_cleanly_and_quickly(text):
    reply, elapsed = timed(text)
    assert_failed(reply)
    assert elapsed < HANG_GUARD, f"took {elapsed:.2f}s: a hang"


@pytest.mark.parametrize("unit", ['{"', '{"x', '{"a": "]", "b": ', "["])
def test_doubling_hostile_text_does_not_quadruple_the_time(unit):
    once, twice = best_time(unit * 20_000), best_time(unit * 40_000)
    assert twice < 3 * once + 0.05, f"{once:.3f}s then {twice:.3f}s: quadratic behaviour"


def test_hidden_nesting_before_an_action_stays_fast():
    # Whether the action is found behind this much junk is not promised; finishing fast and sanely is.
    reply, elapsed = timed('{"a": "]", "b": ' * 20_000 + FINISH)
    assert elapsed < HANG_GUARD
    assert_consistent(reply)
