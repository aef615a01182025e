"""Seed 002, skill-routing collaboration workflow (flows/collab_skills.flow): one
`complete_skill` call advances through the routing nodes to the next skill."""

from __future__ import annotations

import json
from typing import Any

import pytest

from flowc.runtime import Instance, Rejection, StepResult

from .conftest import load, observed

ITEMS = [
    {"number": 1, "title": "API", "type": "code"},
    {"number": 2, "title": "Docs", "type": "task"},
    {"number": 3, "title": "Crash", "type": "bugfix"},
]


@pytest.fixture
def inst() -> Instance:
    return load("collab_skills").start({"project": "/src/app", "session": "s1"})


def complete(inst: Instance) -> dict[str, Any]:
    """The complete_skill tool: check the skill, send the event, answer from the meta."""
    skill = inst.meta.get("skill")
    r = inst.send("complete_skill", {"skill": skill})
    assert isinstance(r, StepResult), r
    meta, ctx = inst.meta, inst.context
    out: dict[str, Any] = {"next_skill": meta.get("skill"), "action": meta.get("action", "none")}
    names = {"item_number": "current_item", "batch_index": "current_batch"}
    params = {p: ctx[names[p]] for p in meta.get("params", [])}
    if params:
        out["params"] = params
    return out


def skills_until(inst: Instance, stop: str) -> list[str]:
    seen = []
    while inst.state != stop:
        seen.append(complete(inst)["next_skill"])
    return seen


def test_entry_and_no_items_goes_to_implementation(inst: Instance) -> None:
    assert complete(inst) == {"next_skill": "gather-session-goals", "action": "none"}
    assert complete(inst) == {"next_skill": "collab-clear", "action": "clear"}
    # One call: clear_pre_item -> work_item_router (routing node, no skill) -> ready_to_implement.
    r = inst.send("complete_skill", {"skill": "collab-clear"})
    assert isinstance(r, StepResult)
    assert (r.from_, r.via, r.to) == ("clear_pre_item", ("work_item_router",), "ready_to_implement")
    assert inst.meta["skill"] == "ready-to-implement" and inst.context["current_item"] is None


def test_each_item_type_routes_to_its_skills(inst: Instance) -> None:
    assert inst.send("set_work_items", {"items": ITEMS}).ok
    assert inst.context["total_items"] == 3
    complete(inst)  # -> gather_goals
    complete(inst)  # -> clear_pre_item
    first = complete(inst)
    assert first == {
        "next_skill": "brainstorming-exploring",
        "action": "none",
        "params": {"item_number": 1},
    }
    code_path = skills_until(inst, "clear_post_item")
    assert code_path == [
        "collab-clear", "brainstorming-clarifying", "collab-clear", "brainstorming-designing",
        "collab-clear", "brainstorming-validating", "collab-clear", "rough-draft-interface",
        "collab-clear", "rough-draft-pseudocode", "collab-clear", "rough-draft-skeleton",
        "collab-clear", "build-task-graph", "collab-clear", "rough-draft-handoff",
        "collab-clear",
    ]  # fmt: skip
    assert inst.context["documented_items"] == 1
    second = complete(inst)  # the task item
    assert second["params"] == {"item_number": 2}
    task_path = skills_until(inst, "clear_post_item")
    assert task_path[-2:] == ["task-planning", "collab-clear"]
    assert "rough-draft-interface" not in task_path
    bug = complete(inst)  # the bugfix item goes straight to debugging
    assert bug == {
        "next_skill": "systematic-debugging",
        "action": "none",
        "params": {"item_number": 3},
    }
    assert complete(inst) == {"next_skill": "collab-clear", "action": "clear"}
    assert complete(inst)["next_skill"] == "ready-to-implement"
    assert inst.context["documented_items"] == 3


def test_batches_loop_then_finish(inst: Instance) -> None:
    batches = [{"id": "b1"}, {"id": "b2", "tasks": [{"id": "t1"}]}]
    inst.send("update_session_state", {"batches": batches, "has_snapshot": True})
    skills_until(inst, "ready_to_implement")
    assert complete(inst) == {"next_skill": "collab-clear", "action": "clear"}
    assert complete(inst) == {
        "next_skill": "executing-plans",
        "action": "none",
        "params": {"batch_index": 0},
    }
    # Finishing a batch logs it (a routing node with no skill) and clears context.
    r = inst.send("complete_skill", {"skill": "executing-plans"})
    assert isinstance(r, StepResult) and r.via == ("log_batch_complete",)
    assert r.to == "clear_post_batch" and inst.meta["action"] == "clear"
    assert inst.context["completed_batches"] == ["b1"] and inst.context["current_batch"] == 1
    assert complete(inst)["params"] == {"batch_index": 1}
    complete(inst)
    assert complete(inst) == {"next_skill": "finishing-a-development-branch", "action": "none"}
    assert inst.context["completed_batches"] == ["b1", "b2"]
    assert complete(inst)["next_skill"] == "collab-cleanup"
    assert complete(inst) == {"next_skill": None, "action": "none"}
    assert inst.is_final and inst.state == "done"
    final = inst.send("complete_skill", {"skill": "x"})
    assert isinstance(final, Rejection) and final.code == "instance_final"


def test_clear_states_say_clear() -> None:
    m = load("collab_skills")
    for name in m.state_names():
        state = m.states[name]
        if name.startswith("clear_"):
            assert state.meta["action"] == "clear" and state.meta["skill"] == "collab-clear"


def test_state_survives_persistence_and_changes_are_broadcast(inst: Instance) -> None:
    messages: list[dict[str, Any]] = []
    inst.subscribe(lambda step: messages.append(json.loads(step.journal("state_changes"))))
    complete(inst)
    restored = load("collab_skills").restore(json.loads(inst.snapshot_json()))
    assert restored.state == "gather_goals"
    restored.subscribe(lambda step: messages.append(json.loads(step.journal("state_changes"))))
    complete(restored)
    assert [(m["type"], m["seq"], m["from"], m["to"]) for m in messages] == [
        ("state_changed", 1, "collab_start", "gather_goals"),
        ("state_changed", 2, "gather_goals", "clear_pre_item"),
    ]


def test_a_skill_that_is_not_the_current_one_is_refused(inst: Instance) -> None:
    """Issue 11 item 3: in brainstorm_exploring, completing systematic-debugging moves nothing."""
    assert inst.send("set_work_items", {"items": ITEMS}).ok
    complete(inst)  # -> gather_goals
    complete(inst)  # -> clear_pre_item
    complete(inst)  # -> brainstorm_exploring (item 1, code)
    assert inst.state == "brainstorm_exploring"
    before = observed(inst)
    refused = inst.send("complete_skill", {"skill": "systematic-debugging"})
    assert isinstance(refused, Rejection)
    assert refused.code == "skill_mismatch" and refused.kind == "require"
    assert refused.message == (
        "This step waits for the skill brainstorming-exploring, not systematic-debugging."
    )
    assert json.loads(json.dumps(refused.to_dict()))["error"] == "skill_mismatch"
    assert observed(inst) == before
    # The right skill still moves it on.
    assert complete(inst)["next_skill"] == "collab-clear"
