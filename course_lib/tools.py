"""Stage 01 — tools are plain functions.

Adds: a safe ``calculator`` (an AST whitelist, never ``eval``), ``lookup`` over a small bilingual knowledge base and
``search_docs`` over a few documents, one with an injected instruction (stage 07 treats it as data); with them, the
file tools of ``workspace.py``. Each takes and returns text and raises ``ToolError`` with a message for the model.

Leaves out: finding a tool by name (stage 02), describing it to the model (03), calling it safely (05).
"""
from __future__ import annotations

import ast
import json
import math
import operator
from functools import cache
from pathlib import Path

from .workspace import ToolError, list_files, read_file  # noqa: F401 (the file tools live with their workspace)


MAX_EXPRESSION_CHARS = 200   # long enough for real arithmetic, short enough to parse instantly
MAX_DEPTH = 100              # nesting; a flat 1+1+...+1 that fits in 200 characters stays under it
MAX_RESULT_BITS = 3_000      # about 900 digits: beyond that it is not arithmetic a model needs

_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
           ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow}
_UNARY = {ast.UAdd: operator.pos, ast.USub: operator.neg}
_SYMBOLS = {ast.LShift: "<<", ast.RShift: ">>", ast.BitOr: "|", ast.BitAnd: "&", ast.BitXor: "^",
            ast.Invert: "~", ast.Not: "not", ast.MatMult: "@"}
_REFUSED = {ast.Name: "names", ast.Call: "function calls", ast.Attribute: "attributes", ast.Lambda: "lambdas",
            ast.Compare: "comparisons", ast.BoolOp: "and/or", ast.Subscript: "indexing", ast.JoinedStr: "f-strings",
            ast.IfExp: "if/else", ast.Tuple: "tuples", ast.List: "lists", ast.Dict: "dicts", ast.Set: "sets"}
_TOO_BIG = "the result is too large (over about 900 digits); split the calculation"
_OUT_OF_RANGE = "the result is out of range for a floating-point number"
# Underflow is refused like overflow: 10**-400, 1e-200*1e-200 or 1e-400 silently becoming 0.0 is a wrong answer.
_TOO_SMALL = "the result is too small for a floating-point number (it would be rounded to 0); rescale the numbers"


def _check_size(value):
    if isinstance(value, int) and value.bit_length() > MAX_RESULT_BITS:
        raise ToolError(_TOO_BIG)
    if isinstance(value, float) and not math.isfinite(value):
        raise ToolError(_OUT_OF_RANGE)
    return value


def _power(base, exponent):
    # 9**9**9 is refused before Python tries to build it: the result has at least exponent * (bits of the base - 1)
    # + 1 bits. A base of 0 is left out: 0 to a negative power is a division by zero, not a large number.
    if isinstance(base, int) and isinstance(exponent, int) and base != 0:
        if exponent * (abs(base).bit_length() - 1) >= MAX_RESULT_BITS:
            raise ToolError(_TOO_BIG)
    result = operator.pow(base, exponent)
    if isinstance(result, complex):
        raise ToolError("a negative number to a fractional power has no real result")
    return result


def _evaluate(node: ast.AST, depth: int = 0):
    if depth > MAX_DEPTH:
        raise ToolError(f"the expression is nested too deeply (more than {MAX_DEPTH} levels)")
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):   # bool and complex are out
        return _check_size(node.value)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_evaluate(node.operand, depth + 1))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _evaluate(node.left, depth + 1), _evaluate(node.right, depth + 1)
        if isinstance(node.op, ast.Mult) and isinstance(left, int) and isinstance(right, int) \
                and left.bit_length() + right.bit_length() > MAX_RESULT_BITS + 1:
            raise ToolError(_TOO_BIG)   # refused before multiplying, not after
        result = _power(left, right) if isinstance(node.op, ast.Pow) else _BINARY[type(node.op)](left, right)
        if type(result) is float and result == 0 and left != 0 and right != 0 \
                and isinstance(node.op, (ast.Mult, ast.Div, ast.Pow)):
            raise ToolError(_TOO_SMALL)
        return _check_size(result)
    if isinstance(node, ast.Constant):   # anything else is refused, saying what it is
        what = "strings are" if isinstance(node.value, (str, bytes)) else f"the value {node.value!r} is"
    elif isinstance(node, (ast.BinOp, ast.UnaryOp)):
        what = f"the operator {_SYMBOLS[type(node.op)]} is"   # every operator _evaluate does not take is here
    else:
        what = _REFUSED.get(type(node), f"{type(node).__name__} expressions") + " are"
    raise ToolError(f"{what} not allowed; use numbers, + - * / // % ** and parentheses")


