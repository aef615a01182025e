"""The transition graph of one flow, built once and shared by every lint rule.

It works out which transitions can never fire (a constant false guard, or an earlier rule on
the same trigger that always matches first) and leaves them out, so reachability is judged on
what can really happen. The graph is kept as one `Digraph` of the forward edges (the one the
cycle analyses need) plus the few `back` edges beside it: building a second graph with them
would cost as much as all the rules together on a 50,000-state flow.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Hashable, Iterable, Iterator
from dataclasses import dataclass, field
from functools import cached_property
from operator import attrgetter

from flowc.compiler.lint.fold import constant_guard
from flowc.compiler.lint.timers import Starving, find_starved
from flowc.compiler.source import SourceFile, Span
from flowc.compiler.sourcemap import SourceMap
from flowc.runtime.model import CompiledFlow, State, Transition
from flowc.runtime.statetree import StateTree

#: Kinds the runtime takes on its own, with no call from the host.
AUTOMATIC_KINDS = frozenset({"choice", "else", "timer"})
#: Kinds that route a choice state the moment it is entered.
ROUTING_KINDS = frozenset({"choice", "else"})


class Digraph:
    """A directed graph as networkx keeps one (`succ` and `pred`: node -> its neighbours, as
    dict keys in the order the edges were added), without networkx: importing it is a tenth of
    a second, and its views as much again on a 10,000-state flow. The cycle rules that need
    its algorithms build their own (small) networkx graphs."""

    __slots__ = ("pred", "succ")

    def __init__(self, nodes: Iterable[str]) -> None:
        self.succ: dict[str, dict[str, None]] = {name: {} for name in nodes}
        self.pred: dict[str, dict[str, None]] = {name: {} for name in self.succ}

    def add_edges_from(self, pairs: list[tuple[str, str]]) -> None:
        succ, pred = self.succ, self.pred
        for u, v in pairs:
            if u not in succ:
                succ[u], pred[u] = {}, {}
            if v not in succ:
                succ[v], pred[v] = {}, {}
            succ[u][v] = None
            pred[v][u] = None

    def edges(self) -> Iterator[tuple[str, str]]:
        for u, nexts in self.succ.items():
            for v in nexts:
                yield u, v

    def components(self) -> dict[str, int]:
        """Each node's strongly connected component, numbered from 0 (Tarjan's algorithm,
        without recursion: a path may be as long as the flow)."""
        tarjan = _Tarjan(self.succ)
        for root in self.succ:
            if root not in tarjan.index:
                tarjan.visit(root)
        return tarjan.component_of


class _Tarjan:
    """The state of one run of Tarjan's algorithm over `succ`."""

    __slots__ = ("component_of", "count", "index", "low", "on_stack", "stack", "succ")

    def __init__(self, succ: dict[str, dict[str, None]]) -> None:
        self.succ = succ
        self.component_of: dict[str, int] = {}
        self.index: dict[str, int] = {}
        self.low: dict[str, int] = {}
        self.stack: list[str] = []
        self.on_stack: set[str] = set()
        #: components found so far
        self.count = 0

    def _open(self, node: str) -> Iterator[str]:
        self.index[node] = self.low[node] = len(self.index)
        self.stack.append(node)
        self.on_stack.add(node)
        return iter(self.succ[node])

    def visit(self, root: str) -> None:
        index, low, on_stack = self.index, self.low, self.on_stack
        work = [(root, self._open(root))]
        while work:
            node, nexts = work[-1]
            for nxt in nexts:
                if nxt not in index:
                    work.append((nxt, self._open(nxt)))
                    break
                if nxt in on_stack and index[nxt] < low[node]:
                    low[node] = index[nxt]
            else:
                work.pop()
                if work and low[node] < low[work[-1][0]]:
                    low[work[-1][0]] = low[node]
                if low[node] == index[node]:
                    self._close(node)

    def _close(self, node: str) -> None:
        """`node` roots a component: it and the nodes above it on the stack."""
        number = self.count
        self.count += 1
        while True:
            member = self.stack.pop()
            self.on_stack.discard(member)
            self.component_of[member] = number
            if member == node:
                break


@dataclass(frozen=True, slots=True)
class Shadowing:
    """`transition` can never fire because of the earlier `by` on the same trigger.

    `duplicate` is set when `by` has the very same guard (W306) rather than none at all (W305).
    """

    transition: Transition
    by: Transition
    duplicate: bool
    #: Set when no single rule beats `transition` but the earlier guards `X == MEMBER` on its
    #: trigger name every member of X's enum between them (`by` is one of those rules): the
    #: enum's name.
    exhausted: str | None = None


