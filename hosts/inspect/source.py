"""What the inspector shows, as JSON, and the steps it may take, read from a `DurableFlows`.

One `Inspector` serves every page of one store. It reads through the `Store` protocol (and
`listing.py`'s read-only queries); it writes only through `DurableFlows.send`/`goto`/`back`,
and only when it was made with `allow_send=True`. The context change of each step is worked
out by re-running the instance's recorded steps (`changes.py`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from flowc.hosts.inspect.changes import StepChanges
from flowc.hosts.inspect.listing import MAX_PAGE as MAX_LIST_PAGE
from flowc.hosts.inspect.listing import (
    Finals,
    ListFilter,
    forks_of,
    graph_hashes,
    list_instances,
)
from flowc.runtime.machine import Machine
from flowc.runtime.store import HistoryRow
from flowc.runtime.store.durable import LINEAGE, DurableFlows, DurableOutcome

#: Seconds between two looks at the store's list of graphs.
GRAPHS_EVERY = 5.0
#: Timeline rows per page, by default and at most.
PAGE, MAX_PAGE = 50, 500


class ReadOnly(PermissionError):
    """A step was asked of an inspector started without --allow-send."""


class Inspector:
    def __init__(self, flows: DurableFlows, *, allow_send: bool = False) -> None:
        self.flows = flows
        self.store = flows.store
        self.allow_send = allow_send
        self.changes = StepChanges(flows.store)
        #: flow name and final states, by graph hash
        self._finals: dict[str, tuple[str, frozenset[str]]] = {}
        #: when the store's graphs were last listed (`finals`)
        self._graphs_read = -GRAPHS_EVERY

    # -- the list -----------------------------------------------------------------------------

    def instances(self, filters: ListFilter) -> dict[str, Any]:
        finals = self.finals()
        rows = list_instances(self.store, filters, finals)
        listed = [r.to_dict(r.state in finals.get(r.flow, frozenset())) for r in rows]
        more = len(rows) == max(1, min(filters.limit, MAX_LIST_PAGE))
        return {"instances": listed, "next": rows[-1].key if rows and more else None}

    def finals(self) -> Finals:
        """The final states of every flow of the store (and of the given flows), by name
        across versions; each graph is read once, and the store's list of graphs at most every
        GRAPHS_EVERY seconds (a flow deployed since shows within that time)."""
        for machine in self.flows.flows.machines():
            self._finals.setdefault(machine.hash, (machine.name, _finals(machine)))
        hashes: list[str] = []
        if time.monotonic() - self._graphs_read >= GRAPHS_EVERY:
            hashes = graph_hashes(self.store)
            self._graphs_read = time.monotonic()
        for graph_hash in hashes:
            if graph_hash not in self._finals:
                text = self.store.load_graph(graph_hash)
                if text is not None:
                    machine = Machine.from_json(text)
                    self._finals[graph_hash] = (machine.name, _finals(machine))
        out: dict[str, set[str]] = {}
        for name, states in self._finals.values():
            out.setdefault(name, set()).update(states)
        return {name: frozenset(states) for name, states in out.items()}

    def latest_change(self) -> float:
        """When the most recently changed instance changed (the list's live updates)."""
        newest = self.store.instances(limit=1)
        return newest[0].updated_at if newest else 0.0

    # -- one instance -------------------------------------------------------------------------

    def version(self, instance_id: str) -> int:
        return self.store.load(instance_id).version

    def instance(self, instance_id: str) -> dict[str, Any]:
        record = self.store.load(instance_id)
        machine = self.flows.graph(record)
        live = machine.restore(record.snapshot)
        state = machine.states[record.state]
        out: dict[str, Any] = {
            "id": record.id,
            "flow": record.flow,
            "title": machine.raw.get("title") or record.flow,
            "version": record.flow_version,
            "graph_hash": record.graph_hash,
            "state": record.state,
            "state_title": state.title,
            "final": state.final,
            "configuration": list(live.configuration),
            "seq": record.seq,
            "record_version": record.version,
            "created_at": record.created_at,
            "updated_at": record.updated_at,
            "context": record.snapshot.get("context", {}),
            "lineage": record.snapshot.get(LINEAGE),
            "forks": forks_of(self.store, record.id),
            "timers": [_timer(t) for t in self.store.timers(record.id)],
            "outbox": _outbox(self, record.id),
            "journals": sorted(machine.journals),
            "allow_send": self.allow_send,
        }
        if self.allow_send:
            out["events"] = [{"name": e.name, "schema": e.schema} for e in live.accepted_events()]
            out["targets"] = live.allowed_targets(force=True)
        return out

    def timeline(
        self, instance_id: str, *, before: int | None = None, limit: int = PAGE
    ) -> dict[str, Any]:
        """Up to `limit` steps ending at `before` (default: the last), oldest first, each with
        its context change; `earlier` is the `before` of the page before, or None."""
        limit = max(1, min(limit, MAX_PAGE))
        record = self.store.load(instance_id)
        end = record.seq if before is None else min(before, record.seq)
        rows = self.store.history(instance_id, after=max(end - limit, -1), limit=limit)
        rows = [r for r in rows if r.seq <= end]
        shown, problem, pending = self.changes.of(record, self.flows.graph(record))
        first = rows[0].seq if rows else 0
        return {
            "steps": [_step(r, shown) for r in rows],
            "earlier": first - 1 if rows and first > _first_seq(self, instance_id) else None,
            "replay_problem": problem,
            "pending": pending,
        }

    def diagram(self, instance_id: str) -> bytes:
        """The flow's diagram as SVG, the instance's active states and path highlighted."""
        from flowc.hosts.inspect.diagram import instance_svg

        record = self.store.load(instance_id)
        return instance_svg(self.flows.graph(record), record)

    # -- steps (only with allow_send) ---------------------------------------------------------

    def act(self, instance_id: str, action: Mapping[str, Any]) -> DurableOutcome:
        """One step as a transaction of its own: `{"do": "send", "event", "payload"}`,
        `{"do": "goto", "target"}` or `{"do": "back"}`, each with a `reason` (required) and
        `force`. Raises ReadOnly without --allow-send, ValueError for a malformed action."""
        if not self.allow_send:
            raise ReadOnly("this inspector is read-only: start it with --allow-send")
        reason = action.get("reason")
        if not isinstance(reason, str) or not reason.strip():
            raise ValueError("every step taken from the inspector needs a reason")
        force = action.get("force") is True
        kind = action.get("do")
        if kind == "send":
            event, payload = action.get("event"), action.get("payload") or {}
            if not isinstance(event, str) or not isinstance(payload, Mapping):
                raise ValueError("send needs an event name and a JSON object payload")
            return self.flows.send(instance_id, event, payload, force=force, reason=reason)
        if kind == "goto":
            target = action.get("target")
            if not isinstance(target, str):
                raise ValueError("goto needs a target state")
            return self.flows.goto(instance_id, target, force=force, reason=reason)
        if kind == "back":
            return self.flows.back(instance_id, force=force, reason=reason)
        raise ValueError("`do` is one of send, goto, back")


def _step(row: HistoryRow, shown: Mapping[int, Mapping[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {
        "seq": row.seq,
        "at": row.at,
        "kind": row.kind,
        "source": row.source,
        "target": row.target,
        "event": row.trigger,
        "payload": row.payload,
        "reason": row.reason,
        "via": list(row.via),
    }
    out.update(shown.get(row.seq) or {})
    return out


def _first_seq(inspector: Inspector, instance_id: str) -> int:
    first = inspector.store.history(instance_id, limit=1)
    return first[0].seq if first else 0


def _finals(machine: Machine) -> frozenset[str]:
    return frozenset(name for name, s in machine.states.items() if s.final)


def _timer(t: Any) -> dict[str, Any]:
    return {"timer": t.timer_id, "state": t.state, "deadline": t.deadline, "data": t.data}


def _outbox(inspector: Inspector, instance_id: str) -> list[dict[str, Any]]:
    """The instance's effects still in the outbox (among the first thousand pending)."""
    return [
        {"id": e.id, "seq": e.seq, "effect": e.effect, "payload": e.payload, "at": e.at}
        for e in inspector.store.pending_effects(limit=1000)
        if e.instance_id == instance_id
    ]
