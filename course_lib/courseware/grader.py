"""``course check``: grades an instructor can trust, one notebook or a whole class.

The judge never runs where student code ran. A submission's answers run in a *worker*: a fresh Jupyter kernel in
the sandbox of ``course_lib.courseware.sandbox`` (bubblewrap where available: no network, read-only files, the
solutions and the rest of the course folder hidden, memory and process limits, API keys removed). The grader, a
process no submission code runs in, asks the worker for each case's outcome: a public case by its place in the
exercise's table, a hidden case by its inputs (``observe.Probe``: plain data). It receives plain data back (a
value, or that the call raised, with the exception's class names and message) and judges it itself against the
expectations, which never enter the worker (the hidden cases live in ``solutions/hidden/``; ``hidden``). Nothing
the worker says about success counts: a lying worker can only claim values, and to claim the right value for inputs
it sees for the first time it must compute it. What it could compute it with is cut down too: in the worker,
the finished modules of the graded stage and of later ones hold only what the notebook hands out
(``worker_lib``), so borrowing the course's own answer fails with ImportError.

Fail closed. The grader builds the notebook it runs from the source it trusts, the solution notebook: its
set-up and check cells and its text. From the submission it takes only the answer cells (nbgrader ``solution``
cells, by ``grade_id``). A graded cell that is missing, duplicated, of another type or re-tagged is tampering, and
fails that exercise; cells a student added are not run (the report says so). ``refusal`` reads each answer before
it runs, as advice: a note says what it reaches for that no exercise needs; no grade rests on it.

Survival. A dead kernel, a timeout, an unreadable file fail that notebook with the reason; the batch goes on.
``grade_all`` runs notebooks in parallel.
"""
from __future__ import annotations

import ast
import functools
import json
import os
import re
import shutil
import stat
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field
from pathlib import Path

from . import hidden as hidden_cases, observe, sandbox, worker_lib
from .notebook_marks import ROOT, SOLUTION, grade_id as _grade_id, stub as _stub
from .printing import wrap
from .stages import STAGE_MODULES, finished, may_use, withheld  # noqa: F401 - grader.finished etc.

CHECK_CALL = re.compile(r"""check\(\s*["'](\d\d\.\d+)["']\s*,\s*([A-Za-z_]\w*)""")
MAX_NOTEBOOK_BYTES = 50_000_000   # a submission larger than this is not read at all
OUTPUT_CAP = 2_000_000   # characters of output kept per notebook; the rest is dropped, and the report says so
MAX_REPLY = 50_000_000   # characters of the worker's outcomes; more fails the notebook
# What the worker runs after the notebook's cells: the outcomes of every case asked for (observe.observe_all).
OBSERVE = """
import json
import IPython
from course_lib.courseware import observe
result = json.dumps(observe.observe_all(IPython.get_ipython().user_ns, PLAN))
"""


def _expression(source: str) -> str:
    """An expression that runs ``source`` with the real ``exec`` in a fresh namespace and gives its ``result``.

    Sent as a ``user_expression``, it is evaluated with ``eval``: no IPython input or AST transformer sees it,
    and it looks up no name a submission could have shadowed in the notebook's namespace (the builtins module
    is found through ``object.__subclasses__``)."""
    builtins = ('[c for c in ().__class__.__base__.__subclasses__() if c.__name__ == "BuiltinImporter"][0]'
                '.create_module([c for c in ().__class__.__base__.__subclasses__() '
                'if c.__name__ == "BuiltinImporter"][0].find_spec("builtins"))')
    return f"(lambda b, g: (b.exec({source!r}, g), g['result'])[1])({builtins}, {{'__builtins__': {builtins}}})"


class GraderError(Exception):
    """The grader itself cannot work (no solution notebook, no kernel): exit status 3, not a student's fail."""


@dataclass
class ExerciseGrade:
    exercise: str
    passed: bool
    detail: str
    points: int = 0
    max_points: int = 0
    failing: list[dict] = field(default_factory=list)   # the failing check() rows: label, expected, got, hint


@dataclass
class Grade:
    notebook: str
    stage: str
    exercises: list[ExerciseGrade]
    errors: list[str] = field(default_factory=list)   # errors outside the graded cells, e.g. a set-up cell
    notes: list[str] = field(default_factory=list)    # what the grader did about the notebook (dropped cells, ...)
    reason: str = ""                                   # why the whole notebook failed, if it did
    isolation: str = ""

    @property
    def passed(self) -> bool:
        return not self.reason and bool(self.exercises) and all(e.passed for e in self.exercises)

    def as_dict(self) -> dict:
        total = sum(e.points for e in self.exercises)
        return {**asdict(self), "passed": self.passed, "points": total,
                "max_points": sum(e.max_points for e in self.exercises)}


