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


def _short(expression: ast.expr) -> ast.expr:
    """``repr(value)`` cut to LONGEST characters, as an expression."""
    text = ast.Call(ast.Name("repr", ast.Load()), [expression], [])
    return ast.Subscript(text, ast.Slice(None, ast.Constant(LONGEST)), ast.Load())


def _message(case: str, test: ast.expr, original: ast.expr | None) -> ast.expr:
    """An f-string: the case (the test's own sentence, or the asserted code and its message), then for a
    comparison what was expected and what came back."""
    if isinstance(original, (ast.Constant, ast.JoinedStr)):   # a sentence written for the learner names the case
        parts: list[ast.expr] = [ast.FormattedValue(original, -1, None)]
    else:
        parts = [ast.Constant(f"`{case}`")]
        if original is not None:
            parts += [ast.Constant(" ("), ast.FormattedValue(original, -1, None), ast.Constant(")")]
    if isinstance(test, ast.Compare) and len(test.ops) == 1:
        got, want = ast.Name(GOT, ast.Load()), ast.Name(WANT, ast.Load())
        if type(test.ops[0]) in (ast.Eq, ast.Is):
            parts += [ast.Constant(": expected "), ast.FormattedValue(_short(want), -1, None),
                      ast.Constant(", got "), ast.FormattedValue(_short(got), -1, None)]
        else:
            parts += [ast.Constant(": expected "), ast.FormattedValue(_short(got), -1, None),
                      ast.Constant(f" {_OPS[type(test.ops[0])]} "), ast.FormattedValue(_short(want), -1, None)]
    else:
        parts.append(ast.Constant(" is not true"))
    return ast.JoinedStr(parts)


class _Explain(ast.NodeTransformer):
    def __init__(self, source: str):
        self.source = source

    def visit_Assert(self, node: ast.Assert):
        single = isinstance(node.test, ast.Compare) and len(node.test.ops) == 1
        if isinstance(node.msg, (ast.Constant, ast.JoinedStr)) and not single:   # a sentence, nothing to add
            return node
        case = " ".join((ast.get_source_segment(self.source, node.test) or ast.unparse(node.test)).split())
        test = node.test
        if single:
            sides = ast.Assign([ast.Tuple([ast.Name(GOT, ast.Store()), ast.Name(WANT, ast.Store())], ast.Store())],
                               ast.Tuple([test.left, test.comparators[0]], ast.Load()))
            compare = ast.Compare(ast.Name(GOT, ast.Load()), test.ops, [ast.Name(WANT, ast.Load())])
            checked = ast.Assert(compare, _message(case, test, node.msg))
            return [ast.copy_location(sides, node), ast.copy_location(checked, node)]
        return ast.copy_location(ast.Assert(test, _message(case, test, node.msg)), node)


def explained(source: str) -> str:
    """The cell's code with every assert rewritten to name its case, expected and got. Magics (``%``) and code
    that does not parse are returned unchanged: the kernel reports those as it always has."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return source
    tree = ast.fix_missing_locations(_Explain(source).visit(tree))
    return ast.unparse(tree)
