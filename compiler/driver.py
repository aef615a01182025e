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
import re
import sys
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TextIO

from flowc.compiler import ast, fastparse
from flowc.compiler.children import Flows, compile_children
from flowc.compiler.diagnostics import (
    Diagnostic,
    Related,
    Severity,
    render_text,
    with_suggested_fix,
)
from flowc.compiler.forked_task import ForkedTask
from flowc.compiler.lower import lower_mapped
from flowc.compiler.resolve import Symbols, resolve, suggestion_budget
from flowc.compiler.source import SourceFile, Span
from flowc.compiler.sourcemap import SourceMap
from flowc.compiler.testblocks import check_tests
from flowc.compiler.typecheck import TypeChecker
from flowc.compiler.types import Ty
from flowc.runtime.model import CompiledFlow

FLOW_SUFFIX = ".flow"
#: The largest source compiled (E008), in bytes of a file or characters of a string: bounds
#: the memory one file can take, and stops `flowc check /dev/zero` from reading forever. Raise it
#: with `max_bytes=` or the FLOWC_MAX_SOURCE_BYTES environment variable.
MAX_SOURCE_BYTES = 32 * 1024 * 1024
SOURCE_LIMIT_VARIABLE = "FLOWC_MAX_SOURCE_BYTES"


@dataclass
class CompileResult:
    """Everything the compiler learnt about one file: what editors and tools build on.

    `module`, `symbols` and `types` are there as far as the stages got (no module past a syntax
    error, no types past a naming error); `where` only when the flow was lowered."""

    source: SourceFile
    flow: CompiledFlow | None
    diagnostics: list[Diagnostic] = field(default_factory=list)
    module: ast.Module | None = None
    symbols: Symbols | None = None
    #: `id` of each checked expression node of `module` -> its type
    types: dict[int, Ty] = field(default_factory=dict)
    where: SourceMap | None = None

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


def source_limit(max_bytes: int | None = None) -> int:
    """`max_bytes` if given, else FLOWC_MAX_SOURCE_BYTES if it is a positive integer, else
    `MAX_SOURCE_BYTES`."""
    if max_bytes is not None:
        return max_bytes
    raw = os.environ.get(SOURCE_LIMIT_VARIABLE, "").strip()
    return int(raw) if raw.isdigit() and int(raw) > 0 else MAX_SOURCE_BYTES


def compile_source(
    text: str | bytes,
    path: str = "<input>",
    *,
    lint: bool = True,
    max_bytes: int | None = None,
    module: ast.Module | None = None,
    hashed: bool = True,
    parallel: bool = False,
    flows: Flows | None = None,
) -> CompileResult:
    """Compile one file's text. `module`, when given, is a clean parse of exactly this text
    (an editor that re-parsed only what changed); the parse is then skipped. Without `hashed`
    the flow's `hash` is left empty (an editor showing diagnostics needs no hash). A text
    longer than the source limit (`max_bytes`, see `source_limit`) is E008 and not parsed.

    With `parallel`, a large file is type-checked in a forked child while this process lowers
    and lints it (`forked_task`): the same diagnostics and flow sooner on a machine with a
    second core, but `types` stays empty. For a caller that reports diagnostics (`flowc
    check`), not for one that reads the types (an editor) or runs threads.

    `flows` are the flows a state may invoke by name besides the files beside `path`
    (`children.py`): a name to its source text, or to the path of its file."""
    limit = source_limit(max_bytes)
    if len(text) > limit:
        return _too_large(path, limit)
    diagnostics: list[Diagnostic] = []
    if isinstance(text, bytes):
        text, decode_errors = decode(text, path)
        diagnostics.extend(decode_errors)
    elif text.startswith("\ufeff"):
        text = text[1:]  # as for bytes: a BOM read into a string is not part of the source
    source = SourceFile(path, text)
    # Past an E001 the text holds replacement characters: its errors are worth reporting (all
    # at once), but graph warnings about a file that cannot compile would be noise.
    lint = lint and not diagnostics
    result = CompileResult(source, None)
    try:
        with collector_paused(), suggestion_budget():
            found = _run_stages(
                result, lint=lint, module=module, hashed=hashed, parallel=parallel, flows=flows
            )
    except RecursionError:
        result.flow = None
        found = [
            Diagnostic.make("E005", "the file is nested too deeply to analyse", Span(1, 1, 1, 2))
        ]
    except Exception as exc:  # pragma: no cover - a compiler bug must not become a traceback
        if os.environ.get("FLOWC_DEBUG"):
            raise
        result.flow = None
        found = [
            Diagnostic(
                "E000",
                f"internal compiler error: {type(exc).__name__}: {exc}",
                Span(1, 1, 1, 2),
                help="this is a bug in flowc; please report it with the file that caused it",
            )
        ]
    diagnostics.extend(found)
    diagnostics = sorted(
        {_key(d): _explained(replace(d, file=path), result) for d in diagnostics}.values(),
        key=Diagnostic.sort_key,
    )
    if _has_error(diagnostics):
        result.flow = None
    result.diagnostics = diagnostics
    return result


