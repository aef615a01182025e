"""What every store promises, run unchanged against memory, SQLite and PostgreSQL."""

from __future__ import annotations

import sqlite3
import threading
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from flowc.runtime.store import (
    Change,
    HistoryEntry,
    InstanceExists,
    InstanceNotFound,
    InstanceRecord,
    NewInstance,
    Store,
    TimerClaim,
    TimerSpec,
    open_store,
)
from store.conftest import optimistic
from store.toy import Clock, bump, counter, fire, move, refuse


def test_create_then_load(store: Store, clock: Clock) -> None:
    created = store.create(counter("a"))
    loaded = store.load("a")
    assert created == loaded
    assert (loaded.flow, loaded.flow_version, loaded.graph_hash) == ("counter", 1, "sha256:toy")
    assert (loaded.state, loaded.version, loaded.seq) == ("COUNTING", 1, 0)
    assert loaded.snapshot == {"count": 0, "fired": [], "note": "é ✓"}
    assert loaded.created_at == loaded.updated_at == clock.now


def test_two_handles_share_the_instances(make_store: Callable[[], Store]) -> None:
    one, two = make_store(), make_store()
    one.create(counter("a"))
    two.step("a", bump())
    assert one.load("a").snapshot["count"] == 1
    assert [r.id for r in two.instances()] == ["a"]


def test_create_twice_is_refused(store: Store) -> None:
    store.create(counter("a"))
    with pytest.raises(InstanceExists):
        store.create(counter("a"))


def test_unknown_instance(store: Store) -> None:
    with pytest.raises(InstanceNotFound):
        store.load("nope")
    with pytest.raises(InstanceNotFound):
        store.step("nope", bump())
    with pytest.raises(InstanceNotFound):
        store.history("nope")
    with pytest.raises(InstanceNotFound):
        store.timers("nope")
    assert store.delete("nope") is False


def test_create_with_history_numbers_it(store: Store) -> None:
    new = NewInstance(
        "a",
        "counter",
        1,
        "h",
        "START",
        {"count": 0},
        history=[HistoryEntry(1.0, None, "START", None, None, "start")],
    )
    assert store.create(new).seq == 1
    (row,) = store.history("a")
    assert (row.seq, row.source, row.target, row.reason) == (1, None, "START", "start")


def test_step_commits_snapshot_version_and_history(store: Store, clock: Clock) -> None:
    store.create(counter("a"))
    clock.advance(5)
    out = store.step("a", bump(2, at=clock.now))
    assert out.status == "committed" and out.committed
    assert out.outcome == {"ok": True, "count": 2, "version": 2}
    assert out.record is not None and out.record == store.load("a")
    assert (out.record.version, out.record.seq, out.record.updated_at) == (2, 1, clock.now)
    assert [(r.seq, r.trigger, r.payload) for r in out.history] == [(1, "inc", {"by": 2})]
    store.step("a", bump(3))
    rows = store.history("a")
    assert [r.seq for r in rows] == [1, 2]
    assert rows[0].at == clock.now and rows[0].instance_id == "a"
    assert store.load("a").snapshot["count"] == 5


def test_a_step_may_append_several_rows(store: Store) -> None:
    store.create(counter("a"))

    def two(record: InstanceRecord) -> Change:
        return Change(
            record.snapshot,
            "B",
            history=[
                HistoryEntry(1.0, "COUNTING", "ROUTE", "go"),
                HistoryEntry(1.0, "ROUTE", "B", None, {"k": [1, 2]}, "routed"),
            ],
        )

    out = store.step("a", two)
    assert [r.seq for r in out.history] == [1, 2]
    store.step("a", bump())
    assert [(r.seq, r.target) for r in store.history("a")] == [
        (1, "ROUTE"),
        (2, "B"),
        (3, "B"),
    ]
    assert [r.seq for r in store.history("a", after=1, limit=1)] == [2]


def test_rejection_changes_nothing(store: Store) -> None:
    store.create(counter("a"))
    before = store.load("a")
    out = store.step("a", refuse("closed"))
    assert out.status == "rejected" and not out.committed
    assert out.outcome == {"ok": False, "error": "closed", "state": "COUNTING"}
    assert store.load("a") == before
    assert store.history("a") == []


