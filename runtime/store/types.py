"""The storage contract: records, step results and the `Store` protocol.

Nothing here knows the engine. A store keeps, per instance, an opaque JSON snapshot plus the
few fields it must query or check itself (flow name/version/hash, current state, an optimistic
`version`, the last history `seq`), an append-only history, the pending timers and the
idempotency keys already applied. The engine's work happens in a caller-supplied pure function
(`StepFn`) that a store runs inside its step transaction, possibly several times.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Literal, Protocol, runtime_checkable

from flowc.runtime.clock import to_seconds
from flowc.runtime.messages import DEFAULT_MESSAGES

#: Any JSON value (dicts, lists, str, int, float, bool, None).
Json = Any

#: A step that lost the optimistic race this many times in a row becomes a `conflict` outcome.
DEFAULT_MAX_ATTEMPTS = 10


#: How many characters of a refused or unknown handle a message echoes.
ECHO = 40


def shorten(value: object) -> str:
    """`value` for a message: its repr cut to about ECHO characters, saying how long it was."""
    if not isinstance(value, str):
        text = repr(value)
        return text if len(text) <= ECHO else f"{text[:ECHO]}…"
    shown = repr(value[:ECHO]).encode("utf-8", "backslashreplace").decode("utf-8")
    return shown if len(value) <= ECHO else f"{shown[:-1]}…' ({len(value)} characters)"


class StoreError(Exception):
    """Base of the errors a store raises (rejections are outcomes, never exceptions)."""


class InstanceNotFound(StoreError, KeyError):
    def __init__(self, instance_id: str) -> None:
        super().__init__(instance_id)
        self.instance_id = instance_id

    def __str__(self) -> str:
        return f"no instance {shorten(self.instance_id)}"


class InstanceExists(StoreError):
    def __init__(self, instance_id: str) -> None:
        super().__init__(f"instance {shorten(instance_id)} already exists")
        self.instance_id = instance_id


class SchemaMismatch(StoreError):
    """The database holds tables of another flowc schema version."""


class StoreUnavailable(StoreError):
    """The store cannot be used at all: a database file that is damaged or not a database, a
    server that cannot be reached in time, a lock held by another writer for too long. The
    message names the store."""


class StoreURLError(StoreError, ValueError):
    """A store URL this runtime does not understand."""


@dataclass(frozen=True, slots=True)
class InstanceRecord:
    """One stored instance. `version` grows by one per committed step (optimistic concurrency);
    `seq` is the sequence number of its last history row (0: none yet)."""

    id: str
    flow: str
    flow_version: int
    graph_hash: str
    state: str
    version: int
    seq: int
    snapshot: dict[str, Json]
    created_at: float
    updated_at: float
    #: which life of this id the record is (fresh at each create, so that an id reused after a
    #: delete never repeats an effect id); None for instances created before it was kept
    incarnation: str | None = None


@dataclass(frozen=True, slots=True)
class HistoryEntry:
    """A history row as a step produces it; the store numbers it (`HistoryRow.seq`). `kind` is
    the engine's step kind (`start`, `event`, `goto`, `back`, `timer`) and `via` the choice
    states the step routed through; rows written before they were kept have None and ()."""

    at: float
    source: str | None
    target: str | None
    trigger: str | None
    payload: Json = None
    reason: str | None = None
    kind: str | None = None
    via: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class HistoryRow:
    instance_id: str
    seq: int
    at: float
    source: str | None
    target: str | None
    trigger: str | None
    payload: Json = None
    reason: str | None = None
    kind: str | None = None
    via: tuple[str, ...] = ()

    @classmethod
    def of(
        cls, instance_id: str, seq: int, entry: HistoryEntry, payload: Json = None
    ) -> HistoryRow:
        """The stored row of `entry` as step `seq`; `payload` is the entry's payload as the
        backend keeps it (a copy, or what a JSON round trip gives)."""
        e = entry
        return cls(
            instance_id, seq, e.at, e.source, e.target, e.trigger, payload, e.reason, e.kind,
            tuple(e.via),
        )  # fmt: skip


@dataclass(frozen=True, slots=True)
class TimerSpec:
    """A pending timer as the engine arms it. At most one pending timer per `timer_id` and
    instance; `state` is the state that armed it, `deadline` absolute (epoch seconds), `data`
    whatever the engine needs to fire it."""

    timer_id: str
    state: str
    deadline: float
    data: Json = None


@dataclass(frozen=True, slots=True)
class TimerRow:
    instance_id: str
    timer_id: str
    state: str
    deadline: float
    data: Json = None
    lease_owner: str | None = None
    lease_until: float | None = None

    def spec(self) -> TimerSpec:
        return TimerSpec(self.timer_id, self.state, self.deadline, self.data)


@dataclass(frozen=True, slots=True)
class EffectSpec:
    """An effect a step emitted (`emit EFFECT(...)`), as the engine hands it to the store:
    written to the outbox in the step's own transaction. `seq` is the step's sequence number
    and `index` the effect's place among that step's effects."""

    seq: int
    index: int
    effect: str
    payload: dict[str, Json]


@dataclass(frozen=True, slots=True)
class OutboxEffect:
    """An effect in a store's outbox: committed with its step and not yet marked delivered.
    `id` is the same at every delivery of it, for hosts that deduplicate (delivery is at least
    once: see docs/persistence.md)."""

    instance_id: str
    seq: int
    index: int
    effect: str
    payload: dict[str, Json]
    #: when the step that emitted it committed
    at: float
    #: the incarnation of the instance that emitted it (`InstanceRecord.incarnation`)
    incarnation: str | None = None

    @property
    def id(self) -> str:
        """`INSTANCE/INCARNATION/SEQ/INDEX`: never the same for two effects, even when an
        instance id is reused after a delete (effects of instances created before incarnations
        were kept: `INSTANCE/SEQ/INDEX`)."""
        return effect_id(self.instance_id, self.incarnation, self.seq, self.index)


def effect_id(instance_id: str, incarnation: str | None, seq: int, index: int) -> str:
    """The outbox id of the `index`th effect of step `seq` (`OutboxEffect.id`), for hosts that
    name an effect before it is read back from the outbox (traces)."""
    if incarnation is None:
        return f"{instance_id}/{seq}/{index}"
    return f"{instance_id}/{incarnation}/{seq}/{index}"


@dataclass(frozen=True, slots=True)
class Change:
    """A step function's result that commits: the new snapshot and state, the rows to append,
    and `timers`, the complete new set of pending timers (None: leave them as they are).
    `flow_version`/`graph_hash`, when given, record that the instance now runs under another
    version of its flow (after a migration). `outcome` is returned to the caller and kept under
    the idempotency key."""

    snapshot: dict[str, Json]
    state: str
    outcome: Json = None
    history: Sequence[HistoryEntry] = ()
    timers: Sequence[TimerSpec] | None = None
    flow_version: int | None = None
    graph_hash: str | None = None
    #: the effects the step's actions emitted, for the outbox (same transaction)
    effects: Sequence[EffectSpec] = ()


@dataclass(frozen=True, slots=True)
class Reject:
    """A step function's result that commits nothing (a rejection as data)."""

    outcome: Json = None