@contextmanager
def collector_paused() -> Iterator[None]:
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
    result: CompileResult,
    *,
    lint: bool,
    module: ast.Module | None = None,
    hashed: bool = True,
    parallel: bool = False,
    flows: Flows | None = None,
) -> list[Diagnostic]:
    """Runs the stages on `result.source`, keeping on `result` what each one built."""
    source = result.source
    if module is None:
        module = fastparse.parse_module(source.text)
    if module is None:
        # Not on the fast path: Lark parses and reports. Imported only here, so that a check of
        # well-formed files does not load Lark (a few hundredths of a second of start-up).
        from flowc.compiler.parse import parse_source

        parsed = parse_source(source.text, source.path, fast_path=False)
        module = parsed.module
        if module is None or parsed.diagnostics:
            result.module = module
            return parsed.diagnostics
    result.module = module
    children, found = compile_children(module, source.path, flows or {})
    symbols, resolved = resolve(module, children)
    found += resolved
    result.symbols = symbols
    checker = TypeChecker(symbols)
    checker.check_done_data()  # derives the done payloads, which lowering reads
    found += checker.diagnostics
    clean = symbols.initial is not None and not _has_error(found)
    if parallel and clean and _worth_forking(source):
        return found + _check_beside_lowering(result, checker, lint=lint, hashed=hashed)
    found += _check_bodies(checker)
    result.types = checker.types
    if _has_error(found) or symbols.initial is None:
        return found
    result.flow, result.where = lower_mapped(symbols, hashed=hashed)
    if lint:
        found += _lint(result)
    return found


#: Below this many characters of source, forking costs more than the type check it overlaps.
FORK_MIN_CHARS = 200_000


def _worth_forking(source: SourceFile) -> bool:
    return len(source.text) >= FORK_MIN_CHARS


def _check_beside_lowering(
    result: CompileResult, checker: TypeChecker, *, lint: bool, hashed: bool
) -> list[Diagnostic]:
    """The type check (and the test blocks' check) in a forked child while this process
    lowers and lints: the diagnostics of all three, as the sequential path finds them.

    Lowering and lint run before the type check has passed, so they may meet a flow it will
    reject: what they found, or the exception they raised, counts only if it finds no error.
    `result.types` stays empty (the types are the child's)."""
    symbols = checker.symbols
    typed = ForkedTask(lambda: _check_bodies(checker))
    linted: list[Diagnostic] = []
    failure: Exception | None = None
    try:
        result.flow, result.where = lower_mapped(symbols, hashed=hashed)
        if lint:
            linted = _lint(result)
    except Exception as exc:  # on an ill-typed flow: only its type errors are reported
        failure = exc
    found = typed.result()
    if _has_error(found):
        result.flow = result.where = None
        return found
    if failure is not None:
        raise failure
    return found + linted


