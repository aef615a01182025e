"""Properties over random sequences of operations on the seed flows: a refusal changes nothing,
and a step replayed on an instance restored from the snapshot taken before it gives the same
outcome and the same instance (snapshots are complete, steps deterministic)."""

from __future__ import annotations

import copy
from functools import cache
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from flowc.runtime import FakeClock, Instance, Machine

ROOT = Path(__file__).resolve().parents[2]


@cache
def raw(name: str) -> dict[str, Any]:
    return dict(Machine.from_file(ROOT / "flows" / f"{name}.flow").raw)


def machine(name: str) -> Machine:
    return Machine(raw(name), clock=FakeClock()).preload()


# A pool of payloads per event: valid ones, and a few broken ones.
ATTEMPT_OPS: list[tuple[str, Any]] = [
    ("send", ("set_mode", {"mode": "EXPERT"})),
    ("send", ("set_mode", {"mode": "BEGINNER"})),
    ("send", ("set_mode", {"mode": "ROBOT"})),
    ("send", ("skip", None)),
    ("send", ("request_hint", None)),
    ("send", ("retry", None)),
    ("send", ("submit_code", {"code": "x"})),
    ("send", ("submit_code", {"code": 1})),
    ("send", ("tests_run", {"results": [], "all_passed": True})),
    ("send", ("tests_run", {"results": [], "all_passed": False})),
    ("send", ("submit_explanation", {"explanation": "e", "assessment": {"status": "PASS"}})),
    (
        "send",
        (
            "submit_explanation",
            {
                "explanation": "e",
                "input_output_description": "a",
                "constraints_description": "b",
                "example_walkthrough": "c",
                "wrong_approach": "d",
                "assessment": {"status": "PASS"},
            },
        ),
    ),
    (
        "send",
        (
            "choose_pattern",
            {
                "pattern_id": "p",
                "confidence": 4,
                "invariant_template_id": "t",
                "evaluation": {"accepted": True, "match": "GOOD"},
            },
        ),
    ),
    ("send", ("choose_pattern", {"pattern_id": "p", "confidence": 9})),
    ("send", ("submit_reflection", {"cues_next_time": [], "invariant_summary": "s"})),
    ("send", ("nope", None)),
]

RFP_OPS: list[tuple[str, Any]] = [
    *[("goto", (s, False)) for s in ("ANALYZING", "QNA_GENERATION", "WAITING_CLIENT")],
    *[("goto", (s, f)) for s in ("CLIENT_ANSWERED", "DRAFTING", "PROPOSAL_UPDATE") for f in (0, 1)],
    ("goto", ("SCOPE_FREEZE", False)),
    ("goto", ("ANALYZING", True)),
    ("goto", ("QNA_GENERATION", True)),
    ("goto", ("NOWHERE", False)),
    ("back", (False,)),
    ("back", (True,)),
    ("send", ("update_status", {"next_action": "call"})),
    ("send", ("update_status", {"next_action": 3})),
]


def apply(inst: Instance, op: tuple[str, Any]) -> Any:
    kind, args = op
    if kind == "send":
        return inst.send(*args)
    if kind == "goto":
        return inst.goto(args[0], force=bool(args[1]))
    return inst.back(force=args[0])


def observed(inst: Instance) -> dict[str, Any]:
    return copy.deepcopy({"snapshot": inst.snapshot(), "context": inst.context})


def check(name: str, context: dict[str, Any], ops: list[tuple[str, Any]]) -> None:
    m = machine(name)
    inst = m.start(context)
    for op in ops:
        before = observed(inst)
        outcome = apply(inst, op)
        after = observed(inst)
        if not outcome.ok:
            assert after == before, op
        # Replaying the step on a copy restored from the snapshot taken before it gives the
        # same outcome and the same instance.
        twin = m.restore(before["snapshot"])
        assert twin.machine is m
        again = apply(twin, op)
        assert again.to_dict() == outcome.to_dict(), op
        assert observed(twin) == after, op


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(ATTEMPT_OPS), max_size=25))
def test_attempt_refusals_change_nothing_and_replays_agree(ops: list[tuple[str, Any]]) -> None:
    check("attempt_v2", {}, ops)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(RFP_OPS), max_size=25))
def test_rfp_refusals_change_nothing_and_replays_agree(ops: list[tuple[str, Any]]) -> None:
    check("rfp_workspace", {"project": "p", "max_backward_moves": 2}, ops)
