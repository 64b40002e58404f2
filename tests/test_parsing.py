"""parse_reply (SPEC §4, course_lib.parsing): find the first valid JSON action in messy model text.

The contract: one object ``{"tool": NAME, "args": {...}}`` is found even inside prose, code fences,
``<think>`` notes or other braces; every failure is ``ok=False, tool=None, args={}`` with an error the
agent can send back; it never raises and stays linear on long or hostile text.
"""
import json
import re
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from course_lib.parsing import MAX_NESTING, ParsedReply, parse_reply

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
    # Right after a closed <think> block, with no space: the action starts where the draft ends, not in it.
    pytest.param('<think>{"tool": "calculator", "args": {}}</think>' + FINISH, ok("finish", {"answer": "ok"}),
                 id="action-right-after-think"),
    # Behind a non-action, so the parser cannot just take the first object: a flat action (no brackets
    # inside), one whose "tool" key is spelled with an escape, and one with a brace in a string are all tried.
    pytest.param('{"note": 1} {"tool": "list_files"}', ok("list_files", {}), id="flat-action-after-junk"),
    pytest.param('{"note": 1} {"t\\u006fol": "list_files"}', ok("list_files", {}),
                 id="escaped-tool-key-after-junk"),
    pytest.param('{"note": 1} {"a": "}", "tool": "list_files"}', ok("list_files", {}),
                 id="brace-in-string-after-junk"),
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
    # With no action anywhere, the error is about the first object outside <think>, even when the objects
    # after it are skipped unread (a flat object without "tool" cannot be an action) or brackets abound.
    pytest.param('{"note": 1} {"more": 2}', 'no "tool" field', id="error-about-first-object"),
    pytest.param('{"note": 1} ' + "[" * 100, 'no "tool" field', id="error-about-first-object-bracket-heavy"),
    pytest.param('<think>{"tool": 5}</think> {"note": 1}', 'no "tool" field',
                 id="error-about-first-after-think"),
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


def first_action_by_brute_force(text: str):
    """What parse_reply promises, the slow way: decode at every "{" outside a closed <think> block, in order, and
    take the first object that is a valid action."""
    thinking = [(m.start(), m.end()) for m in re.finditer(r"<think>.*?</think>", text, re.S)]
    for i in (i for i, c in enumerate(text) if c == "{" and not any(a <= i < b for a, b in thinking)):
        try:
            data = json.JSONDecoder().raw_decode(text, i)[0]
        except (ValueError, RecursionError):
            continue
        if (found := parsing_module._check_action(data)).ok:
            return found
    return None


ACTIONS = st.builds(lambda tool, args: {"tool": tool, "args": args}, st.sampled_from(["lookup", " calculator", "x"]),
                    st.dictionaries(st.text(max_size=4), JSON_VALUES, max_size=2))
HOLDING_ACTIONS = st.recursive(ACTIONS | JSON_VALUES, lambda inner: st.lists(inner, max_size=3)
                               | st.dictionaries(st.sampled_from(["a", "tool", "args", "note"]), inner, max_size=3),
                               max_leaves=8)
PIECES = PROSE | HOLDING_ACTIONS.map(json.dumps) | HOLDING_ACTIONS.map(lambda v: f"<think>{json.dumps(v)}</think>")


@settings(max_examples=400, deadline=None, database=None)
@given(st.lists(PIECES, max_size=6).map(" ".join))
def test_fuzz_the_action_found_is_the_first_a_brute_force_search_finds(text):
    """Objects in prose, in <think> blocks, actions nested in objects and lists, objects that are no action (a
    "tool" that is not text, bad args): however the search skips and jumps, it finds what trying every "{" finds."""
    expected, reply = first_action_by_brute_force(text), parse_reply(text)
    assert reply == expected if expected else not reply.ok


# ------------------------------------------------------------------ adversarial size (hang/quadratic guards)

