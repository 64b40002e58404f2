"""The course_lib a submission's worker sees: nothing finished to borrow.

An answer to an exercise of stage NN may use the earlier stages, and what the exercise hands over on purpose; it
may not use the finished version of its own stage or of a later one. ``cut(stage)`` gives, for every such module
(``grader.finished``), the source the worker gets instead: only the names the notebook's set-up cells, the
stage's public cases module and the exercise's ``MAY_USE`` need, with what those names need in turn (found by
reading the code, to a fixed point); every other function and class is simply not there. Borrowing then fails
the ordinary way, with ImportError or AttributeError, whatever route it takes: no list of tricks is involved.
An installed package that would do an exercise's work (the stage module's ``ABSENT``: rank_bm25 for 11.1,
pydantic's strict validation for 05.1) is replaced the same way, by a module that raises ImportError (``absent``).

The sandbox (bubblewrap) binds each cut source over the original file and hides the ``__pycache__`` folders, so
the original cannot be read either. Without bubblewrap the files cannot be replaced, and the report says the
notebook ran NOT isolated.
"""
from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1]   # course_lib/
PLACEHOLDER = "# Cut while this stage is graded: what an answer writes itself is not here.\n"


def _file(module: str) -> Path | None:
    parts = module.split(".")
    if parts[0] != "course_lib":
        return None
    base = PACKAGE.joinpath(*parts[1:])
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    return None


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(encoding="utf-8"))


