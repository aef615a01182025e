"""The engine (runtime/engine.py): one plan per transition, run by both dispatch paths."""

from __future__ import annotations

from typing import Any

from flowc.runtime import FakeClock, Machine, Rejection
from flowc.runtime.engine import plan_of

from .conftest import machine

FLOW = """
flow kernel

context {
  log: list[str] = []
  n: int = 0
}

event go
event poke
event fail

initial state A {
  exit do append(log, "exit A")
  on go -> B do append(log, "go")
  on poke -> self do append(log, "poke")
  on fail -> C
  after 5s -> B
}

state B {
  entry do append(log, "entry B")
  after 3s -> A
  after 7s -> C
}

state C {
  entry do n = 10 % n
}
"""


def rule(m: Machine, state: str, event: str) -> Any:
    return m.states[state].on[event][1][0]


def test_an_external_plan_leaves_runs_enters_and_arms() -> None:
    m = machine(FLOW)
    plan = plan_of(rule(m, "A", "go"))
    assert [s.name for s in plan.exits] == ["A"] and [s.name for s in plan.entries] == ["B"]
    assert [(s.phase, s.state.name) for s in plan.steps] == [
        ("exit", "A"),
        ("actions", "A"),
        ("entry", "B"),
    ]
    assert [t.after_ms for t in plan.arm] == [3000, 7000]
    assert plan.copies and not plan.internal and not plan.repeats
    assert plan_of(rule(m, "A", "go")) is plan  # worked out once


def test_an_internal_plan_runs_only_its_actions_and_keeps_the_timers() -> None:
    m = machine(FLOW)
    plan = plan_of(rule(m, "A", "poke"))
    assert plan.internal and plan.exits == () and plan.entries == () and plan.arm == ()
    assert [s.phase for s in plan.steps] == ["actions"]


def test_a_plan_with_no_blocks_does_not_copy_the_context() -> None:
    m = machine(FLOW)
    plan = plan_of(m.states["B"].timers[0])  # B -> A: B has no exit, A no entry
    assert plan.steps == () and not plan.copies and [t.after_ms for t in plan.arm] == [5000]


def paths(hot_after: int) -> list[Any]:
    """The same run on one path: events, then both of B's timers."""
    clock = FakeClock()
    m = Machine.from_source(FLOW, "k.flow", clock=clock).preload()
    m.hot_after = hot_after
    inst = m.start()
    out: list[Any] = []
    for event in ("poke", "poke", "go"):
        r = inst.send(event)
        out.append((r.to_dict()["to"], inst.context["log"], [t["after_ms"] for t in inst.timers]))
    clock.advance(3)
    out.append([r.to_dict()["to"] for r in inst.advance()])
    out.append((inst.state, [t["after_ms"] for t in inst.timers], inst.context["log"]))
    return out


def test_generated_and_general_paths_take_the_same_plan() -> None:
    general = paths(10**9)  # never hot
    assert paths(0) == general
    assert general[2] == ("B", ["poke", "poke", "exit A", "go", "entry B"], [3000, 7000])
    assert general[3] == ["A"] and general[4][1] == [5000]


def test_a_fault_in_entry_actions_names_the_state_entered() -> None:
    inst = machine(FLOW).start()
    r = inst.send("fail")
    assert isinstance(r, Rejection) and r.code == "expression_error"
    assert r.data["where"] == "the entry actions of C"
    assert inst.state == "A"


ROUTING = """
flow routing
context { items: list[int] = [] }
event go
initial state A {
  on go -> R
}
choice state R {
  if items[0] > 1 -> B
  else -> B
}
state B
"""


def test_a_fault_in_a_route_reads_the_same_on_both_kernels() -> None:
    # The flat flow routes on the general path (`_route`); nesting the same states in a
    # compound state makes it a statechart, whose kernel takes the route as a microstep.
    nested = ROUTING.replace("initial state A", "initial state P {\n  initial state A").replace(
        "state B\n", "state B\n}\n"
    )
    found = []
    for source in (ROUTING, nested):
        m = machine(source)
        inst = m.start()
        r = inst.send("go")
        assert isinstance(r, Rejection) and r.code == "expression_error"
        found.append((m.chart, r.data["where"]))
    (flat_chart, flat_where), (nested_chart, nested_where) = found
    assert not flat_chart and nested_chart
    assert flat_where == "routing through R (rule #1 of R: choice -> B (line 9))"
    assert nested_where == "routing through R (rule #1 of R: choice -> B (line 10))"
