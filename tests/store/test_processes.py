"""The store under real concurrency and real crashes: separate OS processes on one SQLite file or
one PostgreSQL database (the issue's "done when" tests, with a counter as the step function;
test_engine_durable.py repeats them through the engine)."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from flowc.runtime.store import Store, TimerSpec, open_store
from store.conftest import patient
from store.toy import counter, move

PROC = Path(__file__).with_name("proc.py")


def spawn(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(PROC), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(proc: subprocess.Popen[str], timeout: float = 240) -> list[dict[str, object]]:
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, err
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def assert_consistent(store: Store, instance_id: str) -> int:
    """No half step: counter, version, seq, history and keys all tell the same story."""
    record = store.load(instance_id)
    count = record.snapshot["count"]
    rows = store.history(instance_id)
    assert [r.seq for r in rows] == list(range(1, count + 1)), "gap or duplicate in history"
    assert record.seq == count and record.version == count + 1
    return int(count)


def test_eight_processes_lose_no_increment(shared_store_url: str) -> None:
    ids = [f"i{n}" for n in range(10)]
    store = open_store(shared_store_url)
    for name in ids:
        store.create(counter(name))
    procs = [spawn("increment", patient(shared_store_url), "500", f"p{n}", *ids) for n in range(8)]
    results = [finish(p)[0] for p in procs]
    expected: Counter[str] = Counter()
    statuses: Counter[str] = Counter()
    for result in results:
        expected.update(result["counts"])  # type: ignore[arg-type]
        statuses.update(result["statuses"])  # type: ignore[arg-type]
    assert sum(expected.values()) == 8 * 500
    for name in ids:
        assert assert_consistent(store, name) == expected[name]
    # A step resent after a conflict may find its key applied only if it had landed, which a
    # conflict outcome rules out: so every step committed exactly once.
    assert statuses["committed"] == 8 * 500
    assert statuses["replayed"] == 0
    store.close()


@pytest.mark.parametrize("kills", [3])
def test_sigkill_mid_stream_leaves_no_half_step(shared_store_url: str, kills: int) -> None:
    store = open_store(shared_store_url)
    store.create(counter("c"))
    rng = random.Random(7)
    acked: set[str] = set()
    for _ in range(kills):
        # Each run resends from the start: keys already applied replay, the rest apply.
        proc = spawn("stream", shared_store_url, "c", "1000000")
        assert proc.stdout is not None
        wanted = rng.randint(150, 400)
        for seen, line in enumerate(proc.stdout, start=1):
            acked.add(json.loads(line)["ack"])
            if seen >= wanted:
                break
        time.sleep(rng.uniform(0, 0.02))  # land the kill at an arbitrary point of a step
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        assert proc.stderr is not None
        assert proc.returncode == -signal.SIGKILL, proc.stderr.read()
        proc.stdout.close()
        proc.stderr.close()
        reopened = open_store(shared_store_url)
        count = assert_consistent(reopened, "c")
        assert count >= len(acked), "an acknowledged step was lost"
        reopened.close()
    # Resend every event up to well past the last acknowledged one, with its key.
    last = count + 50
    reopened = open_store(shared_store_url)
    from store.toy import bump

    replayed = sum(
        reopened.step("c", bump(1), key=f"e{i}").status == "replayed" for i in range(last)
    )
    assert replayed == count, "exactly the steps that had landed replay"
    assert assert_consistent(reopened, "c") == last, "no duplicates, nothing missing"
    reopened.close()
    store.close()


def test_three_workers_fire_each_timer_once(shared_store_url: str) -> None:
    store = open_store(shared_store_url)
    now = time.time()
    expected: set[tuple[str, str]] = set()
    for n in range(50):
        timers = [TimerSpec(f"t{k}", "COUNTING", now + 1.0 + (n * 4 + k) / 200) for k in range(4)]
        store.create(counter(f"i{n}", timers=timers))
        expected.update((f"i{n}", t.timer_id) for t in timers)
    # Timers armed in a state that is then left must never fire.
    for n in range(10):
        store.create(counter(f"gone{n}", timers=[TimerSpec("t", "COUNTING", now + 1.0)]))
        store.step(f"gone{n}", move("AWAY"))
    assert len(expected) == 200
    procs = [spawn("worker", shared_store_url, "30") for _ in range(3)]
    results = [finish(p)[0] for p in procs]
    fired = [tuple(item) for r in results for item in r["fired"]]  # type: ignore[attr-defined]
    committed = Counter((i, t) for i, t, status in fired if status == "committed")
    assert set(committed) == expected, "every timer fired"
    assert max(committed.values()) == 1, "no timer fired twice"
    for n in range(50):
        record = store.load(f"i{n}")
        assert sorted(record.snapshot["fired"]) == ["t0", "t1", "t2", "t3"]
        assert [r.trigger for r in store.history(f"i{n}")].count("timer:t0") == 1
    for n in range(10):
        assert store.load(f"gone{n}").snapshot["fired"] == []
    assert store.timers() == []
    store.close()
