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
take a transition the way its plan (kernel.py) says: `_take` interprets it, and the generated
function is written from it. The
context is copied only when an action will run, and history records a tuple per step
(`HistoryEntry` objects are built only when asked for).
"""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import TYPE_CHECKING, Any, Final, TypeAlias, TypeVar, cast

from flowc.runtime import rejections as R
from flowc.runtime.clock import Clock, ms_reader, ms_to_datetime, read_ms, to_ms
from flowc.runtime.configuration import configuration, within
from flowc.runtime.expr import FAULTS, ExprFault, describe_fault
from flowc.runtime.kernel import (
    Macrostep,
    Microsteps,
    Plan,
    Refusal,
    Step,
    plan_of,
    rivals,
    summary_of,
    with_ancestors,
)
from flowc.runtime.limits import LimitExceeded, Limits, text_problem
from flowc.runtime.machine import CTransition, Requirement
from flowc.runtime.model import IRLoadError
from flowc.runtime.outputs import collecting, current_outputs
from flowc.runtime.rejections import Rejection, SnapshotError, UnknownTemplate
from flowc.runtime.templating import EventVars, wrap
from flowc.runtime.validate import Invalid, feedback, report

if TYPE_CHECKING:
    from flowc.runtime.machine import CEvent, CState, Machine

log = logging.getLogger("flowc.runtime")

#: The snapshot formats. /2 (engine 2): a statechart's history entries may carry
#: `source_leaves` / `target_leaves`; a snapshot with none is written as /1, which earlier
#: releases read, and a /1 written by them restores (its entries without leaves, its times
#: rounded to the millisecond) and runs on under the current semantics (docs/runtime.md).
SNAPSHOT_FORMAT: Final = "flowc.snapshot/2"
SNAPSHOT_FORMAT_1: Final = "flowc.snapshot/1"
SNAPSHOT_FORMATS_READ: Final = frozenset({SNAPSHOT_FORMAT_1, SNAPSHOT_FORMAT})
#: Every top-level field a snapshot may have; any other is refused (a hand edit or a typo
#: would otherwise be dropped without a word). `lineage` is the durable layer's (a fork's
#: origin, `DurableFlows.fork`): an instance restores past it and the store carries it on.
#: `retired_states`: states of older versions of the flow that the history still names (an
#: instance moved to a newer version keeps its past; only then may a name be unknown).
SNAPSHOT_FIELDS: Final = frozenset(
    {
        "format", "flow", "version", "hash", "id", "state", "seq", "context", "history",
        "timers", "keys", "configuration", "histories", "lineage", "retired_states",
    }
)  # fmt: skip
#: Idempotency keys remembered per instance (the oldest are forgotten first).
KEYS_KEPT: Final = 1024
_T = TypeVar("_T")

_new = object.__new__
_EMPTY: dict[str, Any] = {}
_NO_VIA: tuple[str, ...] = ()

# A history entry is a tuple, in this order.
_SEQ: Final = 0
_AT: Final = 1
_KIND: Final = 2
_SOURCE: Final = 3
_TARGET: Final = 4
_EVENT: Final = 5
_PAYLOAD: Final = 6
_REASON: Final = 7
_VIA: Final = 8
#: a statechart step's active leaves before and after it (None in a flat flow, whose
#: `source` and `target` are the leaves)
_LEAVES: Final = 9
Leaves: TypeAlias = tuple[tuple[str, ...], tuple[str, ...]] | None
Entry: TypeAlias = tuple[
    int, int, str, str | None, str, str | None, Any, str | None, tuple[str, ...], Leaves
]


def copy_json(value: Any) -> Any:
    """A deep copy of a JSON-like value (what hosts get: they may change it freely)."""
    t = type(value)
    if t is dict:
        return {k: copy_json(v) for k, v in value.items()}
    if t is list:
        return [copy_json(v) for v in value]
    return value


def copy_dict(value: Mapping[str, Any]) -> dict[str, Any]:
    return {k: copy_json(v) for k, v in value.items()}


class HistoryEntry:
    """One committed step as recorded in the history. `kind` is `start`, `event`, `goto`,
    `back` or `timer`; `source` is None for `start`; `via` lists the choice states routed
    through; `at` is an aware UTC datetime."""

    __slots__ = ("_e",)

    _e: Entry

    def __init__(self, entry: Entry) -> None:
        self._e = entry

    @property
    def seq(self) -> int:
        return self._e[_SEQ]

    @property
    def at(self) -> datetime:
        return ms_to_datetime(self._e[_AT])

    @property
    def timestamp(self) -> float:
        """`at` as seconds since the epoch (the history keeps integer milliseconds)."""
        return self._e[_AT] / 1000

    @property
    def kind(self) -> str:
        return self._e[_KIND]

    @property
    def source(self) -> str | None:
        return self._e[_SOURCE]

    @property
    def target(self) -> str:
        return self._e[_TARGET]

    @property
    def event(self) -> str | None:
        return self._e[_EVENT]

    @property
    def trigger(self) -> str:
        """The event's name for event steps, else the kind (`goto`, `back`, `timer`, ...)."""
        return self._e[_EVENT] or self._e[_KIND]

    @property
    def payload(self) -> dict[str, Any] | None:
        p = self._e[_PAYLOAD]
        return None if p is None else copy_json(p)

    @property
    def reason(self) -> str | None:
        return self._e[_REASON]

    @property
    def via(self) -> tuple[str, ...]:
        return self._e[_VIA]

    @property
    def source_leaves(self) -> tuple[str, ...]:
        """The active leaf states before the step, in document order: `(source,)` in a flat
        flow, every active region's leaf in a parallel one (empty for the start)."""
        leaves = self._e[_LEAVES]
        if leaves is not None:
            return leaves[0]
        source = self._e[_SOURCE]
        return () if source is None else (source,)

    @property
    def leaves(self) -> tuple[str, ...]:
        """The active leaf states after the step, in document order: `(target,)` in a flat
        flow, every active region's leaf in a parallel one (where `target` is the state
        holding them all)."""
        leaves = self._e[_LEAVES]
        return (self._e[_TARGET],) if leaves is None else leaves[1]

    def to_dict(self) -> dict[str, Any]:
        e = self._e
        return {
            "seq": e[_SEQ],
            "at": ms_to_datetime(e[_AT]).isoformat(),
            "kind": e[_KIND],
            "source": e[_SOURCE],
            "target": e[_TARGET],
            "event": e[_EVENT],
            "payload": copy_json(e[_PAYLOAD]),
            "reason": e[_REASON],
            "via": list(e[_VIA]),
            **_leaves_dict(e[_LEAVES]),
        }

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, HistoryEntry):
            return NotImplemented
        return self._e == other._e

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        e = self._e
        source, target = _shown(e, 0, e[_SOURCE]), _shown(e, 1, e[_TARGET])
        return f"<step {e[_SEQ]} {source} -> {target} ({self.trigger})>"


