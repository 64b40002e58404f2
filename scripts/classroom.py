"""`make classroom`: a JupyterHub on this machine with an instructor and students, nbgrader's exchange between them.

    python scripts/classroom.py [--folder build/classroom] [--port 8010] [--students alice,bob] [--stage 04]

It prepares FOLDER: config/nbgrader_config.py (from classroom/), an empty exchange/, course/source/ps04/ holding
the stage's exercise notebook as the instructor's source (solutions/, with its answers and hidden tests), and a
home folder per user. It finds configurable-http-proxy, the hub's proxy (on PATH or in build/node, else it installs
it there with npm), starts the hub, prints its address, the users and the password, and waits. Ctrl-C (or SIGTERM)
stops the hub, every user's server and the proxy. classroom/README.md is the instructor's guide.
"""
from __future__ import annotations

import argparse
import contextlib
import http.client
import json
import os
import secrets
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def find_proxy(node: Path = ROOT / "build" / "node") -> str | None:
    """configurable-http-proxy: on PATH, in build/node, or installed there with npm; None if there is no way."""
    local = node / "node_modules" / ".bin" / "configurable-http-proxy"
    if found := shutil.which("configurable-http-proxy") or (local.is_file() and str(local)):
        return found
    if not shutil.which("npm"):
        return None
    print("classroom: installing configurable-http-proxy with npm (once)", flush=True)
    done = subprocess.run(["npm", "install", "--silent", "--prefix", str(node), "configurable-http-proxy@5"],
                          capture_output=True, text=True, timeout=600)
    return str(local) if done.returncode == 0 and local.is_file() else None


def prepare(folder: Path, stage: str, users: list[str]) -> None:
    """The folders the hub, nbgrader and the users work in, and the stage's source notebook."""
    (folder / "config").mkdir(parents=True, exist_ok=True)
    shutil.copy(ROOT / "classroom" / "nbgrader_config.py", folder / "config" / "nbgrader_config.py")
    (folder / "exchange").mkdir(exist_ok=True)
    (folder / "exchange").chmod(0o777)   # nbgrader's exchange: every user may write into inbound/
    source = folder / "course" / "source" / f"ps{stage}"
    source.mkdir(parents=True, exist_ok=True)
    notebook = next((ROOT / "solutions").glob(f"{stage}_*_exercises.ipynb"))
    shutil.copy(notebook, source / notebook.name)
    for user in users:
        (folder / "home" / user).mkdir(parents=True, exist_ok=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--folder", type=Path, default=ROOT / "build" / "classroom")
    parser.add_argument("--port", type=int, default=8010)   # 8000 is `course mcp serve --http`'s
    parser.add_argument("--students", default="alice,bob")
    parser.add_argument("--stage", default="04")
    args = parser.parse_args(argv)
    folder = args.folder.resolve()
    students = [s for s in args.students.split(",") if s]
    prepare(folder, args.stage, ["instructor", *students])
    proxy = find_proxy()
    if proxy is None:
        print("classroom: configurable-http-proxy is not installed and npm is not there to install it; install "
              "Node.js (which brings npm), then run this again", file=sys.stderr)
        return 2
    with socket.socket() as probe:   # the hub would wait for a proxy that cannot listen there
        try:
            probe.bind(("127.0.0.1", args.port))
        except OSError:
            print(f"classroom: port {args.port} is in use by another program: choose another with --port",
                  file=sys.stderr)
            return 1
    password = os.environ.get("CLASSROOM_PASSWORD") or secrets.token_urlsafe(9)
    env = {**os.environ, "CLASSROOM_DIR": str(folder), "CLASSROOM_PORT": str(args.port),
           "CLASSROOM_HUB_PORT": str(free_port()), "CLASSROOM_PROXY_API_PORT": str(free_port()),
           "CLASSROOM_PROXY": proxy, "CLASSROOM_PASSWORD": password, "CLASSROOM_STUDENTS": ",".join(students),
           "CLASSROOM_INSTRUCTOR": "instructor", "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    # A session of its own: Ctrl-C reaches this script only, which passes it on once
    hub = subprocess.Popen([str(BIN / "jupyterhub"), "-f", str(ROOT / "classroom" / "jupyterhub_config.py")],
                           cwd=folder, env=env, stdout=subprocess.DEVNULL, stderr=open(folder / "hub.log", "ab"),
                           start_new_session=True)
    signal.signal(signal.SIGTERM, signal.default_int_handler)   # a SIGTERM stops the class as Ctrl-C does: end()
    url = f"http://127.0.0.1:{args.port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            try:   # the hub's own answer, not whatever else may listen there
                with urllib.request.urlopen(f"{url}/hub/api/", timeout=2) as answer:
                    if "version" in json.loads(answer.read()):
                        break
            except (OSError, http.client.HTTPException, ValueError):
                pass
            if hub.poll() is not None or time.monotonic() > deadline:
                print(f"classroom: the hub did not start (is port {args.port} in use?); its log is "
                      f"{folder / 'hub.log'}", file=sys.stderr)
                return 1
            time.sleep(0.5)
        print(f"classroom: ready at {url}", flush=True)
        print(f"classroom: users instructor (admin), {', '.join(students)}; the password for all: {password}", flush=True)
        print(f"classroom: the instructor's shell: cd {shlex.quote(str(folder / 'course'))} && export "
              f"CLASSROOM_DIR={shlex.quote(str(folder))} JUPYTER_CONFIG_PATH={shlex.quote(str(folder / 'config'))} "
              f"PATH={shlex.quote(str(BIN))}:\"$PATH\"", flush=True)
        print("classroom: paste that line into a terminal, then run nbgrader there (classroom/README.md)", flush=True)
        print("classroom: Ctrl-C stops the hub and every server", flush=True)
        return hub.wait()
    except KeyboardInterrupt:
        return end(hub)
    finally:
        if hub.poll() is None:
            end(hub)


def end(hub: subprocess.Popen, grace: float = 30) -> int:
    """Ctrl-C for the hub, which stops every server and the proxy, then exits. A hub whose shutdown hangs (a task
    that never takes its cancellation: seen on a busy machine) is ended after ``grace`` seconds, with the proxy and
    the servers it started (each in a session of its own, so not reached through the hub's)."""
    import psutil   # in the course extra (ipykernel needs it too)
    try:
        started = psutil.Process(hub.pid).children(recursive=True)
    except psutil.Error:   # already gone
        started = []
    hub.send_signal(signal.SIGINT)
    try:
        return hub.wait(timeout=grace)
    except subprocess.TimeoutExpired:
        print(f"classroom: the hub did not stop within {grace:g} s; ending it and its servers", file=sys.stderr)
    for process in started:
        with contextlib.suppress(psutil.Error):
            process.terminate()
    psutil.wait_procs(started, timeout=10)
    for process in started:
        with contextlib.suppress(psutil.Error):
            process.kill()
    hub.kill()
    return hub.wait()


if __name__ == "__main__":
    sys.exit(main())
