"""Durable instances: the engine's steps run through a `Store`, one transaction each.

`DurableFlows(store, machines)` is what a host (or `flowc run --store`, `flowc instances`,
`flowc worker`) holds. Each operation loads the instance's record, restores the engine's
`Instance` from the stored snapshot (migrating it first when its flow has a newer version),
runs the operation, and hands the store a `Change` (new snapshot, the new history rows, the
complete set of pending timers) or a `Reject`; the store commits it only if nobody else wrote
in between, else it runs the operation again on the fresh record.

The engine's own snapshot format is stored (restorable by `Machine.restore` without flowc's
store), except for its idempotency keys, which the store keeps without the engine's cap, and
its history, cut down to what restoring needs (`compact_history`; every step is in the store's
history rows).
"""

from __future__ import annotations

import json
import logging
import threading
import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from flowc.runtime.children import on_child
from flowc.runtime.clock import Clock, system_clock, to_seconds
from flowc.runtime.instance import Instance
from flowc.runtime.machine import Machine
from flowc.runtime.messages import DEFAULT_MESSAGES
from flowc.runtime.rejections import Rejection, SnapshotError
from flowc.runtime.steps import Outcome, StepResult
from flowc.runtime.store.handles import check_handle
from flowc.runtime.store.migrate import Migration, migrate_snapshot
from flowc.runtime.store.replay import (
    ReplayedStep,
    fork_patches,
    instance_after,
    replay_rows,
    start_payload,
)
from flowc.runtime.store.types import (
    DEFAULT_MAX_ATTEMPTS,
    Change,
    EffectSpec,
    HistoryEntry,
    HistoryRow,
    InstanceRecord,
    Json,
    NewInstance,
    OutboxEffect,
    Reject,
    StepFn,
    StepOutcome,
    StepStatus,
    Store,
    TimerClaim,
    TimerSpec,
    copy_json,
    timer_deadline,
)
from flowc.runtime.store.worker import TimerWorker
from flowc.runtime.validate import Invalid, feedback, report

_T = TypeVar("_T")

#: `DurableFlows.subscribe` callbacks: the instance's id and the step committed.
StepSubscriber = Callable[[str, StepResult], None]
#: What a host delivers effects with (`DurableFlows(..., on_effect=...)`): called once per
#: effect, in order; returning marks the effect delivered, raising leaves it in the outbox.
EffectHandler = Callable[[OutboxEffect], object]

log = logging.getLogger("flowc.runtime.store")

#: The key of a forked instance's snapshot naming its origin: `{"forked_from": ID, "at": SEQ}`.
LINEAGE = "lineage"


class UnknownFlow(LookupError):
    """An instance of a flow (or flow version) that was neither given to `DurableFlows` nor
    kept in its store."""


class _GraphNeeded(Exception):
    """Raised inside a step when the instance's graph must come from the store: it is read
    outside the step's transaction (a second connection inside it could starve a pool), then
    the step runs again."""

    def __init__(self, record: InstanceRecord) -> None:
        super().__init__(record.graph_hash)
        self.record = record


@dataclass(frozen=True, slots=True)
class DurableOutcome:
    """What a durable operation did. `data` is JSON: `StepResult.to_dict()` of a committed step
    (also when `replayed`, where it is the first outcome), `Rejection.to_dict()` of a refusal
    or a `conflict`. `result` is the engine's object when this call ran the step (None when
    replayed); `record` the stored record after the call (None when replayed)."""

    status: StepStatus
    instance_id: str
    data: dict[str, Json]
    result: StepResult | Rejection | list[Outcome] | None = None
    record: InstanceRecord | None = None

    @property
    def ok(self) -> bool:
        return bool(self.data.get("ok"))

    @property
    def replayed(self) -> bool:
        return self.status == "replayed"


