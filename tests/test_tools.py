"""Stage 01 — the tools themselves.

Tools are plain functions: text in, text out, and ``ToolError`` (with a message written for the model)
when the input is wrong. These tests pin down what each tool accepts, what it refuses, and that refusing
is always quick and always a ``ToolError`` — never a hang, a ``RecursionError`` or a ``MemoryError``.
"""
import json
import re
import time
from pathlib import Path

import pytest

import course_lib
from course_lib.tools import ToolError, calculator, list_files, lookup, read_file, search_docs


# ====================================================================== calculator: what works
@pytest.mark.parametrize(
    "expression, expected",
    [
        ("24*7", "168"),
        ("7/2", "3.5"),                 # true division gives a float
        ("10/5", "2.0"),                # ... even when it divides evenly
        ("2**10", "1024"),
        ("1e3+1", "1001.0"),            # scientific notation is a float
        ("-3 + +4", "1"),               # unary minus and plus
        ("7//2", "3"),
        ("-7//2", "-4"),                # floor division rounds down, like Python
        ("7%3", "1"),
        ("(1+2)*3", "9"),               # parentheses change the order
        ("1+2*3", "7"),                 # ... and without them * binds tighter
        ("2**-1", "0.5"),
        ("4**0.5", "2.0"),
        ("1.5*2", "3.0"),
        ("0.1+0.2", "0.30000000000000004"),   # floats are shown exactly as Python computes them
        ("1_000+1", "1001"),
        ("99999999999*99999999999", "9999999999800000000001"),   # big integers are fine
        ("  24 * 7  ", "168"),          # whitespace around and inside
        ("\n24*7\n", "168"),
        ("\t7 / 2\t", "3.5"),
        (" \n\t (1 +\n 2) \t\n", "3"),  # a line break inside parentheses is fine
    ],
)
def test_calculator_evaluates_arithmetic(expression, expected):
    assert calculator(expression) == expected


def test_calculator_allows_a_long_flat_sum():
    """A sum of many numbers is long, not deeply nested: it must not trip the nesting guard."""
    expression = "+".join(["1"] * 100)   # 199 characters, just under the length limit
    assert calculator(expression) == "100"


def test_results_at_the_size_limit_are_still_returned():
    """The bound is about 3000 bits (~900 digits): right below it, the answer comes back in full."""
    assert calculator("2**2999") == str(2**2999)
    product = calculator("10**300 * 10**300 * 10**300")
    assert product == "1" + "0" * 900


# ====================================================================== calculator: what is refused
@pytest.mark.parametrize(
    "expression, what",
    [
        ("x", "names"),
        ("abc", "names"),
        ("abs(-1)", "function calls"),
        ("print(1)", "function calls"),
        ("__import__('os').system('ls')", "function calls"),
        ("(lambda: 1)()", "function calls"),
        ("lambda: 1", "lambdas"),
        ("(1).real", "attributes"),
        ("().__class__", "attributes"),
        ("'a'*3", "strings"),
        ("b'a'", "strings"),
        ("1<2", "comparisons"),
        ("1==1", "comparisons"),
        ("1<<5", "operator << is not allowed"),           # shifts and bit operations are not arithmetic here
        ("8>>1", "operator >> is not allowed"),
        ("1|2", "operator | is not allowed"),
        ("1&3", "operator"),
        ("1^2", "operator"),            # ^ is XOR in Python, not a power: refusing it avoids a silent wrong answer
        ("~1", "operator ~ is not allowed"),
        ("not 1", "operator"),
        ("True", "True"),               # bool is a subclass of int, but it is not a number a model should send
        ("1 and 2", "and/or"),
        ("1 or 2", "and/or"),
        ("1j", "1j"),                   # complex numbers
        ("[1, 2][0]", "indexing"),
        ("f'{1+1}'", "f-strings"),
        ("(x:=1)", "NamedExpr"),        # the walrus operator would assign a name
        ("[1]", "lists"),
        ("(1, 2)", "tuples"),
        ("{1: 2}", "dicts"),
        ("{1}", "sets"),
        ("1 if 1 else 2", "if/else"),
    ],
)
def test_calculator_refuses_anything_but_arithmetic(expression, what):
    """The message names the forbidden construct, so the model knows what to change."""
    with pytest.raises(ToolError) as caught:
        calculator(expression)
    message = str(caught.value)
    assert what in message
    assert "not allowed" in message


