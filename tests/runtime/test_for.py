"""`for item, i in LIST { ... }`: a bounded loop action, compiled from source and run."""

from __future__ import annotations

import pytest

from flowc.compiler import compile_source
from flowc.compiler.emit.expr_text import actions_text
from flowc.runtime import Machine, Rejection

LOOPS = """
flow loops
event go(xs: list[int])
event grow
event walk(data: json)
context {
  total: int = 0
  x: int = 0
  i: int = 0
  seen: list[int] = []
  names: list[str] = ["a", "b"]
  name: str = ""
  count: int = 0
  j: json = none
  box: map[str, list[int]] = {"k": [1]}
}
initial state A {
  on go -> A do for x, i in event.xs { total += x * i; append(seen, x) }
  on grow -> A do for name in names { names += [name]; count += 1 }
  on walk -> A do for j in event.data { count += 1 }
}
"""


def test_the_body_runs_once_per_item_with_the_fields_set() -> None:
    inst = Machine.from_source(LOOPS).start()
    inst.send("go", {"xs": [3, 4, 5]})
    assert inst.get("total") == 0 * 3 + 1 * 4 + 2 * 5
    assert inst.get("seen") == [3, 4, 5]
    assert (inst.get("x"), inst.get("i")) == (5, 2)  # the last item stays, as in SCXML


def test_the_loop_goes_through_the_list_as_it_was_when_it_started() -> None:
    inst = Machine.from_source(LOOPS).start()
    inst.send("grow")  # the body appends to the list it goes through
    assert inst.get("count") == 2
    assert inst.get("names") == ["a", "b", "a", "b"]


def test_a_json_value_that_is_not_a_list_is_a_fault_and_changes_nothing() -> None:
    inst = Machine.from_source(LOOPS).start()
    assert type(inst.send("walk", {"data": [1, 2, 3]})) is not Rejection
    assert inst.get("count") == 3
    refused = inst.send("walk", {"data": {"a": 1}})
    assert type(refused) is Rejection and refused.code == "expression_error"
    assert "`for` needs a list, got a map" in refused.message
    assert inst.get("count") == 3


@pytest.mark.parametrize("hot_after", [0, 1000])
def test_generated_dispatch_and_general_path_agree(hot_after: int) -> None:
    machine = Machine.from_source(LOOPS)
    machine.hot_after = hot_after
    for _ in range(3):
        inst = machine.start()
        inst.send("go", {"xs": [1, 2]})
        inst.send("grow")
        assert inst.context["total"] == 2 and inst.context["count"] == 2


def test_what_an_earlier_action_copied_is_copied_again_after_a_loop() -> None:
    # `box` is copied by `box.k = [0]`; the loop's body makes it the payload's record (shared,
    # not copied), which the last action must copy again rather than change in place.
    src = """
flow share
type Box { k: list[int] = [] }
event put(m: Box)
context { box: Box = {"k": [1]}, n: int = 0 }
initial state A {
  on put -> A do box.k = [0]; for n in [1] { box = event.m }; box.k = [5]
}
"""
    inst = Machine.from_source(src).start()
    inst.send("put", {"m": {"k": [1, 2]}})
    assert inst.get("box") == {"k": [5]}
    assert inst.history[-1].payload == {"m": {"k": [1, 2]}}


def test_the_ir_and_its_text() -> None:
    result = compile_source(LOOPS, "loops.flow")
    assert result.flow is not None and result.flow.ir_version == 2
    go = result.flow.transitions[0]
    (loop,) = go.actions
    assert loop.op == "for" and loop.target == ("x",) and loop.index == "i"
    assert actions_text(go.actions) == ("for x, i in event.xs { total += x * i; append(seen, x) }")


def errors(action: str) -> list[tuple[str, str]]:
    src = LOOPS.replace("for x, i in event.xs { total += x * i; append(seen, x) }", action)
    result = compile_source(src, "loops.flow")
    return [(d.code, d.message) for d in result.diagnostics if d.severity == "error"]


def test_type_errors() -> None:
    assert errors("for x in total { }") == [("E201", "`for` goes through a list, this is `int`")]
    assert errors("for name in event.xs { }") == [
        ("E202", "`name` is `str`, the list's items are `int`")
    ]
    assert errors("for x, name in event.xs { }") == [
        ("E202", "`name` takes the position, an `int`; it is `str`")
    ]
    # an item that is no context field is local to the loop (tests/runtime/test_locals.py)
    assert errors("for nope in event.xs { }") == []
    assert [c for c, _ in errors("for nope in event.xs { nope = 1 }")] == ["E202"]
    assert [c for c, _ in errors("for x in event.xs { total += name }")] == ["E202"]


def test_for_is_still_a_field_name() -> None:
    src = """
flow f
event go
context { for: int = 0, xs: list[int] = [10, 20] }
initial state A { on go -> A do for = 3; for for in xs { for += 1 } }
"""
    inst = Machine.from_source(src).start()
    inst.send("go")
    assert inst.get("for") == 21
