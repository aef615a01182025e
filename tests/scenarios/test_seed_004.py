"""Seed 004, attempt flow v2 (flows/attempt_v2.flow): every row of the state table and of the
mode table, and the hint budget."""

from __future__ import annotations

from typing import Any

import pytest

from flowc.runtime import Instance, Rejection

from .conftest import load, observed

FULL = {
    "explanation": "find two numbers adding to t",
    "input_output_description": "list, target -> indexes",
    "constraints_description": "n <= 1e5",
    "example_walkthrough": "[1,3,5], 8 -> (1,2)",
    "wrong_approach": "all pairs",
}


def explanation(status: str, **fields: Any) -> dict[str, Any]:
    return {**FULL, **fields, "assessment": {"status": status, "gaps": ["edge cases"]}}


def choice(confidence: int, accepted: bool = True, **extra: Any) -> dict[str, Any]:
    return {
        "pattern_id": "two_pointers",
        "confidence": confidence,
        "evaluation": {"accepted": accepted, "match": "GOOD" if accepted else "MISMATCH"},
        **extra,
    }


BUILDER = {"invariant_text": "i < j", "invariant_template_id": "between"}


def at(state: str, mode: str = "BEGINNER", **context: Any) -> Instance:
    machine = load("attempt_v2")
    return machine.restore(
        {"flow": "attempt_v2", "state": state, "context": {"mode": mode, **context}}
    )


B, E = "BEGINNER", "EXPERT"
FAIL = {"results": [], "all_passed": False}
PASS = {"results": [], "all_passed": True}
PATTERNS = {
    "candidates": [
        {"pattern_id": "tp", "name": "Two pointers", "reason": "sorted", "ai_confidence": 0.9}
    ]
}
REFLECTION = {"cues_next_time": ["sorted: two pointers"], "invariant_summary": "i < j"}

ROWS: list[tuple[str, str, str, str, dict[str, Any] | None, str]] = [
    # (row, mode, state, event, payload, expected next state)
    (
        "1 needs work",
        B,
        "UNDERSTAND",
        "submit_explanation",
        explanation("NEEDS_WORK"),
        "UNDERSTAND",
    ),
    ("2 pass", B, "UNDERSTAND", "submit_explanation", explanation("PASS"), "PLAN"),
    ("3 expert skip", E, "UNDERSTAND", "skip", None, "PLAN"),
    ("4 suggest", B, "PLAN", "suggest_patterns", PATTERNS, "PLAN"),
    ("5 discovery", B, "PLAN", "choose_pattern", choice(1), "PLAN"),
    ("6 validated", B, "PLAN", "choose_pattern", choice(4, **BUILDER), "IMPLEMENT"),
    ("7 expert skip", E, "PLAN", "skip", None, "IMPLEMENT"),
    ("8 code", B, "IMPLEMENT", "submit_code", {"code": "def f(): ..."}, "VERIFY"),
    ("9 hint", B, "IMPLEMENT", "request_hint", None, "IMPLEMENT"),
    ("10 tests fail", B, "VERIFY", "tests_run", FAIL, "VERIFY"),
    ("11 tests pass", B, "VERIFY", "tests_run", PASS, "REFLECT"),
    ("12 retry", B, "VERIFY", "retry", None, "IMPLEMENT"),
    ("13 reflection", B, "REFLECT", "submit_reflection", REFLECTION, "COMPLETE"),
    ("14 skip reflection", B, "REFLECT", "skip", None, "COMPLETE"),
]


@pytest.mark.parametrize(
    ("row", "mode", "state", "event", "payload", "expected"), ROWS, ids=[r[0] for r in ROWS]
)
def test_state_table_row(
    row: str, mode: str, state: str, event: str, payload: dict[str, Any] | None, expected: str
) -> None:
    inst = at(state, mode)
    r = inst.send(event, payload)
    assert r.ok, r
    assert (r.from_, r.to) == (state, expected)  # type: ignore[union-attr]


def test_row_effects_on_the_payloads() -> None:
    inst = at("UNDERSTAND")
    inst.send("submit_explanation", explanation("NEEDS_WORK"))
    understand = inst.context["understand"]
    assert understand["ai_assessment"]["status"] == "NEEDS_WORK"
    assert understand["ai_assessment"]["gaps"] == ["edge cases"]
    assert understand["wrong_approach"] == "all pairs"
    inst.send("answer_followup", {"question": "duplicates?", "answer": "yes", "at": "t1"})
    assert inst.context["understand"]["followups"] == [
        {"question": "duplicates?", "answer": "yes", "timestamp": "t1"}
    ]
    plan = at("PLAN")
    plan.send("choose_pattern", choice(2))
    assert plan.context["plan"]["discovery_triggered"] is True
    assert plan.context["plan"]["user_confidence"] == 2
    plan.send("choose_pattern", choice(4, **BUILDER, invariant_choices={"lo": 0}))
    assert plan.context["plan"]["invariant"] == {
        "text": "i < j",
        "builder_used": True,
        "template_id": "between",
        "template_choices": {"lo": 0},
    }
    assert plan.state == "IMPLEMENT"


