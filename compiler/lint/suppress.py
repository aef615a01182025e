"""`# flowc: allow W305` comments: silencing a warning where it is reported.

A comment naming one or more codes (`# flowc: allow W303, W312`) silences those warnings when
it is on the line the warning points at, or anywhere in the run of comment-only lines right
above it (so a line of justification can sit next to the allow). Errors are never silenced.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from flowc.compiler.diagnostics import Diagnostic, Severity
from flowc.compiler.source import SourceFile

_ALLOW = re.compile(r"#\s*flowc:\s*allow\s+([A-Za-z]\d{3}(?:\s*[, ]\s*[A-Za-z]\d{3})*)")
_CODE = re.compile(r"[A-Za-z]\d{3}")


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
