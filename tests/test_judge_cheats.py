"""The judge outside the worker, against a determined cheater: no trick earns a mark for an exercise it did not
solve. The refusal (``grader.refusal``) is advice now and does not stop any of these: each runs in the worker.

Every cheat below fills all three answer cells of the real stage-04 exercise notebook, under the names the check
cells hand over, and the batch is graded once with ``grade_all``, as ``course check`` does. Several cheats are
strong on purpose: the frame walker reads each visible case's expected value from the worker's own stack and
passes every visible case, and the forger replaces the worker's report with one of its own. They still get
nothing, because the expected values of the hidden cases never reach the worker, and the verdict is not the
worker's to give.
"""
from __future__ import annotations

import nbformat
import pytest

from course_lib.courseware import grader, sandbox
from course_lib.courseware.grader import grade_all
from course_lib.courseware.grading import ROOT

STAGE = "04"
EXERCISE = ROOT / "exercises" / "04_parsing_replies_exercises.ipynb"
NAMES = {"ex04_1": "validate_action", "ex04_2": "find_action", "ex04_3": "parse_action"}
FULL = sandbox.isolation() == "bubblewrap"

# Each cheat: code that defines `_answer` (a function standing in for every answer), or the answer cells' text.
CHEATS = {
    "frame walker: the visible case's expected value from the stack": """
import sys
def _answer(*args, **kwargs):
    frame = sys._getframe(1)
    while frame is not None:
        case = frame.f_locals.get("case")
        if case is not None and hasattr(case, "expected"):
            expected = case.expected
            if case.test is not None:   # a test: try what it accepts
                for guess in ("error: no tool args found", None, "tool args", {}):
                    if case.test(guess):
                        return guess
            return None if type(expected).__name__ == "object" else expected
        frame = frame.f_back
    return None
""",
    "forger: the worker's report replaced by one that passes everything": """
import json
from course_lib.courseware import observe, checks
def _forged(namespace, plan):
    found = {}
    for ex, asked in plan.items():
        public = [{"kind": "value", "value": observe.encode(None if c.test else c.expected)}
                  for c in checks.exercise(ex).cases]
        hidden = [{"kind": "value", "value": None} for _ in asked["probes"]]
        found[ex] = {"defined": True, "qualname": "x", "module": "__main__", "public": public, "hidden": hidden}
    return found
observe.observe_all = _forged
def _answer(*args, **kwargs):
    raise NotImplementedError
""",
    "borrower: the finished module by import, importlib and its file": """
import importlib
try:
    _answer = importlib.import_module("course_lib.parsing").parse_reply
except Exception:
    _space = {}
    import course_lib.parsing as _p
    exec(open(_p.__file__).read(), _space)
    _answer = _space.get("parse_reply") or _space["_never"]
""",
    "reader: the hidden cases and the solutions from disk": """
from pathlib import Path
import course_lib
_root = Path(course_lib.__file__).parents[1]
_text = "".join(p.read_text() for p in (_root / "solutions").rglob("*.py"))
_text += "".join(p.read_text() for p in (_root / "solutions").rglob("*.ipynb"))
exec(_text[_text.index("def parse_action"):] if "def parse_action" in _text else "raise LookupError()", globals())
_answer = parse_action
""",
    "always equal: an answer whose results say yes to every comparison": """
class _Yes(str):
    def __eq__(self, other):
        return True
    __hash__ = str.__hash__
class _All:
    def __eq__(self, other):
        return True
    ok = True
    tool, args, error = "lookup", {"topic": "단가"}, None
def _answer(*args, **kwargs):
    return _All()
""",
    "patched classes: every reply of the kernel says ok": """
import ipykernel.ipkernel as _k
if not hasattr(_k.IPythonKernel, "_honest_execute"):   # once, though all three answer cells run this
    _k.IPythonKernel._honest_execute = _k.IPythonKernel.do_execute
    async def _ok(self, code, silent, *args, **kwargs):
        reply = await self._honest_execute(code, silent, *args, **kwargs)
        reply["status"] = "ok"
        return reply
    _k.IPythonKernel.do_execute = _ok
def _answer(*args, **kwargs):
    raise NotImplementedError
""",
    "lookup table: the visible cases' inputs and answers learned from the cases module": """
from course_lib.courseware import checks
_table = {}
for _ex in ("04.1", "04.2", "04.3"):
    for _case in checks.exercise(_ex).cases:
        _seen = []
        try:
            _case.call(lambda *a, **k: _seen.append(repr((a, k))))
        except Exception:
            pass
        if _seen and _case.test is None:
            _table[_seen[0]] = _case.expected
def _answer(*args, **kwargs):
    return _table.get(repr((args, kwargs)))
""",
}


# The forger's code, run by each of the routes the old static refusal was fooled by (issue 27's list). The refusal
# is advice now, so each route runs; each must still earn nothing.
FORGE = CHEATS["forger: the worker's report replaced by one that passes everything"]
ROUTES = {
    "a %%capture first line": "%%capture\n" + FORGE,
    "a module written into the scratch folder and imported": (
        f"open('forge_mod.py', 'w').write({FORGE!r})\nimport sys, importlib\nsys.path.insert(0, '.')\n"
        "_answer = importlib.import_module('forge_mod')._answer"),
    "getattr under another name": f"_g = getattr\n_g(__import__('builtins'), 'ex' + 'ec')({FORGE!r}, globals())",
    "timeit running code": f"import timeit\ntimeit.timeit({FORGE!r}, number=1, globals=globals())",
    "typing.get_type_hints on a string annotation": (
        f"import typing\n_src = {FORGE!r}\ndef _f(x: 'exec(_src, globals())'): pass\ntyping.get_type_hints(_f, globals())"),
    "an earlier module's import_module": (
        "from course_lib import import_module as _im\n_o = _im('course_lib.courseware.observe')\n"
        f"exec({FORGE!r}, globals())"),
}


