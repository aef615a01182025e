"""The formatter: the canonical layout, rule by rule, and its guarantees (same tokens, same
comments, same IR, idempotent) on every flow of the repository."""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import pytest
from formatting import compiled, meaning, respaced, scrambled

from flowc.compiler.format import FormatError, format_source

ROOT = Path(__file__).resolve().parents[2]
SEEDS = sorted((ROOT / "flows").glob("*.flow"))
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests" / "docs"))
from compile import generate  # noqa: E402
from test_language_examples import blocks  # noqa: E402

DOC_BLOCKS = [b for page in sorted((ROOT / "docs").glob("*.md")) for b in blocks(page)]
DOC_FLOWS = [b for b in DOC_BLOCKS if b.tag == "flow"]
DOC_REFUSED = [b for b in DOC_BLOCKS if b.tag == "flow-error"]


def fmt(text: str) -> str:
    return format_source(text)


# ---- the layout, rule by rule ------------------------------------------------------------------


def test_spacing_between_tokens_is_canonical() -> None:
    source = (
        "flow   spacing\n"
        'context{n:int( 0 ..5 )=0,xs : list [ str ]=[ ],m:map[str,int]={ "a" :1 },o:str ?}\n'
        "event go ( k:int=- 1 )\n"
        "initial state A{on go if n>-1 and-n<3 and(n+1)*2>=len( xs )-1 -> B do n=event . k ;"
        'append( xs,"x" )}\n'
        "final state B\n"
    )
    assert fmt(source) == (
        "flow spacing\n"
        'context { n: int(0..5) = 0, xs: list[str] = [], m: map[str, int] = {"a": 1}, o: str? }\n'
        "event go(k: int = -1)\n"
        "initial state A { on go if n > -1 and -n < 3 and (n + 1) * 2 >= len(xs) - 1 -> B do "
        'n = event.k; append(xs, "x") }\n'
        "final state B\n"
    )


def test_a_soft_keyword_used_as_a_name_is_spaced_as_a_name() -> None:
    # `type` and `message` are keywords to the lexer; here they name a field and an event.
    source = (
        "flow f\ncontext { type: list[int] = [] }\nevent message (n: int)\n"
        "initial state A { on message if type [0] > 0 -> self }\n"
    )
    assert fmt(source) == (
        "flow f\ncontext { type: list[int] = [] }\nevent message(n: int)\n"
        "initial state A { on message if type[0] > 0 -> self }\n"
    )


def test_blocks_get_inner_spaces_and_values_do_not() -> None:
    source = (
        'flow f\nenum E {A,B}\ncontext {m: map[str, int] = {"a": 1}}\n'
        "initial state A {meta {k: {x: 1}, l: [ {y: 2} ]}}\n"
    )
    assert fmt(source) == (
        'flow f\nenum E { A, B }\ncontext { m: map[str, int] = {"a": 1} }\n'
        "initial state A { meta { k: {x: 1}, l: [{y: 2}] } }\n"
    )


def test_every_top_level_statement_starts_a_line() -> None:
    source = "flow f version 2 event go initial state A { on go -> B } final state B\n"
    assert fmt(source) == (
        "flow f\nversion 2\nevent go\ninitial state A { on go -> B }\nfinal state B\n"
    )


def test_a_broken_block_puts_its_brackets_and_statements_on_lines_of_their_own() -> None:
    source = (
        "flow f\nevent go\nevent stop\n"
        "initial state A { on go -> B\n"
        "on stop -> B on go -> self }\n"
        "final state B\n"
    )
    assert fmt(source) == (
        "flow f\nevent go\nevent stop\n"
        "initial state A {\n"
        "  on go -> B\n"
        "  on stop -> B\n"
        "  on go -> self\n"
        "}\n"
        "final state B\n"
    )


def test_brackets_are_judged_each_at_its_own_level() -> None:
    # The map is broken over lines; the call around it is not, so it keeps hugging the map.
    source = (
        "flow f\ncontext { xs: list[map[str, int]] = [] }\nevent go\n"
        "initial state A {\n"
        '  on go -> self do append(xs, {"a": 1,\n'
        '      "b": 2})\n'
        "}\n"
    )
    assert fmt(source) == (
        "flow f\ncontext { xs: list[map[str, int]] = [] }\nevent go\n"
        "initial state A {\n"
        "  on go -> self do append(xs, {\n"
        '    "a": 1,\n'
        '    "b": 2\n'
        "  })\n"
        "}\n"
    )


def test_continuation_lines_are_indented_one_step_and_clauses_within_them_two() -> None:
    source = (
        "flow f\ncontext { n: int = 0 }\n"
        "event go(k: int)\n"
        "require event.k > 0\n"
        'else not_positive "k must be positive"\n'
        "initial state A {\n"
        "on go\n"
        "if n < 3 and\n"
        "event.k < 10\n"
        "-> B do\n"
        "n = 1;\n"
        "n += event.k\n"
        "}\n"
        "final state B\n"
    )
    assert fmt(source) == (
        "flow f\ncontext { n: int = 0 }\n"
        "event go(k: int)\n"
        "  require event.k > 0\n"
        '    else not_positive "k must be positive"\n'
        "initial state A {\n"
        "  on go\n"
        "    if n < 3 and\n"
        "      event.k < 10\n"
        "    -> B do\n"
        "      n = 1;\n"
        "      n += event.k\n"
        "}\n"
        "final state B\n"
    )


