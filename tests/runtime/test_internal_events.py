"""Internal events (`internal event E`): only the flow itself sends them (issue 28 item 2)."""

from __future__ import annotations

import json

import pytest

from flowc.compiler import compile_source
from flowc.runtime import Machine
from flowc.runtime.clock import FakeClock
from flowc.runtime.model import READABLE_IR_VERSIONS, CompiledFlow
from flowc.runtime.rejections import Rejection
from flowc.runtime.tools import FlowTools, tool_events

# A review counted by the flow itself: `tally` is raised by `vote`, never sent by a host.
TALLY = """flow review
context { votes: int = 0 }
event vote
internal event tally(n: int = 1)
initial state OPEN {
  on vote -> OPEN do raise tally(n: 1)
  on tally if votes + event.n >= 2 -> DONE do votes += event.n
  on tally -> OPEN do votes += event.n
}
final state DONE
"""

# A flat flow (no raise): the generated dispatch must refuse the internal event as well.
FLAT = """flow flat
context { n: int = 0 }
event go
internal event nudge
initial state A {
  on go -> A do n += 1; send nudge after 1s
  on nudge -> B
}
final state B
"""


def test_a_host_send_of_an_internal_event_is_refused_and_changes_nothing() -> None:
    inst = Machine.from_source(TALLY).start()
    before = inst.snapshot()
    out = inst.send("tally", {"n": 5})
    assert isinstance(out, Rejection)
    assert out.kind == out.code == "internal_event"
    assert out.event == "tally"
    assert "only the flow itself" in out.message
    assert inst.snapshot() == before


def test_the_flow_itself_still_raises_it() -> None:
    inst = Machine.from_source(TALLY).start()
    inst.send("vote")
    assert (inst.state, inst.context["votes"]) == ("OPEN", 1)
    inst.send("vote")
    assert (inst.state, inst.context["votes"]) == ("DONE", 2)


@pytest.mark.parametrize("hot_after", [0, 1, 50])
def test_generated_dispatch_never_accepts_an_internal_event(hot_after: int) -> None:
    # Nothing sends `nudge` here (W323), so the flow is flat: its pairs get generated functions.
    m = Machine.from_source(FLAT.replace("; send nudge after 1s", ""))
    assert not m.chart
    m.hot_after = hot_after
    inst = m.start()
    for _ in range(3):
        out = inst.send("nudge")
        assert isinstance(out, Rejection) and out.kind == "internal_event"
    assert inst.state == "A"
    assert "nudge" not in inst._state.fast


def test_internal_events_are_not_accepted_events_nor_tools() -> None:
    m = Machine.from_source(TALLY)
    inst = m.start()
    assert [e.name for e in inst.accepted_events()] == ["vote"]
    assert tool_events(m) == ["vote"]
    assert not any("tally" in name for name in FlowTools([m]).names())


def test_an_internal_event_needs_ir_version_4_and_older_ir_is_unchanged() -> None:
    flow = compile_source(TALLY, "review.flow").flow
    assert flow is not None
    assert flow.ir_version == 4 and 4 in READABLE_IR_VERSIONS
    (tally,) = [e for e in flow.events if e.name == "tally"]
    assert tally.internal
    assert json.loads(flow.to_json())["events"][1]["internal"] is True
    # Without `internal`, the same flow is version 2 (it raises), and says nothing of it.
    plain = compile_source(TALLY.replace("internal event", "event"), "r.flow").flow
    assert plain is not None and plain.ir_version == 2
    assert "internal" not in plain.to_json()
    assert CompiledFlow.from_json(flow.to_json()) == flow


def test_paths_and_explore_do_not_offer_an_internal_event_as_a_move() -> None:
    from flowc.compiler.testing.space import Explorer

    flow = compile_source(TALLY, "review.flow").flow
    assert flow is not None
    offers = Explorer(flow).events_of.get("OPEN", [])
    assert "tally" not in offers and "vote" in offers


def test_a_scheduled_internal_event_is_delivered() -> None:
    clock = FakeClock()
    inst = Machine.from_source(FLAT, clock=clock).start()
    inst.send("go")
    clock.advance(1)
    (step,) = inst.advance()
    assert (step.event, inst.state) == ("nudge", "B")