def test_step_function_failure_writes_nothing(store: Store) -> None:
    store.create(counter("a"))

    def broken(record: InstanceRecord) -> Change:
        raise RuntimeError("engine bug")

    with pytest.raises(RuntimeError):
        store.step("a", broken)
    assert store.load("a").version == 1


def test_idempotency_key_replays_first_outcome(store: Store) -> None:
    store.create(counter("a"))
    first = store.step("a", bump(1), key="k1")
    again = store.step("a", bump(100), key="k1")
    assert again.status == "replayed"
    assert again.outcome == first.outcome
    record = store.load("a")
    assert (record.snapshot["count"], record.version, record.seq) == (1, 2, 1)
    assert store.step("a", bump(1), key="k2").status == "committed"
    store.create(counter("b"))
    assert store.step("b", bump(1), key="k1").status == "committed", "keys are per instance"


def test_rejections_do_not_consume_keys(store: Store) -> None:
    store.create(counter("a"))
    assert store.step("a", refuse(), key="k").status == "rejected"
    assert store.step("a", bump(), key="k").status == "committed"
    assert store.step("a", bump(), key="k").status == "replayed"


def test_records_handed_out_are_copies(store: Store) -> None:
    store.create(counter("a"))
    record = store.load("a")
    record.snapshot["count"] = 99
    seen: list[InstanceRecord] = []

    def spy(rec: InstanceRecord) -> Change:
        seen.append(rec)
        rec.snapshot["fired"].append("x")
        return Change(rec.snapshot, rec.state)

    store.step("a", spy)
    seen[0].snapshot["count"] = 1000
    assert store.load("a").snapshot == {"count": 0, "fired": ["x"], "note": "é ✓"}


def test_json_values_round_trip(store: Store) -> None:
    value = {"s": "naïve ✓ \U0001f600", "n": None, "f": 1.5, "i": 2**40, "l": [True, {"x": []}]}
    store.create(NewInstance("a", "f", 1, "h", "S", value))
    assert store.load("a").snapshot == value

    def with_payload(record: InstanceRecord) -> Change:
        return Change(record.snapshot, "S", value, [HistoryEntry(0.0, "S", "S", "e", value)])

    out = store.step("a", with_payload, key="k")
    assert out.outcome == value
    assert store.history("a")[0].payload == value
    assert store.step("a", with_payload, key="k").outcome == value


def test_flow_version_moves_with_a_migration(store: Store) -> None:
    store.create(counter("a"))

    def migrate(record: InstanceRecord) -> Change:
        return Change(dict(record.snapshot, extra=1), "NEW", flow_version=2, graph_hash="h2")

    store.step("a", migrate)
    record = store.load("a")
    assert (record.flow_version, record.graph_hash, record.state) == (2, "h2", "NEW")


def test_instances_are_listed_and_filtered(store: Store, clock: Clock) -> None:
    for name in ("a", "b", "c"):
        store.create(counter(name, flow="other" if name == "c" else "counter"))
        clock.advance(1)
    store.step("a", move("DONE"))
    assert [r.id for r in store.instances()] == ["a", "c", "b"]
    assert [r.id for r in store.instances(flow="counter")] == ["a", "b"]
    assert [r.id for r in store.instances(state="DONE")] == ["a"]
    assert [r.id for r in store.instances(limit=1, offset=1)] == ["c"]


def test_delete_removes_everything(store: Store) -> None:
    store.create(counter("a", timers=[TimerSpec("t", "COUNTING", 10.0)]))
    store.step("a", bump(), key="k")
    assert store.delete("a") is True
    with pytest.raises(InstanceNotFound):
        store.load("a")
    assert store.timers() == []
    store.create(counter("a"))
    assert store.history("a") == []
    assert store.step("a", bump(), key="k").status == "committed", "the old key went too"


