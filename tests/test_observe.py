"""The wire between the worker and the grader (course_lib/courseware/observe.py): values as plain data, read back
strictly; probes that carry only inputs; outcomes judged where the worker cannot reach."""
from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pytest

from course_lib.courseware import checks, observe
from course_lib.courseware.checks import Case
from course_lib.courseware.exercises import stage04
from course_lib.courseware.observe import Opaque, call, decode, encode, using
from course_lib.parsing import ParsedReply


def wire(value):
    """What the grader rebuilds from what the worker sends: through JSON text, as over the kernel's channel."""
    return decode(json.loads(json.dumps(encode(value))))


@pytest.mark.parametrize("value", [
    None, True, False, 0, -7, 10 ** 40, 1.5, -0.0, "", "단가 ✓", [1, [2, [3]]], {"a": {"b": [1, None]}},
    {1: "one", (2, 3): "pair", None: 0}, {"$tuple": "a key that looks like a tag"}, (1, "a", (None,)), (),
    {1, 2, 3}, frozenset({"x"}), set(), b"\x00\xffbytes", Path("run.json"), [{"tool": "lookup", "args": {}}],
    ParsedReply(ok=True, tool="lookup", args={"topic": "단가"}), ParsedReply(ok=False, error="no JSON object found"),
])
def test_plain_data_and_course_records_come_back_equal_and_of_the_same_type(value):
    back = wire(value)
    assert back == value and type(back) is type(value)


def test_floats_that_json_cannot_write_come_back():
    assert math.isnan(wire(float("nan"))) and wire(float("inf")) == math.inf and wire(-math.inf) == -math.inf


class Yes:
    def __eq__(self, other):
        return True

    __hash__ = object.__hash__


class Text(str):
    def __eq__(self, other):
        return True

    __hash__ = str.__hash__


@pytest.mark.parametrize("value", [Yes(), Text("x"), type("D", (dict,), {})(a=1), lambda x: x, print, iter([1]),
                                   type("L", (list,), {"__eq__": lambda s, o: True})()])
def test_anything_else_comes_back_as_a_stand_in_that_equals_nothing(value):
    back = wire(value)
    assert isinstance(back, Opaque) and back != value and back != back and not (back == None)  # noqa: E711


def test_a_record_of_the_learner_s_own_class_keeps_its_fields_readable_but_equals_nothing():
    @dataclasses.dataclass
    class Mine:
        ok: bool
        error: str

    back = wire(Mine(False, "bad"))
    assert isinstance(back, Opaque) and (back.ok, back.error) == (False, "bad") and back != Mine(False, "bad")
    with pytest.raises(AttributeError, match="no attribute 'tool' the grader can see"):
        back.tool


def test_too_big_too_deep_or_unreadable_values_are_stand_ins_not_crashes():
    deep = []
    for _ in range(observe.MAX_DEPTH + 5):
        deep = [deep]

    class Broken:
        def __repr__(self):
            raise RuntimeError("no")

    for value in (list(range(observe.MAX_NODES + 1)), deep, "x" * (observe.MAX_TEXT + 1), Broken()):
        assert isinstance(wire(value), Opaque)
    assert "too large" in repr(wire(list(range(observe.MAX_NODES + 1))))


@pytest.mark.parametrize("data", [
    {"$nope": 1}, {"$dict": [[1]]}, {"$dict": "x"}, {"$set": [[1, 2]]}, {"$bytes": "***"}, {"$float": "1.5"},
    {"$tuple": "abc"}, {"$record": 3, "fields": {}}, {"$path": 1}, object(),
])
def test_what_is_not_well_formed_is_refused(data):
    with pytest.raises((ValueError, TypeError)):
        decode(data)


def test_nesting_sent_deeper_than_any_encoded_value_is_refused():
    data = 1
    for _ in range(observe.MAX_DEPTH + 10):
        data = [data]
    with pytest.raises(ValueError, match="nested too deeply"):
        decode(data)


@pytest.mark.parametrize("where, fields", [
    ("course_lib.parsing:ParsedReply", {"ok": True}),   # fields missing: not the class
    ("course_lib.tools:calculator", {}),                 # not a dataclass
    ("os:system", {}), ("course_lib.parsing:__class__", {}), ("course_lib.nowhere:X", {}),
])
def test_a_record_is_rebuilt_only_as_a_course_dataclass_with_exactly_its_fields(where, fields):
    back = decode({"$record": where, "fields": fields, "repr": "R()"})
    assert isinstance(back, Opaque) and repr(back) == "R()"


