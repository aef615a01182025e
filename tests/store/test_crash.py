"""Kill the process at many points: a driver process (crash_driver.py) runs one instance of the
`crash` flow (crash_plan.py) on a real store (a SQLite file, a PostgreSQL database) through host
sends with idempotency keys, timers, scheduled events and fan-outs of child flows (each child
with a timer of its own, messages to its parent, host events forwarded to it), all fired by the
driver's timer worker; the test SIGKILLs it again and again, half the time after a random
(seeded) delay, half the time at a named point (inside a transaction, right before its COMMIT,
right after it, after a worker's claim), and restarts it from the first operation it had not
confirmed; all along a `flowc worker` process races the driver's worker for every timer. After
every kill the store must hold a consistent prefix of the work (the children of every fan-out
applied started, each once, under the id its entry gives it); at the end, each operation
applied exactly once, each scheduled event that was not cancelled delivered exactly once, each
timer fired once, each child started, said goodbye and finished once, each fan-out's done event
delivered once, the history gap-free and in agreement with the context, and the snapshot
loadable.

FLOWC_CRASH_KILLS=N sets the number of kills (30 by default), FLOWC_CRASH_SEED the seed.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flowc.compiler import compile_source
from flowc.runtime import Machine
from flowc.runtime.store import InstanceNotFound, Store, open_store
from flowc.runtime.store.durable import DurableFlows
from store.crash_plan import (
    BLOCK,
    CHECKED,
    CRASH_FLOW,
    INSTANCE,
    KID_FLOW,
    KILL_POINTS,
    UNORDERED,
    expected,
    operation,
)

DRIVER = Path(__file__).with_name("crash_driver.py")
KILLS = int(os.environ.get("FLOWC_CRASH_KILLS", "30"))
SEED = int(os.environ.get("FLOWC_CRASH_SEED", "2811"))
#: a killed run is given operations without end: it is always killed in the middle of work
ENDLESS = 10**9
#: a named point is reached this many times at most before the kill
MAX_PASSES = 12
#: the rival worker's lease (the driver's is crash_driver.LEASE)
RIVAL_LEASE = 0.2
#: a delayed kill comes this long at most after the driver is ready, in seconds
MAX_DELAY = 0.15


@dataclass
class Tally:
    """What the run measured, reported at the end (and in a failure's message)."""

    backend: str
    kills: Counter[str] = field(default_factory=Counter)
    runs: int = 0
    #: operations found applied by the run after the kill (their key replayed)
    landed: int = 0
    operations: int = 0
    children: int = 0
    #: pokes the children took (forwarded from the parent)
    pokes: int = 0
    #: kills that found children running
    amid_children: int = 0
    #: timer steps the rival worker committed
    rival: int = 0
    steps: int = 0
    duplicates: int = 0
    losses: int = 0

    def line(self) -> str:
        return (
            f"crash test on {self.backend}, seed {SEED}: {sum(self.kills.values())} kills "
            f"({dict(self.kills)}), {self.runs} runs, {self.operations} operations "
            f"({self.landed} had landed before their kill), {self.steps} steps committed, "
            f"{self.children} children started ({self.pokes} pokes forwarded to them; "
            f"{self.amid_children} kills found some running), "
            f"{self.rival} timer steps by the rival worker, "
            f"{self.duplicates} duplicates, {self.losses} losses"
        )


def compiled_flow(tmp_path: Path) -> Path:
    result = compile_source(CRASH_FLOW, "crash.flow", flows={"kid": KID_FLOW})
    assert result.flow is not None and not result.errors, result.diagnostics
    path = tmp_path / "crash.json"
    path.write_text(result.flow.with_hash().to_json())
    return path


class Driver:
    """The driver (crash_driver.py): one process that forks each run; its standard error (the
    runs' tracebacks) goes to a file, read when a run fails."""

    def __init__(self, url: str, flow: Path) -> None:
        self.errors = flow.with_name("driver.err")
        args = [sys.executable, str(DRIVER), url, str(flow), str(SEED)]
        with self.errors.open("w") as err:
            self.proc = subprocess.Popen(
                args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err, text=True
            )

    def line(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        text = self.proc.stdout.readline()
        assert text, f"the driver died: {self.failure()}"
        try:
            line: dict[str, Any] = json.loads(text)
        except ValueError:
            raise AssertionError(f"not a line of the driver: {text!r}") from None
        return line

    def run(
        self, first: int, last: int, *, at: str = "", delay: float | None = None
    ) -> tuple[list[dict[str, Any]], int]:
        """One run: its output lines and exit status. With `delay`, killed that long after
        it is ready; with `at`, it kills itself there."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"{first} {last} {at}\n")
        self.proc.stdin.flush()
        pid = self.line()["pid"]
        lines: list[dict[str, Any]] = []
        while "exit" not in (line := self.line()):
            lines.append(line)
            if delay is not None and line.get("ready"):
                time.sleep(delay)
                os.kill(pid, signal.SIGKILL)
        return lines, int(line["exit"])

    def close(self) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        if self.proc.wait(timeout=120) != 0:
            self.proc.kill()
        self.proc.stdout.close()

    def failure(self) -> str:
        return self.errors.read_text()[-2000:]


def context(store: Store) -> dict[str, Any]:
    ctx: dict[str, Any] = store.load(INSTANCE).snapshot["context"]
    return ctx


def repeats(values: list[int]) -> int:
    return len(values) - len(set(values))


def keys_of(spawns: list[int]) -> list[int]:
    """The keys of the children of these `spawn` operations, in order."""
    return [n * 10 + k for n in spawns for k in range(len(operation(SEED, n)["delays"]))]


def check_after_kill(store: Store, tally: Tally, confirmed: int) -> None:
    """The operations applied are 0, 1, ... in order, each once: all those the driver had
    confirmed, and at most the one in flight beyond them. The children of every `spawn`
    applied started with it (each said hello once), those of every round done finished once,
    and the running ones have the ids their entry gives them."""
    try:
        ctx = context(store)
    except InstanceNotFound:  # killed before its start committed
        assert confirmed == 0
        return
    applied: list[int] = ctx["applied"]
    tally.duplicates += sum(repeats(ctx[name]) for name in CHECKED) + ctx["dups"]
    tally.losses += len(set(range(confirmed)) - set(applied))
    assert applied == list(range(len(applied))), tally.line()
    assert confirmed <= len(applied) <= confirmed + 1, tally.line()
    spawned = [n for n in applied if operation(SEED, n)["kind"] == "spawn"]
    assert ctx["hellos"] == keys_of(spawned), tally.line()
    assert ctx["finished"] == keys_of(ctx["rounds"]), tally.line()
    assert set(ctx["byes"]) <= set(ctx["hellos"]), tally.line()
    check_history(store)
    tally.amid_children += check_children(store)


def check_history(store: Store) -> None:
    """Rows 0, 1, 2, ... up to the record's `seq` at least (read after the record: the rival
    worker may have committed a step in between)."""
    record = store.load(INSTANCE)
    rows = store.history(INSTANCE)
    assert [r.seq for r in rows] == list(range(len(rows))), "history seq not contiguous"
    assert len(rows) >= record.seq + 1, "a committed step without its history row"


def check_children(store: Store) -> bool:
    """The running children are those of the last `spawn`, with ids `kids.SEQ.K` (SEQ: the
    step that entered FANNING), each once, each started with its own key; whether any runs."""
    record = store.load(INSTANCE)
    children = record.snapshot.get("children") or []
    if not children:
        return False
    current = record.snapshot["context"]["current"]
    (entry,) = [
        r.seq
        for r in store.history(INSTANCE)
        if r.trigger == "spawn"
        and r.payload == {"op": current, "delays": operation(SEED, current)["delays"]}
    ]
    ids = [child["id"] for child in children]
    assert repeats(ids) == 0, ids
    for child in children:
        k = int(child["id"].rpartition(".")[2])
        assert child["id"] == f"kids.{entry}.{k}"
        assert child["snapshot"]["context"]["key"] == current * 10 + k
    return True


def history_counts(store: Store) -> tuple[Counter[tuple[str, int]], Counter[str]]:
    """How often each (event, operation or child key) is in the history after the start, and
    how many steps of each other kind (timers, `done.invoke.kids`)."""
    named: Counter[tuple[str, int]] = Counter()
    plain: Counter[str] = Counter()
    kids: Counter[tuple[str, int]] = Counter()
    for row in store.history(INSTANCE)[1:]:
        payload = row.payload or {}
        if row.kind == "child":  # a child's step (or start) in the tree's one history
            kids[(payload["child"], payload["seq"])] += 1
            continue
        ident = payload.get("op", payload.get("key"))
        if ident is None:
            plain[row.trigger] += 1
        else:
            named[(row.trigger, ident)] += 1
    assert not kids or max(kids.values()) == 1, f"a child's step twice: {kids.most_common(3)}"
    return named, plain


def check_end(url: str, flow: Path, tally: Tally, last: int) -> None:
    """Everything done once: the context against the plan, the history against the context."""
    store = open_store(url)
    want = expected(SEED, last)
    ctx = context(store)
    got = {name: sorted(ctx[name]) if name in UNORDERED else ctx[name] for name in CHECKED}
    want = {name: sorted(want[name]) if name in UNORDERED else want[name] for name in CHECKED}
    for name, values in got.items():
        tally.duplicates += repeats(values)
        tally.losses += len(set(want[name]) - set(values))
    tally.duplicates += ctx["dups"]
    tally.steps = store.load(INSTANCE).seq
    tally.children = len(ctx["hellos"])
    tally.pokes = ctx["poked"]
    assert got == want, tally.line()
    check_history(store)
    assert len(store.history(INSTANCE)) == tally.steps + 1
    named, plain = history_counts(store)
    assert max(named.values()) == 1, f"a step twice in the history: {named.most_common(3)}"
    plan = Counter(operation(SEED, n)["kind"] for n in range(last))
    messages = Counter(tick=len(want["ticks"]), hello=len(want["hellos"]), bye=len(want["byes"]))
    assert Counter(kind for kind, _ in named) == plan + messages
    assert plain == +Counter({"timer": len(want["rings"]), "done.invoke.kids": len(want["rounds"])})
    assert store.timers(INSTANCE) == [], "a timer or scheduled event left pending"
    loaded = DurableFlows(store, [Machine.from_file(flow)]).load(INSTANCE)
    assert loaded.context == ctx and loaded.state == "IDLE"
    store.close()


@contextmanager
def rival_worker(url: str, tally: Tally) -> Iterator[None]:
    """`flowc worker` on the same store for as long as the block runs: it races the driver's
    worker for every timer (it needs no flow: the store keeps the graph)."""
    code = "from flowc.compiler.cli import entry; entry()"
    options = ["--poll", "0.02", "--lease", str(RIVAL_LEASE), "--owner", "rival", "--quiet"]
    args = [sys.executable, "-c", code, "worker", "--store", url, *options]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        yield
    finally:
        proc.terminate()  # SIGTERM: it stops after the step in hand and prints its counts
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    counts = [line for line in err.splitlines() if line.startswith("{")]
    assert counts, err
    tally.rival = json.loads(counts[-1])["committed"]


def test_killed_at_any_point_each_operation_applies_once(
    shared_store_url: str, tmp_path: Path
) -> None:
    flow = compiled_flow(tmp_path)
    tally = Tally("SQLite" if shared_store_url.startswith("sqlite") else "PostgreSQL")
    with rival_worker(shared_store_url, tally):
        last = kill_and_restart(shared_store_url, flow, tally)
    check_end(shared_store_url, flow, tally, last)
    print(tally.line())
    assert tally.duplicates == 0 and tally.losses == 0, tally.line()


def kill_and_restart(url: str, flow: Path, tally: Tally) -> int:
    """Run the driver KILLS times to its death, then once to the end of a block; how many
    operations it did."""
    driver = Driver(url, flow)
    try:
        return runs(url, tally, driver)
    finally:
        driver.close()


def runs(url: str, tally: Tally, driver: Driver) -> int:
    rng = random.Random(SEED)
    store = open_store(url)
    confirmed = 0  # operations 0 .. confirmed-1 were acknowledged
    for k in range(KILLS):
        if k % 2 == 0:
            point = KILL_POINTS[(k // 2) % len(KILL_POINTS)]
            at, delay = f"{point}:{rng.randint(1, MAX_PASSES)}", None
        else:
            point, at, delay = "delay", "", rng.uniform(0, MAX_DELAY)
        lines, status = driver.run(confirmed, ENDLESS, at=at, delay=delay)
        tally.runs += 1
        assert status == -signal.SIGKILL, driver.failure()
        tally.kills[point] += 1
        acks = [line["ack"] for line in lines if "ack" in line]
        tally.landed += sum(line.get("status") == "replayed" for line in lines)
        assert acks == list(range(confirmed, confirmed + len(acks)))
        confirmed += len(acks)
        check_after_kill(store, tally, confirmed)
    store.close()
    # The last run finishes the operation in flight and the block it is in, and drains.
    last = (confirmed // BLOCK + 1) * BLOCK
    lines, status = driver.run(confirmed, last)
    tally.runs += 1
    tally.landed += sum(line.get("status") == "replayed" for line in lines)
    tally.operations = last
    assert status == 0 and lines[-1].get("done"), driver.failure()
    return last
