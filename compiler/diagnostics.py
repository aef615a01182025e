"""Diagnostics: what the compiler says about a file, and how it is shown.

Every diagnostic has a stable code from `CODES`; `docs/diagnostics.md` documents each one with a
minimal example, and a test keeps the two in step.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from enum import StrEnum

from flowc.compiler.source import SourceFile, Span


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
    "E008": (Severity.ERROR, "source too large"),
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
    "E123": (Severity.ERROR, "invalid test step"),
    "E124": (Severity.ERROR, "unknown rejection code"),
    "E125": (Severity.ERROR, "unknown journal"),
    "E126": (Severity.ERROR, "event prefix matches no event"),
    "E127": (Severity.ERROR, "invalid `unhandled` policy"),
    # E13x: compound and parallel states, history (docs/language.md)
    "E130": (Severity.ERROR, "ambiguous state name"),
    "E131": (Severity.ERROR, "history outside a compound or parallel state"),
    "E132": (Severity.ERROR, "compound state without exactly one initial child"),
    "E133": (Severity.ERROR, "initial child in a parallel state"),
    "E134": (Severity.ERROR, "transition crosses regions"),
    "E135": (Severity.ERROR, "history default outside its parent"),
    "E136": (Severity.ERROR, "`done.state` of a state that never completes"),
    "E137": (Severity.ERROR, "invalid child states"),
    "E138": (Severity.ERROR, "invalid initial rule"),
    # E14x: child flows and fan-out (docs/language.md, "Child flows")
    "E140": (Severity.ERROR, "unknown child flow"),
    "E141": (Severity.ERROR, "child flow invokes itself"),
    "E142": (Severity.ERROR, "child flow does not compile"),
    "E143": (Severity.ERROR, "invoke id given twice"),
    "E144": (Severity.ERROR, "invoke not allowed here"),
    "E145": (Severity.ERROR, "invalid message target"),
    "E146": (Severity.ERROR, "message event does not match"),
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
    "E210": (Severity.ERROR, "template too costly"),
    "E211": (Severity.ERROR, "invalid refusal data"),
    "E212": (Severity.ERROR, "payload field differs between a rule's events"),
    "E213": (Severity.ERROR, "unknown time unit"),
    "E214": (Severity.ERROR, "unknown effect"),
    "E215": (Severity.ERROR, "payload field missing"),
    "E216": (Severity.ERROR, "timer delay is not an int"),
    "E218": (Severity.ERROR, "invalid done data"),
    "E217": (Severity.ERROR, "`active` needs a state name"),
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
    "W314": (Severity.WARNING, "nested state never entered"),
    "W315": (Severity.WARNING, "state can never complete"),
    "W316": (Severity.WARNING, "regions write one field in one step"),
    "W317": (Severity.WARNING, "raise loop without a guard"),
    "W318": (Severity.WARNING, "rule outside any state never fires"),
    "W319": (Severity.WARNING, "timer never fires"),
    "W320": (Severity.WARNING, "hidden field shown to a model"),
    "W321": (Severity.WARNING, "required field no tool can set"),
    "W322": (Severity.WARNING, "template renders in Python only"),
    "W323": (Severity.WARNING, "internal event never sent"),
    # E4xx: SCXML import and export (compiler/scxml/, docs/scxml.md)
    "E401": (Severity.ERROR, "SCXML file is not well-formed XML"),
    "E402": (Severity.ERROR, "DTD or entity refused"),
    "E403": (Severity.ERROR, "SCXML file too large"),
    "E404": (Severity.ERROR, "SCXML elements nested too deeply"),
    "E405": (Severity.ERROR, "not an SCXML document"),
    "E406": (Severity.ERROR, "unsupported datamodel"),
    "E407": (Severity.ERROR, "script refused"),
    "E408": (Severity.ERROR, "invoke not supported"),
    "E409": (Severity.ERROR, "external I/O or resource not supported"),
    "E410": (Severity.ERROR, "expression not supported"),
    "E411": (Severity.ERROR, "expression reaches outside the language"),
    "E412": (Severity.ERROR, "SCXML element or attribute not supported"),
    "E413": (Severity.ERROR, "unknown or duplicate SCXML state id"),
    "E414": (Severity.ERROR, "invalid SCXML value"),
    "E415": (Severity.ERROR, "foreach without array or item"),
    "E416": (Severity.ERROR, "event data not supported"),
    "E417": (Severity.ERROR, "In() of a computed state id"),
    "E418": (Severity.ERROR, "done data without named params"),
    "E419": (Severity.ERROR, "initial or multi-target transition not expressible"),
    "E420": (Severity.ERROR, "flow cannot be exported to SCXML"),
}


@dataclass(frozen=True, slots=True)
class Related:
    """Another place the diagnostic is about, such as where a name was first declared."""

    message: str
    span: Span


@dataclass(frozen=True, slots=True)
class Edit:
    """Replace the text of `span` (same file) with `new_text`."""

    span: Span
    new_text: str


@dataclass(frozen=True, slots=True)
class Fix:
    """A change that resolves the diagnostic and can be applied without a human's judgement."""

    title: str
    edits: tuple[Edit, ...]


