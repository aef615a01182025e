"""The instance list of `flowc inspect` at 100,000 instances: one page per filter.

    python bench/inspect_list.py [--instances 100000] [--store sqlite|postgres]

Starts the instances through `DurableFlows` (SQLite with synchronous=off, to build the file
quicker; or the PostgreSQL server FLOWC_TEST_POSTGRES_URL names, in a schema of its own) with
a customer each, triages a third of them and solves a tenth, then times the inspector's list
query (`Inspector.instances`, what `GET /api/instances` runs) for each filter: the median of 5,
in milliseconds, for a page of 50.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from flowc.hosts.inspect.listing import ListFilter
from flowc.hosts.inspect.source import Inspector
from flowc.runtime import Machine
from flowc.runtime.store import open_store
from flowc.runtime.store.durable import DurableFlows

TICKET = Path(__file__).resolve().parents[1] / "tests/inspector/ticket.flow"


def build(flows: DurableFlows, count: int) -> None:
    for n in range(count):
        flows.start("ticket", {"customer": f"customer-{n}"}, id=f"t{n:06d}")
        if n % 3 == 0:
            flows.send(f"t{n:06d}", "triage", {"priority": "HIGH" if n % 2 else "LOW"})
        if n % 10 == 0:
            flows.send(f"t{n:06d}", "resolve")


def timed(inspector: Inspector, filters: ListFilter) -> tuple[float, int]:
    times = []
    rows = 0
    for _ in range(5):
        started = time.perf_counter()
        rows = len(inspector.instances(filters)["instances"])
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times), rows


@contextmanager
def postgres_schema_url() -> Iterator[str]:
    """A URL whose connections work in a schema of their own, dropped afterwards."""
    import psycopg

    base = os.environ.get("FLOWC_TEST_POSTGRES_URL") or ""
    if not base:
        raise SystemExit("set FLOWC_TEST_POSTGRES_URL to a server to write to")
    schema = f"bench_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')  # type: ignore[arg-type]
    parts = urlsplit(base)
    query = [*parse_qsl(parts.query), ("options", f"-csearch_path={schema}")]
    try:
        yield urlunsplit(parts._replace(query=urlencode(query)))
    finally:
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')  # type: ignore[arg-type]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", type=int, default=100_000)
    parser.add_argument("--store", choices=["sqlite", "postgres"], default="sqlite")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        if args.store == "sqlite":
            url = f"sqlite:///{Path(tmp) / 'many.db'}?synchronous=off"
        else:
            url = stack.enter_context(postgres_schema_url())
        with DurableFlows(open_store(url), [Machine.from_file(TICKET)]) as flows:
            started = time.perf_counter()
            build(flows, args.instances)
            print(
                f"{args.store}: {args.instances} instances in {time.perf_counter() - started:.0f} s"
            )
            inspector = Inspector(flows)
            last = inspector.instances(ListFilter(limit=50))["next"]
            deep = ListFilter(limit=50)
            for _ in range(200):  # the 200th page, by its key
                page = inspector.instances(ListFilter(limit=50, after=_key(last)))
                last = page["next"]
            deep = ListFilter(limit=50, after=_key(last))
            since = time.time() - 5
            cases = {
                "first page": ListFilter(),
                "flow": ListFilter(flow="ticket"),
                "state=OPEN": ListFilter(state="OPEN"),
                "final": ListFilter(final=True),
                "not final": ListFilter(final=False),
                "version=1": ListFilter(version=1),
                "changed since": ListFilter(since=since),
                "text (a customer)": ListFilter(text="customer-4242"),
                "text, no match": ListFilter(text="nobody"),
                "page 201 (after a key)": deep,
            }
            for name, filters in cases.items():
                ms, rows = timed(inspector, filters)
                print(f"  {name:24} {ms:8.1f} ms  ({rows} rows)")


def _key(text: str | None) -> tuple[float, str] | None:
    from flowc.hosts.inspect.listing import parse_key

    return parse_key(text) if text else None


if __name__ == "__main__":
    main()
