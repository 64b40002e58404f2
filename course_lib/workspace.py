"""Stage 01 — the workspace: the one folder the file tools may touch, and the whole-file writes later stages share.

Adds: ``ToolError``; ``inside_workspace``, refusing any path that ends up outside the current folder; ``read_file``
and ``list_files``, which check again what they opened and do bounded work whatever they meet; ``shorten`` and
``os_problem``, wording paths and OS failures for the model; ``write_atomically`` and ``write_json``, which replace
a file whole or not at all (transcripts, notes).

Leaves out: writing tools (lessons 06 and 09's approval gate adds one), other folders, non-UTF-8 text, a real sandbox.
"""
from __future__ import annotations

import contextlib
import errno
import itertools
import json
import math
import os
import stat
from pathlib import Path


class ToolError(Exception):
    """A tool refused its input; the message tells the model what was wrong and what to do."""


MAX_READ_CHARS = 1_000_000   # the most read_file returns in one call, whatever max_chars asks for
MAX_COUNTED = 1_000_000      # past the cut, characters are counted up to this many; beyond it, "more than"
MAX_LISTED, MAX_SCANNED = 200, 10_000   # entries list_files shows, and looks at
MAX_PATH_CHARS = 4096        # the usual system limit on a whole path (PATH_MAX)
OS_FAILURES = (OSError, RuntimeError, ValueError, OverflowError, MemoryError)   # a hostile path or file may raise
OPEN_FILE = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)      # a named pipe opens without waiting for a writer
OPEN_FOLDER = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)   # anything but a folder fails to open


def shorten(path: str) -> str:
    """A path as error messages show it: relative to the workspace, at most 80 characters."""
    with contextlib.suppress(OSError, ValueError):
        if os.path.isabs(path) and Path(path).is_relative_to(Path.cwd()):
            path = os.path.relpath(path)
    return path if len(path) <= 80 else path[:80] + "…"


def os_problem(path: str, e: BaseException) -> ToolError:
    """An operating-system failure, told in terms of the path the model gave: never the absolute path."""
    number, why = getattr(e, "errno", None), getattr(e, "strerror", None) or type(e).__name__
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
    return ToolError(f"cannot use '{shorten(path)}': {why}")


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
        root = Path.cwd().resolve()
        target = (root / path).resolve()   # follows symlinks, so a link pointing outside is caught here
    except UnicodeEncodeError:   # half of an emoji (a lone surrogate) cannot be part of a file name
        raise ToolError("path contains a character no file name can hold; use plain text") from None
    except OS_FAILURES as e:
        raise os_problem(path, e) from None
    if not target.is_relative_to(root):   # a path check, not a prefix check: /work2 is not inside /work
        raise ToolError(f"'{shorten(path)}' is outside the workspace; use a path inside the current folder")
    return target


def _still_inside(fd: int, path: str, root: Path | None = None) -> None:
    """Check again, by its /proc/self/fd name, what was opened: a folder swapped for a symlink may lead outside."""
    try:
        opened = Path(os.readlink(f"/proc/self/fd/{fd}"))
    except OSError:   # no /proc here: the check in inside_workspace is all there is
        return
    if not opened.is_relative_to(root or Path.cwd().resolve()):
        raise ToolError(f"'{shorten(path)}' is outside the workspace; use a path inside the current folder")


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
        fd = os.open(target, OPEN_FILE)
        try:
            kind = os.fstat(fd).st_mode
            if stat.S_ISDIR(kind):
                raise ToolError(f"'{shorten(path)}' is a folder, not a file; call list_files to see inside it")
            if not stat.S_ISREG(kind):
                raise ToolError(f"'{shorten(path)}' is not a regular file (a pipe or a device); it cannot be read")
            _still_inside(fd, path)
            with open(fd, encoding="utf-8", errors="replace", closefd=False) as f:   # bytes that are not UTF-8 become �
                text, rest = f.read(wanted), f.read(MAX_COUNTED)   # bounded work, however large the file
                more = f.read(1) != ""
        finally:
            os.close(fd)
    except FileNotFoundError:
        raise ToolError(f"there is no file '{shorten(path)}' in the workspace; call list_files to see what "
                        "exists") from None
    except OS_FAILURES as e:
        raise os_problem(path, e) from None
    if rest:
        left = f"more than {len(rest):,}" if more else f"{len(rest):,}"
        how = "pass a larger max_chars to see more" if wanted < MAX_READ_CHARS else \
            f"read_file returns at most {MAX_READ_CHARS:,} characters"
        text += f"\n[... cut: {left} more characters not shown; {how}]"
    return text


