"""Child flows benchmark (issue 28): a fan-out, a child's round trip, what composing costs a
plain step, and a fan-out in a SQLite store, the way a host drives them.

    python bench/children.py [--quick] [--rounds R] [--sizes 10 100 1000]
                             [--durable-sizes 10 100] [--synchronous full normal]
                             [--skip-durable]

Every figure is a median (and the best) of several samples taken in turns in this one process,
contenders interleaved round by round, so a busy moment of a shared machine falls on all of them
alike; the ratios are the figures to read. The in-memory cases read the process's CPU time (of
all its threads) by default: on a machine shared with other busy processes, the wall clock
counts the time they hold the CPU too (`--wall` for it). The durable cases read the wall clock
(they wait for the disk). Printed, never asserted. Needs the `bench` extra
(`pip install -e ".[bench]"`) for python-statemachine.

1. Fan-out, in memory: a parent enters a state that fans out to N children (`invoke task(...)
   for x in items as tasks join all`), each child takes one step and finishes, and the parent
   takes `done.invoke.tasks` with the N results. Timed from the host's `send` that enters the
   state to the parent's `done.invoke` step, per child. Contenders:
   - flowc, host steps each child: `parent.child("tasks[K]").send("go")` for every K;
   - flowc, parent broadcasts: one host `send("kick")` whose step does `send go to tasks`
     (N messages through the tree's inbox, each a step of a child); a host call delivers at
     most `MAX_DELIVERIES` messages, so a large fan-out needs `advance()` calls after it
     (counted, printed);
   - hand: a dict state machine per child and a counter of finished ones (the floor: no
     validation, no history, no ids);
   - python-statemachine (3.x has compound, parallel and invoke states): its `invoke` runs each
     handler in a thread of its own and sends `done.invoke` when the handler returns (a
     StateChart child: when its constructor returns, not when it reaches a final state), so a
     child stepped by the host cannot be one; its closest equivalent is a StateChart with a
     parallel state of N compound regions (`working -> finished`, event `go_K` for region K),
     the parent taking `done.state` of the parallel state; the chart class is built per N
     (not timed);
   - python-statemachine, N machines driven by a loop: one StateChart per child, a counter,
     the parent sent `done` when it reaches N.
2. One child's round trip: a parent `send` enters a state whose child finishes as it starts
   (an initial choice state routed to a final one with done data): one host call, in which the
   child starts, ends, and the parent takes `done.invoke` and leaves; and the same with a child
   that waits for one host event. Beside them: a plain accepted step of the same parent; hand;
   python-statemachine's `invoke` of a StateChart (a thread per invocation; `done.invoke`
   awaited with a `threading.Event`).
3. Composing: `Machine._dispatch` sends every step of a flow that composes (has an `invoke` or
   `send ... to`) through the engine's general path, and a tree adds its own work per host call.
   A plain accepted step (`tick`, A <-> B, one action) of a flow whose state `paying` invokes a
   child (never entered while timed), against the same flow without the invoke, generated
   (the default) and forced onto the general path (to tell the general path's share from the
   tree's); then the step with a child alive (`tick` in `paying`, `-> self`), and a child's own
   step against the same flow run as a root.
4. Durable (SQLite, WAL, synchronous FULL and NORMAL as bench/store.py): a parent fans out to N
   children (N = 10, 100) and the host steps each child with `DurableFlows.send(id, "go",
   child="tasks[K]")`; steps per second and the median step, against a flow without children
   stepped in the same store; and the row's snapshot size (one row holds the tree) per child.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from store import COUNTER  # bench/store.py's flow without children

from flowc.compiler import compile_source
from flowc.runtime import Machine
from flowc.runtime.children import MAX_DELIVERIES
from flowc.runtime.codegen import general

#: A child: one step (`go`) and it is done; `ping` is a step that stays.
TASK = """
flow task
context {
  item: int = 0
  pings: int = 0
}
event go
event ping
initial state working {
  on go -> finished
  on ping -> self do pings += 1
}
final state finished with {"item": item}
"""

#: A fan-out parent: one child per item, joined when all are done.
FAN = """
flow fan
context {
  items: list[int] = []
  got: int = 0
}
event open
event kick
initial state idle {
  on open -> waiting
}
state waiting {
  invoke task(item: x) for x in items as tasks join all
  on kick -> self do send go to tasks
  on done.invoke.tasks -> joined do got = len(event.results)
}
final state joined
"""

#: A child that is done as it starts.
QUICK = """
flow quick
context {
  item: int = 0
}
initial choice state route {
  else -> finished
}
final state finished with {"item": item}
"""

#: A parent of one child; `tick` is a plain step (A <-> B) that composing must not slow much.
ONE = """
flow one
context {
  n: int = 0
  got: int = 0
}
event buy
event tick
initial state A {
  on buy -> paying
  on tick -> B do n += 1
}
state B {
  on tick -> A do n += 1
}
state paying {
  invoke CHILD(item: n) as kid
  on tick -> self do n += 1
  on done.invoke.kid -> A do got = event.item
}
"""

#: ONE without its invoke: the same states and rules, nothing composes.
PLAIN = (
    ONE.replace("flow one", "flow plain")
    .replace("  invoke CHILD(item: n) as kid\n", "")
    .replace("  on done.invoke.kid -> A do got = event.item\n", "")
)

Sample = Callable[[], float]

#: What the in-memory samples read: this process's CPU time (all its threads), so that the
#: time another session holds the CPU is not counted (`--wall`: the wall clock).
CLOCKS: dict[str, Callable[[], float]] = {"cpu": time.process_time, "wall": time.perf_counter}
_clock = CLOCKS["cpu"]


def clock() -> float:
    return _clock()


def compiled(source: str, **children: str) -> Machine:
    result = compile_source(source, "bench.flow", flows=children)
    assert result.flow is not None, [str(d) for d in result.errors]
    return Machine(result.flow)


def one_machine(child: str) -> Machine:
    source = QUICK if child == "quick" else TASK
    return compiled(ONE.replace("CHILD", child), **{child: source})


def interleave(cases: dict[str, Sample], rounds: int) -> dict[str, list[float]]:
    """Each case's samples, the cases taken in turns (order reversed every other round)."""
    names = list(cases)
    for name in names:
        cases[name]()  # warm: first uses, generated functions
    out: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        for name in names if r % 2 else names[::-1]:
            gc.collect()
            gc.disable()
            try:
                out[name].append(cases[name]())
            finally:
                gc.enable()
    return out


