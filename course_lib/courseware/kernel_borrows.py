"""Does an answer borrow course_lib's finished code? The judge's look into what an answer reaches, in the kernel.

What an answer reaches: the globals its code names (nested functions and comprehensions too), its defaults, its
closure, a partial's function, a class's bases and members. The first finished object of this stage or a later
one (``FINISHED``, the modules ``grader.finished`` names) is the answer's borrowing, however it got there: a
wrapper, a default, an alias.

The grader sends this module's *source* into the submission's kernel (``grader.BORROWS``), after a line that sets
``FINISHED``; there it runs in a fresh namespace with the real builtins and is never imported, so an answer can
neither import it (the refusal forbids ``course_lib.courseware``) nor patch it first. Imported normally, as the
tests do, it reads the ``FINISHED`` they set on the module. No ``from __future__`` line: the source is sent after
other lines.
"""
import functools
import sys
import types

FINISHED = globals().get("FINISHED", set())   # sent: the grader's line above set it; imported: none until set


def _borrows(obj, may_use, seen=None):
    """Where ``obj`` uses a finished object whose name is not in ``may_use``, as "module.name", or None."""
    seen = set() if seen is None else seen
    if id(obj) in seen or len(seen) > 5000:
        return None
    seen.add(id(obj))
    if isinstance(obj, types.ModuleType):
        return obj.__name__ if obj.__name__ in FINISHED or obj.__name__ == "course_lib" else None
    module, name = str(getattr(obj, "__module__", "") or ""), str(getattr(obj, "__name__", "") or "")
    record = isinstance(obj, type) and (issubclass(obj, BaseException) or hasattr(obj, "__dataclass_fields__"))
    if module in FINISHED and name not in may_use and callable(obj) and not record:   # errors, records: shared
        return f"{module}.{getattr(obj, '__qualname__', name)}"
    kind = type(obj)   # an instance of a finished class (a prepared Taint, a MemoryStore) does its work too
    if kind.__module__ in FINISHED and kind.__name__ not in may_use and not hasattr(kind, "__dataclass_fields__") \
            and not isinstance(obj, BaseException):
        return f"{kind.__module__}.{kind.__qualname__} (an instance)"
    reach = []
    if isinstance(obj, functools.partial):
        reach = [obj.func, *obj.args, *obj.keywords.values()]
    elif isinstance(obj, types.MethodType):
        reach = [obj.__func__, obj.__self__]
    elif isinstance(obj, (staticmethod, classmethod)):
        reach = [obj.__func__]
    elif isinstance(obj, type) and module == "__main__":
        reach = [*obj.__bases__, *vars(obj).values()]
    elif isinstance(obj, types.FunctionType) and module == "__main__":
        codes, names = [obj.__code__], set()
        while codes:
            code = codes.pop()
            names.update(code.co_names)
            codes += [c for c in code.co_consts if isinstance(c, types.CodeType)]
        reach = [obj.__globals__[n] for n in sorted(names) if n in obj.__globals__]
        reach += list(obj.__defaults__ or ()) + list((obj.__kwdefaults__ or {}).values())
        reach += [c.cell_contents for c in obj.__closure__ or () if c.cell_contents is not c]
    elif module and callable(obj) and module != "__main__" and module.split(".")[0] not in sys.stdlib_module_names \
            and module.split(".")[0] != "course_lib":   # exec'd or third-party code (the course's: see above)
        return f"{module}.{name} (code from outside the notebook)"
    elif type(obj).__module__ == "__main__" and hasattr(obj, "__dict__"):   # an instance holding the borrowing
        reach = [type(obj), *vars(obj).values()]
    elif isinstance(obj, (list, tuple, set, frozenset)):
        reach = list(obj)[:1000]
    elif isinstance(obj, dict):
        reach = list(obj.values())[:1000]
    for item in reach:
        try:
            found = _borrows(item, may_use, seen)
        except Exception:   # an object that cannot be looked into is not the course's
            found = None
        if found:
            return found
    return None
