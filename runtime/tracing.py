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

`trace_tool_calls(dispatcher)` does the same for the tool calls a `ToolDispatcher` runs (the
calls `flowc mcp` serves): `execute_tool TOOL` for each, in the trace of the instance it acts
on, with the refusal code as `error.type`; the steps it takes are its children.

Every span of an instance is in one trace, whatever process records it and however long the
instance lives: the trace id is derived from the instance id, and each span's parent is the
instance's own (virtual) root span, whose id is derived the same way, or a span of that trace
current at its start (a traced tool call's). Nothing is stored.

Only `opentelemetry-api` is needed (`flowc[otel]`); without an SDK configured, the spans cost
next to nothing and go nowhere.
"""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from flowc.runtime.rejections import Rejection
from flowc.runtime.steps import StepResult
from flowc.runtime.store.types import OutboxEffect, effect_id
from flowc.runtime.tools import HANDLE, REQUEST_ID

if TYPE_CHECKING:
    from opentelemetry.context import Context
    from opentelemetry.trace import Span, Tracer, TracerProvider

    from flowc.runtime.store.durable import DurableFlows, DurableOutcome
    from flowc.runtime.tool_calls import ToolDispatcher, ToolResult

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
    def span(
        self, name: str, instance_id: str, attributes: Mapping[str, Any], *, nest: bool = True
    ) -> Iterator[Span]:
        """A span in the instance's trace: a child of the current span when that is in the
        same trace and `nest` (a step a traced tool call takes), else of the root."""
        with self.tracer.start_as_current_span(
            name, context=_parent(instance_id, nest=nest)
        ) as span:
            span.set_attribute("flowc.instance.id", instance_id)
            for key, value in attributes.items():
                if value is not None:
                    span.set_attribute(key, value)
            yield span

    def start(self, flow: str, context: Mapping[str, Any] | None = None, **kw: Any) -> Any:
        kw["id"] = kw.get("id") or uuid.uuid4().hex  # the trace needs it before the start
        attributes = {"gen_ai.operation.name": "invoke_workflow", "flowc.flow": flow}
        with self.span(f"invoke_workflow {flow}", kw["id"], attributes) as span:
            outcome: DurableOutcome = self._start(flow, context, **kw)
            self._describe(span, outcome)
        return outcome

    def wrap(self, method: Callable[..., DurableOutcome], kind: str) -> Callable[..., Any]:
        def traced(instance_id: str, *args: Any, **kw: Any) -> DurableOutcome:
            event = args[0] if kind == "event" and args else kw.get("event")
            with self.span("step", instance_id, {"flowc.step.kind": kind}) as span:
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
        with self.span(f"step {record.flow}", instance_id, attributes) as span:
            self._step(span, instance_id, record.incarnation, step)

    def delivering(self, handler: Callable[[OutboxEffect], object]) -> Callable[..., object]:
        def deliver(effect: OutboxEffect) -> object:
            with self.span(
                f"execute_tool {effect.effect}",
                effect.instance_id,
                {**_tool(effect.effect, effect.id), "flowc.step.seq": effect.seq},
                nest=False,  # a delivery is the outbox's, whichever call happens to run it
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


def trace_tool_calls(
    dispatcher: ToolDispatcher, tracer_provider: TracerProvider | None = None
) -> Callable[[], None]:
    """Record a span for every tool call `dispatcher` runs from now on; returns a function
    that stops it. With `trace_flows` on the same `DurableFlows`, the steps a call takes are
    children of its span."""
    from opentelemetry import trace

    tracer = trace.get_tracer(SCOPE, tracer_provider=tracer_provider)
    untraced = dispatcher.call

    def call(
        name: str, arguments: Mapping[str, Any] | None = None, *, strict: bool = False
    ) -> ToolResult:
        arguments, instance_id = _planned_instance(dispatcher, name, arguments)
        context = _parent(instance_id, nest=False) if instance_id is not None else None
        # The caller's span (an MCP SDK's `tools/call`, an agent's turn) is in another trace:
        # a link keeps the way from it to the instance's.
        caller = trace.get_current_span().get_span_context()
        links = [trace.Link(caller)] if caller.is_valid and context is not None else None
        attributes = _tool(name, None)
        attributes["gen_ai.tool.type"] = "function"
        call_id = arguments.get(REQUEST_ID) if isinstance(arguments, Mapping) else None
        if isinstance(call_id, str) and call_id:
            attributes["gen_ai.tool.call.id"] = call_id
        with tracer.start_as_current_span(
            f"execute_tool {name}", context=context, attributes=attributes, links=links
        ) as span:
            result = untraced(name, arguments, strict=strict)
            _describe_call(span, result, instance_id)
        return result

    dispatcher.call = call  # type: ignore[method-assign]

    def stop() -> None:
        del dispatcher.call  # the class's method again

    return stop


def _planned_instance(
    dispatcher: ToolDispatcher, name: str, arguments: Mapping[str, Any] | None
) -> tuple[Any, str | None]:
    """The arguments to run and the instance they act on, known before the call so that its
    span is in that instance's trace. A `start` that names no instance and gives no
    `request_id` is given a random `instance_id`, as the runtime would choose one."""
    from flowc.runtime.tool_calls import start_id

    tool = dispatcher.tools.get(name)
    if tool is None or not isinstance(arguments, Mapping):
        return arguments, None
    chosen, request_id = arguments.get(HANDLE), arguments.get(REQUEST_ID)
    if isinstance(chosen, str) and chosen:
        return arguments, chosen
    if tool.op != "start" or chosen is not None:
        return arguments, None
    if isinstance(request_id, str) and request_id:
        return arguments, start_id(tool.flow, request_id)
    if request_id is not None:
        return arguments, None
    instance_id = uuid.uuid4().hex
    return {**arguments, HANDLE: instance_id}, instance_id


def _describe_call(span: Span, result: ToolResult, instance_id: str | None) -> None:
    from opentelemetry.trace import StatusCode

    found = result.data.get(HANDLE)
    if isinstance(found, str):
        instance_id = found
    if instance_id is not None:
        span.set_attribute("flowc.instance.id", instance_id)
    state = result.data.get("state")
    if isinstance(state, str):
        span.set_attribute("flowc.state", state)
    if result.is_error:
        code = str(result.data.get("error") or "tool_error")
        span.set_attribute("error.type", code)
        span.set_attribute("flowc.refusal.code", code)
        # The call failed for the model that made it (an `isError` result).
        span.set_status(StatusCode.ERROR, str(result.data.get("message") or code))


def _parent(instance_id: str, *, nest: bool) -> Context | None:
    """The context to start an instance's span in: the current one when its span is in the
    instance's trace and `nest`, else the instance's (never recorded) root span."""
    from opentelemetry import trace
    from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

    trace_id, root = instance_trace(instance_id)
    if nest and trace.get_current_span().get_span_context().trace_id == trace_id:
        return None
    parent = NonRecordingSpan(
        SpanContext(trace_id, root, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED))
    )
    return trace.set_span_in_context(parent)


def _tool(name: str, call_id: str | None) -> dict[str, Any]:
    attributes: dict[str, Any] = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "gen_ai.tool.type": "extension",
    }
    if call_id is not None:
        attributes["gen_ai.tool.call.id"] = call_id
    return attributes


__all__ = ["SCOPE", "instance_trace", "trace_flows", "trace_tool_calls"]
