"""Pathological sizes end in bounded work and a clear diagnostic, never a hang or E000."""

from __future__ import annotations

from pathlib import Path

import pytest

from flowc.compiler import compile_file, compile_source
from flowc.compiler.cli import main
from flowc.compiler.driver import SOURCE_LIMIT_VARIABLE
from flowc.compiler.parse import MAX_MISPLACED_TOKENS


def found(source: str | bytes, max_bytes: int | None = None) -> list[tuple[str, int, int]]:
    result = compile_source(source, "case.flow", max_bytes=max_bytes)
    return [(d.code, d.span.line, d.span.column) for d in result.diagnostics]


def test_a_line_of_100k_stray_braces_stops_after_a_bounded_number() -> None:
    result = compile_source("flow t\n" + "{" * 100_000 + "\n", "case.flow")
    assert [(d.code, d.span.line) for d in result.diagnostics] == [("E003", 2), ("E006", 2)]
    assert result.diagnostics[1].span.column == MAX_MISPLACED_TOKENS + 1


def test_a_source_past_the_limit_is_e008_and_is_not_read_past_it(tmp_path: Path) -> None:
    assert found(b"flow t\n" + b" " * 100, max_bytes=50) == [("E008", 1, 1)]
    assert found("flow t\n" + " " * 100, max_bytes=50) == [("E008", 1, 1)]
    result = compile_file("/dev/zero", max_bytes=1000)
    assert [(d.code, d.file) for d in result.diagnostics] == [("E008", "/dev/zero")]


def test_the_source_limit_can_be_raised_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "big.flow"
    path.write_text(f'flow t "{"x" * 2000}"\ninitial state A\nfinal state B\n')
    monkeypatch.setenv(SOURCE_LIMIT_VARIABLE, "1000")
    assert [d.code for d in compile_file(path).diagnostics] == ["E008"]
    monkeypatch.setenv(SOURCE_LIMIT_VARIABLE, "100000")
    assert compile_file(path).errors == []


def test_check_of_dev_zero_stops_at_the_limit(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check", "/dev/zero"]) == 1
    assert "error[E008]: the source is larger than 33,554,432 bytes" in capsys.readouterr().out


def test_a_bom_is_ignored_in_a_string_as_in_bytes() -> None:
    source = "flow t\ninitial state A\n"
    assert found("\ufeff" + source) == found(source.encode()) == found(("\ufeff" + source).encode())
    assert compile_source("\ufeff" + source).errors == []


@pytest.mark.parametrize(
    ("source", "code", "column"),
    [
        ("flow t\ncontext { n: int = " + "9" * 4301 + " }\ninitial state A\n", "E209", 20),
        ("flow t\ncontext { n: int = -" + "9" * 5000 + " }\ninitial state A\n", "E209", 21),
        ("flow t\nversion " + "9" * 4301 + "\ninitial state A\n", "E209", 9),
        ("flow t\nmigrate from " + "9" * 4301 + " { }\ninitial state A\n", "E209", 14),
        ("flow t\nstate B { meta { a: " + "9" * 4301 + " } }\ninitial state A\n", "E209", 21),
        ("flow t\nevent go\ninitial state A { after " + "9" * 4301 + "s -> A }\n", "E120", 25),
    ],
    ids=["field", "negative", "version", "migrate", "meta", "duration"],
)
def test_integers_past_pythons_digit_limit_are_number_errors(
    source: str, code: str, column: int
) -> None:
    codes = found(source)
    assert codes[0] == (code, 2 if code == "E209" else 3, column)
    assert "E000" not in [c for c, *_ in codes]


def test_did_you_mean_on_a_10k_character_typo_is_bounded() -> None:
    name = "s" + "a" * 10_000
    source = f"flow t\nevent go\ninitial state {name} {{ on go -> {name[:-1]}b }}\n"
    result = compile_source(source)
    assert [(d.code, d.help) for d in result.diagnostics] == [("E104", None)]


def test_did_you_mean_for_thousands_of_unknown_targets_shares_one_budget() -> None:
    lines = ["flow t", "event go", "initial state s0 { on go -> s1 }"]
    lines += [f"state s{i} {{ on go -> x{i} }}" for i in range(1, 2000)]
    result = compile_source("\n".join(lines))
    assert [d.code for d in result.diagnostics] == ["E104"] * 1999
    helped = [d for d in result.diagnostics if d.help and d.help.startswith("did you mean")]
    # The first ones still get their suggestion; the work for the rest is capped.
    assert helped[0].help == "did you mean `s1`?"
    assert 0 < len(helped) < 1999


def test_did_you_mean_still_finds_close_names() -> None:
    from flowc.compiler.resolve import edit_distance, suggest

    assert suggest("submit_explanaton", ["submit_explanation", "submit_code"]) == (
        "did you mean `submit_explanation`?"
    )
    assert suggest("og", ["go", "stop"]) == "did you mean `go`?"
    assert edit_distance("kitten", "sitting") == 3
    assert edit_distance("kitten", "sitting", limit=2) == 3
    assert edit_distance("a" * 500, "b" * 500, limit=3) == 4
