"""Lessons are for doing (SPEC §3): every lesson from 01 on has at least two `your-turn` code cells. Each arrives
unanswered (a `...` its check recognises, so it says "your turn: ..." and fails nothing), and the course's
answer follows it, folded: the same cell with the `...` filled in, whose check prints ✓."""
import difflib
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
LESSONS = sorted(p for p in (ROOT / "notebooks").glob("[0-9][0-9]*_*.ipynb")
                 if p.name[:2] != "00")
FOLDED = {"source_hidden": True, "outputs_hidden": True}


def _printed(cell) -> str:
    assert not any(o.get("output_type") == "error" for o in cell.get("outputs", [])), "".join(cell["source"])[:200]
    return "".join("".join(o.get("text", "")) for o in cell.get("outputs", []))


@pytest.mark.parametrize("path", LESSONS, ids=lambda p: p.name)
def test_every_your_turn_cell_asks_and_the_courses_answer_follows_it_folded(path):
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    turns = [i for i, c in enumerate(cells) if "your-turn" in c.get("metadata", {}).get("tags", [])]
    assert len(turns) >= 2, f"{path.name} has {len(turns)} your-turn cell(s)"
    for i in turns:
        cell, answer = cells[i], cells[i + 1]
        source = "".join(cell["source"])
        assert cell["cell_type"] == "code" and "answered(" in source and "..." in source, source[:200]
        printed = _printed(cell)
        assert printed.startswith("your turn: ") and "✓" not in printed and "✗" not in printed, \
            f"{path.name} cell {i} arrives answered: {printed[:200]!r}"
        assert answer["cell_type"] == "code" and answer["metadata"].get("tags") == ["answer"], f"{path.name} cell {i}"
        assert answer["metadata"].get("jupyter") == FOLDED, f"{path.name} cell {i + 1}: the answer is not folded"
        shown = _printed(answer)
        assert "✓" in shown and "✗" not in shown and "your turn" not in shown, f"{path.name} cell {i + 1}: {shown!r}"
        # the answer is the learner's cell with the `...` filled in: the check itself is the same code
        removed = [line for line in difflib.ndiff(source.splitlines(), "".join(answer["source"]).splitlines())
                   if line.startswith("- ")]
        assert removed and all("..." in line or line[2:].lstrip().startswith("#") for line in removed), \
            f"{path.name} cell {i + 1} changes {removed}"   # the `...` lines, and comments saying what to write
        before = "".join(cells[i - 1]["source"])
        assert "holds one" not in before and "as committed it shows" not in before, f"{path.name} cell {i - 1}"


@pytest.mark.parametrize("path", sorted(ROOT.glob("notebooks/*.ipynb")) + sorted(ROOT.glob("solutions/*.ipynb"))
                         + sorted(ROOT.glob("exercises/*.ipynb")), ids=lambda p: f"{p.parent.name}/{p.name}")
def test_notebooks_carry_the_metadata_the_kernel_adds_so_opening_them_changes_nothing(path):
    info = json.loads(path.read_text(encoding="utf-8"))["metadata"]["language_info"]
    assert set(info) == {"codemirror_mode", "file_extension", "mimetype", "name", "nbconvert_exporter",
                         "pygments_lexer", "version"}
    assert info["name"] == "python" and info["codemirror_mode"] == {"name": "ipython", "version": 3}


def test_each_lesson_says_what_it_builds_on_and_how_long_it_takes_as_the_readme_does():
    import re
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for path in sorted((ROOT / "notebooks").glob("[0-9][0-9]*_*.ipynb")):
        first = json.loads(path.read_text(encoding="utf-8"))["cells"][0]
        text = "".join(first["source"])
        found = re.search(r"\*\*Before you start:\*\* .+\. \*\*Time:\*\* about (\d+) minutes", text)
        assert found, f"{path.name}: the first cell says what it builds on and how long it takes"
        row = next(line for line in readme.splitlines() if line.startswith(f"| {path.name.split('_')[0]} |"))
        assert f"| {found[1]} min |" in row, f"README stage map and {path.name} disagree on the time"
        sentence = re.search(r"\*\*Time:\*\*[^\n]*", text)[0]   # "about 50 minutes, plus about 70 for its exercises."
        exercises = re.findall(r"about (\d+)", sentence)[1:]
        if path.name[:2] != "00":   # the exercise notebook's time, as the README's row gives it in brackets
            assert exercises and "](exercises/" in row and f") ({exercises[0]} min) |" in row, \
                f"README stage map and {path.name} disagree on the exercises' time"


def test_each_lessons_whats_next_links_to_the_next_lesson():
    lessons = sorted((ROOT / "notebooks").glob("[0-9][0-9]*_*.ipynb"))
    for path, following in zip(lessons, lessons[1:]):
        cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
        text = next("".join(c["source"]) for c in cells if "What's next" in "".join(c["source"]))
        assert f"]({following.name})" in text, f"{path.name}: What's next should link to {following.name}"


def _text_lines(output) -> int:
    text = output.get("text", "") if "text" in output else output.get("data", {}).get("text/plain", "")
    return len("".join(text).splitlines())


