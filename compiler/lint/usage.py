"""Declarations nobody uses: W310 event, W311 enum, W312 context field; W323 an internal event
nothing sends.

A context field counts as used when any guard, action (read or write), `require` condition,
refusal data (`with {...}`), entry/exit action, a compound's initial rule or history
default (`initial -> X do ...`, `history H -> X do ...`) or template (messages, journals, named
templates, refusal messages) names it. A field the flow itself never touches — one only the
host sets at start and reads back — is still reported: the flow file is where readers learn
what the data is for, and a one-line `# flowc: allow W312` with a reason says it better than
silence.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from flowc.compiler.diagnostics import Diagnostic
from flowc.compiler.lint.graph import FlowGraph
from flowc.compiler.source import NO_SPAN
from flowc.runtime.model import Action, CompiledFlow, Expr, TypeRef


def unused_events(g: FlowGraph) -> Iterator[Diagnostic]:
    """W310: an event no transition (nor refusal) mentions: sending it is always refused."""
    used = {t.event for t in g.flow.transitions if t.event is not None}
    for event in g.flow.events:
        if event.name in used:
            continue
        yield Diagnostic.make(
            "W310",
            f"event `{event.name}` is declared but no state accepts it",
            g.where.events.get(event.name, NO_SPAN),
            help=f"add `on {event.name} -> ...` where it should be accepted, or remove it",
        )


def unsent_internal_events(g: FlowGraph) -> Iterator[Diagnostic]:
    """W323: an `internal` event no action raises or schedules: only the flow may send it, and
    it never does, so its rules never fire."""
    internal = [e.name for e in g.flow.events if e.internal]
    if not internal:
        return
    sent = {a.event for root in _usage_roots(g.flow) for a in _actions_in(root) if a.event}
    for name in internal:
        if name in sent:
            continue
        yield Diagnostic.make(
            "W323",
            f"internal event `{name}` is never raised or scheduled: only the flow may send it",
            g.where.events.get(name, NO_SPAN),
            help=f"send it from an action (`raise {name}`, `send {name} after 1m`), "
            "or drop `internal` if a host sends it",
        )


def _actions_in(root: Action | Expr) -> Iterator[Action]:
    """`root` and the actions nested in it, when it is an action."""
    stack = [root] if isinstance(root, Action) else []
    while stack:
        action = stack.pop()
        yield action
        stack += [a for b in action.branches for a in b.actions]


def unused_enums(g: FlowGraph) -> Iterator[Diagnostic]:
    """W311: an enum that types no context field, event field or record field."""
    used: set[str] = set()
    for ref in _type_refs(g.flow):
        _collect_type_names(ref, used)
    for enum in g.flow.enums:
        if enum.name in used:
            continue
        yield Diagnostic.make(
            "W311",
            f"enum `{enum.name}` is declared but no field has this type",
            g.where.enums.get(enum.name, NO_SPAN),
            help="use it as the type of a context field or event field, or remove it",
        )


def unused_context_fields(g: FlowGraph) -> Iterator[Diagnostic]:
    """W312: a context field that no guard, action or template reads or writes."""
    fields = {f.name for f in g.flow.context}
    if not fields:
        return
    used = _context_names_used(g.flow, fields)
    if not fields <= used:
        used |= context_fields_in_templates(_templates(g.flow), fields) & fields
    for f in g.flow.context:
        if f.name in used:
            continue
        yield Diagnostic.make(
            "W312",
            f"context field `{f.name}` is never read or written by the flow",
            g.where.context.get(f.name, NO_SPAN),
            help="remove it, or if only the host uses it, say so with "
            "`# flowc: allow W312` and a comment on this line",
        )


# ---- what the flow mentions -----------------------------------------------------------------


def _type_refs(flow: CompiledFlow) -> Iterator[TypeRef]:
    for f in flow.context:
        yield f.type
    for event in flow.events:
        for f in event.fields:
            yield f.type
    for record in flow.records:
        for f in record.fields:
            yield f.type


def _collect_type_names(ref: TypeRef, into: set[str]) -> None:
    while True:
        if ref.name:
            into.add(ref.name)
        if ref.item is None:
            return
        ref = ref.item


def _context_names_used(flow: CompiledFlow, fields: set[str]) -> set[str]:
    """The context fields the flow's guards and actions read or write; the walk stops once
    every one of `fields` is found (in most flows, every field is used, and soon)."""
    used: set[str] = set()
    found = 0
    # Lowering shares identical expressions between rules: each one is walked once.
    seen: set[int] = set()
    for root in _usage_roots(flow):
        # Iterative walk: generated flows can nest expressions deeply.
        stack: list[Action | Expr] = [root]
        while stack:
            node = stack.pop()
            if isinstance(node, Action):
                if node.target:
                    used.add(node.target[0])
                stack.extend(_action_parts(node))
                continue
            if id(node) in seen:
                continue
            seen.add(id(node))
            if node.op == "ctx" and isinstance(node.value, str):
                used.add(node.value)
            stack.extend(node.args)
        if len(used) != found:
            found = len(used)
            if fields <= used:
                break
    return used


def _action_parts(action: Action) -> list[Action | Expr]:
    """The value of an action (a scheduled event's key and delay too), and for an `if`, its
    guards and the actions of every arm."""
    parts: list[Action | Expr] = [
        x for x in (action.value, action.key, action.delay) if x is not None
    ]
    for branch in action.branches:
        if branch.guard is not None:
            parts.append(branch.guard)
        parts.extend(branch.actions)
    return parts


def _usage_roots(flow: CompiledFlow) -> Iterator[Action | Expr]:
    """Every action and top-level expression of the flow, transitions first."""
    for t in flow.transitions:
        if t.guard is not None:
            yield t.guard
        if t.data is not None:
            yield t.data
        if t.after_expr is not None:
            yield t.after_expr
        yield from t.actions
    for state in flow.states:
        yield from state.entry
        yield from state.exit
        # `initial -> X do ...` and a history default's `-> X do ...`: they run on entry too
        yield from state.initial_actions
    for event in flow.events:
        for r in event.requires:
            yield r.guard
            if r.data is not None:
                yield r.data
    for inv in flow.invariants:
        yield inv.expr


def _templates(flow: CompiledFlow) -> Iterator[str]:
    yield from flow.messages.values()
    yield from flow.templates.values()
    for journal in flow.journals:
        yield journal.template
    for t in flow.transitions:
        if t.message:
            yield t.message
    for event in flow.events:
        for r in event.requires:
            yield r.message


def context_fields_in_templates(templates: Iterable[str], fields: set[str]) -> set[str]:
    """The context fields templates read: `context.x` and `context["x"]`; every field when a
    template uses `context` itself (passes it to a filter, loops over it, aliases it)."""
    used: set[str] = set()
    texts = {text for text in templates if "context" in text}
    if not texts:
        return used
    # Imported here: a check of a flow whose templates read no context needs no Jinja2.
    import jinja2
    import jinja2.nodes

    env = jinja2.Environment()
    for text in texts:
        try:
            tree = env.parse(text)
        except jinja2.TemplateSyntaxError:
            continue  # reported by the compiler (E206)
        reads: set[int] = set()
        for node in tree.find_all((jinja2.nodes.Getattr, jinja2.nodes.Getitem)):
            assert isinstance(node, jinja2.nodes.Getattr | jinja2.nodes.Getitem)
            owner = node.node
            if not (isinstance(owner, jinja2.nodes.Name) and owner.name == "context"):
                continue
            if isinstance(node, jinja2.nodes.Getattr):
                used.add(node.attr)
            elif isinstance(node.arg, jinja2.nodes.Const) and isinstance(node.arg.value, str):
                used.add(node.arg.value)
            else:
                return set(fields)  # `context[expression]`: any field
            reads.add(id(owner))
        for name in tree.find_all(jinja2.nodes.Name):
            if name.name == "context" and id(name) not in reads:
                return set(fields)
    return used
