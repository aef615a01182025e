"""Type rules that go beyond one diagnostic per code: narrowing, meta, conversions, lowering."""

from __future__ import annotations

import pytest

from flowc.compiler import compile_source
from flowc.runtime.model import CompiledFlow, Expr

HEAD = """flow t
type IB { template_id: str }
context { last: str = "", n: int = 0, note: str? = none, xs: list[str] = [] }
event e(x: int?, ib: IB?, skill: str)
"""
TAIL = 'final state B { meta { skill: "b" } }\n'


def check(rule: str, meta: str = 'meta { skill: "a", tools: ["t"] }') -> list[tuple[str, str]]:
    source = f"{HEAD}initial state A {{\n  {meta}\n  {rule}\n}}\n{TAIL}"
    result = compile_source(source, "t.flow")
    return [(d.code, d.message) for d in result.errors]


@pytest.mark.parametrize(
    "rule",
    [
        "on e if event.x != none and event.x > 1 -> B",
        "on e if none != event.x and event.x > 1 -> B",
        "on e if event.x == none or event.x > 1 -> B",
        "on e if event.ib != none -> B do last = event.ib.template_id",
        "on e if event.x != none -> B do n = event.x + 1",
        "on e if note != none and len(note) > 2 -> B",
    ],
)
def test_a_none_check_narrows_what_follows(rule: str) -> None:
    assert check(rule) == []


@pytest.mark.parametrize(
    "rule",
    [
        "on e if event.x > 1 -> B",
        "on e if event.x != none or event.x > 1 -> B",
        "on e if event.x == none and event.x > 1 -> B",
        "on e -> B do last = event.ib.template_id",
        # context fields may be reassigned by earlier actions: guard facts do not reach actions
        "on e if note != none -> B do n = len(note)",
    ],
)
def test_without_a_check_optional_values_are_refused(rule: str) -> None:
    assert [code for code, _ in check(rule)] == ["E208"]


@pytest.mark.parametrize(
    "rule",
    [
        "on e -> B do if note != none { n = len(note) }",
        "on e -> B do if note != none { last = note; n = len(note) }",
        "on e -> B do if note == none { n = 0 } else { n = len(note) }",
        "on e -> B do if note == none { n = 0 } elif len(note) > 2 { n = len(note) }",
        "on e -> B do if note != none { for last in xs { n += len(note) } }",
    ],
)
def test_an_if_narrows_a_context_field_until_it_is_written(rule: str) -> None:
    assert check(rule) == []


@pytest.mark.parametrize(
    "rule",
    [
        "on e -> B do if note != none { note = none; n = len(note) }",
        "on e -> B do if note != none { if n > 1 { note = none }; n = len(note) }",
        "on e -> B do if note != none { n = 1 } else { n = len(note) }",
        "on e -> B do if note != none { for last in xs { n = len(note); note = none } }",
        "on e -> B do if note != none { for note in xs { n = 1 }; n = len(note) }",
    ],
)
def test_a_write_or_a_false_check_keeps_a_context_field_optional(rule: str) -> None:
    assert [code for code, _ in check(rule)] == ["E208"]


def test_coalesce_takes_a_record_literal_fallback() -> None:
    assert check('on e -> B do last = coalesce(event.ib, {"template_id": "t"}).template_id') == []
    errors = check('on e -> B do last = coalesce(event.ib, {"template": "t"}).template_id')
    assert [c for c, _ in errors] == ["E201", "E108"]  # missing `template_id`, then the typo


def test_state_meta_is_typed_from_every_state() -> None:
    assert check("on e if event.skill == state.meta.skill -> B") == []
    # `tools` exists only in A: optional, so it needs a check before use
    assert [c for c, _ in check("on e if len(state.meta.tools) > 0 -> B")] == ["E208"]
    assert check("on e if state.meta.tools != none -> B") == []
    assert [c for c, _ in check("on e if state.meta.skil == none -> B")] == ["E108"]


