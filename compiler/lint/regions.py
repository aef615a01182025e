"""Completion and parallel regions: W315 a `done.state` event that is never raised, W316 two
regions of one parallel state writing one context field on the same event."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator

from flowc.compiler.diagnostics import Diagnostic
from flowc.compiler.lint.graph import FlowGraph
from flowc.runtime.model import Action, State, Transition

_DONE = "done.state."


def never_completes(g: FlowGraph) -> Iterator[Diagnostic]:
    """W315: a rule waits for `done.state.X`, but X cannot complete: a compound state none of
    whose final children can be reached from its initial child, or a parallel state one of
    whose regions is in that case (or is an atomic state that is not final)."""
    if not g.hierarchical:
        return
    waited: dict[str, Transition] = {}
    for t in g.flow.transitions:
        if t.event is not None and t.event.startswith(_DONE):
            waited.setdefault(t.event[len(_DONE) :], t)
    for name, rule in waited.items():
        state = g.states.get(name)
        if state is None:
            continue
        if state.kind == "parallel":
            stuck = [r for r in _children(g, name) if not _can_complete(g, r)]
        else:
            stuck = [] if _can_complete(g, state) else [state]
        for region in stuck:
            what = f"region `{region.name}`" if region is not state else f"`{name}`"
            yield Diagnostic.make(
                "W315",
                f"`{rule.event}` is never raised: {what} can never reach a final child",
                g.transition_span(rule),
                help=f"add a `final state` inside `{region.name}` and a transition to it"
                if region.kind != "normal"
                else f"make `{region.name}` a compound state with a final child",
            )


def _children(g: FlowGraph, name: str) -> list[State]:
    return [s for s in g.flow.states if s.parent == name and s.kind != "history"]


def _can_complete(g: FlowGraph, state: State) -> bool:
    """Whether a final child of `state` can be reached from where entering it starts, moving
    only among its descendants (a parallel state: whether every region can complete)."""
    if state.kind == "final":
        return True
    if state.kind == "parallel":
        return all(_can_complete(g, r) for r in _children(g, state.name))
    if state.kind != "compound":
        return False
    inside = g.descendants(state.name)
    seen: set[str] = set(g.entering.get(state.name, ()))
    stack = list(seen)
    while stack:
        node = stack.pop()
        nexts = set(g.forward.succ[node]) | g.back.get(node, set())
        nexts |= g.entering.get(node, set())
        for nxt in nexts & inside:
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return any(g.states[n].kind == "final" and g.states[n].parent == state.name for n in seen)


def shared_writes(g: FlowGraph) -> Iterator[Diagnostic]:
    """W316: in one parallel state, rules of two regions on the same event both write a context
    field. Both are taken in the same microstep, so the field ends with whichever region comes
    last in the document: an order the reader of either region cannot see. Only rules that stay
    inside their region count: one that leaves it exits the other regions too, so the two would
    conflict and only the first be taken."""
    if not g.hierarchical:
        return
    for parallel in (s for s in g.flow.states if s.kind == "parallel"):
        # event -> field -> (region, first rule writing it)
        writers: dict[str, dict[str, tuple[str, Transition]]] = defaultdict(dict)
        for region in _children(g, parallel.name):
            inside = {region.name} | g.descendants(region.name)
            mine: dict[tuple[str, str], Transition] = {}
            for t in g.flow.transitions:
                if t.source not in inside or t.event is None or t.kind != "event":
                    continue
                if g.target(t) not in inside:
                    continue
                for field in _written(t.actions):
                    mine.setdefault((t.event, field), t)
            for (event, field), t in mine.items():
                first = writers[event].get(field)
                if first is None:
                    writers[event][field] = (region.name, t)
                    continue
                yield Diagnostic.make(
                    "W316",
                    f"regions `{first[0]}` and `{region.name}` of `{parallel.name}` both write "
                    f"`{field}` on `{event}`: in one step, the later region's value wins",
                    g.transition_span(t),
                    help="let one region own the field, or write it in a rule on "
                    f"`{parallel.name}` itself",
                )


def _written(actions: Iterable[Action]) -> Iterator[str]:
    for action in actions:
        if action.target:
            yield action.target[0]
        for branch in action.branches:
            yield from _written(branch.actions)
