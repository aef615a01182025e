"""The seed flows in `flows/`: each compiles with no diagnostic at all, its IR equals its golden
file, and the behaviours its seed document asks for are really in the graph.

The golden files are regenerated with `python tests/golden/regenerate.py`.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from jinja2.sandbox import ImmutableSandboxedEnvironment

from flowc.compiler.driver import compile_file
from flowc.runtime.model import CompiledFlow, Expr, State, Transition

ROOT = Path(__file__).resolve().parents[2]
FLOWS = ROOT / "flows"
GOLDEN = ROOT / "tests" / "golden"
REGENERATE = "python tests/golden/regenerate.py"

FLOW_FILES = sorted(FLOWS.glob("*.flow"))
SEED_FLOWS = {
    "stage_questions": "000_40ed67d9b2b7ace3.txt",
    "rfp_workspace": "001_47a3770c4f178595.txt",
    "collab_skills": "002_4f67b9d4c0d184fe.txt",
    "interactive_stage": "003_87337d13f2051953.txt",
    "attempt_v2": "004_9b9a5f272a94474f.txt",
}

jinja = ImmutableSandboxedEnvironment()


@cache
def compiled(name: str) -> CompiledFlow:
    result = compile_file(FLOWS / f"{name}.flow")
    assert result.flow is not None, [str(d) for d in result.diagnostics]
    return result.flow


def render(template: str, **variables: Any) -> str:
    return jinja.from_string(template).render(**variables)


def states(flow: CompiledFlow) -> dict[str, State]:
    return {s.name: s for s in flow.states}


def outgoing(flow: CompiledFlow, source: str) -> list[Transition]:
    return sorted((t for t in flow.transitions if t.source == source), key=lambda t: t.index)


def edges(flow: CompiledFlow, kind: str) -> set[tuple[str, str | None]]:
    return {(t.source, t.target) for t in flow.transitions if t.kind == kind}


def walk(expr: Expr) -> Iterator[Expr]:
    yield expr
    for arg in expr.args:
        yield from walk(arg)


def mentions(expr: Expr | None, op: str, value: object) -> bool:
    return expr is not None and any(e.op == op and e.value == value for e in walk(expr))


# ---- every flow --------------------------------------------------------------------------------


def test_every_seed_has_a_flow() -> None:
    assert {p.stem for p in FLOW_FILES} == set(SEED_FLOWS)
    for name, seed in SEED_FLOWS.items():
        header = (FLOWS / f"{name}.flow").read_text(encoding="utf-8").split("\nflow ", 1)[0]
        assert seed in header, f"{name}.flow should name its seed file in its header comment"


@pytest.mark.parametrize("path", FLOW_FILES, ids=lambda p: p.stem)
def test_flow_compiles_without_diagnostics(path: Path) -> None:
    result = compile_file(path)
    assert [f"{d.code} {d.span.line}:{d.span.column} {d.message}" for d in result.diagnostics] == []
    assert result.flow is not None
    assert result.flow.name == path.stem


@pytest.mark.parametrize("path", FLOW_FILES, ids=lambda p: p.stem)
def test_flow_ir_matches_golden(path: Path) -> None:
    golden = GOLDEN / f"{path.stem}.json"
    assert golden.exists(), f"no golden file {golden.name}; create it with `{REGENERATE}`"
    result = compile_file(path)
    assert result.flow is not None
    actual = json.loads(result.flow.to_json())
    expected = json.loads(golden.read_text(encoding="utf-8"))
    assert actual == expected, (
        f"the IR of {path.name} differs from {golden.name}; if the change is intended, "
        f"regenerate the golden files with `{REGENERATE}` and review the diff"
    )


@pytest.mark.parametrize("path", FLOW_FILES, ids=lambda p: p.stem)
def test_golden_loads_in_the_runtime(path: Path) -> None:
    text = (GOLDEN / f"{path.stem}.json").read_text(encoding="utf-8")
    flow = CompiledFlow.from_json(text)  # checks ir_version and the content hash
    assert flow.name == path.stem


# ---- seed 000: stage-based questions ---------------------------------------------------------


def test_stage_questions_valid_transitions_are_the_seeds() -> None:
    flow = compiled("stage_questions")
    assert edges(flow, "direct") == {
        ("required", "basic"),
        ("required", "open"),
        ("basic", "advanced"),
        ("basic", "open"),
        ("advanced", "open"),
    }
    # Completing `open` is the outcome.
    assert edges(flow, "event") >= {("open", "ready_for_manifest_generation")}
    assert states(flow)["ready_for_manifest_generation"].kind == "final"
    # A stage is left only once it was answered or skipped.
    for t in flow.transitions:
        if t.kind == "direct":
            assert mentions(t.guard, "lit", t.source), t


def test_stage_questions_skip_rules() -> None:
    flow = compiled("stage_questions")
    rejects = {(t.source, t.code) for t in flow.transitions if t.kind == "reject"}
    assert rejects == {("required", "required_empty"), ("open", "open_answer_required")}
    # basic and advanced accept {} (an explicit skip) and record it.
    for stage in ("basic", "advanced"):
        [answer] = [t for t in outgoing(flow, stage) if t.event == "answer"]
        assert answer.guard is None and answer.target == stage and answer.actions


def test_stage_questions_error_messages() -> None:
    flow = compiled("stage_questions")
    [event] = flow.events
    [requirement] = event.requires
    assert requirement.code == "stage_mismatch"
    # The seed's `expected` / `received` fields are the refusal's data, and its message's.
    assert requirement.data is not None and requirement.data.op == "map"
    keys = [a.value for a in requirement.data.args[::2]]
    assert keys == ["expected", "received"]
    assert render(requirement.message, expected="basic", received="advanced") == (
        "You're in 'basic' stage but provided 'advanced'. "
        "Complete basic questions first or skip them explicitly."
    )
    jump = {"from": "required", "to": "advanced"}
    assert render(flow.messages["invalid_transition"], **jump) == (
        "Cannot jump from 'required' to 'advanced'. "
        "Must complete 'basic' stage first or skip to 'open'."
    )


# ---- seed 001: RFP workspace -----------------------------------------------------------------


def test_rfp_backward_edges_are_exactly_the_seeds() -> None:
    flow = compiled("rfp_workspace")
    back = {(t.source, t.target) for t in flow.transitions if t.back}
    assert back == {
        ("CLIENT_ANSWERED", "ANALYZING"),
        ("CLIENT_ANSWERED", "QNA_GENERATION"),
        ("PROPOSAL_UPDATE", "QNA_GENERATION"),
    }
    assert edges(flow, "direct") == back | {
        ("RFP_RECEIVED", "ANALYZING"),
        ("ANALYZING", "QNA_GENERATION"),
        ("QNA_GENERATION", "WAITING_CLIENT"),
        ("WAITING_CLIENT", "DRAFTING"),
        ("WAITING_CLIENT", "CLIENT_ANSWERED"),
        ("DRAFTING", "PROPOSAL_UPDATE"),
        ("CLIENT_ANSWERED", "PROPOSAL_UPDATE"),
        ("PROPOSAL_UPDATE", "SCOPE_FREEZE"),
    }
    assert states(flow)["SCOPE_FREEZE"].kind == "final"


def test_rfp_qna_round_counts_entries_and_old_snapshots_load() -> None:
    flow = compiled("rfp_workspace")
    entry = states(flow)["QNA_GENERATION"].entry
    assert [(a.op, a.target, a.value.value) for a in entry] == [("add", ("qna_round",), 1)]
    fields = {f.name: f for f in flow.context}
    # Fields added by this version have defaults, so older status files still load.
    assert not fields["qna_round"].required and fields["qna_round"].default == 0
    assert [f.name for f in flow.context if f.required] == ["project"]


def test_rfp_decision_log_entry() -> None:
    flow = compiled("rfp_workspace")
    [journal] = flow.journals
    assert journal.name == "decisions"
    at = datetime(2025, 3, 14, 9, 30)
    forward = {"source": "WAITING_CLIENT", "target": "CLIENT_ANSWERED", "reason": None}
    text = render(journal.template, **forward, at=at, seq=7)
    assert "## 2025-03-14 — Phase: WAITING_CLIENT -> CLIENT_ANSWERED\n" in text
    assert "- **Decision:** Phase progression\n" in text
    assert "- **Impact:** None noted\n" in text
    back = render(
        journal.template,
        source="CLIENT_ANSWERED",
        target="ANALYZING",
        reason="Scope changed",
        at=at,
        seq=8,
    )
    assert "- **Decision:** Scope changed\n" in back and "Backward transition" in back
    # A status update (`-> self`) writes no entry.
    assert render(journal.template, source="DRAFTING", target="DRAFTING", at=at, seq=9) == ""


# ---- seed 002: collaboration skills ----------------------------------------------------------

SEED_002_STATE_IDS = {
    "collab-start", "gather-goals", "clear-pre-item", "work-item-router",
    "brainstorm-exploring", "clear-bs1", "brainstorm-clarifying", "clear-bs2",
    "brainstorm-designing", "clear-bs3", "brainstorm-validating", "item-type-router",
    "clear-pre-rough", "rough-draft-interface", "clear-rd1", "rough-draft-pseudocode",
    "clear-rd2", "rough-draft-skeleton", "clear-rd3", "build-task-graph", "clear-rd4",
    "rough-draft-handoff", "task-planning", "systematic-debugging", "ready-to-implement",
    "clear-pre-execute", "batch-router", "execute-batch", "log-batch-complete",
    "clear-post-batch", "clear-post-item", "workflow-complete", "cleanup", "done",
}  # fmt: skip


def test_collab_states_are_the_seeds_state_ids() -> None:
    flow = compiled("collab_skills")
    leaves = [s for s in flow.states if s.kind != "compound"]
    ids = {s.meta["id"] for s in leaves}
    assert ids == SEED_002_STATE_IDS
    for s in leaves:
        assert s.name == str(s.meta["id"]).replace("-", "_")


def test_collab_compound_states_are_the_seeds_groups() -> None:
    """The seed groups its state ids (brainstorming, rough draft, execution): the flow's
    compound states hold those groups, and the states of one work item."""
    flow = compiled("collab_skills")
    children: dict[str | None, list[str]] = {}
    for s in flow.states:
        children.setdefault(s.parent, []).append(s.name)
    compounds = {s.name: s for s in flow.states if s.kind == "compound"}
    assert set(compounds) == {"work_item", "brainstorming", "rough_draft", "execution"}
    assert children["work_item"] == [
        "brainstorming", "rough_draft", "task_planning", "systematic_debugging",
    ]  # fmt: skip
    assert children["brainstorming"] == [
        "brainstorm_exploring", "clear_bs1", "brainstorm_clarifying", "clear_bs2",
        "brainstorm_designing", "clear_bs3", "brainstorm_validating", "item_type_router",
    ]  # fmt: skip
    assert children["rough_draft"] == [
        "clear_pre_rough", "rough_draft_interface", "clear_rd1", "rough_draft_pseudocode",
        "clear_rd2", "rough_draft_skeleton", "clear_rd3", "build_task_graph", "clear_rd4",
        "rough_draft_handoff",
    ]  # fmt: skip
    assert children["execution"] == [
        "clear_pre_execute", "batch_router", "execute_batch", "log_batch_complete",
        "clear_post_batch",
    ]  # fmt: skip
    for s in compounds.values():  # groups, not states a skill runs in
        assert "skill" not in s.meta and "id" not in s.meta
    # The item's number is recorded once, on entering the item, not on each route into it.
    (entry,) = compounds["work_item"].entry
    assert entry.target == ("current_item",)
    assert all(
        a.target != ("current_item",)
        for t in outgoing(flow, "work_item_router")[1:]
        for a in t.actions
    )


def test_collab_routing_nodes_are_choice_states_without_skill() -> None:
    flow = compiled("collab_skills")
    choice = {s.name for s in flow.states if s.kind == "choice"}
    assert choice == {"work_item_router", "item_type_router", "batch_router", "log_batch_complete"}
    for s in flow.states:
        if s.kind == "normal":
            assert isinstance(s.meta.get("skill"), str), s.name
            assert s.meta["action"] == ("clear" if s.name.startswith("clear_") else "none")
        else:
            assert "skill" not in s.meta, s.name
    clear = {s.meta["skill"] for s in flow.states if s.name.startswith("clear_")}
    assert clear == {"collab-clear"}


def test_collab_one_complete_call_per_skill_state() -> None:
    flow = compiled("collab_skills")
    for s in flow.states:
        completes = [t for t in outgoing(flow, s.name) if t.event == "complete_skill"]
        if s.kind == "normal":
            assert len(completes) == 1 and completes[0].guard is None, s.name
        else:
            assert completes == [], s.name


def test_collab_routing_guards() -> None:
    flow = compiled("collab_skills")
    work = outgoing(flow, "work_item_router")
    # Code and task items enter the work item at its initial leaf, brainstorm_exploring.
    initial = [
        s.name for s in flow.states if s.initial and s.parent in ("work_item", "brainstorming")
    ]
    assert initial == ["brainstorming", "brainstorm_exploring"]
    assert [t.target for t in work] == [
        "ready_to_implement",
        "work_item",
        "work_item",
        "systematic_debugging",
    ]
    # no_items_remaining, then item_type code / task, else bugfix
    assert mentions(work[0].guard, "ctx", "total_items")
    assert mentions(work[1].guard, "lit", "code") and mentions(work[2].guard, "lit", "task")
    assert work[-1].kind == "else"
    batch = outgoing(flow, "batch_router")
    assert [(t.kind, t.target) for t in batch] == [
        ("choice", "execute_batch"),
        ("else", "workflow_complete"),
    ]
    assert mentions(batch[0].guard, "ctx", "batches")


# ---- seed 003: interactive stage -------------------------------------------------------------


def test_interactive_stage_tools_per_phase() -> None:
    flow = compiled("interactive_stage")
    by_name = states(flow)
    assert by_name["DISCUSS"].meta["tools"] == ["ready_to_summarize"]
    assert by_name["DISCUSS"].meta["tool_groups"] == ["research"]
    assert by_name["SUMMARIZE"].meta["tools"] == []
    assert by_name["SUMMARIZE"].meta["tool_groups"] == []
    assert by_name["SERIALIZE"].meta["tool_groups"] == ["finalization"]
    assert by_name["SERIALIZE"].meta["tool_choice"] == "required"
    # Everything a phase does not allow is refused by the inherited default rule.
    for phase in ("DISCUSS", "SUMMARIZE", "SERIALIZE"):
        last_tool_rule = [t for t in outgoing(flow, phase) if t.event == "tool_call"][-1]
        assert last_tool_rule.kind == "reject" and last_tool_rule.inherited
        assert last_tool_rule.code == "tool_not_available"


def test_interactive_stage_exits_and_retry_loop() -> None:
    flow = compiled("interactive_stage")
    assert states(flow)["START"].kind == "choice" and flow.initial == "START"
    discuss_exits = [t for t in outgoing(flow, "DISCUSS") if t.target == "SUMMARIZE"]
    assert [t.event for t in discuss_exits] == ["tool_call", "llm_turn", "user_input"]
    assert mentions(discuss_exits[0].guard, "lit", "ready_to_summarize")
    assert mentions(discuss_exits[1].guard, "ctx", "max_discuss_turns")
    assert mentions(discuss_exits[2].guard, "lit", "/done")
    validated = [t for t in outgoing(flow, "SERIALIZE") if t.event == "validated"]
    assert [t.target for t in validated] == ["DONE", "SERIALIZE", "FAILED"]
    assert mentions(validated[1].guard, "ctx", "validation_retries")
    defaults = {f.name: f.default for f in flow.context}
    assert defaults["validation_retries"] == 3 and defaults["max_discuss_turns"] == 10


def test_interactive_stage_validation_feedback_keeps_the_seeds_order() -> None:
    flow = compiled("interactive_stage")
    feedback = {
        "result": "validation_failed",
        "issues": {
            "invalid": [
                {
                    "field": "audience",
                    "provided": '""',
                    "problem": "empty string not allowed",
                    "requirement": "non-empty string, e.g. 'adult', 'young adult'",
                }
            ],
            "missing": [{"field": "scope.target_word_count", "requirement": "integer >= 1000"}],
            "unknown": ["passages", "word_count"],
        },
        "issue_count": 4,
        "action": "Call submit_dream() with corrected data. Unknown fields may be typos.",
    }
    text = render(flow.templates["validation_feedback"], context={"feedback": feedback})
    parsed = json.loads(text)
    assert parsed["issues"]["invalid"][0]["provided"] == ""
    parsed["issues"]["invalid"][0]["provided"] = '""'
    assert parsed == feedback
    assert list(json.loads(text)) == ["result", "issues", "issue_count", "action"]
    prompt = flow.templates["system_prompt"]
    assert prompt.index("{{ mode_instructions }}") < prompt.index("{{ mode_reminder }}")
    assert "ready_to_summarize()" in render(
        flow.templates["mode_instructions"], context={"mode": "INTERACTIVE", "stage": "dream"}
    )
    assert render(flow.templates["mode_reminder"], context={"mode": "DIRECT"}) == ""


# ---- seed 004: attempt v2 --------------------------------------------------------------------

#: The seed's state table: (current state, trigger, next state).
SEED_004_TABLE = [
    ("UNDERSTAND", "submit_explanation", "UNDERSTAND"),
    ("UNDERSTAND", "submit_explanation", "PLAN"),
    ("UNDERSTAND", "skip", "PLAN"),
    ("PLAN", "suggest_patterns", "PLAN"),
    ("PLAN", "choose_pattern", "PLAN"),
    ("PLAN", "choose_pattern", "IMPLEMENT"),
    ("PLAN", "skip", "IMPLEMENT"),
    ("IMPLEMENT", "submit_code", "VERIFY"),
    ("IMPLEMENT", "request_hint", "IMPLEMENT"),
    ("VERIFY", "tests_run", "VERIFY"),
    ("VERIFY", "tests_run", "REFLECT"),
    ("VERIFY", "retry", "IMPLEMENT"),
    ("REFLECT", "submit_reflection", "COMPLETE"),
    ("REFLECT", "skip", "COMPLETE"),
]


@pytest.mark.parametrize("row", SEED_004_TABLE, ids=lambda r: "-".join(r))
def test_attempt_state_table_row(row: tuple[str, str, str]) -> None:
    source, event, target = row
    flow = compiled("attempt_v2")
    found = [
        t
        for t in flow.transitions
        if (t.source, t.event, t.target) == row and t.kind == "event" and not t.inherited
    ]
    assert found, f"no transition {source} --{event}--> {target}"


def test_attempt_guards_on_verdicts_modes_and_hints() -> None:
    flow = compiled("attempt_v2")

    def rule(source: str, event: str, target: str) -> Transition:
        return next(
            t
            for t in outgoing(flow, source)
            if t.event == event and t.target == target and not t.inherited
        )

    assert mentions(rule("UNDERSTAND", "submit_explanation", "PLAN").guard, "lit", "PASS")
    for source, target in (("UNDERSTAND", "PLAN"), ("PLAN", "IMPLEMENT")):
        assert mentions(rule(source, "skip", target).guard, "lit", "EXPERT")
    assert rule("REFLECT", "skip", "COMPLETE").guard is None  # anyone may skip reflection
    discovery = rule("PLAN", "choose_pattern", "PLAN")
    assert mentions(discovery.guard, "lit", "BEGINNER")
    assert mentions(discovery.guard, "event", "confidence")
    hint = rule("IMPLEMENT", "request_hint", "IMPLEMENT")
    assert mentions(hint.guard, "ctx", "hint_budget")
    assert [(a.op, a.target) for a in hint.actions] == [("add", ("hints_used_count",))]
    # Beginners are refused a skip wherever it is not part of the step.
    for step in ("UNDERSTAND", "PLAN", "IMPLEMENT", "VERIFY"):
        codes = [t.code for t in outgoing(flow, step) if t.event == "skip" and t.kind == "reject"]
        assert codes == ["skip_not_allowed", "skip_not_available"], step
