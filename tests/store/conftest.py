"""Store fixtures: one parametrised `store_url` over memory, SQLite and PostgreSQL.

PostgreSQL comes from FLOWC_TEST_POSTGRES_URL (test.sh starts a throwaway server and sets it).
Each test gets its own schema on that server, so tests never see each other's rows. Without
the variable the PostgreSQL cases skip, except under CI=true, where they fail: CI must run them.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import pytest

from flowc.runtime.store import Store, open_store
from store.toy import Clock

POSTGRES_ENV = "FLOWC_TEST_POSTGRES_URL"


def postgres_base_url() -> str:
    url = os.environ.get(POSTGRES_ENV, "")
    if url:
        return url
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"CI=true but {POSTGRES_ENV} is not set: the PostgreSQL tests must run")
    pytest.skip(f"no PostgreSQL server ({POSTGRES_ENV} not set; ./test.sh starts one)")


def with_search_path(url: str, schema: str) -> str:
    parts = urlsplit(url)
    query = [(k, v) for k, v in parse_qsl(parts.query) if k != "options"]
    query.append(("options", f"-csearch_path={schema}"))
    return urlunsplit(parts._replace(query=urlencode(query)))


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A PostgreSQL URL whose connections work in a fresh schema, dropped afterwards."""
    import psycopg

    base = postgres_base_url()
    schema = f"t_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')  # type: ignore[arg-type]
    try:
        yield with_search_path(base, schema)
    finally:
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')  # type: ignore[arg-type]


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'flows.db'}"


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A URL for each backend; every store opened on it sees the same instances."""
    kind: str = request.param
    if kind == "memory":
        return f"memory://{uuid.uuid4().hex}"
    if kind == "sqlite":
        return f"sqlite:///{tmp_path / 'flows.db'}"
    url: str = request.getfixturevalue("postgres_url")
    return url


@pytest.fixture(params=["sqlite", "postgres"])
def shared_store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """A URL that several processes can open: SQLite and PostgreSQL."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'flows.db'}"
    url: str = request.getfixturevalue("postgres_url")
    return url


def optimistic(url: str) -> str:
    """The URL with every attempt optimistic (PostgreSQL retries holding the row lock unless
    told otherwise; the other backends have no such option)."""
    if not url.startswith("postgresql"):
        return url
    return url + ("&" if "?" in url else "?") + "lock_on_retry=false"


def patient(url: str) -> str:
    """The URL with a SQLite writer waiting up to two minutes for the lock (ten seconds by
    default): for tests whose many processes contend for one file on a machine that may be busy
    with other tests (parallel workers), where losing a race is not what they test."""
    if not url.startswith("sqlite"):
        return url
    return url + ("&" if "?" in url else "?") + "busy_timeout=120000"


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def make_store(store_url: str, clock: Clock) -> Iterator[Callable[[], Store]]:
    """Opens stores on the parametrised URL (with the fake clock); closes them afterwards."""
    opened: list[Store] = []

    def make() -> Store:
        store = open_store(store_url, clock=clock)
        opened.append(store)
        return store

    yield make
    for store in opened:
        store.close()


@pytest.fixture
def store(make_store: Callable[[], Store]) -> Store:
    return make_store()
