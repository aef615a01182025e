"""The lint's own directed graph against networkx: the same strongly connected components."""

from __future__ import annotations

from itertools import pairwise

import networkx as nx
from hypothesis import given, settings
from hypothesis import strategies as st

from flowc.compiler.lint.graph import Digraph

NODES = [f"S{i}" for i in range(12)]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(NODES), st.sampled_from(NODES)), max_size=40))
def test_components_are_networkx_components(edges: list[tuple[str, str]]) -> None:
    graph = Digraph(NODES[:6])
    graph.add_edges_from(edges)
    reference = nx.DiGraph()
    reference.add_nodes_from(NODES[:6])
    reference.add_edges_from(edges)
    assert set(graph.edges()) == set(reference.edges())
    assert {k: set(v) for k, v in graph.pred.items()} == {
        k: set(v) for k, v in reference.pred.items()
    }
    numbered = graph.components()
    groups: dict[int, set[str]] = {}
    for name, number in numbered.items():
        groups.setdefault(number, set()).add(name)
    assert sorted(groups) == list(range(len(groups)))
    assert sorted(map(sorted, groups.values())) == sorted(
        map(sorted, nx.strongly_connected_components(reference))
    )


def test_a_long_path_needs_no_recursion() -> None:
    names = [f"S{i}" for i in range(50_000)]
    graph = Digraph(names)
    graph.add_edges_from([*pairwise(names), (names[-1], names[0])])
    assert set(graph.components().values()) == {0}
