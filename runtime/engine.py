"""The engine: what taking one transition does, worked out in one place.

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

import contextlib
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NamedTuple

from flowc.runtime import rejections as R
from flowc.runtime.configuration import configuration, within
from flowc.runtime.expr import FAULTS, ExprFault, checked_delay, describe_fault
from flowc.runtime.flow import ACTIVE, CTransition, Requirement, actions_call, block_emits
from flowc.runtime.limits import LimitExceeded, Limits
from flowc.runtime.model import IRLoadError
from flowc.runtime.outputs import Scheduling, collecting, current_outputs
from flowc.runtime.rejections import Rejection
from flowc.runtime.steps import (
    _AT,
    _SOURCE,
    Entry,
    Leaves,
    Outcome,
    StepResult,
    _new,
    copy_dict,
    copy_json,
)
from flowc.runtime.validate import Invalid, feedback, report

if TYPE_CHECKING:
    from flowc.runtime.flow import CEvent, CState
    from flowc.runtime.instance import Instance
    from flowc.runtime.machine import Machine


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
        steps = self._steps(t, leaf)
        self.steps: tuple[Step, ...] = tuple(steps)
        #: Some block may `emit` an effect or loop: the step runs with a collector
        #: (runtime/outputs.py).
        #: (Asked only in a flow that declares effects: an `emit` of any other is refused.)
        self.emits: bool = t.machine.emits and any(block_emits(s.owner, s.block) for s in steps)
        #: The transition's own actions read `active(...)` while the flat flow is between its
        #: source and its target: they run with no state active (SCXML: the source is left
        #: before a transition's actions run, the target entered after), on the general path.
        #: (Asked only of a flow that calls `active` somewhere: `Machine.reads_active`.)
        self.blind: bool = not internal and t.machine.reads_active and bool(actions_call(t, ACTIVE))
        #: Whether the step needs a working copy of the context: some block runs, or routing
        #: (whose routes may run some) follows.
        self.copies: bool = bool(steps) or (not internal and target.choice)
        #: The timer rules armed at the commit (`_armed`).
        arm = self._armed(leaf)
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

    def _steps(self, t: CTransition, leaf: CState | None) -> list[Step]:
        """The action blocks in order: exit actions, the rule's own, entry actions; sets
        `exits`, `entries` (and `leaf`, in a chart)."""
        source, target = t.source, self.target
        steps: list[Step] = []
        entering: list[Step] = []
        if self.internal:
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
        elif not self.internal and target.has_entry:
            steps.append(Step("entry", target, "entry", target))
        return steps

    def _armed(self, leaf: CState | None) -> tuple[CTransition, ...]:
        """The timer rules armed at the commit (the timers of the states left are cancelled);
        empty for an internal step, which keeps the timers as they are."""
        if self.internal:
            return ()
        if leaf is None:
            return timers_of(self.target)
        return tuple(x for s in self.entries for x in timers_of(s))

    def _chart(self, t: CTransition, leaf: CState, steps: list[Step]) -> list[Step]:
        """The exits and entries of `t` taken from a configuration that is `leaf` with its
        ancestors, worked out by the engine's own rules (`Macrostep`'s exit set and
        SCXML's descendants and ancestors to enter), with nothing run; the exit steps are
        added to `steps`, the entry steps returned."""
        run = Macrostep(with_ancestors((leaf,)), {}, {}, 1, [])
        self.exits = tuple(sorted(run.exit_set((t,)), key=_order, reverse=True))
        for s in self.exits:
            if s.has_exit:
                steps.append(Step("exit", s, "exit", s))
        entered: set[CState] = set()
        run.add_descendants(self.target, entered)
        run.add_ancestors(self.target, self.domain, entered)
        self.entries = tuple(sorted(entered, key=_order))
        entering: list[Step] = []
        for s in self.entries:
            if s.has_entry:
                entering.append(Step("entry", s, "entry", s))
            if s in run.defaulted and s.has_initial_actions:
                entering.append(Step("entry", s, "initial_actions", s))
        self.leaf = self.entries[-1]
        return entering


def _domain(t: CTransition) -> CState | None:
    """The transition's domain in a statechart (`StateTree.domain`: the innermost compound
    proper ancestor of its source that contains its target, or the source itself for a
    compound's rule to its own descendant unless marked `reenter`; None: the top, always so
    in a flat flow). The step leaves the active states inside it and enters the target's
    branch in it; a compound that is its own rule's domain stays active, its entry and exit
    actions not run and its timers running."""
    if t.internal:
        return None
    target = t.target
    assert target is not None
    m = t.machine
    name = m.tree.domain(t.source.name, target.name, reenter=t.reenter)
    return None if name is None else m.states[name]


def chart_plan(leaf: CState, t: CTransition) -> Plan:
    """The plan of taking `t` when the configuration is `leaf` and its ancestors, in a
    statechart whose configuration is always one chain of states (`leaf_chart`): the states
    left are the active ones inside the transition's domain, innermost first, the states
    entered the target's branch below the domain down to its initial leaf, outermost first,
    the timers armed those of every state entered. The same step as `Macrostep.microstep`
    takes from that configuration (tests/runtime/test_chart_codegen.py), written once per
    (leaf, transition) by the generated dispatch (codegen.py)."""
    return Plan(t, leaf)


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
        and (a.after_ms is not None or a.after_expr == b.after_expr)
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


class RoutingLoop(Exception):
    """A step entered the same choice state twice: routing went round in a loop."""

    def __init__(self, path: list[str]) -> None:
        super().__init__(" -> ".join(path))
        self.path = path


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
        "routed",
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
        #: the choice states entered during the step, in order: entering one twice is a loop
        self.routed: list[CState] = []

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
        self.record_histories(exits)
        for s in exits:
            if s.has_exit:
                self.run(Step("exit", s, "exit", s), p)
            self.config.discard(s)
            self.exited.add(s)
        for t in ts:
            self.taken = t
            if t.actions is not None:
                self.run(Step("actions", t, "actions", t.source), p)
        self.step = None
        self.enter(self.entries_of(ts), p)
        self.taken = None

    def record_histories(self, exits: list[CState]) -> None:
        """Record the history of the states about to be left (SCXML's exitStates: before
        anything is left)."""
        for s in exits:
            for h in s.children:
                if h.history is not None:
                    if h.history == "deep":
                        rec = [x for x in self.config if x.atomic and s in x.ancestors]
                    else:
                        rec = [x for x in self.config if x.parent is s]
                    self.histories[h.name] = tuple(sorted(rec, key=_order))

    def entries_of(self, ts: list[CTransition]) -> set[CState]:
        """The states the transitions `ts` enter: each target with its default descendants
        and its ancestors below the transition's domain."""
        entries: set[CState] = set()
        for t in ts:
            plan = t.plan or plan_of(t)
            if plan.internal:
                continue
            self.add_descendants(plan.target, entries)
            self.add_ancestors(plan.target, plan.domain, entries)
        return entries

    def enter(self, entries: set[CState], p: Any) -> None:
        """Enter `entries`, outermost first: each one's entry actions, then the actions of the
        initial rule or history default it was entered by, and its completion if final."""
        for s in sorted(entries, key=_order):
            if s.choice:
                if s in self.routed:
                    raise RoutingLoop([*(x.name for x in self.routed), s.name])
                self.routed.append(s)
            self.config.add(s)
            self.entered.add(s)
            if s.has_entry:
                self.run(Step("entry", s, "entry", s), p)
            if s in self.defaulted and s.has_initial_actions:
                self.run(Step("entry", s, "initial_actions", s), p)
            used = self.history_defaults.pop(s, None) if self.history_defaults else None
            if used is not None and used.has_initial_actions:
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
        done = s.done_value if s.has_done_data else None
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
            self._add_history(s, into)
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

    def _add_history(self, s: CState, into: set[CState]) -> None:
        """Entering history state `s`: what it recorded, else its default."""
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


