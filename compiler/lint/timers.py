"""Timers that can never fire because another timer always fires first and leaves (W319).

A state's timers are armed when it is entered. When an unguarded timer of the state (or of a
state enclosing it) has a shorter constant delay and its transition leaves the state, it fires
first every time and takes the instance out: the longer timer is starved. A transition that
stays inside (an internal `-> self`, which repeats, or a move to a descendant) leaves the other
timers running, so it starves nothing; `reenter` exits and enters again, which restarts every
timer of the state, so it starves the longer ones as surely as a move elsewhere. Timers with the
same delay compete as one trigger, which the shadowing analysis (W305) covers; computed delays
are known only at run time and are never compared.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from flowc.runtime.model import Transition


@dataclass(frozen=True, slots=True)
class Starving:
    """`timer` never fires: `by` (of `timer`'s state or of an enclosing one) always fires first
    and leaves the state."""

    timer: Transition
    by: Transition


def find_starved(
    outgoing: dict[str, list[Transition]],
    parent: dict[str, str],
    unconditional: Callable[[Transition], bool],
    dead: set[int],
) -> list[Starving]:
    """Every starved timer, given the rules of each state in the order they are tried, each
    state's parent, which rules always fire once tried, and the rules already known dead."""
    found: list[Starving] = []
    for state, rules in outgoing.items():
        timers = [t for t in rules if _constant_timer(t) and t.index not in dead]
        if not timers:
            continue
        leaving = list(_leaving_timers(state, outgoing, parent, unconditional, dead))
        if not leaving:
            continue
        for timer in timers:
            assert timer.after_ms is not None
            first = min(leaving, key=lambda by: (by.after_ms or 0, by.index))
            if first is not timer and (first.after_ms or 0) < timer.after_ms:
                found.append(Starving(timer, first))
    return found


def _leaving_timers(
    state: str,
    outgoing: dict[str, list[Transition]],
    parent: dict[str, str],
    unconditional: Callable[[Transition], bool],
    dead: set[int],
) -> Iterator[Transition]:
    """The unguarded constant timers of `state` and its ancestors that, once they fire, exit
    `state` (and so disarm its timers)."""
    holder: str | None = state
    while holder is not None:
        for t in outgoing.get(holder, ()):
            armed = _constant_timer(t) and t.index not in dead and unconditional(t)
            if armed and (t.reenter or not _within(_target(t), holder, parent)):
                yield t
        holder = parent.get(holder)


def _constant_timer(t: Transition) -> bool:
    return t.kind == "timer" and t.after_ms is not None


def _target(t: Transition) -> str | None:
    return t.source if t.target == "self" else t.target


def _within(name: str | None, ancestor: str, parent: dict[str, str]) -> bool:
    """Whether `name` is `ancestor` or one of its descendants."""
    while name is not None:
        if name == ancestor:
            return True
        name = parent.get(name)
    return False
