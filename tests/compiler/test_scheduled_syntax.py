"""`internal event`, `send E after D as ID` and `cancel ID` in the compiler: parse, check,
format; the words stay usable as names."""

from __future__ import annotations

import pytest

from flowc.compiler import compile_source, fastparse
from flowc.compiler.format import format_source
from flowc.compiler.parse import parse_source

HEAD = """flow t
context { n: int = 0, rid: str = "r", ratio: float = 0.5 }
internal event ping(k: int = 0)
event go
"""


def codes(body: str) -> list[tuple[str, int, int]]:
    result = compile_source(HEAD + "initial state A {\n" + body + "\n  on ping -> A\n}\n", "t.flow")
    return [(d.code, d.span.line, d.span.column) for d in result.errors]


def test_a_scheduled_send_and_cancel_compile() -> None:
    assert codes('  on go -> A do send ping(k: n) after n * 2 s as rid; cancel "r"') == []
    assert codes("  on go -> A do send ping after 5m; cancel event.k_name") != []


@pytest.mark.parametrize(
    ("body", "code", "column"),
    [
        ("  on go -> A do send pong after 1s", "E105", 22),
        ("  on go -> A do send ping(z: 1) after 1s", "E108", 27),
        ("  on go -> A do send ping after 0s", "E120", 33),
        ("  on go -> A do send ping after 40000d", "E120", 33),
        ("  on go -> A do send ping after ratio s", "E216", 33),
        ("  on go -> A do send ping after n parsecs", "E213", 35),
        ("  on go -> A do send ping after 1s as n", "E201", 39),
        ("  on go -> A do cancel n", "E201", 24),
        ('  on go -> A do cancel ("r" + rid)', "E117", 17),
    ],
)  # fmt: skip
def test_scheduled_sends_are_checked_like_raise_and_timers(
    body: str, code: str, column: int
) -> None:
    assert (code, 6, column) in codes(body)


def test_the_new_words_remain_names_elsewhere() -> None:
    source = """flow t
context { as: int = 0, internal: bool = false, cancel: int = 0 }
event cancel(id: str = "x")
event internal
internal event tick
initial state A {
  on cancel -> A do cancel = 1; cancel event.id; as += 1; send tick after 1s as event.id
  on internal -> A do internal = true
  on tick -> A
}
"""
    result = compile_source(source, "t.flow")
    assert result.errors == []
    assert result.flow is not None
    ops = [a.op for a in result.flow.transitions[0].actions]
    assert ops == ["set", "cancel", "add", "send"]


def test_the_formatter_lays_them_out() -> None:
    messy = (
        "flow t\ninternal   event ping\nevent go\ninitial state A {\n"
        '  on go -> A do send ping  after 30s as "r";cancel   "r"\n  on ping -> A\n}\n'
    )
    assert format_source(messy) == (
        "flow t\ninternal event ping\nevent go\ninitial state A {\n"
        '  on go -> A do send ping after 30s as "r"; cancel "r"\n  on ping -> A\n}\n'
    )


@pytest.mark.parametrize(
    "text",
    [
        HEAD + 'initial state A {\n  on go -> A do send ping(k: n) after n * 2 s as rid; cancel "r"'
        "\n  on ping -> A do cancel rid.x; send ping after 5m\n}\n",
        'flow t\ncontext { as: int = 0, cancel: int = 0 }\nevent cancel(id: str = "x")\n'
        'internal event tick(k: int = 1) require event.k > 0 else bad "no"\n'
        "initial state A {\n  on cancel -> A do cancel = 1; cancel event.id; as += 1; "
        "send tick after as * 2 s as event.id; cancel as\n  on tick -> A\n}\n",
    ],
)
def test_both_parsers_read_them_alike(text: str) -> None:
    fast = fastparse.parse_module(text)
    assert fast is not None, "the fast path reads them"
    reference = parse_source(text, fast_path=False)
    assert reference.diagnostics == [] and reference.module == fast


@pytest.mark.parametrize("action", ["cancel f(1)", "cancel x[1]", "send go after 3 parsecs"])
def test_what_the_fast_parser_cannot_read_is_left_to_lark(action: str) -> None:
    text = HEAD + "initial state A { on go -> A do " + action + " }\n"
    assert fastparse.parse_module(text) is None
    assert parse_source(text).diagnostics
