"""A durable instance's history is complete: `DurableFlows.load(id).history` has every step,
although the stored snapshot keeps only what restoring needs (issue 11 item 5: it returned 7
of 12 entries), with each step's kind, event and choice states (`via`), on every backend."""

from __future__ import annotations

import pytest

from flowc.runtime.store import Store
from flowc.runtime.store.durable import DurableFlows
from store.flows import machine
from store.toy import Clock

ROUTED = """\
flow routed
context { n: int = 0 }
event bump(by: int)
event go
initial state A {
  on bump -> self do n += event.by
  on go -> ROUTE
  -> B
}
choice state ROUTE {
  if n > 2 -> B
  else -> C
}
state B {
  on go -> A
  -> A back
}
state C {
  on go -> A
  after 5s -> A
}
"""


def drive(d: DurableFlows, memory: object, clock: Clock) -> None:
    from flowc.runtime import Instance

    assert isinstance(memory, Instance)
    ops = [
        ("send", "bump", {"by": 1}),
        ("send", "go", None),  # A -> ROUTE -> C
        ("advance", 6, None),  # timer: C -> A
        ("send", "bump", {"by": 5}),
        ("send", "go", None),  # A -> ROUTE -> B
        ("back", None, None),  # B -> A
        ("goto", "B", None),
        ("send", "go", None),  # B -> A
        ("send", "bump", {"by": 1}),
        ("send", "go", None),  # A -> ROUTE -> B
        ("send", "go", None),  # B -> A
    ]
    for op, arg, payload in ops:
        clock.advance(1)
        if op == "send":
            assert isinstance(arg, str)
            assert d.send("h", arg, payload).ok == memory.send(arg, payload).ok
        elif op == "back":
            assert d.back("h", force=True).ok and memory.back(force=True).ok
        elif op == "goto":
            assert isinstance(arg, str)
            assert d.goto("h", arg).ok and memory.goto(arg).ok
        else:
            assert isinstance(arg, int)
            clock.advance(arg)
            worker = d.worker()
            while worker.run_once():
                pass
            memory.advance()


def test_load_has_every_step(store: Store, clock: Clock) -> None:
    d = DurableFlows(store, [machine(ROUTED)], clock=clock)
    d.start("routed", id="h")
    memory = machine(ROUTED).start(clock=clock)
    drive(d, memory, clock)
    assert len(memory.history) == 12
    # The stored snapshot is compact ...
    assert len(store.load("h").snapshot["history"]) < 12
    # ... and the loaded instance is whole, entry for entry.
    loaded = d.load("h")
    assert [h.to_dict() for h in loaded.history] == [h.to_dict() for h in memory.history]
    assert [h.via for h in loaded.history if h.via] == [("ROUTE",)] * 3
    assert {h.kind for h in loaded.history} == {"start", "event", "timer", "back", "goto"}
    # It behaves as the stored one does: the next step is the same.
    assert loaded.back(force=True).to_dict() == memory.back(force=True).to_dict()
    # Without the extra query: the compact entries.
    assert len(d.load("h", full_history=False).history) < 12


def test_history_rows_keep_kind_and_via(store: Store, clock: Clock) -> None:
    d = DurableFlows(store, [machine(ROUTED)], clock=clock)
    d.start("routed", id="h")
    memory = machine(ROUTED).start(clock=clock)
    drive(d, memory, clock)
    rows = store.history("h")
    assert [(r.kind, r.via) for r in rows] == [(h.kind, h.via) for h in memory.history]


@pytest.mark.parametrize("compact", [True, False])
def test_loaded_history_ends_at_the_loaded_seq(store: Store, clock: Clock, compact: bool) -> None:
    d = DurableFlows(store, [machine(ROUTED)], clock=clock, compact=compact)
    d.start("routed", id="h")
    for _ in range(4):
        d.send("h", "bump", {"by": 1})
    loaded = d.load("h")
    assert [h.seq for h in loaded.history] == [0, 1, 2, 3, 4] and loaded.seq == 4
