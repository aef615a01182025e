"""A small synchronous LSP client for tests: starts the real `flowc lsp` process and speaks
JSON-RPC to it over its stdin/stdout, with Content-Length framing, as an editor does."""

from __future__ import annotations

import json
import queue
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO, Any

TIMEOUT = 30.0


class LspClient:
    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "flowc.compiler.cli", "lsp", *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        self._next_id = 0
        self._inbox: queue.Queue[dict[str, Any] | None] = queue.Queue()
        #: notifications received and not yet taken, in order
        self.notifications: list[dict[str, Any]] = []
        self._responses: dict[int | None, dict[str, Any]] = {}
        assert self.proc.stdout is not None
        threading.Thread(target=self._read, args=(self.proc.stdout,), daemon=True).start()

    # ---- wire -----------------------------------------------------------------------------

    def _read(self, stream: IO[bytes]) -> None:
        while True:
            headers: dict[str, str] = {}
            while True:
                line = stream.readline()
                if not line:
                    self._inbox.put(None)
                    return
                line = line.strip()
                if not line:
                    break
                name, _, value = line.decode("ascii").partition(":")
                headers[name.strip().lower()] = value.strip()
            body = stream.read(int(headers["content-length"]))
            self._inbox.put(json.loads(body))

    def _send(self, message: dict[str, Any]) -> None:
        self.send_bytes(frame(message))

    def send_bytes(self, data: bytes) -> None:
        """Write `data` as it is: for frames that are wrong on purpose."""
        assert self.proc.stdin is not None
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def _pump(self) -> None:
        message = self._inbox.get(timeout=TIMEOUT)
        if message is None:
            raise EOFError("the server closed its output")
        if "id" in message and "method" in message:  # a request from the server
            self._send({"id": message["id"], "result": None})
        elif "id" in message:
            self._responses[message["id"]] = message
        else:
            self.notifications.append(message)

    # ---- API ------------------------------------------------------------------------------

    def request(self, method: str, params: Any) -> Any:
        ident = self.next_id()
        self._send({"id": ident, "method": method, "params": params})
        response = self.response(ident)
        if "error" in response:
            raise LspError(response["error"])
        return response.get("result")

    def next_id(self) -> int:
        """An id for a request sent by hand (`send_bytes`)."""
        self._next_id += 1
        return self._next_id

    def response(self, ident: int | None) -> dict[str, Any]:
        """The response with id `ident` (None: one to a message the server could not read)."""
        while ident not in self._responses:
            self._pump()
        return self._responses.pop(ident)

    def notify(self, method: str, params: Any) -> None:
        self._send({"method": method, "params": params})

    def wait_for(self, method: str, **match: Any) -> dict[str, Any]:
        """The next notification `method` whose params have the given values."""
        while True:
            for i, note in enumerate(self.notifications):
                params = note.get("params", {})
                if note["method"] == method and all(params.get(k) == v for k, v in match.items()):
                    del self.notifications[i]
                    return params  # type: ignore[no-any-return]
            self._pump()

    def initialize(self, root: Path) -> dict[str, Any]:
        result = self.request(
            "initialize",
            {
                "processId": None,
                "rootUri": root.as_uri(),
                "capabilities": {
                    "textDocument": {
                        "publishDiagnostics": {"relatedInformation": True},
                        "rename": {"prepareSupport": True},
                        "documentSymbol": {"hierarchicalDocumentSymbolSupport": True},
                    }
                },
            },
        )
        self.notify("initialized", {})
        return result  # type: ignore[no-any-return]

    def open(self, uri: str, text: str, version: int = 1) -> None:
        self.notify(
            "textDocument/didOpen",
            {"textDocument": {"uri": uri, "languageId": "flow", "version": version, "text": text}},
        )

    def change(self, uri: str, text: str, version: int) -> None:
        self.notify(
            "textDocument/didChange",
            {"textDocument": {"uri": uri, "version": version}, "contentChanges": [{"text": text}]},
        )

    def close(self) -> int:
        """Shut the server down the way an editor does; its exit status."""
        try:
            self.request("shutdown", None)
            self.notify("exit", None)
            return self.proc.wait(timeout=TIMEOUT)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
                if stream is not None:
                    stream.close()


def frame(message: dict[str, Any], wrong_by: int = 0) -> bytes:
    """A JSON-RPC message with its Content-Length header, `wrong_by` bytes off if asked."""
    body = json.dumps({"jsonrpc": "2.0", **message}).encode("utf-8")
    return f"Content-Length: {len(body) + wrong_by}\r\n\r\n".encode("ascii") + body


class LspError(Exception):
    pass