class FlowRegistry:
    """The machines a host runs, by flow name and version (the newest version of a name is
    where its instances go when they next step, if `upgrade`)."""

    def __init__(self, machines: Iterable[Machine] = ()) -> None:
        self._by_name: dict[str, dict[int, Machine]] = {}
        self._by_hash: dict[str, Machine] = {}
        for machine in machines:
            self.add(machine)

    def add(self, machine: Machine) -> None:
        versions = self._by_name.setdefault(machine.name, {})
        if machine.version in versions and versions[machine.version].hash != machine.hash:
            raise ValueError(
                f"two different graphs claim to be {machine.name} version {machine.version}"
            )
        versions[machine.version] = machine
        if machine.hash:
            self._by_hash[machine.hash] = machine

    def latest(self, name: str) -> Machine:
        versions = self._by_name.get(name)
        if not versions:
            raise UnknownFlow(f"no flow named {name!r} is loaded")
        return versions[max(versions)]

    def exact(self, name: str, version: int, graph_hash: str) -> Machine | None:
        machine = self._by_hash.get(graph_hash) if graph_hash else None
        if machine is not None and machine.name == name:
            return machine
        return None

    def names(self) -> list[str]:
        return sorted(self._by_name)

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def machines(self) -> list[Machine]:
        return [m for versions in self._by_name.values() for m in versions.values()]

    def __len__(self) -> int:
        return sum(len(v) for v in self._by_name.values())


