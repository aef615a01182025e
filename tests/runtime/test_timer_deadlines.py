"""Timers due at one deadline: tried in source order, the first whose guard holds is taken."""

from __future__ import annotations

from flowc.runtime import FakeClock, Machine

from .conftest import machine

COUNTDOWN = """
flow countdown

context { n: int = 3 }

initial state WAIT {
  after 1s if n > 1 -> self do n -= 1
  after 1s -> DONE
}

final state DONE
"""

POLL = """
flow poll

context {
  ready: bool = false
  polls: int = 0
}

event ready

initial state POLLING {
  on ready -> self do ready = true
  after 2s if ready -> GO
  after 2s -> self do polls += 1
}

final state GO
"""


def test_only_the_first_timer_whose_guard_holds_fires_at_a_deadline() -> None:
    clock = FakeClock()
    inst = machine(COUNTDOWN, clock).start()
    clock.advance(1)
    [step] = inst.advance()  # before: the `-> self` and then `-> DONE`, both at +1 s
    assert step.ok and step.to == "WAIT" and inst.get("n") == 2  # type: ignore[union-attr]
    assert inst.state == "WAIT" and not inst.is_final


def test_the_timers_tried_with_a_repeating_one_repeat_with_it() -> None:
    clock = FakeClock()
    inst = machine(COUNTDOWN, clock).start()
    targets = []
    for _ in range(3):
        clock.advance(1)
        targets += [r.to for r in inst.advance()]  # type: ignore[union-attr]
    assert targets == ["WAIT", "WAIT", "DONE"] and inst.get("n") == 1


def test_a_late_advance_takes_one_timer_per_deadline() -> None:
    clock = FakeClock()
    inst = machine(COUNTDOWN, clock).start()
    clock.advance(10)
    assert [r.to for r in inst.advance()] == ["WAIT", "WAIT", "DONE"]  # type: ignore[union-attr]
    assert [h.timestamp - inst.history[0].timestamp for h in inst.history] == [0, 1, 2, 3]


def test_an_earlier_timer_whose_guard_fails_is_tried_again_at_the_next_round() -> None:
    clock = FakeClock()
    inst = machine(POLL, clock).start()
    clock.advance(2)
    assert [r.to for r in inst.advance()] == ["POLLING"]  # type: ignore[union-attr]
    assert inst.send("ready").ok
    clock.advance(2)
    assert [r.to for r in inst.advance()] == ["GO"]  # type: ignore[union-attr]
    assert inst.get("polls") == 1


def test_both_dispatch_paths_leave_the_same_timers() -> None:
    for hot_after in (0, 1000):
        clock = FakeClock()
        m = Machine.from_source(POLL, "poll.flow", clock=clock)
        m.hot_after = hot_after
        inst = m.start()
        clock.advance(2)
        inst.advance()
        assert inst.send("ready").ok
        assert [t["after_ms"] for t in inst.timers] == [2000, 2000]
