"""Stage 09: the visible cases catch plausible wrong solutions, and the reference solutions pass them.

As in ``test_cases_catch_wrong_solutions.py``: each ``make_*`` function with its defaults builds the reference
solution of ``solutions/09_safety_and_control_exercises.ipynb``, copied (the notebook is the source, and
``tests/test_exercises.py`` grades the notebook itself); each keyword switch turns on one plausible mistake.
A wrong solution must fail the visible check, on the case named next to it.
"""
from __future__ import annotations

import json
import math
import re
import unicodedata
from collections import Counter

import pytest

from test_cases_catch_wrong_solutions import caught_on, failed, only_slips   # tests/ is on sys.path: pytest puts it there (rootdir mode)

RULES = ("always", "ask", "never")
EXAMPLE_PRICES = {"input": 1.0, "output": 5.0}
ZERO_WIDTH = "\u200b\u200c\u200d\u2060\ufeff"


# ---- 09.1 find_tainted
def squeeze(text):
    return " ".join(text.split())


def visible(text):   # zero-width characters removed, then NFC
    return unicodedata.normalize("NFC", text.translate(dict.fromkeys(map(ord, ZERO_WIDTH))))


def make_find_tainted(*, normal=lambda text: squeeze(visible(text)).casefold(), keys=True, depth=True, kinds=(list, tuple),
                      stop=1, joined=False, span_ok=lambda k: type(k) is int and k >= 8):
    def find_tainted(args, seen_texts, min_span=20):
        if not span_ok(min_span):
            raise ValueError(f"min_span must be a whole number of at least 8, not {min_span!r}")

        def texts(value, top=True):
            if isinstance(value, str):
                yield value
            elif isinstance(value, dict) and (depth or top):
                for key, item in value.items():
                    if keys:
                        yield from texts(key, False)
                    yield from texts(item, False)
            elif isinstance(value, kinds) and (depth or top):
                for item in value:
                    yield from texts(item, False)

        k, seen = min_span, set()
        for text in map(normal, [" ".join(seen_texts)] if joined else seen_texts):
            seen.update(text[i:i + k] for i in range(len(text) - k + stop))
        for text in map(normal, texts(args)):
            for i in range(len(text) - k + stop):
                if text[i:i + k] in seen:
                    return text[i:i + k]
        return None
    return find_tainted


# ---- 09.2 decide
def make_decide(*, name=lambda tool: tool, fallback="ask", taint_always=True, taint_never=False,
                is_tainted=lambda span: bool(span), broken="deny", keep_rules=True):
    def decide(rules, tool, tainted=None):
        tool_key = name(tool)
        if not keep_rules:
            rules.setdefault(tool_key, rules.get("*", fallback))
        if tool_key in rules:
            rule, said = rules[tool_key], f"{tool} is set to '{rules[tool_key]}'"
        else:
            rule = rules.get("*", fallback)
            said = f"{tool} is not in the rules, so the default applies: '{rule}'"
        if rule not in RULES:
            if broken == "ask":
                return "ask", f"the rule for {tool} is {rule!r}, so a person decides"
            return "deny", f"the rule for {tool} is {rule!r}, which is not 'always', 'ask' or 'never'"
        taint = is_tainted(tainted)
        if rule == "never" and not (taint and taint_never):
            return "deny", said
        if taint and (rule != "always" or taint_always):
            return "ask", f'{said}, and its arguments carry text from a tool\'s output ("{tainted}")'
        return ("allow" if rule == "always" else "ask"), said
    return decide


# ---- 09.3 budget_check
def make_budget_check(*, over=lambda total, limit: total > limit, count_ok=lambda n: type(n) is int and n >= 0,
                      limit_ok=lambda x: type(x) in (int, float) and 0 < x < math.inf, with_spent=True,
                      tokens_first=True, own_prices=True):
    def budget_check(spent, next_call, limits, prices=EXAMPLE_PRICES):
        for part in (spent, next_call):
            for key in ("input_tokens", "output_tokens"):
                if not count_ok(part.get(key)):
                    raise ValueError(f"{key} must be a whole number of tokens, 0 or more, not {part.get(key)!r}")
        max_tokens, max_cost = limits.get("max_tokens"), limits.get("max_cost")
        for limit in (max_tokens, max_cost):
            if limit is not None and not limit_ok(limit):
                raise ValueError(f"a limit must be a positive, finite number, not {limit!r}")
        if max_tokens is None and max_cost is None:
            raise ValueError("a budget needs max_tokens, max_cost or both")
        prices = prices if own_prices else EXAMPLE_PRICES
        tokens_in = spent["input_tokens"] * with_spent + next_call["input_tokens"]
        tokens_out = spent["output_tokens"] * with_spent + next_call["output_tokens"]
        cost = (tokens_in * prices["input"] + tokens_out * prices["output"]) / 1_000_000
        checks = [(max_tokens, tokens_in + tokens_out, "the run to {:,} tokens, over the budget of {:,}."),
                  (max_cost, cost, "the cost to ${:.4f}, over the budget of ${:.4f}.")]
        for limit, total, words in (checks if tokens_first else checks[::-1]):
            if limit is not None and over(total, limit):
                return "Stopped before the next model call: it would bring " + words.format(total, limit)
        return None
    return budget_check


