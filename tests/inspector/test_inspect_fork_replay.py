"""Fork and replay on SQLite and PostgreSQL: generated runs of the ticket flow, forked at every
step and replayed. A fork never puts an effect of the steps it copies into the outbox again,
leaves the original as it was, and records where it came from; every replay is identical."""

from __future__ import annotations

import random

import pytest

from flowc.runtime import FakeClock, Machine
from flowc.runtime.store import HistoryRow, open_store
from flowc.runtime.store.durable import LINEAGE, DurableFlows
from flowc.runtime.store.replay import NotReplayable, context_diff, replay_rows
from inspector.flows import TICKET

#: What a generated run sends, with the payloads it picks from and how often it picks it.
MOVES = [
    ("note", [{"text": "a"}, {"text": "bb"}], 4),
    ("triage", [{"priority": "LOW"}, {"priority": "HIGH"}], 3),
    ("reply", [{"text": "hello"}, {"text": "again"}], 4),
    ("reopen", [{}], 3),
    ("resolve", [{}], 1),
]


def generated_run(flows: DurableFlows, clock: FakeClock, instance_id: str, seed: int) -> None:
    """Start `instance_id` and drive it with random events (some refused), pauses long enough
    for the waiting timer to fire now and then, until it is solved or 20 events were tried."""
    rnd = random.Random(seed)
    flows.start("ticket", {"customer": f"c{seed}"}, id=instance_id)
    worker = flows.worker()
    for _ in range(20):
        event, payloads, _ = rnd.choices(MOVES, weights=[m[2] for m in MOVES])[0]
        flows.send(instance_id, event, rnd.choice(payloads), force=event == "reopen")
        clock.advance(rnd.choice([1.0, 60.0, 3 * 3600.0]))
        worker.run_once()
        if flows.store.load(instance_id).state == "SOLVED":
            return


@pytest.mark.parametrize("seed", range(6))
def test_fork_at_every_step_reemits_nothing_and_every_replay_is_identical(
    shared_store_url: str, clock: FakeClock, ticket: Machine, seed: int
) -> None:
    with DurableFlows(open_store(shared_store_url, clock=clock), [ticket], clock=clock) as flows:
        generated_run(flows, clock, "orig", seed)
        rows = flows.store.history("orig")
        before = flows.store.load("orig")
        outbox = flows.store.pending_effects(limit=10_000)
        replayed = flows.replay("orig")
        assert [s.row.seq for s in replayed] == [r.seq for r in rows]
        assert all(s.difference is None for s in replayed)
        assert replayed[-1].context == before.snapshot["context"]
        for step in replayed:
            fork_id = f"fork{step.row.seq}"
            out = flows.fork("orig", at=step.row.seq, id=fork_id)
            assert out.ok, out.data
            forked = flows.store.load(fork_id)
            assert forked.snapshot["context"] == step.context
            assert forked.snapshot[LINEAGE] == {
                "forked_from": "orig",
                "at": step.row.seq,
                "patches": [],
            }
            assert [r.seq for r in flows.store.history(fork_id)] == [
                r.seq for r in rows if r.seq <= step.row.seq
            ]
            assert all(s.difference is None for s in flows.replay(fork_id))
        assert flows.store.pending_effects(limit=10_000) == outbox  # nothing re-emitted
        assert flows.store.load("orig") == before  # the original untouched
        assert flows.store.history("orig") == rows


def test_a_fork_keeps_its_lineage_as_it_steps_and_emits_only_its_own_effects(
    sqlite_url: str, clock: FakeClock, ticket: Machine
) -> None:
    with DurableFlows(open_store(sqlite_url, clock=clock), [ticket], clock=clock) as flows:
        flows.start("ticket", {"customer": "ann"}, id="a")
        flows.send("a", "triage", {"priority": "HIGH"})
        flows.send("a", "reply", {"text": "first"})
        out = flows.fork("a", at=1, patch={"customer": "bob"}, id="b")
        assert out.data == {"ok": True, "id": "b", "state": "OPEN", "seq": 1,
                            "forked_from": "a", "at": 1}  # fmt: skip
        assert flows.send("b", "reply", {"text": "second"}).ok
        record = flows.store.load("b")
        assert record.snapshot[LINEAGE] == {
            "forked_from": "a",
            "at": 1,
            "patches": [{"at": 1, "context": {"customer": "bob"}}],
        }
        assert record.snapshot["context"]["customer"] == "bob"
        mails = [(e.instance_id, e.seq, e.payload) for e in flows.store.pending_effects()]
        assert mails == [
            ("a", 2, {"to": "ann", "text": "first"}),
            ("b", 2, {"to": "bob", "text": "second"}),
        ]


