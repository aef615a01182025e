"""The SQL stores' shared half: the schema, every query, and the step transaction, written once.

`SQLStore` holds what SQLite and PostgreSQL do alike; `sqlite.py` and `postgres.py` are its
dialects and say only how they differ: how a connection and a transaction are had, how a query
marks its parameters and JSON values travel, which errors mean a lost race, how due timers are
claimed, and how the schema is inspected and locked while it is created or migrated.

Queries here are written with `?` parameters; a dialect's `Tx` rewrites them for its driver.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any, ClassVar, Concatenate, Literal, ParamSpec, TypeVar

from flowc.runtime.store.handles import check_handle, check_page, check_step_handles
from flowc.runtime.store.types import (
    DEFAULT_MAX_ATTEMPTS,
    Change,
    EffectSpec,
    HistoryEntry,
    HistoryRow,
    InstanceExists,
    InstanceNotFound,
    InstanceRecord,
    Json,
    NewInstance,
    OutboxEffect,
    SchemaMismatch,
    StepFn,
    StepOutcome,
    StoreUnavailable,
    TimerClaim,
    TimerRow,
    TimerSpec,
    advanced,
    conflict_outcome,
    copy_json,
    plan_timers,
)

#: Version 2 gave every instance an incarnation and keyed the outbox by it (effect ids stay
#: unique when an id is reused after a delete). A version 1 database is migrated on open.
SCHEMA_VERSION = 2

#: The tables, in the order they are created; `{json}`, `{real}`, `{int64}`, `{serial_pk}` and
#: `{without_rowid}` are filled in by the dialect. Each table's indexes follow it.
TABLES: tuple[tuple[str, str], ...] = (
    ("flowc_meta", "CREATE TABLE flowc_meta (name TEXT PRIMARY KEY, value TEXT NOT NULL)"),
    (
        "flowc_instances",
        """CREATE TABLE flowc_instances (
  id TEXT PRIMARY KEY,
  flow TEXT NOT NULL,
  flow_version INTEGER NOT NULL,
  graph_hash TEXT NOT NULL,
  state TEXT NOT NULL,
  version {int64} NOT NULL,
  seq {int64} NOT NULL,
  snapshot {json} NOT NULL,
  created_at {real} NOT NULL,
  updated_at {real} NOT NULL,
  incarnation TEXT
);
CREATE INDEX flowc_instances_flow_state ON flowc_instances (flow, state);
CREATE INDEX flowc_instances_updated ON flowc_instances (updated_at)""",
    ),
    (
        "flowc_history",
        """CREATE TABLE flowc_history (
  instance_id TEXT NOT NULL REFERENCES flowc_instances (id) ON DELETE CASCADE,
  seq {int64} NOT NULL,
  at {real} NOT NULL,
  source TEXT,
  target TEXT,
  trigger TEXT,
  payload {json},
  reason TEXT,
  kind TEXT,
  via {json},
  PRIMARY KEY (instance_id, seq)
){without_rowid}""",
    ),
    (
        "flowc_timers",
        """CREATE TABLE flowc_timers (
  instance_id TEXT NOT NULL REFERENCES flowc_instances (id) ON DELETE CASCADE,
  timer_id TEXT NOT NULL,
  state TEXT NOT NULL,
  deadline {real} NOT NULL,
  data {json},
  lease_owner TEXT,
  lease_until {real},
  PRIMARY KEY (instance_id, timer_id)
);
CREATE INDEX flowc_timers_deadline ON flowc_timers (deadline)""",
    ),
    (
        "flowc_graphs",
        """CREATE TABLE flowc_graphs (
  hash TEXT PRIMARY KEY,
  flow TEXT NOT NULL,
  version INTEGER NOT NULL,
  ir TEXT NOT NULL,
  stored_at {real} NOT NULL
){without_rowid}""",
    ),
    (
        "flowc_keys",
        """CREATE TABLE flowc_keys (
  instance_id TEXT NOT NULL REFERENCES flowc_instances (id) ON DELETE CASCADE,
  key TEXT NOT NULL,
  outcome {json} NOT NULL,
  at {real} NOT NULL,
  PRIMARY KEY (instance_id, key)
){without_rowid}""",
    ),
    (
        "flowc_outbox",
        """CREATE TABLE flowc_outbox (
  id {serial_pk},
  instance_id TEXT NOT NULL,
  seq {int64} NOT NULL,
  idx INTEGER NOT NULL,
  effect TEXT NOT NULL,
  payload {json} NOT NULL,
  at {real} NOT NULL,
  incarnation TEXT
);
CREATE UNIQUE INDEX flowc_outbox_effect ON flowc_outbox (instance_id, incarnation, seq, idx)""",
    ),
)

#: Columns added to existing tables after their table shipped: NULL in older rows. A database
#: that lacks one gains it on open (metadata only: nullable, no default).
ADDED_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("flowc_history", "kind", "TEXT"),
    ("flowc_history", "via", "{json}"),
    ("flowc_instances", "incarnation", "TEXT"),
)

_RECORD_COLUMNS = (
    "id, flow, flow_version, graph_hash, state, version, seq, snapshot, created_at, updated_at, "
    "incarnation"
)
_SELECT_RECORD = f"SELECT {_RECORD_COLUMNS} FROM flowc_instances WHERE id = ?"
_TIMER_COLUMNS = "instance_id, timer_id, state, deadline, data, lease_owner, lease_until"
_HISTORY_COLUMNS = "instance_id, seq, at, source, target, trigger, payload, reason, kind, via"
_OUTBOX_COLUMNS = "instance_id, seq, idx, effect, payload, at, incarnation"
_EXISTS = "SELECT 1 FROM flowc_instances WHERE id = ?"

#: What a dialect makes of a failed attempt: try again, give up now (a `conflict`), or neither
#: (None: the error is not about the race and propagates).
Verdict = Literal["retry", "give_up"] | None


class Tx:
    """One connection (in a transaction or not) as the shared code uses it. A dialect
    subclasses it to translate `?` parameters and to run a statement over many rows."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn

    def sql(self, query: str) -> str:
        return query

    def run(self, query: str, params: Sequence[Any] = ()) -> int:
        """Run a statement; the number of rows it changed."""
        return int(self.conn.execute(self.sql(query), tuple(params)).rowcount)

    def one(self, query: str, params: Sequence[Any] = ()) -> Any:
        return self.conn.execute(self.sql(query), tuple(params)).fetchone()

    def all(self, query: str, params: Sequence[Any] = ()) -> list[Any]:
        return list(self.conn.execute(self.sql(query), tuple(params)).fetchall())

    def many(self, query: str, rows: Sequence[Sequence[Any]]) -> None:
        raise NotImplementedError