def solution_for(stage: str, solutions_dir: Path | None = None) -> Path:
    folder = Path(solutions_dir) if solutions_dir else ROOT / "solutions"
    found = sorted(folder.glob(f"{stage}_*_exercises.ipynb"))
    if not found:
        raise GraderError(f"there is no solution notebook for stage {stage} in {folder}")
    return found[0]


# -- 1. assemble: trusted cells from the solution, answers from the submission ----------------------------------
def _nbgrader(cell) -> dict:
    return cell.get("metadata", {}).get("nbgrader", {})


def assemble(trusted, submission) -> tuple[object, dict[str, list[str]], list[str]]:
    """The notebook to run, the tampering found per exercise, and notes. ``trusted`` is the solution notebook."""
    import nbformat
    tamper: dict[str, list[str]] = {}
    advice: list[str] = []
    by_id: dict[str, list] = {}
    for cell in submission.cells:
        if _grade_id(cell):
            by_id.setdefault(_grade_id(cell), []).append(cell)
    cells = []
    for cell in trusted.cells:
        gid, meta = _grade_id(cell), _nbgrader(cell)
        if not gid:   # set-up code and text: the trusted version, with any solution region stubbed
            cells.append(_copy(cell, SOLUTION.sub(_stub, cell.source) if cell.cell_type == "code" else cell.source))
            continue
        exercise = _exercise_of(gid)
        theirs = by_id.get(gid, [])
        problem = ("is missing" if not theirs else f"appears {len(theirs)} times" if len(theirs) > 1
                   else f"was changed into a {theirs[0].cell_type} cell" if theirs[0].cell_type != cell.cell_type
                   else "lost its nbgrader tags" if any(_nbgrader(theirs[0]).get(k) != meta.get(k)
                                                        for k in ("solution", "grade", "locked")) else None)
        if problem:
            tamper.setdefault(exercise, []).append(f"cell '{gid}' {problem}")
        if meta.get("solution"):   # the only cells the submission decides
            why = None if problem else refusal(theirs[0].source, exercise[:2])
            if why:   # advice only: the cell runs, and is judged on what it returns like any other
                advice.append(f"answer cell '{gid}': {why}; no exercise needs that (see the notebook's note on "
                              "imports); it ran all the same")
            source = SOLUTION.sub(_stub, cell.source) if problem else theirs[0].source
        else:   # a hidden-test cell is not run where the answers run: the grader judges its cases itself
            source = "" if gid.endswith("_hidden") else cell.source
        cells.append(_copy(cell, source))
    known = {_grade_id(c) for c in trusted.cells if _grade_id(c)}
    plain = {c.source.strip() for c in trusted.cells if c.cell_type == "code" and not _grade_id(c)}
    added = [c for c in submission.cells if c.cell_type == "code" and c.source.strip()
             and (_grade_id(c) not in known if _grade_id(c) else c.source.strip() not in plain)]
    notes = advice + ([f"{len(added)} code cell(s) you added were not run: only the answer cells are graded, so put "
                       "helper code inside an answer cell"] if added else [])
    edited = [g for g, found in by_id.items() if g in known and len(found) == 1 and not _nbgrader(found[0]).get(
        "solution") and found[0].source.strip() != _source(trusted, g).strip() and not g.endswith("_hidden")]
    if edited:
        notes.append(f"locked cell(s) {', '.join(sorted(edited))} were edited; the originals were run")
    nb = nbformat.v4.new_notebook(cells=cells, metadata=trusted.metadata)
    return nb, tamper, notes


# What no answer in this course needs, and what a submission would use to reach the grader's machinery inside
# the kernel (its frames, IPython's classes, imported modules, other processes). A static check, so it can be
# fooled by enough cleverness; with the sandbox and the judge it leaves little room. The reason names the use.
_MODULES = {"sys", "gc", "ctypes", "subprocess", "signal", "importlib", "builtins", "IPython", "ipykernel",
            "multiprocessing", "_thread", "threading", "atexit", "code", "codeop", "pdb", "bdb", "trace",
            "faulthandler", "pty", "socket", "marshal", "jupyter_client", "zmq", "asyncio", "nbclient", "pkgutil",
            "runpy", "zipimport", "unittest", "pickle", "_pickle", "copyreg", "shelve", "pydoc", "dill",
            "cloudpickle", "posix", "nt", "_posixsubprocess", "_imp", "_io", "mmap"}   # mock patches; pickle calls
_NAMES = {"get_ipython", "__import__", "eval", "exec", "compile", "globals", "vars", "locals", "breakpoint",
          "setattr", "delattr", "__builtins__", "hasattr"}
