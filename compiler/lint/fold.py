"""Constant folding of guard expressions, for W309 and for deciding which edges can fire.

Only literals fold: context fields, event payloads, state attributes and function calls are
unknown at compile time. `and`/`or` fold when one side alone decides them (`false and x` is
false whatever `x` is), which is how a guard such as `x or true` is found to be constant; as at
run time the operands are taken left to right, so a constant operand that faults (`1 / 0 > 0`)
decides nothing after it. A folded value is what the runtime computes (`*` is bounded by the
runtime's default limits): tests/lint/test_fold_properties.py checks this on random constant
expressions.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from flowc.runtime.limits import DEFAULT_LIMITS, LimitExceeded
from flowc.runtime.model import Expr
from flowc.runtime.operators import BINARY_OPERATORS, COMPARISONS


class _Unknown:
    __slots__ = ()

    def __repr__(self) -> str:
        return "UNKNOWN"


#: The value of an expression that depends on something only known at run time.
UNKNOWN: Final = _Unknown()

#: The evaluated operators, as the runtime evaluates them (runtime/operators.py), a bounded one
#: under the runtime's default limits.
_EVALUATE: dict[str, Callable[[Any, Any], Any]] = {
    s: DEFAULT_LIMITS.mul if op.bounded else op.apply
    for s, op in BINARY_OPERATORS.items()
    if op.apply is not None
}
_FOLDABLE = frozenset(_EVALUATE)


def fold(expr: Expr) -> object:
    """The constant value of `expr`, or `UNKNOWN`."""
    op = expr.op
    args = expr.args
    if op == "lit":
        return _freeze(expr.value)
    if op == "not":
        value = fold(args[0])
        return (not value) if isinstance(value, bool) else UNKNOWN
    if op == "neg":
        value = fold(args[0])
        if isinstance(value, int | float) and not isinstance(value, bool):
            return -value
        return UNKNOWN
    if op in ("and", "or"):
        return _fold_bool(op, args)
    if op == "cond" and len(args) == 3:
        # As at run time: only the value the test chooses is taken.
        test = fold(args[0])
        if not isinstance(test, bool):
            return UNKNOWN
        return fold(args[1] if test else args[2])
    if op == "list":
        items = [fold(a) for a in args]
        return UNKNOWN if any(i is UNKNOWN for i in items) else tuple(items)
    if len(args) != 2 or op not in _FOLDABLE:
        return UNKNOWN
    left, right = fold(args[0]), fold(args[1])
    if left is UNKNOWN or right is UNKNOWN:
        return UNKNOWN
    try:
        if op in ("==", "!="):
            equal = _same_type_family(left, right) and left == right
            return equal if op == "==" else not equal
        if op in COMPARISONS:
            if not (_is_number(left) and _is_number(right)) and type(left) is not type(right):
                return UNKNOWN
            return bool(_EVALUATE[op](left, right))
        if op in ("in", "not in"):
            if not isinstance(right, tuple | str):
                return UNKNOWN
            if isinstance(right, str) and not isinstance(left, str):
                return UNKNOWN
            found = left in right
            return found if op == "in" else not found
        if not (_is_number(left) and _is_number(right)):
            # `+` on strings and lists folds too; anything else is for the type checker.
            if op == "+" and type(left) is type(right) and isinstance(left, str | tuple):
                return left + right  # type: ignore[operator]
            return UNKNOWN
        return _EVALUATE[op](left, right)
    except (ArithmeticError, TypeError, ValueError, LimitExceeded):
        # Division by zero and friends fail at run time; that is not a constant.
        return UNKNOWN


def constant_guard(expr: Expr | None) -> bool | None:
    """True/False when the guard's value is fixed at compile time, None otherwise."""
    if expr is None:
        return None
    value = fold(expr)
    return value if isinstance(value, bool) else None


def _fold_bool(op: str, args: tuple[Expr, ...]) -> object:
    # The deciding value: `false` decides `and`, `true` decides `or`, wherever it appears.
    decider = op == "or"
    unknown = False
    for arg in args:
        value = fold(arg)
        if value is decider:
            return decider
        if not isinstance(value, bool):
            if _constant(arg):
                return UNKNOWN  # it faults at run time, before any operand after it is taken
            unknown = True
    return UNKNOWN if unknown else not decider


def _constant(expr: Expr) -> bool:
    """Whether `expr` is made of literals only (so a value fold cannot give is a fault)."""
    return expr.op not in ("ctx", "event", "state", "meta", "call", "local") and all(
        _constant(a) for a in expr.args
    )


def _freeze(value: object) -> object:
    if isinstance(value, list):
        return tuple(_freeze(v) for v in value)
    if isinstance(value, dict):
        return UNKNOWN
    return value


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _same_type_family(left: object, right: object) -> bool:
    if _is_number(left) and _is_number(right):
        return True
    return type(left) is type(right)