class DurableFlows:
    """Instances of the registered flows, kept in `store`.

    - `upgrade=True`: an instance whose flow has a newer registered version moves to it on its
      next step (through `migrations` when states were removed); with `upgrade=False` it stays
      on the exact graph it started under, which must then be registered.
    - `migrations`: state and context mappings between versions (see `migrate.py`), for
      versions a flow's own `migrate from N` blocks do not cover (docs/persistence.md).
    - `compact`: keep only the history entries restoring needs in the stored snapshot
      (`compact_history`); the store's history rows always have every step, and `load` puts
      them back, so its `Instance` shows the whole history either way.

    The graphs of the given machines are kept in the store (by content hash, once, at the
    first operation), and an instance whose graph was not given runs on the graph the store
    keeps for it: exactly the graph it is on, never upgraded (to upgrade, give the newer
    version). So a worker or a CLI needs no flow files for instances some host has started.
    """

    def __init__(
        self,
        store: Store,
        machines: FlowRegistry | Iterable[Machine],
        *,
        clock: Clock | None = None,
        upgrade: bool = True,
        migrations: Sequence[Migration] = (),
        max_attempts: int = DEFAULT_MAX_ATTEMPTS,
        compact: bool = True,
        on_effect: EffectHandler | None = None,
    ) -> None:
        self.store = store
        self.compact = compact
        self.flows = machines if isinstance(machines, FlowRegistry) else FlowRegistry(machines)
        # One clock for the flows, the store and the workers: the one given, which the store
        # then reads too, else the store's own (a host's store written before stores had a
        # `clock` attribute runs on the system clock, as it did).
        if clock is not None and hasattr(store, "clock"):
            store.clock = clock
        self.clock: Clock = clock if clock is not None else getattr(store, "clock", system_clock)
        self.upgrade = upgrade
        self.migrations = tuple(migrations)
        self.max_attempts = max_attempts
        self._subscribers: list[StepSubscriber] = []
        self._graphs_kept = False
        #: graphs read from the store, by hash
        self._stored: dict[str, Machine] = {}
        #: delivers the outbox's effects after each commit that wrote some (`deliver_effects`)
        self.on_effect = on_effect
        #: one delivery at a time in this process (another process may deliver too: at least once)
        self._delivering = threading.Lock()

    def subscribe(self, fn: StepSubscriber) -> Callable[[], None]:
        """Call `fn(instance_id, step)` for every step this object commits: sends, go-tos and
        backs, and the timer steps its `worker()` fires. Called after the transaction commits
        (never for a refusal, a replay or a lost race), in the committing thread; a process
        that dies in between misses the call, so sinks that must not lose steps are idempotent
        and catch up from the store's history. Returns a function that unsubscribes."""
        self._subscribers.append(fn)

        def unsubscribe() -> None:
            if fn in self._subscribers:
                self._subscribers.remove(fn)

        return unsubscribe

    def _deliver(self, instance_id: str, outcomes: Iterable[Outcome | None]) -> None:
        for outcome in outcomes:
            if isinstance(outcome, StepResult):
                for fn in list(self._subscribers):
                    fn(instance_id, outcome)

    def deliver_effects(self, handler: EffectHandler | None = None, *, batch: int = 100) -> int:
        """Deliver the effects of the store's outbox to `handler` (default: `on_effect`), oldest
        first, marking each delivered once the handler returns; returns how many were. A handler
        that raises stops the delivery (logged): that effect and the later ones stay in the
        outbox for the next call. `DurableFlows` calls this after every commit that wrote
        effects when it has an `on_effect`; a host calls it at startup too, to deliver what a
        crash between a commit and its delivery left behind. At least once: a crash after the
        handler ran and before the effect was marked delivers it again (`OutboxEffect.id` is
        the same each time)."""
        deliver = handler if handler is not None else self.on_effect
        if deliver is None:
            raise ValueError("no effect handler: pass one, or give DurableFlows an on_effect")
        done = 0
        with self._delivering:
            while True:
                pending = self.store.pending_effects(limit=batch)
                for effect in pending:
                    try:
                        deliver(effect)
                    except Exception:
                        log.exception("flowc: delivering effect %s raised", effect.id)
                        return done
                    self.store.mark_delivered([effect])
                    done += 1
                if len(pending) < batch:
                    return done

    def _after_commit(self, outcomes: Iterable[Outcome | None]) -> None:
        """Deliver the outbox when these committed steps emitted effects and a handler waits."""
        if self.on_effect is not None and any(
            isinstance(o, StepResult) and hasattr(o, "_fx") for o in outcomes
        ):
            self.deliver_effects()

    def close(self) -> None:
        """Close the store (its connections)."""
        self.store.close()

    def __enter__(self) -> DurableFlows:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- lifecycle ----------------------------------------------------------------------------

    def start(
        self,
        flow: str,
        context: Mapping[str, Any] | None = None,
        *,
        id: str | None = None,
    ) -> DurableOutcome:
        """Start an instance of the newest registered version of `flow` and store it. A
        refused start (`invalid_context`, ...) stores nothing. `InstanceExists` if `id` is
        taken."""
        if id is not None and id != "":
            check_handle("id", id)
        self._keep_graphs()
        machine = self.flows.latest(flow)
        instance_id = id or uuid.uuid4().hex
        started = machine.try_start(context, id=instance_id, clock=self.clock)
        if isinstance(started, Rejection):
            return DurableOutcome("rejected", instance_id, started.to_dict(), started)
        snapshot = _stored_snapshot(started)
        effects = [
            EffectSpec(started.seq, i, fx["effect"], fx["payload"])
            for i, fx in enumerate(started.start_effects)
        ]
        first = int(snapshot["history"][0]["seq"]) if snapshot["history"] else 1
        rows = _start_rows(snapshot, context)
        record = self.store.create(_new(instance_id, machine, snapshot, rows, first, effects))
        if started.start_effects and self.on_effect is not None:
            self.deliver_effects()
        data: dict[str, Json] = {
            "ok": True,
            "id": instance_id,
            "state": started.state,
            "seq": started.seq,
        }
        if started.start_effects:
            data["effects"] = started.start_effects
        return DurableOutcome("committed", instance_id, data, None, record)

    def load(self, instance_id: str, *, full_history: bool = True) -> Instance:
        """The instance as stored, restored (and migrated, as its next step would be), with its
        whole history: the stored snapshot keeps only what restoring needs (`compact`), so the
        other entries are read from the store's history rows (one more query, in proportion to
        the instance's age; `full_history=False` skips it, for a caller that only wants the
        state and context). Changing the instance changes nothing stored: steps go through
        `send`, `goto`, `back`."""
        record = self.store.load(instance_id)
        if full_history:
            record = self._with_full_history(record)
        instance, _ = self._with_graphs(lambda: self._restore(record))
        return instance

    def _with_full_history(self, record: InstanceRecord) -> InstanceRecord:
        kept = list(record.snapshot.get("history") or ())
        if not kept:
            return record
        last = int(kept[-1]["seq"])
        by_seq = {int(h["seq"]): h for h in kept}
        # Rows past the snapshot's last step were committed after the record was read.
        rows = [r for r in self.store.history(record.id) if r.seq <= last]
        if not rows or not by_seq.keys() <= {r.seq for r in rows}:
            return record  # rows pruned or never written: the snapshot's entries are all
        history = [by_seq.get(r.seq) or _snapshot_entry(r) for r in rows]
        return replace(record, snapshot={**record.snapshot, "history": history})

    # -- steps --------------------------------------------------------------------------------

    def send(
        self,
        instance_id: str,
        event: str,
        payload: Mapping[str, Any] | None = None,
        *,
        force: bool = False,
        key: str | None = None,
        reason: str | None = None,
        child: str | None = None,
    ) -> DurableOutcome:
        """Deliver an event to the stored instance; a winning rule marked `back` needs
        `force=True`, as on `Instance.send`. `child`: to its child instance at that path
        (`pay.3`, `reviews.2.0/fraud.5`: `Instance.child`), stored with it."""
        return self._step(
            instance_id,
            lambda i: i.send(event, payload, force=force, reason=reason),
            key=key,
            event=event,
            child=child,
        )

    def goto(
        self,
        instance_id: str,
        target: str,
        *,
        force: bool = False,
        key: str | None = None,
        reason: str | None = None,
        child: str | None = None,
    ) -> DurableOutcome:
        return self._step(
            instance_id,
            lambda i: i.goto(target, force=force, reason=reason),
            key=key,
            child=child,
        )

    def back(
        self,
        instance_id: str,
        *,
        force: bool = False,
        key: str | None = None,
        reason: str | None = None,
        child: str | None = None,
    ) -> DurableOutcome:
        return self._step(
            instance_id, lambda i: i.back(force=force, reason=reason), key=key, child=child
        )

    def _step(
        self,
        instance_id: str,
        op: Callable[[Instance], Outcome],
        *,
        key: str | None,
        event: str | None = None,
        child: str | None = None,
    ) -> DurableOutcome:
        ran: list[Outcome] = []

        def fn(record: InstanceRecord) -> Change | Reject:
            instance, migrated = self._restore(record)
            outcome = op(instance) if child is None else on_child(instance, child, op, event)
            ran.append(outcome)
            if isinstance(outcome, Rejection):
                return Reject(outcome.to_dict())
            steps = _root_steps(outcome, child)
            return self._change(record, instance, migrated, outcome.to_dict(), steps)

        self._keep_graphs()
        out = self._with_graphs(
            lambda: self.store.step(instance_id, fn, key=key, max_attempts=self.max_attempts)
        )
        last = ran[-1] if ran else None
        if out.status == "committed":
            steps = _root_steps(last, child) if isinstance(last, StepResult) else [last]
            if self._subscribers:
                self._deliver(instance_id, steps)
            self._after_commit(steps)
        return self._outcome(instance_id, out, last, event)

    # -- fork and replay ----------------------------------------------------------------------

    def fork(
        self,
        instance_id: str,
        *,
        at: int,
        patch: Mapping[str, Any] | None = None,
        id: str | None = None,
    ) -> DurableOutcome:
        """A new instance from the original as it was right after step `at` (re-run from its
        history on the graph it is on), with `patch` merged into its context, recording
        `forked_from`/`at` in its snapshot (`lineage`). The fork's history is the original's up
        to `at`; no effect of those steps is written to the outbox again, and the original is
        only read. Refused (`invalid_context`) when the patched context does not check;
        `NotReplayable` when the history cannot be re-run up to `at`."""
        self._keep_graphs()
        record = self.store.load(instance_id)
        machine = self.graph(record)
        rows = self.store.history(instance_id)
        new_id = id or uuid.uuid4().hex
        # The original's own patches (a fork of a fork) made at or before `at` hold here too.
        patches = [p for p in fork_patches(record.snapshot.get(LINEAGE)) if p["at"] <= at]
        forked = instance_after(machine, rows, at, instance_id=new_id, patches=patches)
        snapshot = _stored_snapshot(forked)
        if patch:
            given = {**snapshot["context"], **patch}
            try:
                snapshot["context"] = copy_json(machine.context_type.check(given))
            except (Invalid, RecursionError):
                issues = report(machine.context_type, given, limits=machine.limits)
                data = feedback(issues, "Fork again with a corrected --context.")
                state = machine.states[forked.state]
                rejection = machine.rejection("invalid_context", state, None, None, given, data)
                return DurableOutcome("rejected", new_id, rejection.to_dict(), rejection)
        if patch:
            patches.append({"at": at, "context": copy_json(dict(patch))})
        snapshot[LINEAGE] = {"forked_from": instance_id, "at": at, "patches": patches}
        kept = [r for r in rows if r.seq <= at]
        history = [HistoryEntry(r.at, r.source, r.target, r.trigger, r.payload, r.reason,
                                r.kind, r.via) for r in kept]  # fmt: skip
        if self.compact:
            snapshot["history"] = compact_history(snapshot["history"])
        created = self.store.create(_new(new_id, machine, snapshot, history, kept[0].seq))
        data = {"ok": True, "id": new_id, "state": forked.state, "seq": at, "forked_from":
                instance_id, "at": at}  # fmt: skip
        return DurableOutcome("committed", new_id, data, None, created)

    def replay(self, instance_id: str, machine: Machine | None = None) -> list[ReplayedStep]:
        """Re-run the instance's recorded events and timer firings, in memory, on `machine`
        (default: the graph it is on) and return one `ReplayedStep` per step re-run; the last
        has a `difference` when a step did not go as recorded. Nothing is written."""
        record = self.store.load(instance_id)
        graph = machine or self.graph(record)
        rows = self.store.history(instance_id)
        patches = fork_patches(record.snapshot.get(LINEAGE))
        return list(replay_rows(graph, rows, instance_id=record.id, patches=patches))

    def graph(self, record: InstanceRecord) -> Machine:
        """The very graph `record` runs on (given, else read from the store), never upgraded:
        what a tool showing the instance draws and re-runs it with."""
        return self._with_graphs(lambda: self._exact_machine(record))

    def _exact_machine(self, record: InstanceRecord) -> Machine:
        """The very graph the instance is on: given, else the store's (never upgraded)."""
        exact = self.flows.exact(record.flow, record.flow_version, record.graph_hash)
        if exact is not None:
            return exact
        stored = self._stored.get(record.graph_hash)
        if stored is None:
            raise _GraphNeeded(record)
        return stored

    # -- timers -------------------------------------------------------------------------------

    def fire(self, claim: TimerClaim, ran: list[list[Outcome]] | None = None) -> StepFn:
        """The step that fires a claimed timer: every timer of the instance due at the
        claim's deadline fires, soonest first (so an earlier one that leaves the state
        disarms this one, as it would have in memory). Always commits, so that a timer whose
        guard failed is gone from the snapshot too. `ran`, when given, gets the outcomes of
        each run of the step (the last is what was committed)."""

        def fn(record: InstanceRecord) -> Change:
            instance, migrated = self._restore(record)
            # The claim's deadline is the engine's own time again (`timer_deadline` made it).
            outcomes = instance.advance(claim.deadline)
            if ran is not None:
                ran.append(outcomes)
            data: dict[str, Json] = {
                "ok": all(not isinstance(o, Rejection) for o in outcomes),
                "timer": claim.timer_id,
                "steps": [o.to_dict() for o in outcomes],
            }
            return self._change(record, instance, migrated, data, outcomes)

        return fn

    def worker(self, **options: Any) -> TimerWorker:
        """A `TimerWorker` firing this store's timers through these flows (on this object's
        clock unless `clock=` says otherwise); the steps it commits reach this object's
        subscribers, then its `on_outcome`."""
        options.setdefault("clock", self.clock)
        on_outcome: Callable[[TimerClaim, StepOutcome], None] | None = options.pop(
            "on_outcome", None
        )
        runs: dict[tuple[str, str], list[list[Outcome]]] = {}

        def fire(claim: TimerClaim) -> StepFn:
            ran = runs[(claim.instance_id, claim.timer_id)] = []
            return self.fire(claim, ran)

        def delivered(claim: TimerClaim, outcome: StepOutcome) -> None:
            ran = runs.pop((claim.instance_id, claim.timer_id), None)
            if outcome.status == "committed" and ran:
                self._deliver(claim.instance_id, ran[-1])
                self._after_commit(ran[-1])
            if on_outcome is not None:
                on_outcome(claim, outcome)

        def step(claim: TimerClaim, fn: StepFn) -> StepOutcome:
            return self._with_graphs(lambda: self.store.step(claim.instance_id, fn, timer=claim))

        self._keep_graphs()
        return TimerWorker(self.store, fire, on_outcome=delivered, step=step, **options)

    # -- helpers ------------------------------------------------------------------------------

    def _keep_graphs(self) -> None:
        """Keep the given machines' graphs in the store, once (a kept hash is left as is)."""
        if self._graphs_kept:
            return
        for machine in self.flows.machines():
            if machine.hash:
                self.store.save_graph(
                    machine.hash, machine.name, machine.version, _graph_text(machine)
                )
        self._graphs_kept = True

    def _with_graphs(self, run: Callable[[], _T]) -> _T:
        """`run()`, reading from the store any graph it turns out to need, then running it
        again. Each read graph is cached, so this ends: a step needs at most one graph, and
        an instance can only be moved to a given graph, never to one of the store's."""
        while True:
            try:
                return run()
            except _GraphNeeded as need:
                self._load_stored(need.record)

    def _load_stored(self, record: InstanceRecord) -> None:
        text = self.store.load_graph(record.graph_hash) if record.graph_hash else None
        if text is None:
            raise UnknownFlow(
                f"instance {record.id} runs {record.flow} version {record.flow_version} "
                f"({record.graph_hash or 'no hash'}), which is neither loaded nor in the store"
            )
        self._stored[record.graph_hash] = Machine.from_json(text, clock=self.clock)

    def _machine(self, record: InstanceRecord) -> Machine:
        exact = self.flows.exact(record.flow, record.flow_version, record.graph_hash)
        if self.upgrade and record.flow in self.flows:
            latest = self.flows.latest(record.flow)
            if latest.version < record.flow_version:
                raise UnknownFlow(
                    f"instance {record.id} runs {record.flow} version {record.flow_version}, "
                    f"newer than any loaded ({latest.version})"
                )
            return exact if exact is not None and exact.version == latest.version else latest
        # Not to be upgraded: the very graph the instance is on, given or from the store.
        return self._exact_machine(record)

    def _restore(self, record: InstanceRecord) -> tuple[Instance, bool]:
        machine = self._machine(record)
        snapshot: Mapping[str, Any] = record.snapshot
        migrated = machine.hash != record.graph_hash
        if migrated:
            snapshot = migrate_snapshot(snapshot, machine, self.migrations)
        instance = machine.restore(snapshot, clock=self.clock)
        return instance, migrated

    def _change(
        self,
        record: InstanceRecord,
        instance: Instance,
        migrated: bool,
        data: dict[str, Json],
        steps: Sequence[Outcome] = (),
    ) -> Change:
        snapshot = _stored_snapshot(instance)
        if LINEAGE in record.snapshot:  # a fork keeps naming what it was forked from
            snapshot[LINEAGE] = record.snapshot[LINEAGE]
        new_rows = [_history_entry(h) for h in snapshot["history"] if int(h["seq"]) > record.seq]
        if self.compact:
            snapshot["history"] = compact_history(snapshot["history"])
        machine = instance.machine
        return Change(
            snapshot=snapshot,
            state=instance.state,
            outcome=data,
            history=new_rows,
            timers=_timers(snapshot),
            flow_version=machine.version if migrated else None,
            graph_hash=machine.hash if migrated else None,
            effects=[
                EffectSpec(step.seq, i, fx["effect"], fx["payload"])
                for step in steps
                if isinstance(step, StepResult)
                for i, fx in enumerate(step.effects)
            ],
        )

    def _outcome(
        self,
        instance_id: str,
        out: StepOutcome,
        ran: Outcome | None,
        event: str | None,
    ) -> DurableOutcome:
        data: dict[str, Json] = dict(out.outcome) if isinstance(out.outcome, dict) else {}
        if out.status == "replayed":
            data["replayed"] = True
            return DurableOutcome("replayed", instance_id, data)
        if out.status == "conflict":
            state = out.record.state if out.record is not None else None
            rejection = Rejection(
                "conflict",
                "conflict",
                DEFAULT_MESSAGES["conflict"],
                state,
                event,
                {"attempts": out.attempts},
            )
            return DurableOutcome(
                "conflict", instance_id, rejection.to_dict(), rejection, out.record
            )
        return DurableOutcome(out.status, instance_id, data, ran, out.record)


