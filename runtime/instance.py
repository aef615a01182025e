"""`Instance`: one running flow: its state, context, history and pending timers.

Every operation (`send`, `goto`, `back`, a due timer in `advance`) is one atomic step: the
transition is chosen, then exit actions, transition actions and entry actions run on a working
copy of the context (routing through choice states included), and only when all of it
succeeded are state, context, history and timers replaced, in that order, with no code that can
fail in between. A refusal or a fault returns a `Rejection` and leaves the instance exactly as
it was.

The hot path is written for speed: `send` makes one lookup for the function generated for the
event in the current state (codegen.py), which checks the payload, picks the rule and commits
an accepted step inline, and hands everything else to `_send_slow`, the general path. Both
take a transition the way its plan (engine.py) says: `_take` interprets it, and the generated
function is written from it. The
context is copied only when an action will run, and history records a tuple per step
(`HistoryEntry` objects are built only when asked for).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from datetime import datetime
from functools import partial
from typing import TYPE_CHECKING, Any, Final, TypeVar, cast

from flowc.runtime import children as childflows
from flowc.runtime import engine
from flowc.runtime import rejections as R
from flowc.runtime.clock import Clock, ms_reader, ms_to_datetime, read_ms, to_ms
from flowc.runtime.engine import (
    Macrostep,
    summary_of,
    with_ancestors,
)
from flowc.runtime.expr import FAULTS
from flowc.runtime.flow import CTransition
from flowc.runtime.limits import text_problem
from flowc.runtime.model import IRLoadError
from flowc.runtime.outputs import collecting, current_outputs
from flowc.runtime.rejections import Rejection, SnapshotError, UnknownTemplate
from flowc.runtime.steps import (
    _AT,
    _EVENT,
    _KIND,
    _LEAVES,
    _NO_VIA,
    _PAYLOAD,
    _REASON,
    _SEQ,
    _SOURCE,
    _TARGET,
    _VIA,
    AcceptedEvent,
    Entry,
    HistoryEntry,
    Leaves,
    Outcome,
    StepResult,
    _new,
    _ReplayedStep,
    copy_dict,
    copy_json,
)
from flowc.runtime.templating import wrap
from flowc.runtime.validate import Invalid, feedback, report

if TYPE_CHECKING:
    from flowc.runtime.flow import CEvent, CState
    from flowc.runtime.machine import Machine

log = logging.getLogger("flowc.runtime")

#: The snapshot formats. /2 (engine 2): a statechart's history entries may carry
#: `source_leaves` / `target_leaves`; a snapshot with none is written as /1, which earlier
#: releases read, and a /1 written by them restores (its entries without leaves, its times
#: rounded to the millisecond) and runs on under the current semantics (docs/runtime.md).
SNAPSHOT_FORMAT: Final = "flowc.snapshot/2"
SNAPSHOT_FORMAT_1: Final = "flowc.snapshot/1"
#: /3: the snapshot has pending scheduled events (`sends`); written only then.
SNAPSHOT_FORMAT_3: Final = "flowc.snapshot/3"
#: /4: the instance is part of a tree with children, joins or messages pending (children.py);
#: written only then.
SNAPSHOT_FORMAT_4: Final = "flowc.snapshot/4"
SNAPSHOT_FORMATS_READ: Final = frozenset(
    {SNAPSHOT_FORMAT_1, SNAPSHOT_FORMAT, SNAPSHOT_FORMAT_3, SNAPSHOT_FORMAT_4}
)
#: Every top-level field a snapshot may have; any other is refused (a hand edit or a typo
#: would otherwise be dropped without a word). `lineage` is the durable layer's (a fork's
#: origin, `DurableFlows.fork`): an instance restores past it and the store carries it on.
#: `retired_states`: states of older versions of the flow that the history still names (an
#: instance moved to a newer version keeps its past; only then may a name be unknown).
SNAPSHOT_FIELDS: Final = frozenset(
    {
        "format", "flow", "version", "hash", "id", "state", "seq", "context", "history",
        "timers", "keys", "configuration", "histories", "lineage", "retired_states", "sends",
        "children", "joins", "inbox",
    }
)  # fmt: skip
#: Idempotency keys remembered per instance (the oldest are forgotten first).
KEYS_KEPT: Final = 1024
_T = TypeVar("_T")

_EMPTY: dict[str, Any] = {}


class Instance:
    """A running instance of a `Machine`. Create with `machine.start(...)` or
    `machine.restore(snapshot)`. Not thread-safe: drive one instance from one thread (or use
    `flowc.runtime.aio.AsyncInstance`, which serialises steps with a lock)."""

    __slots__ = (
        "__weakref__",
        "_clock",
        "_config",
        "_ctx",
        "_fx",
        "_guarded",
        "_hist",
        "_history",
        "_keys",
        "_m",
        "_now",
        "_per_ms",
        "_retired",
        "_sends",
        "_seq",
        "_start_rules",
        "_state",
        "_subs",
        "_timers",
        "_tree",
        "id",
    )

    _m: Machine
    _state: CState
    _ctx: dict[str, Any]
    _seq: int
    _history: list[Entry]
    _timers: engine.Timers | None
    #: pending scheduled events (`send E after D`), soonest first; None: none
    _sends: engine.Sends | None
    #: A statechart's configuration (every active state, in document order) and recorded
    #: histories (history state -> the states recorded); None for a flat flow, whose
    #: configuration is `_state` alone.
    _config: tuple[CState, ...] | None
    _hist: dict[str, tuple[CState, ...]] | None
    _keys: dict[str, int] | None
    #: states of older versions that the history names (None: none, the usual case)
    _retired: frozenset[str] | None
    _subs: list[Callable[[StepResult], object]] | None
    _clock: Clock
    #: `_clock` read in integer milliseconds: `_now() // _per_ms` (`clock.ms_reader`)
    _now: Callable[[], int]
    _per_ms: int
    #: the effects the initial state's entry actions emitted at the start (rarely set)
    _fx: list[tuple[str, dict[str, Any]]] | None
    #: the rules a statechart's start took (eventless rules, completion events)
    _start_rules: tuple[int, ...] | None
    #: Its node in a tree of instances (children.py): the flow invokes children or sends
    #: messages, or the instance is a child; None otherwise.
    _tree: childflows.Node | None
    id: str | None

    # ---- creation ---------------------------------------------------------------------------
    @classmethod
    def _blank(cls, machine: Machine, id: str | None, clock: Clock) -> Instance:
        self: Instance = _new(cls)
        self._m = machine
        self._clock = clock
        self._now, self._per_ms = ms_reader(clock)
        self._keys = None
        self._retired = None
        self._subs = None
        self._timers = None
        self._sends = None
        self._guarded = False
        self._config = None
        self._hist = None
        self._fx = None
        self._start_rules = None
        self._tree = None
        self.id = id
        return self

    @classmethod
    def _start(
        cls,
        machine: Machine,
        context: Mapping[str, Any] | None,
        id: str | None,
        clock: Clock,
        place: childflows.Place | None = None,
    ) -> Instance | Rejection:
        """A new instance; `place`: where a child goes in its tree (children.py)."""
        if machine.emits and current_outputs() is None:
            return cls._start_collecting(machine, context, id, clock, place)
        initial = machine.initial
        given = context if context is not None else _EMPTY
        try:
            ctx: dict[str, Any] = machine.context_type.check(given)
        except (Invalid, RecursionError):
            issues = report(machine.context_type, given, limits=machine.limits)
            data = feedback(issues, "Start the instance again with a corrected context.")
            return machine.rejection(R.INVALID_CONTEXT, initial, None, None, _EMPTY, data)
        started = engine.start(machine, ctx, lambda: read_ms(clock))
        if type(started) is Rejection:
            return started
        assert isinstance(started, engine.Started)
        self = cls._blank(machine, id, clock)
        self._config = started.config if machine.chart else None
        self._hist = started.histories
        self._state = started.state
        self._ctx = ctx
        self._seq = 0
        self._history = [started.entry]
        self._timers = started.timers
        self._sends = started.sends
        self._start_rules = started.rules
        if machine.composes:
            childflows.attach(self, place, started)
        return self

    @classmethod
    def _start_collecting(
        cls,
        machine: Machine,
        context: Mapping[str, Any] | None,
        id: str | None,
        clock: Clock,
        place: childflows.Place | None,
    ) -> Instance | Rejection:
        """`_start` of a flow that emits effects: the effects of its start are kept for the
        start's result."""
        with collecting() as outputs:
            started = cls._start(machine, context, id, clock, place)
        if type(started) is not Rejection and outputs.effects:
            started._fx = outputs.effects  # type: ignore[union-attr]
        return started

    # ---- reading ----------------------------------------------------------------------------
    @property
    def start_effects(self) -> list[dict[str, Any]]:
        """The effects the initial state's entry actions emitted when this instance started
        (`{"effect": name, "payload": {...}}`, copies); empty for a restored instance."""
        return [{"effect": n, "payload": copy_dict(p)} for n, p in self._fx or ()]

    @property
    def start_rules_taken(self) -> tuple[int, ...] | None:
        """The IR indices of the rules the start took before it settled, in order, as
        `StepResult.rules_taken` gives them for a step: a flat flow's routes out of an initial
        choice state (often none), a statechart's eventless rules and completion events.
        None for a restored instance."""
        return self._start_rules

    @property
    def machine(self) -> Machine:
        return self._m

    @property
    def clock(self) -> Clock:
        """Where this instance reads the time."""
        return self._clock

    @property
    def state(self) -> str:
        return self._state.name

    @property
    def configuration(self) -> tuple[str, ...]:
        """Every active state, in document order: in a flat flow `(state,)`; in a statechart
        the active leaves and all their ancestors."""
        if self._config is None:
            return (self._state.name,)
        return tuple(s.name for s in self._config)

    def active(self, name: str) -> bool:
        """Whether state `name` is active (in the configuration)."""
        if self._config is None:
            return self._state.name == name
        return any(s.name == name for s in self._config)

    @property
    def title(self) -> str:
        """The state's title (its name when it has none)."""
        return self._state.title

    @property
    def meta(self) -> dict[str, Any]:
        """The state's `meta` (a copy)."""
        return copy_dict(self._state.meta)

    @property
    def context(self) -> dict[str, Any]:
        """The context (a copy: changing it changes nothing in the instance)."""
        return copy_dict(self._ctx)

    def get(self, field: str) -> Any:
        """One context field (a copy)."""
        return copy_json(self._ctx[field])

    @property
    def is_final(self) -> bool:
        return self._state.final

    @property
    def seq(self) -> int:
        """The sequence number of the last committed step (0: just started)."""
        return self._seq

    @property
    def history(self) -> list[HistoryEntry]:
        """Every committed step, oldest first, starting with the start itself (seq 0)."""
        return [HistoryEntry(e) for e in self._history]

    @property
    def timers(self) -> list[dict[str, Any]]:
        """Pending timers: `{"due": datetime, "target": state, "after_ms": ms}`, soonest first."""
        return [
            {
                "due": ms_to_datetime(due),
                "target": t.target.name if t.target else None,
                "after_ms": t.after_ms,
            }
            for due, t in self._timers or ()
        ]

    @property
    def scheduled(self) -> list[dict[str, Any]]:
        """Pending scheduled events (`send E after D as ID`): `{"id", "due": datetime,
        "event", "payload"}`, soonest first."""
        return [
            {
                "id": x.id,
                "due": ms_to_datetime(x.due),
                "event": x.event,
                "payload": copy_json(x.payload),
            }
            for x in self._sends or ()
        ]

    @property
    def children(self) -> dict[str, Instance]:
        """The child instances its `invoke`s started and that are still current (their state
        not left), by child id (`ID.SEQ`, a fan-out's `ID.SEQ.K`), in start order; ended ones
        stay until their state is left."""
        return dict(self._tree.kids) if self._tree is not None else {}

    def child(self, path: str) -> Instance:
        """A descendant by its path, `/` between levels. Each part is a child id (`pay.3`,
        `reviews.2.0`), or an invoke's id for its current child (`pay`), or `ID[K]` for the
        child at position K of a fan-out (`reviews[0]/fraud`). KeyError when there is none."""
        inst: Instance = self
        for part in path.split("/"):
            found = childflows.find_child(inst, part)
            if found is None:
                raise KeyError(path)
            inst = found
        return inst

    @property
    def next_deadline(self) -> datetime | None:
        """When the next timer or scheduled event is due (to schedule a wake-up), or None. In
        a tree of instances, the earliest of the tree's."""
        if self._tree is not None:
            due = childflows.earliest(self._tree.root)
            return None if due is None else ms_to_datetime(due[0])
        dues = [x[0] for x in (self._timers or ())[:1] + (self._sends or ())[:1]]
        return ms_to_datetime(min(dues)) if dues else None

    def accepted_events(self) -> list[AcceptedEvent]:
        """The events that may be accepted now, with their payload JSON Schemas.

        An event is listed when some non-`reject` rule for it could fire: rules whose guard
        reads only the context are judged now, rules whose guard reads the payload count as
        possible; a `reject` rule that holds now whatever the payload (e.g. an exhausted hint
        budget) hides the event, and so does a precondition that fails now."""
        st, c = self._state, self._ctx
        out: list[AcceptedEvent] = []
        # The events of every active leaf (each with its candidates there and in its
        # ancestors), in document order; `done.state.*` and `internal` events are not the host's.
        internal = self._m.internal_events | self._m.own_events
        leaves = engine.leaves_of(self)
        for leaf in leaves:
            for name, (ev, candidates) in leaf.on.items():
                if name in internal or any(a.name == name for a in out):
                    continue
                if self._may_accept(st, ev, candidates, c) and not any(
                    name in other.on and _refuses(other.on[name][1], c) for other in leaves
                ):
                    # (a `reject` that holds now in another region refuses the whole step)
                    out.append(AcceptedEvent(name, json.loads(json.dumps(ev.schema()))))
        return out

    def _may_accept(
        self, st: CState, ev: CEvent, candidates: tuple[CTransition, ...], c: dict[str, Any]
    ) -> bool:
        m = self._m
        for req in ev.requires:
            if not req.uses_event() and not _holds(m._requirement_guard(req), c, st):
                return False
        for t in candidates:
            if t.guard is not None and t.uses_event():
                if t.kind != "reject":
                    return True
                continue  # may or may not refuse, depending on the payload
            if t.guard is None or _holds(t.guard, c, t.source):
                return t.kind != "reject"
        return False

    def allowed_targets(self, *, force: bool = False) -> list[str]:
        """The states `goto` can reach now (direct edges whose guard holds). Backward edges
        count only with `force=True`, as in `goto`."""
        c = self._ctx
        direct = engine.direct_edges(self)
        return [
            target
            for target, edges in direct.items()
            if any(
                (force or not t.back) and (t.guard is None or _holds(t.guard, c, t.source))
                for t in edges
            )
        ]

    # ---- steps ------------------------------------------------------------------------------
    def send(
        self,
        event: str,
        payload: Mapping[str, Any] | None = None,
        *,
        force: bool = False,
        reason: str | None = None,
        key: str | None = None,
    ) -> Outcome:
        """Deliver an event. Returns the committed `StepResult`, or a `Rejection` (nothing
        changed). A winning rule marked `back` needs `force=True`, as every backward move
        does; without it the answer is `backward_requires_force`. With `key`, a key already
        applied returns the earlier step (`replayed`)."""
        if self._m.invariants and not self._guarded:
            # A partial, not a lambda: a lambda here would make every send put its arguments
            # in closure cells, invariants checked or not.
            return self._guard(
                partial(self.send, event, payload, force=force, reason=reason, key=key), event
            )
        if self._tree is not None and not self._tree.root.busy:
            step = partial(self.send, event, payload, force=force, reason=reason, key=key)
            return childflows.host_step(self, step, event)
        if key is not None or reason is not None:
            early = self._early_outcome(key, reason, event)
            if early is not None:
                return early
        if force:  # rare and deliberate: the general path, which alone reads it
            return self._send_slow(event, payload, reason, key, True)
        try:
            dispatch = self._state.fast[event]
        except (KeyError, TypeError):
            if type(event) is not str:
                event = str(event)  # a list or a number names no event: said as a rejection
            dispatch = self._m._dispatch(self._state, event)
        return dispatch(self, payload, reason, key)

    def _send_slow(
        self,
        event: str,
        payload: Mapping[str, Any] | None,
        reason: str | None,
        key: str | None,
        force: bool = False,
    ) -> Outcome:
        """`send` on the general path: what a generated dispatch function (codegen.py) hands
        over whenever the step is not a plain accepted one, and what it must agree with."""
        return engine.send(self, event, payload, reason, key, force)

    def goto(
        self,
        target: str,
        *,
        force: bool = False,
        reason: str | None = None,
        key: str | None = None,
    ) -> Outcome:
        """Move to `target` along a direct edge (`-> TARGET`) of the current state: the first
        whose guard holds. A backward edge (`back`) needs `force=True`."""
        if self._m.invariants and not self._guarded:
            return self._guard(partial(self.goto, target, force=force, reason=reason, key=key))
        if self._tree is not None and not self._tree.root.busy:
            step = partial(self.goto, target, force=force, reason=reason, key=key)
            return childflows.host_step(self, step, None)
        if key is not None or reason is not None:
            early = self._early_outcome(key, reason, None)
            if early is not None:
                return early
        return engine.goto(self, target, force, reason, key)

    def back(
        self, *, force: bool = False, reason: str | None = None, key: str | None = None
    ) -> Outcome:
        """Return to the most recent earlier state that a backward edge (`back`) of the current
        state leads to, along that edge. Backward moves always need `force=True`: without it
        the answer is `backward_requires_force` naming the state it would go to."""
        if self._m.invariants and not self._guarded:
            return self._guard(partial(self.back, force=force, reason=reason, key=key))
        if self._tree is not None and not self._tree.root.busy:
            step = partial(self.back, force=force, reason=reason, key=key)
            return childflows.host_step(self, step, None)
        if key is not None or reason is not None:
            early = self._early_outcome(key, reason, None)
            if early is not None:
                return early
        return engine.back(self, force, reason, key)

    def advance(self, now: float | datetime | None = None) -> list[Outcome]:
        """Fire every timer due at `now` (default: the clock's time), soonest first, each as
        an ordinary step recorded at its deadline. The timers due at one deadline are tried
        in source order and the first whose guard holds is taken; the others due then are
        not (when the one taken is an internal `after D -> self`, they repeat with it). A
        timer whose guard faults is dropped and its rejection returned."""
        if self._m.invariants and not self._guarded:
            return self._guard(partial(self.advance, now))
        when = self._now() // self._per_ms if now is None else to_ms(now)
        if self._tree is not None:
            # The whole tree's timers, from its root (children.py).
            root = self._tree.root
            if not root.busy:
                fire = partial(childflows.advance, root, when)
                return childflows.host_step(root.inst, fire, None)
        return engine.fire_due(self, when)

    # ---- refusals ---------------------------------------------------------------------------

    def _early_outcome(self, key: Any, reason: Any, event: Any) -> Outcome | None:
        """What a step with a `key` or `reason` answers before it runs: `invalid_argument` for
        a bad one, or the earlier step for a key already applied (None: the step runs)."""
        bad = self._bad_argument(key, reason, event)
        if bad is not None:
            return bad
        if key is not None and self._keys is not None and key in self._keys:
            return self._replay(key)
        return None

    def _bad_argument(self, key: Any, reason: Any, event: Any) -> Rejection | None:
        """`invalid_argument` for a key or reason that is not a string the history and every
        store can keep (None when both are fine)."""
        most = self._m.limits.max_argument
        for name, value in (("key", key), ("reason", reason)):
            if value is None:
                continue
            if not isinstance(value, str):
                problem = f"expected a string, got {type(value).__name__!r}"
            elif len(value) > most:
                problem = f"{len(value):,} characters; at most {most:,}"
            else:
                problem = text_problem(value)  # type: ignore[assignment]
                if problem is None:
                    continue
            data = {"argument": name, "problem": problem}
            st = self._state
            ev = event if isinstance(event, str) and text_problem(event) is None else None
            return self._m.rejection(R.INVALID_ARGUMENT, st, ev, None, self._ctx, data)
        return None

    # ---- invariants (Machine(check_invariants=True)) ----------------------------------------
    def _guard(self, step: Callable[[], _T], event: str | None = None) -> _T:
        """Run `step` with subscribers held back; if it committed a context that breaks an
        invariant, put everything back and refuse it (`invariant_violated`). `advance` is
        judged as a whole: a timer that breaks one refuses the timers fired with it."""
        before = (self._state, self._ctx, self._seq, len(self._history), self._timers)
        chart = (self._config, self._hist, self._sends)
        keys = dict(self._keys) if self._keys is not None else None
        subs, self._subs = self._subs, None
        self._guarded = True
        try:
            out = step()
        finally:
            self._guarded = False
            self._subs = subs
        done = [r for r in (out if isinstance(out, list) else [out]) if type(r) is StepResult]
        if done:
            broken = self._broken_invariants()
            if broken:
                state, ctx, seq, length, timers = before
                self._state, self._ctx, self._seq, self._timers = state, ctx, seq, timers
                self._config, self._hist, self._sends = chart
                del self._history[length:]
                self._keys = keys
                data = {"invariants": broken, "to": done[-1].to}
                refused = self._m.rejection(R.INVARIANT_VIOLATED, state, event, None, ctx, data)
                return cast(_T, [refused] if isinstance(out, list) else refused)
            if subs:
                for r in done:
                    self._notify(r)
        return out

    def _broken_invariants(self) -> list[str]:
        broken = []
        for name, check in self._m.invariants or ():
            try:
                held = check(self._ctx, None, self._state) is True
            except FAULTS:
                held = False
            if not held:
                broken.append(name)
        return broken

    # ---- idempotency, subscribers -----------------------------------------------------------
    def _remember(self, key: str, seq: int) -> None:
        keys = self._keys
        if keys is None:
            keys = self._keys = {}
        keys[key] = seq
        if len(keys) > KEYS_KEPT:
            del keys[next(iter(keys))]

    def _replay(self, key: str) -> StepResult:
        assert self._keys is not None
        seq = self._keys[key]
        entry = next(e for e in reversed(self._history) if e[_SEQ] == seq)
        r: StepResult = _new(_ReplayedStep)
        r._e = entry
        r._c = self._ctx
        r._m = self._m
        return r

    def subscribe(self, callback: Callable[[StepResult], object]) -> Callable[[], None]:
        """Call `callback(step)` after every committed step (not after rejections or replays).
        Returns a function that unsubscribes. A callback that raises is logged and skipped:
        the step stays committed."""
        subs = self._subs
        if subs is None:
            subs = self._subs = []
        subs.append(callback)

        def unsubscribe() -> None:
            if self._subs and callback in self._subs:
                self._subs.remove(callback)

        return unsubscribe

    def _notify(self, step: StepResult) -> None:
        for cb in list(self._subs or ()):
            try:
                cb(step)
            except Exception:
                log.exception("flowc: a subscriber of %s raised", self._m.name)

    # ---- templates --------------------------------------------------------------------------
    def render(self, template: str, /, **extra: Any) -> str:
        """Render the flow's `template NAME` with `context`, `state` (name, title, meta) and
        the keyword arguments as variables."""
        source = self._m.templates.get(template)
        if source is None:
            raise UnknownTemplate(template)
        variables: dict[str, Any] = {"context": wrap(self._ctx), "state": wrap(self._state.view())}
        variables.update({k: wrap(v) for k, v in extra.items()})
        return self._m.template_cache.render(source, variables)

    # ---- snapshots --------------------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        """Everything needed to bring the instance back, as JSON-able data: the flow's name,
        version and hash, state, context, history, pending timers (absolute deadlines) and the
        idempotency keys."""
        m = self._m
        snap = {
            "format": SNAPSHOT_FORMAT_1,
            "flow": m.name,
            "version": m.version,
            "hash": m.hash,
            "id": self.id,
            "state": self._state.name,
            "seq": self._seq,
            "context": copy_json(self._ctx),
            "history": [HistoryEntry(e).to_dict() for e in self._history],  # (format: below)
            "timers": [
                {
                    "due": ms_to_datetime(due).isoformat(),
                    "index": t.index,
                    "source": t.source.name,
                    "target": t.target.name if t.target else None,
                    "after_ms": t.after_ms,
                }
                for due, t in self._timers or ()
            ],
            "keys": dict(self._keys or {}),
        }
        if any(e[_LEAVES] is not None for e in self._history):
            snap["format"] = SNAPSHOT_FORMAT
        if self._sends:
            # Only then /3: a snapshot without them reads as before, and a runtime that does
            # not know them refuses one that has them (rather than lose them).
            snap["format"] = SNAPSHOT_FORMAT_3
            snap["sends"] = [
                {
                    "id": x.id,
                    "due": ms_to_datetime(x.due).isoformat(),
                    "event": x.event,
                    "payload": copy_json(x.payload),
                }
                for x in self._sends
            ]
        if m.hierarchical and self._config is not None:
            # Only a hierarchical flow's snapshot has them: a flat flow's reads as before.
            snap["configuration"] = [s.name for s in self._config if s.atomic]
            snap["histories"] = {h: [s.name for s in v] for h, v in (self._hist or {}).items()}
        if self._retired:
            snap["retired_states"] = sorted(self._retired)
        if self._tree is not None:
            childflows.snapshot_into(self._tree, snap, SNAPSHOT_FORMAT_4)
        return snap

    def snapshot_json(self) -> str:
        return json.dumps(self.snapshot(), ensure_ascii=False, sort_keys=True)

    @classmethod
    def _restore(
        cls,
        machine: Machine,
        snapshot: Mapping[str, Any] | str | bytes,
        clock: Clock,
        drop_unknown: bool,
        place: childflows.Place | None = None,
    ) -> Instance:
        """`place`: where a child goes in its tree (children.py)."""
        data = _snapshot_data(snapshot, machine)
        raw_state = data.get("state")
        state = machine.states.get(raw_state) if isinstance(raw_state, str) else None
        if state is None:
            raise SnapshotError(
                f"state {data.get('state')!r} of the snapshot does not exist in "
                f"{machine.name} version {machine.version}"
            )
        ctx = _restored_context(data, machine, drop_unknown)
        history, seq, keys = _restored_history(data)
        _check_history(history, seq, machine)
        same_flow = bool(machine.hash) and data.get("hash") == machine.hash
        retired = _retired_states(history, data, machine, same_flow)
        _check_keys(keys, history, machine)
        if not history:
            # A snapshot written by a host before it kept history: start it here.
            at = read_ms(clock)
            history = [(seq, at, "start", None, state.name, None, None, None, _NO_VIA, None)]
        self = cls._blank(machine, data.get("id"), clock)
        rules = state.timers
        if machine.chart:
            config, self._hist = _restore_configuration(machine, state, data)
            self._config = config
            state = summary_of(config)
            rules = tuple(t for s in config for t in s.timers)
        self._state = state
        self._ctx = ctx
        self._seq = seq
        self._history = history
        self._keys = keys or None
        self._retired = retired or None
        self._timers = _restore_timers(
            rules,
            data.get("timers") or (),
            _entered(history, state.name),
            not same_flow,
            machine.states,
        )
        self._sends = _restore_sends(data.get("sends"), machine)
        if machine.composes:
            childflows.restore(self, data, place)
        return self

    def __repr__(self) -> str:
        return f"<Instance {self._m.name} in {self._state.name} (seq {self._seq})>"


# ---- helpers ------------------------------------------------------------------------------------


def _entered(history: list[Entry], state: str) -> int:
    """When the instance last entered `state` (internal `-> self` steps do not count)."""
    for e in reversed(history):
        if e[_TARGET] == state and e[_SOURCE] != state:
            return e[_AT]
    return history[-1][_AT]


def _restored_context(
    data: Mapping[str, Any], machine: Machine, drop_unknown: bool
) -> dict[str, Any]:
    """The snapshot's context, checked against the flow (fields it dropped forgotten when
    `drop_unknown`)."""
    raw_ctx = data.get("context") or {}
    if not isinstance(raw_ctx, Mapping):
        raise SnapshotError("the snapshot's context is not an object")
    if drop_unknown:
        known = {f.name for f in machine.context_fields}
        raw_ctx = {k: v for k, v in raw_ctx.items() if k in known}
    try:
        ctx: dict[str, Any] = machine.context_type.check(raw_ctx)
    except (Invalid, RecursionError):
        issues = report(machine.context_type, raw_ctx, limits=machine.limits)
        raise SnapshotError(
            "the snapshot's context does not fit the flow: "
            + json.dumps(issues.as_dict(), default=repr)
        ) from None
    return ctx


def _restored_history(data: Mapping[str, Any]) -> tuple[list[Entry], int, dict[str, int]]:
    """The snapshot's history entries, its seq and its idempotency keys (oldest first), as
    read; `_check_history` and `_check_keys` say whether they can be kept."""
    try:
        history: list[Entry] = [
            (
                int(h["seq"]),
                to_ms(h["at"]),
                str(h["kind"]),
                h.get("source"),
                str(h["target"]),
                h.get("event"),
                copy_json(h.get("payload")),
                h.get("reason"),
                tuple(h.get("via") or ()),
                _restored_leaves(h),
            )
            for h in data.get("history") or ()
        ]
        seq = int(data.get("seq", history[-1][_SEQ] if history else 0))
        # Oldest first, as they were applied: the cap evicts from the front, and JSON
        # writers (ours included, with sort_keys) do not keep the order.
        applied = sorted((int(v), str(k)) for k, v in (data.get("keys") or {}).items())
        keys = {k: v for v, k in applied}
    except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as exc:
        raise SnapshotError(f"malformed snapshot history: {str(exc)[:200]}") from None
    return history, seq, keys


def _check_keys(keys: dict[str, int], history: list[Entry], machine: Machine) -> None:
    """Every idempotency key is text a store can keep and names a step of the history."""
    recorded = {e[_SEQ] for e in history}
    for key, at_seq in keys.items():
        if text_problem(key) is not None or len(key) > machine.limits.max_argument:
            raise SnapshotError("the snapshot has an idempotency key no store can keep")
        if at_seq not in recorded:
            # Its replay would have no step to return.
            raise SnapshotError(f"key {key!r} names step {at_seq}, which the history lacks")


def _retired_states(
    history: list[Entry], data: Mapping[str, Any], machine: Machine, same_flow: bool
) -> frozenset[str]:
    """The states of older versions that a restored history may name. A snapshot of this very
    graph names only its states and those its `retired_states` lists (kept from a move to this
    version); one of another graph (an older version, migrated or not) may name any: they are
    the states it had then, and become its retired states."""
    raw = data.get("retired_states") or []
    if not isinstance(raw, list) or not all(isinstance(n, str) for n in raw):
        raise SnapshotError("the snapshot's retired_states is not a list of state names")
    retired = frozenset(raw)
    for e in history:
        leaves = e[_LEAVES] or ((), ())
        for name in (e[_SOURCE], e[_TARGET], *e[_VIA], *leaves[0], *leaves[1]):
            if name is None or name in machine.states or name in retired:
                continue
            if same_flow:
                raise SnapshotError(
                    f"the snapshot's history entry at step {e[_SEQ]} names state {name!r}, "
                    f"which does not exist in {machine.name} version {machine.version} "
                    "(field history)"
                )
            retired |= {name}
    return retired


def _check_history(history: list[Entry], seq: int, machine: Machine) -> None:
    """What a restored history must be: sequence numbers rising (a compact history may skip
    some), the last one the snapshot's `seq`, entries that can be kept."""
    previous = -1
    for e in history:
        if e[_SEQ] <= previous:
            raise SnapshotError(
                f"the snapshot's history is out of order: step {e[_SEQ]} after step {previous}"
            )
        previous = e[_SEQ]
        leaves = e[_LEAVES] or ((), ())
        texts = (e[_KIND], e[_SOURCE], e[_TARGET], e[_EVENT], e[_REASON], *e[_VIA])
        for text in (*texts, *leaves[0], *leaves[1]):
            if text is not None and (not isinstance(text, str) or text_problem(text)):
                raise SnapshotError(f"the snapshot's history has a bad entry at step {e[_SEQ]}")
        if e[_PAYLOAD] is not None:
            try:  # a payload the snapshot could not be written with again
                json.dumps(e[_PAYLOAD], allow_nan=False, ensure_ascii=False).encode("utf-8")
            except (TypeError, ValueError, RecursionError):
                raise SnapshotError(
                    f"the snapshot's history has a payload that is not JSON at step {e[_SEQ]}"
                ) from None
    if history and history[-1][_SEQ] != seq:
        raise SnapshotError(
            f"the snapshot's seq is {seq}, but its history ends at step {history[-1][_SEQ]}"
        )
    if seq < 0:
        raise SnapshotError(f"the snapshot's seq is {seq}")


