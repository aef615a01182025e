"""`xs[i] = v`, `m[k] = v` and `delete(m, k)`: one item of a list or map changed in place."""

from __future__ import annotations

import pytest

from flowc.compiler import compile_source
from flowc.compiler.emit.expr_text import actions_text
from flowc.compiler.format import format_source
from flowc.runtime import Limits, Machine, Rejection
from flowc.runtime.model import CompiledFlow

from .conftest import frozen

FLOW = """flow items
type R { ys: list[str] }
context {
  xs: list[int] = [1, 2, 3]
  m: map[str, int] = {"a": 1}
  r: R = {"ys": ["a"]}
  maybe: map[str, int]? = none
  n: int = 0
}
event put(i: int, k: str)
event drop(k: str)
initial state A {
  on put -> A do xs[event.i] = 10; m[event.k] = len(xs); r.ys[0] = event.k
  on drop -> A do delete(m, event.k)
}
"""


def errors(action: str) -> list[str]:
    src = FLOW.replace("delete(m, event.k)", action)
    return [d.code for d in compile_source(src, "t.flow").errors]


@pytest.mark.parametrize("hot_after", [0, 1000])
def test_an_item_is_replaced_or_set_and_a_key_deleted(hot_after: int) -> None:
    machine = Machine.from_source(FLOW)
    machine.hot_after = hot_after
    for _ in range(2):
        inst = machine.start()
        inst.send("put", {"i": 1, "k": "z"})
        assert inst.context["xs"] == [1, 10, 3]
        assert inst.context["m"] == {"a": 1, "z": 3}
        assert inst.context["r"] == {"ys": ["z"]}
        inst.send("drop", {"k": "a"})
        assert inst.context["m"] == {"z": 3}
        inst.send("drop", {"k": "nothing"})  # a missing key is not a fault
        assert inst.context["m"] == {"z": 3}
    # the defaults the machine starts from are not changed in place
    assert machine.start().context == {
        "xs": [1, 2, 3], "m": {"a": 1}, "r": {"ys": ["a"]}, "maybe": None, "n": 0,
    }  # fmt: skip


@pytest.mark.parametrize("i", [3, -1])
def test_an_index_out_of_range_is_a_fault_that_changes_nothing(i: int) -> None:
    inst = Machine.from_source(FLOW).start()
    before = frozen(inst)
    refused = inst.send("put", {"i": i, "k": "z"})
    assert type(refused) is Rejection and refused.code == "expression_error"
    assert f"index {i} is out of range for a list of 3 items" in refused.message
    assert frozen(inst) == before


def test_a_map_may_not_grow_past_the_item_limit() -> None:
    inst = Machine.from_source(FLOW, limits=Limits(max_items=3)).start()
    inst.send("put", {"i": 0, "k": "b"})
    inst.send("put", {"i": 0, "k": "c"})
    before = frozen(inst)
    refused = inst.send("put", {"i": 0, "k": "d"})
    assert type(refused) is Rejection and refused.code == "limit_exceeded"
    assert frozen(inst) == before
    assert type(inst.send("put", {"i": 0, "k": "c"})) is not Rejection  # replacing is fine


def test_the_ir_is_version_2_and_prints_back() -> None:
    result = compile_source(FLOW, "t.flow")
    assert result.errors == [] and result.flow is not None
    assert result.flow.ir_version == 2
    put, drop = result.flow.transitions
    assert [a.op for a in put.actions] == ["put", "put", "put"]
    assert put.actions[2].target == ("r", "ys") and put.actions[2].key is not None
    assert actions_text(put.actions) == (
        "xs[event.i] = 10; m[event.k] = len(xs); r.ys[0] = event.k"
    )
    assert actions_text(drop.actions) == "delete(m, event.k)"
    assert CompiledFlow.from_json(result.flow.to_json()) == result.flow


@pytest.mark.parametrize(
    ("action", "codes"),
    [
        ("n[0] = 1", ["E201"]),  # not a list or map
        ('xs["a"] = 1', ["E201"]),  # a list's key is an int
        ('xs[0] = "s"', ["E202"]),  # the item type
        ("m[0] = 1", ["E201"]),  # a map's key is a str
        ("maybe[event.k] = 1", ["E208"]),
        ('delete(xs, "a")', ["E201"]),
        ("delete(m, 1)", ["E201"]),
        ("delete(m)", ["E118"]),
        ("nope[0] = 1", ["E107"]),
    ],
)
def test_type_errors(action: str, codes: list[str]) -> None:
    assert errors(action) == codes


def test_fmt_writes_an_item_as_an_index() -> None:
    assert "xs[event.i] = 10" in format_source(
        FLOW.replace("xs[event.i] = 10", "xs [ event.i ]=10")
    )
