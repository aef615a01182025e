"""`flowc export scxml FLOW [-o OUT.scxml]`: a flow as an SCXML chart (Python datamodel)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from flowc.compiler.commands import EXIT_FAILURE, EXIT_OK, EXIT_USAGE
from flowc.compiler.commands.output import deliver
from flowc.compiler.driver import compile_file, print_diagnostics, write_diagnostics


def register(sub: Any) -> None:
    parser: argparse.ArgumentParser = sub.add_parser(
        "export",
        help="write a flow in another notation (SCXML)",
        description=(
            "Compile FLOW and write it as an SCXML document with the Python datamodel. What "
            "SCXML has no word for (types, declared events) is kept in the flowc namespace, "
            "so `flowc import scxml` gives the same flow back; what it cannot express at all "
            "is reported (E420). See docs/scxml.md."
        ),
    )
    parser.add_argument("notation", choices=["scxml"], help="the notation to write")
    parser.add_argument("file", metavar="FLOW", help="the .flow file")
    parser.add_argument(
        "-o", "--output", metavar="OUT", help="where to write (default, or `-`: stdout)"
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from flowc.compiler.scxml.exporter import export_scxml

    path = Path(args.file)
    if not path.is_file():
        print(f"flowc export: no such file: {path}", file=sys.stderr)
        return EXIT_USAGE
    result = compile_file(path)
    print_diagnostics(result, sys.stderr)
    if result.flow is None:
        print(f"flowc export: {path}: not compiled", file=sys.stderr)
        return EXIT_FAILURE
    exported = export_scxml(result.flow, str(path), result.where)
    write_diagnostics(exported.diagnostics, result.source, sys.stderr, color=False)
    if exported.text is None:
        return EXIT_FAILURE
    if not deliver("export", args.output, exported.text.encode("utf-8")):
        return EXIT_FAILURE
    return EXIT_OK
