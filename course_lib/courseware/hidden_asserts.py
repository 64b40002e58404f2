"""Hidden tests that say what failed: ``explained(source)`` rewrites each ``assert`` of a hidden-test cell so
that a failure names the case, what was expected and what came back, as a ``check()`` row does.

A hidden test is written as a plain ``assert got == expected, case``. Run as written, a failure shows only the
message (``AssertionError: ({'t': 'always '}, None, 'the export s')``). The grader runs this rewrite of the
trusted cell instead; the submission never sees or supplies it, and the rewrite adds no name the submission
could replace: each comparison is evaluated inline, once, exactly as before. For example::

    assert find_tainted(_args, _seen, 12) == _span, (_args,)

becomes, in effect::

    _got, _want = find_tainted(_args, _seen, 12), _span
    assert _got == _want, f"`find_tainted(_args, _seen, 12) == _span` ({(_args,)}): expected {_want!r}, got {_got!r}"

A message that is already a sentence (``assert f(x) is None, "a good action is fine"``) names the case, and
gets expected and got after it. Only single comparisons are split (a chain such as ``a < b < c`` keeps its
short-circuit); any other ``assert`` keeps its expression, and its sentence, or else its code, as the message.
"""
from __future__ import annotations

import ast

GOT, WANT = "_hidden_got", "_hidden_want"   # kernel names for one comparison's two sides, set just before it
LONGEST = 160   # characters of one value's repr in the message (the report keeps 500 in all)

_OPS = {ast.Eq: "==", ast.NotEq: "!=", ast.Is: "is", ast.IsNot: "is not", ast.In: "in", ast.NotIn: "not in",
        ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}
# ast.unparse writes code from the nodes' fields alone: a name's Load or Store context is not needed, and the
# rewritten cell is parsed again by the kernel.


def _value(expression: ast.expr) -> ast.expr:
    """``{repr(value)[:LONGEST]}`` inside the f-string."""
    text = ast.Call(ast.Name("repr"), [expression], [])
    return ast.FormattedValue(ast.Subscript(text, ast.Slice(upper=ast.Constant(LONGEST))), conversion=-1)


def _message(case: str, op: ast.cmpop | None, original: ast.expr | None) -> ast.expr:
    """An f-string: the case (the test's own sentence, or the asserted code and its message), then for a
    comparison ``op`` what was expected and what came back."""
    if isinstance(original, (ast.Constant, ast.JoinedStr)):   # a sentence written for the learner names the case
        parts: list[ast.expr] = [ast.FormattedValue(original, conversion=-1)]
    else:
        parts = [ast.Constant(f"`{case}`")]
        if original is not None:
            parts += [ast.Constant(" ("), ast.FormattedValue(original, conversion=-1), ast.Constant(")")]
    got, want = ast.Name(GOT), ast.Name(WANT)
    if op is None:
        parts.append(ast.Constant(" is not true"))
    elif type(op) in (ast.Eq, ast.Is):
        parts += [ast.Constant(": expected "), _value(want), ast.Constant(", got "), _value(got)]
    else:
        parts += [ast.Constant(": expected "), _value(got), ast.Constant(f" {_OPS[type(op)]} "), _value(want)]
    return ast.JoinedStr(parts)


class _Explain(ast.NodeTransformer):
    def __init__(self, source: str):
        self.source = source

    def visit_Assert(self, node: ast.Assert):
        test = node.test
        single = isinstance(test, ast.Compare) and len(test.ops) == 1
        if isinstance(node.msg, (ast.Constant, ast.JoinedStr)) and not single:   # a sentence, nothing to add
            return node
        case = " ".join(ast.get_source_segment(self.source, test).split())   # the code as written, on one line
        if not single:
            return ast.copy_location(ast.Assert(test, _message(case, None, node.msg)), node)
        sides = ast.Assign([ast.Tuple([ast.Name(GOT), ast.Name(WANT)])], ast.Tuple([test.left, test.comparators[0]]))
        checked = ast.Assert(ast.Compare(ast.Name(GOT), test.ops, [ast.Name(WANT)]),
                             _message(case, test.ops[0], node.msg))
        return [ast.copy_location(sides, node), ast.copy_location(checked, node)]


def explained(source: str) -> str:
    """The cell's code with every assert rewritten to name its case, expected and got. Magics (``%``) and code
    that does not parse are returned unchanged: the kernel reports those as it always has."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source
    return ast.unparse(ast.fix_missing_locations(_Explain(source).visit(tree)))
