"""Where ``course check`` runs a submission: a Jupyter kernel in a sandbox, as tight as this machine allows.

``isolation()`` picks the strongest level that works here, once:

- ``"bubblewrap"`` (the ``bwrap`` command 0.8 or newer, Debian/Ubuntu package ``bubblewrap``): an unprivileged
  user with no capabilities, alone in its own process tree, no network at all, the whole file system read-only, ``/tmp`` and ``/dev/shm``
  empty and thrown away afterwards, the solution folders and the checkout's ``.git`` replaced by empty
  folders, and one writable scratch folder that is deleted after grading;
- ``"unshare"`` (util-linux, no privileges needed where user namespaces are allowed): no network; files are
  NOT isolated (the report says so);
- ``"none"``: nothing is isolated, and the report says that too.

Every level also sets limits (``limits``): an address space of ``MEMORY_BYTES`` (an unbounded allocation raises
MemoryError or ends the kernel, not the machine) and at most ``PROCESSES`` processes (a fork bomb fails to fork):
by the process-count limit of the user that runs the grader, and where that user is root, which that limit does
not bind, by a ``pids`` cgroup of the notebook's own where the machine lets root make one.

The kernel talks to the grader over Unix sockets in the scratch folder (``transport="ipc"``), so it needs
no network of its own. ``kernel_manager`` returns a jupyter_client ``KernelManager`` whose kernel command
is wrapped accordingly.
"""
from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path

MEMORY_BYTES = 4 * 1024 ** 3   # address space of the kernel and all it starts
PROCESSES = 64                 # processes the notebook may run at once, the kernel's own included
COURSE = Path(__file__).resolve().parents[2]   # the course folder
PIDS = Path("/sys/fs/cgroup/pids")   # cgroup v1's pids controller, where root can make a group per notebook
# Run first, by the grader's Python: join the group, set the limits, then become the sandbox's command.
LAUNCH = """import os, resource, sys
group, memory, count = sys.argv[1:4]
if group:
    with open(os.path.join(group, "cgroup.procs"), "w") as procs:
        procs.write(str(os.getpid()))
resource.setrlimit(resource.RLIMIT_AS, (int(memory), int(memory)))
resource.setrlimit(resource.RLIMIT_NPROC, (int(count), int(count)))
os.execvp(sys.argv[4], sys.argv[4:])
"""

DESCRIPTIONS = {
    "bubblewrap": "isolated with bubblewrap: an unprivileged user alone in its own process tree, no network, "
                  "read-only files, solutions hidden, a scratch folder only",
    "unshare": "network isolated with unshare; files NOT isolated (install bubblewrap for that)",
    "none": "NOT isolated: the notebook ran with your network and files (install bubblewrap to isolate it)",
}


# Nobody, with no capabilities, alone: its own user (no root, so no mounting, unmounting or nsenter), its own
# process tree (it sees no other kernel and no grader, and nothing outlives it), no network, and no way to
# make new user namespaces. The kernel's parent is then PID 1 of that tree, so ipykernel must not watch it.
CONFINE = ["--unshare-user", "--uid", "65534", "--gid", "65534", "--cap-drop", "ALL", "--disable-userns",
           "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try", "--unshare-net",
           "--setenv", "JPY_PARENT_PID", "1"]


def _runs(command: list[str]) -> bool:
    try:
        return subprocess.run(command + ["true"], capture_output=True, timeout=10).returncode == 0
    except (OSError, subprocess.SubprocessError):
        return False


@functools.cache
def isolation() -> str:
    """The strongest sandbox that actually works on this machine (tried once per process)."""
    if shutil.which("bwrap") and _runs(["bwrap", "--ro-bind", "/", "/", "--proc", "/proc", *CONFINE, "--"]):
        return "bubblewrap"
    if shutil.which("unshare") and _runs(["unshare", "-rn", "--"]):
        return "unshare"
    return "none"


def _python() -> set[Path]:
    """Python's own folders: its prefixes and the packages' folders."""
    import site
    return {Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve(), Path(sys.executable).resolve().parent.parent,
            *(Path(p).resolve() for p in site.getsitepackages() if Path(p).is_dir())}


def _needed() -> list[Path]:
    """What the kernel must still see: the course folder, Python and every folder on its import path."""
    folders = {COURSE, *_python()}
    folders |= {Path(p).resolve() for p in sys.path if p and Path(p).is_dir()}
    kept: list[Path] = []
    for folder in sorted(folders, key=lambda f: len(f.parts)):   # a parent covers its children
        if not any(folder.is_relative_to(k) for k in kept):
            kept.append(folder)
    return kept


