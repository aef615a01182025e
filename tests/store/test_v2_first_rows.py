"""IR version 2 as the first statecharts stop wrote it (before initial rules, done data, `for`,
`active()` and `event_name()`) still loads: a compiled chart and a snapshot taken in the middle
of its parallel review, both written by that code (`data/v2/write.py` says how), read by
today's runtime."""

from __future__ import annotations

import json
from pathlib import Path

from flowc.runtime import FakeClock, Machine, StepResult

DATA = Path(__file__).resolve().parent / "data" / "v2"
#: The fixtures' clock: 2025-01-01T00:00:00Z plus the minute `write.py` advanced.
WRITTEN_AT = 1735689600.0 + 60


def machine(clock: FakeClock) -> Machine:
    # The hash is checked on load: the file is read as it was written.
    return Machine.from_json((DATA / "pr_review.json").read_bytes(), clock=clock)


def test_the_compiled_chart_is_version_2_and_runs_as_a_chart() -> None:
    raw = json.loads((DATA / "pr_review.json").read_text())
    assert raw["ir_version"] == 2
    assert not any("initial_targets" in s or "done_data" in s for s in raw["states"])
    m = machine(FakeClock())
    assert m.chart and m.hierarchical


def test_its_snapshot_restores_writes_back_the_same_and_runs_on() -> None:
    text = (DATA / "snapshot.json").read_text().strip()
    inst = machine(FakeClock(WRITTEN_AT)).restore(text)
    assert inst.configuration == (
        "open", "progress", "review", "checks", "ci_green", "reviews", "awaiting", "activity",
        "recent",
    )  # fmt: skip
    assert inst.context == {"approvals": 1, "head": "a1", "required_approvals": 2}
    assert [h.trigger for h in inst.history] == ["start", "push", "ci_passed", "approve"]
    assert inst.snapshot_json() == text  # nothing added, nothing lost
    # The second approval completes both regions: the review's done event leads on.
    approved = inst.send("approve", {"reviewer": "bob"})
    assert isinstance(approved, StepResult) and approved.ok
    assert inst.active("mergeable") and inst.context["approvals"] == 2
    merged = inst.send("merge")
    assert isinstance(merged, StepResult) and merged.ok and inst.active("merged")
