"""The engine against the flat one: a flat flow made to run on the statechart
kernel (one `always` rule whose guard never holds) gives the same outcomes, snapshots and
histories as the same flow on the flat kernel with its generated dispatch functions, through
the operations of the flat differential test (tests/runtime/test_codegen.py)."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from flowc.runtime import FakeClock, Machine

from .conftest import machine
from .test_codegen import FLOW, GEN_OPS


def as_chart(raw: dict[str, Any]) -> dict[str, Any]:
    """The same flow as IR version 2 with an eventless rule that never holds."""
    raw = json.loads(json.dumps(raw))
    raw.pop("hash", None)
    raw["ir_version"] = 2
    raw["transitions"].append(
        {
            "index": len(raw["transitions"]),
            "source": raw["initial"],
            "target": raw["initial"],
            "kind": "always",
            "guard": {"op": "lit", "value": False},
        }
    )
    return raw


def outcome(o: Any) -> str:
    d = o.to_dict()
    d.pop("configuration", None)  # the flat kernel's steps say `to` only
    return json.dumps(d, sort_keys=True, default=repr)


def snapshot(inst: Any) -> str:
    snap = inst.snapshot()
    snap.pop("hash")
    return json.dumps(snap, sort_keys=True)


FLAT_RAW = dict(machine(FLOW).raw)


def twins() -> tuple[Machine, Machine]:
    flat = Machine(FLAT_RAW, clock=FakeClock()).preload()
    flat.hot_after = 0
    chart = Machine(as_chart(FLAT_RAW), clock=FakeClock()).preload()
    assert chart.chart and not chart.hierarchical and not flat.chart
    return flat, chart


#: besides the sends: the clock moving (timers firing), `goto` and `back`
OTHER_OPS: list[tuple[Any, ...]] = [
    ("@advance", 3.0),
    ("@advance", 6.0),
    ("@goto", "B"),
    ("@goto", "C"),
    ("@back", True),
    ("@back", False),
]


def step(inst: Any, op: tuple[Any, ...]) -> list[Any]:
    what, arg, *forced = op
    if what == "@advance":
        inst.clock.advance(arg)
        return list(inst.advance())
    if what == "@goto":
        return [inst.goto(arg, reason="r")]
    if what == "@back":
        return [inst.back(force=arg)]
    return [inst.send(what, arg, force=bool(forced and forced[0]), reason="r")]


@settings(max_examples=100, deadline=None)
@given(st.lists(st.sampled_from(GEN_OPS + OTHER_OPS), max_size=20))
def test_the_statechart_kernel_agrees_with_the_flat_one(ops: list[tuple[Any, ...]]) -> None:
    flat_m, chart_m = twins()
    flat, chart = flat_m.start(clock=FakeClock()), chart_m.start(clock=FakeClock())
    assert snapshot(flat) == snapshot(chart)
    for op in ops:
        a, b = step(flat, op), step(chart, op)
        assert [outcome(x) for x in a] == [outcome(x) for x in b], op
        assert snapshot(flat) == snapshot(chart), op
        assert flat.timers == chart.timers
        for x in b:
            if x.ok:
                assert x.configuration == (x.to,)
