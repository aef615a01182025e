"""asyncio hosts: `AsyncInstance` serialises the steps of one instance with a lock and lets
subscribers be coroutines (a WebSocket broadcast, seed 002), and `run_timers` fires timers as
they fall due.

Steps themselves never wait on I/O, so they run inline on the event loop; the lock only keeps
two coroutines from interleaving their read-modify-write of the same instance and keeps
subscriber notifications in step order.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Mapping
from datetime import datetime
from typing import Any

from flowc.runtime.clock import Clock
from flowc.runtime.instance import Instance
from flowc.runtime.machine import Machine
from flowc.runtime.steps import AcceptedEvent, HistoryEntry, Outcome, StepResult

Subscriber = Callable[[StepResult], Awaitable[object] | object]


class AsyncInstance:
    """An `Instance` for asyncio code. Reads are plain properties; steps are coroutines."""

    def __init__(self, instance: Instance) -> None:
        self.instance = instance
        self._lock = asyncio.Lock()
        self._subs: list[Subscriber] = []

    @classmethod
    def start(
        cls,
        machine: Machine,
        context: Mapping[str, Any] | None = None,
        *,
        id: str | None = None,
        clock: Clock | None = None,
    ) -> AsyncInstance:
        """`Machine.start` (raises `Rejected` when starting is refused)."""
        return cls(machine.start(context, id=id, clock=clock))

    @classmethod
    def restore(
        cls, machine: Machine, snapshot: Mapping[str, Any] | str | bytes, **kw: Any
    ) -> AsyncInstance:
        return cls(machine.restore(snapshot, **kw))

    # ---- reading ----------------------------------------------------------------------------
    @property
    def state(self) -> str:
        return self.instance.state

    @property
    def configuration(self) -> tuple[str, ...]:
        return self.instance.configuration

    def active(self, name: str) -> bool:
        return self.instance.active(name)

    @property
    def title(self) -> str:
        return self.instance.title

    @property
    def meta(self) -> dict[str, Any]:
        return self.instance.meta

    @property
    def context(self) -> dict[str, Any]:
        return self.instance.context

    @property
    def history(self) -> list[HistoryEntry]:
        return self.instance.history

    @property
    def is_final(self) -> bool:
        return self.instance.is_final

    def accepted_events(self) -> list[AcceptedEvent]:
        return self.instance.accepted_events()

    def allowed_targets(self, *, force: bool = False) -> list[str]:
        return self.instance.allowed_targets(force=force)

    def render(self, template: str, /, **extra: Any) -> str:
        return self.instance.render(template, **extra)

    def snapshot(self) -> dict[str, Any]:
        return self.instance.snapshot()

    # ---- steps ------------------------------------------------------------------------------
    async def send(
        self,
        event: str,
        payload: Mapping[str, Any] | None = None,
        *,
        force: bool = False,
        reason: str | None = None,
        key: str | None = None,
    ) -> Outcome:
        async with self._lock:
            outcome = self.instance.send(event, payload, force=force, reason=reason, key=key)
            await self._notify(outcome)
            return outcome

    async def goto(
        self, target: str, *, force: bool = False, reason: str | None = None, key: str | None = None
    ) -> Outcome:
        async with self._lock:
            outcome = self.instance.goto(target, force=force, reason=reason, key=key)
            await self._notify(outcome)
            return outcome

    async def back(
        self, *, force: bool = False, reason: str | None = None, key: str | None = None
    ) -> Outcome:
        async with self._lock:
            outcome = self.instance.back(force=force, reason=reason, key=key)
            await self._notify(outcome)
            return outcome

    async def advance(self, now: float | datetime | None = None) -> list[Outcome]:
        async with self._lock:
            outcomes = self.instance.advance(now)
            for outcome in outcomes:
                await self._notify(outcome)
            return outcomes

    def subscribe(self, callback: Subscriber) -> Callable[[], None]:
        """Call (and await, if it is a coroutine function) `callback(step)` after every step
        committed through this wrapper, in step order. Returns a function that unsubscribes."""
        self._subs.append(callback)

        def unsubscribe() -> None:
            if callback in self._subs:
                self._subs.remove(callback)

        return unsubscribe

    async def _notify(self, outcome: Outcome) -> None:
        if not outcome.ok or (isinstance(outcome, StepResult) and outcome.replayed):
            return
        for cb in list(self._subs):
            result = cb(outcome)  # type: ignore[arg-type]
            if inspect.isawaitable(result):
                await result

    async def run_timers(
        self, *, stop: asyncio.Event | None = None, clock: Clock | None = None
    ) -> None:
        """Sleep until the next timer is due and fire it, until the instance is final or `stop`
        is set. Time is read from `clock`, by default the instance's own (with a `FakeClock`,
        something else must move it on while this waits)."""
        now = clock or self.instance.clock
        while not self.instance.is_final and not (stop is not None and stop.is_set()):
            deadline = self.instance.next_deadline
            delay = 3600.0 if deadline is None else max(0.0, deadline.timestamp() - now())
            if stop is not None:
                try:
                    await asyncio.wait_for(stop.wait(), timeout=min(delay, 3600.0))
                    return
                except TimeoutError:
                    pass
            else:
                await asyncio.sleep(min(delay, 3600.0))
            if deadline is not None:
                await self.advance(now())