class StepResult(HistoryEntry):
    """A committed step, as returned by `send` / `goto` / `back` / `advance` and passed to
    subscribers. `from_` / `source` is the state left, `to` / `target` the state the instance
    is in now. `replayed` is true when an idempotency key had already been applied: nothing
    ran this time and this is the earlier step."""

    __slots__ = ("_c", "_fx", "_g", "_j", "_m", "_t")

    _c: dict[str, Any]
    #: a statechart's configuration after the step (set only by the statechart kernel)
    _g: tuple[str, ...]
    #: a statechart step's rules taken (set only by the statechart kernel)
    _t: tuple[int, ...]
    _j: dict[str, str]
    _m: Machine
    #: the effects the step's actions emitted, as collected (set only when there are some)
    _fx: list[tuple[str, dict[str, Any]]]

    ok: Final = True
    replayed: bool = False

    @property
    def from_(self) -> str | None:
        return self._e[_SOURCE]

    @property
    def to(self) -> str:
        return self._e[_TARGET]

    @property
    def context(self) -> dict[str, Any]:
        """The context right after this step."""
        return copy_dict(self._c)

    @property
    def configuration(self) -> tuple[str, ...]:
        """Every state active right after this step, in document order: `(to,)` in a flat
        flow; in a statechart the active states and their ancestors."""
        try:
            return self._g
        except AttributeError:  # a flat flow's step (or a replayed one): its target alone
            return (self._e[_TARGET],)

    @property
    def rules_taken(self) -> tuple[int, ...] | None:
        """The IR indices (`Transition.index`) of the rules this step took, in the order it
        took them: in a flat flow the rule and the routes of the choice states it passed
        through; in a statechart every microstep's rules (eventless rules and completion
        events included). Coverage tools read this rather than choosing the rule again.
        None for a replayed step (nothing was taken this time)."""
        try:
            return self._t
        except AttributeError:
            return None

    @property
    def effects(self) -> list[dict[str, Any]]:
        """The effects this step's actions emitted (`emit EFFECT(...)`), in order, each as
        `{"effect": name, "payload": {...}}` (copies, the caller's to keep). Empty for a
        replayed step: nothing ran."""
        try:
            fx = self._fx
        except AttributeError:  # most steps emit nothing and never set it
            return []
        return [{"effect": name, "payload": copy_dict(payload)} for name, payload in fx]

    def journal(self, name: str) -> str:
        """The entry journal `name` renders for this step (rendered once, then kept)."""
        try:
            cache = self._j
        except AttributeError:  # results are made without it: most are never asked
            cache = self._j = {}
        text = cache.get(name)
        if text is None:
            text = cache[name] = render_journal(self._m, name, self._e, self._c)
        return text

    def journals(self) -> dict[str, str]:
        """Every journal of the flow, rendered for this step."""
        return {name: self.journal(name) for name in self._m.journals}

    def unwrap(self) -> StepResult:
        return self

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        out = {"ok": True, "from": out.pop("source"), "to": out.pop("target"), **out}
        out["trigger"] = self.trigger
        with contextlib.suppress(AttributeError):  # a flat flow's step: `to` says it all
            out["configuration"] = list(self._g)
        if self.replayed:
            out["replayed"] = True
        elif hasattr(self, "_fx"):
            out["effects"] = self.effects
        return out

    def __repr__(self) -> str:
        e = self._e
        source, target = _shown(e, 0, e[_SOURCE]), _shown(e, 1, e[_TARGET])
        return f"StepResult({e[_SEQ]}, {source!r} -> {target!r}, {self.trigger!r})"


Outcome: TypeAlias = StepResult | Rejection


class _ReplayedStep(StepResult):
    __slots__ = ()
    replayed = True


def _result(entry: Entry, context: dict[str, Any], machine: Machine) -> StepResult:
    r: StepResult = _new(StepResult)
    r._e = entry
    r._c = context
    r._m = machine
    return r


def render_journal(machine: Machine, name: str, entry: Entry, context: Mapping[str, Any]) -> str:
    """Journal `name` for one committed step. Variables: `seq`, `at` (aware datetime), `kind`,
    `source`, `target`, `event` (prints as its name; `event.field` reads the payload),
    `payload`, `reason`, `via`, `state` (the target: name, title, meta), `context`."""
    source = machine.journals[name]
    target = machine.states.get(entry[_TARGET])
    event = entry[_EVENT]
    payload = entry[_PAYLOAD]
    variables = {
        "seq": entry[_SEQ],
        "at": ms_to_datetime(entry[_AT]),
        "kind": entry[_KIND],
        "source": entry[_SOURCE],
        "target": entry[_TARGET],
        "event": EventVars(event, payload) if event is not None else None,
        "payload": wrap(payload) if payload is not None else None,
        "reason": entry[_REASON],
        "via": list(entry[_VIA]),
        "leaves": list(HistoryEntry(entry).leaves),
        "state": wrap(target.view()) if target is not None else None,
        "context": wrap(context),
    }
    return machine.template_cache.render(source, variables)


