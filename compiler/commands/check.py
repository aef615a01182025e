"""`flowc check PATH...`: compile and lint files or directories, report every diagnostic."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from flowc.compiler.ci_formats import github_annotations, render_sarif
from flowc.compiler.cli import leave_for_exit
from flowc.compiler.commands import EXIT_FAILURE, EXIT_OK, EXIT_USAGE
from flowc.compiler.diagnostics import Severity, summary_line
from flowc.compiler.driver import (
    CompileResult,
    collector_paused,
    compile_file,
    find_flow_files,
    print_diagnostics,
)
from flowc.compiler.watch import rerun_on_change


def register(sub: Any) -> None:
    parser: argparse.ArgumentParser = sub.add_parser(
        "check",
        help="compile and lint .flow files, reporting every problem",
        description=(
            "Compile and lint each .flow file (directories are searched recursively) and report "
            "every diagnostic. Exit status: 0 clean, 1 errors (or warnings with --strict), "
            "2 usage error."
        ),
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help=".flow files or directories")
    parser.add_argument(
        "--strict", action="store_true", help="fail (exit 1) on warnings as well as errors"
    )
    parser.add_argument(
        "--format",
        choices=("text", "json", "sarif", "github"),
        default="text",
        help="text for people (default), json for editors and scripts, sarif (2.1.0) for code "
        "scanning, github for workflow annotations on a pull request",
    )
    parser.add_argument(
        "--color",
        choices=("auto", "always", "never"),
        default="auto",
        help="colour the text output (default: auto, when writing to a terminal)",
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="print only the diagnostics")
    parser.add_argument(
        "--watch",
        action="store_true",
        help="check again each time a file is saved, until Ctrl-C (needs the `watch` extra)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if args.watch:
        once = argparse.Namespace(**{**vars(args), "watch": False})
        return rerun_on_change([Path(p) for p in args.paths], lambda: run(once), command="check")
    files = list(find_flow_files(args.paths))
    missing = [str(p) for p in files if not p.exists()]
    if missing:
        for path in missing:
            print(f"flowc check: no such file or directory: {path}", file=sys.stderr)
        return EXIT_USAGE
    if not files:
        print("flowc check: no .flow files found under " + ", ".join(args.paths), file=sys.stderr)
        return EXIT_USAGE
    # The cyclic collector stays off until the results are freed: a compile pauses it anyway,
    # and turning it back on while a large flow's AST and IR are alive makes it walk millions
    # of (acyclic) objects once, for nothing.
    with collector_paused():
        failed = _report(files, args)
    return EXIT_FAILURE if failed else EXIT_OK


def _report(files: list[Path], args: argparse.Namespace) -> bool:
    """Check `files` and print what was found; True when the check failed."""
    started = time.perf_counter()
    # Checking reports diagnostics only: the content hash (a canonical JSON dump of the whole
    # IR, a quarter of a large flow's compile) is never read, nor are the types (so a large
    # file is type-checked in a forked child while this process lowers and lints it).
    results = [compile_file(path, hashed=False, parallel=True) for path in files]
    leave_for_exit(results)
    elapsed = time.perf_counter() - started
    errors = sum(len(r.errors) for r in results)
    warnings = sum(len(r.warnings) for r in results)
    if args.format == "json":
        print(json.dumps(_json_report(results, args.strict), indent=2, ensure_ascii=False))
    elif args.format == "sarif":
        print(render_sarif(d for r in results for d in r.diagnostics))
    elif args.format == "github":
        for line in github_annotations(d for r in results for d in r.diagnostics):
            print(line)
        if not args.quiet:
            status = summary_line(errors, warnings, len(results))
            print(f"{status} ({elapsed:.2f}s)", file=sys.stderr)
    else:
        color = {"always": True, "never": False}.get(args.color)
        for result in results:
            print_diagnostics(result, sys.stdout, color=color)
        # The diagnostics (stdout) before the summary (stderr) also when both go to one reader
        # through pipes, as in watch mode.
        sys.stdout.flush()
        if not args.quiet:
            status = summary_line(errors, warnings, len(results))
            print(f"{status} ({elapsed:.2f}s)", file=sys.stderr)
    return errors > 0 or (args.strict and warnings > 0)


def _json_report(results: list[CompileResult], strict: bool) -> dict[str, Any]:
    return {
        "files": [
            {
                "file": r.source.path,
                "ok": r.ok and not (strict and r.warnings),
                "diagnostics": [d.to_dict() for d in r.diagnostics],
            }
            for r in results
        ],
        "errors": sum(1 for r in results for d in r.diagnostics if d.severity is Severity.ERROR),
        "warnings": sum(
            1 for r in results for d in r.diagnostics if d.severity is Severity.WARNING
        ),
    }
