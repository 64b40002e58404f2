"""A person in the loop: ``ApprovalGate`` gives the agent a ``write_file`` tool that asks before it writes.

The write is sandboxed like ``read_file`` (only inside the workspace, the current folder). Before it
happens, the gate asks: with Approve / Deny buttons in a notebook (``course_lib.widgets``), with a y/n
prompt in a terminal (``course demo``), and, where nobody can answer (CI, a script without a terminal),
it denies. A denied write is not an error in the program: the model receives an observation saying the
person said no, and can continue without it.

``COURSE_APPROVAL=approve|deny|ask`` overrides the choice of policy (CI sets ``deny``).
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass

from .tools import ToolError, inside_workspace

MAX_WRITE_CHARS = 100_000


@dataclass
class WriteRequest:
    path: str
    content: str

    def preview(self, limit: int = 300) -> str:
        text = self.content if len(self.content) <= limit else self.content[:limit] + "…"
        return f"write {len(self.content)} characters to '{self.path}':\n{text}"


def deny(request: WriteRequest) -> bool:
    return False


def approve(request: WriteRequest) -> bool:
    return True


def ask_in_terminal(request: WriteRequest) -> bool:
    """A y/n prompt; anything but y/yes (or no answer at all) is a no."""
    print(f"\nThe agent wants to {request.preview()}")
    try:
        answer = input("Allow this write? [y/N] ")
    except EOFError:
        return False
    return answer.strip().lower() in ("y", "yes")


def _in_notebook() -> bool:
    shell = sys.modules.get("IPython") and sys.modules["IPython"].get_ipython()
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


def default_policy():
    """Who decides: COURSE_APPROVAL if set, else buttons in a notebook, a prompt in a terminal, else deny."""
    chosen = os.environ.get("COURSE_APPROVAL", "").strip().lower()
    if chosen in ("approve", "deny"):
        return approve if chosen == "approve" else deny
    if _in_notebook():
        from .widgets import ask_with_buttons
        return ask_with_buttons
    if chosen == "ask" or sys.stdin.isatty():
        return ask_in_terminal
    return deny


class ApprovalGate:
    """Hands out a ``write_file`` tool whose writes a person approves first; keeps a log of decisions."""

    def __init__(self, policy=None):
        self.policy = policy or default_policy()
        self.decisions: list[tuple[str, bool]] = []

    def write_file(self, path: str, content: str) -> str:
        """Write a text file in the workspace, after a person approves it.

        Args:
            path: where to write, inside the workspace, for example "notes/summary.txt".
            content: the text to write.
        """
        if not isinstance(content, str):
            raise ToolError("content must be text")
        if len(content) > MAX_WRITE_CHARS:
            raise ToolError(f"content is longer than {MAX_WRITE_CHARS} characters; write less")
        target = inside_workspace(path)
        if target.is_dir():
            raise ToolError(f"'{path}' is a folder; give a file name")
        approved = bool(self.policy(WriteRequest(path, content)))
        self.decisions.append((path, approved))
        if not approved:   # an error observation: the action did not happen, and the model must know
            raise ToolError(f"the person did not approve writing '{path}'; nothing was written. "
                            "Do not retry the same write; continue without it.")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
        return f"Wrote {len(content)} characters to '{path}'."
