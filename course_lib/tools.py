"""Stage 01 — tools are plain functions.

Adds: a safe calculator (an AST whitelist, never ``eval``), ``read_file`` and ``list_files`` locked to the
workspace (the current working directory), ``lookup`` over a small bilingual knowledge base, and
``search_docs`` over a few documents, one of which carries an injected instruction (stage 07 shows the
agent treating it as data). Every tool takes and returns text and raises ``ToolError`` with a message
written for the model.

Leaves out: how a tool is found by name (stage 02), described to the model (03) or called safely with
arguments the model made up (05).
"""
from __future__ import annotations

import ast
import contextlib
import errno
import itertools
import json
import math
import operator
import os
import stat
from functools import cache
from pathlib import Path


class ToolError(Exception):
    """A tool refused its input; the message tells the model what was wrong and what to do."""


# ---------------------------------------------------------------- calculator
MAX_EXPRESSION_CHARS = 200   # long enough for real arithmetic, short enough to parse instantly
MAX_DEPTH = 100              # nesting; a flat 1+1+...+1 that fits in 200 characters stays under it
MAX_RESULT_BITS = 3_000      # about 900 digits: beyond that it is not arithmetic a model needs

_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
           ast.Pow: operator.pow}
_UNARY = {ast.UAdd: operator.pos, ast.USub: operator.neg}
_SYMBOLS = {ast.LShift: "<<", ast.RShift: ">>", ast.BitOr: "|", ast.BitAnd: "&", ast.BitXor: "^",
            ast.Invert: "~", ast.Not: "not", ast.MatMult: "@"}
_REFUSED = {ast.Name: "names", ast.Call: "function calls", ast.Attribute: "attributes",
            ast.Lambda: "lambdas", ast.Compare: "comparisons", ast.BoolOp: "and/or",
            ast.Subscript: "indexing", ast.JoinedStr: "f-strings", ast.IfExp: "if/else",
            ast.Tuple: "tuples", ast.List: "lists", ast.Dict: "dicts", ast.Set: "sets"}


def _refuse_node(node: ast.AST) -> ToolError:
    if isinstance(node, ast.Constant):
        what = "strings are" if isinstance(node.value, (str, bytes)) else f"the value {node.value!r} is"
    elif isinstance(node, (ast.BinOp, ast.UnaryOp)):
        what = f"the operator {_SYMBOLS[type(node.op)]} is"   # every operator _evaluate does not take is here
    else:
        what = _REFUSED.get(type(node), f"{type(node).__name__} expressions") + " are"
    return ToolError(f"{what} not allowed; use numbers, + - * / // % ** and parentheses")


_TOO_BIG = "the result is too large (over about 900 digits); split the calculation"
_OUT_OF_RANGE = "the result is out of range for a floating-point number"
# Underflow gets the same treatment as overflow: a nonzero result too small for a float would silently become
# 0.0 (10**-400, 1e-200*1e-200, 1e-400), a wrong answer given with confidence, so it is refused instead.
_TOO_SMALL = "the result is too small for a floating-point number (it would be rounded to 0); rescale the numbers"


def _check_size(value):
    if isinstance(value, int) and value.bit_length() > MAX_RESULT_BITS:
        raise ToolError(_TOO_BIG)
    if isinstance(value, float) and not math.isfinite(value):
        raise ToolError(_OUT_OF_RANGE)
    return value


def _power(base, exponent):
    # Estimate the size first: 9**9**9 must be refused before Python tries to build it.
    # The result has at least exponent * (bits of the base - 1) + 1 bits. A base of 0 is left out: 0 to a
    # negative power is a division by zero, not a large number.
    if isinstance(base, int) and isinstance(exponent, int) and base != 0:
        if exponent * (abs(base).bit_length() - 1) >= MAX_RESULT_BITS:
            raise ToolError(_TOO_BIG)
    result = operator.pow(base, exponent)
    if isinstance(result, complex):
        raise ToolError("a negative number to a fractional power has no real result")
    return result


def _evaluate(node: ast.AST, depth: int = 0):
    if depth > MAX_DEPTH:
        raise ToolError(f"the expression is nested too deeply (more than {MAX_DEPTH} levels)")
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):   # bool and complex are out
        return _check_size(node.value)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_evaluate(node.operand, depth + 1))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _evaluate(node.left, depth + 1), _evaluate(node.right, depth + 1)
        if isinstance(node.op, ast.Mult) and isinstance(left, int) and isinstance(right, int) \
                and left.bit_length() + right.bit_length() > MAX_RESULT_BITS + 1:
            raise ToolError(_TOO_BIG)   # refused before multiplying, not after
        result = _power(left, right) if isinstance(node.op, ast.Pow) else _BINARY[type(node.op)](left, right)
        if type(result) is float and result == 0 and left != 0 and right != 0 \
                and isinstance(node.op, (ast.Mult, ast.Div, ast.Pow)):
            raise ToolError(_TOO_SMALL)
        return _check_size(result)
    raise _refuse_node(node)


