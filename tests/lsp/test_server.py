"""The language server, driven over its protocol as an editor drives it: a real `flowc lsp`
process, JSON-RPC on its stdin and stdout."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from .client import LspClient, LspError

FLOW = """flow review "Review 🚀"
enum Verdict { PASS, FAIL }
type Note { text: str, score: int = 0 }
context {
  attempts: int = 0
  last: Note? = none
}
event submit(verdict: Verdict, note: Note)
event retry
initial state DRAFT "Writing" {
  meta { owner: "author" }
  on submit if event.verdict == PASS -> DONE do last = event.note
  on retry -> DRAFT do attempts += 1
}
final state DONE
"""
TYPO = FLOW.replace("  on retry -> DRAFT", "  on rety -> DRAFT")


@pytest.fixture
def server(lsp_client: LspClient, tmp_path: Path) -> tuple[LspClient, str]:
    """The module's server, and a document URI of this test's own."""
    path = tmp_path / "review.flow"
    path.write_text(TYPO, encoding="utf-8")
    return lsp_client, path.as_uri()


def pos(text: str, needle: str, offset: int = 0, nth: int = 0) -> dict[str, int]:
    """LSP position (UTF-16) of the `nth` occurrence of `needle` in `text`, plus `offset`."""
    at = -1
    for _ in range(nth + 1):
        at = text.index(needle, at + 1)
    at += offset
    line = text.count("\n", 0, at)
    start = text.rfind("\n", 0, at) + 1
    return {"line": line, "character": len(text[start:at].encode("utf-16-le")) // 2}


def lines_of(locations: list[dict[str, Any]]) -> list[tuple[int, int]]:
    return sorted(
        (loc["range"]["start"]["line"], loc["range"]["start"]["character"]) for loc in locations
    )


def test_capabilities(tmp_path: Path) -> None:
    client = LspClient()
    try:
        caps = client.initialize(tmp_path)["capabilities"]
    finally:
        assert client.close() == 0
    for name in (
        "hoverProvider",
        "definitionProvider",
        "referencesProvider",
        "renameProvider",
        "completionProvider",
        "documentSymbolProvider",
        "semanticTokensProvider",
        "codeActionProvider",
    ):
        assert caps.get(name), name
    assert caps.get("documentFormattingProvider")


def test_formatting_gives_the_canonical_layout(server: tuple[LspClient, str]) -> None:
    from flowc.compiler.format import format_source

    client, uri = server
    messy = FLOW.replace("  on retry -> DRAFT do attempts += 1", "on retry->DRAFT do attempts+=1")
    client.open(uri, messy)
    options = {"tabSize": 2, "insertSpaces": True}
    edits = client.request(
        "textDocument/formatting", {"textDocument": {"uri": uri}, "options": options}
    )
    (edit,) = edits
    assert edit["range"]["start"] == {"line": 0, "character": 0}
    assert edit["newText"] == format_source(messy) == FLOW
    # A text that is already canonical, or does not parse, gets no edit.
    client.change(uri, FLOW, 2)
    assert client.request(
        "textDocument/formatting", {"textDocument": {"uri": uri}, "options": options}
    ) in (None, [])
    client.change(uri, FLOW + "state {", 3)
    assert client.request(
        "textDocument/formatting", {"textDocument": {"uri": uri}, "options": options}
    ) in (None, [])


def test_diagnostics_as_you_type_then_a_code_action_fixes_the_typo(
    server: tuple[LspClient, str],
) -> None:
    client, uri = server
    client.open(uri, TYPO)
    published = client.wait_for("textDocument/publishDiagnostics", uri=uri)
    [diag] = published["diagnostics"]
    assert diag["code"] == "E105" and diag["source"] == "flowc"
    assert diag["severity"] == 1
    assert diag["message"].startswith("unknown event `rety`")
    assert diag["range"]["start"] == pos(TYPO, "rety")
    assert diag["range"]["end"] == pos(TYPO, "rety", 4)

    actions = client.request(
        "textDocument/codeAction",
        {"textDocument": {"uri": uri}, "range": diag["range"], "context": {"diagnostics": [diag]}},
    )
    [fix] = [a for a in actions if "retry" in a["title"]]
    assert fix["kind"] == "quickfix"
    [edit] = fix["edit"]["changes"][uri]
    assert edit["newText"] == "retry" and edit["range"] == diag["range"]

    # The editor applies the edit and sends the new text: the error is gone.
    lines = TYPO.split("\n")
    row = edit["range"]["start"]["line"]
    start, end = edit["range"]["start"]["character"], edit["range"]["end"]["character"]
    lines[row] = lines[row][:start] + edit["newText"] + lines[row][end:]
    fixed = "\n".join(lines)
    assert fixed == FLOW
    client.change(uri, fixed, 2)
    published = client.wait_for("textDocument/publishDiagnostics", uri=uri, version=2)
    assert published["diagnostics"] == []


def test_a_warning_can_be_allowed_by_a_code_action(server: tuple[LspClient, str]) -> None:
    client, uri = server
    text = FLOW.replace("event retry\n", "event retry\nevent never\n")
    client.open(uri, text)
    [diag] = client.wait_for("textDocument/publishDiagnostics", uri=uri)["diagnostics"]
    assert diag["code"] == "W310" and diag["severity"] == 2
    actions = client.request(
        "textDocument/codeAction",
        {"textDocument": {"uri": uri}, "range": diag["range"], "context": {"diagnostics": [diag]}},
    )
    [allow] = [a for a in actions if "allow" in a["title"]]
    [edit] = allow["edit"]["changes"][uri]
    assert edit["newText"] == "# flowc: allow W310\n"
    assert edit["range"]["start"] == {"line": diag["range"]["start"]["line"], "character": 0}
    lines = text.split("\n")
    lines.insert(diag["range"]["start"]["line"], edit["newText"].rstrip("\n"))
    client.change(uri, "\n".join(lines), 2)
    published = client.wait_for("textDocument/publishDiagnostics", uri=uri, version=2)
    assert published["diagnostics"] == []


def test_hover(server: tuple[LspClient, str]) -> None:
    client, uri = server
    client.open(uri, FLOW)
    client.wait_for("textDocument/publishDiagnostics", uri=uri)

    def hover(needle: str, nth: int = 0) -> str:
        result = client.request(
            "textDocument/hover",
            {"textDocument": {"uri": uri}, "position": pos(FLOW, needle, 1, nth)},
        )
        return str(result["contents"]["value"])

    state = hover("DRAFT", 1)  # in `on retry -> DRAFT`
    assert "initial state DRAFT" in state and "Writing" in state and '"owner": "author"' in state
    assert "event submit(verdict: Verdict, note: Note)" in hover("submit", 1)
    assert "attempts: int = 0" in hover("attempts", 1)
    assert "score: int = 0" in hover("score")
    assert "verdict: Verdict" in hover("verdict", 1)  # `event.verdict`
    assert "enum Verdict { PASS, FAIL }" in hover("Verdict", 1)


def test_definition_and_references(server: tuple[LspClient, str]) -> None:
    client, uri = server
    client.open(uri, FLOW)
    client.wait_for("textDocument/publishDiagnostics", uri=uri)
    doc = {"textDocument": {"uri": uri}}

    target = client.request("textDocument/definition", {**doc, "position": pos(FLOW, "DONE", 1)})
    assert target["uri"] == uri
    assert target["range"]["start"] == pos(FLOW, "DONE", 0, 1)  # `final state DONE`

    cases = {
        "Note": ["Note {", "Note? ", "Note)"],  # a record type
        "PASS": ["PASS,", "PASS ->"],  # an enum member
        "attempts": ["attempts: int", "attempts +="],  # a context field
        "retry": ["retry\n", "retry ->"],  # an event
    }
    for name, places in cases.items():
        found = client.request(
            "textDocument/references",
            {**doc, "position": pos(FLOW, places[-1], 1), "context": {"includeDeclaration": True}},
        )
        assert lines_of(found) == sorted(
            (pos(FLOW, p)["line"], pos(FLOW, p)["character"]) for p in places
        ), name


def test_completion(server: tuple[LspClient, str]) -> None:
    client, uri = server
    client.open(uri, FLOW)
    client.wait_for("textDocument/publishDiagnostics", uri=uri)

    def labels(text: str, needle: str) -> set[str]:
        client.change(uri, text, 2)
        client.wait_for("textDocument/publishDiagnostics", uri=uri, version=2)
        items = client.request(
            "textDocument/completion",
            {"textDocument": {"uri": uri}, "position": pos(text, needle, len(needle))},
        )
        return {item["label"] for item in items["items"]}

    after_arrow = FLOW.replace("on retry -> DRAFT", "on retry -> ")
    assert labels(after_arrow, "on retry -> ") >= {"DRAFT", "DONE", "self"}
    after_on = FLOW.replace("on retry -> DRAFT", "on ")
    assert labels(after_on, "  on ") == {"submit", "retry"}
    in_guard = FLOW.replace("if event.verdict", "if event.")
    assert labels(in_guard, "if event.") == {"verdict", "note"}
    expression = FLOW.replace("if event.verdict == PASS", "if att")
    found = labels(expression, "if att")
    assert {"attempts", "last", "len", "Verdict", "PASS", "state"} <= found
    # Mid-edit text that does not parse at all: the names come from the last one that did.
    broken = FLOW.replace("final state DONE", "final state DONE {{ on ")
    assert labels(broken, "DONE {{ on ") == {"submit", "retry"}


def test_rename_across_the_file(server: tuple[LspClient, str]) -> None:
    client, uri = server
    client.open(uri, FLOW)
    client.wait_for("textDocument/publishDiagnostics", uri=uri)
    doc = {"textDocument": {"uri": uri}}
    edit = client.request(
        "textDocument/rename", {**doc, "position": pos(FLOW, "DRAFT", 1, 1), "newName": "EDITING"}
    )
    edits = edit["changes"][uri]
    assert {e["newText"] for e in edits} == {"EDITING"}
    assert len(edits) == 2
    renamed = FLOW.replace("DRAFT", "EDITING")
    client.change(uri, renamed, 2)
    published = client.wait_for("textDocument/publishDiagnostics", uri=uri, version=2)
    assert published["diagnostics"] == []

    with pytest.raises(LspError):
        client.request(
            "textDocument/rename", {**doc, "position": pos(renamed, "retry"), "newName": "submit"}
        )


def test_document_symbols_and_semantic_tokens(server: tuple[LspClient, str]) -> None:
    client, uri = server
    client.open(uri, FLOW)
    client.wait_for("textDocument/publishDiagnostics", uri=uri)
    doc = {"textDocument": {"uri": uri}}
    symbols = client.request("textDocument/documentSymbol", doc)
    names = [s["name"] for s in symbols]
    assert names == ["review", "Verdict", "Note", "context", "submit", "retry", "DRAFT", "DONE"]
    [verdict] = [s for s in symbols if s["name"] == "Verdict"]
    assert [c["name"] for c in verdict["children"]] == ["PASS", "FAIL"]

    data = client.request("textDocument/semanticTokens/full", doc)["data"]
    assert len(data) % 5 == 0
    # Decode the first tokens: `Verdict` (line 1) then its members.
    tokens = []
    line = start = 0
    for i in range(0, len(data), 5):
        d_line, d_start, length, kind, mods = data[i : i + 5]
        line += d_line
        start = start + d_start if d_line == 0 else d_start
        tokens.append((line, start, length, kind, mods))
    assert tokens[0] == (1, 5, 7, 2, 1)  # enum Verdict, a declaration
    assert tokens[1] == (1, 15, 4, 3, 1)  # PASS


def test_without_the_lsp_extra_the_command_says_what_to_install(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    from flowc.compiler.cli import main

    monkeypatch.delitem(sys.modules, "flowc.compiler.lsp.server", raising=False)
    monkeypatch.setitem(sys.modules, "pygls", None)  # as if pygls were not installed
    monkeypatch.setitem(sys.modules, "pygls.lsp.server", None)
    assert main(["lsp"]) == 1
    err = capsys.readouterr().err
    assert "pip install 'flowc[lsp]'" in err and "pygls" in err


def test_the_stdio_flag_editors_pass_is_accepted(tmp_path: Path) -> None:
    client = LspClient("--stdio")
    try:
        assert client.initialize(tmp_path)["serverInfo"]["name"] == "flowc"
    finally:
        assert client.close() == 0


def test_a_duplicate_points_at_the_first_declaration(server: tuple[LspClient, str]) -> None:
    client, uri = server
    text = FLOW + "state DRAFT\n"
    client.open(uri, text)
    diags = client.wait_for("textDocument/publishDiagnostics", uri=uri)["diagnostics"]
    [duplicate] = [d for d in diags if d["code"] == "E103"]
    [related] = duplicate["relatedInformation"]
    assert related["location"]["uri"] == uri
    assert related["location"]["range"]["start"] == pos(text, "DRAFT")
    assert "first declared here" in related["message"]


NESTED = """flow oven
event go
event pause
initial state Idle { on go -> Cooking }
state Cooking {
  initial state Heating { on pause -> Cooking.Paused }
  state Paused { on go -> Again }
  history Again
}
state Washing {
  initial state Paused { on go -> Idle }
}
"""


def test_nested_states_nest_in_the_outline_and_resolve_by_path(
    server: tuple[LspClient, str],
) -> None:
    client, uri = server
    client.open(uri, NESTED)
    client.wait_for("textDocument/publishDiagnostics", uri=uri)
    doc = {"textDocument": {"uri": uri}}
    symbols = client.request("textDocument/documentSymbol", doc)
    [cooking] = [s for s in symbols if s["name"] == "Cooking"]
    assert [c["name"] for c in cooking["children"]] == ["Heating", "Paused", "Again"]
    assert [s["name"] for s in symbols] == ["oven", "go", "pause", "Idle", "Cooking", "Washing"]

    # `-> Cooking.Paused` leads to the `Paused` inside `Cooking`, not the one in `Washing`
    target = client.request(
        "textDocument/definition", {**doc, "position": pos(NESTED, "Cooking.Paused", 9)}
    )
    assert target["range"]["start"] == pos(NESTED, "Paused", 0, 1)
    # and a history by its short name
    target = client.request("textDocument/definition", {**doc, "position": pos(NESTED, "Again", 1)})
    assert target["range"]["start"] == pos(NESTED, "Again", 0, 1)

    hover = client.request("textDocument/hover", {**doc, "position": pos(NESTED, "Cooking", 1)})
    text = str(hover["contents"]["value"])
    assert "state Cooking" in text and "compound, 3 child states" in text
    hover = client.request("textDocument/hover", {**doc, "position": pos(NESTED, "Paused {", 1, 1)})
    assert "inside `Washing`" in str(hover["contents"]["value"])


CHART = """flow oven
event door_opened
event door_closed
event start
initial state closed "Door closed" {
  initial state idle { on start -> cooking }
  state cooking "Cooking" {
    initial state heating { }
    state paused { }
  }
  history resume -> idle
  on door_opened -> open
}
state open {
  initial state lit { }
  state paused { }
  on door_closed -> resume
}
"""


def test_completion_in_a_statechart(lsp_client: LspClient, tmp_path: Path) -> None:
    path = tmp_path / "oven.flow"
    path.write_text(CHART, encoding="utf-8")
    client = lsp_client
    uri = path.as_uri()
    client.open(uri, CHART)
    client.wait_for("textDocument/publishDiagnostics", uri=uri)
    version = 1

    def items(text: str, needle: str) -> dict[str, str | None]:
        nonlocal version
        version += 1
        client.change(uri, text, version)
        client.wait_for("textDocument/publishDiagnostics", uri=uri, version=version)
        found = client.request(
            "textDocument/completion",
            {"textDocument": {"uri": uri}, "position": pos(text, needle, len(needle))},
        )
        return {item["label"]: item.get("detail") for item in found["items"]}

    # After `->`: nested states and the history state, by the names the flow writes them
    # with (a short name repeated in two parents is written as its dotted path).
    arrow = CHART.replace("on door_closed -> resume", "on door_closed -> ")
    targets = items(arrow, "on door_closed -> ")
    assert set(targets) == {
        "closed", "idle", "cooking", "heating", "closed.cooking.paused", "resume", "open",
        "lit", "open.paused", "self",
    }  # fmt: skip
    assert targets["cooking"] == "Cooking (in closed)"
    assert targets["resume"] == "history (in closed)"
    # After `-> STATE.`: the states declared in it.
    dotted = CHART.replace("on door_closed -> resume", "on door_closed -> closed.")
    assert set(items(dotted, "on door_closed -> closed.")) == {"idle", "cooking", "resume"}
    deeper = CHART.replace("on door_closed -> resume", "on door_closed -> cooking.")
    assert set(items(deeper, "on door_closed -> cooking.")) == {"heating", "paused"}
    # Completion events: one per compound state, among the events after `on`, and their
    # state names after `on done.state.`.
    on = CHART.replace("on door_closed -> resume", "on ")
    events = items(on, "  on ")
    assert set(events) == {
        "door_opened", "door_closed", "start", "done.state.closed", "done.state.cooking",
        "done.state.open",
    }  # fmt: skip
    assert events["done.state.cooking"] == "raised when closed.cooking completes"
    done = CHART.replace("on door_closed -> resume", "on done.state.")
    assert set(items(done, "on done.state.")) == {"closed", "cooking", "open"}
    assert set(items(done.replace("done.state.", "done."), "on done.")) == {"state"}
