"""Re-running a stored instance's recorded steps in memory: replay, fork and context diffs.

A store keeps every committed step as a history row (kind, source, target, event, payload,
reason, time) and, since the start rows carry it, the context the instance was started with.
`replay_rows` restores nothing: it starts a fresh instance of a machine with that context on a
clock set to the start row's time, then feeds it each later row as what it was (an event, a
go-to, a back, a timer firing) at the row's own time. What the run does is compared with what
was recorded; the first step that differs stops it.

Nothing here writes: the effects a re-run step emits are only reported on its `ReplayedStep`
(they were put in the outbox when the step first ran, and a re-run never reaches a store).
The same re-run gives the context after every step (the inspector's diffs) and the instance
as it was after step N (`DurableFlows.fork`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from flowc.runtime.clock import FakeClock
from flowc.runtime.instance import Instance
from flowc.runtime.machine import Machine
from flowc.runtime.rejections import Rejection
from flowc.runtime.steps import Outcome, StepResult
from flowc.runtime.store.types import HistoryRow, Json

#: The key of a start row's payload that holds the context the instance was started with.
START_CONTEXT = "context"


class NotReplayable(Exception):
    """The rows cannot be re-run: the start row does not record the starting context (rows
    written before it did), or the history does not begin with a start row."""


@dataclass(frozen=True, slots=True)
class ReplayedStep:
    """One recorded row and what re-running it gave: `context` after the step (None when the
    re-run refused or differed), `difference` a sentence when it did not match the row."""

    row: HistoryRow
    context: dict[str, Json] | None
    difference: str | None = None
    rules_taken: tuple[int, ...] | None = None
    effects: list[dict[str, Json]] = field(default_factory=list)
    #: the re-run's own step (for its journals); None for the start and a refused re-run
    step: StepResult | None = None


def start_payload(context: Mapping[str, Any] | None) -> dict[str, Json]:
    """The payload a start row records: the context as given to `start` (defaults unfilled)."""
    return {START_CONTEXT: dict(context or {})}


def start_context(row: HistoryRow) -> dict[str, Json]:
    """The starting context a start row records; `NotReplayable` if it records none."""
    if row.kind not in (None, "start") or row.source is not None:
        raise NotReplayable(f"the history begins with a {row.kind or row.trigger} step")
    if not isinstance(row.payload, Mapping) or not isinstance(
        row.payload.get(START_CONTEXT), Mapping
    ):
        raise NotReplayable(
            "the start row does not record the starting context (it was written by a flowc "
            "older than replay)"
        )
    return dict(row.payload[START_CONTEXT])


def _kind(row: HistoryRow) -> str:
    if row.kind:
        return row.kind
    if row.source is None:
        return "start"
    return row.trigger if row.trigger in ("goto", "back", "timer") else "event"


def _difference(row: HistoryRow, step: StepResult) -> str | None:
    want = (row.source, row.target, tuple(row.via))
    got = (step.source, step.target, tuple(step.via))
    if want != got:
        return (
            f"step {row.seq}: recorded {row.source} -> {row.target}, the re-run went "
            f"{step.source} -> {step.target}"
        )
    if step.kind != _kind(row):
        return f"step {row.seq}: recorded a {_kind(row)} step, the re-run took a {step.kind} step"
    return None


class Replayer:
    """A re-run in progress: `first` is the start, each `feed(row)` re-runs the next recorded
    row. A host showing a growing instance keeps one and feeds it the rows committed since."""

    def __init__(
        self,
        machine: Machine,
        start: HistoryRow,
        instance_id: str,
        patches: Sequence[Mapping[str, Any]] = (),
    ) -> None:
        if machine.composes:
            # The root's rows do not record what hosts sent its children (nor would a re-run
            # of the root alone re-run them).
            raise NotReplayable("a flow with child flows (`invoke`, `send ... to`) is not re-run")
        self.clock = FakeClock(start.at)
        started = machine.try_start(start_context(start), id=instance_id, clock=self.clock)
        if isinstance(started, Rejection):
            raise NotReplayable(f"the recorded start is refused now: {started.message}")
        self.instance: Instance = started
        #: a fork's context changes, by the step after which each was made (`fork_patches`)
        self._patches = {int(p["at"]): dict(p["context"]) for p in patches}
        self._patch(start.seq)
        self.first = ReplayedStep(start, self.instance.context, effects=started.start_effects)
        self.seq = start.seq
        #: timer and scheduled steps one `advance` fired beyond the row being re-run, for the
        #: next rows
        self._fired: list[Outcome] = []

    def _patch(self, seq: int) -> bool:
        """Apply the fork's change made after step `seq`, if there is one."""
        patch = self._patches.get(seq)
        if patch is None:
            return False
        snapshot = self.instance.snapshot()
        snapshot["context"] = {**snapshot["context"], **patch}
        self.instance = self.instance.machine.restore(snapshot, clock=self.clock)
        return True

    def feed(self, row: HistoryRow) -> ReplayedStep:
        """Re-run `row`, the step after the last one fed."""
        outcome = self._run(row)
        self.seq = row.seq
        if outcome is None:
            return ReplayedStep(row, None, f"step {row.seq}: the re-run fired no timer")
        if isinstance(outcome, Rejection):
            return ReplayedStep(row, None, f"step {row.seq}: the re-run refused: {outcome.message}")
        # After the step a fork was made at, the context is the fork's.
        patched = self._patch(row.seq)
        return ReplayedStep(
            row,
            self.instance.context if patched else outcome.context,
            _difference(row, outcome),
            outcome.rules_taken,
            outcome.effects,
            outcome,
        )

    def _run(self, row: HistoryRow) -> Outcome | None:
        if row.at > self.clock.now:
            self.clock.set(row.at)
        i = self.instance
        kind = _kind(row)
        if kind == "timer" or kind == "scheduled":  # a scheduled event is delivered by `advance`
            if not self._fired:
                self._fired = list(i.advance(row.at))
            return self._fired.pop(0) if self._fired else None
        # A recorded step committed, so a backward one was forced then: force it again.
        if kind == "goto":
            return i.goto(row.target or "", force=True, reason=row.reason)
        if kind == "back":
            return i.back(force=True, reason=row.reason)
        payload = row.payload if isinstance(row.payload, Mapping) else None
        return i.send(row.trigger or "", payload, force=True, reason=row.reason)


