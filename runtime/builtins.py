"""Names of the functions guards and actions may call.

The compiler type-checks calls against its own signature table (compiler/typecheck.py); the
runtime implements them (runtime/expr.py). A test keeps the three lists equal.
"""

from __future__ import annotations

#: Pure functions usable in any expression.
EXPRESSION_FUNCTIONS: frozenset[str] = frozenset(
    {
        "len",
        "min",
        "max",
        "abs",
        "round",
        "merge",
        "keys",
        "values",
        "lower",
        "upper",
        "trim",
        "coalesce",
        "str",
        # whether a state is in the active configuration, and the name of the event being
        # processed: they read the step, not a value
        "active",
        "event_name",
    }
)

#: Functions written `NAME(x in xs: BODY)` (version 2), each an expression op of its own in the
#: IR: whether any / all items satisfy a condition, how many do, and the sum, least and greatest
#: of a number computed from each.
QUANTIFIERS: tuple[str, ...] = ("any", "all", "count", "sum", "min", "max")

#: Functions usable only as an action statement (they change a context list or map in place):
#: `append(xs, e)`, `remove(xs, e)`, and `delete(m, k)` (version 2: the IR's `delete` op).
ACTION_FUNCTIONS: frozenset[str] = frozenset({"append", "remove", "delete"})