def test_brackets_indent_from_the_line_they_open_on() -> None:
    source = (
        "flow f\ncontext { n: int = 0 }\nevent go(\nk: int,\nj: int,\n)\n"
        "initial state A {\n"
        "on go\n"
        "if n == 0 and (\n"
        "event.k > 1\n"
        "or event.j > 1\n"
        ")\n"
        'reject nope "No."\n'
        "}\n"
    )
    assert fmt(source) == (
        "flow f\ncontext { n: int = 0 }\nevent go(\n  k: int,\n  j: int,\n)\n"
        "initial state A {\n"
        "  on go\n"
        "    if n == 0 and (\n"
        "      event.k > 1\n"
        "      or event.j > 1\n"
        "    )\n"
        '    reject nope "No."\n'
        "}\n"
    )


def test_comments_are_kept_and_placed() -> None:
    source = (
        "# header\n\n\n\n"
        "flow f   # the name\n"
        "context {\n\n"
        "n: int = 0 # count\n"
        "longer_name: int = 0     # aligned with the line above\n"
        "    # own line, inside the block\n"
        "m: int = 0 #tight   \n\n"
        "  # before the closer\n\n"
        "}\n"
        'initial state A "a # in a string"\n'
        "# at the end\n\n"
    )
    assert fmt(source) == (
        "# header\n\n"
        "flow f  # the name\n"
        "context {\n"
        "  n: int = 0            # count\n"
        "  longer_name: int = 0  # aligned with the line above\n"
        "  # own line, inside the block\n"
        "  m: int = 0  #tight\n\n"
        "  # before the closer\n"
        "}\n"
        'initial state A "a # in a string"\n'
        "# at the end\n"
    )


def test_long_strings_are_left_exactly_as_written() -> None:
    body = '"""\n  Dear {{ name }},\n\n      indented   on purpose   \n"""'
    source = f"flow f\nmessage   guard_failed {body}\ninitial state A\n"
    assert fmt(source) == f"flow f\nmessage guard_failed {body}\ninitial state A\n"


def test_crlf_tabs_and_a_bom_are_normalised() -> None:
    source = "\ufeffflow f\r\n\tinitial state A {\r\n\t\tmeta { k: 1 }\r\n\t}\r\n"
    assert fmt(source) == "flow f\ninitial state A {\n  meta { k: 1 }\n}\n"


def test_an_empty_file_stays_empty_and_a_comment_only_file_keeps_its_comments() -> None:
    assert fmt("") == ""
    assert fmt("\n\n  # just a note   \n\n") == "# just a note\n"


# ---- refusing what does not parse ------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "code"),
    [
        ("flow f\ninitial state A { on go -> }\n", "E003"),
        ("flow f\ninitial state A @\n", "E002"),
        ("flow f\ninitial state A {\n", "E004"),
        ('flow f\ninitial state A "bad \\q"\n', "E007"),
    ],
)
def test_source_that_does_not_parse_is_refused_with_the_parsers_diagnostics(
    source: str, code: str
) -> None:
    with pytest.raises(FormatError) as refused:
        fmt(source)
    assert code in [d.code for d in refused.value.diagnostics]
    assert str(refused.value).startswith("cannot format: the source does not parse at 2:")


def test_a_flow_with_type_errors_still_formats_and_keeps_its_errors() -> None:
    source = "flow f\nevent go\ninitial state A {on og->B}\nfinal state B\n"
    assert fmt(source) == "flow f\nevent go\ninitial state A { on og -> B }\nfinal state B\n"


# ---- the guarantees on every flow of the repository --------------------------------------------


