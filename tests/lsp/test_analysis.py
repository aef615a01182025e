"""The answers behind the language server, on compiled files (no protocol)."""

from __future__ import annotations

from flowc.compiler import compile_source
from flowc.compiler.lsp.analysis import FileIndex, keywords

FLOW = """flow demo
context { n: int = 0, label: str = "x" }
event go(k: int)
initial state A { on go if n + event.k > 2 -> B do n = event.k }
final state B
"""


def index(text: str = FLOW) -> FileIndex:
    return FileIndex(compile_source(text))


def test_keywords_come_from_the_grammar() -> None:
    assert {"flow", "state", "initial", "final", "on", "event", "context"} <= set(keywords())


def test_hover_over_an_expression_shows_its_type() -> None:
    ix = index()
    line = FLOW.splitlines()[3]
    column = line.index(" > 2") + 2  # on the `>`
    text, _ = ix.hover(4, column) or ("", None)
    assert "n + event.k > 2: bool" in text
    column = line.index("+ event") + 1
    text, _ = ix.hover(4, column) or ("", None)
    assert "n + event.k: int" in text


def test_the_name_under_the_cursor_includes_its_end() -> None:
    ix = index()
    line = FLOW.splitlines()[3]
    start = line.index("-> B") + 4  # `B`, 1-based
    for column in (start, start + 1):
        found = ix.at(4, column)
        assert found is not None and found.key == ("B",) and found.kind == "state"
    assert ix.at(4, start - 2) is None  # on `->`


def test_event_field_occurrence_is_the_field_name_only() -> None:
    ix = index()
    params = [o for o in ix.occurrences if o.kind == "param"]
    assert [(o.span.line, o.declaration) for o in params] == [(3, True), (4, False), (4, False)]
    line = FLOW.splitlines()[3]
    assert line[params[1].span.column - 1 : params[1].span.end_column - 1] == "k"


def test_rename_refuses_keywords_non_names_and_clashes() -> None:
    ix = index()
    state = ix.at(5, len("final state B"))
    assert state is not None
    assert ix.rename(state, "state") == "`state` is a keyword"
    assert ix.rename(state, "9lives") == "`9lives` is not a name"
    assert ix.rename(state, "A") == "a state named `A` already exists"
    edits = ix.rename(state, "DONE")
    assert isinstance(edits, list) and len(edits) == 2


def test_a_file_that_does_not_parse_offers_keywords() -> None:
    # The server completes names from the last file that parsed (tests/lsp/test_server.py).
    ix = index(FLOW.replace("final state B", "final state B {{"))
    assert ix.occurrences == []
    assert "state" in [c.label for c in ix.complete_text("  on ", 4)]


def test_a_scheduled_send_and_a_cancel_are_occurrences_of_their_names() -> None:
    text = """flow demo
context { rid: str = "r", wait: int = 1 }
internal event ping
event go
initial state A {
  on go -> A do send ping after wait s as rid; cancel rid
  on ping -> B
}
final state B
"""
    ix = index(text)
    pings = [(o.span.line, o.declaration) for o in ix.occurrences if o.key == ("ping",)]
    assert pings == [(3, True), (6, False), (7, False)]
    rids = [o.span.line for o in ix.occurrences if o.kind == "field" and o.key == ("rid",)]
    assert rids == [2, 6, 6]
    waits = [o.span.line for o in ix.occurrences if o.kind == "field" and o.key == ("wait",)]
    assert waits == [2, 6]
