"""Stage 01 — the tools themselves.

Tools are plain functions: text in, text out, and ``ToolError`` (with a message written for the model)
when the input is wrong. These tests pin down what each tool accepts, what it refuses, and that refusing
is always quick and always a ``ToolError`` — never a hang, a ``RecursionError`` or a ``MemoryError``.
"""
import ast
import builtins
import errno
import json
import os
import re
import stat
import threading
import time
import types
from pathlib import Path

import pytest

import course_lib
from course_lib import tools
from course_lib import workspace as ws   # the module; `workspace` is the fixture below
from course_lib.courseware.approval import YES, ApprovalGate, approve
from course_lib.dispatch import dispatch
from course_lib.tools import ToolError, calculator, list_files, lookup, read_file, search_docs
from course_lib.workspace import inside_workspace, os_problem, shorten, write_atomically


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


HANG_GUARD = 20   # seconds; only a hang (a FIFO opened for writing, a read of gigabytes) can reach it


def finishes(func, *args):
    """Run func(*args) in a thread; fail (instead of hanging the suite) if it is still running after the guard."""
    box = {}

    def go():
        try:
            box["value"] = func(*args)
        except BaseException as e:   # noqa: BLE001 - handed back to the test
            box["error"] = e
    worker = threading.Thread(target=go, daemon=True)
    worker.start()
    worker.join(HANG_GUARD)
    assert not worker.is_alive(), f"{getattr(func, '__name__', func)} hung"
    return box


def everything_in(folder):
    return sorted(p.name for p in folder.iterdir())


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



def test_as_on_windows_without_dir_fd_or_proc_a_link_out_of_the_workspace_is_still_refused(workspace_with_links,
                                                                                            monkeypatch):
    """Issue 29: Windows has no dir_fd and no /proc/self/fd; hidden here, reading, listing and an approved write
    through a link that leads outside are refused all the same (the path is resolved, links followed, first)."""
    monkeypatch.setattr(os, "supports_dir_fd", set())
    monkeypatch.setattr(os, "supports_fd", set())

    real_readlink = os.readlink

    def no_proc(path, *args, **kwargs):   # links still read; only /proc is not there
        if str(path).startswith("/proc/"):
            raise FileNotFoundError(path)
        return real_readlink(path, *args, **kwargs)
    monkeypatch.setattr(ws.os, "readlink", no_proc)
    outside = workspace_with_links.parent
    for path in ESCAPES.values():
        with pytest.raises(ToolError) as caught:
            read_file(path.format(outside=outside))
        assert "SECRET" not in str(caught.value)
    with pytest.raises(ToolError, match="outside the workspace"):
        list_files("link_to_outside")
    before = sorted(p.name for p in outside.iterdir())
    obs = dispatch({"write_file": ApprovalGate(lambda request: True).write_file}, "write_file",
                   {"path": "link_to_outside/planted.txt", "content": "PWNED"})
    assert obs.is_error and "outside the workspace" in obs.content
    assert sorted(p.name for p in outside.iterdir()) == before

def test_a_path_that_resolves_outside_is_refused_in_one_sentence(workspace_with_links):
    for path in ("../secret.txt", "link_to_outside/secret.txt"):
        with pytest.raises(ToolError) as caught:
            inside_workspace(path)
        assert str(caught.value) == f"'{path}' is outside the workspace; use a path inside the current folder"


def test_shorten_keeps_a_path_as_given_when_the_working_folder_is_gone(tmp_path, monkeypatch):
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()   # Path.cwd() now raises FileNotFoundError: the message still names the path
    assert shorten("/somewhere/notes.txt") == "/somewhere/notes.txt"
    assert shorten("/x/" + "a" * 100) == "/x/" + "a" * 77 + "…"


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



# ====================================================================== pinned limits and messages (issue 16)
# Each limit is tried at its edge and one step past it, and each refusal's message is pinned: the message is what
# the model reads to fix its call (SPEC §8), so its wording is part of the contract.
USE = "use numbers, + - * / // % ** and parentheses"
TOO_BIG = "the result is too large (over about 900 digits); split the calculation"


@pytest.mark.parametrize("expression, expected", [
    ("-" * 100 + "1", "1"),             # a hundred unary minuses: the deepest nesting accepted
    ("-" * 99 + "1+1", "0"),            # the + is a level too, on its left ...
    ("1+" + "-" * 99 + "1", "0"),       # ... and on its right
])
def test_calculator_takes_nesting_up_to_one_hundred_levels(expression, expected):
    assert calculator(expression) == expected


@pytest.mark.parametrize("expression", ["-" * 101 + "1", "-" * 100 + "1+1", "1+" + "-" * 100 + "1"])
def test_calculator_refuses_nesting_one_level_past_the_limit(expression):
    with pytest.raises(ToolError) as caught:
        calculator(expression)
    assert str(caught.value) == "the expression is nested too deeply (more than 100 levels)"