_ATTRIBUTES = {"_getframe", "currentframe", "stack", "getouterframes", "f_back", "f_locals", "f_globals",
               "f_builtins", "tb_frame", "gi_frame", "cr_frame", "modules", "kill", "killpg", "_exit", "system",
               "fork", "popen", "putenv", "display_formatter", "for_type", "user_ns", "run_cell", "run_code",
               "events", "formatters", "input_transformer_manager", "input_transformers_cleanup",
               "input_transformers_post", "ast_transformers", "shell", "kernel", "getmodule", "getfile",
               "getsourcefile", "getsource", "getsourcelines", "getabsfile", "findsource", "posix_spawn",
               "posix_spawnp", "startfile", "register_at_fork", "resolve_name", "locate",   # inspect: module, source
               "sys", "attrgetter", "methodcaller", "Formatter", "get_field", "vformat", "format_field"}   # os.sys;
# a string that names an attribute: attrgetter("sys.modules"), Formatter().get_field("0.__dict__", ...)
_SQL = {"execute", "executemany", "executescript"}   # sqlite3's cursor methods (stage 10), not os.exec*
_DUNDERS = {"__name__", "__doc__", "__qualname__", "__init__", "__call__", "__len__", "__iter__", "__eq__",
            "__repr__", "__str__", "__hash__"}


def refusal(source: str, stage: str = "") -> str | None:
    """Why an answer cell is refused before it runs, or None. Besides the interpreter's machinery, an answer may
    not import the finished version of its own stage (``course_lib`` itself re-exports it too): wrapping it is
    no more one's own work than re-exporting it."""
    import ast
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, MemoryError, RecursionError):   # 50,000 minus signs in a row, say: advice
        return None   # only, so none; the cell fails on its own, with Python's message
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            taken = [a.name for a in node.names] if isinstance(node, ast.ImportFrom) else []
            if bad := [n for n in taken if n in _ATTRIBUTES or n in _NAMES]:   # from operator import attrgetter
                return f"it imports {bad[0]}"
            bad = [n for n in names if n.split(".")[0] in _MODULES]
            if bad:
                return f"it imports {bad[0]}"
            if isinstance(node, ast.Import) and any(n.split(".")[0] == "course_lib" for n in names):
                return "it imports course_lib as a package (`from course_lib.x import y` names what it uses)"
            if any(n == "course_lib.courseware" or n.startswith("course_lib.courseware.") for n in names):
                return "it imports the course's grading machinery (course_lib.courseware), which no answer needs"
            done = [n for n in names if n == "course_lib" or n in finished(stage)]
            if done:
                return (f"it imports {done[0]}, the finished version of this stage or a later one, of which only "
                        "what the notebook hands out is there where answers are graded")
        elif isinstance(node, ast.Name) and node.id == "course_lib":
            return "it uses the course_lib package itself"
        elif isinstance(node, ast.Name) and node.id in _NAMES:
            return f"it uses {node.id}"
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr" and not (
                len(node.args) >= 2 and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)
                and (not node.args[1].value.startswith("_") or node.args[1].value in _DUNDERS)):
            return "it uses getattr with a name that is not a plain string"
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr" and \
                node.args[1].value in _ATTRIBUTES:   # getattr(os.sys, "modules") is os.sys.modules
            return f"it uses getattr for .{node.args[1].value}"
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and (
                re.fullmatch(r"\w+", node.value) and "__" in node.value and node.value not in _DUNDERS   # "_self__"
                or set(re.findall(r"__\w+__", node.value)) - _DUNDERS):
            return "it spells a dunder name in a string"
        elif isinstance(node, ast.Attribute) and (node.attr in _ATTRIBUTES or node.attr.startswith(("exec", "spawn"))
                                                  and node.attr not in _SQL   # os.execv starts programs; SQL does not
                                                  or node.attr.startswith("__") and node.attr not in _DUNDERS):
            return f"it uses .{node.attr}"
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            for target in targets:
                base = target.value if isinstance(target, (ast.Attribute, ast.Subscript)) else None
                while isinstance(base, (ast.Attribute, ast.Subscript)):
                    base = base.value
                if isinstance(target, ast.Attribute) and not (isinstance(base, ast.Name) and base.id in ("self", "cls")):
                    return f"it changes {ast.unparse(target)}, which it did not create"
                if isinstance(target, ast.Subscript) and isinstance(base, ast.Call):   # vars-like(obj)["x"] = ...
                    return f"it changes {ast.unparse(target)}, an item of what a call returned"
    return None


def _copy(cell, source: str):
    new = type(cell)(dict(cell))
    new["source"] = source
    if cell.cell_type == "code":
        new["outputs"], new["execution_count"] = [], None
    return new


