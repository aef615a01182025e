"""One clock for the flows, the store and the workers: `DurableFlows(store, machines,
clock=fake)` hands its clock to the store, and `worker()` (or `worker(clock=...)`) claims by
it, so under a fake clock timers fire when that clock says, on every backend."""

from __future__ import annotations

import time
from typing import Any

import pytest

from flowc.runtime import FakeClock, Machine
from flowc.runtime.store import MemoryStore, open_store
from flowc.runtime.store.durable import DurableFlows

ALARMS = """
flow alarms
context { ticks: int = 0 }
event stop
initial state Waiting {
  after 3h -> Rang
  after 1h -> self do ticks += 1
  on stop -> Rang
}
final state Rang
"""


def alarms(clock: FakeClock) -> Machine:
    return Machine.from_source(ALARMS, "alarms.flow", clock=clock)


def test_a_3h_timer_waits_and_a_1h_timer_fires_once_per_hour(store_url: str) -> None:
    clock = FakeClock()
    # The store is opened on the real clock: DurableFlows gives it its own.
    with DurableFlows(open_store(store_url), [alarms(clock)], clock=clock) as flows:
        assert flows.store.clock is clock
        flows.start("alarms", id="a")
        worker = flows.worker()
        assert worker.run_once() == 0  # nothing is due yet
        for hour in (1, 2):
            clock.advance(hours=1)
            assert worker.run_once() == 1
            instance = flows.load("a")
            assert (instance.state, instance.context["ticks"]) == ("Waiting", hour)
            assert worker.run_once() == 0  # re-armed an hour on: not due again
        clock.advance(hours=1)
        worker.run_once()
        assert flows.load("a").state == "Rang"


def test_worker_takes_a_clock_of_its_own(store_url: str) -> None:
    clock = FakeClock()
    with DurableFlows(open_store(store_url), [alarms(clock)], clock=clock) as flows:
        flows.start("alarms", id="a")
        later = FakeClock(clock.now + 3600)
        worker = flows.worker(clock=later, owner="w1")  # once a TypeError
        assert worker.clock is later and worker.run_once() == 1
        assert flows.worker().clock is clock


def test_without_a_clock_flows_read_the_stores(store_url: str) -> None:
    clock = FakeClock()
    with DurableFlows(open_store(store_url, clock=clock), [alarms(clock)]) as flows:
        assert flows.clock is clock
        flows.start("alarms", id="a")
        [timer, _] = flows.store.timers("a")
        assert timer.deadline == clock.now + 3600
        assert flows.worker().run_once() == 0


def test_the_store_stamps_steps_with_the_flows_clock(store_url: str) -> None:
    clock = FakeClock()
    with DurableFlows(open_store(store_url), [alarms(clock)], clock=clock) as flows:
        flows.start("alarms", id="a")
        clock.advance(minutes=5)
        out = flows.send("a", "stop")
        assert out.record is not None and out.record.updated_at == pytest.approx(clock.now)
        assert flows.store.load("a").created_at == pytest.approx(clock.now - 300)


class _StoreOfOld:
    """A host's own store, written before stores had a `clock` attribute."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        if name == "clock":
            raise AttributeError(name)
        return getattr(self._inner, name)


def test_a_store_without_a_clock_attribute_still_runs() -> None:
    clock = FakeClock()
    store = _StoreOfOld(MemoryStore(clock=clock))
    with DurableFlows(store, [alarms(clock)], clock=clock) as flows:  # type: ignore[arg-type]
        assert flows.clock is clock and not hasattr(store, "clock")
        assert flows.start("alarms", id="a").ok
    assert DurableFlows(store, [alarms(clock)]).clock is time.time  # type: ignore[arg-type]
