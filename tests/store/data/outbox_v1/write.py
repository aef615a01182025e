"""Writes the fixtures of this folder with the code of the day they were made (schema version 1,
before outbox effects had an incarnation; commit 1a72398): a SQLite file and the PostgreSQL
tables and rows of a store holding a lamp instance "a" with two undelivered effects, and
instance "gone", deleted with one effect still owed. Run from the root of a checkout of that
commit:

    python tests/store/data/outbox_v1/write.py POSTGRES_URL

The tests read the files; they never run this (it is kept to say how the files were made)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import psycopg

from flowc.runtime import FakeClock, Machine
from flowc.runtime.store import open_store
from flowc.runtime.store.durable import DurableFlows

HERE = Path(__file__).resolve().parent
TABLES = ("flowc_meta", "flowc_graphs", "flowc_instances", "flowc_history", "flowc_timers",
          "flowc_keys", "flowc_outbox")  # fmt: skip
LAMP = (HERE / "lamp.flow").read_text()


def fill(url: str) -> None:
    clock = FakeClock()
    machine = Machine.from_source(LAMP, "lamp.flow", clock=clock)
    with DurableFlows(open_store(url, clock=clock), [machine], clock=clock) as flows:
        flows.start("lamp", id="a")
        flows.send("a", "press", {"level": 3}, key="k1")
        flows.start("lamp", id="gone")
        flows.store.delete("gone")


def main(postgres_url: str) -> None:
    db = HERE / "flows.db"
    db.unlink(missing_ok=True)
    fill(f"sqlite:///{db}")
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        for table in reversed(TABLES):
            conn.execute(f"DROP TABLE IF EXISTS {table}")  # type: ignore[arg-type]
    fill(postgres_url)
    # The DDL that code ran on an empty database, as it ran it.
    from flowc.runtime.store import postgres

    ddl = [postgres._SCHEMA, postgres._GRAPHS_TABLE, postgres._OUTBOX_TABLE]
    (HERE / "postgres_schema.sql").write_text(";\n".join(d.strip() for d in ddl) + ";\n")
    rows: dict[str, list[dict[str, object]]] = {}
    with psycopg.connect(postgres_url) as conn:
        for table in TABLES:
            cur = conn.execute(f"SELECT * FROM {table}")  # type: ignore[arg-type]
            names = [c.name for c in cur.description or ()]
            rows[table] = [dict(zip(names, r, strict=True)) for r in cur.fetchall()]
    (HERE / "postgres_rows.json").write_text(json.dumps(rows, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
