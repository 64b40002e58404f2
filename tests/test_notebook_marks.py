"""The nbgrader markers and cell metadata, as course_lib.courseware.notebook_marks reads them for both
`course make-exercises` (grading.py) and `course check` (grader.py)."""
import nbformat

from course_lib.courseware import grader, grading
from course_lib.courseware.notebook_marks import HIDDEN, MARKER, SOLUTION, grade_id, stub


def test_a_solution_region_becomes_a_stub_at_its_own_indentation():
    source = "def f(x):\n    ### BEGIN SOLUTION\n    return x\n    ### END SOLUTION\n\ny = 1"
    assert SOLUTION.sub(stub, source) == "def f(x):\n    # YOUR CODE HERE\n    raise NotImplementedError()\n\ny = 1"
    assert SOLUTION.sub(stub, "### BEGIN SOLUTION\nx = 1\n### END SOLUTION") == \
        "# YOUR CODE HERE\nraise NotImplementedError()\n"


def test_hidden_tests_and_markers_are_found():
    source = "check()\n### BEGIN HIDDEN TESTS\nassert f(1) == 1\n### END HIDDEN TESTS\n"
    assert HIDDEN.sub("", source) == "check()\n"
    assert MARKER.search("## BEGIN SOLUTION") and MARKER.search("#END HIDDEN TESTS") and not MARKER.search("BEGIN")


def test_a_cell_s_grade_id_is_its_nbgrader_metadata_or_nothing():
    cell = nbformat.v4.new_code_cell("x = 1", metadata={"nbgrader": {"grade_id": "ex04_1", "solution": True}})
    assert grade_id(cell) == "ex04_1"
    assert grade_id(nbformat.v4.new_code_cell("")) == "" and grade_id({"metadata": {"nbgrader": {}}}) == ""
    assert grade_id({"cell_type": "code"}) == ""


def test_the_grader_and_make_exercises_read_the_same_marks():
    assert grader.SOLUTION is grading.SOLUTION is SOLUTION and grader.ROOT == grading.ROOT
    assert grader._grade_id is grading._grade_id is grade_id and grader._stub is grading._stub is stub
