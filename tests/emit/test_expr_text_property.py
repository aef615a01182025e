"""Property: any expression tree prints as text the parser reads back as the same tree."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flowc.compiler import ast
from flowc.compiler.emit.expr_text import expr_text
from flowc.compiler.parse import parse_source
from flowc.runtime.model import Expr

NAMES = st.sampled_from(["n", "items", "mode", "total_count", "x1"])
BINARY = ["and", "or", "==", "!=", "<", "<=", ">", ">=", "in", "not in", "+", "-", "*", "/", "%"]

literals = st.one_of(
    st.integers(min_value=0, max_value=10**6),
    st.floats(min_value=0, max_value=1e12, allow_nan=False, allow_infinity=False),
    st.text(
        alphabet=st.characters(min_codepoint=32, max_codepoint=126) | st.sampled_from("\n\t"),
        max_size=8,
    ),
    st.booleans(),
    st.none(),
).map(lambda v: Expr(op="lit", value=v))

leaves = st.one_of(
    literals,
    NAMES.map(lambda n: Expr(op="ctx", value=n)),
    NAMES.map(lambda n: Expr(op="event", value=n)),
    st.sampled_from(["name", "title"]).map(lambda n: Expr(op="state", value=n)),
    NAMES.map(lambda n: Expr(op="meta", value=n)),
)


def extend(children: st.SearchStrategy[Expr]) -> st.SearchStrategy[Expr]:
    return st.one_of(
        st.tuples(st.sampled_from(BINARY), children, children).map(
            lambda t: Expr(op=t[0], args=(t[1], t[2]))
        ),
        children.map(lambda e: Expr(op="not", args=(e,))),
        children.map(lambda e: Expr(op="neg", args=(e,))),
        st.tuples(children, NAMES).map(lambda t: Expr(op="attr", args=(t[0],), value=t[1])),
        st.tuples(children, children).map(lambda t: Expr(op="index", args=t)),
        st.tuples(st.sampled_from(["len", "max", "coalesce"]), st.lists(children, max_size=3)).map(
            lambda t: Expr(op="call", value=t[0], args=tuple(t[1]))
        ),
        st.lists(children, max_size=3).map(lambda items: Expr(op="list", args=tuple(items))),
    )


expressions = st.recursive(leaves, extend, max_leaves=10)


def from_expr(e: Expr) -> Any:
    return (e.op, e.value, tuple(from_expr(a) for a in e.args))


def from_ast(node: Any) -> Any:
    if isinstance(node, ast.Binary):
        return (node.op, None, (from_ast(node.left), from_ast(node.right)))
    if isinstance(node, ast.Unary):
        return (node.op, None, (from_ast(node.operand),))
    if isinstance(node, ast.Name):
        return ("ctx", node.name, ())
    if isinstance(node, ast.EventField):
        return ("event", node.name, ())
    if isinstance(node, ast.StateField):
        return ("state", node.name, ())
    if isinstance(node, ast.StateMeta):
        return ("meta", node.key, ())
    if isinstance(node, ast.Literal_):
        return ("lit", node.value, ())
    if isinstance(node, ast.Attribute):
        return ("attr", node.name.name, (from_ast(node.obj),))
    if isinstance(node, ast.Subscript):
        return ("index", None, (from_ast(node.obj), from_ast(node.index)))
    if isinstance(node, ast.Call):
        return ("call", node.func.name, tuple(from_ast(a) for a in node.args))
    if isinstance(node, ast.ListLit):
        return ("list", None, tuple(from_ast(a) for a in node.items))
    raise AssertionError(f"unexpected node {node!r}")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(expressions)
def test_printed_expression_parses_to_the_same_tree(expr: Expr) -> None:
    text = expr_text(expr)
    parsed = parse_source(f"flow d\ninitial state A {{ on go if {text} -> A }}\n")
    assert not parsed.diagnostics, (text, parsed.diagnostics)
    assert parsed.module is not None
    (state,) = [d for d in parsed.module.decls if isinstance(d, ast.StateDecl)]
    assert from_ast(state.rules[0].guard) == from_expr(expr), text
