"""What each step of an instance changed, worked out by re-running its recorded steps once.

A `Replayer` per instance shown recently is kept and fed only the rows committed since it
last ran; of each step it keeps what the timeline shows (the context change, the rules taken,
the effects, the journals), not the whole context, so memory grows with the changes, not with
the context's size times the steps. A short catch-up runs in the request; a long one (a
100,000-step instance opened for the first time) runs in a thread of its own while the page
shows its steps, and the page asks again for the changes still `pending`.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from flowc.runtime.machine import Machine
from flowc.runtime.store import InstanceRecord, Store
from flowc.runtime.store.durable import LINEAGE
from flowc.runtime.store.replay import (
    NotReplayable,
    ReplayedStep,
    Replayer,
    context_diff,
    fork_patches,
)

#: A catch-up of at most this many steps runs in the request.
IN_REQUEST = 5_000
#: Rows read from the store at a time.
BATCH = 5_000
#: How many instances keep their re-run in memory.
KEPT = 4

#: By seq, what the timeline shows of a step beside its row.
Shown = dict[int, dict[str, Any]]


@dataclass
class _Replay:
    """The re-run of one instance so far."""

    replayer: Replayer | None = None
    #: the context after the last step re-run
    context: dict[str, Any] = field(default_factory=dict)
    shown: Shown = field(default_factory=dict)
    problem: str | None = None
    running: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def seq(self) -> int:
        return self.replayer.seq if self.replayer is not None else -1


class StepChanges:
    def __init__(self, store: Store) -> None:
        self.store = store
        self._replays: OrderedDict[str, _Replay] = OrderedDict()
        self._lock = threading.Lock()

    def of(
        self, record: InstanceRecord, machine: Machine
    ) -> tuple[dict[int, dict[str, Any]], str | None, bool]:
        """The changes known so far, by seq; why the re-run stopped (or None); and whether
        steps up to the record's last are still being re-run."""
        replay = self._replay(record.id)
        behind = record.seq - replay.seq
        if behind > 0 and replay.problem is None:
            if behind <= IN_REQUEST:
                self._catch_up(record, machine, replay)
            elif not replay.running:
                replay.running = True
                threading.Thread(
                    target=self._catch_up, args=(record, machine, replay), daemon=True
                ).start()
        pending = replay.seq < record.seq and replay.problem is None
        return replay.shown, replay.problem, pending

    def _replay(self, instance_id: str) -> _Replay:
        with self._lock:
            replay = self._replays.pop(instance_id, None) or _Replay()
            self._replays[instance_id] = replay
            while len(self._replays) > KEPT:
                self._replays.popitem(last=False)
            return replay

    def _catch_up(self, record: InstanceRecord, machine: Machine, replay: _Replay) -> None:
        with replay.lock:
            try:
                while replay.seq < record.seq and replay.problem is None:
                    after = replay.seq if replay.replayer is not None else None
                    rows = self.store.history(record.id, after=after, limit=BATCH)
                    if not rows:
                        return
                    journals = bool(machine.journals)
                    if replay.replayer is None:
                        patches = fork_patches(record.snapshot.get(LINEAGE))
                        replay.replayer = Replayer(machine, rows[0], record.id, patches)
                        _keep(replay, replay.replayer.first, journals)
                        rows = rows[1:]
                    for row in rows:
                        if not _keep(replay, replay.replayer.feed(row), journals):
                            return
            except NotReplayable as exc:
                replay.problem = str(exc)
            finally:
                replay.running = False


def _keep(replay: _Replay, step: ReplayedStep, journals: bool) -> bool:
    """Keep what the timeline shows of `step`; False when the re-run stops there."""
    if step.difference is not None or step.context is None:
        replay.problem = step.difference or f"step {step.row.seq} did not re-run"
        return False
    shown: dict[str, Any] = {
        "diff": context_diff(replay.context, step.context),
        "rules_taken": list(step.rules_taken) if step.rules_taken is not None else None,
        "effects": step.effects,
    }
    if journals and step.step is not None:
        shown["journals"] = step.step.journals()
    replay.shown[step.row.seq] = shown
    replay.context = step.context
    return True
