"""The SQLite store on a real file: durability settings, readers behind a writer, and files
that are not (or no longer) a database."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from flowc.compiler.cli import main
from flowc.runtime import Machine
from flowc.runtime.store import open_store
from flowc.runtime.store.durable import DurableFlows
from flowc.runtime.store.sqlite import SQLiteStore
from store.flows import TALLY_V1


def synchronous_of(store: object) -> int:
    assert isinstance(store, SQLiteStore)
    row = store._conn().execute("PRAGMA synchronous").fetchone()
    return int(row[0])


def test_every_commit_is_synced_by_default(tmp_path: Path) -> None:
    # SQLite's codes: 1 NORMAL, 2 FULL.
    store = open_store(f"sqlite:///{tmp_path / 'a.db'}")
    assert synchronous_of(store) == 2
    store.close()
    assert synchronous_of(SQLiteStore(tmp_path / "b.db")) == 2


@pytest.mark.parametrize("given", ["normal", "NORMAL", "Normal"])
def test_normal_is_an_option(tmp_path: Path, given: str) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'a.db'}?synchronous={given}")
    assert synchronous_of(store) == 1
    store.close()


def flowc(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def filled(tmp_path: Path) -> str:
    """A store file with a few instances, its WAL checkpointed into the file."""
    url = f"sqlite:///{tmp_path / 'flows.db'}"
    with DurableFlows(open_store(url), [Machine.from_source(TALLY_V1)]) as flows:
        for i in range(30):
            flows.start("tally", id=f"t{i}")
            flows.send(f"t{i}", "inc")
    return url


def test_reads_do_not_wait_for_another_writer(
    filled: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = filled + "?busy_timeout=200"
    writer = sqlite3.connect(tmp_path / "flows.db", isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    writer.execute("UPDATE flowc_instances SET state = state")
    try:
        code, out, err = flowc(capsys, "instances", "list", "--store", url, "--limit", "3")
        assert code == 0 and err == "" and len(out.splitlines()) == 4
        code, out, err = flowc(capsys, "instances", "history", "t1", "--store", url)
        assert code == 0 and err == "" and len(out.splitlines()) == 3
        code, _, err = flowc(capsys, "instances", "show", "t1", "--store", url)
        assert code == 0 and err == ""
        # A step needs the lock: it waits busy_timeout per attempt, then says so as data.
        code, out, err = flowc(capsys, "instances", "send", "t1", "inc", "--store", url)
        assert code == 1 and json.loads(out)["error"] == "conflict" and "Traceback" not in err
    finally:
        writer.execute("ROLLBACK")
        writer.close()


def test_a_file_that_is_not_a_database(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "flows.db"
    path.write_bytes(b"these are not the tables you are looking for\n" * 100)
    url = f"sqlite:///{path}"
    code, out, err = flowc(capsys, "instances", "list", "--store", url)
    assert (code, out) == (1, "")
    assert err == (
        f"flowc instances: {url}: the file is damaged or not a flowc database "
        "(file is not a database)\n"
    )


def test_a_truncated_database(
    filled: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "flows.db"
    data = path.read_bytes()
    assert len(data) > 3 * 4096
    path.write_bytes(data[: len(data) // 2])
    for argv in (
        ("instances", "list"),
        ("instances", "history", "t29"),
        ("instances", "send", "t29", "inc"),
        ("worker", "--once"),
    ):
        code, _, err = flowc(capsys, *argv, "--store", filled)
        assert code == 1, argv
        assert len(err.splitlines()) == 1 and filled in err, (argv, err)
        assert "malformed" in err or "not a database" in err, err


def test_an_older_file_gains_the_new_history_columns(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    store = SQLiteStore(path)
    store.close()
    conn = sqlite3.connect(path, isolation_level=None)
    # As flowc 0.1.0 left it: no kind and via in flowc_history.
    conn.execute("ALTER TABLE flowc_history DROP COLUMN kind")
    conn.execute("ALTER TABLE flowc_history DROP COLUMN via")
    conn.close()
    store = SQLiteStore(path)
    columns = [r[1] for r in store._conn().execute("PRAGMA table_info(flowc_history)")]
    assert columns[-2:] == ["kind", "via"]
    store.close()
