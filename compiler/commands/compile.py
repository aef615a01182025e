"""`flowc compile FILE -o OUT.json`: the validated transition graph as versioned JSON."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from flowc.compiler.commands import EXIT_FAILURE, EXIT_OK, EXIT_USAGE
from flowc.compiler.commands.output import deliver
from flowc.compiler.driver import compile_file, print_diagnostics


def register(sub: Any) -> None:
    parser: argparse.ArgumentParser = sub.add_parser(
        "compile",
        help="compile a .flow file to its JSON transition graph",
        description=(
            "Compile FILE and write the validated transition graph as JSON (see docs/ir.md for "
            "the format and what it promises). Nothing is written when the file has errors. "
            "Warnings are printed but do not stop compilation unless --strict is given."
        ),
    )
    parser.add_argument("file", metavar="FILE", help="the .flow file")
    parser.add_argument(
        "-o",
        "--output",
        metavar="OUT",
        help="where to write the JSON (default, or `-`: standard output)",
    )
    parser.add_argument("--strict", action="store_true", help="treat warnings as errors")
    parser.add_argument(
        "--compact", action="store_true", help="write canonical compact JSON (one line)"
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    path = Path(args.file)
    if not path.is_file():
        print(f"flowc compile: no such file: {path}", file=sys.stderr)
        return EXIT_USAGE
    # The types are not needed here: a large file is type-checked in a forked child while this
    # process lowers, lints and hashes it.
    result = compile_file(path, parallel=True)
    print_diagnostics(result, sys.stderr)
    if result.flow is None or result.errors or (args.strict and result.warnings):
        print(f"flowc compile: {path}: not compiled", file=sys.stderr)
        return EXIT_FAILURE
    text = result.flow.to_json(indent=None if args.compact else 2)
    if args.compact:
        text += "\n"
    if not deliver("compile", args.output, text.encode("utf-8"), f"({result.flow.hash})"):
        return EXIT_FAILURE
    return EXIT_OK
