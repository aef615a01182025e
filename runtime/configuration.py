"""What a statechart step's expressions read besides the context, the payload and the state:
the active configuration (`active(STATE)`) and the name of the event being processed
(`event_name()`).

Guards and actions keep their `(context, payload, state)` signature, so both are found through
a context variable that the instance sets around every statechart step: while a macrostep
runs, the engine's `Macrostep` itself, whose configuration is live (an exit action no longer
sees the state it leaves once it is left, an entry action sees the state it enters, as SCXML's
`In()` does) and whose event is the one being processed (an internal event once it is taken;
eventless rules keep the last one, as SCXML's `_event`). Outside a statechart step (a flat
flow) it is unset: `active(X)` then asks whether `X` is the state the expression is evaluated
in. A context variable (not an attribute of the shared machine) keeps two instances stepping
in two threads or tasks apart.
"""

from __future__ import annotations

from collections.abc import Collection
from contextvars import ContextVar
from typing import Any, Protocol


class StepScope(Protocol):
    @property
    def config(self) -> Collection[Any] | None:
        """The active states (anything with a `name`), or None in a flat flow."""

    @property
    def event(self) -> str | None:
        """The name of the event being processed, None when the step has no event (a timer,
        `goto`, the start)."""


class Surroundings:
    """A `StepScope` for the moments before a macrostep starts (choosing its transitions)."""

    __slots__ = ("config", "event")

    def __init__(self, config: Collection[Any] | None, event: str | None = None) -> None:
        self.config = config
        self.event = event


_CURRENT: ContextVar[StepScope | None] = ContextVar("flowc_step_scope", default=None)


def current_scope() -> StepScope | None:
    """The scope of the statechart step running in this thread or task, or None."""
    return _CURRENT.get()


class within:
    """Make `scope` (read live, not copied) what `active()` and `event_name()` read inside.
    A class rather than a generator: every statechart step enters one or two."""

    __slots__ = ("_scope", "_token")

    def __init__(self, scope: StepScope) -> None:
        self._scope = scope

    def __enter__(self) -> None:
        self._token = _CURRENT.set(self._scope)

    def __exit__(self, *exc: object) -> None:
        _CURRENT.reset(self._token)


def configuration(states: Collection[Any] | None, event: str | None = None) -> within:
    """`within` a scope of these states and this event (None: a flat flow's step)."""
    return within(Surroundings(states, event))
