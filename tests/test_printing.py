"""say: print for lessons, long lines wrapped at spaces (issue 30: JupyterLab broke them at any letter)."""
import io

from hypothesis import given
from hypothesis import strategies as st

from course_lib.courseware.printing import WIDTH, clip, columns, say, wrap


def said(*values, **options) -> str:
    out = io.StringIO()
    say(*values, file=out, **options)
    return out.getvalue()


def test_a_short_line_is_printed_as_print_prints_it():
    assert said("step", 3, "of", 6) == "step 3 of 6\n"
    assert said("a", "b", sep=", ", end="!") == "a, b!"
    assert said("one\ntwo") == "one\ntwo\n"


def test_a_long_line_breaks_at_spaces_with_its_continuation_indented():
    line = "  COURSE_OPENAI_MODEL  " + " ".join(f"word{i}" for i in range(40))
    rows = said(line).rstrip("\n").split("\n")
    assert len(rows) > 1 and all(columns(row) <= WIDTH for row in rows)
    assert rows[0].startswith("  COURSE_OPENAI_MODEL") and all(row.startswith("      word") for row in rows[1:])
    assert " ".join(" ".join(rows).split()) == " ".join(line.split())   # every word, in order, none cut


def test_korean_takes_two_columns_and_a_word_longer_than_a_line_stays_whole():
    rows = wrap("일곱 개 사면 얼마예요? " * 12, 40)
    assert all(columns(row) <= 40 for row in rows) and len(rows) > 3
    url = "https://example.com/" + "x" * 150
    assert wrap(f"see {url} now", 60) == ["see", f"    {url}", "    now"]


@given(st.lists(st.text(alphabet="abc가나 ", max_size=30), max_size=30), st.integers(10, 120))
def test_wrapping_keeps_every_word_and_fits_wherever_a_word_fits(words, width):
    line = " ".join(words)
    rows = wrap(line, width)
    assert " ".join(" ".join(rows).split()) == " ".join(line.split())
    assert all(columns(row) <= width or " " not in row.strip() for row in rows)


def test_clip_marks_a_cut_and_leaves_a_short_text_whole():
    assert clip("short", 10) == "short" and clip("exactly ten", 11) == "exactly ten"
    assert clip("The release moves to Friday and two bugs were fixed", 20) == "The release moves t…"
    assert clip("a  b\n c", 10) == "a b c"   # one line
    assert clip("word " * 3, 9) == "word wor…" and len(clip("x" * 50, 9)) == 9
