"""Seed 001, RFP presales workspace (flows/rfp_workspace.flow): the Success Criteria, `history`,
`back` with and without force, the Q&A round, the decision log, and old status files."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from flowc.runtime import FakeClock, Instance, Rejection, StepResult
from flowc.runtime.journal import JournalFile

from .conftest import load, observed

FORWARD = ["ANALYZING", "QNA_GENERATION", "WAITING_CLIENT", "DRAFTING", "PROPOSAL_UPDATE"]


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock(1741942800.0)  # 2025-03-14T09:00:00Z


@pytest.fixture
def inst(clock: FakeClock) -> Instance:
    return load("rfp_workspace", clock).start({"project": "acme"})


def walk(inst: Instance, *phases: str) -> None:
    for phase in phases:
        r = inst.goto(phase)
        assert r.ok, r


def test_existing_forward_transitions_still_work(inst: Instance) -> None:
    walk(inst, *FORWARD, "SCOPE_FREEZE")
    assert inst.is_final
    assert inst.context["qna_round"] == 1 and inst.context["backward_moves"] == 0
    assert inst.goto("ANALYZING").code == "instance_final"  # type: ignore[union-attr]


def test_client_answered_to_analyzing_for_reanalysis(inst: Instance) -> None:
    walk(inst, "ANALYZING", "QNA_GENERATION", "WAITING_CLIENT", "CLIENT_ANSWERED")
    before = observed(inst)
    refused = inst.goto("ANALYZING")
    assert isinstance(refused, Rejection) and refused.code == "backward_requires_force"
    assert refused.data == {"from": "CLIENT_ANSWERED", "to": "ANALYZING"}
    assert observed(inst) == before
    moved = inst.goto("ANALYZING", force=True, reason="client changed the scope")
    assert moved.ok and inst.state == "ANALYZING" and inst.context["backward_moves"] == 1


def test_multi_round_qna_loop_counts_rounds(inst: Instance) -> None:
    walk(inst, "ANALYZING", "QNA_GENERATION", "WAITING_CLIENT", "DRAFTING", "PROPOSAL_UPDATE")
    assert inst.context["qna_round"] == 1
    for expected in (2, 3):
        assert inst.goto("QNA_GENERATION", force=True).ok
        assert inst.context["qna_round"] == expected
        walk(inst, "WAITING_CLIENT", "CLIENT_ANSWERED", "PROPOSAL_UPDATE")
    walk(inst, "SCOPE_FREEZE")
    assert inst.context["backward_moves"] == 2


def test_back_requires_explicit_intent(inst: Instance) -> None:
    walk(inst, "ANALYZING", "QNA_GENERATION", "WAITING_CLIENT", "CLIENT_ANSWERED")
    before = observed(inst)
    refused = inst.back()
    assert isinstance(refused, Rejection) and refused.code == "backward_requires_force"
    # The most recent phase a backward edge leads to: QNA_GENERATION (visited after ANALYZING).
    assert refused.data == {"from": "CLIENT_ANSWERED", "to": "QNA_GENERATION"}
    assert observed(inst) == before
    back = inst.back(force=True, reason="more questions")
    assert isinstance(back, StepResult) and back.kind == "back" and back.to == "QNA_GENERATION"
    assert inst.context["qna_round"] == 2
    # From a phase with no backward edge there is nothing to go back to.
    assert inst.back(force=True).code == "no_previous_state"  # type: ignore[union-attr]


def test_backward_moves_are_limited_per_session(clock: FakeClock) -> None:
    inst = load("rfp_workspace", clock).start({"project": "p", "max_backward_moves": 1})
    walk(inst, "ANALYZING", "QNA_GENERATION", "WAITING_CLIENT", "CLIENT_ANSWERED")
    assert inst.goto("ANALYZING", force=True).ok
    walk(inst, "QNA_GENERATION", "WAITING_CLIENT", "CLIENT_ANSWERED")
    refused = inst.goto("QNA_GENERATION", force=True)
    assert isinstance(refused, Rejection) and refused.code == "guard_failed"
    assert refused.message == (
        "Backward transitions are limited per session, and this workspace has used them all."
    )


def test_history_returns_the_full_phase_log(inst: Instance, clock: FakeClock) -> None:
    clock.advance(minutes=5)
    inst.goto("ANALYZING", reason="RFP read")
    clock.advance(hours=1)
    inst.goto("QNA_GENERATION")
    phase_history = [
        {"phase": h.target, "entered": h.at.isoformat(), "reason": h.reason} for h in inst.history
    ]
    assert phase_history == [
        {"phase": "RFP_RECEIVED", "entered": "2025-03-14T09:00:00+00:00", "reason": None},
        {"phase": "ANALYZING", "entered": "2025-03-14T09:05:00+00:00", "reason": "RFP read"},
        {"phase": "QNA_GENERATION", "entered": "2025-03-14T10:05:00+00:00", "reason": None},
    ]


def test_decision_log_gets_an_entry_on_every_transition(inst: Instance, tmp_path: Path) -> None:
    log = tmp_path / "07_decisions.md"
    JournalFile.attach(inst, "decisions", log)
    walk(inst, "ANALYZING", "QNA_GENERATION", "WAITING_CLIENT", "CLIENT_ANSWERED")
    inst.goto("ANALYZING", force=True, reason="Scope changed")
    # A status update is not a phase transition: no entry (NF3).
    assert inst.send("update_status", {"next_action": "re-estimate"}).ok
    text = log.read_text(encoding="utf-8")
    assert text.count("## 2025-03-14 — Phase:") == 5
    assert "## 2025-03-14 — Phase: RFP_RECEIVED -> ANALYZING\n" in text
    assert "- **Decision:** Phase progression\n" in text
    assert (
        "## 2025-03-14 — Phase: CLIENT_ANSWERED -> ANALYZING\n"
        "- **Decision:** Scope changed\n"
        "- **Impact:** Backward transition: ANALYZING is revisited\n"
    ) in text


def test_decision_log_is_idempotent(inst: Instance, tmp_path: Path, clock: FakeClock) -> None:
    log = tmp_path / "07_decisions.md"
    walk(inst, "ANALYZING")
    saved = inst.snapshot()
    sink = JournalFile.attach(inst, "decisions", log)
    step = inst.goto("QNA_GENERATION", key="req-1")
    assert isinstance(step, StepResult)
    written = log.read_text(encoding="utf-8")
    # The same request again: the key replays the earlier step, nothing is written.
    assert inst.goto("QNA_GENERATION", key="req-1").replayed  # type: ignore[union-attr]
    assert sink.write(step) is False
    # A crash before the status file was saved: the step is replayed from the older snapshot.
    again = load("rfp_workspace", clock).restore(saved)
    JournalFile.attach(again, "decisions", log)
    assert again.goto("QNA_GENERATION").ok
    assert log.read_text(encoding="utf-8") == written
    # Re-entering the same phase has no edge, so it writes nothing either.
    assert again.goto("QNA_GENERATION").code == "invalid_transition"  # type: ignore[union-attr]


def test_status_updates_keep_the_phase(inst: Instance) -> None:
    walk(inst, "ANALYZING")
    r = inst.send("update_status", {"blocking_issues": ["no budget"], "assumptions": None})
    assert r.ok and inst.state == "ANALYZING"
    ctx = inst.context
    assert ctx["blocking_issues"] == ["no budget"] and ctx["assumptions"] == []
    assert ctx["next_action"] == ""


def test_old_status_without_new_fields_still_loads(clock: FakeClock) -> None:
    old = {
        "flow": "rfp_workspace",
        "version": 1,
        "state": "WAITING_CLIENT",
        "context": {"project": "acme", "blocking_issues": ["legal review"], "assumptions": []},
    }
    inst = load("rfp_workspace", clock).restore(old)
    ctx = inst.context
    assert ctx["qna_round"] == 0 and ctx["backward_moves"] == 0 and ctx["max_backward_moves"] == 5
    assert ctx["blocking_issues"] == ["legal review"]
    assert inst.goto("CLIENT_ANSWERED").ok
    assert inst.back(force=True).code == "no_previous_state"  # type: ignore[union-attr]
    assert inst.goto("QNA_GENERATION", force=True).ok and inst.context["qna_round"] == 1


ENTRY = re.compile(
    r"## (\d{4}-\d{2}-\d{2}) — Phase: ([A-Z_]+) -> ([A-Z_]+)\n"
    r"- \*\*Decision:\*\* ([^\n]+)\n"
    r"- \*\*Impact:\*\* ([^\n]+)\n"
)


def entries(text: str) -> list[tuple[str, ...]]:
    """The log as (date, from, to, decision, impact) entries; the whole text must be entries
    in the seed's three-line format and nothing else."""
    found = [m.groups() for m in ENTRY.finditer(text)]
    assert ENTRY.sub("", text) == "", f"text outside the seed's format: {ENTRY.sub('', text)!r}"
    return found


