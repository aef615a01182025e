"""Whatever bytes it is given, the compiler answers with diagnostics and never raises."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flowc.compiler import compile_file, compile_source
from flowc.compiler.diagnostics import CODES

FLOWS = Path(__file__).parents[2] / "flows"
SAMPLE = """flow sample "Sample"
version 1
enum Verdict { PASS, FAIL }
context {
  attempts: int = 0
  notes: list[str] = []
  owner: str? = none
}
event submit(verdict: Verdict, note: str)
event retry
initial state DRAFT "Draft" {
  meta { tools: ["edit"], panel: "editor" }
  on submit if event.verdict == PASS -> REVIEW do append(notes, event.note)
  on submit -> self do attempts += 1
}
state REVIEW {
  entry do attempts = 0
  on retry if attempts < 3 -> DRAFT back
  after 2h -> DONE
}
final state DONE
"""


def assert_only_diagnostics(source: str | bytes) -> None:
    result = compile_source(source, "fuzz.flow")
    for diag in result.diagnostics:
        assert diag.code in CODES, diag
        assert diag.code != "E000", diag.message  # an internal error is a compiler bug
        assert diag.span.line >= 1 and diag.span.column >= 1
    if result.errors:
        assert result.flow is None


def test_sample_is_valid() -> None:
    assert compile_source(SAMPLE, "sample.flow").ok


@pytest.mark.parametrize(
    "source",
    [
        "",
        " ",
        "\n\n\n",
        "# only a comment",
        "flow",
        "flow x",
        '"""',
        '"unterminated',
        "{" * 5000,
        "}" * 5000,
        "flow x\ncontext { a: int = " + "(" * 10_000 + "1" + ")" * 10_000 + " }",
        "flow x\ncontext { a: list[int] = " + "[" * 10_000 + "]" * 10_000 + " }",
        "flow x\ncontext { a: int = " + "1+" * 10_000 + "1 }",
        "flow x\ncontext { a: bool = " + "not " * 10_000 + "true }",
        "flow x\ninitial state A { meta { k: " + "[" * 10_000 + "]" * 10_000 + " } }",
        "\x00\x01\x02\x03",
        "flow x\n\ufeff\u200b\u202e state A",
        "flow x \u201ctitle\u201d",
    ],
    ids=lambda s: repr(s[:20]),
)
def test_hostile_text(source: str) -> None:
    assert_only_diagnostics(source)


def test_empty_file_reports_missing_header() -> None:
    assert [d.code for d in compile_source("", "e.flow").diagnostics] == ["E101"]


def test_binary_garbage() -> None:
    rng = random.Random(7)
    for _ in range(20):
        assert_only_diagnostics(bytes(rng.randrange(256) for _ in range(rng.randrange(1, 4000))))


def test_non_utf8_bytes_are_reported_with_their_position() -> None:
    result = compile_source(b"flow x\n# caf\xe9\ninitial state A\nfinal state B\n", "l1.flow")
    (diag,) = [d for d in result.diagnostics if d.code == "E001"]
    assert (diag.span.line, diag.span.column) == (2, 6)


def test_a_file_that_is_not_utf8_gets_its_errors_but_no_graph_warnings() -> None:
    # Without the bad byte this flow compiles with warnings (ORPHAN is unreachable, and stuck);
    # with it, the reader needs the E001, not lint of a file that cannot compile.
    text = b"flow x\n# caf\xe9\nevent go\ninitial state A { on go -> B }\n"
    text += b"state ORPHAN\nfinal state B\n"
    clean = compile_source(text.replace(b"\xe9", b"e")).diagnostics
    assert [d.code for d in clean] == ["W301", "W302"]
    result = compile_source(text, "l1.flow")
    assert [d.code for d in result.diagnostics] == ["E001"]
    assert result.flow is None


def test_five_megabytes_of_junk_stops_early_with_a_bounded_report() -> None:
    rng = random.Random(3)
    junk = "".join(rng.choice("abc{}()->@#=;:\n \"'") for _ in range(5 * 2**20))
    result = compile_source("flow big\n" + junk, "big.flow")
    assert result.flow is None
    assert 1 <= len(result.diagnostics) <= 30


def test_five_megabytes_of_comments_then_an_error_at_the_end() -> None:
    body = ("# " + "x" * 98 + "\n") * (5 * 2**20 // 100)
    source = "flow big\ninitial state A\nfinal state B\n" + body + "state C @\n"
    result = compile_source(source, "big.flow")
    assert [d.code for d in result.errors] == ["E002"]
    assert result.errors[0].span.line == source.count("\n")


def test_unreadable_path_is_a_diagnostic(tmp_path: Path) -> None:
    result = compile_file(tmp_path / "missing.flow")
    assert [d.code for d in result.diagnostics] == ["E001"]


def _tokens(text: str) -> list[str]:
    # A crude split that keeps punctuation apart: good enough to mutate flows meaningfully.
    out: list[str] = []
    word = ""
    for ch in text:
        if ch.isalnum() or ch == "_":
            word += ch
            continue
        if word:
            out.append(word)
            word = ""
        out.append(ch)
    if word:
        out.append(word)
    return out


def _seed_sources() -> list[str]:
    sources = [SAMPLE]
    sources += [p.read_text(encoding="utf-8") for p in sorted(FLOWS.glob("*.flow"))]
    return sources


mutation = st.tuples(
    st.sampled_from(["delete", "duplicate", "swap", "insert", "bytes"]),
    st.integers(min_value=0, max_value=10**9),
    st.integers(min_value=0, max_value=10**9),
    st.binary(min_size=1, max_size=8),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    which=st.integers(min_value=0, max_value=100),
    mutations=st.lists(mutation, min_size=1, max_size=6),
)
def test_mutated_flows_only_produce_diagnostics(
    which: int, mutations: list[tuple[str, int, int, bytes]]
) -> None:
    sources = _seed_sources()
    tokens = _tokens(sources[which % len(sources)])
    raw: bytes | None = None
    for kind, a, b, blob in mutations:
        if not tokens:
            break
        i, j = a % len(tokens), b % len(tokens)
        if kind == "delete":
            del tokens[i]
        elif kind == "duplicate":
            tokens.insert(i, tokens[i])
        elif kind == "swap":
            tokens[i], tokens[j] = tokens[j], tokens[i]
        elif kind == "insert":
            tokens.insert(i, tokens[j])
        else:
            raw = "".join(tokens).encode("utf-8")
            cut = a % (len(raw) + 1)
            raw = raw[:cut] + blob + raw[cut:]
    assert_only_diagnostics(raw if raw is not None else "".join(tokens))
