"""How the course's notebooks mark solutions, hidden tests and graded cells, read alike by every tool that needs it.

The solution notebooks carry nbgrader's markers (``### BEGIN SOLUTION`` / ``### END SOLUTION``, ``### BEGIN HIDDEN
TESTS`` / ``### END HIDDEN TESTS``) and its cell metadata (``grade_id``). ``course make-exercises``
(``grading.py``) and ``course check`` (``grader.py``) both read them from here, so neither imports the other for it.
"""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]   # the course folder (course_lib/courseware/notebook_marks.py)
SOLUTION = re.compile(r"^([ \t]*)### BEGIN SOLUTION[^\n]*\n.*?^[ \t]*### END SOLUTION[^\n]*(?:\n|\Z)", re.S | re.M)
HIDDEN = re.compile(r"^[ \t]*### BEGIN HIDDEN TESTS[^\n]*\n.*?^[ \t]*### END HIDDEN TESTS[^\n]*(?:\n|\Z)", re.S | re.M)
MARKER = re.compile(r"#+ *(BEGIN|END) (SOLUTION|HIDDEN TESTS)")


def stub(match: re.Match) -> str:
    """What a ``SOLUTION`` region becomes in the learner's notebook (and in the grader's, for a refused answer)."""
    indent = match.group(1)
    return f"{indent}# YOUR CODE HERE\n{indent}raise NotImplementedError()\n"


def grade_id(cell) -> str:
    """The cell's nbgrader ``grade_id``, or "" for a cell that has none."""
    return cell.get("metadata", {}).get("nbgrader", {}).get("grade_id", "")