#: Runs the engine on a loaded record. Must be pure: it may run several times (once per
#: optimistic attempt) and only its last result counts.
StepFn = Callable[[InstanceRecord], Change | Reject]

StepStatus = Literal["committed", "rejected", "replayed", "conflict", "stale"]


@dataclass(frozen=True, slots=True)
class StepOutcome:
    """What `Store.step` did.

    - `committed`: the change was written; `record` is the new record, `history` the rows added.
    - `rejected`: the step function rejected; nothing was written (a fired timer is consumed).
    - `replayed`: the idempotency key had been applied; `outcome` is the first outcome.
    - `conflict`: other writers won the race `attempts` times in a row; nothing was written.
    - `stale`: the timer being fired is no longer pending (its state was left, or another worker
      fired it); nothing was written and the step function did not run.
    """

    status: StepStatus
    outcome: Json
    record: InstanceRecord | None = None
    history: tuple[HistoryRow, ...] = ()
    attempts: int = 1

    @property
    def committed(self) -> bool:
        return self.status == "committed"


@dataclass(frozen=True, slots=True)
class TimerClaim:
    """A due timer leased to one worker until `lease_until`. Fire it with
    `store.step(claim.instance_id, fn, timer=claim)`; if the worker dies, the lease runs out and
    another worker claims it again."""

    instance_id: str
    timer_id: str
    state: str
    deadline: float
    data: Json
    owner: str
    lease_until: float


