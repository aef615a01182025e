"""Names local to an expression or a loop: quantifiers (`any(x in xs: ...)`, `all`, `count`,
`sum`, `min`, `max`) and a `for` whose item is no context field."""

from __future__ import annotations

import pytest

from flowc.compiler import compile_source
from flowc.compiler.emit.expr_text import actions_text, expr_text
from flowc.compiler.format import format_source
from flowc.runtime import Limits, Machine, Rejection

from .conftest import frozen

FLOW = """flow orders
type Line { sku: str, qty: int = 1 }
context { total: int = 0, n: int = 0, lo: float = 0.0, big: bool = false, skus: list[str] = [] }
event order(lines: list[Line], ws: list[float])
event pick(lines: list[Line])
initial state A {
  on order if any(l in event.lines: l.qty > 2) and all(w in event.ws: w >= 0.0) -> A do
    total = sum(l in event.lines: l.qty);
    n = count(l in event.lines: l.sku != "");
    lo = min(w in event.ws: w);
    big = any(l in event.lines: any(m in event.lines: l.qty + m.qty > 10))
  on pick -> A do
    skus = [];
    for line, i in event.lines { if line.qty > i { append(skus, line.sku) } }
}
"""
LINES = [{"sku": "a", "qty": 3}, {"sku": "", "qty": 8}, {"sku": "c", "qty": 1}]


@pytest.mark.parametrize("hot_after", [0, 1000])
def test_quantifiers_in_guards_and_actions(hot_after: int) -> None:
    machine = Machine.from_source(FLOW)
    machine.hot_after = hot_after
    inst = machine.start()
    for _ in range(2):
        assert type(inst.send("order", {"lines": LINES, "ws": [2.0, 1.5]})) is not Rejection
        assert inst.context["total"] == 12 and inst.context["n"] == 2
        assert inst.context["lo"] == 1.5 and inst.context["big"] is True
    refused = inst.send("order", {"lines": LINES, "ws": [2.0, -1.0]})  # `all` is false
    assert type(refused) is Rejection and refused.code == "guard_failed"


def test_min_of_an_empty_list_is_a_fault_that_changes_nothing() -> None:
    inst = Machine.from_source(FLOW).start()
    before = frozen(inst)
    refused = inst.send("order", {"lines": LINES, "ws": []})
    assert type(refused) is Rejection and refused.code == "expression_error"
    assert "`min` of an empty list" in refused.message
    assert frozen(inst) == before


def test_nested_quantifiers_share_one_budget() -> None:
    inst = Machine.from_source(FLOW, limits=Limits(max_loop_iterations=1_000)).start()
    lines = [{"sku": "s", "qty": 1}] * 40  # 40 + 40 x 40 items: past 1,000
    refused = inst.send("order", {"lines": [*lines, {"sku": "x", "qty": 3}], "ws": [1.0]})
    assert type(refused) is Rejection and refused.code == "limit_exceeded"


def test_a_loop_whose_item_is_no_field_has_locals_that_never_reach_the_context() -> None:
    inst = Machine.from_source(FLOW).start()
    inst.send("pick", {"lines": LINES})
    assert inst.context["skus"] == ["a", ""]  # 3 > 0, 8 > 1, not 1 > 2
    assert set(inst.context) == {"total", "n", "lo", "big", "skus"}
    assert set(inst.snapshot()["context"]) == set(inst.context)


def test_locals_are_not_in_the_start_schema() -> None:
    result = compile_source(FLOW, "t.flow")
    assert result.flow is not None and result.errors == []
    assert [f.name for f in result.flow.context] == ["total", "n", "lo", "big", "skus"]


def test_the_ir_is_version_2_and_prints_back() -> None:
    result = compile_source(FLOW, "t.flow")
    assert result.flow is not None and result.flow.ir_version == 2
    order, pick = result.flow.transitions
    assert order.guard is not None and order.guard.op == "and"
    assert expr_text(order.guard) == (
        "any(l in event.lines: l.qty > 2) and all(w in event.ws: w >= 0.0)"
    )
    assert order.guard.args[0].op == "any" and order.guard.args[0].value == "l"
    assert pick.actions[1].op == "each"
    assert actions_text(pick.actions[1:]) == (
        "for line, i in event.lines { if line.qty > i { append(skus, line.sku) } }"
    )


def errors(rule: str) -> list[str]:
    src = FLOW.replace("  on pick -> A do", f"  {rule}\n  on pick -> A do")
    return [d.code for d in compile_source(src, "t.flow").errors]


@pytest.mark.parametrize(
    ("rule", "codes"),
    [
        ("on order if any(l in event.lines: l.qty) -> A", ["E205"]),  # not a bool
        ("on order -> A do total = sum(l in event.lines: l.sku)", ["E201"]),  # not numbers
        ("on order if any(total in event.lines: true) -> A", ["E103"]),  # a context field
        ("on order if avg(l in event.lines: true) -> A", ["E117"]),
        ("on order if any(l in total: true) -> A", ["E201"]),
        ("on order -> A do for l in event.lines { l = none }", ["E202"]),  # read-only
        ("on order -> A do for l, total in event.lines { n = 1 }", ["E103"]),  # mixed
        ("on order -> A do for l in event.lines { n = 1 }; n = l.qty", ["E107"]),  # out of scope
        ("on order if l.qty > 1 and any(l in event.lines: true) -> A", ["E107"]),
    ],
)
def test_type_errors(rule: str, codes: list[str]) -> None:
    assert errors(rule) == codes


def test_a_quantifier_needs_item_in_list() -> None:
    errors = compile_source(
        FLOW.replace("any(l in event.lines: l.qty > 2)", "any(event.lines: true)"), "t.flow"
    ).errors
    assert [d.code for d in errors] == ["E003"]
    assert "starts with `ITEM in LIST`" in errors[0].message


def test_fmt_keeps_a_quantifier_on_one_line() -> None:
    text = format_source(
        FLOW.replace("count(l in event.lines: l.sku", "count( l in event.lines :l.sku")
    )
    assert "count(l in event.lines: l.sku" in text


WHOLE = """flow whole
context { xs: list[int] = [3, 1, 2], flags: list[bool] = [true, false], t: int = 0,
  hi: int = 0, k: int = 0, none_yet: list[int]? = none }
event e
initial state A {
  on e if any(flags) and not all(flags) and min(xs) < 2 -> A do
    t = sum(xs); hi = max(xs); k = count(flags) + min(1, 2)
}
"""


@pytest.mark.parametrize("hot_after", [0, 1000])
def test_a_quantifier_over_the_items_themselves(hot_after: int) -> None:
    machine = Machine.from_source(WHOLE)
    machine.hot_after = hot_after
    inst = machine.start()
    assert type(inst.send("e")) is not Rejection
    assert (inst.context["t"], inst.context["hi"], inst.context["k"]) == (6, 3, 2)
    result = compile_source(WHOLE, "w.flow")
    assert result.flow is not None
    rule = result.flow.transitions[0]
    assert rule.guard is not None
    assert expr_text(rule.guard) == "any(flags) and not all(flags) and min(xs) < 2"
    assert actions_text(rule.actions) == "t = sum(xs); hi = max(xs); k = count(flags) + min(1, 2)"


@pytest.mark.parametrize(
    ("expr", "code"),
    [("sum(flags)", "E201"), ("count(xs)", "E201"), ("sum(none_yet)", "E208"), ("sum()", "E118")],
)
def test_whole_list_type_errors(expr: str, code: str) -> None:
    src = WHOLE.replace("t = sum(xs)", f"t = {expr}")
    assert [d.code for d in compile_source(src, "w.flow").errors] == [code]
