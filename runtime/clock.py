"""Where instances get the time from.

A clock is any callable returning the current time as seconds since the Unix epoch (a float),
like `time.time`. Instances read it once per committed step (the step's `at`) and when timers
are armed, and convert the reading once (`to_ms`): inside an instance time is integer
milliseconds (history, deadlines, delays), so timers fire at exact millisecond boundaries.
Tests pass a `FakeClock` and move it forward by hand; a host with its own notion of time (a
database's `now()`, a simulation) passes its own callable.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, datetime, timedelta

#: The type instances accept: no arguments, seconds since the epoch.
Clock = Callable[[], float]

system_clock: Clock = time.time


class FakeClock:
    """A clock that only moves when told to, in whole milliseconds (as instances count time).
    Starts at `start` (epoch seconds or an aware datetime; 2025-01-01T00:00:00Z by default)."""

    __slots__ = ("ms",)

    def __init__(self, start: float | datetime = 1735689600.0) -> None:
        #: the time, in integer milliseconds since the epoch
        self.ms: int = to_ms(start)

    def __call__(self) -> float:
        return self.ms / 1000

    def read_ms(self) -> int:
        """The time in integer milliseconds (what an instance on this clock reads)."""
        return self.ms

    @property
    def now(self) -> float:
        """The time in seconds since the epoch."""
        return self.ms / 1000

    def advance(self, seconds: float = 0.0, *, minutes: float = 0.0, hours: float = 0.0) -> float:
        """Move forward (rounded to the millisecond) and return the new time."""
        delta = round((seconds + 60.0 * minutes + 3600.0 * hours) * 1000)
        if delta < 0:
            raise ValueError("a clock does not go backwards")
        self.ms += delta
        return self.now

    def set(self, when: float | datetime) -> None:
        value = to_ms(when)
        if value < self.ms:
            raise ValueError("a clock does not go backwards")
        self.ms = value

    def datetime(self) -> datetime:
        return to_datetime(self.now)


def ms_reader(clock: Clock) -> tuple[Callable[[], int], int]:
    """How to read `clock` in integer milliseconds, the one conversion of a clock reading
    (`to_ms`): `read() // per_ms`. A step reads the clock once, on the hot path, so the system
    clock is read as `time.time_ns` and a `FakeClock` as its milliseconds, with no function
    of ours in between; any other clock's float seconds are rounded."""
    if clock is system_clock:
        return time.time_ns, 1_000_000
    if isinstance(clock, FakeClock):
        return clock.read_ms, 1
    return lambda: round(clock() * 1000), 1


def read_ms(clock: Clock) -> int:
    """`clock`'s time in integer milliseconds, as an instance on it reads it."""
    read, per_ms = ms_reader(clock)
    return read() // per_ms


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ONE_MS = timedelta(milliseconds=1)


def to_datetime(seconds: float) -> datetime:
    """Epoch seconds -> an aware UTC datetime (how times appear in history and journals)."""
    return datetime.fromtimestamp(seconds, UTC)


def ms_to_datetime(ms: int) -> datetime:
    """Epoch milliseconds (how instances keep time) -> an aware UTC datetime, exactly."""
    return _EPOCH + timedelta(milliseconds=ms)


def to_seconds(value: float | int | str | datetime) -> float:
    """Epoch seconds from what a snapshot or a host may hold: a number, an ISO 8601 string or
    a datetime (a naive one is taken as UTC)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return _as_datetime(value).timestamp()


def to_ms(value: float | int | str | datetime) -> int:
    """Epoch milliseconds, the integer time instances keep, from epoch seconds (a clock's
    reading: converted here, once, to the nearest millisecond, so 3.314 s + 0.001 s is
    3315 ms), an ISO 8601 string or a datetime (a naive one is taken as UTC)."""
    if isinstance(value, int | float) and not isinstance(value, bool):
        return round(value * 1000)
    return round((_as_datetime(value) - _EPOCH) / _ONE_MS)


def _as_datetime(value: object) -> datetime:
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    if isinstance(value, datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        return value
    raise TypeError(f"not a time: {value!r}")
