"""The two parse paths agree: the fast LALR loop used for clean files, and Lark's parser with
error recovery that takes over at the first sign of trouble."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import flowc.compiler.parse as parse

ROOT = Path(__file__).resolve().parents[2]
SEEDS = sorted((ROOT / "flows").glob("*.flow"))
sys.path.insert(0, str(ROOT / "bench"))
from compile import generate  # noqa: E402


def both(text: str) -> tuple[parse.ParseResult, parse.ParseResult]:
    fast = parse.parse_source(text, "x.flow")
    slow_path = parse._fast_parse
    parse._fast_parse = lambda *args: None  # type: ignore[assignment]
    try:
        slow = parse.parse_source(text, "x.flow")
    finally:
        parse._fast_parse = slow_path
    return fast, slow


@pytest.mark.parametrize("path", SEEDS, ids=[p.stem for p in SEEDS])
def test_seed_flows_parse_to_the_same_ast(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    with parse._PARSE_LOCK:
        assert parse._fast_parse(parse.flow_parser(), text, "x.flow") is not None, "fast path"
    fast, slow = both(text)
    assert fast.module == slow.module and fast.module is not None
    assert fast.diagnostics == slow.diagnostics == []


def test_generated_flow_parses_to_the_same_ast() -> None:
    fast, slow = both(generate(30))
    assert fast.module == slow.module and fast.module is not None


@pytest.mark.parametrize(
    "text",
    [
        "flow a\ninitial state A { on go -> }\n",  # syntax error
        "flow a\ninitial state A @\n",  # bad character
        "flow a\ncontext { x: int = " + "(" * 150 + "1" + ")" * 150 + " }\n",  # too deep
        'flow a\ninitial state A "bad \\q escape"\n',  # a diagnostic from a callback
        "",
    ],
)
def test_trouble_gives_what_the_full_parser_gives(text: str) -> None:
    fast, slow = both(text)
    assert fast.diagnostics == slow.diagnostics
    assert fast.module == slow.module
