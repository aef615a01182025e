"""Scheduled events (`send E after D as ID`, `cancel ID`): issue 28 item 1, in memory."""

from __future__ import annotations

import json

import pytest

from flowc.compiler import compile_source
from flowc.runtime import Machine
from flowc.runtime.clock import FakeClock
from flowc.runtime.instance import SNAPSHOT_FORMAT_1
from flowc.runtime.rejections import Rejection, SnapshotError
from flowc.runtime.steps import StepResult

REMIND = """flow remind
context { sent: int = 0, reminded: int = 0, wait_s: int = 60, rid: str = "reminder" }
internal event remind(n: int)
event ask
event answer
event broken
event close
initial state WAITING {
  on ask -> WAITING do sent += 1; send remind(n: sent) after wait_s s as rid
  on remind -> WAITING do reminded += event.n
  on answer -> WAITING do cancel rid
  on broken -> WAITING do send remind(n: 1) after wait_s % (sent - sent) s
  on close -> CLOSED
}
final state CLOSED
"""


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


def test_a_scheduled_event_fires_once_when_due_as_its_own_step(clock: FakeClock) -> None:
    inst = Machine.from_source(REMIND, clock=clock).start()
    inst.send("ask")
    (pending,) = inst.scheduled
    assert (pending["id"], pending["event"], pending["payload"]) == ("reminder", "remind", {"n": 1})
    assert inst.next_deadline == pending["due"]
    clock.advance(59)
    assert inst.advance() == []
    clock.advance(1)
    (step,) = inst.advance()
    assert isinstance(step, StepResult) and step.event == "remind"
    assert inst.history[-1].at == pending["due"], "recorded at its deadline"
    assert inst.context["reminded"] == 1 and inst.scheduled == []
    clock.advance(3600)
    assert inst.advance() == [], "fired once"


def test_the_delay_is_evaluated_when_the_step_runs(clock: FakeClock) -> None:
    inst = Machine.from_source(REMIND, clock=clock).start({"wait_s": 5})
    inst.send("ask")
    clock.advance(5)
    assert [s.event for s in inst.advance()] == ["remind"]


def test_cancel_forgets_it_and_cancelling_an_unknown_id_does_nothing(clock: FakeClock) -> None:
    inst = Machine.from_source(REMIND, clock=clock).start()
    inst.send("answer")  # nothing pending: a no-op, not a refusal
    assert inst.state == "WAITING" and inst.seq == 1
    inst.send("ask")
    inst.send("answer")
    assert inst.scheduled == []
    clock.advance(120)
    assert inst.advance() == []


def test_a_second_send_with_the_same_id_replaces_the_first(clock: FakeClock) -> None:
    inst = Machine.from_source(REMIND, clock=clock).start()
    inst.send("ask")
    clock.advance(30)
    inst.send("ask")
    (pending,) = inst.scheduled
    assert pending["payload"] == {"n": 2}
    clock.advance(30)
    assert inst.advance() == [], "the first one is gone"
    clock.advance(30)
    assert [s.event for s in inst.advance()] == ["remind"]
    assert inst.context["reminded"] == 2


def test_sends_without_an_id_are_kept_apart(clock: FakeClock) -> None:
    source = REMIND.replace(" as rid", "")
    inst = Machine.from_source(source, clock=clock).start()
    inst.send("ask")
    inst.send("ask")
    assert [x["id"] for x in inst.scheduled] == ["#1.0", "#2.0"]
    clock.advance(60)
    assert [s.event for s in inst.advance()] == ["remind", "remind"]
    assert inst.context["reminded"] == 3


def test_a_refused_step_schedules_nothing(clock: FakeClock) -> None:
    inst = Machine.from_source(REMIND, clock=clock).start()
    before = inst.snapshot()
    out = inst.send("broken")
    assert isinstance(out, Rejection) and out.kind == "expression_error"
    assert inst.snapshot() == before and inst.scheduled == []


def test_the_scheduled_events_are_dropped_when_the_instance_ends(clock: FakeClock) -> None:
    inst = Machine.from_source(REMIND, clock=clock).start()
    inst.send("ask")
    inst.send("close")
    assert inst.is_final and inst.scheduled == [] and inst.next_deadline is None


def test_a_scheduled_event_no_rule_takes_is_dropped_with_its_rejection(clock: FakeClock) -> None:
    source = """flow later
internal event ping
event go
event away
initial state A {
  on go -> A do send ping after 1s
  on ping -> A
  on away -> B
}
state B { on go -> A }
"""
    inst = Machine.from_source(source, clock=clock).start()
    inst.send("go")
    inst.send("away")
    clock.advance(1)
    (out,) = inst.advance()
    assert isinstance(out, Rejection) and out.kind == "event_not_accepted"
    assert (inst.state, inst.scheduled, inst.seq) == ("B", [], 2)


def test_snapshots_keep_them_and_old_snapshots_restore(clock: FakeClock) -> None:
    m = Machine.from_source(REMIND, clock=clock)
    inst = m.start()
    plain = inst.snapshot()
    assert plain["format"] == SNAPSHOT_FORMAT_1 and "sends" not in plain
    inst.send("ask")
    snap = json.loads(inst.snapshot_json())
    assert snap["format"] == "flowc.snapshot/3"
    assert snap["sends"][0]["event"] == "remind"
    back = m.restore(snap)
    assert back.scheduled == inst.scheduled
    clock.advance(60)
    assert [s.event for s in back.advance()] == ["remind"]
    assert m.restore(plain).scheduled == []
    snap["sends"][0]["event"] = "nope"
    with pytest.raises(SnapshotError, match="scheduled event 0"):
        m.restore(snap)


def test_a_payload_that_does_not_fit_refuses_the_step(clock: FakeClock) -> None:
    # `n` is at most 2: the third `ask` would schedule `remind(n: 3)`, which the event refuses.
    source = REMIND.replace("internal event remind(n: int)", "internal event remind(n: int(0..2))")
    source = source.replace(" as rid", "")
    inst = Machine.from_source(source, clock=clock).start()
    inst.send("ask")
    inst.send("ask")
    before = inst.snapshot()
    out = inst.send("ask")
    assert isinstance(out, Rejection) and out.kind == "expression_error"
    assert "does not fit" in out.message
    assert inst.snapshot() == before


def test_scheduled_events_compile_to_ir_version_4() -> None:
    flow = compile_source(REMIND, "remind.flow").flow
    assert flow is not None and flow.ir_version == 4
    ask = next(t for t in flow.transitions if t.event == "ask")
    send = ask.actions[1]
    assert (send.op, send.event) == ("send", "remind")
    assert send.delay is not None and send.key is not None
    cancel = next(t for t in flow.transitions if t.event == "answer").actions[0]
    assert cancel.op == "cancel"


def test_a_scheduled_event_in_a_statechart_and_from_entry_actions(clock: FakeClock) -> None:
    source = """flow chart
context { ticks: int = 0 }
internal event tick
event stop
initial state RUN {
  entry do send tick after 1s as "t"
  initial state A { on tick -> B do ticks += 1 }
  state B { on tick -> A do ticks += 1 }
  on tick -> RUN do ticks += 100
  on stop -> DONE
}
final state DONE
"""
    inst = Machine.from_source(source, clock=clock).start()
    assert [x["id"] for x in inst.scheduled] == ["t"], "scheduled by the start's entry actions"
    clock.advance(1)
    (step,) = inst.advance()
    assert isinstance(step, StepResult) and inst.configuration == ("RUN", "B")
    assert inst.context["ticks"] == 1