@dataclass(frozen=True, slots=True)
class AcceptedEvent:
    """An event the instance accepts now, with the JSON Schema of its payload (for LLM tool
    definitions and forms)."""

    name: str
    schema: dict[str, Any]


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
        "_seq",
        "_start_rules",
        "_state",
        "_subs",
        "_timers",
        "id",
    )

    _m: Machine
    _state: CState
    _ctx: dict[str, Any]
    _seq: int
    _history: list[Entry]
    _timers: Timers | None
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
        self._guarded = False
        self._config = None
        self._hist = None
        self._fx = None
        self._start_rules = None
        self.id = id
        return self

    @classmethod
    def _start(
        cls, machine: Machine, context: Mapping[str, Any] | None, id: str | None, clock: Clock
    ) -> Instance | Rejection:
        if machine.emits and current_outputs() is None:
            return cls._start_collecting(machine, context, id, clock)
        initial = machine.initial
        given = context if context is not None else _EMPTY
        try:
            ctx: dict[str, Any] = machine.context_type.check(given)
        except (Invalid, RecursionError):
            issues = report(machine.context_type, given, limits=machine.limits)
            data = feedback(issues, "Start the instance again with a corrected context.")
            return machine.rejection(R.INVALID_CONTEXT, initial, None, None, _EMPTY, data)
        if machine.chart:
            return cls._start_chart(machine, ctx, id, clock)
        state = initial
        via = _NO_VIA
        routes: tuple[int, ...] = ()
        try:
            if initial.entry is not None:
                initial.entry(ctx, None, initial)
            if initial.choice:
                routed = _route(machine, initial, initial, ctx, None, None)
                if type(routed) is Rejection:
                    return routed
                state, via, _, routes = routed  # type: ignore[misc]
        except FAULTS as exc:
            return _fault(
                machine, exc, f"the entry actions of {initial.name}", initial, None, None, ctx
            )
        now = read_ms(clock)
        self = cls._blank(machine, id, clock)
        self._state = state
        self._ctx = ctx
        self._seq = 0
        self._history = [(0, now, "start", None, state.name, None, None, None, via, None)]
        self._start_rules = routes
        if state.timers:
            timers = _start_timers(machine, state, now, ctx)
            if isinstance(timers, Rejection):
                return timers
            self._timers = timers
        return self

    @classmethod
    def _start_collecting(
        cls, machine: Machine, context: Mapping[str, Any] | None, id: str | None, clock: Clock
    ) -> Instance | Rejection:
        """`_start` of a flow that emits effects: the effects of its start are kept for the
        start's result."""
        with collecting() as outputs:
            started = cls._start(machine, context, id, clock)
        if type(started) is not Rejection and outputs.effects:
            started._fx = outputs.effects  # type: ignore[union-attr]
        return started

    @classmethod
    def _start_chart(
        cls, machine: Machine, ctx: dict[str, Any], id: str | None, clock: Clock
    ) -> Instance | Rejection:
        """The start of a statechart: the initial state entered with its default
        descendants, then run to completion (kernel.py's `Macrostep`)."""
        initial = machine.initial
        # An outer collector (`_start`'s, for a flow that emits) gets the entry effects.
        with collecting(current_outputs()) as out:
            run = Macrostep((), {}, ctx, machine.limits.max_microsteps, out.raised)
            try:
                with within(run):
                    run.enter_initial(initial)
                    run.settle(machine.events, machine.eventless)
            except Refusal as refused:
                return _refused(machine, refused, initial, None, ctx)
            except FAULTS as exc:
                where = _chart_words(run, exc, f"the entry actions of {initial.name}")
                return _fault(machine, exc, where, initial, None, None, ctx)
        stuck = _stuck(machine, run, initial, None, None, ctx)
        if stuck is not None:
            return stuck
        now = read_ms(clock)
        config = tuple(sorted(run.config, key=_by_order))
        rules = tuple(t for s in config for t in s.timers)
        try:
            timers = _chart_timers(machine, rules, now, ctx) if rules else None
        except FAULTS as exc:
            return _fault(machine, exc, "the delay of a timer", initial, None, None, ctx)
        self = cls._blank(machine, id, clock)
        self._config = config
        self._hist = run.histories or None
        state = self._state = summary_of(config)
        self._ctx = ctx
        self._seq = 0
        via = tuple(run.via)
        leaves = None if state.atomic else ((), _names(machine, config)[1])
        self._history = [(0, now, "start", None, state.name, None, None, None, via, leaves)]
        self._timers = timers or None
        self._start_rules = tuple(run.fired)
        return self

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
    def next_deadline(self) -> datetime | None:
        """When the next timer is due (to schedule a wake-up), or None."""
        return ms_to_datetime(self._timers[0][0]) if self._timers else None

    def accepted_events(self) -> list[AcceptedEvent]:
        """The events that may be accepted now, with their payload JSON Schemas.

        An event is listed when some non-`reject` rule for it could fire: rules whose guard
        reads only the context are judged now, rules whose guard reads the payload count as
        possible; a `reject` rule that holds now whatever the payload (e.g. an exhausted hint
        budget) hides the event, and so does a precondition that fails now."""
        st, c = self._state, self._ctx
        out: list[AcceptedEvent] = []
        if self._config is not None:
            # A statechart: the events of every active leaf (each with its candidates there
            # and in its ancestors), in document order; `done.state.*` are not the host's.
            internal = self._m.internal_events
            leaves = self._leaves()
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
        for name, (ev, candidates) in st.on.items():
            if self._may_accept(st, ev, candidates, c):
                out.append(AcceptedEvent(name, json.loads(json.dumps(ev.schema()))))
        return out

    def _leaves(self) -> list[CState]:
        """A statechart's active leaves, in document order."""
        return [s for s in self._config or () if s.atomic]

    def _chart_direct(self) -> dict[str, tuple[CTransition, ...]]:
        """A statechart's direct edges by target: those of each active leaf (its own, then its
        ancestors'), leaves in document order."""
        out: dict[str, tuple[CTransition, ...]] = {}
        for leaf in self._leaves():
            for target, edges in leaf.direct.items():
                have = out.get(target, ())
                out[target] = (*have, *(t for t in edges if t not in have))
        return out

    def _may_accept(
        self, st: CState, ev: CEvent, candidates: tuple[CTransition, ...], c: dict[str, Any]
    ) -> bool:
        m = self._m
        for req in ev.requires:
            if not _mentions_payload(req.raw.get("guard")) and not _holds(
                m._requirement_guard(req), c, st
            ):
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
        st, c = self._state, self._ctx
        direct = st.direct if self._config is None else self._chart_direct()
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
        if self._config is not None:
            with configuration(self._config, event):
                return self._send_chart(event, payload, reason, key, force)
        st = self._state
        try:
            ev, candidates = st.on[event]
        except (KeyError, TypeError):
            return self._not_accepted(st, event, payload)
        p = self._checked_payload(st, ev, payload)
        if type(p) is Rejection:
            return p
        if ev.requires:
            unmet = self._unmet_requirement(st, ev, event, p)
            if unmet is not None:
                return unmet
        c = self._ctx
        rule: Any = None
        try:
            for t in candidates:
                rule = t
                g = t.guard
                if g is None or g(c, p, st):
                    break
            else:
                return self._m.rejection(R.GUARD_FAILED, st, event, p, c)
            dest = t.target
            if dest is None:  # a `reject` rule
                rule = _DataOf(t)
                data = _refusal_data(self._m, t, c, p, st)
                return self._m.rejection(
                    R.REJECT, st, event, p, c, data, code=t.code, template=t.message, rule=t.index
                )
        except FAULTS as exc:
            return self._fault_in(exc, rule, st, event, p)
        if t.back and not force:
            data = {"from": st.name, "to": dest.name}
            return self._m.rejection(R.BACKWARD_REQUIRES_FORCE, st, event, p, c, data)
        return self._take(st, t, p, "event", event, reason, key, None)

    def _checked_payload(self, st: CState, ev: CEvent, payload: Any) -> Any:
        """The payload as the event's fields make it (defaults filled in, values normalised),
        or the `invalid_payload` refusal; shared by the flat and the statechart `send`."""
        try:
            if payload:
                return ev.check(payload)
            p = ev.empty
            return p if p is not None else ev.check(_EMPTY)
        except (Invalid, RecursionError):
            return self._invalid_payload(st, ev, payload)

    def _unmet_requirement(self, st: CState, ev: CEvent, event: str, p: Any) -> Outcome | None:
        """The refusal of the first `require` of `ev` that does not hold (or the fault of one
        that cannot be evaluated); None when they all hold."""
        m, c = self._m, self._ctx
        rule: Any = None
        try:
            for req in ev.requires:
                rule = req
                if not (req.guard or m._requirement_guard(req))(c, p, st):
                    rule = _DataOf(req)
                    data = _refusal_data(m, req, c, p, st)
                    return m.rejection(
                        R.REQUIRE, st, event, p, c, data, code=req.code, template=req.message
                    )
        except FAULTS as exc:
            return self._fault_in(exc, rule, st, event, p)
        return None

    def _send_chart(
        self,
        event: str,
        payload: Mapping[str, Any] | None,
        reason: str | None,
        key: str | None,
        force: bool,
    ) -> Outcome:
        """`send` in a statechart: every active leaf in document order offers its first enabled
        rule for the event (its own, then its ancestors'), the conflicts are resolved, and the
        step runs to completion (kernel.py's `Macrostep`)."""
        st, c, m = self._state, self._ctx, self._m
        if st.final:
            return m.rejection(R.INSTANCE_FINAL, st, event, None, c)
        if type(event) is not str:
            event = str(event)
        if event not in m.events or event in m.internal_events:
            return m.rejection(R.UNKNOWN_EVENT, st, event, None, c)
        ev = m.events[event]
        leaves = self._leaves()
        handled = [leaf for leaf in leaves if event in leaf.on]
        if not handled:
            if all(leaf.ignores for leaf in leaves):  # `unhandled ignore` (or an ancestor's)
                try:
                    ev.check(payload or _EMPTY)
                except (Invalid, RecursionError):
                    return self._invalid_payload(st, ev, payload)
                return m.rejection(R.IGNORED, st, event, None, c)
            return m.rejection(R.EVENT_NOT_ACCEPTED, st, event, None, c)
        p = self._checked_payload(st, ev, payload)
        if type(p) is Rejection:
            return p
        unmet = self._unmet_requirement(st, ev, event, p)
        if unmet is not None:
            return unmet
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
                    rule = _DataOf(t)
                    data = _refusal_data(m, t, c, p, t.source)
                    return m.rejection(
                        R.REJECT, st, event, p, c, data,
                        code=t.code, template=t.message, rule=t.index,
                    )  # fmt: skip
        except FAULTS as exc:
            return self._fault_in(exc, rule, st, event, p)
        if not enabled:
            return m.rejection(R.GUARD_FAILED, st, event, p, c)
        if not force:
            for t in enabled:
                if t.back:
                    data = {"from": st.name, "to": t.target.name if t.target else None}
                    return m.rejection(R.BACKWARD_REQUIRES_FORCE, st, event, p, c, data)
        return self._take_chart(st, enabled, p, "event", event, reason, key, None)

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
        if key is not None or reason is not None:
            early = self._early_outcome(key, reason, None)
            if early is not None:
                return early
        st, c, m = self._state, self._ctx, self._m
        if st.final:
            return m.rejection(R.INSTANCE_FINAL, st, None, None, c)
        if type(target) is not str:
            target = str(target)
        direct = st.direct if self._config is None else self._chart_direct()
        edges = direct.get(target)
        data = {"from": st.name, "to": target}
        if edges is None:
            kind = R.INVALID_TRANSITION if target in m.states else R.UNKNOWN_STATE
            return m.rejection(kind, st, None, None, c, data)
        if not force and all(t.back for t in edges):
            return m.rejection(R.BACKWARD_REQUIRES_FORCE, st, None, None, c, data)
        chosen = self._first_open(edges, force)
        if chosen is None:
            return m.rejection(R.GUARD_FAILED, st, None, None, c, data)
        if isinstance(chosen, Rejection):
            return chosen
        return self._take(st, chosen, None, "goto", None, reason, key, None)

    def _first_open(
        self, edges: tuple[CTransition, ...], force: bool
    ) -> CTransition | Rejection | None:
        """The first of the direct `edges` whose guard holds (a backward one only with
        `force`); None when none does, the rejection when a guard faults."""
        rule: Any = None
        try:
            with configuration(self._config):
                for t in edges:
                    if t.back and not force:
                        continue
                    rule = t
                    if t.guard is None or t.guard(self._ctx, None, t.source):
                        return t
        except FAULTS as exc:
            return self._fault_in(exc, rule, self._state, None, None)
        return None

    def back(
        self, *, force: bool = False, reason: str | None = None, key: str | None = None
    ) -> Outcome:
        """Return to the most recent earlier state that a backward edge (`back`) of the current
        state leads to, along that edge. Backward moves always need `force=True`: without it
        the answer is `backward_requires_force` naming the state it would go to."""
        if self._m.invariants and not self._guarded:
            return self._guard(partial(self.back, force=force, reason=reason, key=key))
        if key is not None or reason is not None:
            early = self._early_outcome(key, reason, None)
            if early is not None:
                return early
        st, c, m = self._state, self._ctx, self._m
        if st.final:
            return m.rejection(R.INSTANCE_FINAL, st, None, None, c)
        back_edges = self._back_edges()
        previous = self._previous({t.target.name for t in back_edges if t.target is not None})
        if previous is None:
            return m.rejection(R.NO_PREVIOUS_STATE, st, None, None, c, {"from": st.name})
        data = {"from": st.name, "to": previous}
        if not force:
            return m.rejection(R.BACKWARD_REQUIRES_FORCE, st, None, None, c, data)
        taken = self._take_back_edge(back_edges, previous, reason, key)
        if taken is not None:
            return taken
        return m.rejection(R.GUARD_FAILED, st, None, None, c, data)

    def _take_back_edge(
        self,
        back_edges: tuple[CTransition, ...],
        previous: str,
        reason: str | None,
        key: str | None,
    ) -> Outcome | None:
        """Take the first backward edge to `previous` whose event needs no payload and whose
        preconditions and guard hold (None: no edge does)."""
        st, c, m = self._state, self._ctx, self._m
        rule: Any = None
        try:
            for t in back_edges:
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
                    return self._take(st, t, p, "back", t.event, reason, key, None)
        except FAULTS as exc:
            return self._fault_in(exc, rule, st, None, None)
        return None

    def _back_edges(self) -> tuple[CTransition, ...]:
        """The backward edges of the current state; in a statechart, of every active leaf
        (and its ancestors)."""
        if self._config is None:
            return self._state.back_edges
        return tuple(dict.fromkeys(t for s in self._leaves() for t in s.back_edges))

    def _previous(self, targets: set[str]) -> str | None:
        """The most recent state the history left that is one of `targets`."""
        for entry in reversed(self._history):
            source = entry[_SOURCE]
            if source in targets:
                return source
        return None

    def advance(self, now: float | datetime | None = None) -> list[Outcome]:
        """Fire every timer due at `now` (default: the clock's time), soonest first, each as
        an ordinary step recorded at its deadline. The timers due at one deadline are tried
        in source order and the first whose guard holds is taken; the others due then are
        not (when the one taken is an internal `after D -> self`, they repeat with it). A
        timer whose guard faults is dropped and its rejection returned."""
        if self._m.invariants and not self._guarded:
            return self._guard(partial(self.advance, now))
        when = self._now() // self._per_ms if now is None else to_ms(now)
        out: list[Outcome] = []
        while self._timers:
            due = self._timers[0][0]
            if due > when:
                break
            st, c = self._state, self._ctx
            # Soonest first, and those due together in source order (`_due_order`).
            n = 1
            while n < len(self._timers) and self._timers[n][0] == due:
                n += 1
            tried = tuple(t for _, t in self._timers[:n])
            self._timers = self._timers[n:] or None
            for i, t in enumerate(tried):
                try:
                    if t.guard is not None:
                        with configuration(self._config):
                            if not t.guard(c, None, t.source):
                                continue
                except FAULTS as exc:
                    out.append(self._fault_in(exc, t, st, None, None))
                    continue
                at = max(due, self._history[-1][_AT])
                group = tuple(x for x in tried if rivals(x, t))
                out.append(self._take(st, t, None, "timer", None, None, None, at, group))
                self._keep_untried(t, tried[i + 1 :], due)
                break
        return out

    # ---- the step ---------------------------------------------------------------------------
    def _take(
        self,
        st: CState,
        t: CTransition,
        p: dict[str, Any] | None,
        kind: str,
        event: str | None,
        reason: str | None,
        key: str | None,
        at: int | None,
        tried: tuple[CTransition, ...] = (),
    ) -> Outcome:
        """Take `t`: interpret its plan (kernel.py), route through choice states, commit.
        `tried`: for a timer, the timers of its group (`rivals`) due with it, which repeat
        with it."""
        if self._config is not None:
            return self._take_chart(st, [t], p, kind, event, reason, key, at, tried)
        plan = t.plan
        if plan is None:  # the first use (`plan_of`, written out)
            plan = t.plan = Plan(t)
        if (plan.emits or (plan.target.choice and self._m.emits)) and current_outputs() is None:
            # The step may emit effects: collect them, to hand out once it has committed.
            with collecting():
                return self._take(st, t, p, kind, event, reason, key, at, tried)
        c = self._ctx
        dest = plan.target
        via = _NO_VIA
        taken: tuple[int, ...] = (t.index,)
        last = plan  # the plan whose target the instance rests in (after any routing)
        if plan.copies:
            c = dict(c)  # the working copy; the committed context is never touched
            step = None
            try:
                for step in plan.steps:
                    if plan.blind and step.phase == "actions":
                        with configuration(()):
                            getattr(step.owner, step.block)(c, p, step.state)
                    else:
                        getattr(step.owner, step.block)(c, p, step.state)
                step = None
                if dest.choice and not plan.internal:
                    routed = _route(self._m, st, dest, c, p, event)
                    if type(routed) is Rejection:
                        return routed
                    dest, via, last, routes = routed  # type: ignore[misc]
                    taken += routes
            except FAULTS as exc:
                where = _phase_words(step, t)
                return _fault(self._m, exc, where, st, event, p, self._ctx)
        now = self._now() // self._per_ms if at is None else at
        armed: Timers | None = None
        if last.computed or plan.computed:
            # A computed delay is evaluated now, on the context the step commits: a fault in
            # it refuses the step like any fault in its actions.
            try:
                if not plan.internal:
                    armed = _arm_computed(self._m, last.arm, now, c, dest)
                elif plan.repeats:
                    armed = _arm_computed(self._m, tried or (t,), now, c, dest, self._timers)
            except FAULTS as exc:
                return _fault(
                    self._m, exc, f"the delay of a timer of {dest.name}", st, event, p, self._ctx
                )
        # Commit: nothing below can fail.
        seq = self._seq + 1
        entry: Entry = (seq, now, kind, st.name, dest.name, event, p, reason, via, None)
        self._history.append(entry)
        self._seq = seq
        self._ctx = c
        if armed is not None:
            if not plan.internal:
                self._state = dest
            self._timers = armed or None
        elif not plan.internal:
            self._state = dest
            self._timers = _arm_rules(last.arm, now) if last.arm else None
        elif plan.repeats:
            # `after D -> self` repeats every D, with the timers it was tried with.
            self._timers = _rearm(self._timers, tried or (t,), now)
        if key is not None:
            self._remember(key, seq)
        r: StepResult = _new(StepResult)
        r._e = entry
        r._c = c
        r._m = self._m
        r._t = taken
        if self._m.emits:
            outputs = current_outputs()
            if outputs is not None and outputs.effects:
                r._fx = outputs.effects
        if self._subs:
            self._notify(r)
        return r

    def _take_chart(
        self,
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
        """Take the transitions `ts` in a statechart and run to completion on working copies
        (kernel.py's `Macrostep`), then commit it all, or nothing: one history entry for the
        whole step, the states passed through in `via`."""
        m = self._m
        c = dict(self._ctx)
        assert self._config is not None
        with collecting(current_outputs()) as out:
            run = Macrostep(self._config, self._hist or {}, c, m.limits.max_microsteps, out.raised)
            run.p = p
            run.event = event
            try:
                with within(run):
                    run.microstep(run.resolve(ts) if len(ts) > 1 else ts, p)
                    run.settle(m.events, m.eventless)
            except Refusal as refused:
                return _refused(m, refused, st, event, self._ctx)
            except FAULTS as exc:
                return _fault(m, exc, _chart_words(run, exc, None), st, event, p, self._ctx)
        if m.eventless:  # a choice state left with no route holding (choice states only)
            stuck = _stuck(m, run, st, event, p, self._ctx)
            if stuck is not None:
                return stuck
        now = self._now() // self._per_ms if at is None else at
        config = tuple(sorted(run.config, key=_by_order))
        dest = summary_of(config)
        # The timers of the states left are cancelled; those of the states entered (and still
        # active) are armed; an internal `after D -> self` repeats. (Not when a later microstep
        # of the same step left the timer's state: an eventless rule or an internal event can
        # end what the timer was repeating.) A computed delay is evaluated against the context
        # the step commits, and can still refuse the step.
        exited = run.exited
        kept = [(due, x) for due, x in self._timers or () if x.source not in exited]
        arm = tuple(x for s in config if s in run.entered for x in s.timers)
        if len(ts) == 1 and (ts[0].plan or plan_of(ts[0])).repeats and ts[0].source not in exited:
            arm += tried or (ts[0],)
        if arm:
            try:
                kept += _chart_timers(m, arm, now, c)
            except FAULTS as exc:
                return _fault(m, exc, "the delay of a timer", st, event, p, self._ctx)
        # Commit: nothing below can fail.
        seq = self._seq + 1
        names, leaf_names = _names(m, config)
        leaves = None if st.atomic and dest.atomic else (_names(m, self._config)[1], leaf_names)
        entry: Entry = (
            seq,
            now,
            kind,
            st.name,
            dest.name,
            event,
            p,
            reason,
            tuple(run.via),
            leaves,
        )
        self._history.append(entry)
        self._seq = seq
        self._ctx = c
        self._config = config
        self._hist = run.histories or None
        self._state = dest
        self._timers = _due_order(kept) if kept else None
        if key is not None:
            self._remember(key, seq)
        r: StepResult = _new(StepResult)
        r._e = entry
        r._c = c
        r._m = m
        r._g = names
        r._t = tuple(run.fired)
        if out.effects:
            r._fx = out.effects
        if self._subs:
            self._notify(r)
        return r

    def _keep_untried(self, taken: CTransition, rest: tuple[CTransition, ...], due: int) -> None:
        """After a timer step: the timers due with the one taken but not tried stay pending
        (they are tried next, at the same deadline) when their state is still active, was not
        re-entered, and they are not of the taken timer's group (`rivals`): a deadline beside
        a repeating `after D -> self` still fires."""
        config = self._config if self._config is not None else (self._state,)
        pending = {x for _, x in self._timers or ()}
        keep = [
            (due, x)
            for x in rest
            if not rivals(x, taken) and x.source in config and x not in pending
        ]
        if keep:
            self._timers = _due_order([*(self._timers or ()), *keep])

    # ---- refusals ---------------------------------------------------------------------------
    def _not_accepted(self, st: CState, event: str, payload: Any = None) -> Rejection:
        m = self._m
        if st.final:
            return m.rejection(R.INSTANCE_FINAL, st, event, None, self._ctx)
        if event not in m.events:
            return m.rejection(R.UNKNOWN_EVENT, st, event, None, self._ctx)
        if st.raw.get("unhandled") == "ignore":  # `unhandled ignore`: a valid payload, no step
            ev = m.events[event]
            try:
                ev.check(payload or _EMPTY)
            except (Invalid, RecursionError):
                return self._invalid_payload(st, ev, payload)
            return m.rejection(R.IGNORED, st, event, None, self._ctx)
        return m.rejection(R.EVENT_NOT_ACCEPTED, st, event, None, self._ctx)

    def _invalid_payload(self, st: CState, ev: CEvent, payload: Any) -> Rejection:
        # The feedback is worked out when read, from a copy: the host may change its payload.
        limits = self._m.limits
        try:
            given = copy_json(payload) if payload is not None else _EMPTY
        except RecursionError:  # nested deeper than a copy can go: worked out now, as it is
            data = _feedback(ev, payload, limits)
            return self._m.rejection(R.INVALID_PAYLOAD, st, ev.name, None, self._ctx, data)
        return self._m.rejection(
            R.INVALID_PAYLOAD,
            st,
            ev.name,
            None,
            self._ctx,
            data_of=(_feedback, (ev, given, limits)),
        )

    def _fault_in(
        self, exc: BaseException, rule: Any, st: CState, event: str | None, p: Any
    ) -> Rejection:
        if isinstance(rule, _DataOf):
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
        return _fault(self._m, exc, where, st, event, p, self._ctx)

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
        chart = (self._config, self._hist)
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
                self._config, self._hist = chart
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
        if m.hierarchical and self._config is not None:
            # Only a hierarchical flow's snapshot has them: a flat flow's reads as before.
            snap["configuration"] = [s.name for s in self._config if s.atomic]
            snap["histories"] = {h: [s.name for s in v] for h, v in (self._hist or {}).items()}
        if self._retired:
            snap["retired_states"] = sorted(self._retired)
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
    ) -> Instance:
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
        return self

    def __repr__(self) -> str:
        return f"<Instance {self._m.name} in {self._state.name} (seq {self._seq})>"


