"""The reachable configurations of a flow (state + context), searched breadth-first on the real
runtime: what `flowc paths` and `flowc explore` are built on.

Moves from a configuration: every event the state has a rule for, with payloads built from small
values (`values.py`); every direct target (`goto`); `back` where a backward edge exists;
`advance` to the next timer's deadline; and for each invoke with current children, "they
finish" (its done event, with each payload built as for a host's event) and "they fail" (its
error event, `FAILURE`). A child flow is a black box to the search: it never sends a child an
event of its own; the children run as they would (they start, take the messages and forwarded
events the flow sends them, fire their timers on `advance`), so a generated test replays the
same on the real runtime, and may also finish or fail at any point.
Configurations are deduplicated by state and context, so the search finds the shortest move
sequence to each one (and to each transition it fires).

In a statechart the "state" of a configuration is its set of active leaves and the histories it
has recorded (both decide what later moves do); the moves are those of every active leaf, whose
rules include the ones its ancestors inherit to it.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from flowc.compiler.resolve import done_event, error_event
from flowc.compiler.testing.moves import Move, MoveResult, Player, context_key
from flowc.compiler.testing.values import Payload, ValueSource
from flowc.runtime import FakeClock, Instance, Rejection, StepResult
from flowc.runtime import children as childflows
from flowc.runtime.model import Action, CompiledFlow, Expr

#: The payload of an invoke's error event in the move "its children fail".
FAILURE: Payload = (
    ("kind", "error", '"error"'),
    ("message", "the child failed", '"the child failed"'),
)


@dataclass
class Node:
    """A configuration reached by the search, with the move that first reached it."""

    key: tuple[str, str]
    instance: Instance
    parent: Node | None
    move: Move | None
    depth: int
    #: transitions the move from `parent` took
    fired: tuple[int, ...] = ()

    @property
    def state(self) -> str:
        return self.instance.state

    @property
    def states(self) -> tuple[str, ...]:
        """Every state active here (a statechart's leaves and their ancestors)."""
        return self.instance.configuration

    @property
    def where(self) -> str:
        """The configuration as a reader names it (`configuration_text`)."""
        return configuration_text(self.instance)

    def moves(self) -> list[Move]:
        out: list[Move] = []
        node: Node | None = self
        while node is not None and node.move is not None:
            out.append(node.move)
            node = node.parent
        return out[::-1]


@dataclass
class Reached:
    """How a transition was first taken: from `node` by `move` (a refused move for a `reject`
    rule)."""

    node: Node
    #: None for the routing a start does (an initial choice state)
    move: Move | None
    outcome: StepResult | Rejection | None

    def moves(self) -> list[Move]:
        return [*self.node.moves(), *([self.move] if self.move is not None else [])]


@dataclass
class Search:
    flow: CompiledFlow
    given: dict[str, Any]
    nodes: dict[tuple[str, str], Node] = field(default_factory=dict)
    #: transition index -> how it was first taken
    transitions: dict[int, Reached] = field(default_factory=dict)
    #: configurations where no move was accepted (non-final states only)
    stuck: list[Node] = field(default_factory=list)
    #: (node, invariant names) for each configuration that breaks an invariant
    violations: list[tuple[Node, list[str]]] = field(default_factory=list)
    start_refused: Rejection | None = None
    moves_played: int = 0
    seconds: float = 0.0
    complete: bool = True  # False when a bound stopped the search


class Explorer:
    """Plays moves on one flow; `search` runs a bounded breadth-first search from a start
    context."""

    def __init__(self, flow: CompiledFlow, *, payloads_per_event: int = 32) -> None:
        self.flow = flow
        self.player = Player(flow)
        self.machine = self.player.machine
        self.values = ValueSource(flow)
        self.payloads = {
            ev.name: self.values.payloads(ev.fields, payloads_per_event) for ev in flow.events
        }
        self.back_states = {
            t.source for t in flow.transitions if t.back and t.kind in ("direct", "event")
        }
        self.direct = {
            (t.source, t.target, t.back)
            for t in flow.transitions
            if t.kind == "direct" and t.target
        }
        self._abstraction()
        self.events_of: dict[str, list[str]] = {}
        # An `internal` event is no host's move (the flow may still raise or schedule it).
        own = self.machine.own_events
        for t in flow.transitions:
            if t.kind in ("event", "reject") and t.event and t.event not in own:
                names = self.events_of.setdefault(t.source, [])
                if t.event not in names:
                    names.append(t.event)
        #: a statechart's moves by its active leaves (one search meets few configurations)
        self._chart_moves: dict[tuple[str, ...], _Offers] = {}

    def _abstraction(self) -> None:
        """What `search(abstract=True)` keys a configuration by, besides its state: the
        context fields that some guard, precondition or invariant reads. Two contexts that
        agree on those take the same rules (fields only actions and templates read, such as
        texts copied from payloads, do not multiply the configurations)."""
        self.read_fields = read_fields(self.flow)
        #: the same of each child flow, by name (its children's too)
        self.child_fields: dict[str, list[str]] = {}
        pending = dict(self.flow.children)
        while pending:
            name, raw = pending.popitem()
            if name not in self.child_fields:
                child = (
                    raw
                    if isinstance(raw, CompiledFlow)
                    else CompiledFlow.model_validate({"ir_version": 1, **raw})
                )
                self.child_fields[name] = read_fields(child)
                pending.update(child.children)

    def abstract_key(self, instance: Instance) -> tuple[str, str]:
        context = instance.context
        key = context_key({k: context.get(k) for k in self.read_fields})
        for _, kid in _descendants(instance):
            fields = self.child_fields.get(kid.machine.name, ())
            kid_context = kid.context
            key += " " + context_key({k: kid_context.get(k) for k in fields})
        return state_key(instance), key

    def start_context(self, given: Mapping[str, Any]) -> dict[str, Any]:
        return {**self.values.required_context(), **given}

    def clone(self, instance: Instance) -> Instance:
        """A copy to try a move on. Not through `snapshot`/`restore` (JSON round trips would
        be most of the search's time): the committed context and history entries are never
        changed in place by the runtime, so the copy shares them; so do its children's
        copies (`_copy_tree`)."""
        clock = instance.clock
        assert isinstance(clock, FakeClock)
        copy = _copy(instance, FakeClock(clock.now))
        if instance._tree is not None:
            _copy_tree(instance, copy, None, ())
        return copy

    def play(self, instance: Instance, move: Move) -> MoveResult:
        return self.player.play(instance, move)

    def invoked(self, instance: Instance) -> list[str]:
        """The invokes whose children are current (they may finish or fail)."""
        return sorted(instance._tree.joins) if instance._tree is not None else []

    def moves(self, instance: Instance) -> Iterator[Move]:
        offers = self._offers(instance)
        for event in offers.events:
            for payload in self.payloads[event]:
                yield Move("send", event, payload)
        for invoke in self.invoked(instance):
            for payload in self.payloads.get(done_event(invoke), ()):
                yield Move("end_invoke", done_event(invoke), payload)
            yield Move("end_invoke", error_event(invoke), FAILURE)
        for target, back in offers.targets:
            yield Move("goto", target, force=back)
        if offers.back:
            yield Move("back")
        deadline = instance.next_deadline
        clock = instance.clock
        if deadline is not None and isinstance(clock, FakeClock):
            ms = max(1, round((deadline.timestamp() - clock.now) * 1000))
            yield Move("advance", ms=ms)

    def _offers(self, instance: Instance) -> _Offers:
        """The events, `goto` targets and `back` worth trying in `instance`'s configuration."""
        if not self.machine.chart:
            state = instance.state
            return _Offers(
                tuple(self.events_of.get(state, ())),
                tuple(
                    (target, back)
                    for source, target, back in sorted(self.direct)
                    if source == state
                ),
                state in self.back_states,
            )
        config = instance.configuration
        found = self._chart_moves.get(config)
        if found is None:
            leaves = [self.machine.states[name] for name in config]
            leaves = [s for s in leaves if s.atomic]
            internal = self.machine.internal_events | self.machine.own_events
            # A leaf's tables hold its own rules, then its ancestors'.
            events = dict.fromkeys(e for s in leaves for e in s.on if e not in internal)
            targets = {
                (target, t.back)
                for s in leaves
                for target, edges in s.direct.items()
                for t in edges
            }
            back = any(s.back_edges for s in leaves)
            found = self._chart_moves[config] = _Offers(tuple(events), tuple(sorted(targets)), back)
        return found

    def try_move(
        self, node: Node, move: Move, spare: Instance | None = None
    ) -> tuple[Instance, MoveResult]:
        """Play `move` from `node` on `spare` (an unchanged copy left by a refused move) or a
        new copy."""
        instance = spare if spare is not None else self.clone(node.instance)
        return instance, self.play(instance, move)

    def search(
        self,
        given: Mapping[str, Any] | None = None,
        *,
        max_configs: int = 5000,
        max_depth: int = 12,
        time_limit: float | None = None,
        abstract: bool = False,
        until: frozenset[int] | None = None,
    ) -> Search:
        """Breadth-first from the start; with `abstract`, configurations are told apart only by
        what the flow's guards can see (`abstract_key`), which keeps the search small enough
        to reach every rule (paths); without, by the whole context (explore). `until`: stop
        once every one of these rules is taken (what paths wants; a tree of child flows
        multiplies the configurations far past the point where they all are)."""
        key_of = self.abstract_key if abstract else _exact_key
        started = time.perf_counter()
        given = dict(given or {})
        found = Search(self.flow, given)
        first = self.player.start(self.start_context(given))
        if isinstance(first, Rejection):
            found.start_refused = first
            return found
        root = Node(key_of(first), first, None, None, 0)
        found.nodes[root.key] = root
        for index in self.player.start_routes(first):
            found.transitions.setdefault(index, Reached(root, None, None))
        self._check(found, root)
        queue = deque([root])
        while queue:
            if until is not None and until <= found.transitions.keys():
                found.complete = False
                break
            node = queue.popleft()
            if node.depth >= max_depth:
                found.complete = False
                continue
            accepted = False
            spare: Instance | None = None
            for move in self.moves(node.instance):
                instance, result = self.try_move(node, move, spare)
                # A refused move leaves its copy as it was: the next move can use it.
                spare = (
                    instance if result.rejection is not None and move.kind != "advance" else None
                )
                found.moves_played += 1
                outcome = result.outcomes[-1] if result.outcomes else None
                for index in result.fired:
                    if index not in found.transitions and outcome is not None:
                        found.transitions[index] = Reached(node, move, outcome)
                # (an `advance` may fire only a child's timer whose guard fails: nothing to
                # show, but the tree moved on, which its key says)
                if result.rejection is not None or (not result.outcomes and move.kind != "advance"):
                    continue
                accepted = True
                key = key_of(instance)
                if key in found.nodes:
                    continue
                if len(found.nodes) >= max_configs or (
                    time_limit is not None and time.perf_counter() - started > time_limit
                ):
                    found.complete = False
                    continue
                child = Node(key, instance, node, move, node.depth + 1, tuple(result.fired))
                found.nodes[key] = child
                if self._check(found, child):
                    queue.append(child)
            if not accepted and not node.instance.is_final:
                found.stuck.append(node)
        found.seconds = time.perf_counter() - started
        return found

    def _check(self, found: Search, node: Node) -> bool:
        """Record a broken invariant; False when the search should not go on from `node`
        (past a violation, every configuration is already wrong)."""
        broken = self.player.broken_invariants(node.instance)
        if broken:
            found.violations.append((node, broken))
            return False
        return True


@dataclass(frozen=True)
class _Offers:
    events: tuple[str, ...]
    #: (target, along a backward edge)
    targets: tuple[tuple[str, bool], ...]
    back: bool


def _copy(instance: Instance, clock: FakeClock) -> Instance:
    """An instance sharing `instance`'s committed parts (none is changed in place)."""
    copy = Instance._blank(instance.machine, instance.id, clock)
    copy._state = instance._state
    copy._ctx = instance._ctx
    copy._seq = instance._seq
    copy._history = list(instance._history)
    copy._timers = instance._timers
    copy._sends = instance._sends  # (a tuple of tuples, never changed in place either)
    # A statechart's configuration is a tuple and its histories a dict the engine copies
    # before it records anything: both can be shared too.
    copy._config = instance._config
    copy._hist = instance._hist
    return copy


def _copy_tree(
    source: Instance, copy: Instance, up: childflows.Node | None, path: tuple[str, ...]
) -> None:
    """Give `copy` a copy of `source`'s place in its tree: joins, the root's inbox (its
    messages are tuples), and copies of the children, on the copy's clock."""
    node = source._tree
    assert node is not None
    mine = copy._tree = childflows.Node(copy, up, path, node.invoke, node.index)
    if up is None:
        mine.inbox = list(node.inbox)
    mine.joins = {k: childflows.Join.from_json(j.to_json()) for k, j in node.joins.items()}
    clock = copy.clock
    assert isinstance(clock, FakeClock)
    for cid, kid in node.kids.items():
        kid_copy = _copy(kid, clock)
        _copy_tree(kid, kid_copy, mine, (*path, cid))
        mine.kids[cid] = kid_copy


def state_key(instance: Instance) -> str:
    """What, besides the context, decides an instance's next moves: its state; in a statechart
    its active leaves and what its history states recorded; the scheduled events pending."""
    key = instance.state if instance._config is None else configuration_text(instance)
    if instance._hist:
        recorded = sorted(
            (h, ",".join(s.name for s in states)) for h, states in instance._hist.items()
        )
        key += " | " + " ".join(f"{h}={states}" for h, states in recorded)
    if instance._tree is not None and instance._tree.joins:
        # The invokes with current children, how many of each have finished or failed, and
        # each child's own state and pending timers (its context would multiply the
        # configurations for what the parent's guards cannot see).
        key += " | invokes " + " ".join(
            f"{j.invoke}={sum(j.finished)}/{j.failed}"
            for j in sorted(instance._tree.joins.values(), key=lambda j: j.invoke)
        )
        key += " | children " + " ".join(
            f"{cid}={state_key(kid)}/{len(kid._timers or ())}"
            for cid, kid in instance._tree.kids.items()
        )
    if instance._sends:
        # By id (an id of its own, `#SEQ.N`, says only that it has none) and payload.
        key += " | sends " + " ".join(
            f"{'#' if x.id.startswith('#') else x.id}={x.event}{context_key(x.payload or {})}"
            for x in instance._sends
        )
    return key


def configuration_text(instance: Instance) -> str:
    """The configuration as a reader names it: the state in a flat flow; in a statechart each
    active leaf by its path from the top (`closed.cooking`), leaves of parallel regions joined
    by ` + `."""
    if instance._config is None:
        return instance.state
    return " + ".join(state_path(s) for s in instance._config if s.atomic)


def state_path(state: Any) -> str:
    """A machine state's dotted path from the top (an IR name may itself be a dotted path:
    its last part is the state's own name)."""
    parts = [s.name.rsplit(".", 1)[-1] for s in (*reversed(state.ancestors), state)]
    return ".".join(parts)


def leaves_of(flow: CompiledFlow, configuration: tuple[str, ...]) -> list[str]:
    """The atomic states of a configuration (IR names): what a test expects, one `expect
    state` each (a flat flow's configuration is its one state)."""
    inner = {s.name for s in flow.states if s.kind in ("compound", "parallel")}
    return [name for name in configuration if name not in inner]


def _exact_key(instance: Instance) -> tuple[str, str]:
    key = context_key(instance.context)
    for _, kid in _descendants(instance):
        key += " " + context_key(kid.context)
    return state_key(instance), key


def _descendants(instance: Instance) -> Iterator[tuple[str, Instance]]:
    """Every child of the tree below `instance`, parents first, in start order."""
    node = instance._tree
    if node is None:
        return
    for cid, kid in node.kids.items():
        yield cid, kid
        yield from _descendants(kid)


def read_fields(flow: CompiledFlow) -> list[str]:
    """The context fields that some guard, precondition or invariant of `flow` reads, or an
    `if` action's guard or a computed delay (what decides which rules a step takes)."""
    exprs = [t.guard for t in flow.transitions if t.guard is not None]
    exprs += [r.guard for ev in flow.events for r in ev.requires]
    exprs += [inv.expr for inv in flow.invariants]
    # The guards of `if` actions decide what a step does, and computed delays when a timer
    # fires: the fields they read tell configurations apart too.
    exprs += [t.after_expr for t in flow.transitions if t.after_expr is not None]
    blocks = [t.actions for t in flow.transitions]
    blocks += [block for s in flow.states for block in (s.entry, s.exit)]
    exprs += [guard for block in blocks for guard in _branch_guards(block)]
    return sorted({str(n.value) for e in exprs for n in _walk(e) if n.op == "ctx"})


def _walk(expr: Expr) -> Iterator[Expr]:
    yield expr
    for arg in expr.args:
        yield from _walk(arg)


def _branch_guards(actions: tuple[Action, ...]) -> Iterator[Expr]:
    """The guards of the `if` / `elif` actions in `actions`, nested ones too."""
    stack = list(actions)
    while stack:
        action = stack.pop()
        for branch in action.branches:
            if branch.guard is not None:
                yield branch.guard
            stack.extend(branch.actions)