# ---- 09.4 what_was_tried
def make_what_was_tried(*, ascii_json=False, squeeze_first=True, cut=lambda text, limit: text[:limit - 1] + "…",
                        fold="neighbours", keep=11):
    def what_was_tried(calls):
        def short(text, limit):
            text = squeeze(text) if squeeze_first else text
            return text if len(text) <= limit else cut(text, limit)

        lines = [f"{c['tool']}({short(json.dumps(c['args'], ensure_ascii=ascii_json), 60)}) → "
                 f"{'ok' if c['ok'] else 'error'}: {short(c['result'], 80)}" for c in calls]
        if fold == "all":
            counts = Counter(lines)
            folded = [[line, counts[line]] for line in dict.fromkeys(lines)]
        else:
            folded = []
            for line in lines:
                if folded and folded[-1][0] == line:
                    folded[-1][1] += 1
                else:
                    folded.append([line, 1])
        tried = [line if n == 1 else f"{line} (×{n})" for line, n in folded]
        return tried if len(tried) <= 12 else tried[:keep] + [f"… and {len(tried) - keep} more"]
    return what_was_tried


REFERENCES = {"09.1": make_find_tainted, "09.2": make_decide, "09.3": make_budget_check,
              "09.4": make_what_was_tried}


@pytest.mark.parametrize("exercise_id", sorted(REFERENCES))
def test_the_reference_solution_passes_every_visible_case(exercise_id):
    assert failed(exercise_id, REFERENCES[exercise_id]()) == []


WRONG = [
    # 09.1 normalise both sides, every text at any depth (keys and tuples too), each seen text on its own
    ("09.1", lambda: make_find_tainted(normal=lambda t: visible(t).lower()), "other spaces and case"),
    ("09.1", lambda: make_find_tainted(normal=lambda t: squeeze(visible(t)).lower()), "ß casefolds to ss"),
    ("09.1", lambda: make_find_tainted(normal=lambda t: re.sub(r"[ \t\n]+", " ", visible(t)).strip().casefold()),
     "non-breaking spaces"),
    ("09.1", lambda: make_find_tainted(normal=lambda t: squeeze(t.replace("\u200b", "")).casefold()),
     "Korean in NFD form"),
    ("09.1", lambda: make_find_tainted(normal=lambda t: squeeze(unicodedata.normalize("NFC", t)).casefold()),
     "zero-width characters"),
    ("09.1", lambda: make_find_tainted(depth=False), "nested in lists and dicts"),
    ("09.1", lambda: make_find_tainted(keys=False), "hidden in a dict key"),
    ("09.1", lambda: make_find_tainted(kinds=(list,)), "inside a tuple"),
    ("09.1", lambda: make_find_tainted(stop=0), "exactly min_span copied"),
    ("09.1", lambda: make_find_tainted(joined=True), "no span across two outputs"),
    ("09.1", lambda: make_find_tainted(span_ok=lambda k: k >= 8), "min_span '20' is refused"),
    # 09.2 taint overrides always but not never; the default asks; names are exact; a broken rule denies
    ("09.2", lambda: make_decide(taint_always=False), "taint turns always into ask"),
    ("09.2", lambda: make_decide(taint_never=True), "never stays never, tainted"),
    ("09.2", lambda: make_decide(fallback="always"), "not named: default 'ask'"),
    ("09.2", lambda: make_decide(name=str.lower), "names are exact"),
    ("09.2", lambda: make_decide(broken="ask"), "a broken rule denies"),
    ("09.2", lambda: make_decide(is_tainted=lambda span: span is not None), "empty span: not tainted"),
    ("09.2", lambda: make_decide(keep_rules=False), "the rules are not changed"),
    # 09.3 the edge, everything spent counts, NaN and True and negatives refused, tokens first, the prices given
    ("09.3", lambda: make_budget_check(over=lambda total, limit: total >= limit), "landing exactly on it"),
    ("09.3", lambda: make_budget_check(with_spent=False), "one token over"),
    ("09.3", lambda: make_budget_check(limit_ok=lambda x: type(x) in (int, float) and not x <= 0 and x != math.inf),
     "NaN budget is refused"),
    ("09.3", lambda: make_budget_check(limit_ok=lambda x: isinstance(x, (int, float)) and 0 < x < math.inf),
     "True as max_tokens"),
    ("09.3", lambda: make_budget_check(count_ok=lambda n: type(n) is int), "negative tokens refused"),
    ("09.3", lambda: make_budget_check(tokens_first=False), "tokens are checked first"),
    ("09.3", lambda: make_budget_check(own_prices=False), "your prices"),
    # 09.4 Korean as itself, squeeze, cut to the limit with the ellipsis, fold neighbours only, 11 and a count
    ("09.4", lambda: make_what_was_tried(ascii_json=True), "one call"),
    ("09.4", lambda: make_what_was_tried(squeeze_first=False), "newlines squeezed"),
    ("09.4", lambda: make_what_was_tried(cut=lambda text, limit: text[:limit] + "…"), "long result cut at 80"),
    ("09.4", lambda: make_what_was_tried(fold="all"), "only in a row"),
    ("09.4", lambda: make_what_was_tried(keep=12), "13 lines: 11 and a count"),
]


@pytest.mark.parametrize("exercise_id, make, label", WRONG, ids=[f"{e}-{label}" for e, _, label in WRONG])
def test_a_plausible_wrong_solution_fails_on_the_case_made_for_it(exercise_id, make, label):
    caught_on(exercise_id, make, label)


def test_the_wrong_solutions_above_are_plausible_slips_not_broken_code():
    only_slips(WRONG)


def test_every_exercise_of_stage_09_has_a_wrong_solution_here():
    assert {e for e, _, _ in WRONG} == set(REFERENCES) == {"09.1", "09.2", "09.3", "09.4"}
