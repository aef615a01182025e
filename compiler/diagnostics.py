"""Diagnostics: what the compiler says about a file, and how it is shown.

Every diagnostic has a stable code from `CODES`; `docs/diagnostics.md` documents each one with a
minimal example, and a test keeps the two in step.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from enum import StrEnum

from wcwidth import wcswidth

from flowc.compiler.source import Span


class Severity(StrEnum):
    ERROR = "error"
    WARNING = "warning"


#: code -> (default severity, short title). Codes are never reused for a different meaning.
CODES: dict[str, tuple[Severity, str]] = {
    "E000": (Severity.ERROR, "internal compiler error"),
    # E0xx: reading and syntax
    "E001": (Severity.ERROR, "file is not valid UTF-8 text"),
    "E002": (Severity.ERROR, "unexpected character"),
    "E003": (Severity.ERROR, "unexpected token"),
    "E004": (Severity.ERROR, "unexpected end of file"),
    "E005": (Severity.ERROR, "nested too deeply"),
    "E006": (Severity.ERROR, "too many syntax errors"),
    "E007": (Severity.ERROR, "invalid string escape"),
    # E1xx: declarations and names
    "E101": (Severity.ERROR, "missing `flow` header"),
    "E102": (Severity.ERROR, "declared twice"),
    "E103": (Severity.ERROR, "duplicate name"),
    "E104": (Severity.ERROR, "unknown state"),
    "E105": (Severity.ERROR, "unknown event"),
    "E106": (Severity.ERROR, "unknown type"),
    "E107": (Severity.ERROR, "unknown name"),
    "E108": (Severity.ERROR, "unknown field"),
    "E109": (Severity.ERROR, "no initial state"),
    "E110": (Severity.ERROR, "more than one initial state"),
    "E111": (Severity.ERROR, "conflicting state modifiers"),
    "E112": (Severity.ERROR, "rule not allowed here"),
    "E113": (Severity.ERROR, "final state with outgoing transitions"),
    "E114": (Severity.ERROR, "unknown message kind"),
    "E115": (Severity.ERROR, "ambiguous enum member"),
    "E116": (Severity.ERROR, "`event` used where there is no event"),
    "E117": (Severity.ERROR, "unknown function"),
    "E118": (Severity.ERROR, "wrong number of arguments"),
    "E119": (Severity.ERROR, "choice state without `else`"),
    "E120": (Severity.ERROR, "invalid duration"),
    "E121": (Severity.ERROR, "invalid meta"),
    "E122": (Severity.ERROR, "invalid migration"),
    # E2xx: types and values
    "E201": (Severity.ERROR, "type mismatch"),
    "E202": (Severity.ERROR, "cannot assign"),
    "E203": (Severity.ERROR, "default does not fit the declared type"),
    "E204": (Severity.ERROR, "invalid type"),
    "E205": (Severity.ERROR, "guard is not a boolean"),
    "E206": (Severity.ERROR, "template syntax error"),
    "E207": (Severity.ERROR, "invalid version"),
    "E208": (Severity.ERROR, "optional value used without a check"),
    "E209": (Severity.ERROR, "number too large"),
    "E210": (Severity.ERROR, "invalid refusal data"),
    # W3xx / E3xx: graph lint on the IR (lint.py)
    "W301": (Severity.WARNING, "unreachable state"),
    "W302": (Severity.WARNING, "state has no way out"),
    "W303": (Severity.WARNING, "no final state reachable"),
    "E304": (Severity.ERROR, "routing cycle"),
    "W305": (Severity.WARNING, "transition shadowed by an unguarded one"),
    "W306": (Severity.WARNING, "duplicate transition"),
    "W307": (Severity.WARNING, "`back` edge does not lead back"),
    "W308": (Severity.WARNING, "unbounded loop"),
    "W309": (Severity.WARNING, "constant guard"),
    "W310": (Severity.WARNING, "unused event"),
    "W311": (Severity.WARNING, "unused enum"),
    "W312": (Severity.WARNING, "unused context field"),
    "W313": (Severity.WARNING, "allow comment names no warning"),
}


@dataclass(frozen=True, slots=True)
class Diagnostic:
    code: str
    message: str
    span: Span
    file: str = "<input>"
    help: str | None = None
    severity: Severity = Severity.ERROR

    @staticmethod
    def make(code: str, message: str, span: Span, *, help: str | None = None) -> Diagnostic:
        return Diagnostic(code, message, span, help=help, severity=CODES[code][0])

    def sort_key(self) -> tuple[str, int, int, str]:
        return (self.file, self.span.line, self.span.column, self.code)

    def to_dict(self) -> dict[str, object]:
        return {
            "file": self.file,
            "line": self.span.line,
            "column": self.span.column,
            "end_line": self.span.end_line,
            "end_column": self.span.end_column,
            "severity": self.severity.value,
            "code": self.code,
            "message": self.message,
            "help": self.help,
        }


class _Style:
    def __init__(self, color: bool) -> None:
        self.color = color

    def __call__(self, text: str, code: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.color else text


def render_text(diag: Diagnostic, line_text: str, *, color: bool = False) -> str:
    """rustc-style: header, the source line, a caret under the span, then `help:`."""
    style = _Style(color)
    sev_color = "1;31" if diag.severity is Severity.ERROR else "1;33"
    header = (
        f"{style(f'{diag.file}:{diag.span.line}:{diag.span.column}', '1')}: "
        f"{style(f'{diag.severity.value}[{diag.code}]', sev_color)}: {diag.message}"
    )
    lines = [header]
    # Control characters (a NUL in a damaged file) would garble the terminal; each becomes one
    # replacement character so the caret still lines up.
    shown = "".join(
        ch if ch.isprintable() else "\N{REPLACEMENT CHARACTER}" for ch in line_text.expandtabs(1)
    )
    if len(shown) > 200:  # a minified or generated line: show the part around the caret
        start = max(0, diag.span.column - 60)
        shown = shown[start : start + 160]
        col = diag.span.column - start
    else:
        col = diag.span.column
    gutter = str(diag.span.line)
    pad = " " * len(gutter)
    if shown.strip():
        width = 1
        if diag.span.end_line == diag.span.line:
            width = max(1, diag.span.end_column - diag.span.column)
        width = max(1, min(width, len(shown) - col + 2))
        lines.append(f"{pad} {style('|', '1;34')}")
        lines.append(f"{style(gutter, '1;34')} {style('|', '1;34')} {shown}")
        # Columns count characters; a terminal gives CJK and most emoji two cells, combining
        # marks none: the caret is placed by display width so it stays under its text.
        lead = _cells(shown[: col - 1])
        under = max(1, _cells(shown[col - 1 : col - 1 + width]))
        caret = " " * lead + "^" * under
        lines.append(f"{pad} {style('|', '1;34')} {style(caret, sev_color)}")
    if diag.help:
        lines.append(f"{pad} {style('=', '1;34')} {style('help', '1')}: {diag.help}")
    return "\n".join(lines)


def _cells(text: str) -> int:
    """Terminal cells `text` takes (its length where wcwidth cannot tell)."""
    cells = wcswidth(text)
    return cells if cells >= 0 else len(text)


def render_json(diags: list[Diagnostic]) -> str:
    return json.dumps([d.to_dict() for d in diags], indent=2, ensure_ascii=False)


def summary_line(errors: int, warnings: int, files: int) -> str:
    def plural(n: int, word: str) -> str:
        return f"{n} {word}{'' if n == 1 else 's'}"

    return f"{plural(errors, 'error')}, {plural(warnings, 'warning')} in {plural(files, 'file')}"
