"""Stage 01 — tools are plain functions.

Adds: a safe calculator (an AST whitelist, never ``eval``), ``read_file`` and ``list_files`` locked to the
workspace (the current working directory), ``lookup`` over a small bilingual knowledge base, and
``search_docs`` over a few documents, one of which carries an injected instruction (stage 07 shows the
agent treating it as data). Every tool takes and returns text and raises ``ToolError`` with a message
written for the model.

Leaves out: how a tool is found by name (stage 02), described to the model (03) or called safely with
arguments the model made up (05).
"""
from __future__ import annotations

import ast
import json
import math
import operator
from functools import cache
from pathlib import Path


class ToolError(Exception):
    """A tool refused its input; the message tells the model what was wrong and what to do."""


# ---------------------------------------------------------------- calculator
MAX_EXPRESSION_CHARS = 200   # long enough for real arithmetic, short enough to parse instantly
MAX_DEPTH = 100              # nesting; a flat 1+1+...+1 that fits in 200 characters stays under it
MAX_RESULT_BITS = 3_000      # about 900 digits: beyond that it is not arithmetic a model needs

_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
           ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
           ast.Pow: operator.pow}
_UNARY = {ast.UAdd: operator.pos, ast.USub: operator.neg}
_SYMBOLS = {ast.LShift: "<<", ast.RShift: ">>", ast.BitOr: "|", ast.BitAnd: "&", ast.BitXor: "^",
            ast.Invert: "~", ast.Not: "not", ast.MatMult: "@"}
_REFUSED = {ast.Name: "names", ast.Call: "function calls", ast.Attribute: "attributes",
            ast.Lambda: "lambdas", ast.Compare: "comparisons", ast.BoolOp: "and/or",
            ast.Subscript: "indexing", ast.JoinedStr: "f-strings", ast.IfExp: "if/else",
            ast.Tuple: "tuples", ast.List: "lists", ast.Dict: "dicts", ast.Set: "sets"}


def _refuse_node(node: ast.AST) -> ToolError:
    if isinstance(node, ast.Constant):
        what = "strings are" if isinstance(node.value, (str, bytes)) else f"the value {node.value!r} is"
    elif isinstance(node, (ast.BinOp, ast.UnaryOp)):
        what = f"the operator {_SYMBOLS.get(type(node.op), type(node.op).__name__)} is"
    else:
        what = _REFUSED.get(type(node), f"{type(node).__name__} expressions") + " are"
    return ToolError(f"{what} not allowed; use numbers, + - * / // % ** and parentheses")


_TOO_BIG = "the result is too large (over about 900 digits); split the calculation"
_OUT_OF_RANGE = "the result is out of range for a floating-point number"


def _check_size(value):
    if isinstance(value, int) and value.bit_length() > MAX_RESULT_BITS:
        raise ToolError(_TOO_BIG)
    if isinstance(value, float) and not math.isfinite(value):
        raise ToolError(_OUT_OF_RANGE)
    return value


def _power(base, exponent):
    # Estimate the size first: 9**9**9 must be refused before Python tries to build it.
    if isinstance(base, int) and isinstance(exponent, int) and exponent > 0 and abs(base) > 1:
        if exponent * (abs(base).bit_length() - 1) > MAX_RESULT_BITS:
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
        if isinstance(node.op, ast.Pow):
            return _check_size(_power(left, right))
        if isinstance(node.op, ast.Mult) and isinstance(left, int) and isinstance(right, int) \
                and left.bit_length() + right.bit_length() > MAX_RESULT_BITS + 1:
            raise ToolError(_TOO_BIG)   # refused before multiplying, not after
        return _check_size(_BINARY[type(node.op)](left, right))
    raise _refuse_node(node)


def calculator(expression: str) -> str:
    """Evaluate an arithmetic expression such as (20*4)+15 and return the result.

    Args:
        expression: numbers with + - * / // % ** and parentheses, for example "24*7".
    """
    if not isinstance(expression, str):
        raise ToolError("expression must be text, for example \"24*7\"")
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
    try:
        value = _evaluate(tree.body)
    except ZeroDivisionError:
        raise ToolError("division by zero is undefined; check the divisor") from None
    except OverflowError:
        raise ToolError(_OUT_OF_RANGE) from None
    return repr(value) if isinstance(value, float) else str(value)


# ---------------------------------------------------------------- workspace files
def inside_workspace(path: str) -> Path:
    """Resolve `path` under the current directory, refusing anything that ends up outside it."""
    if not isinstance(path, str) or not path.strip():
        raise ToolError("path must be a non-empty relative path such as \"notes.txt\"")
    if "\0" in path:
        raise ToolError("path contains a NUL byte, which no file name can hold")
    root = Path.cwd().resolve()
    target = (root / path).resolve()   # follows symlinks, so a link pointing outside is caught here
    if not target.is_relative_to(root):   # a path check, not a prefix check: /work2 is not inside /work
        raise ToolError(f"'{path}' is outside the workspace; use a path inside the current folder")
    return target


def read_file(path: str, max_chars: int = 20000) -> str:
    """Read a text file from the workspace (the current folder).

    Args:
        path: a path inside the workspace, for example "notes/plan.txt".
        max_chars: the most characters to return; longer files are cut with a note.
    """
    if type(max_chars) is not int or max_chars < 1:
        raise ToolError("max_chars must be a positive whole number")
    target = inside_workspace(path)
    if target.is_dir():
        raise ToolError(f"'{path}' is a folder, not a file; call list_files to see inside it")
    if not target.is_file():
        raise ToolError(f"there is no file '{path}' in the workspace; call list_files to see what exists")
    with target.open(encoding="utf-8", errors="replace") as f:
        text = f.read(max_chars)
        left = sum(len(chunk) for chunk in iter(lambda: f.read(65536), ""))
    if left:
        text += f"\n[... cut: {left} more characters not shown; pass a larger max_chars to see more]"
    return text


def list_files(directory: str = ".") -> str:
    """List the files and folders in a workspace folder (folders end with /).

    Args:
        directory: a folder inside the workspace; "." is the workspace itself.
    """
    target = inside_workspace(directory)
    if target.is_file():
        raise ToolError(f"'{directory}' is a file, not a folder; call read_file to read it")
    if not target.is_dir():
        raise ToolError(f"there is no folder '{directory}' in the workspace")
    names = sorted(p.name + ("/" if p.is_dir() else "") for p in target.iterdir()
                   if not p.name.startswith("."))
    if not names:
        return f"'{directory}' is empty"
    more = f"\n[... {len(names) - 200} more not shown]" if len(names) > 200 else ""
    return "\n".join(names[:200]) + more


# ---------------------------------------------------------------- knowledge
@cache
def _data(name: str) -> dict:
    return json.loads((Path(__file__).parent / "data" / name).read_text(encoding="utf-8"))


def _normalise(text: str) -> str:
    return " ".join(text.casefold().split())


def lookup(topic: str) -> str:
    """Look up a fact in the internal knowledge base, in Korean or English (e.g. 단가, unit price).

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
    """Search the company documents for a keyword and return every matching document.

    Args:
        query: a word or phrase to look for, for example "출장" or "refund".
    """
    if not isinstance(query, str) or not query.strip():
        raise ToolError("query must be a non-empty word or phrase")
    wanted = _normalise(query)
    hits = [f"[{title}] {body}" for title, body in _data("docs.json").items()
            if wanted in _normalise(title) or wanted in _normalise(body)]
    return "\n".join(hits) if hits else f"No document mentions '{query}'."
