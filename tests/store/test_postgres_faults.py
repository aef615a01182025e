"""PostgreSQL under contention and faults, on the real server: lock waits are bounded, an
unreachable server is one line, and an older database gains the new history columns."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest

from flowc.compiler.cli import main
from flowc.runtime import Machine
from flowc.runtime.store import open_store
from flowc.runtime.store.durable import DurableFlows
from store.flows import TALLY_V1


def flowc(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def url(postgres_url: str) -> str:
    url = postgres_url + "&lock_timeout=300"
    with DurableFlows(open_store(url), [Machine.from_source(TALLY_V1)]) as flows:
        flows.start("tally", id="t1")
    return url


@pytest.fixture
def other(postgres_url: str) -> Iterator[object]:
    """Another session, in the test's schema, holding whatever the test locks."""
    import psycopg

    conn = psycopg.connect(postgres_url)
    try:
        yield conn
    finally:
        conn.rollback()
        conn.close()


def test_a_step_behind_a_row_lock_ends_as_a_conflict(
    url: str, other: object, capsys: pytest.CaptureFixture[str]
) -> None:
    import psycopg

    assert isinstance(other, psycopg.Connection)
    other.execute("SELECT * FROM flowc_instances WHERE id = 't1' FOR UPDATE")
    began = time.monotonic()
    code, out, err = flowc(capsys, "instances", "send", "t1", "inc", "--store", url)
    assert time.monotonic() - began < 10
    assert code == 1 and json.loads(out)["error"] == "conflict" and err == ""
    other.rollback()
    code, out, _ = flowc(capsys, "instances", "send", "t1", "inc", "--store", url)
    assert code == 0 and json.loads(out)["seq"] == 1


def test_behind_a_table_lock_steps_conflict_and_reads_say_so(
    url: str, other: object, capsys: pytest.CaptureFixture[str]
) -> None:
    import psycopg

    assert isinstance(other, psycopg.Connection)
    other.execute("LOCK TABLE flowc_instances IN ACCESS EXCLUSIVE MODE")
    began = time.monotonic()
    code, out, err = flowc(capsys, "instances", "send", "t1", "inc", "--store", url)
    assert code == 1 and json.loads(out)["error"] == "conflict"
    code, out, err = flowc(capsys, "instances", "list", "--store", url)
    assert (code, out) == (1, "")
    assert err.endswith(": another transaction held a lock for longer than lock_timeout (300 ms)\n")
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    assert time.monotonic() - began < 15


def test_an_unreachable_server_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    url = "postgresql://flowc@127.0.0.1:1/flowc?connect_timeout=1"
    began = time.monotonic()
    code, out, err = flowc(capsys, "instances", "list", "--store", url)
    assert time.monotonic() - began < 10
    assert (code, out) == (1, "")
    assert err.startswith(f"flowc instances: {url}: cannot connect: ")
    assert len(err.splitlines()) == 1


def test_the_password_is_not_shown(postgres_url: str, capsys: pytest.CaptureFixture[str]) -> None:
    url = postgres_url.replace("postgres@", "postgres:hunter2@", 1).replace(
        "/postgres?", "/no_such_db?", 1
    )
    code, _, err = flowc(capsys, "instances", "list", "--store", url)
    assert code == 1 and "hunter2" not in err and ":***@" in err


def test_an_older_database_gains_the_new_history_columns(postgres_url: str) -> None:
    import psycopg

    open_store(postgres_url).close()
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("ALTER TABLE flowc_history DROP COLUMN kind")
        conn.execute("ALTER TABLE flowc_history DROP COLUMN via")
    store = open_store(postgres_url)
    store.close()
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT column_name FROM information_schema.columns WHERE table_name = "
            "'flowc_history' AND table_schema = current_schema() ORDER BY ordinal_position"
        ).fetchall()
    assert [r[0] for r in rows][-2:] == ["kind", "via"]
