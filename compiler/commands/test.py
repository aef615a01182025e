"""`flowc test PATH...`: run the `test` blocks of .flow files on the real runtime."""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from flowc.compiler.commands import EXIT_FAILURE, EXIT_OK, EXIT_USAGE
from flowc.compiler.diagnostics import Diagnostic, render_text
from flowc.compiler.driver import compile_file, find_flow_files, print_diagnostics, use_color
from flowc.compiler.testing.coverage import coverage_of, group_of
from flowc.compiler.testing.junit import junit_xml
from flowc.compiler.testing.runner import FileRun, TestOutcome, run_file


def register(sub: Any) -> None:
    parser: argparse.ArgumentParser = sub.add_parser(
        "test",
        help="run the test blocks of .flow files",
        description=(
            'Run every `test "..." { ... }` block of each .flow file (directories are searched '
            "recursively) on the runtime, with a fake clock, checking the flow's invariants "
            "after every step. Exit status: 0 all tests pass, 1 a test failed or a file does "
            "not compile, 2 usage error."
        ),
    )
    parser.add_argument("paths", nargs="+", metavar="PATH", help=".flow files or directories")
    parser.add_argument(
        "--format",
        choices=("text", "junit"),
        default="text",
        help="text for people (default), junit XML for CI",
    )
    parser.add_argument(
        "-o", "--output", metavar="FILE", help="write the report to FILE instead of stdout"
    )
    parser.add_argument(
        "--coverage",
        action="store_true",
        help="list the transitions, rejections and timers no test takes",
    )
    parser.add_argument(
        "--coverage-json", metavar="FILE", help="write the transition coverage as JSON to FILE"
    )
    parser.add_argument(
        "--color",
        choices=("auto", "always", "never"),
        default="auto",
        help="colour the text output (default: auto, when writing to a terminal)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    files = list(find_flow_files(args.paths))
    missing = [str(p) for p in files if not p.exists()]
    if missing:
        for path in missing:
            print(f"flowc test: no such file or directory: {path}", file=sys.stderr)
        return EXIT_USAGE
    if not files:
        print("flowc test: no .flow files found under " + ", ".join(args.paths), file=sys.stderr)
        return EXIT_USAGE
    started = time.perf_counter()
    runs = [run_file(compile_file(path)) for path in files]
    elapsed = time.perf_counter() - started
    out = open(args.output, "w", encoding="utf-8") if args.output else sys.stdout  # noqa: SIM115
    try:
        if args.format == "junit":
            out.write(junit_xml(runs, elapsed))
        else:
            color = {"always": True, "never": False}.get(args.color)
            _text_report(runs, elapsed, out, use_color(out) if color is None else color)
            if args.coverage:
                _coverage_report(runs, out)
    finally:
        if args.output:
            out.close()
    if args.coverage_json:
        data = _coverage_json(runs)
        Path(args.coverage_json).write_text(
            json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
        )
    failed = any(not r.compiled or any(not o.passed for o in r.outcomes) for r in runs)
    return EXIT_FAILURE if failed else EXIT_OK


def _text_report(runs: list[FileRun], elapsed: float, out: Any, color: bool) -> None:
    for r in runs:
        if not r.compiled:
            out.write(f"{r.result.source.path} E (does not compile)\n")
            continue
        marks = "".join("." if o.passed else "F" for o in r.outcomes)
        out.write(f"{r.result.source.path} {marks or '(no tests)'}\n")
    failures = [(r, o) for r in runs for o in r.outcomes if not o.passed]
    broken = [r for r in runs if not r.compiled]
    if failures or broken:
        out.write("\n" + " FAILURES ".center(72, "=") + "\n")
    for r in broken:
        out.write(f"\n{r.result.source.path} does not compile:\n")
        print_diagnostics(r.result, out, color=color)
    for r, o in failures:
        out.write("\n" + f" {Path(o.file).name}: {o.name} ".center(72, "_") + "\n")
        out.write(_failure_text(r, o, color) + "\n")
    passed = sum(o.passed for r in runs for o in r.outcomes)
    parts = [f"{len(failures)} failed"] if failures else []
    parts.append(f"{passed} passed")
    if broken:
        parts.append(f"{len(broken)} file{'s' if len(broken) != 1 else ''} not compiling")
    out.write("\n" + f" {', '.join(parts)} in {elapsed:.2f}s ".center(72, "=") + "\n")


def _failure_text(r: FileRun, o: TestOutcome, color: bool) -> str:
    assert o.failure is not None
    span = o.failure.span
    as_diag = Diagnostic("E000", o.failure.message, span, o.file)
    body = render_text(as_diag, r.result.source.line_text(span.line), color=color)
    header = f"{o.file}:{span.line}:{span.column}: FAILED: {o.failure.message}"
    return "\n".join([header, *body.splitlines()[1:]])


def _coverages(runs: list[FileRun]) -> list[Any]:
    return [
        coverage_of(
            r.result.source.path,
            r.result.flow,
            (i for o in r.outcomes for i in o.fired),
            sum((o.emitted for o in r.outcomes), Counter()),
        )
        for r in runs
        if r.compiled and r.result.flow is not None
    ]


def _coverage_report(runs: list[FileRun], out: Any) -> None:
    out.write("\n" + " transition coverage ".center(72, "-") + "\n")
    for cov in _coverages(runs):
        rules = len(cov.rules())
        out.write(
            f"{cov.file}: {cov.covered}/{cov.total} transitions ({cov.percent:.0f}%), "
            f"{cov.rules_covered}/{rules} source rules\n"
        )
        for t in cov.uncovered():
            elsewhere = (
                "; its rule is taken in another state" if cov.rule_taken_elsewhere(t) else ""
            )
            out.write(
                f"  not taken: {group_of(t)[:-1]} line {t.line}: {cov.describe(t)}{elsewhere}\n"
            )
        for t in cov.never_fire():
            out.write(f"  can never fire (lint proves it): line {t.line}: {cov.describe(t)}\n")
        effects = cov.effects()
        if effects:
            out.write(
                "  effects emitted: "
                + ", ".join(f"{name} {count}x" for name, count in effects.items())
                + "\n"
            )


def _coverage_json(runs: list[FileRun]) -> dict[str, Any]:
    files = [cov.to_dict() for cov in _coverages(runs)]
    total = sum(f["total"] for f in files)
    covered = sum(f["covered"] for f in files)
    return {
        "files": files,
        "total": total,
        "covered": covered,
        "percent": round(100.0 * covered / total, 2) if total else 100.0,
    }
