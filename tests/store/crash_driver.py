"""The process the crash test (test_crash.py) kills and restarts: one instance of the `crash`
flow (crash_plan.py) on a real store, driven through `DurableFlows` as a host drives it.

    crash_driver.py URL FLOW_JSON SEED      then, on standard input, lines:  FIRST LAST [POINT:N]

imports the runtime once, then for each line of orders forks a run: a new process, which opens
the store, loads the flow and runs the operations FIRST .. LAST-1 of the plan of SEED
(crash_plan.operation) in order, each a host send with the idempotency key `op-N` (a `go` or a
`spawn` first waits for the instance to be IDLE), with a timer worker's `run_once` after each,
then fires the timers until the instance is IDLE with none pending (the drain) and prints
`{"done": true, ...}`. Each operation confirmed prints `{"ack": N, "status": S}` at once (S
`replayed` when a killed run had landed it); a restart from the first unconfirmed one resends
it with its key, so what had landed replays. Forking spares each run Python's start and the
imports (most of a run's cost on a busy machine); the run shares nothing else with the ones
before it.

POINT:N makes the process SIGKILL itself the Nth time it reaches POINT:

    in-step        inside a step's transaction: the engine ran, nothing is written yet
    before-commit  every statement of a transaction ran (a step's, a claim's), COMMIT has not
    after-commit   a step committed, the driver has not heard of it
    after-claim    the worker leased due timers (committed) and fires none of them yet

Every line on standard output is one JSON object: for each run `{"pid": P}` (the run's
process, for the test to kill, from the run itself), the run's lines (`{"ready": true}` once
the store is open, so that a kill after a delay lands in the work), and `{"exit": STATUS}` once
it has ended (-9: killed).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, suppress
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from flowc.runtime import Machine
from flowc.runtime.store import (
    InstanceExists,
    InstanceRecord,
    StepFn,
    StepOutcome,
    Store,
    TimerClaim,
    open_store,
)
from flowc.runtime.store.durable import DurableFlows
from flowc.runtime.store.worker import TimerWorker
from store.crash_plan import INSTANCE, KILL_POINTS, WAIT_FOR_IDLE, operation

#: how long a worker's lease lasts: a killed driver's claims come free this soon
LEASE = 0.2
#: bound on waiting for IDLE or for the drain, in seconds
PATIENCE = 30.0


class KillSwitch:
    """Counts the passes through each named point and kills the process at the chosen one."""

    def __init__(self, spec: str) -> None:
        point, _, nth = spec.partition(":")
        if spec and (point not in KILL_POINTS or not nth.isdigit()):
            raise SystemExit(f"a kill point is POINT:N with POINT one of {KILL_POINTS}")
        self.point = point
        self.nth = int(nth or 0)
        self.passes = dict.fromkeys(KILL_POINTS, 0)

    def reached(self, point: str) -> None:
        self.passes[point] += 1
        if point == self.point and self.passes[point] == self.nth:
            os.kill(os.getpid(), signal.SIGKILL)


def instrument(store: Store, switch: KillSwitch) -> None:
    """Route the store's transactions through the kill points (instance attributes shadow the
    methods, so `DurableFlows` and the worker, which call them on the store, pass them)."""
    step = store.step
    claim = store.claim_due_timers
    write: Callable[[], AbstractContextManager[Any]] = store._write  # type: ignore[attr-defined]

    def stepping(instance_id: str, fn: StepFn, **options: Any) -> StepOutcome:
        def inside(record: InstanceRecord) -> Any:
            result = fn(record)
            switch.reached("in-step")
            return result

        out = step(instance_id, inside, **options)
        if out.status == "committed":
            switch.reached("after-commit")
        return out

    def claiming(owner: str, **options: Any) -> list[TimerClaim]:
        claims = claim(owner, **options)
        if claims:
            switch.reached("after-claim")
        return claims

    @contextmanager
    def writing() -> Iterator[Any]:
        with write() as tx:
            yield tx
            switch.reached("before-commit")

    store.step = stepping  # type: ignore[method-assign]
    store.claim_due_timers = claiming  # type: ignore[method-assign]
    store._write = writing  # type: ignore[attr-defined]


def say(**line: Any) -> None:
    # One write, newline included: `print` writes the text and its newline apart, and a kill
    # between the two (unbuffered output, PYTHONUNBUFFERED) leaves half a line on the pipe.
    sys.stdout.write(json.dumps(line) + "\n")
    sys.stdout.flush()


def send(flows: DurableFlows, n: int, op: dict[str, Any]) -> str:
    """The operation's event with its key, resent after a conflict (safe: nothing landed);
    `committed`, or `replayed` when a killed run had landed it."""
    payload = {k: v for k, v in op.items() if k != "kind"}
    while (out := flows.send(INSTANCE, op["kind"], payload, key=f"op-{n}")).status == "conflict":
        pass
    if not out.ok:
        raise SystemExit(f"operation {n} refused: {out.data}")
    return out.status


def wait_for(worker: TimerWorker, done: Callable[[], bool], what: str) -> None:
    """Fire due timers until `done()` (timers armed by the real clock: a few ms away)."""
    deadline = time.monotonic() + PATIENCE
    while not done():
        if time.monotonic() > deadline:
            raise SystemExit(f"gave up waiting for {what}")
        if worker.run_once() == 0:
            time.sleep(0.002)


def run(url: str, flow_json: str, seed: int, orders: str) -> None:
    """One run, in a process of its own."""
    say(pid=os.getpid())
    store = open_store(url)
    flows = DurableFlows(store, [Machine.from_file(flow_json)])
    worker = flows.worker(owner=f"driver-{os.getpid()}", lease=LEASE, batch=10)
    first, last, *at = orders.split()
    switch = KillSwitch(at[0] if at else "")
    instrument(store, switch)
    say(ready=True)
    with suppress(InstanceExists):  # a run before this one started it
        flows.start("crash", id=INSTANCE)

    def idle() -> bool:
        return store.load(INSTANCE).state == "IDLE"

    for n in range(int(first), int(last)):
        op = operation(seed, n)
        if op["kind"] in WAIT_FOR_IDLE:
            wait_for(worker, idle, f"IDLE before operation {n}")
        status = send(flows, n, op)
        worker.run_once()
        say(ack=n, status=status)
    wait_for(worker, lambda: idle() and not store.timers(INSTANCE), "the end of the work")
    store.close()
    say(done=True, passes=switch.passes)


def serve(url: str, flow_json: str, seed: int) -> None:
    """Fork a run for each line of orders; report how it ended (its own first line gives its
    process id: printed here, it could come after the run's first lines)."""
    if url.startswith("postgres"):
        import flowc.runtime.store.postgres  # noqa: F401  (imported once, not in every run)
    for orders in sys.stdin:
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                run(url, flow_json, seed, orders)
            except BaseException:
                traceback.print_exc()
                code = 1
            sys.stderr.flush()
            os._exit(code)
        say(exit=os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))


if __name__ == "__main__":
    url, flow_json, seed = sys.argv[1:]
    serve(url, flow_json, int(seed))