# ---- steps of an instance ---------------------------------------------------------------------
# The instance (instance.py) holds what a host reads and keeps: state, configuration, context,
# history, timers. The functions below decide and take its steps, flat or statechart alike (a
# flat flow is a chart whose configuration is one leaf, kept as `_config = None`), and write
# the outcome into its slots at the commit, where nothing can fail any more. The generated
# accelerator (codegen.py) commits the same way, from the same plans.

#: pending timers: (due, in epoch milliseconds; the rule), in the order they are tried
Timers = tuple[tuple[int, "CTransition"], ...]


class Scheduled(NamedTuple):
    """A pending scheduled event (`send E after D as ID`): delivered at `due` (epoch ms)."""

    due: int
    id: str
    event: str
    payload: dict[str, Any] | None


#: pending scheduled events, soonest first (in the order they were sent, when due together)
Sends = tuple[Scheduled, ...]

#: Configurations whose names are kept per machine (`names_of`), before the cache is emptied.
CONFIG_NAMES_KEPT = 4096
_EMPTY: dict[str, Any] = {}
#: What `take` enters for a flow that neither collects outputs nor raises (`Machine.collects`).
_NO_COLLECTOR = contextlib.nullcontext(None)


def configuration_of(inst: Instance) -> tuple[CState, ...]:
    """Every active state: a statechart's configuration, or a flat flow's one state."""
    config = inst._config
    return config if config is not None else (inst._state,)


def leaves_of(inst: Instance) -> list[CState]:
    """The active leaves, in document order."""
    config = inst._config
    if config is None:
        return [inst._state]
    return [s for s in config if s.atomic]


def direct_edges(inst: Instance) -> dict[str, tuple[CTransition, ...]]:
    """The direct edges by target: those of each active leaf (its own, then its ancestors'),
    leaves in document order."""
    if inst._config is None:
        return inst._state.direct
    out: dict[str, tuple[CTransition, ...]] = {}
    for leaf in leaves_of(inst):
        for target, edges in leaf.direct.items():
            have = out.get(target, ())
            out[target] = (*have, *(t for t in edges if t not in have))
    return out