@dataclass(frozen=True, slots=True)
class NewInstance:
    """What `Store.create` writes: version 1, and `history` numbered from `first_seq` (an engine
    that numbers its start entry 0 keeps its own numbers)."""

    id: str
    flow: str
    flow_version: int
    graph_hash: str
    state: str
    snapshot: dict[str, Json]
    history: Sequence[HistoryEntry] = ()
    timers: Sequence[TimerSpec] = ()
    at: float | None = None
    first_seq: int = 1
    #: the effects the initial state's entry actions emitted, for the outbox
    effects: Sequence[EffectSpec] = ()

    @property
    def last_seq(self) -> int:
        return self.first_seq + len(self.history) - 1

    def record(self, now: float) -> InstanceRecord:
        """The record `Store.create` writes, created at `now` (`at` when given) as a new
        incarnation of its id."""
        at = now if self.at is None else self.at
        return InstanceRecord(
            id=self.id,
            flow=self.flow,
            flow_version=self.flow_version,
            graph_hash=self.graph_hash,
            state=self.state,
            version=1,
            seq=self.last_seq,
            snapshot=copy_json(self.snapshot),
            created_at=at,
            updated_at=at,
            incarnation=new_incarnation(),
        )


def advanced(record: InstanceRecord, change: Change, now: float) -> InstanceRecord:
    """The record after `change` commits at `now`."""
    return replace(
        record,
        flow_version=record.flow_version if change.flow_version is None else change.flow_version,
        graph_hash=record.graph_hash if change.graph_hash is None else change.graph_hash,
        state=change.state,
        version=record.version + 1,
        seq=record.seq + len(change.history),
        snapshot=copy_json(change.snapshot),
        updated_at=now,
    )


