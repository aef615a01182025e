"""Compile-time benchmark: parse + check + lower + lint of generated flows.

    python bench/compile.py [--sizes 1000 10000 50000] [--repeat 3]

Each generated flow has N states in a ring of stages with 3 guarded transitions each (forward,
skip-ahead, and a bounded retry back), typed events and a context. Prints, per size, the best
wall time of each stage over --repeat runs (the stages `flowc check` runs; the content hash
`flowc compile` adds is shown apart, in brackets), peak memory of one full compile (tracemalloc,
in a fresh process so sizes do not share allocator state) and the growth ratio
time(N)/time(prev N) against the ideal linear ratio N/prev N.
"""

from __future__ import annotations

import argparse
import gc
import json
import subprocess
import sys
import time
import tracemalloc


def generate(states: int) -> str:
    lines = [
        f'flow bench_{states} "Generated flow with {states} states"',
        "version 1",
        "enum Verdict { PASS, FAIL }",
        "context {",
        "  attempts: int = 0",
        "  max_attempts: int = 3",
        "  score: float = 0.0",
        "  notes: list[str] = []",
        "}",
        "event advance(verdict: Verdict, score: float(0..1))",
        "event skip(reason: str)",
        "event retry",
    ]
    for i in range(states - 1):
        nxt = f"S{i + 1}"
        skip = f"S{min(i + 2, states - 1)}"
        back = f"S{max(i - 1, 0)}"
        head = "initial state" if i == 0 else "state"
        lines += [
            f'{head} S{i} "Stage {i}" {{',
            f'  meta {{ index: {i}, tools: ["read", "write"] }}',
            f"  on advance if event.verdict == PASS and event.score >= 0.5 -> {nxt}"
            " do score = event.score; attempts = 0",
            f"  on skip if len(event.reason) > 0 and attempts < max_attempts -> {skip}"
            " do append(notes, event.reason)",
            f"  on retry if attempts < max_attempts -> {back} do attempts += 1",
            "}",
        ]
    lines.append(f"final state S{states - 1}")
    return "\n".join(lines) + "\n"


def stage_times(source: str, *, cpu: bool = False) -> dict[str, float]:
    """Seconds per stage of one compile, as `flowc check` runs it (no content hash); with `cpu`,
    process CPU seconds rather than wall seconds (on a shared machine, the steadier figure).
    `hash` (the canonical-JSON content hash `flowc compile` adds) is timed apart and is not
    part of `total`."""
    from flowc.compiler.lint import lint
    from flowc.compiler.lower import lower_mapped
    from flowc.compiler.parse import parse_source
    from flowc.compiler.resolve import resolve
    from flowc.compiler.source import SourceFile
    from flowc.compiler.typecheck import typecheck

    clock = time.process_time if cpu else time.perf_counter
    times: dict[str, float] = {}
    gc.disable()  # as compile_source does
    start = clock()
    parsed = parse_source(source, "bench.flow")
    times["parse"] = clock() - start
    assert parsed.module is not None and not parsed.diagnostics, parsed.diagnostics[:3]
    start = clock()
    symbols, found = resolve(parsed.module)
    found += typecheck(symbols)
    times["check"] = clock() - start
    assert not found, found[:3]
    start = clock()
    flow, where = lower_mapped(symbols, hashed=False)
    times["lower"] = clock() - start
    start = clock()
    warnings = lint(flow, SourceFile("bench.flow", source), where)
    times["lint"] = clock() - start
    assert not [w for w in warnings if w.severity == "error"], warnings[:3]
    times["total"] = sum(times.values())
    start = clock()
    flow.with_hash()
    times["hash"] = clock() - start
    del parsed, symbols, flow, where  # freed before the collector is back on, as check does
    gc.enable()
    return times


def peak_memory(states: int) -> int:
    """Peak traced bytes of one compile, measured in a fresh interpreter."""
    code = (
        "import sys, tracemalloc; sys.path.insert(0, 'bench');"
        "from compile import generate;"
        "from flowc.compiler import compile_source;"
        f"src = generate({states});"
        "import flowc.compiler.lint, flowc.compiler.parse;"
        "flowc.compiler.parse.flow_parser();"
        "tracemalloc.start(); r = compile_source(src, 'b.flow');"
        "print(tracemalloc.get_traced_memory()[1]); assert r.flow is not None"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    return int(out.split()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1_000, 10_000, 50_000])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--json", action="store_true", help="print results as JSON")
    args = parser.parse_args()

    from flowc.compiler.parse import flow_parser

    flow_parser()  # grammar load is a one-off start-up cost, not per-file work
    tracemalloc.stop()
    rows = []
    for size in args.sizes:
        source = generate(size)
        best: dict[str, float] = {}
        for _ in range(args.repeat):
            for stage, seconds in stage_times(source).items():
                best[stage] = min(best.get(stage, seconds), seconds)
        rows.append(
            {
                "states": size,
                "transitions": 3 * (size - 1),
                "source_bytes": len(source.encode()),
                **{k: round(v, 4) for k, v in best.items()},
                "peak_mb": round(peak_memory(size) / 2**20, 1),
            }
        )
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    header = f"{'states':>8} {'bytes':>10} {'parse':>8} {'check':>8} {'lower':>8} {'lint':>8}"
    header += f" {'total':>8} {'(hash)':>8} {'peak MB':>8} {'growth':>14}"
    print(header)
    prev = None
    for row in rows:
        growth = ""
        if prev is not None:
            ratio = row["total"] / prev["total"]
            ideal = row["states"] / prev["states"]
            growth = f"{ratio:.1f}x (lin {ideal:.0f}x)"
        print(
            f"{row['states']:>8} {row['source_bytes']:>10} {row['parse']:>8.3f} "
            f"{row['check']:>8.3f} {row['lower']:>8.3f} {row['lint']:>8.3f} "
            f"{row['total']:>8.3f} {row['hash']:>8.3f} {row['peak_mb']:>8.1f} {growth:>14}"
        )
        prev = row


if __name__ == "__main__":
    main()
