"""Transitional: the state tree agrees with the computations it replaces (lint/graph and
emit/hierarchy as they were until adopting it, and the kernel's `_domain`, `summary_of` and
`with_ancestors`) on random trees. Removed once those computations are (the property against
the naive definitions in test_statetree.py stays)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from flowc.compiler.emit.hierarchy import StateTree as EmitTree
from flowc.compiler.lint.graph import FlowGraph
from flowc.runtime import kernel
from flowc.runtime.machine import Machine
from flowc.runtime.model import CompiledFlow, State
from flowc.runtime.statetree import Node, StateTree
from tests.runtime.test_statetree import random_trees


def valid(nodes: list[Node]) -> list[Node]:
    """The random tree made one the machine loads: no choice states, every container with a
    child state, one initial child per compound, histories only inside containers."""
    kinds = {n.name: n.kind for n in nodes}
    parents = {n.name: n.parent for n in nodes}
    for n in nodes:
        if n.kind == "choice" or (n.kind == "history" and n.parent is None):
            kinds[n.name] = "normal"
    for n in nodes:
        if kinds[n.name] in ("compound", "parallel"):
            kids = [m.name for m in nodes if parents[m.name] == n.name]
            if all(kinds[k] == "history" for k in kids):
                kinds[kids[0]] = "normal"
    out = []
    for n in nodes:
        siblings = [m.name for m in nodes if m.parent == n.parent and kinds[m.name] != "history"]
        parent_kind = kinds[n.parent] if n.parent is not None else "compound"
        initial = parent_kind == "compound" and siblings[0] == n.name
        out.append(Node(n.name, n.parent, kinds[n.name], initial))
    return out


def machine_of(nodes: list[Node], pairs: list[tuple[str, str, bool]]) -> Machine:
    states: list[dict[str, Any]] = []
    for n in nodes:
        st_: dict[str, Any] = {"name": n.name, "kind": n.kind}
        if n.parent is not None:
            st_["parent"] = n.parent
        if n.initial:
            st_["initial"] = True
        states.append(st_)
    rules = [
        {"index": i, "source": a, "target": b, "kind": "event", "event": "e", "reenter": r}
        for i, (a, b, r) in enumerate(pairs)
    ]
    top = next(n.name for n in nodes if n.parent is None and n.initial)
    raw = {
        "ir_version": 2,
        "name": "f",
        "version": 1,
        "initial": top,
        "context": [],
        "events": [{"name": "e", "fields": []}],
        "states": states,
        "transitions": rules,
    }
    return Machine(raw)


@settings(max_examples=150, deadline=None)
@given(random_trees(), st.data())
def test_the_tree_agrees_with_the_old_computations(nodes: list[Node], data: Any) -> None:
    nodes = valid(nodes)
    tree = StateTree(nodes)
    names = list(tree.names)
    flow = CompiledFlow(
        name="f",
        states=tuple(
            State(name=n.name, parent=n.parent, kind=n.kind, initial=n.initial)  # type: ignore[arg-type]
            for n in nodes
        ),
        transitions=(),
        initial=names[0],
    )
    emit = EmitTree.of(flow)
    graph = FlowGraph(flow, None, None)  # type: ignore[arg-type]
    for name in names:
        assert tree.ancestors(name) == tuple(emit.ancestors(name))
        assert tree.ancestors(name) == tuple(graph.ancestors(name))
        assert set(tree.descendants(name)) == graph.descendants(name)
        assert tree.children(name) == tuple(k.name for k in emit.kids(name))
        if tree.kind(name) == "compound":
            first = emit.initial_child(name)
            assert tree.initial_child(name) == (first.name if first else None)
    entering = graph._entering()
    for name in names:
        if tree.kind(name) == "parallel":
            assert entering[name] == set(tree.regions(name))
        elif tree.kind(name) == "compound":
            assert entering[name] == {tree.initial_child(name)}
    sources = [n for n in names if tree.kind(n) not in ("history", "final")]
    if not sources:
        return
    pairs = data.draw(
        st.lists(
            st.tuples(st.sampled_from(sources), st.sampled_from(names), st.booleans()),
            max_size=15,
        )
    )
    for a, b, _ in pairs:
        assert tree.within(a, b) == emit.within(a, b)
        assert tree.common_ancestor([a, b]) == emit.scope(a, b)
    m = machine_of(nodes, pairs)
    for t in (t for s in sources for t in m.states[s].transitions):
        old = kernel._domain(t)
        new = (
            None
            if t.internal
            else tree.domain(t.source.name, t.target.name, reenter=t.raw["reenter"])
        )
        assert (old.name if old else None) == new
    leaves = tree.leaves()
    chosen = data.draw(st.lists(st.sampled_from(leaves), min_size=1, unique=True))
    config = [m.states[x] for x in chosen]
    assert [s.name for s in kernel.with_ancestors(config)] == list(tree.with_ancestors(chosen))
    if len(chosen) > 1:
        old_summary = kernel.summary_of(config).name
        new_summary = tree.common_ancestor(chosen) or chosen[0]
        assert old_summary == new_summary
