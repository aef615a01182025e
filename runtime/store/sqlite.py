"""The default store: one SQLite file, shared by the threads and processes of one machine.

WAL lets readers run beside the one writer; every read-modify-write is a `BEGIN IMMEDIATE`
transaction, so a step takes the write lock before it reads and never has to upgrade a read
lock (the upgrade is where SQLite gives up with SQLITE_BUSY instead of waiting). Waiting for the
lock is bounded by `busy_timeout`; a step that cannot get it in time counts as a lost race and
is retried like a version conflict. Reads take no lock: opening a store whose tables are
current only reads them. The sqlite3 module runs with `isolation_level=None`, so it never opens
or commits a transaction behind our back.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import random
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, Concatenate, ParamSpec, TypeVar

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
    dumps,
    plan_timers,
)

SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS flowc_meta (
  name TEXT PRIMARY KEY,
  value TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS flowc_instances (
  id TEXT PRIMARY KEY,
  flow TEXT NOT NULL,
  flow_version INTEGER NOT NULL,
  graph_hash TEXT NOT NULL,
  state TEXT NOT NULL,
  version INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  snapshot TEXT NOT NULL,
  created_at REAL NOT NULL,
  updated_at REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS flowc_instances_flow_state ON flowc_instances (flow, state);
CREATE INDEX IF NOT EXISTS flowc_instances_updated ON flowc_instances (updated_at);
CREATE TABLE IF NOT EXISTS flowc_history (
  instance_id TEXT NOT NULL REFERENCES flowc_instances (id) ON DELETE CASCADE,
  seq INTEGER NOT NULL,
  at REAL NOT NULL,
  source TEXT,
  target TEXT,
  trigger TEXT,
  payload TEXT,
  reason TEXT,
  kind TEXT,
  via TEXT,
  PRIMARY KEY (instance_id, seq)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS flowc_timers (
  instance_id TEXT NOT NULL REFERENCES flowc_instances (id) ON DELETE CASCADE,
  timer_id TEXT NOT NULL,
  state TEXT NOT NULL,
  deadline REAL NOT NULL,
  data TEXT,
  lease_owner TEXT,
  lease_until REAL,
  PRIMARY KEY (instance_id, timer_id)
);
CREATE INDEX IF NOT EXISTS flowc_timers_deadline ON flowc_timers (deadline);
CREATE TABLE IF NOT EXISTS flowc_graphs (
  hash TEXT PRIMARY KEY,
  flow TEXT NOT NULL,
  version INTEGER NOT NULL,
  ir TEXT NOT NULL,
  stored_at REAL NOT NULL
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS flowc_keys (
  instance_id TEXT NOT NULL REFERENCES flowc_instances (id) ON DELETE CASCADE,
  key TEXT NOT NULL,
  outcome TEXT NOT NULL,
  at REAL NOT NULL,
  PRIMARY KEY (instance_id, key)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS flowc_outbox (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  instance_id TEXT NOT NULL,
  seq INTEGER NOT NULL,
  idx INTEGER NOT NULL,
  effect TEXT NOT NULL,
  payload TEXT NOT NULL,
  at REAL NOT NULL,
  UNIQUE (instance_id, seq, idx)
);
"""
#: The outbox (effects committed with their steps, until delivered) came after schema version 1
#: shipped: `_init_schema` creates it in an older file (the other tables exist already).
_OUTBOX_COLUMNS = "instance_id, seq, idx, effect, payload, at"