def test_calculator_takes_two_hundred_characters_and_refuses_two_hundred_and_one():
    assert calculator("1+" * 99 + "10") == "109"            # exactly 200 characters
    with pytest.raises(ToolError) as caught:
        calculator("1+" * 99 + "100")                       # 201
    assert str(caught.value) == "the expression is longer than 200 characters; split it up"


def test_calculator_looks_at_no_more_than_ten_thousand_characters_of_raw_input():
    """Whitespace is collapsed before the 200-character limit applies, but only in input of up to 50 x 200
    characters: anything longer is refused before any work, whatever it holds."""
    assert calculator(" " * 9_999 + "1") == "1"
    with pytest.raises(ToolError) as caught:
        calculator(" " * 10_000 + "1")
    assert str(caught.value) == "the expression is longer than 200 characters; split it up"


def test_a_huge_expression_is_refused_before_any_work():
    box = finishes(calculator, "1 + " * 5_000_000)
    assert "longer than 200 characters" in str(box["error"])


def test_a_product_at_the_size_limit_is_computed():
    """The product check adds the operands' bit lengths: 1501 + 1500 bits can still make 3000 bits."""
    assert calculator("2**1500 * 2**1499") == str(2**2999)


@pytest.mark.parametrize("expression", ["2**2999 + 2**2999", "2**3000", "(-2)**3000", "1024**300",
                                        "2**1500 * 2**1500", "9**9**9"])
def test_a_result_over_the_size_limit_gives_the_size_message(expression):
    with pytest.raises(ToolError) as caught:
        calculator(expression)
    assert str(caught.value) == TOO_BIG


def test_a_product_or_power_over_the_size_limit_is_refused_before_it_is_computed(monkeypatch):
    """'Refused before Python tries to build it': a product whose operands' bit lengths add up to more than
    MAX_RESULT_BITS + 1, and a power of which exponent * (bits of the base - 1) reaches MAX_RESULT_BITS, are never
    computed. Every multiplication and power is recorded; none may yield more than MAX_RESULT_BITS bits."""
    built = []

    def recording(operation):
        def run(a, b):
            result = operation(a, b)
            built.append(result.bit_length() if isinstance(result, int) else 0)
            return result
        return run
    monkeypatch.setitem(tools._BINARY, ast.Mult, recording(lambda a, b: a * b))
    monkeypatch.setattr(tools, "operator", types.SimpleNamespace(pow=recording(lambda a, b: a ** b)))
    for expression in ["2**1500 * 2**1500", "2**3000", "(-2)**3000", "1024**300"]:
        with pytest.raises(ToolError, match=re.escape(TOO_BIG)):
            calculator(expression)
    assert built and max(built) <= tools.MAX_RESULT_BITS


@pytest.mark.parametrize("expression, expected", [("1**5000", "1"), ("(-1)**5001", "-1"), ("0**5000", "0"),
                                                  ("2**-5000", "0.0")])
def test_powers_that_stay_small_are_not_taken_for_large_ones(expression, expected):
    if expected == "0.0":   # 2**-5000 is a float too small to hold: refused as such, not as too large
        with pytest.raises(ToolError, match="too small for a floating-point number"):
            calculator(expression)
    else:
        assert calculator(expression) == expected


def test_zero_to_a_large_negative_power_is_a_division_by_zero():
    with pytest.raises(ToolError) as caught:
        calculator("0**-5000")
    assert str(caught.value) == "division by zero is undefined; check the divisor"


@pytest.mark.parametrize("expression, message", [
    (None, 'expression must be text, for example "24*7"'),
    (" \n ", 'the expression is empty; send something like "24*7"'),
    ("1 +", f"not a valid arithmetic expression (SyntaxError); {USE}"),
    ("1/0", "division by zero is undefined; check the divisor"),
    ("(-8)**0.5", "a negative number to a fractional power has no real result"),
    ("'a'", f"strings are not allowed; {USE}"),
    ("x", f"names are not allowed; {USE}"),
    ("(x:=1)", f"NamedExpr expressions are not allowed; {USE}"),
    ("True", f"the value True is not allowed; {USE}"),
    ("1@2", f"the operator @ is not allowed; {USE}"),
    ("not 1", f"the operator not is not allowed; {USE}"),
    ("1e308*10", "the result is out of range for a floating-point number"),
    ("1E-400", "the result is too small for a floating-point number (it would be rounded to 0); rescale the numbers"),
])
def test_calculator_refusals_say_what_was_wrong_and_what_to_send(expression, message):
    with pytest.raises(ToolError) as caught:
        calculator(expression)
    assert str(caught.value) == message


