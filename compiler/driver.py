"""Runs the pipeline on one file and gathers every diagnostic.

    bytes -> text (E001) -> parse -> resolve -> typecheck -> lower -> lint

A stage runs only when the stages before it left no errors that would make its own findings
noise (a syntax error makes name errors unreliable; any error makes the IR meaningless).
Whatever the input, the result is diagnostics, never an exception: an internal error is a bug,
and is reported as one (E000) rather than as a traceback.
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TextIO

from flowc.compiler.diagnostics import Diagnostic, Severity, render_text
from flowc.compiler.lower import lower
from flowc.compiler.parse import parse_source
from flowc.compiler.resolve import Symbols, resolve
from flowc.compiler.source import SourceFile, Span
from flowc.compiler.testblocks import check_tests
from flowc.compiler.typecheck import typecheck
from flowc.runtime.model import CompiledFlow

FLOW_SUFFIX = ".flow"


@dataclass
class CompileResult:
    source: SourceFile
    flow: CompiledFlow | None
    diagnostics: list[Diagnostic] = field(default_factory=list)
    #: The symbol tables (with the flow's `test` blocks), when the file got that far.
    symbols: Symbols | None = None

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity is Severity.ERROR]

    @property
    def warnings(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.severity is Severity.WARNING]

    @property
    def ok(self) -> bool:
        return self.flow is not None and not self.errors


def decode(data: bytes, path: str) -> tuple[str, list[Diagnostic]]:
    """UTF-8 text of a file; undecodable bytes are reported (E001) and replaced."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        text = data.decode("utf-8", errors="replace")
        prefix = data[: exc.start].decode("utf-8", errors="replace")
        line = prefix.count("\n") + 1
        column = len(prefix) - (prefix.rfind("\n") + 1) + 1
        diag = Diagnostic.make(
            "E001",
            f"byte 0x{data[exc.start]:02x} is not valid UTF-8",
            Span.point(line, column),
            help="save the file as UTF-8",
        )
        return text, [replace(diag, file=path)]
    if text.startswith("\ufeff"):
        text = text[1:]  # a BOM is harmless; do not count it as a column
    return text, []


def compile_source(text: str | bytes, path: str = "<input>", *, lint: bool = True) -> CompileResult:
    diagnostics: list[Diagnostic] = []
    if isinstance(text, bytes):
        text, decode_errors = decode(text, path)
        diagnostics.extend(decode_errors)
    source = SourceFile(path, text)
    # Past an E001 the text holds replacement characters: its errors are worth reporting (all
    # at once), but graph warnings about a file that cannot compile would be noise.
    lint = lint and not diagnostics
    symbols: list[Symbols] = []  # filled by _run_stages when resolution ran
    try:
        with _collector_paused():
            flow, found = _run_stages(source, lint=lint, symbols=symbols)
    except RecursionError:
        flow, found = (
            None,
            [Diagnostic.make("E005", "the file is nested too deeply to analyse", Span(1, 1, 1, 2))],
        )
    except Exception as exc:  # pragma: no cover - a compiler bug must not become a traceback
        if os.environ.get("FLOWC_DEBUG"):
            raise
        flow, found = (
            None,
            [
                Diagnostic(
                    "E000",
                    f"internal compiler error: {type(exc).__name__}: {exc}",
                    Span(1, 1, 1, 2),
                    help="this is a bug in flowc; please report it with the file that caused it",
                )
            ],
        )
    diagnostics.extend(found)
    diagnostics = sorted(
        {_key(d): replace(d, file=path) for d in diagnostics}.values(), key=Diagnostic.sort_key
    )
    if any(d.severity is Severity.ERROR for d in diagnostics):
        flow = None
    return CompileResult(source, flow, diagnostics, symbols[0] if symbols else None)


@contextmanager
def _collector_paused() -> Iterator[None]:
    """The passes allocate millions of small acyclic objects; the cyclic collector would rescan
    them over and over (superlinear in file size) while finding nothing to free."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _key(d: Diagnostic) -> tuple[str, int, int, str]:
    return (d.code, d.span.line, d.span.column, d.message)


def _run_stages(
    source: SourceFile, *, lint: bool, symbols: list[Symbols]
) -> tuple[CompiledFlow | None, list[Diagnostic]]:
    parsed = parse_source(source.text, source.path)
    if parsed.module is None or parsed.diagnostics:
        return None, parsed.diagnostics
    resolved, found = resolve(parsed.module)
    symbols.append(resolved)
    found += typecheck(resolved)
    found += check_tests(resolved)
    if any(d.severity is Severity.ERROR for d in found) or resolved.initial is None:
        return None, found
    flow = lower(resolved)
    if lint:
        from flowc.compiler.lint import lint as run_lint

        found += run_lint(flow, source)
    return flow, found


def compile_file(path: str | os.PathLike[str], *, lint: bool = True) -> CompileResult:
    """Compile a file; an unreadable file is a diagnostic too (E001)."""
    name = str(path)
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        source = SourceFile(name, "")
        reason = exc.strerror or str(exc)
        diag = Diagnostic("E001", f"cannot read file: {reason}", Span(1, 1, 1, 1), file=name)
        return CompileResult(source, None, [diag])
    return compile_source(data, name, lint=lint)


def find_flow_files(paths: Iterable[str | os.PathLike[str]]) -> Iterator[Path]:
    """Expand directories to the `.flow` files below them (sorted); files are kept as given."""
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            yield from sorted(p for p in path.rglob(f"*{FLOW_SUFFIX}") if p.is_file())
        else:
            yield path


def use_color(stream: TextIO) -> bool:
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    return stream.isatty() and os.environ.get("TERM") != "dumb"


def print_diagnostics(
    result: CompileResult, stream: TextIO | None = None, *, color: bool | None = None
) -> None:
    """rustc-style text for each diagnostic of a result, separated by blank lines."""
    out = stream if stream is not None else sys.stderr
    colored = use_color(out) if color is None else color
    for diag in result.diagnostics:
        out.write(render_text(diag, result.source.line_text(diag.span.line), color=colored))
        out.write("\n\n")