def test_pattern_not_validated_stays_in_plan() -> None:
    inst = at("PLAN")
    r = inst.send("choose_pattern", choice(4, accepted=False, **BUILDER))
    assert (
        r.ok and inst.state == "PLAN" and inst.context["plan"]["chosen_pattern"] == "two_pointers"
    )


# ---- mode table ------------------------------------------------------------------------------


def test_beginner_understand_is_required_and_structured() -> None:
    inst = at("UNDERSTAND")
    before = observed(inst)
    r = inst.send("submit_explanation", explanation("PASS", wrong_approach="  "))
    assert isinstance(r, Rejection) and r.code == "structured_fields_required"
    assert observed(inst) == before


def test_expert_understand_is_less_strict() -> None:
    inst = at("UNDERSTAND", "EXPERT")
    r = inst.send("submit_explanation", {"explanation": "x", "assessment": {"status": "PASS"}})
    assert r.ok and inst.state == "PLAN"


def test_beginner_plan_needs_the_invariant_builder_on_low_rungs() -> None:
    inst = at("PLAN")
    r = inst.send("choose_pattern", choice(4, invariant_text="i < j"))
    assert isinstance(r, Rejection) and r.code == "invariant_builder_required"
    higher = at("PLAN", rung=3)
    missing = higher.send("choose_pattern", choice(4))
    assert isinstance(missing, Rejection) and missing.code == "invariant_required"
    assert higher.send("choose_pattern", choice(4, invariant_text="i < j")).to == "IMPLEMENT"  # type: ignore[union-attr]


def test_expert_can_skip_the_invariant_builder() -> None:
    inst = at("PLAN", "EXPERT")
    r = inst.send("choose_pattern", choice(1))  # low confidence: no discovery for experts
    assert r.ok and inst.state == "IMPLEMENT"
    assert inst.context["plan"]["invariant"]["builder_used"] is False


@pytest.mark.parametrize("state", ["UNDERSTAND", "PLAN", "IMPLEMENT", "VERIFY"])
def test_beginners_never_skip(state: str) -> None:
    inst = at(state)
    r = inst.send("skip")
    assert isinstance(r, Rejection) and r.code == "skip_not_allowed"
    assert r.message.startswith("Beginner mode has no skipping: complete the ")
    assert "skip" not in [e.name for e in inst.accepted_events()]


@pytest.mark.parametrize("state", ["IMPLEMENT", "VERIFY"])
def test_experts_skip_only_where_a_step_allows(state: str) -> None:
    r = at(state, "EXPERT").send("skip")
    assert isinstance(r, Rejection) and r.code == "skip_not_available"


def test_mode_can_change_mid_attempt() -> None:
    inst = at("UNDERSTAND")
    assert inst.send("skip").code == "skip_not_allowed"  # type: ignore[union-attr]
    assert inst.send("set_mode", {"mode": "EXPERT"}).ok
    assert inst.send("skip").to == "PLAN"  # type: ignore[union-attr]


# ---- hints -----------------------------------------------------------------------------------


def test_hint_budget_is_exhausted() -> None:
    inst = at("IMPLEMENT", hint_budget=2)
    assert [e.name for e in inst.accepted_events()][:1] == ["request_hint"]
    assert inst.send("request_hint").ok and inst.send("request_hint").ok
    assert inst.context["hints_used_count"] == 2
    before = observed(inst)
    r = inst.send("request_hint")
    assert isinstance(r, Rejection) and r.code == "hint_budget_exhausted"
    assert r.message == "No hints left for this rung."
    assert observed(inst) == before
    assert "request_hint" not in [e.name for e in inst.accepted_events()]


def test_full_episode_from_the_start() -> None:
    inst = load("attempt_v2").start({"hint_budget": 3})
    steps: list[tuple[str, dict[str, Any] | None]] = [
        ("submit_explanation", explanation("NEEDS_WORK")),
        ("submit_explanation", explanation("PASS")),
        ("choose_pattern", choice(4, **BUILDER)),
        ("request_hint", None),
        ("submit_code", {"code": "v1"}),
        ("tests_run", {"results": [{"input": "1", "expected": "2", "actual": "3", "passed": False}],
                       "all_passed": False}),
        ("explain_failure", {"test_index": 0, "user_explanation": "off by one",
                             "ai_guidance": "check bounds", "at": "t"}),
        ("retry", None),
        ("submit_code", {"code": "v2"}),
        ("tests_run", {"results": [], "all_passed": True}),
        ("submit_reflection", {"cues_next_time": ["bounds"], "invariant_summary": "i < j"}),
    ]  # fmt: skip
    states = []
    for event, payload in steps:
        r = inst.send(event, payload)
        assert r.ok, (event, r)
        states.append(inst.state)
    assert states == [
        "UNDERSTAND", "PLAN", "IMPLEMENT", "IMPLEMENT", "VERIFY", "VERIFY", "VERIFY",
        "IMPLEMENT", "VERIFY", "REFLECT", "COMPLETE",
    ]  # fmt: skip
    ctx = inst.context
    assert ctx["code"] == "v2" and ctx["hints_used_count"] == 1
    assert ctx["verify"]["failure_explanations"][0]["user_explanation"] == "off by one"
    assert ctx["reflect"]["cues_next_time"] == ["bounds"] and inst.meta["label"] == "Complete"
    assert len(inst.history) == len(steps) + 1
