"""Where ``course check`` runs a submission: a Jupyter kernel in a sandbox, as tight as this machine allows.

``isolation()`` picks the strongest level that works here, once:

- ``"bubblewrap"`` (the ``bwrap`` command 0.8 or newer, Debian/Ubuntu package ``bubblewrap``): an unprivileged
  user with no capabilities, alone in its own process tree, no network at all, the whole file system read-only, ``/tmp`` and ``/dev/shm``
  empty and thrown away afterwards, the solution folders and the checkout's ``.git`` replaced by empty
  folders, and one writable scratch folder that is deleted after grading;
- ``"unshare"`` (util-linux, no privileges needed where user namespaces are allowed): no network; files are
  NOT isolated (the report says so);
- ``"none"``: nothing is isolated, and the report says that too.

The kernel talks to the grader over Unix sockets in the scratch folder (``transport="ipc"``), so it needs
no network of its own. ``kernel_manager`` returns a jupyter_client ``KernelManager`` whose kernel command
is wrapped accordingly.
"""
from __future__ import annotations

import functools
import os
import shutil
import subprocess
from pathlib import Path

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


def _needed() -> list[Path]:
    """What the kernel must still see: the course folder, Python and every folder on its import path."""
    import sys
    folders = {Path(__file__).resolve().parents[2], Path(sys.prefix), Path(sys.base_prefix),
               Path(sys.executable).resolve().parent.parent}
    folders |= {Path(p).resolve() for p in sys.path if p and Path(p).is_dir()}
    kept: list[Path] = []
    for folder in sorted(folders, key=lambda f: len(f.parts)):   # a parent covers its children
        if not any(folder.is_relative_to(k) for k in kept):
            kept.append(folder)
    return kept


def wrapper(level: str, scratch: Path, hidden: list[Path]) -> list[str]:
    """The command prefix that starts a program inside the sandbox of ``level``."""
    if level == "bubblewrap":
        command = ["bwrap", "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc"]
        emptied = ("/tmp", "/var/tmp", "/dev/shm")
        for folder in emptied:
            command += ["--tmpfs", folder]
        for folder in _needed():   # the course, Python and its packages may live under /tmp: put them back
            if str(folder).startswith(tuple(f + "/" for f in emptied)):
                command += ["--ro-bind", str(folder), str(folder)]
        for folder in hidden:   # an empty folder where the solutions were
            if folder.is_dir():
                command += ["--tmpfs", str(folder)]
        return command + ["--bind", str(scratch), str(scratch), *CONFINE, "--die-with-parent", "--new-session",
                          "--chdir", str(scratch / "work"), "--"]
    if level == "unshare":
        return ["unshare", "-rn", "--"]
    return []


def kernel_manager(level: str, scratch: Path, hidden: list[Path]):
    """A KernelManager for the ``python3`` kernel, started inside the sandbox, reached over Unix sockets."""
    from jupyter_client import AsyncKernelManager

    class SandboxedKernelManager(AsyncKernelManager):
        def format_kernel_cmd(self, extra_arguments=None):
            return wrapper(level, scratch, hidden) + super().format_kernel_cmd(extra_arguments)

    (scratch / "kernel").mkdir(parents=True, exist_ok=True)
    sockets = {"transport": "ipc", "ip": str(scratch / "kernel" / "ipc")} if os.name != "nt" else {}   # no ipc there
    manager = SandboxedKernelManager(kernel_name="python3", connection_file=str(scratch / "kernel" / "connection.json"),
                                     **sockets)
    # A signal would reach the sandbox's own process, not the kernel inside it: interrupt by message instead.
    manager.kernel_spec.interrupt_mode = "message"
    return manager
