"""Exploration speed: `flowc explore` on each seed flow, the statechart examples and the planted
test flow.

    python bench/explore.py [--max-configs 2000] [--depth 20] [--walks 100] [--seeds 0 1 2]

Prints, per flow and seed: configurations reached breadth-first (and whether the bound stopped
the search), configurations added by the random walks, moves played, wall time, and
configurations per second (all distinct configurations / total time). Also the time `flowc
paths --cover` takes on each flow.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from flowc.compiler.driver import compile_file
from flowc.compiler.testing.explore import explore
from flowc.compiler.testing.paths import generate

ROOT = Path(__file__).resolve().parents[1]
FLOWS = [
    *sorted((ROOT / "flows").glob("*.flow")),
    *sorted((ROOT / "flows" / "examples").glob("*.flow")),  # statecharts
    ROOT / "tests/testing/flows/planted.flow",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--max-configs", type=int, default=2000)
    parser.add_argument("--depth", type=int, default=20)
    parser.add_argument("--walks", type=int, default=100)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    args = parser.parse_args()
    print(
        f"{'flow':<18} {'seed':>4} {'bfs':>6} {'bound':>6} {'walk+':>6} {'moves':>7} "
        f"{'time s':>7} {'conf/s':>7} {'found':>5}"
    )
    for path in FLOWS:
        flow = compile_file(path).flow
        assert flow is not None, path
        for seed in args.seeds:
            report = explore(
                flow,
                max_configs=args.max_configs,
                max_depth=args.depth,
                walks=args.walks,
                seed=seed,
            )
            s = report.search
            print(
                f"{flow.name:<18} {seed:>4} {len(s.nodes):>6} "
                f"{'hit' if not s.complete else 'no':>6} {report.walk_configs:>6} "
                f"{s.moves_played + report.walk_steps:>7} {report.seconds:>7.2f} "
                f"{report.rate:>7.0f} {len(report.findings):>5}"
            )
    print()
    print(f"{'flow':<18} {'paths --cover s':>16} {'tests':>6} {'missing':>8}")
    for path in FLOWS:
        flow = compile_file(path).flow
        assert flow is not None
        started = time.perf_counter()
        paths = generate(flow, cover=True)
        print(
            f"{flow.name:<18} {time.perf_counter() - started:>16.2f} {len(paths.tests):>6} "
            f"{len(paths.missing):>8}"
        )


if __name__ == "__main__":
    main()
