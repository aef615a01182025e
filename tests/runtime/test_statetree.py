"""The state tree (runtime/statetree.py): unit tests on small trees, and a property test
against a naive implementation written here from the definitions (walk the parent links,
scan the list), on random trees."""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flowc.runtime.model import State
from flowc.runtime.statetree import Node, StateTree, StateTreeError


def chart() -> StateTree:
    """
    Idle                      (initial)
    Work        compound
      Work.H    history
      Prep                    (initial)
      Run       parallel
        Left    compound
          L1                  (initial)
          L2    final
        Right   compound
          R1                  (initial)
          Deep  compound
            D1                (initial)
    Done        final
    """
    return StateTree(
        [
            Node("Idle", None, "normal", True),
            Node("Work", None, "compound"),
            Node("Work.H", "Work", "history"),
            Node("Prep", "Work", "normal", True),
            Node("Run", "Work", "parallel"),
            Node("Left", "Run", "compound"),
            Node("L1", "Left", "normal", True),
            Node("L2", "Left", "final"),
            Node("Right", "Run", "compound"),
            Node("R1", "Right", "normal", True),
            Node("Deep", "Right", "compound"),
            Node("D1", "Deep", "normal", True),
            Node("Done", None, "final"),
        ]
    )


def test_parents_children_and_document_order() -> None:
    tree = chart()
    assert tree.parent("Idle") is None and tree.parent("D1") == "Deep"
    assert tree.children(None) == ("Idle", "Work", "Done")
    assert tree.children("Work") == ("Work.H", "Prep", "Run")
    assert tree.children("L1") == ()
    assert tree.regions("Work") == ("Prep", "Run")
    assert tree.regions("Run") == ("Left", "Right")
    assert tree.histories("Work") == ("Work.H",)
    assert tree.order("Idle") == 0 and tree.order("Done") == 12
    assert tree.in_document_order(["Done", "L1", "Idle"]) == ("Idle", "L1", "Done")
    assert list(tree) == list(tree.names) and len(tree) == 13
    assert "Deep" in tree and "Nowhere" not in tree


def test_ancestors_depth_and_descendants() -> None:
    tree = chart()
    assert tree.ancestors("D1") == ("Deep", "Right", "Run", "Work")
    assert tree.ancestors("Idle") == ()
    assert tree.depth("D1") == 4 and tree.depth("Work") == 0
    assert tree.descendants("Run") == ("Left", "L1", "L2", "Right", "R1", "Deep", "D1")
    assert tree.descendants("L1") == ()
    assert tree.is_descendant("D1", "Work") and not tree.is_descendant("Work", "Work")
    assert not tree.is_descendant("L1", "Right")
    assert tree.within("Work", "Work") and tree.within("L2", "Run")
    assert not tree.within("Idle", "Work")


def test_leaves_kinds_and_initial_children() -> None:
    tree = chart()
    assert tree.leaves() == ("Idle", "Prep", "L1", "L2", "R1", "D1", "Done")
    assert tree.leaves("Right") == ("R1", "D1")
    assert tree.leaves("L2") == ("L2",)
    assert tree.is_atomic("L2") and not tree.is_atomic("Work") and not tree.is_atomic("Work.H")
    assert tree.is_container("Run") and tree.is_container("Work")
    assert not tree.is_container("Idle")
    assert tree.initial_child("Work") == "Prep"
    assert tree.initial_child("Deep") == "D1"
    assert tree.initial_child("Run") is None  # every region is entered
    assert tree.initial_child("Idle") is None


def test_histories_are_children_but_neither_regions_leaves_nor_initial_children() -> None:
    tree = StateTree(
        [
            Node("P", None, "compound", True),
            Node("H", "P", "history", True),  # marked, but a history is never the initial child
            Node("A", "P", "normal", True),
            Node("Deep", "P", "history"),
        ]
    )
    assert tree.children("P") == ("H", "A", "Deep")
    assert tree.histories("P") == ("H", "Deep")
    assert tree.regions("P") == ("A",)
    assert tree.initial_child("P") == "A"
    assert tree.leaves() == ("A",)
    assert tree.parent("H") == "P" and tree.is_descendant("Deep", "P")


