"""Data written before IR version 2 restores unchanged: a snapshot, a SQLite file and
PostgreSQL rows written by the code of main before statecharts (`data/v1/write.py` says how),
read by today's runtime."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from flowc.compiler.cli import main
from flowc.runtime import FakeClock, Machine, StepResult
from flowc.runtime.store import open_store
from flowc.runtime.store.durable import DurableFlows

DATA = Path(__file__).resolve().parent / "data" / "v1"
#: The fixtures' clock: 2025-01-01T00:00:00Z plus the minute `write.py` advanced.
WRITTEN_AT = 1735689600.0 + 60


def machine(clock: FakeClock) -> Machine:
    return Machine.from_json((DATA / "order.json").read_bytes(), clock=clock)


def test_the_compiled_flow_is_version_1_and_runs_flat() -> None:
    raw = json.loads((DATA / "order.json").read_text())
    assert raw["ir_version"] == 1
    m = machine(FakeClock())
    assert not m.chart and not m.hierarchical


def test_an_old_snapshot_restores_and_writes_back_the_same() -> None:
    text = (DATA / "snapshot.json").read_text().strip()
    clock = FakeClock(WRITTEN_AT)
    inst = machine(clock).restore(text)
    assert inst.state == "PAID" and inst.configuration == ("PAID",)
    assert inst.context == {"items": 3, "note": "x-9"}
    assert [h.trigger for h in inst.history] == ["start", "add", "pay"]
    assert [t["target"] for t in inst.timers] == ["SHIPPED"]
    assert inst.snapshot_json() == text  # nothing added, nothing lost
    replayed = inst.send("add", {"n": 9}, key="a")  # the idempotency key came back too
    assert isinstance(replayed, StepResult) and replayed.replayed
    clock.advance(2 * 86400)
    [shipped] = inst.advance()
    assert isinstance(shipped, StepResult) and shipped.to == "SHIPPED"


def check_instances(flows: DurableFlows) -> None:
    cart, paid, done = (flows.load(i) for i in ("cart", "paid", "done"))
    assert (cart.state, paid.state, done.state) == ("CART", "PAID", "CANCELLED")
    assert cart.context == {"items": 2, "note": ""} and paid.context["note"] == "r-1"
    assert [h.reason for h in paid.history] == [None, None, "card"]
    assert cart.timers[0]["target"] == "ABANDONED"
    out = flows.send("paid", "cancel")
    assert out.ok and flows.load("paid").state == "CANCELLED"
    again = flows.send("cart", "add", {"n": 5}, key="k1")  # applied before: replayed
    assert again.ok and flows.load("cart").context["items"] == 2


def test_an_old_sqlite_file_loads(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "flows.db"
    shutil.copyfile(DATA / "flows.db", db)
    url = f"sqlite:///{db}"
    assert main(["instances", "list", "--store", url, "--json"]) == 0
    listed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert sorted((r["id"], r["state"]) for r in listed) == [
        ("cart", "CART"),
        ("done", "CANCELLED"),
        ("paid", "PAID"),
    ]
    clock = FakeClock(WRITTEN_AT)
    with DurableFlows(open_store(url, clock=clock), [machine(clock)], clock=clock) as flows:
        check_instances(flows)


def _insert(url: str, rows: dict[str, list[dict[str, Any]]]) -> None:
    import psycopg
    from psycopg.types.json import Jsonb

    with psycopg.connect(url, autocommit=True) as conn:
        for table in (
            "flowc_meta",
            "flowc_graphs",
            "flowc_instances",
            "flowc_history",
            "flowc_timers",
            "flowc_keys",
        ):
            for row in rows[table]:
                cols = list(row)
                values = [Jsonb(v) if isinstance(v, dict | list) else v for v in row.values()]
                conn.execute(
                    f"INSERT INTO {table} ({', '.join(cols)}) VALUES "  # type: ignore[arg-type]
                    f"({', '.join(['%s'] * len(cols))}) ON CONFLICT DO NOTHING",
                    values,
                )


def test_old_postgres_rows_load(postgres_url: str) -> None:
    clock = FakeClock(WRITTEN_AT)
    open_store(postgres_url, clock=clock).close()  # today's code makes the (same) tables
    _insert(postgres_url, json.loads((DATA / "postgres_rows.json").read_text()))
    with DurableFlows(
        open_store(postgres_url, clock=clock), [machine(clock)], clock=clock
    ) as flows:
        check_instances(flows)