def _root_steps(outcome: StepResult, child: str | None) -> list[Outcome]:
    """The root's steps of a committed call, whose effects go to the outbox and to the
    subscribers: the step itself (unless it was a child's: its `child` entry stands for it),
    then what followed in the tree (`StepResult.then`)."""
    return [*([outcome] if child is None else []), *outcome.then]


def open_durable(
    url: str, machines: FlowRegistry | Iterable[Machine], **options: Any
) -> DurableFlows:
    """`DurableFlows` on the store `url` names (`open_store`); closing it closes the store:
    `with open_durable("sqlite:///flows.db", [machine]) as flows: flows.send(...)`."""
    from flowc.runtime.store import open_store

    clock = options.get("clock") or system_clock
    return DurableFlows(open_store(url, clock=clock), machines, **options)


def _graph_text(machine: Machine) -> str:
    # The canonical form the content hash is computed over, so loading it checks the hash fast.
    return json.dumps(machine.raw, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _new(
    instance_id: str,
    machine: Machine,
    snapshot: dict[str, Any],
    history: Sequence[HistoryEntry],
    first_seq: int,
    effects: Sequence[EffectSpec] = (),
) -> NewInstance:
    """What `store.create` writes for an instance of `machine` with this snapshot."""
    return NewInstance(
        id=instance_id,
        flow=machine.name,
        flow_version=machine.version,
        graph_hash=machine.hash,
        state=str(snapshot["state"]),
        snapshot=snapshot,
        history=history,
        timers=_timers(snapshot),
        first_seq=first_seq,
        effects=effects,
    )


def _start_rows(
    snapshot: Mapping[str, Any], context: Mapping[str, Any] | None
) -> list[HistoryEntry]:
    """A new instance's rows; its start row's payload records the context it was started
    with, so that its history can be re-run (`replay.py`)."""
    rows = [_history_entry(h) for h in snapshot["history"]]
    if rows and rows[0].kind == "start" and rows[0].payload is None:
        rows[0] = replace(rows[0], payload=copy_json(start_payload(context)))
    return rows


def _stored_snapshot(instance: Instance) -> dict[str, Any]:
    snapshot = instance.snapshot()
    snapshot["keys"] = {}  # the store keeps the keys
    return snapshot


def compact_history(history: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The entries of a snapshot's history that restoring needs, oldest first: the first and
    the last, and for every state the last entry leaving it and the last entering it.

    The full history is in the store's history rows; keeping all of it in the snapshot too
    would make every step cost time in proportion to the instance's age. What the engine
    reads from a restored history is the most recent entry with a given source (`back`), the
    last entry into the current state (timers under a changed flow) and the last entry's
    time; the most recent entry with a source in a set is the latest of the last entries of
    each member, so these answers are the same on the compact history."""
    if len(history) <= 2:
        return list(history)
    keep = {0, len(history) - 1}
    last_source: dict[Any, int] = {}
    last_target: dict[Any, int] = {}
    for i, entry in enumerate(history):
        last_source[entry.get("source")] = i
        last_target[entry.get("target")] = i
    keep.update(last_source.values())
    keep.update(last_target.values())
    return [history[i] for i in sorted(keep)]


def _history_entry(h: Mapping[str, Any]) -> HistoryEntry:
    return HistoryEntry(
        at=to_seconds(h["at"]),
        source=h.get("source"),
        target=h.get("target"),
        trigger=h.get("event") or h.get("kind"),
        payload=h.get("payload"),
        reason=h.get("reason"),
        kind=h.get("kind"),
        via=tuple(h.get("via") or ()),
    )


#: The step kinds whose trigger is the kind itself (an event step's trigger is the event).
_TRIGGER_KINDS = frozenset({"start", "goto", "back", "timer"})


def _snapshot_entry(row: HistoryRow) -> dict[str, Json]:
    """A history row as an entry of the engine's snapshot. Rows written before `kind` was
    stored read a trigger that names a kind as that kind."""
    kind = row.kind or (
        row.trigger if row.trigger in _TRIGGER_KINDS and row.payload is None else "event"
    )
    return {
        "seq": row.seq,
        "at": row.at,
        "kind": kind,
        "source": row.source,
        "target": row.target,
        "event": row.trigger if kind in ("event", "scheduled", "message") else None,
        "payload": row.payload,
        "reason": row.reason,
        "via": list(row.via),
    }


def _timers(snapshot: Mapping[str, Any]) -> list[TimerSpec]:
    return (
        [
            TimerSpec(
                timer_id=str(t["index"]),
                state=str(t.get("source") or snapshot["state"]),
                deadline=timer_deadline(t["due"]),
                data={k: t.get(k) for k in ("index", "target", "after_ms")},
            )
            for t in snapshot.get("timers") or ()
        ]
        + [
            # A scheduled event is a timer row too (`send:ID`: no rule index reads so), so that
            # it survives restarts and one worker fires it.
            TimerSpec(
                timer_id=f"send:{x['id']}",
                state=str(snapshot["state"]),
                deadline=timer_deadline(x["due"]),
                data={"event": x["event"], "id": x["id"]},
            )
            for x in snapshot.get("sends") or ()
        ]
        + _child_timers(snapshot)
        + _inbox_timer(snapshot)
    )


def _inbox_timer(snapshot: Mapping[str, Any]) -> list[TimerSpec]:
    """Messages a call left undelivered (past `children.MAX_DELIVERIES`): a timer row due at
    the root's last step, so that a worker delivers them."""
    if not snapshot.get("inbox") or not snapshot.get("history"):
        return []
    due = timer_deadline(snapshot["history"][-1]["at"])
    return [TimerSpec(timer_id="inbox", state=str(snapshot["state"]), deadline=due, data={})]


def _child_timers(snapshot: Mapping[str, Any]) -> list[TimerSpec]:
    """The timers and scheduled events of an instance's children (children.py), as timer rows
    of the root (`CHILD|INDEX`, `CHILD|send:ID`, nested `CHILD|GRANDCHILD|...`): the root's
    `advance` fires them all."""
    state = str(snapshot["state"])
    return [
        replace(t, timer_id=f"{kid['id']}|{t.timer_id}", state=state)
        for kid in snapshot.get("children") or ()
        for t in _timers(kid["snapshot"])
    ]


__all__ = [
    "DurableFlows",
    "DurableOutcome",
    "FlowRegistry",
    "SnapshotError",
    "UnknownFlow",
    "compact_history",
    "open_durable",
]
