"""The store for many processes on many hosts: PostgreSQL through psycopg 3 and psycopg_pool.

Steps are optimistic: the record is read without a lock, the step function runs, and the
`UPDATE ... WHERE id = %s AND version = %s` decides. At READ COMMITTED an UPDATE that meets a row
another transaction is changing waits for it and then re-checks the condition on the new row, so
exactly one of two racing steps matches; the loser rolls back (nothing of it was written), reads
again and retries, by default holding the row lock this time (`lock_on_retry`). Due timers are
claimed with `FOR UPDATE SKIP LOCKED`, so concurrent workers take disjoint rows without waiting
on each other, and leased, so a dead worker's claims come back.

psycopg is imported here only, and this module only when a PostgreSQL URL is opened.
"""

from __future__ import annotations

import functools
import random
import time
from collections.abc import Callable, Sequence
from typing import Any, Concatenate, ParamSpec, TypeVar
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg.rows import TupleRow
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool, PoolTimeout

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
    conflict_outcome,
    copy_json,
    plan_timers,
)

SCHEMA_VERSION = 1

#: Serialises concurrent schema creation (CREATE TABLE IF NOT EXISTS is not safe against itself).
_SCHEMA_LOCK = 0x666C6F7763  # "flowc"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS flowc_meta (
  name text PRIMARY KEY,
  value text NOT NULL
);
CREATE TABLE IF NOT EXISTS flowc_instances (
  id text PRIMARY KEY,
  flow text NOT NULL,
  flow_version integer NOT NULL,
  graph_hash text NOT NULL,
  state text NOT NULL,
  version bigint NOT NULL,
  seq bigint NOT NULL,
  snapshot jsonb NOT NULL,
  created_at double precision NOT NULL,
  updated_at double precision NOT NULL
);
CREATE INDEX IF NOT EXISTS flowc_instances_flow_state ON flowc_instances (flow, state);
CREATE INDEX IF NOT EXISTS flowc_instances_updated ON flowc_instances (updated_at);
CREATE TABLE IF NOT EXISTS flowc_history (
  instance_id text NOT NULL REFERENCES flowc_instances (id) ON DELETE CASCADE,
  seq bigint NOT NULL,
  at double precision NOT NULL,
  source text,
  target text,
  trigger text,
  payload jsonb,
  reason text,
  kind text,
  via jsonb,
  PRIMARY KEY (instance_id, seq)
);
CREATE TABLE IF NOT EXISTS flowc_timers (
  instance_id text NOT NULL REFERENCES flowc_instances (id) ON DELETE CASCADE,
  timer_id text NOT NULL,
  state text NOT NULL,
  deadline double precision NOT NULL,
  data jsonb,
  lease_owner text,
  lease_until double precision,
  PRIMARY KEY (instance_id, timer_id)
);
CREATE INDEX IF NOT EXISTS flowc_timers_deadline ON flowc_timers (deadline);
CREATE TABLE IF NOT EXISTS flowc_keys (
  instance_id text NOT NULL REFERENCES flowc_instances (id) ON DELETE CASCADE,
  key text NOT NULL,
  outcome jsonb,
  at double precision NOT NULL,
  PRIMARY KEY (instance_id, key)
)
"""

#: Added after schema version 1 shipped, and created on its own when missing: one new table
#: locks nothing that running steps use, so an older database gains it safely.
_GRAPHS_TABLE = """
CREATE TABLE IF NOT EXISTS flowc_graphs (
  hash text PRIMARY KEY,
  flow text NOT NULL,
  version integer NOT NULL,
  ir text NOT NULL,
  stored_at double precision NOT NULL
)
"""

#: The outbox (effects committed with their steps, until delivered); added after schema version
#: 1 shipped, and created on its own when missing, as `flowc_graphs` is.
_OUTBOX_TABLE = """
CREATE TABLE IF NOT EXISTS flowc_outbox (
  id bigserial PRIMARY KEY,
  instance_id text NOT NULL,
  seq bigint NOT NULL,
  idx integer NOT NULL,
  effect text NOT NULL,
  payload jsonb NOT NULL,
  at double precision NOT NULL,
  UNIQUE (instance_id, seq, idx)
)
"""
_OUTBOX_COLUMNS = "instance_id, seq, idx, effect, payload, at"

#: flowc_history columns added after schema version 1 shipped (added to older databases).
_HISTORY_ADDED = (("kind", "text"), ("via", "jsonb"))

_RECORD_COLUMNS = (
    "id, flow, flow_version, graph_hash, state, version, seq, snapshot, created_at, updated_at"
)
_TIMER_COLUMNS = "instance_id, timer_id, state, deadline, data, lease_owner, lease_until"

#: Errors after which a step is simply tried again: it lost a race, nothing of it was written.
_RETRYABLE = (
    psycopg.errors.SerializationFailure,
    psycopg.errors.DeadlockDetected,
    psycopg.errors.UniqueViolation,
)

#: The channel a step notifies when it arms a timer, so that sleeping workers look again.
CHANNEL = "flowc_timers"

#: How long any statement waits for a lock (milliseconds) before the step ends as a
#: `conflict` and a read raises `StoreUnavailable`: another transaction holding a row or a
#: table that long is not a race worth waiting out. `?lock_timeout=MS` sets it.
LOCK_TIMEOUT_MS = 5000

#: How long opening the store waits for its first connection (seconds): an unreachable server
#: is reported then, not after the pool's default 30 s. `?connect_timeout=S` (libpq's own
#: parameter, which bounds each attempt too) sets it.
CONNECT_TIMEOUT_S = 5.0


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _store_errors(
    method: Callable[Concatenate[PostgresStore, _P], _R],
) -> Callable[Concatenate[PostgresStore, _P], _R]:
    """The server's failures as `StoreUnavailable` naming the store (without its password)."""

    def guarded(self: PostgresStore, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return method(self, *args, **kwargs)
        except PoolTimeout:
            raise StoreUnavailable(
                f"{self._name}: no connection to the PostgreSQL server could be had"
            ) from None
        except psycopg.errors.LockNotAvailable:
            raise StoreUnavailable(
                f"{self._name}: another transaction held a lock for longer than "
                f"lock_timeout ({self._lock_timeout_ms} ms)"
            ) from None
        except psycopg.OperationalError as exc:
            text = str(exc).strip()
            detail = text.splitlines()[0] if text else type(exc).__name__
            raise StoreUnavailable(f"{self._name}: {detail}") from None

    functools.update_wrapper(guarded, method)
    return guarded


class _LostRace(Exception):
    """Another step committed between our read and our update; nothing of ours was written."""

    def __init__(self, record: InstanceRecord) -> None:
        super().__init__(record.id)
        self.record = record


class PostgresStore:
    """`PostgresStore(conninfo)`; `min_size`/`max_size` size the connection pool (one
    connection per concurrent step; a step function that itself steps needs two).

    `lock_on_retry` (default on): a step that lost the optimistic race retries holding the
    instance's row lock (`SELECT ... FOR UPDATE`, waiting at most LOCK_TIMEOUT), so writers
    that pile onto one hot instance queue up instead of invalidating each other's work again
    and again. Off, every attempt is optimistic.

    `lock_timeout_ms` bounds every wait for a lock (LOCK_TIMEOUT_MS), `connect_timeout` the
    wait for the server when the store opens (CONNECT_TIMEOUT_S); either running out raises
    `StoreUnavailable` naming the store (a step whose lock wait ran out is a `conflict`)."""

    def __init__(
        self,
        conninfo: str,
        *,
        min_size: int = 1,
        max_size: int = 10,
        clock: Callable[[], float] = time.time,
        url: str | None = None,
        lock_on_retry: bool = True,
        lock_timeout_ms: int = LOCK_TIMEOUT_MS,
        connect_timeout: float = CONNECT_TIMEOUT_S,
    ) -> None:
        self.url = url if url is not None else conninfo
        self._name = _without_password(self.url)
        self._clock = clock
        self._lock_on_retry = lock_on_retry
        self._lock_timeout_ms = int(lock_timeout_ms)
        self._conninfo = conninfo
        self._listener: psycopg.Connection[TupleRow] | None = None
        self._pool: ConnectionPool[psycopg.Connection[TupleRow]] = ConnectionPool(
            conninfo,
            min_size=min_size,
            max_size=max_size,
            open=False,
            name="flowc",
            kwargs={"autocommit": False, "connect_timeout": max(1, round(connect_timeout))},
            configure=self._configure,
        )
        try:
            # One plain attempt first: an unreachable server is then reported with its reason,
            # once, instead of the pool retrying (and logging) until its timeout.
            try:
                psycopg.connect(
                    conninfo, connect_timeout=max(1, round(connect_timeout)), autocommit=True
                ).close()
            except psycopg.OperationalError as exc:
                text = str(exc).strip()
                detail = text.splitlines()[0] if text else type(exc).__name__
                raise StoreUnavailable(f"{self._name}: cannot connect: {detail}") from None
            try:
                self._pool.open(wait=True, timeout=connect_timeout)
            except PoolTimeout:
                raise StoreUnavailable(
                    f"{self._name}: cannot connect to the PostgreSQL server within "
                    f"{connect_timeout:g} s"
                ) from None
            self._init_schema()
        except BaseException:
            self._pool.close()
            raise

    def _configure(self, conn: psycopg.Connection[TupleRow]) -> None:
        conn.execute(f"SET lock_timeout = {self._lock_timeout_ms}")
        conn.commit()

    @_store_errors
    def _init_schema(self) -> None:
        with self._pool.connection() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_SCHEMA_LOCK,))
            # DDL only on a database without our tables: even CREATE INDEX IF NOT EXISTS locks
            # its table, and against running steps and claims that can deadlock.
            found = conn.execute("SELECT to_regclass('flowc_meta') IS NOT NULL").fetchone()
            if not (found and found[0]):
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        conn.execute(statement)
            graphs = conn.execute("SELECT to_regclass('flowc_graphs') IS NOT NULL").fetchone()
            if not (graphs and graphs[0]):
                conn.execute(_GRAPHS_TABLE)
            outbox = conn.execute("SELECT to_regclass('flowc_outbox') IS NOT NULL").fetchone()
            if not (outbox and outbox[0]):
                conn.execute(_OUTBOX_TABLE)
            have = {
                r[0]
                for r in conn.execute(
                    "SELECT attname FROM pg_attribute WHERE attrelid = 'flowc_history'::regclass "
                    "AND attnum > 0 AND NOT attisdropped"
                ).fetchall()
            }
            for column, kind in _HISTORY_ADDED:
                if column not in have:
                    # Metadata only (nullable, no default), and under lock_timeout.
                    conn.execute(f"ALTER TABLE flowc_history ADD COLUMN {column} {kind}")
            row = conn.execute(
                "SELECT value FROM flowc_meta WHERE name = 'schema_version'"
            ).fetchone()
            if row is None:
                conn.execute(
                    "INSERT INTO flowc_meta (name, value) VALUES ('schema_version', %s)",
                    (str(SCHEMA_VERSION),),
                )
            elif row[0] != str(SCHEMA_VERSION):
                raise SchemaMismatch(
                    f"the database has flowc schema version {row[0]}; this runtime uses "
                    f"{SCHEMA_VERSION}"
                )

    # -- instances -----------------------------------------------------------------------------

    @_store_errors
    def create(self, new: NewInstance) -> InstanceRecord:
        now = self._clock() if new.at is None else new.at
        record = InstanceRecord(
            id=new.id,
            flow=new.flow,
            flow_version=new.flow_version,
            graph_hash=new.graph_hash,
            state=new.state,
            version=1,
            seq=new.last_seq,
            snapshot=copy_json(new.snapshot),
            created_at=now,
            updated_at=now,
        )
        _, timers = plan_timers([], new.timers)
        try:
            with self._pool.connection() as conn, conn.transaction():
                conn.execute(
                    f"INSERT INTO flowc_instances ({_RECORD_COLUMNS}) "
                    "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                    (
                        record.id,
                        record.flow,
                        record.flow_version,
                        record.graph_hash,
                        record.state,
                        record.version,
                        record.seq,
                        Jsonb(record.snapshot),
                        now,
                        now,
                    ),
                )
                _insert_history(conn, new.id, new.first_seq - 1, new.history)
                _insert_timers(conn, new.id, timers)
                _insert_effects(conn, new.id, new.effects, now)
                if timers:
                    _notify(conn)
        except psycopg.errors.UniqueViolation:
            raise InstanceExists(new.id) from None
        return record

    @_store_errors
    def load(self, instance_id: str) -> InstanceRecord:
        with self._pool.connection() as conn:
            row = conn.execute(
                f"SELECT {_RECORD_COLUMNS} FROM flowc_instances WHERE id = %s", (instance_id,)
            ).fetchone()
        if row is None:
            raise InstanceNotFound(instance_id)
        return _record(row)

    @_store_errors
    def step(
        self,
        instance_id: str,
        fn: StepFn,
        *,
        key: str | None = None,
        timer: TimerClaim | None = None,
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
    ) -> StepOutcome:
        record: InstanceRecord | None = None
        for attempt in range(1, max_attempts + 1):
            lock = self._lock_on_retry and attempt > 1
            try:
                with self._pool.connection() as conn, conn.transaction():
                    return self._step_once(conn, instance_id, fn, key, timer, attempt, lock)
            except _LostRace as lost:
                record = lost.record
            except _RETRYABLE:
                pass
            except psycopg.errors.LockNotAvailable:
                # Someone holds the instance (or its table) for longer than lock_timeout:
                # waiting again would only multiply the wait.
                return StepOutcome("conflict", conflict_outcome(None, attempt), record, (), attempt)
            if not self._lock_on_retry:
                time.sleep(random.uniform(0, min(0.05, 0.001 * 2**attempt)))
        state = record.state if record is not None else None
        return StepOutcome(
            "conflict", conflict_outcome(state, max_attempts), record, (), max_attempts
        )

    def _step_once(
        self,
        conn: psycopg.Connection[TupleRow],
        instance_id: str,
        fn: StepFn,
        key: str | None,
        timer: TimerClaim | None,
        attempt: int,
        lock: bool,
    ) -> StepOutcome:
        if lock:
            # Lock first, so that the key check below sees whatever the lock holder committed.
            row = conn.execute(
                f"SELECT {_RECORD_COLUMNS} FROM flowc_instances WHERE id = %s FOR UPDATE",
                (instance_id,),
            ).fetchone()
            if row is None:
                raise InstanceNotFound(instance_id)
        if key is not None:
            found = conn.execute(
                "SELECT outcome FROM flowc_keys WHERE instance_id = %s AND key = %s",
                (instance_id, key),
            ).fetchone()
            if found is not None:
                return StepOutcome("replayed", found[0], attempts=attempt)
        if not lock:
            row = conn.execute(
                f"SELECT {_RECORD_COLUMNS} FROM flowc_instances WHERE id = %s", (instance_id,)
            ).fetchone()
        if row is None:
            raise InstanceNotFound(instance_id)
        record = _record(row)
        if timer is not None:
            # Deleting locks the row: a second worker firing the same timer waits here, then
            # finds it gone (stale) once the first commits, or fires it if the first rolled back.
            gone = conn.execute(
                "DELETE FROM flowc_timers WHERE instance_id = %s AND timer_id = %s "
                "AND deadline = %s",
                (instance_id, timer.timer_id, timer.deadline),
            ).rowcount
            if gone == 0:
                return StepOutcome("stale", None, record, (), attempt)
        result = fn(record)
        if not isinstance(result, Change):
            return StepOutcome("rejected", copy_json(result.outcome), record, (), attempt)
        now = self._clock()
        new = InstanceRecord(
            id=record.id,
            flow=record.flow,
            flow_version=record.flow_version
            if result.flow_version is None
            else result.flow_version,
            graph_hash=record.graph_hash if result.graph_hash is None else result.graph_hash,
            state=result.state,
            version=record.version + 1,
            seq=record.seq + len(result.history),
            snapshot=copy_json(result.snapshot),
            created_at=record.created_at,
            updated_at=now,
        )
        updated = conn.execute(
            "UPDATE flowc_instances SET flow_version = %s, graph_hash = %s, state = %s, "
            "version = %s, seq = %s, snapshot = %s, updated_at = %s "
            "WHERE id = %s AND version = %s",
            (
                new.flow_version,
                new.graph_hash,
                new.state,
                new.version,
                new.seq,
                Jsonb(new.snapshot),
                now,
                record.id,
                record.version,
            ),
        ).rowcount
        if updated != 1:
            raise _LostRace(record)
        rows = _insert_history(conn, record.id, record.seq, result.history)
        if result.timers is not None:
            wanted = [
                t
                for t in result.timers
                if timer is None or (t.timer_id, t.deadline) != (timer.timer_id, timer.deadline)
            ]
            existing = [
                _timer_row(r)
                for r in conn.execute(
                    f"SELECT {_TIMER_COLUMNS} FROM flowc_timers WHERE instance_id = %s",
                    (record.id,),
                ).fetchall()
            ]
            delete, write = plan_timers(existing, wanted)
            if delete:
                conn.execute(
                    "DELETE FROM flowc_timers WHERE instance_id = %s AND timer_id = ANY(%s)",
                    (record.id, delete),
                )
            _insert_timers(conn, record.id, write)
            if write:
                _notify(conn)
        _insert_effects(conn, record.id, result.effects, now)
        outcome = copy_json(result.outcome)
        if key is not None:
            conn.execute(
                "INSERT INTO flowc_keys (instance_id, key, outcome, at) VALUES (%s, %s, %s, %s)",
                (record.id, key, Jsonb(outcome), now),
            )
        return StepOutcome("committed", outcome, new, rows, attempt)

    @_store_errors
    def instances(
        self,
        *,
        flow: str | None = None,
        state: str | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[InstanceRecord]:
        parts = [f"{name} = %s" for name, v in (("flow", flow), ("state", state)) if v is not None]
        params: list[Any] = [v for v in (flow, state) if v is not None]
        where = " WHERE " + " AND ".join(parts) if parts else ""
        with self._pool.connection() as conn:
            rows = conn.execute(
                f"SELECT {_RECORD_COLUMNS} FROM flowc_instances{where} "
                "ORDER BY updated_at DESC, id LIMIT %s OFFSET %s",
                (*params, limit, offset),
            ).fetchall()
        return [_record(r) for r in rows]

    @_store_errors
    def history(
        self, instance_id: str, *, after: int | None = None, limit: int | None = None
    ) -> list[HistoryRow]:
        with self._pool.connection() as conn, conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            if (
                conn.execute(
                    "SELECT 1 FROM flowc_instances WHERE id = %s", (instance_id,)
                ).fetchone()
                is None
            ):
                raise InstanceNotFound(instance_id)
            rows = conn.execute(
                "SELECT instance_id, seq, at, source, target, trigger, payload, reason, kind, "
                "via FROM flowc_history WHERE instance_id = %s AND seq > %s ORDER BY seq "
                "LIMIT %s",
                (instance_id, -1 if after is None else after, limit),
            ).fetchall()
        return [
            HistoryRow(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], tuple(r[9] or ()))
            for r in rows
        ]

    @_store_errors
    def timers(self, instance_id: str | None = None) -> list[TimerRow]:
        with self._pool.connection() as conn:
            if instance_id is None:
                rows = conn.execute(
                    f"SELECT {_TIMER_COLUMNS} FROM flowc_timers "
                    "ORDER BY deadline, instance_id, timer_id"
                ).fetchall()
            else:
                if (
                    conn.execute(
                        "SELECT 1 FROM flowc_instances WHERE id = %s", (instance_id,)
                    ).fetchone()
                    is None
                ):
                    raise InstanceNotFound(instance_id)
                rows = conn.execute(
                    f"SELECT {_TIMER_COLUMNS} FROM flowc_timers "
                    "WHERE instance_id = %s ORDER BY deadline, timer_id",
                    (instance_id,),
                ).fetchall()
        return [_timer_row(r) for r in rows]

    # -- timers --------------------------------------------------------------------------------

    @_store_errors
    def claim_due_timers(
        self, owner: str, *, limit: int = 100, lease: float = 30.0, now: float | None = None
    ) -> list[TimerClaim]:
        now = self._clock() if now is None else now
        until = now + lease
        with self._pool.connection() as conn, conn.transaction():
            rows = conn.execute(
                "UPDATE flowc_timers AS t SET lease_owner = %s, lease_until = %s "
                "FROM (SELECT instance_id, timer_id FROM flowc_timers "
                "      WHERE deadline <= %s AND (lease_until IS NULL OR lease_until < %s) "
                "      ORDER BY deadline LIMIT %s FOR UPDATE SKIP LOCKED) AS due "
                "WHERE t.instance_id = due.instance_id AND t.timer_id = due.timer_id "
                "RETURNING t.instance_id, t.timer_id, t.state, t.deadline, t.data",
                (owner, until, now, now, limit),
            ).fetchall()
        rows.sort(key=lambda r: (r[3], r[0], r[1]))
        return [TimerClaim(r[0], r[1], r[2], r[3], r[4], owner, until) for r in rows]

    @_store_errors
    def release(self, claim: TimerClaim) -> None:
        with self._pool.connection() as conn, conn.transaction():
            conn.execute(
                "UPDATE flowc_timers SET lease_owner = NULL, lease_until = NULL "
                "WHERE instance_id = %s AND timer_id = %s AND lease_owner = %s",
                (claim.instance_id, claim.timer_id, claim.owner),
            )

    @_store_errors
    def next_deadline(self) -> float | None:
        with self._pool.connection() as conn:
            row = conn.execute(
                "SELECT MIN(deadline) FROM flowc_timers "
                "WHERE lease_until IS NULL OR lease_until < %s",
                (self._clock(),),
            ).fetchone()
        return None if row is None or row[0] is None else float(row[0])

    @_store_errors
    def delete(self, instance_id: str) -> bool:
        with self._pool.connection() as conn, conn.transaction():
            cur = conn.execute("DELETE FROM flowc_instances WHERE id = %s", (instance_id,))
            return cur.rowcount > 0

    def wait_for_timers(self, timeout: float) -> bool:
        """Sleep up to `timeout` seconds, waking early when any process arms a timer
        (LISTEN/NOTIFY). True if woken. Only a hint: workers poll regardless, and a listening
        connection that fails just makes this a plain sleep until it is opened again."""
        try:
            if self._listener is None or self._listener.closed:
                self._listener = psycopg.connect(self._conninfo, autocommit=True)
                self._listener.execute(f"LISTEN {CHANNEL}")
            for _ in self._listener.notifies(timeout=timeout, stop_after=1):
                return True
            return False
        except psycopg.Error:
            if self._listener is not None:
                self._listener.close()
            self._listener = None
            time.sleep(timeout)
            return False

    # -- compiled graphs -----------------------------------------------------------------------

    @_store_errors
    def save_graph(self, graph_hash: str, flow: str, version: int, ir: str) -> None:
        with self._pool.connection() as conn, conn.transaction():
            conn.execute(
                "INSERT INTO flowc_graphs (hash, flow, version, ir, stored_at) "
                "VALUES (%s, %s, %s, %s, %s) ON CONFLICT (hash) DO NOTHING",
                (graph_hash, flow, version, ir, self._clock()),
            )

    @_store_errors
    def load_graph(self, graph_hash: str) -> str | None:
        with self._pool.connection() as conn:
            row = conn.execute(
                "SELECT ir FROM flowc_graphs WHERE hash = %s", (graph_hash,)
            ).fetchone()
        return None if row is None else str(row[0])

    # -- the outbox ----------------------------------------------------------------------------

    @_store_errors
    def pending_effects(self, *, limit: int = 100) -> list[OutboxEffect]:
        with self._pool.connection() as conn:
            rows = conn.execute(
                f"SELECT {_OUTBOX_COLUMNS} FROM flowc_outbox ORDER BY id LIMIT %s", (limit,)
            ).fetchall()
        return [OutboxEffect(r[0], r[1], r[2], r[3], r[4], r[5]) for r in rows]

    @_store_errors
    def mark_delivered(self, effects: Sequence[OutboxEffect]) -> None:
        if not effects:
            return
        with self._pool.connection() as conn, conn.transaction(), conn.cursor() as cur:
            cur.executemany(
                "DELETE FROM flowc_outbox WHERE instance_id = %s AND seq = %s AND idx = %s",
                [(e.instance_id, e.seq, e.index) for e in effects],
            )

    def close(self) -> None:
        if self._listener is not None:
            self._listener.close()
            self._listener = None
        self._pool.close()


