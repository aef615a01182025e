"""The W3C SCXML conformance runner: import, compile and run each test of a directory.

    python tests/conformance/w3c_runner.py DIR [DIR ...] [--json] [--features] [--no-host]

A test passes when the instance reaches its `pass` final state. Each test is reported as
`pass`, `fail` or `unsupported`, with a reason:
- unsupported: the importer refused the file (the diagnostic says which element), or the
  imported `.flow` uses syntax this build's compiler does not have yet (E003/E004);
- fail: it compiled but ended elsewhere than `pass` (the state it stopped in is given), or it
  did not compile for another reason (an importer bug: the diagnostic is given).

The runner is the host the imported flows expect (docs/scxml.md): it delivers the
`scxml_send` effects back to the instance as external events, after their delay on a fake
clock, drops those a `scxml_cancel` names, and fires the flow's own timers in between.
With `--no-host` it delivers none of those effects: only the runtime's own timers and
scheduled events move the chart (what `flowc import scxml` and the runtime do alone).
"""

from __future__ import annotations

import argparse
import heapq
import json
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flowc.compiler.driver import compile_source
from flowc.compiler.scxml.importer import CANCEL_EFFECT, SEND_EFFECT, import_file
from flowc.runtime import FakeClock, Instance, Machine, Rejected
from flowc.runtime.outputs import collecting

#: Bounds per test: events delivered, and fake time (the suite's longest delay is seconds).
MAX_DELIVERIES = 1_000
MAX_SECONDS = 3_600.0
#: Syntax errors meaning "the compiler lacks this construct", not "the importer erred".
NOT_YET_CODES = frozenset({"E003", "E004"})


@dataclass
class Outcome:
    name: str
    status: str  # pass | fail | unsupported
    reason: str = ""
    features: list[str] = field(default_factory=list)


def test_files(directories: Iterable[Path]) -> Iterator[Path]:
    """The top-level test files: `testNNN*.scxml` but not the `subN` documents they invoke."""
    for directory in directories:
        for path in sorted(directory.glob("test*.scxml")):
            if "sub" not in path.stem:
                yield path


def run_test(path: Path, host: bool = True) -> Outcome:
    # The suite's Python-datamodel files keep `datamodel="ecmascript"` in places while their
    # expressions are Python: read them all as Python.
    # `<data src>` names files beside the test (`flowc import scxml --data-src`).
    imported = import_file(path, datamodel="python", data_src=True)
    features = sorted(imported.features)
    if imported.flow_text is None:
        first = imported.diagnostics[0]
        reason = f"{first.code} line {first.span.line}: {first.message}"
        return Outcome(path.stem, "unsupported", reason, features)
    compiled = compile_source(imported.flow_text, f"{path.stem}.flow")
    if compiled.flow is None or compiled.errors:
        first = compiled.errors[0]
        status = "unsupported" if first.code in NOT_YET_CODES else "fail"
        return Outcome(path.stem, status, f"compile: {first}", features)
    clock = FakeClock(0.0)
    machine = Machine.from_json(compiled.flow.to_json(), clock=clock)
    try:
        # Effects of the start (entry actions of the initial states): from the runtime's
        # record of the start if it keeps one, else from a collector around it.
        with collecting() as around_start:
            instance = machine.start(clock=clock)
    except Rejected as exc:
        return Outcome(path.stem, "fail", f"start refused: {exc}", features)
    runner = _Host(instance, clock, deliver=host)
    runner.take(_start_effects(instance) or around_start.effects)
    runner.run()
    if instance.state == "pass":
        return Outcome(path.stem, "pass", "", features)
    return Outcome(path.stem, "fail", f"ended in `{instance.state}`", features)


def _start_effects(instance: Instance) -> list[dict[str, Any]]:
    """Effects emitted while the instance started (entry actions of the initial states).
    The statecharts runtime returns a step's effects in `StepResult.effects`; the start is
    not a `send`, so this reads the instance's record of it when the runtime keeps one."""
    effects = getattr(instance, "start_effects", None) or getattr(instance, "effects", None)
    return list(effects) if isinstance(effects, list | tuple) else []


