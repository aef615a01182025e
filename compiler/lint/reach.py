"""Reachability rules: W301 unreachable state, W302 no way out, W303 no final state reachable."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

from flowc.compiler.diagnostics import Diagnostic
from flowc.compiler.lint.graph import FlowGraph


def unreachable_states(g: FlowGraph) -> Iterator[Diagnostic]:
    """W301: no path of transitions that can fire leads from the initial state to the state."""
    reachable = g.reachable
    if len(reachable) == len(g.states):
        return
    incoming: dict[str, list[str]] = defaultdict(list)
    for t in g.flow.transitions:
        target = g.target(t)
        if target is not None and target != t.source and target not in reachable:
            incoming[target].append(t.source)
    for state in g.flow.states:
        if state.name in reachable or state.parent is not None:
            continue  # a nested state: W314
        sources = incoming.get(state.name, [])
        if not sources:
            why = "no transition leads to it"
            help_text = f"add a transition to `{state.name}`, or remove the state"
        elif any(s in reachable for s in sources):
            why = "the transitions that lead to it can never fire"
            help_text = "see the warnings on those transitions (shadowed or constant false)"
        else:
            why = "the states that lead to it are unreachable too"
            help_text = f"connect {_names(sorted(set(sources)))} to the rest of the flow"
        yield Diagnostic.make(
            "W301",
            f"state `{state.name}` can never be reached from `{g.flow.initial}`: {why}",
            g.state_span(state),
            help=help_text,
        )


def dead_ends(g: FlowGraph) -> Iterator[Diagnostic]:
    """W302: a state that is not final but has no transition that can take it elsewhere."""
    for state in g.flow.states:
        if state.kind in ("final", "compound", "parallel", "history"):
            continue  # an instance rests in atomic states only
        if g.successors(state.name) - {state.name}:
            continue
        if any(g.states[a].kind == "parallel" for a in g.ancestors(state.name)):
            # A region that rests in one state is not stuck: its sibling regions go on (a
            # region that keeps its parallel state from completing is W315's).
            continue
        own = g.outgoing.get(state.name, [])
        if not own:
            detail = "it has no transitions"
        elif all(g.target(t) in (None, state.name) for t in own):
            detail = "its transitions only stay in it or refuse"
        else:
            detail = "none of its transitions to other states can fire"
        yield Diagnostic.make(
            "W302",
            f"state `{state.name}` is not final but has no way out ({detail}): "
            "an instance that gets there is stuck",
            g.state_span(state),
            help=f"add a transition out of `{state.name}`, or declare it `final state`",
        )


def cannot_finish(g: FlowGraph) -> Iterator[Diagnostic]:
    """W303: a reachable state from which no final state can be reached.

    Dead ends (W302) and unreachable states (W301) are left to their own rules so that one
    mistake gives one warning. A flow without any final state gets a single warning on its
    initial state instead of one per state.
    """
    finals = [g.states[name] for name in g.finals]
    if not finals:
        initial = g.states.get(g.flow.initial)
        if initial is not None:
            yield Diagnostic.make(
                "W303",
                "the flow has no final state, so no instance can ever finish",
                g.state_span(initial),
                help="declare the state where the work ends as `final state`; if instances are "
                "meant to live forever, say so with `# flowc: allow W303` on this line",
            )
        return
    can_finish = g.can_finish
    reachable = g.reachable
    for state in g.flow.states:
        name = state.name
        if name in can_finish or name not in reachable or state.kind == "history":
            continue
        parent = g.parent.get(name)
        if parent is not None and parent not in can_finish:
            continue  # one warning, on the outermost state that cannot finish
        compound = state.kind in ("compound", "parallel")
        if not compound and not g.successors(name) - {name}:
            continue  # W302 already says it is stuck
        yield Diagnostic.make(
            "W303",
            f"no final state can be reached from `{name}`: every path from it stays among "
            "states that never finish",
            g.state_span(state),
            help=f"add a transition towards {_names([s.name for s in finals][:3])} "
            "(or a way to cancel) on this loop",
        )


def _names(names: list[str]) -> str:
    quoted = [f"`{n}`" for n in names]
    if len(quoted) <= 1:
        return "".join(quoted)
    return ", ".join(quoted[:-1]) + " or " + quoted[-1]


def unreachable_descendants(g: FlowGraph) -> Iterator[Diagnostic]:
    """W314: a state inside a compound or parallel state that is never entered: entering its
    parent enters only the initial child (a parallel state: every region), so any other child
    needs a transition, a history, or a descendant that leads to it."""
    if not g.hierarchical:
        return
    reachable = g.reachable
    for state in g.flow.states:
        parent = state.parent
        if parent is None or state.name in reachable:
            continue
        if parent not in reachable:
            continue  # the parent's own warning says it all
        if state.kind == "history":
            why = "no transition targets this history"
            help_text = f"target it (`-> {state.name}`) to resume `{parent}`, or remove it"
        else:
            why = "it is not the initial child and no transition that can fire leads to it"
            help_text = f"add a transition to `{state.name}`, or remove the state"
        yield Diagnostic.make(
            "W314",
            f"state `{state.name}` inside `{parent}` can never be entered: {why}",
            g.state_span(state),
            help=help_text,
        )
