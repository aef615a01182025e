"""`# flowc: allow W305` comments: silencing a warning where it is reported.

A comment naming one or more codes (`# flowc: allow W303, W312`) silences those warnings when
it is on the line the warning points at, or anywhere in the run of comment-only lines right
above it (so a line of justification can sit next to the allow). Errors are never silenced.
A code that names no warning (a typo, or an error's code) is itself reported, as W313: an allow
that silently does nothing would leave the reader believing a warning is handled.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from flowc.compiler.diagnostics import CODES, Diagnostic, Severity
from flowc.compiler.source import SourceFile, Span

# A code is a word that starts with a letter and holds a digit, so that typos (`W3012`, `W3O1`)
# are read whole, as unknown codes, and a reason in plain words after the codes is not a code.
_CODE_TEXT = r"[A-Za-z][A-Za-z0-9]*[0-9][A-Za-z0-9]*\b"
_ALLOW = re.compile(rf"#\s*flowc:\s*allow\s+({_CODE_TEXT}(?:\s*[, ]\s*{_CODE_TEXT})*)")
_CODE = re.compile(_CODE_TEXT)


class Suppressions:
    def __init__(self, source: SourceFile) -> None:
        self.source = source
        self._cache: dict[int, frozenset[str]] = {}

    def allowed_on(self, line: int) -> frozenset[str]:
        """Codes allowed on `line` itself (parsed lazily: most lines are never asked about)."""
        cached = self._cache.get(line)
        if cached is None:
            text = self.source.line_text(line)
            codes: set[str] = set()
            if "flowc" in text:
                for m in _ALLOW.finditer(text):
                    codes.update(c.upper() for c in _CODE.findall(m.group(1)))
            cached = self._cache[line] = frozenset(codes)
        return cached

    def allows(self, code: str, line: int) -> bool:
        if code in self.allowed_on(line):
            return True
        above = line - 1
        while above >= 1 and self.source.line_text(above).lstrip().startswith("#"):
            if code in self.allowed_on(above):
                return True
            above -= 1
        return False


def apply(diags: Iterable[Diagnostic], source: SourceFile) -> list[Diagnostic]:
    suppressions = Suppressions(source)
    return [
        d
        for d in diags
        if d.severity is Severity.ERROR or not suppressions.allows(d.code, d.span.line)
    ]


def codes_naming_no_warning(source: SourceFile) -> Iterator[Diagnostic]:
    """W313 for each code in an allow comment that is not a warning flowc can report."""
    warnings = sorted(code for code, (severity, _) in CODES.items() if severity is Severity.WARNING)
    for line in _lines_naming_flowc(source):
        for allow in _ALLOW.finditer(source.line_text(line)):
            for found in _CODE.finditer(allow.group(1)):
                code = found.group().upper()
                known = CODES.get(code)
                if known is not None and known[0] is Severity.WARNING:
                    continue
                column = allow.start(1) + found.start() + 1
                span = Span(line, column, line, column + len(code))
                if known is not None:
                    message, help = f"`{code}` is an error, and errors cannot be silenced", None
                else:
                    message = f"`{code}` is not a flowc warning code"
                    help = f"warning codes: {', '.join(warnings)}"
                yield Diagnostic.make("W313", message, span, help=help)


def _lines_naming_flowc(source: SourceFile) -> Iterator[int]:
    """The lines where `flowc` is written, found with `str.find` (a regex tried at every line
    start reads the whole of a large file, where most have no such line)."""
    text = source.text
    found = text.find("flowc")
    while found >= 0:
        line, _ = source.position(found)
        yield line
        next_line = text.find("\n", found)
        if next_line < 0:
            return
        found = text.find("flowc", next_line)
