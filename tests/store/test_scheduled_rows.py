"""Scheduled events (`send E after D as ID`) are timers in every store: a row each, fired once
across workers, kept across a restart, cancelled with `cancel` and when the instance ends."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flowc.runtime.store import Store
from flowc.runtime.store.durable import DurableFlows
from store.flows import machine
from store.test_cli import flowc
from store.toy import Clock

REMIND = """\
flow remind
context { reminded: int = 0 }
internal event remind(n: int)
event ask
event answer
event close
initial state WAITING {
  on ask -> WAITING do send remind(n: 2) after 30s as "r"
  on remind -> WAITING do reminded += event.n
  on answer -> WAITING do cancel "r"
  on close -> CLOSED
}
final state CLOSED
"""


def flows(store: Store, clock: Clock) -> DurableFlows:
    return DurableFlows(store, [machine(REMIND)], clock=clock)


def test_a_scheduled_event_is_a_timer_row_fired_once(store: Store, clock: Clock) -> None:
    d = flows(store, clock)
    d.start("remind", id="a")
    d.send("a", "ask")
    (row,) = store.timers("a")
    assert row.timer_id == "send:r" and row.state == "WAITING"
    assert row.deadline == pytest.approx(clock.now + 30)
    assert row.data == {"event": "remind", "id": "r"}
    first, second = d.worker(owner="w1"), flows(store, clock).worker(owner="w2")
    assert first.run_once() == 0 and second.run_once() == 0, "not due yet"
    clock.advance(30)
    assert first.run_once() == 1
    assert second.run_once() == 0, "fired once across workers"
    a = d.load("a")
    assert a.context["reminded"] == 2 and a.scheduled == []
    assert store.timers("a") == []
    last = store.history("a")[-1]
    assert (last.trigger, last.at) == ("remind", pytest.approx(row.deadline))


def test_a_scheduled_event_survives_a_restart(store: Store, clock: Clock) -> None:
    flows(store, clock).start("remind", id="a")
    flows(store, clock).send("a", "ask")
    clock.advance(31)
    # A new process: new flows on the same store, which find the row and fire it.
    assert flows(store, clock).worker(owner="w").run_once() == 1
    assert flows(store, clock).load("a").context["reminded"] == 2


def test_a_host_cannot_send_it_through_the_store(store: Store, clock: Clock) -> None:
    d = flows(store, clock)
    d.start("remind", id="a")
    out = d.send("a", "remind", {"n": 1})
    assert not out.ok and out.data["error"] == "internal_event"
    assert store.load("a").seq == 0


@pytest.mark.parametrize("end", ["answer", "close"])
def test_cancel_and_the_end_delete_the_row(store: Store, clock: Clock, end: str) -> None:
    d = flows(store, clock)
    d.start("remind", id="a")
    d.send("a", "ask")
    assert len(store.timers("a")) == 1
    d.send("a", end)
    assert store.timers("a") == []
    clock.advance(60)
    assert d.worker(owner="w").run_once() == 0


def test_a_delivery_is_its_own_step_kind_and_replays(store: Store, clock: Clock) -> None:
    d = flows(store, clock)
    d.start("remind", id="a")
    d.send("a", "ask")
    clock.advance(30)
    assert d.worker(owner="w").run_once() == 1
    d.send("a", "ask")
    last = store.history("a")[-2]
    assert (last.kind, last.trigger, last.payload) == ("scheduled", "remind", {"n": 2})
    (entry,) = [h for h in d.load("a").history if h.kind == "scheduled"]
    assert (entry.event, entry.trigger) == ("remind", "remind")
    steps = d.replay("a")
    assert [s.difference for s in steps] == [None] * 4
    assert steps[-1].context == d.load("a").context


def test_the_command_line_refuses_an_internal_event(
    shared_store_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "remind.flow"
    path.write_text(REMIND, encoding="utf-8")
    s = ("--store", shared_store_url, "--flow", str(path))
    assert flowc(capsys, "instances", "start", "remind", "--id", "a", *s)[0] == 0
    code, out, _ = flowc(capsys, "instances", "send", "a", "remind", '{"n": 1}', *s)
    assert code == 1 and json.loads(out)["error"] == "internal_event"
    events = tmp_path / "e.jsonl"
    events.write_text(json.dumps({"event": "remind", "payload": {"n": 1}}) + "\n", "utf-8")
    out = flowc(capsys, "run", str(path), "--events", str(events))[1]
    assert json.loads(out.splitlines()[-1])["error"] == "internal_event"


def test_a_tool_call_cannot_send_an_internal_event(store: Store, clock: Clock) -> None:
    from flowc.runtime.tool_calls import ToolDispatcher

    d = flows(store, clock)
    calls = ToolDispatcher(d)
    started = calls.call("start", {"request_id": "r1"})
    assert not started.is_error, started.data
    handle = started.data["instance_id"]
    refused = calls.call("remind", {"instance_id": handle, "n": 1})
    assert refused.is_error and refused.data["error"] == "unknown_tool"
    assert "remind" not in refused.data["tools"]
    assert store.load(str(handle)).seq == 0


def test_a_migration_keeps_the_scheduled_events_whose_event_remains() -> None:
    from flowc.runtime.store.migrate import migrate_snapshot

    old = machine(REMIND).start()
    old.send("ask")
    snap = old.snapshot()
    kept = machine(REMIND.replace("flow remind", "flow remind\nversion 2"))
    assert [x["event"] for x in migrate_snapshot(snap, kept, [])["sends"]] == ["remind"]
    assert kept.restore(migrate_snapshot(snap, kept, [])).scheduled[0]["id"] == "r"
    gone = REMIND.replace("flow remind", "flow remind\nversion 2")
    gone = gone.replace("internal event remind(n: int)\n", "")
    gone = gone.replace(' do send remind(n: 2) after 30s as "r"', "")
    gone = gone.replace("  on remind -> WAITING do reminded += event.n\n", "")
    dropped = machine(gone)
    out = migrate_snapshot(snap, dropped, [])
    assert out["sends"] == [] and dropped.restore(out).scheduled == []