@pytest.mark.parametrize("expression, expected", [("1E-310", "1e-310"), ("0E5", "0.0"), ("0.000e-400", "0.0"),
                                                  ("2.5E2", "250.0")])
def test_an_upper_case_exponent_is_read_like_a_lower_case_one(expression, expected):
    assert calculator(expression) == expected


@pytest.mark.parametrize("expression", ["10**-400", "1e-200*1e-200", "1e-400", "1/10**400", "1e-300/1e300",
                                        "2.0**-1100", "-1e-400"])
def test_a_result_too_small_for_a_float_is_refused_like_one_too_large(expression):
    with pytest.raises(ToolError, match="too small for a floating-point number"):
        calculator(expression)


@pytest.mark.parametrize("expression, expected", [("0.0*5", "0.0"), ("5*0.0", "0.0"), ("0e5", "0.0"),
                                                  ("1e-310", "1e-310"), ("1e-300//1e300", "0.0"),
                                                  ("0**2", "0"), ("0.0**2", "0.0"), ("1e-300-1e-300", "0.0"),
                                                  ("2**-3", "0.125"), ("5e-324", "5e-324")])
def test_zero_that_is_really_zero_is_still_an_answer(expression, expected):
    assert calculator(expression) == expected


def test_overflow_and_underflow_say_which_way_it_went():
    with pytest.raises(ToolError, match="out of range"):
        calculator("1e308*10")
    with pytest.raises(ToolError, match="rounded to 0"):
        calculator("1e-308/1e100")


# ---------------------------------------------------------------------- paths
@pytest.mark.parametrize("path", [None, 5, "", "   "])
def test_a_missing_path_is_refused_with_an_example(workspace, path):
    for tool in (read_file, list_files):
        with pytest.raises(ToolError) as caught:
            tool(path)
        assert str(caught.value) == 'path must be a non-empty relative path such as "notes.txt"'


@pytest.mark.parametrize("path, message", [
    ("a\x00b", "path contains a NUL byte, which no file name can hold"),
    ("notes\ud83d.txt", "path contains a character no file name can hold; use plain text"),
    ("a/" * 2047 + "xyz", "the path is longer than 4096 characters; use a shorter one"),
])
def test_a_path_no_file_system_could_take_is_refused_with_the_reason(workspace, path, message):
    with pytest.raises(ToolError) as caught:
        inside_workspace(path)
    assert str(caught.value) == message


def test_a_path_of_exactly_4096_characters_is_resolved(workspace):
    path = "a/" * 2047 + "xy"
    assert len(path) == 4096 and inside_workspace(path) == workspace.resolve().joinpath(path)


def test_shorten_shows_workspace_paths_relative_and_cuts_after_80_characters(workspace):
    assert shorten(str(workspace / "notes" / "a.txt")) == os.path.join("notes", "a.txt")
    assert shorten("/elsewhere/a.txt") == "/elsewhere/a.txt"    # an absolute path outside is shown as given
    assert shorten("notes/a.txt") == "notes/a.txt"
    assert shorten("a" * 80) == "a" * 80
    assert shorten("a" * 81) == "a" * 80 + "…"


@pytest.mark.parametrize("error, why", [
    (RecursionError(), "the path goes through too many levels of links"),
    (RuntimeError("Symlink loop from '/x'"), "a symbolic link on the way loops back on itself"),
    (OSError(errno.ELOOP, "Too many levels of symbolic links"), "a symbolic link on the way loops back on itself"),
    (OSError(errno.ENAMETOOLONG, "File name too long"), "the name is too long for the file system"),
    (PermissionError(errno.EACCES, "Permission denied"), "permission denied"),
    (MemoryError(), "not enough memory for that much text; ask for less"),
    (OSError(errno.EIO, "Input/output error"), "Input/output error"),   # anything else: the system's words
    (OverflowError("too big"), "OverflowError"),                         # ... or, without them, the kind
])
def test_os_problem_names_the_path_the_model_gave_and_says_why(workspace, error, why):
    assert str(os_problem("notes/a.txt", error)) == f"cannot use 'notes/a.txt': {why}"
    assert str(os_problem(str(workspace / "a.txt"), error)) == f"cannot use 'a.txt': {why}"


def file_tools():
    return {"read_file": read_file, "list_files": list_files, "write_file": ApprovalGate(approve).write_file}


def assert_clean(obs, workspace, *phrases):
    assert obs.is_error and isinstance(obs.error, ToolError), obs.content
    assert str(workspace) not in obs.content and os.path.expanduser("~") + os.sep not in obs.content
    for phrase in phrases:
        assert phrase in obs.content, obs.content


@pytest.mark.parametrize("tool, args", [("read_file", {"path": "loop"}), ("list_files", {"directory": "loop"}),
                                        ("write_file", {"path": "loop/x.txt", "content": "x"})])
