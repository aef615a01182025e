"""Writes the fixtures of this folder with the code of the day they were made (main before IR
version 2, commit d02b73e): a compiled flow, an instance snapshot and the rows a SQLite and a
PostgreSQL store hold for a few instances. Run from the root of a checkout of that commit:

    python tests/store/data/v1/write.py POSTGRES_URL

The tests read the files; they never run this (it is kept to say how the files were made)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import psycopg

from flowc.compiler import compile_file
from flowc.runtime import FakeClock, Machine
from flowc.runtime.store import open_store
from flowc.runtime.store.durable import DurableFlows

HERE = Path(__file__).resolve().parent
TABLES = (
    "flowc_meta",
    "flowc_graphs",
    "flowc_instances",
    "flowc_history",
    "flowc_timers",
    "flowc_keys",
)


def fill(flows: DurableFlows) -> None:
    flows.start("order", id="cart")
    flows.send("cart", "add", {"n": 2}, key="k1")
    flows.start("order", id="paid")
    flows.send("paid", "add", {"n": 1})
    flows.send("paid", "pay", {"ref": "r-1"}, reason="card")
    flows.start("order", id="done")
    flows.send("done", "cancel")  # refused: CART has no rule for it
    flows.send("done", "add", {"n": 1})
    flows.send("done", "pay", {"ref": "r-2"})
    flows.send("done", "cancel")


def main(pg_url: str) -> None:
    result = compile_file(HERE / "order.flow")
    assert result.flow is not None
    (HERE / "order.json").write_text(result.flow.to_json())
    clock = FakeClock()
    machine = Machine.from_json((HERE / "order.json").read_text(), clock=clock)
    inst = machine.start(id="snap")
    inst.send("add", {"n": 3}, key="a")
    clock.advance(60)
    inst.send("pay", {"ref": "x-9"}, reason="by card")
    (HERE / "snapshot.json").write_text(inst.snapshot_json() + "\n")

    db = HERE / "flows.db"
    db.unlink(missing_ok=True)
    with DurableFlows(open_store(f"sqlite:///{db}", clock=clock), [machine], clock=clock) as flows:
        fill(flows)
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("DROP SCHEMA IF EXISTS v1_fixture CASCADE")
        conn.execute("CREATE SCHEMA v1_fixture")
    url = pg_url + ("&" if "?" in pg_url else "?") + "options=-csearch_path%3Dv1_fixture"
    with DurableFlows(open_store(url, clock=clock), [machine], clock=clock) as flows:
        fill(flows)
    rows: dict[str, list[dict[str, object]]] = {}
    with psycopg.connect(url, autocommit=True) as conn:
        for table in TABLES:
            cur = conn.execute(f"SELECT row_to_json(t)::text FROM {table} t ORDER BY 1")
            rows[table] = [json.loads(r[0]) for r in cur.fetchall()]
        conn.execute("DROP SCHEMA v1_fixture CASCADE")
    (HERE / "postgres_rows.json").write_text(json.dumps(rows, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
