"""What the compiler keeps for editors: spans from the parse tree, fixes, related places, and
a readable string form of a diagnostic."""

from __future__ import annotations

import pytest

from flowc.compiler import compile_source
from flowc.compiler import types as t
from flowc.compiler.ast import Binary
from flowc.compiler.diagnostics import column_of_utf16, utf16_offset, utf16_range
from flowc.compiler.source import SourceFile, Span
from flowc.runtime import Machine
from flowc.runtime.model import IRLoadError

HASH_IN_STRING = """flow demo
context {{ tag: str = "#x", unused_n: int = 0 }}{allow}
event go
initial state A {{
  on go -> B do tag = "y"
}}
final state B
"""


def test_w312_after_a_hash_inside_a_string_points_at_the_field() -> None:
    result = compile_source(HASH_IN_STRING.format(allow=""))
    [diag] = result.warnings
    assert diag.code == "W312"
    assert diag.span == Span(2, 28, 2, 36)


def test_w312_after_a_hash_inside_a_string_can_be_silenced_on_its_line() -> None:
    result = compile_source(HASH_IN_STRING.format(allow="  # flowc: allow W312 host-only"))
    assert result.diagnostics == []


def test_lint_positions_come_from_the_parse_tree() -> None:
    source = (
        "flow demo\n"
        "event go\n"
        "event never\n"
        "initial state A {\n"
        "  on go -> DONE\n"
        "  on go -> A  # shadowed\n"
        "}\n"
        "final state DONE\n"
    )
    result = compile_source(source)
    found = {d.code: d.span for d in result.warnings}
    assert found["W310"] == Span(3, 7, 3, 12)
    assert found["W305"] == Span(6, 3, 6, 13)  # the rule, without its comment
    assert result.where is not None
    assert result.where.states == {"A": Span(4, 15, 4, 16), "DONE": Span(8, 13, 8, 17)}


def test_compile_result_keeps_module_symbols_and_expression_types() -> None:
    source = (
        "flow demo\n"
        "context { n: int = 0 }\n"
        "event go\n"
        "initial state A { on go if n + 1 > 2 -> B }\n"
        "final state B\n"
    )
    result = compile_source(source)
    assert result.ok
    assert result.module is not None and result.symbols is not None
    assert set(result.symbols.states) == {"A", "B"}
    [rule] = result.symbols.states["A"].rules
    guard = rule.guard
    assert isinstance(guard, Binary) and isinstance(guard.left, Binary)
    assert result.types[id(guard)] == t.BOOL
    assert result.types[id(guard.left)] == t.INT


def test_a_did_you_mean_becomes_a_fix_that_compiles() -> None:
    source = "flow demo\nevent go\ninitial state A { on og -> B }\nfinal state B\n"
    result = compile_source(source)
    [diag] = result.errors
    assert diag.code == "E105"
    [fix] = diag.fixes
    [edit] = fix.edits
    assert edit.span == Span(3, 22, 3, 24) and edit.new_text == "go"
    lines = source.splitlines(keepends=True)
    line = lines[2]
    lines[2] = line[: edit.span.column - 1] + edit.new_text + line[edit.span.end_column - 1 :]
    assert compile_source("".join(lines)).ok


def test_a_misspelt_event_field_fix_replaces_only_the_field_name() -> None:
    source = (
        "flow demo\n"
        "event go(score: int)\n"
        "initial state A { on go if event.scroe > 1 -> B }\n"
        "final state B\n"
    )
    [diag] = compile_source(source).errors
    [fix] = diag.fixes
    assert [(e.span, e.new_text) for e in fix.edits] == [(Span(3, 34, 3, 39), "score")]


def test_a_duplicate_points_at_the_first_declaration() -> None:
    source = "flow demo\nevent go\ninitial state A { on go -> A }\nstate A\n"
    [diag] = [d for d in compile_source(source).errors if d.code == "E103"]
    [related] = diag.related
    assert related.span == Span(3, 15, 3, 16)
    assert "first declared here" in related.message
    assert diag.to_dict()["related"] == [
        {"message": related.message, "line": 3, "column": 15, "end_line": 3, "end_column": 16}
    ]


def test_diagnostic_string_form_is_readable() -> None:
    source = "flow demo\nevent go\ninitial state A { on og -> B }\nfinal state B\n"
    [diag] = compile_source(source, "demo.flow").errors
    assert str(diag) == ("demo.flow:3:22: error[E105]: unknown event `og` (did you mean `go`?)")


def test_machine_from_source_error_lists_readable_diagnostics() -> None:
    source = "flow demo\nevent go\ninitial state A { on og -> B }\nfinal state B\n"
    with pytest.raises(IRLoadError) as caught:
        Machine.from_source(source, "demo.flow")
    message = str(caught.value)
    assert "Diagnostic(" not in message
    assert "demo.flow:3:22: error[E105]: unknown event `og`" in message


def test_utf16_positions_count_astral_characters_twice() -> None:
    line = 'state A "🚀 go" { on x -> B }'
    column = line.index("on") + 1
    assert utf16_offset(line, column) == column  # one character before it takes two units
    assert column_of_utf16(line, utf16_offset(line, column)) == column
    source = SourceFile("x.flow", line + "\n")
    assert utf16_range(Span(1, column, 1, column + 2), source) == (0, column, 0, column + 2)


def test_an_editor_may_pass_the_module_and_skip_the_hash() -> None:
    from flowc.compiler.parse import parse_source

    source = HASH_IN_STRING.format(allow="")
    full = compile_source(source)
    module = parse_source(source).module
    assert module is not None
    quick = compile_source(source, module=module, hashed=False)
    assert quick.module is module
    assert quick.diagnostics == full.diagnostics
    assert full.flow is not None and quick.flow is not None
    assert quick.flow.hash == "" and full.flow.hash.startswith("sha256:")
    assert quick.flow.with_hash() == full.flow