def test_a_symlink_loop_is_a_tool_error_in_workspace_terms(workspace, tool, args):
    os.symlink("loop2", workspace / "loop")
    os.symlink("loop", workspace / "loop2")
    assert_clean(dispatch(file_tools(), tool, args), workspace, "loops back on itself")


def test_a_folder_holding_a_symlink_loop_is_listed_with_the_loop_as_plain_names(workspace):
    # Listing *into* the loop is the error above; the folder beside it lists as it is (DirEntry.is_dir raised ELOOP)
    os.symlink("b", workspace / "a")
    os.symlink("a", workspace / "b")
    (workspace / "notes.txt").write_text("n", encoding="utf-8")
    (workspace / "docs").mkdir()
    os.symlink("docs", workspace / "shortcut")   # a link to a folder is still shown as one
    assert list_files(".") == "a\nb\ndocs/\nnotes.txt\nshortcut/"


@pytest.mark.parametrize("tool, key", [("read_file", "path"), ("list_files", "directory"), ("write_file", "path")])
def test_a_name_too_long_is_a_tool_error(workspace, tool, key):
    args = {key: "x" * 1000, **({"content": "x"} if tool == "write_file" else {})}   # a name over 255 bytes
    obs = dispatch(file_tools(), tool, args)
    assert_clean(obs, workspace, "too long for the file system")
    assert len(obs.content) < 300, "the 1,000-character name is shortened in the message"


@pytest.mark.parametrize("tool, key", [("read_file", "path"), ("list_files", "directory"), ("write_file", "path")])
def test_a_path_too_long_is_refused_before_any_work(workspace, tool, key):
    args = {key: "a/" * 300_000 + "x", **({"content": "x"} if tool == "write_file" else {})}
    box = finishes(dispatch, file_tools(), tool, args)   # resolving it would take seconds per megabyte
    assert_clean(box["value"], workspace, f"longer than {ws.MAX_PATH_CHARS} characters")


@pytest.mark.parametrize("tool, key", [("read_file", "path"), ("list_files", "directory"), ("write_file", "path")])
def test_half_an_emoji_in_a_path_is_a_tool_error(workspace, tool, key):
    args = {key: "notes\ud83d.txt", **({"content": "x"} if tool == "write_file" else {})}
    assert_clean(dispatch(file_tools(), tool, args), workspace, "no file name can hold")


def test_permission_denied_names_the_path_the_model_gave(workspace, monkeypatch):
    (workspace / "locked.txt").write_text("x", encoding="utf-8")
    real_open = os.open

    def locked(path, flags, *rest):
        if str(path).endswith("locked.txt"):
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_open(path, flags, *rest)
    monkeypatch.setattr(ws.os, "open", locked)   # running as root, chmod 000 would not stop the read
    assert_clean(dispatch(file_tools(), "read_file", {"path": "locked.txt"}), workspace,
                 "'locked.txt'", "permission denied")


def test_an_absolute_path_inside_the_workspace_is_shown_relative(workspace, monkeypatch):
    long_name = workspace / ("d" * 90) / "missing.txt"
    obs = dispatch(file_tools(), "read_file", {"path": str(long_name)})
    assert obs.is_error and str(workspace) not in obs.content and "'ddd" in obs.content


@pytest.mark.parametrize("failure", [MemoryError(), ValueError("odd"), OverflowError("big")])
def test_any_failure_inside_a_file_tool_is_a_tool_error(workspace, monkeypatch, failure):
    (workspace / "a.txt").write_text("text", encoding="utf-8")

    def broken(*args, **kwargs):
        raise failure
    gate = ApprovalGate(approve)
    for module, name, call, phrase in [(ws.os, "urandom", lambda: gate.write_file("a.txt", "new"),
                                        "nothing was changed"),
                                       (ws.os, "scandir", lambda: list_files("."), "cannot use '.'"),
                                       (ws.os, "fstat", lambda: read_file("a.txt"), "cannot use 'a.txt'")]:
        with monkeypatch.context() as patch:   # undone at once: pytest itself needs os.scandir
            patch.setattr(module, name, broken)
            with pytest.raises(ToolError, match=phrase):
                call()
    assert (workspace / "a.txt").read_text(encoding="utf-8") == "text" and everything_in(workspace) == ["a.txt"]


def test_the_limits_the_readme_states_are_the_limits_in_the_code():
    readme = (Path(__file__).parent.parent / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("What the library holds to on hostile input"):readme.index("## Performance")]
    assert f"up to {ws.MAX_READ_CHARS:,}" in section and f"more than {ws.MAX_COUNTED:,} more" in section
    assert f"{ws.MAX_SCANNED:,} entries at most" in section and f"at most {ws.MAX_PATH_CHARS:,} characters" in section
    assert all(f'"{word}"' in section for word in YES)