def _literal_underflows(expression: str, tree: ast.AST) -> bool:
    """A literal such as 1e-400 is read as 0.0: is the part before its exponent nonzero?"""
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and type(node.value) is float and node.value == 0:
            mantissa = ast.get_source_segment(expression, node).lower().split("e")[0]
            if float(mantissa) != 0:   # at most 200 digits without an exponent: never rounded to 0 itself
                return True
    return False


def calculator(expression: str) -> str:
    """Evaluate an arithmetic expression such as (20*4)+15 and return the result.

    Args:
        expression: numbers with + - * / // % ** and parentheses, for example "24*7".
    """
    if not isinstance(expression, str):
        raise ToolError("expression must be text, for example \"24*7\"")
    if len(expression) > 50 * MAX_EXPRESSION_CHARS:   # refused before any work: splitting megabytes costs memory
        raise ToolError(f"the expression is longer than {MAX_EXPRESSION_CHARS} characters; split it up")
    expression = " ".join(expression.split())   # any whitespace, newlines included, counts as one space
    if not expression:
        raise ToolError("the expression is empty; send something like \"24*7\"")
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise ToolError(f"the expression is longer than {MAX_EXPRESSION_CHARS} characters; split it up")
    try:
        tree = ast.parse(expression, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
        raise ToolError(f"not a valid arithmetic expression ({type(e).__name__}); "
                        "use numbers, + - * / // % ** and parentheses") from None
    # Only an exponent makes a literal that small: 200 characters of "0.000…1" still reach 1e-199.
    if _literal_underflows(expression, tree):
        raise ToolError(_TOO_SMALL)
    try:
        value = _evaluate(tree.body)
    except ZeroDivisionError:
        raise ToolError("division by zero is undefined; check the divisor") from None
    except OverflowError:
        raise ToolError(_OUT_OF_RANGE) from None
    return str(value)   # for a float, str is repr: 0.1+0.2 shows as 0.30000000000000004


# ---------------------------------------------------------------- workspace files
MAX_READ_CHARS = 1_000_000   # the most read_file returns in one call, whatever max_chars asks for
MAX_COUNTED = 1_000_000      # past the cut, characters are counted up to this many; beyond it, "more than"
MAX_LISTED, MAX_SCANNED = 200, 10_000   # entries list_files shows, and looks at
MAX_PATH_CHARS = 4096        # the usual system limit on a whole path (PATH_MAX)
# How files and folders are opened. O_NONBLOCK: opening a named pipe must not wait for a writer (read_file refuses
# it after the open); O_DIRECTORY: opening anything but a folder fails at once. Systems without them use 0.
_OPEN_FILE = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)
_OPEN_FOLDER = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)


def shorten(path: str) -> str:
    """A path as error messages show it: relative to the workspace, at most 80 characters."""
    try:
        if os.path.isabs(path) and Path(path).is_relative_to(Path.cwd()):
            path = os.path.relpath(path)
    except (OSError, ValueError):
        pass
    return path if len(path) <= 80 else path[:80] + "…"


def os_problem(path: str, e: BaseException) -> ToolError:
    """An operating-system failure, told in terms of the path the model gave: never the absolute path."""
    number = getattr(e, "errno", None)
    if isinstance(e, RecursionError):
        why = "the path goes through too many levels of links"
    elif isinstance(e, RuntimeError) or number == errno.ELOOP:   # Python 3.11 reports a loop as RuntimeError
        why = "a symbolic link on the way loops back on itself"
    elif number == errno.ENAMETOOLONG:
        why = "the name is too long for the file system"
    elif isinstance(e, PermissionError):
        why = "permission denied"
    elif isinstance(e, MemoryError):
        why = "not enough memory for that much text; ask for less"
    else:
        why = getattr(e, "strerror", None) or type(e).__name__
    return ToolError(f"cannot use '{shorten(path)}': {why}")


# What the file system or Python may raise on a hostile path or file; each becomes a ToolError (os_problem).
OS_FAILURES = (OSError, RuntimeError, ValueError, OverflowError, MemoryError)


def _outside(path: str) -> ToolError:
    return ToolError(f"'{shorten(path)}' is outside the workspace; use a path inside the current folder")


