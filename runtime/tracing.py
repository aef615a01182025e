"""OpenTelemetry spans for durable instances: `trace_flows(flows)` (docs/observability.md).

An observer attached from outside: it wraps the `start`, `send`, `goto` and `back` of one
`DurableFlows` object, follows the timer steps its workers commit (`subscribe`) and the effects
it delivers (`on_effect`), and records

- `invoke_workflow FLOW` for a start, and `step FLOW` for every step tried, with the flow, its
  version, the instance, the event, the source and target states, the rules taken and, for a
  refusal, its code (`flowc.refusal.code`, `error.type`);
- `execute_tool EFFECT` for every effect a step emitted and every delivery of one, with the
  GenAI semantic conventions (`gen_ai.operation.name`, `gen_ai.tool.name`,
  `gen_ai.tool.call.id`: the outbox id, the same at each delivery).

Every span of an instance is in one trace, whatever process records it and however long the
instance lives: the trace id is derived from the instance id, and each span's parent is the
instance's own (virtual) root span, whose id is derived the same way. Nothing is stored.

Only `opentelemetry-api` is needed (`flowc[otel]`); without an SDK configured, the spans cost
next to nothing and go nowhere.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from flowc.runtime.instance import StepResult
from flowc.runtime.rejections import Rejection
from flowc.runtime.store.types import OutboxEffect, effect_id

if TYPE_CHECKING:
    from opentelemetry.trace import Span, Tracer, TracerProvider

    from flowc.runtime.store.durable import DurableFlows, DurableOutcome

#: The instrumentation scope's name.
SCOPE = "flowc"


def instance_trace(instance_id: str) -> tuple[int, int]:
    """The trace id and the root span id of an instance's trace (never zero)."""
    digest = hashlib.sha256(instance_id.encode("utf-8")).digest()
    trace_id = int.from_bytes(digest[:16], "big") or 1
    span_id = int.from_bytes(digest[16:24], "big") or 1
    return trace_id, span_id


def trace_flows(
    flows: DurableFlows, tracer_provider: TracerProvider | None = None
) -> Callable[[], None]:
    """Record spans for what `flows` does from now on; returns a function that stops it."""
    from opentelemetry import trace

    tracer = trace.get_tracer(SCOPE, tracer_provider=tracer_provider)
    observer = _Observer(flows, tracer)
    originals = {name: getattr(flows, name) for name in ("start", "send", "goto", "back")}
    flows.start = observer.start  # type: ignore[method-assign]
    flows.send = observer.wrap(originals["send"], "event")  # type: ignore[method-assign]
    flows.goto = observer.wrap(originals["goto"], "goto")  # type: ignore[method-assign]
    flows.back = observer.wrap(originals["back"], "back")  # type: ignore[method-assign]
    unsubscribe = flows.subscribe(observer.committed)
    handler = flows.on_effect
    if handler is not None:
        flows.on_effect = observer.delivering(handler)

    def stop() -> None:
        for name in originals:
            delattr(flows, name)  # the class's methods again
        unsubscribe()
        flows.on_effect = handler

    return stop


