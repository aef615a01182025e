"""Timers on a fake clock, snapshots and restoring them (also under a newer flow version),
idempotency keys and subscribers."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from flowc.runtime import FakeClock, Machine, Rejection, SnapshotError, StepResult

from .conftest import frozen, machine

FLOW = """
flow reminders
version 1

context {
  nudges: int = 0
  note: str = ""
}

event reply(text: str)
event poke

initial state WAITING {
  on reply -> ANSWERED do note = event.text
  on poke -> self do nudges += 1
  after 10m if nudges < 5 -> NUDGED do nudges += 1
  after 1h -> EXPIRED
}

state NUDGED {
  on reply -> ANSWERED do note = event.text
  after 30m -> WAITING
}

state ANSWERED {
  on poke -> self
}

final state EXPIRED
"""


@pytest.fixture
def m(clock: FakeClock) -> Machine:
    return machine(FLOW, clock)


def test_entering_a_state_arms_its_timers(m: Machine, clock: FakeClock) -> None:
    inst = m.start()
    assert [t["target"] for t in inst.timers] == ["NUDGED", "EXPIRED"]
    assert inst.next_deadline == datetime.fromtimestamp(clock.now + 600, UTC)
    assert inst.advance() == []  # nothing due yet
    clock.advance(minutes=10)
    [fired] = inst.advance()
    assert isinstance(fired, StepResult) and fired.kind == "timer" and fired.to == "NUDGED"
    assert fired.timestamp == clock.now and inst.context["nudges"] == 1
    # Leaving WAITING cancelled its 1h timer; NUDGED armed its own.
    assert [t["target"] for t in inst.timers] == ["WAITING"]


def test_leaving_a_state_cancels_its_timers(m: Machine, clock: FakeClock) -> None:
    inst = m.start()
    inst.send("reply", {"text": "hi"})
    assert inst.timers == [] and inst.next_deadline is None
    clock.advance(hours=5)
    assert inst.advance() == [] and inst.state == "ANSWERED"


def test_internal_self_transition_keeps_timers(m: Machine, clock: FakeClock) -> None:
    inst = m.start()
    before = inst.timers
    clock.advance(minutes=5)
    inst.send("poke")
    assert inst.timers == before


def test_late_advance_fires_chained_timers_at_their_deadlines(m: Machine, clock: FakeClock) -> None:
    inst = m.start()
    start = clock.now
    clock.advance(minutes=45)
    fired = inst.advance()
    # WAITING -10m-> NUDGED -30m-> WAITING (armed from its deadline) then nothing more by 45m.
    assert [(f.to, f.timestamp - start) for f in fired if isinstance(f, StepResult)] == [
        ("NUDGED", 600.0),
        ("WAITING", 2400.0),
    ]
    assert inst.next_deadline == datetime.fromtimestamp(start + 3000, UTC)


def test_a_timer_whose_guard_fails_is_dropped(m: Machine, clock: FakeClock) -> None:
    inst = m.start({"nudges": 5})
    clock.advance(minutes=10)
    assert inst.advance() == [] and inst.state == "WAITING"
    assert [t["target"] for t in inst.timers] == ["EXPIRED"]
    clock.advance(hours=1)
    [expired] = inst.advance()
    assert expired.to == "EXPIRED" and inst.is_final  # type: ignore[union-attr]


def test_snapshot_round_trip_keeps_timers(m: Machine, clock: FakeClock) -> None:
    inst = m.start()
    inst.send("poke", reason="nudge me", key="k1")
    snap = json.loads(json.dumps(inst.snapshot()))
    assert snap["format"] == "flowc.snapshot/1" and snap["flow"] == "reminders"
    assert snap["timers"][0]["target"] == "NUDGED"
    restored = m.restore(snap)
    assert frozen(restored) == frozen(inst)
    clock.advance(minutes=10)
    assert [f.to for f in restored.advance()] == ["NUDGED"]  # type: ignore[union-attr]
    # The idempotency key came along.
    again = restored.send("poke", key="k1")
    assert isinstance(again, StepResult) and again.replayed and again.seq == 1


def test_restore_from_json_text(m: Machine) -> None:
    inst = m.start()
    inst.send("reply", {"text": "x"})
    assert frozen(m.restore(inst.snapshot_json())) == frozen(inst)


def test_old_snapshot_missing_new_fields_fills_defaults(clock: FakeClock) -> None:
    v2 = machine(
        FLOW.replace("version 1", "version 2").replace(
            'note: str = ""', 'note: str = ""\n  escalations: int = 0\n  owner: str = "nobody"'
        ),
        clock,
    )
    old = {"flow": "reminders", "version": 1, "state": "ANSWERED", "context": {"nudges": 2}}
    inst = v2.restore(old)
    assert inst.context == {"nudges": 2, "note": "", "escalations": 0, "owner": "nobody"}
    assert inst.state == "ANSWERED" and [h.kind for h in inst.history] == ["start"]


def test_restore_errors(m: Machine) -> None:
    with pytest.raises(SnapshotError, match="flow 'other'"):
        m.restore({"flow": "other", "state": "WAITING"})
    with pytest.raises(SnapshotError, match="state 'GONE'"):
        m.restore({"flow": "reminders", "state": "GONE"})
    with pytest.raises(SnapshotError, match="does not fit"):
        m.restore({"flow": "reminders", "state": "WAITING", "context": {"nudges": "x"}})
    with pytest.raises(SnapshotError, match="unknown"):
        m.restore({"flow": "reminders", "state": "WAITING", "context": {"dropped": 1}})
    kept = m.restore(
        {"flow": "reminders", "state": "WAITING", "context": {"dropped": 1}}, drop_unknown=True
    )
    assert "dropped" not in kept.context


def test_timers_added_in_a_newer_flow_are_armed_on_restore(clock: FakeClock) -> None:
    v1 = machine(FLOW, clock)
    inst = v1.start()
    inst.send("reply", {"text": "x"})
    v2 = machine(
        FLOW.replace("on poke -> self\n}", "on poke -> self\n  after 1d -> EXPIRED\n}"), clock
    )
    restored = v2.restore(inst.snapshot())
    [timer] = restored.timers
    assert timer["target"] == "EXPIRED" and timer["due"].timestamp() == clock.now + 86400


def test_idempotency_keys(m: Machine) -> None:
    inst = m.start()
    first = inst.send("poke", key="abc")
    again = inst.send("poke", key="abc")
    assert isinstance(again, StepResult) and again.replayed and not first.replayed  # type: ignore[union-attr]
    assert again.seq == first.seq and inst.context["nudges"] == 1
    # A refused attempt does not use up its key.
    refused = inst.send("reply", {"text": 3}, key="r1")
    assert isinstance(refused, Rejection)
    assert inst.send("reply", {"text": "ok"}, key="r1").ok


def test_subscribers_see_committed_steps_only(m: Machine) -> None:
    inst = m.start()
    seen: list[tuple[int, str]] = []
    stop = inst.subscribe(lambda step: seen.append((step.seq, step.to)))
    inst.send("poke", key="a")
    inst.send("poke", key="a")  # replayed: not broadcast again
    inst.send("nope")  # refused
    inst.send("reply", {"text": "x"})
    stop()
    inst.send("poke")
    assert seen == [(1, "WAITING"), (2, "ANSWERED")]


def test_a_failing_subscriber_does_not_undo_the_step(m: Machine) -> None:
    inst = m.start()

    def boom(step: StepResult) -> None:
        raise RuntimeError("subscriber bug")

    inst.subscribe(boom)
    assert inst.send("poke").ok and inst.context["nudges"] == 1


def test_keys_keep_their_age_through_snapshot_json() -> None:
    from flowc.runtime.instance import KEYS_KEPT

    m = Machine.from_source(
        "flow k\ncontext { n: int = 0 }\nevent inc\ninitial state A { on inc -> self do n += 1 }",
        "k.flow",
    )
    inst = m.start()
    # Keys that sort alphabetically in the reverse order of their age.
    for k in range(KEYS_KEPT):
        inst.send("inc", key=f"req-{9999 - k:04d}")
    restored = m.restore(inst.snapshot_json())
    restored.send("inc", key="new")  # evicts the oldest key, req-9999
    newest = restored.send("inc", key=f"req-{9999 - (KEYS_KEPT - 1):04d}")
    assert isinstance(newest, StepResult) and newest.replayed
    assert not restored.send("inc", key="req-9999").replayed  # type: ignore[union-attr]
    assert restored.context["n"] == KEYS_KEPT + 2


REMINDERS = """
flow reminders
context { reminders: int = 0 }
event answer
initial state WAITING {
  on answer -> DONE
  after 3d if reminders < 2 -> self do reminders += 1
  after 10d -> EXPIRED
}
final state DONE
final state EXPIRED
"""


def test_a_self_timer_repeats_while_its_guard_holds() -> None:
    clock = FakeClock(0)
    m = Machine.from_source(REMINDERS, "r.flow", clock=clock)
    inst = m.start()
    day = 86400.0
    assert [o.ok for o in inst.advance(3 * day)] == [True]
    # The re-armed timer survives a snapshot, due 3 days after it last fired.
    inst = m.restore(inst.snapshot_json(), clock=clock)
    assert sorted(t["due"].timestamp() for t in inst.timers) == [6 * day, 10 * day]
    assert [o.ok for o in inst.advance(6 * day)] == [True]
    assert inst.advance(9 * day) == [] and inst.context["reminders"] == 2  # guard fails: dropped
    assert [t["target"] for t in inst.timers] == ["EXPIRED"]
    assert [o.to for o in inst.advance(10 * day)] == ["EXPIRED"]  # type: ignore[union-attr]
    timer_steps = [h for h in inst.history if h.kind == "timer"]
    assert [h.at.timestamp() for h in timer_steps] == [3 * day, 6 * day, 10 * day]


def test_a_key_naming_a_step_the_history_lacks_is_refused(m: Machine) -> None:
    inst = m.start()
    inst.send("poke", key="a")
    snapshot = inst.snapshot()
    snapshot["keys"] = {"a": 99}
    with pytest.raises(SnapshotError, match="'a' names step 99"):
        m.restore(snapshot)
