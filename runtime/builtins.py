"""Names of the functions guards and actions may call.

The compiler type-checks calls against its own signature table (compiler/typecheck.py); the
runtime implements them (runtime/expr.py). A test keeps the three lists equal.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Builtin:
    """An expression function: how many arguments it takes (`least` to `most`) and, when it
    does not depend on them, its result type as the language writes it."""

    name: str
    least: int
    most: int
    result: str | None = None
    #: Its text in SCXML's Python datamodel (`flowc export scxml`): a format string over the
    #: arguments' texts (`{0}`, `{1}`; `{args}` all of them, comma-separated), written so that
    #: each argument may be any expression (they come parenthesised where it matters). None:
    #: no such form.
    python: str | None = None


#: The functions usable in any expression. `active` and `event_name` read the step (whether a
#: state is in the active configuration, the name of the event being processed), not a value.
BUILTINS: dict[str, Builtin] = {
    b.name: b
    for b in (
        Builtin("len", 1, 1, "int", "len({args})"),
        Builtin("min", 2, 99, None, "min({args})"),
        Builtin("max", 2, 99, None, "max({args})"),
        Builtin("abs", 1, 1, None, "abs({args})"),
        Builtin("round", 1, 1, "int", "round({args})"),
        Builtin("merge", 2, 2, None, "{{**{0}, **{1}}}"),
        Builtin("keys", 1, 1, "list[str]"),
        Builtin("values", 1, 1),
        Builtin("lower", 1, 1, "str", "{0}.lower()"),
        Builtin("upper", 1, 1, "str", "{0}.upper()"),
        Builtin("trim", 1, 1, "str", "{0}.strip()"),
        Builtin("coalesce", 2, 2, None, "({1} if {0} is None else {0})"),
        Builtin("str", 1, 1, "str", "str({args})"),
        Builtin("active", 1, 1, "bool", "In({args})"),
        Builtin("event_name", 0, 0, "str"),
    )
}

#: Pure functions usable in any expression.
EXPRESSION_FUNCTIONS: frozenset[str] = frozenset(BUILTINS)

#: Functions written `NAME(x in xs: BODY)` (version 2), each an expression op of its own in the
#: IR: whether any / all items satisfy a condition, how many do, and the sum, least and greatest
#: of a number computed from each.
QUANTIFIERS: tuple[str, ...] = ("any", "all", "count", "sum", "min", "max")
#: The local of the whole-list form (`sum(xs)`, `any(flags)`), written `sum(_item in xs: _item)`.
WHOLE_ITEM = "_item"

#: Functions usable only as an action statement (they change a context list or map in place):
#: `append(xs, e)`, `remove(xs, e)`, and `delete(m, k)` (version 2: the IR's `delete` op).
ACTION_FUNCTIONS: frozenset[str] = frozenset({"append", "remove", "delete"})