_RECORD_COLUMNS = (
    "id, flow, flow_version, graph_hash, state, version, seq, snapshot, created_at, updated_at"
)
_TIMER_COLUMNS = "instance_id, timer_id, state, deadline, data, lease_owner, lease_until"


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _store_errors(
    method: Callable[Concatenate[SQLiteStore, _P], _R],
) -> Callable[Concatenate[SQLiteStore, _P], _R]:
    """SQLite's own errors as `StoreUnavailable` naming the store: a damaged file, or a write
    lock not had within busy_timeout where no retry applies."""

    def guarded(self: SQLiteStore, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return method(self, *args, **kwargs)
        except _Busy:
            raise StoreUnavailable(
                f"{self.url}: the database is locked by another writer (waited "
                f"{self._busy_timeout} ms)"
            ) from None
        except sqlite3.DatabaseError as exc:
            raise _unavailable(self.url, exc) from None

    functools.update_wrapper(guarded, method)
    return guarded


#: flowc_history columns added after schema version 1 shipped (added to older files on open).
_HISTORY_ADDED = ("kind", "via")


class _Busy(Exception):
    """The write lock was not had within busy_timeout."""


#: SQLite's `synchronous` by default: FULL syncs the WAL to disk at every commit, so a
#: committed step survives a power cut. NORMAL (a URL's `?synchronous=normal`) survives any
#: process crash but may lose the last commits to one; see docs/persistence.md.
DEFAULT_SYNCHRONOUS = "FULL"


class SQLiteStore:
    """`SQLiteStore(path)`; `busy_timeout` in milliseconds; `synchronous` is SQLite's pragma
    (default FULL: every commit is on disk; NORMAL in WAL mode survives any process crash but
    not a power loss)."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        busy_timeout: int = 10_000,
        synchronous: str = DEFAULT_SYNCHRONOUS,
        clock: Callable[[], float] = time.time,
        url: str | None = None,
    ) -> None:
        self.path = os.fspath(path)
        self.url = url if url is not None else f"sqlite:///{self.path}"
        if synchronous.upper() not in {"OFF", "NORMAL", "FULL", "EXTRA"}:
            raise ValueError(f"synchronous must be OFF, NORMAL, FULL or EXTRA, not {synchronous!r}")
        self._busy_timeout = int(busy_timeout)
        self._synchronous = synchronous.upper()
        self._clock = clock
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []
        self._all_lock = threading.Lock()
        self._init_schema()

    # -- connections ---------------------------------------------------------------------------

    def _conn(self) -> sqlite3.Connection:
        """One connection per thread and process (a connection must not cross a fork)."""
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is not None and self._local.pid == os.getpid():
            return conn
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False, timeout=0)
        conn.execute(f"PRAGMA busy_timeout = {self._busy_timeout}")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute(f"PRAGMA synchronous = {self._synchronous}")
        conn.execute("PRAGMA foreign_keys = ON")
        self._local.conn = conn
        self._local.pid = os.getpid()
        with self._all_lock:
            self._all.append(conn)
        return conn

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        conn = self._conn()
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            if _is_busy(exc):
                raise _Busy from exc
            raise
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    def _init_schema(self) -> None:
        """Create or complete the tables. A database that already has them all is only read,
        so opening a store never waits for (or fails behind) another process's write."""
        try:
            if self._schema_ready(self._conn()):
                return
            with self._write() as conn:
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        conn.execute(statement)
                # Columns added after schema version 1 shipped; NULL in older rows.
                have = {r[1] for r in conn.execute("PRAGMA table_info(flowc_history)")}
                for column in _HISTORY_ADDED:
                    if column not in have:
                        conn.execute(f"ALTER TABLE flowc_history ADD COLUMN {column} TEXT")
                row = conn.execute(
                    "SELECT value FROM flowc_meta WHERE name = 'schema_version'"
                ).fetchone()
                if row is None:
                    conn.execute(
                        "INSERT INTO flowc_meta (name, value) VALUES ('schema_version', ?)",
                        (str(SCHEMA_VERSION),),
                    )
                else:
                    self._check_version(row[0])
        except _Busy:
            raise StoreUnavailable(
                f"{self.url}: the database is locked by another writer (waited "
                f"{self._busy_timeout} ms to create its tables)"
            ) from None
        except sqlite3.DatabaseError as exc:
            raise _unavailable(self.url, exc) from None

    def _schema_ready(self, conn: sqlite3.Connection) -> bool:
        try:
            row = conn.execute(
                "SELECT value FROM flowc_meta WHERE name = 'schema_version'"
            ).fetchone()
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc):
                return False
            raise
        if row is None:
            return False
        self._check_version(row[0])
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        required = {"flowc_instances", "flowc_history", "flowc_timers", "flowc_graphs"}
        if not required | {"flowc_outbox"} <= tables:
            return False
        have = {r[1] for r in conn.execute("PRAGMA table_info(flowc_history)")}
        return set(_HISTORY_ADDED) <= have

    def _check_version(self, found: str) -> None:
        if found != str(SCHEMA_VERSION):
            raise SchemaMismatch(
                f"{self.path} has flowc schema version {found}; this runtime uses {SCHEMA_VERSION}"
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
            snapshot=json.loads(dumps(new.snapshot)),
            created_at=now,
            updated_at=now,
        )
        _, timers = plan_timers([], new.timers)
        with self._write() as conn:
            try:
                conn.execute(
                    f"INSERT INTO flowc_instances ({_RECORD_COLUMNS}) VALUES (?,?,?,?,?,?,?,?,?,?)",
                    (
                        record.id,
                        record.flow,
                        record.flow_version,
                        record.graph_hash,
                        record.state,
                        record.version,
                        record.seq,
                        dumps(record.snapshot),
                        now,
                        now,
                    ),
                )
            except sqlite3.IntegrityError:
                raise InstanceExists(new.id) from None
            _insert_history(conn, new.id, new.first_seq - 1, new.history)
            _insert_timers(conn, new.id, timers)
            _insert_effects(conn, new.id, new.effects, now)
        return record

    @_store_errors
    def load(self, instance_id: str) -> InstanceRecord:
        row = (
            self._conn()
            .execute(f"SELECT {_RECORD_COLUMNS} FROM flowc_instances WHERE id = ?", (instance_id,))
            .fetchone()
        )
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
        state: str | None = None
        for attempt in range(1, max_attempts + 1):
            try:
                with self._write() as conn:
                    return self._step_once(conn, instance_id, fn, key, timer, attempt)
            except _Busy:
                pass
            except sqlite3.OperationalError as exc:
                # A lock that could not be had in the middle of a transaction: lost the race.
                if not _is_busy(exc):
                    raise
            time.sleep(random.uniform(0, min(0.05, 0.001 * 2**attempt)))
        return StepOutcome(
            "conflict", conflict_outcome(state, max_attempts), None, (), max_attempts
        )

    def _step_once(
        self,
        conn: sqlite3.Connection,
        instance_id: str,
        fn: StepFn,
        key: str | None,
        timer: TimerClaim | None,
        attempt: int,
    ) -> StepOutcome:
        if key is not None:
            found = conn.execute(
                "SELECT outcome FROM flowc_keys WHERE instance_id = ? AND key = ?",
                (instance_id, key),
            ).fetchone()
            if found is not None:
                return StepOutcome("replayed", json.loads(found[0]), attempts=attempt)
        row = conn.execute(
            f"SELECT {_RECORD_COLUMNS} FROM flowc_instances WHERE id = ?", (instance_id,)
        ).fetchone()
        if row is None:
            raise InstanceNotFound(instance_id)
        record = _record(row)
        if timer is not None:
            # Consuming the timer first: if it is gone, someone else fired it or the state
            # that armed it was left, and the step must not run at all.
            gone = conn.execute(
                "DELETE FROM flowc_timers WHERE instance_id = ? AND timer_id = ? AND deadline = ?",
                (instance_id, timer.timer_id, timer.deadline),
            ).rowcount
            if gone == 0:
                return StepOutcome("stale", None, record, (), attempt)
        result = fn(record)
        if not isinstance(result, Change):
            return StepOutcome("rejected", _roundtrip(result.outcome), record, (), attempt)
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
            snapshot=json.loads(dumps(result.snapshot)),
            created_at=record.created_at,
            updated_at=now,
        )
        updated = conn.execute(
            "UPDATE flowc_instances SET flow_version = ?, graph_hash = ?, state = ?, version = ?, "
            "seq = ?, snapshot = ?, updated_at = ? WHERE id = ? AND version = ?",
            (
                new.flow_version,
                new.graph_hash,
                new.state,
                new.version,
                new.seq,
                dumps(new.snapshot),
                now,
                record.id,
                record.version,
            ),
        ).rowcount
        if updated != 1:  # pragma: no cover - impossible while every writer holds the lock
            raise sqlite3.OperationalError("database is locked (version moved under the lock)")
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
                    f"SELECT {_TIMER_COLUMNS} FROM flowc_timers WHERE instance_id = ?",
                    (record.id,),
                )
            ]
            delete, write = plan_timers(existing, wanted)
            conn.executemany(
                "DELETE FROM flowc_timers WHERE instance_id = ? AND timer_id = ?",
                [(record.id, tid) for tid in delete],
            )
            _insert_timers(conn, record.id, write)
        _insert_effects(conn, record.id, result.effects, now)
        outcome = dumps(result.outcome)
        if key is not None:
            conn.execute(
                "INSERT INTO flowc_keys (instance_id, key, outcome, at) VALUES (?, ?, ?, ?)",
                (record.id, key, outcome, now),
            )
        return StepOutcome("committed", json.loads(outcome), new, rows, attempt)

    @_store_errors
    def instances(
        self,
        *,
        flow: str | None = None,
        state: str | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> list[InstanceRecord]:
        where, params = _filters(flow=flow, state=state)
        rows = (
            self._conn()
            .execute(
                f"SELECT {_RECORD_COLUMNS} FROM flowc_instances{where} "
                "ORDER BY updated_at DESC, id LIMIT ? OFFSET ?",
                (*params, limit, offset),
            )
            .fetchall()
        )
        return [_record(r) for r in rows]

    @_store_errors
    def history(
        self, instance_id: str, *, after: int | None = None, limit: int | None = None
    ) -> list[HistoryRow]:
        conn = self._conn()
        # One read transaction, so "no such instance" and the rows come from the same moment.
        conn.execute("BEGIN")
        try:
            if (
                conn.execute(
                    "SELECT 1 FROM flowc_instances WHERE id = ?", (instance_id,)
                ).fetchone()
                is None
            ):
                raise InstanceNotFound(instance_id)
            rows = conn.execute(
                "SELECT instance_id, seq, at, source, target, trigger, payload, reason, kind, "
                "via FROM flowc_history WHERE instance_id = ? AND seq > ? ORDER BY seq LIMIT ?",
                (instance_id, -1 if after is None else after, -1 if limit is None else limit),
            ).fetchall()
        finally:
            conn.execute("COMMIT")
        return [
            HistoryRow(r[0], r[1], r[2], r[3], r[4], r[5], _loads(r[6]), r[7], r[8], _via(r[9]))
            for r in rows
        ]

    @_store_errors
    def timers(self, instance_id: str | None = None) -> list[TimerRow]:
        conn = self._conn()
        if instance_id is None:
            rows = conn.execute(
                f"SELECT {_TIMER_COLUMNS} FROM flowc_timers "
                "ORDER BY deadline, instance_id, timer_id"
            ).fetchall()
        else:
            if (
                conn.execute(
                    "SELECT 1 FROM flowc_instances WHERE id = ?", (instance_id,)
                ).fetchone()
                is None
            ):
                raise InstanceNotFound(instance_id)
            rows = conn.execute(
                f"SELECT {_TIMER_COLUMNS} FROM flowc_timers WHERE instance_id = ? "
                "ORDER BY deadline, timer_id",
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
        try:
            with self._write() as conn:
                rows = conn.execute(
                    f"SELECT {_TIMER_COLUMNS} FROM flowc_timers "
                    "WHERE deadline <= ? AND (lease_until IS NULL OR lease_until < ?) "
                    "ORDER BY deadline LIMIT ?",
                    (now, now, limit),
                ).fetchall()
                conn.executemany(
                    "UPDATE flowc_timers SET lease_owner = ?, lease_until = ? "
                    "WHERE instance_id = ? AND timer_id = ?",
                    [(owner, until, r[0], r[1]) for r in rows],
                )
        except _Busy:
            return []
        return [TimerClaim(r[0], r[1], r[2], r[3], _loads(r[4]), owner, until) for r in rows]

    @_store_errors
    def release(self, claim: TimerClaim) -> None:
        with self._write() as conn:
            conn.execute(
                "UPDATE flowc_timers SET lease_owner = NULL, lease_until = NULL "
                "WHERE instance_id = ? AND timer_id = ? AND lease_owner = ?",
                (claim.instance_id, claim.timer_id, claim.owner),
            )

    @_store_errors
    def next_deadline(self) -> float | None:
        row = (
            self._conn()
            .execute(
                "SELECT MIN(deadline) FROM flowc_timers "
                "WHERE lease_until IS NULL OR lease_until < ?",
                (self._clock(),),
            )
            .fetchone()
        )
        return None if row is None or row[0] is None else float(row[0])

    @_store_errors
    def delete(self, instance_id: str) -> bool:
        with self._write() as conn:
            return (
                conn.execute("DELETE FROM flowc_instances WHERE id = ?", (instance_id,)).rowcount
                > 0
            )

    # -- compiled graphs -----------------------------------------------------------------------

    @_store_errors
    def save_graph(self, graph_hash: str, flow: str, version: int, ir: str) -> None:
        with self._write() as conn:
            conn.execute(
                "INSERT OR IGNORE INTO flowc_graphs (hash, flow, version, ir, stored_at) "
                "VALUES (?, ?, ?, ?, ?)",
                (graph_hash, flow, version, ir, self._clock()),
            )

    @_store_errors
    def load_graph(self, graph_hash: str) -> str | None:
        row = (
            self._conn()
            .execute("SELECT ir FROM flowc_graphs WHERE hash = ?", (graph_hash,))
            .fetchone()
        )
        return None if row is None else str(row[0])

    # -- the outbox ----------------------------------------------------------------------------

    @_store_errors
    def pending_effects(self, *, limit: int = 100) -> list[OutboxEffect]:
        rows = (
            self._conn()
            .execute(f"SELECT {_OUTBOX_COLUMNS} FROM flowc_outbox ORDER BY id LIMIT ?", (limit,))
            .fetchall()
        )
        return [OutboxEffect(r[0], r[1], r[2], r[3], json.loads(r[4]), r[5]) for r in rows]

    @_store_errors
    def mark_delivered(self, effects: Sequence[OutboxEffect]) -> None:
        if not effects:
            return
        with self._write() as conn:
            conn.executemany(
                "DELETE FROM flowc_outbox WHERE instance_id = ? AND seq = ? AND idx = ?",
                [(e.instance_id, e.seq, e.index) for e in effects],
            )

    def close(self) -> None:
        with self._all_lock:
            conns, self._all = self._all, []
        for conn in conns:
            # A connection of another thread may already be closed.
            with contextlib.suppress(sqlite3.ProgrammingError):
                conn.close()
        self._local = threading.local()


def _unavailable(url: str, exc: sqlite3.Error) -> StoreUnavailable:
    text = str(exc)
    if "not a database" in text or "malformed" in text or "disk I/O" in text:
        return StoreUnavailable(f"{url}: the file is damaged or not a flowc database ({text})")
    return StoreUnavailable(f"{url}: {text}")


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    text = str(exc)
    return "locked" in text or "busy" in text


def _loads(text: str | None) -> Json:
    return None if text is None else json.loads(text)


def _via(text: str | None) -> tuple[str, ...]:
    return () if text is None else tuple(json.loads(text))


def _roundtrip(value: Json) -> Json:
    return json.loads(dumps(value))


def _record(row: Sequence[Any]) -> InstanceRecord:
    return InstanceRecord(
        id=row[0],
        flow=row[1],
        flow_version=row[2],
        graph_hash=row[3],
        state=row[4],
        version=row[5],
        seq=row[6],
        snapshot=json.loads(row[7]),
        created_at=row[8],
        updated_at=row[9],
    )


def _timer_row(row: Sequence[Any]) -> TimerRow:
    return TimerRow(row[0], row[1], row[2], row[3], _loads(row[4]), row[5], row[6])


def _insert_history(
    conn: sqlite3.Connection, instance_id: str, last_seq: int, entries: Sequence[HistoryEntry]
) -> tuple[HistoryRow, ...]:
    rows = tuple(
        HistoryRow.of(instance_id, last_seq + i, e, _roundtrip(e.payload))
        for i, e in enumerate(entries, start=1)
    )
    conn.executemany(
        "INSERT INTO flowc_history (instance_id, seq, at, source, target, trigger, payload, "
        "reason, kind, via) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        [
            (
                r.instance_id,
                r.seq,
                r.at,
                r.source,
                r.target,
                r.trigger,
                None if r.payload is None else dumps(r.payload),
                r.reason,
                r.kind,
                dumps(list(r.via)) if r.via else None,
            )
            for r in rows
        ],
    )
    return rows


def _insert_effects(
    conn: sqlite3.Connection, instance_id: str, effects: Sequence[EffectSpec], at: float
) -> None:
    conn.executemany(
        f"INSERT INTO flowc_outbox ({_OUTBOX_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?)",
        [(instance_id, e.seq, e.index, e.effect, dumps(e.payload), at) for e in effects],
    )


def _insert_timers(conn: sqlite3.Connection, instance_id: str, timers: Sequence[TimerSpec]) -> None:
    conn.executemany(
        "INSERT INTO flowc_timers (instance_id, timer_id, state, deadline, data) "
        "VALUES (?, ?, ?, ?, ?)",
        [
            (
                instance_id,
                t.timer_id,
                t.state,
                t.deadline,
                None if t.data is None else dumps(t.data),
            )
            for t in timers
        ],
    )


def _filters(**columns: str | None) -> tuple[str, list[str]]:
    parts = [f"{name} = ?" for name, value in columns.items() if value is not None]
    params = [value for value in columns.values() if value is not None]
    return (" WHERE " + " AND ".join(parts) if parts else ""), params