def back_edges(inst: Instance) -> tuple[CTransition, ...]:
    """The backward edges of every active leaf (and its ancestors)."""
    if inst._config is None:
        return inst._state.back_edges
    return tuple(dict.fromkeys(t for s in leaves_of(inst) for t in s.back_edges))


# ---- choosing ----------------------------------------------------------------------------------
def send(
    inst: Instance,
    event: str,
    payload: Mapping[str, Any] | None,
    reason: str | None,
    key: str | None,
    force: bool = False,
    at: int | None = None,
    delivered: str = "scheduled",
) -> Outcome:
    """`send` on the general path: what a generated dispatch function (codegen.py) hands
    over whenever the step is not a plain accepted one, and what it must agree with. Every
    active leaf in document order offers its first enabled rule for the event (its own, then
    its ancestors'), the conflicts are resolved, and the step runs to completion. `at`: a
    scheduled event's delivery (the flow's own send, recorded at its deadline), which alone
    may send an `internal` event; `delivered` is the kind of step it is recorded as
    (`scheduled`, or `message` for one from a parent or child: children.py)."""
    # A delivery is recorded as a step of its own kind (replay delivers it again by `advance`).
    kind = "event" if at is None else delivered
    if inst._config is None:
        # A flat flow's guards read no configuration but their own state's, which is what
        # `active()` answers outside a scope: none is set (it costs more than a refusal).
        chosen = _choose(inst, event, payload, force, at is not None)
        if isinstance(chosen, Rejection):
            return chosen
        return take(inst, inst._state, chosen[0], chosen[1], kind, event, reason, key, at)
    with configuration(inst._config, event):
        chosen = _choose(inst, event, payload, force, at is not None)
        if isinstance(chosen, Rejection):
            return chosen
        return take(inst, inst._state, chosen[0], chosen[1], kind, event, reason, key, at)


def _choose(
    inst: Instance, event: str, payload: Mapping[str, Any] | None, force: bool, own: bool
) -> tuple[list[CTransition], Any] | Rejection:
    """The rules an event takes now, with its checked payload; or the refusal. `own`: the
    flow sends it itself (a scheduled event), so an `internal` event is allowed."""
    st, c, m = inst._state, inst._ctx, inst._m
    if type(event) is not str:
        event = str(event)
    if not own and event in m.own_events:
        return m.rejection(R.INTERNAL_EVENT, st, event, None, c)
    handled = _handled(inst, event, payload)
    if isinstance(handled, Rejection):
        return handled
    ev = m.events[event]
    p = checked_payload(inst, st, ev, payload)
    if type(p) is Rejection:
        return p
    if ev.requires:
        unmet = unmet_requirement(inst, st, ev, event, p)
        if unmet is not None:
            return unmet
    enabled = _enabled(inst, handled, event, p)
    if isinstance(enabled, Rejection):
        return enabled
    if not enabled:
        return m.rejection(R.GUARD_FAILED, st, event, p, c)
    backward = None if force else next((t for t in enabled if t.back), None)
    if backward is not None:
        data = {"from": st.name, "to": backward.target.name if backward.target else None}
        return m.rejection(R.BACKWARD_REQUIRES_FORCE, st, event, p, c, data)
    return enabled, p


def _handled(inst: Instance, event: str, payload: Any) -> list[CState] | Rejection:
    """The active leaves with rules for `event`; or why none can take it (the instance has
    ended, the event is unknown or the runtime's own, no leaf has a rule, all ignore it)."""
    st, c, m = inst._state, inst._ctx, inst._m
    if st.final:
        return m.rejection(R.INSTANCE_FINAL, st, event, None, c)
    if event not in m.events or event in m.internal_events:
        return m.rejection(R.UNKNOWN_EVENT, st, event, None, c)
    leaves = leaves_of(inst)
    handled = [leaf for leaf in leaves if event in leaf.on]
    if handled:
        return handled
    if all(leaf.ignores for leaf in leaves):  # `unhandled ignore` (or an ancestor's)
        ev = m.events[event]
        try:
            ev.check(payload or _EMPTY)
        except (Invalid, RecursionError):
            return invalid_payload(inst, st, ev, payload)
        return m.rejection(R.IGNORED, st, event, None, c)
    return m.rejection(R.EVENT_NOT_ACCEPTED, st, event, None, c)


def _enabled(
    inst: Instance, handled: list[CState], event: str, p: Any
) -> list[CTransition] | Rejection:
    """SCXML's selection for a sent event: each leaf's first rule whose guard holds; a
    `reject` rule among them refuses the step."""
    st, c, m = inst._state, inst._ctx, inst._m
    rule: Any = None
    enabled: list[CTransition] = []
    try:
        for leaf in handled:
            for t in leaf.on[event][1]:
                rule = t
                if t.guard is None or t.guard(c, p, t.source):
                    if t not in enabled:
                        enabled.append(t)
                    break
        for t in enabled:
            if t.target is None:  # a `reject` rule
                rule = DataOf(t)
                data = refusal_data(m, t, c, p, t.source)
                return m.rejection(
                    R.REJECT, st, event, p, c, data,
                    code=t.code, template=t.message, rule=t.index,
                )  # fmt: skip
    except FAULTS as exc:
        return fault_in(inst, exc, rule, st, event, p)
    return enabled


