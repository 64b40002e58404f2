"""``say``: ``print`` for lessons, with long lines wrapped at spaces; ``clip``: a text cut to a length, marked.

JupyterLab breaks an output line that is wider than the notebook at any letter ("COU" at the end of one line,
"RSE_OPENAI_MODEL" at the start of the next). ``say`` takes what ``print`` takes and prints the same text, except
that a line wider than ``width`` columns is broken at spaces, its continuation indented four spaces past the
line's own indent. A word longer than a whole line is left whole: the notebook breaks it, as it would anyway.
Korean and other wide characters count as two columns, as they take two on screen.
"""
from __future__ import annotations

import sys
import unicodedata

WIDTH = 110   # what a JupyterLab notebook shows at 1400 pixels with the file browser open, with room to spare


def columns(text: str) -> int:
    """How many columns ``text`` takes in a monospace font: wide (East Asian) characters take two."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def wrap(line: str, width: int = WIDTH) -> list[str]:
    """One line as lines of at most ``width`` columns, broken at spaces (a longer word stays whole)."""
    if columns(line) <= width:
        return [line]
    indent = line[:len(line) - len(line.lstrip(" "))]
    rows, row = [], indent
    for word in line[len(indent):].split(" "):
        if row.strip() and columns(row) + 1 + columns(word) > width:
            rows.append(row)
            row = indent + "    " + word
        else:
            row = row + (" " if row.strip() else "") + word
    return rows + [row]


def say(*values, sep: str = " ", end: str = "\n", file=None, flush: bool = False, width: int = WIDTH) -> None:
    """``print(*values, sep=sep, end=end, file=file, flush=flush)``, its lines wrapped at ``width`` columns."""
    text = sep.join(map(str, values))
    out = "\n".join(row for line in text.split("\n") for row in wrap(line, width))
    print(out, end=end, file=sys.stdout if file is None else file, flush=flush)


def clip(text, limit: int) -> str:
    """``text`` on one line (whitespace squeezed), at most ``limit`` characters: a cut one ends with "…"."""
    text = " ".join(("" if text is None else str(text)).split())   # None (a message without content) is no text
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "…"
