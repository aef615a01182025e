"""`flowc import scxml FILE [-o OUT.flow]`: an SCXML chart as readable `.flow` source."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from flowc.compiler.commands import EXIT_FAILURE, EXIT_OK, EXIT_USAGE
from flowc.compiler.commands.output import deliver


def register(sub: Any) -> None:
    parser: argparse.ArgumentParser = sub.add_parser(
        "import",
        help="turn a chart in another notation (SCXML) into a .flow file",
        description=(
            "Read FILE in the given notation and write the equivalent .flow source. SCXML "
            "(null and Python datamodels) is read safely: nothing in the file is run, DTDs and "
            "entities are refused, and what flowc has no equivalent for (invoke, scripts beyond "
            "assignments, external I/O processors, ...) is reported with its line. See "
            "docs/scxml.md."
        ),
    )
    parser.add_argument("notation", choices=["scxml"], help="the notation of FILE")
    parser.add_argument("file", metavar="FILE", help="the chart to import")
    parser.add_argument(
        "-o", "--output", metavar="OUT", help="where to write the .flow (default, or `-`: stdout)"
    )
    parser.add_argument(
        "--datamodel",
        choices=["null", "python"],
        help="read expressions with this datamodel whatever the file declares",
    )
    parser.add_argument(
        "--data-src",
        action="store_true",
        help="read the files `<data src>` names, when they are plain files beside FILE "
        "(refused otherwise)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from flowc.compiler.driver import use_color, write_diagnostics
    from flowc.compiler.scxml.importer import import_file
    from flowc.compiler.source import SourceFile

    path = Path(args.file)
    if not path.is_file():
        print(f"flowc import: no such file: {path}", file=sys.stderr)
        return EXIT_USAGE
    result = import_file(path, datamodel=args.datamodel, data_src=args.data_src)
    source = SourceFile(str(path), result.document.text)
    write_diagnostics(result.diagnostics, source, sys.stderr, color=use_color(sys.stderr))
    if result.flow_text is None:
        print(f"flowc import: {path}: not imported", file=sys.stderr)
        return EXIT_FAILURE
    if not deliver("import", args.output, result.flow_text.encode("utf-8")):
        return EXIT_FAILURE
    return EXIT_OK
