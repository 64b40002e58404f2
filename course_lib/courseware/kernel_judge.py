"""What the grader runs inside a submission's kernel: the reset before each trusted cell, and the judge at the end.

``reset`` undoes what a submission may have installed in the shell (event hooks, custom exception handlers, AST
and input transformers, printers, patched shell methods, tracers). ``judge`` resets, reloads ``json`` and the
exercise checks from their read-only source (a patched ``dumps`` or ``run_cases`` is gone), re-runs each exercise's
cases on the answer the notebook defined, and gives the findings as JSON text.

The grader sends this module's *source* into the kernel (``grader.RESET`` and ``grader.JUDGE``, each followed by
its call), where it runs with the real builtins in a fresh namespace of its own, through a silent request's
``user_expressions``. It is never imported there, so an answer can neither import it (the refusal forbids
``course_lib.courseware``) nor patch it before it runs. Imported normally, as the tests do, its functions work on
the shell they are given. No ``from __future__`` line: the source is sent after other lines.
"""
import importlib
import sys
import threading

OWN_HOOKS = ("IPython", "ipykernel", "matplotlib", "matplotlib_inline")   # whose event hooks stay
SHELL_METHODS = ("transform_cell", "transform_ast", "run_cell", "run_cell_async", "_run_cell", "run_ast_nodes",
                 "run_code", "should_run_async", "ex", "ev")   # a patch of these on the shell instance is removed


def _shell(ip):
    """The shell given, or the running kernel's."""
    if ip is None:
        import IPython
        ip = IPython.get_ipython()
    return ip


def reset(ip=None) -> str:
    """Put the shell back as IPython made it and stop any tracer or profiler; returns "reset"."""
    from IPython.core.inputtransformer2 import TransformerManager
    ip = _shell(ip)
    ip.set_custom_exc((), None)
    for hooks in ip.events.callbacks.values():   # keep IPython's and the kernel's own hooks only
        hooks[:] = [h for h in hooks if str(getattr(h, "__module__", "")).split(".")[0] in OWN_HOOKS]
    ip.ast_transformers[:] = []
    ip.input_transformers_post[:] = []
    ip.input_transformer_manager = TransformerManager()   # cleanup, line and token transformers as IPython made them
    for formatter in ip.display_formatter.formatters.values():   # printers registered for str, dict, ...
        formatter.type_printers.clear()
        formatter.deferred_printers.clear()
        formatter.singleton_printers.clear()
    for _name in SHELL_METHODS:   # the shell's own methods, not an instance's patch
        vars(ip).pop(_name, None)
    sys.settrace(None)
    sys.setprofile(None)
    sys.excepthook = sys.__excepthook__
    threading.settrace(None)
    threading.setprofile(None)
    return "reset"


def findings(namespace: dict, candidates: dict, may_use: dict, borrows, run_cases) -> dict:
    """For each exercise, what the answer named in ``candidates`` is: defined, its module, what finished code it
    borrows (``borrows(answer, names it may use)``) and its cases' result (``run_cases(exercise, answer)``)."""
    found = {}
    for exercise, name in candidates.items():
        missing = name not in namespace
        candidate = namespace.get(name)
        found[exercise] = {"defined": not missing, "module": str(getattr(candidate, "__module__", "") or ""),
                           "borrows": None if missing else borrows(candidate, set(may_use.get(exercise, ()))),
                           "result": None if missing else run_cases(exercise, candidate).as_dict()}
    return found


def judge(stage: str, candidates: dict, may_use: dict, borrows, ip=None) -> str:
    """Reset the shell, then judge the answers in its namespace with json and the checks fresh from their source."""
    ip = _shell(ip)
    reset(ip)
    import json
    import json.encoder
    importlib.reload(json.encoder)   # fresh from the standard library's source: a patched dumps or encoder is gone
    json = importlib.reload(json)
    importlib.reload(importlib.import_module("course_lib.courseware.exercises.stage" + stage))
    checks = importlib.reload(importlib.import_module("course_lib.courseware.checks"))   # from the read-only source
    found = findings(ip.user_ns, candidates, may_use, borrows, checks.run_cases)
    return json.dumps(found, ensure_ascii=False, default=str)