def test_state_meta_with_conflicting_types_is_refused() -> None:
    errors = check("on e if state.meta.skill == none -> B", meta="meta { skill: 3 }")
    assert errors and errors[0][0] == "E201"
    assert "different types" in errors[0][1]


def test_str_converts_scalars_only() -> None:
    assert check("on e if event.x != none -> B do last = str(event.x)") == []
    assert [c for c, _ in check("on e -> B do last = str(xs)")] == ["E201"]


def compile_ok(rule: str) -> CompiledFlow:
    source = f"{HEAD}initial state A {{\n  {rule}\n}}\n{TAIL}"
    result = compile_source(source, "t.flow")
    assert result.flow is not None, result.diagnostics
    # What the compiler emits must load through the validating path the runtime uses.
    return CompiledFlow.from_json(result.flow.to_json())


def test_remove_and_append_lower_to_list_actions() -> None:
    flow = compile_ok('on e -> B do append(xs, event.skill); remove(xs, "x")')
    (transition,) = flow.transitions
    assert [(a.op, a.target) for a in transition.actions] == [
        ("append", ("xs",)),
        ("remove", ("xs",)),
    ]


def test_state_meta_lowers_to_a_meta_read() -> None:
    flow = compile_ok('on e if state.meta.skill == "a" -> B')
    guard = flow.transitions[0].guard
    assert guard == Expr(op="==", args=(Expr(op="meta", value="skill"), Expr(op="lit", value="a")))


def test_identical_expressions_are_shared_in_the_ir() -> None:
    source = HEAD + ("initial state A { on e if n < 3 -> B on e if n < 3 -> A }\n" + TAIL)
    result = compile_source(source, "t.flow")
    assert result.flow is not None
    first, second = result.flow.transitions
    assert first.guard is second.guard


def test_state_meta_narrows_like_other_paths() -> None:
    assert check("on e if state.meta.tools != none and len(state.meta.tools) > 0 -> B") == []


def test_wrong_argument_count_is_reported_before_optional_arguments() -> None:
    assert [c for c, _ in check("on e if coalesce(event.x) > 1 -> B")] == ["E118"]


def test_maps_of_records_take_record_literals() -> None:
    source = (
        "flow t\ntype R { a: int }\n"
        'context { m: map[str, R] = {"k": {"a": 1}}, r: R = {} }\n'
        "initial state A\n"
    )
    errors = compile_source(source, "t.flow").errors
    # only the empty record is wrong, and it is reported where it is written
    assert [(d.code, d.span.line, d.span.column) for d in errors] == [("E203", 3, 52)]


@pytest.mark.parametrize(
    ("field", "code"),
    [("n: int(1..5) = 10", "E203"), ("n: int(1..5) = -1", "E203"), ("n: int(1.5..3) = 2", "E204")],
)
def test_defaults_respect_ranges(field: str, code: str) -> None:
    source = f"flow t\ncontext {{ {field} }}\ninitial state A\n"
    assert [d.code for d in compile_source(source, "t.flow").errors] == [code]


def test_meta_keys_repeated_across_blocks_are_refused() -> None:
    source = "flow t\ninitial state A {\n  meta { k: 1 }\n  meta { k: 2 }\n}\n"
    errors = compile_source(source, "t.flow").errors
    assert [(d.code, d.span.line) for d in errors] == [("E121", 4)]


@pytest.mark.parametrize("literal", ["1.0e999", "99999999999999999999"])
def test_numbers_that_do_not_fit_are_refused(literal: str) -> None:
    source = f"flow t\ncontext {{ n: float = {literal} }}\ninitial state A\n"
    assert [d.code for d in compile_source(source, "t.flow").errors] == ["E209"]


