"""The cases behind each exercise's ``check()``, one module per stage (``stage01``, ``stage02``, …).

Each module has ``EXERCISES``: exercise id ("01.1") → ``Exercise(title, cases)``. The cases call the
learner's code the way the exercise text says it will be called, so reading them is allowed: they show
what "done" means, and the hidden tests in the solution notebooks check more. Together the cases cover
every rule the exercise text states, and every case has a hint of its own, shown under a failed row.
"""