def _source(nb, gid: str) -> str:
    return next((c.source for c in nb.cells if _grade_id(c) == gid), "")


def _exercise_of(gid: str) -> str:   # "ex04_2_hidden" -> "04.2"
    stage, number = gid[2:].split("_")[:2]
    return f"{stage}.{number}"


# -- 2. run it in a sandboxed kernel, observing replies from outside ------------------------------------------
def _environment(scratch: Path) -> dict:
    drop = ("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_BASE_URL", "COURSE_MAX_STEPS",
            "COURSE_ANTHROPIC_MODEL", "COURSE_OPENAI_MODEL", "COURSE_OLLAMA_MODEL", "JPY_PARENT_PID")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    closed = "http://127.0.0.1:9"   # where there is a network at all, web requests fail at once
    env.update({"PYTHONHASHSEED": "0", "COURSE_APPROVAL": "deny", "HOME": str(scratch / "home"),
                "TMPDIR": str(scratch / "tmp"), "IPYTHONDIR": str(scratch / "home" / ".ipython"),
                "MPLCONFIGDIR": str(scratch / "tmp"), "HTTP_PROXY": closed, "HTTPS_PROXY": closed,
                "ALL_PROXY": closed, "http_proxy": closed, "https_proxy": closed, "NO_PROXY": "", "no_proxy": ""})
    return env


def _client_class():
    from nbclient import NotebookClient

    class ObservingClient(NotebookClient):
        """Keeps each cell's execution status from the kernel's reply, and caps output."""
        statuses: dict
        kept: int = 0
        capped: bool = False

        async def _check_raise_for_error(self, cell, cell_index, exec_reply):
            content = (exec_reply or {}).get("content", {})
            self.statuses[cell_index] = (content.get("status", "no reply"), content.get("ename"), content.get("evalue"))
            return await super()._check_raise_for_error(cell, cell_index, exec_reply)

        def output(self, outs, msg, display_id, cell_index):
            size = len(json.dumps(msg.get("content", {}), default=str))
            if self.kept + size > OUTPUT_CAP:
                self.capped = True
                return None
            self.kept += size
            return super().output(outs, msg, display_id, cell_index)

    return ObservingClient


def _silent(client, code: str, timeout: float, expression: str | None = None) -> dict:
    """Run ``code`` without events or history (no pre/post_run_cell hooks see it); return the reply content,
    or {} when no reply came within ``timeout`` seconds (the kernel is then interrupted)."""
    from jupyter_core.utils import run_sync
    msg_id = client.kc.execute(code, silent=True, store_history=False,
                               user_expressions={"r": expression} if expression else None)
    saved, client.timeout = client.timeout, timeout
    try:
        reply = run_sync(client.async_wait_for_reply)(msg_id)
    finally:
        client.timeout = saved
    return (reply or {}).get("content", {})


@functools.cache
def _roots(stage: str, setup: tuple[str, ...]):
    return worker_lib.roots(stage, list(setup), finished(stage), may_use(stage))


@functools.cache
def _cut(stage: str, setup: tuple[str, ...], keep_out: frozenset):
    """The worker's cut modules for ``stage`` (read once per grading process)."""
    return worker_lib.cut(stage, finished(stage), _roots(stage, setup), keep_out)


def _outcomes(data: dict, plan: dict) -> dict | None:
    """The worker's outcomes, only in the shape asked for: per exercise of ``plan``, whether the answer is defined,
    and if it is, lists of outcomes (no more than the cases asked) and a few strings. Anything else is None (the
    notebook fails). What each outcome says is judged later, case by case (``observe.row_of``)."""
    from .checks import exercise as public_exercise
    try:
        text = data["data"]["text/plain"]
        assert isinstance(text, str) and len(text) < MAX_REPLY
        found = json.loads(ast.literal_eval(text))
        assert isinstance(found, dict) and set(found) == set(plan)
        for ex, seen in found.items():
            assert isinstance(seen, dict) and isinstance(seen.get("defined"), bool)
            if not seen["defined"]:
                continue
            assert all(seen.get(k) is None or isinstance(seen[k], str) for k in ("qualname", "module"))
            for key, asked in (("public", len(public_exercise(ex).cases)), ("hidden", len(plan[ex]["probes"]))):
                assert isinstance(seen.get(key), list) and len(seen[key]) <= asked
        return found
    except Exception:
        return None


