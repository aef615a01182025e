"""One bad flow per diagnostic code: the code, the line and the column it is reported at."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from flowc.compiler import compile_source
from flowc.compiler.diagnostics import CODES, Severity, render_text
from flowc.compiler.driver import MAX_SOURCE_BYTES

# A minimal valid flow that most cases extend.
BASE = """flow demo
context { n: int = 0 }
event go(k: int)
initial state A { on go -> B do n = event.k }
final state B
"""

#: The flows the cases (and the examples of docs/diagnostics.md) may invoke by name.
CHILD_FLOWS = {
    "payment": "flow payment\ncontext { amount: int = 0 }\nevent charge\n"
    "internal event progress(pct: int)\n"
    "initial state Charging {\n  entry do send progress(pct: 10) to parent\n"
    "  on charge -> Paid\n}\n"
    'final state Paid with {"receipt": "r-1"}\n',
    "broken": "flow broken\ninitial state A { on nope -> A }\n",
}
PARENT = "flow demo\ninternal event progress(pct: int)\n"

# (code, source, line, column): the first diagnostic with `code` must be at line:column.
CASES: list[tuple[str, bytes | str, int, int]] = [
    ("E001", b"flow demo\ninitial state A\n\xff\xfe", 3, 1),
    ("E002", "flow demo\ninitial state A @\n", 2, 17),
    ("E003", "flow demo\ninitial state A { on go B }\n", 2, 25),
    ("E004", "flow demo\ninitial state A {\n  on go -> A\n", 3, 13),
    ("E005", "flow demo\ncontext { n: int = " + "(" * 150 + "1" + ")" * 150 + " }\n", 2, 119),
    ("E006", "flow demo\n" + "@\n" * 40, 27, 1),
    ("E007", 'flow demo "bad \\q escape"\ninitial state A\n', 1, 16),
    ("E008", b"flow demo\n" + b" " * MAX_SOURCE_BYTES, 1, 1),
    ("E101", "initial state A\n", 1, 1),
    ("E102", "flow demo\nflow again\ninitial state A\n", 2, 1),
    ("E103", "flow demo\ninitial state A\nstate A\n", 3, 7),
    ("E104", "flow demo\nevent go\ninitial state A { on go -> B }\nfinal state Bee\n", 3, 28),
    ("E105", "flow demo\nevent go\ninitial state A { on og -> A }\n", 3, 22),
    ("E106", "flow demo\ncontext { n: integer = 0 }\ninitial state A\n", 2, 14),
    ("E107", "flow demo\nevent go\ninitial state A { on go if m > 1 -> A }\n", 3, 28),
    ("E108", BASE.replace("on go -> B", "on go if event.kk > 1 -> B"), 4, 28),
    ("E109", "flow demo\nstate A\n", 2, 7),
    ("E110", "flow demo\ninitial state A\ninitial state B\n", 3, 1),
    ("E111", "flow demo\ninitial state A\nfinal choice state B\n", 3, 20),
    ("E112", "flow demo\ninitial state A { else -> A }\n", 2, 19),
    (
        "E113",
        "flow demo\nevent go\ninitial state A { on go -> B }\nfinal state B { on go -> A }\n",
        4,
        17,
    ),
    ("E114", 'flow demo\nmessage invalid_transtion "x"\ninitial state A\n', 2, 9),
    (
        "E115",
        "flow demo\nenum X { A1, B1 }\nenum Y { A1 }\ncontext { x: X = A1 }\ninitial state S\n",
        4,
        18,
    ),
    ("E116", BASE.replace("initial state A {", "initial state A {\n  entry do n = event.k"), 5, 16),
    ("E117", BASE.replace("on go -> B", "on go if sqrt(n) > 1 -> B"), 4, 28),
    ("E118", BASE.replace("on go -> B", "on go if len(n, n) > 1 -> B"), 4, 28),
    (
        "E119",
        "flow demo\ncontext { n: int = 0 }\ninitial choice state A { if n > 1 -> B }\n"
        "final state B\n",
        3,
        22,
    ),
    ("E120", "flow demo\ninitial state A { after 0s -> B }\nfinal state B\n", 2, 25),
    ("E121", "flow demo\ninitial state A { meta { k: 1, k: 2 } }\n", 2, 32),
    (
        "E122",
        "flow demo\nversion 2\nmigrate from 1 { drop n }\ncontext { n: int = 0 }\n"
        "initial state A\n",
        3,
        23,
    ),
    ("E123", BASE + 'test "t" {\n  send go(k: 1)\n  given n = 1\n}\n', 8, 3),
    ("E124", BASE + 'test "t" {\n  send go(k: 1)\n  expect reject guard_faild\n}\n', 8, 17),
    (
        "E125",
        BASE + 'journal log "x"\ntest "t" {\n  send go(k: 1)\n  expect journal lgo "x"\n}\n',
        9,
        18,
    ),
    ("E201", BASE.replace("on go -> B", 'on go if n + "x" == 1 -> B'), 4, 28),
    ("E202", BASE.replace("n = event.k", 'n = "x"'), 4, 37),
    ("E007", 'flow demo "\\ud800"\ninitial state A\n', 1, 12),
    ("E120", "flow demo\ninitial state A { after 36501d -> B }\nfinal state B\n", 2, 25),
    ("E206", 'flow demo\ninitial state A\njournal j "{{ seq|nosuchfilter }}"\n', 3, 11),
    ("E203", 'flow demo\ncontext { n: int = "zero" }\ninitial state A\n', 2, 20),
    ("E204", "flow demo\ncontext { n: list[int, int] = [] }\ninitial state A\n", 2, 14),
    ("E205", BASE.replace("on go -> B", "on go if n -> B"), 4, 28),
    ("E206", 'flow demo\njournal log "{{ source "\ninitial state A\n', 2, 13),
    ("E207", "flow demo\nversion 0\ninitial state A\n", 2, 1),
    ("E209", "flow demo\ncontext { x: float = 1.0e999 }\ninitial state A\n", 2, 22),
    ("E127", "flow demo\nunhandled ignor\ninitial state A\n", 2, 11),
    ("E126", "flow demo\nevent error.net\ninitial state A { on eror.* -> A }\n", 3, 22),
    (
        "E130",
        "flow demo\nevent go\ninitial state A { on go -> P }\n"
        "state B { initial state P }\nstate C { initial state P }\n",
        3,
        28,
    ),
    ("E131", "flow demo\ninitial state A { history H }\n", 2, 27),
    ("E132", "flow demo\ninitial state A {\n  state B\n}\n", 2, 15),
    ("E133", "flow demo\ninitial parallel state P {\n  initial state A\n  state B\n}\n", 3, 3),
    (
        "E134",
        "flow demo\nevent go\ninitial parallel state P {\n"
        "  state A { initial state A1 { on go -> B1 } }\n  state B { initial state B1 }\n}\n",
        4,
        41,
    ),
    (
        "E135",
        "flow demo\ninitial state A {\n  initial state A1\n  history H -> B\n}\nstate B\n",
        4,
        16,
    ),
    ("E136", "flow demo\nevent go\ninitial state A { on done.state.A -> A }\n", 3, 22),
    ("E140", "flow demo\ninitial state A { invoke paymnt() }\n", 2, 26),
    ("E141", "flow demo\ninitial state A { invoke demo() }\n", 2, 26),
    ("E142", "flow demo\ninitial state A { invoke broken() }\n", 2, 26),
    (
        "E143",
        PARENT + "initial state A {\n  invoke payment()\n  invoke payment()\n}\n",
        5,
        10,
    ),
    ("E144", PARENT + "initial state A { invoke payment() join all }\n", 3, 41),
    ("E145", "flow demo\nevent go\ninitial state A { on go -> A do send go to parnt }\n", 3, 44),
    ("E146", "flow demo\ninitial state A { invoke payment() }\n", 2, 26),
    ("E137", "flow demo\ninitial state A\nfinal state Z { initial state Z1 }\n", 3, 13),
    (
        "E138",
        "flow demo\ninitial state A {\n  initial -> C\n  initial state B { }\n  state C { }\n}\n",
        3,
        14,
    ),
    (
        "E212",
        "flow demo\nevent a(x: int)\nevent b(x: str)\n"
        "initial state A { on a, b if event.x == 1 -> A }\n",
        4,
        30,
    ),
    (
        "E213",
        "flow demo\ncontext { n: int = 1 }\ninitial state A { after n weeks -> B }\nstate B\n",
        3,
        27,
    ),
    (
        "E214",
        "flow demo\neffect lamp\nevent go\ninitial state A { on go -> A do emit lmap }\n",
        4,
        38,
    ),
    (
        "E215",
        "flow demo\neffect lamp(lit: bool)\nevent go\n"
        "initial state A { on go -> A do emit lamp }\n",
        4,
        33,
    ),
    (
        "E216",
        'flow demo\ncontext { n: str = "1" }\ninitial state A { after n s -> B }\nstate B\n',
        3,
        25,
    ),
    ("E210", 'flow demo\njournal log "{{ 9 ** (9 ** 9) }}"\ninitial state A\n', 2, 13),
    (
        "E218",
        "flow demo\nevent go\ninitial state P {\n  initial state A { on go -> B }\n"
        '  final state B with {"n": 1}\n  final state C\n}\n',
        6,
        15,
    ),
    (
        "E217",
        'flow demo\nevent go\ninitial state A { on go if active("A") -> B }\nfinal state B\n',
        3,
        35,
    ),
    (
        "E211",
        BASE.replace(
            "event go(k: int)",
            'event go(k: int) require event.k > 0 else bad "no" with {"ok": event.k}',
        ),
        3,
        58,
    ),
    (
        "E208",
        BASE.replace("n: int = 0", "n: int?").replace("on go -> B", "on go if n > 1 -> B"),
        4,
        28,
    ),
]


def codes_at(source: bytes | str) -> list[tuple[str, int, int]]:
    result = compile_source(source, "case.flow", flows=CHILD_FLOWS)
    return [(d.code, d.span.line, d.span.column) for d in result.diagnostics]


@pytest.mark.parametrize(("code", "source", "line", "column"), CASES, ids=[c[0] for c in CASES])
def test_code_is_reported_at_its_position(
    code: str, source: bytes | str, line: int, column: int
) -> None:
    found = codes_at(source)
    matching = [(ln, col) for c, ln, col in found if c == code]
    assert matching, f"{code} not reported; got {found}"
    assert matching[0] == (line, column), f"{code} at {matching[0]}, expected {(line, column)}"


def test_every_error_code_has_a_case() -> None:
    tested = {case[0] for case in CASES}
    lint_codes = {c for c in CODES if c[1] == "3"}  # graph lint is tested in tests/lint
    scxml_codes = {c for c in CODES if c[1] == "4"}  # SCXML import/export: tests/scxml
    untested = set(CODES) - tested - lint_codes - scxml_codes - {"E000"}
    assert not untested, f"codes without a test case: {sorted(untested)}"


def test_every_code_is_documented() -> None:
    text = (Path(__file__).parents[2] / "docs" / "diagnostics.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"^###? `?([EW]\d{3})`?", text, flags=re.MULTILINE))
    assert set(CODES) <= documented, f"undocumented: {sorted(set(CODES) - documented)}"


def test_base_flow_is_clean() -> None:
    assert codes_at(BASE) == []


def test_all_errors_of_a_file_are_reported_sorted() -> None:
    source = (
        "flow demo\n"
        'context { n: int = "x" }\n'
        "event go\n"
        "initial state A { on og -> B }\n"
        "state B { on go -> Q }\n"
    )
    found = codes_at(source)
    assert [c for c, _, _ in found] == ["E203", "E105", "E104"]
    assert found == sorted(found, key=lambda f: (f[1], f[2]))


def test_several_syntax_errors_are_reported_at_once() -> None:
    source = "flow demo\ninitial state A { on -> A }\nstate B { on go B }\nstate C { -> }\n"
    lines = [ln for c, ln, _ in codes_at(source) if c == "E003"]
    assert lines == [2, 3, 4]


def test_did_you_mean_for_states_events_and_fields() -> None:
    source = (
        "flow demo\ncontext { count: int = 0 }\nevent submit\n"
        "initial state PLAN { on submt -> PLANN do cont = 1 }\n"
    )
    helps = {d.code: d.help for d in compile_source(source, "x.flow").diagnostics}
    assert helps["E105"] == "did you mean `submit`?"
    assert helps["E104"] == "did you mean `PLAN`?"
    assert helps["E107"] == "did you mean `count`?"


def test_syntax_error_says_what_was_expected_in_words() -> None:
    (diag,) = compile_source("flow demo\ninitial state A { on go B }\n", "x.flow").diagnostics
    assert diag.message == "unexpected name `B`; expected `,`, `->`, `.`, `if` or `reject`"


def test_missing_token_at_line_end_points_at_the_line_end() -> None:
    (diag,) = compile_source(
        "flow demo\nevent go\ninitial state A {\n  on go ->\n}\n", "x.flow"
    ).diagnostics
    assert (diag.span.line, diag.span.column) == (4, 11)
    assert "at the end of this line" in diag.message


def test_warnings_have_warning_severity_and_errors_error() -> None:
    for code, (severity, _title) in CODES.items():
        expected = Severity.WARNING if code.startswith("W") else Severity.ERROR
        assert severity is expected, code


def test_internal_error_becomes_a_diagnostic(monkeypatch: pytest.MonkeyPatch) -> None:
    import flowc.compiler.driver as driver

    def explode(*args: object, **kwargs: object) -> None:
        raise ValueError("boom")

    monkeypatch.delenv("FLOWC_DEBUG", raising=False)
    monkeypatch.setattr(driver, "lower_mapped", explode)
    result = compile_source(BASE, "x.flow")
    assert [d.code for d in result.diagnostics] == ["E000"]
    assert "boom" in result.diagnostics[0].message
    assert result.flow is None


def _documented_examples() -> list[tuple[str, str, int, int]]:
    """(code, source, line, column) for every ```flow-error example in docs/diagnostics.md; the
    position is the `L:C:` the text right after the block says the compiler reports."""
    text = (Path(__file__).parents[2] / "docs" / "diagnostics.md").read_text(encoding="utf-8")
    examples = []
    for section in re.split(r"^### ", text, flags=re.MULTILINE)[1:]:
        code = section.split()[0]
        pattern = r"```flow-error\n(.*?)```\n`(\d+):(\d+):"
        for source, line, column in re.findall(pattern, section, flags=re.DOTALL):
            examples.append((code, source, int(line), int(column)))
    return examples


