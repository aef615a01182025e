"""The step semantics decided in the engine (issue 24 item 6): an internal transition exits
nothing it does not have to, a compound's rule to its own descendant is internal unless marked
`reenter`, and timers due together are tried innermost first. Each is checked on both dispatch
paths (generated functions and the general path) where a send is involved."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from flowc.runtime import FakeClock, Instance, IRLoadError, Machine, SnapshotError

from .conftest import machine

REPEAT_AND_DEADLINE = """
flow repeat_and_deadline
context { n: int = 0 }
initial state A {
  after 1s -> self do n += 1
  after 3s -> B
}
final state B
"""

REMINDER_AND_DEADLINE = """
flow reminder
context { reminders: int = 0 }
event answer
initial state WAITING {
  on answer -> DONE
  after 24h -> self do reminders += 1
  after 72h -> EXPIRED
}
final state DONE
final state EXPIRED
"""

COMPOUND_TO_CHILD = """
flow compound_to_child
context { entries: int = 0, exits: int = 0 }
event go
event again
event back
initial state P {
  entry do entries += 1
  exit do exits += 1
  after 5s -> Q
  initial state c1 { }
  state c2 { on back -> c1 }
  on go -> c2
  on again -> c2 reenter
}
final state Q
"""


def _hot(source: str, clock: FakeClock, hot_after: int) -> Machine:
    m = machine(source, clock)
    m.hot_after = hot_after
    return m


def _targets(outcomes: list[object]) -> list[str]:
    return [o.to for o in outcomes]  # type: ignore[attr-defined]


def test_a_deadline_beside_a_repeating_self_timer_fires_at_its_time() -> None:
    clock = FakeClock()
    inst = machine(REPEAT_AND_DEADLINE, clock).start()
    seen = []
    for _ in range(3):
        clock.advance(1)
        seen += _targets(inst.advance())
    assert seen == ["A", "A", "A", "B"]
    assert inst.state == "B" and inst.get("n") == 3
    assert inst.history[-1].timestamp - inst.history[0].timestamp == 3


def test_a_late_advance_fires_the_deadline_at_its_time_too() -> None:
    clock = FakeClock()
    inst = machine(REPEAT_AND_DEADLINE, clock).start()
    clock.advance(10)
    assert _targets(inst.advance()) == ["A", "A", "A", "B"]
    start = inst.history[0].timestamp
    assert [h.timestamp - start for h in inst.history] == [0, 1, 2, 3, 3]


def test_a_72h_deadline_beside_a_24h_reminder_fires() -> None:
    clock = FakeClock()
    inst = machine(REMINDER_AND_DEADLINE, clock).start()
    clock.advance(hours=72)
    assert _targets(inst.advance()) == ["WAITING", "WAITING", "WAITING", "EXPIRED"]
    assert inst.state == "EXPIRED" and inst.get("reminders") == 3


@pytest.mark.parametrize("hot_after", [0, 1000])
def test_an_event_self_rule_keeps_the_other_timers(hot_after: int) -> None:
    source = """
flow poke
context { n: int = 0 }
event poke
initial state A {
  on poke -> self do n += 1
  after 3s -> B
}
final state B
"""
    clock = FakeClock()
    inst = _hot(source, clock, hot_after).start()
    for _ in range(5):
        clock.advance(0.5)
        assert inst.send("poke").ok
    clock.advance(0.5)
    assert _targets(inst.advance()) == ["B"]


@pytest.mark.parametrize("hot_after", [0, 1000])
def test_a_compounds_rule_to_its_own_child_is_internal(hot_after: int) -> None:
    clock = FakeClock()
    inst = _hot(COMPOUND_TO_CHILD, clock, hot_after).start()
    for _ in range(3):
        clock.advance(1)
        assert inst.send("go").ok and inst.configuration == ("P", "c2")
        assert inst.send("back").ok and inst.configuration == ("P", "c1")
    assert inst.get("entries") == 1 and inst.get("exits") == 0
    clock.advance(2)  # 5 s after P was entered: its timer was never restarted
    assert _targets(inst.advance()) == ["Q"]


@pytest.mark.parametrize("hot_after", [0, 1000])
def test_reenter_makes_a_compounds_rule_to_its_child_external(hot_after: int) -> None:
    clock = FakeClock()
    inst = _hot(COMPOUND_TO_CHILD, clock, hot_after).start()
    clock.advance(3)
    assert inst.send("again").ok and inst.configuration == ("P", "c2")
    assert inst.get("entries") == 2 and inst.get("exits") == 1
    clock.advance(2)
    assert inst.advance() == []  # P's timer started over at 3 s
    clock.advance(3)
    assert _targets(inst.advance()) == ["Q"]


def test_simultaneous_timers_are_tried_innermost_first() -> None:
    # The parent's timer is written after its child's but numbered before it in the IR;
    # like an event's rules, the child's is tried first.
    source = """