@pytest.mark.parametrize(
    "expression, reason",
    [
        ("", "empty"),
        ("   ", "empty"),
        ("\n\t", "empty"),
        (None, "text"),                 # the model may send JSON null, a number or a list
        (5, "text"),
        (["1"], "text"),
        ("1/0", "division by zero"),
        ("1//0", "division by zero"),
        ("1%0", "division by zero"),
        ("7//0.0", "division by zero"),
        ("0**-1", "division by zero"),
        ("(-8)**0.5", "fractional power"),   # Python would return a complex number
        ("1e999", "out of range"),              # the literal is already infinity
        ("1e308*10", "out of range"),           # float overflow to infinity
        ("2.0**10000", "out of range"),         # float overflow raised by Python
        ("10**900 + 0.5", "out of range"),      # an integer too big to become a float
        ("1;2", "not a valid"),              # statements are not expressions
        ("import os", "not a valid"),
        ("1 +", "not a valid"),
    ],
)
def test_calculator_refuses_bad_input_with_a_reason(expression, reason):
    with pytest.raises(ToolError, match=re.escape(reason)):
        calculator(expression)


# ====================================================================== calculator: bombs
# Each of these would hang Python, exhaust memory or overflow the stack if evaluated naively.
# They must be refused with ToolError, quickly. pytest.raises(ToolError) lets any other exception
# (RecursionError, MemoryError) through, which fails the test.
BOMBS = {
    "power tower": "9**9**9",
    "huge power": "10**1000000",
    "tall power tower": "2**2**2**2**2",
    "deep parentheses": "(" * 5000 + "1" + ")" * 5000,
    "long sum": "+".join(["1"] * 100_000),
    "many unary minuses": "-" * 100_000 + "1",
    "long number": "9" * 1000,
    "deep nesting within the length limit": "-" * 150 + "1",
    "growing product": "10**300 * 10**300 * 10**300 * 10**300",   # about 3990 bits > the 3000-bit bound
    "product of two big powers": "(2**1500) * (2**1501)",
    "big power of a big power": "(10**300)**4",
    "just over the bound": "2**3000",                                # 3001 bits
}


@pytest.mark.parametrize("expression", BOMBS.values(), ids=BOMBS.keys())
def test_calculator_refuses_bombs_quickly(expression):
    start = time.perf_counter()
    with pytest.raises(ToolError):
        calculator(expression)
    assert time.perf_counter() - start < 20.0   # a hang guard a loaded machine cannot trip (SPEC §7)


# ====================================================================== the workspace
@pytest.fixture
def workspace(tmp_path, monkeypatch):
    """A workspace folder as the current directory, with things outside it worth stealing.

    tmp_path/
        secret.txt          outside: must never be readable
        work/               the workspace (cwd)
        work2/x.txt         a sibling whose name starts with "work": also outside
    """
    root = tmp_path / "work"
    root.mkdir()
    (tmp_path / "secret.txt").write_text("TOP SECRET", encoding="utf-8")
    (tmp_path / "work2").mkdir()
    (tmp_path / "work2" / "x.txt").write_text("TOP SECRET TOO", encoding="utf-8")
    monkeypatch.chdir(root)
    return root


def test_read_file_returns_korean_text_intact(workspace):
    text = "출장 보고서\n일비: 25,000원 × 3일 = 75,000원\n"
    (workspace / "보고서.txt").write_text(text, encoding="utf-8")
    assert read_file("보고서.txt") == text


def test_read_file_reads_from_subfolders(workspace):
    (workspace / "notes").mkdir()
    (workspace / "notes" / "plan.txt").write_text("step 1", encoding="utf-8")
    assert read_file("notes/plan.txt") == "step 1"