@dataclass
class FlowGraph:
    flow: CompiledFlow
    source: SourceFile
    #: Where states, rules and declarations were written (from lowering).
    where: SourceMap
    states: dict[str, State] = field(init=False)
    #: Outgoing transitions per state, in the order the runtime tries them.
    outgoing: dict[str, list[Transition]] = field(init=False)
    #: Guard value of every transition whose guard is constant (by `index`).
    constant: dict[int, bool] = field(init=False)
    shadowed: list[Shadowing] = field(init=False)
    #: Timers that a shorter one always beats out of their state (W319).
    starved: list[Starving] = field(init=False)
    #: Indices of transitions that can never fire.
    dead: set[int] = field(init=False)
    #: Every transition that has a target and can fire, in `index` order.
    live_transitions: list[Transition] = field(init=False)
    #: The states joined by live transitions that are not `back` edges.
    forward: Digraph = field(init=False)
    #: Live `back` edges: source -> targets (not in `forward` unless also a forward edge).
    back: dict[str, set[str]] = field(init=False)
    #: Whether any state has a parent (compound or parallel states: IR version 2). A flat flow
    #: is analysed exactly as before; the hierarchy adds the moves below to reachability.
    hierarchical: bool = field(init=False)
    #: state -> its parent, for nested states
    parent: dict[str, str] = field(init=False)
    #: Moves that entering a state makes by itself: a compound state enters its initial child,
    #: a parallel state each region, a history its default (or its parent's initial children).
    #: Kept out of `forward`: they are not transitions, and would make every compound a cycle.
    entering: dict[str, set[str]] = field(init=False)

    def __post_init__(self) -> None:
        flow = self.flow
        self.states = {s.name: s for s in flow.states}
        self.outgoing = defaultdict(list)
        ordered = sorted(flow.transitions, key=attrgetter("index"))
        for t in ordered:
            self.outgoing[t.source].append(t)
        self.constant = {}
        # Lowering shares identical expressions between rules: fold each one once.
        folded: dict[int, bool | None] = {}
        for t in ordered:
            if t.guard is not None:
                key = id(t.guard)
                if key not in folded:
                    folded[key] = constant_guard(t.guard)
                value = folded[key]
                if value is not None:
                    self.constant[t.index] = value
        self.shadowed = self._find_shadowing()
        self.dead = {i for i, v in self.constant.items() if v is False}
        self.dead.update(s.transition.index for s in self.shadowed)
        self.parent = {st.name: st.parent for st in flow.states if st.parent is not None}
        self.starved = find_starved(self.outgoing, self.parent, self.unconditional, self.dead)
        self.dead.update(s.timer.index for s in self.starved)
        self.live_transitions = [
            t for t in ordered if t.target is not None and t.index not in self.dead
        ]
        forward = Digraph(self.states)
        pairs: list[tuple[str, str]] = []
        self.back = defaultdict(set)
        for t in self.live_transitions:
            target = t.target if t.target != "self" else t.source
            assert target is not None
            if t.back:
                self.back[t.source].add(target)
            else:
                pairs.append((t.source, target))
        forward.add_edges_from(pairs)
        self.forward = forward
        self.hierarchical = bool(self.parent)
        self.entering = self._entering() if self.hierarchical else {}

    def _entering(self) -> dict[str, set[str]]:
        tree = self.tree
        found: dict[str, set[str]] = {}
        for st in self.flow.states:
            name = st.name
            parent = tree.parent(name)
            if st.kind == "history" and parent is not None:
                found[name] = {st.default} if st.default else self._entered(parent)
            elif st.kind in ("compound", "parallel"):
                # an initial rule's targets are entered too (with what lies between, which the
                # initial children lead to)
                found[name] = self._entered(name) | set(st.initial_targets)
        return found

    def _entered(self, name: str) -> set[str]:
        """The children entering `name` enters by default: every region of a parallel
        state, a compound's initial child."""
        tree = self.tree
        if tree.kind(name) == "parallel":
            return set(tree.regions(name))
        first = tree.initial_child(name)
        return {first} if first is not None else set()

    @cached_property
    def tree(self) -> StateTree:
        """Which state holds which (runtime/statetree.py); built only for a hierarchical
        flow, and leniently (a graph may be built of IR that was never loaded)."""
        return StateTree.of_states(self.flow.states, lenient=True)

    def ancestors(self, name: str) -> tuple[str, ...]:
        """The states enclosing `name`, innermost first (none in a flat flow)."""
        return self.tree.ancestors(name) if self.hierarchical else ()

    def descendants(self, name: str) -> set[str]:
        return set(self.tree.descendants(name))

    @cached_property
    def finals(self) -> list[str]:
        """The states where an instance ends: final states at the top level (a nested final
        state completes its parent instead)."""
        return [s.name for s in self.flow.states if s.kind == "final" and s.parent is None]

    # ---- facts shared by several rules ----------------------------------------------------

    @staticmethod
    def target(t: Transition) -> str | None:
        if t.target == "self":
            return t.source
        return t.target

    @staticmethod
    def dest(t: Transition) -> str:
        """The target of a transition known to have one (every one in `live_transitions`)."""
        target = FlowGraph.target(t)
        if target is None:
            raise ValueError(f"transition {t.index} has no target")
        return target

    def unconditional(self, t: Transition) -> bool:
        """Always enabled once tried: no guard (other than `else`) or a constant true one."""
        if t.kind == "else":
            return True
        return t.guard is None or self.constant.get(t.index) is True

    def successors(self, name: str) -> set[str]:
        """Where the live transitions of `name` lead (itself included for self-loops); in a
        hierarchy, those of the states enclosing it too (their rules apply in it)."""
        found = set(self.forward.succ[name])
        found.update(self.back.get(name, ()))
        for ancestor in self.ancestors(name):
            found.update(self.forward.succ[ancestor])
            found.update(self.back.get(ancestor, ()))
        return found

    def _moves(self) -> dict[str, set[str]]:
        """Every move one state can lead to another by: live transitions, entering a compound
        or parallel state or a history, and (in a hierarchy) from a state to its parent, which
        is active with it and whose rules apply in it."""
        moves: dict[str, set[str]] = defaultdict(set)
        for name in self.states:
            moves[name].update(self.forward.succ[name])
            moves[name].update(self.back.get(name, ()))
        for name, entered in self.entering.items():
            moves[name].update(entered)
        for name, parent in self.parent.items():
            moves[name].add(parent)
        return moves

    @cached_property
    def reachable(self) -> set[str]:
        """States some sequence of live transitions leads to from the initial state."""
        start = self.flow.initial
        if start not in self.states:
            return set()
        if self.hierarchical:
            return _walk([start], self._moves())
        succ = self.forward.succ
        back = self.back
        seen = {start}
        stack = [start]
        while stack:
            node = stack.pop()
            for nxt in (*succ[node], *back.get(node, ())):
                if nxt not in seen:
                    seen.add(nxt)
                    stack.append(nxt)
        return seen

    @cached_property
    def can_finish(self) -> set[str]:
        """States from which some final state can be reached (finals included)."""
        if self.hierarchical:
            backwards: dict[str, set[str]] = defaultdict(set)
            for name, nexts in self._moves().items():
                for nxt in nexts:
                    backwards[nxt].add(name)
            return _walk(self.finals, backwards)
        before: dict[str, list[str]] = defaultdict(list)
        for source, targets in self.back.items():
            for target in targets:
                before[target].append(source)
        pred = self.forward.pred
        finals = [s.name for s in self.flow.states if s.kind == "final"]
        seen = set(finals)
        # One multi-source walk backwards instead of one per final state.
        stack = list(finals)
        while stack:
            node = stack.pop()
            for prev in (*pred[node], *before.get(node, ())):
                if prev not in seen:
                    seen.add(prev)
                    stack.append(prev)
        return seen

    # ---- positions ------------------------------------------------------------------------

    def transition_span(self, t: Transition) -> Span:
        return self.where.transition(t.index)

    def state_span(self, state: State) -> Span:
        """The state's name where it is declared."""
        return self.where.state(state.name)

    # ---- shadowing ------------------------------------------------------------------------

    def _find_shadowing(self) -> list[Shadowing]:
        found: list[Shadowing] = []
        cases = _EnumCases(self.flow)
        for transitions in self.outgoing.values():
            rules = _RulesOfState(cases, self.unconditional)
            for t in transitions:
                shadowing = rules.shadowing(t)
                if shadowing is not None:
                    found.append(shadowing)
        return found


