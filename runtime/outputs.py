"""What a step's actions produce besides the new context.

Four action kinds write here rather than to the context: `raise` (an internal event, processed
inside the same atomic step before the next external event), `emit` (an effect: an output
event for the host, delivered only after the step commits), and `send` / `cancel` (a scheduled
event to this instance, or forgetting one: the engine applies them, in order, at the commit).
Action blocks keep their `(context, payload, state)` signature, so the collector is found
through a context variable that the instance sets while it runs a step whose blocks may raise,
emit or schedule; flows that do none of these never touch it. A context variable (not an
attribute of the shared, immutable machine) keeps two instances stepping in two threads or tasks
apart.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, NamedTuple

from flowc.runtime.limits import LimitExceeded, Limits


class Scheduling(NamedTuple):
    """One `send` (`event` set: the event, its payload, its delay in ms, its id or None) or
    `cancel` (`event` None: the id) run by a step's actions; with `to`, a message to the
    parent (`"parent"`) or the children of an invoke (its id), delivered after the step
    (children.py)."""

    id: str | None
    event: str | None
    payload: dict[str, Any] | None = None
    delay_ms: int = 0
    to: str | None = None


class StepOutputs:
    """The events raised and the effects emitted by one step's actions, in order, and the work
    the step's loops have done: the step's bounds (`Limits.max_outputs`, `max_output_size`,
    `max_loop_iterations`) are kept here, as the collector lives exactly as long as the step."""

    __slots__ = ("effects", "iterations", "raised", "scheduled", "size")

    def __init__(self) -> None:
        #: (event name, payload or None), in the order the actions raised them
        self.raised: list[tuple[str, dict[str, Any] | None]] = []
        #: (effect name, payload), in the order the actions emitted them
        self.effects: list[tuple[str, dict[str, Any]]] = []
        #: `send` and `cancel`, in the order the actions ran them (`Scheduling`)
        self.scheduled: list[Scheduling] = []
        #: loop iterations charged so far (`charge_loop`)
        self.iterations = 0
        #: total size of the payloads above
        self.size = 0

    def emit(self, name: str, payload: dict[str, Any], limits: Limits) -> None:
        self._charge(payload, limits)
        self.effects.append((name, payload))

    def raise_event(self, name: str, payload: dict[str, Any] | None, limits: Limits) -> None:
        self._charge(payload, limits)
        self.raised.append((name, payload))

    def schedule(self, entry: Scheduling, limits: Limits) -> None:
        self._charge(entry.payload, limits)
        self.scheduled.append(entry)

    def _charge(self, payload: dict[str, Any] | None, limits: Limits) -> None:
        """Count one more output and its payload's size, refusing the step past the bounds
        before the output is kept (a storm stops at the bound, not at a `MemoryError`)."""
        if len(self.effects) + len(self.raised) + len(self.scheduled) >= limits.max_outputs:
            raise LimitExceeded(
                f"the step emits and raises more than {limits.max_outputs:,} effects and events "
                "(Limits.max_outputs)"
            )
        if payload:
            self.size += limits.output_size(payload, limits.max_output_size - self.size)

    def charge_loop(self, items: int, limits: Limits) -> None:
        """A loop over `items` items starts: refused when the step's loops would pass
        `Limits.max_loop_iterations` in all."""
        self.iterations += items
        if self.iterations > limits.max_loop_iterations:
            raise LimitExceeded(
                f"the step's loops would run more than {limits.max_loop_iterations:,} "
                "iterations in all (Limits.max_loop_iterations)"
            )


_CURRENT: ContextVar[StepOutputs | None] = ContextVar("flowc_step_outputs", default=None)


def current_outputs() -> StepOutputs | None:
    """The collector of the step running in this thread or task, if it collects."""
    return _CURRENT.get()


@contextmanager
def step_budget() -> Iterator[StepOutputs]:
    """The collector that keeps the running step's loop budget: the step's own, or, for work
    run outside any step that collects (a guard of a flat flow, a block run on its own), one
    shared by everything inside the block (loops nested in a loop, quantifiers in one)."""
    out = _CURRENT.get()
    if out is not None:
        yield out
        return
    with collecting() as fresh:
        yield fresh


@contextmanager
def collecting(outputs: StepOutputs | None = None) -> Iterator[StepOutputs]:
    """Collect what the actions run inside the block raise and emit."""
    out = outputs if outputs is not None else StepOutputs()
    token = _CURRENT.set(out)
    try:
        yield out
    finally:
        _CURRENT.reset(token)