@pytest.mark.parametrize(
    "kept, hidden, max_chars",
    [
        ("a" * 30, "THE END " * 10, 30),
        ("가나다라마바사아자차", "끝" * 40, 10),   # counted in characters, not UTF-8 bytes
        ("x" * 20_000, "Z", None),                 # the default limit is 20000
    ],
)
def test_read_file_cuts_long_text_and_says_how_much_is_missing(workspace, kept, hidden, max_chars):
    (workspace / "long.txt").write_text(kept + hidden, encoding="utf-8")
    result = read_file("long.txt") if max_chars is None else read_file("long.txt", max_chars=max_chars)
    assert result.startswith(kept)
    assert hidden not in result
    note = result[len(kept):]
    assert re.search(rf"\b{len(hidden)}\b", note), note   # the exact number of characters left out
    assert "max_chars" in note                             # and how to see more


def test_read_file_does_not_cut_text_that_fits(workspace):
    (workspace / "short.txt").write_text("a" * 30, encoding="utf-8")
    assert read_file("short.txt", max_chars=30) == "a" * 30


def test_read_file_missing_file_names_the_path(workspace):
    with pytest.raises(ToolError, match="missing.txt"):
        read_file("missing.txt")


def test_read_file_refuses_a_directory(workspace):
    (workspace / "notes").mkdir()
    with pytest.raises(ToolError, match="notes"):
        read_file("notes")


# Paths that lead outside the workspace. "{outside}" is replaced by the folder holding the workspace.
ESCAPES = {
    "parent": "../secret.txt",
    "down then up past the root": "sub/../../secret.txt",
    "absolute path outside": "{outside}/secret.txt",
    "symlink to a file outside": "link_to_secret.txt",
    "symlink to a folder outside": "link_to_outside/secret.txt",
    "sibling sharing the name prefix": "../work2/x.txt",
    "sibling sharing the name prefix, absolute": "{outside}/work2/x.txt",
    "NUL byte": "a\x00b",
    "empty path": "",
}


@pytest.fixture
def workspace_with_links(workspace):
    """The workspace plus symlinks that point out of it (created inside, resolved outside)."""
    (workspace / "sub").mkdir()
    (workspace / "link_to_secret.txt").symlink_to(workspace.parent / "secret.txt")
    (workspace / "link_to_outside").symlink_to(workspace.parent, target_is_directory=True)
    return workspace


@pytest.mark.parametrize("path", ESCAPES.values(), ids=ESCAPES.keys())
def test_read_file_refuses_to_leave_the_workspace(workspace_with_links, path):
    path = path.format(outside=workspace_with_links.parent)
    with pytest.raises(ToolError) as caught:
        read_file(path)
    assert "SECRET" not in str(caught.value)


def test_read_file_allows_an_absolute_path_inside_the_workspace(workspace):
    (workspace / "notes.txt").write_text("inside", encoding="utf-8")
    assert read_file(str(workspace / "notes.txt")) == "inside"


def test_read_file_follows_a_symlink_that_stays_inside(workspace):
    (workspace / "real.txt").write_text("the real file", encoding="utf-8")
    (workspace / "alias.txt").symlink_to(workspace / "real.txt")
    assert read_file("alias.txt") == "the real file"


@pytest.mark.parametrize("max_chars", [0, -1, "10", True, 2.5, None])
def test_read_file_refuses_a_bad_max_chars(workspace, max_chars):
    """True is an int in Python, but a model sending it meant something else."""
    (workspace / "notes.txt").write_text("hello", encoding="utf-8")
    with pytest.raises(ToolError, match="max_chars"):
        read_file("notes.txt", max_chars=max_chars)


# ---------------------------------------------------------------------- list_files
def test_list_files_is_sorted_marks_folders_and_skips_hidden(workspace):
    (workspace / "b.txt").write_text("b", encoding="utf-8")
    (workspace / "a.txt").write_text("a", encoding="utf-8")
    (workspace / "docs").mkdir()
    (workspace / ".env").write_text("KEY=1", encoding="utf-8")   # hidden files stay hidden
    (workspace / ".git").mkdir()
    assert list_files() == "a.txt\nb.txt\ndocs/"
    assert list_files(".") == "a.txt\nb.txt\ndocs/"