# ---- helpers ------------------------------------------------------------------------------------


def _route(
    machine: Machine,
    st: CState,
    node: CState,
    c: dict[str, Any],
    p: dict[str, Any] | None,
    event: str | None,
) -> tuple[CState, tuple[str, ...], Plan, tuple[int, ...]] | Rejection:
    """Route through choice states from `node` until a state that waits, running the plan of
    each route taken on `c`; returns that state, the choice states passed, the last route's
    plan and the indices of the routes taken. Entering the same choice state twice within one
    step is a loop, refused as `routing_loop`."""
    seen: list[CState] = []
    taken: list[int] = []
    plan: Plan | None = None
    while node.choice:
        if node in seen:
            path = [s.name for s in seen] + [node.name]
            return machine.rejection(
                R.ROUTING_LOOP, st, event, p, c, {"path": path, "node": node.name}
            )
        seen.append(node)
        rule: CTransition | None = None
        try:
            for t in node.routes:
                rule = t
                if t.guard is None or t.guard(c, p, node):
                    break
            else:
                return machine.rejection(
                    R.GUARD_FAILED, st, event, p, c, {"from": node.name, "to": None}
                )
            plan = t.plan or plan_of(t)
            taken.append(t.index)
            for step in plan.steps:
                getattr(step.owner, step.block)(c, p, step.state)
        except FAULTS as exc:
            where = f"routing through {node.name}"
            if rule is not None:
                where += f" ({rule.describe()})"
            return _fault(machine, exc, where, st, event, p, c)
        node = plan.target
    assert plan is not None, "routing starts at a choice state"
    return node, tuple(s.name for s in seen), plan, tuple(taken)


