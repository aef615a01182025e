"""Validation cases for the TypeScript runtime: values checked against every kind of value type
(ranges, enums, records with defaults, lists, maps, optionals, json) and payloads checked
against an event's fields, by the Python runtime: the normalised value, or the field-level
feedback of the refusal (runtime/validate.py `report`, `feedback`). Written to
runtime-ts/test/fixtures/validate_cases.json, which runtime-ts/test/validate_cases.test.ts
replays:

    .venv/bin/python tests/ts/make_validate_cases.py

tests/ts/test_expr_cases.py checks that the committed file is current.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from flowc.compiler import compile_source
from flowc.runtime import Limits, Machine
from flowc.runtime.engine import payload_feedback as _feedback
from flowc.runtime.validate import Invalid, feedback, report

OUT = (
    Path(__file__).resolve().parents[2] / "runtime-ts" / "test" / "fixtures" / "validate_cases.json"
)

FLOW = """flow shapes
enum Color { RED, GREEN, BLUE }
type Point {
  x: int
  y: float = 0.5
  tag: str? = none
  c: Color = RED
}
type Box {
  points: list[Point] = []
  sizes: map[str, int] = {}
}
event put(n: int(1..5), f: float(0..1), s: str, color: Color, p: Point, b: Box?,
          xs: list[int] = [], m: map[str, list[float]] = {}, j: json = none, flag: bool = false)
initial state A { on put -> A }
"""

TYPES: list[dict[str, Any]] = [
    {"kind": "bool"}, {"kind": "int"}, {"kind": "int", "min": 1.0, "max": 5.0},
    {"kind": "int", "min": -2.0}, {"kind": "float"}, {"kind": "float", "min": 0.0, "max": 1.5},
    {"kind": "float", "max": 2.0}, {"kind": "str"}, {"kind": "enum", "name": "Color"},
    {"kind": "json"}, {"kind": "list", "item": {"kind": "int"}},
    {"kind": "map", "item": {"kind": "float"}}, {"kind": "optional", "item": {"kind": "int"}},
    {"kind": "record", "name": "Point"},
    {"kind": "list", "item": {"kind": "record", "name": "Point"}},
    {"kind": "optional", "item": {"kind": "record", "name": "Box"}},
    {"kind": "map", "item": {"kind": "list", "item": {"kind": "enum", "name": "Color"}}},
]  # fmt: skip

VALUES: list[Any] = [
    None, True, 0, 3, -3, 7, 2**60, 10**1001, 2.0, 2.5, 1.5, -0.0, 1e300, float("nan"),
    float("inf"), "", "RED", "red", "x\x00y", "\ud800", [], [1, 2], [1, "a", 2.5], {},
    {"x": 1}, {"x": 2.0, "y": 1, "c": "BLUE"}, {"x": "1", "y": "a", "zz": 1, "c": "PINK"},
    {"y": 1}, [{"x": 1}, {"y": 2}, 3], {"points": [{"x": 1}, {"x": True}], "sizes": {"a": 1.0}},
    {"points": "no", "sizes": {"a": 1.5}, "more": 1}, {"a": ["RED"], "b": ["RED", "X"], "c": 1},
    {"a": 1.0, "b": "2"}, ["😀" * 3], {"k": [[[]]]}, [10**30, 10**29],
]  # fmt: skip

PAYLOADS: list[Any] = [
    {"n": 3, "f": 0.5, "s": "x", "color": "RED", "p": {"x": 1}, "b": None},
    {"n": 3.0, "f": 1, "s": "x", "color": "GREEN", "p": {"x": 1, "y": 2}, "b": {"points": []},
     "xs": [1, 2.0], "m": {"k": [1, 2.5]}, "j": {"any": [1, None]}, "flag": True},
    {"n": 9, "f": 2, "s": 1, "color": "red", "p": {"y": "a"}, "extra": 1, "b": {"points": [{}]}},
    {}, None, [], "text",
    {"n": 0, "f": -1, "s": None, "color": None, "p": None, "b": 1, "xs": [1, "a", None],
     "m": {"k": ["a", 1, None], "j": 3}, "j": float("nan"), "flag": "yes", "u1": 1, "u2": 2},
]  # fmt: skip


def _machine(limits: Limits | None = None) -> tuple[Machine, dict[str, Any]]:
    flow = compile_source(FLOW, "shapes.flow").flow
    assert flow is not None
    raw = flow.model_dump(mode="json")
    return Machine(raw, limits=limits), raw


def _value_cases(machine: Machine) -> list[dict[str, Any]]:
    out = []
    for ref in TYPES:
        t = machine.types.compile(ref)
        for value in VALUES:
            case: dict[str, Any] = {"type": ref, "value": value}
            try:
                case["normal"] = json.dumps(t.check(value), ensure_ascii=False)
            except Invalid:
                issues = report(t, value, limits=machine.limits)
                case["feedback"] = feedback(issues, "Fix it.")
            out.append(case)
    return out


def _payload_cases(machine: Machine, limits: dict[str, int]) -> list[dict[str, Any]]:
    out = []
    event = machine.events["put"]
    for payload in PAYLOADS:
        case: dict[str, Any] = {"payload": payload}
        if limits:
            case["limits"] = limits
        try:
            case["normal"] = json.dumps(
                event.type.check({} if payload is None else payload), ensure_ascii=False
            )
        except Invalid:
            case["feedback"] = _feedback(event, {} if payload is None else payload, machine.limits)
        out.append(case)
    return out


def build() -> str:
    machine, raw = _machine()
    small = {"max_issues": 3, "max_items": 2, "max_string": 4, "max_int_digits": 3}
    few, _ = _machine(Limits(**small))
    keys = ("enums", "records", "events")
    document = {
        "ir": {k: raw[k] for k in keys},
        "values": _value_cases(machine),
        "payloads": _payload_cases(machine, {}) + _payload_cases(few, small),
    }
    return json.dumps(document, indent=0) + "\n"  # ASCII: a lone surrogate is a value here


def main() -> int:
    from cases_file import write_cases  # beside this script, which runs from its folder

    return write_cases(OUT, build())


if __name__ == "__main__":
    sys.exit(main())
