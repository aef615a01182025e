"""Store benchmark: committed engine steps per second and step latency, SQLite and PostgreSQL.

    python bench/store.py [--writers 1 4 16] [--seconds 3] [--backends sqlite postgres]
                          [--postgres-url URL] [--contended] [--raw]

Each writer is its own process (as web workers would be) driving `DurableFlows.send` on its own
instance of a small counter flow, for --seconds after a warm-up; every step is a full
transaction (load, restore, engine step, conditional update, history row, idempotency key).
With --contended all writers share one instance, so they race for it (optimistic retries on
PostgreSQL, the write lock on SQLite). With --raw the step function is a bare counter instead
of the engine, which shows what the store itself costs.

Then, per backend, what `DurableFlows.load(id)` costs on an instance of --load-steps steps
(default 1000): with the whole history read back from the store's rows (the default) and with
only the compact entries the stored snapshot keeps (`full_history=False`).

Prints, per backend and writer count: committed steps/second (all writers together), p50 and
p99 latency of one step as its caller sees it, and conflicts. Without --postgres-url a
throwaway server is started with .ci/postgres (default durability settings: fsync on), and
stopped at the end. SQLite runs in WAL mode twice, each on a fresh file: with the default
synchronous=FULL (the WAL is synced to disk at every commit: a committed step survives a power
cut) and with ?synchronous=normal (synced at checkpoints only: survives a process crash, may
lose the last commits to a power cut); --synchronous picks one.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent

COUNTER = """\
flow counter "Counter"
version 1
context { count: int = 0 }
event inc(by: int)
initial state OPEN {
  on inc -> self do count += event.by
}
"""


def writer(
    url: str,
    instance_id: str,
    seconds: float,
    warmup: float,
    raw: bool,
    ready: Any,
    start: Any,
    results: Any,
) -> None:
    from flowc.runtime import Machine
    from flowc.runtime.store import Change, HistoryEntry, InstanceRecord, open_store
    from flowc.runtime.store.durable import DurableFlows

    store = open_store(url)
    flows = DurableFlows(store, [Machine.from_source(COUNTER)])

    def bare(record: InstanceRecord) -> Change:
        count = record.snapshot.get("count", 0) + 1
        return Change(
            dict(record.snapshot, count=count),
            record.state,
            {"ok": True},
            [HistoryEntry(time.time(), "OPEN", "OPEN", "inc", {"by": 1})],
        )

    ready.put(os.getpid())
    start.wait()
    latencies: list[float] = []
    conflicts = 0
    n = 0
    began = time.perf_counter()
    measure_from = began + warmup
    stop_at = measure_from + seconds
    while True:
        t0 = time.perf_counter()
        if t0 >= stop_at:
            break
        key = f"{os.getpid()}-{n}"
        if raw:
            status = store.step(instance_id, bare, key=key).status
        else:
            status = flows.send(instance_id, "inc", {"by": 1}, key=key).status
        t1 = time.perf_counter()
        n += 1
        if t0 >= measure_from:
            if status == "committed":
                latencies.append(t1 - t0)
            elif status == "conflict":
                conflicts += 1
    store.close()
    results.put((latencies, conflicts))


def run_case(url: str, writers: int, seconds: float, raw: bool, contended: bool) -> dict[str, Any]:
    from flowc.runtime import Machine
    from flowc.runtime.store import open_store
    from flowc.runtime.store.durable import DurableFlows

    store = open_store(url)
    flows = DurableFlows(store, [Machine.from_source(COUNTER)])
    tag = f"b{time.time_ns()}"
    ids = [f"{tag}-0"] if contended else [f"{tag}-{i}" for i in range(writers)]
    for instance_id in ids:
        flows.start("counter", id=instance_id)
    store.close()
    ctx = mp.get_context("spawn")
    ready = ctx.Queue()
    start = ctx.Event()
    results = ctx.Queue()
    procs = [
        ctx.Process(
            target=writer,
            args=(url, ids[0 if contended else i], seconds, 1.0, raw, ready, start, results),
        )
        for i in range(writers)
    ]
    for p in procs:
        p.start()
    # Start together once every process has imported and loaded: on a small machine, late
    # starters would still be compiling while the others are measured.
    for _ in procs:
        ready.get(timeout=300)
    start.set()
    gathered = [results.get(timeout=seconds + 120) for _ in procs]
    for p in procs:
        p.join()
    latencies = sorted(x for lat, _ in gathered for x in lat)
    conflicts = sum(c for _, c in gathered)
    if not latencies:
        return {"steps_per_s": 0.0, "p50_ms": float("nan"), "p99_ms": float("nan"), "conflicts": 0}
    return {
        "steps_per_s": len(latencies) / seconds,
        "p50_ms": 1000 * statistics.median(latencies),
        "p99_ms": 1000 * latencies[min(len(latencies) - 1, int(0.99 * len(latencies)))],
        "conflicts": conflicts,
    }


def load_cost(url: str, steps: int) -> tuple[float, float]:
    """Milliseconds per `load` of an instance with `steps` steps: full history, compact."""
    from flowc.runtime import Machine
    from flowc.runtime.store import open_store
    from flowc.runtime.store.durable import DurableFlows

    with DurableFlows(open_store(url), [Machine.from_source(COUNTER)]) as flows:
        instance_id = f"load{time.time_ns()}"
        flows.start("counter", id=instance_id)
        for _ in range(steps):
            flows.send(instance_id, "inc", {"by": 1})
        assert len(flows.load(instance_id).history) == steps + 1
        out = []
        for full in (True, False):
            runs = 20
            began = time.perf_counter()
            for _ in range(runs):
                flows.load(instance_id, full_history=full)
            out.append(1000 * (time.perf_counter() - began) / runs)
    return out[0], out[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--writers", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--backends", nargs="+", default=["sqlite", "postgres"])
    parser.add_argument("--postgres-url", default=os.environ.get("FLOWC_BENCH_POSTGRES_URL"))
    parser.add_argument("--contended", action="store_true", help="all writers on one instance")
    parser.add_argument("--raw", action="store_true", help="a bare counter, not the engine")
    parser.add_argument(
        "--load-steps",
        type=int,
        default=1000,
        metavar="N",
        help="measure load() on an instance of N steps (0: skip)",
    )
    parser.add_argument(
        "--synchronous",
        nargs="+",
        choices=["full", "normal"],
        default=["full", "normal"],
        help="SQLite's synchronous settings to measure (default both; full is the store's)",
    )
    args = parser.parse_args()

    pg_dir: str | None = None
    tmp = tempfile.TemporaryDirectory(prefix="flowc-bench-")
    try:
        urls: dict[str, str] = {}
        if "sqlite" in args.backends:
            for sync in args.synchronous:
                db = Path(tmp.name) / f"bench-{sync}.db"
                urls[f"sqlite {sync.upper()}"] = f"sqlite:///{db}?synchronous={sync}"
        if "postgres" in args.backends:
            if args.postgres_url:
                urls["postgres"] = args.postgres_url
            else:
                pg_dir = tempfile.mkdtemp(prefix="flowc-bench-pg-")
                url = subprocess.run(
                    [str(ROOT / ".ci" / "postgres"), "start", pg_dir],
                    check=True,
                    capture_output=True,
                    text=True,
                ).stdout.strip()
                urls["postgres"] = url
        mode = ("bare counter" if args.raw else "engine steps") + (
            ", one shared instance" if args.contended else ", one instance per writer"
        )
        print(f"store benchmark: {mode}, {args.seconds:g} s per case, {os.cpu_count()} CPUs")
        header = ("backend", "writers", "steps/s", "p50 ms", "p99 ms", "conflicts")
        print("{:<16}{:>8}{:>10}{:>9}{:>9}{:>11}".format(*header))
        for backend, url in urls.items():
            for n in args.writers:
                r = run_case(url, n, args.seconds, args.raw, args.contended)
                print(
                    f"{backend:<16}{n:>8}{r['steps_per_s']:>10.0f}{r['p50_ms']:>9.2f}"
                    f"{r['p99_ms']:>9.2f}{r['conflicts']:>11}",
                    flush=True,
                )
        if args.load_steps > 0:
            print(f"load() of an instance with {args.load_steps} steps, ms per call")
            print("{:<16}{:>14}{:>14}".format("backend", "full history", "compact"))
            for backend, url in urls.items():
                full, compact = load_cost(url, args.load_steps)
                print(f"{backend:<16}{full:>14.2f}{compact:>14.2f}", flush=True)
    finally:
        if pg_dir is not None:
            subprocess.run([str(ROOT / ".ci" / "postgres"), "stop", pg_dir], check=False)
        tmp.cleanup()


if __name__ == "__main__":
    sys.exit(main())
