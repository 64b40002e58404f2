"""How fast parse_reply reads hostile text (SPEC §7): about 1 MB of junk with one action after it.

    python benchmarks/parse_bench.py

Each shape is timed against ``json.loads`` of a realistic 1 MB JSON document (a list of records with
strings and numbers) on the same machine, so the ratio means the same on a fast laptop and a slow CI box. The
budget is 15×. Every figure is the best of 5 repeats (the least disturbed by other work on the machine).
Each shape is timed twice: as it is, and behind a non-action object, which stops the parser from jumping
straight to the first object and makes it sort out every start. tests/test_parsing.py checks the same
shapes for the right answer and for linear growth.
"""
from __future__ import annotations

import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from course_lib.parsing import parse_reply  # noqa: E402

BUDGET = 15
REPEATS = 5
ACTION = json.dumps({"tool": "finish", "args": {"answer": "ok"}})
NON_ACTION = '{"note": 1} '
PROSE = "The model thinks out loud here, with numbers like 24 and 7, {braces}, and 한국어 text. "
# (label, lead, repeated unit, count): about 1 MB each, the same shapes as tests/test_parsing.py.
SHAPES = [
    ("'{' x 1,000,000", "", "{", 1_000_000),
    ("'[' x 1,000,000", "", "[", 1_000_000),
    ("'{\"' x 500,000", "", '{"', 500_000),
    ("'{\"a\": ' x 200,000", "", '{"a": ', 200_000),
    ("'{\"tool\": ' x 100,000", "", '{"tool": ', 100_000),
    ("'{\"a\": [], \"b\": ' x 66,000", "", '{"a": [], "b": ', 66_000),
    ("'\"' x 1,000,000", "", '"', 1_000_000),
    ("'\\' x 1,000,000", "", "\\", 1_000_000),
    ("'}' x 1,000,000", "", "}", 1_000_000),
    ("'{\"a\":\"' + 'x' x 1,000,000", '{"a":"', "x", 1_000_000),
    ("1 MB prose with {braces} and Korean", "", PROSE, 1_000_000 // len(PROSE)),
    ("'<think>' x 100,000", "", "<think>", 100_000),
    ("'{\"a\":1} ' x 100,000", "", '{"a":1} ', 100_000),
    ("'{\"a\":{\"b\":1}} ' x 71,000", "", '{"a":{"b":1}} ', 71_000),
    ("'{\"a\":{\"b\":{\"c\":{\"d\":1}}}} ' x 37,000", "", '{"a":{"b":{"c":{"d":1}}}} ', 37_000),
    ("5-deep objects x 30,000", "", '{"a":{"b":{"c":{"d":{"e":1}}}}} ', 30_000),   # each decoded: the slowest
    ("20-deep objects x 7,000", "", '{"a":' * 20 + "1" + "}" * 20 + " ", 7_000),
    ("32-deep arrays x 15,000", "", "[" * 32 + "1" + "]" * 32 + " ", 15_000),
    ("'{\"tool\":\"x\",\"args\":1} ' x 45,000", "", '{"tool":"x","args":1} ', 45_000),
    ("'{\"a\":\"[\\\\n\"} ' x 80,000", "", '{"a":"[\\n"} ', 80_000),
]


def best_of(repeats: int, func) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        func()
        times.append(time.perf_counter() - start)
    return min(times)


def json_document(size: int = 1_000_000) -> str:
    """A realistic JSON document of about ``size`` characters: records with strings, numbers and a list."""
    records, length, i = [], 2, 0
    while length < size:
        record = {"id": i, "name": f"customer {i}", "email": f"customer{i}@example.com", "city": "Seoul",
                  "balance": round(i * 13.37 % 10_000, 2), "orders": i % 17,
                  "tags": ["retail", "vip"][: i % 3], "active": i % 2 == 0}
        records.append(record)
        length += len(json.dumps(record)) + 2
        i += 1
    return json.dumps(records)


def report() -> list[str]:
    """One printable line per hostile shape: parse time, json.loads time, ratio, and the 15× budget."""
    document = json_document()
    baseline = best_of(REPEATS, lambda: json.loads(document)) * 1000
    lines = [f"parse_reply on ~1 MB of hostile text + one action, best of {REPEATS}; budget {BUDGET}× "
             f"json.loads of a {len(document) / 1e6:.1f} MB JSON document ({baseline:.1f} ms)"]
    for label, lead, unit, count in SHAPES:
        for before, where in (("", ""), (NON_ACTION, ", after a non-action")):
            text = before + lead + unit * count + ACTION
            found = parse_reply(text).ok
            ms = best_of(REPEATS, lambda: parse_reply(text)) * 1000
            ratio = ms / baseline
            verdict = ("ok" if ratio <= BUDGET else "OVER BUDGET") + ("" if found else ", action NOT found")
            lines.append(f"  {label + where:<56} {ms:7.1f} ms vs json.loads {baseline:5.1f} ms"
                         f" = {ratio:5.1f}× (budget {BUDGET}×) {verdict}")
    return lines


if __name__ == "__main__":
    print("\n".join(report()))
