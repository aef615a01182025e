"""A store in the process's memory: for tests and for hosts that keep nothing across restarts.

It behaves like the PostgreSQL store (optimistic: the step function runs outside the lock and
the commit checks the version it read), so the conformance suite exercises the same retry path.
Values go in and out through JSON, so a host that mutates what it got back changes nothing here.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace

from flowc.runtime.store.handles import check_handle, check_page, check_step_handles
from flowc.runtime.store.types import (
    DEFAULT_MAX_ATTEMPTS,
    Change,
    EffectSpec,
    HistoryRow,
    InstanceExists,
    InstanceNotFound,
    InstanceRecord,
    Json,
    NewInstance,
    OutboxEffect,
    StepFn,
    StepOutcome,
    TimerClaim,
    TimerRow,
    advanced,
    conflict_outcome,
    copy_json,
    plan_timers,
)


@dataclass
class _Slot:
    record: InstanceRecord
    history: list[HistoryRow] = field(default_factory=list)
    timers: dict[str, TimerRow] = field(default_factory=dict)
    keys: dict[str, Json] = field(default_factory=dict)


class MemoryStore:
    def __init__(self, *, clock: Callable[[], float] = time.time, url: str = "memory:") -> None:
        self.url = url
        self.clock = clock
        self._lock = threading.Lock()
        self._slots: dict[str, _Slot] = {}
        self._graphs: dict[str, str] = {}
        #: the outbox: effects committed and not yet delivered, by (instance, seq, index)
        self._outbox: dict[tuple[str, str | None, int, int], OutboxEffect] = {}

    def create(self, new: NewInstance) -> InstanceRecord:
        check_handle("id", new.id)
        record = new.record(self.clock())
        now = record.created_at
        slot = _Slot(record)
        slot.history = [
            HistoryRow.of(new.id, i, e, copy_json(e.payload))
            for i, e in enumerate(new.history, start=new.first_seq)
        ]
        _, write = plan_timers([], new.timers)
        slot.timers = {
            t.timer_id: TimerRow(new.id, t.timer_id, t.state, t.deadline, copy_json(t.data))
            for t in write
        }
        with self._lock:
            if new.id in self._slots:
                raise InstanceExists(new.id)
            self._slots[new.id] = slot
            self._put_effects(record, new.effects, now)
        return _copy_record(record)

    def _put_effects(
        self, record: InstanceRecord, effects: Sequence[EffectSpec], at: float
    ) -> None:
        for e in effects:
            payload = copy_json(e.payload)
            assert isinstance(payload, dict)
            fx = OutboxEffect(record.id, e.seq, e.index, e.effect, payload, at, record.incarnation)
            self._outbox[_outbox_key(fx)] = fx

    def pending_effects(self, *, limit: int = 100) -> list[OutboxEffect]:
        check_page(limit, 0)
        with self._lock:
            pending = list(self._outbox.values())[:limit]
        return [replace(fx, payload=copy_json(fx.payload)) for fx in pending]

    def mark_delivered(self, effects: Sequence[OutboxEffect]) -> None:
        with self._lock:
            for fx in effects:
                self._outbox.pop(_outbox_key(fx), None)

    def load(self, instance_id: str) -> InstanceRecord:
        check_handle("id", instance_id)
        with self._lock:
            return _copy_record(self._slot(instance_id).record)

    def step(
        self,
        instance_id: str,
        fn: StepFn,
        *,
        key: str | None = None,
        timer: TimerClaim | None = None,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
    ) -> StepOutcome:
        check_step_handles(instance_id, key)
        record: InstanceRecord | None = None
        for attempt in range(1, max_attempts + 1):
            with self._lock:
                slot = self._slot(instance_id)
                if key is not None and key in slot.keys:
                    return StepOutcome("replayed", copy_json(slot.keys[key]), attempts=attempt)
                if timer is not None and not _pending(slot, timer):
                    return StepOutcome("stale", None, attempts=attempt)
                record = _copy_record(slot.record)
            result = fn(record)
            with self._lock:
                slot = self._slot(instance_id)
                if slot.record.version != record.version:
                    continue
                if timer is not None and not _pending(slot, timer):
                    continue
                if not isinstance(result, Change):
                    if timer is not None:
                        del slot.timers[timer.timer_id]
                    return StepOutcome("rejected", copy_json(result.outcome), record, (), attempt)
                return self._commit(slot, record, result, key, timer, attempt)
        state = record.state if record is not None else None
        return StepOutcome(
            "conflict", conflict_outcome(state, max_attempts), record, (), max_attempts
        )

    def _commit(
        self,
        slot: _Slot,
        old: InstanceRecord,
        change: Change,
        key: str | None,
        timer: TimerClaim | None,
        attempt: int,
    ) -> StepOutcome:
        now = self.clock()
        rows = tuple(
            HistoryRow.of(old.id, old.seq + i, e, copy_json(e.payload))
            for i, e in enumerate(change.history, start=1)
        )
        record = advanced(old, change, now)
        if timer is not None:
            del slot.timers[timer.timer_id]
        if change.timers is not None:
            wanted = [t for t in change.timers if not _same_timer(t.timer_id, t.deadline, timer)]
            delete, write = plan_timers(list(slot.timers.values()), wanted)
            for tid in delete:
                slot.timers.pop(tid, None)
            for t in write:
                slot.timers[t.timer_id] = TimerRow(
                    old.id, t.timer_id, t.state, t.deadline, copy_json(t.data)
                )
        if key is not None:
            slot.keys[key] = copy_json(change.outcome)
        slot.record = record
        slot.history.extend(rows)
        self._put_effects(record, change.effects, now)
        return StepOutcome(
            "committed", copy_json(change.outcome), _copy_record(record), rows, attempt
        )

    def instances(
        self,
        *,
        flow: str | None = None,
        state: str | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[InstanceRecord]:
        check_page(limit, offset)
        with self._lock:
            records = [
                s.record
                for s in self._slots.values()
                if (flow is None or s.record.flow == flow)
                and (state is None or s.record.state == state)
            ]
        records.sort(key=lambda r: (-r.updated_at, r.id))
        return [_copy_record(r) for r in records[offset : offset + limit]]

    def history(
        self, instance_id: str, *, after: int | None = None, limit: int | None = None
    ) -> list[HistoryRow]:
        check_handle("id", instance_id)
        if limit is not None:
            check_page(limit, 0)
        with self._lock:
            rows = [r for r in self._slot(instance_id).history if after is None or r.seq > after]
        rows = rows if limit is None else rows[:limit]
        return [replace(r, payload=copy_json(r.payload)) for r in rows]

    def timers(self, instance_id: str | None = None) -> list[TimerRow]:
        if instance_id is not None:
            check_handle("id", instance_id)
        with self._lock:
            slots = self._slots.values() if instance_id is None else [self._slot(instance_id)]
            rows = [t for s in slots for t in s.timers.values()]
        rows.sort(key=lambda t: (t.deadline, t.instance_id, t.timer_id))
        return [replace(t, data=copy_json(t.data)) for t in rows]

    def claim_due_timers(
        self, owner: str, *, limit: int = 100, lease: float = 30.0, now: float | None = None
    ) -> list[TimerClaim]:
        check_handle("owner", owner)
        check_page(limit, 0)
        now = self.clock() if now is None else now
        claims: list[TimerClaim] = []
        with self._lock:
            due = [
                (t, s)
                for s in self._slots.values()
                for t in s.timers.values()
                if t.deadline <= now and (t.lease_until is None or t.lease_until < now)
            ]
            due.sort(key=lambda pair: (pair[0].deadline, pair[0].instance_id, pair[0].timer_id))
            for row, slot in due[:limit]:
                slot.timers[row.timer_id] = replace(row, lease_owner=owner, lease_until=now + lease)
                claims.append(
                    TimerClaim(
                        row.instance_id,
                        row.timer_id,
                        row.state,
                        row.deadline,
                        copy_json(row.data),
                        owner,
                        now + lease,
                    )
                )
        return claims

    def release(self, claim: TimerClaim) -> None:
        with self._lock:
            slot = self._slots.get(claim.instance_id)
            row = slot.timers.get(claim.timer_id) if slot is not None else None
            if slot is not None and row is not None and row.lease_owner == claim.owner:
                slot.timers[claim.timer_id] = replace(row, lease_owner=None, lease_until=None)

    def next_deadline(self) -> float | None:
        now = self.clock()
        with self._lock:
            deadlines = [
                t.deadline
                for s in self._slots.values()
                for t in s.timers.values()
                if t.lease_until is None or t.lease_until < now
            ]
        return min(deadlines, default=None)

    def delete(self, instance_id: str) -> bool:
        check_handle("id", instance_id)
        with self._lock:
            return self._slots.pop(instance_id, None) is not None

    def save_graph(self, graph_hash: str, flow: str, version: int, ir: str) -> None:
        with self._lock:
            self._graphs.setdefault(graph_hash, ir)

    def load_graph(self, graph_hash: str) -> str | None:
        with self._lock:
            return self._graphs.get(graph_hash)

    def close(self) -> None:
        pass

    def _slot(self, instance_id: str) -> _Slot:
        try:
            return self._slots[instance_id]
        except KeyError:
            raise InstanceNotFound(instance_id) from None


def _pending(slot: _Slot, timer: TimerClaim) -> bool:
    row = slot.timers.get(timer.timer_id)
    return row is not None and row.deadline == timer.deadline


def _same_timer(timer_id: str, deadline: float, timer: TimerClaim | None) -> bool:
    return timer is not None and timer.timer_id == timer_id and timer.deadline == deadline


def _outbox_key(fx: OutboxEffect) -> tuple[str, str | None, int, int]:
    return (fx.instance_id, fx.incarnation, fx.seq, fx.index)


def _copy_record(record: InstanceRecord) -> InstanceRecord:
    return replace(record, snapshot=copy_json(record.snapshot))
