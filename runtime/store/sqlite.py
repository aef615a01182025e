"""The default store: one SQLite file, shared by the threads and processes of one machine.

The queries and the step transaction are `sql.SQLStore`'s; this module is SQLite's dialect.
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
import json
import os
import random
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, ClassVar

from flowc.runtime.store.sql import SCHEMA_VERSION, SQLStore, Tx, Verdict
from flowc.runtime.store.types import Json, StoreUnavailable, dumps

__all__ = ["DEFAULT_SYNCHRONOUS", "SCHEMA_VERSION", "SQLiteStore"]


class _Busy(Exception):
    """The write lock was not had within busy_timeout."""


#: SQLite's `synchronous` by default: FULL syncs the WAL to disk at every commit, so a
#: committed step survives a power cut. NORMAL (a URL's `?synchronous=normal`) survives any
#: process crash but may lose the last commits to one; see docs/persistence.md.
DEFAULT_SYNCHRONOUS = "FULL"


class _SQLiteTx(Tx):
    def many(self, query: str, rows: Sequence[Sequence[Any]]) -> None:
        self.conn.executemany(query, rows)


class SQLiteStore(SQLStore):
    """`SQLiteStore(path)`; `busy_timeout` in milliseconds; `synchronous` is SQLite's pragma
    (default FULL: every commit is on disk; NORMAL in WAL mode survives any process crash but
    not a power loss)."""

    TYPES: ClassVar[dict[str, str]] = {
        "json": "TEXT",
        "real": "REAL",
        "int64": "INTEGER",
        "serial_pk": "INTEGER PRIMARY KEY AUTOINCREMENT",
        "without_rowid": " WITHOUT ROWID",
    }

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
        self.clock = clock
        self._local = threading.local()
        self._all: list[sqlite3.Connection] = []
        self._all_lock = threading.Lock()
        try:
            self._init_schema()
        except _Busy:
            raise StoreUnavailable(
                f"{self.url}: the database is locked by another writer (waited "
                f"{self._busy_timeout} ms to create its tables)"
            ) from None
        except sqlite3.DatabaseError as exc:
            raise _unavailable(self.url, exc) from None

    # -- connections and transactions ----------------------------------------------------------

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
    def _read(self) -> Iterator[Tx]:
        yield _SQLiteTx(self._conn())

    @contextmanager
    def _write(self) -> Iterator[Tx]:
        conn = self._conn()
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            if _is_busy(exc):
                raise _Busy from exc
            raise
        try:
            yield _SQLiteTx(conn)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    @contextmanager
    def _consistent_read(self) -> Iterator[Tx]:
        conn = self._conn()
        conn.execute("BEGIN")
        try:
            yield _SQLiteTx(conn)
        finally:
            conn.execute("COMMIT")

    def _schema_lock(self) -> contextlib.AbstractContextManager[Tx]:
        return self._write()

    # -- values and errors ---------------------------------------------------------------------

    def _json_in(self, value: Json) -> Any:
        return dumps(value)

    def _json_out(self, value: Any) -> Json:
        return None if value is None else json.loads(value)

    def _after_failure(self, exc: Exception) -> Verdict:
        # Not getting the write lock, or a lock lost in the middle of a transaction: a race.
        if isinstance(exc, _Busy) or (isinstance(exc, sqlite3.OperationalError) and _is_busy(exc)):
            return "retry"
        return None

    def _pause(self, attempt: int) -> None:
        time.sleep(random.uniform(0, min(0.05, 0.001 * 2**attempt)))

    def _is_duplicate(self, exc: Exception) -> bool:
        return isinstance(exc, sqlite3.IntegrityError)

    def _unavailable(self, exc: Exception) -> StoreUnavailable | None:
        if isinstance(exc, _Busy):
            return StoreUnavailable(
                f"{self.url}: the database is locked by another writer (waited "
                f"{self._busy_timeout} ms)"
            )
        if isinstance(exc, sqlite3.DatabaseError):
            return _unavailable(self.url, exc)
        return None

    # -- the schema ----------------------------------------------------------------------------

    def _has_table(self, tx: Tx, table: str) -> bool:
        found = tx.one("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (table,))
        return found is not None

    def _columns(self, tx: Tx, table: str) -> set[str]:
        return {r[1] for r in tx.all(f"PRAGMA table_info({table})")}

    def _migrate_outbox_v1(self, tx: Tx) -> None:
        # SQLite cannot drop a table's UNIQUE constraint: the table is rebuilt, its ids kept.
        tx.run("ALTER TABLE flowc_outbox RENAME TO flowc_outbox_v1")
        self._create_table(tx, "flowc_outbox")
        tx.run(
            "INSERT INTO flowc_outbox (id, instance_id, seq, idx, effect, payload, at) "
            "SELECT id, instance_id, seq, idx, effect, payload, at FROM flowc_outbox_v1"
        )
        tx.run("DROP TABLE flowc_outbox_v1")

    # -- timers --------------------------------------------------------------------------------

    def _lease_due(
        self, due: str, params: list[Any], owner: str, until: float
    ) -> Sequence[Sequence[Any]]:
        try:
            with self._write() as tx:
                rows = tx.all(due, params)
                tx.many(
                    "UPDATE flowc_timers SET lease_owner = ?, lease_until = ? "
                    "WHERE instance_id = ? AND timer_id = ?",
                    [(owner, until, r[0], r[1]) for r in rows],
                )
        except _Busy:
            return []  # another process is writing: the timers wait for the next round
        return rows

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
