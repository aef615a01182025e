"""The type check of child flows: an `invoke`'s arguments, list and `finalize` actions, and
the messages parent and children send each other (`send E(...) to parent|ID`).

A child is compiled before its parent (children.py), so its context, events, done data and
the events it sends `to parent` are known here: the parent passes values that fit the child's
context fields, declares every event the child sends it with the same fields, and sends a
child only events the child declares.
"""

from __future__ import annotations

from flowc.compiler import ast
from flowc.compiler import types as t
from flowc.compiler.resolve import (
    ChildFlow,
    EventInfo,
    FieldInfo,
    done_event,
    suggest,
)
from flowc.compiler.typecheck import Scope, TypeChecker
from flowc.runtime.model import all_actions

PARENT = "parent"

_ARGS_SCOPE = Scope(
    None, "in an invoke's arguments (evaluated when its state has been entered, on no event)"
)


def check_invoke(checker: TypeChecker, invoke: ast.Invoke) -> None:
    scope = _ARGS_SCOPE
    if invoke.each is not None and invoke.item is not None:
        item = checker.local_item(invoke.item, invoke.each, scope, "a fan-out")
        scope = scope.with_local(invoke.item.name, item)
        if invoke.index is not None:
            scope = scope.with_local(invoke.index.name, t.INT)
    site = checker.symbols.invokes.get(invoke.id.name)
    child = site.child if site is not None and site.decl is invoke else None
    if child is None:  # unknown or broken: reported; the values are still checked
        for _, value in invoke.args:
            checker.infer(value, scope)
    else:
        context = child.symbols.context
        owner = f"the context of flow `{child.name}`"
        checker.check_payload(invoke.args, context, owner, invoke.flow.span, scope)
        _check_sent_to_parent(checker, invoke, child)
    if invoke.into:
        ty = checker._target_type(invoke.into)
        if not t.is_any(ty) and not t.assignable(t.STR, ty):
            checker.error(
                "E202",
                f"`into` writes the child's id, a `str`; `{_path(invoke.into)}` is `{ty}`",
                invoke.into[0].span.to(invoke.into[-1].span),
            )
    if invoke.finalize:
        checker.check_actions(invoke.finalize, _finalize_scope(checker, invoke, child))


def _finalize_scope(checker: TypeChecker, invoke: ast.Invoke, child: ChildFlow | None) -> Scope:
    """`finalize` runs when a message from the invoke's children is delivered: its `event.`
    reads a field every such message carries (the done event's, and those the child sends
    `to parent`)."""
    events = checker.symbols.events
    done = events.get(done_event(invoke.id.name))
    if child is None or done is None:
        return Scope(None, "")
    sent = tuple(events[name] for name in sent_to_parent(child) if name in events)
    return Scope(done, also=sent)


def sent_to_parent(child: ChildFlow) -> dict[str, EventInfo]:
    """The events a child flow sends `to parent`, as it declares them, by name."""
    names = dict.fromkeys(
        a.event for a in all_actions(child.flow) if a.to == PARENT and a.event is not None
    )
    events = child.symbols.events
    return {name: events[name] for name in sorted(names) if name in events}


def _check_sent_to_parent(checker: TypeChecker, invoke: ast.Invoke, child: ChildFlow) -> None:
    """E146 for each event the child sends `to parent` that this flow does not declare with
    the same fields, of the same types."""
    events = checker.symbols.events
    for name, sent in sent_to_parent(child).items():
        mine = events.get(name)
        if mine is None:
            checker.error(
                "E146",
                f"flow `{child.name}` sends `{name}` to its parent, which does not declare it",
                invoke.flow.span,
                f"declare it here with the child's fields: `{_signature(name, sent)}` "
                "(`internal event` keeps hosts from sending it)",
            )
        elif _fields(mine) != _fields(sent):
            checker.error(
                "E146",
                f"flow `{child.name}` sends `{_signature(name, sent)}` to its parent, which "
                f"declares `{_signature(name, mine)}`",
                invoke.flow.span,
                "a parent declares the events its children send it with the same fields, "
                "of the same types",
            )


def check_message(checker: TypeChecker, action: ast.SendAction, scope: Scope) -> None:
    """`send E(...) to parent|ID`: at once (no `after`, E145), to the parent (E declared
    here, its payload checked as `raise` does, and remembered for the parent's check) or to
    the children of invoke ID (E declared by the child, its payload checked against it)."""
    target = action.to
    assert target is not None
    if action.after is not None or action.delay is not None or action.id is not None:
        checker.error(
            "E145",
            "a message to another flow is sent at once: `to` takes no `after` or `as`",
            target.span,
            "schedule an event to this flow (`send E after 5s`) that sends the message",
        )
    symbols = checker.symbols
    if target.name == PARENT:
        checker._check_raise(ast.RaiseAction(action.event, action.payload, action.span), scope)
        return
    site = symbols.invokes.get(target.name)
    if site is None:
        checker.error(
            "E145",
            f"`{target.name}` is neither `parent` nor the id of an invoke of this flow",
            target.span,
            suggest(target.name, [PARENT, *symbols.invokes])
            or "send to `parent`, or to the id an invoke is named with (`as ID`)",
        )
    elif site.child is not None:
        child = site.child
        info = child.symbols.events.get(action.event.name)
        if info is None:
            checker.error(
                "E146",
                f"flow `{child.name}` declares no event `{action.event.name}`",
                action.event.span,
                suggest(action.event.name, child.symbols.events)
                or "a child receives only the events it declares",
            )
        else:
            owner = f"event `{action.event.name}` of flow `{child.name}`"
            checker.check_payload(action.payload, info.params, owner, action.span, scope)
            return
    for _, value in action.payload:
        checker.infer(value, scope)


def _fields(info: EventInfo) -> dict[str, t.Ty]:
    return {name: f.ty for name, f in info.params.items()}


def _signature(name: str, info: EventInfo) -> str:
    fields = ", ".join(f"{n}: {_type(f)}" for n, f in info.params.items())
    return f"event {name}({fields})" if fields else f"event {name}"


def _type(info: FieldInfo) -> str:
    return str(info.ty)


def _path(path: tuple[ast.Ident, ...]) -> str:
    return ".".join(i.name for i in path)