def _restore_timers(
    rules: tuple[CTransition, ...],
    raw: Any,
    entered: int,
    arm_missing: bool,
    states: Mapping[str, Any],
) -> engine.Timers | None:
    """Match the snapshot's timers to the timer rules of the active states (`rules`): by
    index when the rule is the
    same, else by target and delay. Under a changed flow (`arm_missing`), timer rules the
    snapshot has no timer for (added since) are armed from the time the state was entered;
    under the same flow a missing timer has fired already and stays gone, and a timer that
    matches no rule (its target or delay edited by hand) is refused."""
    found: dict[int, int] = {}
    try:
        for position, item in enumerate(raw):
            target = item.get("target")
            if target is not None and target not in states:
                raise SnapshotError(
                    f"a pending timer of the snapshot goes to state {target!r}, which does not "
                    "exist in this version of the flow (map it with a migration)"
                )
            due = to_ms(item["due"])
            match = next(
                (
                    t
                    for t in rules
                    if t.index == item.get("index")
                    and t.target is not None
                    and t.target.name == item.get("target")
                    and t.after_ms == item.get("after_ms")
                ),
                None,
            ) or next(
                (
                    t
                    for t in rules
                    if t.index not in found
                    and t.target is not None
                    and t.target.name == item.get("target")
                    and t.after_ms == item.get("after_ms")
                ),
                None,
            )
            if match is not None:
                found[match.index] = due
            elif not arm_missing:
                raise SnapshotError(
                    f"pending timer {position} of the snapshot (index {item.get('index')!r}, "
                    f"target {target!r}, after_ms {item.get('after_ms')!r}) matches no timer "
                    "rule of the active states of the flow that wrote it"
                )
    except SnapshotError:
        raise
    except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as exc:
        raise SnapshotError(f"malformed snapshot timers: {str(exc)[:200]}") from None
    if not rules:
        return None
    timers = [
        (found[t.index] if t.index in found else entered + (t.after_ms or 0), t)
        for t in rules
        if t.index in found or arm_missing
    ]
    if not timers:
        return None
    return engine.due_order(timers)


