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
