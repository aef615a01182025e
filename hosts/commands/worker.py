"""`flowc worker --store URL [--flow PATH]`: fire due timers of stored instances.

Any number of workers may run against one store, on one host or many: each due timer is leased
to one worker and fires once, as an ordinary step of its instance (docs/persistence.md). One
JSON line is printed per fired timer (with `child`, the child flow's path, when the timer was a
child's: its `steps` are the root's own that it caused); SIGINT or SIGTERM stops the worker
after the step in hand, and it prints its counts. Without `--flow`, each instance runs on the
graph the store keeps for it; `--flow` gives newer versions that instances move to when their
timers fire.
`--journal NAME=FILE` appends journal NAME of every step it fires, for every instance whose
flow has that journal.
"""

from __future__ import annotations

import argparse
import json
import math
import signal
import sys
import threading
from types import FrameType
from typing import Any

from flowc.compiler.commands import EXIT_FAILURE, EXIT_OK, EXIT_USAGE
from flowc.hosts.commands.options import add_flow_option, add_journal_option, add_store_option
from flowc.hosts.operations import (
    StepJournals,
    UsageError,
    journal_specs,
    load_machines,
    opened,
    store_url,
)
from flowc.runtime.store import StepOutcome, StoreError, StoreURLError, TimerClaim
from flowc.runtime.store.durable import DurableFlows
from flowc.runtime.store.worker import default_owner


def register(sub: Any) -> None:
    parser: argparse.ArgumentParser = sub.add_parser(
        "worker",
        help="fire the due timers of stored instances (run one or several)",
        description=(
            "Poll the store for due timers (`after` transitions of stored instances), claim "
            "them with a lease and fire each as an ordinary step. Several workers may share a "
            "store: each timer fires once. A timer armed in a state its instance has left is "
            "dropped. Each instance runs on the graph the store keeps for it; --flow gives "
            "newer versions to move instances to. Stops on SIGINT/SIGTERM, after --for "
            "seconds, or with --once after one pass."
        ),
    )
    add_store_option(parser)
    add_flow_option(parser, required=False)
    parser.add_argument(
        "--poll",
        type=float,
        default=1.0,
        metavar="SECONDS",
        help="the longest sleep between two looks at the store (default 1)",
    )
    parser.add_argument(
        "--lease",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="how long a claimed timer stays ours; a dead worker's timers come back after it "
        "(default 30)",
    )
    parser.add_argument(
        "--batch", type=int, default=50, metavar="N", help="timers claimed at a time (default 50)"
    )
    parser.add_argument("--owner", metavar="NAME", help="the name leases are taken under")
    parser.add_argument("--once", action="store_true", help="fire what is due now, then stop")
    parser.add_argument(
        "--for", dest="seconds", type=float, metavar="SECONDS", help="stop after SECONDS"
    )
    parser.add_argument("--quiet", action="store_true", help="print only the final counts")
    add_journal_option(parser, "the steps it fires (instances whose flow has no NAME: none)")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    if not all(_positive(v) for v in (args.poll, args.lease, args.batch)):
        print("flowc worker: --poll, --lease and --batch must be positive", file=sys.stderr)
        return EXIT_USAGE
    if args.seconds is not None and not (math.isfinite(args.seconds) and args.seconds >= 0):
        # NaN compares false with everything, so `--for nan` would never end.
        print(f"flowc worker: --for takes seconds >= 0, not {args.seconds}", file=sys.stderr)
        return EXIT_USAGE
    try:
        machines = load_machines(args.flow)
        journals = StepJournals(journal_specs(args.journal))
        with opened(store_url(args.store)) as store:
            flows = DurableFlows(store, machines)
            if journals:
                flows.subscribe(journals)
            journal_failures = 0

            def report(claim: TimerClaim, outcome: StepOutcome) -> None:
                nonlocal journal_failures
                if not args.quiet:
                    line: dict[str, object] = {
                        "id": claim.instance_id,
                        "timer": claim.timer_id,
                        "state": claim.state,
                        "status": outcome.status,
                    }
                    child = timer_child(claim.timer_id)
                    if child is not None:
                        line["child"] = child
                    steps = _steps(outcome)
                    if steps:
                        line["steps"] = steps
                    print(json.dumps(line, ensure_ascii=False), flush=True)
                for failure in journals.take_failures():
                    journal_failures += 1
                    print(f"flowc worker: {failure}", file=sys.stderr, flush=True)

            worker = flows.worker(
                owner=args.owner or default_owner(),
                batch=args.batch,
                lease=args.lease,
                poll=args.poll,
                on_outcome=report,
            )
            if args.once:
                while worker.run_once() >= worker.batch:
                    pass
            else:
                stop = threading.Event()

                def on_signal(signum: int, frame: FrameType | None) -> None:
                    stop.set()

                previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
                try:
                    worker.run(stop=stop, max_seconds=args.seconds)
                finally:
                    for s, handler in previous.items():
                        signal.signal(s, handler)
            stats = worker.stats
            counts: dict[str, object] = {"worker": worker.owner, **vars(stats)}
            if journals:
                counts["journal_failures"] = journal_failures
            print(json.dumps(counts), file=sys.stderr)
            return EXIT_FAILURE if stats.errors or journal_failures else EXIT_OK
    except (UsageError, StoreURLError) as exc:
        print(f"flowc worker: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except StoreError as exc:
        print(f"flowc worker: {exc}", file=sys.stderr)
        return EXIT_FAILURE


def timer_child(timer_id: str) -> str | None:
    """The path of the child flow whose timer this is, or None for the instance's own: a
    child's timers are rows of the root named `CHILD|TIMER` (`pay.1|0`, nested
    `reviews.1.0|fraud.2|send:ID`), so the path is every part but the last, `/` between."""
    *path, _ = timer_id.split("|")
    return "/".join(path) or None


def _steps(outcome: StepOutcome) -> list[dict[str, object]]:
    """The steps a fired timer committed: where each went, and through which choice states."""
    data = outcome.outcome if isinstance(outcome.outcome, dict) else {}
    return [
        {k: s.get(k) for k in ("seq", "from", "to", "via")}
        for s in data.get("steps") or ()
        if isinstance(s, dict) and s.get("ok")
    ]


def _positive(value: float) -> bool:
    return math.isfinite(value) and value > 0