def checked_payload(inst: Instance, st: CState, ev: CEvent, payload: Any) -> Any:
    """The payload as the event's fields make it (defaults filled in, values normalised),
    or the `invalid_payload` refusal."""
    try:
        if payload:
            return ev.check(payload)
        p = ev.empty
        return p if p is not None else ev.check(_EMPTY)
    except (Invalid, RecursionError):
        return invalid_payload(inst, st, ev, payload)


def unmet_requirement(
    inst: Instance, st: CState, ev: CEvent, event: str, p: Any
) -> Rejection | None:
    """The refusal of the first `require` of `ev` that does not hold (or the fault of one
    that cannot be evaluated); None when they all hold."""
    m, c = inst._m, inst._ctx
    rule: Any = None
    try:
        for req in ev.requires:
            rule = req
            if not (req.guard or m._requirement_guard(req))(c, p, st):
                rule = DataOf(req)
                data = refusal_data(m, req, c, p, st)
                return m.rejection(
                    R.REQUIRE, st, event, p, c, data, code=req.code, template=req.message
                )
    except FAULTS as exc:
        return fault_in(inst, exc, rule, st, event, p)
    return None


def goto(inst: Instance, target: str, force: bool, reason: str | None, key: str | None) -> Outcome:
    """Move to `target` along a direct edge (`-> TARGET`) of an active leaf: the first whose
    guard holds. A backward edge (`back`) needs `force`."""
    st, c, m = inst._state, inst._ctx, inst._m
    if st.final:
        return m.rejection(R.INSTANCE_FINAL, st, None, None, c)
    if type(target) is not str:
        target = str(target)
    edges = direct_edges(inst).get(target)
    data = {"from": st.name, "to": target}
    if edges is None:
        kind = R.INVALID_TRANSITION if target in m.states else R.UNKNOWN_STATE
        return m.rejection(kind, st, None, None, c, data)
    if not force and all(t.back for t in edges):
        return m.rejection(R.BACKWARD_REQUIRES_FORCE, st, None, None, c, data)
    chosen = _first_open(inst, edges, force)
    if chosen is None:
        return m.rejection(R.GUARD_FAILED, st, None, None, c, data)
    if isinstance(chosen, Rejection):
        return chosen
    return take(inst, st, [chosen], None, "goto", None, reason, key, None)


def _first_open(
    inst: Instance, edges: tuple[CTransition, ...], force: bool
) -> CTransition | Rejection | None:
    """The first of the direct `edges` whose guard holds (a backward one only with `force`);
    None when none does, the rejection when a guard faults."""
    rule: Any = None
    try:
        with configuration(configuration_of(inst)):
            for t in edges:
                if t.back and not force:
                    continue
                rule = t
                if t.guard is None or t.guard(inst._ctx, None, t.source):
                    return t
    except FAULTS as exc:
        return fault_in(inst, exc, rule, inst._state, None, None)
    return None


def back(inst: Instance, force: bool, reason: str | None, key: str | None) -> Outcome:
    """Return to the most recent earlier state a backward edge of an active leaf leads to,
    along that edge; always with `force`."""
    st, c, m = inst._state, inst._ctx, inst._m
    if st.final:
        return m.rejection(R.INSTANCE_FINAL, st, None, None, c)
    edges = back_edges(inst)
    previous = _previous(inst, {t.target.name for t in edges if t.target is not None})
    if previous is None:
        return m.rejection(R.NO_PREVIOUS_STATE, st, None, None, c, {"from": st.name})
    data = {"from": st.name, "to": previous}
    if not force:
        return m.rejection(R.BACKWARD_REQUIRES_FORCE, st, None, None, c, data)
    taken = _take_back_edge(inst, edges, previous, reason, key)
    if taken is not None:
        return taken
    return m.rejection(R.GUARD_FAILED, st, None, None, c, data)


def _take_back_edge(
    inst: Instance,
    edges: tuple[CTransition, ...],
    previous: str,
    reason: str | None,
    key: str | None,
) -> Outcome | None:
    """Take the first backward edge to `previous` whose event needs no payload and whose
    preconditions and guard hold (None: no edge does)."""
    st, c, m = inst._state, inst._ctx, inst._m
    rule: Any = None
    try:
        with configuration(configuration_of(inst)):
            for t in edges:
                if t.target is None or t.target.name != previous:
                    continue
                rule = t
                p: dict[str, Any] | None = None
                if t.kind == "event":
                    ev = m.events[t.event or ""]
                    p = ev.empty
                    if p is None:
                        continue  # its event needs a payload: only `send` can take it
                    if any(not m._requirement_guard(r)(c, p, st) for r in ev.requires):
                        continue
                if t.guard is None or t.guard(c, p, t.source):
                    return take(inst, st, [t], p, "back", t.event, reason, key, None)
    except FAULTS as exc:
        return fault_in(inst, exc, rule, st, None, None)
    return None


