"""Action cases for the TypeScript runtime, with the answers of the Python runtime.

Each action text below is compiled as the one rule of a small flow (its context has fields of
every type); its IR actions are run by `flowc.runtime`'s expression compiler on the flow's
initial context, for a few payloads (checked and normalised as a sent payload is). The new
context, the effects emitted, the events raised and the scheduled events sent or cancelled,
or the fault or limit, are written to
runtime-ts/test/fixtures/action_cases.json, which runtime-ts/test/action_cases.test.ts replays:

    .venv/bin/python tests/ts/make_action_cases.py

tests/ts/test_expr_cases.py checks that the committed file is what this script writes.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from flowc.compiler import compile_source
from flowc.runtime import Limits, Machine
from flowc.runtime.expr import FAULTS, describe_fault
from flowc.runtime.limits import LimitExceeded
from flowc.runtime.outputs import collecting

OUT = Path(__file__).resolve().parents[2] / "runtime-ts" / "test" / "fixtures" / "action_cases.json"

FLOW = """flow acts
enum Color { RED, GREEN }
type Point {
  x: int = 0
  y: float = 0.5
  tag: str? = none
}
effect ping(n: int, label: str = "x")
effect beep
event go(n: int, f: float, s: str, xs: list[int], m: map[str, int], p: Point)
event other(k: int = 0)
context {
  n: int = 0
  f: float = 0.5
  r: int(0..10) = 5
  s: str = "hé"
  xs: list[int] = [1, 2, 3]
  fs: list[float] = [1.5]
  m: map[str, int] = {"a": 1}
  p: Point = {}
  ps: list[Point] = []
  maybe: Point? = none
  c: Color = RED
  j: json = none
  i: int = 0
  item: int = 0
}
initial state A { on go -> A do ACTION }
"""

ACTIONS = [
    "n = event.n", "n += event.n", "n -= 1", "f = event.n", "f += 1", "f = event.f * 2",
    "r = event.n", "r += 6", "r -= 6", "s = s + event.s", "s = upper(s) + str(event.f)",
    "xs = xs + event.xs", "append(xs, event.n)", "remove(xs, 2)", "remove(xs, 99)",
    "xs[0] = event.n", "xs[event.n] = 1", "m[event.s] = 2", 'delete(m, "a")', 'delete(m, "zz")',
    "p.x = event.n", "p.y = event.n", "p = event.p", "p.tag = event.s", "append(ps, event.p)",
    "maybe = event.p", "c = GREEN", "j = event.m", 'j = [1, 2.5, "x", none]', "fs = [event.n, 2]",
    "for item, i in event.xs { n += item * i }", "for x in event.xs { append(fs, x / 2) }",
    "for x, k in xs { append(xs, x + k) }",
    "if event.n > 2 { n = 1 } elif event.n > 1 { n = 2 } else { n = 3 }",
    "emit ping(n: event.n)", "emit beep", "emit ping(n: len(event.s), label: event.s); emit beep",
    "raise other(k: 1)", "raise other", "f = event.n / 0", "n = len(event.s)",
    "n = round(event.f)", "s = str(event.f)", "n = event.n * event.n * event.n * event.n",
    "f = event.n * 1.0", "n = sum(x in event.xs: x * event.n)", "n = event.n % 0",
    "p.x = p.x + 1; p.y = p.x / 4; ps = ps + [p]", "m[\"k\"] = len(m); m = merge(m, event.m)",
    "for item in xs { xs = xs + [item] }", 'j = {"a": [[1]], "b": event.m}', "s = s + s + s",
    'emit ping(n: 1, label: "abcdefgh")', 'raise other(k: 123456)',
    "send other(k: event.n) after 5s as event.s", "send other after event.n m",
    "send other(k: 1) after (0 - event.n) s as \"a\"; cancel \"a\"; cancel event.s",
    "send other after 1s; send other(k: 2) after 2s",
]  # fmt: skip

PAYLOADS: list[dict[str, Any]] = [
    {"n": 3, "f": 2.5, "s": "ü", "xs": [4, 5], "m": {"b": 2}, "p": {"x": 1, "y": 2}},
    {"n": 2, "f": 2.0, "s": "b", "xs": [], "m": {}, "p": {"x": -1, "tag": "t"}},
    {"n": 10**20, "f": -0.25, "s": "😀", "xs": [1, 2, 3, 4], "m": {"a": 5}, "p": {}},
]
SMALL = {"max_items": 5, "max_loop_iterations": 6, "max_int_digits": 30, "max_outputs": 1}
TINY = {"max_output_size": 6, "max_value_size": 12, "max_string": 6, "max_depth": 2}


def _actions(action: str) -> list[Any] | None:
    flow = compile_source(FLOW.replace("ACTION", action), "acts.flow").flow
    if flow is None:
        return None
    raw = flow.model_dump(mode="json")
    return list(raw["transitions"][0]["actions"])


def _run(actions: list[Any], payload: dict[str, Any], limits: dict[str, int]) -> dict[str, Any]:
    machine = Machine(HEADER, limits=Limits(**limits))
    event = machine.events["go"]
    normal = event.type.check(payload)
    types = {f.name: f.type for f in event.fields}
    block = machine._compiler.actions(actions, machine.target_type, types)
    assert block is not None
    c = dict(machine.start().context)
    try:
        with collecting() as out:
            block(c, normal, machine.states["A"])
    except LimitExceeded as exc:
        return {"limit": exc.detail}
    except FAULTS as exc:
        return {"fault": describe_fault(exc)}
    done = {
        "context": json.dumps(c, ensure_ascii=False),
        "effects": json.dumps(out.effects, ensure_ascii=False),
        "raised": json.dumps(out.raised, ensure_ascii=False),
    }
    if out.scheduled:  # `send` and `cancel`: [id, event, payload, delay_ms] each (+ `to`)
        ops = [list(op) if op.to is not None else list(op)[:4] for op in out.scheduled]
        done["scheduled"] = json.dumps(ops, ensure_ascii=False)
    return done


def _header() -> dict[str, Any]:
    flow = compile_source(FLOW.replace("ACTION", "n = 1"), "acts.flow").flow
    assert flow is not None
    return dict(flow.model_dump(mode="json"))


HEADER = _header()


def cases() -> list[dict[str, Any]]:
    out = []
    for action in ACTIONS:
        actions = _actions(action)
        assert actions is not None, f"does not compile: {action}"
        for limits in ({}, SMALL, TINY):
            for payload in PAYLOADS:
                case = {"source": action, "actions": actions, "payload": payload}
                if limits:
                    case["limits"] = limits
                out.append({**case, **_run(actions, payload, limits)})
    return out


def build() -> str:
    keys = ("enums", "records", "context", "events", "effects")
    document = {"ir": {k: HEADER[k] for k in keys}, "cases": cases()}
    return json.dumps(document, ensure_ascii=False, indent=0) + "\n"


def main() -> int:
    from cases_file import write_cases  # beside this script, which runs from its folder

    return write_cases(OUT, build())


if __name__ == "__main__":
    sys.exit(main())