def test_a_probe_carries_plain_data_and_a_public_driver_only():
    probe = using(stage04.repeated, "x", 3) if hasattr(stage04, "repeated") else call("x")
    assert observe.from_spec(json.loads(json.dumps(probe.spec())))
    with pytest.raises(ValueError, match="plain data"):
        call(print)
    with pytest.raises(ValueError, match="public stage module"):
        using(json.dumps, 1)
    with pytest.raises(ValueError, match="public stage module"):
        using(lambda f: f, 1)


@pytest.mark.parametrize("driver", ["os:system", "course_lib.courseware.grader:grade", "course_lib.courseware."
                                    "exercises.stage04x:f", "course_lib.courseware.exercises.stage04:not a name"])
def test_the_worker_runs_no_driver_outside_the_public_stage_modules(driver):
    with pytest.raises(ValueError, match="not a driver"):
        observe.from_spec({"driver": driver, "args": {"$tuple": []}, "kwargs": {}})


def test_a_probe_calls_on_copies_so_an_answer_that_changes_its_input_spoils_nothing():
    probe = call({"tool": "lookup", "args": {}})

    def spoil(data):
        data.clear()
        return "done"

    assert probe(spoil) == "done" and probe.args == ({"tool": "lookup", "args": {}},)
    assert repr(probe) == "candidate({'tool': 'lookup', 'args': {}})"


CASE = Case("five", lambda f: f(5), expected=25, hint="square it")
RAISES = Case("refuses", lambda f: f(-1), raises=ValueError)


@pytest.mark.parametrize("case, candidate", [(CASE, lambda x: x * x), (CASE, lambda x: x + 1), (CASE, str),
                                             (RAISES, lambda x: math.sqrt(x)), (RAISES, lambda x: x),
                                             (CASE, lambda x: (_ for _ in ()).throw(KeyError("k")))])
def test_an_outcome_judged_by_the_grader_gives_the_row_check_gives(case, candidate):
    in_place = checks._evaluate(case, candidate)
    sent = json.loads(json.dumps(observe.outcome(case, candidate)))
    assert observe.row_of(case, sent, 5)[0] == in_place


def test_a_raised_outcome_matches_the_expected_exception_and_its_subclasses_by_name():
    sent = observe.outcome(RAISES, lambda x: int("nope"))   # ValueError
    assert observe.row_of(RAISES, sent, 5)[0].ok
    sub = observe.outcome(RAISES, lambda x: (_ for _ in ()).throw(UnicodeDecodeError("utf-8", b"", 0, 1, "x")))
    assert observe.row_of(RAISES, sub, 5)[0].ok
    forged = {"kind": "raised", "names": ["mine.ValueError"], "text": "raised ValueError"}
    assert not observe.row_of(RAISES, forged, 5)[0].ok   # a class of the same name elsewhere is not ValueError


@pytest.mark.parametrize("sent", [None, [], {}, {"kind": "value"}, {"kind": "value", "value": {"$nope": 1}},
                                  {"kind": "raised", "names": "ValueError"}, {"kind": "raised", "names": [1]},
                                  {"kind": "stub", "where": 3}, {"kind": "won"}, "ok"])
def test_a_malformed_outcome_is_a_failed_row_that_says_so(sent):
    row, finished, stopped = observe.row_of(CASE, sent, 5)
    assert (row.ok, row.got, finished, stopped) == (False, "no outcome the grader could read", True, True)


def test_stub_and_timeout_outcomes_are_read_as_check_reads_them():
    assert isinstance(observe.row_of(CASE, {"kind": "stub", "where": "f"}, 5)[0], checks._Stub)
    row, finished, stopped = observe.row_of(CASE, {"kind": "timeout", "stopped": False}, 5)
    assert (row.ok, finished, stopped) == (False, False, False) and "gave up after 5 s" in row.got


def test_judged_fails_every_case_the_worker_sent_no_outcome_for():
    result = observe.judged("04.1", [CASE, CASE], [{"kind": "value", "value": 25}], None)
    assert [r.ok for r in result.cases] == [True, False] and result.cases[1].got == "no outcome the grader could read"
    assert observe.judged("04.1", [CASE], "not a list", None).cases[0].ok is False
    assert observe.judged("04.1", [CASE], [{"kind": "stub", "where": "f"}], "g").not_implemented