def _check_bodies(checker: TypeChecker) -> list[Diagnostic]:
    """What the type check finds past the done data (already reported), and the test blocks'
    check: the part of checking that lowering does not wait for."""
    checker.diagnostics = []
    checker.check_bodies()
    return checker.diagnostics + check_tests(checker.symbols)


def _lint(result: CompileResult) -> list[Diagnostic]:
    from flowc.compiler.lint import lint as run_lint

    assert result.flow is not None
    return run_lint(result.flow, result.source, result.where)


def _has_error(found: list[Diagnostic]) -> bool:
    return any(d.severity is Severity.ERROR for d in found)


_FIRST_DECLARED = re.compile(r"first declared on line (\d+)")


def _explained(diag: Diagnostic, result: CompileResult) -> Diagnostic:
    """`diag` with the fix its did-you-mean help names, and the place its help points to."""
    diag = with_suggested_fix(diag, result.source)
    first = _FIRST_DECLARED.search(diag.help or "")
    if first is None or result.module is None or diag.related:
        return diag
    line = int(first.group(1))
    span = diag.span
    name = result.source.line_text(span.line)[span.column - 1 : span.end_column - 1]
    for ident in _declared_names(result.module):
        if ident.span.line == line and ident.name == name:
            return replace(diag, related=(Related(f"`{name}` first declared here", ident.span),))
    return diag


def _declared_names(module: ast.Module) -> Iterator[ast.Ident]:
    """The name of every declaration, member, field and parameter of `module`."""
    for decl in module.decls:
        if isinstance(decl, ast.EnumDecl):
            yield decl.name
            yield from decl.members
        elif isinstance(decl, ast.TypeDecl):
            yield decl.name
            yield from (f.name for f in decl.fields)
        elif isinstance(decl, ast.ContextDecl):
            yield from (f.name for f in decl.fields)
        elif isinstance(decl, ast.EventDecl):
            yield decl.name
            yield from (p.name for p in decl.params)
        elif isinstance(decl, ast.StateDecl | ast.NamedText):
            yield decl.name


def compile_file(
    path: str | os.PathLike[str],
    *,
    lint: bool = True,
    max_bytes: int | None = None,
    hashed: bool = True,
    parallel: bool = False,
    flows: Flows | None = None,
) -> CompileResult:
    """Compile a file; an unreadable file is a diagnostic too (E001), and so is one larger than
    the source limit (E008), which is not read past it. `hashed` and `parallel` as for
    `compile_source`."""
    name = str(path)
    limit = source_limit(max_bytes)
    try:
        with open(path, "rb") as file:
            data = file.read(limit + 1)
    except OSError as exc:
        source = SourceFile(name, "")
        reason = exc.strerror or str(exc)
        diag = Diagnostic("E001", f"cannot read file: {reason}", Span(1, 1, 1, 1), file=name)
        return CompileResult(source, None, [diag])
    return compile_source(
        data, name, lint=lint, max_bytes=limit, hashed=hashed, parallel=parallel, flows=flows
    )


def _too_large(path: str, limit: int) -> CompileResult:
    diag = Diagnostic.make(
        "E008",
        f"the source is larger than {limit:,} bytes, the most flowc reads",
        Span(1, 1, 1, 2),
        help=f"split the flow, or raise the limit with {SOURCE_LIMIT_VARIABLE}=BYTES",
    )
    return CompileResult(SourceFile(path, ""), None, [replace(diag, file=path)])


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
    write_diagnostics(result.diagnostics, result.source, out, color=colored)


def write_diagnostics(
    diagnostics: Iterable[Diagnostic], source: SourceFile, out: TextIO, *, color: bool
) -> None:
    """Each diagnostic with its source line and caret, separated by blank lines (also for
    files that are not `.flow`: the SCXML importer's)."""
    for diag in diagnostics:
        out.write(render_text(diag, source.line_text(diag.span.line), color=color))
        out.write("\n\n")
