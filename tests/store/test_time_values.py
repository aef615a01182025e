"""One type per time value, as docs/runtime.md and docs/persistence.md say: the engine's
`Instance` gives aware UTC datetimes (`next_deadline`, `timers[i]["due"]`, `history[i].at`),
the stores give epoch seconds as floats (`next_deadline()`, deadlines, leases, `at`,
`created_at`, `updated_at`), on every backend, and the two name the same instant. `flowc
instances list --limit` takes N >= 0 on every store."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from flowc.compiler.cli import main
from flowc.runtime import FakeClock, Machine
from flowc.runtime.clock import to_seconds
from flowc.runtime.store import open_store
from flowc.runtime.store.durable import DurableFlows

FLOW = """
flow reminder
effect ping
event done
initial state Waiting {
  entry do emit ping
  after 90m -> Late
  on done -> Finished
}
final state Late
final state Finished
"""


def test_instance_times_are_datetimes_and_store_times_are_seconds(store_url: str) -> None:
    clock = FakeClock()
    machine = Machine.from_source(FLOW, "reminder.flow", clock=clock)
    with DurableFlows(open_store(store_url), [machine], clock=clock) as flows:
        flows.start("reminder", id="r")
        instance = flows.load("r")
        due = instance.next_deadline
        assert isinstance(due, datetime) and due.tzinfo == UTC
        assert instance.timers[0]["due"] == due
        assert isinstance(instance.history[0].at, datetime)
        store = flows.store
        deadline = store.next_deadline()
        assert type(deadline) is float and deadline == to_seconds(due) == clock.now + 5400
        [timer] = store.timers("r")
        assert type(timer.deadline) is float and timer.deadline == deadline
        [claim] = store.claim_due_timers("w", now=deadline, lease=30)
        assert type(claim.deadline) is float and type(claim.lease_until) is float
        record = store.load("r")
        assert type(record.created_at) is float and type(record.updated_at) is float
        [row] = store.history("r")
        assert type(row.at) is float and row.at == to_seconds(instance.history[0].at)
        [effect] = store.pending_effects()
        assert type(effect.at) is float


def test_a_negative_limit_is_refused_by_every_store(
    store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    store = open_store(store_url)
    for bad in ({"limit": -1}, {"offset": -1}):
        with pytest.raises(ValueError, match="0 or more"):
            store.instances(**bad)
    with pytest.raises(ValueError):
        store.pending_effects(limit=-1)
    assert main(["instances", "list", "--store", store_url, "--limit", "-1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--limit" in err
    assert main(["instances", "list", "--store", store_url, "--limit", "0"]) == 0