def test_the_wire_format_is_exactly_this():
    """What the worker sends, byte for byte: the grader reads nothing else."""
    assert encode((1, "a")) == {"$tuple": [1, "a"]} and encode({3, 1, 2}) == {"$set": [1, 2, 3]}
    assert encode(frozenset({"b", "a"})) == {"$frozenset": ["a", "b"]} and encode(b"hi") == {"$bytes": "aGk="}
    assert encode(float("nan")) == {"$float": "nan"} and encode(1.5) == 1.5 and encode(Path("a/b")) == {"$path": "a/b"}
    assert encode({"$x": 1}) == {"$dict": [["$x", 1]]} and encode({1: [2]}) == {"$dict": [[1, [2]]]}
    assert encode({"a": (1,)}) == {"a": {"$tuple": [1]}}
    assert encode(ParsedReply(ok=False, error="e")) == {
        "$record": "course_lib.parsing:ParsedReply", "repr": repr(ParsedReply(ok=False, error="e")),
        "fields": {"ok": False, "tool": None, "args": {}, "error": "e", "thought": None}}
    yes = Yes()
    assert encode(yes) == {"$opaque": "Yes", "repr": repr(yes)}
    assert len(encode(type("Long", (), {"__repr__": lambda s: "x" * 999})())["repr"]) == 300


