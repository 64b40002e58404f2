"""`make mutate`: how many bugs would the tests catch? Mutation testing with mutmut, one module at a time.

For each module in TARGETS, a scratch copy of the course is made under build/mutate/<module>/, mutmut changes the
module in small ways (a `<` for a `<=`, a string emptied, a `+ 1` dropped: each change is a "mutant") and runs the
tests that exercise that module against each mutant. A mutant the tests notice is *killed*; one they do not notice
*survived* — a bug those tests would let through. The score is killed / (mutants - known equivalents), where an
equivalent mutant is one no test could tell apart from the original (listed, with a reason each, in
tests/mutation_equivalents.toml).

    python scripts/mutate.py                      # every module; scores printed and written to the README
    python scripts/mutate.py course_lib/tools.py --show   # one module (or several), each survivor's diff shown
    python scripts/mutate.py --list               # the modules and the tests each is measured against

Not part of `make test`: it takes minutes per module, not seconds. A module whose code, test files and shared test
set-up are byte for byte as when it was last measured (in the same scratch folder) is not measured again; --fresh
measures everything.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRATCH = ROOT / "build" / "mutate"
EQUIVALENTS = ROOT / "tests" / "mutation_equivalents.toml"
README = ROOT / "README.md"
GOAL = 0.90
BEGIN, END = "<!-- mutate:begin -->", "<!-- mutate:end -->"

# Each stage module (and the grading machinery) with the test files that exercise it in-process. Tests that only
# reach a module through a subprocess or a notebook kernel are left out: mutmut sees no call from them, and they
# would make each mutant cost seconds.
# grader.py: most of test_grading_cheats.py and test_exercises.py start Jupyter kernels or `course check`, where
# mutmut sees no call and each mutant would cost minutes; the grader's logic is measured with their in-process tests.
GRADER_CHEATS = """
test_a_plain_import_is_judged_by_its_modules_not_as_names_taken_from_one
test_the_refusal_does_not_touch_honest_answers test_a_fifo_or_a_device_is_not_read
test_round_two_ways_around_the_refusal_are_refused test_a_forged_reply_with_more_outcomes_than_cases_fails_the_notebook
test_report_lines_carry_no_terminal_control_characters
test_sqlite_cursor_methods_are_allowed_but_starting_a_program_is_not
test_round_three_ways_to_reach_a_finished_module_are_refused


test_stage_11_answers_may_not_import_the_finished_patterns
test_stage_11_answers_may_use_earlier_stages_and_the_tokenizer_the_setup_cell_hands_over


test_round_four_and_five_ways_around_the_grader_are_refused_saying_why
test_items_of_the_answer_s_own_containers_may_still_be_set

test_assemble_takes_only_the_answer_cells_and_names_each_kind_of_tampering
test_assemble_notes_added_cells_and_edited_locked_cells_and_runs_the_originals
test_assemble_stubs_a_solution_region_left_in_a_set_up_cell
test_small_helpers_name_exercises_copy_cells_and_find_sources
test_the_finished_modules_of_a_stage_are_its_own_and_every_later_one
test_solution_for_finds_the_stage_s_notebook_or_says_where_it_looked
test_each_refusal_names_what_the_answer_used test_ordinary_answer_code_is_not_refused
test_earlier_stages_are_allowed_and_the_stage_is_where_the_finished_line_is_drawn
test_judge_passes_an_exercise_only_when_nothing_is_wrong_and_gives_its_points test_judge_says_what_failed_first
test_judge_keeps_every_failing_row_and_cuts_a_long_detail
test_a_grade_passes_with_every_exercise_and_no_reason_and_adds_up_points
test_the_report_shows_notes_the_reason_and_five_failing_rows_with_hints
test_paths_in_the_report_are_relative_when_inside_the_current_folder
test_the_kernel_s_environment_has_no_keys_a_closed_proxy_and_a_scratch_home

