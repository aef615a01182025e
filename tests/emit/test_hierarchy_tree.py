"""Diagrams of hand-edited IR whose states make no tree: every state is still drawn (the
diagram's state tree is built leniently: compiler/emit/hierarchy.py)."""

from __future__ import annotations

from flowc.compiler.emit.dot import to_dot
from flowc.compiler.emit.hierarchy import StateTree
from flowc.compiler.emit.mermaid import to_mermaid
from flowc.runtime.model import CompiledFlow, State


def broken() -> CompiledFlow:
    return CompiledFlow(
        name="f",
        initial="Start",
        states=(
            State(name="Start", initial=True),
            State(name="Lost", parent="Nowhere"),  # an unknown parent
            State(name="A", kind="compound", parent="B"),  # A and B hold each other
            State(name="B", kind="compound", parent="A"),
            State(name="A1", parent="A", initial=True),
        ),
        transitions=(),
    )


def test_states_in_a_parent_cycle_or_under_an_unknown_parent_are_drawn() -> None:
    flow = broken()
    tree = StateTree.of(flow)
    assert tree.parent("Lost") is None
    assert tree.parent("A") is None and tree.ancestors("A1") == ("A",)
    assert tree.parent("B") == "A" and tree.scope("A1", "B") == "A"
    assert tree.ancestors("Unknown") == () and tree.kind("Unknown") == "normal"
    assert not tree.within("Unknown", "A") and tree.within("Unknown", "Unknown")
    dot = to_dot(flow).source
    mermaid = to_mermaid(flow)
    for name in ("Start", "Lost", "A", "B", "A1"):
        assert name in dot
        assert name in mermaid