def show(samples: dict[str, list[float]], unit: str, base: str | None = None) -> None:
    """Median and best per case (microseconds), and each median / `base`'s median."""
    ref = statistics.median(samples[base]) if base else None
    print(f"  {'':52} {'median':>9} {'best':>9}" + (f"   / {base}" if base else ""))
    for name, values in samples.items():
        med, best = statistics.median(values), min(values)
        ratio = f"   {med / ref:8.2f}x" if ref else ""
        print(f"  {name:52} {med * 1e6:9.2f} {best * 1e6:9.2f}{ratio}")
    print(f"  ({unit}; medians of {len(next(iter(samples.values())))} samples)")


# ---- 1. fan-out, in memory ----------------------------------------------------------------------
#: The hand-written child: (state, event) -> target.
HAND_CHILD = {("working", "go"): "finished"}


class HandFan:
    """The floor: a dict state machine per child, a counter of the finished ones."""

    __slots__ = ("kids", "left", "results", "state")

    def __init__(self) -> None:
        self.state = "idle"
        self.kids: list[dict[str, Any]] = []
        self.results: list[dict[str, Any] | None] = []
        self.left = 0

    def open(self, items: list[int]) -> None:
        if self.state != "idle":
            return
        self.state = "waiting"
        self.kids = [{"state": "working", "item": x} for x in items]
        self.results = [None] * len(items)
        self.left = len(items)

    def child_send(self, k: int, event: str) -> bool:
        kid = self.kids[k]
        target = HAND_CHILD.get((kid["state"], event))
        if target is None:
            return False
        kid["state"] = target
        if target == "finished":
            self.results[k] = {"item": kid["item"]}
            self.left -= 1
            if self.left == 0:
                self.state = "joined"
                self.kids = []
        return True


