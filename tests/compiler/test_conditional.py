"""`if(COND, THEN, ELSE)`, the conditional expression, from source to every back end."""

from __future__ import annotations

import pytest

from flowc.compiler import compile_source
from flowc.compiler.emit.expr_text import expr_text
from flowc.compiler.format import format_source
from flowc.compiler.lint.fold import constant_guard, fold
from flowc.runtime import Machine, Rejection
from flowc.runtime.model import Expr

FLOW = """flow pick
context { n: int = 0, note: str? = none, out: float = 0.0, word: str = "" }
event e(x: int)
event name(s: str?)
initial state A {
  on e if if(event.x > 0, n >= 0, false) -> A do
    out = if(n != 0, event.x / n, 0.5);
    n = if(event.x > 2, 1, if(note != none, len(note), 0))
  on name -> A do note = event.s; word = if(note == none, "nobody", note)
}
"""


def errors(rule: str) -> list[str]:
    src = FLOW.replace(
        "  on name -> A do note = event.s;", f"  {rule}\n  on name -> A do note = event.s;"
    )
    return [d.code for d in compile_source(src, "t.flow").errors]


def test_it_compiles_to_a_version_2_cond_node_printed_back_as_written() -> None:
    result = compile_source(FLOW, "t.flow")
    assert result.errors == [] and result.flow is not None
    assert result.flow.ir_version == 2
    rule = result.flow.transitions[0]
    assert rule.guard is not None and rule.guard.op == "cond"
    assert expr_text(rule.guard) == "if(event.x > 0, n >= 0, false)"
    assert expr_text(rule.actions[1].value) == "if(event.x > 2, 1, if(note != none, len(note), 0))"


@pytest.mark.parametrize("hot_after", [0, 1000])
def test_only_the_chosen_value_is_evaluated(hot_after: int) -> None:
    machine = Machine.from_source(FLOW)
    machine.hot_after = hot_after
    inst = machine.start()
    for _ in range(3):
        step = inst.send("e", {"x": 5})  # n is 0: `event.x / n` would divide by zero
        assert type(step) is not Rejection, step
        assert inst.get("out") == 0.5
        inst.send("e", {"x": 1})  # n is 1 now, note none: n becomes 0
    assert inst.send("e", {"x": 0}).__class__ is Rejection  # the guard: if(false, ..., false)
    inst.send("name", {"s": "ab"})
    assert inst.get("word") == "ab"
    inst.send("e", {"x": 1})
    assert inst.get("n") == 2  # len(note)
    inst.send("name", {"s": None})
    assert inst.get("word") == "nobody"


@pytest.mark.parametrize(
    ("rule", "code"),
    [
        ('on e -> A do n = if(true, 1, "one")', "E201"),  # the two values differ
        ("on e -> A do n = if(n, 1, 2)", "E205"),  # the test is not a bool
        ("on e -> A do n = if(note == none, len(note), 0)", "E208"),  # narrowed the wrong way
        ("on e -> A do word = if(n > 0, 1.5, 2)", "E202"),  # a float is no str
    ],
)
def test_type_errors(rule: str, code: str) -> None:
    assert errors(rule) == [code]


def test_a_constant_test_folds_to_the_chosen_value() -> None:
    def lit(value: object) -> dict[str, object]:
        return {"op": "lit", "value": value}

    cond = Expr.model_validate({"op": "cond", "args": [lit(True), lit(False), lit(True)]})
    assert constant_guard(cond) is False
    unknown = {"op": "ctx", "value": "n"}
    assert fold(Expr.model_validate({"op": "cond", "args": [unknown, lit(1), lit(1)]})) != 1


def test_fmt_writes_it_as_a_call() -> None:
    assert "if(n > 1, 2, 3)" in format_source(
        FLOW.replace("if(event.x > 2,", "if  (n>1,2,3) + if(event.x > 2,")
    )