def test_graphs_are_kept_by_hash(make_store: Callable[[], Store]) -> None:
    store = make_store()
    assert store.load_graph("sha256:none") is None
    store.save_graph("sha256:a", "tally", 1, '{"name":"tally"}')
    store.save_graph("sha256:a", "tally", 1, '{"name":"changed"}')  # the hash names the content
    store.save_graph("sha256:b", "tally", 2, '{"name":"tally","version":2}')
    other = make_store()
    assert other.load_graph("sha256:a") == '{"name":"tally"}'
    assert other.load_graph("sha256:b") == '{"name":"tally","version":2}'
    store.create(counter("a"))
    assert store.delete("a") and other.load_graph("sha256:a") is not None, "graphs outlive it"


def test_a_database_from_before_graphs_were_kept_gains_their_table(
    shared_store_url: str, clock: Clock
) -> None:
    open_store(shared_store_url, clock=clock).close()
    if shared_store_url.startswith("sqlite"):
        with sqlite3.connect(shared_store_url.removeprefix("sqlite:///")) as conn:
            conn.execute("DROP TABLE flowc_graphs")
    else:
        import psycopg

        with psycopg.connect(shared_store_url, autocommit=True) as pg:
            pg.execute("DROP TABLE flowc_graphs")
    store = open_store(shared_store_url, clock=clock)
    try:
        store.save_graph("sha256:a", "tally", 1, "{}")
        assert store.load_graph("sha256:a") == "{}"
    finally:
        store.close()


# -- concurrency ---------------------------------------------------------------------------------


