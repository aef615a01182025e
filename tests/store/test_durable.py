"""The engine's steps through a store (`DurableFlows`), on every backend."""

from __future__ import annotations

import random

import pytest

from flowc.runtime.rejections import SnapshotError
from flowc.runtime.store import InstanceNotFound, NewInstance, Store
from flowc.runtime.store.durable import DurableFlows, UnknownFlow, compact_history, open_durable
from flowc.runtime.store.migrate import Migration, migrate_snapshot
from store.flows import REVIEW, TALLY_V1, TALLY_V2, TIMED, machine
from store.toy import Clock


def flows(store: Store, clock: Clock, *sources: str, **options: object) -> DurableFlows:
    return DurableFlows(store, [machine(s) for s in sources], clock=clock, **options)  # type: ignore[arg-type]


def test_start_send_and_history(store: Store, clock: Clock) -> None:
    d = flows(store, clock, TALLY_V1)
    started = d.start("tally", id="t1")
    assert started.status == "committed" and started.data["state"] == "OPEN"
    record = store.load("t1")
    assert (record.flow, record.flow_version, record.graph_hash) == (
        "tally",
        1,
        machine(TALLY_V1).hash,
    )
    assert record.seq == 0 and [r.seq for r in store.history("t1")] == [0]
    clock.advance(3)
    out = d.send("t1", "inc", key="k1")
    assert out.status == "committed" and out.ok
    assert out.data["seq"] == 1 and out.data["trigger"] == "inc"
    assert d.load("t1").context["count"] == 1
    rows = store.history("t1")
    assert [(r.seq, r.source, r.target, r.trigger) for r in rows] == [
        (0, None, "OPEN", "start"),
        (1, "OPEN", "OPEN", "inc"),
    ]
    assert rows[1].at == clock.now
    assert store.load("t1").seq == 1 == d.load("t1").seq


def test_replayed_key_returns_the_first_outcome(store: Store, clock: Clock) -> None:
    d = flows(store, clock, TALLY_V1)
    d.start("tally", id="t")
    first = d.send("t", "inc", key="k")
    again = d.send("t", "inc", key="k")
    assert again.status == "replayed" and again.replayed and again.ok
    assert {k: v for k, v in again.data.items() if k != "replayed"} == first.data
    assert d.load("t").context["count"] == 1


def test_rejection_is_data_and_stores_nothing(store: Store, clock: Clock) -> None:
    d = flows(store, clock, TALLY_V1)
    d.start("tally", id="t")
    out = d.send("t", "nope")
    assert out.status == "rejected" and not out.ok
    assert out.data["error"] == "unknown_event"
    assert store.load("t").version == 1
    d.send("t", "close")
    out = d.send("t", "inc")
    assert out.data["error"] == "instance_final"


def test_unknown_instance_and_flow(store: Store, clock: Clock) -> None:
    d = flows(store, clock, TALLY_V1)
    with pytest.raises(InstanceNotFound):
        d.send("missing", "inc")
    with pytest.raises(UnknownFlow):
        d.start("other")


def test_timer_armed_fired_by_worker_and_dropped_on_exit(store: Store, clock: Clock) -> None:
    d = flows(store, clock, TIMED)
    d.start("timed", id="a")
    d.start("timed", id="b")
    d.send("a", "go")
    d.send("b", "go")
    (timer,) = store.timers("a")
    assert timer.deadline == pytest.approx(clock.now + 0.5)
    assert timer.state == "WAITING" and timer.data["target"] == "RANG"
    d.send("b", "stop")  # leaving WAITING disarms b's timer
    assert store.timers("b") == []
    worker = d.worker(owner="w")
    assert worker.run_once() == 0, "not due yet"
    clock.advance(1)
    assert worker.run_once() == 1
    assert worker.stats.committed == 1
    a = d.load("a")
    assert (a.state, a.context["pings"]) == ("RANG", 1)
    assert store.load("a").state == "RANG" and store.timers() == []
    last = store.history("a")[-1]
    assert (last.source, last.target, last.trigger) == ("WAITING", "RANG", "timer")
    assert last.at == pytest.approx(timer.deadline), "a timer step is recorded at its deadline"
    assert worker.run_once() == 0
    # Re-entering the state arms a fresh timer.
    d.send("a", "go")
    assert len(store.timers("a")) == 1