def wrapper(level: str, scratch: Path, hidden: list[Path], replaced: dict[Path, Path] | None = None) -> list[str]:
    """The command prefix that starts a program inside the sandbox of ``level``; with bubblewrap, each file of
    ``replaced`` (original → replacement) is seen with the replacement's content, and the course folder holds
    only ``course_lib`` (no compiled copies of its originals) and what Python needs."""
    if level == "bubblewrap":
        command = ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        emptied = ("/tmp", "/var/tmp", "/dev/shm", *([os.environ["HOME"]] if os.environ.get("HOME", "/") != "/"
                                                     else []))
        for folder in emptied:
            command += ["--tmpfs", folder]
        needed = _needed()
        for folder in needed:   # the course, Python and its packages may live under /tmp or home: put them back
            if any(str(folder).startswith(f.rstrip("/") + "/") for f in emptied):
                command += ["--ro-bind", str(folder), str(folder)]
        course = COURSE if COURSE.is_dir() else None
        python = _python()
        for item in sorted(course.iterdir()) if course and replaced else ():   # notebooks, tests, solutions, …
            if item.is_dir() and item.name != "course_lib" and not any(n.is_relative_to(item) for n in python):
                command += ["--tmpfs", str(item)]
        for cache in sorted((COURSE / "course_lib").rglob("__pycache__")) if replaced else ():
            command += ["--tmpfs", str(cache)]
        empty = Path(f"{scratch}-lib") / ".empty"   # an empty file the kernel cannot reach, shown over files it may not read
        files = [item for item in sorted(course.iterdir()) if item.is_file()] if course else []   # README, a notebook
        for path in hidden + files:   # an empty folder where the solutions were, an empty file for a classmate's notebook
            if path.is_dir():
                command += ["--tmpfs", str(path)]
            elif path.is_file():
                empty.parent.mkdir(exist_ok=True)
                empty.touch()
                command += ["--ro-bind", str(empty), str(path)]
        command += ["--bind", str(scratch), str(scratch)]
        for original, replacement in sorted((replaced or {}).items()):
            command += ["--ro-bind", str(replacement), str(original)]
        return command + [*CONFINE, "--die-with-parent", "--new-session", "--chdir", str(scratch / "work"), "--"]
    if level == "unshare":
        return ["unshare", "-rn", "--"]
    return []


def process_group(scratch: Path) -> Path | None:
    """A pids cgroup for one notebook (root only, where cgroup v1's pids controller is mounted), or None."""
    if os.name == "nt" or os.geteuid() != 0 or not (PIDS / "cgroup.procs").exists():
        return None
    group = PIDS / f"course-grade-{scratch.name}"
    try:
        group.mkdir()
        (group / "pids.max").write_text(str(PROCESSES))
    except OSError:
        return None
    return group


def end_group(group: Path | None) -> None:
    """Stop what is left in the group and remove it."""
    if group is None:
        return
    import signal
    import time
    for _ in range(50):
        try:
            pids = [int(p) for p in (group / "cgroup.procs").read_text().split()]
        except OSError:
            return
        if not pids:
            break
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        time.sleep(0.05)
    try:
        group.rmdir()
    except OSError:
        pass


def limits(group: Path | None) -> list[str]:
    """The command prefix that sets the memory and process limits, then runs the rest (none on Windows)."""
    if os.name == "nt":
        return []
    uid = os.getuid()   # the limit counts all of this user's processes: leave room for those already running
    try:
        running = sum(1 for p in Path("/proc").iterdir() if p.name.isdigit() and _owner(p) == uid)
    except OSError:   # no /proc (macOS): a generous allowance instead
        running = 1000
    return [sys.executable, "-c", LAUNCH, str(group or ""), str(MEMORY_BYTES), str(running + PROCESSES)]


def _owner(path: Path) -> int | None:
    try:
        return path.stat().st_uid
    except OSError:
        return None


def kernel_manager(level: str, scratch: Path, hidden: list[Path], group: Path | None = None,
                   replaced: dict[Path, Path] | None = None):
    """A KernelManager for the ``python3`` kernel, started inside the sandbox, reached over Unix sockets."""
    from jupyter_client import AsyncKernelManager

    class SandboxedKernelManager(AsyncKernelManager):
        def format_kernel_cmd(self, extra_arguments=None):
            return limits(group) + wrapper(level, scratch, hidden, replaced) + super().format_kernel_cmd(
                extra_arguments)

    (scratch / "kernel").mkdir(parents=True, exist_ok=True)
    sockets = {"transport": "ipc", "ip": str(scratch / "kernel" / "ipc")} if os.name != "nt" else {}   # no ipc there
    manager = SandboxedKernelManager(kernel_name="python3", connection_file=str(scratch / "kernel" / "connection.json"),
                                     **sockets)
    # A signal would reach the sandbox's own process, not the kernel inside it: interrupt by message instead.
    manager.kernel_spec.interrupt_mode = "message"
    return manager
