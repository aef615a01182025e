"""docs/runtime.md's child-flow example runs as written (from the repository's root, where its
path to flows/examples/order_saga.flow leads), and a store keeps a tree as docs/persistence.md
says: one row, snapshot format /4, each child's timer a timer row of the root (`CHILD|ID`)
that a worker fires."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from flowc.runtime import Machine
from flowc.runtime.clock import FakeClock
from flowc.runtime.store.durable import open_durable

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"


def test_the_child_flow_example_of_runtime_md_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    text = (DOCS / "runtime.md").read_text(encoding="utf-8")
    (example,) = [b for b in re.findall(r"```python\n(.*?)```", text, re.S) if "child(" in b]
    monkeypatch.chdir(ROOT)
    namespace: dict[str, Any] = {}
    exec(compile(example, "docs/runtime.md", "exec"), namespace)
    assert namespace["order"].state == "shipping"


def test_a_childs_timers_are_the_roots_timer_rows_as_persistence_md_says(tmp_path: Path) -> None:
    clock = FakeClock(1_767_225_600)
    pr = Machine.from_file(ROOT / "flows" / "examples" / "pr_review.flow", clock=clock)
    with open_durable(f"sqlite:///{tmp_path / 'flows.db'}", [pr], clock=clock) as flows:
        flows.start("pr_review", id="p1")
        rows = sorted(t.timer_id for t in flows.store.timers("p1"))
        # (the staleness timer is rule 13 of the root; each review's reminder rule 2 of review)
        assert rows == ["13", "verdicts.0.0|2", "verdicts.0.1|2"]
        assert flows.load("p1").snapshot()["format"] == "flowc.snapshot/4"
        clock.advance(2 * 86_400)
        assert flows.worker().run_once() == 2
        stored = flows.load("p1")
        assert [stored.child(f"verdicts[{k}]").get("reminders") for k in (0, 1)] == [1, 1]
