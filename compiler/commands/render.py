"""`flowc render FILE`: the flow as a diagram (Graphviz svg/png/pdf/dot, or Mermaid)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from flowc.compiler.commands import EXIT_FAILURE, EXIT_OK, EXIT_USAGE
from flowc.compiler.commands.output import deliver, is_stdout
from flowc.compiler.driver import compile_file, print_diagnostics
from flowc.compiler.emit.dot import RENDER_FORMATS, GraphvizMissing, render, to_dot
from flowc.compiler.emit.labels import LABEL_MODES, Highlight
from flowc.compiler.emit.mermaid import to_mermaid
from flowc.compiler.emit.snapshot import SnapshotError, read_snapshot
from flowc.compiler.watch import rerun_on_change
from flowc.runtime.machine import Machine
from flowc.runtime.model import CompiledFlow, IRLoadError

FORMATS = ("dot", *RENDER_FORMATS, "mermaid")
_SUFFIXES = {
    ".dot": "dot",
    ".gv": "dot",
    ".svg": "svg",
    ".png": "png",
    ".pdf": "pdf",
    ".mmd": "mermaid",
    ".mermaid": "mermaid",
}


def register(sub: Any) -> None:
    parser: argparse.ArgumentParser = sub.add_parser(
        "render",
        help="draw a flow as a diagram (svg, png, pdf, dot or mermaid)",
        description=(
            "Draw the transition graph of FILE (a .flow file, or JSON from `flowc compile`). "
            "The format comes from --format, else from the extension of -o, else DOT source on "
            "standard output. svg/png/pdf need Graphviz's `dot` program; dot and mermaid do not."
        ),
    )
    parser.add_argument("file", metavar="FILE", help="a .flow file or compiled .json")
    parser.add_argument(
        "-o",
        "--output",
        metavar="OUT",
        help="file to write (default, or `-`: standard output, in any format)",
    )
    parser.add_argument(
        "-f", "--format", choices=FORMATS, help="output format (default: from -o, else dot)"
    )
    parser.add_argument(
        "--labels",
        choices=LABEL_MODES,
        default="events",
        help="edge labels: none, events (default: triggers, and guards of routing), or full "
        "(`event [guard] / actions`)",
    )
    parser.add_argument("--highlight", metavar="STATE", help="colour STATE as the current one")
    parser.add_argument(
        "--snapshot",
        metavar="FILE",
        help="a snapshot saved by `flowc run`: colour its current state (every active state "
        "of a hierarchical flow) and the path taken",
    )
    parser.add_argument(
        "--direction",
        choices=("auto", "LR", "TB"),
        default="auto",
        help="layout direction (default: left-to-right for pipelines, else top-to-bottom)",
    )
    parser.add_argument(
        "--watch",
        action="store_true",
        help="draw again each time FILE (or the snapshot) is saved, until Ctrl-C "
        "(needs the `watch` extra)",
    )
    parser.set_defaults(handler=run)


def load_flow(path: Path, command: str) -> CompiledFlow | int:
    """The IR of a `.flow` (compiled, diagnostics printed) or `.json` file, or an exit code."""
    if not path.is_file():
        print(f"flowc {command}: no such file: {path}", file=sys.stderr)
        return EXIT_USAGE
    if path.suffix == ".json":
        try:
            flow = CompiledFlow.from_json(path.read_bytes())
            # A hand-edited IR can match its schema yet name states that do not exist; the
            # runtime's own load (every state built) is the one judge of what a graph may be.
            Machine(flow).preload()
            return flow
        except (IRLoadError, ValueError) as exc:
            print(f"flowc {command}: {path}: {exc}", file=sys.stderr)
            return EXIT_FAILURE
        except RecursionError:
            # The IR's own nesting is shallow: this is not a compiled flow.
            print(f"flowc {command}: {path}: JSON nested too deeply to be a flow", file=sys.stderr)
            return EXIT_FAILURE
        except OSError as exc:
            print(f"flowc {command}: cannot read {path}: {exc.strerror}", file=sys.stderr)
            return EXIT_FAILURE
    result = compile_file(path)
    if result.errors or result.flow is None:
        print_diagnostics(result, sys.stderr)
        print(f"flowc {command}: {path} has errors; nothing drawn", file=sys.stderr)
        return EXIT_FAILURE
    return result.flow


def _highlight(args: argparse.Namespace, flow: CompiledFlow) -> Highlight | None:
    """The states to highlight: a snapshot's (`--snapshot`), or one named (`--highlight`);
    None (said why) when the snapshot is unreadable or of another flow, or names a state the
    flow does not have."""
    mark = Highlight()
    if args.snapshot:
        try:
            mark = read_snapshot(args.snapshot)
        except SnapshotError as exc:
            print(f"flowc render: {exc}", file=sys.stderr)
            return None
        if mark.flow is not None and mark.flow != flow.name:
            print(
                f"flowc render: {args.snapshot} is a snapshot of {mark.flow}, not {flow.name}",
                file=sys.stderr,
            )
            return None
    if args.highlight:
        mark.current = args.highlight
        mark.configuration = ()
    names = {s.name for s in flow.states}
    unknown = sorted({mark.current or "", *mark.configuration} - names - {""})
    if unknown:
        print(f"flowc render: `{unknown[0]}` is not a state of {flow.name}", file=sys.stderr)
        return None
    return mark


def run(args: argparse.Namespace) -> int:
    if args.watch:
        once = argparse.Namespace(**{**vars(args), "watch": False})
        inputs = [Path(p) for p in (args.file, args.snapshot) if p]
        return rerun_on_change(inputs, lambda: run(once), command="render")
    fmt = args.format
    out = None if is_stdout(args.output) else Path(args.output)
    if fmt is None:
        fmt = _SUFFIXES.get(out.suffix.lower(), "") if out else "dot"
        if not fmt:
            assert out is not None
            print(
                f"flowc render: cannot tell the format from `{out.name}`; use --format "
                f"({', '.join(FORMATS)})",
                file=sys.stderr,
            )
            return EXIT_USAGE
    loaded = load_flow(Path(args.file), "render")
    if isinstance(loaded, int):
        return loaded
    flow = loaded
    mark = _highlight(args, flow)
    if mark is None:
        return EXIT_USAGE

    direction = None if args.direction == "auto" else args.direction
    data: bytes
    if fmt == "mermaid":
        data = to_mermaid(flow, args.labels, mark, direction=direction).encode("utf-8")
    else:
        graph = to_dot(flow, args.labels, mark, rankdir=direction)
        try:
            data = render(graph, fmt)
        except GraphvizMissing as exc:
            print(f"flowc render: {exc}", file=sys.stderr)
            return EXIT_FAILURE
    if not deliver("render", args.output, data):
        return EXIT_FAILURE
    return EXIT_OK