def _previous(inst: Instance, targets: set[str]) -> str | None:
    """The most recent state the history left that is one of `targets`."""
    for entry in reversed(inst._history):
        source = entry[_SOURCE]
        if source is not None and source in targets:
            return source
    return None


def fire_due(inst: Instance, when: int) -> list[Outcome]:
    """Fire every timer due at `when` (epoch ms), soonest first, each as an ordinary step
    recorded at its deadline. The timers due at one deadline are tried innermost state first,
    then in document order, and the first whose guard holds is taken; those of its group
    (`rivals`) are not (they repeat with it when it is an internal `after D -> self`), the
    others are tried next. A timer whose guard faults is dropped and its rejection returned."""
    out: list[Outcome] = []
    while inst._timers or inst._sends:
        sends = inst._sends
        if sends and (not inst._timers or sends[0].due < inst._timers[0][0]):
            if sends[0].due > when:
                break
            inst._sends = sends[1:] or None
            out.append(_deliver(inst, sends[0]))
            continue
        assert inst._timers is not None
        due = inst._timers[0][0]
        if due > when:
            break
        n = 1
        while n < len(inst._timers) and inst._timers[n][0] == due:
            n += 1
        tried = tuple(t for _, t in inst._timers[:n])
        inst._timers = inst._timers[n:] or None
        _fire_one_of(inst, tried, due, out)
    return out


def _deliver(inst: Instance, sent: Scheduled) -> Outcome:
    """A scheduled event, due: sent as a host sends one (the same selection; refused, it is
    dropped), but by the flow itself, so an `internal` event is allowed; recorded at its
    deadline."""
    at = max(sent.due, inst._history[-1][_AT])
    return send(inst, sent.event, sent.payload, None, None, False, at)


def _fire_one_of(
    inst: Instance, tried: tuple[CTransition, ...], due: int, out: list[Outcome]
) -> None:
    """Take the first of the timers due together (`tried`) whose guard holds."""
    st, c = inst._state, inst._ctx
    for i, t in enumerate(tried):
        try:
            if t.guard is not None:
                with configuration(configuration_of(inst)):
                    if not t.guard(c, None, t.source):
                        continue
        except FAULTS as exc:
            out.append(fault_in(inst, exc, t, st, None, None))
            continue
        at = max(due, inst._history[-1][_AT])
        group = tuple(x for x in tried if rivals(x, t))
        out.append(take(inst, st, [t], None, "timer", None, None, None, at, group))
        _keep_untried(inst, t, tried[i + 1 :], due)
        return


def _keep_untried(
    inst: Instance, taken: CTransition, rest: tuple[CTransition, ...], due: int
) -> None:
    """After a timer step: the timers due with the one taken but not tried stay pending
    (they are tried next, at the same deadline) when their state is still active, was not
    re-entered, and they are not of the taken timer's group (`rivals`): a deadline beside
    a repeating `after D -> self` still fires."""
    config = configuration_of(inst)
    pending = {x for _, x in inst._timers or ()}
    keep = [
        (due, x) for x in rest if not rivals(x, taken) and x.source in config and x not in pending
    ]
    if keep:
        inst._timers = due_order([*(inst._timers or ()), *keep])


# ---- taking ------------------------------------------------------------------------------------
def take(
    inst: Instance,
    st: CState,
    ts: list[CTransition],
    p: dict[str, Any] | None,
    kind: str,
    event: str | None,
    reason: str | None,
    key: str | None,
    at: int | None,
    tried: tuple[CTransition, ...] = (),
) -> Outcome:
    """Take the transitions `ts` and run to completion on working copies (`Macrostep`), then
    commit it all, or nothing: one history entry for the whole step, the states passed
    through in `via`. `tried`: for a timer, the timers of its group due with it, which repeat
    with it."""
    m = inst._m
    c = dict(inst._ctx)
    collector = collecting(current_outputs()) if m.collects else _NO_COLLECTOR
    with collector as out:
        raised = out.raised if out is not None else []
        run = Macrostep(
            configuration_of(inst), inst._hist or {}, c, m.limits.max_microsteps, raised
        )
        run.p = p
        run.event = event
        refused = _run(run, m, lambda: run.microstep(run.resolve(ts) if len(ts) > 1 else ts, p))
    if refused is not None:
        return refused.rejection(m, st, event, p, inst._ctx)
    now = inst._now() // inst._per_ms if at is None else at
    config = tuple(sorted(run.config, key=_order))
    timers = _timers_after(inst, run, config, ts, tried, now, c)
    if isinstance(timers, _Refused):
        return timers.rejection(m, st, event, p, inst._ctx)
    sends = inst._sends
    scheduled, messages = _split(out.scheduled if out is not None else None)
    if scheduled or run.final:
        after = sends_after(m, sends, scheduled, run, now, inst._seq + 1)
        if isinstance(after, _Refused):
            return after.rejection(m, st, event, p, inst._ctx)
        sends = after
    effects = out.effects if out is not None else None
    r = _commit(inst, st, run, config, (timers, sends), kind, event, p, reason, key, now, effects)
    if inst._tree is not None:
        # A node of a tree of instances: children start and stop, messages queue (children.py).
        inst._tree.committed(inst, run, config, messages, now)
    return r