# ---------------------------------------------------------------------- read_file
def test_read_file_takes_a_max_chars_of_one(workspace):
    (workspace / "a.txt").write_text("abc", encoding="utf-8")
    assert read_file("a.txt", 1) == "a\n[... cut: 2 more characters not shown; pass a larger max_chars to see more]"
    with pytest.raises(ToolError) as caught:
        read_file("a.txt", 0)
    assert str(caught.value) == "max_chars must be a positive whole number"


def test_read_file_missing_file_says_how_to_find_what_exists(workspace):
    with pytest.raises(ToolError) as caught:
        read_file("missing.txt")
    assert str(caught.value) == "there is no file 'missing.txt' in the workspace; call list_files to see what exists"


def test_read_file_shows_bytes_that_are_not_utf8_as_replacement_characters(workspace):
    (workspace / "latin1.txt").write_bytes(b"caf\xe9 \xff ok")
    assert read_file("latin1.txt") == "caf\ufffd \ufffd ok"


def test_read_file_reads_utf8_whatever_the_systems_default_encoding(workspace, monkeypatch):
    """On a machine whose default encoding is not UTF-8 (Windows: cp1252), Korean text still reads back intact."""
    def open_with_a_latin1_default(file, mode="r", *, encoding=None, **kwargs):
        return builtins.open(file, mode, encoding=encoding or "latin-1", **kwargs)
    monkeypatch.setattr(ws, "open", open_with_a_latin1_default, raising=False)
    (workspace / "보고서.txt").write_text("일비 25,000원", encoding="utf-8")
    assert read_file("보고서.txt") == "일비 25,000원"


class _ReadFails:
    """An open file whose read fails, as on a disk error or when the text does not fit in memory."""
    def __init__(self, file, error):
        self.file, self.error = file, error

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.file.close()

    def read(self, size=-1):
        raise self.error


@pytest.mark.parametrize("error, why", [(MemoryError(), "not enough memory for that much text; ask for less"),
                                        (OSError(errno.EIO, "Input/output error"), "Input/output error")])
def test_a_read_that_fails_midway_is_a_tool_error_naming_the_path(workspace, monkeypatch, error, why):
    monkeypatch.setattr(ws, "open", lambda fd, *a, **kw: _ReadFails(builtins.open(fd, *a, **kw), error),
                        raising=False)
    (workspace / "a.txt").write_text("text", encoding="utf-8")
    with pytest.raises(ToolError) as caught:
        read_file("a.txt")
    assert str(caught.value) == f"cannot use 'a.txt': {why}"


def test_a_file_that_cannot_be_examined_is_a_tool_error_saying_why(workspace, monkeypatch):
    (workspace / "a.txt").write_text("text", encoding="utf-8")

    def denied(fd):
        raise PermissionError(errno.EACCES, "Permission denied")
    with monkeypatch.context() as patch:   # undone at once: pytest itself needs os.fstat
        patch.setattr(ws.os, "fstat", denied)
        with pytest.raises(ToolError) as caught:
            read_file("a.txt")
    assert str(caught.value) == "cannot use 'a.txt': permission denied"


@pytest.mark.parametrize("max_chars", [10**18, 2**63, 10**100])
def test_a_huge_max_chars_reads_the_file(workspace, max_chars):
    (workspace / "a.txt").write_text("short", encoding="utf-8")
    assert read_file("a.txt", max_chars) == "short"


def test_reading_the_start_of_a_huge_file_does_not_read_all_of_it(workspace):
    with open(workspace / "huge.log", "wb") as f:   # sparse: 3 GiB that take no disk space
        f.truncate(3 * 2**30)
    box = finishes(read_file, "huge.log", 100)
    text = box["value"]
    assert text.startswith("\0" * 100)
    assert f"more than {ws.MAX_COUNTED:,} more characters not shown" in text


def test_a_cut_below_the_counting_limit_gives_the_exact_count(workspace):
    (workspace / "a.txt").write_text("가" * 1000, encoding="utf-8")
    assert read_file("a.txt", 10).endswith("[... cut: 990 more characters not shown; "
                                           "pass a larger max_chars to see more]")


def test_a_max_chars_past_the_limit_says_what_the_limit_is(workspace, monkeypatch):
    monkeypatch.setattr(ws, "MAX_READ_CHARS", 10)
    (workspace / "a.txt").write_text("x" * 25, encoding="utf-8")
    assert read_file("a.txt", 1000) == "x" * 10 + ("\n[... cut: 15 more characters not shown; "
                                                 "read_file returns at most 10 characters]")


