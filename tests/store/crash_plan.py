"""What the crash test's driver does, shared by the driver process (crash_driver.py) and the test
that kills it (test_crash.py): the flows, and the plan of operations, a pure function of a seed
and an operation's number, so that a restarted driver and the test agree on it without
passing it around.

Every operation is a host send with an idempotency key, and records its number in `applied`:
- `bump`: nothing more;
- `poke`: forwarded to the children running, if any (each counts it once: `dups` otherwise);
- `arm`: schedules `tick(op)` a few milliseconds later (`ticks` records it when it fires);
- `hold` (an `arm` far in the future) and, two operations later, the `disarm` that cancels it:
  a held tick never fires;
- `go` (from IDLE): enters WAITING, whose timer rule brings the instance back to IDLE and
  records the operation in `rings`;
- `spawn` (from IDLE): enters FANNING, which starts one `kid` per delay given (child K of
  operation N has the key N * 10 + K and says `hello` to its parent when it starts); each kid's
  timer ends it after its delay (it says `bye` first), and when all are done the parent
  records the operation in `rounds` and the keys in `finished`, in order, and is IDLE again.
The driver waits for IDLE before a `go` or a `spawn`, and at the end.
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

KID_FLOW = """\
flow kid "A child of the crash test"

context { key: int = 0, ms: int = 10, pokes: list[int] = [], dups: int = 0 }

event poke(op: int)
internal event hello(key: int)
internal event bye(key: int)

initial state RUNNING {
  entry do send hello(key: key) to parent
  on poke if event.op in pokes -> self do dups += 1
  on poke -> self do pokes = pokes + [event.op]
  after ms ms -> DONE do send bye(key: key) to parent
}
final state DONE with {"key": key, "pokes": len(pokes), "dups": dups}
"""

CRASH_FLOW = """\
flow crash "Crash test"

context {
  applied: list[int] = []
  ticks: list[int] = []
  rings: list[int] = []
  current: int = -1
  delays: list[int] = []
  rounds: list[int] = []
  hellos: list[int] = []
  byes: list[int] = []
  finished: list[int] = []
  poked: int = 0
  dups: int = 0
}

event bump(op: int)
event poke(op: int)
event arm(op: int, ms: int)
event disarm(op: int, target: str)
event go(op: int)
event spawn(op: int, delays: list[int])
internal event tick(op: int)
internal event hello(key: int)
internal event bye(key: int)

initial state IDLE {  # flowc: allow W303
  on go -> WAITING do current = event.op; applied = applied + [event.op]
  on spawn -> FANNING do current = event.op; delays = event.delays; applied = applied + [event.op]
}
state WAITING {
  after 30ms -> IDLE do rings = rings + [current]
}
state FANNING {
  invoke kid(key: current * 10 + k, ms: ms) for ms, k in delays as kids join all forward
  on done.invoke.kids -> IDLE do
    rounds = rounds + [current];
    for r in event.results { append(finished, r.key); poked += r.pokes; dups += r.dups }
  on error.invoke.kids -> IDLE
}

on bump, poke -> self do applied = applied + [event.op]
on arm -> self do
  applied = applied + [event.op]; send tick(op: event.op) after event.ms ms as str(event.op)
on disarm -> self do applied = applied + [event.op]; cancel event.target
on tick -> self do ticks = ticks + [event.op]
on hello -> self do hellos = hellos + [event.key]
on bye -> self do byes = byes + [event.key]
"""

#: operations sent only to an IDLE instance
WAIT_FOR_IDLE = ("go", "spawn")

#: what `expected` gives, and which of it is compared as a set (in an order timers decide)
CHECKED = ("applied", "ticks", "rings", "rounds", "hellos", "byes", "finished")
UNORDERED = ("ticks", "byes")


def operation(seed: int, n: int) -> dict[str, Any]:
    """Operation `n` of the plan of `seed`: the event (`kind`) and its payload."""
    if n % BLOCK == BLOCK - 3:
        return {"kind": "arm", "op": n, "ms": HOLD_MS}
    if n % BLOCK == BLOCK - 1:
        return {"kind": "disarm", "op": n, "target": str(n - 2)}
    rng = random.Random(f"{seed}/{n}")
    kind = rng.choice(["bump", "poke", "poke", "arm", "arm", "go", "spawn"])
    if kind == "arm":
        return {"kind": "arm", "op": n, "ms": rng.randint(2, 60)}
    if kind == "spawn":
        return {
            "kind": kind,
            "op": n,
            "delays": [rng.randint(5, 60) for _ in range(rng.randint(1, 4))],
        }
    return {"kind": kind, "op": n}


def expected(seed: int, last: int) -> dict[str, list[int]]:
    """What operations 0 .. last-1 leave in the context once every timer has fired: each
    operation applied once, in order; a tick for each `arm` not cancelled; a ring for each
    `go`, in order; for each `spawn` a round, and a hello, a bye and a result from each of
    its children, in order."""
    ops = [operation(seed, n) for n in range(last)]
    spawns = [o for o in ops if o["kind"] == "spawn"]
    keys = [o["op"] * 10 + k for o in spawns for k in range(len(o["delays"]))]
    return {
        "applied": list(range(last)),
        "ticks": [o["op"] for o in ops if o["kind"] == "arm" and o["ms"] != HOLD_MS],
        "rings": [o["op"] for o in ops if o["kind"] == "go"],
        "rounds": [o["op"] for o in spawns],
        "hellos": keys,
        "byes": keys,
        "finished": keys,
    }