@pytest.mark.parametrize("path", sorted((ROOT / "notebooks").glob("[0-9][0-9]*_*.ipynb")), ids=lambda p: p.name)
def test_no_wall_of_output_or_of_summary(path):
    """An output over 25 lines is folded with `course_lib.courseware.widgets.peek`; a lesson's summary stays short."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    walls = [(i, n) for i, c in enumerate(cells) if c["cell_type"] == "code"
             if (n := sum(_text_lines(o) for o in c.get("outputs", []))) > 25]
    assert not walls, f"{path.name}: (cell, lines of output) over 25: {walls}"
    for c in cells:
        text = "".join(c["source"])
        if c["cell_type"] == "markdown" and text.startswith("## Summary"):
            summary = text.split("\n## ")[0]
            lines = [line for line in summary.splitlines() if line.strip()]
            assert len(lines) <= 14, f"{path.name}: the summary has {len(lines)} lines"


def _read_as_maths(markdown: str) -> list[str]:
    r"""Where JupyterLab would set a price as maths: a `$` before a number ("$1 per million, $5" renders as
    italic "1permillion,5", a pair across a line break too), or a `\$`, which its renderer does not honour. Code
    spans and fences are shown as they are; maths meant as maths ($k_1 = 1.5$) has no `$` before a digit."""
    import re
    text = re.sub(r"```.*?```", "", markdown, flags=re.S)
    text = re.sub(r"(`+)(?:(?!\1).)+?\1", "", text, flags=re.S)
    return [text[max(m.start() - 25, 0):m.end() + 25] for m in re.finditer(r"\\\$|\$\s*\d", text)]


def test_the_maths_check_finds_each_form_of_a_price_and_leaves_code_and_real_maths_alone():
    for price in ["$1 per million input tokens, $5 per million output", "$168 (7 × $24)", r"costs \$186 and \$5",
                  "costs $1 per\nmillion, then $5", "costs $ 24", r"\$x"]:
        assert _read_as_maths(price), price
    for fine in ["`$24`", "``a `$24` b``", "```\nprice = '$24'\n```", "$k_1 = 1.5$ and $b = 0.75$", "24 dollars",
                 "$$\\frac{N - n(w) + 0.5}{n(w) + 0.5}$$"]:
        assert not _read_as_maths(fine), fine


@pytest.mark.parametrize("path", sorted(ROOT.glob("[ens]*/[0-9][0-9]*_*.ipynb")), ids=lambda p: p.name)
def test_no_price_in_a_notebooks_text_is_read_as_maths(path):
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    found = [(i, hit) for i, c in enumerate(cells) if c["cell_type"] == "markdown"
             for hit in _read_as_maths("".join(c["source"]))]
    assert not found, f"{path.name}: write amounts in words or a code span: (cell, text) {found}"


@pytest.mark.parametrize("path", sorted(ROOT.glob("[ens]*/[0-9][0-9]*_*.ipynb")), ids=lambda p: p.name)
def test_what_nbval_should_skip_is_marked_in_the_cells_metadata_not_in_code_a_learner_reads(path):
    """A `# nbval-ignore-output` first line is CI talk in a learner's code; the cell's tags say the same to nbval."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    shown = [i for i, c in enumerate(cells) if c["cell_type"] == "code" and "nbval" in "".join(c["source"]).lower()]
    assert not shown, f"{path.name}: cells {shown} name nbval in their code; use the tag in the cell's metadata"


@pytest.mark.parametrize("path", sorted((ROOT / "notebooks").glob("[0-9][0-9]*_*.ipynb")), ids=lambda p: p.name)
def test_no_printed_line_is_wider_than_a_notebook_so_none_is_broken_mid_word(path):
    """JupyterLab breaks an output line wider than the notebook (about 120 columns at 1400 pixels with the file
    browser open) at any letter: lessons print with `say`, which wraps at spaces. An output with an HTML form (a
    peek, a widget) is shown as HTML, which wraps at spaces by itself."""
    from course_lib.courseware.printing import columns
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    wide = [(i, line[:60] + "…") for i, c in enumerate(cells) if c["cell_type"] == "code"
            for o in c.get("outputs", []) if "text/html" not in o.get("data", {})
            for line in "".join(o.get("text") or o.get("data", {}).get("text/plain", "")).splitlines()
            if columns(line) > 120]
    assert not wide, f"{path.name}: (cell, line) printed wider than 120 columns: {wide}"


@pytest.mark.parametrize("path", sorted((ROOT / "notebooks").glob("[0-9][0-9]*_*.ipynb")), ids=lambda p: p.name)
def test_no_code_line_in_a_lesson_hides_behind_a_scrollbar(path):
    """A code cell scrolls sideways past about 120 columns at 1400 pixels: lesson code keeps to 110 (wide
    characters count two), so every line reads whole."""
    from course_lib.courseware.printing import columns
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    wide = [(i, line[:60] + "…") for i, c in enumerate(cells) if c["cell_type"] == "code"
            for line in "".join(c["source"]).splitlines() if columns(line) > 110]
    assert not wide, f"{path.name}: (cell, code line) wider than 110 columns: {wide}"