def psm_fan_chart(n: int) -> Any:
    """python-statemachine: a parallel state of `n` compound regions, joined by `done.state`."""
    from statemachine import State, StateChart

    regions = {}
    for k in range(n):
        working, finished = State(initial=True), State(final=True)
        regions[f"r{k}"] = type(
            f"r{k}",
            (State.Compound,),
            {"w": working, "f": finished, f"go_{k}": working.to(finished)},
        )
    fanout = type("fanout", (State.Parallel,), regions)
    idle, joined = State(initial=True), State(final=True)
    namespace = {
        "idle": idle,
        "fanout": fanout,
        "joined": joined,
        "open": idle.to(fanout),
        "done_state_fanout": fanout.to(joined),
    }
    return type(f"Fan{n}", (StateChart,), namespace)


def psm_loop_classes() -> tuple[Any, Any]:
    """python-statemachine: a parent and a child machine, for N machines driven by a loop."""
    from statemachine import State, StateChart

    class Task(StateChart):  # type: ignore[misc]
        working = State(initial=True)
        finished = State(final=True)
        go = working.to(finished)

    class Parent(StateChart):  # type: ignore[misc]
        idle = State(initial=True)
        waiting = State()
        joined = State(final=True)
        open = idle.to(waiting)
        done = waiting.to(joined)

    return Parent, Task


#: N -> the host calls (`kick`, then `advance`s) a broadcast to N children took to join
BROADCAST_CALLS: dict[int, int] = {}


def fan_out_cases(n: int) -> dict[str, Sample]:
    fan = compiled(FAN, task=TASK)
    items = list(range(n))
    paths = [f"tasks[{k}]" for k in range(n)]

    def flowc_host() -> float:
        inst = fan.start({"items": items})
        t0 = clock()
        inst.send("open")
        for path in paths:
            inst.child(path).send("go")
        took = clock() - t0
        assert inst.state == "joined" and inst.context["got"] == n, inst.state
        return took / n

    def flowc_broadcast() -> float:
        inst = fan.start({"items": items})
        t0 = clock()
        inst.send("open")
        inst.send("kick")
        calls = 1
        while inst.state != "joined" and calls <= 2 * n:
            # A host call delivers at most MAX_DELIVERIES messages; `advance` goes on.
            inst.advance()
            calls += 1
        took = clock() - t0
        assert inst.state == "joined" and inst.context["got"] == n, inst.state
        BROADCAST_CALLS[n] = calls
        return took / n

    def hand() -> float:
        parent = HandFan()
        t0 = clock()
        parent.open(items)
        for k in range(n):
            parent.child_send(k, "go")
        took = clock() - t0
        assert parent.state == "joined"
        return took / n

    cases = {
        "flowc, host steps each child": flowc_host,
        "flowc, parent broadcasts (send go to tasks)": flowc_broadcast,
        "hand (dict per child + counter)": hand,
    }
    try:
        chart = psm_fan_chart(n)
        parent_class, task_class = psm_loop_classes()
    except ImportError:
        print("  (python-statemachine is not installed: pip install -e '.[bench]')")
        return cases
    events = [f"go_{k}" for k in range(n)]

    def psm_parallel() -> float:
        sm = chart()
        t0 = clock()
        sm.send("open")
        for event in events:
            sm.send(event)
        took = clock() - t0
        assert sm.joined.is_active
        return took / n

    def psm_loop() -> float:
        parent = parent_class()
        t0 = clock()
        parent.send("open")
        kids = [task_class() for _ in items]
        finished = 0
        for kid in kids:
            kid.send("go")
            if kid.finished.is_active:
                finished += 1
                if finished == n:
                    parent.send("done")
        took = clock() - t0
        assert parent.joined.is_active
        return took / n

    cases["python-statemachine, parallel of N regions"] = psm_parallel
    cases["python-statemachine, N machines + a loop"] = psm_loop
    return cases


