"""Exercise notebooks from solution notebooks, and grading: ``course make-exercises`` and ``course check``.

``solutions/NN_<topic>_exercises.ipynb`` is the single source. Solutions sit between ``### BEGIN SOLUTION`` /
``### END SOLUTION`` and hidden tests between ``### BEGIN HIDDEN TESTS`` / ``### END HIDDEN TESTS`` (the
nbgrader markers, so instructors can use nbgrader too). ``make_exercise`` turns a solution notebook into
the learner's version: solution regions become a stub raising ``NotImplementedError``, hidden tests are
removed, outputs cleared, and a header cell says the file is generated.

Grading (``course check``) lives in ``course_lib.courseware.grader``; ``grade`` here is the same function.
"""
from __future__ import annotations

import copy
from pathlib import Path

# MARKER and _grade_id are read here by the tests and nbgrader checks; ROOT is this module's (tests move it)
from .notebook_marks import HIDDEN, MARKER, ROOT, SOLUTION, grade_id as _grade_id, stub as _stub  # noqa: F401

HEADER = """> **Your turn.** Fill in every cell marked `# YOUR CODE HERE`, run the `check(...)` cell below it, and
> watch its ✗ turn into ✓. Only those answer cells are graded: code in cells you add is not run by
> `course check`.
>
> *For instructors:* this notebook is generated from `solutions/{name}` by `make exercises`; edit the
> solution notebook and regenerate, not this file."""


def make_exercise(solution, name: str):
    """The learner's notebook for a solution notebook (an nbformat node); the input is not changed."""
    import nbformat
    nb = copy.deepcopy(solution)
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        source = SOLUTION.sub(_stub, cell.source)
        if HIDDEN.search(source):
            source = HIDDEN.sub("", source).strip() or (
                "# Hidden tests for this exercise run when your work is graded (`course check`).")
        cell.source = source.rstrip("\n")
        cell.outputs, cell.execution_count = [], None
        if cell.metadata.get("nbgrader", {}).get("locked"):   # JupyterLab then refuses edits and deletes
            cell.metadata["editable"], cell.metadata["deletable"] = False, False
    header = nbformat.v4.new_markdown_cell(HEADER.format(name=name))
    header.id = "generated-header"
    nb.cells.insert(0, header)
    return nb


def solution_paths() -> list[Path]:
    return sorted((ROOT / "solutions").glob("[0-9][0-9]_*_exercises.ipynb"))


def make_exercises(check_only: bool = False) -> list[str]:
    """Write exercises/ from solutions/; with check_only, write nothing and list what is out of date."""
    import nbformat
    stale = []
    (ROOT / "exercises").mkdir(exist_ok=True)
    for path in solution_paths():
        target = ROOT / "exercises" / path.name
        text = nbformat.writes(make_exercise(nbformat.read(path, as_version=4), path.name)) + "\n"
        if not target.exists() or target.read_text(encoding="utf-8") != text:
            stale.append(target.relative_to(ROOT).as_posix())
            if not check_only:
                target.write_text(text, encoding="utf-8")
    return stale


def grade(notebook, stage: str, **options):
    """Grade one submission: see ``course_lib.courseware.grader.grade`` (this module imports the grader, never the
    other way round: what both read lives in ``notebook_marks``)."""
    from . import grader
    return grader.grade(notebook, stage, **options)
