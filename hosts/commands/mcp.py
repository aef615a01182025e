"""`flowc mcp FLOW... [--store URL]`: serve flows to agent hosts over MCP (docs/agents.md).

Each event of each flow is a tool, next to `start`, `status`, `history` (and `goto` / `back`
where the flow has such edges); instances live in the store, so the server may restart, and
several servers may share one store. Needs the `flowc[mcp]` extra.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from flowc.compiler.commands import EXIT_FAILURE, EXIT_OK, EXIT_USAGE
from flowc.compiler.commands.render import load_flow
from flowc.hosts.commands.options import add_store_option
from flowc.hosts.operations import store_url
from flowc.runtime.machine import Machine
from flowc.runtime.model import CompiledFlow
from flowc.runtime.store import StoreError, open_store
from flowc.runtime.store.durable import DurableFlows

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SpanExporter


def register(sub: Any) -> None:
    parser: argparse.ArgumentParser = sub.add_parser(
        "mcp",
        help="serve flows as MCP tools, resources and prompts (stdio or HTTP)",
        description=(
            "Serve FLOW... to MCP clients (agent hosts). Each event is a tool taking the "
            "event's fields, an instance_id and an optional request_id; `start` creates an "
            "instance from the context fields the flow marks `input` (no others), `status` and "
            "`history` read one (leaving out fields marked `hidden`), `goto` and `back` move "
            "one where the flow has such edges. The tool list never changes; each result says "
            "which tools the instance accepts now, and a refused call says why. Diagrams, "
            "reference pages, snapshots and histories are resources; the flows' templates are "
            "prompts. Instances are kept in the store (one SQLite file by default; PostgreSQL "
            "for several server processes on several hosts). Needs pip install 'flowc[mcp]'."
        ),
    )
    parser.add_argument(
        "flows",
        metavar="FLOW",
        nargs="+",
        help="a .flow file or compiled .json (several: tool "
        "names are prefixed with the flow's name)",
    )
    add_store_option(parser)
    parser.add_argument(
        "--transport",
        choices=("stdio", "http"),
        default="stdio",
        help="stdio (default: the client starts the server) or http (streamable HTTP)",
    )
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to listen on, for http (default 127.0.0.1)"
    )
    parser.add_argument(
        "--port", type=int, default=8000, help="port to listen on, for http (default 8000)"
    )
    parser.add_argument(
        "--path", default="/mcp", help="the endpoint's path, for http (default /mcp)"
    )
    parser.add_argument(
        "--prefix",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="prefix tool and prompt names with the flow's name (default: only for several flows)",
    )
    parser.add_argument(
        "--effects",
        metavar="MODULE:FUNCTION",
        help="deliver the flows' effects to this function (called with each OutboxEffect, "
        "after its step commits; at least once, with a stable id; a raise is retried and "
        "shown in status). The module must be importable (PYTHONPATH)",
    )
    parser.add_argument(
        "--trace",
        choices=TRACE_EXPORTERS,
        help="record OpenTelemetry spans of every tool call, step and effect (GenAI "
        "conventions, one trace per instance) and export them: console (JSON on standard "
        "error) or otlp (OTEL_EXPORTER_OTLP_* settings). Needs pip install 'flowc[otel]' "
        "opentelemetry-sdk, and opentelemetry-exporter-otlp for otlp",
    )
    parser.set_defaults(handler=run)


#: `--trace`'s exporters
TRACE_EXPORTERS = ("console", "otlp")
_OTLP_EXPORTER = "opentelemetry.exporter.otlp.proto.http.trace_exporter"


def tracer_provider(exporter: str) -> TracerProvider | str:
    """An SDK tracer provider exporting to `exporter` (batched), or why there is none: the
    SDK and the exporters are optional, imported only when asked for."""
    try:
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter
    except ImportError:
        return "needs the OpenTelemetry SDK: pip install 'flowc[otel]' opentelemetry-sdk"
    chosen: SpanExporter
    if exporter == "console":
        chosen = ConsoleSpanExporter(out=sys.stderr)  # standard output may be the protocol's
    else:
        try:
            otlp = importlib.import_module(_OTLP_EXPORTER)
        except ImportError:
            return "needs an OTLP exporter: pip install opentelemetry-exporter-otlp-proto-http"
        chosen = otlp.OTLPSpanExporter()  # configured by the OTEL_EXPORTER_OTLP_* variables
    provider = TracerProvider()
    provider.add_span_processor(BatchSpanProcessor(chosen))
    return provider


def run(args: argparse.Namespace) -> int:
    try:
        from flowc.hosts.mcp_server import serve
    except ImportError as exc:
        print(f"flowc mcp: needs the MCP SDK: pip install 'flowc[mcp]' ({exc})", file=sys.stderr)
        return EXIT_FAILURE
    if not 0 < args.port < 65536:
        print("flowc mcp: --port must be between 1 and 65535", file=sys.stderr)
        return EXIT_USAGE
    compiled: list[CompiledFlow] = []
    for given in args.flows:
        loaded = load_flow(Path(given), "mcp")
        if isinstance(loaded, int):
            return loaded
        compiled.append(loaded)
    names = [f.name for f in compiled]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        print(f"flowc mcp: the flow {twice[0]} is given twice", file=sys.stderr)
        return EXIT_USAGE
    handler: Callable[..., object] | None = None
    if args.effects is not None:
        found = load_handler(args.effects)
        if isinstance(found, str):
            print(f"flowc mcp: --effects {args.effects}: {found}", file=sys.stderr)
            return EXIT_USAGE
        handler = found
    provider: TracerProvider | None = None
    if args.trace is not None:
        made = tracer_provider(args.trace)
        if isinstance(made, str):
            print(f"flowc mcp: --trace {args.trace}: {made}", file=sys.stderr)
            return EXIT_USAGE
        provider = made
        # Process-wide too: the MCP SDK's own `tools/call` spans (in the client's trace), which
        # flowc's tool-call spans link to, go to the same exporter.
        from opentelemetry import trace

        trace.set_tracer_provider(provider)
    try:
        store = open_store(store_url(args.store))
    except StoreError as exc:
        print(f"flowc mcp: {exc}", file=sys.stderr)
        return EXIT_USAGE
    try:
        durable = DurableFlows(store, [Machine(f) for f in compiled])
        serve(
            compiled,
            durable,
            transport=args.transport,
            host=args.host,
            port=args.port,
            path=args.path,
            prefix=args.prefix,
            effects=handler,
            tracer_provider=provider,
        )
    except ValueError as exc:  # tools that would share a name
        print(f"flowc mcp: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    except BaseException as exc:
        if _client_gone(exc):
            _quiet_stdout()  # the client stopped reading: nothing is left to say to it
        elif not _only(exc, KeyboardInterrupt):  # Ctrl-C, alone or from the server's tasks
            raise
    finally:
        if provider is not None:
            provider.shutdown()  # export what is batched
        store.close()
    return EXIT_OK


def load_handler(spec: str) -> Callable[..., object] | str:
    """The function `MODULE:FUNCTION` names, or why there is none."""
    module_name, colon, name = spec.partition(":")
    if not colon or not module_name or not name:
        return "write it as MODULE:FUNCTION"
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:  # an import error, or one the module raised while loading
        return f"cannot import {module_name}: {type(exc).__name__}: {exc}"
    found = getattr(module, name, None)
    if not callable(found):
        return f"{module_name} has no function {name}"
    return cast("Callable[..., object]", found)


def _only(exc: BaseException, kind: type[BaseException]) -> bool:
    """Whether `exc` is a `kind`, or a group of nothing else."""
    if isinstance(exc, BaseExceptionGroup):
        return all(_only(e, kind) for e in exc.exceptions)
    return isinstance(exc, kind)


def _client_gone(exc: BaseException) -> bool:
    """Whether `exc` (or every exception of a group) says the client closed its end."""
    if isinstance(exc, BaseExceptionGroup):
        return all(_client_gone(e) for e in exc.exceptions)
    return isinstance(exc, BrokenPipeError | ConnectionResetError) or (
        type(exc).__name__ in ("BrokenResourceError", "ClosedResourceError")
    )


def _quiet_stdout() -> None:
    """Point standard output at /dev/null, so that flushing it at exit raises nothing more."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass
