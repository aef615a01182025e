"""The timer worker loop: claim due timers, fire each as an ordinary step, sleep, repeat.

Engine-independent: what firing a timer means is the `fire` callback's business (it builds the
step function for one claim). Any number of workers may share a store; the store's leases and
the step transaction make each timer fire once (see docs/persistence.md). Polling is what
guarantees progress: a worker sleeps until the earliest deadline or `poll` seconds, whichever
comes first, so a timer armed by another process is seen within `poll`; a store with a
`wait_for_timers(timeout)` method (PostgreSQL) wakes the worker sooner when one is armed.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from flowc.runtime.store.handles import check_handle
from flowc.runtime.store.types import (
    InstanceNotFound,
    StepFn,
    StepOutcome,
    Store,
    TimerClaim,
)

log = logging.getLogger("flowc.worker")


@dataclass
class WorkerStats:
    claimed: int = 0
    committed: int = 0
    rejected: int = 0
    stale: int = 0
    conflicts: int = 0
    errors: int = 0
    by_status: dict[str, int] = field(default_factory=dict)


def default_owner() -> str:
    """host:pid:random, so leases say who holds them and two workers never share a name."""
    return f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"


class TimerWorker:
    def __init__(
        self,
        store: Store,
        fire: Callable[[TimerClaim], StepFn],
        *,
        owner: str | None = None,
        batch: int = 50,
        lease: float = 30.0,
        poll: float = 1.0,
        clock: Callable[[], float] = time.time,
        on_outcome: Callable[[TimerClaim, StepOutcome], None] | None = None,
        listen: bool = True,
        step: Callable[[TimerClaim, StepFn], StepOutcome] | None = None,
    ) -> None:
        if lease <= 0 or poll <= 0 or batch <= 0:
            raise ValueError("lease, poll and batch must be positive")
        if owner is not None:
            check_handle("owner", owner)
        self.store = store
        self.fire = fire
        self.owner = owner or default_owner()
        self.batch = batch
        self.lease = lease
        self.poll = poll
        self.clock = clock
        self.on_outcome = on_outcome
        self.listen = listen
        #: How a claimed timer's step is run: the store's `step`, unless the caller wraps it
        #: (DurableFlows loads stored graphs between tries).
        self.step: Callable[[TimerClaim, StepFn], StepOutcome] = step or (
            lambda claim, fn: self.store.step(claim.instance_id, fn, timer=claim)
        )
        self.stats = WorkerStats()

    def run_once(self) -> int:
        """Claim the timers due by this worker's clock (at most `batch`, leased for `lease`
        seconds) and fire each as one step; the number claimed. `run` calls it in a loop; a
        host with its own scheduler (or a test on a `FakeClock`) calls it directly."""
        claims = self.store.claim_due_timers(
            self.owner, limit=self.batch, lease=self.lease, now=self.clock()
        )
        self.stats.claimed += len(claims)
        for claim in claims:
            self._fire(claim)
        return len(claims)

    def _fire(self, claim: TimerClaim) -> None:
        if self.clock() >= claim.lease_until:
            # Our lease ran out while earlier claims of the batch fired: another worker may
            # hold this one now. Firing would still be safe (the step consumes the row once),
            # but leaving it avoids work the other worker is already doing.
            return
        try:
            outcome = self.step(claim, self.fire(claim))
        except InstanceNotFound:
            self.stats.stale += 1
            return
        except Exception:
            # An engine failure, not a refusal: keep the lease so the timer comes back only
            # when it runs out, rather than spinning on it.
            self.stats.errors += 1
            log.exception("firing timer %s of %s failed", claim.timer_id, claim.instance_id)
            return
        status = outcome.status
        self.stats.by_status[status] = self.stats.by_status.get(status, 0) + 1
        if status == "committed":
            self.stats.committed += 1
        elif status == "rejected":
            self.stats.rejected += 1
        elif status == "stale":
            self.stats.stale += 1
        elif status == "conflict":
            self.stats.conflicts += 1
            self.store.release(claim)
        if self.on_outcome is not None:
            self.on_outcome(claim, outcome)

    def sleep_time(self) -> float:
        deadline = self.store.next_deadline()
        if deadline is None:
            return self.poll
        # Never quite zero: a due timer we could not claim (lock busy) must not spin us.
        return max(0.005, min(self.poll, deadline - self.clock()))

    def run(
        self,
        *,
        stop: threading.Event | None = None,
        until_idle: bool = False,
        max_seconds: float | None = None,
    ) -> WorkerStats:
        """Loop until `stop` is set, or (with `until_idle`) until no timer is pending at all,
        or `max_seconds` have passed."""
        stop = stop or threading.Event()
        started = time.monotonic()
        while not stop.is_set():
            if max_seconds is not None and time.monotonic() - started >= max_seconds:
                break
            if self.run_once() >= self.batch:
                continue  # more may be due right now
            if until_idle and not self.store.timers():
                break
            delay = self.sleep_time()
            # A store that can wake us when a timer is armed (PostgreSQL's LISTEN/NOTIFY) is
            # asked to; the sleep is bounded by `poll` either way, so polling still guarantees
            # progress if a notification is lost.
            wait = getattr(self.store, "wait_for_timers", None)
            if wait is not None and self.listen:
                wait(delay)
            else:
                stop.wait(delay)
        return self.stats
