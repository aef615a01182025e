"""Live updates of `flowc inspect`: from a committed step to an open page, over server-sent events.

    python bench/inspect_live.py [--steps 200] [--store sqlite|postgres]

Starts the real inspector (`flowc inspect --store ...`, its own process) on a temporary SQLite
file (or, with --store postgres, the server FLOWC_TEST_POSTGRES_URL names), opens an
instance's event stream as the page does, and commits steps from this process, one at a time
at random moments. For each step it measures the time from the commit's return to the `step`
event read from the stream. Prints p50, p95 and the maximum in milliseconds.
"""

from __future__ import annotations

import argparse
import http.client
import os
import random
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from flowc.runtime import Machine
from flowc.runtime.store import open_store
from flowc.runtime.store.durable import DurableFlows

TICKET = Path(__file__).resolve().parents[1] / "tests/inspector/ticket.flow"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_inspector(url: str, port: int) -> subprocess.Popen[bytes]:
    command = [sys.executable, "-m", "flowc.compiler.cli", "inspect", "--store", url,
               "--port", str(port)]  # fmt: skip
    server = subprocess.Popen(command, stdout=subprocess.DEVNULL)
    for _ in range(200):
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
            return server
        except OSError:
            time.sleep(0.05)
    server.kill()
    raise SystemExit("flowc inspect did not start")


def measure(url: str, steps: int) -> list[float]:
    port = free_port()
    with DurableFlows(open_store(url), [Machine.from_file(TICKET)]) as flows:
        flows.start("ticket", id="live")
        server = start_inspector(url, port)
        try:
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
            conn.request("GET", "/api/instances/live/events")
            stream = conn.getresponse()
            for _ in range(3):
                stream.readline()  # the `ready` event
            delays: list[float] = []
            for n in range(steps):
                time.sleep(random.uniform(0.0, 0.1))
                flows.send("live", "note", {"text": f"n{n}"})
                committed = time.perf_counter()
                while stream.readline() != b"event: step\n":
                    pass
                delays.append((time.perf_counter() - committed) * 1000)
            conn.close()
            return delays
        finally:
            server.terminate()
            server.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--store", choices=["sqlite", "postgres"], default="sqlite")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if args.store == "sqlite":
            url = f"sqlite:///{Path(tmp) / 'live.db'}"
        else:
            url = os.environ.get("FLOWC_TEST_POSTGRES_URL") or ""
            if not url:
                raise SystemExit("set FLOWC_TEST_POSTGRES_URL to a server to write to")
            with DurableFlows(open_store(url), []) as flows:
                flows.store.delete("live")
        delays = sorted(measure(url, args.steps))
    p95 = delays[int(len(delays) * 0.95) - 1]
    p50 = statistics.median(delays)
    print(
        f"{args.store}: {len(delays)} steps, commit -> page's stream: "
        f"p50 {p50:.1f} ms, p95 {p95:.1f} ms, max {delays[-1]:.1f} ms"
    )


if __name__ == "__main__":
    main()