def submission(code: str):
    nb = nbformat.read(EXERCISE, as_version=4)
    for c in nb.cells:
        gid = c.get("metadata", {}).get("nbgrader", {}).get("grade_id", "")
        if gid in NAMES:
            c.source = code + f"\n{NAMES[gid]} = _answer\n"
    return nb


def graded_batch(folder, notebooks: dict) -> dict:
    """Each notebook of ``notebooks`` (name → nbformat node) written into ``folder`` and graded as one batch."""
    paths = []
    for n, nb in enumerate(notebooks.values()):
        paths.append(str(folder / f"attempt{n}.ipynb"))
        nbformat.write(nb, paths[-1])
    grades, problems = grade_all(paths, STAGE, timeout=60, jobs=2)
    assert problems == []
    return dict(zip(notebooks, grades))


def routed_submission(code: str):
    """The route goes into the first answer cell, before the stub every answer cell keeps."""
    nb = submission("def _answer(*args, **kwargs):\n    raise NotImplementedError\n")
    for c in nb.cells:
        if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == "ex04_1":
            c.source = code + "\nvalidate_action = _answer\n"
    return nb


@pytest.fixture(scope="module")
def routed(tmp_path_factory):
    return graded_batch(tmp_path_factory.mktemp("routes"), {k: routed_submission(v) for k, v in ROUTES.items()})


@pytest.mark.parametrize("name", list(ROUTES))
def test_every_route_around_the_old_refusal_runs_and_its_forged_report_earns_nothing(routed, name):
    g = routed[name]
    assert [(e.exercise, e.points) for e in g.exercises if e.passed or e.points] == [], g.as_dict()
    details = [e.detail for e in g.exercises]   # the forgery ran (a stub alone says "not implemented yet"), and
    assert any(d.startswith("hidden tests failed:") for d in details), details   # passed every visible case


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    return graded_batch(tmp_path_factory.mktemp("cheats"), {k: submission(v) for k, v in CHEATS.items()})


@pytest.mark.parametrize("name", list(CHEATS))
def test_no_cheat_earns_a_mark(graded, name):
    g = graded[name]
    assert [(e.exercise, e.points) for e in g.exercises if e.passed or e.points] == [], g.as_dict()


def test_the_frame_walker_really_reads_the_visible_expectations_and_still_fails_the_hidden_cases(graded):
    """The attack is real: it passes every visible case of 04.1 (so the judge did not fail it for that), and
    only the hidden cases, judged outside the worker, stop it."""
    e = {x.exercise: x for x in graded["frame walker: the visible case's expected value from the stack"].exercises}
    assert e["04.1"].failing == [] and e["04.1"].detail.startswith("hidden tests failed:"), e["04.1"].detail


def test_the_forger_s_report_passes_the_visible_cases_and_fails_the_hidden_ones(graded):
    e = {x.exercise: x for x in graded["forger: the worker's report replaced by one that passes everything"].exercises}
    assert all(x.detail.startswith(("hidden tests failed:", "not implemented", "0/", "1/", "2/", "3/", "4/", "5/",
                                    "6/", "7/", "8/", "9/", "1")) for x in e.values()), {k: v.detail for k, v in
                                                                                         e.items()}
    assert any(x.detail.startswith("hidden tests failed:") for x in e.values())


@pytest.mark.skipif(not FULL, reason="the finished modules are cut only in the bubblewrap sandbox")
def test_the_borrower_and_the_reader_find_nothing_to_borrow(graded):
    for name in ("borrower: the finished module by import, importlib and its file",
                 "reader: the hidden cases and the solutions from disk"):
        details = {e.exercise: e.detail for e in graded[name].exercises}
        assert all("defines no" in d or "raised" in d for d in details.values()), details


def test_the_refusal_is_advice_the_cheats_ran_and_the_report_says_what_they_reached_for(graded):
    g = graded["borrower: the finished module by import, importlib and its file"]
    assert any("importlib" in n and "ran all the same" in n for n in g.notes), g.notes


def test_an_honest_answer_that_the_refusal_dislikes_still_gets_its_marks(tmp_path):
    """`hasattr` and `sys` are on the refusal's list; an answer using them is judged on what it returns."""
    nb = nbformat.read(ROOT / "solutions" / "04_parsing_replies_exercises.ipynb", as_version=4)
    for c in nb.cells:
        if c.get("metadata", {}).get("nbgrader", {}).get("grade_id") == "ex04_1":
            c.source = "import sys\n" + c.source.replace("def validate_action(data):", "def validate_action(data):\n"
                                                          "    assert hasattr(sys, 'version')")
    path = tmp_path / "honest.ipynb"
    nbformat.write(nb, path)
    g = grader.grade(str(path), STAGE)
    assert g.passed and any("ran all the same" in n for n in g.notes), (g.as_dict())