def run(nb, stage: str, candidates: dict[str, str], *, timeout: int, level: str, hidden: list[Path],
        probes: dict[str, list[dict]] | None = None, keep_out: frozenset = frozenset()):
    """Execute the assembled notebook in the worker, then ask it for every case's outcome (``probes``: the hidden
    cases' specs per exercise); return (cell statuses, outcomes per exercise, notes, reason)."""
    from nbclient.exceptions import DeadKernelError
    scratch = Path(tempfile.mkdtemp(prefix="course-grade-"))
    for sub in ("work", "home", "tmp"):
        (scratch / sub).mkdir()
    group, lib, replaced = sandbox.process_group(scratch), Path(f"{scratch}-lib"), {}
    if level == "bubblewrap":   # only there can the finished modules be replaced by their cut versions
        lib.mkdir()
        setup = tuple(c.source for c in nb.cells if c.cell_type == "code" and not _grade_id(c))
        replaced = worker_lib.prepare(_cut(stage, setup, keep_out), lib) | worker_lib.absent(stage, lib)
    manager = sandbox.kernel_manager(level, scratch, hidden, group, replaced)
    client = _client_class()(nb, km=manager, timeout=timeout,
                             kernel_name="python3", allow_errors=True, interrupt_on_timeout=True,
                             error_on_timeout={"ename": "TimeoutError",
                                               "evalue": f"the cell ran longer than {timeout} s"},
                             resources={"metadata": {"path": str(scratch / "work")}},
                             shutdown_kernel="immediate")   # nothing to save: a stuck kernel is not waited for
    client.statuses, notes, reason, judged = {}, [], "", None
    deadline = time.monotonic() + 4 * timeout + 30   # all cells together: a notebook cannot stretch forever
    try:
        # cleanup_kc: nbclient shuts down only a kernel whose manager it made itself; this one is ours, and a
        # kernel left running would outlive the grade (and go on spinning in a student's endless loop)
        with client.setup_kernel(env=_environment(scratch), cwd=str(scratch / "work"), cleanup_kc=True):
            try:
                for index, cell in enumerate(nb.cells):
                    if cell.cell_type != "code":
                        continue
                    if time.monotonic() > deadline:
                        reason = f"the notebook ran longer than {4 * timeout + 30} s in all"
                        break
                    client.execute_cell(cell, index)
                    if client.statuses.get(index, ())[:2] == ("error", "TimeoutError"):   # no status: an empty cell
                        if not _silent(client, "pass", 5):   # still stuck after the interrupt: stop here
                            stuck = _grade_id(cell) or f"cell {index + 1}"   # e.g. ex11_3_check: name the exercise
                            reason = (f"the kernel was still busy {timeout} s after cell '{stuck}' was interrupted "
                                      "(code running inside C, such as a regular expression that backtracks, "
                                      "cannot be stopped)")
                            break
                if not reason:
                    plan = {ex: {"name": name, "probes": (probes or {}).get(ex, [])} for ex, name in candidates.items()}
                    source = f"PLAN = {plan!r}\n" + OBSERVE
                    reply = _silent(client, "", 8 * timeout + 60, _expression(source))   # many cases, each limited
                    data = reply.get("user_expressions", {}).get("r", {})
                    if data.get("status") == "ok":
                        judged = _outcomes(data, plan)
                        if judged is None:
                            reason = "the worker's outcomes came back in a shape the grader did not ask for"
                    elif not reply:
                        reason = "the worker did not send the outcomes of the cases in time"
                    else:
                        reason = f"the worker could not run the cases ({data.get('ename')}: {data.get('evalue')})"
            except DeadKernelError:
                reason = "the kernel died while running the notebook (os._exit, a crash, or out of memory)"
            except Exception as e:   # noqa: BLE001 - messages the kernel garbled (a patched json, say): its fail
                reason = f"the kernel's messages could not be read ({type(e).__name__}): the notebook broke its kernel"
    except RuntimeError as e:   # the kernel did not start at all
        raise GraderError(f"could not start a kernel ({level} sandbox): {e}") from None
    finally:
        sandbox.end_group(group)
        shutil.rmtree(scratch, ignore_errors=True)
        shutil.rmtree(lib, ignore_errors=True)
    if client.capped:
        notes.append(f"output was capped at {OUTPUT_CAP:,} characters")
    return client.statuses, judged, notes, reason