def _fault(
    machine: Machine,
    exc: BaseException,
    where: str,
    st: CState,
    event: str | None,
    p: Any,
    c: Mapping[str, Any],
) -> Rejection:
    if isinstance(exc, IRLoadError):
        raise exc  # a bad IR is the programmer's problem, not a refusal
    data = {"where": where, "detail": describe_fault(exc)}
    kind = R.LIMIT_EXCEEDED if isinstance(exc, LimitExceeded) else R.EXPRESSION_ERROR
    return machine.rejection(kind, st, event, p, c, data)


def _phase_words(step: Step | None, t: CTransition) -> str:
    if step is not None and step.phase != "actions":
        return f"the {step.phase} actions of {step.state.name}"
    return f"the actions of {t.describe()}"


#: pending timers: (due, in epoch milliseconds; the rule), in the order they are tried
Timers = tuple[tuple[int, CTransition], ...]


def _arm(state: CState, now: int) -> Timers:
    return _arm_rules(state.timers, now)


def _arm_rules(rules: tuple[CTransition, ...], now: int) -> Timers:
    return _due_order([(now + t.after_ms, t) for t in rules if t.after_ms])


def _chart_timers(
    machine: Machine, rules: tuple[CTransition, ...], now: int, c: dict[str, Any]
) -> Timers:
    """The timers of a statechart step: constant delays as `_arm_rules` arms them, computed
    ones evaluated against `c` with their own state as `state` (`_arm_computed`)."""
    if all(t.after_ms is not None for t in rules):
        return _arm_rules(rules, now)
    timers: list[tuple[int, CTransition]] = []
    for t in rules:
        timers += _arm_computed(machine, (t,), now, c, t.source)
    return _due_order(timers)


