"""A class on a real JupyterHub (issue 29): `make classroom`'s hub, nbgrader's exchange, `course check` grading.

scripts/classroom.py (what `make classroom` runs) starts the hub of classroom/ on 127.0.0.1 with an instructor and
two students. The instructor generates and releases exercise 04 with nbgrader, as in a terminal. Each student's
own JupyterLab server, started by the hub and reached through its proxy, fetches the assignment (nbgrader's
assignment-list handlers, what the Assignments tab calls), gets the notebook filled in (alice: every answer
right; bob: 04.3 left as released) and submits it. The instructor collects, grades with `course check 04 --json`
and with `nbgrader autograde`, and the two agree. Ctrl-C to the script stops the hub and every server.
"""
import json
import os
import re
import secrets
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
sys.path[:0] = [str(ROOT / "scripts"), str(ROOT / "benchmarks")]
import class_grading  # noqa: E402  (benchmarks/ is not a package: its class-scale submissions)
import classroom  # noqa: E402  (nor is scripts/)

pytest.importorskip("jupyterhub", reason="the test extra installs JupyterHub (make test)")
STAGE, COURSE, ASSIGNMENT = "04", "agent-course", "ps04"
NOTEBOOK = "04_parsing_replies_exercises.ipynb"


class Hub:
    def __init__(self, url: str, token: str):
        self.url, self.token = url, token

    def call(self, method: str, path: str, *, json_body=None, form=None):
        headers, body = {"Authorization": f"token {self.token}"}, None
        if json_body is not None:
            body, headers["Content-Type"] = json.dumps(json_body).encode(), "application/json"
        if form is not None:
            body, headers["Content-Type"] = urllib.parse.urlencode(form).encode(), "application/x-www-form-urlencoded"
        request = urllib.request.Request(self.url + path, data=body, method=method, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=120) as response:
                text = response.read().decode()
                return response.status, json.loads(text) if text.strip() else None
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode(errors="replace")[:500]

    def start_server(self, user: str) -> None:
        status, said = self.call("POST", f"/hub/api/users/{user}/server")
        assert status in (201, 202), (status, said)
        for _ in range(240):   # a hang guard: a server that starts is ready in seconds
            status, model = self.call("GET", f"/hub/api/users/{user}")
            if model["servers"].get("", {}).get("ready"):
                return
            time.sleep(0.5)
        pytest.fail(f"{user}'s server did not become ready")


def logs_in(url: str, user: str, password: str):
    """The hub's login form, as a browser fills it in: the path it lands on, or the refusal's status."""
    import http.cookiejar
    browser = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
    xsrf = re.search(r'name="_xsrf" value="([^"]+)"', browser.open(f"{url}/hub/login").read().decode())[1]
    form = urllib.parse.urlencode({"username": user, "password": password, "_xsrf": xsrf}).encode()
    try:
        with browser.open(urllib.request.Request(f"{url}/hub/login", data=form), timeout=120) as landed:
            return urllib.parse.urlparse(landed.geturl()).path
    except urllib.error.HTTPError as e:
        return e.code


