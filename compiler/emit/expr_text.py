"""IR expressions and actions printed back as `.flow` source text.

Diagrams, docs and lint messages show guards the way the author wrote them (modulo spacing and
redundant parentheses), so the printer follows the grammar's precedence levels and adds
parentheses only where reading the text back would otherwise group differently.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable

from flowc.runtime.builtins import QUANTIFIERS
from flowc.runtime.model import Action, Expr
from flowc.runtime.operators import (
    AND,
    ATOM,
    BINARY_OPERATORS,
    COMPARE,
    FACTOR,
    NOT,
    OR,
    POSTFIX,
    SUM,
    TERM,
)

# Binding strength, loosest first (runtime/operators.py, which mirrors the grammar's nesting).
_OR, _AND, _NOT, _CMP, _SUM, _TERM, _FACTOR, _POSTFIX, _ATOM = (
    OR, AND, NOT, COMPARE, SUM, TERM, FACTOR, POSTFIX, ATOM,
)  # fmt: skip

_BINARY: dict[str, int] = {s: op.level for s, op in BINARY_OPERATORS.items()}

_STRING_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t", "\r": "\\r", "\0": "\\0"}


def expr_text(expr: Expr) -> str:
    """The source form of `expr`, e.g. `event.confidence <= 2 and mode == "BEGINNER"`."""
    return _text(expr)[0]


#: The units of a computed delay (`after EXPR UNIT`), as lowering multiplies by them.
_DELAY_UNITS = {1000: "s", 60_000: "m", 3_600_000: "h", 86_400_000: "d"}


def delay_text(expr: Expr) -> str:
    """A computed timer delay (in milliseconds) the way the source says it: `backoff_ms ms`,
    `retry_s s` (lowering wrote `retry_s * 1000`)."""
    if expr.op == "*" and len(expr.args) == 2:
        factor = expr.args[1]
        unit = _DELAY_UNITS.get(factor.value) if factor.op == "lit" else None  # type: ignore[arg-type]
        if unit is not None and type(factor.value) is int:
            return f"{_text(expr.args[0])[0]} {unit}"
    return f"{expr_text(expr)} ms"


_UNITS = (("d", 86_400_000), ("h", 3_600_000), ("m", 60_000), ("s", 1000))


def duration_text(ms: int | None) -> str:
    """`10m` for 600000: the largest unit that divides the duration exactly, as in the source."""
    if ms is None:
        return "?"
    for unit, size in _UNITS:
        if ms and ms % size == 0:
            return f"{ms // size}{unit}"
    return f"{ms}ms"


def payload_text(value: Expr | None) -> str:
    """`(field: expr, ...)` of a `raise` / `emit` (a `map` of literal keys in the IR)."""
    if value is None:
        return ""
    if value.op != "map":
        return f"({expr_text(value)})"
    args = value.args
    pairs = [
        f"{args[i].value if args[i].op == 'lit' else expr_text(args[i])}: {expr_text(args[i + 1])}"
        for i in range(0, len(args) - 1, 2)
    ]
    return "(" + ", ".join(pairs) + ")"


def action_text(action: Action) -> str:
    if action.op in ("raise", "emit"):
        return f"{action.op} {action.event}{payload_text(action.value)}"
    if action.op == "send" and action.delay is not None:
        return _send_text(action, action.delay)
    if action.op == "cancel" and action.key is not None:
        return f"cancel {expr_text(action.key)}"
    if action.op == "for" or action.op == "each":  # (`each`: the same loop, with locals)
        assert action.value is not None and action.branches, "a loop has a list and a body"
        head = ", ".join((*action.target, *((action.index,) if action.index else ())))
        body = actions_text(action.branches[0].actions)
        return f"for {head} in {expr_text(action.value)} {{ {body} }}".replace("{  }", "{ }")
    if action.op == "if":
        arms = []
        for i, b in enumerate(action.branches):
            head = (
                "else" if b.guard is None else f"{'if' if i == 0 else 'elif'} {expr_text(b.guard)}"
            )
            arms.append(f"{head} {{ {actions_text(b.actions)} }}")
        return " ".join(arms)
    target = ".".join(action.target)
    if action.op == "delete" and action.key is not None:
        return f"delete({target}, {expr_text(action.key)})"
    assert action.value is not None, "set/add/sub/append/remove/put always have a value"
    if action.op == "put" and action.key is not None:
        return f"{target}[{expr_text(action.key)}] = {expr_text(action.value)}"
    symbol = {"set": "=", "add": "+=", "sub": "-="}.get(action.op)
    if symbol is None:  # `append(xs, e)`, `remove(xs, e)`: statement functions
        return f"{action.op}({target}, {expr_text(action.value)})"
    return f"{target} {symbol} {expr_text(action.value)}"


def _send_text(action: Action, delay: Expr) -> str:
    """`send E(...) after 5m as "r"`: a written duration as it was written (lowering made it a
    `lit` of milliseconds), a computed one with its unit."""
    ms = delay.value if delay.op == "lit" else None
    after = duration_text(ms) if type(ms) is int else delay_text(delay)
    text = f"send {action.event}{payload_text(action.value)} after {after}"
    return text if action.key is None else f"{text} as {expr_text(action.key)}"


def actions_text(actions: Iterable[Action]) -> str:
    return "; ".join(action_text(a) for a in actions)


def literal_text(value: object) -> str:
    if value is None:
        return "none"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _float_text(value)
    if isinstance(value, str):
        return '"' + "".join(_STRING_ESCAPES.get(c, c) for c in value) + '"'
    if isinstance(value, list | tuple):
        return "[" + ", ".join(literal_text(v) for v in value) + "]"
    if isinstance(value, dict):
        pairs = (f"{literal_text(k)}: {literal_text(v)}" for k, v in value.items())
        return "{" + ", ".join(pairs) + "}"
    return json.dumps(value)


def _float_text(value: float) -> str:
    if math.isnan(value) or math.isinf(value):
        # Not writable in the language; show something a reader understands.
        return str(value)
    text = repr(value)
    if "e" in text and "." not in text.split("e")[0]:
        # The grammar's FLOAT wants digits on both sides of the point: 1e+20 -> 1.0e+20.
        mantissa, exponent = text.split("e")
        text = f"{mantissa}.0e{exponent}"
    return text


def _text(expr: Expr) -> tuple[str, int]:
    """(text, precedence of its outermost construct)."""
    op = expr.op
    args = expr.args
    if op == "lit":
        text = literal_text(expr.value)
        negative = isinstance(expr.value, int | float) and not isinstance(expr.value, bool)
        return text, _FACTOR if negative and text.startswith("-") else _ATOM
    if op == "ctx":
        return str(expr.value), _ATOM
    if op == "event":
        return f"event.{expr.value}", _ATOM
    if op == "state":
        return f"state.{expr.value}", _ATOM
    if op == "meta":
        return f"state.meta.{expr.value}", _ATOM
    if op == "attr":
        return f"{_wrap(args[0], _POSTFIX)}.{expr.value}", _POSTFIX
    if op == "index":
        return f"{_wrap(args[0], _POSTFIX)}[{expr_text(args[1])}]", _POSTFIX
    if op == "call":
        if expr.value == "active" and len(args) == 1 and isinstance(args[0].value, str):
            # the state's IR name, which names it in the source too
            return f"active({args[0].value})", _ATOM
        return f"{expr.value}({', '.join(expr_text(a) for a in args)})", _ATOM
    if op == "list":
        return "[" + ", ".join(expr_text(a) for a in args) + "]", _ATOM
    if op == "map":
        keys, values = args[::2], args[1::2]
        entries = [f"{expr_text(k)}: {expr_text(v)}" for k, v in zip(keys, values, strict=False)]
        return "{" + ", ".join(entries) + "}", _ATOM
    if op == "local":
        return str(expr.value), _ATOM
    if op in QUANTIFIERS and len(args) == 2:
        if args[1].op == "local" and args[1].value == expr.value:
            return f"{op}({expr_text(args[0])})", _ATOM  # `sum(xs)`: the items themselves
        return f"{op}({expr.value} in {expr_text(args[0])}: {expr_text(args[1])})", _ATOM
    if op == "cond" and len(args) == 3:
        return f"if({', '.join(expr_text(a) for a in args)})", _ATOM
    if op == "not":
        return f"not {_wrap(args[0], _NOT)}", _NOT
    if op == "neg":
        return f"-{_wrap(args[0], _FACTOR)}", _FACTOR
    level = _BINARY.get(op)
    if level is not None and len(args) == 2:
        if level == _CMP:
            # Comparisons do not chain in the grammar: both sides must be sums.
            left = _wrap(args[0], _SUM)
            right = _wrap(args[1], _SUM)
        else:
            # Left-associative: an equal-level operator on the right needs parentheses.
            left = _wrap(args[0], level)
            right = _wrap(args[1], level + 1)
        return f"{left} {op} {right}", level
    if op in ("and", "or") and len(args) > 2:
        # Tolerate n-ary boolean nodes: print them as a left-leaning chain.
        level = _BINARY[op]
        return f" {op} ".join(_wrap(a, level + 1) for a in args), level
    return f"<{op}?>", _ATOM


def _wrap(expr: Expr, minimum: int) -> str:
    text, level = _text(expr)
    return text if level >= minimum else f"({text})"