def _restore_sends(raw: Any, machine: Machine) -> engine.Sends | None:
    """The snapshot's scheduled events (format /3), each of an event of this flow."""
    if not raw:
        return None
    sends: list[engine.Scheduled] = []
    try:
        for n, item in enumerate(raw):
            event, ident, payload = item["event"], item["id"], item.get("payload")
            if event not in machine.events or type(ident) is not str:
                raise SnapshotError(
                    f"scheduled event {n} of the snapshot ({event!r}, id {ident!r}) is not an "
                    f"event of {machine.name} version {machine.version}"
                )
            if payload is not None and not isinstance(payload, dict):
                raise SnapshotError(f"scheduled event {n} of the snapshot has a malformed payload")
            sends.append(engine.Scheduled(to_ms(item["due"]), ident, event, copy_json(payload)))
    except (KeyError, TypeError, ValueError) as exc:
        if isinstance(exc, SnapshotError):
            raise
        raise SnapshotError(f"malformed snapshot scheduled events: {str(exc)[:200]}") from None
    sends.sort(key=lambda x: x.due)
    return tuple(sends)


def _restore_configuration(
    machine: Machine, state: CState, data: Mapping[str, Any]
) -> tuple[tuple[CState, ...], dict[str, tuple[CState, ...]] | None]:
    """A statechart's configuration and histories from a snapshot. A snapshot without a
    `configuration` (written for a flat flow, or by a host) has its `state` and that state's
    default descendants active."""
    names = data.get("configuration")
    if names is None:
        entered: set[CState] = set()
        Macrostep((), {}, {}, 1, []).add_descendants(state, entered)
        leaves = list(entered)
    else:
        leaves = _restored_leaf_states(machine, names)
    config = tuple(with_ancestors(leaves))
    active = set(config)
    for s in config:
        inside = [c for c in s.regions if c in active]
        if (s.kind == "compound" and len(inside) != 1) or (
            s.kind == "parallel" and len(inside) != len(s.regions)
        ):
            raise SnapshotError(f"the snapshot's configuration is not consistent at {s.name!r}")
    return config, _restored_histories(machine, data)