def test_decision_log_is_exactly_the_seed_format(
    inst: Instance, tmp_path: Path, clock: FakeClock
) -> None:
    log = tmp_path / "07_decisions.md"
    JournalFile.attach(inst, "decisions", log)
    walk(inst, "ANALYZING", "QNA_GENERATION", "WAITING_CLIENT", "CLIENT_ANSWERED")
    clock.advance(hours=24)
    assert inst.goto("QNA_GENERATION", force=True, reason="second round").ok
    assert inst.send("update_status", {"next_action": "send questions"}).ok
    walk(inst, "WAITING_CLIENT", "DRAFTING", "PROPOSAL_UPDATE", "SCOPE_FREEZE")
    committed = [h for h in inst.history if h.source is not None and h.source != h.target]
    found = entries(log.read_text(encoding="utf-8"))
    # Exactly one entry per committed phase transition, in order.
    assert [(f[1], f[2]) for f in found] == [(h.source, h.target) for h in committed]
    assert found[4] == (
        "2025-03-15",
        "CLIENT_ANSWERED",
        "QNA_GENERATION",
        "second round",
        "Backward transition: QNA_GENERATION is revisited",
    )
    first = ("2025-03-14", "RFP_RECEIVED", "ANALYZING", "Phase progression", "None noted")
    assert found[0] == first


