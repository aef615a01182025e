"""`flowc replay ID [--flow FILE] [--store URL]`: re-run a stored instance's recorded steps.

The events, go-tos, backs and timer firings of the instance's history are run again, in
memory, on the graph the instance is on (or on the flow --flow gives: a check before deploying
a new version), each at its recorded time. Nothing is written and no effect is delivered. It
prints one JSON line: how many steps were re-run and, when one did not go as recorded, which
one and how (exit 1); exit 0 when every step went as recorded.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from flowc.compiler.commands import EXIT_FAILURE, EXIT_OK, EXIT_USAGE
from flowc.hosts.commands.options import add_store_option
from flowc.hosts.operations import UsageError, load_machines, opened, store_url
from flowc.runtime import FlowcError
from flowc.runtime.store import InstanceNotFound, StoreError, StoreURLError
from flowc.runtime.store.durable import DurableFlows, UnknownFlow
from flowc.runtime.store.replay import NotReplayable


def register(sub: Any) -> None:
    parser: argparse.ArgumentParser = sub.add_parser(
        "replay",
        help="re-run a stored instance's steps and report the first that differs",
        description=(
            "Re-run the recorded events and timer firings of a stored instance, in memory, on "
            "its own graph or on --flow, and report the first step that does not go as "
            "recorded. Writes nothing. Exit 0 when all went as recorded, 1 otherwise."
        ),
    )
    add_store_option(parser)
    parser.add_argument("id", metavar="ID")
    parser.add_argument(
        "--flow", metavar="FILE", help="re-run on this .flow or compiled .json instead"
    )
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    try:
        machines = load_machines([args.flow] if args.flow else [])
        with opened(store_url(args.store)) as store:
            flows = DurableFlows(store, [], upgrade=False)
            steps = flows.replay(args.id, machines[0] if machines else None)
    except (UsageError, StoreURLError) as exc:
        print(f"flowc replay: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except (InstanceNotFound, NotReplayable, UnknownFlow, StoreError, FlowcError) as exc:
        print(f"flowc replay: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    differs = next((s for s in steps if s.difference is not None), None)
    report: dict[str, Any] = {
        "id": args.id,
        "replayed": len(steps),
        "identical": differs is None,
    }
    if differs is not None:
        report["first_difference"] = {"seq": differs.row.seq, "message": differs.difference}
    print(json.dumps(report, ensure_ascii=False))
    return EXIT_OK if differs is None else EXIT_FAILURE
