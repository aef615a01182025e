"""`# flowc: allow CODE` comments silence warnings on their line or from just above."""

from __future__ import annotations

from flowc.compiler.lint import lint
from flowc.compiler.lint.suppress import Suppressions
from flowc.compiler.source import SourceFile

from .irbuild import FlowBuilder, ctx, lit, op


def unreachable(comment: str = "", above: list[str] | None = None) -> FlowBuilder:
    b = FlowBuilder().event("next").state("A", initial=True).state("DONE", "final")
    b.on("A", "next", "DONE")
    for line in above or []:
        b.line(line)
    return b.state("ORPHAN", comment=comment).go("ORPHAN", "DONE")


def codes(b: FlowBuilder) -> list[str]:
    flow, source = b.build()
    return [d.code for d in lint(flow, source)]


def test_warning_without_comment() -> None:
    assert codes(unreachable()) == ["W301"]


def test_allow_on_the_same_line() -> None:
    assert codes(unreachable("flowc: allow W301")) == []


def test_allow_other_code_does_not_silence() -> None:
    assert codes(unreachable("flowc: allow W302")) == ["W301"]


def test_allow_several_codes() -> None:
    assert codes(unreachable("flowc: allow W302, W301")) == []
    assert codes(unreachable("flowc: allow W302 W301")) == []


def test_allow_in_the_comment_block_above() -> None:
    above = ["# flowc: allow W301", "# kept for old instances that may still be in it"]
    assert codes(unreachable(above=above)) == []


def test_allow_above_must_be_adjacent_comment_lines() -> None:
    above = ["# flowc: allow W301", "state SOMETHING_ELSE"]
    assert codes(unreachable(above=above)) == ["W301"]


def test_errors_cannot_be_silenced() -> None:
    b = FlowBuilder().field("n").state("R", "choice", initial=True).state("DONE", "final")
    b.go("R", "R", "choice", guard=op("<", ctx("n"), lit(3)), comment="flowc: allow E304")
    b.go("R", "DONE", "else")
    assert codes(b) == ["E304"]


def test_allow_comment_parsing() -> None:
    source = SourceFile(
        "x.flow", 'state A  # flowc: allow w303,W312\nstate B "# flowc: allow"  # nothing\n'
    )
    s = Suppressions(source)
    assert s.allowed_on(1) == {"W303", "W312"}
    assert s.allowed_on(2) == frozenset()