def test_numbers_deep_in_defaults_must_fit_their_ranges() -> None:
    source = (
        "flow t\n"
        "type R { c: int(1..5) = 1 }\n"
        "context {\n"
        "  ok: list[int(1..5)] = [1, 5]\n"
        "  b: list[int(1..5)] = [1, 9]\n"
        '  m: map[str, int(..0)] = {"x": 3}\n'
        '  r: R = {"c": 10}\n'
        "  o: list[float(1..)]? = [0.5]\n"
        "  n: int(-5..-1) = -3\n"
        "  k: int(-5..-1) = -7\n"
        "}\n"
        "event go(p: list[int(1..3)] = [5])\n"
        "initial state S { on go -> F }\n"
        "final state F\n"
    )
    result = compile_source(source, "t.flow")
    found = [(d.code, d.span.line, d.span.column, d.message) for d in result.errors]
    assert found == [
        ("E203", 5, 28, "a value in the default of `b` is outside its range 1..5"),
        ("E203", 6, 33, "a value in the default of `m` is outside its range ..0"),
        ("E203", 7, 16, "a value in the default of `r` is outside its range 1..5"),
        ("E203", 8, 27, "a value in the default of `o` is outside its range 1.."),
        ("E203", 10, 20, "default of `k` is outside its range -5..-1"),
        ("E203", 12, 32, "a value in the default of `p` is outside its range 1..3"),
    ]


def test_meta_values_that_mix_types_or_are_empty_give_no_free_pass() -> None:
    source = (
        "flow t\n"
        "context { n: int = 0 }\n"
        "event go\n"
        "event inc\n"
        "initial state S {\n"
        '  meta { m: {a: 1, b: "two"}, tools: [] }\n'
        '  on go -> T do n = coalesce(state.meta.m, {})["b"]\n'
        "  on inc -> T do n = state.meta.tools[0]\n"
        "}\n"
        'state T { meta { m: {}, tools: ["x"] } on inc -> T do n += 1 }\n'
    )
    result = compile_source(source, "t.flow")
    found = [(d.code, d.span.line, d.message) for d in result.errors]
    assert found == [
        (
            "E201",
            7,
            "meta key `m` holds values of different types (in different states, "
            "or in one list or map)",
        ),
        ("E202", 8, "`n` expects `int`, found `str`"),
    ]


ENUM_HEAD = """flow t
enum Mode { BEGINNER, EXPERT }
context { mode: Mode = BEGINNER, maybe: Mode? = none }
event e
initial state A {
"""


def enum_errors(rule: str) -> list[tuple[str, int, int, str, str | None]]:
    result = compile_source(f"{ENUM_HEAD}  {rule}\n}}\nfinal state B\n", "t.flow")
    return [(d.code, d.span.line, d.span.column, d.message, d.help) for d in result.errors]


@pytest.mark.parametrize(
    "rule",
    [
        'on e if mode == "EXPERT" -> B',
        'on e if "BEGINNER" != mode -> B',
        'on e if maybe == "EXPERT" -> B',
        'on e if mode in ["BEGINNER", "EXPERT"] -> B',
        'on e if mode not in ["EXPERT"] -> B',
    ],
)
def test_enums_compare_with_the_names_of_their_members(rule: str) -> None:
    assert enum_errors(rule) == []


def test_a_string_naming_no_member_of_the_enum_it_is_compared_with_is_refused() -> None:
    # Such a comparison can never hold: a typo of a member name, caught where it is written.
    assert enum_errors('on e if mode == "EXPRT" -> B') == [
        ("E108", 6, 19, "`Mode` has no member `EXPRT`", "did you mean `EXPERT`?")
    ]
    assert enum_errors('on e if "expert" != maybe -> B') == [
        ("E108", 6, 11, "`Mode` has no member `expert`", "did you mean `EXPERT`?")
    ]
    assert enum_errors('on e if mode in ["EXPERT", "NOVICE"] -> B') == [
        ("E108", 6, 30, "`Mode` has no member `NOVICE`", "members: BEGINNER, EXPERT")
    ]