# ---- 2. one child's round trip ------------------------------------------------------------------
def round_trip_cases(times: int) -> dict[str, Sample]:
    quick = one_machine("quick")
    waits = one_machine("task")

    def at_start() -> float:
        inst = quick.start()
        t0 = clock()
        for _ in range(times):
            inst.send("buy")  # -> paying, child starts and ends, done.invoke.kid -> A
        took = clock() - t0
        # (each round: the host's step, the child's start as a `child` entry, done.invoke)
        assert inst.state == "A" and len(inst.history) == 3 * times + 1
        return took / times

    def one_host_event() -> float:
        inst = waits.start()
        t0 = clock()
        for _ in range(times):
            inst.send("buy")
            inst.child("kid").send("go")
        took = clock() - t0
        # (each round: the host's step, the child's start and step as `child` entries, done)
        assert inst.state == "A" and len(inst.history) == 4 * times + 1
        return took / times

    def plain_step() -> float:
        inst = quick.start()
        t0 = clock()
        for _ in range(times):
            inst.send("tick")
        return (clock() - t0) / times

    def hand() -> float:
        kid_table = {("route", None): "finished"}
        t0 = clock()
        for _ in range(times):
            parent = {"state": "paying", "n": 0}
            kid = {"state": "route", "item": parent["n"]}
            kid["state"] = kid_table[kid["state"], None]
            if kid["state"] == "finished":
                parent["got"] = kid["item"]
                parent["state"] = "A"
        return (clock() - t0) / times

    cases = {
        "flowc: child done as it starts (one host send)": at_start,
        "flowc: child waits for one event (send + child send)": one_host_event,
        "flowc: a plain accepted step of the same parent": plain_step,
        "hand": hand,
    }
    try:
        cases["python-statemachine invoke (a thread per child)"] = psm_round_trip(times)
    except ImportError:
        print("  (python-statemachine is not installed: pip install -e '.[bench]')")
    return cases


def psm_round_trip(times: int) -> Sample:
    from statemachine import State, StateChart

    entered = threading.Event()

    class Quick(StateChart):  # type: ignore[misc]
        route = State(initial=True)
        finished = State(final=True)
        route.to(finished)  # eventless: taken as it starts, as QUICK's choice state

    class One(StateChart):  # type: ignore[misc]
        A = State(initial=True)
        paying = State(invoke=Quick)
        paid = State()
        buy = A.to(paying)
        done_invoke_paying = paying.to(paid)
        back = paid.to(A)

        def on_enter_paid(self) -> None:
            entered.set()

    sm = One()

    def sample() -> float:
        t0 = clock()
        for _ in range(times):
            entered.clear()
            sm.send("buy")
            if not entered.wait(10):
                raise SystemExit("python-statemachine: done.invoke never came")
            sm.send("back")
        return (clock() - t0) / times

    return sample


# ---- 3. what composing costs a plain step ------------------------------------------------------
def composing_cases(times: int) -> dict[str, Sample]:
    plain = compiled(PLAIN)
    plain_general = compiled(PLAIN)
    plain_general._dispatch = lambda state, event: general(event)  # type: ignore[method-assign]
    composing = one_machine("task")
    assert composing.composes and not plain.composes
    task_root = compiled(TASK)

    def ticks(make: Callable[[], Any], event: str = "tick") -> Sample:
        inst = make()

        def sample() -> float:
            t0 = clock()
            for _ in range(times):
                inst.send(event)
            return (clock() - t0) / times

        return sample

    def in_paying() -> Any:
        inst = composing.start()
        inst.send("buy")
        assert inst.state == "paying" and inst.children
        return inst

    return {
        "plain flow, generated dispatch (the default)": ticks(plain.start),
        "plain flow, general path forced": ticks(plain_general.start),
        "composing flow (no child alive)": ticks(composing.start),
        "composing flow, a child alive (tick -> self)": ticks(in_paying),
        "the child flow as a root (ping -> self)": ticks(task_root.start, "ping"),
        "the same flow as a child (child.send ping)": ticks(
            lambda: in_paying().child("kid"), "ping"
        ),
    }