class _LostRace(Exception):
    """Another step committed between our read and our update; nothing of ours was written."""

    def __init__(self, record: InstanceRecord) -> None:
        super().__init__(record.id)
        self.record = record


_S = TypeVar("_S", bound="SQLStore")
_P = ParamSpec("_P")
_R = TypeVar("_R")


def store_errors(method: Callable[Concatenate[_S, _P], _R]) -> Callable[Concatenate[_S, _P], _R]:
    """The driver's failures as `StoreUnavailable` naming the store (`SQLStore._unavailable`)."""

    def guarded(self: _S, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return method(self, *args, **kwargs)
        except Exception as exc:
            unavailable = self._unavailable(exc)
            if unavailable is None:
                raise
            raise unavailable from None

    functools.update_wrapper(guarded, method)
    return guarded


class SQLStore:
    """The `Store` protocol over SQL. Subclasses supply the dialect (the methods that raise
    NotImplementedError here), `url`, and `clock`."""

    url: str
    clock: Callable[[], float]
    #: how the dialect spells the column types of `TABLES`
    TYPES: ClassVar[dict[str, str]] = {}

    # -- the dialect -------------------------------------------------------------------------

    def _read(self) -> AbstractContextManager[Tx]:
        """A connection for reads outside any transaction."""
        raise NotImplementedError

    def _write(self) -> AbstractContextManager[Tx]:
        """A read-write transaction, committed when the block ends and rolled back on error."""
        raise NotImplementedError

    def _consistent_read(self) -> AbstractContextManager[Tx]:
        """A transaction whose reads all see the same moment."""
        raise NotImplementedError

    def _json_in(self, value: Json) -> Any:
        """A JSON value as a query parameter (None is JSON `null`)."""
        raise NotImplementedError

    def _json_or_null(self, value: Json) -> Any:
        """A JSON value as a query parameter, None as SQL NULL (columns that may be empty)."""
        return None if value is None else self._json_in(value)

    def _json_out(self, value: Any) -> Json:
        """A JSON column as read back (SQL NULL as None)."""
        raise NotImplementedError

    def _after_failure(self, exc: Exception) -> Verdict:
        """What a failed step attempt means (see `Verdict`)."""
        raise NotImplementedError

    def _lock_row(self, attempt: int) -> bool:
        """Whether this attempt reads the record `FOR UPDATE` (before checking its key)."""
        return False

    def _pause(self, attempt: int) -> None:
        """Wait before the next attempt of a step that lost a race."""

    def _timers_armed(self, tx: Tx) -> None:
        """A transaction wrote timer rows (PostgreSQL wakes sleeping workers)."""

    def _is_duplicate(self, exc: Exception) -> bool:
        """`exc` is a unique-constraint violation."""
        raise NotImplementedError

    def _unavailable(self, exc: Exception) -> StoreUnavailable | None:
        """`exc` as the store being unusable, or None when it is not that."""
        raise NotImplementedError

    def _has_table(self, tx: Tx, table: str) -> bool:
        raise NotImplementedError

    def _columns(self, tx: Tx, table: str) -> set[str]:
        raise NotImplementedError

    def _schema_lock(self) -> AbstractContextManager[Tx]:
        """The transaction that creates or migrates the schema, excluding any other doing so."""
        raise NotImplementedError

    def _migrate_outbox_v1(self, tx: Tx) -> None:
        """Give a version 1 outbox its incarnation column and the unique key that includes it."""
        raise NotImplementedError

    # -- the schema ----------------------------------------------------------------------------

    def _create_table(self, tx: Tx, table: str) -> None:
        """Create `table` of `TABLES` with its indexes, in this dialect's types."""
        [ddl] = [text for name, text in TABLES if name == table]
        for statement in ddl.format(**self.TYPES).split(";"):
            tx.run(statement.strip())

    def _init_schema(self) -> None:
        """Create, complete or migrate the tables. A database that is current is only read, so
        opening a store never takes the write lock (nor waits behind a running step)."""
        with self._read() as tx:
            if self._schema_current(tx):
                return
        with self._schema_lock() as tx:
            found = self._schema_version(tx)
            if found is not None and found > SCHEMA_VERSION:
                raise self._mismatch(found)
            for table, _ in TABLES:
                # Only missing tables: even CREATE INDEX IF NOT EXISTS locks its table, which
                # can deadlock against running steps.
                if not self._has_table(tx, table):
                    self._create_table(tx, table)
            for table, column, kind in ADDED_COLUMNS:
                if column not in self._columns(tx, table):
                    tx.run(f"ALTER TABLE {table} ADD COLUMN {column} {kind.format(**self.TYPES)}")
            if "incarnation" not in self._columns(tx, "flowc_outbox"):
                self._migrate_outbox_v1(tx)
            if found is None:
                tx.run(
                    "INSERT INTO flowc_meta (name, value) VALUES ('schema_version', ?)",
                    (str(SCHEMA_VERSION),),
                )
            elif found < SCHEMA_VERSION:
                tx.run(
                    "UPDATE flowc_meta SET value = ? WHERE name = 'schema_version'",
                    (str(SCHEMA_VERSION),),
                )

    def _schema_version(self, tx: Tx) -> int | None:
        if not self._has_table(tx, "flowc_meta"):
            return None
        row = tx.one("SELECT value FROM flowc_meta WHERE name = 'schema_version'")
        if row is None:
            return None
        try:
            return int(row[0])
        except ValueError:
            raise SchemaMismatch(
                f"{self.url} has flowc schema version {row[0]!r}; this runtime uses "
                f"{SCHEMA_VERSION}"
            ) from None

    def _mismatch(self, found: int) -> SchemaMismatch:
        return SchemaMismatch(
            f"{self.url} has flowc schema version {found}; this runtime uses {SCHEMA_VERSION}"
        )

    def _schema_current(self, tx: Tx) -> bool:
        found = self._schema_version(tx)
        if found is not None and found > SCHEMA_VERSION:
            raise self._mismatch(found)
        if found != SCHEMA_VERSION:
            return False
        if not all(self._has_table(tx, table) for table, _ in TABLES):
            return False
        return all(column in self._columns(tx, table) for table, column, _ in ADDED_COLUMNS)

    # -- instances -----------------------------------------------------------------------------

    @store_errors
    def create(self, new: NewInstance) -> InstanceRecord:
        check_handle("id", new.id)
        record = new.record(self.clock())
        now = record.created_at
        _, timers = plan_timers([], new.timers)
        try:
            with self._write() as tx:
                tx.run(
                    f"INSERT INTO flowc_instances ({_RECORD_COLUMNS}) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        record.id,
                        record.flow,
                        record.flow_version,
                        record.graph_hash,
                        record.state,
                        record.version,
                        record.seq,
                        self._json_in(record.snapshot),
                        now,
                        now,
                        record.incarnation,
                    ),
                )
                self._insert_history(tx, new.id, new.first_seq - 1, new.history)
                self._insert_timers(tx, new.id, timers)
                self._insert_effects(tx, record, new.effects, now)
        except Exception as exc:
            if self._is_duplicate(exc):
                raise InstanceExists(new.id) from None
            raise
        return record

    @store_errors
    def load(self, instance_id: str) -> InstanceRecord:
        check_handle("id", instance_id)
        with self._read() as tx:
            row = tx.one(_SELECT_RECORD, (instance_id,))
        if row is None:
            raise InstanceNotFound(instance_id)
        return self._record(row)

    @store_errors
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
            try:
                with self._write() as tx:
                    return self._step_once(tx, instance_id, fn, key, timer, attempt)
            except _LostRace as lost:
                record = lost.record
            except Exception as exc:
                verdict = self._after_failure(exc)
                if verdict is None:
                    raise
                if verdict == "give_up":
                    # Someone holds the instance for longer than a lock wait: waiting again
                    # would only multiply the wait.
                    return StepOutcome(
                        "conflict", conflict_outcome(None, attempt), record, (), attempt
                    )
            self._pause(attempt)
        state = record.state if record is not None else None
        return StepOutcome(
            "conflict", conflict_outcome(state, max_attempts), record, (), max_attempts
        )

    def _step_once(
        self,
        tx: Tx,
        instance_id: str,
        fn: StepFn,
        key: str | None,
        timer: TimerClaim | None,
        attempt: int,
    ) -> StepOutcome:
        found = self._replay_or_record(tx, instance_id, key, attempt)
        if isinstance(found, StepOutcome):
            return found
        record = found
        if timer is not None and not self._consume(tx, instance_id, timer):
            return StepOutcome("stale", None, record, (), attempt)
        result = fn(record)
        if not isinstance(result, Change):
            return StepOutcome("rejected", copy_json(result.outcome), record, (), attempt)
        now = self.clock()
        new = advanced(record, result, now)
        updated = tx.run(
            "UPDATE flowc_instances SET flow_version = ?, graph_hash = ?, state = ?, version = ?, "
            "seq = ?, snapshot = ?, updated_at = ? WHERE id = ? AND version = ?",
            (
                new.flow_version,
                new.graph_hash,
                new.state,
                new.version,
                new.seq,
                self._json_in(new.snapshot),
                now,
                record.id,
                record.version,
            ),
        )
        if updated != 1:
            raise _LostRace(record)
        rows = self._insert_history(tx, record.id, record.seq, result.history)
        if result.timers is not None:
            self._replace_timers(tx, record.id, result.timers, timer)
        self._insert_effects(tx, record, result.effects, now)
        outcome = copy_json(result.outcome)
        if key is not None:
            tx.run(
                "INSERT INTO flowc_keys (instance_id, key, outcome, at) VALUES (?, ?, ?, ?)",
                (record.id, key, self._json_in(outcome), now),
            )
        return StepOutcome("committed", outcome, new, rows, attempt)

    def _replay_or_record(
        self, tx: Tx, instance_id: str, key: str | None, attempt: int
    ) -> StepOutcome | InstanceRecord:
        """The outcome stored under `key` (`replayed`), else the record the step runs on. On
        an attempt that locks the row, the lock comes first, so that the key check sees
        whatever the lock holder committed."""
        lock = self._lock_row(attempt)
        row = tx.one(_SELECT_RECORD + " FOR UPDATE", (instance_id,)) if lock else None
        if lock and row is None:
            raise InstanceNotFound(instance_id)
        if key is not None:
            found = tx.one(
                "SELECT outcome FROM flowc_keys WHERE instance_id = ? AND key = ?",
                (instance_id, key),
            )
            if found is not None:
                return StepOutcome("replayed", self._json_out(found[0]), attempts=attempt)
        if not lock:
            row = tx.one(_SELECT_RECORD, (instance_id,))
        if row is None:
            raise InstanceNotFound(instance_id)
        return self._record(row)

    def _consume(self, tx: Tx, instance_id: str, timer: TimerClaim) -> bool:
        """Delete the fired timer's row; False if it is gone (someone else fired it, or the
        state that armed it was left), and then the step must not run. On PostgreSQL the
        delete locks the row: a second worker firing it waits here, then finds it gone."""
        return (
            tx.run(
                "DELETE FROM flowc_timers WHERE instance_id = ? AND timer_id = ? AND deadline = ?",
                (instance_id, timer.timer_id, timer.deadline),
            )
            > 0
        )

    def _replace_timers(
        self, tx: Tx, instance_id: str, timers: Sequence[TimerSpec], fired: TimerClaim | None
    ) -> None:
        """Make the instance's timer rows `timers`, keeping unchanged rows (and their leases);
        the fired timer never comes back."""
        wanted = [
            t
            for t in timers
            if fired is None or (t.timer_id, t.deadline) != (fired.timer_id, fired.deadline)
        ]
        existing = [
            self._timer_row(r)
            for r in tx.all(
                f"SELECT {_TIMER_COLUMNS} FROM flowc_timers WHERE instance_id = ?", (instance_id,)
            )
        ]
        delete, write = plan_timers(existing, wanted)
        if delete:
            tx.many(
                "DELETE FROM flowc_timers WHERE instance_id = ? AND timer_id = ?",
                [(instance_id, tid) for tid in delete],
            )
        self._insert_timers(tx, instance_id, write)

    @store_errors
    def instances(
        self,
        *,
        flow: str | None = None,
        state: str | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[InstanceRecord]:
        check_page(limit, offset)
        columns = {"flow": flow, "state": state}
        parts = [f"{name} = ?" for name, value in columns.items() if value is not None]
        params: list[Any] = [value for value in columns.values() if value is not None]
        where = " WHERE " + " AND ".join(parts) if parts else ""
        with self._read() as tx:
            rows = tx.all(
                f"SELECT {_RECORD_COLUMNS} FROM flowc_instances{where} "
                "ORDER BY updated_at DESC, id LIMIT ? OFFSET ?",
                (*params, limit, offset),
            )
        return [self._record(r) for r in rows]

    @store_errors
    def history(
        self, instance_id: str, *, after: int | None = None, limit: int | None = None
    ) -> list[HistoryRow]:
        check_handle("id", instance_id)
        if limit is not None:
            check_page(limit, 0)
        query = (
            f"SELECT {_HISTORY_COLUMNS} FROM flowc_history WHERE instance_id = ? AND seq > ? "
            "ORDER BY seq"
        )
        params: list[Any] = [instance_id, -1 if after is None else after]
        if limit is not None:
            query += " LIMIT ?"
            params.append(limit)
        # One read transaction, so "no such instance" and the rows come from the same moment.
        with self._consistent_read() as tx:
            if tx.one(_EXISTS, (instance_id,)) is None:
                raise InstanceNotFound(instance_id)
            rows = tx.all(query, params)
        return [
            HistoryRow(
                r[0],
                r[1],
                r[2],
                r[3],
                r[4],
                r[5],
                self._json_out(r[6]),
                r[7],
                r[8],
                tuple(self._json_out(r[9]) or ()),
            )
            for r in rows
        ]

    @store_errors
    def timers(self, instance_id: str | None = None) -> list[TimerRow]:
        with self._read() as tx:
            if instance_id is None:
                rows = tx.all(
                    f"SELECT {_TIMER_COLUMNS} FROM flowc_timers "
                    "ORDER BY deadline, instance_id, timer_id"
                )
            else:
                check_handle("id", instance_id)
                if tx.one(_EXISTS, (instance_id,)) is None:
                    raise InstanceNotFound(instance_id)
                rows = tx.all(
                    f"SELECT {_TIMER_COLUMNS} FROM flowc_timers WHERE instance_id = ? "
                    "ORDER BY deadline, timer_id",
                    (instance_id,),
                )
        return [self._timer_row(r) for r in rows]

    @store_errors
    def delete(self, instance_id: str) -> bool:
        check_handle("id", instance_id)
        with self._write() as tx:
            return tx.run("DELETE FROM flowc_instances WHERE id = ?", (instance_id,)) > 0

    # -- timers --------------------------------------------------------------------------------

    @store_errors
    def release(self, claim: TimerClaim) -> None:
        with self._write() as tx:
            tx.run(
                "UPDATE flowc_timers SET lease_owner = NULL, lease_until = NULL "
                "WHERE instance_id = ? AND timer_id = ? AND lease_owner = ?",
                (claim.instance_id, claim.timer_id, claim.owner),
            )

    @store_errors
    def next_deadline(self) -> float | None:
        with self._read() as tx:
            row = tx.one(
                "SELECT MIN(deadline) FROM flowc_timers "
                "WHERE lease_until IS NULL OR lease_until < ?",
                (self.clock(),),
            )
        return None if row is None or row[0] is None else float(row[0])

    @store_errors
    def claim_due_timers(
        self, owner: str, *, limit: int = 100, lease: float = 30.0, now: float | None = None
    ) -> list[TimerClaim]:
        check_handle("owner", owner)
        check_page(limit, 0)
        now = self.clock() if now is None else now
        until = now + lease
        due = (
            f"SELECT {_TIMER_COLUMNS} FROM flowc_timers "
            "WHERE deadline <= ? AND (lease_until IS NULL OR lease_until < ?) "
            "ORDER BY deadline LIMIT ?"
        )
        rows = self._lease_due(due, [now, now, limit], owner, until)
        claims = [
            TimerClaim(r[0], r[1], r[2], r[3], self._json_out(r[4]), owner, until) for r in rows
        ]
        claims.sort(key=lambda c: (c.deadline, c.instance_id, c.timer_id))
        return claims

    def _lease_due(
        self, due: str, params: list[Any], owner: str, until: float
    ) -> Sequence[Sequence[Any]]:
        """Lease the timers the query `due` selects to `owner` until `until`, so that no other
        caller gets them; their rows (instance_id, timer_id, state, deadline, data first)."""
        raise NotImplementedError

    # -- compiled graphs -----------------------------------------------------------------------

    @store_errors
    def save_graph(self, graph_hash: str, flow: str, version: int, ir: str) -> None:
        with self._write() as tx:
            tx.run(
                "INSERT INTO flowc_graphs (hash, flow, version, ir, stored_at) "
                "VALUES (?, ?, ?, ?, ?) ON CONFLICT (hash) DO NOTHING",
                (graph_hash, flow, version, ir, self.clock()),
            )

    @store_errors
    def load_graph(self, graph_hash: str) -> str | None:
        with self._read() as tx:
            row = tx.one("SELECT ir FROM flowc_graphs WHERE hash = ?", (graph_hash,))
        return None if row is None else str(row[0])

    # -- the outbox ----------------------------------------------------------------------------

    @store_errors
    def pending_effects(self, *, limit: int = 100) -> list[OutboxEffect]:
        check_page(limit, 0)
        with self._read() as tx:
            rows = tx.all(
                f"SELECT {_OUTBOX_COLUMNS} FROM flowc_outbox ORDER BY id LIMIT ?", (limit,)
            )
        return [
            OutboxEffect(r[0], r[1], r[2], r[3], self._json_out(r[4]), r[5], r[6]) for r in rows
        ]

    @store_errors
    def mark_delivered(self, effects: Sequence[OutboxEffect]) -> None:
        if not effects:
            return
        with self._write() as tx:
            tx.many(
                "DELETE FROM flowc_outbox WHERE instance_id = ? AND COALESCE(incarnation, '') = ? "
                "AND seq = ? AND idx = ?",
                [(e.instance_id, e.incarnation or "", e.seq, e.index) for e in effects],
            )

    # -- rows ----------------------------------------------------------------------------------

    def _record(self, row: Sequence[Any]) -> InstanceRecord:
        return InstanceRecord(
            id=row[0],
            flow=row[1],
            flow_version=row[2],
            graph_hash=row[3],
            state=row[4],
            version=row[5],
            seq=row[6],
            snapshot=self._json_out(row[7]),
            created_at=row[8],
            updated_at=row[9],
            incarnation=row[10],
        )

    def _timer_row(self, row: Sequence[Any]) -> TimerRow:
        return TimerRow(row[0], row[1], row[2], row[3], self._json_out(row[4]), row[5], row[6])

    def _insert_history(
        self, tx: Tx, instance_id: str, last_seq: int, entries: Sequence[HistoryEntry]
    ) -> tuple[HistoryRow, ...]:
        rows = tuple(
            HistoryRow.of(instance_id, last_seq + i, e, copy_json(e.payload))
            for i, e in enumerate(entries, start=1)
        )
        if rows:
            tx.many(
                f"INSERT INTO flowc_history ({_HISTORY_COLUMNS}) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        r.instance_id,
                        r.seq,
                        r.at,
                        r.source,
                        r.target,
                        r.trigger,
                        self._json_or_null(r.payload),
                        r.reason,
                        r.kind,
                        self._json_in(list(r.via)) if r.via else None,
                    )
                    for r in rows
                ],
            )
        return rows

    def _insert_timers(self, tx: Tx, instance_id: str, timers: Sequence[TimerSpec]) -> None:
        if not timers:
            return
        tx.many(
            "INSERT INTO flowc_timers (instance_id, timer_id, state, deadline, data) "
            "VALUES (?, ?, ?, ?, ?)",
            [
                (instance_id, t.timer_id, t.state, t.deadline, self._json_or_null(t.data))
                for t in timers
            ],
        )
        self._timers_armed(tx)

    def _insert_effects(
        self, tx: Tx, record: InstanceRecord, effects: Sequence[EffectSpec], at: float
    ) -> None:
        if effects:
            tx.many(
                f"INSERT INTO flowc_outbox ({_OUTBOX_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        record.id,
                        e.seq,
                        e.index,
                        e.effect,
                        self._json_in(e.payload),
                        at,
                        record.incarnation,
                    )
                    for e in effects
                ],
            )


__all__ = ["SCHEMA_VERSION", "SQLStore", "Tx", "Verdict", "store_errors"]
