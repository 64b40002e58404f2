"""Helpers several test files share (plain code; fixtures live in conftest.py)."""
import socket
from dataclasses import dataclass, field


def free_port() -> int:
    """A TCP port of 127.0.0.1 that was free a moment ago (the system picked it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def everything_in(folder) -> list[str]:
    """The names in a folder, sorted: what a test compares before and after to see that nothing was left."""
    return sorted(p.name for p in folder.iterdir())


@dataclass
class Tally:
    """Count things and return the running total."""
    total: int = 0
    seen: list = field(default_factory=list)

    def __call__(self, amount: int) -> str:
        """Add to the tally.

        Args:
            amount: how much to add.
        """
        self.total += amount
        return f"total is {self.total}"


def lesson_cell(notebook: str, setup_line: str | None, tagged_line: str, edits: dict, extra: str = "") -> str:
    """Run a lesson's setup cell (the code cell holding ``setup_line``) and ``extra`` code, then the course's
    answer to the your-turn cell holding ``tagged_line`` (folded below it) with a learner's ``edits``; its output.
    With no ``setup_line`` (None), every code cell before that answer runs instead (your-turn cells left out),
    quietly; with ``setup_line=""``, none does (``extra`` sets the scene alone)."""
    import contextlib
    import io
    import json
    from pathlib import Path
    cells = json.loads((Path(__file__).parent.parent / "notebooks" / notebook).read_text(encoding="utf-8"))["cells"]
    code = [c for c in cells if c["cell_type"] == "code" and "your-turn" not in c["metadata"].get("tags", [])]
    sources = ["".join(c["source"]) for c in code]
    at = next(k for k, c in enumerate(code) if "answer" in c["metadata"].get("tags", []) and tagged_line in sources[k])
    cell = sources[at]
    for old, new in edits.items():
        assert old in cell, old
        cell = cell.replace(old, new)
    namespace, printed = {}, io.StringIO()
    with contextlib.redirect_stdout(io.StringIO() if setup_line is None else printed):
        for setup in (sources[:at] if setup_line is None else
                      [next(s for s in sources if setup_line in s)] if setup_line else []):
            exec(setup, namespace)
    with contextlib.redirect_stdout(printed):
        exec(extra, namespace)
        exec(cell, namespace)
    return printed.getvalue().replace("\n    ", " ")   # say's wrapped lines joined again
