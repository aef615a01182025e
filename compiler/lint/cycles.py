"""Cycle rules: E304 routing cycle, W307 `back` edge that does not lead back, W308 unbounded loop.

What counts as a loop that needs bounding (W308) is a decision, documented in
docs/diagnostics.md: only cycles the runtime would go round *by itself* — timer and routing
edges — are considered. A cycle that needs an event or a direct request at each turn is driven
by the host (a user retrying, an edit/review round trip, seed 001's backward phases) and is
bounded by whoever drives it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, cast

from flowc.compiler.diagnostics import Diagnostic
from flowc.compiler.lint.graph import AUTOMATIC_KINDS, ROUTING_KINDS, FlowGraph
from flowc.runtime.model import Transition

if TYPE_CHECKING:
    import networkx as nx


def routing_cycles(g: FlowGraph) -> Iterator[Diagnostic]:
    """E304: choice states that can route into each other in a circle.

    A choice state is evaluated the moment it is entered, inside the same step, so a cycle of
    routing edges is a loop inside one step that nothing outside can interrupt. Whether guards
    would eventually break it is not decidable in general; routing is required to be acyclic.
    """
    routing = _edge_graph(
        t
        for t in g.live_transitions
        if t.kind in ROUTING_KINDS and g.states[t.source].kind == "choice"
    )
    if routing is None:
        return
    for component in _cyclic_components(routing):
        yield _cycle_diagnostic(
            g,
            routing,
            component,
            "E304",
            "routing cycle {cycle}: choice states route as soon as they are entered, so an "
            "instance could go round it forever within one step",
            "make one of these transitions lead to a state that waits for an event",
        )


def unbounded_loops(g: FlowGraph) -> Iterator[Diagnostic]:
    """W308: a loop of timer (and routing) edges none of which has a guard.

    Nothing has to happen for such a loop to go round again, and no condition can stop it, so
    an instance that enters it cycles for ever unless an event takes it out. `else` counts as
    a condition (it is taken only while the choice guards fail), and loops of only routing
    edges are E304.
    """
    auto = _edge_graph(
        t
        for t in g.live_transitions
        if t.kind in AUTOMATIC_KINDS and t.kind != "else" and g.unconditional(t)
    )
    if auto is None:
        return
    for component in _cyclic_components(auto):
        has_timer = any(
            t.kind == "timer"
            for u, v, data in auto.subgraph(component).edges(data=True)
            for t in data["ts"]
        )
        if not has_timer:
            continue  # a pure routing loop: E304
        if g.hierarchical and _left_by_eventless_rule(g, component):
            continue  # a guarded `always` rule (of a state or an ancestor) ends the loop
        yield _cycle_diagnostic(
            g,
            auto,
            component,
            "W308",
            "unbounded loop {cycle}: none of its transitions has a guard, so once entered it "
            "repeats for ever unless an event takes the instance out",
            "bound it with a counter, e.g. `after 1h if reminders < 3 -> ... do reminders += 1`, "
            "and add a way out when the limit is reached",
            prefer="timer",
        )


def _left_by_eventless_rule(g: FlowGraph, component: set[str]) -> bool:
    """Whether a state of the loop, or one of its ancestors, has a live `always` rule leading
    out of the loop: it is tried after every microstep, so its guard is the loop's bound."""
    for name in component:
        for holder in (name, *g.ancestors(name)):
            for t in g.outgoing.get(holder, ()):
                if t.kind == "always" and t.index not in g.dead and g.dest(t) not in component:
                    return True
    return False


