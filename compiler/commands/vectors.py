"""`flowc vectors FLOW... -o DIR`: each flow's tests, run on the Python runtime, as shared test
vectors another runtime replays (docs/testing.md, "Shared vectors")."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from flowc.compiler.commands import EXIT_FAILURE, EXIT_OK, EXIT_USAGE
from flowc.compiler.driver import compile_file, find_flow_files, print_diagnostics
from flowc.compiler.testing.vectors import (
    CASES_FILE,
    MESSAGES_FILE,
    cases_text,
    duplicate_names,
    file_name,
    flow_vectors,
    messages_text,
    vectors_text,
)
from flowc.runtime import FlowcError


def register(sub: Any) -> None:
    parser: argparse.ArgumentParser = sub.add_parser(
        "vectors",
        help="write each flow's tests, run on the runtime, as shared test vectors",
        description=(
            "Run every `test` block of each FLOW, the tests `flowc paths --cover` finds for "
            "it and a few refusal probes on the Python runtime with a fake clock, and write "
            "what every operation did (the `flowc run` line of each outcome, the state, "
            "configuration, context, effects and journals after it, and one snapshot) to "
            "DIR/<file stem>.vectors.json, with the compiled IR. DIR/default_messages.json "
            "gets the rejection kinds' default messages lowered as the IR lowers templates, "
            "DIR/template_cases.json every lowered template with values and what Jinja2 "
            "renders from them. Directories are searched for .flow files. The output is "
            "deterministic, so it can be committed; --check compares instead of writing. Exit "
            "status: 0 written (or up to date), 1 a flow does not compile or --check found a "
            "difference, 2 usage error."
        ),
    )
    parser.add_argument("flows", nargs="+", metavar="FLOW", help=".flow files or directories")
    parser.add_argument(
        "-o", "--output-dir", required=True, metavar="DIR", help="the folder to write to"
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="write nothing; exit 1 when a file in DIR differs from what would be written, "
        "is missing, or comes from no FLOW given",
    )
    parser.add_argument(
        "--skip-errors",
        action="store_true",
        help="skip (and name on standard error) the flows that do not compile, rather than failing",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    files = list(find_flow_files(args.flows))
    missing = [p for p in files if not p.is_file()]
    for path in missing:
        print(f"flowc vectors: no such file: {path}", file=sys.stderr)
    if missing:
        return EXIT_USAGE
    if not files:
        print("flowc vectors: no .flow files in " + ", ".join(args.flows), file=sys.stderr)
        return EXIT_USAGE
    for name, paths in sorted(duplicate_names(files).items()):
        listed = ", ".join(str(p) for p in paths)
        print(f"flowc vectors: {listed} would all be written to {name}", file=sys.stderr)
        return EXIT_USAGE
    out_dir = Path(args.output_dir)
    if out_dir.exists() and not out_dir.is_dir():
        print(f"flowc vectors: {out_dir} is not a folder", file=sys.stderr)
        return EXIT_USAGE
    wanted, forms, failed = _generate(files, args.skip_errors)
    wanted[MESSAGES_FILE] = messages_text()
    wanted[CASES_FILE] = cases_text(forms)
    if args.check:
        return _check(out_dir, wanted) or (EXIT_FAILURE if failed else EXIT_OK)
    try:
        out_dir.mkdir(parents=True, exist_ok=True)
        for name, text in wanted.items():
            target = out_dir / name
            if not target.is_file() or target.read_text(encoding="utf-8") != text:
                target.write_text(text, encoding="utf-8")
    except OSError as exc:
        print(f"flowc vectors: cannot write to {out_dir}: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_FAILURE
    return EXIT_FAILURE if failed else EXIT_OK


def _generate(files: list[Path], skip_errors: bool) -> tuple[dict[str, str], dict[str, Any], bool]:
    """Each output file's name and text, the flows' lowered templates, and whether a flow
    failed (and was not skipped)."""
    wanted: dict[str, str] = {}
    forms: dict[str, Any] = {}
    failed = False
    for path in files:
        result = compile_file(path)
        if result.flow is None or result.errors or result.symbols is None:
            if skip_errors:
                print(f"flowc vectors: skipped {path}: it does not compile", file=sys.stderr)
            else:
                print_diagnostics(result)
                print(f"flowc vectors: {path}: not compiled", file=sys.stderr)
                failed = True
            continue
        try:
            data = flow_vectors(result, _shown(path))
        except FlowcError as exc:
            print(f"flowc vectors: {path}: {exc}", file=sys.stderr)
            failed = True
            continue
        wanted[file_name(path)] = vectors_text(data)
        forms.update(data["ir"].get("lowered_templates", {}))
    return wanted, forms, failed


def _shown(path: Path) -> str:
    """The path a vectors file records: relative to the working folder when inside it."""
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def _check(out_dir: Path, wanted: dict[str, str]) -> int:
    """EXIT_FAILURE, naming each difference, when DIR is not what would be written."""
    problems = []
    for name, text in wanted.items():
        target = out_dir / name
        if not target.is_file():
            problems.append(f"{target}: missing")
        elif target.read_text(encoding="utf-8") != text:
            problems.append(f"{target}: differs from what would be written")
    found = sorted(out_dir.glob("*.vectors.json")) if out_dir.is_dir() else []
    problems += [f"{p}: written from no FLOW given (stale?)" for p in found if p.name not in wanted]
    for problem in problems:
        print(f"flowc vectors: {problem}", file=sys.stderr)
    if problems:
        print("flowc vectors: run the same command without --check to rewrite", file=sys.stderr)
        return EXIT_FAILURE
    return EXIT_OK