ADVERSARIAL = [
    pytest.param("{" * 200_000 + FINISH, id="200k-open-braces"),
    pytest.param('{"a": ' * 20_000 + FINISH, id="20k-unclosed-objects"),
    pytest.param("All work and no play. " * 48_000 + FINISH, id="1MB-prose"),
    pytest.param("}" * 200_000 + FINISH, id="200k-close-braces"),
    pytest.param("<think>" * 100_000 + FINISH, id="100k-unclosed-think"),
]


# Timing in tests is a hang guard only (SPEC §7): generous enough that a loaded machine cannot trip it. Whether
# the work stays linear is asked by measuring twice in the same test, in this thread's processor time (which a
# loaded machine does not stretch): doubling the input must not quadruple it.
HANG_GUARD = 20.0


def timed(text: str):
    started = time.perf_counter()
    reply = parse_reply(text)
    return reply, time.perf_counter() - started


def best_time(text: str, runs: int = 3) -> float:
    """The least processor time of this thread over a few runs: other processes on a loaded machine do not count
    (wall-clock ratios did: 0.014 s then 0.093 s once, under four test workers on two cores)."""
    def cpu(text: str) -> float:
        started = time.thread_time()
        parse_reply(text)
        return time.thread_time() - started
    return min(cpu(text) for _ in range(runs))


@pytest.mark.parametrize("text", ADVERSARIAL)
def test_adversarial_text_still_parses_quickly(text):
    reply, elapsed = timed(text)
    assert reply == ok("finish", {"answer": "ok"})
    assert elapsed < HANG_GUARD, f"took {elapsed:.2f}s: a hang"