def _arm_computed(
    machine: Machine,
    rules: tuple[CTransition, ...],
    now: int,
    c: dict[str, Any],
    st: CState,
    keep: Timers | None = None,
) -> Timers:
    """`_arm_rules` (or, with `keep`, `_rearm`) for rules some of which have a computed delay
    (`after EXPR UNIT`): each is evaluated against `c`, the context the step commits, and must
    be an int of milliseconds. A delay below 1 ms counts as 1 ms (a timer fires after the step
    that armed it, so `advance` always ends); one longer than any timer may wait is a fault."""
    timers = list(keep or ())
    for t in rules:
        ms = t.after_ms
        if ms is None:
            node = t.raw.get("after_expr")
            if node is None:
                continue
            ms = machine._compiler.compile(node)(c, None, st)
            if type(ms) is not int:
                raise ExprFault(f"the delay of {t.describe()} is not an int ({_kind(ms)})")
            if ms > MAX_DELAY_MS:
                raise ExprFault(
                    f"the delay of {t.describe()} is {ms:,} ms, longer than any timer may wait"
                )
            ms = max(ms, 1)
        timers.append((now + ms, t))
    return _due_order(timers)


def _kind(value: Any) -> str:
    return "none" if value is None else type(value).__name__


#: The longest a computed delay may be: what the compiler allows a written one (about 100
#: years; deadlines are absolute times, which past a few thousand years no longer fit a date).
MAX_DELAY_MS = 36_500 * 86_400_000


