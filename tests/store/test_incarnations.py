"""Outbox effect ids never repeat: each create of an id is a new incarnation (schema version
2), so an id reused after a delete gets new effect ids, and a start beside the old life's
undelivered effects succeeds. Stores written by schema version 1 (`data/outbox_v1/write.py`
says how) are migrated on open, on SQLite and PostgreSQL, and their rows keep working."""

from __future__ import annotations

import json
import shutil
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from flowc.runtime import FakeClock, Machine
from flowc.runtime.store import SchemaMismatch, open_store
from flowc.runtime.store.durable import DurableFlows
from flowc.runtime.store.sql import SCHEMA_VERSION

DATA = Path(__file__).resolve().parent / "data" / "outbox_v1"


def lamp(clock: FakeClock) -> Machine:
    return Machine.from_source((DATA / "lamp.flow").read_text(), "lamp.flow", clock=clock)


def test_a_reused_id_gets_new_effect_ids_beside_the_old_undelivered_ones(store_url: str) -> None:
    clock = FakeClock()
    with DurableFlows(open_store(store_url), [lamp(clock)], clock=clock) as flows:
        flows.start("lamp", id="x")
        first = flows.store.load("x").incarnation
        assert flows.store.delete("x")
        assert flows.start("lamp", id="x").ok  # once: UNIQUE constraint failed
        second = flows.store.load("x").incarnation
        assert first and second and first != second
        ids = [e.id for e in flows.store.pending_effects()]
        assert ids == [f"x/{first}/0/0", f"x/{second}/0/0"]
        flows.store.mark_delivered(flows.store.pending_effects()[:1])
        assert [e.id for e in flows.store.pending_effects()] == [f"x/{second}/0/0"]


def check_old_store(flows: DurableFlows) -> None:
    """The rows of `write.py`: "a" (Lit, key k1, effects a/0/0 and a/1/0 owed) and "gone"
    (deleted, gone/0/0 owed)."""
    pending = flows.store.pending_effects()
    assert [e.id for e in pending] == ["a/0/0", "a/1/0", "gone/0/0"]
    assert flows.store.load("a").incarnation is None
    assert flows.send("a", "press", {"level": 9}, key="k1").replayed
    assert flows.start("lamp", id="gone").ok
    life = flows.store.load("gone").incarnation
    assert [e.id for e in flows.store.pending_effects()][-1] == f"gone/{life}/0/0"
    assert flows.send("a", "off").ok
    got: list[str] = []
    assert flows.deliver_effects(lambda e: got.append(e.id)) == 5
    assert got[:3] == ["a/0/0", "a/1/0", "gone/0/0"] and flows.store.pending_effects() == []


def test_a_version_1_sqlite_file_is_migrated_and_its_rows_work(tmp_path: Path) -> None:
    db = tmp_path / "flows.db"
    shutil.copyfile(DATA / "flows.db", db)
    clock = FakeClock()
    with DurableFlows(open_store(f"sqlite:///{db}"), [lamp(clock)], clock=clock) as flows:
        check_old_store(flows)
    with sqlite3.connect(db) as conn:
        [(version,)] = conn.execute("SELECT value FROM flowc_meta WHERE name = 'schema_version'")
    assert version == str(SCHEMA_VERSION) == "2"


def _load_v1_rows(url: str) -> None:
    import psycopg
    from psycopg.types.json import Jsonb

    rows: dict[str, list[dict[str, Any]]] = json.loads((DATA / "postgres_rows.json").read_text())
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute((DATA / "postgres_schema.sql").read_text())  # type: ignore[arg-type]
        for table in ("flowc_meta", "flowc_graphs", "flowc_instances", "flowc_history",
                      "flowc_timers", "flowc_keys", "flowc_outbox"):  # fmt: skip
            for row in rows[table]:
                values = [Jsonb(v) if isinstance(v, dict | list) else v for v in row.values()]
                conn.execute(
                    f"INSERT INTO {table} ({', '.join(row)}) "  # type: ignore[arg-type]
                    f"VALUES ({', '.join(['%s'] * len(row))})",
                    values,
                )
        # Rows inserted with their ids: move the id sequence past them, as their inserts had.
        conn.execute("SELECT setval('flowc_outbox_id_seq', (SELECT max(id) FROM flowc_outbox))")


def test_version_1_postgres_rows_are_migrated_and_work(postgres_url: str) -> None:
    _load_v1_rows(postgres_url)
    clock = FakeClock()
    with DurableFlows(open_store(postgres_url), [lamp(clock)], clock=clock) as flows:
        check_old_store(flows)
    import psycopg

    with psycopg.connect(postgres_url) as conn:
        row = conn.execute("SELECT value FROM flowc_meta WHERE name = 'schema_version'").fetchone()
    assert row == ("2",)


def test_a_newer_schema_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "flows.db"
    open_store(f"sqlite:///{db}").close()
    with sqlite3.connect(db) as conn:
        conn.execute("UPDATE flowc_meta SET value = '3' WHERE name = 'schema_version'")
    with pytest.raises(SchemaMismatch, match="version 3"):
        open_store(f"sqlite:///{db}")