def test_list_files_lists_a_subfolder(workspace):
    (workspace / "자료").mkdir()
    (workspace / "자료" / "규정.txt").write_text("…", encoding="utf-8")
    assert list_files("자료") == "규정.txt"


def test_list_files_says_when_a_folder_is_empty(workspace):
    """An empty folder is an answer, not an error."""
    (workspace / "empty").mkdir()
    result = list_files("empty")
    assert "empty" in result
    assert "'empty'" in result


@pytest.mark.parametrize("directory", ["..", "../work2", "{outside}", "sub/../..", "a\x00b"])
def test_list_files_refuses_to_leave_the_workspace(workspace, directory):
    (workspace / "sub").mkdir()
    with pytest.raises(ToolError):
        list_files(directory.format(outside=workspace.parent))


def test_list_files_on_a_file_points_to_read_file(workspace):
    (workspace / "note.txt").write_text("x", encoding="utf-8")
    with pytest.raises(ToolError, match="is a file, not a folder"):
        list_files("note.txt")


def test_calculator_treats_any_whitespace_as_a_space():
    assert calculator("1 +\n2") == "3"          # a model may break a long expression over lines
    assert calculator("\t 2 *\r\n 3 ") == "6"
    assert calculator(" " * 300 + "1") == "1"    # padding does not count against the length limit


def test_list_files_missing_folder_names_it(workspace):
    with pytest.raises(ToolError, match="nowhere"):
        list_files("nowhere")


# ====================================================================== lookup
@pytest.mark.parametrize(
    "topic, answer",
    [
        ("단가", "개당 $24"),                    # a Korean question gets a Korean answer
        ("가격", "개당 $24"),                    # synonyms lead to the same fact
        ("unit price", "$24 per unit"),          # an English question gets an English answer
        ("  Unit   PRICE ", "$24 per unit"),     # case and extra whitespace do not matter
        ("price per unit", "$24 per unit"),
        ("REFUND", "Refunds within 30 days of delivery"),
        ("배송", "$500 이상 무료"),
    ],
)
def test_lookup_finds_facts_in_korean_and_english(topic, answer):
    assert lookup(topic) == answer


def test_lookup_unknown_topic_lists_the_known_ones():
    """The error tells the model what it could ask instead."""
    with pytest.raises(ToolError) as caught:
        lookup("weather")
    message = str(caught.value)
    assert "weather" in message
    for known in ("unit price", "refund policy", "shipping", "warranty", "support hours"):
        assert known in message


@pytest.mark.parametrize("topic", ["", "   ", None])
def test_lookup_refuses_an_empty_topic(topic):
    with pytest.raises(ToolError):
        lookup(topic)


# ====================================================================== search_docs
def test_search_docs_finds_the_travel_policy():
    result = search_docs("출장")
    assert "출장비 규정" in result
    assert "25,000" in result and "90,000" in result


def test_search_docs_returns_an_injected_instruction_as_plain_data():
    """The 공지 document tells the reader to ignore its instructions. The tool does not filter it:
    it returns the text unchanged, and the agent (stage 06/07) must treat it as data."""
    docs = json.loads((Path(course_lib.__file__).parent / "data" / "docs.json").read_text(encoding="utf-8"))
    result = search_docs("공지")
    assert docs["공지"] in result
    assert "무시" in result


def test_search_docs_ignores_case():
    assert "Travel policy" in search_docs("TRAVEL")


def test_search_docs_with_no_hits_is_a_message_not_an_error():
    result = search_docs("우주선")
    assert isinstance(result, str)
    assert "우주선" in result
    assert result.startswith("No document")


@pytest.mark.parametrize("query", ["", "  ", None])
def test_search_docs_refuses_an_empty_query(query):
    with pytest.raises(ToolError):
        search_docs(query)


def test_lookup_accepts_the_form_its_error_message_lists():
    """Models copy what they see: "unit price (단가)" from the known-topics list must work as a topic."""
    with pytest.raises(ToolError) as info:
        lookup("cost")
    listed = str(info.value).split("Known topics: ")[1].split(", ")[0]
    assert listed == "unit price (단가)" and lookup(listed) == "$24 per unit"
