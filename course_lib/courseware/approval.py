"""A person in the loop, on a screen: who is asked (buttons, a terminal prompt, nobody) and ``ApprovalGate``,
which gives the agent a ``write_file`` tool that asks before it writes. What counts as a yes is stage 09's
(``safety.is_yes``); these are the front ends that ask.

The write is sandboxed like ``read_file`` (only inside the workspace, the current folder). Before it
happens, the gate asks: with Approve / Deny buttons in a notebook open in JupyterLab
(``courseware.widgets``), with a y/n prompt in a terminal (``course demo``), and, where nobody can
answer (CI, a script without a terminal, a notebook run by nbconvert, papermill or a grader), it denies at
once, saying why. Only an explicit yes approves: any other answer, or a policy that fails, is a no. The write
itself is atomic (a temporary file, then a rename), so a failure never leaves a half-written or emptied file.
A denied write is not an error in the program: the model receives an observation saying the person said no,
and can continue without it.

``COURSE_APPROVAL=approve|deny|ask`` overrides the choice of policy (CI sets ``deny``).
"""
from __future__ import annotations

import os
import stat
import sys
from dataclasses import dataclass
from pathlib import Path

from ..safety import YES, is_yes  # noqa: F401  (stage 09 decides what counts as a yes)
from ..workspace import OS_FAILURES, ToolError, inside_workspace, os_problem, shorten, write_atomically

MAX_WRITE_CHARS = 100_000


@dataclass
class WriteRequest:
    path: str
    content: str
    kind = "write"   # how the approvers name it: "Allow this write?"; stage 09's CallRequest is a "call"

    @property
    def what(self) -> str:
        return f"writing '{self.path}'"

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
        answer = input(f"Allow this {request.kind}? [y/N] ")
    except EOFError:
        return False
    return answer.strip().lower() in ("y", "yes")


def deny_headless(request: WriteRequest) -> bool:
    """The notebook policy when no screen is attached (nbconvert, papermill, a grader): nobody could click, so
    waiting would only hang the run. Says so in the cell's output and denies at once."""
    print(f"Nobody can approve here: this notebook runs without a screen (nbconvert, papermill or a grader), "
          f"so {request.what} was denied at once. Set COURSE_APPROVAL=approve to allow it in such runs, or "
          "open the notebook in JupyterLab to decide with the buttons.")
    return False


deny_headless.why_no = "nobody was there to approve"   # the observation's words (ApprovalGate._ask)


def _in_notebook() -> bool:
    shell = sys.modules.get("IPython") and sys.modules["IPython"].get_ipython()
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"


def _screen_attached() -> bool:
    """A kernel that JupyterLab (jupyter_server) started for a notebook has JPY_SESSION_NAME, the notebook's
    path; nbconvert, papermill and the course's grader start kernels without it."""
    return bool(os.environ.get("JPY_SESSION_NAME"))


def default_policy():
    """Who decides: COURSE_APPROVAL if set; in a notebook, buttons when a screen is attached (or with
    COURSE_APPROVAL=ask) and an immediate no when not; a prompt in a terminal; else deny."""
    chosen = os.environ.get("COURSE_APPROVAL", "").strip().lower()
    if chosen in ("approve", "deny"):
        return approve if chosen == "approve" else deny
    if _in_notebook():
        if not (_screen_attached() or chosen == "ask"):
            return deny_headless
        from .widgets import ask_with_buttons
        return ask_with_buttons
    if chosen == "ask" or sys.stdin.isatty():
        return ask_in_terminal
    return deny


class ApprovalGate:
    """Hands out a ``write_file`` tool whose writes a person approves first; keeps a log of decisions."""

    def __init__(self, policy=None):
        self.policy = default_policy() if policy is None else policy   # a falsy policy object is still it
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
        try:
            data = content.encode()   # UTF-8
        except UnicodeEncodeError as e:   # half of an emoji: refused before anything is asked or touched
            raise ToolError(f"content has a character at position {e.start} that cannot be saved as UTF-8 "
                            "(half of an emoji?); send the text without it") from None
        if isinstance(path, str) and os.path.basename(path.rstrip().replace("\\", "/")) in ("", ".", ".."):
            raise ToolError(f"'{shorten(path)}' names a folder; give a file name such as "
                            f"'{shorten(path.rstrip())}note.txt'")
        target, root = inside_workspace(path), Path.cwd().resolve()
        _check_target(target, path)
        why = self._ask(WriteRequest(path, content))
        self.decisions.append((path, not why))
        if why:   # an error observation: the action did not happen, and the model must know
            raise ToolError(f"{why}; nothing was written. "
                            "Do not retry the same write; continue without it.")
        try:   # the folder is checked again as it is opened: it may have been swapped while the person decided
            write_atomically(target, data, inside=root)
        except OS_FAILURES as e:   # the old file is whole
            raise ToolError(f"{os_problem(path, e)}; nothing was changed") from None
        return f"Wrote {len(content)} characters to '{path}'."

    def _ask(self, request: WriteRequest) -> str:
        """Asks the policy: "" if the person said yes, else why the write may not happen."""
        try:
            answer = self.policy(request)
        except KeyboardInterrupt:   # a person stopping the run stops it
            raise
        except BaseException as e:   # a broken policy denies; it never lets a write through
            return (f"the approval step failed ({type(e).__name__}: {e}), "
                    f"so writing '{shorten(request.path)}' was denied")
        if is_yes(answer):
            return ""
        who = getattr(self.policy, "why_no", None) or "the person did not approve"
        return f"{who} writing '{shorten(request.path)}'"


def _check_target(target, path: str) -> None:
    """Only a missing file or a regular file may be written: a folder, a named pipe or a device is refused
    before anyone is asked (writing to a pipe would wait forever for a reader)."""
    try:
        kind = os.stat(target).st_mode
    except FileNotFoundError:
        return
    except OSError as e:
        raise os_problem(path, e) from None
    if stat.S_ISDIR(kind):
        raise ToolError(f"'{shorten(path)}' is a folder; give a file name")
    if not stat.S_ISREG(kind):
        raise ToolError(f"'{shorten(path)}' is not a regular file (a pipe or a device); it cannot be written")
