"""Where instances get the time from.

A clock is any callable returning the current time as seconds since the Unix epoch (a float),
like `time.time`. Instances read it once per committed step (the step's `at`) and when timers
are armed. Tests pass a `FakeClock` and move it forward by hand; a host with its own notion of
time (a database's `now()`, a simulation) passes its own callable.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime

#: The type instances accept: no arguments, seconds since the epoch.
Clock = Callable[[], float]

system_clock: Clock = time.time


class FakeClock:
    """A clock that only moves when told to. Starts at `start` (epoch seconds or an aware
    datetime; 2025-01-01T00:00:00Z by default)."""

    __slots__ = ("now",)

    def __init__(self, start: float | datetime = 1735689600.0) -> None:
        self.now = start.timestamp() if isinstance(start, datetime) else float(start)

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float = 0.0, *, minutes: float = 0.0, hours: float = 0.0) -> float:
        """Move forward and return the new time."""
        delta = seconds + 60.0 * minutes + 3600.0 * hours
        if delta < 0:
            raise ValueError("a clock does not go backwards")
        self.now += delta
        return self.now

    def set(self, when: float | datetime) -> None:
        value = when.timestamp() if isinstance(when, datetime) else float(when)
        if value < self.now:
            raise ValueError("a clock does not go backwards")
        self.now = value

    def datetime(self) -> datetime:
        return to_datetime(self.now)


def to_datetime(seconds: float) -> datetime:
    """Epoch seconds -> an aware UTC datetime (how times appear in history and journals)."""
    return datetime.fromtimestamp(seconds, UTC)


def to_seconds(value: float | int | str | datetime) -> float:
    """Epoch seconds from what a snapshot or a host may hold: a number, an ISO 8601 string or
    a datetime (a naive one is taken as UTC)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return value.timestamp()
    raise TypeError(f"not a time: {value!r}")