def test_migration_to_a_newer_version(store: Store, clock: Clock) -> None:
    old = flows(store, clock, TALLY_V1)
    old.start("tally", id="t")
    old.send("t", "inc")
    # v2 renamed OPEN: without a migration the instance cannot move.
    strict = flows(store, clock, TALLY_V1, TALLY_V2)
    with pytest.raises(SnapshotError, match="OPEN"):
        strict.send("t", "inc")
    assert store.load("t").flow_version == 1
    mapping = Migration("tally", 1, states={"OPEN": "COUNTING"})
    new = flows(store, clock, TALLY_V1, TALLY_V2, migrations=[mapping])
    out = new.send("t", "inc")
    assert out.committed if hasattr(out, "committed") else out.status == "committed"
    record = store.load("t")
    assert (record.flow_version, record.graph_hash, record.state) == (
        2,
        machine(TALLY_V2).hash,
        "COUNTING",
    )
    inst = new.load("t")
    assert inst.context == {"count": 2, "label": "new"}, "the new field got its default"
    # Pinned hosts keep running the exact graph an instance started under.
    old.start("tally", id="pinned")
    pinned = flows(store, clock, TALLY_V1, TALLY_V2, upgrade=False)
    pinned.send("pinned", "inc")
    assert store.load("pinned").flow_version == 1


def test_the_store_keeps_graphs_so_instances_run_without_their_flow(
    store: Store, clock: Clock
) -> None:
    host = flows(store, clock, TALLY_V1, TIMED)
    host.start("tally", id="t")
    host.start("timed", id="w")
    host.send("w", "go")
    # A process with no flows at all (a worker, the CLI) runs each on its own graph.
    bare = flows(store, clock)
    assert bare.send("t", "inc").status == "committed"
    assert bare.load("t").machine.hash == machine(TALLY_V1).hash
    clock.advance(1)
    assert bare.worker(owner="w").run_once() == 1
    assert store.load("w").state == "RANG"
    # Pinned to its exact graph, an instance need not have it registered either.
    pinned = flows(store, clock, TALLY_V2, upgrade=False)
    assert pinned.send("t", "inc").status == "committed"
    assert store.load("t").flow_version == 1 and bare.load("t").context == {"count": 2}


def test_an_instance_whose_graph_is_nowhere_is_an_unknown_flow(store: Store, clock: Clock) -> None:
    lost = machine(TALLY_V1.replace("flow tally", "flow lost"))
    DurableFlows(store, [lost], clock=clock).start("lost", id="x")  # keeps a graph...
    record = store.load("x")
    assert store.load_graph(record.graph_hash) is not None
    # ...but an instance started by something that did not (a store written before graphs
    # were kept, or a host writing records itself) cannot be run without its flow.
    store.create(
        NewInstance(
            id="y",
            flow="lost",
            flow_version=1,
            graph_hash="sha256:" + "0" * 64,
            state="OPEN",
            snapshot=record.snapshot,
        )
    )
    with pytest.raises(UnknownFlow, match="neither loaded nor in the store"):
        flows(store, clock).send("y", "inc")
    assert flows(store, clock).send("x", "inc").status == "committed"


def test_migrate_snapshot_chains_and_refuses_unmapped_states() -> None:
    v2 = machine(TALLY_V2)
    snap = machine(TALLY_V1).start().snapshot()
    snap["context"]["old"] = 5
    rules = [
        Migration.from_dict(
            {"flow": "tally", "from_version": 1, "states": {"OPEN": "COUNTING"}, "drop": ["old"]}
        )
    ]
    out = migrate_snapshot(snap, v2, rules)
    assert out["state"] == "COUNTING" and "old" not in out["context"]
    assert v2.restore(out).state == "COUNTING"
    with pytest.raises(SnapshotError, match="no migration"):
        migrate_snapshot(snap, v2, [])
    assert Migration.from_dict(rules[0].to_dict()) == rules[0]


