"""What a step leaves behind: history entries, step results and their journals.

A history entry is a tuple (`Entry`, fields at the indices `_SEQ` ... `_LEAVES`): the instance
appends one per committed step, cheaply; `HistoryEntry` and `StepResult` are the views hosts
read. The engine (engine.py) makes the entries, the generated accelerator (codegen.py) too,
and the instance (instance.py) keeps them.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final, TypeAlias

from flowc.runtime.clock import ms_to_datetime
from flowc.runtime.rejections import Rejection
from flowc.runtime.templating import EventVars, wrap

if TYPE_CHECKING:
    from flowc.runtime.flow import LoadedFlow as Machine


_new = object.__new__


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
    `back`, `timer` or `scheduled` (a scheduled event delivered; its `event` and `payload` are
    set as for `event`); `source` is None for `start`; `via` lists the choice states routed
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
        """The event's name for event and scheduled steps, else the kind (`goto`, `back`,
        `timer`, ...)."""
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

    __slots__ = ("_c", "_fx", "_g", "_j", "_m", "_t", "_then")

    _c: dict[str, Any]
    #: a statechart's configuration after the step (set only by the engine)
    _g: tuple[str, ...]
    #: a statechart step's rules taken (set only by the engine)
    _t: tuple[int, ...]
    _j: dict[str, str]
    _m: Machine
    #: the effects the step's actions emitted, as collected (set only when there are some)
    _fx: list[tuple[str, dict[str, Any]]]
    #: a tree's steps that followed in the same call (set only then: children.py)
    _then: tuple[StepResult, ...]

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
    def then(self) -> tuple[StepResult, ...]:
        """In a tree of instances (child flows): the steps of the root that followed this one in
        the same call, in order: messages it took (kind `message`) and, as entries of kind
        `child`, the steps its children took (their effects are these entries' effects).
        Empty otherwise."""
        try:
            return self._then
        except AttributeError:
            return ()

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


def _leaves_dict(leaves: Leaves) -> dict[str, list[str]]:
    """A history entry's leaves as a snapshot writes them: only a statechart's entries have
    them, so a flat flow's history reads as earlier releases wrote it."""
    if leaves is None:
        return {}
    return {"source_leaves": list(leaves[0]), "target_leaves": list(leaves[1])}


def _shown(e: Entry, side: int, name: str | None) -> str | None:
    """How a step's repr names its source or target: the state, or in a parallel flow the
    active leaves (`{Pending, Waiting}`) rather than the state holding them all."""
    leaves = e[_LEAVES]
    if leaves is None or len(leaves[side]) < 2:
        return name
    return "{" + ", ".join(leaves[side]) + "}"