@runtime_checkable
class Store(Protocol):
    """A durable home for instances. Every backend passes tests/store/test_conformance.py."""

    url: str
    #: what "now" is for the store: `updated_at`, keys' `at`, which timers are due and whose
    #: lease ran out (epoch seconds). `DurableFlows(store, clock=...)` sets it, so that flows,
    #: store and workers read one clock.
    clock: Callable[[], float]

    def create(self, new: NewInstance) -> InstanceRecord:
        """Write a new instance; `InstanceExists` if the id is taken."""
        ...

    def load(self, instance_id: str) -> InstanceRecord:
        """The current record; `InstanceNotFound` if there is none."""
        ...

    def step(
        self,
        instance_id: str,
        fn: StepFn,
        *,
        key: str | None = None,
        timer: TimerClaim | None = None,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
    ) -> StepOutcome:
        """One step, one transaction: load, run `fn`, write its `Change` only if nobody wrote
        in between (else reload and run again, up to `max_attempts`), with its history rows,
        timers and idempotency `key`, all or nothing. With `timer`, the step fires that claimed
        timer: it runs only if the timer is still pending, and consumes it either way."""
        ...

    def instances(
        self,
        *,
        flow: str | None = None,
        state: str | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[InstanceRecord]:
        """Records, most recently updated first."""
        ...

    def history(
        self, instance_id: str, *, after: int | None = None, limit: int | None = None
    ) -> list[HistoryRow]:
        """History rows in order; with `after`, only those with `seq > after`."""
        ...

    def timers(self, instance_id: str | None = None) -> list[TimerRow]:
        """Pending timers (of one instance, or all), earliest deadline first."""
        ...

    def claim_due_timers(
        self, owner: str, *, limit: int = 100, lease: float = 30.0, now: float | None = None
    ) -> list[TimerClaim]:
        """Lease up to `limit` timers due at `now` that nobody holds (or whose lease ran out)
        to `owner` for `lease` seconds. Two concurrent callers never get the same timer."""
        ...

    def release(self, claim: TimerClaim) -> None:
        """Give a claimed timer back before its lease runs out (a worker shutting down)."""
        ...

    def next_deadline(self) -> float | None:
        """The earliest deadline of a timer nobody holds, for a worker deciding how long to
        sleep."""
        ...

    def delete(self, instance_id: str) -> bool:
        """Remove an instance with its history, timers and keys; False if there was none."""
        ...

    def save_graph(self, graph_hash: str, flow: str, version: int, ir: str) -> None:
        """Keep a compiled flow's JSON `ir` under its content hash, so that whoever reads the
        store can run its instances without the flow's files. A hash already kept is left as
        it is (the hash names the content)."""
        ...

    def load_graph(self, graph_hash: str) -> str | None:
        """The compiled JSON kept under `graph_hash`, or None."""
        ...

    def pending_effects(self, *, limit: int = 100) -> list[OutboxEffect]:
        """Up to `limit` effects of the outbox (committed, not marked delivered), in the order
        their steps committed and, within a step, the order they were emitted."""
        ...

    def mark_delivered(self, effects: Sequence[OutboxEffect]) -> None:
        """Take delivered effects out of the outbox (one already taken out is ignored)."""
        ...

    def close(self) -> None: ...


def conflict_outcome(state: str | None, attempts: int) -> dict[str, Json]:
    """The `conflict` rejection, in the shape of `Rejection.to_dict()`."""
    return {
        "ok": False,
        "error": "conflict",
        "message": DEFAULT_MESSAGES["conflict"],
        "attempts": attempts,
        "kind": "conflict",
        "state": state,
        "event": None,
    }


def new_incarnation() -> str:
    """A fresh incarnation for a created instance: 64 random bits, as hex."""
    return secrets.token_hex(8)


def timer_deadline(due: float | int | str | datetime) -> float:
    """A pending timer's due time (as the engine's snapshot holds it) as the deadline the
    stores keep and compare. Every conversion of a timer's due time into a store goes through
    here, so the stores' time representation is one place to change."""
    return to_seconds(due)


def dumps(value: Json) -> str:
    """The JSON text stores write: compact, and refusing what JSON cannot hold."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)


def copy_json(value: Json) -> Json:
    """A deep copy through JSON, so every backend hands out the same kind of values."""
    return json.loads(dumps(value))


def plan_timers(
    existing: Sequence[TimerRow], wanted: Sequence[TimerSpec]
) -> tuple[list[str], list[TimerSpec]]:
    """What to delete (timer ids) and what to (re)write so that the rows become `wanted`. A
    timer whose id, state, deadline and data are unchanged is left alone, lease included."""
    by_id = {row.timer_id: row for row in existing}
    want_ids = {spec.timer_id for spec in wanted}
    if len(want_ids) != len(wanted):
        raise ValueError("two pending timers with the same timer_id")
    delete = [tid for tid in by_id if tid not in want_ids]
    write: list[TimerSpec] = []
    for spec in wanted:
        row = by_id.get(spec.timer_id)
        if row is not None and row.spec() == spec:
            continue
        if row is not None:
            delete.append(spec.timer_id)
        write.append(spec)
    return delete, write
