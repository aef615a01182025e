"""The inspector inside an application's own process, over the `DurableFlows` it holds (any
store, the memory store too): `server = serve(flows)`, later `server.stop()`."""

from __future__ import annotations

import threading
import time

import uvicorn

from flowc.hosts.inspect.app import create_app
from flowc.hosts.inspect.source import Inspector
from flowc.runtime.store.durable import DurableFlows


class Served:
    """A running inspector: `url`, and `stop()`."""

    def __init__(self, server: uvicorn.Server, thread: threading.Thread, url: str) -> None:
        self._server = server
        self._thread = thread
        self.url = url

    def stop(self, timeout: float = 10.0) -> None:
        self._server.should_exit = True
        self._thread.join(timeout)


def serve(
    flows: DurableFlows,
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    allow_send: bool = False,
    timeout: float = 10.0,
) -> Served:
    """Serve the inspector over `flows` from a daemon thread; returns once it listens."""
    app = create_app(Inspector(flows, allow_send=allow_send))
    config = uvicorn.Config(
        app, host=host, port=port, log_level="warning", timeout_graceful_shutdown=1
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="flowc-inspect", daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            server.should_exit = True
            raise OSError(f"flowc inspect could not listen on {host}:{port}")
        time.sleep(0.01)
    return Served(server, thread, f"http://{host}:{port}/")
