"""Child processes for the multi-process store tests (run as a script, one role per process).

With `engine-` before the role (engine-increment, ...) the steps are the real engine's, through
`DurableFlows` (flows from store/flows.py: `tally` for increments, `timed` for timers); without,
a counter stands in for the engine (store/toy.py).

    proc.py increment URL N KEYPREFIX ID...   N increment steps spread over the instances, each
                                              with key KEYPREFIX-i; prints a summary line
    proc.py stream URL ID N                   N keyed increments on one instance, printing
                                              "ack KEY" after each commit (the parent kills it)
    proc.py worker URL SECONDS                a timer worker, until no timer is left or for at
                                              most SECONDS

Every role prints one JSON object per line on standard output.
"""

from __future__ import annotations

import json
import random
import sys
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from flowc.runtime.store import StepFn, StepOutcome, Store, TimerClaim, open_store
from flowc.runtime.store.durable import DurableFlows, DurableOutcome
from flowc.runtime.store.worker import TimerWorker
from store.flows import TALLY_V1, TIMED, machine
from store.toy import bump, fire

ENGINE = False


_DURABLE: dict[int, DurableFlows] = {}


def durable(store: Store) -> DurableFlows:
    """The process's engine on `store`, made once, as a host makes it (a new one per step
    would also save both graphs again at every step)."""
    if id(store) not in _DURABLE:
        _DURABLE[id(store)] = DurableFlows(store, [machine(TALLY_V1), machine(TIMED)])
    return _DURABLE[id(store)]


def send_inc(store: Store, target: str, key: str) -> StepOutcome | DurableOutcome:
    if ENGINE:
        return durable(store).send(target, "inc", key=key)
    return store.step(target, bump(1), key=key)


def increment(url: str, n: int, prefix: str, ids: list[str]) -> None:
    store = open_store(url)
    rng = random.Random(prefix)
    counts: dict[str, int] = {}
    statuses: dict[str, int] = {}
    resent = 0
    for i in range(n):
        target = rng.choice(ids)
        key = f"{prefix}-{i}"
        while True:
            out = send_inc(store, target, key)
            statuses[out.status] = statuses.get(out.status, 0) + 1
            if out.status != "conflict":
                break
            resent += 1  # the same key again: safe whether or not it landed
        counts[target] = counts.get(target, 0) + 1
    store.close()
    print(json.dumps({"counts": counts, "statuses": statuses, "resent": resent}), flush=True)


def stream(url: str, instance_id: str, n: int) -> None:
    store = open_store(url)
    for i in range(n):
        key = f"e{i}"
        while (out := send_inc(store, instance_id, key)).status == "conflict":
            pass
        assert out.status in {"committed", "replayed"}, out
        print(json.dumps({"ack": key}), flush=True)
    store.close()


def worker(url: str, seconds: float) -> None:
    store = open_store(url)
    fired: list[list[str]] = []
    firing: Callable[[TimerClaim], StepFn] = durable(store).fire if ENGINE else fire
    w = TimerWorker(
        store,
        firing,
        batch=10,
        lease=5.0,
        poll=0.05,
        on_outcome=lambda c, o: fired.append([c.instance_id, c.timer_id, o.status]),
    )
    w.run(until_idle=True, max_seconds=seconds)
    store.close()
    print(json.dumps({"fired": fired, "stats": vars(w.stats)}), flush=True)


def main(argv: list[str]) -> None:
    global ENGINE
    role, url = argv[0], argv[1]
    if role.startswith("engine-"):
        ENGINE = True
        role = role.removeprefix("engine-")
    if role == "increment":
        increment(url, int(argv[2]), argv[3], argv[4:])
    elif role == "stream":
        stream(url, argv[2], int(argv[3]))
    elif role == "worker":
        worker(url, float(argv[2]))
    else:
        raise SystemExit(f"unknown role {role}")


if __name__ == "__main__":
    main(sys.argv[1:])
