"""The work and the outputs of one step are bounded: nested loops, emit and raise storms are
refused with `limit_exceeded` before they exhaust time or memory, the instance unchanged."""

from __future__ import annotations

import time

import pytest

from flowc.runtime import Limits, Machine, Rejection

from .conftest import frozen

LOOPS = """
flow nested
effect fx(s: str)
event pairs(ys: list[int])
event twice(ys: list[int])
event storm(big: str, ys: list[int])
event spam(ys: list[int])
context {
  n: int = 0
  i: int = 0
  j: int = 0
  k: int = 0
}
initial state A {
  on pairs -> A do for i in event.ys { for j in event.ys { n += 1 } }
  on twice -> A do for i in event.ys { n += 1 }; for j in event.ys { n += 1 }
  on storm -> A do for i in event.ys { emit fx(s: event.big + str(i)) }
  on spam -> A do for i in event.ys { emit fx(s: "") }
}
"""


def refused(result: object, words: str) -> None:
    assert type(result) is Rejection, result
    assert result.code == "limit_exceeded"
    assert words in result.message


@pytest.mark.parametrize("hot_after", [0, 1000])
def test_nested_loops_are_refused_before_they_run(hot_after: int) -> None:
    machine = Machine.from_source(LOOPS)
    machine.hot_after = hot_after
    inst = machine.start()
    inst.send("pairs", {"ys": [1, 2, 3]})
    assert inst.get("n") == 9
    before = frozen(inst)
    began = time.perf_counter()
    refused(inst.send("pairs", {"ys": list(range(100_000))}), "Limits.max_loop_iterations")
    assert time.perf_counter() - began < 2  # refused up front: 10^10 iterations not started
    assert frozen(inst) == before


def test_the_budget_is_for_all_the_loops_of_one_step() -> None:
    inst = Machine.from_source(LOOPS).start()
    ys = list(range(60_000))
    before = frozen(inst)
    refused(inst.send("twice", {"ys": ys}), "more than 100,000 iterations")
    assert frozen(inst) == before
    # one step's budget is not spent by the next: each of these steps runs 2 x 40,000
    for _ in range(2):
        assert type(inst.send("twice", {"ys": ys[:40_000]})) is not Rejection
    assert inst.get("n") == 160_000


def test_a_machine_may_raise_its_loop_budget() -> None:
    inst = Machine.from_source(LOOPS, limits=Limits(max_loop_iterations=2_000_000)).start()
    assert type(inst.send("pairs", {"ys": list(range(1_000))})) is not Rejection
    assert inst.get("n") == 1_000_000


def test_an_emit_storm_is_refused_by_size_not_a_memory_error() -> None:
    inst = Machine.from_source(LOOPS).start()
    before = frozen(inst)
    big = "x" * 999_990
    refused(inst.send("storm", {"big": big, "ys": list(range(100_000))}), "max_output_size")
    assert frozen(inst) == before
    step = inst.send("storm", {"big": big, "ys": [1, 2, 3]})
    assert [len(e["payload"]["s"]) for e in step.effects] == [999_991] * 3


def test_too_many_effects_in_one_step_are_refused() -> None:
    inst = Machine.from_source(LOOPS).start()
    before = frozen(inst)
    refused(inst.send("spam", {"ys": list(range(1_001))}), "Limits.max_outputs")
    assert frozen(inst) == before
    assert len(inst.send("spam", {"ys": list(range(1_000))}).effects) == 1_000


CHART = """
flow raising
event go(ys: list[int], s: str)
event ping(s: str)
context { i: int = 0, n: int = 0, s: str = "" }
initial state P {
  initial state A {
    on go -> A do for i in event.ys { raise ping(s: event.s) }
    on ping -> A do n += 1
  }
}
"""


def test_a_raise_storm_is_refused_and_changes_nothing() -> None:
    inst = Machine.from_source(CHART).start()
    before = frozen(inst)
    refused(inst.send("go", {"ys": list(range(50)), "s": "y" * 1_000_000}), "max_output_size")
    assert frozen(inst) == before
    limits = Limits(max_output_size=10**9, max_microsteps=10_000)
    inst = Machine.from_source(CHART, limits=limits).start()
    refused(inst.send("go", {"ys": list(range(5_000)), "s": ""}), "Limits.max_outputs")


def test_a_start_whose_entry_loops_too_much_is_refused() -> None:
    src = """
flow entry_loops
context { xs: list[int] = [], i: int = 0, j: int = 0, n: int = 0 }
initial state A { entry do for i in xs { for j in xs { n += 1 } } }
"""
    machine = Machine.from_source(src)
    refused(machine.try_start({"xs": list(range(1_000))}), "Limits.max_loop_iterations")
    assert machine.start({"xs": list(range(300))}).get("n") == 90_000
