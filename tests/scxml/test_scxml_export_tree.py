"""The exporter reads the state tree (runtime/statetree.py): hand-edited IR whose states make
no tree is exported with every state, and a state's children and enclosing states are looked
up, not found by scanning every state (a large flow is exported in linear time)."""

from __future__ import annotations

import time

from flowc.compiler.scxml.exporter import export_scxml
from flowc.runtime.model import CompiledFlow, State, Transition


def test_a_state_under_an_unknown_parent_is_exported_at_the_top_level() -> None:
    flow = CompiledFlow(
        name="f",
        initial="Start",
        states=(State(name="Start", initial=True), State(name="Lost", parent="Nowhere")),
        transitions=(),
    )
    text = export_scxml(flow).text
    assert text is not None
    assert '<state id="Lost"/>' in text


def test_a_large_flat_flow_is_exported_in_linear_time() -> None:
    def flow(n: int) -> CompiledFlow:
        states = tuple(State(name=f"S{i}", initial=i == 0) for i in range(n))
        rules = tuple(
            Transition(index=i, source=f"S{i}", target=f"S{i + 1}", kind="direct")
            for i in range(n - 1)
        )
        return CompiledFlow(name="f", initial="S0", states=states, transitions=rules)

    small, large = flow(1000), flow(8000)
    times = []
    for f in (small, large):
        start = time.perf_counter()
        assert export_scxml(f).text is not None
        times.append(time.perf_counter() - start)
    # Eight times the states: well under the 64 times a scan of every state per state costs.
    assert times[1] < 24 * max(times[0], 0.01)