@pytest.mark.parametrize(
    ("code", "source", "line", "column"),
    _documented_examples(),
    ids=[e[0] for e in _documented_examples()],
)
def test_documented_example_reports_its_code_where_the_docs_say(
    code: str, source: str, line: int, column: int
) -> None:
    found = codes_at(source)
    assert (code, line, column) in found, found


def test_docs_have_an_example_for_most_codes() -> None:
    documented = {e[0] for e in _documented_examples()}
    assert {c for c, *_ in CASES} - documented <= {"E001", "E005", "E006", "E008"}


def test_grammar_is_lalr_and_its_terminals_never_collide() -> None:
    """The parser runs our own lexer; let Lark's strict mode vet the terminals themselves."""
    from importlib import resources

    from lark import Lark

    grammar = resources.files("flowc.grammar").joinpath("flow.lark").read_text(encoding="utf-8")
    Lark(grammar, parser="lalr", lexer="basic", strict=True)  # raises on any conflict


def test_columns_stay_right_after_recovering_from_an_error() -> None:
    source = "flow demo\nevent go\ninitial state A {\n  # note\n  on go -> A do n = 1\n  m = 2\n}\n"
    found = codes_at(source)
    assert found and all(col <= len(source.splitlines()[ln - 1]) + 1 for _, ln, col in found)
    # the missing `;` between the two actions is noticed at the end of line 5
    assert found[0][:2] == ("E003", 5)