def test_decision_log_follows_a_forked_history(
    inst: Instance, tmp_path: Path, clock: FakeClock
) -> None:
    """Issue 11 item 2: restoring an older snapshot and moving on reuses a seq; that step is
    still logged."""
    log = tmp_path / "07_decisions.md"
    JournalFile.attach(inst, "decisions", log)
    walk(inst, "ANALYZING", "QNA_GENERATION", "WAITING_CLIENT", "CLIENT_ANSWERED")
    saved = inst.snapshot()
    step = inst.goto("PROPOSAL_UPDATE")
    assert isinstance(step, StepResult) and step.seq == 5
    clock.advance(minutes=1)
    again = load("rfp_workspace", clock).restore(saved)
    JournalFile.attach(again, "decisions", log)
    forked = again.goto("ANALYZING", force=True, reason="scope changed")
    assert isinstance(forked, StepResult) and forked.seq == 5
    found = entries(log.read_text(encoding="utf-8"))
    assert [(f[1], f[2]) for f in found][-2:] == [
        ("CLIENT_ANSWERED", "PROPOSAL_UPDATE"),
        ("CLIENT_ANSWERED", "ANALYZING"),
    ]
    # The log ends where the workspace is.
    assert found[-1][2] == again.state == "ANALYZING"
    # Delivered again (a replay), the forked step is not written twice.
    assert JournalFile("decisions", log, instance_id=again.id).write(forked) is False
    assert len(entries(log.read_text(encoding="utf-8"))) == len(found)