def test_the_limits_are_where_they_say():
    assert encode("x" * observe.MAX_TEXT) == "x" * observe.MAX_TEXT
    assert encode(list(range(observe.MAX_NODES - 1))) == list(range(observe.MAX_NODES - 1))   # the list is a node
    assert "$opaque" in encode(list(range(observe.MAX_NODES)))
    nested = 0
    for _ in range(observe.MAX_DEPTH):
        nested = [nested]
    assert encode(nested) == nested and "$opaque" in encode([nested])
    pairs = {0: 0}
    for _ in range(observe.MAX_DEPTH // 2):
        pairs = {0: pairs}
    assert decode(encode(pairs)) == pairs and decode(encode({(0,) * 3: [1]})) == {(0, 0, 0): [1]}
    assert decode(encode({"k": {1, 2}})) == {"k": {1, 2}} and decode(encode([Path("p")])) == [Path("p")]


def test_an_opaque_says_its_kind_when_asked_for_what_it_does_not_carry():
    with pytest.raises(AttributeError, match=r"^Yes object has no attribute 'x' the grader can see$"):
        wire(Yes()).x


def test_a_probe_with_a_driver_runs_it_in_place_and_where_the_spec_arrives_alike():
    probe = using(stage04.repeated, "ab", times=3)
    assert probe.spec() == {"driver": "course_lib.courseware.exercises.stage04:repeated",
                            "args": {"$tuple": ["ab"]}, "kwargs": {"times": 3}}
    assert probe(str.upper) == "ABABAB" == observe.from_spec(json.loads(json.dumps(probe.spec())))(str.upper)
    assert repr(probe) == "repeated('ab', times=3)" and repr(call(1, k="v")) == "candidate(1, k='v')"
    plain = call("x", n=2)
    assert plain.spec() == {"driver": None, "args": {"$tuple": ["x"]}, "kwargs": {"n": 2}}
    assert observe.from_spec(plain.spec())(lambda *a, **k: (a, k)) == (("x",), {"n": 2})
    assert plain(lambda *a, **k: (a, k)) == (("x",), {"n": 2})
    kept = {"k": [1]}
    assert call(kept)(lambda d: d["k"].append(2) or d) == {"k": [1, 2]} and kept == {"k": [1]}
    assert using(stage04.repeated, "a", 2, )(len) == 2


def test_what_the_worker_observes_per_exercise(monkeypatch):
    def validate_action(data):
        return None if isinstance(data, dict) and data.get("tool") else "the tool is missing"
    plan = {"04.1": {"name": "validate_action", "probes": [call({"tool": "x"}).spec(), call(7).spec(),
                                                           {"driver": "course_lib.courseware.exercises.stage04:nope"}]},
            "04.2": {"name": "find_action", "probes": []}}
    found = observe.observe_all({"validate_action": validate_action}, plan)
    assert found["04.2"] == {"defined": False}
    seen = found["04.1"]
    assert (seen["defined"], seen["qualname"], seen["module"]) == (True, validate_action.__qualname__, __name__)
    assert len(seen["public"]) == len(checks.exercise("04.1").cases)
    assert seen["hidden"][:2] == [{"kind": "value", "value": None}, {"kind": "value", "value": "the tool is missing"}]
    assert seen["hidden"][2]["kind"] == "raised" and seen["hidden"][2]["names"][0] == "builtins.LookupError"
    assert seen["hidden"][2]["text"].startswith("raised LookupError: the worker cannot run this case (")


def test_the_worker_stops_after_a_stub_and_after_too_many_cases_that_do_not_finish(monkeypatch):
    monkeypatch.setattr(checks, "CASE_SECONDS", 0.2)
    cases = [Case(f"c{i}", lambda f: f()) for i in range(5)]
    spin = lambda: [None for _ in iter(int, 1)]   # noqa: E731 - never ends, stoppable
    rows = observe._outcomes(cases, spin)
    assert [r["kind"] for r in rows] == ["timeout"] * checks.GIVE_UP_AFTER and all(r["stopped"] for r in rows)

    def stub():
        raise NotImplementedError
    assert observe._outcomes(cases, stub) == [{"kind": "stub", "where": stub.__qualname__}]
    assert observe._outcomes(cases[:2], lambda: 1) == [{"kind": "value", "value": 1}] * 2


def nested(levels: int, kind=list):
    value = 0
    for _ in range(levels):
        value = kind([value])
    return value


# Each container once, around `levels` of lists (of tuples where it must hash): (wrap, inner kind, levels it adds)
WRAPS = {"list": (lambda v: [v], list, 1), "dict value": (lambda v: {"k": v}, list, 1),
         "dict key": (lambda v: {v: 1}, tuple, 1), "tuple": (lambda v: (v,), list, 1),
         "set": (lambda v: {v}, tuple, 1), "frozenset": (lambda v: frozenset({v}), tuple, 1),
         "record": (lambda v: ParsedReply(ok=True, args={"a": v}), list, 2)}


@pytest.mark.parametrize("kind", list(WRAPS))
def test_each_container_counts_one_level_of_depth_on_the_way_out_and_in(kind):
    wrap, inner, adds = WRAPS[kind]
    fits, over = wrap(nested(observe.MAX_DEPTH - adds, inner)), wrap(nested(observe.MAX_DEPTH - adds + 1, inner))
    assert wire(fits) == fits and isinstance(wire(over), Opaque)
    sent = encode(fits)
    assert decode([[sent]]) == [[fits]]   # decode allows two levels more than encode writes, and no more
    with pytest.raises(ValueError, match="nested too deeply"):
        decode([[[sent]]])


def test_what_the_grader_keeps_of_a_worker_s_strings_is_cut_to_size():
    opaque = decode({"$opaque": "K" * 150, "repr": "r" * 400})
    assert (opaque.kind, repr(opaque)) == ("K" * 100, "r" * 300)
    record = decode({"$record": "mine:" + "N" * 150, "fields": {"a": 1}, "repr": "x" * 400})
    assert (record.kind, repr(record), record.a) == ("N" * 100, "x" * 300, 1)
    assert decode({"$opaque": "K"}).text == "" and decode({"$record": "m:N", "fields": {}}).text == ""
    raised = {"kind": "raised", "names": [f"m.E{i}" for i in range(60)] + ["builtins.ValueError"], "text": "t" * 99}
    row = observe.row_of(RAISES, raised, 5)[0]
    assert not row.ok and row.got == "t" * 70   # ValueError named past the 50 names kept: not believed
    assert observe.row_of(RAISES, {"kind": "raised", "names": ["builtins.ValueError"]}, 5)[0].got == ""
    stub = observe.row_of(CASE, {"kind": "stub", "where": "w" * 300}, 5)
    assert (stub[0].where, stub[1:]) == ("w" * 200, (True, True))
    assert observe.row_of(CASE, {"kind": "value", "value": 25}, 5)[1:] == (True, True)
    assert observe.row_of(RAISES, raised, 5)[1:] == (True, True)
    row, finished, stopped = observe.row_of(CASE, {"kind": "timeout"}, 7)
    assert (finished, stopped) == (False, True) and "gave up after 7 s" in row.got and row.hint.endswith("square it")
    row = observe.row_of(CASE, {"kind": "won"}, 5)[0]
    assert (row.label, row.expected, row.hint) == ("five", "25", "square it")


def test_a_spec_without_arguments_calls_with_none_and_a_dict_pair_must_be_a_pair():
    assert observe.from_spec({"driver": None})(lambda *a, **k: (a, k)) == ((), {})
    for bad in ({"$dict": [[1, 2, 3]]}, {"$dict": [(1, 2)]}):
        with pytest.raises((ValueError, TypeError)):
            decode(bad)
    with pytest.raises(ValueError, match=r"^an unknown or malformed tag '\$nope'$"):
        decode({"$nope": 1})
    with pytest.raises(ValueError, match=r"^not a value: object$"):
        decode(object())


def test_an_answer_whose_public_case_ran_out_of_time_is_not_run_on_its_probes_and_fails_in_the_grader(monkeypatch):
    """A public case that did not finish fails the exercise, so the worker does not wait for the loop again on every
    probe (a batch of endless loops took three waits per exercise); the grader fails it on the public row."""
    monkeypatch.setattr(checks, "CASE_SECONDS", 0.2)
    calls = []

    def validate_action(data):   # right on the first public case, then an endless (stoppable) loop
        calls.append(data)
        while len(calls) > 1:
            pass
    plan = {"04.1": {"name": "validate_action", "probes": [call({"tool": "x"}).spec()] * 3}}
    seen = observe.observe_all({"validate_action": validate_action}, plan)["04.1"]
    assert [r["kind"] for r in seen["public"]] == ["value", "timeout", "timeout"] and seen["hidden"] == []
    assert len(calls) == 3   # no probe ran
    public = observe.judged("04.1", None, seen["public"], "validate_action")
    assert not public.passed and public.cases[1].got.startswith("gave up after 0.2 s")
    secret = observe.judged("04.1", [CASE] * 3, seen["hidden"], "validate_action")
    assert not secret.passed


def test_the_worker_reports_each_answer_s_name_and_module_and_runs_it_on_every_case():
    class Callable:
        def __call__(self, data):
            return None
    answer = Callable()
    del_attrs = observe.observe_all({"v": answer}, {"04.1": {"name": "v", "probes": [call({}).spec()]}})["04.1"]
    assert (del_attrs["qualname"], del_attrs["module"]) == ("", __name__)
    assert del_attrs["public"][0] == {"kind": "value", "value": None}
    judged = observe.judged("04.1", [CASE], [], "own")
    assert judged.cases[0].got == "no outcome the grader could read"


class Broken:
    def __repr__(self):
        raise RuntimeError("no")

    __hash__ = object.__hash__


def test_unreadable_and_too_large_values_say_which_type():
    assert encode(Broken()) == {"$opaque": "Broken", "repr": "<a Broken>"}
    assert encode([0] * observe.MAX_NODES) == {"$opaque": "list", "repr": "<a list too large to send>"}
    assert encode({Broken(), Broken()}) == {"$opaque": "?", "repr": "<a value that could not be read: RuntimeError>"}


def test_a_probe_copies_its_arguments_for_each_call_even_those_pickle_cannot_name(monkeypatch):
    @dataclasses.dataclass
    class Local:   # pickle cannot find a class defined in a function: the copy falls back to copy.deepcopy
        items: list
    kept = {"chat": [{"role": "user", "content": "hi"}] * 3, "local": Local([1])}
    probe = observe.Probe(None, (), {})
    probe.args = (kept,)   # set after the plain-data check, as only a test would
    spoiled = probe(lambda d: d["chat"].append("x") or d["local"].items.append(2) or d)
    assert len(spoiled["chat"]) == 4 and spoiled["local"].items == [1, 2]
    assert len(kept["chat"]) == 3 and kept["local"].items == [1] and probe(lambda d: d)["local"] is not kept["local"]

    def no_deepcopy(*_):
        raise AssertionError("plain data is copied through pickle, not copy.deepcopy")
    monkeypatch.setattr(observe.copy, "deepcopy", no_deepcopy)
    plain = call({"chat": [{"role": "user", "content": "단가"}]}, n=(1, 2))
    assert plain(lambda d, n: (d["chat"].append("x"), d, n)[1:]) == ({"chat": [{"role": "user", "content": "단가"}, "x"]},
                                                                  (1, 2))
    assert plain.args[0]["chat"] == [{"role": "user", "content": "단가"}]
