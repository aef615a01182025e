"""The language server's side of the wire: Content-Length framed JSON-RPC on a byte stream.

pygls reads frames by trusting each Content-Length exactly and recognising a header only at the
start of a line. One wrong length then glues every later header to the previous body's tail, and
the server answers nothing again. This reader finds a header at the end of any line, and reads a
body that is not JSON again as header lines (a length that was too long swallowed the start of
the next message), so one bad frame costs that frame only.

It also answers what pygls drops silently: a body that is not JSON gets a ParseError, and a
request whose parameters do not fit the method's types (a negative position, a string for a
number) gets InvalidParams naming the field, instead of no response at all.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import threading
from collections.abc import Callable
from concurrent.futures import Executor
from typing import Any, BinaryIO

from cattrs import Converter, transform_error
from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException
from pygls.io_ import StdoutWriter
from pygls.lsp.server import LanguageServer
from pygls.protocol import JsonRPCProtocol, default_converter

logger = logging.getLogger(__name__)

#: A Content-Length header at the end of a line, after anything (the tail of a short body).
_HEADER = re.compile(rb"Content-Length:[ \t]*(\d{1,10})[ \t]*\r?\n$", re.IGNORECASE)
#: Longest header line read at once; a line without a newline is read on in pieces this long.
MAX_HEADER_LINE = 64 * 1024
#: Largest body accepted: a larger length is treated as a corrupt header and skipped.
MAX_BODY = 256 * 1024 * 1024


class FrameReader:
    """Message bodies from a stream of Content-Length framed messages, resynchronising at the
    next header after a frame whose length was wrong."""

    def __init__(self, stream: BinaryIO) -> None:
        self._stream = stream
        # Bytes given back by `resync`, read again before the stream, from `_at` on.
        self._pending = b""
        self._at = 0

    def _readline(self) -> bytes:
        if self._at < len(self._pending):
            end = self._pending.find(b"\n", self._at)
            if end >= 0:
                line = self._pending[self._at : end + 1]
                self._at = end + 1
                return line
            line = self._pending[self._at :]
            self._pending, self._at = b"", 0
            return line + self._stream.readline(MAX_HEADER_LINE)
        return self._stream.readline(MAX_HEADER_LINE)

    def _read(self, size: int) -> bytes:
        taken = self._pending[self._at : self._at + size]
        self._at += len(taken)
        rest = size - len(taken)
        return taken + (self._stream.read(rest) if rest else b"")

    def next_body(self) -> bytes | None:
        """The next message's body, or None at the end of the stream."""
        length: int | None = None
        while True:
            line = self._readline()
            if not line:
                return None
            found = _HEADER.search(line)
            if found is not None:
                length = int(found.group(1))
            elif not line.strip() and length is not None:
                if length > MAX_BODY:
                    logger.error("skipping a frame of %d bytes (at most %d)", length, MAX_BODY)
                    length = None
                    continue
                body = self._read(length)
                return body if len(body) == length else None

    def resync(self, body: bytes) -> None:
        """Read `body`, which was not a message, again as headers: a length that was too long
        took the start of the next message (its header, whole or in part), and a JSON body has
        no line breaks, so the next header found at the end of a line is a real one."""
        self._pending = body + self._pending[self._at :]
        self._at = 0


def _exactly(kind: type[Any]) -> Callable[[object, object], Any]:
    def structure(value: object, _type: object) -> Any:
        if type(value) is not kind:  # cattrs would convert quietly: int("3"), bool("false")
            raise TypeError(f"expected {kind.__name__}, got {type(value).__name__}")
        return value

    return structure


def strict_converter() -> Converter:
    """pygls' converter, but an integer field (a position's line, a version) must be a JSON
    integer, a boolean a JSON boolean and a string a JSON string: "3" and 3.5 are refused rather
    than read as 3, and 5 rather than read as "5"."""
    converter: Converter = default_converter()  # type: ignore[no-untyped-call]
    converter.register_structure_hook(int, _exactly(int))
    converter.register_structure_hook(bool, _exactly(bool))
    converter.register_structure_hook(str, _exactly(str))
    return converter


def error_response(ident: Any, code: int, message: str) -> dict[str, Any]:
    """A JSON-RPC error response; an id that is not a number or string becomes null."""
    valid = isinstance(ident, (int, str)) and not isinstance(ident, bool)
    return {
        "jsonrpc": "2.0",
        "id": ident if valid else None,
        "error": {"code": code, "message": message},
    }


def _params_problem(exc: BaseException) -> str:
    """What was wrong with the parameters, from the validation error behind `exc`."""
    cause = exc.__cause__
    if cause is None:
        return "the parameters do not match the method's types"
    try:
        details = transform_error(cause)
    except Exception:  # not a cattrs error: its own message is the best there is
        details = [str(cause)]
    return "; ".join(details[:5])


def dispatch(
    body: bytes, protocol: JsonRPCProtocol, send: Callable[[dict[str, Any]], None]
) -> bool:
    """Hand one body to the protocol. False when the body is not JSON (the reader should then
    resynchronise); refused messages get their error response through `send`."""
    try:
        raw = json.loads(body)
    except (ValueError, RecursionError):
        send(error_response(None, lsp.ErrorCodes.ParseError, "Parse error: the body is not JSON"))
        return False
    if not isinstance(raw, dict):
        send(error_response(None, lsp.ErrorCodes.InvalidRequest, "a message must be an object"))
        return True
    try:
        message = json.loads(body, object_hook=protocol.structure_message)
    except JsonRpcException as exc:
        if "id" in raw and "method" in raw:
            code = (
                lsp.ErrorCodes.InvalidParams
                if exc.code == lsp.ErrorCodes.InvalidParams
                else exc.code
            )
            send(error_response(raw["id"], code, f"Invalid params: {_params_problem(exc)}"))
        return True
    try:
        protocol.handle_message(message)
    except Exception:  # one message's failure must not end the session
        logger.exception("unable to handle a message")
        if "id" in raw and "method" in raw:
            send(error_response(raw["id"], lsp.ErrorCodes.InternalError, "internal error"))
    return True


async def run(
    stop: threading.Event, reader: FrameReader, protocol: JsonRPCProtocol, pool: Executor
) -> None:
    """Read (on `pool`, as reads block) and dispatch messages until the stream ends or the
    server stops."""
    loop = asyncio.get_running_loop()
    while not stop.is_set():
        body = await loop.run_in_executor(pool, reader.next_body)
        if body is None:
            return
        if not dispatch(body, protocol, protocol._send_data):
            reader.resync(body)


def serve_io(server: LanguageServer, stdin: BinaryIO, stdout: BinaryIO) -> None:
    """pygls' `start_io`, with the reader above."""
    server._stop_event = stop = threading.Event()
    server.protocol.set_writer(StdoutWriter(stdout))
    try:
        asyncio.run(run(stop, FrameReader(stdin), server.protocol, server.thread_pool))
    except BrokenPipeError:
        logger.error("the client closed the connection; shutting down")
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        server.shutdown()  # type: ignore[no-untyped-call]