# ---------------------------------------------------------------------- list_files
def test_a_file_name_with_a_newline_cannot_fake_extra_entries(workspace):
    (workspace / "real.txt").write_text("x", encoding="utf-8")
    (workspace / "a.txt\nsecret_plans.txt").write_text("x", encoding="utf-8")
    (workspace / "tab\there").mkdir()
    lines = list_files().splitlines()
    assert lines == ["'a.txt\\nsecret_plans.txt'", "'tab\\there'/", "real.txt"]


def test_a_file_name_that_is_not_utf8_is_listed_escaped(workspace):
    try:
        open(os.path.join(os.fsencode(workspace), b"caf\xe9.txt"), "w").close()
    except OSError:
        pytest.skip("this file system only takes UTF-8 names")
    assert list_files() == "'caf\\udce9.txt'"
    json.dumps(list_files(), ensure_ascii=False).encode("utf-8")   # the listing can be sent and saved


@pytest.mark.parametrize("count, note", [(200, ""), (201, "\n[... 1 more not shown]")])
def test_list_files_shows_two_hundred_entries(workspace, count, note):
    for i in range(count):
        (workspace / f"f{i:03d}.txt").touch()
    listing = list_files()
    assert listing.endswith(note) and len(listing.splitlines()) == 200 + bool(note)


def test_list_files_looks_at_a_bounded_number_of_entries(workspace, monkeypatch):
    monkeypatch.setattr(ws, "MAX_SCANNED", 30)
    for i in range(31):
        (workspace / f"f{i:02d}.txt").touch()
    listing = list_files()
    assert listing.endswith("[... the folder has more than 30 entries; only some are listed]")
    assert len(listing.splitlines()) == 31
    for i in range(30, 31):
        (workspace / f"f{i:02d}.txt").unlink()
    assert "more than" not in list_files()


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are a POSIX feature")
def test_list_files_on_a_named_pipe_answers_at_once(workspace):
    """Opening a pipe for reading waits for a writer, unless it is opened as a folder (and so refused)."""
    os.mkfifo(workspace / "pipe")
    box = {}

    def attempt():
        try:
            box["value"] = list_files("pipe")
        except ToolError as e:
            box["error"] = str(e)
    worker = threading.Thread(target=attempt, daemon=True)
    worker.start()
    worker.join(20)   # a hang guard only
    hung = worker.is_alive()
    if hung:   # let the waiting open go, so no thread is left behind
        os.close(os.open(workspace / "pipe", os.O_WRONLY | os.O_NONBLOCK))
        worker.join(20)
    assert not hung, "list_files waited for a writer"
    assert box == {"error": "'pipe' is a file, not a folder; call read_file to read it"}


@pytest.mark.skipif(not os.path.exists("/proc/self/fd") or os.scandir not in os.supports_fd,
                    reason="the folder is listed through its open descriptor")
def test_list_files_lists_the_folder_it_opened_even_if_the_name_is_swapped_after(tmp_path, workspace, monkeypatch):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("outside secret", encoding="utf-8")
    (workspace / "real").mkdir()
    (workspace / "real" / "inside.txt").write_text("inside", encoding="utf-8")
    real_open = os.open

    def open_then_swap(path, *rest, **kw):   # the swap lands right after the folder is opened and checked
        fd = real_open(path, *rest, **kw)
        os.rename(workspace / "real", workspace / "real_old")
        os.symlink(outside, workspace / "real")
        return fd
    with monkeypatch.context() as patch:
        patch.setattr(ws.os, "open", open_then_swap)
        listing = list_files("real")
    assert listing == "inside.txt"


# ---------------------------------------------------------------------- named pipes and folders swapped for links
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are a POSIX feature")
def test_a_named_pipe_is_refused_before_anyone_is_asked(workspace):
    os.mkfifo(workspace / "pipe")
    asked = []
    gate = ApprovalGate(lambda request: asked.append(request) or True)
    box = finishes(gate.write_file, "pipe", "data")
    assert isinstance(box.get("error"), ToolError) and "not a regular file" in str(box["error"])
    assert asked == []
    box = finishes(read_file, "pipe")   # opening a pipe for reading must not wait for a writer either
    assert isinstance(box.get("error"), ToolError) and "not a regular file" in str(box["error"])
    assert stat.S_ISFIFO(os.stat(workspace / "pipe").st_mode)


def swap_for_link(folder, outside):
    """Replace `folder` by a symlink to `outside`, as an attacker racing the tool would."""
    os.rename(folder, str(folder) + "_old")
    os.symlink(outside, folder)


@pytest.mark.skipif(not os.path.exists("/proc/self/fd"), reason="the opened file is named through /proc")
@pytest.mark.parametrize("tool, args", [("read_file", {"path": "real/secret.txt"}),
                                        ("list_files", {"directory": "real"})])