def test_racing_threads_lose_no_increment(make_store: Callable[[], Store]) -> None:
    first = make_store()
    first.create(counter("a"))
    outcomes: list[str] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def writer(store: Store, n: int) -> None:
        try:
            for _ in range(n):
                out = store.step("a", bump(), max_attempts=50)
                with lock:
                    outcomes.append(out.status)
        except BaseException as exc:
            errors.append(exc)

    stores = [first, make_store(), make_store()]
    threads = [threading.Thread(target=writer, args=(s, 40)) for s in stores for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert len(outcomes) == 6 * 40
    committed = outcomes.count("committed")
    assert set(outcomes) <= {"committed", "conflict"}
    record = first.load("a")
    assert record.snapshot["count"] == committed == record.seq == record.version - 1
    assert [r.seq for r in first.history("a")] == list(range(1, committed + 1))


@pytest.fixture(params=["memory", "postgres"])
def racing_url(request: pytest.FixtureRequest) -> str:
    """Backends where a rival can commit between a step's read and its write. (A SQLite step
    holds the write lock from read to commit; its lost race is a lock not had in time, below.)"""
    if request.param == "memory":
        return f"memory://{uuid.uuid4().hex}"
    url: str = request.getfixturevalue("postgres_url")
    return url


def test_lost_race_is_retried_then_reported(racing_url: str, clock: Clock) -> None:
    store = open_store(optimistic(racing_url), clock=clock)
    store.create(counter("a"))
    calls = 0

    def meddling(record: InstanceRecord) -> Change:
        # Someone else commits between our read and our write, on the first call only.
        nonlocal calls
        calls += 1
        if calls == 1:
            assert store.step("a", bump(10)).committed
        return bump(1)(record)

    out = store.step("a", meddling)
    assert (out.status, out.attempts, calls) == ("committed", 2, 2)
    assert store.load("a").snapshot["count"] == 11

    def always_meddling(record: InstanceRecord) -> Change:
        store.step("a", bump(10))
        return bump(1)(record)

    out = store.step("a", always_meddling, max_attempts=3, key="k")
    assert out.status == "conflict" and out.attempts == 3
    assert out.outcome["error"] == "conflict" and out.outcome["kind"] == "conflict"
    assert out.outcome["message"]
    assert store.load("a").snapshot["count"] == 41, "only the meddler's steps landed"
    assert store.step("a", bump(1), key="k").status == "committed", "a conflict keeps no key"
    store.close()


def test_sqlite_lock_not_had_in_time_is_retried_then_reported(tmp_path: Path, clock: Clock) -> None:
    path = tmp_path / "flows.db"
    store = open_store(f"sqlite:///{path}?busy_timeout=50", clock=clock)
    store.create(counter("a"))
    rival = sqlite3.connect(path, isolation_level=None)
    calls = 0

    def counted(record: InstanceRecord) -> Change:
        nonlocal calls
        calls += 1
        return bump(1)(record)

    rival.execute("BEGIN IMMEDIATE")  # another process holds the write lock throughout
    try:
        out = store.step("a", counted, max_attempts=3, key="k")
    finally:
        rival.execute("ROLLBACK")
    assert out.status == "conflict" and out.attempts == 3
    assert out.outcome["error"] == "conflict" and out.outcome["message"]
    assert calls == 0, "a step never reads before it holds the lock"
    assert store.load("a").snapshot["count"] == 0 and store.load("a").seq == 0
    # Once the lock is free the same key goes through: a conflict keeps no key.
    out = store.step("a", counted, key="k")
    assert (out.status, out.attempts, calls) == ("committed", 1, 1)
    rival.close()
    store.close()


def test_a_retry_sees_the_key_its_rival_committed(store: Store) -> None:
    store.create(counter("a"))
    calls = 0

    def rival_with_same_key(record: InstanceRecord) -> Change:
        # The same keyed request, sent twice at once: the rival lands first.
        nonlocal calls
        calls += 1
        if calls == 1 and not store.url.startswith("sqlite"):
            assert store.step("a", bump(1), key="k").committed
        return bump(1)(record)

    out = store.step("a", rival_with_same_key, key="k")
    assert out.status == ("committed" if store.url.startswith("sqlite") else "replayed")
    assert store.load("a").snapshot["count"] == 1


# -- timers --------------------------------------------------------------------------------------


def test_timers_are_stored_and_replaced(store: Store) -> None:
    store.create(
        counter("a", timers=[TimerSpec("t1", "COUNTING", 20.0), TimerSpec("t2", "COUNTING", 10.0)])
    )
    assert [(t.timer_id, t.deadline) for t in store.timers("a")] == [("t2", 10.0), ("t1", 20.0)]
    store.step("a", bump())  # timers=None: untouched
    assert len(store.timers("a")) == 2
    store.step("a", bump(timers=[TimerSpec("t1", "COUNTING", 30.0, {"i": 1})]))
    (row,) = store.timers("a")
    assert (row.timer_id, row.deadline, row.data, row.lease_owner) == ("t1", 30.0, {"i": 1}, None)
    store.step("a", move("ELSEWHERE"))
    assert store.timers("a") == [] and store.timers() == []


def test_due_timers_are_claimed_once_until_the_lease_runs_out(store: Store, clock: Clock) -> None:
    t0 = clock.now
    store.create(counter("a", timers=[TimerSpec("soon", "COUNTING", t0 + 1)]))
    store.create(counter("b", timers=[TimerSpec("late", "COUNTING", t0 + 100)]))
    assert store.claim_due_timers("w1") == []
    assert store.next_deadline() == t0 + 1
    clock.advance(2)
    (claim,) = store.claim_due_timers("w1", lease=10)
    assert (claim.instance_id, claim.timer_id, claim.owner) == ("a", "soon", "w1")
    assert claim.lease_until == clock.now + 10
    assert store.claim_due_timers("w2") == [], "leased to w1"
    assert store.next_deadline() == t0 + 100, "a leased timer is not waited for"
    (row,) = store.timers("a")
    assert (row.lease_owner, row.lease_until) == ("w1", clock.now + 10)
    clock.advance(11)
    (again,) = store.claim_due_timers("w2")
    assert again.owner == "w2", "w1's lease ran out"
    store.release(claim)  # w1 no longer holds it: no effect
    assert store.claim_due_timers("w3") == []
    store.release(again)
    assert [c.owner for c in store.claim_due_timers("w3")] == ["w3"]


def test_claims_respect_the_limit_and_deadline_order(store: Store, clock: Clock) -> None:
    for i in range(5):
        store.create(counter(f"i{i}", timers=[TimerSpec("t", "COUNTING", clock.now - i)]))
    claims = store.claim_due_timers("w", limit=3)
    assert [c.instance_id for c in claims] == ["i4", "i3", "i2"]
    assert [c.instance_id for c in store.claim_due_timers("w", limit=3)] == ["i1", "i0"]


def test_firing_a_timer_consumes_it(store: Store, clock: Clock) -> None:
    store.create(
        counter(
            "a",
            timers=[TimerSpec("t1", "COUNTING", clock.now), TimerSpec("t2", "COUNTING", 1e12)],
        )
    )
    (claim,) = store.claim_due_timers("w")
    out = store.step("a", fire(claim), timer=claim)
    assert out.status == "committed" and out.outcome == {"ok": True, "fired": "t1"}
    assert [t.timer_id for t in store.timers("a")] == ["t2"]
    assert store.history("a")[0].trigger == "timer:t1"
    calls: list[str] = []

    def spy(record: InstanceRecord) -> Change:
        calls.append("ran")
        return Change(record.snapshot, record.state)

    assert store.step("a", spy, timer=claim).status == "stale", "fired once only"
    assert calls == []
    assert store.load("a").snapshot["fired"] == ["t1"]


def test_a_timer_whose_state_was_left_is_dropped(store: Store, clock: Clock) -> None:
    store.create(counter("a", timers=[TimerSpec("t", "COUNTING", clock.now)]))
    (claim,) = store.claim_due_timers("w")
    store.step("a", move("AWAY"))  # leaving the state disarms it, even though it was claimed
    assert store.step("a", fire(claim), timer=claim).status == "stale"
    assert store.load("a").snapshot["fired"] == []
    assert store.claim_due_timers("w") == []


def test_a_rearmed_timer_is_a_new_timer(store: Store, clock: Clock) -> None:
    store.create(counter("a", timers=[TimerSpec("t", "COUNTING", clock.now)]))
    (claim,) = store.claim_due_timers("w")
    store.step("a", bump(timers=[TimerSpec("t", "COUNTING", clock.now + 50)]))
    assert store.step("a", fire(claim), timer=claim).status == "stale"
    clock.advance(60)
    (fresh,) = store.claim_due_timers("w")
    assert fresh.deadline == claim.deadline + 50
    assert store.step("a", fire(fresh), timer=fresh).committed


def test_an_unchanged_timer_keeps_its_lease(store: Store, clock: Clock) -> None:
    keep = TimerSpec("t", "COUNTING", clock.now)
    store.create(counter("a", timers=[keep]))
    (claim,) = store.claim_due_timers("w")
    store.step("a", bump(timers=[keep]))
    assert store.timers("a")[0].lease_owner == "w"
    assert store.step("a", fire(claim), timer=claim).committed


def test_a_rejected_timer_is_consumed(store: Store, clock: Clock) -> None:
    store.create(counter("a", timers=[TimerSpec("t", "COUNTING", clock.now)]))
    (claim,) = store.claim_due_timers("w")
    out = store.step("a", refuse("guard_failed"), timer=claim)
    assert out.status == "rejected"
    assert store.timers("a") == [] and store.load("a").version == 1


def test_a_timer_rearming_itself_on_firing(store: Store, clock: Clock) -> None:
    store.create(counter("a", timers=[TimerSpec("tick", "COUNTING", clock.now)]))
    for _ in range(3):
        (claim,) = store.claim_due_timers("w")

        def tick(record: InstanceRecord, claim: TimerClaim = claim) -> Change:
            base = fire(claim)(record)
            assert isinstance(base, Change)
            # An engine that still lists the timer it is firing must not get it back.
            fired = TimerSpec(claim.timer_id, claim.state, claim.deadline, claim.data)
            nxt = TimerSpec("tick", "COUNTING", claim.deadline + 60)
            return Change(base.snapshot, base.state, base.outcome, base.history, [fired, nxt])

        assert store.step("a", tick, timer=claim).committed
        clock.advance(60)
    assert store.load("a").snapshot["fired"] == ["tick"] * 3
    assert [t.deadline for t in store.timers("a")] == [claim.deadline + 60]
