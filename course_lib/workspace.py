"""Stage 01 — the workspace: the one folder the file tools may touch (the current working directory), the checks
that keep every path inside it, and the file tools themselves.

Adds: ``ToolError``, how every tool refuses its input, with a message written for the model. ``inside_workspace``
resolves a path and refuses anything that ends up outside: ``..`` escapes, absolute paths elsewhere, symlinks that
lead out, a sibling folder sharing the name's prefix, NUL bytes, overlong paths. ``read_file`` and ``list_files``
go through it, check again what they really opened, and do bounded work whatever they meet (a huge file is cut
with a note, a named pipe is refused, not waited on). ``shorten`` and ``os_problem`` word a path and a failure of
the operating system (one of ``OS_FAILURES``) for the model, never with the absolute path. ``write_atomically``
replaces a file whole or not at all; ``write_json`` writes data with it as strict JSON (transcripts, notes).

Leaves out: writing tools (stage 09's approval gate adds one), any folder but the current one, text other than
UTF-8 (undecodable bytes become �), and a real sandbox (a process that cannot reach outside at all).
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


# ---------------------------------------------------------------- staying inside the workspace
MAX_READ_CHARS = 1_000_000   # the most read_file returns in one call, whatever max_chars asks for
MAX_COUNTED = 1_000_000      # past the cut, characters are counted up to this many; beyond it, "more than"
MAX_LISTED, MAX_SCANNED = 200, 10_000   # entries list_files shows, and looks at
MAX_PATH_CHARS = 4096        # the usual system limit on a whole path (PATH_MAX)
# How files and folders are opened. O_NONBLOCK: opening a named pipe must not wait for a writer (read_file refuses
# it after the open); O_DIRECTORY: opening anything but a folder fails at once. Systems without them use 0.
OPEN_FILE = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)
OPEN_FOLDER = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0)


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


# ---------------------------------------------------------------- the file tools
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
        fd = os.open(target, OPEN_FOLDER)
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


# ---------------------------------------------------------------- writing a file whole
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
        folder = os.open(target.parent, OPEN_FOLDER)
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


def write_json(path: Path, data) -> None:
    """``data`` as strict UTF-8 JSON, written whole: half an emoji becomes U+FFFD, NaN the text "NaN", a
    dataclass its fields, and any other object its ``str`` (or a note, if even that fails)."""
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