test_the_worker_s_outcomes_are_kept_in_the_shape_asked_for test_a_reply_in_another_shape_is_dropped test_a_reply_too_large_or_not_json_or_not_a_reply_is_dropped
test_grade_builds_the_result_from_what_the_run_observed
test_grade_marks_what_a_failed_run_left_ungraded_with_its_reason
test_grade_reads_no_file_that_is_not_a_small_regular_notebook
test_grade_safely_turns_any_crash_into_a_failed_notebook_and_a_grader_error_into_a_problem
test_grade_all_keeps_the_order_regrades_what_a_dead_worker_took_and_reports_progress
test_grade_all_runs_jobs_workers_at_once test_course_check_exit_statuses_and_text_report_in_process
test_course_check_json_report_in_process
test_bare_course_check_grades_the_committed_exercise_notebook_of_the_stage
test_run_executes_every_cell_then_asks_the_worker_once_for_every_outcome
test_run_stops_at_a_cell_the_interrupt_could_not_stop_and_names_it
test_run_goes_on_after_a_timeout_the_interrupt_ended
test_run_fails_the_notebook_when_the_worker_sends_no_outcomes_or_outcomes_in_another_shape
test_run_reports_a_dead_kernel_a_kernel_that_never_started_and_capped_output
test_run_gives_the_whole_notebook_four_timeouts_and_thirty_seconds
test_the_observing_client_keeps_each_cell_s_status_and_caps_output
test_silent_requests_have_no_history_and_their_own_timeout
test_course_check_sends_each_progress_line_out_at_once_and_uses_the_solutions_folder
test_an_answer_may_import_earlier_stages_but_not_its_own_in_the_assembled_notebook
test_judge_never_passes_an_exercise_without_hidden_cases_and_gives_none_without_a_hidden_test_cell test_a_lying_worker_s_claims_count_only_against_an_answer test_an_honest_notebook_observed_as_the_worker_does_passes_and_a_stub_does_not test_grade_is_a_grader_error_when_the_hidden_cases_cannot_be_read
test_run_passes_each_cell_and_the_client_along_and_survives_a_scratch_folder_it_cannot_delete
"""
GRADER_EXERCISES = """
test_course_check_says_how_many_failing_cases_it_did_not_list
test_make_exercise_stubs_solutions_drops_hidden_tests_clears_outputs_and_adds_the_header
test_make_exercises_writes_what_is_stale_and_check_only_writes_nothing test_grade_here_is_the_grader_s_grade
"""
TARGETS: dict[str, list[str]] = {
    "course_lib/tools.py": ["tests/test_tools.py", "tests/test_agent.py"],
    "course_lib/workspace.py": ["tests/test_tools.py", "tests/test_approval.py", "tests/test_agent.py",
                                "tests/test_safety.py"],   # save() writes with write_json
    "course_lib/registry.py": ["tests/test_registry.py"],
    "course_lib/describe.py": ["tests/test_describe.py"],
    "course_lib/parsing.py": ["tests/test_parsing.py", "tests/test_thought.py", "tests/test_native.py"],
    "course_lib/dispatch.py": ["tests/test_dispatch.py", "tests/test_tools.py", "tests/test_approval.py",
                               "tests/test_agent.py"],
    "course_lib/agent.py": ["tests/test_agent.py", "tests/test_thought.py", "tests/test_chat.py"],
    "course_lib/models/native.py": ["tests/test_native.py", "tests/test_agent.py", "tests/test_chat.py",
                                    "tests/test_thought.py"],
    "course_lib/courseware/approval.py": ["tests/test_approval.py", "tests/test_tools.py"],
    "course_lib/models/base.py": ["tests/test_adapters.py", "tests/test_tool_choice.py", "tests/test_live_path.py",
                                  "tests/test_agent.py"],
    "course_lib/models/anthropic.py": ["tests/test_adapters.py", "tests/test_tool_choice.py",
                                       "tests/test_documented_payloads.py"],
    "course_lib/models/openai.py": ["tests/test_adapters.py", "tests/test_tool_choice.py",
                                    "tests/test_documented_payloads.py"],
    "course_lib/models/remote.py": ["tests/test_adapters.py", "tests/test_live_path.py", "tests/test_tool_choice.py"],
    "course_lib/models/scripted.py": ["tests/test_adapters.py", "tests/test_agent.py"],
    "course_lib/models/catalog.py": ["tests/test_catalog.py", "tests/test_adapters.py"],
    "course_lib/models/providers.py": ["tests/test_catalog.py"],
    "course_lib/safety.py": ["tests/test_safety.py"],
    "course_lib/control.py": ["tests/test_safety.py", "tests/test_memory.py"],
    "course_lib/memory.py": ["tests/test_memory.py", "tests/test_chat.py", "tests/test_safety.py"],
    "course_lib/memory_store.py": ["tests/test_memory.py"],
    "course_lib/retrieval.py": ["tests/test_retrieval.py"],
    "course_lib/planning.py": ["tests/test_planning.py"],
    "course_lib/orchestration.py": ["tests/test_orchestration.py"],
    "course_lib/structured.py": ["tests/test_structured.py"],
    "course_lib/eval_tasks.py": ["tests/test_evaluation.py"],
    "course_lib/evaluation.py": ["tests/test_evaluation.py"],
    "course_lib/mcp_bridge.py": ["tests/test_mcp.py"],
    "course_lib/mcp_client.py": ["tests/test_mcp.py"],
    "course_lib/courseware/memory_lab.py": ["tests/test_memory.py"],   # the 30-call demo, moved out of stage 10
    "course_lib/courseware/mcp_serve.py": ["tests/test_mcp.py"],   # `course mcp serve`, moved out of stage 13
    "course_lib/courseware/checks.py": ["tests/test_checks.py"],
    "course_lib/courseware/lifecycle.py": ["tests/test_catalog.py"],   # `course doctor`'s model check, once in catalog
    "course_lib/courseware/grading.py": ["tests/test_exercises.py"],
    "course_lib/courseware/grader.py": [f"tests/test_grading_cheats.py::{name}" for name in GRADER_CHEATS.split()]
                                        + [f"tests/test_exercises.py::{name}" for name in GRADER_EXERCISES.split()],
    "course_lib/courseware/notebook_marks.py": ["tests/test_notebook_marks.py"],
    "course_lib/courseware/observe.py": ["tests/test_observe.py"],   # the wire between the worker and the judge
    "course_lib/courseware/worker_lib.py": ["tests/test_worker_lib.py"],   # what the worker keeps of finished code
}

# What the scratch copy needs besides course_lib and tests: the tests read the workspace, fixtures and lessons.
COPY = ["course_lib", "tests", "conftest.py", "notebooks", "solutions", "exercises", "scripts", "README.md",
        "nbval_sanitize.cfg", "benchmarks"]

STATUS = {1: "killed", 3: "killed", 0: "survived", 5: "no tests", 33: "no tests", 34: "skipped", 36: "timeout",
          -24: "timeout", 24: "timeout", 152: "timeout", 255: "timeout", 37: "caught by type check", -11: "segfault",
          -9: "segfault", None: "not checked", 2: "interrupted"}
CAUGHT = {"killed", "timeout", "segfault", "caught by type check"}


def scratch_dir(module: str, scratch: Path = SCRATCH) -> Path:
    return scratch / module.replace("/", "_").removesuffix(".py")


def prepare(module: str, tests: list[str], scratch: Path = SCRATCH) -> Path:
    """A fresh copy of the course with a pyproject.toml that tells mutmut which module and tests to use."""
    folder = scratch_dir(module, scratch)
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    ignore = shutil.ignore_patterns("__pycache__", ".ipynb_checkpoints", "*.pyc", "agent_data", "transcripts")
    for name in COPY:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, folder / name, ignore=ignore)
        elif source.exists():
            shutil.copy2(source, folder / name)
    config = {
        "source_paths": ["course_lib"],
        "only_mutate": [module],
        "also_copy": [name for name in COPY if name not in ("course_lib", "tests")],
        # no nbval, no xdist: mutmut runs the selected tests itself, in forked workers
        "pytest_add_cli_args": ["-p", "no:cacheprovider", "-p", "no:xdist", "-q"],
        "pytest_add_cli_args_test_selection": tests,
    }
    lines = ["[tool.pytest.ini_options]", 'addopts = ""',
             'filterwarnings = ["ignore::DeprecationWarning"]', "", "[tool.mutmut]"]
    lines += [f"{key} = {json.dumps(value)}" for key, value in config.items()]
    (folder / "pyproject.toml").write_text("\n".join(lines) + "\n")
    return folder


def run_mutmut(folder: Path, jobs: int, log) -> int:
    mutmut = Path(sys.executable).with_name("mutmut")
    if not mutmut.exists():
        raise SystemExit(f"mutmut is not installed next to {sys.executable}: `make mutate` installs it (the test "
                         "extra), or `pip install -e '.[test]'`")
    env = dict(os.environ, PYTHONHASHSEED="0", PYTHONDONTWRITEBYTECODE="1")
    process = subprocess.Popen([str(mutmut), "run", "--max-children", str(jobs)], cwd=folder, env=env,
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    last = ""
    for raw in iter(lambda: process.stdout.read(256), b""):
        text = raw.decode("utf-8", "replace")
        log.write(text)
        parts = [part for part in (last + text).replace("\r", "\n").split("\n") if part.strip()]
        last = parts[-1] if parts else last
        if sys.stderr.isatty():
            sys.stderr.write("\r    " + last[:100].ljust(100))
            sys.stderr.flush()
    if sys.stderr.isatty():
        sys.stderr.write("\r" + " " * 104 + "\r")
    return process.wait()


def diffs_of(folder: Path, names: list[str]) -> dict[str, str]:
    """Each mutant's diff against the original function, read back with mutmut's own helper."""
    if not names:
        return {}
    code = ("import json, sys\n"
            "from mutmut.mutation.diff_apply import get_diff_for_mutant, find_mutant\n"
            "out = {}\n"
            "for name in json.load(sys.stdin):\n"
            "    out[name] = get_diff_for_mutant(name, path=find_mutant(name).path)\n"
            "print(json.dumps(out))\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=folder, input=json.dumps(names), capture_output=True,
                          text=True, check=True)
    return json.loads(done.stdout.splitlines()[-1])


def changed_lines(diff: str) -> tuple[str, str]:
    """The removed and the added lines of a mutant's diff, stripped (several lines joined with ' / ')."""
    removed = [line[1:].strip() for line in diff.splitlines() if line.startswith("-") and not line.startswith("---")]
    added = [line[1:].strip() for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++")]
    return " / ".join(removed), " / ".join(added)


def function_of(name: str) -> str:
    """`course_lib.tools.xǁClassǁmethod__mutmut_3` -> `Class.method`; `course_lib.tools.x_calculator__mutmut_7` ->
    `calculator`."""
    mangled = name.rsplit(".", 1)[-1].rsplit("__mutmut_", 1)[0]
    if mangled.startswith("xǁ"):
        return ".".join(part for part in mangled[2:].split("ǁ") if part)
    return mangled.removeprefix("x_")


def load_equivalents(paths: list[Path] = (EQUIVALENTS,)) -> list[dict]:
    entries = []
    for path in paths:
        if Path(path).exists():
            entries += tomllib.loads(Path(path).read_text()).get("equivalent", [])
    return entries


def is_equivalent(module: str, name: str, diff: str, equivalents: list[dict]) -> dict | None:
    before, after = changed_lines(diff)
    for entry in equivalents:
        if (entry["module"] == module and entry["function"] == function_of(name)
                and entry["before"] == before and entry["after"] == after):
            return entry
    return None


def unchanged(module: str, folder: Path) -> bool:
    """Does the scratch copy hold the module, its tests and the shared test set-up exactly as they are now, and was
    it told to use the same tests?"""
    try:
        told = tomllib.loads((folder / "pyproject.toml").read_text())["tool"]["mutmut"]
        files = [module, "conftest.py", *sorted({test.split("::")[0] for test in TARGETS[module]})]
        return (told["pytest_add_cli_args_test_selection"] == TARGETS[module]
                and all((folder / name).read_bytes() == (ROOT / name).read_bytes() for name in files))
    except (OSError, KeyError, tomllib.TOMLDecodeError):
        return False


def statuses_in(folder: Path, module: str) -> dict[str, str]:
    meta_file = folder / "mutants" / (module + ".meta")
    return {name: STATUS.get(code, "suspicious")
            for name, code in json.loads(meta_file.read_text())["exit_code_by_key"].items()}


def mutants_of(module: str, jobs: int, scratch: Path, fresh: bool) -> tuple[dict, dict, float | None, bool]:
    """Every mutant's status and the missed ones' diffs: measured, or read back from the last measurement in the
    scratch copy if it was complete and nothing it depends on has changed since (unless ``fresh``)."""
    folder = scratch_dir(module, scratch)
    reused = False
    if not fresh and unchanged(module, folder) and (folder / "mutants" / (module + ".meta")).exists():
        statuses = statuses_in(folder, module)
        reused = bool(statuses) and "not checked" not in statuses.values()
    started = time.monotonic()
    if not reused:
        folder = prepare(module, TARGETS[module], scratch)
        with open(folder / "mutmut.log", "w") as log:
            code = run_mutmut(folder, jobs, log)
        if code != 0 or not (folder / "mutants" / (module + ".meta")).exists():
            tail = (folder / "mutmut.log").read_text(errors="replace").replace("\r", "\n").splitlines()[-15:]
            raise SystemExit(f"mutmut failed on {module} (exit {code}); the end of {folder / 'mutmut.log'}:\n"
                             + "\n".join(tail))
        statuses = statuses_in(folder, module)
    diffs = diffs_of(folder, [name for name, status in statuses.items() if status not in CAUGHT])
    return statuses, diffs, None if reused else round(time.monotonic() - started, 1), reused


def measure(module: str, jobs: int, show: bool, equivalent_files: list[Path] = (EQUIVALENTS,),
            scratch: Path = SCRATCH, fresh: bool = True) -> dict:
    statuses, diffs, seconds, reused = mutants_of(module, jobs, scratch, fresh)
    missed = sorted((name for name, status in statuses.items() if status not in CAUGHT),
                    key=lambda n: (function_of(n), int(n.rsplit("_", 1)[-1])))
    equivalents = load_equivalents(equivalent_files)
    equivalent = [name for name in missed if is_equivalent(module, name, diffs[name], equivalents)]
    survivors = [name for name in missed if name not in equivalent]
    counted = len(statuses) - len(equivalent)
    caught = counted - len(survivors)
    result = {"module": module, "tests": TARGETS[module], "mutants": len(statuses), "equivalent": len(equivalent),
              "caught": caught, "survived": len(survivors), "score": caught / counted if counted else 1.0,
              "seconds": seconds, "reused": reused,
              "survivors": {name: {"status": statuses[name], "diff": diffs[name]} for name in survivors}}
    (scratch_dir(module, scratch) / "result.json").write_text(json.dumps(result, indent=1, ensure_ascii=False))
    if show:
        for name in survivors:
            print(f"\n## {name} ({statuses[name]})\n{diffs[name]}")
    return result


def against(tests: list[str]) -> str:
    """The tests, or for tests named one by one, how many and from which files."""
    files = sorted({test.split("::")[0] for test in tests})
    return " ".join(tests) if files == sorted(tests) else f"{len(tests)} tests from {' '.join(files)}"


def table(results: list[dict]) -> str:
    rows = ["| Module | Mutants | Known equivalent | Caught | Survived | Score |", "|---|---:|---:|---:|---:|---:|"]
    for r in results:
        mark = "" if r["score"] >= GOAL else " (below 90 %)"
        rows.append(f"| `{r['module']}` | {r['mutants']} | {r['equivalent']} | {r['caught']} | {r['survived']} "
                    f"| {r['score']:.1%}{mark} |")
    return "\n".join(rows)


def write_readme(results: list[dict]) -> None:
    text = README.read_text()
    if BEGIN not in text or END not in text:
        raise SystemExit(f"README.md has no {BEGIN} ... {END} block to write the scores into")
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    README.write_text(f"{head}{BEGIN}\n{table(results)}\n{END}{tail}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("modules", nargs="*", help="modules to measure (default: all of them)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="mutants tested at once")
    parser.add_argument("--list", action="store_true", help="list the modules and their tests, then stop")
    parser.add_argument("--equivalents", type=Path, action="append", default=[EQUIVALENTS], metavar="FILE",
                        help="another list of known equivalent mutants (TOML, as tests/mutation_equivalents.toml)")
    parser.add_argument("--scratch", type=Path, default=SCRATCH, metavar="FOLDER",
                        help="where the scratch copies go (default: build/mutate)")
    parser.add_argument("--fresh", action="store_true",
                        help="measure every module again, even one whose code and tests are as last measured")
    parser.add_argument("--show", action="store_true", help="print each survivor's diff")
    parser.add_argument("--no-readme", action="store_true", help="do not write the scores into README.md")
    args = parser.parse_args(argv)
    args.scratch = args.scratch.resolve()
    if args.list:
        for module, tests in TARGETS.items():
            print(f"{module}: {' '.join(tests)}")   # every test, so the list can be pasted into pytest
        return 0
    unknown = [m for m in args.modules if m not in TARGETS]
    if unknown:
        parser.error(f"not a measured module: {', '.join(unknown)} (see --list)")
    modules = args.modules or list(TARGETS)
    results = []
    for number, module in enumerate(modules, 1):
        print(f"[{number}/{len(modules)}] {module} against {against(TARGETS[module])}", flush=True)
        result = measure(module, args.jobs, show=args.show, equivalent_files=args.equivalents,
                         scratch=args.scratch, fresh=args.fresh)
        results.append(result)
        print(f"    {result['score']:.1%}: {result['caught']} of {result['mutants'] - result['equivalent']} caught "
              f"({result['equivalent']} known equivalent, {result['survived']} survived) "
              + ("as last measured: code and tests unchanged" if result["reused"] else f"in {result['seconds']} s"),
              flush=True)
    print("\n" + table(results))
    if not args.modules and not args.no_readme:
        write_readme(results)
        print("\nWritten to README.md.")
    below = [r["module"] for r in results if r["score"] < GOAL]
    if below:
        print(f"\nBelow {GOAL:.0%}: {', '.join(below)}. Survivors: {args.scratch}/<module>/result.json")
    return 1 if below else 0


if __name__ == "__main__":
    sys.exit(main())
