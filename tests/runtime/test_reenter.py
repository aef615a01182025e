"""`-> self reenter`: an external self-transition (exit, own and entry actions; timers restart),
beside the internal `-> self` (own actions only; timers kept)."""

from __future__ import annotations

import json

import pytest

from flowc.runtime import FakeClock, Machine

FLOW = """
flow review

context {
  log: list[str] = []
  nudges: int = 0
}

event comment
event note
event approve

initial state OPEN {
  entry do append(log, "entry")
  exit do append(log, "exit")
  on comment -> self reenter do append(log, "comment")
  on note -> self do append(log, "note")
  on approve -> MERGED
  after 2d -> STALE
}

state STALE {
  after 1d if nudges < 2 -> self reenter do nudges += 1
  after 1d -> CLOSED
}

final state MERGED
final state CLOSED
"""

DAY = 86400.0


def start(hot_after: int) -> tuple[FakeClock, Machine]:
    clock = FakeClock()
    m = Machine.from_source(FLOW, "review.flow", clock=clock).preload()
    m.hot_after = hot_after
    return clock, m


@pytest.mark.parametrize("hot_after", [0, 10**9])  # generated dispatch, general path
def test_reentering_runs_exit_and_entry_and_restarts_the_timers(hot_after: int) -> None:
    clock, m = start(hot_after)
    inst = m.start()
    t0 = inst.timers[0]["due"].timestamp()
    assert t0 == clock() + 2 * DAY
    clock.advance(DAY)
    assert inst.send("note").ok  # internal: the timer keeps its deadline
    assert inst.timers[0]["due"].timestamp() == t0
    assert inst.send("comment").ok  # external: it starts over
    assert inst.timers[0]["due"].timestamp() == clock() + 2 * DAY
    assert inst.get("log") == ["entry", "note", "exit", "comment", "entry"]
    clock.set(t0)
    assert inst.advance() == [] and inst.state == "OPEN"
    clock.advance(DAY)
    assert [r.to for r in inst.advance()] == ["STALE"]  # type: ignore[union-attr]


def test_both_paths_agree_on_a_reentering_event() -> None:
    runs = []
    for hot_after in (0, 10**9):
        clock, m = start(hot_after)
        inst = m.start()
        for _ in range(3):
            clock.advance(3600)
            inst.send("comment")
            inst.send("note")
        snapshot = inst.snapshot()
        snapshot.pop("id")
        runs.append(json.dumps(snapshot, sort_keys=True))
    assert runs[0] == runs[1]


def test_a_reentering_timer_restarts_every_timer_of_its_state() -> None:
    clock, m = start(0)
    inst = m.start()
    clock.advance(2 * DAY)
    inst.advance()
    assert inst.state == "STALE"
    fired = []
    for _ in range(3):
        clock.advance(DAY)
        fired += [r.to for r in inst.advance()]  # type: ignore[union-attr]
    assert fired == ["STALE", "STALE", "CLOSED"] and inst.get("nudges") == 2


def test_a_reentered_state_restores_with_its_restarted_timers() -> None:
    clock, m = start(0)
    inst = m.start()
    clock.advance(DAY)
    inst.send("comment")
    restored = m.restore(inst.snapshot_json())
    assert restored.timers == inst.timers
    assert restored.timers[0]["due"].timestamp() == clock() + 2 * DAY


def test_reenter_is_compiled_into_the_ir_and_stays_a_usable_name() -> None:
    from flowc.compiler import compile_source

    source = """
flow soft
context { reenter: int = 0 }
event reenter
initial state A {
  on reenter -> self reenter do reenter += 1
  on reenter -> self
  -> B reenter back
}
final state B
"""
    result = compile_source(source, "soft.flow")
    assert not result.errors and result.flow is not None
    flags = [(t.kind, t.target, t.reenter) for t in result.flow.transitions]
    assert flags == [("event", "A", True), ("event", "A", False), ("direct", "B", True)]
    plain = result.flow.transitions[1].model_dump(exclude_defaults=True)
    assert "reenter" not in plain  # left out: the hashes of flows without it do not change
    inst = Machine(result.flow).start()
    assert inst.send("reenter").ok and inst.get("reenter") == 1


def test_a_reenter_that_is_not_a_boolean_is_refused_at_load() -> None:
    from flowc.runtime import IRLoadError

    raw = dict(Machine.from_source(FLOW, "review.flow").raw)
    raw["transitions"] = [dict(t) for t in raw["transitions"]]
    raw["transitions"][0]["reenter"] = "yes"
    raw.pop("hash", None)
    with pytest.raises(IRLoadError, match="transition #0 reenter"):
        Machine(raw)