def _split(ops: list[Scheduling] | None) -> tuple[list[Scheduling], list[Scheduling]]:
    """A step's scheduled events and `cancel`s, and its messages (`send E to ...`)."""
    if not ops:
        return [], []
    if all(op.to is None for op in ops):
        return ops, []
    return [op for op in ops if op.to is None], [op for op in ops if op.to is not None]


def _timers_after(
    inst: Instance,
    run: Macrostep,
    config: tuple[CState, ...],
    ts: list[CTransition],
    tried: tuple[CTransition, ...],
    now: int,
    c: dict[str, Any],
) -> Timers | _Refused | None:
    """The timers after a step. Those of the states left are cancelled; those of the states
    entered (and still active) are armed; an internal `after D -> self` repeats. (Not when a
    later microstep of the same step left the timer's state: an eventless rule or an internal
    event can end what the timer was repeating.) A computed delay is evaluated against the
    context the step commits, and can still refuse the step."""
    exited = run.exited
    kept = [(due, x) for due, x in inst._timers or () if x.source not in exited]
    arm = tuple(x for s in config if s in run.entered for x in timers_of(s))
    if len(ts) == 1 and (ts[0].plan or plan_of(ts[0])).repeats and ts[0].source not in exited:
        arm += tried or (ts[0],)
    if arm:
        try:
            kept += arm_timers(inst._m, arm, now, c)
        except _DelayFault as bad:
            return _Refused.fault(bad.exc, f"the delay of a timer of {bad.state.name}")
    return due_order(kept) if kept else None


def _commit(
    inst: Instance,
    st: CState,
    run: Macrostep,
    config: tuple[CState, ...],
    pending: tuple[Timers | None, Sends | None],
    kind: str,
    event: str | None,
    p: Any,
    reason: str | None,
    key: str | None,
    now: int,
    effects: list[tuple[str, dict[str, Any]]] | None,
) -> StepResult:
    """Write the step into the instance: nothing here can fail. `pending`: the timers and
    scheduled events after it."""
    m = inst._m
    dest = summary_of(config)
    seq = inst._seq + 1
    leaves: Leaves = None
    names = names_of(m, config) if m.chart else None
    if names is not None and not (st.atomic and dest.atomic):
        leaves = (names_of(m, configuration_of(inst))[1], names[1])
    entry: Entry = (seq, now, kind, st.name, dest.name, event, p, reason, tuple(run.via), leaves)
    inst._history.append(entry)
    inst._seq = seq
    inst._ctx = run.c
    inst._config = config if m.chart else None
    inst._hist = run.histories or None
    inst._state = dest
    inst._timers, inst._sends = pending
    if key is not None:
        inst._remember(key, seq)
    r: StepResult = _new(StepResult)
    r._e = entry
    r._c = run.c
    r._m = m
    if names is not None:
        r._g = names[0]
    r._t = tuple(run.fired)
    if effects:
        r._fx = effects
    if inst._subs:
        inst._notify(r)
    return r


def start(machine: Machine, ctx: dict[str, Any], now_ms: Callable[[], int]) -> Started | Rejection:
    """The start: the initial state entered with its default descendants (and routed onwards
    from a choice state), then run to completion; its timers armed."""
    initial = machine.initial
    # An outer collector (`Instance._start`'s, for a flow that emits) gets the entry effects.
    with collecting(current_outputs()) as out:
        run = Macrostep((), {}, ctx, machine.limits.max_microsteps, out.raised)
        refused = _run(
            run, machine, lambda: run.enter_initial(initial), f"the entry actions of {initial.name}"
        )
    if refused is not None:
        return refused.rejection(machine, initial, None, None, ctx)
    now = now_ms()
    config = tuple(sorted(run.config, key=_order))
    rules = tuple(t for s in config for t in timers_of(s))
    try:
        timers = arm_timers(machine, rules, now, ctx) if rules else None
    except _DelayFault as bad:
        where = f"the delay of a timer of {bad.state.name}"
        return _Refused.fault(bad.exc, where).rejection(machine, initial, None, None, ctx)
    scheduled, messages = _split(out.scheduled)
    sends = sends_after(machine, None, scheduled, run, now, 0) if scheduled else None
    if isinstance(sends, _Refused):
        return sends.rejection(machine, initial, None, None, ctx)
    state = summary_of(config)
    leaves = None if state.atomic or not machine.chart else ((), names_of(machine, config)[1])
    entry: Entry = (0, now, "start", None, state.name, None, None, None, tuple(run.via), leaves)
    fired = tuple(run.fired)
    return Started(
        config, run.histories or None, state, entry, timers or None, fired, sends, run, messages
    )


class Started(NamedTuple):
    """What the start leaves for a new instance."""

    config: tuple[CState, ...]
    histories: dict[str, tuple[CState, ...]] | None
    state: CState
    entry: Entry
    timers: Timers | None
    rules: tuple[int, ...]
    sends: Sends | None
    #: the run to completion (a node of a tree of instances reads what it entered: children.py)
    run: Macrostep
    #: the messages its actions sent (`send E to parent|ID`)
    messages: list[Scheduling]