def _diagrams(path: Path) -> list[str]:
    import re
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    return [m for c in cells if c["cell_type"] == "markdown"
            for m in re.findall(r"```mermaid\n(.*?)```", "".join(c["source"]), re.S)]


@pytest.mark.parametrize("path", [p for p in LESSONS if _diagrams(p)], ids=lambda p: p.stem)
def test_every_diagram_has_alt_text_and_flowcharts_run_left_to_right(path):
    """JupyterLab turns accTitle into the image's alt text and accDescr into a caption for screen readers;
    top-to-bottom flowcharts of the whole loop were two screens tall (the browser test measures the sizes)."""
    for source in _diagrams(path):
        lines = [line.strip() for line in source.splitlines()]
        assert any(line.startswith("accTitle: ") and len(line) > 20 for line in lines), source[:80]
        assert any(line.startswith("accDescr: ") and len(line) > 80 for line in lines), source[:80]
        kind = next(line for line in lines if line and not line.startswith("%%"))
        assert kind in ("flowchart LR", "sequenceDiagram"), f"{path.name}: {kind}"


def test_lesson_08_has_one_sequence_diagram_per_api_and_03_the_description_pipeline():
    sequences = [d for d in _diagrams(ROOT / "notebooks" / "08a_real_apis_on_the_wire.ipynb") if "sequenceDiagram" in d]
    endpoints = ["POST /v1/messages", "POST /v1/chat/completions", "POST /v1/responses", "POST /api/chat"]
    assert len(sequences) == 4 and all(e in s for e, s in zip(endpoints, sequences))
    assert all(word in sequences[0] for word in ("tool_use", "tool_result", "is_error", "end_turn"))
    assert all(word in sequences[1] for word in ("tool_calls", "JSON string", "tool_call_id"))
    assert all(word in sequences[2] for word in ("instructions", "reasoning", "function_call_output", "call_id",
                                                 "store: false"))
    assert all(word in sequences[3] for word in ('"stream": false', "JSON object", "tool_name"))
    pipeline = _diagrams(ROOT / "notebooks" / "03_describing_tools.ipynb")[0]
    assert all(word in pipeline for word in ("Python function", "description line", "JSON Schema", "tool spec",
                                             "input_schema", "function.parameters"))


def test_every_relative_link_in_a_notebook_points_to_a_file_that_exists():
    """A learner clicks these: a link to a planned lesson (or a renamed one) is a dead end."""
    import re
    broken = []
    for folder in ("notebooks", "exercises", "solutions"):
        for path in sorted((ROOT / folder).glob("*.ipynb")):
            for c in json.loads(path.read_text(encoding="utf-8"))["cells"]:
                if c["cell_type"] != "markdown":
                    continue
                text = re.sub(r"```.*?```|`[^`\n]*`", "", "".join(c["source"]), flags=re.S)   # not in code
                for target in re.findall(r"\]\(([^)\s]+)\)", text):
                    if re.match(r"[a-z]+:", target) or target.startswith("#"):
                        continue   # a web address or an anchor
                    if not (path.parent / target.split("#")[0]).exists():
                        broken.append(f"{path.relative_to(ROOT)} → {target}")
    assert not broken, "links to files that do not exist:\n" + "\n".join(broken)


def _words(cells) -> int:
    import re
    return sum(len(re.findall(r"\w+", "".join(c["source"]))) for c in cells if c["cell_type"] == "markdown")


@pytest.mark.parametrize("path", sorted((ROOT / "notebooks").glob("[0-9][0-9]*_*.ipynb")), ids=lambda p: p.name)
def test_no_lesson_is_longer_than_about_seventy_minutes_of_text(path):
    """Issue 24: a lesson that reads well (06) has about 3,800 words; 08 and 11 had 6,300 and 4,700, so they
    are two lessons each now. Words as a reader meets them: every run of letters or digits in the text cells."""
    words = _words(json.loads(path.read_text(encoding="utf-8"))["cells"])
    assert words <= 3_800, f"{path.name} has {words:,} words of text: split it, or say less"


@pytest.mark.parametrize("path", [p for p in LESSONS if p.name.split("_")[0] >= "09"], ids=lambda p: p.name)
def test_lessons_09_on_build_a_piece_before_importing_it_and_show_both_agree(path):
    """As 01-06 do: the learner's small version and the finished module on the same inputs, compared in a cell
    whose output says "same ...: True". A comparison that printed False is a lesson that contradicts itself."""
    import re
    lines = [line.strip() for c in json.loads(path.read_text(encoding="utf-8"))["cells"]
             for o in c.get("outputs", []) for line in "".join(o.get("text", "")).splitlines()]
    agreed = [line for line in lines if re.search(r"\bsame\b[^:]*:\s*True\b", line, re.I)]
    disagreed = [line for line in lines if re.search(r"\bsame\b[^:]*:\s*False\b", line, re.I)]
    assert agreed and not disagreed, f"{path.name}: agreed {agreed[:3]}, disagreed {disagreed[:3]}"
