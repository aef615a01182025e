"""The real `flowc mcp` server, started as a process and driven by the MCP SDK's own client
session, over stdio or streamable HTTP."""

from __future__ import annotations

import contextlib
import json
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

ROOT = Path(__file__).parents[2]
SEED_003 = ROOT / "flows" / "interactive_stage.flow"
FLOWC = [sys.executable, "-m", "flowc.compiler.cli"]


def server_args(flows: list[Path], store: str, *extra: str) -> list[str]:
    return ["mcp", *(str(f) for f in flows), "--store", store, *extra]


@contextlib.asynccontextmanager
async def stdio_session(
    flows: list[Path], store: str, *extra: str, env: dict[str, str] | None = None
) -> AsyncIterator[ClientSession]:
    """A session with a server the client starts itself, as MCP clients do for stdio."""
    params = StdioServerParameters(
        command=FLOWC[0],
        args=[*FLOWC[1:], *server_args(flows, store, *extra)],
        cwd=str(ROOT),
        env=env,
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


@contextlib.contextmanager
def http_server(flows: list[Path], store: str) -> Iterator[str]:
    """`flowc mcp --transport http` on 127.0.0.1 and a free port; its URL. Stopped on exit."""
    port = free_port()
    process = subprocess.Popen(
        [*FLOWC, *server_args(flows, store, "--transport", "http", "--port", str(port))],
        cwd=ROOT,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            if process.poll() is not None:
                assert process.stderr is not None
                raise RuntimeError(f"flowc mcp exited: {process.stderr.read().decode()}")
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
                break
            if time.monotonic() > deadline:
                raise RuntimeError("flowc mcp did not start listening")
            time.sleep(0.1)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stderr is not None:
            process.stderr.close()


@contextlib.asynccontextmanager
async def http_session(url: str) -> AsyncIterator[ClientSession]:
    async with streamable_http_client(url) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


async def call(
    session: ClientSession, tool: str, /, **arguments: Any
) -> tuple[bool, dict[str, Any]]:
    """(isError, the JSON the model reads) of one tool call; the text and the structured
    content must say the same."""
    result = await session.call_tool(tool, arguments)
    assert not isinstance(result, BaseException)
    text = result.content[0].text  # type: ignore[union-attr]
    data: dict[str, Any] = json.loads(text)
    assert data == result.structured_content  # type: ignore[union-attr]
    return bool(result.is_error), data  # type: ignore[union-attr]