def test_a_surrogate_pair_escape_is_one_character() -> None:
    result = compile_source('flow demo "\\ud83d\\ude00 \\u00e9"\ninitial state A\n', "d.flow")
    assert result.flow is not None and not result.errors
    assert result.flow.title == "\U0001f600 \u00e9"


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("-9223372036854775808", True),
        ("9223372036854775807", True),
        ("9223372036854775808", False),
        ("-9223372036854775809", False),
        ("0 - 9223372036854775808", False),
    ],
)
def test_the_64_bit_range_includes_its_negative_end(value: str, ok: bool) -> None:
    for source in (
        f"flow t\ncontext {{ x: int = 0 }}\nevent go\n"
        f"initial state A {{ on go -> B do x = {value} }}\nfinal state B\n",
        f"flow t\ncontext {{ x: int = {value} }}\ninitial state A\n",
    ):
        codes = [d.code for d in compile_source(source, "t.flow").errors]
        assert codes == [] if ok else "E209" in codes, (source, codes)


def test_the_caret_sits_under_its_text_past_wide_and_combining_characters() -> None:
    # CJK characters and most emoji take two terminal cells, a combining accent none: the caret
    # is placed by display width, not by character count.
    source = 'flow demo\ncontext { note: str = "" }\nevent go\ninitial state A {\n'
    source += '  on go if note == "日本👍e\u0301" and zz > 1 -> B\n}\nfinal state B\n'
    result = compile_source(source, "wide.flow")
    (diag,) = result.errors
    assert (diag.code, diag.span.column) == ("E107", 32)  # characters
    text = render_text(diag, result.source.line_text(diag.span.line))
    shown, caret = text.splitlines()[2:4]
    assert shown.endswith('  on go if note == "日本👍e\u0301" and zz > 1 -> B')
    prefix = shown.index("|") + 2  # the gutter, then the line as written
    assert caret.index("^") - prefix == len('  on go if note == "') + 6 + 1 + len('" and ')
    assert caret.endswith(" ^^")