# ---- 4. durable ---------------------------------------------------------------------------------
def durable(url: str, n: int, rounds: int) -> dict[str, Any]:
    """Steps per second of a stored fan-out stepped child by child, beside a flow without
    children in the same store, and the row's snapshot bytes."""
    from flowc.runtime.store import open_store
    from flowc.runtime.store.durable import DurableFlows

    fan = compiled(FAN, task=TASK)
    counter = compiled(COUNTER)
    flows = DurableFlows(open_store(url), [fan, counter])
    tag = time.time_ns()
    fan_steps: list[float] = []
    plain_steps: list[float] = []
    rates: list[tuple[float, float]] = []
    cpu = [0.0, 0.0]  # the process's CPU seconds: the fan-outs' child steps, the counter's
    sizes: dict[str, int] = {}
    try:
        for r in range(rounds):
            iid, cid = f"fan{tag}-{r}", f"ctr{tag}-{r}"
            flows.start("fan", {"items": list(range(n))}, id=iid)
            flows.start("counter", id=cid)
            if r == 0:
                sizes["before"] = _row_bytes(flows, iid)
            t0 = time.perf_counter()
            assert flows.send(iid, "open").status == "committed"
            if r == 0:
                sizes["spawned"] = _row_bytes(flows, iid)
            c0 = time.process_time()
            for k in range(n):
                t = time.perf_counter()
                assert flows.send(iid, "go", child=f"tasks[{k}]").status == "committed"
                fan_steps.append(time.perf_counter() - t)
                if r == 0 and k == n // 2 - 1:
                    sizes["half"] = _row_bytes(flows, iid)
            fan_rate = (n + 1) / (time.perf_counter() - t0)
            cpu[0] += time.process_time() - c0
            assert flows.load(iid).state == "joined"
            t0, c0 = time.perf_counter(), time.process_time()
            for _ in range(n + 1):
                t = time.perf_counter()
                flows.send(cid, "inc", {"by": 1})
                plain_steps.append(time.perf_counter() - t)
            rates.append((fan_rate, (n + 1) / (time.perf_counter() - t0)))
            cpu[1] += time.process_time() - c0
            if r == 0:
                sizes["plain"] = _row_bytes(flows, cid)
    finally:
        flows.close()
    return {
        "fan_rate": statistics.median(f for f, _ in rates),
        "plain_rate": statistics.median(p for _, p in rates),
        "fan_p50": statistics.median(fan_steps),
        "plain_p50": statistics.median(plain_steps),
        "fan_cpu": cpu[0] / (rounds * n),
        "plain_cpu": cpu[1] / (rounds * (n + 1)),
        "sizes": sizes,
    }


def _row_bytes(flows: Any, instance_id: str) -> int:
    return len(json.dumps(flows.store.load(instance_id).snapshot, separators=(",", ":")))


