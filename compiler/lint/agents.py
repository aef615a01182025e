"""What a model may set and read (context fields marked `input` / `hidden`, docs/agents.md):
W320, a hidden field that a text shown to models prints; W321, a required field that no tool
can give, in a flow that marks its start inputs."""

from __future__ import annotations

from collections.abc import Iterator

from flowc.compiler.diagnostics import Diagnostic
from flowc.compiler.lint.graph import FlowGraph
from flowc.compiler.lint.usage import context_fields_in_templates
from flowc.compiler.source import NO_SPAN
from flowc.runtime.model import CompiledFlow


def hidden_fields_shown(g: FlowGraph) -> Iterator[Diagnostic]:
    """W320: a `hidden` field that a refusal message, a message or a named template reads:
    those texts reach a model (tool results, prompts), so the field would not be hidden."""
    hidden = {f.name for f in g.flow.context if f.hidden}
    if not hidden:
        return
    for name, text in _shown_texts(g.flow):
        for field in sorted(context_fields_in_templates([text], hidden) & hidden):
            yield Diagnostic.make(
                "W320",
                f"hidden context field `{field}` is printed by {name}, which a model reads",
                g.where.context.get(field, NO_SPAN),
                help="leave the field out of that text, or drop `hidden` if a model may read it",
            )


def required_fields_no_tool_sets(g: FlowGraph) -> Iterator[Diagnostic]:
    """W321: in a flow that marks some field `input`, a required field (no default, not
    optional) that is not `input`: a tool's `start` can never give it, so only a trusted host
    can start the flow."""
    if not any(f.input for f in g.flow.context):
        return
    for f in g.flow.context:
        if f.required and not f.input:
            yield Diagnostic.make(
                "W321",
                f"context field `{f.name}` is required at start but not marked `input`: "
                f"no tool can start the flow",
                g.where.context.get(f.name, NO_SPAN),
                help=f"mark it `input {f.name}`, or give it a default",
            )


def _shown_texts(flow: CompiledFlow) -> Iterator[tuple[str, str]]:
    """The flow's texts a model reads, each with what to call it in a message."""
    for kind, text in flow.messages.items():
        yield f"the `{kind}` message", text
    for name, text in flow.templates.items():
        yield f"the template `{name}` (an MCP prompt)", text
    for t in flow.transitions:
        if t.message:
            yield f"the refusal `{t.code}` of {t.source}", t.message
    for event in flow.events:
        for r in event.requires:
            yield f"the refusal `{r.code}` of `require` on {event.name}", r.message
