"""Dispatch before/after in one process: this tree's runtime beside the runtime of a git revision.

    python bench/dispatch.py --against REV [--quick]

The revision's `runtime/` is extracted (`git archive`) into a temporary package named
`flowc_against.runtime` (its own imports renamed; the runtime imports nothing of the compiler),
so both runtimes load in one interpreter and are timed in turns: many short samples, each
runtime's best kept, so a busy moment of a shared machine falls on both alike. Timed: the seed
004 episode (flat, generated dispatch), `statechart_ir` (three levels, two parallel regions: the
engine) and `NESTED_CHART` (a leaf chart: generated dispatch); every machine is warm
before timing. Printed: microseconds per event and the ratio this tree / REV.
"""

from __future__ import annotations

import gc
import importlib
import io
import json
import re
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "flowc_against"

Sample = Callable[[], float]


def load_runtime(rev: str) -> Any:
    """The `Machine` class of revision `rev`'s runtime, imported as `flowc_against.runtime`."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", rev, "runtime"], check=True, capture_output=True
    ).stdout
    home = Path(tempfile.mkdtemp(prefix="flowc-against-"))
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(home / PACKAGE, filter="data")
    (home / PACKAGE / "__init__.py").write_text("")
    renamed = re.compile(r"\bflowc\.runtime\b")
    for path in (home / PACKAGE / "runtime").rglob("*.py"):
        path.write_text(renamed.sub(f"{PACKAGE}.runtime", path.read_text()))
    sys.path.insert(0, str(home))
    return importlib.import_module(f"{PACKAGE}.runtime").Machine


def samples(machine_class: Any) -> dict[str, Sample]:
    """One short timed sample per kind of flow, on warm machines of `machine_class`."""
    import dispatch as d

    from flowc.compiler import compile_file, compile_source

    flat_ir = _portable(compile_file(ROOT / "flows" / "attempt_v2.flow").flow)
    nested_ir = _portable(compile_source(d.NESTED_CHART, "nested.flow").flow)
    flat = machine_class.from_json(flat_ir).preload()
    for _ in range(3):  # past the first uses: the pairs' generated functions
        warm = flat.start()
        for event, payload in d.EPISODE:
            warm.send(event, payload)
    chart = machine_class(d.statechart_ir()).preload().start()
    nested_machine = machine_class.from_json(nested_ir)
    nested_machine.hot_after = 0
    nested = nested_machine.start()

    def flat_sample() -> float:
        instances = [flat.start() for _ in range(20)]
        t0 = time.perf_counter()
        for inst in instances:
            for event, payload in d.EPISODE:
                inst.send(event, payload)
        return (time.perf_counter() - t0) / (20 * len(d.EPISODE))

    def sends(inst: Any, events: tuple[str, ...], times: int) -> Sample:
        def sample() -> float:
            t0 = time.perf_counter()
            for _ in range(times):
                for event in events:
                    inst.send(event)
            return (time.perf_counter() - t0) / (times * len(events))

        return sample

    return {
        "flat (seed 004 episode)": flat_sample,
        "statechart (parallel)": sends(chart, ("tick", "tock", "both", "ping"), 25),
        "leaf chart (NESTED_CHART)": sends(nested, ("tick", "hop", "ping"), 100),
    }


def _portable(flow: Any) -> str:
    """The compiled JSON an older runtime reads too: without the members derived from the
    others (`lowered_templates`, which no Python runtime reads and older ones refuse)."""
    from flowc.runtime.model import UNHASHED_MEMBERS

    raw = json.loads(flow.to_json())
    for name in UNHASHED_MEMBERS - {"hash"}:
        raw.pop(name, None)
    return json.dumps(raw)


def compare(rev: str, rounds: int) -> None:
    """Print each kind's best microseconds per event, REV's and this tree's, and the ratio."""
    runs = {rev: samples(load_runtime(rev)), "this tree": samples(_this_machine())}
    best: dict[tuple[str, str], float] = {}
    names = list(runs)
    gc.disable()
    try:
        for r in range(rounds):
            for kind in runs[rev]:
                for name in names if r % 2 else names[::-1]:
                    value = runs[name][kind]()
                    best[kind, name] = min(best.get((kind, name), float("inf")), value)
            if r % 50 == 0:
                gc.collect()
    finally:
        gc.enable()
    print(
        f"dispatch, {rev} and this tree in one process (microseconds per event, best of {rounds}):"
    )
    for kind in runs[rev]:
        before, after = best[kind, rev] * 1e6, best[kind, "this tree"] * 1e6
        print(f"  {kind:28} {before:8.3f} {after:8.3f}   this tree / {rev}: {after / before:.3f}")


def _this_machine() -> Any:
    from flowc.runtime import Machine

    return Machine
