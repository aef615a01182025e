"""Invariants in the IR and in a production runtime (`Machine(check_invariants=True)`)."""

from __future__ import annotations

import json
from pathlib import Path

from flowc.compiler import compile_source
from flowc.runtime import CompiledFlow, FakeClock, Machine, Rejection, StepResult

ROOT = Path(__file__).parents[2]
FLOW = """flow hints
context {
  hints_used: int = 0
  hint_budget: int = 2
}
event hint
event bonus
initial state WORKING {
  on hint if hints_used < hint_budget -> self do hints_used += 1
  on bonus -> self do hints_used += 1
  after 1h -> LATE do hints_used += 5
}
state LATE { on hint -> WORKING }
invariant within_budget: hints_used <= hint_budget
"""


def compiled() -> CompiledFlow:
    flow = compile_source(FLOW, "hints.flow").flow
    assert flow is not None
    return flow


def test_invariants_are_an_additive_ir_field() -> None:
    flow = compiled()
    data = json.loads(flow.to_json())
    assert data["invariants"] == [
        {
            "name": "within_budget",
            "expr": {
                "op": "<=",
                "args": [
                    {"op": "ctx", "value": "hints_used"},
                    {"op": "ctx", "value": "hint_budget"},
                ],
            },
        }
    ]
    assert CompiledFlow.from_json(flow.to_json()) == flow
    # A flow without invariants has no such key: compiled JSON written before it loads, and
    # keeps its hash.
    for golden in (ROOT / "tests" / "golden").glob("*.json"):
        text = golden.read_text(encoding="utf-8")
        assert "invariants" not in json.loads(text)
        assert CompiledFlow.from_json(text).to_json() == text


def test_off_by_default_a_breaking_step_commits() -> None:
    instance = Machine(compiled()).start()
    for event in ("hint", "hint", "bonus"):
        assert isinstance(instance.send(event), StepResult)
    assert instance.get("hints_used") == 3


def test_checked_a_breaking_step_is_refused_and_nothing_changes() -> None:
    machine = Machine(compiled(), check_invariants=True)
    instance = machine.start()
    told: list[int] = []
    instance.subscribe(lambda step: told.append(step.seq))
    instance.send("hint")
    instance.send("hint")
    before = instance.snapshot()
    refused = instance.send("bonus", key="k1")
    assert isinstance(refused, Rejection)
    assert refused.to_dict() == {
        "ok": False,
        "error": "invariant_violated",
        "message": "The step was refused: it would break the invariant within_budget.",
        "invariants": ["within_budget"],
        "to": "WORKING",
        "kind": "invariant_violated",
        "state": "WORKING",
        "event": "bonus",
    }
    assert instance.snapshot() == before  # state, context, history, timers, keys
    assert told == [1, 2]  # subscribers hear only of committed steps
    # The key was not used up by the refused step.
    assert isinstance(instance.send("bonus", key="k1"), Rejection)


def test_checked_timers_are_refused_too() -> None:
    clock = FakeClock()
    machine = Machine(compiled(), clock=clock, check_invariants=True)
    instance = machine.start()
    clock.advance(hours=1)
    (refused,) = instance.advance()
    assert isinstance(refused, Rejection) and refused.code == "invariant_violated"
    assert instance.state == "WORKING" and instance.get("hints_used") == 0


def test_checked_goto_and_back() -> None:
    source = FLOW.replace(
        "state LATE { on hint -> WORKING }", "state LATE { on hint -> WORKING }\nstate EXTRA"
    )
    source = source.replace("  after 1h", "  -> EXTRA do hints_used = 9\n  after 1h")
    flow = compile_source(source, "x.flow").flow
    assert flow is not None
    instance = Machine(flow, check_invariants=True).start()
    refused = instance.goto("EXTRA")
    assert isinstance(refused, Rejection) and refused["to"] == "EXTRA"
    assert instance.state == "WORKING"
