"""`flowc paths FILE`: shortest move sequences to every state and transition, as test blocks."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from flowc.compiler.commands import EXIT_FAILURE, EXIT_OK, EXIT_USAGE
from flowc.compiler.driver import compile_file, print_diagnostics
from flowc.compiler.testing.paths import generate


def register(sub: Any) -> None:
    parser: argparse.ArgumentParser = sub.add_parser(
        "paths",
        help="write the shortest move sequences to every state and transition as tests",
        description=(
            "Search the flow's reachable configurations on the runtime (events with small "
            "payload values, goto targets, back, timers; then starting contexts with one field "
            "changed) and print ready-to-run `test` blocks: one reaching each state and one "
            "taking each transition, or with --cover only as many as cover every transition "
            "found. Rules no sequence was found for are listed with the reason, and so are the "
            "rules lint proves can never fire (they need no test). Exit status: 0 every "
            "transition that can fire has a test, 1 some have none or the file does not "
            "compile, 2 usage error."
        ),
    )
    parser.add_argument("file", metavar="FILE", help="a .flow file")
    parser.add_argument(
        "--cover", action="store_true", help="only the tests needed to take every transition"
    )
    parser.add_argument(
        "--max-configs", type=int, default=5000, metavar="N", help="search bound (default 5000)"
    )
    parser.add_argument(
        "--depth", type=int, default=40, metavar="N", help="longest sequence (default 40)"
    )
    parser.add_argument("-o", "--output", metavar="FILE", help="write the tests to FILE")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if args.max_configs < 1 or args.depth < 1:
        print("flowc paths: --max-configs and --depth must be positive", file=sys.stderr)
        return EXIT_USAGE
    result = compile_file(args.file)
    if result.flow is None or result.errors:
        print_diagnostics(result)
        return EXIT_FAILURE
    report = generate(
        result.flow, cover=args.cover, max_configs=args.max_configs, max_depth=args.depth
    )
    text = report.text()
    if args.output:
        with open(args.output, "w", encoding="utf-8") as out:
            out.write(text)
    else:
        sys.stdout.write(text)
    return EXIT_FAILURE if report.missing else EXIT_OK