@pytest.mark.parametrize(
    ("rule", "at", "message"),
    [
        ('on go reject busy "busy" with n', "n", "the data of a refusal must be a record literal"),
        ('on go reject busy "busy" with {n: 1}', "n:", "a key of refusal data must be a string"),
        ('on go reject busy "busy" with {"a": n, "a": 1}', '"a": 1', "the key `a` is given twice"),
        ('on go reject busy "busy" with {"event": 1}', '"event"', "`event` is a field of every"),
    ],
)
def test_refusal_data_is_a_record_literal_with_new_keys(rule: str, at: str, message: str) -> None:
    source = BASE.replace("on go -> B", f"{rule}\n  on go -> B")
    result = compile_source(source, "case.flow")
    (diag,) = result.diagnostics
    column = len("initial state A { ") + rule.rindex(at) + 1
    assert (diag.code, diag.span.line, diag.span.column) == ("E211", 4, column)
    assert diag.message.startswith(message)


def test_refusal_data_reads_what_its_clause_may_read() -> None:
    source = BASE.replace(
        "on go -> B",
        'on go if n > 3 reject busy "busy" with {"n": n, "k": event.k, "at": state.name}\n'
        "  on go -> B",
    )
    assert compile_source(source, "case.flow").diagnostics == []
    unknown = BASE.replace(
        "on go -> B", 'on go reject busy "busy" with {"k": event.nope}\n  on go -> B'
    )
    assert [d.code for d in compile_source(unknown, "case.flow").diagnostics] == ["E108"]


