"""The `json` type: any JSON value in payloads, the context and records, validated against the
machine's limits (NaN and the infinities refused), copied on the way in, passed along by
actions, and described by `{}` in `accepted_events()`; the generated payload checks agree with
the general path (tests/runtime/test_codegen.py)."""

from __future__ import annotations

import json
import math
from collections import OrderedDict
from typing import Any

import pytest

from flowc.runtime import FakeClock, Limits, Machine, Rejected, Rejection, StepResult

from .conftest import frozen, machine

FLOW = """
flow tools

type Call {
  tool: str
  args: json
}

context {
  last: json = none
  calls: list[Call] = []
  settings: json = {"retries": 3, "backoff": [1, 2.5], "on": true, "note": none}
}

event call(tool: str, args: json)
event note(extra: json = none)
event reset

initial state READY {
  on call if event.args == none reject no_args "Give arguments." with {"tool": event.tool}
  on call -> self do
    last = event.args;
    append(calls, {"tool": event.tool, "args": event.args})
  on note -> self do last = event.extra
  on reset -> DONE do last = [1, "two", none, {"x": false}]; settings = none
}

final state DONE
"""

VALID: list[Any] = [
    {"q": "weather", "days": 3},
    [1, 2.5, "x", None, True, {"nested": [[], {}]}],
    "plain",
    7,
    -0.5,
    False,
    {"ünï": "cödé ✓"},
]


@pytest.mark.parametrize("args", VALID, ids=[json.dumps(v)[:30] for v in VALID])
def test_any_json_value_is_accepted_and_passed_along(args: Any) -> None:
    inst = machine(FLOW).start()
    step = inst.send("call", {"tool": "search", "args": args})
    assert isinstance(step, StepResult)
    assert inst.context["last"] == args
    assert inst.context["calls"] == [{"tool": "search", "args": args}]
    # what was stored is JSON, exactly (a bool stays a bool, a float a float)
    assert json.loads(json.dumps(inst.context["last"])) == args
    assert type(inst.context["last"]) is type(args)


def test_values_are_copied_tuples_become_lists() -> None:
    inst = machine(FLOW).start()
    args: dict[str, Any] = {"xs": (1, 2), "inner": OrderedDict(a=1)}
    inst.send("call", {"tool": "t", "args": args})
    args["inner"]["a"] = 99
    assert inst.context["last"] == {"xs": [1, 2], "inner": {"a": 1}}
    assert type(inst.context["last"]["xs"]) is list
    assert type(inst.context["last"]["inner"]) is dict


BAD: list[tuple[Any, str]] = [
    (math.nan, "nan is not a finite number"),
    ({"a": [1, math.inf]}, "inf is not a finite number"),
    ({1: "x"}, "key 1 is not a string"),
    ({"s": {1, 2}}, "expected a JSON value, got a set"),
    ("a\x00b", "NUL"),
    (10**2000, "digits"),
]


@pytest.mark.parametrize(("args", "problem"), BAD, ids=[p for _, p in BAD])
def test_what_is_not_json_is_refused_and_changes_nothing(args: Any, problem: str) -> None:
    inst = machine(FLOW).start()
    before = frozen(inst)
    refusal = inst.send("call", {"tool": "t", "args": args})
    assert isinstance(refusal, Rejection) and refusal.kind == "invalid_payload"
    (issue,) = refusal.data["issues"]["invalid"]
    assert issue["field"] == "args" and problem in issue["problem"]
    assert issue["requirement"] == "any JSON value"
    assert frozen(inst) == before
    json.dumps(refusal.to_dict(), allow_nan=False)  # the refusal itself is JSON


def test_the_limits_apply_inside_json_values() -> None:
    limits = Limits(max_items=10, max_depth=5, max_value_size=100)
    m = Machine(machine(FLOW).raw, clock=FakeClock(), limits=limits)
    for args, problem in [
        (list(range(11)), "11 items"),
        ([[[[[[1]]]]]], "nested more than 5"),
        (["x" * 60, "y" * 60], "larger than 100"),
    ]:
        inst = m.start()
        refusal = inst.send("call", {"tool": "t", "args": args})
        assert isinstance(refusal, Rejection), args
        assert problem in refusal.data["issues"]["invalid"][0]["problem"]
    assert isinstance(m.start().send("call", {"tool": "t", "args": list(range(10))}), StepResult)


def test_null_is_a_value_a_guard_can_test() -> None:
    inst = machine(FLOW).start()
    refusal = inst.send("call", {"tool": "t", "args": None})
    assert isinstance(refusal, Rejection) and refusal.code == "no_args"
    assert refusal.data["tool"] == "t"


def test_defaults_literals_and_a_payload_field_left_out() -> None:
    inst = machine(FLOW).start()
    assert inst.context["settings"] == {"retries": 3, "backoff": [1, 2.5], "on": True, "note": None}
    inst.send("call", {"tool": "t", "args": 1})
    inst.send("note")  # `extra` has a default (null)
    assert inst.context["last"] is None
    inst.send("reset")
    assert inst.context["last"] == [1, "two", None, {"x": False}]
    assert inst.context["settings"] is None


def test_start_context_is_validated_like_a_payload() -> None:
    m = machine(FLOW)
    assert m.start({"last": {"k": [1]}}).context["last"] == {"k": [1]}
    with pytest.raises(Rejected) as refused:
        m.start({"last": [math.nan]})
    (issue,) = refused.value.rejection.data["issues"]["invalid"]
    assert issue["field"] == "last" and "finite" in issue["problem"]


def test_accepted_events_describe_json_with_the_empty_schema() -> None:
    inst = machine(FLOW).start()
    schemas = {e.name: e.schema for e in inst.accepted_events()}
    assert schemas["call"]["properties"]["args"] == {}
    assert schemas["note"]["properties"]["extra"] == {"default": None}
    assert schemas["call"]["required"] == ["tool", "args"]


def test_snapshots_keep_json_values() -> None:
    m = machine(FLOW)
    inst = m.start()
    inst.send("call", {"tool": "t", "args": {"a": [1.5, None, "x"]}})
    again = m.restore(json.loads(json.dumps(inst.snapshot())))
    assert again.context == inst.context
