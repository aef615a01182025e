"""`flowc instances`: look at and drive the instances kept in a store.

    flowc instances list [--flow NAME] [--state STATE]
    flowc instances show ID
    flowc instances history ID
    flowc instances start FLOW_NAME [--context JSON] [--id ID] --flow PATH
    flowc instances send ID EVENT [JSON] [--child PATH] [--force] [--key KEY] [--flow PATH]
                                           [--journal NAME=FILE]
    flowc instances goto ID STATE [--child PATH] [--force] [--flow PATH] [--journal NAME=FILE]
    flowc instances back ID [--child PATH] [--force] [--flow PATH] [--journal NAME=FILE]
    flowc instances fork ID --at SEQ [--context JSON] [--id NEW_ID] [--flow PATH]

`--store URL` names the store (default: $FLOWC_STORE, else sqlite:///flowc.db). `start` needs
the flow: `--flow` takes .flow or compiled .json files, or directories of them, and may be
repeated. The store keeps the graph of every flow started through flowc, so `send`, `goto` and
`back` run an instance on its own graph without `--flow`; given, `--flow` supplies newer
versions the instance moves to on this step. `show` prints an instance's child flows as a
tree; `--child PATH` (`pay.1`, or `pay` for the invoke's current child, `reviews[0]/fraud`)
sends the step to a child instead.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import Any

from flowc.compiler.commands import EXIT_FAILURE, EXIT_OK, EXIT_USAGE
from flowc.hosts.commands.options import (
    add_child_option,
    add_flow_option,
    add_step_options,
    add_store_option,
)
from flowc.hosts.operations import (
    StepJournals,
    UsageError,
    check_journals,
    journal_specs,
    load_machines,
    opened,
    store_url,
)
from flowc.hosts.tree import tree_view
from flowc.runtime import FlowcError
from flowc.runtime.store import (
    InstanceExists,
    InstanceNotFound,
    InstanceRecord,
    Store,
    StoreError,
    StoreURLError,
)
from flowc.runtime.store.durable import LINEAGE, DurableFlows, DurableOutcome, UnknownFlow
from flowc.runtime.store.replay import NotReplayable


def register(sub: Any) -> None:
    parser: argparse.ArgumentParser = sub.add_parser(
        "instances",
        help="list, inspect and drive the instances kept in a store",
        description=(
            "Look at and drive flow instances kept in a store (docs/persistence.md). Every "
            "step is one transaction. Outcomes are printed as JSON. Exit status: 0 when the "
            "step was accepted, 1 when it was rejected or the instance does not exist, 2 for "
            "usage errors."
        ),
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)

    p = actions.add_parser("list", help="instances, most recently changed first")
    add_store_option(p)
    p.add_argument("--flow-name", dest="flow_name", metavar="NAME", help="only this flow")
    p.add_argument("--state", metavar="STATE", help="only instances in STATE")
    p.add_argument("--limit", type=int, default=100, metavar="N", help="at most N (default 100)")
    p.add_argument("--json", action="store_true", help="one JSON object a line")
    p.set_defaults(handler=run_list)

    p = actions.add_parser(
        "show", help="one instance: record, context, pending timers, its child flows as a tree"
    )
    add_store_option(p)
    p.add_argument("id", metavar="ID")
    p.set_defaults(handler=run_show)

    p = actions.add_parser("history", help="an instance's committed steps, oldest first")
    add_store_option(p)
    p.add_argument("id", metavar="ID")
    p.add_argument("--json", action="store_true", help="one JSON object a line")
    p.set_defaults(handler=run_history)

    p = actions.add_parser("start", help="start an instance of a flow and store it")
    add_store_option(p)
    add_flow_option(p, required=True)
    p.add_argument("name", metavar="FLOW_NAME", help="the flow's name (as in `flow NAME`)")
    p.add_argument("--context", metavar="JSON", help="the start context, a JSON object")
    p.add_argument("--id", metavar="ID", help="the instance id (default: a random one)")
    p.set_defaults(handler=run_start)

    p = actions.add_parser("send", help="deliver an event to an instance")
    add_store_option(p)
    add_flow_option(p, required=False)
    p.add_argument("id", metavar="ID")
    p.add_argument("event", metavar="EVENT")
    p.add_argument("payload", metavar="JSON", nargs="?", help="the payload, a JSON object")
    p.add_argument("--force", action="store_true", help="allow a rule marked `back`")
    add_child_option(p)
    add_step_options(p)
    p.set_defaults(handler=run_send)

    p = actions.add_parser("goto", help="move an instance along a direct edge")
    add_store_option(p)
    add_flow_option(p, required=False)
    p.add_argument("id", metavar="ID")
    p.add_argument("target", metavar="STATE")
    p.add_argument("--force", action="store_true", help="allow a backward edge")
    add_child_option(p)
    add_step_options(p)
    p.set_defaults(handler=run_goto)

    p = actions.add_parser("back", help="return an instance along a backward edge")
    add_store_option(p)
    add_flow_option(p, required=False)
    p.add_argument("id", metavar="ID")
    p.add_argument("--force", action="store_true", help="backward moves need it")
    add_child_option(p)
    add_step_options(p)
    p.set_defaults(handler=run_back)

    p = actions.add_parser("fork", help="a new instance from an instance as it was at step SEQ")
    add_store_option(p)
    add_flow_option(p, required=False)
    p.add_argument("id", metavar="ID")
    p.add_argument("--at", type=int, required=True, metavar="SEQ", help="the step to fork after")
    p.add_argument("--context", metavar="JSON", help="context fields to change, a JSON object")
    p.add_argument("--id", dest="new_id", metavar="NEW_ID", help="the fork's id (default: random)")
    p.set_defaults(handler=run_fork)


# -- handlers ----------------------------------------------------------------------------------


def _guarded(args: argparse.Namespace, body: Any) -> int:
    """Runs `body(store)` and turns the expected failures into messages and exit codes."""
    try:
        with opened(store_url(args.store)) as store:
            code: int = body(store)
            return code
    except (UsageError, StoreURLError, UnknownFlow) as exc:
        print(f"flowc instances: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except InstanceNotFound as exc:
        print(f"flowc instances: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    except (InstanceExists, StoreError, FlowcError) as exc:
        print(f"flowc instances: {exc}", file=sys.stderr)
        return EXIT_FAILURE


def run_list(args: argparse.Namespace) -> int:
    if args.limit < 0:
        print(f"flowc instances list: --limit takes N >= 0, not {args.limit}", file=sys.stderr)
        return EXIT_USAGE

    def body(store: Store) -> int:
        records = store.instances(flow=args.flow_name, state=args.state, limit=args.limit)
        if args.json:
            for r in records:
                print(json.dumps(_summary(r), ensure_ascii=False))
            return EXIT_OK
        rows = [
            (r.id, r.flow, str(r.flow_version), r.state, str(r.seq), _time(r.updated_at))
            for r in records
        ]
        _table(("ID", "FLOW", "VERSION", "STATE", "SEQ", "UPDATED"), rows)
        return EXIT_OK

    return _guarded(args, body)


def run_show(args: argparse.Namespace) -> int:
    def body(store: Store) -> int:
        record = store.load(args.id)
        data = _summary(record)
        snapshot = record.snapshot
        data["context"] = snapshot.get("context", snapshot)
        if LINEAGE in snapshot:  # a fork: {"forked_from": ID, "at": SEQ}
            data[LINEAGE] = snapshot[LINEAGE]
        if snapshot.get("children"):
            data["children"] = _children(store, args.id, snapshot)
        data["timers"] = [
            {
                "timer": t.timer_id,
                "state": t.state,
                "due": _time(t.deadline),
                "data": t.data,
                "lease_owner": t.lease_owner,
            }
            for t in store.timers(args.id)
        ]
        print(json.dumps(data, indent=2, ensure_ascii=False))
        return EXIT_OK

    return _guarded(args, body)


def run_history(args: argparse.Namespace) -> int:
    def body(store: Store) -> int:
        rows = store.history(args.id)
        if args.json:
            for r in rows:
                item = {
                    "seq": r.seq,
                    "at": _time(r.at),
                    "source": r.source,
                    "target": r.target,
                    "via": list(r.via),
                    "trigger": r.trigger,
                    "payload": r.payload,
                    "reason": r.reason,
                }
                print(json.dumps(item, ensure_ascii=False))
            return EXIT_OK
        table = [
            (
                str(r.seq),
                _time(r.at),
                r.source or "",
                r.target or "",
                ", ".join(r.via),
                r.trigger or "",
                "" if r.payload is None else json.dumps(r.payload, ensure_ascii=False),
                r.reason or "",
            )
            for r in rows
        ]
        _table(("SEQ", "AT", "FROM", "TO", "VIA", "TRIGGER", "PAYLOAD", "REASON"), table)
        return EXIT_OK

    return _guarded(args, body)


def run_start(args: argparse.Namespace) -> int:
    def body(store: Store) -> int:
        context = _json_object(args.context, "--context")
        flows = DurableFlows(store, load_machines(args.flow))
        return _print_outcome(flows.start(args.name, context, id=args.id))

    return _guarded(args, body)


def run_send(args: argparse.Namespace) -> int:
    def step(flows: DurableFlows) -> DurableOutcome:
        payload = _json_object(args.payload, "the payload")
        return flows.send(
            args.id,
            args.event,
            payload,
            force=args.force,
            key=args.key,
            reason=args.reason,
            child=args.child,
        )

    return _guarded(args, lambda store: _run_step(args, store, step))


def run_goto(args: argparse.Namespace) -> int:
    def step(flows: DurableFlows) -> DurableOutcome:
        return flows.goto(
            args.id,
            args.target,
            force=args.force,
            key=args.key,
            reason=args.reason,
            child=args.child,
        )

    return _guarded(args, lambda store: _run_step(args, store, step))


def run_back(args: argparse.Namespace) -> int:
    def step(flows: DurableFlows) -> DurableOutcome:
        return flows.back(
            args.id, force=args.force, key=args.key, reason=args.reason, child=args.child
        )

    return _guarded(args, lambda store: _run_step(args, store, step))


def run_fork(args: argparse.Namespace) -> int:
    def body(store: Store) -> int:
        patch = _json_object(args.context, "--context")
        flows = DurableFlows(store, load_machines(args.flow), upgrade=False)
        try:
            out = flows.fork(args.id, at=args.at, patch=patch, id=args.new_id)
        except (ValueError, NotReplayable) as exc:
            print(f"flowc instances: {exc}", file=sys.stderr)
            return EXIT_FAILURE
        return _print_outcome(out)

    return _guarded(args, body)


def _children(store: Store, instance_id: str, snapshot: dict[str, Any]) -> list[dict[str, Any]]:
    """The tree of an instance's child flows, restored on the graphs the store keeps; when
    they cannot be had, as the snapshot says it (each child's id, flow and state: whether it
    ended needs its graph), with a note on standard error."""
    try:
        return tree_view(DurableFlows(store, []).load(instance_id))
    except (UnknownFlow, FlowcError) as exc:
        print(f"flowc instances: the children as stored ({exc})", file=sys.stderr)
    return _stored_children(snapshot)


def _stored_children(snapshot: dict[str, Any]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for kid in snapshot.get("children") or ():
        inner = kid.get("snapshot") or {}
        view = {"id": kid.get("id"), "flow": inner.get("flow"), "state": inner.get("state")}
        below = _stored_children(inner)
        out.append({**view, "children": below} if below else view)
    return out


def _run_step(
    args: argparse.Namespace, store: Store, step: Callable[[DurableFlows], DurableOutcome]
) -> int:
    """One step of `send`, `goto` or `back`, with its `--journal` entries written once it
    committed (a replay writes nothing: the step's entry was written when it ran)."""
    journals = StepJournals(journal_specs(args.journal))
    flows = DurableFlows(store, load_machines(args.flow))
    if journals:
        check_journals(flows.load(args.id, full_history=False).machine, journals.journals)
        flows.subscribe(journals)
    out = step(flows)
    code = _print_outcome(out)
    for failure in journals.take_failures():
        print(f"flowc instances: {failure}", file=sys.stderr)
        code = EXIT_FAILURE
    return code


# -- helpers -----------------------------------------------------------------------------------


def _print_outcome(out: DurableOutcome) -> int:
    data = dict(out.data)
    data.setdefault("id", out.instance_id)
    data["status"] = out.status
    print(json.dumps(data, ensure_ascii=False))
    return EXIT_OK if out.ok else EXIT_FAILURE


def _json_object(text: str | None, what: str) -> dict[str, Any] | None:
    if text is None:
        return None
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise UsageError(f"{what} is not JSON: {exc}") from None
    except RecursionError:
        raise UsageError(f"{what} is nested too deeply") from None
    if not isinstance(value, dict):
        raise UsageError(f"{what} must be a JSON object")
    return value


def _summary(record: InstanceRecord) -> dict[str, Any]:
    return {
        "id": record.id,
        "flow": record.flow,
        "flow_version": record.flow_version,
        "graph_hash": record.graph_hash,
        "state": record.state,
        "version": record.version,
        "seq": record.seq,
        "created_at": _time(record.created_at),
        "updated_at": _time(record.updated_at),
    }


def _time(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).isoformat(timespec="milliseconds")


def _table(header: tuple[str, ...], rows: Sequence[tuple[str, ...]]) -> None:
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(header)]
    for line in (header, *rows):
        print("  ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True)).rstrip())