@pytest.mark.parametrize("path", SEEDS, ids=[p.stem for p in SEEDS])
def test_seed_flows_are_formatted(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert fmt(text) == text, f"run `flowc fmt {path.relative_to(ROOT)}`"


@pytest.mark.parametrize("path", SEEDS, ids=[p.stem for p in SEEDS])
def test_any_spacing_of_a_seed_flow_formats_back_to_it_with_the_golden_ir(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    messy = respaced(text, random.Random(path.stem))
    assert messy != text
    formatted = fmt(messy)
    assert formatted == text
    golden = json.loads((ROOT / "tests" / "golden" / f"{path.stem}.json").read_text("utf-8"))
    assert compiled(formatted).hash == golden["hash"]


@pytest.mark.parametrize("block", DOC_FLOWS, ids=[b.id for b in DOC_FLOWS])
def test_doc_examples_format_idempotently_to_the_same_meaning(block: object) -> None:
    text: str = block.text  # type: ignore[attr-defined]
    formatted = fmt(text)
    assert fmt(formatted) == formatted
    before = compile_or_none(text)
    if before is not None:
        after = compiled(formatted)
        assert meaning(after) == meaning(before)


@pytest.mark.parametrize("block", DOC_REFUSED, ids=[b.id for b in DOC_REFUSED])
def test_doc_examples_that_are_refused_stay_refused_for_the_same_reasons(block: object) -> None:
    text: str = block.text  # type: ignore[attr-defined]
    from flowc.compiler import compile_source

    codes = sorted({d.code for d in compile_source(text).errors})
    try:
        formatted = fmt(text)
    except FormatError as refused:
        assert sorted({d.code for d in refused.diagnostics}) == codes
        return
    assert sorted({d.code for d in compile_source(formatted).errors}) == codes


def compile_or_none(text: str) -> object:
    from flowc.compiler import compile_source

    result = compile_source(text, "x.flow", lint=False)
    return result.flow


def test_a_generated_flow_formats_to_the_same_meaning() -> None:
    text = generate(60)
    formatted = fmt(text)
    assert fmt(formatted) == formatted
    assert meaning(compiled(formatted)) == meaning(compiled(text))


@pytest.mark.parametrize("path", SEEDS, ids=[p.stem for p in SEEDS])
def test_seed_flows_with_scrambled_layout_format_idempotently_to_the_same_meaning(
    path: Path,
) -> None:
    text = path.read_text(encoding="utf-8")
    for seed in range(3):
        messy = scrambled(text, random.Random(f"{path.stem}{seed}"))
        formatted = fmt(messy)
        assert fmt(formatted) == formatted
        assert meaning(compiled(formatted)) == meaning(compiled(text))
        assert formatted.count("# a note") == messy.count("# a note")
        assert formatted.count("# own line") == messy.count("# own line")


def test_the_example_of_the_formatting_page_is_what_fmt_does() -> None:
    page = [b for b in blocks(ROOT / "docs" / "formatting.md") if b.tag == "flow"]
    assert len(page) == 2, "docs/formatting.md shows one input and its formatted version"
    before, after = page[0].text, page[1].text
    assert fmt(before) == after
    assert meaning(compiled(after)) == meaning(compiled(before))


def test_syntax_added_to_the_grammar_formats_without_a_change_to_the_formatter() -> None:
    """A grammar that grows a top-level block of its own statements (`*_item`), with keywords
    the formatter has never seen, is laid out by the same rules."""
    from importlib import resources

    from lark import Lark

    from flowc.compiler.format import _layout
    from flowc.compiler.lexer import FlowLexer

    grammar = resources.files("flowc.grammar").joinpath("flow.lark").read_text(encoding="utf-8")
    assert "     | migrate_decl\n" in grammar
    grammar = grammar.replace("     | migrate_decl\n", "     | migrate_decl\n     | probe_decl\n")
    grammar += (
        'probe_decl: PROBE text "{" probe_item* "}"\n'
        "?probe_item: POKE name [guard] | VERIFY expr\n"
        'PROBE: "probe"\nPOKE: "poke"\nVERIFY: "verify"\n'
    )
    parser = Lark(grammar, parser="lalr", lexer=FlowLexer, strict=True, maybe_placeholders=True)
    source = (
        'flow f\ncontext { n: int = 0 }\nevent go\ninitial state A probe "p"{poke go if n>0\n'
        "verify n==1 poke go\n"
        "  # two probes\n"
        "verify n+1\n"
        "     ==2 }\n"
    )
    parser.parse(source)
    formatted = _layout(source, parser)
    assert formatted == (
        'flow f\ncontext { n: int = 0 }\nevent go\ninitial state A\nprobe "p" {\n'
        "  poke go if n > 0\n"
        "  verify n == 1\n"
        "  poke go\n"
        "  # two probes\n"
        "  verify n + 1\n"
        "    == 2\n"
        "}\n"
    )
    assert _layout(formatted, parser) == formatted


NESTED = """\
flow oven
event go
event pause
initial parallel state Oven {
state Heat { initial state Off { on go -> On }
state On { on pause -> Off }
history deep Last
-> On }
state Light { initial state Dark { always -> Dark } }
on pause -> Oven.Heat.Last
}
"""


def test_nested_states_are_indented_by_level_and_a_history_default_continues_its_line() -> None:
    assert fmt(NESTED) == (
        "flow oven\n"
        "event go\n"
        "event pause\n"
        "initial parallel state Oven {\n"
        "  state Heat {\n"
        "    initial state Off { on go -> On }\n"
        "    state On { on pause -> Off }\n"
        "    history deep Last\n"
        "      -> On\n"
        "  }\n"
        "  state Light { initial state Dark { always -> Dark } }\n"
        "  on pause -> Oven.Heat.Last\n"
        "}\n"
    )
    assert meaning(compiled(fmt(NESTED))) == meaning(compiled(NESTED))


def test_nested_states_with_scrambled_layout_format_idempotently_to_the_same_meaning() -> None:
    text = fmt(NESTED)
    for seed in range(5):
        messy = scrambled(text, random.Random(f"nested{seed}"))
        formatted = fmt(messy)
        assert fmt(formatted) == formatted
        assert meaning(compiled(formatted)) == meaning(compiled(text))