def _restored_leaf_states(machine: Machine, names: Any) -> list[CState]:
    """The leaf states a snapshot's `configuration` names."""
    if not isinstance(names, list) or not names:
        raise SnapshotError("the snapshot's configuration is not a list of state names")
    leaves = []
    for name in names:
        leaf = machine.states.get(name) if isinstance(name, str) else None
        if leaf is None or not leaf.atomic:
            raise SnapshotError(
                f"state {name!r} of the snapshot's configuration is not a leaf state of "
                f"{machine.name} version {machine.version}"
            )
        leaves.append(leaf)
    return leaves


def _restored_histories(
    machine: Machine, data: Mapping[str, Any]
) -> dict[str, tuple[CState, ...]] | None:
    """What a snapshot's `histories` recorded, by history state (None: nothing)."""
    states = machine.states
    histories: dict[str, tuple[CState, ...]] = {}
    raw = data.get("histories") or {}
    if not isinstance(raw, Mapping):
        raise SnapshotError("the snapshot's histories are not an object")
    for h, recorded in raw.items():
        hs = states.get(h)
        if hs is None or hs.history is None or not isinstance(recorded, list):
            raise SnapshotError(f"the snapshot records history {h!r}, which is not a history state")
        got = [states.get(x) if isinstance(x, str) else None for x in recorded]
        if not got or any(x is None for x in got):
            raise SnapshotError(f"the snapshot's history {h!r} names unknown states")
        histories[h] = tuple(x for x in got if x is not None)
    return histories or None


