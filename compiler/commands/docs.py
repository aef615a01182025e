"""`flowc docs FILE...`: Markdown documentation (state and transition tables, events, context,
types, migrations from older versions, messages and journals, the diagram) from Jinja2
templates."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from flowc.compiler.commands import EXIT_FAILURE, EXIT_OK, EXIT_USAGE
from flowc.compiler.commands.output import OutputError, is_stdout, write_output
from flowc.compiler.commands.render import load_flow
from flowc.compiler.emit.dot import GraphvizMissing
from flowc.compiler.emit.markdown import to_markdown
from flowc.compiler.emit.site import FlowDoc, build, source_name, stale_files


def register(sub: Any) -> None:
    parser: argparse.ArgumentParser = sub.add_parser(
        "docs",
        help="write Markdown documentation of flows (tables and diagram)",
        description=(
            "Document each FILE (.flow or compiled .json) as Markdown: the diagram, a table of "
            "states (title, kind, accepted events, entry/exit, meta), the transitions in the "
            "order they are tried, events with their payloads, and context fields. With one "
            "FILE and no option, the page goes to standard output with a Mermaid diagram. "
            "With --out-dir, each flow gets NAME.md and NAME.svg there, plus an index."
        ),
    )
    parser.add_argument("files", nargs="+", metavar="FILE", help=".flow or compiled .json files")
    parser.add_argument(
        "-o",
        "--output",
        metavar="OUT.md",
        help="write one flow's page here, and its diagram beside it as OUT.svg (unless "
        "--no-svg); `-` is standard output, with a Mermaid diagram",
    )
    parser.add_argument(
        "--out-dir", metavar="DIR", help="write NAME.md, NAME.svg and README.md for every FILE"
    )
    parser.add_argument(
        "--no-svg",
        action="store_true",
        help="embed a Mermaid diagram instead of drawing an SVG (no Graphviz needed)",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="with --out-dir: write nothing, exit 1 if any file there is missing or out of date",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if args.output and (args.out_dir or len(args.files) != 1):
        print("flowc docs: -o takes exactly one FILE and no --out-dir", file=sys.stderr)
        return EXIT_USAGE
    if args.check and not args.out_dir:
        print("flowc docs: --check compares against --out-dir DIR", file=sys.stderr)
        return EXIT_USAGE
    docs: list[FlowDoc] = []
    for name in args.files:
        path = Path(name)
        loaded = load_flow(path, "docs")
        if isinstance(loaded, int):
            return loaded
        docs.append(FlowDoc(path.stem, loaded, source_name(path, Path.cwd())))

    if not args.out_dir:
        doc = docs[0]
        if len(docs) > 1:
            print("flowc docs: several FILEs need --out-dir", file=sys.stderr)
            return EXIT_USAGE
        try:
            return _write_page(doc, args.output, svg=not args.no_svg)
        except OutputError as exc:
            print(f"flowc docs: {exc}", file=sys.stderr)
            return EXIT_FAILURE

    return _write_site(docs, Path(args.out_dir), check=args.check, svg=not args.no_svg)


def _write_site(docs: list[FlowDoc], out_dir: Path, *, check: bool, svg: bool) -> int:
    """The pages of several flows in `out_dir` (only the files that change are written), or
    with `check`, whether they are all up to date."""
    files = _build(docs, svg=svg)
    if files is None:
        return EXIT_FAILURE
    if check:
        stale = stale_files(docs, files, out_dir)
        for name in stale:
            print(f"flowc docs: {out_dir / name} is out of date", file=sys.stderr)
        if stale:
            print("flowc docs: regenerate with the same command without --check", file=sys.stderr)
            return EXIT_FAILURE
        return EXIT_OK
    try:
        for name, content in files.items():
            target = out_dir / name
            if not target.is_file() or target.read_bytes() != content:
                write_output(str(target), content)
    except OutputError as exc:
        print(f"flowc docs: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    print(f"wrote {len(files)} files to {out_dir}", file=sys.stderr)
    return EXIT_OK


def _write_page(doc: FlowDoc, output: str | None, *, svg: bool) -> int:
    """One flow's page: to standard output with a Mermaid diagram, or to a file with its SVG
    diagram beside it (both named on standard error, so no file appears unannounced)."""
    if is_stdout(output):
        write_output(None, to_markdown(doc.flow, None, source_name=doc.source_name).encode())
        return EXIT_OK
    out = Path(output or "")
    svg_name = f"{out.stem}.svg" if svg else None
    files = _build([doc], svg=True) if svg else {}
    if files is None:
        return EXIT_FAILURE
    page = to_markdown(doc.flow, svg_name, source_name=doc.source_name)
    written = [write_output(str(out), page.encode("utf-8"))]
    if svg_name is not None:
        written.append(write_output(str(out.parent / svg_name), files[f"{doc.stem}.svg"]))
    print(f"wrote {' and '.join(str(p) for p in written)}", file=sys.stderr)
    return EXIT_OK


def _build(docs: list[FlowDoc], *, svg: bool) -> dict[str, bytes] | None:
    try:
        return build(docs, svg=svg)
    except GraphvizMissing as exc:
        print(f"flowc docs: {exc}", file=sys.stderr)
        return None