def test_a_folder_swapped_for_a_link_between_check_and_open_is_caught(tmp_path, workspace, monkeypatch, tool, args):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("outside secret", encoding="utf-8")
    (workspace / "real").mkdir()
    (workspace / "real" / "secret.txt").write_text("inside", encoding="utf-8")
    real_open, swapped = os.open, []

    def racing_open(path, *rest, **kw):   # the swap lands exactly in the window between check and open
        if not swapped:
            swapped.append(swap_for_link(workspace / "real", outside))
        return real_open(path, *rest, **kw)
    monkeypatch.setattr(ws.os, "open", racing_open)
    obs = dispatch(file_tools(), tool, args)
    assert swapped and obs.is_error and "outside the workspace" in obs.content
    assert "outside secret" not in obs.content and "secret.txt" not in obs.content.split("'")[-1]


def test_a_folder_swapped_for_a_link_while_the_person_decides_is_not_written_through(tmp_path, workspace):
    outside = tmp_path / "outside"
    outside.mkdir()
    (workspace / "notes").mkdir()

    def sneaky(request):   # anything that acts while the approval buttons are up
        swap_for_link(workspace / "notes", outside)
        return True
    obs = dispatch({"write_file": ApprovalGate(sneaky).write_file}, "write_file",
                   {"path": "notes/p.txt", "content": "PWNED"})
    assert obs.is_error and "outside the workspace" in obs.content
    assert list(outside.iterdir()) == []


# ---------------------------------------------------------------------- lookup and search_docs
def test_lookup_and_search_docs_refusals_give_an_example():
    with pytest.raises(ToolError) as caught:
        lookup(" ")
    assert str(caught.value) == 'topic must be a non-empty text such as "단가" or "unit price"'
    with pytest.raises(ToolError) as caught:
        search_docs(" ")
    assert str(caught.value) == "query must be a non-empty word or phrase"


def test_search_docs_puts_each_document_found_on_its_own_line():
    lines = search_docs("25,000").split("\n")
    assert [line.split("]")[0] for line in lines] == ["[출장비 규정", "[Travel policy (English summary)"]


# ---------------------------------------------------------------------- write_atomically
def _mode(path):
    return stat.S_IMODE(os.stat(path, follow_symlinks=False).st_mode)


def _usual_mode():
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


@pytest.fixture
def two_folders(tmp_path, monkeypatch):
    """The current folder and another one: a write must go to the target's folder, whatever the current one."""
    here, there = tmp_path / "here", tmp_path / "there"
    here.mkdir()
    there.mkdir()
    (here / "run.sh").write_text("same name, current folder", encoding="utf-8")
    os.chmod(here / "run.sh", 0o640)
    (there / "run.sh").write_text("old", encoding="utf-8")
    os.chmod(there / "run.sh", 0o750)
    monkeypatch.chdir(here)
    return here, there


def _replace_open(monkeypatch, replacement):
    """Put `replacement` in place of os.open, taking dir_fd wherever os.open does."""
    if os.open in os.supports_dir_fd:
        monkeypatch.setattr(os, "supports_dir_fd", os.supports_dir_fd | {replacement})
    monkeypatch.setattr(ws.os, "open", replacement)


def _write_and_check(here, there, monkeypatch, opens):
    opened, names, real_open = [], [], os.open

    def recording_open(path, *args, **kwargs):
        names.append(path)
        opened.append(real_open(path, *args, **kwargs))
        return opened[-1]
    with monkeypatch.context() as patch:
        _replace_open(patch, recording_open)
        write_atomically(there / "run.sh", b"new")
    assert (there / "run.sh").read_bytes() == b"new" and _mode(there / "run.sh") == 0o750
    assert os.listdir(there) == ["run.sh"], "a temporary file was left behind"
    assert os.listdir(here) == ["run.sh"] and (here / "run.sh").read_text(encoding="utf-8").startswith("same")
    assert _mode(here / "run.sh") == 0o640
    assert len(opened) == opens
    for fd in opened:   # whatever was opened (the folder, the temporary file) is closed again
        with pytest.raises(OSError):
            os.fstat(fd)
    return names


def test_write_atomically_replaces_a_file_in_another_folder_and_keeps_its_permissions(two_folders, monkeypatch):
    _write_and_check(*two_folders, monkeypatch, opens=2 if os.open in os.supports_dir_fd else 1)


def test_write_atomically_works_by_path_name_where_folders_cannot_be_opened(two_folders, monkeypatch):
    """Windows has no dir_fd: the same steps by path name give the same result."""
    monkeypatch.setattr(os, "supports_dir_fd", set())
    monkeypatch.setattr(os, "supports_fd", set())
    here, there = two_folders
    [temporary] = _write_and_check(here, there, monkeypatch, opens=1)   # the temporary file only, by its path
    assert Path(temporary).parent == there, "the temporary file is made beside the target"


