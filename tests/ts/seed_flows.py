"""The flows the TypeScript host tests run in both runtimes (the seed flows, the statechart
examples and tests/testing/flows/reminders.flow), their start contexts, and their events files
(tests/ts/events/, one per flow)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flowc.compiler.cli import main

ROOT = Path(__file__).resolve().parents[2]
EVENTS = Path(__file__).resolve().parent / "events"
#: The seed flows, the examples, and a flow with internal and scheduled events (IR version 4).
FLOWS = sorted(
    [
        *ROOT.glob("flows/*.flow"),
        *ROOT.glob("flows/examples/*.flow"),
        ROOT / "tests" / "testing" / "flows" / "reminders.flow",
    ]
)
#: The simulated start of every run: 2025-01-01T00:00:00Z.
NOW = "2025-01-01T00:00:00Z"
NOW_MS = 1735689600000

#: The start context each seed flow needs (its required fields); the examples need none.
CONTEXTS: dict[str, dict[str, Any]] = {
    "collab_skills": {"project": "p", "session": "s"},
    "interactive_stage": {"stage": "discuss", "finalization_tool": "finish"},
    "rfp_workspace": {"project": "acme"},
    "stage_questions": {"solution_id": "sol-1"},
}


def compile_flows(out: Path) -> dict[str, Path]:
    """Every flow compiled by `flowc compile` into `out`, by file stem."""
    paths: dict[str, Path] = {}
    for flow in FLOWS:
        target = out / f"{flow.stem}.json"
        assert main(["compile", str(flow), "-o", str(target)]) == 0
        paths[flow.stem] = target
    return paths
