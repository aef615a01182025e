"""The active configuration that `active(STATE)` reads while a statechart step runs.

Guards and actions keep their `(context, payload, state)` signature, so the states active at
the moment of evaluation are found through a context variable that the instance sets around
every statechart step (the kernel's live set while a macrostep runs, so that an exit action
no longer sees the state it leaves and an entry action sees the state it enters, as SCXML's
`In()` does). Outside a statechart step (a flat flow) it is unset and `active(X)` asks whether
`X` is the state the expression is evaluated in. A context variable (not an attribute of the
shared machine) keeps two instances stepping in two threads or tasks apart.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

_CURRENT: ContextVar[Collection[Any] | None] = ContextVar("flowc_configuration", default=None)


def active_states() -> Collection[Any] | None:
    """The states (anything with a `name`) active in the statechart step running in this
    thread or task, or None outside one."""
    return _CURRENT.get()


@contextmanager
def configuration(states: Collection[Any] | None) -> Iterator[None]:
    """Make `states` (read live, not copied) the configuration `active()` reads inside (None:
    a flat flow's step)."""
    token = _CURRENT.set(states)
    try:
        yield
    finally:
        _CURRENT.reset(token)