def _run(
    run: Macrostep, m: Machine, first: Callable[[], None], default: str | None = None
) -> _Refused | None:
    """Run `first` (the step's first microstep) and the run to completion after it; why the
    step is refused, or None."""
    try:
        if m.scoped:
            with within(run):
                first()
                run.settle(m.events, m.eventless)
        else:
            first()
            run.settle(m.events, m.eventless)
    except Refusal as refused:
        return _Refused(refused=refused)
    except RoutingLoop as loop:
        return _Refused(kind=R.ROUTING_LOOP, data={"path": loop.path, "node": loop.path[-1]})
    except FAULTS as exc:
        return _Refused.fault(exc, fault_words(run, exc, default))
    if m.eventless:
        for s in run.config:
            if s.choice:  # a choice state left with no route holding
                return _Refused(kind=R.GUARD_FAILED, data={"from": s.name, "to": None})
    return None


class _Refused:
    """Why a step that ran is refused after all: a fault, a `reject` rule an internal event
    took, a routing loop, a choice state with no route holding. Made into the rejection with
    the committed context (`rejection`)."""

    __slots__ = ("data", "exc", "kind", "refused")

    def __init__(
        self,
        kind: str = R.REJECT,
        data: dict[str, Any] | None = None,
        exc: BaseException | None = None,
        refused: Refusal | None = None,
    ) -> None:
        self.kind, self.data, self.exc, self.refused = kind, data, exc, refused

    @classmethod
    def fault(cls, exc: BaseException, where: str) -> _Refused:
        if isinstance(exc, IRLoadError):
            raise exc  # a bad IR is the programmer's problem, not a refusal
        kind = R.LIMIT_EXCEEDED if isinstance(exc, LimitExceeded) else R.EXPRESSION_ERROR
        return cls(kind, {"where": where, "detail": describe_fault(exc)}, exc)

    def rejection(
        self, m: Machine, st: CState, event: str | None, p: Any, c: Mapping[str, Any]
    ) -> Rejection:
        if self.refused is not None:
            return _rejected_by(m, self.refused, st, event, c)
        return m.rejection(self.kind, st, event, p, c, self.data)


def _rejected_by(
    machine: Machine, refused: Refusal, st: CState, event: str | None, c: Mapping[str, Any]
) -> Rejection:
    """A step refused by a `reject` rule taken for an internal event."""
    t = refused.rule
    fn = machine._refusal_data(t)
    try:
        data = None if fn is None else copy_dict(fn(dict(c), refused.payload, t.source))
    except FAULTS as exc:
        return fault(machine, exc, f"the data of {t.describe()}", st, event, refused.payload, c)
    return machine.rejection(
        R.REJECT, st, event, refused.payload, c, data,
        code=t.code, template=t.message, rule=t.index,
    )  # fmt: skip


# ---- refusals ----------------------------------------------------------------------------------
def fault(
    machine: Machine,
    exc: BaseException,
    where: str,
    st: CState,
    event: str | None,
    p: Any,
    c: Mapping[str, Any],
) -> Rejection:
    """The rejection of a step whose expression faulted `where`."""
    return _Refused.fault(exc, where).rejection(machine, st, event, p, c)


def fault_words(run: Macrostep, exc: BaseException, default: str | None) -> str:
    """Where a step faulted."""
    if isinstance(exc, Microsteps):
        return "the run to completion"
    taken = run.taken
    if taken is not None and taken.source.choice:
        return f"routing through {taken.source.name} ({taken.describe()})"
    if run.step is not None and taken is not None:
        if run.step.phase != "actions":
            return f"the {run.step.phase} actions of {run.step.state.name}"
        return f"the actions of {taken.describe()}"
    if run.step is not None:
        return f"the {run.step.phase} actions of {run.step.state.name}"
    if taken is not None:
        return f"the guard of {taken.describe()}"
    return default or "a raised event"


def fault_in(
    inst: Instance, exc: BaseException, rule: Any, st: CState, event: str | None, p: Any
) -> Rejection:
    """The rejection of a fault while choosing: in a guard, a precondition or their data."""
    if isinstance(rule, DataOf):
        of = rule.rule
        if isinstance(of, Requirement):
            where = f"the data of the precondition {of.code} of {event}"
        else:
            where = f"the data of {of.describe()}"
    elif isinstance(rule, Requirement):
        where = f"the precondition {rule.code} of {event}"
    elif isinstance(rule, CTransition):
        where = f"the guard of {rule.describe()}"
    else:
        where = "a guard"
    return fault(inst._m, exc, where, st, event, p, inst._ctx)


def invalid_payload(inst: Instance, st: CState, ev: CEvent, payload: Any) -> Rejection:
    """`invalid_payload`, with the field-level feedback worked out when read, from a copy
    (the host may change its payload)."""
    m = inst._m
    limits = m.limits
    try:
        given = copy_json(payload) if payload is not None else _EMPTY
    except RecursionError:  # nested deeper than a copy can go: worked out now, as it is
        data = payload_feedback(ev, payload, limits)
        return m.rejection(R.INVALID_PAYLOAD, st, ev.name, None, inst._ctx, data)
    return m.rejection(
        R.INVALID_PAYLOAD, st, ev.name, None, inst._ctx,
        data_of=(payload_feedback, (ev, given, limits)),
    )  # fmt: skip


