"""runtime/operators.py is the one table of the binary operators: the grammar groups as its
levels say, and every consumer (parsers, printer, folding, closures, generated code, the type
checker, the SCXML importer) answers as the table does."""

from __future__ import annotations

import itertools

import pytest

from flowc.compiler import compile_source
from flowc.compiler.emit.expr_text import expr_text
from flowc.compiler.fastparse import _PRECEDENCE
from flowc.compiler.lint.fold import fold
from flowc.compiler.scxml.importer import import_scxml
from flowc.runtime.builtins import BUILTINS
from flowc.runtime.expr import BINARY, ExprCompiler
from flowc.runtime.model import Expr, IRLoadError
from flowc.runtime.operators import BINARY_OPERATORS, EVALUATED

LOGIC = {"and", "or"}
FLOW = """flow t
context {{ a: bool = true, b: bool = true, c: bool = true, x: int = 1, y: int = 2, z: int = 3,
  xs: list[int] = [1] }}
event e
initial state A {{ on e if {guard} -> A }}
"""


def guard_of(text: str) -> Expr:
    result = compile_source(FLOW.format(guard=text), "t.flow")
    assert result.flow is not None, [str(d) for d in result.errors]
    guard = result.flow.transitions[0].guard
    assert guard is not None
    return guard


ARITHMETIC_PAIRS = [
    (f"x {f} y {s} z == 0", f, s) for f, s in itertools.product(["+", "-", "*", "%"], repeat=2)
]
MIXED = [
    ("a or b and c", "or", "and"),
    ("a and b or c", "and", "or"),
    ("a and b and c", "and", "and"),
    ("a and x < y", "and", "<"),
    ("x < y or b", "<", "or"),
    ("x < y + z", "<", "+"),
    ("x + y < z", "+", "<"),
    ("x == y * z", "==", "*"),
    ("x * y == z", "*", "=="),
    ("x + y in xs", "+", "in"),
]


@pytest.mark.parametrize(("text", "first", "second"), ARITHMETIC_PAIRS + MIXED)
def test_the_grammar_groups_as_the_levels_say(text: str, first: str, second: str) -> None:
    guard = guard_of(text)
    wrapped = text.endswith(" == 0") and first not in LOGIC and BINARY_OPERATORS[first].level > 4
    root = guard.args[0] if wrapped else guard
    # Left-associative within a level: the second operator is the root unless it binds tighter.
    first_level, second_level = BINARY_OPERATORS[first].level, BINARY_OPERATORS[second].level
    assert root.op == (first if second_level > first_level else second)
    assert expr_text(guard).replace("(", "").replace(")", "") == text


def test_the_fast_parser_and_the_printer_read_the_table() -> None:
    assert {s: op.level for s, op in BINARY_OPERATORS.items() if s != "not in"} == _PRECEDENCE
    minus = Expr.model_validate(
        {"op": "-", "args": [{"op": "lit", "value": 1}, {"op": "-", "args": [
            {"op": "lit", "value": 2}, {"op": "lit", "value": 3}]}]}
    )  # fmt: skip
    assert expr_text(minus) == "1 - (2 - 3)"


@pytest.mark.parametrize("op", sorted(EVALUATED))
def test_every_consumer_evaluates_as_the_table(op: str) -> None:
    left, right = (2, [1, 2]) if BINARY_OPERATORS[op].kind == "membership" else (7, 2)
    node = {"op": op, "args": [{"op": "lit", "value": left}, {"op": "lit", "value": right}]}
    expected = EVALUATED[op](left, right)
    assert BINARY[op] is EVALUATED[op]
    assert ExprCompiler().compile(node)({}, None, None) == expected
    folded = fold(Expr.model_validate(node))
    assert folded == expected


def test_the_scxml_importer_types_a_division_as_a_float() -> None:
    src = """<scxml xmlns="http://www.w3.org/2005/07/scxml" version="1.0" datamodel="python"
    initial="a"><datamodel><data id="half"/><data id="n"/></datamodel>
    <state id="a"><onentry><assign location="half" expr="1 / 2"/><assign location="n"
    expr="1 + 2"/></onentry></state></scxml>"""
    result = import_scxml(src, "x.scxml")
    assert result.flow_text is not None
    assert "half: float = 0.0" in result.flow_text
    assert "n: int = 0" in result.flow_text
    assert compile_source(result.flow_text, "x.flow").errors == []


@pytest.mark.parametrize(("name", "args"), [("len", 0), ("len", 2), ("min", 1), ("round", 3)])
def test_the_runtime_refuses_a_call_with_the_wrong_number_of_arguments(
    name: str, args: int
) -> None:
    node = {"op": "call", "value": name, "args": [{"op": "lit", "value": 1}] * args}
    with pytest.raises(IRLoadError, match=f"`{name}` takes"):
        ExprCompiler().compile(node)


def test_the_type_checker_counts_arguments_from_the_same_table() -> None:
    for name, known in BUILTINS.items():
        if name in ("active", "coalesce"):
            continue  # checked apart: a state name; a value and its fallback
        too_many = ", ".join(["1"] * (known.most + 1))
        result = compile_source(FLOW.format(guard=f"{name}({too_many}) == 1"), "t.flow")
        assert "E118" in {d.code for d in result.errors}, name