def test_a_patched_fork_and_a_fork_of_it_replay_identical_with_their_own_contexts(
    shared_store_url: str, clock: FakeClock, ticket: Machine
) -> None:
    with DurableFlows(open_store(shared_store_url, clock=clock), [ticket], clock=clock) as flows:
        flows.start("ticket", {"customer": "ann"}, id="a")
        flows.send("a", "triage", {"priority": "LOW"})
        flows.send("a", "reply", {"text": "one"})
        flows.fork("a", at=1, patch={"customer": "bob", "replies": 5}, id="b")
        flows.send("b", "reply", {"text": "two"})
        flows.send("b", "note", {"text": "x"})
        flows.fork("b", at=3, patch={"priority": "HIGH"}, id="c")
        flows.send("c", "resolve")
        for instance_id in ("b", "c"):
            steps = flows.replay(instance_id)
            assert all(s.difference is None for s in steps), steps[-1].difference
            assert steps[-1].context == flows.store.load(instance_id).snapshot["context"]
        context = flows.store.load("c").snapshot["context"]
        assert (context["customer"], context["replies"], context["priority"]) == ("bob", 6, "HIGH")
        mails = [(e.instance_id, e.payload["to"]) for e in flows.store.pending_effects()]
        assert mails == [("a", "ann"), ("b", "bob")]


def test_a_fork_with_a_context_that_does_not_check_is_refused_and_writes_nothing(
    sqlite_url: str, clock: FakeClock, ticket: Machine
) -> None:
    with DurableFlows(open_store(sqlite_url, clock=clock), [ticket], clock=clock) as flows:
        flows.start("ticket", id="a")
        out = flows.fork("a", at=0, patch={"replies": "many"}, id="b")
        assert out.status == "rejected"
        assert out.data["error"] == "invalid_context"
        assert out.data["issues"]["invalid"][0]["field"] == "replies"
        assert [r.id for r in flows.store.instances()] == ["a"]
        with pytest.raises(ValueError, match="no step 9"):
            flows.fork("a", at=9)


def test_replay_on_a_changed_flow_reports_the_first_step_that_differs(
    sqlite_url: str, clock: FakeClock, ticket: Machine
) -> None:
    with DurableFlows(open_store(sqlite_url, clock=clock), [ticket], clock=clock) as flows:
        flows.start("ticket", id="a")
        flows.send("a", "note", {"text": "x"})
        flows.send("a", "triage", {"priority": "LOW"})
        flows.send("a", "resolve")
        text = TICKET.read_text(encoding="utf-8")
        changed = Machine.from_source(
            text.replace("on resolve -> SOLVED", "on resolve -> WAITING"), "ticket.flow"
        )
        steps = flows.replay("a", changed)
        assert [s.difference for s in steps[:-1]] == [None, None, None]
        assert steps[-1].difference == (
            "step 3: recorded OPEN -> SOLVED, the re-run went OPEN -> WAITING"
        )


def test_rows_written_before_start_rows_recorded_the_context_are_not_replayable(
    ticket: Machine,
) -> None:
    old = HistoryRow("a", 0, 1735689600.0, None, "NEW", "start", None, None, "start")
    with pytest.raises(NotReplayable, match="does not record the starting context"):
        list(replay_rows(ticket, [old]))


def test_context_diff_names_added_removed_and_changed_fields() -> None:
    assert context_diff({"a": 1, "b": [1], "c": 0}, {"a": 1, "b": [1, 2], "d": "x"}) == [
        {"field": "b", "op": "change", "before": [1], "after": [1, 2]},
        {"field": "c", "op": "remove", "before": 0, "after": None},
        {"field": "d", "op": "add", "before": None, "after": "x"},
    ]
