"""The course's own machinery, apart from the stage modules: what runs the lessons and the exercises.

``checks`` (the ``check()`` cells) and ``exercises/`` (each exercise's cases), ``grading`` and ``grader`` (making
exercise notebooks and grading them, ``course check``) with ``sandbox`` (where graded code runs), ``widgets``
and ``plots`` (what the notebooks show), ``cli`` (the ``course`` command) and ``livecheck`` (``course
live-check``). None of it is part of the agent a learner builds: ``ls course_lib/`` reads as the stage map.
"""
