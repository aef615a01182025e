"""OpenTelemetry spans of MCP tool calls (`flowc.runtime.tracing.trace_tool_calls`, `flowc mcp
--trace`): the real `FlowServer` driven in process by the MCP SDK's client, on a SQLite file
(and PostgreSQL), recorded with the SDK's in-memory exporter; and `--trace console` in a real
`flowc mcp` process."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters, stdio_client
from mcp.client.session import ClientSession
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode
from span_fixtures import exporter, provider

from agent_hosts.mcp_client import FLOWC, ROOT, server_args
from flowc.compiler.cli import main
from flowc.compiler.commands.render import load_flow
from flowc.hosts.commands.mcp import tracer_provider
from flowc.hosts.mcp_server import EffectDelivery, FlowServer
from flowc.runtime import Machine
from flowc.runtime.store import OutboxEffect
from flowc.runtime.store.durable import open_durable
from flowc.runtime.tool_calls import ToolDispatcher
from flowc.runtime.tracing import instance_trace, trace_tool_calls

SUPPORT = Path(__file__).parent / "flows" / "support.flow"


@pytest.fixture(params=["sqlite", "postgres"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "postgres":
        url: str = request.getfixturevalue("postgres_url")
        return url
    return f"sqlite:///{tmp_path / 'flows.db'}"


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def parent_id(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


async def call(client: Client, tool: str, **arguments: Any) -> Any:
    result = await client.call_tool(tool, arguments)
    return result.structured_content


def test_tool_calls_over_mcp_are_execute_tool_spans_in_the_instance_trace(
    store_url: str, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    flow = load_flow(SUPPORT, "test")
    assert not isinstance(flow, int)
    delivered: list[OutboxEffect] = []
    with open_durable(store_url, [Machine(flow)]) as durable:
        server = FlowServer(
            [flow],
            durable,
            delivery=EffectDelivery(delivered.append),
            tracer_provider=provider,
        )

        async def body() -> None:
            async with Client(server.server()) as client:
                started = await call(client, "start", context={"ticket": "T1"}, request_id="r1")
                assert started["ok"] and started["instance_id"]
                iid = started["instance_id"]
                assert (await call(client, "verify", instance_id=iid, ok=True))["ok"]
                refused = await call(client, "refund", instance_id=iid, cents=999999)
                assert refused["error"] == "over_limit"
                refund = await call(client, "refund", instance_id=iid, cents=100, request_id="r2")
                assert refund["ok"]
                assert (await call(client, "status", instance_id=iid, verbose=1))["error"] == (
                    "invalid_arguments"
                )

        anyio.run(body)
    spans = exporter.get_finished_spans()
    tools = [s for s in spans if attrs(s).get("gen_ai.tool.type") == "function"]
    assert [s.name for s in tools] == [
        "execute_tool start",
        "execute_tool verify",
        "execute_tool refund",
        "execute_tool refund",
        "execute_tool status",
    ]
    start, verify, over, refund, status = tools
    iid = attrs(start)["flowc.instance.id"]
    trace_id, root = instance_trace(iid)
    # One instance, one trace: every span of it, tool calls, steps, effects and deliveries.
    assert {s.context.trace_id for s in spans} == {trace_id}
    assert {parent_id(s) for s in tools} == {root}
    assert attrs(start) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "start",
        "gen_ai.tool.type": "function",
        "gen_ai.tool.call.id": "r1",  # the call's request_id
        "flowc.instance.id": iid,
        "flowc.state": "UNVERIFIED",
    }
    assert "gen_ai.tool.call.id" not in attrs(verify)  # the call gave none
    assert attrs(refund)["gen_ai.tool.call.id"] == "r2"
    # The steps a call takes are its children; an emitted effect is its step's child.
    by_parent = {s.context.span_id: [c.name for c in spans if parent_id(c) == s.context.span_id]
                 for s in spans}  # fmt: skip
    assert by_parent[start.context.span_id] == ["invoke_workflow support"]
    assert by_parent[verify.context.span_id] == ["step support"]
    assert by_parent[over.context.span_id] == ["step support"]
    step = next(s for s in spans if parent_id(s) == refund.context.span_id)
    assert by_parent[step.context.span_id] == ["execute_tool issue_refund"]
    # A refusal: its code is the error type, and the call failed for the model.
    assert attrs(over)["error.type"] == "over_limit"
    assert over.status.status_code is StatusCode.ERROR
    assert attrs(status)["error.type"] == "invalid_arguments"
    assert refund.status.status_code is StatusCode.UNSET
    # The outbox's delivery is the instance's, under its root, with the outbox id.
    (delivery,) = [s for s in spans if s.name == "execute_tool issue_refund" and s is not step
                   and parent_id(s) == root]  # fmt: skip
    assert attrs(delivery)["gen_ai.tool.call.id"] == delivered[0].id


def test_a_start_without_ids_and_a_call_from_another_trace(
    tmp_path: Path, provider: TracerProvider, exporter: InMemorySpanExporter
) -> None:
    machine = Machine.from_file(SUPPORT)
    with open_durable(f"sqlite:///{tmp_path / 'flows.db'}", [machine]) as durable:
        dispatcher = ToolDispatcher(durable)
        stop = trace_tool_calls(dispatcher, provider)
        with provider.get_tracer("agent").start_as_current_span("agent turn") as turn:
            started = dispatcher.call("start", {"context": {"ticket": "T2"}})
        unknown = dispatcher.call("no_such_tool", {})
        stop()
        dispatcher.call("status", {"instance_id": started.data["instance_id"]})
    assert not started.is_error
    tool, agent, stray = exporter.get_finished_spans()  # nothing after stop()
    iid = started.data["instance_id"]
    assert isinstance(iid, str)
    # The id the tracer chose ahead is the instance's: its span is in that trace.
    assert (tool.context.trace_id, parent_id(tool)) == instance_trace(iid)
    # The caller's span is in its own trace; a link leads from the call to it.
    assert [link.context.span_id for link in tool.links] == [turn.get_span_context().span_id]
    assert agent.name == "agent turn"
    # No instance to belong to: a trace of its own, the error named.
    assert unknown.is_error and stray.parent is None
    assert attrs(stray)["error.type"] == "unknown_tool"


def test_tracer_provider_says_what_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry.exporter.otlp.proto.http.trace_exporter", None)
    assert "opentelemetry-exporter-otlp" in str(tracer_provider("otlp"))
    monkeypatch.setitem(sys.modules, "opentelemetry.sdk.trace", None)
    assert "OpenTelemetry SDK" in str(tracer_provider("console"))


def test_flowc_mcp_trace_without_the_sdk_is_a_usage_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "opentelemetry.sdk.trace", None)
    assert main(["mcp", str(SUPPORT), "--store", "memory:", "--trace", "console"]) == 2
    assert "--trace console: needs the OpenTelemetry SDK" in capsys.readouterr().err


def test_flowc_mcp_trace_console_writes_spans_to_standard_error(tmp_path: Path) -> None:
    store = f"sqlite:///{tmp_path / 'flows.db'}"
    params = StdioServerParameters(
        command=FLOWC[0],
        args=[*FLOWC[1:], *server_args([SUPPORT], store, "--trace", "console")],
        cwd=str(ROOT),
    )
    errors = tmp_path / "stderr.txt"

    async def body() -> None:
        with errors.open("w") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                result = await session.call_tool(
                    "start", {"context": {"ticket": "T3"}, "request_id": "cli-1"}
                )
                assert not result.is_error

    anyio.run(body)
    text = errors.read_text()
    assert '"name": "execute_tool start"' in text
    assert '"gen_ai.tool.call.id": "cli-1"' in text
    assert '"name": "invoke_workflow support"' in text


__all__ = ["exporter", "provider"]  # fixtures, from tests/span_fixtures.py