def test_a_field_read_only_by_refusal_data_is_used() -> None:
    source = BASE.replace("n: int = 0", "n: int = 0, limit: int = 3").replace(
        "on go -> B", 'on go if event.k > 3 reject busy "busy" with {"limit": limit}\n  on go -> B'
    )
    assert compile_source(source, "case.flow").diagnostics == []
    unused = source.replace('with {"limit": limit}', "")
    assert [d.code for d in compile_source(unused, "case.flow").diagnostics] == ["W312"]


def test_a_rule_for_several_events_reads_fields_they_all_have() -> None:
    source = (
        "flow demo\nevent a(x: int)\nevent b(y: int)\ncontext { n: int = 0 }\n"
        "initial state A { on a, b -> A do n = event.x }\n"
    )
    (diag,) = compile_source(source, "case.flow").diagnostics
    assert (diag.code, diag.span.line, diag.span.column) == ("E212", 5, 39)
    assert "`b` has no field `x`" in diag.message


def test_an_unknown_event_in_a_list_is_reported_alone() -> None:
    source = "flow demo\nevent a\nevent b\ninitial state A { on a, bb, b -> A }\n"
    (diag,) = compile_source(source, "case.flow").diagnostics
    assert (diag.code, diag.span.line, diag.span.column) == ("E105", 4, 25)


@pytest.mark.parametrize(
    ("source", "line", "column", "message"),
    [
        ("unhandled ignore\nunhandled refuse\ninitial state A\n", 3, 1, "given twice for this"),
        ("initial state A { unhandled ignore unhandled ignore }\n", 2, 36, "given twice for state"),
        ("initial state A\nfinal state B { unhandled ignore }\n", 3, 17, "in a final state"),
        ("initial state A\nchoice state C { unhandled ignore else -> A }\n", 3, 18, "choice state"),
    ],
)
def test_unhandled_is_said_once_where_events_are_waited_for(
    source: str, line: int, column: int, message: str
) -> None:
    (diag,) = compile_source("flow demo\n" + source, "case.flow").diagnostics
    assert (diag.code, diag.span.line, diag.span.column) == ("E127", line, column)
    assert message in diag.message


def test_a_mistyped_prefix_is_told_the_family_it_resembles() -> None:
    source = (
        "flow demo\nevent error.net.down\nevent errands\ninitial state A { on eror.net.* -> A }\n"
    )
    (diag,) = compile_source(source, "case.flow").diagnostics
    assert (diag.code, diag.help) == ("E126", "did you mean `error.net.*`?")
