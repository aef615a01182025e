"""Seed 000, stage-based question flow (flows/stage_questions.flow): the host's answerQuestion
tool sends `answer(stage, answers)` and then goes to the next stage."""

from __future__ import annotations

from typing import Any

import pytest

from flowc.runtime import Instance, Rejection, StepResult

from .conftest import load, observed


@pytest.fixture
def inst() -> Instance:
    return load("stage_questions").start({"solution_id": "sol_2025-07-02T134102_b665a82ca41d"})


def answer(inst: Instance, stage: str, answers: dict[str, str]) -> Any:
    return inst.send("answer", {"stage": stage, "answers": answers})


def respond(inst: Instance) -> dict[str, Any]:
    """The seed's response body, built from the instance as the flow's header describes."""
    meta = inst.meta
    return {
        "status": meta["status"],
        "currentStage": inst.state,
        "nextStage": meta.get("next_stage"),
    }


def test_happy_path_through_every_stage(inst: Instance) -> None:
    assert respond(inst) == {
        "status": "stage_questions",
        "currentStage": "required",
        "nextStage": "basic",
    }
    assert answer(inst, "required", {"name": "shop"}).ok
    assert inst.goto(inst.meta["next_stage"]).ok
    assert answer(inst, "basic", {"db": "postgres"}).ok and inst.goto("advanced").ok
    assert answer(inst, "advanced", {"replicas": "3"}).ok and inst.goto("open").ok
    done = answer(inst, "open", {"open": "nothing else"})
    assert isinstance(done, StepResult) and done.to == "ready_for_manifest_generation"
    assert inst.is_final
    assert respond(inst)["status"] == "ready_for_manifest_generation"
    assert inst.meta["next_action"] == "generateManifests"
    assert inst.context["answers"] == {
        "required": {"name": "shop"},
        "basic": {"db": "postgres"},
        "advanced": {"replicas": "3"},
        "open": {"open": "nothing else"},
    }


def test_required_cannot_be_skipped(inst: Instance) -> None:
    before = observed(inst)
    empty = answer(inst, "required", {})
    assert isinstance(empty, Rejection) and empty.code == "required_empty"
    assert empty.message == "Required questions cannot be skipped."
    # Nor can the caller move on without answering.
    moving = inst.goto("basic")
    assert isinstance(moving, Rejection) and moving.code == "guard_failed"
    assert moving.message == (
        "Required questions cannot be skipped: answer at least one before moving on."
    )
    assert observed(inst) == before


def test_empty_answers_skip_basic_and_advanced(inst: Instance) -> None:
    answer(inst, "required", {"q": "a"})
    inst.goto("basic")
    assert inst.goto("advanced").code == "guard_failed"  # type: ignore[union-attr]  # not yet
    assert answer(inst, "basic", {}).ok  # explicit skip
    assert inst.goto("advanced").ok
    assert answer(inst, "advanced", {}).ok and inst.goto("open").ok
    assert inst.context["answers"]["basic"] == {} and inst.context["answers"]["advanced"] == {}


def test_open_completes_with_na(inst: Instance) -> None:
    answer(inst, "required", {"q": "a"})
    inst.goto("open")  # required -> open is a valid skip ahead
    refused = answer(inst, "open", {})
    assert isinstance(refused, Rejection) and refused.code == "open_answer_required"
    done = answer(inst, "open", {"open": "N/A"})
    assert done.ok and inst.state == "ready_for_manifest_generation" and inst.is_final


@pytest.mark.parametrize("hot_after", [0, 32], ids=["generated", "general"])
def test_stage_mismatch_is_the_seeds_error(hot_after: int) -> None:
    machine = load("stage_questions")
    machine.hot_after = hot_after
    inst = machine.start({"solution_id": "s1"})
    answer(inst, "required", {"q": "a"})
    inst.goto("basic")
    before = observed(inst)
    r = answer(inst, "advanced", {"x": "y"})
    assert isinstance(r, Rejection)
    # The flow's `require ... with {...}` gives `expected` and `received`: the host's
    # stage_error body is the rejection's code, data and message as they are.
    assert r.data == {"expected": "basic", "received": "advanced"}
    body = {"status": "stage_error", "error": r.code, **r.data, "message": r.message}
    assert body == {
        "status": "stage_error",
        "error": "stage_mismatch",
        "expected": "basic",
        "received": "advanced",
        "message": "You're in 'basic' stage but provided 'advanced'. "
        "Complete basic questions first or skip them explicitly.",
    }
    assert observed(inst) == before


def test_invalid_transition_is_the_seeds_error(inst: Instance) -> None:
    answer(inst, "required", {"q": "a"})
    r = inst.goto("advanced")
    assert isinstance(r, Rejection)
    data = r.to_dict()
    body = {"status": "stage_error", **{k: data[k] for k in ("error", "from", "to", "message")}}
    assert body == {
        "status": "stage_error",
        "error": "invalid_transition",
        "from": "required",
        "to": "advanced",
        "message": "Cannot jump from 'required' to 'advanced'. "
        "Must complete 'basic' stage first or skip to 'open'.",
    }


@pytest.mark.parametrize(
    ("source", "target"),
    [("required", "basic"), ("required", "open"), ("basic", "advanced"), ("basic", "open"),
     ("advanced", "open")],
)  # fmt: skip
def test_valid_transitions(source: str, target: str) -> None:
    m = load("stage_questions")
    inst = m.restore(
        {
            "flow": "stage_questions",
            "state": source,
            "context": {"solution_id": "s", "answers": {source: {}}},
        }
    )
    assert target in inst.allowed_targets()
    assert inst.goto(target).ok and inst.state == target


def test_no_other_jumps() -> None:
    m = load("stage_questions")
    stages = ["required", "basic", "advanced", "open"]
    valid = {("required", "basic"), ("required", "open"), ("basic", "advanced"),
             ("basic", "open"), ("advanced", "open")}  # fmt: skip
    for source in stages:
        ctx = {"solution_id": "s", "answers": {s: {"q": "a"} for s in stages}}
        for target in [*stages, "ready_for_manifest_generation"]:
            if (source, target) in valid:
                continue
            inst = m.restore({"flow": "stage_questions", "state": source, "context": ctx})
            r = inst.goto(target)
            assert isinstance(r, Rejection) and r.code == "invalid_transition", (source, target)
