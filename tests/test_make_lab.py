"""`make lab`, the exact command a learner runs, serves the course folder: exercises/, solutions/, the README
and the lessons are all reachable, and the default page is lesson 00."""
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed (.ci/run installs it)")
def test_make_lab_serves_the_course_root(tmp_path):
    port, token = free_port(), "make-lab-test-token"
    args = f"--no-browser --ServerApp.port={port} --ServerApp.ip=127.0.0.1 --IdentityProvider.token={token}"
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime")}
    server = subprocess.Popen(["make", "lab", f"LAB_ARGS={args}"], cwd=ROOT, env=env, start_new_session=True,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90   # a hang guard: JupyterLab usually answers within seconds
        while True:
            try:
                urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2).close()
                break
            except OSError:
                assert time.monotonic() < deadline and server.poll() is None, "make lab did not start JupyterLab"
                time.sleep(0.5)
        for path in ("exercises", "solutions", "notebooks", "README.md", "notebooks/00_welcome.ipynb"):
            with urllib.request.urlopen(f"{url}/api/contents/{path}?content=0&token={token}", timeout=10) as r:
                assert r.status == 200, path
        request = urllib.request.Request(f"{url}/?token={token}")
        opener = urllib.request.build_opener(urllib.request.HTTPRedirectHandler())
        with opener.open(request, timeout=10) as r:
            assert r.geturl().split("?")[0].endswith("/lab/tree/notebooks/00_welcome.ipynb")
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