def _without_password(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit(parts._replace(netloc=netloc))


def _record(row: Sequence[Any]) -> InstanceRecord:
    return InstanceRecord(
        id=row[0],
        flow=row[1],
        flow_version=row[2],
        graph_hash=row[3],
        state=row[4],
        version=row[5],
        seq=row[6],
        snapshot=row[7],
        created_at=row[8],
        updated_at=row[9],
    )


def _timer_row(row: Sequence[Any]) -> TimerRow:
    return TimerRow(row[0], row[1], row[2], row[3], row[4], row[5], row[6])


def _notify(conn: psycopg.Connection[TupleRow]) -> None:
    # Delivered at commit, and only then: a rolled-back step wakes nobody.
    conn.execute(f"NOTIFY {CHANNEL}")


def _json(value: Json) -> Jsonb | None:
    return None if value is None else Jsonb(value)


def _insert_history(
    conn: psycopg.Connection[TupleRow],
    instance_id: str,
    last_seq: int,
    entries: Sequence[HistoryEntry],
) -> tuple[HistoryRow, ...]:
    rows = tuple(
        HistoryRow.of(instance_id, last_seq + i, e, copy_json(e.payload))
        for i, e in enumerate(entries, start=1)
    )
    if rows:
        with conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO flowc_history (instance_id, seq, at, source, target, trigger, "
                "payload, reason, kind, via) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s)",
                [
                    (
                        r.instance_id,
                        r.seq,
                        r.at,
                        r.source,
                        r.target,
                        r.trigger,
                        _json(r.payload),
                        r.reason,
                        r.kind,
                        Jsonb(list(r.via)) if r.via else None,
                    )
                    for r in rows
                ],
            )
    return rows


def _insert_effects(
    conn: psycopg.Connection[TupleRow], instance_id: str, effects: Sequence[EffectSpec], at: float
) -> None:
    if effects:
        with conn.cursor() as cur:
            cur.executemany(
                f"INSERT INTO flowc_outbox ({_OUTBOX_COLUMNS}) VALUES (%s, %s, %s, %s, %s, %s)",
                [(instance_id, e.seq, e.index, e.effect, Jsonb(e.payload), at) for e in effects],
            )


def _insert_timers(
    conn: psycopg.Connection[TupleRow], instance_id: str, timers: Sequence[TimerSpec]
) -> None:
    if timers:
        with conn.cursor() as cur:
            cur.executemany(
                "INSERT INTO flowc_timers (instance_id, timer_id, state, deadline, data) "
                "VALUES (%s, %s, %s, %s, %s)",
                [(instance_id, t.timer_id, t.state, t.deadline, _json(t.data)) for t in timers],
            )
