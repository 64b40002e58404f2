"""`course check` when a kernel cannot be interrupted: in a file of its own, so pytest-xdist can run its ~20 s
beside the other grading tests instead of after them."""
from test_grading_cheats import ROOT, cell, grade, load, save


def test_a_kernel_stuck_inside_a_regular_expression_is_reported_with_the_cell_that_ran(tmp_path):
    """A learner's `\\{.*\\}` answer to 11.3 backtracks for minutes on a million `{`, inside `re`, where an interrupt
    cannot reach: the report names the cell it was stuck in, so the learner knows which exercise to look at."""
    nb = load(ROOT / "exercises" / "11_agent_patterns_exercises.ipynb")
    cell(nb, "ex11_3").source = ("import json, re\ndef parse_verdict(text):\n"
                                 "    found = re.search(r'\\{.*\\}', text, re.S) if isinstance(text, str) else None\n"
                                 "    try:\n        data = json.loads(found.group()) if found else None\n"
                                 "    except ValueError:\n        return None\n"
                                 "    return data if isinstance(data, dict) and isinstance(data.get('ok'), bool) else None\n")
    g = grade(save(nb, tmp_path, "regex11"), "11", timeout=6)
    assert "the kernel was still busy 6 s after cell 'ex11_3_check' was interrupted" in g.reason, g.reason