def _absolute(module: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module
    package = module.split(".")[: -node.level] if not _file(module).name == "__init__.py" else \
        module.split(".")[: len(module.split(".")) - node.level + 1]
    return ".".join(package + ([node.module] if node.module else []))


def _run_on_import(tree: ast.AST):
    """The nodes that run when a module is imported: not the bodies of its functions."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            todo += list(ast.iter_child_nodes(node))


def imports(module: str, tree: ast.AST, nested: bool = True) -> list[tuple[str, str | None]]:
    """(module, name) for each ``from M import name`` in ``tree`` (only those that run on import, unless
    ``nested``); a submodule imported as a module (``from . import tools``) gives one pair per attribute the code
    reads from it (``tools.calculator``), or (that module, None) where the module itself is passed around."""
    found = []
    nodes = ast.walk(tree) if nested else _run_on_import(tree)
    for node in nodes:
        if isinstance(node, ast.Import):
            found += [(a.name, None) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            source = _absolute(module, node)
            for alias in node.names:
                sub = f"{source}.{alias.name}"
                found += _attributes(tree, sub, alias.asname or alias.name) if _file(sub) else [(source, alias.name)]
    return [(m, n) for m, n in found if m.split(".")[0] == "course_lib"]


def _attributes(tree: ast.AST, module: str, bound: str) -> list[tuple[str, str | None]]:
    """What the code reads from the module bound to the name ``bound``: (module, attribute) pairs."""
    read = [n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
            and n.value.id == bound]
    bases = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    bare = [n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == bound and id(n) not in bases]
    return [(module, None)] if bare else [(module, a) for a in read]


def _defines(statement: ast.stmt) -> set[str]:
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return {statement.name}
    if isinstance(statement, (ast.Import, ast.ImportFrom)):
        return {(a.asname or a.name).split(".")[0] for a in statement.names}
    names = set()
    for node in ast.walk(statement):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
    return names


def _uses(statement: ast.stmt) -> set[str]:
    return {n.id for n in ast.walk(statement) if isinstance(n, ast.Name)}


def _lazy(tree: ast.Module) -> dict[str, str]:
    """A package's ``_LAZY`` / ``_EXPORTS`` table (name → module, relative), if it has one."""
    for statement in tree.body:
        if isinstance(statement, ast.Assign) and any(isinstance(t, ast.Name) and t.id in ("_LAZY", "_EXPORTS")
                                                     for t in statement.targets):
            return {k: v for k, v in ast.literal_eval(statement.value).items()}
    return {}


def _withheld(name: str) -> str:
    """What a name withheld from this exercise is in the worker: a class or function that refuses to work."""
    why = f"{name}: this exercise asks you to write it"   # the whole message fits a check() row
    return (f"class {name}:\n    def __init__(self, *args, **kwargs):\n        raise LookupError({why!r})\n"
            if name[:1].isupper() else f"def {name}(*args, **kwargs):\n    raise LookupError({why!r})\n")


def _slice(module: str, tree: ast.Module, names: set[str], withheld: frozenset = frozenset()):
    """The source of ``module`` cut to ``names`` and what they depend on (a ``withheld`` name becomes a stand-in
    that raises); and the imports that cut keeps."""
    body = [s for s in tree.body if not (_defines(s) & withheld and not isinstance(s, (ast.Import, ast.ImportFrom)))]
    stand_ins = sorted(names & withheld & set().union(*[_defines(s) for s in tree.body if not isinstance(
        s, (ast.Import, ast.ImportFrom))]))
    docstring = body[:1] if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
        else []
    wanted, kept = set(names), set()
    lazy = _lazy(tree)
    if wanted & set(lazy):
        wanted.add("__getattr__")   # which brings the table and import_module with it
    changed = True
    while changed:
        changed = False
        for i, statement in enumerate(body):
            if i in kept or statement in docstring:
                continue
            future = isinstance(statement, ast.ImportFrom) and statement.module == "__future__"
            if future or _defines(statement) & wanted:
                kept.add(i)
                wanted |= _uses(statement)
                changed = True
    out = []
    for i, statement in enumerate(body):
        if i not in kept:
            continue
        if isinstance(statement, (ast.Import, ast.ImportFrom)) and not (
                isinstance(statement, ast.ImportFrom) and statement.module == "__future__"):
            statement = type(statement)(**{**statement.__dict__, "names": [
                a for a in statement.names if (a.asname or a.name).split(".")[0] in wanted]})
        elif isinstance(statement, ast.Assign) and {"_LAZY", "_EXPORTS"} & _defines(statement):   # its names only
            table = {k: v for k, v in ast.literal_eval(statement.value).items() if k in names}
            statement = ast.copy_location(ast.Assign(statement.targets, ast.parse(repr(table), mode="eval").body),
                                          statement)
        out.append(statement)
    cut = ast.Module(docstring + out, [])
    needed = set(imports(module, cut))
    for name in set(names) & set(lazy):
        target = lazy[name]
        needed.add((f"{module}{target}" if target.startswith(".") else f"{module}.{target}", name))
    return PLACEHOLDER + ast.unparse(cut) + "\n" + "".join(_withheld(n) for n in stand_ins), needed


def cut(stage: str, finished: set[str], roots: set[tuple[str, str | None]], withheld: frozenset = frozenset()):
    """For each finished module (of ``finished``) the source the worker gets, from the names ``roots`` needs:
    (module, name) pairs, or (module, None) for a module used whole (a module kept whole may not be finished:
    the caller's cases module, checks, an earlier stage). Kept-whole modules are followed too. A ``withheld``
    name (the finished version of the graded exercise's own answer, handed out for another one) is a stand-in
    that raises LookupError."""
    needs: dict[str, set[str]] = {m: set() for m in finished}
    seen_whole: set[str] = set()
    todo = list(roots)
    while todo:
        module, name = todo.pop()
        if _file(module) is None:
            continue
        if module in finished:
            if name is None:
                raise ValueError(f"stage {stage}'s worker would need all of {module}, a finished module")
            if name in needs[module]:
                continue
            needs[module].add(name)
            todo += list(_slice(module, _tree(_file(module)), needs[module], withheld)[1])
        elif module not in seen_whole:
            seen_whole.add(module)
            todo += imports(module, _tree(_file(module)), nested=False)
            parent = module.rpartition(".")[0]
            if parent and parent not in finished:   # importing a submodule runs its package first (a finished
                todo.append((parent, None))         # one runs as cut, or as the placeholder if nothing is needed)
    sources = {}
    for module in sorted(finished):
        path = _file(module)
        if path is not None:
            sources[path] = _slice(module, _tree(path), needs[module], withheld)[0] if needs[module] else PLACEHOLDER
    return sources


def roots(stage: str, setup: list[str], finished: set[str], may_use: dict) -> set[tuple[str, str | None]]:
    """What the worker of ``stage`` starts from: the imports of the set-up cells (``setup``, their sources), the
    stage's public cases module (all of its imports: its drivers run there), the checks and the wire, and the
    names ``may_use`` hands over (found in whichever finished module defines them)."""
    public = f"course_lib.courseware.exercises.stage{stage}"
    found = {(public, None), ("course_lib.courseware.checks", None), ("course_lib.courseware.observe", None)}
    found |= set(imports(public, _tree(_file(public))))
    for source in setup:
        found |= set(imports("__main__", ast.parse(source)))
    for name in {n for names in may_use.values() for n in names}:
        found |= {(m, name) for m in finished if _file(m) and any(   # where it is defined, not imported
            name in _defines(s) for s in _tree(_file(m)).body
            if not isinstance(s, (ast.Import, ast.ImportFrom)))}
    return found


def prepare(sources: dict[Path, str], folder: Path) -> dict[Path, Path]:
    """Write the cut ``sources`` into ``folder``; return original file → its cut copy, for the sandbox to bind."""
    replaced = {}
    for n, (path, source) in enumerate(sorted(sources.items())):
        copy = folder / f"{n:02d}_{path.name}"
        copy.write_text(source, encoding="utf-8")
        replaced[path] = copy
    return replaced


def available(stage: str, finished: set[str], start, withheld: frozenset = frozenset()) -> dict[str, list]:
    """What the worker of ``stage`` keeps of each finished module: the functions, classes and constants it
    defines (imports left out; a ``withheld`` name is kept as its stand-in), for tests, review and check()."""
    kept = {}
    for path, source in cut(stage, finished, start, withheld).items():
        body = [s for s in ast.parse(source).body if not isinstance(s, (ast.Import, ast.ImportFrom))]
        names = sorted(set().union(*[_defines(s) for s in body]))
        if names:
            kept[path.relative_to(PACKAGE).as_posix()] = names
    return kept


def absent(stage: str, lib: Path) -> dict[Path, Path]:
    """The packages that would answer an exercise of ``stage`` (its stage module's ``ABSENT``), each replaced in the
    worker by a module that raises ImportError saying why: like the finished modules, nothing to borrow."""
    import importlib.util
    from importlib import import_module
    replaced = {}
    for package in getattr(import_module(f"course_lib.courseware.exercises.stage{stage}"), "ABSENT", ()):
        spec = importlib.util.find_spec(package)
        if spec is not None and spec.origin:
            why = f"{package} is not available while stage {stage} is graded: the exercise asks you to write it yourself"
            stand_in = lib / f"absent-{package}.py"
            stand_in.write_text(f"raise ImportError({why!r})\n", encoding="utf-8")
            replaced[Path(spec.origin).resolve()] = stand_in
    return replaced