def test_an_empty_literal_is_shown_with_an_unknown_item_type_as_rustc_does() -> None:
    errors = check("on e if not [] -> B") + check('on e if xs == {"k": []} -> B')
    assert [m for _, m in errors] == [
        "`not` needs a `bool`, found `list[_]`",
        "`list[str]` and `map[str, list[_]]` can never be equal",
    ]


def test_enum_dot_member_reaches_the_member_past_a_context_field_of_the_same_name() -> None:
    from flowc.runtime import Machine

    source = """flow t
enum Mode { A, B }
type R { B: int }
enum Rec { B, C }
context { Mode: Mode = A, Rec: R? = none }
event e
initial state S {
  on e if Mode == Mode.A and Rec == none -> S do Mode = Mode.B
  on e if Rec != none and Rec.B > 1 and Mode == Mode.B -> Z
}
final state Z
"""
    result = compile_source(source, "t.flow")
    assert result.errors == []
    # `Mode.B` is the member (a field of an enum type has no fields); `Rec.B` is the record's
    # field, which the enum `Rec` cannot take from it.
    instance = Machine.from_source(source).start()
    assert instance.send("e").ok and instance.context["Mode"] == "B"
    typo = compile_source(source.replace("Mode = Mode.B", "Mode = Mode.Z"), "t.flow")
    assert [(d.code, d.message) for d in typo.errors] == [("E108", "enum `Mode` has no member `Z`")]


JSON_HEAD = """flow j
type Call { tool: str, args: json }
context { data: json = none, n: int = 0, calls: list[Call] = [], names: list[str] = [] }
event e(args: json, k: int)
"""


def check_json(rule: str) -> list[tuple[str, str]]:
    source = f"{JSON_HEAD}initial state A {{\n  {rule}\n}}\nfinal state B\n"
    return [(d.code, d.message) for d in compile_source(source, "j.flow").errors]


@pytest.mark.parametrize(
    "rule",
    [
        "on e if event.args != none -> B do data = event.args",
        "on e if none == data -> B do data = none",
        'on e -> B do data = {"k": [1, "two", none, {"x": 2.5}], "t": true}',
        "on e -> B do data = [event.k, names, calls]",
        'on e -> B do append(calls, {"tool": "t", "args": event.args})',
        'on e reject r "no" with {"got": event.args}',
        "on e -> B do data = event.k",
    ],
)
def test_json_takes_any_value_and_is_passed_along(rule: str) -> None:
    assert check_json(rule) == []


@pytest.mark.parametrize(
    ("rule", "message"),
    [
        ("on e if event.args == 1 -> B", "a `json` value can only be compared with `none`"),
        ("on e if data != event.args -> B", "a `json` value can only be compared with `none`"),
        ("on e if calls[0] == calls[0] -> B", "`Call` holds `json` values"),
        ("on e if data in [1, 2] -> B", "a `json` value can only be compared with `none`"),
        ("on e -> B do n = data", "`n` expects `int`, found `json`"),
        ("on e -> B do n = data + 1", "cannot apply `+` to `json` and `int`"),
    ],
)
def test_json_values_are_not_inspected(rule: str, message: str) -> None:
    errors = check_json(rule)
    assert errors and message in errors[0][1], errors


def test_json_is_a_built_in_type_name() -> None:
    result = compile_source("flow j\ntype json { a: int }\ninitial state A\n", "j.flow")
    assert [(d.code, d.message) for d in result.errors] == [("E103", "`json` is a built-in type")]


def test_json_lowers_to_its_own_type_kind() -> None:
    result = compile_source(f"{JSON_HEAD}initial state A {{ on e -> B }}\nfinal state B\n", "j")
    assert result.flow is not None
    (args, _) = result.flow.events[0].fields
    assert args.type.model_dump(exclude_defaults=True) == {"kind": "json"}
