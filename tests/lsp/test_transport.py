"""The server's wire under bad input, over a real `flowc lsp` session: a frame whose
Content-Length is wrong costs that frame only, and a request it cannot read gets an error
response instead of silence."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from flowc.compiler.lsp.transport import FrameReader

from .client import LspClient, LspError, frame

FLOW = "flow x\nevent go\ninitial state A {\n  on go -> B\n}\nfinal state B\n"
PARSE_ERROR = -32700
INVALID_REQUEST = -32600
INVALID_PARAMS = -32602


@pytest.fixture
def session(lsp_client: LspClient, tmp_path: Path) -> tuple[LspClient, str]:
    """The module's server (every test here leaves it answering), with a document of the
    test's own open."""
    uri = (tmp_path / "x.flow").as_uri()
    lsp_client.open(uri, FLOW)
    lsp_client.wait_for("textDocument/publishDiagnostics", uri=uri)
    return lsp_client, uri


def hover_at(uri: str, line: Any, character: Any) -> dict[str, Any]:
    return {"textDocument": {"uri": uri}, "position": {"line": line, "character": character}}


def hovers_event_go(client: LspClient, uri: str) -> None:
    """The server still answers: a hover on `go` in `on go -> B` names the event."""
    result = client.request("textDocument/hover", hover_at(uri, 3, 6))
    assert "go" in result["contents"]["value"]


@pytest.mark.parametrize("wrong_by", [-20, 30])
def test_a_frame_with_a_wrong_length_costs_that_frame_only(
    session: tuple[LspClient, str], wrong_by: int
) -> None:
    client, uri = session
    bad = client.next_id()
    client.send_bytes(
        frame({"id": bad, "method": "textDocument/hover", "params": hover_at(uri, 3, 6)}, wrong_by)
    )
    hovers_event_go(client, uri)
    assert client.response(None)["error"]["code"] == PARSE_ERROR
    hovers_event_go(client, uri)


def test_a_header_after_garbage_on_its_line_is_found() -> None:
    stream = io.BytesIO(b"junk}Content-Length: 2\r\n\r\n{}Content-Length: 3\r\n\r\n[1]")
    reader = FrameReader(stream)  # type: ignore[arg-type]
    assert reader.next_body() == b"{}"
    assert reader.next_body() == b"[1]"
    assert reader.next_body() is None


def test_a_body_too_long_gives_back_the_next_message() -> None:
    second = frame({"id": 2, "method": "shutdown"})
    first = frame({"id": 1, "method": "shutdown"}, wrong_by=10)
    reader = FrameReader(io.BytesIO(first + second))  # type: ignore[arg-type]
    swallowed = reader.next_body()
    assert swallowed is not None and swallowed.endswith(second[:10])
    reader.resync(swallowed)
    assert reader.next_body() == second[second.index(b"{") :]


@pytest.mark.parametrize(
    ("line", "character"),
    [(-1, 0), (0, -5), (2**31, 0), (0, 2**31), ("3", 6), (3.5, 6), (None, 6), ([3], 6)],
)
def test_an_invalid_position_gets_invalid_params(
    session: tuple[LspClient, str], line: Any, character: Any
) -> None:
    client, uri = session
    with pytest.raises(LspError) as refused:
        client.request("textDocument/hover", hover_at(uri, line, character))
    error = refused.value.args[0]
    assert error["code"] == INVALID_PARAMS
    assert "position" in error["message"]
    hovers_event_go(client, uri)


def test_a_position_without_a_character_gets_invalid_params(
    session: tuple[LspClient, str],
) -> None:
    client, uri = session
    params = {"textDocument": {"uri": uri}, "position": {"line": 3}}
    for method in ("textDocument/definition", "textDocument/references"):
        with pytest.raises(LspError) as refused:
            client.request(method, params)
        assert refused.value.args[0]["code"] == INVALID_PARAMS
    hovers_event_go(client, uri)


def test_a_document_named_by_a_number_gets_invalid_params(session: tuple[LspClient, str]) -> None:
    client, uri = session
    with pytest.raises(LspError) as refused:
        client.request("textDocument/hover", {**hover_at(uri, 3, 6), "textDocument": {"uri": 5}})
    assert refused.value.args[0]["code"] == INVALID_PARAMS
    assert "uri" in refused.value.args[0]["message"]
    hovers_event_go(client, uri)


def test_a_body_that_is_not_an_object_gets_invalid_request(
    session: tuple[LspClient, str],
) -> None:
    client, uri = session
    client.send_bytes(b"Content-Length: 3\r\n\r\n[1]")
    assert client.response(None)["error"]["code"] == INVALID_REQUEST
    hovers_event_go(client, uri)
