"""`flowc explore FILE`: search for invariant violations, deadlocks and rules that never fire."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from flowc.compiler.commands import EXIT_FAILURE, EXIT_OK, EXIT_USAGE
from flowc.compiler.driver import compile_file, print_diagnostics
from flowc.compiler.testing.explore import explore


def register(sub: Any) -> None:
    parser: argparse.ArgumentParser = sub.add_parser(
        "explore",
        help="search the reachable configurations for invariant violations and deadlocks",
        description=(
            "Breadth-first search of the flow's reachable configurations (state and context, "
            "deduplicated) up to a bound, then seeded random walks past it. Reports invariant "
            "violations and deadlocks, each with a test block that reproduces it (the shortest "
            "when the breadth-first part found it), and the rules that never fired. Exit "
            "status: 0 nothing found, 1 a violation or deadlock (or the file does not "
            "compile), 2 usage error."
        ),
    )
    parser.add_argument("file", metavar="FILE", help="a .flow file")
    parser.add_argument(
        "--max-configs",
        type=int,
        default=2000,
        metavar="N",
        help="breadth-first bound on configurations (default 2000)",
    )
    parser.add_argument(
        "--depth", type=int, default=20, metavar="N", help="breadth-first depth (default 20)"
    )
    parser.add_argument(
        "--walks", type=int, default=100, metavar="N", help="random walks (default 100)"
    )
    parser.add_argument(
        "--walk-length", type=int, default=30, metavar="N", help="moves per walk (default 30)"
    )
    parser.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if min(args.max_configs, args.depth) < 1 or min(args.walks, args.walk_length) < 0:
        print("flowc explore: bounds must be positive", file=sys.stderr)
        return EXIT_USAGE
    result = compile_file(args.file)
    if result.flow is None or result.errors:
        print_diagnostics(result)
        return EXIT_FAILURE
    report = explore(
        result.flow,
        max_configs=args.max_configs,
        max_depth=args.depth,
        walks=args.walks,
        walk_length=args.walk_length,
        seed=args.seed,
    )
    sys.stdout.write(report.text())
    return EXIT_FAILURE if report.findings else EXIT_OK