def test_regions_and_what_may_be_active_together() -> None:
    tree = chart()
    assert tree.child_toward("Run", "D1") == "Right"
    assert tree.child_toward("Run", "L1") == "Left"
    assert tree.child_toward("Right", "Right") is None
    assert tree.child_toward("Left", "D1") is None
    assert tree.child_toward(None, "D1") == "Work"
    assert tree.orthogonal("L1", "D1") and tree.orthogonal("Left", "Deep")
    assert not tree.orthogonal("L1", "L2")  # one compound: one at a time
    assert not tree.orthogonal("Run", "D1")  # one holds the other
    assert not tree.orthogonal("Idle", "Done")
    assert tree.common_ancestor(["L1", "D1"]) == "Run"
    assert tree.common_ancestor(["Deep", "D1"]) == "Right"  # strictly enclosing both
    assert tree.common_ancestor(["Idle", "D1"]) is None
    assert tree.common_ancestor([]) is None
    assert tree.with_ancestors(["L1", "D1"]) == (
        "Work",
        "Run",
        "Left",
        "L1",
        "Right",
        "Deep",
        "D1",
    )


def test_lcca_skips_parallel_states() -> None:
    tree = chart()
    # L1 and R1 meet in the parallel Run, which is not compound: their LCCA is Work.
    assert tree.lcca(["L1", "R1"]) == "Work"
    assert tree.lcca(["L1", "L2"]) == "Left"
    # a descendant and its ancestor: the compound that strictly holds both
    assert tree.lcca(["D1", "Right"]) == "Work"
    assert tree.lcca(["Idle", "Done"]) is None
    assert tree.lcca(["Prep"]) == "Work"


def test_domain_and_the_reenter_rule() -> None:
    tree = chart()
    # a leaf's rule to its sibling: the parent compound stays active
    assert tree.domain("L1", "L2") == "Left"
    # a compound's rule to its own descendant is internal: the compound stays active...
    assert tree.domain("Work", "Prep") == "Work"
    assert tree.domain("Right", "D1") == "Right"
    # ...unless marked `reenter`: then it is left and entered again
    assert tree.domain("Work", "Prep", reenter=True) is None
    assert tree.domain("Right", "D1", reenter=True) == "Work"
    # a parallel state's rule into itself is external (only a compound's is internal)
    assert tree.domain("Run", "L2") == "Work"
    # a rule to an ancestor leaves that ancestor (its domain is further out)
    assert tree.domain("D1", "Right") == "Work"
    assert tree.domain("D1", "Deep") == "Right"
    # a `-> self reenter` of a nested state: its parent compound is the domain
    assert tree.domain("D1", "D1", reenter=True) == "Deep"
    # across the top level
    assert tree.domain("Idle", "D1") is None


def test_deep_nesting_needs_no_recursion() -> None:
    depth = 5000
    nodes = [Node("s0", None, "compound", True)]
    for i in range(1, depth):
        nodes.append(Node(f"s{i}", f"s{i - 1}", "compound" if i < depth - 1 else "normal", True))
    tree = StateTree(nodes)
    last = f"s{depth - 1}"
    assert tree.depth(last) == depth - 1
    assert tree.ancestors(last)[0] == f"s{depth - 2}" and tree.ancestors(last)[-1] == "s0"
    assert tree.is_descendant(last, "s0")
    assert tree.lcca([last, "s1"]) == "s0"
    assert tree.domain("s1", last) == "s1"
    assert tree.leaves() == (last,)
    assert tree.child_toward("s10", last) == "s11"


def test_records_that_make_no_tree_are_refused() -> None:
    with pytest.raises(StateTreeError, match="given twice"):
        StateTree([Node("A"), Node("A")])
    with pytest.raises(StateTreeError, match="unknown parent 'X'"):
        StateTree([Node("A", "X")])
    with pytest.raises(StateTreeError, match="listed before its parent 'A'"):
        StateTree([Node("B", "A"), Node("A", None, "compound")])
    with pytest.raises(StateTreeError, match="its own parent"):
        StateTree([Node("A", "A")])


def test_lenient_trees_keep_every_state() -> None:
    tree = StateTree(
        [
            Node("B", "A"),  # listed before its parent
            Node("A", None, "compound"),
            Node("C", "Nowhere"),  # unknown parent: top level
            Node("D", "E", "compound"),  # D and E hold each other: the cycle is cut
            Node("E", "D", "compound"),
            Node("F", "E"),
            Node("A", None, "normal"),  # a second A: dropped
        ],
        lenient=True,
    )
    assert tree.names == ("B", "A", "C", "D", "E", "F")
    assert tree.parent("B") == "A" and tree.kind("A") == "compound"
    assert tree.parent("C") is None
    assert tree.parent("D") is None and tree.ancestors("F") == ("E", "D")
    assert set(tree.children(None)) == {"A", "C", "D"}


def test_built_from_the_ir_and_from_models_alike() -> None:
    raw = [
        {"name": "P", "kind": "parallel"},
        {"name": "A", "parent": "P"},
        {"name": "B", "parent": "P", "kind": "compound"},
        {"name": "B1", "parent": "B", "initial": True},
    ]
    from_ir = StateTree.from_ir(raw)
    models = StateTree.of_states([State.model_validate(s) for s in raw])
    for tree in (from_ir, models):
        assert tree.names == ("P", "A", "B", "B1")
        assert tree.regions("P") == ("A", "B")
        assert tree.initial_child("B") == "B1"
        assert tree.ancestors("B1") == ("B", "P")


