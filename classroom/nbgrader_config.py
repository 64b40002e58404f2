"""nbgrader's settings for the classroom hub: the instructor's course folder and every student's server read it.

The course is "agent-course"; assignments move through CLASSROOM_DIR/exchange. On a real hub, where each user is
a system user, nbgrader takes the student ID from the system; here every server runs as one system user, so the
ID is the hub's user name (JUPYTERHUB_USER), which the hub sets in each server.
"""
import os
from pathlib import Path

c = get_config()  # noqa: F821 (nbgrader provides it)
here = Path(os.environ["CLASSROOM_DIR"])
c.CourseDirectory.course_id = "agent-course"
c.Exchange.root = str(here / "exchange")
user = os.environ.get("JUPYTERHUB_USER")
if user and user != os.environ.get("CLASSROOM_INSTRUCTOR", "instructor"):
    c.CourseDirectory.student_id = user   # a student's server: fetched work lands in its own home folder
else:
    c.CourseDirectory.root = str(here / "course")   # the instructor's: the course folder
