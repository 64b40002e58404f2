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