def back_edges_not_back(g: FlowGraph) -> Iterator[Diagnostic]:
    """W307: a `back` edge whose target does not come before its source.

    "Before" is judged on the forward graph (every edge that can fire, `back` edges excluded):
    the target must be able to reach the source.
    """
    back = [t for t in g.live_transitions if t.back and g.target(t) != t.source]
    if not back:
        return
    leads_back = _leads_back(g, back)
    seen: set[tuple[int, int]] = set()
    for t in back:
        if leads_back(t):
            continue
        if t.inherited:
            if (t.line, t.column) in seen:
                continue
            seen.add((t.line, t.column))
        target = g.target(t)
        yield Diagnostic.make(
            "W307",
            f"`back` edge from `{t.source}` to `{target}` does not lead back: `{target}` does not "
            f"come before `{t.source}` on any forward path from `{g.flow.initial}`",
            g.transition_span(t),
            help="`back` edges need `force` at run time; if this is a step forward, drop `back`",
        )


#: Up to this many distinct back targets, one walk per target beats the condensation.
_WALKS_LIMIT = 4


def _leads_back(g: FlowGraph, back: list[Transition]) -> Callable[[Transition], bool]:
    sources_of: dict[str, set[str]] = defaultdict(set)
    for t in back:
        sources_of[g.dest(t)].add(t.source)

    if len(sources_of) <= _WALKS_LIMIT:
        return _leads_back_by_walks(g, sources_of)
    return _leads_back_by_condensation(g, sources_of)


def _leads_back_by_walks(
    g: FlowGraph, sources_of: dict[str, set[str]]
) -> Callable[[Transition], bool]:
    """`_leads_back` for a few targets: walk forward from each target until every state it
    should lead back from is seen."""
    succ = g.forward.succ
    ok: set[tuple[str, str]] = set()
    for target, sources in sources_of.items():
        wanted = set(sources)
        seen = {target}
        stack = [target]
        while stack and wanted:
            for nxt in succ[stack.pop()]:
                if nxt not in seen:
                    seen.add(nxt)
                    wanted.discard(nxt)
                    stack.append(nxt)
        ok.update((s, target) for s in sources - wanted)
    return lambda t: (t.source, g.dest(t)) in ok


def _leads_back_by_condensation(
    g: FlowGraph, sources_of: dict[str, set[str]]
) -> Callable[[Transition], bool]:
    """`_leads_back` for many targets: one pass over the condensation of the forward graph in
    topological order, carrying one bit per target ("this target can reach here"): linear in
    the graph times targets / 64."""
    forward = g.forward
    component_of = forward.components()
    count = len(set(component_of.values()))
    downstream: list[set[int]] = [set() for _ in range(count)]
    for u, v in forward.edges():
        cu, cv = component_of[u], component_of[v]
        if cu != cv:
            downstream[cu].add(cv)
    waiting = [0] * count
    for nexts in downstream:
        for c in nexts:
            waiting[c] += 1
    bit = {target: 1 << i for i, target in enumerate(sources_of)}
    reached = [0] * count
    for target, mask in bit.items():
        reached[component_of[target]] |= mask
    ready = [c for c in range(count) if waiting[c] == 0]
    while ready:
        c = ready.pop()
        for d in downstream[c]:
            reached[d] |= reached[c]
            waiting[d] -= 1
            if waiting[d] == 0:
                ready.append(d)

    def check(t: Transition) -> bool:
        return bool(reached[component_of[t.source]] & bit[g.dest(t)])

    return check


# ---- helpers ------------------------------------------------------------------------------


def _edge_graph(transitions: Iterable[Transition]) -> nx.DiGraph | None:
    """The graph of `transitions` (each edge keeps its transitions as `ts`); None without any.
    networkx is imported here, not at the top: most flows have no edges for these rules, and
    the import is a tenth of a second of a `flowc check`."""
    found = [(t, target) for t in transitions if (target := FlowGraph.target(t)) is not None]
    if not found:
        return None
    import networkx as nx

    graph = nx.DiGraph()
    for t, target in found:
        if graph.has_edge(t.source, target):
            graph[t.source][target]["ts"].append(t)
        else:
            graph.add_edge(t.source, target, ts=[t])
    return graph


def _cyclic_components(graph: nx.DiGraph) -> Iterator[set[str]]:
    import networkx as nx

    for component in nx.strongly_connected_components(graph):
        if len(component) > 1:
            yield component
        else:
            (node,) = component
            if graph.has_edge(node, node):
                yield component


