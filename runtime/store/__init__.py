"""Durable instances: the `Store` protocol and its backends (memory, SQLite, PostgreSQL).

`open_store(url)` picks the backend from a URL:

- `sqlite:///relative/path.db`, `sqlite:////absolute/path.db` (or a plain file path): the
  default, one file shared by the processes of one machine;
- `postgresql://user@host:port/db` (or `postgres://`): any number of processes on any number of
  hosts (needs the `flowc[postgres]` extra; psycopg is imported only then);
- `memory:`: a new store in this process's memory, for tests; `memory://NAME` the one store of
  that name in this process.

docs/persistence.md describes the tables, the step transaction and the timer worker.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from flowc.runtime.store.handles import InvalidHandle
from flowc.runtime.store.memory import MemoryStore
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
    Reject,
    SchemaMismatch,
    StepFn,
    StepOutcome,
    StepStatus,
    Store,
    StoreError,
    StoreUnavailable,
    StoreURLError,
    TimerClaim,
    TimerRow,
    TimerSpec,
    conflict_outcome,
)

#: Query parameters `open_store` reads itself; the rest of a PostgreSQL URL goes to libpq.
_SQLITE_OPTIONS = {"busy_timeout", "synchronous"}
_POSTGRES_OPTIONS = {"pool_min", "pool_max", "lock_on_retry", "lock_timeout"}


def open_store(url: str, *, clock: Callable[[], float] = time.time) -> Store:
    """The store a URL names (see the module docstring). Options ride in the query string:
    `sqlite:///x.db?busy_timeout=5000&synchronous=FULL`,
    `postgresql://...?pool_max=20&lock_on_retry=false`."""
    url = url.strip()
    if not url:
        raise StoreURLError("empty store URL")
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme == "memory":
        return _open_memory(parts.netloc + parts.path, clock)
    if scheme == "sqlite":
        return _open_sqlite(url, parts.netloc, parts.path, parts.query, clock)
    if scheme in {"postgresql", "postgres"}:
        return _open_postgres(url, clock)
    if scheme == "" or (len(scheme) == 1 and url[1:3] in {":\\", ":/"}):
        # A bare path (or a Windows drive letter, which urlsplit takes for a scheme).
        from flowc.runtime.store.sqlite import SQLiteStore

        return SQLiteStore(Path(url), clock=clock, url=url)
    raise StoreURLError(
        f"unknown store URL {url!r}: expected sqlite:///PATH, postgresql://... or memory:"
    )


_named_memory: dict[str, MemoryStore] = {}
_named_memory_lock = threading.Lock()


def _open_memory(name: str, clock: Callable[[], float]) -> Store:
    """`memory:` is a new empty store; `memory://NAME` the one store of that name in this
    process (so two handles, or a host and its worker threads, can share it)."""
    if not name:
        return MemoryStore(clock=clock)
    with _named_memory_lock:
        store = _named_memory.get(name)
        if store is None:
            store = _named_memory[name] = MemoryStore(clock=clock, url=f"memory://{name}")
        return store


def _open_sqlite(url: str, netloc: str, path: str, query: str, clock: Callable[[], float]) -> Store:
    from flowc.runtime.store.sqlite import DEFAULT_SYNCHRONOUS, SQLiteStore

    if netloc:
        raise StoreURLError(
            f"{url!r}: a SQLite URL has three slashes before a relative path "
            "(sqlite:///flows.db) and four before an absolute one (sqlite:////var/flows.db)"
        )
    # sqlite:///a.db -> path "/a.db" -> "a.db"; sqlite:////abs.db -> "//abs.db" -> "/abs.db".
    file = path[1:] if path.startswith("/") else path
    if not file or file == ":memory:":
        raise StoreURLError(f"{url!r}: a SQLite store needs a file path")
    options = dict(parse_qsl(query))
    unknown = set(options) - _SQLITE_OPTIONS
    if unknown:
        raise StoreURLError(f"{url!r}: unknown option(s) {', '.join(sorted(unknown))}")
    try:
        busy = int(options.get("busy_timeout", "10000"))
    except ValueError:
        raise StoreURLError(f"{url!r}: busy_timeout must be milliseconds") from None
    synchronous = options.get("synchronous", DEFAULT_SYNCHRONOUS).upper()
    if synchronous not in {"OFF", "NORMAL", "FULL", "EXTRA"}:
        raise StoreURLError(f"{url!r}: synchronous must be full, normal, extra or off")
    return SQLiteStore(
        Path(file),
        busy_timeout=busy,
        synchronous=synchronous,
        clock=clock,
        url=url,
    )


def _open_postgres(url: str, clock: Callable[[], float]) -> Store:
    try:
        from flowc.runtime.store.postgres import (
            CONNECT_TIMEOUT_S,
            LOCK_TIMEOUT_MS,
            PostgresStore,
        )
    except ImportError as exc:
        raise StoreURLError(
            f"a PostgreSQL store needs psycopg and psycopg_pool: pip install 'flowc[postgres]' "
            f"({exc})"
        ) from None
    parts = urlsplit(url)
    query = parse_qsl(parts.query)
    ours = {k: v for k, v in query if k in _POSTGRES_OPTIONS}
    conninfo = urlunsplit(
        parts._replace(query=urlencode([(k, v) for k, v in query if k not in _POSTGRES_OPTIONS]))
    )
    try:
        pool_min = int(ours.get("pool_min", "1"))
        pool_max = int(ours.get("pool_max", "10"))
    except ValueError:
        raise StoreURLError(f"{url!r}: pool_min and pool_max must be integers") from None
    lock = ours.get("lock_on_retry", "true").lower()
    if lock not in {"true", "false", "1", "0", "on", "off"}:
        raise StoreURLError(f"{url!r}: lock_on_retry must be true or false")
    try:
        lock_timeout = int(ours.get("lock_timeout", str(LOCK_TIMEOUT_MS)))
        # libpq's own parameter (it stays in the conninfo): also how long opening waits.
        connect_timeout = float(dict(query).get("connect_timeout", CONNECT_TIMEOUT_S))
    except ValueError:
        raise StoreURLError(
            f"{url!r}: lock_timeout is milliseconds and connect_timeout seconds"
        ) from None
    if lock_timeout <= 0 or not 0 < connect_timeout < float("inf"):
        raise StoreURLError(f"{url!r}: lock_timeout and connect_timeout must be positive")
    return PostgresStore(
        conninfo,
        min_size=pool_min,
        max_size=pool_max,
        clock=clock,
        url=url,
        lock_on_retry=lock in {"true", "1", "on"},
        lock_timeout_ms=lock_timeout,
        connect_timeout=connect_timeout,
    )


__all__ = [
    "DEFAULT_MAX_ATTEMPTS",
    "Change",
    "EffectSpec",
    "HistoryEntry",
    "HistoryRow",
    "InstanceExists",
    "InstanceNotFound",
    "InstanceRecord",
    "InvalidHandle",
    "Json",
    "MemoryStore",
    "NewInstance",
    "OutboxEffect",
    "Reject",
    "SchemaMismatch",
    "StepFn",
    "StepOutcome",
    "StepStatus",
    "Store",
    "StoreError",
    "StoreURLError",
    "StoreUnavailable",
    "TimerClaim",
    "TimerRow",
    "TimerSpec",
    "conflict_outcome",
    "open_store",
]