flow nested
context { n: int = 0 }
initial state P {
  initial state C {
    after 2s -> D do n = 1
  }
  state D { }
  after 2s -> Q do n = 2
}
final state Q
"""
    clock = FakeClock()
    inst = machine(source, clock).start()
    clock.advance(2)
    outcomes = inst.advance()
    assert _targets(outcomes) == ["D", "Q"] and inst.get("n") == 2


MS_DEADLINE = """
flow ms_deadline
initial state A {
  after 3315ms -> B
}
final state B
"""


@pytest.mark.parametrize("start", [1735689600.0, 1735689600.123, 0.0, 4102444800.999])
def test_time_is_whole_milliseconds_3314ms_then_1ms_fires_3315ms(start: float) -> None:
    clock = FakeClock(start)
    inst = machine(MS_DEADLINE, clock).start()
    clock.advance(3.314)
    assert inst.advance() == [] and inst.state == "A"
    clock.advance(0.001)
    assert _targets(inst.advance()) == ["B"]
    assert inst.history[-1].at - inst.history[0].at == timedelta(milliseconds=3315)


def test_advance_to_one_millisecond_before_and_then_at_a_deadline() -> None:
    clock = FakeClock()
    inst = machine(MS_DEADLINE, clock).start()
    start = inst.history[0].at
    assert inst.advance(start + timedelta(milliseconds=3314)) == []
    assert inst.advance((start + timedelta(milliseconds=3315)).timestamp()) != []
    assert inst.state == "B"


def test_a_clock_reading_is_rounded_once_to_the_millisecond() -> None:
    readings = iter([1735689600.0004, 1735689603.3146])
    inst = machine(MS_DEADLINE).start(clock=lambda: next(readings))
    assert inst.history[0].timestamp == 1735689600.0
    assert inst.timers[0]["due"] == datetime(2025, 1, 1, 0, 0, 3, 315000, tzinfo=UTC)
    assert _targets(inst.advance()) == ["B"]  # 1735689603.3146 s is 3315 ms after the start


def test_a_snapshot_keeps_millisecond_deadlines_and_restores_them_exactly() -> None:
    clock = FakeClock(1735689600.001)
    m = machine(MS_DEADLINE, clock)
    snap = m.start().snapshot()
    assert snap["timers"][0]["due"] == "2025-01-01T00:00:03.316000+00:00"
    # A snapshot written by earlier releases may hold float noise in its microseconds.
    snap["timers"][0]["due"] = "2025-01-01T00:00:03.315999+00:00"
    inst = m.restore(snap)
    clock.advance(3.315)
    assert _targets(inst.advance()) == ["B"]


# ---- leaves in steps and history; snapshots written by earlier releases ----------------------

V1 = json.loads((Path(__file__).parent / "snapshots_v1.json").read_text(encoding="utf-8"))


def _restored(case: str) -> tuple[Instance, FakeClock]:
    """A `flowc.snapshot/1` written by the release before engine 2 (snapshots_v1.json, made
    with commit 1a72398), restored on a clock at the time it was written."""
    data = V1[case]
    clock = FakeClock()
    clock.ms = data["clock_ms"]
    m = Machine.from_source(data["source"], f"{case}.flow", clock=clock)
    assert data["snapshot"]["format"] == "flowc.snapshot/1"
    return m.restore(copy.deepcopy(data["snapshot"])), clock


def test_a_parallel_flows_steps_and_history_record_the_leaves() -> None:
    clock = FakeClock()
    m = Machine.from_source(V1["parallel"]["source"], "review.flow", clock=clock)
    inst = m.start()
    assert inst.history[0].leaves == ("Pending", "Waiting")
    step = inst.send("ci_passed").unwrap()
    assert (step.source_leaves, step.leaves) == (("Pending", "Waiting"), ("Green", "Waiting"))
    assert repr(step) == "StepResult(1, '{Pending, Waiting}' -> '{Green, Waiting}', 'ci_passed')"
    entry = inst.history[1]
    assert "root" not in repr(entry) and "{Green, Waiting}" in repr(entry)
    snap = inst.snapshot()
    assert snap["format"] == "flowc.snapshot/2"
    assert snap["history"][1]["target_leaves"] == ["Green", "Waiting"]
    again = m.restore(json.loads(json.dumps(snap)))
    assert [h.leaves for h in again.history] == [h.leaves for h in inst.history]


def test_a_flat_flows_entries_name_their_one_leaf_and_snapshot_as_before() -> None:
    inst = machine(REMINDER_AND_DEADLINE).start()
    step = inst.send("answer").unwrap()
    assert (step.source_leaves, step.leaves) == (("WAITING",), ("DONE",))
    assert inst.history[0].source_leaves == ()
    assert all(
        set(h) == set(V1["flat"]["snapshot"]["history"][0]) for h in inst.snapshot()["history"]
    )


def test_a_v1_flat_snapshot_restores_and_runs_on_under_the_new_timer_rules() -> None:
    inst, clock = _restored("flat")
    assert inst.state == "WAITING" and inst.get("reminders") == 1
    # Written at 54 h, its reminder due at 48 h not fired yet: at 72 h the reminder fires at
    # 48 h and 72 h, and the deadline beside it at 72 h.
    clock.advance(hours=18)
    assert _targets(inst.advance()) == ["WAITING", "WAITING", "EXPIRED"]
    assert inst.get("reminders") == 3
    assert inst.snapshot()["format"] == "flowc.snapshot/1"  # nothing /1 cannot hold


def test_a_v1_parallel_snapshot_restores_and_runs_on() -> None:
    inst, _ = _restored("parallel")
    assert inst.configuration == ("Review", "CI", "Green", "Approvals", "Waiting")
    assert [h.leaves for h in inst.history] == [("Review",), ("Review",)]  # not recorded then
    step = inst.send("approved").unwrap()
    assert step.source_leaves == ("Green", "Waiting") and step.to == "Merged"


# ---- every step reports the rules it took ------------------------------------------------

ROUTED = """
flow routed
context { n: int = 0 }
event go(k: int)
event poke
initial choice state Pick {
  if n > 0 -> B
  else -> A
}
state A {
  on poke reject no_poke "No."
  on go if event.k > 5 -> Pick do n = event.k
  on go -> B
  after 1s -> self
}
state B { }
"""


@pytest.mark.parametrize("hot_after", [0, 1000])
def test_a_flat_step_reports_its_rule_and_its_routes(hot_after: int) -> None:
    clock = FakeClock()
    m = _hot(ROUTED, clock, hot_after)
    rule = {
        (t["source"], t.get("target") or t.get("code"), t["kind"]): t["index"]
        for t in m.raw["transitions"]
    }
    inst = m.start()
    assert inst.start_rules_taken == (rule["Pick", "A", "else"],)
    refused = inst.send("poke")
    assert refused.kind == "reject" and refused.rule == rule["A", "no_poke", "reject"]  # type: ignore[union-attr]
    clock.advance(1)
    [fired] = inst.advance()
    assert fired.rules_taken == (rule["A", "A", "timer"],)  # type: ignore[union-attr]
    step = inst.send("go", {"k": 7}).unwrap()
    assert step.rules_taken == (rule["A", "Pick", "event"], rule["Pick", "B", "choice"])
    assert inst.send("go", {"k": 1}).kind == "event_not_accepted"  # type: ignore[union-attr]


@pytest.mark.parametrize("hot_after", [0, 1000])
def test_a_generated_flat_step_reports_its_rule(hot_after: int) -> None:
    m = _hot(
        ROUTED.replace("if event.k > 5 -> Pick do n = event.k", "if false -> B"), None, hot_after
    )  # type: ignore[arg-type]
    inst = m.start()
    [go_b] = [t.index for t in m.states["A"].on["go"][1] if t.guard is None]
    for _ in range(3):  # warm the pair up to its generated function
        again = m.start()
        assert again.send("go", {"k": 1}).unwrap().rules_taken == (go_b,)
    assert inst.send("go", {"k": 1}).unwrap().rules_taken == (go_b,)


# ---- hand-edited snapshots and IR are refused, naming the field (issue 25 item 21) ----------


def test_an_unknown_top_level_snapshot_field_is_refused_by_name() -> None:
    m = machine(REMINDER_AND_DEADLINE)
    snap = m.start().snapshot()
    snap["timerz"] = []
    with pytest.raises(SnapshotError, match="unknown field 'timerz'"):
        m.restore(snap)


def test_a_pending_timer_whose_target_was_edited_is_refused() -> None:
    m = machine(REMINDER_AND_DEADLINE)
    snap = m.start().snapshot()
    snap["timers"][1]["target"] = "DONE"
    with pytest.raises(SnapshotError, match=r"pending timer 1 .*target 'DONE'.* matches no timer"):
        m.restore(snap)


THREE_STEPS = """
flow three_steps
version VERSION
event go
initial state A { on go -> B }
state B { on go -> C }
state C { on go -> A }
"""
#: Version 2 has no B: an instance that passed through it keeps B in its history.
TWO_STEPS = """
flow three_steps
version 2
event go
initial state A { on go -> C }
state C { on go -> A }
"""


def test_a_history_entry_naming_a_state_that_does_not_exist_is_refused() -> None:
    m = machine(THREE_STEPS.replace("VERSION", "1"))
    inst = m.start()
    assert inst.send("go").ok and inst.send("go").ok
    snap = inst.snapshot()
    snap["history"][1]["target"] = "Bee"
    with pytest.raises(SnapshotError, match=r"history entry at step 1 names state 'Bee'.*history"):
        m.restore(snap)


def test_a_history_from_an_older_version_keeps_its_retired_states() -> None:
    old = machine(THREE_STEPS.replace("VERSION", "1"))
    inst = old.start()
    assert inst.send("go").ok and inst.send("go").ok and inst.state == "C"
    new = machine(TWO_STEPS)
    moved = new.restore(inst.snapshot())  # an older graph's history may name its states
    assert moved.send("go").ok and moved.state == "A"
    snap = moved.snapshot()
    assert snap["hash"] == new.hash and snap["retired_states"] == ["B"]
    again = new.restore(json.loads(json.dumps(snap)))
    assert again.snapshot()["retired_states"] == ["B"]
    assert [h.target for h in again.history] == ["A", "B", "C", "A"]
    del snap["retired_states"]
    with pytest.raises(SnapshotError, match="names state 'B'"):
        new.restore(snap)
    snap["retired_states"] = "B"
    with pytest.raises(SnapshotError, match="retired_states is not a list"):
        new.restore(snap)


def test_a_snapshot_without_retired_states_writes_none() -> None:
    inst = machine(THREE_STEPS.replace("VERSION", "1")).start()
    assert inst.send("go").ok
    assert "retired_states" not in inst.snapshot()


def _edited_ir(edit: Callable[[dict[str, Any]], None]) -> str:
    raw = copy.deepcopy(machine(ROUTED).raw)
    raw.pop("hash", None)
    edit(raw)
    return json.dumps(raw)


def test_an_unknown_messages_kind_in_the_ir_is_refused() -> None:
    def edit(raw: dict[str, Any]) -> None:
        raw["messages"] = {"guard_faild": "No."}

    with pytest.raises(IRLoadError, match="messages: 'guard_faild' is not a rejection kind"):
        Machine.from_json(_edited_ir(edit))


def test_a_transition_whose_index_is_not_its_position_is_refused() -> None:
    def edit(raw: dict[str, Any]) -> None:
        raw["transitions"][2]["index"] = 7

    with pytest.raises(IRLoadError, match=r"transitions\[2\] has index 7"):
        Machine.from_json(_edited_ir(edit))


@pytest.mark.parametrize(
    ("value", "shown"), [(5, "5"), ("yes", "a literal str"), (None, "a literal null")]
)
def test_a_non_bool_literal_guard_is_refused(value: object, shown: str) -> None:
    def edit(raw: dict[str, Any]) -> None:
        raw["transitions"][2]["guard"] = {"op": "lit", "value": value}

    with pytest.raises(IRLoadError, match=f"transition #2 guard is {shown}, not a bool"):
        Machine.from_json(_edited_ir(edit))


def _docs_flow(name: str) -> str:
    """The ```flow block of docs/language.md that declares `flow NAME`."""
    text = (Path(__file__).parents[2] / "docs" / "language.md").read_text(encoding="utf-8")
    blocks = [b.split("```", 1)[0] for b in text.split("```flow\n")[1:]]
    [block] = [b for b in blocks if b.startswith(f"flow {name}\n")]
    return block


def test_the_docs_microwave_keeps_its_compound_timer_through_its_own_rule() -> None:
    # docs/language.md: `Cooking`'s `after 30m -> Idle` is not restarted by moves among its
    # children, its own `on door_opened -> Paused` included (issue 25 item 12).
    clock = FakeClock()
    inst = machine(_docs_flow("microwave"), clock).start()
    assert inst.send("start", {"seconds": 100_000}).ok
    clock.advance(minutes=20)
    inst.advance()
    assert inst.send("door_opened").ok and inst.configuration == ("Cooking", "Paused")
    assert inst.send("door_closed").ok and inst.state == "Heating"
    clock.advance(minutes=10)
    inst.advance()
    assert inst.state == "Idle"
    assert inst.history[-1].at - inst.history[0].at == timedelta(minutes=30)