class _RulesOfState:
    """One state's rules, tried in order: which triggers an earlier rule already closes (it
    always matches, or the earlier `X == MEMBER` guards name every member of X's enum), and
    the guards seen so far on each trigger."""

    __slots__ = (
        "cases",
        "closed",
        "exhausted",
        "fingerprints",
        "guarded",
        "named",
        "unconditional",
    )

    def __init__(self, cases: _EnumCases, unconditional: Callable[[Transition], bool]) -> None:
        self.cases = cases
        self.unconditional = unconditional
        #: trigger -> the earlier rule after which no rule on it can fire
        self.closed: dict[Hashable, Transition] = {}
        #: trigger -> the enum whose members the earlier guards on it named, all of them
        self.exhausted: dict[Hashable, str] = {}
        #: trigger -> subject (a context or payload field of enum type) -> members named by
        #: earlier `subject == MEMBER` guards, and the state's own rule among them if any
        self.named: dict[Hashable, dict[Hashable, tuple[set[str], Transition]]] = {}
        # Guards are compared only between rules on the same trigger, and fingerprinted only
        # once a trigger has a second guarded rule: most never do.
        self.guarded: dict[Hashable, list[Transition]] = {}
        self.fingerprints: dict[Hashable, dict[str, Transition]] = {}

    def shadowing(self, t: Transition) -> Shadowing | None:
        """Why `t` can never fire (None: it may); records what `t` itself closes."""
        key = _trigger(t)
        if key in self.closed:
            return Shadowing(t, self.closed[key], False, self.exhausted.get(key))
        if t.guard is not None and t.kind != "else":
            if self._exhausts(t, key):
                return None
            duplicate = self._duplicate(t, key)
            if duplicate is not None:
                return duplicate
        if self.unconditional(t):
            self.closed[key] = t
        return None

    def _exhausts(self, t: Transition, key: Hashable) -> bool:
        """Whether `t`'s guard `subject == MEMBER` names the last member of the enum not
        named by the earlier guards on its trigger (which closes the trigger)."""
        case = self.cases.of(t)
        if case is None:
            return False
        subject, member, enum = case
        members, by = self.named.setdefault(key, {}).get(subject, (set(), t))
        members = members | {member}
        # Report against the state's own rule when there is one: an inherited rule beaten
        # by a state's rules is the intended override (lint stays quiet).
        by = by if by.inherited is False else t
        self.named[key][subject] = (members, by)
        if members >= self.cases.members(enum):
            self.closed[key], self.exhausted[key] = by, enum
            return True
        return False

    def _duplicate(self, t: Transition, key: Hashable) -> Shadowing | None:
        """An earlier rule on the same trigger with the very same guard (W306)."""
        earlier = self.guarded.setdefault(key, [])
        if earlier:
            seen = self.fingerprints.get(key)
            if seen is None:
                seen = self.fingerprints[key] = {}
                for e in earlier:
                    seen.setdefault(_fingerprint(e), e)
            mine = _fingerprint(t)
            if mine in seen:
                return Shadowing(t, seen[mine], duplicate=True)
            seen[mine] = t
        earlier.append(t)
        return None


