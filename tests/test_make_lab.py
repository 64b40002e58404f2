"""`make lab`, the exact command a learner runs, serves the course folder: exercises/, solutions/, the README
and the lessons are all reachable, and the default page is lesson 00."""
import os
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from support import free_port

ROOT = Path(__file__).resolve().parent.parent


def serves_the_course(command: list[str], tmp_path, port: int, token: str) -> None:
    """Start ``command`` (JupyterLab on ``port``); it must serve the course folder with lesson 00 as its page."""
    env = {**os.environ, "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime")}
    server = subprocess.Popen(command, cwd=ROOT, env=env, start_new_session=True,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90   # a hang guard: JupyterLab usually answers within seconds
        while True:
            try:
                urllib.request.urlopen(f"{url}/api/status?token={token}", timeout=2).close()
                break
            except OSError:
                assert time.monotonic() < deadline and server.poll() is None, f"{command} did not start JupyterLab"
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


def lab_args(port: int, token: str) -> str:
    return f"--no-browser --ServerApp.port={port} --ServerApp.ip=127.0.0.1 --IdentityProvider.token={token}"


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed (.ci/run installs it)")
def test_make_lab_serves_the_course_root(tmp_path):
    port, token = free_port(), "make-lab-test-token"
    serves_the_course(["make", "lab", f"LAB_ARGS={lab_args(port, token)}"], tmp_path, port, token)


def without_make(shell: str) -> list[str]:
    """The README's commands for a set-up without make, in ``shell`` (bash or powershell)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8").split("**Without make**", 1)[1]
    return text.split(f"```{shell}\n", 1)[1].split("```", 1)[0].strip().splitlines()


def test_the_readme_s_set_up_without_make_is_the_three_commands_make_lab_runs_in_either_shell():
    bash, powershell = without_make("bash"), without_make("powershell")
    assert bash[0] == "python3 -m venv .venv" and powershell[0] == "py -3.11 -m venv .venv"
    assert bash[1] == ".venv/bin/python -m pip install -e '.[course]'"   # the course extra, as make lab installs
    assert "-m pip install --quiet -e '.[course]'" in (ROOT / "Makefile").read_text(encoding="utf-8")
    recipe = (ROOT / "Makefile").read_text(encoding="utf-8").split("\nlab: ", 1)[1].split("\n\n", 1)[0]
    for option in ('--ServerApp.root_dir="', "--LabApp.default_url=/lab/tree/notebooks/00_welcome.ipynb"):
        assert option in recipe and option in bash[2]
    assert [line.replace(".venv\\Scripts\\", ".venv/bin/") for line in powershell[1:]] == bash[1:]


def test_the_readme_s_jupyter_lab_line_serves_the_course_root(tmp_path):
    """The third command, as a learner without make runs it (the venv's jupyter; root needs --allow-root)."""
    port, token = free_port(), "readme-lab-test-token"
    line = without_make("bash")[2].replace(".venv/bin/", f"{Path(sys.executable).parent}/")
    extra = lab_args(port, token) + (" --allow-root" if hasattr(os, "geteuid") and os.geteuid() == 0 else "")
    serves_the_course(["bash", "-c", f"{line} {extra}"], tmp_path, port, token)
