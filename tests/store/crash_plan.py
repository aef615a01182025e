"""What the crash test's driver does, shared by the driver process (crash_driver.py) and the test
that kills it (test_crash.py): the flow, and the plan of operations, a pure function of a seed
and an operation's number, so that a restarted driver and the test agree on it without
passing it around.

Every operation is a host send with an idempotency key, and records its number in `applied`:
- `bump`: nothing more;
- `arm`: schedules `tick(op)` a few milliseconds later (`ticks` records it when it fires);
- `hold` (an `arm` far in the future) and, two operations later, the `disarm` that cancels it:
  a held tick never fires;
- `go`: enters WAITING, whose timer rule brings the instance back to IDLE and records the
  operation in `rings` (the driver waits for it before the next operation).
"""

from __future__ import annotations

import random
from typing import Any

INSTANCE = "crash-1"

KILL_POINTS = ("in-step", "before-commit", "after-commit", "after-claim")

#: a held tick's delay: far longer than any run of the test
HOLD_MS = 3_600_000

#: operations come in blocks of this many: a `hold` at 5 and its `disarm` at 7
BLOCK = 8

CRASH_FLOW = """\
flow crash "Crash test"

context {
  applied: list[int] = []
  ticks: list[int] = []
  rings: list[int] = []
  current: int = -1
}

event bump(op: int)
event arm(op: int, ms: int)
event disarm(op: int, target: str)
event go(op: int)
internal event tick(op: int)

initial state IDLE {  # flowc: allow W303
  on go -> WAITING do current = event.op; applied = applied + [event.op]
}
state WAITING {
  after 30ms -> IDLE do rings = rings + [current]
}

on bump -> self do applied = applied + [event.op]
on arm -> self do
  applied = applied + [event.op]; send tick(op: event.op) after event.ms ms as str(event.op)
on disarm -> self do applied = applied + [event.op]; cancel event.target
on tick -> self do ticks = ticks + [event.op]
"""


def operation(seed: int, n: int) -> dict[str, Any]:
    """Operation `n` of the plan of `seed`: the event (`kind`) and its payload."""
    if n % BLOCK == BLOCK - 3:
        return {"kind": "arm", "op": n, "ms": HOLD_MS}
    if n % BLOCK == BLOCK - 1:
        return {"kind": "disarm", "op": n, "target": str(n - 2)}
    rng = random.Random(f"{seed}/{n}")
    kind = rng.choice(["bump", "bump", "arm", "arm", "go"])
    if kind == "arm":
        return {"kind": "arm", "op": n, "ms": rng.randint(2, 60)}
    return {"kind": kind, "op": n}


def expected(seed: int, last: int) -> dict[str, list[int]]:
    """What operations 0 .. last-1 leave in the context once every timer has fired: each
    operation applied once, in order; a tick for each `arm` not cancelled; a ring for each
    `go`, in order."""
    ops = [operation(seed, n) for n in range(last)]
    return {
        "applied": list(range(last)),
        "ticks": [o["op"] for o in ops if o["kind"] == "arm" and o["ms"] != HOLD_MS],
        "rings": [o["op"] for o in ops if o["kind"] == "go"],
    }
