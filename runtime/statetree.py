"""The state tree of a flow: which state holds which, worked out once, read everywhere.

Every part of flowc that asks a question about the hierarchy (the resolver's checks, lint's
reachability, the diagrams, the SCXML export, the engine's exit and entry sets) asks it here:
the parent and children of a state, its ancestors, whether one state lies inside another,
the regions of a parallel state, the leaves, document order, depth, a compound's initial
child, the least common compound ancestor (SCXML's LCCA) and a transition's domain.

A tree is built from (name, parent, kind, initial) records given in document order (the IR's
order of states: a parent before its children), and is immutable: every answer is
precomputed into dicts of tuples, so a read is a lookup (or a walk of at most the state's
depth). Names are the IR's state names; `None` stands for the top level.

This module is part of the runtime and imports nothing of the compiler (the compiler imports
it), nor of the rest of the runtime: it knows states by name only.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from typing import Any, NamedTuple, Protocol

#: Kinds of states that have no child states: the leaves of an active configuration.
ATOMIC_KINDS = frozenset({"normal", "final", "choice"})


class StateTreeError(ValueError):
    """The records do not make a tree: a duplicate name, an unknown parent, a parent listed
    after its child (or a state its own parent)."""


class Node(NamedTuple):
    """One record of the tree: a state (or history pseudo-state) and where it sits."""

    name: str
    #: the enclosing state's name (None at the top level)
    parent: str | None = None
    #: `normal`, `final`, `choice`, `compound`, `parallel` or `history`, as in the IR
    kind: str = "normal"
    #: marked `initial` (the initial child of a compound, or the flow's initial state)
    initial: bool = False


class TreeRecord(Protocol):
    """What `StateTree.of_states` reads of a state object (the IR model's `State`)."""

    @property
    def name(self) -> str: ...
    @property
    def parent(self) -> str | None: ...
    @property
    def kind(self) -> str: ...
    @property
    def initial(self) -> bool: ...


_NONE: tuple[str, ...] = ()


class StateTree:
    """An immutable tree of states by name (see the module's docstring)."""

    __slots__ = (
        "_ancestors",
        "_children",
        "_first",
        "_initial",
        "_kind",
        "_last",
        "_order",
        "_parent",
        "_regions",
        "names",
    )

    def __init__(self, nodes: Iterable[Node], *, lenient: bool = False) -> None:
        """A tree of `nodes`, in document order. Records that do not make a tree raise
        `StateTreeError`, unless `lenient`: then a later record of a name already given is
        dropped, and a state whose parent is unknown or inside it (a cycle) is put at the top
        level (a diagram of hand-edited IR draws it rather than losing it)."""
        records = _lenient(nodes) if lenient else _strict(nodes)
        #: every state's name, in document order
        self.names: tuple[str, ...] = tuple(n.name for n in records)
        self._order: dict[str, int] = {name: i for i, name in enumerate(self.names)}
        self._kind: dict[str, str] = {n.name: n.kind for n in records}
        self._parent: dict[str, str | None] = {n.name: n.parent for n in records}
        children: dict[str | None, list[str]] = {None: []}
        for n in records:
            children.setdefault(n.name, [])
            children.setdefault(n.parent, []).append(n.name)
        self._children: dict[str | None, tuple[str, ...]] = {
            k: tuple(v) for k, v in children.items()
        }
        self._regions: dict[str | None, tuple[str, ...]] = {
            k: tuple(c for c in v if self._kind[c] != "history") for k, v in children.items()
        }
        marked = {n.name for n in records if n.initial}
        self._initial: dict[str, str | None] = {
            name: next((c for c in self._regions[name] if c in marked), None)
            for name in self.names
            if self._kind[name] == "compound"
        }
        self._ancestors: dict[str, tuple[str, ...]] = {}
        self._first: dict[str, int] = {}
        self._last: dict[str, int] = {}
        self._number(None, ())

    def _number(self, root: str | None, above: tuple[str, ...]) -> None:
        """Ancestors and pre-order intervals (`_first`.. `_last` spans a state's subtree, so
        `is_descendant` is two comparisons), without recursion: a chain may be deep."""
        children = self._children
        work: list[tuple[str, tuple[str, ...], bool]] = [
            (c, above, False) for c in reversed(children[root])
        ]
        count = 0
        while work:
            name, ancestors, done = work.pop()
            if done:
                self._last[name] = count - 1
                continue
            self._ancestors[name] = ancestors
            self._first[name] = count
            count += 1
            work.append((name, ancestors, True))
            inner = (name, *ancestors)
            work.extend((c, inner, False) for c in reversed(children[name]))

    # ---- building --------------------------------------------------------------------------
    @classmethod
    def from_ir(cls, states: Iterable[Mapping[str, Any]], *, lenient: bool = False) -> StateTree:
        """The tree of the IR's state list (dicts as in the compiled JSON)."""
        return cls(
            (
                Node(s["name"], s.get("parent"), s.get("kind", "normal"), bool(s.get("initial")))
                for s in states
            ),
            lenient=lenient,
        )

    @classmethod
    def of_states(cls, states: Iterable[TreeRecord], *, lenient: bool = False) -> StateTree:
        """The tree of state objects (the IR model's `State`, or anything with the same four
        attributes)."""
        return cls((Node(s.name, s.parent, s.kind, s.initial) for s in states), lenient=lenient)

    # ---- one state -------------------------------------------------------------------------
    def __contains__(self, name: object) -> bool:
        return name in self._order

    def __iter__(self) -> Iterator[str]:
        return iter(self.names)

    def __len__(self) -> int:
        return len(self.names)

    def kind(self, name: str) -> str:
        return self._kind[name]

    def parent(self, name: str) -> str | None:
        return self._parent[name]

    def order(self, name: str) -> int:
        """Position in document order."""
        return self._order[name]

    def depth(self, name: str) -> int:
        """How many states enclose `name` (0 at the top level)."""
        return len(self._ancestors[name])

    def is_atomic(self, name: str) -> bool:
        """A leaf of a configuration: a normal, final or choice state."""
        return self._kind[name] in ATOMIC_KINDS

    def is_container(self, name: str) -> bool:
        """A compound or parallel state."""
        return self._kind[name] in ("compound", "parallel")

    # ---- relatives -------------------------------------------------------------------------
    def children(self, name: str | None) -> tuple[str, ...]:
        """The states and histories declared directly in `name` (None: the top level), in
        document order."""
        return self._children.get(name, _NONE)

    def regions(self, name: str | None) -> tuple[str, ...]:
        """The child states of `name` proper, histories left out: the regions of a parallel
        state, the children a compound may be in."""
        return self._regions.get(name, _NONE)

    def histories(self, name: str) -> tuple[str, ...]:
        """The history pseudo-states declared directly in `name`."""
        return tuple(c for c in self._children.get(name, _NONE) if self._kind[c] == "history")

    def initial_child(self, name: str) -> str | None:
        """A compound state's child marked `initial` (the first one, if several are); None
        for a state that is not compound or marks none."""
        return self._initial.get(name)

    def ancestors(self, name: str) -> tuple[str, ...]:
        """The states enclosing `name`, innermost first (never `name` itself)."""
        return self._ancestors[name]

    def is_descendant(self, name: str, of: str) -> bool:
        """Whether `name` lies strictly inside `of`."""
        first = self._first[of]
        return first < self._first[name] <= self._last[of]

    def within(self, name: str, container: str) -> bool:
        """Whether `name` is `container` or lies inside it."""
        first = self._first[container]
        return first <= self._first[name] <= self._last[container]

    def descendants(self, name: str) -> tuple[str, ...]:
        """Every state strictly inside `name`, in document order."""
        found: list[str] = []
        work = list(reversed(self._children[name]))
        while work:
            child = work.pop()
            found.append(child)
            work.extend(reversed(self._children[child]))
        return self.in_document_order(found)

    def leaves(self, name: str | None = None) -> tuple[str, ...]:
        """The atomic states inside `name` (None: the whole tree), or `name` itself if it is
        atomic, in document order."""
        if name is not None and self.is_atomic(name):
            return (name,)
        inside = self.names if name is None else self.descendants(name)
        return tuple(s for s in inside if self._kind[s] in ATOMIC_KINDS)

    def child_toward(self, ancestor: str | None, name: str) -> str | None:
        """The child of `ancestor` (None: the top level) that is `name` or holds it: the
        region of a parallel state a state is in. None when `name` is not inside it."""
        chain = (name, *self._ancestors[name])
        if ancestor is None:
            return chain[-1]
        if not self.is_descendant(name, ancestor):
            return None
        return chain[len(chain) - self.depth(ancestor) - 2]

    # ---- order and configurations ----------------------------------------------------------
    def in_document_order(self, names: Iterable[str]) -> tuple[str, ...]:
        return tuple(sorted(names, key=self._order.__getitem__))

    def with_ancestors(self, names: Iterable[str]) -> tuple[str, ...]:
        """`names` and every state enclosing one of them, in document order (the whole active
        configuration from its leaves)."""
        found: set[str] = set()
        for name in names:
            found.add(name)
            found.update(self._ancestors[name])
        return self.in_document_order(found)

    def common_ancestor(self, names: Iterable[str]) -> str | None:
        """The innermost state that encloses every one of `names` strictly (None: only the
        top level does, or `names` is empty)."""
        given = list(names)
        if not given:
            return None
        first, rest = given[0], given[1:]
        for anc in self._ancestors[first]:
            if all(self.is_descendant(other, anc) for other in rest):
                return anc
        return None

    def orthogonal(self, a: str, b: str) -> bool:
        """Whether `a` and `b` may be active together: neither holds the other and their
        innermost common ancestor is a parallel state."""
        if self.within(a, b) or self.within(b, a):
            return False
        common = self.common_ancestor((a, b))
        return common is not None and self._kind[common] == "parallel"

    def lcca(self, names: Iterable[str]) -> str | None:
        """SCXML's least common compound ancestor: the innermost compound state that is a
        proper ancestor of the first of `names` and holds all the others (None: the top)."""
        given = list(names)
        first, rest = given[0], given[1:]
        for anc in self._ancestors[first]:
            if self._kind[anc] == "compound" and all(self.is_descendant(o, anc) for o in rest):
                return anc
        return None

    def domain(self, source: str, target: str, *, reenter: bool = False) -> str | None:
        """The domain of a rule of `source` to `target` (None: the top): the step leaves the
        active states inside it and enters the target's branch in it. It is the LCCA of the
        source and the target, except that a compound's rule to one of its own descendants
        is internal unless marked `reenter` (SCXML's `type="internal"`): its domain is the
        compound itself, which stays active.

        A `-> self` without `reenter` leaves and enters nothing at all; that is the engine's
        rule, decided before a domain is asked for."""
        if not reenter and self._kind[source] == "compound" and self.is_descendant(target, source):
            return source
        return self.lcca((source, target))


def _strict(nodes: Iterable[Node]) -> list[Node]:
    records: list[Node] = []
    seen: set[str] = set()
    for n in nodes:
        if n.name in seen:
            raise StateTreeError(f"state {n.name!r} is given twice")
        if n.parent is not None and n.parent not in seen:
            if n.parent == n.name:
                raise StateTreeError(f"state {n.name!r} is its own parent")
            raise StateTreeError(
                f"state {n.name!r} has unknown parent {n.parent!r} (or is listed before it: "
                "states are in document order)"
            )
        seen.add(n.name)
        records.append(n)
    return records


def _lenient(nodes: Iterable[Node]) -> list[Node]:
    records: dict[str, Node] = {}
    for n in nodes:
        records.setdefault(n.name, n)
    parent = {name: n.parent if n.parent in records else None for name, n in records.items()}
    for name in records:
        # Walk up; a walk that comes back to `name` is a cycle: cut it above `name`. (A walk
        # caught in a cycle above `name` stops after as many steps as there are states: that
        # cycle is cut when one of its own states is walked from.)
        current = parent[name]
        steps = 0
        while current is not None and current != name and steps <= len(records):
            current = parent[current]
            steps += 1
        if current == name:
            parent[name] = None
    return [n._replace(parent=parent[n.name]) for n in records.values()]
