"""The README's stage map matches the notebooks and modules that exist, and shows the two commands."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def stage_rows():
    section = README.split("## Stage map", 1)[1].split("\n## ", 1)[0]
    return [line for line in section.splitlines() if re.match(r"\|\s*\d\d[a-z]?\s*\|", line)]


def test_the_two_commands_are_documented():
    assert "make lab" in README and "make test" in README


def test_stage_rows_are_in_order():
    numbers = [int(re.match(r"\|\s*(\d\d)", row)[1]) for row in stage_rows()]
    assert numbers == sorted(numbers) and numbers[:9] == list(range(9))


def test_every_linked_file_in_the_stage_map_exists():
    links = [link for row in stage_rows() for link in re.findall(r"\]\(([^)]+)\)", row)]
    assert links, "the stage map links its notebooks and modules"
    missing = [link for link in links if not (ROOT / link).exists()]
    assert not missing, f"the README links files that do not exist: {missing}"


def test_every_notebook_and_stage_module_is_in_the_stage_map():
    table = "\n".join(stage_rows())
    notebooks = sorted(p.relative_to(ROOT).as_posix() for p in (ROOT / "notebooks").glob("[0-9][0-9]*_*.ipynb"))
    modules = ["course_lib/tools.py", "course_lib/registry.py", "course_lib/describe.py",
               "course_lib/parsing.py", "course_lib/dispatch.py", "course_lib/agent.py",
               "course_lib/models/scripted.py", "course_lib/safety.py", "course_lib/memory.py"]
    absent = [path for path in notebooks + modules if f"]({path})" not in table]
    assert not absent, f"missing from the README's stage map: {absent}"


def test_notebook_numbers_match_their_rows():
    for row in stage_rows():
        number = re.match(r"\|\s*(\d\d[a-z]?)", row)[1]
        for link in re.findall(r"\]\((notebooks/[^)]+)\)", row):
            assert Path(link).name.startswith(number + "_"), f"{link} is in row {number}"


def test_every_exercise_notebook_is_linked_from_its_stage_row():
    table = "\n".join(stage_rows())
    for path in sorted((ROOT / "exercises").glob("[0-9][0-9]_*_exercises.ipynb")):
        row = next(r for r in stage_rows() if re.match(rf"\|\s*{path.name[:2]}[a-z]?\s*\|", r))
        assert f"](exercises/{path.name})" in row, f"{path.name} is not linked in row {path.name[:2]}"
    assert "exercises/" in table


def test_the_stage_09_and_10_figures_are_what_the_code_measures():
    """The README's injection table and token figures, recomputed from real Agent runs (scripted, offline)."""
    from course_lib.courseware.injection_lab import attack_table, success_rates
    from course_lib.courseware.memory_lab import context_growth_data
    rates = {(r["model"], r["defence"]): r for r in success_rates(attack_table())}
    order = ["none", "marking", "least privilege", "policy", "all three"]
    for model in ("gullible", "careful"):
        cells = " | ".join(str(rates[model, d]["landed"]) for d in order)
        assert f"| {model} | {cells} |" in README, f"the README's row for the {model} reader"
        assert all(rates[model, d]["attacks"] == 9 for d in order)
    assert "Attacks that landed, of 9:" in README
    data = context_growth_data()
    plain, window, summary = data["no trimming"], data["window"], data["summary"]
    assert len(plain) == len(window) == len(summary) == 30
    flat = " ".join(README.split())
    assert f"sends {sum(plain):,} estimated input tokens in all with no trimming" in flat
    assert f"({plain[-1]:,} at the last call)" in flat and f"{sum(window):,} with a window of the last 4 steps" in flat
    assert f"(flat at {window[-1]} per call)" in flat and f"{sum(summary):,} when summarised above 800 tokens" in flat


def test_the_stage_11_and_12_figures_are_what_the_code_measures():
    """Recall@3 over the labelled questions and the stand-ins' pass rates, recomputed (offline, scripted)."""
    import os
    from course_lib import evaluation as ev
    from course_lib.courseware import eval_lab
    from course_lib.courseware.patterns_lab import load_questions, recall_at_k
    from course_lib.retrieval import Index
    here = os.getcwd()
    try:
        os.chdir(ROOT / "notebooks" / "workspace")
        index, questions = Index.from_workspace("."), load_questions()
        measured = recall_at_k(index, questions, 3)
        kinds = {kind: recall_at_k(index, [q for q in questions if q["kind"] == kind], 3) for kind in
                 ("direct", "paraphrase", "cross-language")}
    finally:
        os.chdir(here)
    flat = " ".join(README.split())
    found = round(measured["overall"] * measured["questions"])
    assert (f"top three for {found} of {measured['questions']} labelled questions (recall@3 {measured['overall']:.3f}: "
            f"English {measured['en']:.3f}, Korean {measured['ko']:.3f})") in flat
    said = [f"{round(kinds[k]['overall'] * kinds[k]['questions'])} of {kinds[k]['questions']}" for k in kinds]
    assert (f"{said[0]} that use the answer's words, {said[1]} paraphrases, {said[2]} asked in the other "
            "language") in flat
    tasks = ev.load_tasks()
    rates = {name: ev.summarise(ev.run_suite(tasks, getattr(eval_lab, name), jobs=4)) for name in ("careful", "sloppy",
                                                                                               "looping")}
    assert (f"the three scripted stand-ins pass {rates['careful']['passed']}/{len(tasks)} (careful), "
            f"{rates['sloppy']['passed']}/{len(tasks)} (sloppy) and {rates['looping']['passed']}/{len(tasks)} "
            "(looping)") in flat
