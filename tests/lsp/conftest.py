"""One `flowc lsp` process per test module: starting one costs about a second of CPU, and the
tests of a module each work on documents of their own (URIs under their own tmp_path), as an
editor's open files share one server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from .client import LspClient


@pytest.fixture(scope="module")
def lsp_client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LspClient]:
    client = LspClient()
    try:
        client.initialize(tmp_path_factory.mktemp("workspace"))
        yield client
    finally:
        assert client.close() == 0