def test_compact_history_answers_back_like_the_full_one(store: Store, clock: Clock) -> None:
    d = flows(store, clock, REVIEW)
    d.start("review", id="r")
    memory = machine(REVIEW).start(clock=clock)
    rng = random.Random(3)
    for i in range(120):
        op = rng.choice(["submit", "approve", "back", "goto-REVIEW", "goto-DRAFT"])
        clock.advance(1)
        if op in {"submit", "approve"}:
            durable_out, memory_out = d.send("r", op), memory.send(op)
        elif op == "back":
            durable_out, memory_out = d.back("r", force=True), memory.back(force=True)
        else:
            target = op.split("-")[1]
            durable_out = d.goto("r", target, force=True)
            memory_out = memory.goto(target, force=True)
        assert durable_out.data == memory_out.to_dict(), (i, op)
        if memory.is_final:
            break
    stored = store.load("r")
    assert stored.state == memory.state
    assert len(stored.snapshot["history"]) < len(memory.history)
    assert [r.seq for r in store.history("r")] == [h.seq for h in memory.history]


def test_compact_history_keeps_first_last_and_each_states_last_moves() -> None:
    rows = [
        {"seq": 0, "source": None, "target": "A"},
        {"seq": 1, "source": "A", "target": "B"},
        {"seq": 2, "source": "B", "target": "A"},
        {"seq": 3, "source": "A", "target": "B"},
        {"seq": 4, "source": "B", "target": "B"},
    ]
    assert [h["seq"] for h in compact_history(rows)] == [0, 2, 3, 4]


def test_open_durable_owns_its_store(store_url: str) -> None:
    with open_durable(store_url, [machine(TALLY_V1)]) as d:
        d.start("tally", id="x")
        assert d.send("x", "inc", key="k").status == "committed"
    with open_durable(store_url, [machine(TALLY_V1)]) as d:
        assert d.send("x", "inc", key="k").status == "replayed"
        assert d.load("x").context["count"] == 1


TALLY_V2_DECLARED = TALLY_V2.replace(
    "version 2\n", "version 2\nmigrate from 1 { state OPEN -> COUNTING }\n"
)


def test_a_flow_declared_migration_needs_nothing_from_the_host(store: Store, clock: Clock) -> None:
    old = flows(store, clock, TALLY_V1)
    old.start("tally", id="t")
    old.send("t", "inc")
    new = flows(store, clock, TALLY_V1, TALLY_V2_DECLARED)
    assert new.send("t", "inc").status == "committed"
    record = store.load("t")
    assert (record.flow_version, record.state) == (2, "COUNTING")
    assert new.load("t").context == {"count": 2, "label": "new"}


def test_the_flow_own_block_wins_over_the_host_chain() -> None:
    v2 = machine(TALLY_V2_DECLARED)
    snap = machine(TALLY_V1).start().snapshot()
    host = [Migration("tally", 1, states={"OPEN": "CLOSED"})]
    assert migrate_snapshot(snap, v2, host)["state"] == "COUNTING"


def test_subscribers_get_committed_steps_only(store: Store, clock: Clock) -> None:
    d = flows(store, clock, TIMED)
    seen: list[tuple[str, int, str | None, str]] = []
    unsubscribe = d.subscribe(lambda iid, step: seen.append((iid, step.seq, step.from_, step.to)))
    outcomes: list[str] = []
    d.start("timed", id="a")
    d.send("a", "go", key="k")
    d.send("a", "go", key="k")  # replayed: nothing ran
    d.send("a", "nope")  # refused
    clock.advance(1)
    worker = d.worker(owner="w", on_outcome=lambda claim, out: outcomes.append(out.status))
    assert worker.run_once() == 1
    assert outcomes == ["committed"], "the host's own on_outcome still hears of the timer"
    assert seen == [("a", 1, "IDLE", "WAITING"), ("a", 2, "WAITING", "RANG")]
    unsubscribe()
    d.send("a", "go")
    assert len(seen) == 2


REOPENING = """\
flow reopening
event submit
event reopen
initial state DRAFT { on submit -> REVIEW }
state REVIEW { on reopen -> DRAFT back }
"""


def test_a_back_rule_through_the_store_needs_force(store: Store, clock: Clock) -> None:
    d = flows(store, clock, REOPENING)
    d.start("reopening", id="r")
    assert d.send("r", "submit").ok
    refused = d.send("r", "reopen")
    assert refused.status == "rejected" and refused.data["error"] == "backward_requires_force"
    assert store.load("r").seq == 1 and d.load("r").state == "REVIEW"
    forced = d.send("r", "reopen", force=True)
    assert forced.status == "committed" and d.load("r").state == "DRAFT"
