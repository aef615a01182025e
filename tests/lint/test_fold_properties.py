"""Constant folding (compiler/lint/fold.py) against the runtime's evaluator (runtime/expr.py).

Random well-typed constant expressions are folded and evaluated: whenever fold gives a value,
the runtime must compute that same value (same type family: `1 == 1.0` in both), and whenever
the runtime faults (division by zero, a value past the limits) fold must not claim a value.
Fold may always answer UNKNOWN: it is allowed to know less, never something else."""

from __future__ import annotations

import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from flowc.compiler.lint.fold import UNKNOWN, fold
from flowc.runtime.expr import FAULTS, ExprCompiler
from flowc.runtime.model import Expr

Node = dict[str, Any]


def lit(value: Any) -> Node:
    return {"op": "lit", "value": value}


def node(op: str, *args: Node) -> Node:
    return {"op": op, "args": list(args)}


ints = st.one_of(
    st.integers(-5, 5),
    st.integers(-(10**18), 10**18),
    st.integers(10**990, 10**999),  # near the limit on digits (Limits.max_int_digits)
).map(lit)
floats = st.floats(allow_nan=False, allow_infinity=False, width=64).map(lit)
strs = st.text("ab\u00e9", max_size=3).map(lit)
bools = st.booleans().map(lit)


def arithmetic(children: st.SearchStrategy[Node]) -> st.SearchStrategy[Node]:
    return st.one_of(
        st.tuples(st.sampled_from(["+", "-", "*", "%"]), children, children).map(
            lambda t: node(t[0], t[1], t[2])
        ),
        children.map(lambda a: node("neg", a)),
    )


int_exprs = st.recursive(ints, arithmetic, max_leaves=6)
num_exprs = st.recursive(
    st.one_of(ints, floats),
    lambda children: st.one_of(
        arithmetic(children),
        st.tuples(children, children).map(lambda t: node("/", t[0], t[1])),
    ),
    max_leaves=6,
)
str_exprs = st.recursive(
    strs, lambda children: st.tuples(children, children).map(lambda t: node("+", *t)), max_leaves=4
)
int_lists = st.lists(int_exprs, max_size=3).map(lambda items: node("list", *items))


def comparisons() -> st.SearchStrategy[Node]:
    compare = st.sampled_from(["==", "!=", "<", "<=", ">", ">="])
    return st.one_of(
        st.tuples(compare, num_exprs, num_exprs).map(lambda t: node(t[0], t[1], t[2])),
        st.tuples(compare, str_exprs, str_exprs).map(lambda t: node(t[0], t[1], t[2])),
        st.tuples(st.sampled_from(["in", "not in"]), int_exprs, int_lists).map(
            lambda t: node(t[0], t[1], t[2])
        ),
        st.tuples(st.sampled_from(["in", "not in"]), str_exprs, str_exprs).map(
            lambda t: node(t[0], t[1], t[2])
        ),
    )


bool_exprs = st.recursive(
    st.one_of(bools, comparisons()),
    lambda children: st.one_of(
        children.map(lambda a: node("not", a)),
        st.tuples(st.sampled_from(["and", "or"]), children, children).map(
            lambda t: node(t[0], t[1], t[2])
        ),
        st.tuples(st.sampled_from(["==", "!="]), children, children).map(
            lambda t: node(t[0], t[1], t[2])
        ),
        st.tuples(children, children, children).map(lambda t: node("cond", *t)),
    ),
    max_leaves=8,
)

COMPILER = ExprCompiler()


def frozen(value: Any) -> Any:
    return tuple(frozen(v) for v in value) if isinstance(value, list) else value


def agree(raw: Node) -> None:
    folded = fold(Expr.model_validate(raw))
    try:
        value = COMPILER.compile(raw)({}, None, None)
    except FAULTS:
        assert folded is UNKNOWN, f"fold says {folded!r}; the runtime faults"
        return
    if folded is UNKNOWN:
        return
    value = frozen(value)
    assert isinstance(folded, bool) == isinstance(value, bool), (folded, value)
    if isinstance(value, float) and isinstance(folded, float):
        assert folded == value or (math.isnan(folded) and math.isnan(value))
    else:
        assert folded == value and type(folded) is type(value), (folded, value)


@settings(max_examples=400, deadline=None)
@given(bool_exprs)
def test_folded_guards_are_what_the_runtime_computes(raw: Node) -> None:
    agree(raw)


@settings(max_examples=300, deadline=None)
@given(st.one_of(num_exprs, str_exprs, int_lists))
def test_folded_values_are_what_the_runtime_computes(raw: Node) -> None:
    agree(raw)


def test_division_by_zero_is_not_a_constant() -> None:
    agree(node(">", node("/", lit(1), lit(0)), lit(0)))
    assert fold(Expr.model_validate(node("%", lit(1), lit(0)))) is UNKNOWN