def _rearm(timers: Timers | None, rules: tuple[CTransition, ...], now: int) -> Timers:
    return _due_order([*(timers or ()), *((now + (t.after_ms or 0), t) for t in rules)])


def _due_order(timers: list[tuple[int, CTransition]]) -> Timers:
    """Soonest first; timers due together innermost state first (as an event's rules are
    tried: a compound's timers after its children's), then in document order."""
    timers.sort(key=lambda x: (x[0], x[1].rank))
    return tuple(timers)


def _start_timers(
    machine: Machine, state: CState, now: int, ctx: dict[str, Any]
) -> Timers | Rejection | None:
    """The timers a flat flow's start arms in `state`; the rejection when a computed delay
    faults."""
    if any(t.after_ms is None for t in state.timers):
        try:
            return _arm_computed(machine, state.timers, now, ctx, state) or None
        except FAULTS as exc:
            where = f"the delay of a timer of {state.name}"
            return _fault(machine, exc, where, state, None, None, ctx)
    return _arm(state, now)


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
) -> Timers | None:
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
    return _due_order(timers)


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


#: How many configurations' names a machine keeps (`Machine.config_names`).
CONFIG_NAMES_KEPT: Final = 4096


def _names(m: Machine, config: tuple[CState, ...]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """A statechart configuration's state names and leaf names (`StepResult.configuration`,
    the leaves a history entry records), worked out once per configuration: a parallel
    chart's every step records them. A history entry records leaves only when `source` or
    `target` does not name them: `state` (the summary) is a leaf exactly when one is active."""
    found = m.config_names.get(config)
    if found is None:
        if len(m.config_names) >= CONFIG_NAMES_KEPT:
            m.config_names.clear()
        names = tuple(s.name for s in config)
        found = m.config_names[config] = (names, tuple(s.name for s in config if s.atomic))
    return found


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


def _leaves_dict(leaves: Leaves) -> dict[str, list[str]]:
    """A history entry's leaves as a snapshot writes them: only a statechart's entries have
    them, so a flat flow's history reads as earlier releases wrote it."""
    if leaves is None:
        return {}
    return {"source_leaves": list(leaves[0]), "target_leaves": list(leaves[1])}


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


def _shown(e: Entry, side: int, name: str | None) -> str | None:
    """How a step's repr names its source or target: the state, or in a parallel flow the
    active leaves (`{Pending, Waiting}`) rather than the state holding them all."""
    leaves = e[_LEAVES]
    if leaves is None or len(leaves[side]) < 2:
        return name
    return "{" + ", ".join(leaves[side]) + "}"


def _by_order(s: CState) -> int:
    return s.order


def _refused(
    machine: Machine, refused: Refusal, st: CState, event: str | None, c: Mapping[str, Any]
) -> Rejection:
    """A statechart step refused by a `reject` rule taken for an internal event."""
    t = refused.rule
    fn = machine._refusal_data(t)
    try:
        data = None if fn is None else copy_dict(fn(dict(c), refused.payload, t.source))
    except FAULTS as exc:
        return _fault(machine, exc, f"the data of {t.describe()}", st, event, refused.payload, c)
    return machine.rejection(
        R.REJECT,
        st,
        event,
        refused.payload,
        c,
        data,
        code=t.code,
        template=t.message,
        rule=t.index,
    )


def _stuck(
    machine: Machine,
    run: Macrostep,
    st: CState,
    event: str | None,
    p: Any,
    c: Mapping[str, Any],
) -> Rejection | None:
    """A statechart step that ends in a choice state none of whose routes holds."""
    for s in run.config:
        if s.choice:
            return machine.rejection(R.GUARD_FAILED, st, event, p, c, {"from": s.name, "to": None})
    return None


def _chart_words(run: Macrostep, exc: BaseException, default: str | None) -> str:
    """Where a statechart step faulted."""
    if isinstance(exc, Microsteps):
        return "the run to completion"
    taken = run.taken
    if taken is not None and taken.source.choice:
        # A choice state's route (its guard, or a block its step runs): worded as a flat
        # flow's routing words it (`_route`), so a fault reads the same on either kernel.
        return f"routing through {taken.source.name} ({taken.describe()})"
    if run.step is not None and taken is not None:
        return _phase_words(run.step, taken)
    if run.step is not None:
        return f"the {run.step.phase} actions of {run.step.state.name}"
    if taken is not None:
        return f"the guard of {taken.describe()}"
    return default or "a raised event"


def _feedback(ev: CEvent, given: Any, limits: Limits) -> dict[str, Any]:
    """The data of `invalid_payload`: seed 003's field-level feedback."""
    issues = report(ev.type, given, limits=limits)
    action = f"Send {ev.name} again with corrected data."
    if issues.unknown:
        action += " Unknown fields may be typos."
    return feedback(issues, action)


@dataclass(frozen=True, slots=True)
class _DataOf:
    """Where a fault happened: in the data (`with {...}`) of this clause or rule."""

    rule: Requirement | CTransition


def _refusal_data(
    machine: Machine, rule: Requirement | CTransition, c: dict[str, Any], p: Any, st: CState
) -> dict[str, Any] | None:
    """The data a flow's own refusal carries (`with {...}`): a copy, the host's to keep."""
    fn = machine._refusal_data(rule)
    return None if fn is None else copy_dict(fn(c, p, st))


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


def _mentions_payload(node: Any) -> bool:
    if not isinstance(node, Mapping):
        return False
    if node.get("op") == "event":
        return True
    return any(_mentions_payload(a) for a in node.get("args") or ())
