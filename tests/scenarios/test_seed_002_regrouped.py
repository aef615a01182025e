"""Seed 002 grouped in compound states answers every call as the flat flow it was made from
(tests/scenarios/flows/collab_skills_flat.flow): a differential test over random sequences of
`complete_skill` (the right skill, or another), `set_work_items` and `update_session_state`."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from flowc.runtime import FakeClock, Instance, Machine

ROOT = Path(__file__).resolve().parents[2]
CHART = Machine.from_file(ROOT / "flows" / "collab_skills.flow").preload()
FLAT = Machine.from_file(Path(__file__).parent / "flows" / "collab_skills_flat.flow").preload()

ITEM_TYPES = st.lists(st.sampled_from(["code", "task", "bugfix"]), max_size=3)
OPS = st.lists(
    st.one_of(
        st.tuples(st.just("complete"), st.booleans()),  # the current skill, or another one
        st.tuples(st.just("items"), ITEM_TYPES),
        st.tuples(st.just("batches"), st.integers(0, 2)),
    ),
    max_size=60,
)


def _send(inst: Instance, op: tuple[str, Any]) -> Any:
    kind, arg = op
    if kind == "complete":
        skill = inst.meta.get("skill") if arg else "not-this-one"
        return inst.send("complete_skill", {"skill": skill})
    if kind == "items":
        items = [{"number": n + 1, "type": t} for n, t in enumerate(arg)]
        return inst.send("set_work_items", {"items": items})
    return inst.send("update_session_state", {"batches": [{"id": f"b{n}"} for n in range(arg)]})


def _seen(inst: Instance, outcome: Any) -> str:
    answer = outcome.to_dict()
    answer.pop("configuration", None)  # the chart's steps also list the active ancestors
    snapshot = inst.snapshot()
    for key in ("flow", "hash", "configuration", "histories"):  # the flow itself differs
        snapshot.pop(key, None)
    journal = outcome.journal("state_changes") if outcome.ok else None
    seen = {"answer": answer, "meta": inst.meta, "snapshot": snapshot, "journal": journal}
    # A fault names the rule it happened in: its number, target and line, which the two flows
    # (one grouped, one flat) give differently by construction.
    return _RULE.sub("RULE", json.dumps(seen, sort_keys=True, default=repr))


_RULE = re.compile(r"rule #\d+ of [\w.]+: [^()]*\(line \d+\)")


@settings(max_examples=150, deadline=None)
@given(OPS)
def test_the_grouped_seed_answers_as_the_flat_one(ops: list[tuple[str, Any]]) -> None:
    start = {"project": "/src/app", "session": "s1"}
    chart = CHART.start(start, clock=FakeClock())
    flat = FLAT.start(start, clock=FakeClock())
    assert CHART.chart and not FLAT.chart
    for op in ops:
        assert _seen(chart, _send(chart, op)) == _seen(flat, _send(flat, op)), op
    assert chart.configuration[-1] == flat.state
