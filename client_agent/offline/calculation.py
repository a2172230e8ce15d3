"""Plain calculations in a question, in symbols or in words, computed exactly.

:func:`arithmetic` answers "What is 1024 / 32?" and also the way people ask: "How much is
15 percent of 240?", "What is 125 times 8?", "What's 81 divided by 9?", "What is 12
squared?", "17 plus 25 minus 4". Words become operators first (:data:`_WORDS`); then the
question must be a calculation and nothing else — any other meaning-bearing word ("How many
days of leave after 3 years?") means it is a question for the knowledge base. Only the
operators + - * / ** % and parentheses are evaluated (a whitelist over Python's syntax tree,
exponents at most :data:`MAX_POWER`), never ``eval``.
"""

from __future__ import annotations

import ast
import operator
import re
from collections.abc import Callable

from client_agent.text import content_terms

_NUMBER = r"\d[\d,]*(?:\.\d+)?"
_WORDS: list[tuple[re.Pattern[str], str]] = [
    (re.compile(rf"({_NUMBER})\s*(?:%|percent|per\s*cent)\s+of\s+({_NUMBER})", re.I), r"(\1 / 100 * \2)"),
    (re.compile(r"\s+(?:divided\s+by|over)\s+", re.I), " / "),
    (re.compile(r"\s+(?:times|multiplied\s+by)\s+", re.I), " * "),
    (re.compile(r"\s+plus\s+", re.I), " + "),
    (re.compile(r"\s+minus\s+", re.I), " - "),
    (re.compile(r"\s+(?:to\s+the\s+power\s+of|raised\s+to(?:\s+the\s+power\s+of)?)\s+", re.I), " ** "),
    (re.compile(rf"({_NUMBER})\s+squared\b", re.I), r"\1 ** 2"),
    (re.compile(rf"({_NUMBER})\s+cubed\b", re.I), r"\1 ** 3"),
]
"""Operator words and the operators they become."""
_SHOWN = [(re.compile(rf"\(({_NUMBER}) / 100 \* ({_NUMBER})\)"), r"\1% of \2"), (re.compile(r" \*\* 2\b"), "²"),
          (re.compile(r" \*\* 3\b"), "³"), (re.compile(r" \*\* "), "^"), (re.compile(r" \* "), " × "),
          (re.compile(r" / "), " ÷ ")]
"""How the answer writes a calculation that was asked in words: "15% of 240", "125 × 8", "12²"."""
_CALCULATION = re.compile(r"[-+(]*\d[\d.,]*(?:\s*(?:\*\*|[-+*/×÷^%])\s*[-+(]*\d[\d.,]*\)*)+")
_SCAFFOLDING = re.compile(r"\b(what|is|calculate|compute|equals?|result|of|how|much|whats?)\b", re.I)
_OPERATORS: dict[type[ast.AST], Callable[..., float]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
    ast.Pow: operator.pow, ast.Mod: operator.mod, ast.USub: operator.neg, ast.UAdd: operator.pos,
}
MAX_POWER = 64


def arithmetic(question: str) -> tuple[str, float] | None:
    """The calculation in ``question`` (as the answer writes it) and its value, when the question is just that."""
    source = question
    for pattern, symbol in _WORDS:
        source = pattern.sub(symbol, source)
    match = _CALCULATION.search(source)
    if match is None:
        return None
    rest = source[: match.start()] + source[match.end() :]
    if content_terms(_SCAFFOLDING.sub(" ", rest)):
        return None
    expression = match.group(0).strip()
    python = expression.replace("×", "*").replace("÷", "/").replace("^", "**").replace(",", "")
    try:
        value = _evaluate(ast.parse(python, mode="eval").body)
    except (SyntaxError, ValueError, ZeroDivisionError, OverflowError):
        return None
    if source != question:
        for pattern, shown in _SHOWN:
            expression = pattern.sub(shown, expression)
    return expression, value


def _evaluate(node: ast.AST) -> float:
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return float(node.value)
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        left, right = _evaluate(node.left), _evaluate(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > MAX_POWER:
            raise ValueError("exponent too large")
        return _OPERATORS[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _OPERATORS:
        return _OPERATORS[type(node.op)](_evaluate(node.operand))
    raise ValueError("not arithmetic")


def format_number(value: float) -> str:
    return str(int(value)) if value == int(value) and abs(value) < 1e15 else f"{value:.6g}"
