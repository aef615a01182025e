"""OpenTelemetry spans of durable instances (`flowc.runtime.tracing`), recorded with the SDK's
in-memory exporter, on SQLite and PostgreSQL."""

from __future__ import annotations

import re
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from span_fixtures import exporter, provider

from flowc.runtime import FakeClock, Machine
from flowc.runtime.store import OutboxEffect, open_store
from flowc.runtime.store.durable import DurableFlows
from flowc.runtime.tracing import instance_trace, trace_flows


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return {k: (list(v) if isinstance(v, tuple) else v) for k, v in (span.attributes or {}).items()}


def test_spans_of_a_run_steps_refusals_effects_and_timers_share_one_trace(
    shared_store_url: str,
    clock: FakeClock,
    ticket: Machine,
    exporter: InMemorySpanExporter,
    provider: TracerProvider,
) -> None:
    delivered: list[OutboxEffect] = []
    store = open_store(shared_store_url, clock=clock)
    with DurableFlows(store, [ticket], clock=clock, on_effect=delivered.append) as flows:
        stop = trace_flows(flows, provider)
        flows.start("ticket", {"customer": "ann"}, id="a")
        flows.send("a", "triage", {"priority": "HIGH"})
        flows.send("a", "resolve_now")  # refused: no such event
        flows.send("a", "reply", {"text": "hello"})
        clock.advance(3 * 3600)
        flows.worker().run_once()  # WAITING's timer fires
        stop()
        flows.send("a", "note", {"text": "untraced"})
    spans = exporter.get_finished_spans()
    names = [s.name for s in spans]
    assert names == [
        "invoke_workflow ticket",
        "step ticket",
        "step ticket",
        "execute_tool mail",  # delivered through on_effect, right after the commit
        "execute_tool mail",  # emitted by the reply step (its child)
        "step ticket",
        "step ticket",
    ]
    run, triage, refused, delivery, emitted, reply, timer = spans
    assert attrs(emitted)["flowc.effect.emitted"] is True
    trace_id, root = instance_trace("a")
    assert {s.context.trace_id for s in spans} == {trace_id}
    assert all(s.parent is not None for s in spans)
    assert {s.parent.span_id for s in spans if s is not emitted} == {root}  # type: ignore[union-attr]
    assert emitted.parent.span_id == reply.context.span_id  # type: ignore[union-attr]
    assert attrs(run)["gen_ai.operation.name"] == "invoke_workflow"
    assert attrs(run)["flowc.step.target"] == "NEW"
    assert attrs(triage) | {"flowc.step.configuration": None} == {
        "flowc.instance.id": "a",
        "flowc.step.kind": "event",
        "flowc.event": "triage",
        "flowc.flow": "ticket",
        "flowc.flow.version": 1,
        "flowc.outcome": "committed",
        "flowc.step.seq": 1,
        "flowc.step.source": "NEW",
        "flowc.step.target": "OPEN",
        "flowc.step.configuration": None,
        "flowc.rules_taken": [0],  # every step, flat too, names the rules it took
    }
    assert attrs(refused)["flowc.refusal.code"] == "unknown_event"
    assert attrs(refused)["error.type"] == "unknown_event"
    for tool in (emitted, delivery):
        assert attrs(tool)["gen_ai.operation.name"] == "execute_tool"
        assert attrs(tool)["gen_ai.tool.name"] == "mail"
        # The outbox's id of the effect: instance, incarnation, step 2, first effect.
        assert attrs(tool)["gen_ai.tool.call.id"] == delivered[0].id
    assert len(delivered) == 1
    assert re.fullmatch(r"a/[0-9a-f]+/2/0", delivered[0].id)
    assert (attrs(timer)["flowc.step.kind"], attrs(timer)["flowc.step.target"]) == ("timer", "OPEN")


__all__ = ["exporter", "provider"]  # fixtures, from tests/span_fixtures.py