@dataclass(frozen=True, slots=True)
class Diagnostic:
    code: str
    message: str
    span: Span
    file: str = "<input>"
    help: str | None = None
    severity: Severity = Severity.ERROR
    related: tuple[Related, ...] = ()
    fixes: tuple[Fix, ...] = ()

    @staticmethod
    def make(code: str, message: str, span: Span, *, help: str | None = None) -> Diagnostic:
        return Diagnostic(code, message, span, help=help, severity=CODES[code][0])

    def __str__(self) -> str:
        """One line: `file:line:column: severity[CODE]: message (help)`."""
        text = (
            f"{self.file}:{self.span.line}:{self.span.column}: "
            f"{self.severity.value}[{self.code}]: {self.message}"
        )
        return f"{text} ({self.help})" if self.help else text

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
            "related": [{"message": r.message, **_span_dict(r.span)} for r in self.related],
            "fixes": [
                {
                    "title": f.title,
                    "edits": [{"new_text": e.new_text, **_span_dict(e.span)} for e in f.edits],
                }
                for f in self.fixes
            ],
        }


def _span_dict(span: Span) -> dict[str, int]:
    return {
        "line": span.line,
        "column": span.column,
        "end_line": span.end_line,
        "end_column": span.end_column,
    }


# ---- fixes ----------------------------------------------------------------------------------

_DID_YOU_MEAN = re.compile(r"did you mean `([^`]+)`\?")
_QUOTED = re.compile(r"`([^`]+)`")


def with_suggested_fix(diag: Diagnostic, source: SourceFile) -> Diagnostic:
    """`diag` with a machine-applicable fix when its help is a did-you-mean suggestion.

    The fix replaces the mistaken name, which is one of the names the message quotes and the
    text the span ends with (a span over `event.scroe` ends with the field name)."""
    if diag.help is None or diag.fixes or diag.span.line != diag.span.end_line:
        return diag
    suggestion = _DID_YOU_MEAN.search(diag.help)
    if suggestion is None:
        return diag
    line = source.line_text(diag.span.line)
    written = line[diag.span.column - 1 : diag.span.end_column - 1]
    for name in _QUOTED.findall(diag.message):
        if name and written.endswith(name):
            start = diag.span.end_column - len(name)
            where = Span(diag.span.line, start, diag.span.line, diag.span.end_column)
            fix = Fix(
                f"change `{name}` to `{suggestion.group(1)}`", (Edit(where, suggestion.group(1)),)
            )
            return replace(diag, fixes=(fix,))
    return diag


# ---- positions for editors ------------------------------------------------------------------


def utf16_offset(line_text: str, column: int) -> int:
    """The 0-based UTF-16 code-unit offset of 1-based character `column` in `line_text`: the
    unit the Language Server Protocol counts in (a character beyond the BMP counts twice)."""
    before = line_text[: max(column - 1, 0)]
    return (
        len(before)
        + sum(1 for ch in before if ord(ch) > 0xFFFF)
        + max(column - 1 - len(line_text), 0)
    )


def column_of_utf16(line_text: str, offset: int) -> int:
    """The 1-based character column at 0-based UTF-16 `offset` (the inverse of `utf16_offset`)."""
    units = 0
    for index, ch in enumerate(line_text):
        if units >= offset:
            return index + 1
        units += 2 if ord(ch) > 0xFFFF else 1
    return len(line_text) + 1 + max(offset - units, 0)


def utf16_range(span: Span, source: SourceFile) -> tuple[int, int, int, int]:
    """(start line, start character, end line, end character), 0-based, in UTF-16 units."""
    return (
        span.line - 1,
        utf16_offset(source.line_text(span.line), span.column),
        span.end_line - 1,
        utf16_offset(source.line_text(span.end_line), span.end_column),
    )


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
    from wcwidth import wcswidth  # here: only a diagnostic being shown needs it

    cells = wcswidth(text)
    return cells if cells >= 0 else len(text)


def render_json(diags: list[Diagnostic]) -> str:
    return json.dumps([d.to_dict() for d in diags], indent=2, ensure_ascii=False)


def summary_line(errors: int, warnings: int, files: int) -> str:
    def plural(n: int, word: str) -> str:
        return f"{n} {word}{'' if n == 1 else 's'}"

    return f"{plural(errors, 'error')}, {plural(warnings, 'warning')} in {plural(files, 'file')}"
