"""Lessons are for doing (SPEC §3): every lesson from 01 on has at least two `your-turn` code cells, each with a
working default and an immediate check that prints ✓ or ✗ (recorded in its output)."""
import json
from pathlib import Path

import pytest

LESSONS = sorted(p for p in (Path(__file__).resolve().parent.parent / "notebooks").glob("[0-9][0-9]_*.ipynb")
                 if p.name[:2] != "00")


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.name)
def test_every_lesson_has_two_your_turn_cells_with_an_immediate_check(path):
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    turns = [c for c in cells if "your-turn" in c.get("metadata", {}).get("tags", [])]
    assert len(turns) >= 2, f"{path.name} has {len(turns)} your-turn cell(s)"
    for cell in turns:
        assert cell["cell_type"] == "code"
        printed = "".join("".join(o.get("text", "")) for o in cell.get("outputs", []))
        assert "✓" in printed or "✗" in printed, f"{path.name}: a your-turn cell without a ✓/✗ check"
        assert not any(o.get("output_type") == "error" for o in cell.get("outputs", []))