class _Observer:
    def __init__(self, flows: DurableFlows, tracer: Tracer) -> None:
        self.flows = flows
        self.tracer = tracer
        self._start = flows.start

    @contextmanager
    def span(self, name: str, instance_id: str, **attributes: Any) -> Iterator[Span]:
        from opentelemetry import trace
        from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

        trace_id, root = instance_trace(instance_id)
        parent = NonRecordingSpan(
            SpanContext(trace_id, root, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED))
        )
        context = trace.set_span_in_context(parent)
        with self.tracer.start_as_current_span(name, context=context) as span:
            span.set_attribute("flowc.instance.id", instance_id)
            for key, value in attributes.items():
                if value is not None:
                    span.set_attribute(key, value)
            yield span

    def start(self, flow: str, context: Mapping[str, Any] | None = None, **kw: Any) -> Any:
        kw["id"] = kw.get("id") or uuid.uuid4().hex  # the trace needs it before the start
        attributes = {"gen_ai.operation.name": "invoke_workflow", "flowc.flow": flow}
        with self.span(f"invoke_workflow {flow}", kw["id"], **attributes) as span:
            outcome: DurableOutcome = self._start(flow, context, **kw)
            self._describe(span, outcome)
        return outcome

    def wrap(self, method: Callable[..., DurableOutcome], kind: str) -> Callable[..., Any]:
        def traced(instance_id: str, *args: Any, **kw: Any) -> DurableOutcome:
            event = args[0] if kind == "event" and args else kw.get("event")
            with self.span("step", instance_id, **{"flowc.step.kind": kind}) as span:
                if kind == "event":
                    span.set_attribute("flowc.event", str(event))
                outcome = method(instance_id, *args, **kw)
                self._describe(span, outcome)
                if outcome.record is not None:
                    span.update_name(f"step {outcome.record.flow}")
            return outcome

        return traced

    def committed(self, instance_id: str, step: StepResult) -> None:
        """Timer steps (the wrapped calls record the others)."""
        if step.kind != "timer":
            return
        record = self.flows.store.load(instance_id)
        attributes = {"flowc.step.kind": "timer", "flowc.flow": record.flow,
                      "flowc.flow.version": record.flow_version}  # fmt: skip
        with self.span(f"step {record.flow}", instance_id, **attributes) as span:
            self._step(span, instance_id, record.incarnation, step)

    def delivering(self, handler: Callable[[OutboxEffect], object]) -> Callable[..., object]:
        def deliver(effect: OutboxEffect) -> object:
            with self.span(
                f"execute_tool {effect.effect}",
                effect.instance_id,
                **_tool(effect.effect, effect.id),
                **{"flowc.step.seq": effect.seq},
            ):
                return handler(effect)

        return deliver

    def _describe(self, span: Span, outcome: DurableOutcome) -> None:
        record = outcome.record
        if record is not None:
            span.set_attribute("flowc.flow", record.flow)
            span.set_attribute("flowc.flow.version", record.flow_version)
        span.set_attribute("flowc.outcome", outcome.status)
        result = outcome.result
        if result is None and outcome.ok and "state" in outcome.data:  # a start
            span.set_attribute("flowc.step.target", str(outcome.data["state"]))
            span.set_attribute("flowc.step.seq", int(outcome.data.get("seq") or 0))
        if isinstance(result, StepResult):
            incarnation = outcome.record.incarnation if outcome.record else None
            self._step(span, outcome.instance_id, incarnation, result)
        elif isinstance(result, Rejection):
            span.set_attribute("flowc.refusal.code", result.code)
            span.set_attribute("error.type", result.code)
            span.set_attribute("flowc.step.source", result.state or "")

    def _step(
        self, span: Span, instance_id: str, incarnation: str | None, step: StepResult
    ) -> None:
        span.set_attribute("flowc.step.seq", step.seq)
        span.set_attribute("flowc.step.source", step.source or "")
        span.set_attribute("flowc.step.target", step.target)
        span.set_attribute("flowc.step.configuration", list(step.configuration))
        if step.rules_taken is not None:
            span.set_attribute("flowc.rules_taken", list(step.rules_taken))
        for index, fx in enumerate(step.effects):
            call_id = effect_id(instance_id, incarnation, step.seq, index)
            with self.tracer.start_as_current_span(
                f"execute_tool {fx['effect']}", attributes=_tool(fx["effect"], call_id)
            ) as child:
                child.set_attribute("flowc.effect.emitted", True)


def _tool(name: str, call_id: str) -> dict[str, Any]:
    return {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "gen_ai.tool.call.id": call_id,
        "gen_ai.tool.type": "extension",
    }


__all__ = ["SCOPE", "instance_trace", "trace_flows"]
