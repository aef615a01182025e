"""Statecharts compiled from `.flow` source and run: what the compiler and the kernel agree on."""

from __future__ import annotations

from flowc.runtime import Machine
from flowc.runtime.clock import FakeClock

CABIN = """
flow cabin
event call(floor: int(0..4))
context { current: int(0..4) = 0, destination: int(0..4) = 0 }

initial state idle {
  always if destination != current -> moving
  on call -> self do destination = event.floor
}
state moving {
  initial state going_up {
    after 1s -> self do current += 1
  }
  always if destination == current -> idle
}
"""


def test_a_repeating_timer_stops_when_an_eventless_rule_leaves_its_state() -> None:
    clock = FakeClock()
    machine = Machine.from_source(CABIN, clock=clock)
    instance = machine.start()
    instance.send("call", {"floor": 2})
    assert instance.configuration == ("moving", "going_up")
    clock.advance(1)
    instance.advance()
    assert instance.get("current") == 1
    clock.advance(1)
    instance.advance()
    # The timer step reached floor 2; the eventless rule of `moving` then left it, in the same
    # step: the repeating timer must not be armed again.
    assert instance.state == "idle"
    assert instance.get("current") == 2
    assert instance.timers == []
    clock.advance(5)
    instance.advance()
    assert instance.get("current") == 2


REGIONS = """
flow regions
event go
context { n: int = 0 }

initial parallel state both {
  state left { initial state l1 { entry do n += 1 } }
  state right { initial state r1 { entry do n += 1 } }
}
"""


def test_wiring_a_child_before_its_parent_does_not_deadlock() -> None:
    # A child's entry block wires the child, which reads (and so wires) its parent: the
    # wiring lock is taken twice in one thread. It once deadlocked here.
    import threading

    machine = Machine.from_source(REGIONS)
    started: list[object] = []
    worker = threading.Thread(target=lambda: started.append(machine.start()), daemon=True)
    worker.start()
    worker.join(timeout=30)
    assert not worker.is_alive(), "start() is stuck wiring nested states"
    (instance,) = started
    assert instance.get("n") == 2  # type: ignore[attr-defined]


DONE_AT_ONCE = """
flow done_at_once
event t

initial parallel state p {
  on done.state.p -> finished
  state r1 {
    initial state x { on t -> y }
    final state y
  }
  state r2 {
    initial final state z
  }
}
final state finished
"""


def test_a_region_may_start_in_its_final_child() -> None:
    instance = Machine.from_source(DONE_AT_ONCE).start()
    assert instance.active("z") and not instance.is_final
    instance.send("t")
    # r1 completes; r2 was complete from the start: the parallel state is done.
    assert instance.state == "finished" and instance.is_final


BOOT = """
flow boot
event go
initial state outer {
  initial state booting { always -> ready }
  state ready { on go -> done }
  final state done
  on done.state.outer -> over
}
final state over
"""


def test_the_rules_a_start_and_a_step_took_are_told_by_index() -> None:
    machine = Machine.from_source(BOOT)
    instance = machine.start()
    # The start settled through `booting`'s eventless rule (#1).
    assert instance.start_rules_taken == (1,)
    step = instance.send("go").unwrap()
    # `go` (#2), then the completion event of `outer` (#0) in the same step.
    assert step.rules_taken == (2, 0)
    assert instance.state == "over"
    assert Machine.from_source(BOOT).restore(instance.snapshot()).start_rules_taken is None
    assert Machine.from_source("flow f\ninitial state a\n").start().start_rules_taken == ()