# -- 3. judge each exercise from what was observed ---------------------------------------------------------------
def judge(trusted, statuses: dict, judged: dict | None, tamper: dict, candidates: dict, hidden: dict,
          allowed_reexport=()):
    """Each exercise's grade, decided here from the worker's outcomes judged against the trusted cases
    (``hidden``: exercise → its hidden cases). The worker's word counts only against an answer (a cell that
    raised, an answer that names course_lib as its module), never for one."""
    grades = []
    points = {_exercise_of(_grade_id(c)): int(_nbgrader(c).get("points") or 0)
              for c in trusted.cells if _grade_id(c).endswith("_hidden")}
    index = {_grade_id(c): i for i, c in enumerate(trusted.cells) if _grade_id(c)}
    for exercise, name in candidates.items():
        answer = statuses.get(index.get("ex" + exercise.replace(".", "_")), ("not run", None, None))
        seen = (judged or {}).get(exercise) or {}
        own = seen.get("qualname") or None
        public = observe.judged(exercise, None, seen.get("public"), own) if seen.get("defined") else None
        secret = observe.judged(exercise, hidden.get(exercise, []), seen.get("hidden"), own) \
            if seen.get("defined") else None
        failing = [row.as_dict() for row in public.cases if not row.ok] if public else []
        missed = [row for row in secret.cases if not row.ok] if secret else []
        if exercise in tamper:
            detail = "; ".join("tampering: " + t for t in tamper[exercise])
        elif answer[1] == "TimeoutError":
            detail = f"your answer cell was stopped: {answer[2]}"
        elif not seen.get("defined"):
            detail = f"your answer cell defines no `{name}`" if judged is not None else "not graded"
            if judged is not None and answer[0] == "error":   # what stopped it, in the worker's words: text only
                detail += f": it raised {answer[1]}: {' '.join(str(answer[2]).split())[:300]}"
                detail += _cut_import(detail, exercise[:2])
        elif public.not_implemented or secret.not_implemented:
            stub = public.stub or secret.stub
            detail = "not implemented yet" + (f": `{stub}` still raises NotImplementedError" if stub else "")
        elif str(seen.get("module")).startswith("course_lib") and name not in allowed_reexport:
            detail = (f"`{name}` is course_lib's finished version ({str(seen['module'])[:80]}), not your own: "
                      "the exercise asks you to write it")   # the module's name as the worker gave it, cut short
        elif public.error or secret.error:
            error = public.error or secret.error
            detail = error if error.startswith("the check could not run") else f"the check could not run: {error}"
        elif failing:
            detail = f"{len(public.cases) - len(failing)}/{len(public.cases)} cases passed in check()"
            detail += next(filter(None, (_cut_import(row["got"], exercise[:2]) for row in failing)), "")
        elif answer[0] == "error":
            detail = f"your answer cell raised {answer[1]}: {answer[2]}"
        elif missed or not secret.cases:
            first = missed[0] if missed else None
            detail = (f"hidden tests failed: {len(missed)} of {len(secret.cases)} hidden cases; the first: "
                      f"{first.label}: expected {first.expected}, got {first.got}{hidden_cases.where_it_differs(first)}"
                      if first else "hidden tests did not run (no hidden cases)")
        else:
            detail = None
        passed = detail is None   # every test above found nothing wrong
        if passed:
            detail = f"{len(public.cases)}/{len(public.cases)} cases passed, {len(secret.cases)} hidden cases passed"
        # every failing row: the report shows five and counts the rest
        worth = points.get(exercise, 0)   # no hidden-test cell: nothing to earn
        grades.append(ExerciseGrade(exercise, passed, detail[:500], worth if passed else 0, worth, failing))
    return grades


CUT_IMPORT = re.compile(r"cannot import name '(\w+)' from '(course_li[\w.]*)")   # a row's text may be cut short


def _cut_import(said: str, stage: str) -> str:
    """What an ImportError of a finished module means here, to add to a detail (the worker's words are only
    read for a name): the answer imports what the grader's worker does not have, though the learner's kernel did."""
    from importlib import import_module
    found = CUT_IMPORT.search(said)
    for module in sorted(finished(stage)) if found else []:
        try:
            home = getattr(getattr(import_module(module), found[1]), "__module__", module) \
                if module.startswith(found[2]) else None
        except Exception:   # noqa: BLE001 - a module that cannot be imported here, or no such name in it
            continue
        if home:   # where it is defined, if that is finished too (eval_lab re-exports grade_answer)
            return (f" (`{found[1]}` is course_lib's finished version in {home if home in finished(stage) else module}"
                    ": where answers are graded only what the notebook hands out is there, so write it yourself)")
    return ""


