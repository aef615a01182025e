"""The store for many processes on many hosts: PostgreSQL through psycopg 3 and psycopg_pool.

The queries and the step transaction are `sql.SQLStore`'s; this module is PostgreSQL's dialect.
Steps are optimistic: the record is read without a lock, the step function runs, and the
`UPDATE ... WHERE id = ? AND version = ?` decides. At READ COMMITTED an UPDATE that meets a row
another transaction is changing waits for it and then re-checks the condition on the new row, so
exactly one of two racing steps matches; the loser rolls back (nothing of it was written), reads
again and retries, by default holding the row lock this time (`lock_on_retry`). Due timers are
claimed with `FOR UPDATE SKIP LOCKED`, so concurrent workers take disjoint rows without waiting
on each other, and leased, so a dead worker's claims come back.

psycopg is imported here only, and this module only when a PostgreSQL URL is opened.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, ClassVar
from urllib.parse import urlsplit, urlunsplit

import psycopg
from psycopg.rows import TupleRow
from psycopg.types.json import Jsonb
from psycopg_pool import ConnectionPool, PoolTimeout

from flowc.runtime.store.sql import SCHEMA_VERSION, SQLStore, Tx, Verdict
from flowc.runtime.store.types import Json, StoreUnavailable

__all__ = ["CONNECT_TIMEOUT_S", "LOCK_TIMEOUT_MS", "SCHEMA_VERSION", "PostgresStore"]

#: Serialises concurrent schema creation (CREATE TABLE IF NOT EXISTS is not safe against itself).
_SCHEMA_LOCK = 0x666C6F7763  # "flowc"

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


class _PostgresTx(Tx):
    def sql(self, query: str) -> str:
        return query.replace("?", "%s")

    def many(self, query: str, rows: Sequence[Sequence[Any]]) -> None:
        with self.conn.cursor() as cur:
            cur.executemany(self.sql(query), rows)


class PostgresStore(SQLStore):
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
        self.clock = clock
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
            try:
                self._init_schema()
            except psycopg.Error as exc:
                unavailable = self._unavailable(exc)
                if unavailable is None:
                    raise
                raise unavailable from None
        except BaseException:
            self._pool.close()
            raise

    def _configure(self, conn: psycopg.Connection[TupleRow]) -> None:
        conn.execute(f"SET lock_timeout = {self._lock_timeout_ms}")
        conn.commit()

    TYPES: ClassVar[dict[str, str]] = {
        "json": "jsonb",
        "real": "double precision",
        "int64": "bigint",
        "serial_pk": "bigserial PRIMARY KEY",
        "without_rowid": "",
    }

    # -- connections and transactions ----------------------------------------------------------

    @contextmanager
    def _read(self) -> Iterator[Tx]:
        with self._pool.connection() as conn:
            yield _PostgresTx(conn)

    @contextmanager
    def _write(self) -> Iterator[Tx]:
        with self._pool.connection() as conn, conn.transaction():
            yield _PostgresTx(conn)

    @contextmanager
    def _consistent_read(self) -> Iterator[Tx]:
        with self._pool.connection() as conn, conn.transaction():
            conn.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
            yield _PostgresTx(conn)

    @contextmanager
    def _schema_lock(self) -> Iterator[Tx]:
        with self._write() as tx:
            tx.run("SELECT pg_advisory_xact_lock(?)", (_SCHEMA_LOCK,))
            yield tx

    # -- values and errors ---------------------------------------------------------------------

    def _json_in(self, value: Json) -> Any:
        return Jsonb(value)

    def _json_out(self, value: Any) -> Json:
        return value  # psycopg parses jsonb

    def _after_failure(self, exc: Exception) -> Verdict:
        if isinstance(exc, psycopg.errors.LockNotAvailable):
            return "give_up"
        return "retry" if isinstance(exc, _RETRYABLE) else None

    def _lock_row(self, attempt: int) -> bool:
        return self._lock_on_retry and attempt > 1

    def _pause(self, attempt: int) -> None:
        if not self._lock_on_retry:
            time.sleep(random.uniform(0, min(0.05, 0.001 * 2**attempt)))

    def _timers_armed(self, tx: Tx) -> None:
        # Delivered at commit, and only then: a rolled-back step wakes nobody.
        tx.run(f"NOTIFY {CHANNEL}")

    def _is_duplicate(self, exc: Exception) -> bool:
        return isinstance(exc, psycopg.errors.UniqueViolation)

    def _unavailable(self, exc: Exception) -> StoreUnavailable | None:
        """The server's failures as `StoreUnavailable` naming the store (without its password)."""
        if isinstance(exc, PoolTimeout):
            return StoreUnavailable(
                f"{self._name}: no connection to the PostgreSQL server could be had"
            )
        if isinstance(exc, psycopg.errors.LockNotAvailable):
            return StoreUnavailable(
                f"{self._name}: another transaction held a lock for longer than "
                f"lock_timeout ({self._lock_timeout_ms} ms)"
            )
        if isinstance(exc, psycopg.OperationalError):
            text = str(exc).strip()
            detail = text.splitlines()[0] if text else type(exc).__name__
            return StoreUnavailable(f"{self._name}: {detail}")
        return None

    # -- the schema ----------------------------------------------------------------------------

    def _has_table(self, tx: Tx, table: str) -> bool:
        found = tx.one("SELECT to_regclass(?) IS NOT NULL", (table,))
        return bool(found and found[0])

    def _columns(self, tx: Tx, table: str) -> set[str]:
        rows = tx.all(
            "SELECT attname FROM pg_attribute WHERE attrelid = ?::regclass "
            "AND attnum > 0 AND NOT attisdropped",
            (table,),
        )
        return {r[0] for r in rows}

    def _migrate_outbox_v1(self, tx: Tx) -> None:
        # Metadata only, then the new unique key in place of the old (instance, seq, index).
        tx.run("ALTER TABLE flowc_outbox ADD COLUMN incarnation text")
        for (name,) in tx.all(
            "SELECT conname FROM pg_constraint WHERE conrelid = 'flowc_outbox'::regclass "
            "AND contype = 'u'"
        ):
            tx.run(f'ALTER TABLE flowc_outbox DROP CONSTRAINT "{name}"')
        tx.run(
            "CREATE UNIQUE INDEX flowc_outbox_effect "
            "ON flowc_outbox (instance_id, incarnation, seq, idx)"
        )

    # -- timers --------------------------------------------------------------------------------

    def _lease_due(
        self, due: str, params: list[Any], owner: str, until: float
    ) -> Sequence[Sequence[Any]]:
        # One statement; SKIP LOCKED: concurrent workers take disjoint rows without waiting.
        with self._write() as tx:
            return tx.all(
                "UPDATE flowc_timers AS t SET lease_owner = ?, lease_until = ? "
                f"FROM ({due} FOR UPDATE SKIP LOCKED) AS due "
                "WHERE t.instance_id = due.instance_id AND t.timer_id = due.timer_id "
                "RETURNING t.instance_id, t.timer_id, t.state, t.deadline, t.data",
                (owner, until, *params),
            )

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
