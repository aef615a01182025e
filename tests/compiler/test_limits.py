"""Pathological sizes end in bounded work and a clear diagnostic, never a hang or E000."""

from __future__ import annotations

from flowc.compiler import compile_source
from flowc.compiler.parse import MAX_MISPLACED_TOKENS


def found(source: str | bytes) -> list[tuple[str, int, int]]:
    result = compile_source(source, "case.flow")
    return [(d.code, d.span.line, d.span.column) for d in result.diagnostics]


def test_a_line_of_100k_stray_braces_stops_after_a_bounded_number() -> None:
    result = compile_source("flow t\n" + "{" * 100_000 + "\n", "case.flow")
    assert [(d.code, d.span.line) for d in result.diagnostics] == [("E003", 2), ("E006", 2)]
    assert result.diagnostics[1].span.column == MAX_MISPLACED_TOKENS + 1
