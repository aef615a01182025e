"""A tiny engine stand-in for store tests: a counter instance whose steps add to `count`.

Keeps the store tests independent of the real engine: they check what the store promises
(atomic steps, versions, gap-free history, keys, timers), whatever runs inside a step.
"""

from __future__ import annotations

from collections.abc import Sequence

from flowc.runtime.store import (
    Change,
    HistoryEntry,
    InstanceRecord,
    NewInstance,
    Reject,
    StepFn,
    TimerClaim,
    TimerSpec,
)


class Clock:
    """A clock for store tests that moves only when told (the store needs just a callable)."""

    def __init__(self, start: float = 1735689600.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> float:
        self.now += seconds
        return self.now


def counter(
    instance_id: str,
    *,
    state: str = "COUNTING",
    timers: Sequence[TimerSpec] = (),
    flow: str = "counter",
) -> NewInstance:
    return NewInstance(
        id=instance_id,
        flow=flow,
        flow_version=1,
        graph_hash="sha256:toy",
        state=state,
        snapshot={"count": 0, "fired": [], "note": "é ✓"},
        timers=timers,
    )


def bump(by: int = 1, *, at: float = 0.0, timers: Sequence[TimerSpec] | None = None) -> StepFn:
    def step(record: InstanceRecord) -> Change:
        count = record.snapshot["count"] + by
        snapshot = dict(record.snapshot, count=count)
        return Change(
            snapshot=snapshot,
            state=record.state,
            outcome={"ok": True, "count": count, "version": record.version + 1},
            history=[HistoryEntry(at, record.state, record.state, "inc", {"by": by})],
            timers=timers,
        )

    return step


def move(target: str, *, timers: Sequence[TimerSpec] | None = ()) -> StepFn:
    """Go to `target`; by default leaving every timer behind (the new state armed none)."""

    def step(record: InstanceRecord) -> Change:
        return Change(
            snapshot=record.snapshot,
            state=target,
            outcome={"ok": True, "state": target},
            history=[HistoryEntry(0.0, record.state, target, "move", None, "because")],
            timers=timers,
        )

    return step


def refuse(code: str = "no") -> StepFn:
    def step(record: InstanceRecord) -> Reject:
        return Reject({"ok": False, "error": code, "state": record.state})

    return step


def fire(claim: TimerClaim) -> StepFn:
    """A timer firing: record it in the snapshot and the history; remaining timers stay."""

    def step(record: InstanceRecord) -> Change:
        fired = [*record.snapshot["fired"], claim.timer_id]
        return Change(
            snapshot=dict(record.snapshot, fired=fired),
            state=record.state,
            outcome={"ok": True, "fired": claim.timer_id},
            history=[
                HistoryEntry(claim.deadline, record.state, record.state, f"timer:{claim.timer_id}")
            ],
        )

    return step
