"""What a step's actions produce besides the new context.

Two action kinds write here rather than to the context: `raise` (an internal event, processed
inside the same atomic step before the next external event) and `emit` (an effect: an output
event for the host, delivered only after the step commits). Action blocks keep their
`(context, payload, state)` signature, so the collector is found through a context variable
that the instance sets while it runs a step whose blocks may raise or emit; flows that do
neither never touch it. A context variable (not an attribute of the shared, immutable
machine) keeps two instances stepping in two threads or tasks apart.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any


class StepOutputs:
    """The events raised and the effects emitted by one step's actions, in order."""

    __slots__ = ("effects", "raised")

    def __init__(self) -> None:
        #: (event name, payload or None), in the order the actions raised them
        self.raised: list[tuple[str, dict[str, Any] | None]] = []
        #: (effect name, payload), in the order the actions emitted them
        self.effects: list[tuple[str, dict[str, Any]]] = []


_CURRENT: ContextVar[StepOutputs | None] = ContextVar("flowc_step_outputs", default=None)


def current_outputs() -> StepOutputs | None:
    """The collector of the step running in this thread or task, if it collects."""
    return _CURRENT.get()


@contextmanager
def collecting(outputs: StepOutputs | None = None) -> Iterator[StepOutputs]:
    """Collect what the actions run inside the block raise and emit."""
    out = outputs if outputs is not None else StepOutputs()
    token = _CURRENT.set(out)
    try:
        yield out
    finally:
        _CURRENT.reset(token)