class _Host:
    """SCXML's external queue, kept outside the instance as the imported flows expect."""

    def __init__(self, instance: Instance, clock: FakeClock, deliver: bool = True) -> None:
        self.instance = instance
        #: False: the `scxml_send`/`scxml_cancel` effects are ignored (no send host).
        self.deliver = deliver
        self.clock = clock
        self.queue: list[tuple[float, int, str, str, dict[str, Any]]] = []
        self.seq = 0
        self.cancelled: set[str] = set()

    def take(self, effects: Iterable[Any]) -> None:
        if not self.deliver:
            return
        for effect in effects:
            # `StepResult.effects` holds {"effect", "payload"} dicts; a collector, tuples.
            if isinstance(effect, tuple):
                name, payload = effect[0], effect[1] or {}
            else:
                name, payload = effect.get("effect"), effect.get("payload") or {}
            if name == SEND_EFFECT:
                due = self.clock() + payload.get("delay_ms", 0) / 1000.0
                self.seq += 1
                data = payload.get("data") or {}
                event_id = str(payload.get("id", ""))
                self.cancelled.discard(event_id)
                item = (due, self.seq, event_id, str(payload["name"]), dict(data))
                heapq.heappush(self.queue, item)
            elif name == CANCEL_EFFECT:
                self.cancelled.add(str(payload.get("id", "")))

    def run(self) -> None:
        for _ in range(MAX_DELIVERIES):
            if self.instance.is_final:
                return
            deadline = self.instance.next_deadline
            timer = deadline.timestamp() if deadline is not None else None
            if self.queue and (timer is None or self.queue[0][0] <= timer):
                due, _, event_id, event, data = heapq.heappop(self.queue)
                if event_id in self.cancelled:
                    continue
                if due > MAX_SECONDS:
                    return
                self.clock.set(max(due, self.clock()))
                outcome = self.instance.send(event, data)
                self.take(getattr(outcome, "effects", None) or [])
            elif timer is not None and timer <= MAX_SECONDS:
                self.clock.set(max(timer, self.clock()))
                for outcome in self.instance.advance():
                    self.take(getattr(outcome, "effects", None) or [])
            else:
                return


def run_all(directories: Iterable[Path], host: bool = True) -> list[Outcome]:
    return [run_test(path, host) for path in test_files(directories)]


def totals(outcomes: list[Outcome]) -> dict[str, int]:
    counts = {"pass": 0, "fail": 0, "unsupported": 0}
    for outcome in outcomes:
        counts[outcome.status] += 1
    return counts


def features_table(outcomes: list[Outcome]) -> dict[str, list[str]]:
    """feature -> the tests that use it (what the coordinator should expect after a merge)."""
    table: dict[str, list[str]] = {}
    for outcome in outcomes:
        for feature in outcome.features:
            table.setdefault(feature, []).append(outcome.name)
    return dict(sorted(table.items()))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("directories", nargs="+", type=Path)
    parser.add_argument("--json", action="store_true", help="one JSON document on stdout")
    parser.add_argument(
        "--features", action="store_true", help="also list the tests using each feature"
    )
    parser.add_argument(
        "--no-host",
        action="store_true",
        help="deliver no scxml_send/scxml_cancel effect: the runtime alone",
    )
    args = parser.parse_args(argv)
    outcomes = run_all(args.directories, host=not args.no_host)
    if args.json:
        print(
            json.dumps(
                {
                    "totals": totals(outcomes),
                    "tests": [o.__dict__ for o in outcomes],
                    "features": features_table(outcomes),
                },
                indent=2,
            )
        )
        return 0
    for outcome in outcomes:
        line = f"{outcome.name:<12} {outcome.status:<12} {outcome.reason}"
        print(line.rstrip())
    if args.features:
        print()
        for feature, names in features_table(outcomes).items():
            print(f"{feature} ({len(names)}): {' '.join(names)}")
    counts = totals(outcomes)
    print(
        f"\n{len(outcomes)} tests: {counts['pass']} pass, {counts['fail']} fail, "
        f"{counts['unsupported']} unsupported"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
