"""The compile-time bounds of a flow's Jinja2 templates.

Jinja folds constant expressions while it compiles a template: `{{ 9**(9**9) }}` would be
computed by `flowc check` itself (forever), `{{ 'a' * 10**9 }}` would take gigabytes. So:

- `checking_environment()` is the environment the compiler checks templates with: it compiles
  (finding syntax errors, unknown filters and tests) but folds nothing a template could make
  expensive, so compiling costs time linear in the template's length whatever it says;
- `oversized_constants()` walks a parsed template and evaluates its constant arithmetic with
  bounds, and names every operation whose result would exceed them, so that a template that
  would blow up when rendered is an error (E210) when the flow compiles, not at run time.

The bounds are documented in docs/language.md (Texts).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from jinja2 import nodes
from jinja2.sandbox import MAX_RANGE, ImmutableSandboxedEnvironment
from jinja2.utils import pass_context

#: A constant integer in a template may have at most this many bits (about 1,233 digits).
MAX_INT_BITS = 4096
#: A constant string or list built by repetition may hold at most this many items.
MAX_REPEAT_SIZE = 100_000
#: The widest padding a constant width may ask of a filter (`center`, `indent`).
MAX_WIDTH = MAX_REPEAT_SIZE
#: A constant `range(...)` may have at most this many items: the sandbox's own limit.
MAX_RANGE_ITEMS = MAX_RANGE

_BINARY_OPERATORS = frozenset({"+", "-", "*", "/", "//", "%", "**"})
_UNARY_OPERATORS = frozenset({"+", "-"})
_WIDTH_FILTERS = {"center": "width", "indent": "width"}


class _CheckingEnvironment(ImmutableSandboxedEnvironment):
    # A sandbox does not fold an intercepted operator (jinja2.nodes.BinExpr.as_const); the
    # checking environment never renders, so intercepting every one only stops the folding.
    intercepted_binops = _BINARY_OPERATORS
    intercepted_unops = _UNARY_OPERATORS


def _unfoldable(function: Any) -> Any:
    """A stand-in with the filter's (or test's) name that Jinja may not call while compiling:
    a filter that takes the context is never folded (jinja2.nodes.Filter.as_const)."""

    @pass_context
    def never_called(*args: Any, **kwargs: Any) -> Any:  # pragma: no cover - never rendered
        raise AssertionError("the checking environment does not render")

    return never_called


def checking_environment() -> ImmutableSandboxedEnvironment:
    env = _CheckingEnvironment()
    env.filters = {name: _unfoldable(f) for name, f in env.filters.items()}
    env.tests = {name: _unfoldable(f) for name, f in env.tests.items()}
    return env


@dataclass(frozen=True)
class Oversized:
    """An operation of a template whose constant result would exceed a bound."""

    lineno: int
    message: str


class _Unknown:
    """A value only known when the template renders."""


_UNKNOWN = _Unknown()


def oversized_constants(template: nodes.Template) -> list[Oversized]:
    """Every operation of `template` whose constant result would exceed a bound, outermost
    first; an operation inside one already reported is not reported again."""
    found: list[Oversized] = []
    for node in _top_expressions(template):
        _evaluate(node, found)
    return found


def _top_expressions(node: nodes.Node) -> Iterator[nodes.Expr]:
    for child in node.iter_child_nodes():
        if isinstance(child, nodes.Expr):
            yield child
        else:
            yield from _top_expressions(child)


def _evaluate(node: nodes.Node, found: list[Oversized]) -> Any:
    """The constant value of `node`, or `_UNKNOWN`; an oversized operation is reported to
    `found` and its value is unknown (so what contains it is not reported as well)."""
    if isinstance(node, nodes.Const):
        return node.value
    if isinstance(node, nodes.List | nodes.Tuple):
        items = [_evaluate(item, found) for item in node.items]
        if any(item is _UNKNOWN for item in items):
            return _UNKNOWN
        return items if isinstance(node, nodes.List) else tuple(items)
    if isinstance(node, nodes.BinExpr):
        left = _evaluate(node.left, found)
        right = _evaluate(node.right, found)
        if left is _UNKNOWN or right is _UNKNOWN:
            return _UNKNOWN
        return _binary(node, left, right, found)
    if isinstance(node, nodes.UnaryExpr):
        operand = _evaluate(node.node, found)
        if operand is _UNKNOWN or not _is_number(operand) or node.operator not in "+-":
            return _UNKNOWN
        return -operand if node.operator == "-" else operand
    if isinstance(node, nodes.Concat):
        parts = [_evaluate(part, found) for part in node.nodes]
        if any(part is _UNKNOWN for part in parts):
            return _UNKNOWN
        texts = [str(part) for part in parts]
        if sum(len(text) for text in texts) > MAX_REPEAT_SIZE:
            found.append(Oversized(node.lineno, _too_long(sum(len(t) for t in texts))))
            return _UNKNOWN
        return "".join(texts)
    if isinstance(node, nodes.Call):
        _check_range(node, found)
    if isinstance(node, nodes.Filter):
        _check_width(node, found)
    for child in node.iter_child_nodes():
        _evaluate(child, found)
    return _UNKNOWN


def _binary(node: nodes.BinExpr, left: Any, right: Any, found: list[Oversized]) -> Any:
    def refuse(message: str) -> _Unknown:
        found.append(Oversized(node.lineno, message))
        return _UNKNOWN

    operator = node.operator
    if _is_number(left) and _is_number(right):
        if operator == "**" and _is_int(left) and _is_int(right) and right > 0:
            bits = right * math.log2(abs(left)) if abs(left) > 1 else 0
            if bits > MAX_INT_BITS:
                return refuse(
                    f"`{_shown(left)} ** {_shown(right)}` would have about {_count(bits)} bits; "
                    f"a constant number in a template may have at most {MAX_INT_BITS}"
                )
        if (
            operator == "*"
            and _is_int(left)
            and _is_int(right)
            and abs(left).bit_length() + abs(right).bit_length() > MAX_INT_BITS + 1
        ):
            return refuse(
                f"this product would have more than {MAX_INT_BITS} bits, the most a "
                "constant number in a template may have"
            )
    elif operator == "*" and _is_sequence(left) != _is_sequence(right):
        sequence, times = (left, right) if _is_sequence(left) else (right, left)
        if not _is_int(times):
            return _UNKNOWN
        if len(sequence) * times > MAX_REPEAT_SIZE:
            return refuse(
                f"repeating {_count(len(sequence))} item(s) {_count(times)} times would make "
                f"{_count(len(sequence) * times)}; a template may repeat up to "
                f"{_count(MAX_REPEAT_SIZE)}"
            )
    elif operator == "+" and _is_sequence(left) and type(left) is type(right):
        if len(left) + len(right) > MAX_REPEAT_SIZE:
            return refuse(_too_long(len(left) + len(right)))
    else:
        # Anything else (`"%99999d" % 1` among them) is not evaluated here: it is left to the
        # bounded rendering at run time.
        return _UNKNOWN
    operation = _OPERATIONS.get(operator)
    if operation is None:
        return _UNKNOWN
    try:
        return operation(left, right)
    except Exception:
        # What Python refuses (1/0, an overflowing float) Jinja leaves to run time as well.
        return _UNKNOWN


_OPERATIONS: dict[str, Callable[[Any, Any], Any]] = {
    "+": lambda a, b: a + b,
    "-": lambda a, b: a - b,
    "*": lambda a, b: a * b,
    "/": lambda a, b: a / b,
    "//": lambda a, b: a // b,
    "%": lambda a, b: a % b,
    "**": lambda a, b: a**b,
}


def _check_range(node: nodes.Call, found: list[Oversized]) -> None:
    if not (isinstance(node.node, nodes.Name) and node.node.name == "range"):
        return
    args = [_evaluate(arg, found) for arg in node.args]
    if node.kwargs or node.dyn_args or node.dyn_kwargs or not 1 <= len(args) <= 3:
        return
    if not all(_is_int(a) for a in args) or (len(args) == 3 and args[2] == 0):
        return
    length = len(range(*args))
    if length > MAX_RANGE_ITEMS:
        found.append(
            Oversized(
                node.lineno,
                f"`range` of {_count(length)} items; a template may loop over at most "
                f"{_count(MAX_RANGE_ITEMS)}",
            )
        )


def _check_width(node: nodes.Filter, found: list[Oversized]) -> None:
    if node.name not in _WIDTH_FILTERS or not node.args:
        width = next((kw.value for kw in node.kwargs if kw.key == "width"), None)
        if node.name not in _WIDTH_FILTERS or width is None:
            return
    else:
        width = node.args[0]
    value = _evaluate(width, found)
    if _is_int(value) and value > MAX_WIDTH:
        found.append(
            Oversized(
                node.lineno,
                f"`{node.name}` to a width of {_count(value)}; a template may pad to at most "
                f"{_count(MAX_WIDTH)}",
            )
        )


def _too_long(size: int) -> str:
    return (
        f"this constant would hold {_count(size)} characters or items; a template may build up "
        f"to {_count(MAX_REPEAT_SIZE)}"
    )


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float)


def _is_sequence(value: Any) -> bool:
    return isinstance(value, str | list | tuple)


def _count(n: float) -> str:
    return f"{n:,.0f}"


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 20 else text[:17] + "..."
