"""The issue's "done when" tests through the real engine: separate processes drive `tally` and
`timed` instances with `DurableFlows` on one SQLite file or one PostgreSQL database."""

from __future__ import annotations

import json
import os
import random
import signal
import time
from collections import Counter

from flowc.runtime.store import Store, open_store
from flowc.runtime.store.durable import DurableFlows
from store.conftest import patient
from store.flows import TALLY_V1, TIMED, machine
from store.test_processes import finish, spawn


def durable(store: Store) -> DurableFlows:
    return DurableFlows(store, [machine(TALLY_V1), machine(TIMED)])


def assert_consistent(store: Store, instance_id: str) -> int:
    """Engine context, stored record and history rows agree: no half step, no gap."""
    record = store.load(instance_id)
    count = int(record.snapshot["context"]["count"])
    rows = store.history(instance_id)
    assert [r.seq for r in rows] == list(range(count + 1)), "gap or duplicate in history"
    assert [r.trigger for r in rows] == ["start"] + ["inc"] * count
    assert record.seq == record.snapshot["seq"] == count
    assert record.version == count + 1
    assert len(record.snapshot["history"]) <= 3, "the stored snapshot keeps a compact history"
    return count


def test_eight_processes_lose_no_event(shared_store_url: str) -> None:
    store = open_store(shared_store_url)
    d = durable(store)
    ids = [f"t{n}" for n in range(10)]
    for name in ids:
        d.start("tally", id=name)
    url = patient(shared_store_url)
    procs = [spawn("engine-increment", url, "500", f"p{n}", *ids) for n in range(8)]
    results = [finish(p)[0] for p in procs]
    expected: Counter[str] = Counter()
    statuses: Counter[str] = Counter()
    for result in results:
        expected.update(result["counts"])  # type: ignore[arg-type]
        statuses.update(result["statuses"])  # type: ignore[arg-type]
    assert sum(expected.values()) == 4000
    for name in ids:
        assert assert_consistent(store, name) == expected[name]
    assert statuses["committed"] == 4000 and statuses["replayed"] == 0
    print(f"\n{shared_store_url.split(':')[0]}: statuses {dict(statuses)}")
    store.close()


def test_sigkill_then_resend_with_keys(shared_store_url: str) -> None:
    store = open_store(shared_store_url)
    durable(store).start("tally", id="c")
    rng = random.Random(11)
    acked: set[str] = set()
    count = 0
    for _ in range(3):
        proc = spawn("engine-stream", shared_store_url, "c", "1000000")
        assert proc.stdout is not None and proc.stderr is not None
        wanted = rng.randint(100, 300)
        for seen, line in enumerate(proc.stdout, start=1):
            acked.add(json.loads(line)["ack"])
            if seen >= wanted:
                break
        time.sleep(rng.uniform(0, 0.02))
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        assert proc.returncode == -signal.SIGKILL, proc.stderr.read()
        proc.stdout.close()
        proc.stderr.close()
        with_new = open_store(shared_store_url)
        count = assert_consistent(with_new, "c")
        assert count >= len(acked), "an acknowledged step was lost"
        with_new.close()
    last = count + 40
    reopened = open_store(shared_store_url)
    d = durable(reopened)
    statuses = Counter(d.send("c", "inc", key=f"e{i}").status for i in range(last))
    assert statuses == {"replayed": count, "committed": 40}
    assert assert_consistent(reopened, "c") == last
    reopened.close()
    store.close()


def test_three_workers_fire_two_hundred_timers_once(shared_store_url: str) -> None:
    store = open_store(shared_store_url)
    d = durable(store)
    ids = [f"w{n}" for n in range(200)]
    armed_from = time.time()
    for name in ids:
        d.start("timed", id=name)
        assert d.send(name, "go").status == "committed"
    deadlines = [t.deadline for t in store.timers()]
    assert len(deadlines) == 200
    assert max(deadlines) - min(deadlines) < 1.0 + (time.time() - armed_from)
    # Ten of them leave WAITING before their timer is due: those timers must never fire.
    for name in ids[:10]:
        d.send(name, "stop")
    procs = [spawn("engine-worker", shared_store_url, "30") for _ in range(3)]
    results = [finish(p)[0] for p in procs]
    fired = [tuple(x) for r in results for x in r["fired"]]  # type: ignore[attr-defined]
    committed = Counter(i for i, _, status in fired if status == "committed")
    assert set(committed) == set(ids[10:])
    assert max(committed.values()) == 1, "a timer fired twice"
    for name in ids[10:]:
        record = store.load(name)
        assert (record.state, record.snapshot["context"]["pings"]) == ("RANG", 1)
        assert [r.trigger for r in store.history(name)].count("timer") == 1
    for name in ids[:10]:
        assert store.load(name).state == "STOPPED"
    assert store.timers() == []
    busy = [r["stats"]["committed"] for r in results]  # type: ignore[index]
    print(f"\n{shared_store_url.split(':')[0]}: timers fired per worker {busy}")
    store.close()