def list_files(directory: str = ".") -> str:
    """List the files and folders in a workspace folder (folders end with /); to read a file, use read_file.

    Args:
        directory: a folder inside the workspace; "." is the workspace itself.
    """
    target = inside_workspace(directory)
    try:
        fd = os.open(target, OPEN_FOLDER)
        try:
            _still_inside(fd, directory)
            with os.scandir(fd if os.scandir in os.supports_fd else target) as entries:
                # repr: a control character must not fake extra lines; a link looping back on itself gets no "/"
                names = sorted((e.name if e.name.isprintable() else repr(e.name)) + ("/" * (target / e.name).is_dir())
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
    more = (f"\n[... the folder has more than {MAX_SCANNED:,} entries; only some are listed]" if unseen else
            f"\n[... {len(names) - MAX_LISTED} more not shown]" if len(names) > MAX_LISTED else "")
    return "\n".join(names[:MAX_LISTED]) + more


def write_atomically(target: Path, data: bytes, *, inside: Path | None = None) -> None:
    """Write a temporary file beside ``target``, then rename it over: a failure loses nothing, a link is replaced, not
    written through, permissions are kept; every step runs in the opened folder, which must lie ``inside`` if given."""
    temporary = f".{target.name[:50]}.{os.urandom(6).hex()}.tmp"
    target.parent.mkdir(parents=True, exist_ok=True)
    if os.open in os.supports_dir_fd:   # POSIX: every step relative to the opened folder
        folder = os.open(target.parent, OPEN_FOLDER)
        at, moved, name = {"dir_fd": folder}, {"src_dir_fd": folder, "dst_dir_fd": folder}, target.name
    else:   # elsewhere (Windows) the same steps by path name
        folder, at, moved, name, temporary = None, {}, {}, str(target), str(target.parent / temporary)
    try:
        if inside is not None and folder is not None:
            _still_inside(folder, str(target), inside)
        mode = None   # a new file: os.open's 0o666, less the umask, as any program would make it
        with contextlib.suppress(FileNotFoundError):
            old = os.stat(name, follow_symlinks=False, **at)
            mode = stat.S_IMODE(old.st_mode) if stat.S_ISREG(old.st_mode) else None
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


def write_json(path: Path, data) -> None:
    """``data`` as strict UTF-8 JSON, written whole: NaN as "NaN", a dataclass as its fields, other objects as text."""
    write_atomically(path, (json.dumps(_strict(data), ensure_ascii=False, indent=2) + "\n").encode())


def whole(text: str) -> str:
    """``text`` with every lone surrogate (half an emoji, which no API or file takes) made U+FFFD."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def _strict(value):
    if isinstance(value, float) and not math.isfinite(value):
        return json.dumps(value)   # "NaN", "Infinity" or "-Infinity"
    if isinstance(value, int) and value.bit_length() >= 14_000:   # too long for json to write
        return f"(a whole number of {value.bit_length():,} bits)"
    if value is None or isinstance(value, (int, float)):
        return value
    if hasattr(value, "__dataclass_fields__") and not isinstance(value, type):
        value = {name: getattr(value, name) for name in value.__dataclass_fields__}
    if isinstance(value, dict):
        return {_strict(k) if isinstance(k, str) else _text(k): _strict(v) for k, v in value.items()}
    return [_strict(v) for v in value] if isinstance(value, (list, tuple)) else whole(_text(value))


def _text(value) -> str:
    try:
        return value if isinstance(value, str) else str(value)
    except Exception:   # a __str__ that raises, or returns something that is not text
        return f"(a {type(value).__name__} that cannot be shown)"