def instructor(shell: str, command: str) -> subprocess.CompletedProcess:
    """``command`` in a terminal where the instructor pasted the line `make classroom` printed (``shell``)."""
    bare = {k: v for k, v in os.environ.items() if k not in ("CLASSROOM_DIR", "JUPYTER_CONFIG_PATH", "VIRTUAL_ENV")}
    bare["PATH"] = os.pathsep.join(p for p in bare.get("PATH", "").split(os.pathsep) if Path(p) != BIN)
    done = subprocess.run(["bash", "-c", f"{shell} && {command}"], env=bare, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode in (0, 1), f"{command}:\n{done.stdout}\n{done.stderr}"
    return done


def start_classroom(folder: Path, env: dict) -> tuple[subprocess.Popen, list[str]]:
    """scripts/classroom.py on free ports, and the lines it printed up to Ctrl-C's; a port another process took
    between choosing and binding it (the hub then says so) is chosen again, up to three times."""
    for attempt in range(3):
        script = subprocess.Popen([sys.executable, str(ROOT / "scripts" / "classroom.py"), "--folder",
                                   str(folder / str(attempt)), "--port", str(classroom.free_port()), "--students",
                                   "alice,bob"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        lines = [script.stdout.readline()]
        if lines[0].startswith("classroom: ready at http://127.0.0.1:"):
            lines += [script.stdout.readline() for _ in range(4)]
            return script, [line.rstrip("\n") for line in lines]
        script.wait(timeout=120)
        said = script.stderr.read()
        assert "in use" in said and attempt < 2, said


def filled(released: dict, leave: set[str]) -> dict:
    """The released notebook with each answer cell written as the solution writes it, except those in ``leave``."""
    return class_grading.fill(released, class_grading.answers(), leave)


def test_a_class_on_the_hub_fetches_submits_and_is_graded_the_same_by_course_check_and_nbgrader(tmp_path):
    if classroom.find_proxy() is None:
        pytest.skip("configurable-http-proxy is not installed and there is no npm to install it (needs Node.js)")
    token = secrets.token_hex(16)
    env = {**os.environ, "CLASSROOM_SERVICE_TOKEN": token, "CLASSROOM_PASSWORD": "the class's password"}
    script, printed = start_classroom(tmp_path, env)
    try:
        hub = Hub(printed[0].split(" at ")[1], token)
        assert "instructor (admin), alice, bob" in printed[1]
        assert printed[1].endswith("the password for all: the class's password")
        shell = printed[2].removeprefix("classroom: the instructor's shell: ")
        folder = Path(shell.split()[1])
        assert folder.name == "course" and printed[2].startswith("classroom: the instructor's shell: cd ")
        folder = folder.parent
        # a person logs in with the form and the shared password (a wrong one is refused), and gets a server
        assert logs_in(hub.url, "instructor", "not the password") == 403
        assert logs_in(hub.url, "instructor", "the class's password") == "/hub/spawn-pending/instructor"

        instructor(shell, f"nbgrader generate_assignment {ASSIGNMENT}")   # as the guide says, on PATH
        released = instructor(shell, f"nbgrader release_assignment {ASSIGNMENT}")
        assert f"Released as: {COURSE} {ASSIGNMENT}" in released.stderr + released.stdout

        for student, leave in (("alice", set()), ("bob", {"ex04_3"})):
            hub.start_server(student)
            status, listed = hub.call("GET", f"/user/{student}/assignments?course_id={COURSE}")
            assert status == 200 and [a["status"] for a in listed["value"]] == ["released"], listed
            status, fetched = hub.call("POST", f"/user/{student}/assignments/fetch",
                                       form={"course_id": COURSE, "assignment_id": ASSIGNMENT})
            assert status == 200 and fetched["success"], fetched
            path = f"/user/{student}/api/contents/{ASSIGNMENT}/{NOTEBOOK}"
            status, model = hub.call("GET", path)
            assert status == 200 and model["type"] == "notebook"
            status, _ = hub.call("PUT", path, json_body={"type": "notebook", "format": "json",
                                                          "content": filled(model["content"], leave)})
            assert status == 200
            status, submitted = hub.call("POST", f"/user/{student}/assignments/submit",
                                         form={"course_id": COURSE, "assignment_id": ASSIGNMENT})
            assert status == 200 and submitted["success"], submitted
            # the student's work landed in the exchange under the hub's user name, not the system's
            assert any(p.name.startswith(f"{student}+{ASSIGNMENT}+")
                       for p in (folder / "exchange" / COURSE / "inbound").iterdir())

        instructor(shell, f"nbgrader collect {ASSIGNMENT}")
        handed_in = {s: folder / "course" / "submitted" / s / ASSIGNMENT / NOTEBOOK for s in ("alice", "bob")}
        assert all(p.is_file() for p in handed_in.values())

        checked = instructor(shell, f"course check {STAGE} --json submitted/*/{ASSIGNMENT}/*.ipynb")
        reports = json.loads(checked.stdout)
        reports = reports["notebooks"] if isinstance(reports, dict) else reports
        verdicts = {Path(r["notebook"]).parts[-3]: {e["exercise"]: e["passed"] for e in r["exercises"]}
                    for r in reports}
        assert verdicts == {"alice": {"04.1": True, "04.2": True, "04.3": True},
                            "bob": {"04.1": True, "04.2": True, "04.3": False}}
        assert checked.returncode == 1   # someone failed something

        instructor(shell, f"nbgrader autograde {ASSIGNMENT}")
        from nbgrader.api import Gradebook
        with Gradebook(f"sqlite:///{folder / 'course' / 'gradebook.db'}") as gradebook:
            for student, passed in verdicts.items():
                notebook, = gradebook.find_submission(ASSIGNMENT, student).notebooks
                by_exercise = {}
                for grade in notebook.grades:   # "ex04_3" and "ex04_3_hidden": both full for a pass
                    exercise = f"{grade.name[2:4]}.{grade.name[5:].split('_')[0]}"
                    by_exercise.setdefault(exercise, []).append(grade.score == grade.max_score)
                assert {e: all(full) for e, full in by_exercise.items()} == passed, student
    finally:
        script.send_signal(signal.SIGINT)
        try:
            script.wait(timeout=300)   # a hang guard: it stops in seconds, even on a machine running much else
        except subprocess.TimeoutExpired:
            script.kill()
            raise
    # nothing of the hub outlives it: no user's server, no proxy
    left = subprocess.run(["pgrep", "-f", str(folder)], capture_output=True, text=True).stdout.split()
    assert left == [], f"processes of the classroom still running: {left}"


def test_make_classroom_runs_the_script_the_class_above_ran_on():
    done = subprocess.run(["make", "-n", "classroom", "CLASSROOM_ARGS=--port 8010"], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    commands = [line for line in done.stdout.splitlines() if not line.startswith("make")]   # make's own notes
    assert done.returncode == 0 and commands[-1] == ".venv/bin/python scripts/classroom.py --port 8010", done.stdout


def test_without_a_proxy_or_npm_the_script_says_what_to_install(tmp_path, monkeypatch):
    monkeypatch.setattr(classroom, "find_proxy", lambda: None)
    monkeypatch.setattr(classroom, "ROOT", ROOT)
    assert classroom.main(["--folder", str(tmp_path / "c"), "--port", str(classroom.free_port())]) == 2


WORKFLOW = ROOT / "classroom" / "github-classroom.yml"


def run_workflow(repo: Path) -> dict[str, int]:
    """classroom/github-classroom.yml's grading on a student repository, as GitHub's runner would run it: the
    `run:` and `command:` lines with bash, in the repository, with the workflow's env. Left out, and only these:
    actions/checkout and setup-python (the repository and this Python are here already) and the `install` step
    (the course is installed here). Returns the points each grader step awards (its max-score if it exits 0)."""
    import yaml
    workflow = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    env = {**os.environ, **workflow["env"], "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    steps = workflow["jobs"]["run-autograding-tests"]["steps"]
    skipped = [s["name"] for s in steps if s.get("id") == "install" or s.get("uses", "").startswith("actions/")]
    assert skipped == ["Checkout code", "Set up Python", "Install the course"]
    points = {}
    for step in steps:
        if "run" in step and step.get("id") != "install":
            done = subprocess.run(["bash", "-e", "-c", step["run"]], cwd=repo, env=env, capture_output=True, text=True,
                                  timeout=600)
            assert done.returncode == 0, f"{step['name']}: {done.stderr}"
        elif step.get("uses", "").startswith("classroom-resources/autograding-command-grader"):
            given = step["with"]
            done = subprocess.run(["bash", "-c", given["command"]], cwd=repo, env=env, capture_output=True, timeout=60)
            points[given["test-name"]] = given["max-score"] if done.returncode == 0 else 0
    reporter = next(s for s in steps if s.get("uses", "").startswith("classroom-resources/autograding-grading-reporter"))
    graders = [s["id"] for s in steps if "autograding-command-grader" in s.get("uses", "")]
    assert reporter["with"]["runners"].split(",") == graders   # every grader's result is reported
    return points


def test_the_github_classroom_workflow_gives_each_exercise_its_points_as_course_check_does(tmp_path):
    solution = nbformat.read(ROOT / "solutions" / NOTEBOOK, as_version=4)
    worth = {f"{c.metadata['nbgrader']['grade_id'][2:4]}.{c.metadata['nbgrader']['grade_id'][5]}":
             c.metadata["nbgrader"]["points"] for c in solution.cells if c.metadata.get("nbgrader", {}).get("points")}
    release = json.loads((ROOT / "exercises" / NOTEBOOK).read_text(encoding="utf-8"))
    for student, leave, expected in (("right", set(), worth), ("half", {"ex04_1", "ex04_3"}, {**worth, "04.1": 0,
                                                                                              "04.3": 0})):
        repo = tmp_path / student / "exercises"
        repo.mkdir(parents=True)
        (repo / NOTEBOOK).write_text(json.dumps(filled(json.loads(json.dumps(release)), leave)), encoding="utf-8")
        assert run_workflow(repo.parent) == expected, student
    unopened = tmp_path / "unopened" / "exercises"   # the notebook as handed out: no points, and no error
    unopened.mkdir(parents=True)
    (unopened / NOTEBOOK).write_text(json.dumps(release), encoding="utf-8")
    assert run_workflow(unopened.parent) == {e: 0 for e in worth}


def test_a_class_of_each_kind_of_submission_is_graded_in_one_run_with_every_verdict_as_expected():
    """benchmarks/class_grading.py, the README's class-scale figure (200 submissions), on eight: it checks every
    verdict against the kind of submission it wrote (right, 04.3 unanswered, 04.1 wrong, untouched)."""
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "class_grading.py"), "--students", "8",
                           "--jobs", "2"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert re.fullmatch(r"course check 04 --jobs 2: 8 submissions graded in \d+ s \([\d.]+ s each\), every verdict "
                        r"as expected\n", done.stdout)


def test_a_port_already_taken_is_one_sentence_not_a_traceback(tmp_path):
    """What the class test's retry relies on: a port another program holds (here one that answers no HTTP)."""
    import socket
    if classroom.find_proxy() is None:
        pytest.skip("configurable-http-proxy is not installed and there is no npm to install it (needs Node.js)")
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        done = subprocess.run([sys.executable, str(ROOT / "scripts" / "classroom.py"), "--folder", str(tmp_path / "c"),
                               "--port", str(port)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr == f"classroom: port {port} is in use by another program: choose another with --port\n"


def test_a_hub_that_does_not_stop_on_ctrl_c_is_ended_with_the_servers_it_started():
    """Seen on a busy machine: JupyterHub took the signal, stopped nothing and never exited (a task that never took
    its cancellation). The script then ends it, and the servers it started, each in a session of its own."""
    import psutil
    code = ("import signal, subprocess, sys, time\n"
            "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
            "server = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'], start_new_session=True)\n"
            "print(server.pid, flush=True)\n"
            "time.sleep(600)\n")
    hub = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, start_new_session=True)
    server = int(hub.stdout.readline())
    assert classroom.end(hub, grace=1) == -signal.SIGKILL
    hub.stdout.close()
    for _ in range(100):   # the server, no longer the hub's child, is reaped by whoever adopted it
        if not psutil.pid_exists(server) or psutil.Process(server).status() == psutil.STATUS_ZOMBIE:
            break
        time.sleep(0.1)
    assert not psutil.pid_exists(server) or psutil.Process(server).status() == psutil.STATUS_ZOMBIE
