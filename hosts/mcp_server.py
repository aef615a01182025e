"""`flowc mcp`: flows served to agent hosts over the Model Context Protocol.

The tools are `flowc.runtime.tools.FlowTools` (a fixed list: MCP asks that `tools/list` not vary
with state or connection) and every call runs through `flowc.runtime.tool_calls.ToolDispatcher`
on durable instances, so two clients on one instance lose nothing and a retried `request_id`
runs once. Refusals and bad arguments come back as `isError` results the model can act on.

Resources: each flow's diagram (`flowc://flows/NAME/diagram.svg`, `.../diagram.mmd`) and
reference page (`.../docs.md`), and each instance's snapshot, full history and diagram with its
current state and path highlighted (`flowc://instances/ID/...`). Prompts: the flow's
`template`s, rendered with an instance's context.

Built on the official `mcp` SDK (the `flowc[mcp]` extra), imported only here.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import threading
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio
import anyio.abc
import anyio.to_thread
import jinja2
import jinja2.meta
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.shared.exceptions import MCPError

from flowc.compiler.emit.dot import GraphvizMissing, render, to_dot
from flowc.compiler.emit.labels import Highlight
from flowc.compiler.emit.markdown import to_markdown
from flowc.compiler.emit.mermaid import to_mermaid
from flowc.compiler.emit.snapshot import snapshot_highlight
from flowc.runtime.machine import Machine
from flowc.runtime.model import CompiledFlow
from flowc.runtime.scheduled_view import visible_scheduled
from flowc.runtime.store.durable import DurableFlows
from flowc.runtime.store.handles import InvalidHandle
from flowc.runtime.store.types import InstanceNotFound, Json, OutboxEffect
from flowc.runtime.tool_calls import ToolDispatcher
from flowc.runtime.tools import HANDLE, FlowTools, visible_context
from flowc.runtime.tracing import trace_flows, trace_tool_calls

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider

SCHEME = "flowc"
#: JSON-RPC's "invalid params": a resource or prompt asked for something that does not exist.
_INVALID_PARAMS = -32602
_INTERNAL_ERROR = -32603

_FLOW_RESOURCES = {
    "diagram.svg": ("image/svg+xml", "diagram (SVG)"),
    "diagram.mmd": ("text/vnd.mermaid", "diagram (Mermaid)"),
    "docs.md": ("text/markdown", "reference page"),
}
_INSTANCE_RESOURCES = {
    "snapshot.json": ("application/json", "snapshot: state, context, pending timers"),
    "history.json": ("application/json", "every step taken, oldest first"),
    "diagram.svg": ("image/svg+xml", "diagram, current state and path highlighted (SVG)"),
    "diagram.mmd": ("text/vnd.mermaid", "diagram, current state and path highlighted (Mermaid)"),
}

INSTRUCTIONS = """\
Each tool acts on a workflow instance. Call `{start}` first with the initial `context`; its \
result holds the `instance_id` every other tool takes. Every result names the state the \
instance is in and `allowed_tools`, the tools it accepts now. A refused call comes back as an \
error that says why (`error`, `message`) and what is allowed instead; bad arguments come back \
with field-level `issues`. Pass a `request_id` to make a call safe to retry.\
"""


class EffectDelivery:
    """`flowc mcp --effects`: hands the outbox's effects to the host's `handler` after each
    commit, at least once, each with its stable `OutboxEffect.id`. A handler that raises leaves
    the effect (and the ones after it) in the outbox; the server retries them with a growing
    pause, and `status` shows them with their attempts and last error."""

    def __init__(self, handler: Callable[[OutboxEffect], object]) -> None:
        self.handler = handler
        #: effect id -> (attempts that raised, the last error)
        self.failures: dict[str, tuple[int, str]] = {}
        self._lock = threading.Lock()

    def __call__(self, effect: OutboxEffect) -> object:
        try:
            result = self.handler(effect)
        except Exception as exc:
            with self._lock:
                attempts = self.failures.get(effect.id, (0, ""))[0] + 1
                self.failures[effect.id] = (attempts, f"{type(exc).__name__}: {exc}"[:500])
            raise
        with self._lock:
            self.failures.pop(effect.id, None)
        return result

    def pending(self, durable: DurableFlows, instance_id: str) -> dict[str, Json]:
        """What `status` adds: the instance's effects not yet delivered."""
        waiting: list[Json] = []
        for effect in durable.store.pending_effects(limit=_PENDING_SHOWN):
            if effect.instance_id != instance_id:
                continue
            attempts, error = self.failures.get(effect.id, (0, None))
            waiting.append(
                {
                    "id": effect.id,
                    "effect": effect.effect,
                    "attempts": attempts,
                    "last_error": error,
                }
            )
        return {"effects_pending": waiting}

    async def retry(self, durable: DurableFlows) -> None:
        """Deliver what is left in the outbox now (a crash or a stop left it there), then
        again and again while some delivery fails: 1 s after a failure, doubling to 60 s."""
        pause = _RETRY_FIRST
        while True:
            await anyio.to_thread.run_sync(durable.deliver_effects)
            failing = bool(self.failures)
            pause = min(pause * 2, _RETRY_MAX) if failing else _RETRY_FIRST
            await anyio.sleep(pause if failing else _RETRY_IDLE)


