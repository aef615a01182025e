"""One slip, one diagnostic, where the slip is: the parser recovers instead of cascading."""

from __future__ import annotations

import pytest

from flowc.compiler import compile_source


def found(source: str) -> list[tuple[str, int, int]]:
    result = compile_source(source, "case.flow")
    return [(d.code, d.span.line, d.span.column) for d in result.diagnostics]


def test_a_computed_delay_without_its_unit_is_one_error_at_the_arrow() -> None:
    source = """flow t "T"
version 1
context { timeout_s: int = 5 }
event go
initial state A {
  after timeout_s -> B
  on go -> B
}
final state B
"""
    result = compile_source(source, "case.flow")
    assert [(d.code, d.span.line, d.span.column) for d in result.diagnostics] == [("E003", 6, 19)]
    assert "ends with its unit" in (result.diagnostics[0].help or "")


def test_a_missing_duration_does_not_swallow_the_rest_of_the_file() -> None:
    source = """flow t "T"
version 1
event go
initial state A {
  after -> B
  on go -> B
}
state B {
  on go -> C if
}
final state C
"""
    assert found(source) == [("E003", 5, 9), ("E003", 9, 16)]


def test_a_rule_outside_a_state_is_reported_on_its_own_line() -> None:
    source = """flow t "T"
version 1
event go
initial state A {
  on go -> B
}
after 30d -> A
final state B
"""
    result = compile_source(source, "case.flow")
    assert [(d.code, d.span.line, d.span.column) for d in result.diagnostics] == [("E003", 7, 1)]
    assert "inside a state" in (result.diagnostics[0].help or "")


def test_a_missing_message_text_is_one_error() -> None:
    source = """flow t "T"
version 1
event go
initial state A {
  on go reject nope
  on go -> B
}
final state B
"""
    assert found(source) == [("E003", 5, 20)]


def test_something_missing_at_a_line_end_is_still_reported_there() -> None:
    source = """flow t "T"
version 1
event go
initial state A {
  on go ->
  on go -> B
}
final state B
"""
    assert found(source) == [("E003", 5, 11)]


SLIP_BASE = """flow t
version 1
context { n: int = 0 }
event go
{X}
final state Z
"""


@pytest.mark.parametrize(
    ("slip", "where"),
    [
        ("initial state A { on go -> Z }\ntype R { a int }\nstate B { on go -> Z }", (6, 12)),
        ("initial state A { on go -> Z }\nevent e(x str)\nstate B { on go -> Z }", (6, 11)),
        ("initial state A { on go -> Z }\nenum E { P Q }\nstate B { on go -> Z }", (6, 12)),
        ("initial state A {\n  meta panel: 1\n  on go -> B\n}\nstate B { on go -> Z }", (6, 8)),
        ("context n: int = 0 }\ninitial state A { on go -> Z }", (5, 9)),
        ("initial state A {\n  on go reject nope\n  on go -> Z\n}", (6, 20)),
        ("initial state A {\n  on go -> Z do n =\n  on go -> Z\n}", (6, 20)),
    ],
    ids=["field colon", "param colon", "enum comma", "meta brace", "context brace", "text", "expr"],
)
def test_a_common_slip_is_one_error(slip: str, where: tuple[int, int]) -> None:
    assert found(SLIP_BASE.replace("{X}", slip)) == [("E003", *where)]


def test_a_parser_stuck_in_a_broken_statement_starts_again_at_the_next_one() -> None:
    # `entry` takes `do`, not a block: before, every later line was reported ("expected `do`").
    source = """flow t "T"
context { n: int = 0 }
event go
initial state A {
  entry { n += 1 }
  on go -> B
}
final state B
"""
    result = compile_source(source, "case.flow")
    assert [(d.code, d.span.line, d.span.column) for d in result.diagnostics] == [("E003", 5, 9)]
    # The block whose `{` was dropped does not close the state early, and later slips are
    # still reported, once each.
    worse = source.replace("  on go -> B", "  on go -> B\n  on go if -> B")
    found = compile_source(worse, "case.flow").diagnostics
    assert [(d.span.line) for d in found] == [5, 7]