def _cycle_diagnostic(
    g: FlowGraph,
    graph: nx.DiGraph,
    component: set[str],
    code: str,
    message: str,
    help_text: str,
    prefer: str | None = None,
) -> Diagnostic:
    order = {s.name: i for i, s in enumerate(g.flow.states)}
    first = min(component, key=lambda n: order.get(n, len(order)))
    import networkx as nx

    sub = graph.subgraph(component)
    edges = nx.find_cycle(sub, source=first)
    names = [edges[0][0]] + [v for _, v in edges]
    shown = names if len(names) <= 8 else [*names[:4], "…", *names[-2:]]
    cycle = " -> ".join(f"`{n}`" if n != "…" else n for n in shown)
    on_cycle: list[Transition] = [t for u, v in edges for t in sub[u][v]["ts"]]
    preferred = [t for t in on_cycle if t.kind == prefer]
    transition = (preferred or on_cycle)[0]
    return Diagnostic.make(
        code, message.format(cycle=cycle), g.transition_span(transition), help=help_text
    )


def raise_loops(g: FlowGraph) -> Iterator[Diagnostic]:
    """W317: rules that raise each other's events round a loop, none with a guard.

    A raised event is taken in the same step (run to completion), so such a loop never lets the
    step end: the runtime refuses it when it passes `Limits.max_microsteps`. An edge goes from
    a rule to the rule its raised event takes in the state it leads to: the first rule for that
    event there (the state's own, then its ancestors'), when that rule has no guard. Raises
    inside an `if` are conditional and not followed.
    """
    if not _raises_any(g):  # most flows raise nothing: no need to index every rule by its event
        return
    edges = _raise_edges(g)
    if not edges:
        return
    import networkx as nx  # here, not at the top: most flows raise nothing round a loop

    graph = nx.DiGraph(edges)
    by_index = {t.index: t for t in g.live_transitions}
    for component in _cyclic_components(graph):
        chain = [by_index[i] for i in sorted(cast("set[int]", component))]
        words = ", ".join(f"`on {t.event}` in `{t.source}`" for t in chain)
        yield Diagnostic.make(
            "W317",
            f"raise loop: {words} raise each other's events and none has a guard, so the step "
            "never ends (the runtime refuses it at the microstep bound)",
            g.transition_span(chain[0]),
            help="give one of these rules a guard that a raise changes, or raise the event "
            "only under a condition (`if ... { raise ... }`)",
        )


def _raise_edges(g: FlowGraph) -> list[tuple[int, int]]:
    """An edge from each unguarded event rule to the unguarded rule its raised event takes in
    the state it leads to (the first rule for the event there, its ancestors' after its own)."""
    by_event: dict[tuple[str, str], list[Transition]] = {}
    for t in g.live_transitions:
        if t.kind == "event" and t.event is not None:
            by_event.setdefault((t.source, t.event), []).append(t)
    edges: list[tuple[int, int]] = []
    for t in g.live_transitions:
        if t.kind != "event" or t.guard is not None:
            continue
        dest = g.dest(t)
        raised = [a.event for a in t.actions if a.op == "raise" and a.event]
        if t.target != "self" or t.reenter:
            raised += [a.event for a in g.states[dest].entry if a.op == "raise" and a.event]
        for event in raised:
            first = next(
                (
                    found[0]
                    for holder in (dest, *g.ancestors(dest))
                    if (found := by_event.get((holder, event)))
                ),
                None,
            )
            if first is not None and first.guard is None:
                edges.append((t.index, first.index))
    return edges


def _raises_any(g: FlowGraph) -> bool:
    """Whether some live rule or entry block raises an event (at its top level: raises inside
    an `if` are not followed). Loops, not `any(...)`: every rule of a large flow is asked."""
    for t in g.live_transitions:
        for a in t.actions:
            if a.op == "raise":
                return True
    for state in g.flow.states:
        for a in state.entry:
            if a.op == "raise":
                return True
    return False