def _walk(starts: list[str], moves: dict[str, set[str]]) -> set[str]:
    seen = set(starts)
    stack = list(starts)
    while stack:
        for nxt in moves.get(stack.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                stack.append(nxt)
    return seen


class _EnumCases:
    """Reads guards of the form `field == MEMBER` (either way round) on a context or payload
    field whose type is an enum: together, such guards on one trigger may name every member,
    and then no later rule on that trigger can fire."""

    def __init__(self, flow: CompiledFlow) -> None:
        self._members = {e.name: frozenset(e.members) for e in flow.enums}
        self._context = {f.name: f.type.name for f in flow.context if f.type.kind == "enum"}
        self._payloads = {
            ev.name: {f.name: f.type.name for f in ev.fields if f.type.kind == "enum"}
            for ev in flow.events
        }

    def members(self, enum: str) -> frozenset[str]:
        return self._members.get(enum, frozenset())

    def of(self, t: Transition) -> tuple[Hashable, str, str] | None:
        """(subject, member, enum) when `t`'s guard is `subject == MEMBER`."""
        guard = t.guard
        if guard is None or guard.op != "==" or len(guard.args) != 2:
            return None
        left, right = guard.args
        if left.op == "lit":
            left, right = right, left
        if right.op != "lit" or not isinstance(right.value, str):
            return None
        if left.op == "ctx":
            enum = self._context.get(str(left.value))
        elif left.op == "event" and t.event is not None:
            enum = self._payloads.get(t.event, {}).get(str(left.value))
        else:
            return None
        if enum is None or right.value not in self.members(enum):
            return None
        return (left.op, left.value), right.value, enum


def _fingerprint(t: Transition) -> str:
    assert t.guard is not None
    return t.guard.model_dump_json()


def _trigger(t: Transition) -> Hashable:
    """Transitions compete with each other only when they answer the same trigger."""
    if t.kind in ("event", "reject"):
        return ("event", t.event)
    if t.kind == "direct":
        return ("direct", FlowGraph.target(t))
    if t.kind == "timer":
        if t.after_expr is not None:
            # A computed delay is known only at run time: it competes with no other timer
            # (the lints that compare delays need constant ones).
            return ("computed timer", t.index)
        return ("timer", t.after_ms)
    return ("route",)
