"""The step kernel: what taking one transition does, worked out in one place.

A step, whatever its trigger (an event, `goto`, `back`, a due timer, the start), chooses a
transition and then takes it. Taking it is the same for every trigger and is described by a
`Plan`: the states left (innermost first), the action blocks to run in order (the exit actions
of the states left, the transition's own actions, the entry actions of the states entered),
the states entered (outermost first), and what happens to the timers (the timers of the states
left are cancelled, those of the states entered are armed, a `-> self` timer repeats).

Two things run plans and nothing else decides what a step does: `Instance._take`, the general
path, interprets a plan (and the plans of the routes of any choice states it passes through),
and the generated dispatch functions (codegen.py) write a plan's blocks and commit out as
Python. A change to what a step does is made here, once.

In a flat flow the active configuration is one state, the transition's source, so a plan
depends on the transition alone and is kept on it (`CTransition.plan`), worked out on first
use. A transition to its own source (`-> self`) is internal: nothing is left or entered and the
timers keep running.

A statechart (IR version 2: compound, parallel and history states, eventless rules, raised
events) is run by `Macrostep`, following SCXML's algorithm (W3C Recommendation, 2015,
Appendix D). Its configuration is a set of states, so the states a transition leaves depend on
which are active: the plan keeps the transition's domain (the lowest compound ancestor of its
source and target, SCXML's LCCA) and a microstep leaves every active descendant of the domains
of the transitions it takes, innermost first, and enters the target with its ancestors below the
domain and its default descendants (a compound's initial child, every region of a parallel
state, what a history state recorded), outermost first. A flat flow is the case where the
domain is the top and the configuration one state: the exits are the source alone, the entries
the target, which is what `Plan.exits` / `Plan.entries` say. The blocks run in the same order
(exit actions, the transition's actions, entry actions) through the same `Step` records.

In a statechart whose configuration is always one leaf and its ancestors (`leaf_chart`), a
step on an event from a leaf is one microstep fixed by the leaf and the rule taken: `chart_plan`
works out its plan (`Plan(t, leaf)`) with `Macrostep`'s own exit set and entry rules, and the
generated dispatch functions write it out as they write a flat plan.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any, NamedTuple

from flowc.runtime.expr import ExprFault
from flowc.runtime.limits import LimitExceeded
from flowc.runtime.model import IRLoadError
from flowc.runtime.validate import Invalid

if TYPE_CHECKING:
    from flowc.runtime.machine import CEvent, CState, CTransition

#: The functions that read the step rather than a value (IR version 2): `active(STATE)` asks
#: the configuration, `event_name()` the event being processed.
ACTIVE = frozenset({"active"})
CONFIGURATION_CALLS = frozenset({"active", "event_name"})


class Step(NamedTuple):
    """One action block of a plan. The block is read from `owner` when it runs, not kept
    here: blocks are compiled on first use and replace their stub on the owner."""

    #: `exit`, `actions` or `entry`: where a fault in it is said to be
    phase: str
    owner: CState | CTransition
    #: the owner's attribute (and IR member) holding the block
    block: str
    #: the state `state.*` reads while the block runs
    state: CState


class Plan:
    """What taking one transition does (see the module's docstring)."""

    __slots__ = (
        "arm",
        "blind",
        "computed",
        "copies",
        "domain",
        "emits",
        "entries",
        "exits",
        "internal",
        "leaf",
        "repeats",
        "steps",
        "target",
    )

    def __init__(self, t: CTransition, leaf: CState | None = None) -> None:
        # Written for the first use of a pair, which builds its plan: the common cases (no
        # exit or entry actions, no timers, a flat flow) cost a test each.
        source, target = t.source, t.target
        assert target is not None, "a reject rule is never taken"
        self.target: CState = target
        #: `-> self`: nothing left or entered, the timers keep running (`-> self reenter` is
        #: external: the state is left and entered again)
        self.internal: bool = t.internal
        internal = self.internal
        #: the one active leaf after the step (see `chart_plan`; a flat flow's target)
        self.leaf: CState = target
        #: The transition's domain in a statechart (`_domain`): the step leaves the active
        #: states inside it and enters the target's branch in it.
        self.domain: CState | None = (
            _domain(t) if source.ancestors or source.kind == "compound" else None
        )
        steps: list[Step] = []
        entering: list[Step] = []
        if internal:
            self.exits: tuple[CState, ...] = ()
            self.entries: tuple[CState, ...] = ()
            if leaf is not None:
                self.leaf = leaf
        elif leaf is not None:
            entering = self._chart(t, leaf, steps)
        else:
            self.exits = (source,)
            self.entries = (target,)
            if source.exit is not None:
                steps.append(Step("exit", source, "exit", source))
        if t.actions is not None:
            steps.append(Step("actions", t, "actions", source))
        if leaf is not None:
            steps += entering
        elif not internal and target.raw.get("entry"):
            steps.append(Step("entry", target, "entry", target))
        self.steps: tuple[Step, ...] = tuple(steps)
        #: Some block may `emit` an effect or loop: the step runs with a collector
        #: (runtime/outputs.py).
        #: (Asked only in a flow that declares effects: an `emit` of any other is refused.)
        self.emits: bool = False
        if t.machine.emits:
            for s in steps:
                if _emits(s.owner.raw.get(s.block)):
                    self.emits = True
                    break
        #: The transition's own actions read `active(...)` while the flat flow is between its
        #: source and its target: they run with no state active (SCXML: the source is left
        #: before a transition's actions run, the target entered after), on the general path.
        #: (Asked only of a flow that calls `active` somewhere: `Machine.reads_active`.)
        self.blind: bool = (
            not internal and t.machine.reads_active and bool(calls(t.raw.get("actions"), ACTIVE))
        )
        #: Whether the step needs a working copy of the context: some block runs, or routing
        #: (whose routes may run some) follows.
        self.copies: bool = bool(steps) or (not internal and target.choice)
        #: The timer rules armed at the commit (the timers of the states left are cancelled);
        #: empty for an internal step, which keeps the timers as they are.
        arm: tuple[CTransition, ...] = (
            ()
            if internal
            else (target.timers if target.timed else ())  # `timers_of`, written out
            if leaf is None
            else tuple(x for s in self.entries for x in timers_of(s))
        )
        self.arm = arm
        #: An internal timer rule (`after D -> self`) is armed again when it fires.
        self.repeats: bool = False
        #: Some timer armed at the commit has a computed delay (`after EXPR UNIT`): it is
        #: evaluated against the committed context before the step commits.
        self.computed: bool = bool(arm) and any(r.after_ms is None for r in arm)
        if t.kind == "timer" and internal:
            computed = t.after_ms is None
            self.repeats = bool(t.after_ms) or computed
            self.computed = self.computed or (self.repeats and computed)

    def _chart(self, t: CTransition, leaf: CState, steps: list[Step]) -> list[Step]:
        """The exits and entries of `t` taken from a configuration that is `leaf` with its
        ancestors, worked out by the statechart kernel's own rules (`Macrostep`'s exit set and
        SCXML's descendants and ancestors to enter), with nothing run; the exit steps are
        added to `steps`, the entry steps returned."""
        run = Macrostep(with_ancestors((leaf,)), {}, {}, 1, [])
        self.exits = tuple(sorted(run.exit_set((t,)), key=_order, reverse=True))
        for s in self.exits:
            if s.raw.get("exit"):
                steps.append(Step("exit", s, "exit", s))
        entered: set[CState] = set()
        run.add_descendants(self.target, entered)
        run.add_ancestors(self.target, self.domain, entered)
        self.entries = tuple(sorted(entered, key=_order))
        entering: list[Step] = []
        for s in self.entries:
            if s.raw.get("entry"):
                entering.append(Step("entry", s, "entry", s))
            if s in run.defaulted and s.raw.get("initial_actions"):
                entering.append(Step("entry", s, "initial_actions", s))
        self.leaf = self.entries[-1]
        return entering


def _domain(t: CTransition) -> CState | None:
    """The transition's domain in a statechart: the innermost compound proper ancestor of its
    source that contains its target (None: the top, always so in a flat flow). The step
    leaves the active states inside it and enters the target's branch in it. A compound's
    rule to one of its own descendants is internal unless marked `reenter` (SCXML's
    `type="internal"`): its domain is the compound itself, which stays active, its entry and
    exit actions not run and its timers running."""
    if t.internal:
        return None
    target = t.target
    assert target is not None
    source = t.source
    if source.kind == "compound" and source in target.ancestors and not t.raw.get("reenter"):
        return source
    for anc in source.ancestors:
        if anc.kind == "compound" and anc in target.ancestors:
            return anc
    return None


def chart_plan(leaf: CState, t: CTransition) -> Plan:
    """The plan of taking `t` when the configuration is `leaf` and its ancestors, in a
    statechart whose configuration is always one chain of states (`leaf_chart`): the states
    left are the active ones inside the transition's domain, innermost first, the states
    entered the target's branch below the domain down to its initial leaf, outermost first,
    the timers armed those of every state entered. The same step as `Macrostep.microstep`
    takes from that configuration (tests/runtime/test_chart_codegen.py), written once per
    (leaf, transition) by the generated dispatch (codegen.py)."""
    return Plan(t, leaf)


def leaf_chart(raw: Any) -> bool:
    """Whether a statechart's configuration is always one leaf and its ancestors, and a step
    on an event from a leaf one microstep that depends on the leaf and the event alone: only
    atomic, choice, top-level final and compound states (no parallel or history state, no
    final child whose entry raises `done.state`), no `always` rule, no `raise`, and nothing
    reading the configuration or the event's name (`active`, `event_name`)."""
    for s in raw.get("states") or ():
        kind = s.get("kind", "normal")
        if kind not in ("normal", "choice", "compound", "final"):
            return False
        if kind == "final" and s.get("parent") is not None:
            return False
    if any(t.get("kind") == "always" for t in raw.get("transitions") or ()):
        return False
    stack: list[Any] = [raw.get("states"), raw.get("transitions")]
    while stack:
        n = stack.pop()
        if isinstance(n, dict):
            op = n.get("op")
            if op == "raise" or (op == "call" and n.get("value") in ("active", "event_name")):
                return False
            stack.extend(n.values())
        elif isinstance(n, list | tuple):
            stack.extend(n)
    return True


def _emits(actions: Any) -> bool:
    """Whether an action block (raw IR) holds an `emit`, also inside the arms of an `if`."""
    for a in actions or ():
        op = a.get("op")
        if op == "emit" or op == "for" or op == "each":  # a loop charges the step's budget
            return True
        if op in ("if", "for", "each") and any(
            _emits(b.get("actions")) for b in a.get("branches") or ()
        ):
            return True
    return False


def calls(node: Any, names: frozenset[str]) -> set[str]:
    """Which of the functions `names` raw IR (an action block, an action, an expression, or
    lists of them) calls somewhere in it. Only containers are queued (most values are strings
    and numbers)."""
    # Raw IR is what `json` makes (`Machine(flow)` dumps its models to the same): exact type
    # tests, not the ABCs', and no generator.
    found: set[str] = set()
    stack = [node]
    push = stack.append
    while stack:
        n = stack.pop()
        if type(n) is dict:
            if n.get("op") == "call":
                name = n.get("value")
                if type(name) is str and name in names:  # (a malformed one may be a list)
                    found.add(name)
                if len(found) == len(names):
                    break
            for v in n.values():
                if type(v) is dict or type(v) is list or type(v) is tuple:
                    push(v)
        elif type(n) is list or type(n) is tuple:
            stack.extend(n)
    return found


def timers_of(state: CState) -> tuple[CTransition, ...]:
    """The timer rules of `state`. A state not used yet is wired (every rule of it built) only
    if it has some: a first send, working out what its step arms, would otherwise build the
    whole of the state it leads to, to learn that it has no timers (most states have none)."""
    return state.timers if state.timed else ()


def rivals(a: CTransition, b: CTransition) -> bool:
    """Whether two timer rules are one group: the same state's timers with the same delay,
    always armed and due together, tried in order like the rules for one event (the first
    whose guard holds is taken, the others not; a repeating `-> self` re-arms the group).
    A timer of another delay or state that falls due at the same moment is a trigger of its
    own, tried next at that moment: a deadline beside a repeating reminder fires."""
    return (
        a.source is b.source
        and a.after_ms == b.after_ms
        and (a.after_ms is not None or a.raw.get("after_expr") == b.raw.get("after_expr"))
    )


def plan_of(t: CTransition) -> Plan:
    """The plan of taking `t` (worked out on first use, then kept on the transition)."""
    p = t.plan
    if p is None:
        p = t.plan = Plan(t)
    return p


# ---- statecharts ------------------------------------------------------------------------------


class Microsteps(LimitExceeded):
    """A step that would take more than `Limits.max_microsteps` microsteps."""


class Refusal(Exception):
    """A `reject` rule won for an internal event: the whole step is refused by it."""

    def __init__(self, rule: CTransition, payload: Any) -> None:
        super().__init__(rule.code)
        self.rule = rule
        self.payload = payload


_NOTHING: tuple[Any, tuple[CTransition, ...]] = (None, ())


def _on(event: str) -> Any:
    def candidates(leaf: CState) -> tuple[CTransition, ...]:
        found: tuple[CTransition, ...] = leaf.on.get(event, _NOTHING)[1]
        return found

    return candidates


def _eventless(leaf: CState) -> tuple[CTransition, ...]:
    """A leaf's eventless rules: a choice state's routes first, then `always` rules."""
    return (*leaf.routes, *leaf.always) if leaf.choice else leaf.always


class Macrostep:
    """One step of a statechart, run to completion on working copies: the transitions chosen
    for the trigger are taken (a microstep), then, until nothing more is enabled, the eventless
    rules of the configuration, else the next internal event (raised by an action, or a
    `done.state.NAME`), each a microstep. The instance commits what it holds at the end (or,
    if anything faults, nothing).

    `run` raises what a block raises (`FAULTS`), and `Microsteps` past the bound; `step` is
    then the block that faulted (None: a guard, or the bound)."""

    __slots__ = (
        "c",
        "config",
        "count",
        "defaulted",
        "entered",
        "event",
        "exited",
        "final",
        "fired",
        "histories",
        "history_defaults",
        "limit",
        "p",
        "queue",
        "step",
        "taken",
        "via",
    )

    def __init__(
        self,
        config: Iterable[CState],
        histories: dict[str, tuple[CState, ...]],
        c: dict[str, Any],
        limit: int,
        queue: list[tuple[str, Any]],
    ) -> None:
        self.config: set[CState] = set(config)
        self.histories = dict(histories)
        #: the working copy of the context
        self.c = c
        self.limit = limit
        #: the internal events (name, payload) not taken yet: the collector's list, so the
        #: `raise` actions append to it (outputs.py)
        self.queue = queue
        self.count = 0
        #: states entered / left during the step (a state may be both)
        self.entered: set[CState] = set()
        self.exited: set[CState] = set()
        #: the compound states of this microstep's entries entered by default: those with an
        #: initial rule run its actions after their entry actions
        self.defaulted: set[CState] = set()
        #: parent -> its history state that entered its default in this microstep (its
        #: default's actions run after the parent's entry actions)
        self.history_defaults: dict[CState, CState] = {}
        #: the IR indices of the rules taken, microstep by microstep (coverage reads them)
        self.fired: list[int] = []
        #: the payload and the name of the event being processed (eventless rules see the last
        #: one; the name is None for a step without an event): `event_name()` reads it
        self.p: Any = None
        self.event: str | None = None
        self.final = False
        self.step: Step | None = None
        #: the transition being taken (for fault messages)
        self.taken: CTransition | None = None
        #: the state the instance was in after each microstep but the last
        self.via: list[str] = []

    # ---- choosing ---------------------------------------------------------------------------
    def atomic(self) -> list[CState]:
        """The active leaves, in document order."""
        return sorted((s for s in self.config if s.atomic), key=_order)

    def select(self, candidates_of: Any, p: Any) -> list[CTransition]:
        """SCXML's selection: for each active leaf in document order, the first enabled rule
        of the leaf's candidates (its own, then its ancestors'); then the conflicts resolved.
        `candidates_of(leaf)` gives the candidates. A guard's fault propagates."""
        c = self.c
        enabled: list[CTransition] = []
        for leaf in self.atomic():
            for t in candidates_of(leaf):
                self.taken = t
                if t.guard is None or t.guard(c, p, t.source):
                    if t not in enabled:
                        enabled.append(t)
                    break
        self.taken = None
        return enabled

    def settle(self, events: dict[str, CEvent], eventless: bool = True) -> None:
        """Run to completion: eventless rules first, then the internal events in order, each
        a microstep, until nothing is enabled and no internal event is left (or the instance
        reached a top-level final state). An internal event no rule takes is dropped.
        `eventless`: whether the flow has eventless rules or choice states at all."""
        while not self.final:
            ts = self.select(_eventless, self.p) if eventless else None
            if ts:
                self.microstep(self.resolve(ts), self.p)
                continue
            if not self.queue:
                return
            name, given = self.queue.pop(0)
            ev = events.get(name)
            if ev is None:
                raise IRLoadError(f"an action raises undeclared event {name!r}")
            try:
                p = ev.check(given) if given else ev.empty if ev.empty is not None else ev.check({})
            except (Invalid, RecursionError):
                raise ExprFault(
                    f"the payload of the raised event {name} does not fit its fields"
                ) from None
            self.p = p
            self.event = name
            ts = self.select(_on(name), p)
            for t in ts:
                if t.target is None:
                    raise Refusal(t, p)
            if ts:
                self.microstep(self.resolve(ts), p)

    def resolve(self, enabled: list[CTransition]) -> list[CTransition]:
        """SCXML's `removeConflictingTransitions`: of two transitions whose exit sets meet, the
        one whose source is a descendant of the other's wins, else the earlier one."""
        kept: list[CTransition] = []
        for t1 in enabled:
            preempted = False
            beaten: list[CTransition] = []
            exits1 = self.exit_set((t1,))
            for t2 in kept:
                if exits1 & self.exit_set((t2,)):
                    if t2.source in t1.source.ancestors:
                        beaten.append(t2)
                    else:
                        preempted = True
                        break
            if not preempted:
                kept = [t for t in kept if t not in beaten]
                kept.append(t1)
        return kept

    # ---- taking -----------------------------------------------------------------------------
    def exit_set(self, ts: Iterable[CTransition]) -> set[CState]:
        out: set[CState] = set()
        for t in ts:
            plan = t.plan or plan_of(t)
            if plan.internal:
                continue
            domain = plan.domain
            if domain is None:
                out |= self.config
            else:
                out.update(s for s in self.config if domain in s.ancestors)
        return out

    def microstep(self, ts: list[CTransition], p: Any) -> None:
        """Take the transitions `ts` (conflict-free) together."""
        if self.count:
            name = self.summary().name
            if not self.via or self.via[-1] != name:
                self.via.append(name)
        self.count += 1
        self.fired.extend(t.index for t in ts)
        if self.count > self.limit:
            raise Microsteps(
                f"the step took more than {self.limit} microsteps (Limits.max_microsteps)"
            )
        exits = sorted(self.exit_set(ts), key=_order, reverse=True)
        # History is recorded before anything is left (SCXML's exitStates).
        for s in exits:
            for h in s.children:
                if h.history is not None:
                    if h.history == "deep":
                        rec = [x for x in self.config if x.atomic and s in x.ancestors]
                    else:
                        rec = [x for x in self.config if x.parent is s]
                    self.histories[h.name] = tuple(sorted(rec, key=_order))
        for s in exits:
            if s.raw.get("exit"):
                self.run(Step("exit", s, "exit", s), p)
            self.config.discard(s)
            self.exited.add(s)
        for t in ts:
            self.taken = t
            if t.raw.get("actions"):
                self.run(Step("actions", t, "actions", t.source), p)
        self.step = None
        entries: set[CState] = set()
        for t in ts:
            plan = t.plan or plan_of(t)
            if plan.internal:
                continue
            self.add_descendants(plan.target, entries)
            self.add_ancestors(plan.target, plan.domain, entries)
        self.enter(entries, p)
        self.taken = None

    def enter(self, entries: set[CState], p: Any) -> None:
        """Enter `entries`, outermost first: each one's entry actions, then the actions of the
        initial rule or history default it was entered by, and its completion if final."""
        for s in sorted(entries, key=_order):
            self.config.add(s)
            self.entered.add(s)
            if s.raw.get("entry"):
                self.run(Step("entry", s, "entry", s), p)
            if s in self.defaulted and s.raw.get("initial_actions"):
                self.run(Step("entry", s, "initial_actions", s), p)
            used = self.history_defaults.pop(s, None) if self.history_defaults else None
            if used is not None and used.raw.get("initial_actions"):
                self.run(Step("entry", used, "initial_actions", s), p)
            if s.final:
                self.completed(s)
        self.defaulted.clear()
        self.history_defaults.clear()
        self.step = None

    def run(self, step: Step, p: Any) -> None:
        """Run one action block on the working copy, as `Instance._take` runs a plan's."""
        self.step = step
        getattr(step.owner, step.block)(self.c, p, step.state)

    def enter_initial(self, initial: CState) -> None:
        """The start: enter `initial` with its default descendants (a microstep)."""
        self.count += 1
        entries: set[CState] = set()
        self.add_descendants(initial, entries)
        self.enter(entries, None)

    def completed(self, s: CState) -> None:
        """`s`, a final state, was entered: the instance ends (top level) or its parent is
        done, and the grandparent too when it is a parallel state whose regions all are."""
        parent = s.parent
        if parent is None:
            self.final = True
            return
        done = s.done_value if s.raw.get("done_data") is not None else None
        self.queue.append((f"done.state.{parent.name}", done(self.c, self.p, s) if done else None))
        grand = parent.parent
        if grand is not None and grand.kind == "parallel" and self.in_final(grand):
            self.queue.append((f"done.state.{grand.name}", None))

    def in_final(self, s: CState) -> bool:
        if s.kind == "compound":
            return any(x.final and x in self.config for x in s.children)
        if s.kind == "parallel":
            return all(self.in_final(r) for r in s.regions)
        return False

    def add_descendants(self, s: CState, into: set[CState]) -> None:
        """SCXML's addDescendantStatesToEnter."""
        if s.history is not None:
            parent = s.parent
            assert parent is not None
            recorded = self.histories.get(s.name)
            if recorded is None:
                recorded = (s.default or parent.initial_child or parent.regions[0],)
                self.history_defaults[parent] = s
            # Every recorded state first, then their ancestors: a parallel ancestor then sees
            # all its regions already covered (SCXML's order).
            for x in recorded:
                self.add_descendants(x, into)
            for x in recorded:
                self.add_ancestors(x, parent, into)
            return
        into.add(s)
        if s.kind == "compound":
            self.defaulted.add(s)
            targets = s.initial_targets
            if targets:
                # An initial rule (SCXML's initial transition): its targets and what lies
                # between them and `s`, all targets first (as for a history's records).
                for x in targets:
                    self.add_descendants(x, into)
                for x in targets:
                    self.add_ancestors(x, s, into)
                return
            child = s.initial_child
            assert child is not None
            self.add_descendants(child, into)
        elif s.kind == "parallel":
            for region in s.regions:
                if not any(region is x or region in x.ancestors for x in into):
                    self.add_descendants(region, into)

    def add_ancestors(self, s: CState, upto: CState | None, into: set[CState]) -> None:
        """SCXML's addAncestorStatesToEnter: the ancestors of `s` below `upto`."""
        for anc in s.ancestors:
            if anc is upto:
                break
            into.add(anc)
            if anc.kind == "parallel":
                for region in anc.regions:
                    if not any(region is x or region in x.ancestors for x in into):
                        self.add_descendants(region, into)

    def summary(self) -> CState:
        """What `Instance.state` names: the one active leaf, or the innermost active state
        containing every active leaf."""
        return summary_of(self.config)


def summary_of(config: Iterable[CState]) -> CState:
    # The innermost common ancestor is the same whichever leaf it is looked for from.
    leaves = [s for s in config if s.atomic]
    first = leaves[0]
    if len(leaves) == 1:
        return first
    rest = leaves[1:]
    for anc in first.ancestors:
        if all(anc in leaf.ancestors for leaf in rest):
            return anc
    return first


def with_ancestors(states: Iterable[CState]) -> list[CState]:
    """The states and all their ancestors, in document order."""
    out: set[CState] = set()
    for s in states:
        out.add(s)
        out.update(s.ancestors)
    return sorted(out, key=_order)


def _order(s: CState) -> int:
    return s.order