#: how long `EffectDelivery.retry` waits after a failed delivery (doubling), and between checks
#: of an outbox whose last delivery worked (effects committed by another process sharing it)
_RETRY_FIRST = 0.5
_RETRY_MAX = 60.0
_RETRY_IDLE = 5.0
_PENDING_SHOWN = 1000


@dataclass(frozen=True, slots=True)
class FlowPrompt:
    """A flow's `template` offered as an MCP prompt."""

    name: str
    flow: str
    template: str
    #: the template's free variables besides `context` and `state`
    variables: tuple[str, ...]


class FlowServer:
    """The MCP server of some flows, on the instances kept by `durable`."""

    def __init__(
        self,
        flows: Sequence[CompiledFlow],
        durable: DurableFlows,
        *,
        prefix: bool | None = None,
        name: str = "flowc",
        delivery: EffectDelivery | None = None,
        tracer_provider: TracerProvider | None = None,
    ) -> None:
        """`tracer_provider`: record OpenTelemetry spans of every tool call, step and effect
        with it (`flowc.runtime.tracing`, docs/observability.md)."""
        self.compiled = {f.name: f for f in flows}
        self.durable = durable
        self.tools = FlowTools(durable.flows.machines(), prefix=prefix)
        self.delivery = delivery
        if delivery is not None:
            durable.on_effect = delivery
        self.dispatcher = ToolDispatcher(
            durable,
            self.tools,
            on_status=(lambda i: delivery.pending(durable, i)) if delivery is not None else None,
        )
        if tracer_provider is not None:  # after `on_effect` is set: its deliveries are traced
            trace_flows(durable, tracer_provider)
            trace_tool_calls(self.dispatcher, tracer_provider)
        self.prompts = {p.name: p for p in self._flow_prompts()}
        self.name = name

    # -- the SDK server -----------------------------------------------------------------------

    def server(self) -> Server[Any]:
        start = [t.name for t in self.tools.tools if t.op == "start"]
        return Server(
            self.name,
            version=_version(),
            instructions=INSTRUCTIONS.format(start=" / ".join(start)),
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_list_resources=self._list_resources,
            on_list_resource_templates=self._list_resource_templates,
            on_read_resource=self._read_resource,
            on_list_prompts=self._list_prompts,
            on_get_prompt=self._get_prompt,
        )

    async def run_stdio(self) -> None:
        server = self.server()
        async with anyio.create_task_group() as tasks:
            self._start_delivery(tasks)
            async with stdio_streams() as (read, write):
                await server.run(read, write, server.create_initialization_options())
            tasks.cancel_scope.cancel()

    async def run_http(self, host: str, port: int, path: str = "/mcp") -> None:
        import uvicorn

        app = self.server().streamable_http_app(streamable_http_path=path, host=host)
        config = uvicorn.Config(app, host=host, port=port, log_level="warning")
        async with anyio.create_task_group() as tasks:
            self._start_delivery(tasks)
            await uvicorn.Server(config).serve()
            tasks.cancel_scope.cancel()

    def _start_delivery(self, tasks: anyio.abc.TaskGroup) -> None:
        if self.delivery is not None:
            tasks.start_soon(self.delivery.retry, self.durable)

    # -- tools --------------------------------------------------------------------------------

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[types.Tool.model_validate(t.mcp()) for t in self.tools.tools]
        )

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        # The store is synchronous (a transaction per step): run it off the event loop, so
        # that one slow step does not hold up the other clients' calls.
        result = await anyio.to_thread.run_sync(
            self.dispatcher.call, params.name, params.arguments or {}
        )
        return types.CallToolResult(
            content=[types.TextContent(text=result.text())],
            structured_content=result.data,
            is_error=result.is_error,
        )

    # -- resources ----------------------------------------------------------------------------

    async def _list_resources(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        resources = []
        for flow in self.compiled.values():
            title = flow.title or flow.name
            for leaf, (mime, what) in _FLOW_RESOURCES.items():
                resources.append(
                    types.Resource(
                        uri=f"{SCHEME}://flows/{flow.name}/{leaf}",
                        name=f"{flow.name}/{leaf}",
                        title=f"{title}: {what}",
                        mime_type=mime,
                    )
                )
        return types.ListResourcesResult(resources=resources)

    async def _list_resource_templates(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(
            resource_templates=[
                types.ResourceTemplate(
                    uri_template=f"{SCHEME}://instances/{{{HANDLE}}}/{leaf}",
                    name=f"instance {leaf}",
                    description=f"An instance's {what}.",
                    mime_type=mime,
                )
                for leaf, (mime, what) in _INSTANCE_RESOURCES.items()
            ]
        )

    async def _read_resource(
        self, ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        text, mime = await anyio.to_thread.run_sync(self.read, uri)
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=uri, mime_type=mime, text=text)]
        )

    def read(self, uri: str) -> tuple[str, str]:
        """The text and MIME type of a resource; `MCPError` for one that does not exist."""
        prefix = f"{SCHEME}://"
        parts = uri[len(prefix) :].split("/") if uri.startswith(prefix) else []
        if len(parts) == 3 and parts[0] == "flows" and parts[2] in _FLOW_RESOURCES:
            flow = self.compiled.get(parts[1])
            if flow is None:
                raise MCPError(_INVALID_PARAMS, f"no flow {parts[1]!r} is served here")
            return self._flow_resource(flow, parts[2]), _FLOW_RESOURCES[parts[2]][0]
        if len(parts) == 3 and parts[0] == "instances" and parts[2] in _INSTANCE_RESOURCES:
            return self._instance_resource(parts[1], parts[2]), _INSTANCE_RESOURCES[parts[2]][0]
        raise MCPError(_INVALID_PARAMS, f"no resource {uri!r}")

    def _flow_resource(self, flow: CompiledFlow, leaf: str, mark: Highlight | None = None) -> str:
        if leaf == "diagram.mmd":
            return to_mermaid(flow, "events", mark)
        if leaf == "diagram.svg":
            try:
                return render(to_dot(flow, "events", mark), "svg").decode("utf-8")
            except GraphvizMissing as exc:
                raise MCPError(_INTERNAL_ERROR, str(exc)) from None
        return to_markdown(flow)

    def _instance_resource(self, instance_id: str, leaf: str) -> str:
        try:
            record = self.durable.store.load(instance_id)
        except (InstanceNotFound, InvalidHandle) as exc:
            raise MCPError(_INVALID_PARAMS, str(exc)) from None
        if leaf == "snapshot.json":
            instance = self.durable.load(instance_id)
            snapshot = instance.snapshot()
            snapshot["context"] = visible_context(instance.machine, snapshot.get("context", {}))
            if "sends" in snapshot:
                snapshot["sends"] = visible_scheduled(instance.machine, snapshot["sends"])
            return json.dumps(snapshot, indent=2)
        rows = self.durable.store.history(instance_id)
        history = [
            {
                "seq": r.seq,
                "at": r.at,
                "source": r.source,
                "target": r.target,
                "trigger": r.trigger,
                "payload": r.payload,
                "reason": r.reason,
            }
            for r in rows
        ]
        if leaf == "history.json":
            return json.dumps(history, indent=2)
        flow = self.compiled.get(record.flow)
        if flow is None:
            raise MCPError(_INVALID_PARAMS, f"instance {instance_id!r} runs a flow not served here")
        snap = {"flow": record.flow, "state": record.state, "history": history}
        if "configuration" in record.snapshot:  # a statechart: every active state is marked
            snap["configuration"] = record.snapshot["configuration"]
        mark = snapshot_highlight(snap)
        return self._flow_resource(flow, leaf, mark)

    # -- prompts ------------------------------------------------------------------------------

    def _flow_prompts(self) -> list[FlowPrompt]:
        parse = jinja2.Environment().parse
        prompts = []
        for machine in self.durable.flows.machines():
            if self.tools.machines.get(machine.name) is not machine:
                continue  # an older version
            for template, source in machine.templates.items():
                free = jinja2.meta.find_undeclared_variables(parse(source))
                prompts.append(
                    FlowPrompt(
                        f"{machine.name}_{template}" if self.tools.prefixed else template,
                        machine.name,
                        template,
                        tuple(sorted(free - {"context", "state"})),
                    )
                )
        return prompts

    async def _list_prompts(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        out = []
        for p in self.prompts.values():
            machine = self.tools.machines[p.flow]
            out.append(
                types.Prompt(
                    name=p.name,
                    description=f"The template {p.template!r} of {machine.title or p.flow!r}, "
                    f"rendered with an instance's context.",
                    arguments=[
                        types.PromptArgument(
                            name=HANDLE, description="The instance to render for.", required=True
                        ),
                        *(
                            types.PromptArgument(
                                name=v,
                                description=_variable_text(machine, v),
                                required=False,
                            )
                            for v in p.variables
                        ),
                    ],
                )
            )
        return types.ListPromptsResult(prompts=out)

    async def _get_prompt(
        self, ctx: ServerRequestContext[Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult:
        text = await anyio.to_thread.run_sync(
            self.render_prompt, params.name, dict(params.arguments or {})
        )
        return types.GetPromptResult(
            description=f"{params.name}, rendered",
            messages=[types.PromptMessage(role="user", content=types.TextContent(text=text))],
        )

    def render_prompt(self, name: str, arguments: dict[str, str]) -> str:
        """A prompt's text. A variable named after another template of the flow, when not
        given, is that template rendered for the instance (seed 003's system prompt takes its
        mode instructions that way)."""
        prompt = self.prompts.get(name)
        if prompt is None:
            raise MCPError(_INVALID_PARAMS, f"no prompt {name!r}")
        instance_id = arguments.pop(HANDLE, None)
        if not instance_id:
            raise MCPError(_INVALID_PARAMS, f"prompt {name!r} needs the argument {HANDLE}")
        unknown = sorted(set(arguments) - set(prompt.variables))
        if unknown:
            raise MCPError(_INVALID_PARAMS, f"prompt {name!r} takes no argument {unknown[0]!r}")
        try:
            instance = self.durable.load(instance_id)
        except (InstanceNotFound, InvalidHandle) as exc:
            raise MCPError(_INVALID_PARAMS, str(exc)) from None
        if instance.machine.name != prompt.flow:
            raise MCPError(_INVALID_PARAMS, f"instance {instance_id!r} is not a {prompt.flow}")
        variables: dict[str, Any] = {}
        for v in prompt.variables:
            if v in arguments:
                variables[v] = arguments[v]
            elif v in instance.machine.templates and v != prompt.template:
                variables[v] = instance.render(v)
        return instance.render(prompt.template, **variables)


@contextlib.asynccontextmanager
async def stdio_streams() -> AsyncIterator[tuple[Any, Any]]:
    """The server's streams over standard input and output, as the SDK's `stdio_server` gives
    them, with two differences. A message is parsed by Python's `json` before the SDK's models
    check it: pydantic's JSON parser stops at 200 levels of nesting, and the SDK drops a line
    it cannot parse without an answer (a client sends arguments nested about 290 deep). And a
    client that stops reading ends the server quietly. While serving, file descriptor 1 points
    at standard error, so that nothing else the process prints (an effect handler's output)
    reaches the protocol; both are restored on exit."""
    from mcp.shared._context_streams import create_context_streams
    from mcp.shared.message import SessionMessage

    sys.stdout.flush()
    saved_out = os.dup(1)
    protocol_out = os.dup(1)
    os.dup2(2, 1)
    reader = anyio.wrap_file(io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace"))
    writer = anyio.wrap_file(os.fdopen(protocol_out, "w", encoding="utf-8"))
    read_in, read_out = create_context_streams[SessionMessage | Exception](0)
    write_in, write_out = create_context_streams[SessionMessage](0)

    async def read_lines() -> None:
        async with read_in:
            async for line in reader:
                try:
                    message = types.jsonrpc_message_adapter.validate_python(
                        json.loads(line), by_name=False
                    )
                except (ValueError, RecursionError) as exc:  # ValidationError is a ValueError
                    await read_in.send(exc)
                    continue
                await read_in.send(SessionMessage(message))

    async def write_lines() -> None:
        async with write_out:
            async for sent in write_out:
                text = sent.message.model_dump_json(by_alias=True, exclude_unset=True)
                try:
                    await writer.write(text + "\n")
                    await writer.flush()
                except OSError:  # a broken pipe: the client stopped reading
                    tasks.cancel_scope.cancel()
                    return

    try:
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(read_lines)
            tasks.start_soon(write_lines)
            yield read_out, write_in
            tasks.cancel_scope.cancel()
    finally:
        with contextlib.suppress(OSError, ValueError):
            await writer.aclose()
        os.dup2(saved_out, 1)
        os.close(saved_out)


def _variable_text(machine: Machine, variable: str) -> str:
    if variable in machine.templates:
        return f"Text for {{{{ {variable} }}}}; default: the template {variable!r} rendered."
    return f"Text for {{{{ {variable} }}}} (empty when not given)."


def _version() -> str:
    from flowc.runtime import __version__

    return __version__


def serve(
    flows: Sequence[CompiledFlow],
    durable: DurableFlows,
    *,
    transport: str = "stdio",
    host: str = "127.0.0.1",
    port: int = 8000,
    path: str = "/mcp",
    prefix: bool | None = None,
    effects: Callable[[OutboxEffect], object] | None = None,
    tracer_provider: TracerProvider | None = None,
) -> None:
    """Run the server until its transport closes (stdio) or it is interrupted (HTTP).
    `effects` delivers the outbox (`EffectDelivery`); `tracer_provider` traces (`FlowServer`)."""
    delivery = EffectDelivery(effects) if effects is not None else None
    server = FlowServer(
        flows, durable, prefix=prefix, delivery=delivery, tracer_provider=tracer_provider
    )
    if transport == "stdio":
        anyio.run(server.run_stdio)
    else:
        anyio.run(server.run_http, host, port, path)


__all__ = ["EffectDelivery", "FlowPrompt", "FlowServer", "serve"]