def grade(notebook, stage: str, *, solutions_dir=None, timeout: int = 60, level: str | None = None,
          hide=()) -> Grade:
    """Grade one submission of ``stage``. A student's problem is a failed Grade; a grader problem raises
    GraderError. ``hide``: the batch's other notebooks (or folders), out of the kernel's reach."""
    import nbformat
    trusted_path = solution_for(stage, solutions_dir)
    trusted = nbformat.read(trusted_path, as_version=4)
    candidates = {m[1]: m[2] for c in trusted.cells if _grade_id(c).endswith("_check")
                  for m in [CHECK_CALL.search(c.source)] if m}
    try:
        secret = {ex: hidden_cases.cases(ex, trusted_path.parent) for ex in candidates}
    except (OSError, KeyError, AttributeError, SyntaxError) as e:
        raise GraderError(f"the hidden cases of stage {stage} cannot be read "
                          f"({type(e).__name__}: {e}): they belong in {trusted_path.parent / 'hidden'}") from None
    level = level or sandbox.isolation()
    result = Grade(str(notebook), stage, [], isolation=sandbox.DESCRIPTIONS[level])
    try:
        info = Path(notebook).stat()   # before opening: a FIFO or a device would block or never end
        if not stat.S_ISREG(info.st_mode):
            raise ValueError("it is not a regular file")
        if info.st_size > MAX_NOTEBOOK_BYTES:
            raise ValueError(f"{info.st_size:,} bytes, over the {MAX_NOTEBOOK_BYTES:,}-byte limit")
        submission = nbformat.read(Path(notebook), as_version=4)
    except Exception as e:   # missing, not JSON, not a notebook
        result.reason = f"cannot read it as a notebook ({type(e).__name__}: {' '.join(str(e).split())[:200]})"
        result.exercises = [ExerciseGrade(ex, False, "not graded: " + result.reason) for ex in candidates]
        return result
    nb, tamper, result.notes = assemble(trusted, submission)
    hidden = [trusted_path.parent.resolve(), (ROOT / "solutions").resolve(), (ROOT / ".git").resolve()]
    needed = sandbox._needed()   # the batch's notebooks too (no copying a classmate): each one's folder, or, where
    for path in map(Path, hide):  # that folder holds the course or Python, the notebook itself
        folder = path if path.is_dir() else path.parent
        if not any(n.is_relative_to(folder) for n in needed):
            hidden.append(folder)
        elif path.is_file():
            hidden.append(path)
    hidden = list(dict.fromkeys(hidden))
    probes = {ex: [case.call.spec() for case in cases] for ex, cases in secret.items()}
    groups: dict[frozenset, dict[str, str]] = {}   # one worker per set of withheld names (most stages: one)
    for ex, name in candidates.items():
        groups.setdefault(withheld(stage).get(ex, frozenset()) if level == "bubblewrap" else frozenset(), {})[ex] = name
    statuses, judged = {}, {}
    for keep_out, group in sorted(groups.items(), key=lambda g: len(g[0])):
        seen, outcomes, notes, reason = run(nb, stage, group, timeout=timeout, level=level, hidden=hidden,
                                            probes=probes, keep_out=keep_out)
        answers = {i for i, c in enumerate(nb.cells) if _exercise_of(_grade_id(c) or "ex00_0") in group}
        statuses.update({i: s for i, s in seen.items() if not statuses or i in answers})
        judged = None if outcomes is None or judged is None else {**judged, **outcomes}
        result.notes += [n for n in notes if n not in result.notes]
        result.reason = result.reason or reason
    result.exercises = judge(trusted, statuses, judged, tamper, candidates, secret)
    result.errors = [f"cell {i}: {s[1]}: {s[2]}" for i, s in sorted(statuses.items())
                     if s[0] == "error" and not _grade_id(nb.cells[i])]
    if result.reason:
        for ex in result.exercises:
            if ex.passed is False and ex.detail == "not graded":
                ex.detail = "not graded: " + result.reason
    return result


def _grade_safely(args) -> tuple[Grade | None, str | None]:
    notebook, stage, solutions_dir, timeout, hide = args
    try:
        return grade(notebook, stage, solutions_dir=solutions_dir, timeout=timeout, hide=hide), None
    except GraderError as e:
        return None, str(e)
    except Exception as e:   # fail closed: whatever a submission caused, it fails that notebook, not the batch
        result = Grade(str(notebook), stage, [], reason=f"grading stopped ({type(e).__name__}: {e})"[:300])
        return result, None


def grade_all(notebooks: list[str], stage: str, *, solutions_dir=None, timeout: int = 60, jobs: int = 2,
              on_done=None) -> tuple[list[Grade], list[str]]:
    """Grade every notebook, ``jobs`` at a time, each in its own process; returns (grades, grader errors).
    ``on_done(position, grade)`` is called as each one finishes, for progress lines."""
    import multiprocessing
    solution_for(stage, solutions_dir)   # fail early, as a grader error, when the stage has no solution
    grades: list[Grade | None] = [None] * len(notebooks)
    problems: list[str] = []
    batch = sorted({str(Path(n).resolve()) for n in notebooks})   # each one's folder is hidden from the others
    work = [(n, stage, solutions_dir, timeout, batch) for n in notebooks]
    with ProcessPoolExecutor(max_workers=max(1, jobs), mp_context=multiprocessing.get_context("spawn")) as pool:
        futures = {pool.submit(_grade_safely, item): i for i, item in enumerate(work)}
        lost = []
        for future in as_completed(futures):
            i = futures[future]
            try:
                grade_, problem = future.result()
            except Exception:   # a worker process died: it takes its pool down, so those are graded again
                lost.append(i)
                continue
            _record(i, grade_, problem, grades, problems, on_done)
    for i in sorted(lost):   # alone, each in a fresh process
        with ProcessPoolExecutor(max_workers=1, mp_context=multiprocessing.get_context("spawn")) as pool:
            try:
                grade_, problem = pool.submit(_grade_safely, work[i]).result()
            except Exception as e:
                grade_, problem = None, f"{notebooks[i]}: the grader's worker died ({type(e).__name__})"
        _record(i, grade_, problem, grades, problems, on_done)
    return [g for g in grades if g is not None], problems


