"""`flowc inspect --store URL [--port P] [--allow-send] [FLOW...]`: the instances of a store in
a local web app (flowc.hosts.inspect; docs/inspect.md).

It listens on 127.0.0.1 unless told otherwise, has no accounts, and only reads the store unless
started with --allow-send. FLOW... are .flow or compiled .json files (or folders of them):
without them each instance is drawn and re-run with the graph the store keeps for it.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from flowc.compiler.commands import EXIT_FAILURE, EXIT_OK, EXIT_USAGE
from flowc.hosts.commands.options import add_store_option
from flowc.hosts.operations import UsageError, load_machines, store_url
from flowc.runtime.store import StoreError, StoreURLError, open_store

SQLITE = "sqlite:///"


def register(sub: Any) -> None:
    parser: argparse.ArgumentParser = sub.add_parser(
        "inspect",
        help="look at (and, with --allow-send, steer) stored instances in a browser",
        description=(
            "Serve a local web app over a store: the instance list with filters, each "
            "instance's diagram, timeline with the context change of every step, timers, "
            "outbox and fork lineage, updated live. Read-only unless --allow-send. Needs the "
            "`flowc[inspect]` extra. Stops on Ctrl-C."
        ),
    )
    add_store_option(parser)
    parser.add_argument("flows", nargs="*", metavar="FLOW", help="flow files or folders")
    parser.add_argument("--host", default="127.0.0.1", help="address (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8765, help="port (default 8765; 0: any)")
    parser.add_argument(
        "--allow-send",
        action="store_true",
        help="let the page send events, go to a state and go back (each with a reason)",
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    try:
        import uvicorn

        from flowc.hosts.inspect.app import create_app
        from flowc.hosts.inspect.source import Inspector
    except ImportError as exc:
        print(
            f"flowc inspect: needs the inspect extra: pip install 'flowc[inspect]' ({exc})",
            file=sys.stderr,
        )
        return EXIT_USAGE
    from flowc.runtime.store.durable import DurableFlows

    if not 0 <= args.port <= 65535:
        print("flowc inspect: --port is 0 to 65535", file=sys.stderr)
        return EXIT_USAGE
    url = store_url(args.store)
    missing = _missing_sqlite_file(url)
    if missing is not None:  # opening would create an empty store, to look at nothing
        print(f"flowc inspect: no store at {missing}", file=sys.stderr)
        return EXIT_FAILURE
    try:
        machines = load_machines(args.flows)
        store = open_store(url)
    except (UsageError, StoreURLError) as exc:
        print(f"flowc inspect: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except StoreError as exc:
        print(f"flowc inspect: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    with DurableFlows(store, machines, upgrade=False) as flows:
        inspector = Inspector(flows, allow_send=args.allow_send)
        hosts = None if args.host in ("127.0.0.1", "localhost", "::1") else [args.host]
        app = create_app(inspector, hosts=hosts)
        mode = "may steer instances" if args.allow_send else "read-only"
        print(f"flowc inspect: http://{_netloc(args.host)}:{args.port}/ ({mode})", flush=True)
        with _stopped_quietly():
            try:
                # Open live streams never end by themselves: give them a second at Ctrl-C.
                uvicorn.run(
                    app,
                    host=args.host,
                    port=args.port,
                    log_level="warning",
                    timeout_graceful_shutdown=1,
                )
            except SystemExit:  # uvicorn's answer to a port it cannot bind, logged above
                print(f"flowc inspect: could not serve on port {args.port}", file=sys.stderr)
                return EXIT_FAILURE
    return EXIT_OK


@contextmanager
def _stopped_quietly() -> Iterator[None]:
    """Ctrl-C and SIGTERM stop the server, which then exits 0 as `flowc worker` does. uvicorn
    shuts down gracefully on either, then raises the signal again for the handler it found:
    this one, which lets the command return instead of dying by the signal."""
    stop = (signal.SIGINT, signal.SIGTERM)
    previous = {sig: signal.signal(sig, lambda *_: None) for sig in stop}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def _missing_sqlite_file(url: str) -> str | None:
    """The file a `sqlite:///PATH` URL names, when it does not exist."""
    if not url.startswith(SQLITE):
        return None
    path = url[len(SQLITE) :].split("?", 1)[0]
    return None if not path or os.path.exists(path) else path


def _netloc(host: str) -> str:
    return f"[{host}]" if ":" in host else host