# About 1 MB of each kind of junk a stuck or hostile model might send, as (lead, repeated unit, count), with a
# real action after it: the action must be found. benchmarks/parse_bench.py times the same shapes.
PROSE_UNIT = "The model thinks out loud here, with numbers like 24 and 7, {braces}, and 한국어 text. "
JUNK = [
    pytest.param("", "{", 1_000_000, id="open-braces"),
    pytest.param("", "[", 1_000_000, id="open-brackets"),
    pytest.param("", '{"', 500_000, id="failing-starts"),
    pytest.param("", '{"a": ', 200_000, id="unclosed-objects"),
    pytest.param("", '{"tool": ', 100_000, id="unclosed-tool-keys"),
    pytest.param("", '{"a": [], "b": ', 66_000, id="unclosed-objects-with-flat-values"),
    pytest.param("", '"', 1_000_000, id="quotes"),
    pytest.param("", "\\", 1_000_000, id="backslashes"),
    pytest.param("", "}", 1_000_000, id="close-braces"),
    pytest.param('{"a":"', "x", 1_000_000, id="unterminated-string"),   # ends at the action's first quote
    pytest.param("", PROSE_UNIT, 1_000_000 // len(PROSE_UNIT), id="prose-braces-korean"),
    pytest.param("", "<think>", 100_000, id="unclosed-think"),
    pytest.param("", '{"a":1} ', 100_000, id="many-small-non-actions"),
    pytest.param("", '{"a":{"b":1}} ', 71_000, id="many-small-nested-non-actions"),
    pytest.param("", '{"a":{"b":{"c":{"d":1}}}} ', 37_000, id="many-four-deep-non-actions"),
    pytest.param("", '{"a":{"b":{"c":{"d":{"e":1}}}}} ', 30_000, id="many-five-deep-non-actions"),
    pytest.param("", '{"a":' * 20 + "1" + "}" * 20 + " ", 7_000, id="many-twenty-deep-non-actions"),
    pytest.param("", "[" * 32 + "1" + "]" * 32 + " ", 15_000, id="many-deep-arrays"),
    pytest.param("", '{"tool":"x","args":1} ', 45_000, id="many-actions-with-bad-args"),
    pytest.param("", '{"a":"[\\n"} ', 80_000, id="many-objects-with-brackets-and-escapes-in-strings"),
]
# The same junk behind a non-action, so the parser cannot jump straight to the first object and has to sort
# the starts out (which are worth trying, which sit deep in a long run of openers).
LEADS = [pytest.param("", id="junk-first"), pytest.param('{"note": 1} ', id="non-action-first")]


@pytest.mark.parametrize("first", LEADS)
@pytest.mark.parametrize("lead, unit, count", JUNK)
def test_the_action_behind_a_megabyte_of_junk_is_found(first, lead, unit, count):
    reply, elapsed = timed(first + lead + unit * count + FINISH)
    assert reply == ok("finish", {"answer": "ok"})
    assert elapsed < HANG_GUARD, f"took {elapsed:.2f}s: a hang"


@pytest.mark.parametrize("first", LEADS)
@pytest.mark.parametrize("lead, unit, count", JUNK)
def test_doubling_junk_before_an_action_does_not_quadruple_the_time(first, lead, unit, count):
    once, twice = (best_time(first + lead + unit * n + FINISH) for n in (count // 4, count // 2))
    assert twice < 3 * once + 0.05, f"{once:.3f}s then {twice:.3f}s: quadratic behaviour"


def test_an_action_at_the_end_of_a_long_run_of_openers_is_tried_early():
    # Of a run of openers only the last MAX_NESTING + 1 are tried before the deep ones. This action opens
    # MAX_NESTING more objects (the innermost, {"x": 1}, is flat and does not count), so it is exactly the
    # last start still tried early; from the deep end, each start reads to the recursion limit and the work
    # budget runs out long before the action.
    inner = '{"x": ' * (MAX_NESTING + 1) + "1" + "}" * (MAX_NESTING + 1)
    action = '{"tool": "finish", "args": ' + inner + "}"
    assert parse_reply('{"note": 1} ' + '{"a": ' * 5_000 + action) == ok("finish", json.loads(action)["args"])


def test_starts_that_look_deep_are_still_tried_last():
    # Brackets inside strings make this action look nested 40 deep; behind a non-action it is found anyway.
    deep = '{"tool": "finish", "args": {"answer": "' + "{" * 40 + '"}}'
    assert parse_reply('{"note": 1} ' + deep) == ok("finish", {"answer": "{" * 40})
    nested = '{"tool": "finish", "args": {"answer": ' + "[" * 40 + "]" * 40 + "}}"
    assert parse_reply('{"note": 1} ' + nested) == ok("finish", {"answer": json.loads("[" * 40 + "]" * 40)})


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


# ------------------------------------------------------------------ pinned by mutation testing (issue 16)

import course_lib.parsing as parsing_module  # noqa: E402


class CountingDecoder:
    """Stands in for parsing._DECODER: counts the characters each successful decode reads, so the shared work
    budget can be checked by counting instead of by timing."""

    def __init__(self):
        self.real = json.JSONDecoder()
        self.calls = self.chars = self.biggest = 0

    def raw_decode(self, text, start=0):   # the fast path for a reply that is one object
        return self.scan_once(text, start)

    def scan_once(self, text, start):   # every other decode
        self.calls += 1
        value, end = self.real.scan_once(text, start)
        self.chars += end - start
        self.biggest = max(self.biggest, end - start)
        return value, end


@pytest.fixture
def decoder(monkeypatch):
    counting = CountingDecoder()
    monkeypatch.setattr(parsing_module, "_DECODER", counting)
    return counting


def test_an_object_read_is_never_decoded_again_from_inside(decoder):
    """400 nested objects, none an action: the outermost decodes to the end of the nest, and no start inside it is
    decoded again (each was, once: 3.7 million characters read for these 45 thousand, cut off by the budget)."""
    nested = ('{"k": "' + "x" * 30 + '", "v": ') * 400 + "0" + "}" * 400
    text = "Here is the data:\n" + nested + "\n" + "Some more words. " * 1200
    reply = parse_reply(text)
    assert_failed(reply)
    assert reply.error == 'the JSON object has no "tool" field'
    assert (decoder.calls, decoder.chars) == (1, len(nested))


def test_an_action_inside_an_object_is_found_from_the_object_read(decoder):
    """Objects inside an object that decoded are read from it, in the order they start, whatever holds them."""
    inner = '{"tool": "lookup", "args": {"topic": "refunds"}}'
    text = 'Notes: {"k": [1, {"tool": "calculator", "args": 7}, {"deeper": ' + inner + '}], "z": {"tool": "x"}} '
    assert parse_reply(text + FINISH) == ok("lookup", {"topic": "refunds"})
    assert decoder.calls == 1   # the first object only: its own objects are not decoded again
    spelt = '{"wrapper": {"\\u0074\\u006F\\u006fl": "lookup", "args": {}}} '   # "tool" as JSON may spell it
    assert parse_reply("Try: " + spelt + FINISH) == ok("lookup", {})


def test_a_successful_decode_is_charged_only_what_it_read(decoder):
    """Forty small non-actions after a long preamble cost about their own length, not their position in the
    text: the action after them is still reached."""
    text = "Let me explain first. " * 100 + '{"tool": "x", "args": [1]} ' * 40 + FINISH
    assert parse_reply(text) == ok("finish", {"answer": "ok"})
    assert decoder.calls == 41
    assert decoder.chars == 40 * len('{"tool": "x", "args": [1]}') + len(FINISH)


def test_the_missing_tool_error_shows_a_complete_example_action():
    reply = parse_reply('{"tool": "", "args": {}}')
    assert_failed(reply)
    assert reply.error == ('the JSON object needs a "tool" field naming a tool, '
                           'e.g. {"tool": "calculator", "args": {"expression": "2+2"}}')


@pytest.mark.parametrize("text", [
    # A draft in the first of two <think> blocks is still a draft (every closed block is found, in order).
    '<think>{"tool": "calculator", "args": {}}</think> then <think>more</think> ' + FINISH,
    # A <think> block that does not open the reply (here at index 1) is a block like any other.
    ' <think>{"tool": "calculator", "args": {}}</think> ' + FINISH,
    'x<think>{"tool": "calculator", "args": {}}</think>' + FINISH,
])
def test_every_closed_think_block_is_skipped_wherever_it_starts(text):
    assert parse_reply(text) == ok("finish", {"answer": "ok"})


class FailingDecoder:
    """Stands in for parsing._DECODER: every decode fails, as a JSONDecodeError at the given positions in turn
    (the budget charges a failure its position) or, for ``None``, as a RecursionError (charged the whole text)."""

    def __init__(self, positions):
        self.positions, self.calls = positions, 0

    def raw_decode(self, text, start=0):
        return self.scan_once(text, start)

    def scan_once(self, text, start):
        pos = self.positions[min(self.calls, len(self.positions) - 1)]
        self.calls += 1
        if pos is None:
            raise RecursionError("maximum recursion depth exceeded")
        raise json.JSONDecodeError("stub", text, pos)


def calls_within_budget(charges, budget):
    """How many decodes the budget allows: decoding goes on while some budget is left."""
    calls, spent = 0, 0
    while spent < budget:
        spent += charges[min(calls, len(charges) - 1)]
        calls += 1
    return calls


@pytest.mark.parametrize("positions", [
    pytest.param([430], id="used-up-exactly"),              # 100 failures of 430 use all 43_000: no 101st
    pytest.param([14_333], id="one-character-left"),         # 3 of them leave 1 character: a 4th is tried
    pytest.param([0, 42_998, 5], id="position-0-costs-1"),  # a failure at position 0 still costs 1 character
    pytest.param([None], id="recursion-costs-the-text"),    # a RecursionError costs the whole text
])
def test_the_budget_is_max_nesting_plus_one_passes_plus_ten_thousand(monkeypatch, positions):
    """The shared budget, exactly: (MAX_NESTING + 1) * len(text) + 10_000 characters, charged per failure at
    its position (at least 1), or the whole text for a RecursionError; decoding stops once it is used up."""
    text = "x" + '{"' * 499 + "x"   # 1000 characters, 499 starts (more than any budget below allows); no fast path
    decoder = FailingDecoder(positions)
    monkeypatch.setattr(parsing_module, "_DECODER", decoder)
    reply = parse_reply(text)
    budget = (MAX_NESTING + 1) * len(text) + 10_000
    assert budget == 43_000
    charges = [len(text) if pos is None else max(1, pos) for pos in positions]
    assert decoder.calls == calls_within_budget(charges, budget) < 499
    assert_failed(reply)
    assert reply.error == ("invalid JSON: maximum recursion depth exceeded" if positions == [None]
                           else "invalid JSON: stub")


def test_each_start_is_decoded_at_most_once(monkeypatch):
    """A long run of openers, objects after it and an action at the end: every start is tried once, the run's
    deep starts last, and none twice (the deep part is searched only up to where the early part began)."""
    starts = []
    real = json.JSONDecoder()

    class Recording:
        def scan_once(self, text, start):
            starts.append(start)
            return real.scan_once(text, start)

    monkeypatch.setattr(parsing_module, "_DECODER", Recording())
    text = "Notes: " + '{"a": ' * 60 + '{"tool": "b", "args": [1]} {"tool": "c", "args": [2]} '
    text += '{"tool": "finish", "args": {"answer": "'
    text += "{" * 40 + '"}}'
    reply = parse_reply(text)
    assert reply == ok("finish", {"answer": "{" * 40})
    assert len(starts) == len(set(starts))
    action = text.index('{"tool": "finish"')
    assert starts[-1] == action   # found last: it looks deep (the braces in its string)
    assert set(starts[:-1]) >= {text.index('{"tool": "b"'), text.index('{"tool": "c"')}


def test_a_draft_in_think_between_objects_does_not_end_the_search():
    """A start inside a closed <think> is skipped, and the search goes on to the action after it."""
    text = 'Plan: {"note": 1} <think>{"tool": "calculator", "args": {}}</think> ' + FINISH
    assert parse_reply(text) == ok("finish", {"answer": "ok"})


def test_a_well_behaved_reply_is_read_without_the_search(monkeypatch):
    """One object and nothing else (the common case) is decoded directly; the search over the text runs only when
    that first object is not a valid action."""
    searched = []
    real_search = parsing_module._candidate_starts

    def spy(text, *spans):
        searched.append(text)
        return real_search(text, *spans)

    monkeypatch.setattr(parsing_module, "_candidate_starts", spy)
    assert parse_reply(CALC) == ok("calculator", {"expression": "24*7"})
    assert searched == []
    assert parse_reply('{"note": 1} ' + CALC) == ok("calculator", {"expression": "24*7"})
    assert len(searched) == 1


@pytest.mark.parametrize("text, error", [
    ("", "the reply was empty; send one JSON object"),
    (" \n ", "the reply was empty; send one JSON object"),
    (42, "the reply must be text, got int"),
    (None, "the reply must be text, got NoneType"),
    ("The answer is 4.", "no JSON object found"),
    ('{"note": 1}', 'the JSON object has no "tool" field'),
    ('{"tool": "calculator", "args": ["2+2"]}', '"args" must be a JSON object like {"name": value}, not list'),
    ('{"tool": "calculator", "args": "2+2"}', '"args" must be a JSON object like {"name": value}, not str'),
    ('{"tool": "x", "args": {', "invalid JSON: Expecting property name enclosed in double quotes"),
    ('Sure: {"tool": "x", "args": {"a": }}', "invalid JSON: Expecting value"),   # a value missing inside
    ("Here: " + '{"a": ' * 5_000,
     "invalid JSON: maximum recursion depth exceeded while decoding a JSON object from a unicode string"),
])
def test_each_failure_has_its_exact_message(text, error):
    """SPEC §8: the error goes back to the model as is, so its wording is part of the contract."""
    reply = parse_reply(text)
    assert_failed(reply)
    assert reply.error == error


def test_an_unexpected_error_inside_is_reported_not_raised(monkeypatch):
    """The contract is "never raises": even a bug inside comes back as a failure naming the exception type."""
    class Broken:
        def raw_decode(self, text, start=0):
            raise KeyError("boom")
        scan_once = raw_decode

    monkeypatch.setattr(parsing_module, "_DECODER", Broken())
    reply = parse_reply(CALC)
    assert_failed(reply)
    assert reply.error == "could not read the reply (KeyError)"