def _snapshot_data(snapshot: Mapping[str, Any] | str | bytes, machine: Machine) -> Any:
    """The snapshot as a mapping, once its top level is one `machine` may restore: JSON, an
    object of known fields only, a format read, this flow, its version or an older one."""
    try:
        data: Any = json.loads(snapshot) if isinstance(snapshot, str | bytes) else snapshot
    except (ValueError, RecursionError) as exc:  # JSONDecodeError, bytes not UTF-8
        raise SnapshotError(f"the snapshot is not JSON: {str(exc)[:200]}") from None
    if not isinstance(data, Mapping):
        raise SnapshotError("a snapshot is a JSON object")
    unknown = sorted(str(k) for k in data if k not in SNAPSHOT_FIELDS)
    if unknown:
        raise SnapshotError(
            f"the snapshot has an unknown field {unknown[0][:100]!r} (a snapshot has "
            f"only {', '.join(sorted(SNAPSHOT_FIELDS))})"
        )
    if data.get("format", SNAPSHOT_FORMAT) not in SNAPSHOT_FORMATS_READ:
        raise SnapshotError(f"unknown snapshot format {data.get('format')!r}")
    if data.get("flow") != machine.name:
        raise SnapshotError(f"the snapshot is of flow {data.get('flow')!r}, not {machine.name!r}")
    version = data.get("version", machine.version)
    if type(version) is not int or version > machine.version:
        raise SnapshotError(
            f"the snapshot is of version {version!r} of {machine.name}; this machine has "
            f"version {machine.version} (a snapshot restores into its own version or a "
            "newer one)"
        )
    return data


def _restored_leaves(h: Mapping[str, Any]) -> Leaves:
    """The leaves of a snapshot's history entry; None for one written without them (a flat
    flow's, or a statechart's written by flowc.snapshot/1)."""
    source, target = h.get("source_leaves"), h.get("target_leaves")
    if source is None and target is None:
        return None
    if not isinstance(source, list) or not isinstance(target, list):
        raise SnapshotError(
            f"the snapshot's history entry {h.get('seq')!r} has source_leaves and target_leaves "
            "that are not both lists of state names"
        )
    return tuple(source), tuple(target)


def _holds(guard: Any, c: dict[str, Any], st: CState) -> bool:
    try:
        return bool(guard(c, None, st))
    except FAULTS as exc:
        if isinstance(exc, IRLoadError):
            raise
        return False


def _refuses(candidates: tuple[CTransition, ...], c: dict[str, Any]) -> bool:
    """Whether a state's candidates for an event refuse it now whatever the payload: the first
    rule sure to fire is a `reject`, and no rule before it might take the event."""
    for t in candidates:
        if t.guard is not None and t.uses_event():
            if t.kind != "reject":
                return False
            continue
        if t.guard is None or _holds(t.guard, c, t.source):
            return t.kind == "reject"
    return False