def calculator(expression: str) -> str:
    """Evaluate an arithmetic expression such as (20*4)+15 and return the result.

    Args:
        expression: numbers with + - * / // % ** and parentheses, for example "24*7".
    """
    if not isinstance(expression, str):
        raise ToolError("expression must be text, for example \"24*7\"")
    if len(expression) <= 50 * MAX_EXPRESSION_CHARS:   # longer is refused as it is: splitting megabytes costs memory
        expression = " ".join(expression.split())   # any whitespace, newlines included, counts as one space
    if not expression:
        raise ToolError("the expression is empty; send something like \"24*7\"")
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise ToolError(f"the expression is longer than {MAX_EXPRESSION_CHARS} characters; split it up")
    try:
        tree = ast.parse(expression, mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as e:
        raise ToolError(f"not a valid arithmetic expression ({type(e).__name__}); "
                        "use numbers, + - * / // % ** and parentheses") from None
    # A literal such as 1e-400 is read as 0.0: refused if the digits before its exponent are not 0. (Only an
    # exponent makes a literal that small: 200 characters of "0.000…1" still reach 1e-199.)
    zeros = (n for n in ast.walk(tree) if isinstance(n, ast.Constant) and type(n.value) is float and n.value == 0)
    if any(float(ast.get_source_segment(expression, n).lower().split("e")[0]) != 0 for n in zeros):
        raise ToolError(_TOO_SMALL)
    try:
        value = _evaluate(tree.body)
    except ZeroDivisionError:
        raise ToolError("division by zero is undefined; check the divisor") from None
    except OverflowError:
        raise ToolError(_OUT_OF_RANGE) from None
    return str(value)   # for a float, str is repr: 0.1+0.2 shows as 0.30000000000000004


@cache
def _data(name: str) -> dict:
    return json.loads((Path(__file__).parent / "data" / name).read_text(encoding="utf-8"))


def _normalise(text: str) -> str:
    return " ".join(text.casefold().split())


def lookup(topic: str) -> str:
    """Look up one known fact (e.g. 단가, unit price) in Korean or English; to search documents, use search_docs.

    Args:
        topic: the topic to look up, for example "단가" or "shipping".
    """
    if not isinstance(topic, str) or not topic.strip():
        raise ToolError("topic must be a non-empty text such as \"단가\" or \"unit price\"")
    answer = _fact_index().get(_normalise(topic))
    if answer is None:
        known = ", ".join(_listed(f) for f in _data("facts.json"))
        raise ToolError(f"nothing is known about '{topic}'. Known topics: {known}")
    return answer


@cache
def _fact_index() -> dict[str, str]:
    """Topic name → answer in that name's language; the listed form "unit price (단가)" works too."""
    index = {_normalise(_listed(fact)): fact["answer"]["en"] for fact in _data("facts.json")}
    index.update({_normalise(name): fact["answer"][lang] for fact in _data("facts.json")
                  for lang in ("ko", "en") for name in fact["topics"][lang]})
    return index


def _listed(fact: dict) -> str:
    return f'{fact["topics"]["en"][0]} ({fact["topics"]["ko"][0]})'


def search_docs(query: str) -> str:
    """Search the company documents for a keyword (e.g. 출장); for one known fact, such as a price, use lookup.

    Args:
        query: a word or phrase to look for, for example "출장" or "refund".
    """
    if not isinstance(query, str) or not query.strip():
        raise ToolError("query must be a non-empty word or phrase")
    wanted = _normalise(query)
    hits = [f"[{title}] {body}" for title, body in _data("docs.json").items()
            if wanted in _normalise(title) or wanted in _normalise(body)]
    return "\n".join(hits) if hits else f"No document mentions '{query}'."