def _record(i, grade_, problem, grades, problems, on_done) -> None:
    if problem:
        problems.append(problem)
    grades[i] = grade_
    if on_done:
        on_done(i, grade_, problem)


# -- 4. the command ---------------------------------------------------------------------------------------------
def _shown(path: str) -> str:
    """The path as the instructor typed it, relative to where the command runs when it is inside."""
    try:
        shown = os.path.relpath(path)
    except ValueError:   # another drive on Windows
        return str(path)
    return str(path) if shown.startswith("..") else shown


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def _safe(text: str) -> str:
    """``text`` on one line with control characters (terminal escapes, newlines that would fake report lines a
    submission could plant, in a message or a file name) shown as \\x.. escapes."""
    return _CONTROL.sub(lambda m: f"\\x{ord(m[0]):02x}", str(text))


def _lines(g: Grade) -> list[str]:
    """The report of one notebook, each line made safe for the instructor's terminal and wrapped to fit it."""
    return [row for line in _report(g) for row in wrap(_safe(line))]


def _report(g: Grade) -> list[str]:
    lines = [f"    note: {n}" for n in g.notes] + ([f"    NOT GRADED: {g.reason}"] if g.reason else [])
    for ex in g.exercises:
        lines.append(f"    {'✓' if ex.passed else '✗'} {ex.exercise}  {ex.detail}")
        for row in ex.failing[:5]:
            lines.append(f"        ✗ {row['label']}: expected {row['expected']}, got {row['got']}"
                         + (f"  (hint: {row['hint']})" if row.get("hint") else ""))
        if len(ex.failing) > 5:   # say so: fixing the five shown is not the end of it
            lines.append(f"        … and {len(ex.failing) - 5} more failing case(s): the check cell in the "
                         "notebook lists them all")
    return lines


def cmd_check(args) -> int:
    """Exit status: 0 every exercise of every notebook passed, 1 some failed, 2 usage error, 3 grader failure."""
    import sys
    stage, solutions_dir = args.stage, args.solutions   # the parser always sets --solutions (None by default)
    notebooks = args.notebooks or sorted(str(p) for p in (ROOT / "exercises").glob(f"{stage}_*_exercises.ipynb"))
    if not notebooks:
        print(f"course check: no exercise notebook for stage {stage}; give the notebooks' paths", file=sys.stderr)
        return 2
    try:
        solution_for(stage, solutions_dir)
    except GraderError as e:
        print(f"course check: {e}", file=sys.stderr)
        return 3
    total, out = len(notebooks), sys.stderr if args.json else sys.stdout   # --json: stdout holds the report alone
    at_once = f", {min(args.jobs, total)} at a time" if total > 1 else ""
    print(f"Grading {total} notebook(s) of stage {stage}{at_once}; {sandbox.DESCRIPTIONS[sandbox.isolation()]}.",
          file=out, flush=True)

    def progress(i, g, problem):
        mark = "GRADER FAILED" if problem else "passed" if g.passed else "failed"
        lines = _lines(g) if g else [f"    {_safe(problem)}"]
        print("\n".join([f"[{i + 1}/{total}] {_safe(_shown(notebooks[i]))}: {mark}", *lines]), file=out, flush=True)

    grades, problems = grade_all(notebooks, stage, solutions_dir=solutions_dir, timeout=args.timeout,
                                 jobs=args.jobs, on_done=progress)
    if args.json:
        print(json.dumps({"stage": stage, "isolation": sandbox.DESCRIPTIONS[sandbox.isolation()],
                          "notebooks": [g.as_dict() for g in grades], "grader_errors": problems,
                          "passed": sum(g.passed for g in grades), "total": total},
                         ensure_ascii=False, indent=2))
    else:
        print(f"{sum(g.passed for g in grades)}/{total} notebook(s) passed every exercise"
              + (f"; the grader failed on {len(problems)}" if problems else ""))
    return 3 if problems else 0 if all(g.passed for g in grades) else 1
