"""Your-turn cells: `...` marks what a learner writes, and the cell's check waits for it.

A lesson's your-turn cell arrives unanswered: a prediction or a few lines are `...` (Python's Ellipsis), and
the check starts with ``if answered(guess):``. Run as it stands, the cell says "your turn: ..." and what to
write, and nothing fails (so a lesson still runs top to bottom, and nbval compares that line). The course's
answer is the cell below, folded: the same code with the `...` filled in.

What counts as unanswered: `...` itself, `...` anywhere inside a dict, list, tuple or set (a prediction per
row), and a function whose body still holds a bare `...` line (read from its source, as IPython keeps it).
"""
from __future__ import annotations

import ast
import inspect
import textwrap

from .printing import say

FOLDED = "the course's answer is folded in the cell below"


def _open(value) -> bool:
    """Is `...` still in `value`?"""
    if value is Ellipsis:
        return True
    if isinstance(value, dict):
        return any(_open(k) or _open(v) for k, v in value.items())
    if isinstance(value, (list, tuple, set, frozenset)):
        return any(_open(v) for v in value)
    if inspect.isfunction(value):
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(value)))
        except (OSError, TypeError, SyntaxError):   # no source to read (e.g. made by exec): nothing to wait for
            return False
        return any(isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
                   and node.value.value is Ellipsis for node in ast.walk(tree))
    return False


def answered(*values, what: str = "your prediction") -> bool:
    """True once no value holds `...`; until then print what to write, and return False."""
    if any(_open(v) for v in values):
        say(f"your turn: write {what} in place of the ..., then run this cell again ({FOLDED})")
        return False
    return True