def test_write_atomically_creates_missing_folders_and_gives_a_new_file_the_usual_permissions(tmp_path):
    write_atomically(tmp_path / "a" / "b" / "new.txt", b"x")
    assert (tmp_path / "a" / "b" / "new.txt").read_bytes() == b"x"
    assert _mode(tmp_path / "a" / "b" / "new.txt") == _usual_mode()


def test_write_atomically_replaces_a_symlink_without_taking_its_targets_permissions(tmp_path):
    (tmp_path / "real.sh").write_text("real", encoding="utf-8")
    os.chmod(tmp_path / "real.sh", 0o700)
    os.symlink(tmp_path / "real.sh", tmp_path / "link.sh")
    write_atomically(tmp_path / "link.sh", b"new")
    assert not os.path.islink(tmp_path / "link.sh") and (tmp_path / "link.sh").read_bytes() == b"new"
    assert _mode(tmp_path / "link.sh") == _usual_mode()
    assert (tmp_path / "real.sh").read_text(encoding="utf-8") == "real" and _mode(tmp_path / "real.sh") == 0o700


def test_write_atomically_inside_a_folder_other_than_the_current_one(tmp_path, monkeypatch):
    box = tmp_path.resolve() / "box"
    (tmp_path / "here").mkdir()
    monkeypatch.chdir(tmp_path / "here")
    write_atomically(box / "sub" / "x.txt", b"x", inside=box)
    assert (box / "sub" / "x.txt").read_bytes() == b"x"


@pytest.mark.skipif(not os.path.exists("/proc/self/fd"), reason="the opened folder is named through /proc")
def test_write_atomically_refuses_a_folder_that_leads_outside_naming_the_target(tmp_path, workspace):
    (tmp_path / "outside").mkdir()
    os.symlink(tmp_path / "outside", workspace / "notes")
    with pytest.raises(ToolError) as caught:
        write_atomically(workspace / "notes" / "p.txt", b"x", inside=workspace.resolve())
    assert str(caught.value) == f"'{os.path.join('notes', 'p.txt')}' is outside the workspace; use a path inside " \
                                "the current folder"
    assert list((tmp_path / "outside").iterdir()) == []


@pytest.mark.skipif(os.open not in os.supports_dir_fd, reason="only with dir_fd is every step relative to the folder")
def test_write_atomically_stays_in_the_folder_it_opened_if_the_name_is_swapped_midway(tmp_path, workspace,
                                                                                        monkeypatch):
    (tmp_path / "outside").mkdir()
    (workspace / "notes").mkdir()
    real_open, calls = os.open, []

    def open_then_swap(path, *rest, **kw):
        calls.append(path)
        fd = real_open(path, *rest, **kw)
        if len(calls) == 1:   # the folder is open: now its name leads outside
            os.rename(workspace / "notes", workspace / "notes_old")
            os.symlink(tmp_path / "outside", workspace / "notes")
        return fd
    with monkeypatch.context() as patch:
        _replace_open(patch, open_then_swap)
        write_atomically(workspace / "notes" / "p.txt", b"x", inside=workspace.resolve())
    assert list((tmp_path / "outside").iterdir()) == []
    assert (workspace / "notes_old" / "p.txt").read_bytes() == b"x"


def test_a_failed_rename_leaves_the_old_file_and_no_temporary_one(tmp_path, monkeypatch):
    """The temporary file is a hidden '.<first 50 characters of the name>.<12 hex digits>.tmp' beside the target,
    and it is gone after a failure."""
    name = "n" * 60 + ".txt"
    (tmp_path / name).write_text("old", encoding="utf-8")
    tried = []

    def disk_full(src, dst, **where):
        tried.append((src, dst))
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(ws.os, "replace", disk_full)
    with pytest.raises(OSError) as caught:
        write_atomically(tmp_path / name, b"new")
    assert caught.value.errno == errno.ENOSPC
    [(src, dst)] = tried
    assert re.fullmatch(r"\.n{50}\.[\da-f]{12}\.tmp", os.path.basename(src)) and os.path.basename(dst) == name
    assert os.listdir(tmp_path) == [name] and (tmp_path / name).read_text(encoding="utf-8") == "old"


def test_a_failure_after_the_temporary_file_is_gone_is_still_the_error_raised(tmp_path, monkeypatch):
    real_unlink = os.unlink

    def vanish_then_fail(src, dst, src_dir_fd=None, dst_dir_fd=None):
        real_unlink(src, dir_fd=src_dir_fd)
        raise OSError(errno.EIO, "Input/output error")
    monkeypatch.setattr(ws.os, "replace", vanish_then_fail)
    with pytest.raises(OSError) as caught:
        write_atomically(tmp_path / "a.txt", b"new")
    assert caught.value.errno == errno.EIO and os.listdir(tmp_path) == []
