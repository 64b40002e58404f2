"""A class's worth of submissions, graded in one run: how long `course check` takes at class scale.

    python benchmarks/class_grading.py [--students 200] [--jobs 4]

Writes the submissions in nbgrader's layout (submitted/<student>/ps04/04_parsing_replies_exercises.ipynb, as
`nbgrader collect` leaves them, or classroom/README.md's hub), a quarter of each kind: every answer right, 04.3
left as handed out, 04.1 answered wrongly (a JSON array accepted as an action), and the notebook untouched. Then it
runs `course check 04 --json --jobs N` on all of them, as an instructor would, checks every verdict against the
kind, and prints the time.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = "04_parsing_replies_exercises.ipynb"


def answers() -> dict[str, str]:
    """The solution's answer cells, by nbgrader grade_id."""
    solution = json.loads((ROOT / "solutions" / NOTEBOOK).read_text(encoding="utf-8"))
    return {c["metadata"]["nbgrader"]["grade_id"]: "".join(c["source"]) for c in solution["cells"]
            if c["metadata"].get("nbgrader", {}).get("solution")}


def fill(notebook: dict, given: dict[str, str], leave=()) -> dict:
    """``notebook`` (as handed out) with each answer cell written as ``given`` has it, except those in ``leave``."""
    for cell in notebook["cells"]:
        grade_id = cell["metadata"].get("nbgrader", {}).get("grade_id")
        if grade_id in given and grade_id not in leave:
            cell["source"] = given[grade_id]
    return notebook


def submission(kind: str, given: dict[str, str]) -> dict:
    """The handed-out notebook with the answers of ``kind`` written in."""
    if kind == "wrong 04.1":   # a JSON array passes as an action
        given = {**given, "ex04_1": given["ex04_1"].replace(
            "### BEGIN SOLUTION\n", "### BEGIN SOLUTION\n    if isinstance(data, list):\n        return None\n")}
    leave = {"untouched": set(given), "no 04.3": {"ex04_3"}}.get(kind, set())
    return fill(json.loads((ROOT / "exercises" / NOTEBOOK).read_text(encoding="utf-8")), given, leave)


EXPECTED = {"right": {"04.1": True, "04.2": True, "04.3": True}, "no 04.3": {"04.1": True, "04.2": True, "04.3": False},
            "wrong 04.1": {"04.1": False, "04.2": True, "04.3": True},
            "untouched": {"04.1": False, "04.2": False, "04.3": False}}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--students", type=int, default=200)
    parser.add_argument("--jobs", type=int, default=4)
    args = parser.parse_args(argv)
    kinds = list(EXPECTED)
    with tempfile.TemporaryDirectory() as folder:
        paths, kind_of, given = [], {}, answers()
        for i in range(args.students):
            student, kind = f"student{i + 1:03}", kinds[i % len(kinds)]
            path = Path(folder) / "submitted" / student / "ps04" / NOTEBOOK
            path.parent.mkdir(parents=True)
            path.write_text(json.dumps(submission(kind, given)), encoding="utf-8")
            paths.append(str(path))
            kind_of[student] = kind
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "course_lib.courseware.cli", "check", "04", "--json", "--jobs",
                               str(args.jobs), *paths], capture_output=True, text=True, cwd=folder)
        seconds = time.perf_counter() - start
    report = json.loads(done.stdout)
    wrong = [(r["notebook"], kind_of[Path(r["notebook"]).parts[-3]]) for r in report["notebooks"]
             if {e["exercise"]: e["passed"] for e in r["exercises"]} != EXPECTED[kind_of[Path(r["notebook"]).parts[-3]]]]
    if wrong or len(report["notebooks"]) != args.students:
        print(f"verdicts that do not match their kind: {wrong[:5]}", file=sys.stderr)
        return 1
    print(f"course check 04 --jobs {args.jobs}: {args.students} submissions graded in {seconds:.0f} s "
          f"({seconds / args.students:.2f} s each), every verdict as expected")
    return 0


if __name__ == "__main__":
    sys.exit(main())