def inside_workspace(path: str) -> Path:
    """Resolve `path` under the current directory, refusing anything that ends up outside it."""
    if not isinstance(path, str) or not path.strip():
        raise ToolError("path must be a non-empty relative path such as \"notes.txt\"")
    if len(path) > MAX_PATH_CHARS:   # resolving a megabyte of "a/a/a/..." would take seconds
        raise ToolError(f"the path is longer than {MAX_PATH_CHARS} characters; use a shorter one")
    if "\0" in path:
        raise ToolError("path contains a NUL byte, which no file name can hold")
    try:
        os.fsencode(path)
    except UnicodeEncodeError:   # half of an emoji (a lone surrogate) cannot be part of a file name
        raise ToolError("path contains a character no file name can hold; use plain text") from None
    try:
        root = Path.cwd().resolve()
        target = (root / path).resolve()   # follows symlinks, so a link pointing outside is caught here
    except OS_FAILURES as e:
        raise os_problem(path, e) from None
    if not target.is_relative_to(root):   # a path check, not a prefix check: /work2 is not inside /work
        raise _outside(path)
    return target


def _still_inside(fd: int, path: str, root: Path | None = None) -> None:
    """The file or folder really opened is inside the workspace. A folder swapped for a symlink between the
    check above and the open would otherwise lead outside; where the system names open files (Linux's
    /proc/self/fd), the name of what was opened is checked again."""
    try:
        opened = Path(os.readlink(f"/proc/self/fd/{fd}"))
    except OSError:   # no /proc here: the check in inside_workspace is all there is
        return
    if not opened.is_relative_to(root or Path.cwd().resolve()):
        raise _outside(path)


def read_file(path: str, max_chars: int = 20000) -> str:
    """Read a text file in the workspace (the current folder); to see which files there are, use list_files.

    Args:
        path: a path inside the workspace, for example "notes.txt".
        max_chars: the most characters to return; longer files are cut with a note.
    """
    if type(max_chars) is not int or max_chars < 1:
        raise ToolError("max_chars must be a positive whole number")
    target, wanted = inside_workspace(path), min(max_chars, MAX_READ_CHARS)
    try:   # a named pipe is opened without waiting for a writer, and refused below
        fd = os.open(target, _OPEN_FILE)
    except FileNotFoundError:
        raise ToolError(f"there is no file '{shorten(path)}' in the workspace; call list_files to see what "
                        "exists") from None
    except OS_FAILURES as e:
        raise os_problem(path, e) from None
    try:
        kind = os.fstat(fd).st_mode
    except OS_FAILURES as e:
        os.close(fd)
        raise os_problem(path, e) from None
    if not stat.S_ISREG(kind):
        os.close(fd)
        if stat.S_ISDIR(kind):
            raise ToolError(f"'{shorten(path)}' is a folder, not a file; call list_files to see inside it")
        raise ToolError(f"'{shorten(path)}' is not a regular file (a pipe or a device); it cannot be read")
    with open(fd, encoding="utf-8", errors="replace") as f:   # bytes that are not UTF-8 become �
        _still_inside(fd, path)
        try:
            text, rest = f.read(wanted), f.read(MAX_COUNTED)   # bounded work, however large the file
            more = f.read(1) != ""
        except OS_FAILURES as e:
            raise os_problem(path, e) from None
    if rest:
        left = f"more than {len(rest):,}" if more else f"{len(rest):,}"
        how = "pass a larger max_chars to see more" if wanted < MAX_READ_CHARS else \
            f"read_file returns at most {MAX_READ_CHARS:,} characters"
        text += f"\n[... cut: {left} more characters not shown; {how}]"
    return text


def _entry(name: str) -> str:   # a name with a newline (or other control) must not fake extra lines
    return name if name.isprintable() else repr(name)


def list_files(directory: str = ".") -> str:
    """List the files and folders in a workspace folder (folders end with /); to read a file, use read_file.

    Args:
        directory: a folder inside the workspace; "." is the workspace itself.
    """
    target = inside_workspace(directory)
    try:
        fd = os.open(target, _OPEN_FOLDER)
        try:
            _still_inside(fd, directory)
            with os.scandir(fd if os.scandir in os.supports_fd else target) as entries:
                names = sorted(_entry(e.name) + ("/" if e.is_dir() else "")
                               for e in itertools.islice(entries, MAX_SCANNED) if not e.name.startswith("."))
                unseen = next(entries, None) is not None
        finally:
            os.close(fd)
    except NotADirectoryError:
        raise ToolError(f"'{shorten(directory)}' is a file, not a folder; call read_file to read it") from None
    except FileNotFoundError:
        raise ToolError(f"there is no folder '{shorten(directory)}' in the workspace") from None
    except OS_FAILURES as e:
        raise os_problem(directory, e) from None
    if not names and not unseen:
        return f"'{shorten(directory)}' is empty"
    more = f"\n[... {len(names) - MAX_LISTED} more not shown]" if len(names) > MAX_LISTED else ""
    if unseen:
        more = f"\n[... the folder has more than {MAX_SCANNED:,} entries; only some are listed]"
    return "\n".join(names[:MAX_LISTED]) + more