def durable_report(sizes: list[int], syncs: list[str], rounds: int) -> None:
    print(
        "\n4. durable fan-out, host steps each child with DurableFlows.send(id, 'go', "
        "child='tasks[K]')\n   (SQLite WAL; one process; a step = load the row, restore the "
        f"tree, step, write the row; medians of {rounds} fan-outs;\n   cpu: the process's CPU time "
        "per step, the mean)"
    )
    print(
        f"  {'store':14}{'N':>5}{'fan steps/s':>13}{'plain steps/s':>15}{'ratio':>7}"
        f"{'fan p50 ms':>12}{'plain p50 ms':>14}{'fan cpu ms':>12}{'plain cpu ms':>14}"
    )
    rows: list[tuple[int, dict[str, int]]] = []
    with tempfile.TemporaryDirectory(prefix="flowc-bench-kids-") as tmp:
        for sync in syncs:
            for n in sizes:
                db = Path(tmp) / f"kids-{sync}-{n}.db"
                r = durable(f"sqlite:///{db}?synchronous={sync}", n, rounds)
                print(
                    f"  {'sqlite ' + sync.upper():14}{n:>5}{r['fan_rate']:>13.0f}"
                    f"{r['plain_rate']:>15.0f}{r['plain_rate'] / r['fan_rate']:>6.1f}x"
                    f"{r['fan_p50'] * 1e3:>12.2f}{r['plain_p50'] * 1e3:>14.2f}"
                    f"{r['fan_cpu'] * 1e3:>12.2f}{r['plain_cpu'] * 1e3:>14.2f}",
                    flush=True,
                )
                if sync == syncs[0]:
                    rows.append((n, r["sizes"]))
    print("  the row's snapshot (compact JSON bytes): before `open`, N children spawned, half done")
    for n, s in rows:
        per_child = (s["spawned"] - s["before"]) / n
        print(
            f"  N={n:<5} before {s['before']:>8,}  spawned {s['spawned']:>9,}  half done "
            f"{s['half']:>9,}  per child {per_child:>6,.0f}  (a counter's row: {s['plain']:,})"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--quick", action="store_true", help="fewer rounds, smaller runs")
    parser.add_argument("--rounds", type=int, default=None, help="samples per case")
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 1000])
    parser.add_argument("--durable-sizes", type=int, nargs="+", default=[10, 100])
    parser.add_argument(
        "--synchronous", nargs="+", choices=["full", "normal"], default=["full", "normal"]
    )
    parser.add_argument("--skip-durable", action="store_true")
    parser.add_argument(
        "--wall",
        action="store_true",
        help="time the in-memory cases by the wall clock, not the process's CPU time",
    )
    args = parser.parse_args(argv)
    global _clock
    _clock = CLOCKS["wall" if args.wall else "cpu"]
    rounds = args.rounds or (5 if args.quick else 15)
    times = 200 if args.quick else 1000
    print(f"child flows benchmark: Python {sys.version.split()[0]}, {os.cpu_count()} CPUs")
    print(
        "in-memory figures: "
        + ("wall clock" if args.wall else "the process's CPU time (--wall: the wall clock)")
    )

    print("\n1. fan-out to N children, join all: microseconds per child, from the send that")
    print("   enters the state to the parent's done.invoke")
    for n in args.sizes:
        print(f" N = {n}")
        # fewer samples of the large fan-outs: each is N children
        show(
            interleave(fan_out_cases(n), max(5, rounds * 10 // max(10, n // 10))),
            "us/child",
            "hand (dict per child + counter)",
        )

    print("  host calls a broadcast took (kick + advances), by N:", BROADCAST_CALLS)
    print(f"  (a host call delivers at most {MAX_DELIVERIES} messages: N sends + N dones)")

    print("\n2. one child's round trip (parent send -> child start -> child done -> parent done)")
    show(
        interleave(round_trip_cases(times // 4), rounds),
        "us/round trip",
        "flowc: a plain accepted step of the same parent",
    )

    print("\n3. composing: a plain accepted step (tick, A <-> B, one action)")
    show(
        interleave(composing_cases(times * 2), rounds * 2),
        "us/step",
        "plain flow, generated dispatch (the default)",
    )

    if not args.skip_durable:
        durable_report(args.durable_sizes, args.synchronous, 3 if args.quick else 5)
    return 0


if __name__ == "__main__":
    sys.exit(main())
