"""`# flowc: allow CODE` comments silence warnings on their line or from just above."""

from __future__ import annotations

from flowc.compiler import compile_source
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
    return [d.code for d in lint(flow, source, b.source_map(flow))]


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
    # and the allow that tried is itself reported, since it does nothing
    assert codes(b) == ["E304", "W313"]


def test_allow_comment_parsing() -> None:
    source = SourceFile(
        "x.flow", 'state A  # flowc: allow w303,W312\nstate B "# flowc: allow"  # nothing\n'
    )
    s = Suppressions(source)
    assert s.allowed_on(1) == {"W303", "W312"}
    assert s.allowed_on(2) == frozenset()


def test_an_allow_naming_no_warning_is_reported_where_the_code_is_written() -> None:
    source = (
        "flow demo\n"
        "event go\n"
        "# flowc: allow W999, w312\n"
        "initial state A { on go -> B }  # flowc: allow E201 W3012\n"
        "final state B\n"
    )
    warnings = compile_source(source).warnings
    found = [(d.code, d.span.line, d.span.column, d.message) for d in warnings]
    assert found == [
        ("W313", 3, 16, "`W999` is not a flowc warning code"),
        ("W313", 4, 48, "`E201` is an error, and errors cannot be silenced"),
        ("W313", 4, 53, "`W3012` is not a flowc warning code"),
    ]


def test_a_longer_code_is_not_read_as_a_known_one() -> None:
    # `W3012` is a typo, not `W301` followed by a 2: it silences nothing.
    assert codes(unreachable("flowc: allow W3012")) == ["W301", "W313"]
    assert Suppressions(SourceFile("x.flow", "# flowc: allow W3012\n")).allowed_on(1) == {"W3012"}


def test_w313_can_itself_be_allowed() -> None:
    assert codes(unreachable("flowc: allow W301, W399, W313")) == []
