"""The scenarios tests/ts/test_scenarios_interop.py runs on both runtimes: flows with the
operations to make on them, in the vectors' op format."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


def send(
    event: str,
    payload: dict[str, Any] | None = None,
    *,
    force: bool = False,
    reason: Any = None,
    key: Any = None,
) -> dict[str, Any]:
    return {
        "op": "send",
        "event": event,
        "payload": payload,
        "force": force,
        "reason": reason,
        "key": key,
    }


def goto(target: str, *, force: bool = False, reason: Any = None) -> dict[str, Any]:
    return {"op": "goto", "target": target, "force": force, "reason": reason}


def back(*, force: bool = False, reason: Any = None) -> dict[str, Any]:
    return {"op": "back", "force": force, "reason": reason}


def advance(ms: int) -> dict[str, Any]:
    return {"op": "advance", "ms": ms}


@dataclass(frozen=True)
class Case:
    name: str
    source: str
    ops: list[dict[str, Any]]
    context: dict[str, Any] | None = None
    #: a change made to the compiled IR (for what the compiler refuses to write)
    patch: Callable[[dict[str, Any]], None] | None = field(default=None)
    #: the machine checks the flow's invariants after every step
    check_invariants: bool = False
    #: the flows it invokes, by name (source text), for `compile_source(..., flows=...)`
    flows: dict[str, str] = field(default_factory=dict)
    #: after every op, the snapshot is taken (and compared) and the run goes on from it
    roundtrip: bool = False


STEPS = """
flow steps
context { n: int = 0 }
event next
event retry(why: str)
initial state A {
  on next -> B do n += 1
  -> B
}
state B {
  on next -> C do n += 1
  on retry -> A back
  -> A back
  if n > 5 -> C
}
final state C
"""

RETRY = """
flow retry
context { attempts: int = 0 }
event start
event poke(n: int)
initial state IDLE { on start -> RETRY }
state RETRY {
  entry do attempts += 1; raise poke(n: attempts)
  on poke if event.n < 3 -> RETRY reenter
  on poke -> DONE
}
final state DONE
"""

BACKOFF = """
flow backoff
context { attempts: int = 0, backoff_ms: int = 100 }
event fail
event ok
initial state RUNNING { on fail -> RETRYING }
state RETRYING {
  after backoff_ms ms if attempts < 3 -> RETRYING reenter
    do attempts += 1; backoff_ms = backoff_ms * 2
  after 10s -> GAVE_UP
  on ok -> RUNNING
}
final state GAVE_UP
"""

CHECKOUT = """
flow checkout
event pay(amount: int)
event cancel
context { total: int = 0, paid: bool = false }
initial state Order {
  initial state Open { on pay -> Paid do total = event.amount  on cancel -> Dropped }
  final state Paid with {"amount": total, "ok": true}
  final state Dropped with {"amount": 0, "ok": false}
  on done.state.Order -> Closed do paid = event.ok; total = event.amount
}
final state Closed
"""

LIGHTS = """
flow lights
event go
event off
event flip
context { log: list[str] = [] }
initial state Off { on go -> On }
state On {
  entry do append(log, "on")
  initial -> Lamps.Left.Bright, Lamps.Right.Bright do append(log, "both bright")
  initial parallel state Lamps {
    state Left {
      initial state Dim { on flip -> Left.Bright }
      state Bright { on flip -> Left.Dim }
    }
    state Right { initial state Dim { }  state Bright { } }
  }
  history deep Where
  on off -> Off
}
"""

DEEP = """
flow deep_history
event go
event pause
event resume
event step
initial state Idle { on go -> Work }
state Work {
  initial state One {
    initial state A { on step -> B }
    state B { on step -> C }
    state C { }
  }
  state Two { }
  history deep H -> Two do append(trail, "default")
  on pause -> Paused
}
state Paused { on resume -> Work.H }
context { trail: list[str] = [] }
"""

LOOP = """
flow loop
context { visits: int = 0 }
event go
event stop
initial state Idle {
  on go -> Route
  on stop -> Done
}
choice state Route {
  entry do visits += 1
  if visits > 50 -> Done
  else -> Again
}
choice state Again { else -> Done }
final state Done
"""

LOOP_CHART = (
    LOOP.replace("flow loop", "flow loop_chart") + "state Box { initial state Inside { } }\n"
)

STORM = """
flow storm
context { n: int = 0 }
event poke
initial state A {
  on poke -> self do n += 1; raise poke
}
"""


BUDGET = """
flow budget
context { spent: int = 0 }
event spend(amount: int)
invariant within_budget: spent <= 100
initial state Open {
  on spend -> self do spent += event.amount
  after 1s -> self do spent += 60
}
"""


REFUSED_START = """
flow refused_start
context { n: int = 0 }
event check
initial state A {
  entry do n += 5; raise check
  on check if n > 3 reject too_many "Too many: {{ context.n }}." with {"n": n}
}
"""


ROUTED = """
flow routed
context { in_route: bool = false, in_rule: bool = true, in_entry: bool = false }
event go
initial state A { on go -> C do in_rule = active(A) }
choice state C { else -> B do in_route = active(C) }
state B { entry do in_entry = active(B) }
"""


SLOW = """
flow slow
context { wait_ms: int = 4000000000000 }
event go
initial state A { on go -> B }
state B { after wait_ms ms -> A }
"""

SLOW_CHART = """
flow slow_chart
context { wait_ms: int = 4000000000000 }
event go
initial state A { on go -> P }
state P {
  initial state B { after wait_ms ms -> A }
}
"""


FAULTS = """
flow faults
context { d: int = 0, items: list[int] = [], total: int = 0 }
event div
event pick(i: int)
event leave
event enter
event back_out
event pay(amount: int)
  require event.amount > 0
    else bad_amount "Pay more than {{ event.amount }}." with {"given": event.amount}
  require 100 / d > 1 else unreachable "Never."
