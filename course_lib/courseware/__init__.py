"""The course's own machinery, apart from the stage modules: what runs the lessons and the exercises.

``checks`` (the ``check()`` cells) and ``exercises/`` (each exercise's cases); ``grading`` and ``grader`` (making
exercise notebooks and grading them, ``course check``) with ``sandbox`` (where graded code runs), ``notebook_marks``
(the cell marks both read), ``kernel_judge`` and ``kernel_borrows`` (code the grader sends into a kernel, as source);
``widgets``, ``plots`` and ``approval`` (what the notebooks show and ask); ``standin`` (the local provider stand-in
server); the scripts and labs (``scenarios``, ``injection_lab``, ``memory_lab``, ``patterns_lab``, ``eval_lab``);
``cli`` (the ``course`` command) with ``livecheck``, ``lifecycle`` and ``mcp_serve``. None of it is part of the
agent a learner builds, and no stage module imports it: ``ls course_lib/`` reads as the stage map.
"""