# ---- the property: the tree agrees with the definitions --------------------------------------

KINDS_OF_LEAVES = ("normal", "final", "choice", "history")


@st.composite
def random_trees(draw: st.DrawFn) -> list[Node]:
    """Up to 30 states, each with a parent listed before it (or none); a state with children
    is compound or parallel, a leaf of any other kind; any children may be marked initial."""
    count = draw(st.integers(min_value=1, max_value=30))
    parents: list[int | None] = []
    for i in range(count):
        parents.append(
            draw(st.one_of(st.none(), st.integers(min_value=0, max_value=i - 1))) if i else None
        )
    has_children = {p for p in parents if p is not None}
    nodes = []
    for i, p in enumerate(parents):
        if i in has_children:
            kind = draw(st.sampled_from(("compound", "parallel")))
        else:
            kind = draw(st.sampled_from(KINDS_OF_LEAVES))
        parent = None if p is None else f"s{p}"
        nodes.append(Node(f"s{i}", parent, kind, draw(st.booleans())))
    return nodes


class Naive:
    """The definitions, spelled out: parent links walked, the list scanned, nothing kept."""

    def __init__(self, nodes: Sequence[Node]) -> None:
        self.nodes = list(nodes)
        self.by_name = {n.name: n for n in nodes}

    def ancestors(self, name: str) -> list[str]:
        out = []
        parent = self.by_name[name].parent
        while parent is not None:
            out.append(parent)
            parent = self.by_name[parent].parent
        return out

    def children(self, name: str | None) -> list[str]:
        return [n.name for n in self.nodes if n.parent == name]

    def descendants(self, name: str) -> list[str]:
        return [n.name for n in self.nodes if name in self.ancestors(n.name)]

    def leaves(self) -> list[str]:
        return [n.name for n in self.nodes if n.kind in ("normal", "final", "choice")]

    def initial_child(self, name: str) -> str | None:
        if self.by_name[name].kind != "compound":
            return None
        return next(
            (
                c
                for c in self.children(name)
                if self.by_name[c].initial and self.by_name[c].kind != "history"
            ),
            None,
        )

    def lcca(self, a: str, b: str) -> str | None:
        for anc in self.ancestors(a):
            if self.by_name[anc].kind == "compound" and anc in self.ancestors(b):
                return anc
        return None

    def domain(self, source: str, target: str, reenter: bool) -> str | None:
        compound = self.by_name[source].kind == "compound"
        if compound and source in self.ancestors(target) and not reenter:
            return source
        return self.lcca(source, target)

    def orthogonal(self, a: str, b: str) -> bool:
        above_a, above_b = self.ancestors(a), self.ancestors(b)
        if a == b or a in above_b or b in above_a:
            return False
        common = next((x for x in above_a if x in above_b), None)
        return common is not None and self.by_name[common].kind == "parallel"


@settings(max_examples=150, deadline=None)
@given(random_trees(), st.data())
def test_the_tree_agrees_with_the_definitions(nodes: list[Node], data: st.DataObject) -> None:
    tree, naive = StateTree(nodes), Naive(nodes)
    names = [n.name for n in nodes]
    assert tree.names == tuple(names)
    assert tree.children(None) == tuple(naive.children(None))
    assert tree.leaves() == tuple(naive.leaves())
    for name in names:
        assert tree.ancestors(name) == tuple(naive.ancestors(name))
        assert tree.depth(name) == len(naive.ancestors(name))
        assert tree.children(name) == tuple(naive.children(name))
        assert tree.descendants(name) == tuple(naive.descendants(name))
        assert tree.initial_child(name) == naive.initial_child(name)
    pairs = data.draw(st.lists(st.tuples(*[st.sampled_from(names)] * 2), max_size=20))
    for a, b in pairs:
        assert tree.is_descendant(a, b) == (b in naive.ancestors(a))
        assert tree.lcca([a, b]) == naive.lcca(a, b)
        for reenter in (False, True):
            assert tree.domain(a, b, reenter=reenter) == naive.domain(a, b, reenter)
        assert tree.orthogonal(a, b) == naive.orthogonal(a, b)
        common = next((x for x in naive.ancestors(a) if x in naive.ancestors(b)), None)
        assert tree.common_ancestor([a, b]) == common
        toward = next((x for x in [a, *naive.ancestors(a)] if naive.by_name[x].parent == b), None)
        assert tree.child_toward(b, a) == toward
