"""Latency of one tool call through `flowc mcp`: stdio, SQLite.

    python bench/mcp_latency.py [--calls 500] [--warmup 50]

Starts the real server (`flowc mcp flows/interactive_stage.flow --store sqlite:///...` in a
temporary directory) and drives it with the MCP SDK's client session over stdio, one call at a
time, as an agent host would. Measures the round trip of each call as the client sees it:

- an event (`llm_turn` on an instance in Discuss, a committed step: one SQLite transaction
  with the engine's step, the history row and the result's view of the new state);
- a read (`status`).

Prints p50, p99 and the mean per kind, in milliseconds. For comparison it also times the same
event through `ToolDispatcher` in this process (no MCP, no stdio), which is what the server
adds its transport to.

Effect delivery (`flowc mcp --effects MODULE:FUNCTION`): a second server, on a one-state flow
whose event emits an effect, with a handler that logs when it got each effect. For each call:
the round trip of the event (which now includes the delivery: the server hands the effect to
the handler after the commit, before it answers), the time from the client's call to the
handler's receipt, and from the step's commit (`OutboxEffect.at`) to the receipt.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client

from flowc.runtime import Machine
from flowc.runtime.store.durable import open_durable
from flowc.runtime.tool_calls import ToolDispatcher

FLOW = Path(__file__).resolve().parent.parent / "flows" / "interactive_stage.flow"
CONTEXT = {"stage": "dream", "finalization_tool": "submit_dream", "max_discuss_turns": 10**9}


EFFECT_FLOW = """\
flow pinger
version 1

effect ping(n: int)

event send(n: int)

initial state ON {
  on send -> self do emit ping(n: event.n)
}
"""
HANDLER = """\
import os, time

def deliver(effect):
    with open(os.environ["BENCH_EFFECT_LOG"], "a") as log:
        log.write(f"{effect.payload['n']} {time.time()} {time.time() - effect.at}\\n")
"""


def percentile(samples: list[float], q: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def report(kind: str, samples: list[float]) -> None:
    ms = [s * 1000 for s in samples]
    print(
        f"{kind:<34} p50 {percentile(ms, 0.50):6.2f} ms   p99 {percentile(ms, 0.99):6.2f} ms"
        f"   mean {statistics.fmean(ms):6.2f} ms   ({len(ms)} calls)"
    )


async def timed(call: Callable[[], Awaitable[object]], n: int, warmup: int) -> list[float]:
    for _ in range(warmup):
        await call()
    samples = []
    for _ in range(n):
        t0 = time.perf_counter()
        await call()
        samples.append(time.perf_counter() - t0)
    return samples


async def through_server(store: str, calls: int, warmup: int) -> None:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "flowc.compiler.cli", "mcp", str(FLOW), "--store", store],
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        started = await session.call_tool("start", {"context": CONTEXT})
        iid = started.structured_content["instance_id"]  # type: ignore[union-attr,index]

        async def event() -> object:
            result = await session.call_tool("llm_turn", {"instance_id": iid})
            assert not result.is_error  # type: ignore[union-attr]
            return result

        async def status() -> object:
            return await session.call_tool("status", {"instance_id": iid})

        report("stdio, SQLite: event (llm_turn)", await timed(event, calls, warmup))
        report("stdio, SQLite: read (status)", await timed(status, calls, warmup))


async def effect_delivery(folder: Path, calls: int, warmup: int) -> None:
    flow, log = folder / "pinger.flow", folder / "effects.log"
    flow.write_text(EFFECT_FLOW)
    (folder / "bench_effects.py").write_text(HANDLER)
    params = StdioServerParameters(
        command=sys.executable,
        args=[
            *("-m", "flowc.compiler.cli", "mcp", str(flow)),
            *("--store", f"sqlite:///{folder / 'effects.db'}"),
            *("--effects", "bench_effects:deliver"),
        ],
        env={"PYTHONPATH": os.pathsep.join([str(folder), *sys.path]), "BENCH_EFFECT_LOG": str(log)},
    )
    sent: dict[int, float] = {}
    round_trips: list[float] = []
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        started = await session.call_tool("start", {})
        iid = started.structured_content["instance_id"]  # type: ignore[union-attr,index]
        for n in range(warmup + calls):
            sent[n] = time.time()
            t0 = time.perf_counter()
            result = await session.call_tool("send", {"instance_id": iid, "n": n})
            assert not result.is_error  # type: ignore[union-attr]
            if n >= warmup:
                round_trips.append(time.perf_counter() - t0)
    to_handler, after_commit = [], []
    for line in log.read_text().splitlines():
        n, at, since_commit = line.split()
        if int(n) >= warmup:
            to_handler.append(float(at) - sent[int(n)])
            after_commit.append(float(since_commit))
    report("stdio, SQLite, --effects: event", round_trips)
    report("  call -> handler has the effect", to_handler)
    report("  commit -> handler has the effect", after_commit)


def in_process(store: str, calls: int, warmup: int) -> None:
    with open_durable(store, [Machine.from_file(FLOW)]) as durable:
        dispatcher = ToolDispatcher(durable)
        iid = dispatcher.call("start", {"context": CONTEXT}).data["instance_id"]
        samples = []
        for i in range(warmup + calls):
            t0 = time.perf_counter()
            dispatcher.call("llm_turn", {"instance_id": iid})
            if i >= warmup:
                samples.append(time.perf_counter() - t0)
        report("in process, SQLite: event", samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=500)
    parser.add_argument("--warmup", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        anyio.run(through_server, f"sqlite:///{Path(tmp) / 'server.db'}", args.calls, args.warmup)
        anyio.run(effect_delivery, Path(tmp), args.calls, args.warmup)
        in_process(f"sqlite:///{Path(tmp) / 'local.db'}", args.calls, args.warmup)


if __name__ == "__main__":
    main()