def payload_feedback(ev: CEvent, given: Any, limits: Limits) -> dict[str, Any]:
    """The data of `invalid_payload`: seed 003's field-level feedback."""
    issues = report(ev.type, given, limits=limits)
    action = f"Send {ev.name} again with corrected data."
    if issues.unknown:
        action += " Unknown fields may be typos."
    return feedback(issues, action)


@dataclass(frozen=True, slots=True)
class DataOf:
    """Where a fault happened: in the data (`with {...}`) of this clause or rule."""

    rule: Requirement | CTransition


def refusal_data(
    machine: Machine, rule: Requirement | CTransition, c: dict[str, Any], p: Any, st: CState
) -> dict[str, Any] | None:
    """The data a flow's own refusal carries (`with {...}`): a copy, the host's to keep."""
    fn = machine._refusal_data(rule)
    return None if fn is None else copy_dict(fn(c, p, st))


# ---- scheduled events --------------------------------------------------------------------------
def sends_after(
    m: Machine,
    pending: Sends | None,
    scheduled: list[Scheduling],
    run: Macrostep,
    now: int,
    seq: int,
) -> Sends | _Refused | None:
    """The scheduled events after a step: its `send` and `cancel` actions applied in order to
    those pending (a `send` with the id of a pending one replaces it; one without an id gets
    `#SEQ.N`, its place in step SEQ; a `cancel` of an unknown id does nothing), or none once
    the instance has ended. A payload that does not fit its event refuses the step."""
    if run.final:
        return None
    by_id = {x.id: x for x in pending or ()}
    for n, op in enumerate(scheduled):
        ident = op.id if op.id is not None else f"#{seq}.{n}"
        by_id.pop(ident, None)
        if op.event is None:
            continue
        ev = m.events[op.event]
        try:
            payload = ev.check(op.payload) if op.payload else ev.empty or ev.check(_EMPTY)
        except (Invalid, RecursionError):
            exc = ExprFault(
                f"the payload of the scheduled event {op.event} does not fit its fields"
            )
            return _Refused.fault(exc, f"a `send {op.event}`")
        by_id[ident] = Scheduled(now + op.delay_ms, ident, op.event, payload)
    if not by_id:
        return None
    return tuple(sorted(by_id.values(), key=lambda x: x.due))


# ---- timers ------------------------------------------------------------------------------------
class _DelayFault(Exception):
    """A computed delay that faulted, and the state of its timer."""

    def __init__(self, exc: BaseException, state: CState) -> None:
        super().__init__(str(exc))
        self.exc, self.state = exc, state


def arm_rules(rules: tuple[CTransition, ...], now: int) -> Timers:
    """Timers with constant delays, due from `now`."""
    return due_order([(now + t.after_ms, t) for t in rules if t.after_ms])


def arm_timers(
    machine: Machine, rules: tuple[CTransition, ...], now: int, c: dict[str, Any]
) -> Timers:
    """The timers of `rules`: constant delays as `arm_rules` arms them, computed ones
    (`after EXPR UNIT`) evaluated against `c`, the context the step commits, with their own
    state as `state`; each must be an int of milliseconds. A delay below 1 ms counts as 1 ms (a
    timer fires after the step that armed it, so `advance` always ends); one longer than any
    timer may wait is a fault (`_DelayFault`)."""
    if all(t.after_ms is not None for t in rules):
        return arm_rules(rules, now)
    timers: list[tuple[int, CTransition]] = []
    for t in rules:
        ms = t.after_ms
        if ms is None:
            try:
                ms = _computed_delay(machine, t, c)
            except FAULTS as exc:
                raise _DelayFault(exc, t.source) from exc
        timers.append((now + ms, t))
    return due_order(timers)


def _computed_delay(machine: Machine, t: CTransition, c: dict[str, Any]) -> int:
    ms = machine._compiler.compile(t.after_expr)(c, None, t.source)
    return checked_delay(ms, t.describe())


def due_order(timers: list[tuple[int, CTransition]]) -> Timers:
    """Soonest first; timers due together innermost state first (as an event's rules are
    tried: a compound's timers after its children's), then in document order."""
    timers.sort(key=lambda x: (x[0], x[1].rank))
    return tuple(timers)


def names_of(m: Machine, config: tuple[CState, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """A configuration's state names and leaf names (`StepResult.configuration`, the leaves a
    history entry records), worked out once per configuration: a parallel chart's every step
    records them. A history entry records leaves only when `source` or `target` does not
    name them: `state` (the summary) is a leaf exactly when one is active."""
    found = m.config_names.get(config)
    if found is None:
        if len(m.config_names) >= CONFIG_NAMES_KEPT:
            m.config_names.clear()
        names = tuple(s.name for s in config)
        found = m.config_names[config] = (names, tuple(s.name for s in config if s.atomic))
    return found