def write_atomically(target: Path, data: bytes, *, inside: Path | None = None) -> None:
    """Write ``data`` to a temporary file beside ``target``, then rename it over ``target``.

    Until the rename the old file is untouched, so a failure at any point (a full disk, an error) loses
    nothing and removes the temporary file (only a killed process can leave a hidden ``.name.….tmp``); and a
    rename replaces a hard link or a symlink instead of writing through it. A file that existed keeps its
    permissions. With ``inside``, the folder written to must still be inside that folder when it is opened.
    Everything happens relative to the opened folder, so swapping it for a symlink midway changes nothing."""
    temporary = f".{target.name[:50]}.{os.urandom(6).hex()}.tmp"
    target.parent.mkdir(parents=True, exist_ok=True)
    if os.open in os.supports_dir_fd:   # POSIX: every step relative to the opened folder
        folder = os.open(target.parent, _OPEN_FOLDER)
        at, moved, name = {"dir_fd": folder}, {"src_dir_fd": folder, "dst_dir_fd": folder}, target.name
    else:   # elsewhere (Windows) the same steps by path name
        folder, at, moved, name, temporary = None, {}, {}, str(target), str(target.parent / temporary)
    try:
        if inside is not None and folder is not None:
            _still_inside(folder, str(target), inside)
        try:
            old = os.stat(name, follow_symlinks=False, **at)
            mode = stat.S_IMODE(old.st_mode) if stat.S_ISREG(old.st_mode) else None
        except FileNotFoundError:
            mode = None   # a new file: os.open's 0o666, less the umask, as any program would make it
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666, **at)
        try:
            with open(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
                if mode is not None:   # a file that existed keeps its permissions
                    os.chmod(f.fileno() if os.chmod in os.supports_fd else temporary, mode)
            os.replace(temporary, name, **moved)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary, **at)
            raise
    finally:
        if folder is not None:
            os.close(folder)


# ---------------------------------------------------------------- knowledge
@cache
def _data(name: str) -> dict:
    return json.loads((Path(__file__).parent / "data" / name).read_text(encoding="utf-8"))


def _normalise(text: str) -> str:
    return " ".join(text.casefold().split())


def lookup(topic: str) -> str:
    """Look up one known fact (e.g. 단가, unit price) in Korean or English; to search documents, use search_docs.

    Args:
        topic: the topic to look up, for example "단가" or "shipping".
    """
    if not isinstance(topic, str) or not topic.strip():
        raise ToolError("topic must be a non-empty text such as \"단가\" or \"unit price\"")
    answer = _fact_index().get(_normalise(topic))
    if answer is None:
        known = ", ".join(_listed(f) for f in _data("facts.json"))
        raise ToolError(f"nothing is known about '{topic}'. Known topics: {known}")
    return answer


@cache
def _fact_index() -> dict[str, str]:
    """Topic name → answer in that name's language; the listed form "unit price (단가)" works too."""
    index = {_normalise(_listed(fact)): fact["answer"]["en"] for fact in _data("facts.json")}
    index.update({_normalise(name): fact["answer"][lang] for fact in _data("facts.json")
                  for lang in ("ko", "en") for name in fact["topics"][lang]})
    return index


def _listed(fact: dict) -> str:
    return f'{fact["topics"]["en"][0]} ({fact["topics"]["ko"][0]})'


def search_docs(query: str) -> str:
    """Search the company documents for a keyword (e.g. 출장); for one known fact, such as a price, use lookup.

    Args:
        query: a word or phrase to look for, for example "출장" or "refund".
    """
    if not isinstance(query, str) or not query.strip():
        raise ToolError("query must be a non-empty word or phrase")
    wanted = _normalise(query)
    hits = [f"[{title}] {body}" for title, body in _data("docs.json").items()
            if wanted in _normalise(title) or wanted in _normalise(body)]
    return "\n".join(hits) if hits else f"No document mentions '{query}'."