initial state A {
  on div if 10 / d > 1 -> B
  on pick -> B do d = items[event.i]
  on leave -> B
  on enter -> D
  on pay -> A do total += event.amount
}
state B {
  exit do total = 10 % d
  on back_out -> A
}
state D {
  entry do total = items[5]
}
"""

REGIONS = """
flow regions_conflict
context { log: list[str] = [] }
event tick
event quiet
initial parallel state Both {
  state Left {
    initial state L1 { on tick -> L2 do append(log, "left") }
    state L2 { }
  }
  state Right {
    unhandled ignore
    initial state R1 { on tick -> R2 do append(log, "right") }
    state R2 { on tick reject done_already "Right is done." }
  }
  on tick -> Out do append(log, "out")
}
state Out { }
"""


def _loop_back(ir: dict[str, Any]) -> None:
    """Make Again route back to Route (the compiler refuses a routing cycle)."""
    ir.pop("hash", None)
    for t in ir["transitions"]:
        if t["source"] == "Again":
            t["target"] = "Route"


CASES = [
    Case(
        "keys_and_reasons",
        STEPS,
        [
            send("next", key="k1", reason="first"),
            send("next", key="k1"),
            send("next", key=5),
            send("next", reason="x" * 10_001),
            send("next", reason="nul\u0000"),
            goto("C", reason=["no"]),
        ],
    ),
    Case(
        "goto_and_back",
        STEPS,
        [
            goto("Nowhere"),
            goto("A"),
            back(),
            goto("B", reason="move"),
            goto("C"),
            send("unknown"),
            send("retry"),
            send("retry", {"why": 3, "extra": True}),
            send("retry", {"why": "again"}),
            send("retry", {"why": "again"}, force=True, reason="undo"),
            send("next"),
            goto("A"),
            back(),
            back(force=True),
            send("next"),
            send("next"),
            send("next"),
            goto("A"),
            back(force=True),
        ],
    ),
    Case("raised_events", RETRY, [send("start"), send("start")]),
    Case(
        "computed_delays",
        BACKOFF,
        [
            send("fail"),
            advance(99),
            advance(1),
            advance(200),
            advance(400),
            advance(9_300),
            advance(1),
        ],
    ),
    Case("done_data", CHECKOUT, [send("pay", {"amount": 42}), send("pay", {"amount": 1})]),
    Case("done_data_dropped", CHECKOUT, [send("cancel")]),
    Case("initial_rules", LIGHTS, [send("go"), send("flip"), send("off"), send("go")]),
    Case(
        "deep_history",
        DEEP,
        [
            send("go"),
            send("step"),
            send("pause"),
            send("resume"),
            send("step"),
            send("pause"),
            send("resume"),
        ],
    ),
    Case("history_default", DEEP, [send("go"), send("pause"), send("resume")], patch=None),
    Case("routing_loop", LOOP, [send("go"), send("go")], patch=_loop_back),
    Case("routing_loop_chart", LOOP_CHART, [send("go")], patch=_loop_back),
    Case("microstep_bound", STORM, [send("poke"), send("poke")]),
    Case(
        "invariants",
        BUDGET,
        [
            send("spend", {"amount": 30}, key="a"),
            send("spend", {"amount": 80}, key="b"),
            send("spend", {"amount": 1}, key="a"),
            advance(1000),
            advance(1000),
        ],
        check_invariants=True,
    ),
    Case("refused_start", REFUSED_START, []),
    Case(
        "faults",
        FAULTS,
        [
            send("div"),
            send("pick", {"i": 3}),
            send("enter"),
            send("pay", {"amount": 0}),
            send("pay", {"amount": 5}),
            send("leave"),
            send("back_out"),
        ],
    ),
    Case(
        "parallel_conflicts",
        REGIONS,
        [send("tick"), send("quiet"), send("tick"), send("tick")],
    ),
    Case("delay_too_long", SLOW, [send("go")]),
    Case("delay_too_long_chart", SLOW_CHART, [send("go")]),
    Case("delay_negative", SLOW, [send("go"), advance(1)], context={"wait_ms": -5}),
    Case("active_in_a_flat_flow", ROUTED, [send("go")]),
    Case("invalid_context", STEPS, [], context={"n": "three", "extra": 1}),
]
