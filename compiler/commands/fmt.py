"""`flowc fmt [--check] [--diff] PATH...`: rewrite .flow files in the canonical layout."""

from __future__ import annotations

import argparse
import difflib
import os
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from flowc.compiler.commands import EXIT_FAILURE, EXIT_OK, EXIT_USAGE
from flowc.compiler.diagnostics import Diagnostic
from flowc.compiler.driver import CompileResult, decode, find_flow_files, print_diagnostics
from flowc.compiler.format import FormatError, FormatterBug, format_source
from flowc.compiler.source import SourceFile, Span

STDIN = "-"


def register(sub: Any) -> None:
    parser: argparse.ArgumentParser = sub.add_parser(
        "fmt",
        help="rewrite .flow files in the canonical layout",
        description=(
            "Rewrite each .flow file (directories are searched recursively) in the canonical "
            "layout: same tokens, same comments, same meaning; only whitespace changes. A file "
            "that does not parse is reported and left alone. `-` formats standard input to "
            "standard output. Exit status: 0 formatted (or, with --check/--diff, already "
            "formatted), 1 files to reformat with --check/--diff, or files that do not parse, "
            "2 usage error. The layout is described in docs/formatting.md."
        ),
    )
    parser.add_argument(
        "paths", nargs="+", metavar="PATH", help=".flow files or directories, or - for stdin"
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="write nothing; list the files that would be reformatted, exit 1 if any",
    )
    parser.add_argument(
        "--diff",
        action="store_true",
        help="write nothing; print a unified diff of the changes, exit 1 if any",
    )
    parser.add_argument(
        "--color",
        choices=("auto", "always", "never"),
        default="auto",
        help="colour the diagnostics of files that do not parse (default: auto)",
    )
    parser.add_argument("-q", "--quiet", action="store_true", help="print no summary line")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    color = {"always": True, "never": False}.get(args.color)
    if STDIN in args.paths:
        if len(args.paths) > 1:
            print("flowc fmt: `-` (standard input) cannot be mixed with paths", file=sys.stderr)
            return EXIT_USAGE
        return _run_stdin(args, color)
    files = _files(args.paths)
    if files is None:
        return EXIT_USAGE
    write = not (args.check or args.diff)
    changed: list[Path] = []
    failed = 0
    for path in files:
        text, problems = _read(path)
        formatted = None if problems else _format(text, str(path), problems)
        if formatted is None:
            failed += 1
            print_diagnostics(
                CompileResult(SourceFile(str(path), text), None, problems), color=color
            )
            continue
        if formatted == text:
            continue
        changed.append(path)
        if not _apply(args, path, text, formatted):
            return EXIT_FAILURE
    if not args.quiet:
        print(_summary(len(files), len(changed), failed, write), file=sys.stderr)
    if failed or (changed and not write):
        return EXIT_FAILURE
    return EXIT_OK


def _apply(args: argparse.Namespace, path: Path, text: str, formatted: str) -> bool:
    """Show (`--diff`), report (`--check`) or write the new layout of a file that changes;
    False when it cannot be written."""
    if args.diff:
        sys.stdout.writelines(_diff(text, formatted, str(path)))
    if args.check:
        print(f"would reformat {path}")
    if args.check or args.diff:
        return True
    try:
        _replace(path, formatted)
    except OSError as exc:
        # A folder it cannot write is the same for every file in it: say so once.
        reason = exc.strerror or str(exc)
        print(f"flowc fmt: cannot write {path}: {reason}", file=sys.stderr)
        return False
    return True


def _files(paths: list[str]) -> list[Path] | None:
    """The .flow files named or found under `paths`; None (said why) when one is missing or
    there are none."""
    files = list(find_flow_files(paths))
    missing = [str(p) for p in files if not p.exists()]
    for name in missing:
        print(f"flowc fmt: no such file or directory: {name}", file=sys.stderr)
    if missing:
        return None
    if not files:
        print("flowc fmt: no .flow files found under " + ", ".join(paths), file=sys.stderr)
        return None
    return files


def _run_stdin(args: argparse.Namespace, color: bool | None) -> int:
    text, problems = decode(sys.stdin.buffer.read(), STDIN)
    formatted = None if problems else _format(text, STDIN, problems)
    if formatted is None:
        print_diagnostics(CompileResult(SourceFile(STDIN, text), None, problems), color=color)
        return EXIT_FAILURE
    if args.diff:
        sys.stdout.writelines(_diff(text, formatted, STDIN))
    elif not args.check:
        sys.stdout.write(formatted)
    if (args.check or args.diff) and formatted != text:
        if args.check:
            print(f"would reformat {STDIN}")
        return EXIT_FAILURE
    return EXIT_OK


def _read(path: Path) -> tuple[str, list[Diagnostic]]:
    try:
        data = path.read_bytes()
    except OSError as exc:
        reason = exc.strerror or str(exc)
        return "", [Diagnostic("E001", f"cannot read file: {reason}", Span(1, 1, 1, 1), str(path))]
    return decode(data, str(path))


def _format(text: str, path: str, problems: list[Diagnostic]) -> str | None:
    """The formatted text, or None with the reasons appended to `problems`."""
    try:
        return format_source(text)
    except FormatError as error:
        problems.extend(_in_file(d, path) for d in error.diagnostics)
    except FormatterBug as bug:  # pragma: no cover - the check inside format_source
        problems.append(
            Diagnostic(
                "E000",
                f"internal formatter error: {bug}; the file was left alone",
                Span(1, 1, 1, 2),
                path,
                "this is a bug in flowc; please report it with the file that caused it",
            )
        )
    return None


def _in_file(diag: Diagnostic, path: str) -> Diagnostic:
    return replace(diag, file=path)


def _diff(before: str, after: str, path: str) -> list[str]:
    return list(
        difflib.unified_diff(
            before.splitlines(keepends=True),
            after.splitlines(keepends=True),
            f"{path} (original)",
            f"{path} (formatted)",
        )
    )


def _replace(path: Path, text: str) -> None:
    """Write through a temporary file in the same directory, so that an interrupted run leaves
    either the old file or the new one, never half of it."""
    mode = path.stat().st_mode
    handle, temporary = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as out:
            out.write(text)
        os.chmod(temporary, mode)
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _summary(files: int, changed: int, failed: int, wrote: bool) -> str:
    def plural(n: int) -> str:
        return f"{n} file" + ("" if n == 1 else "s")

    verb = "reformatted" if wrote else "would be reformatted"
    parts = [f"{plural(changed)} {verb}", f"{plural(files - changed - failed)} already formatted"]
    if failed:
        parts.append(f"{plural(failed)} not formatted: they do not parse")
    return ", ".join(parts)