def replay_rows(
    machine: Machine,
    rows: Sequence[HistoryRow],
    *,
    instance_id: str = "replay",
    patches: Sequence[Mapping[str, Any]] = (),
) -> Iterator[ReplayedStep]:
    """Re-run `rows` (a whole history, start row first) on `machine`, one `ReplayedStep` per
    row, with a fork's `patches`; stops after the first row that differs."""
    if not rows:
        return
    replayer = Replayer(machine, rows[0], instance_id, patches)
    yield replayer.first
    for row in rows[1:]:
        step = replayer.feed(row)
        yield step
        if step.difference is not None:
            return


def instance_after(
    machine: Machine,
    rows: Sequence[HistoryRow],
    at: int,
    *,
    instance_id: str,
    patches: Sequence[Mapping[str, Any]] = (),
) -> Instance:
    """The instance as it was right after step `at`, re-run from `rows`; `NotReplayable` when
    the rows cannot be re-run or differ before that step, `ValueError` when there is no step
    `at`."""
    if not any(r.seq == at for r in rows):
        raise ValueError(f"the instance has no step {at}")
    wanted = [r for r in rows if r.seq <= at]
    replayer = Replayer(machine, wanted[0], instance_id, patches)
    for row in wanted[1:]:
        step = replayer.feed(row)
        if step.difference is not None:
            raise NotReplayable(step.difference)
    return replayer.instance


def fork_patches(lineage: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The context changes a fork's history needs when re-run (its `lineage.patches`)."""
    return list((lineage or {}).get("patches") or ())


def context_diff(before: Mapping[str, Json], after: Mapping[str, Json]) -> list[dict[str, Json]]:
    """The fields a step changed: `{"field", "op": add|remove|change, "before", "after"}`,
    sorted by field name (a nested value that changed is one change of its top field)."""
    out: list[dict[str, Json]] = []
    for name in sorted(set(before) | set(after)):
        if name not in before:
            out.append({"field": name, "op": "add", "before": None, "after": after[name]})
        elif name not in after:
            out.append({"field": name, "op": "remove", "before": before[name], "after": None})
        elif before[name] != after[name]:
            out.append(
                {"field": name, "op": "change", "before": before[name], "after": after[name]}
            )
    return out


__all__ = [
    "START_CONTEXT",
    "NotReplayable",
    "ReplayedStep",
    "Replayer",
    "context_diff",
    "fork_patches",
    "instance_after",
    "replay_rows",
    "start_context",
    "start_payload",
]
