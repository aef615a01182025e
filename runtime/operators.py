"""The expression language's operators, in one table: what each is called, how tightly it binds,
what it takes and gives, how it is evaluated and how generated Python writes it.

Everything that treats an operator reads it here: the closures (runtime/expr.py), the generated
dispatch code (runtime/codegen.py), the compiler's constant folding (compiler/lint/fold.py), the
printer of IR expressions (compiler/emit/expr_text.py), the fast parser's precedence
(compiler/fastparse.py), the type checker's and the SCXML importer's result types. The grammar
(grammar/flow.lark) spells the same levels as nested rules; tests/runtime/test_operators.py
checks that the table and the grammar agree.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final, Literal

#: Binding strength, loosest first, as the grammar nests its rules (`or_test` ... `atom`).
OR, AND, NOT, COMPARE, SUM, TERM, FACTOR, POSTFIX, ATOM = range(1, 10)

Kind = Literal["logic", "comparison", "membership", "arithmetic"]


def _in(item: Any, container: Any) -> bool:
    return item in container


def _not_in(item: Any, container: Any) -> bool:
    return item not in container


def _div(a: Any, b: Any) -> Any:
    return a / b


@dataclass(frozen=True, slots=True)
class Operator:
    """One binary operator. `apply` is its evaluation (None for `and` and `or`, which take
    their right side only when the left does not decide); `bounded`: the runtime checks the
    result's size before computing it (`Limits.mul`), as it alone can grow a value past the
    limits within one expression. Faults: any Python error `apply` raises (a division by zero,
    `<` between a number and a string) is an expression fault (`expression_error`).

    Types of an arithmetic operator: two numbers give an `int` when both are, else a `float`,
    but `always_float` gives a `float` even of two `int`s; `concatenates`: two `str` or two
    lists give their concatenation."""

    symbol: str  # the IR op, the source text and generated Python's operator alike
    level: int
    kind: Kind
    apply: Callable[[Any, Any], Any] | None
    bounded: bool = False
    always_float: bool = False
    concatenates: bool = False

    @property
    def gives_bool(self) -> bool:
        return self.kind != "arithmetic"


BINARY_OPERATORS: Final[dict[str, Operator]] = {
    op.symbol: op
    for op in (
        Operator("or", OR, "logic", None),
        Operator("and", AND, "logic", None),
        Operator("==", COMPARE, "comparison", operator.eq),
        Operator("!=", COMPARE, "comparison", operator.ne),
        Operator("<", COMPARE, "comparison", operator.lt),
        Operator("<=", COMPARE, "comparison", operator.le),
        Operator(">", COMPARE, "comparison", operator.gt),
        Operator(">=", COMPARE, "comparison", operator.ge),
        Operator("in", COMPARE, "membership", _in),
        Operator("not in", COMPARE, "membership", _not_in),
        Operator("+", SUM, "arithmetic", operator.add, concatenates=True),
        Operator("-", SUM, "arithmetic", operator.sub),
        Operator("*", TERM, "arithmetic", operator.mul, bounded=True),
        Operator("/", TERM, "arithmetic", _div, always_float=True),
        Operator("%", TERM, "arithmetic", operator.mod),
    )
}

#: Each evaluated operator's function (the unbounded form: `*` is bounded by a machine's limits).
EVALUATED: Final[dict[str, Callable[[Any, Any], Any]]] = {
    s: op.apply for s, op in BINARY_OPERATORS.items() if op.apply is not None
}

#: The operators of one kind.
COMPARISONS: Final = frozenset(s for s, op in BINARY_OPERATORS.items() if op.kind == "comparison")
ARITHMETIC: Final = frozenset(s for s, op in BINARY_OPERATORS.items() if op.kind == "arithmetic")
#: Binary operators whose result is a `bool`, and the unary `not`.
BOOLEAN_RESULTS: Final = frozenset(
    [*(s for s, op in BINARY_OPERATORS.items() if op.gives_bool), "not"]
)

#: The unary operators: the IR op, its level and its source text.
UNARY_OPERATORS: Final[dict[str, tuple[int, str]]] = {"not": (NOT, "not "), "neg": (FACTOR, "-")}
