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


#: a record as a plain tuple: (name, parent, kind, initial), as `Node` names them
Record = tuple[str, str | None, str, bool]

_NONE: tuple[str, ...] = ()


class StateTree:
    """An immutable tree of states by name (see the module's docstring)."""

    __slots__ = ("_ancestors", "_children", "_initial", "_kind", "_order", "_regions", "names")

    def __init__(self, nodes: Iterable[Record], *, lenient: bool = False) -> None:
        """A tree of `nodes` (`Node`s, or plain tuples of the same four fields), in document
        order. Records that do not make a tree raise `StateTreeError`, unless `lenient`: then
        a later record of a name already given is dropped, and a state whose parent is
        unknown or inside it (a cycle) is put at the top level (a diagram of hand-edited IR
        draws it rather than losing it)."""
        parent, kind, marked = _lenient(nodes) if lenient else _strict(nodes)
        #: every state's name, in document order
        self.names: tuple[str, ...] = tuple(parent)
        self._order: dict[str, int] = {name: i for i, name in enumerate(self.names)}
        self._kind = kind
        children: dict[str | None, list[str]] = {None: []}
        for name, up in parent.items():
            children.setdefault(up, []).append(name)
        #: only the states that have children (and None, the top level) are keys
        self._children: dict[str | None, tuple[str, ...]] = {
            k: tuple(v) for k, v in children.items()
        }
        self._regions: dict[str | None, tuple[str, ...]] = {
            k: tuple(c for c in v if kind[c] != "history") for k, v in self._children.items()
        }
        self._initial: dict[str, str | None] = {
            k: next((c for c in self._regions[k] if c in marked), None)
            for k in self._children
            if k is not None and kind[k] == "compound"
        }
        self._ancestors = _ancestry(parent)

    # ---- building --------------------------------------------------------------------------
    @classmethod
    def from_ir(cls, states: Iterable[Mapping[str, Any]], *, lenient: bool = False) -> StateTree:
        """The tree of the IR's state list (dicts as in the compiled JSON)."""
        return cls(
            (
                (s["name"], s.get("parent"), s.get("kind", "normal"), bool(s.get("initial")))
                for s in states
            ),
            lenient=lenient,
        )

    @classmethod
    def of_states(cls, states: Iterable[TreeRecord], *, lenient: bool = False) -> StateTree:
        """The tree of state objects (the IR model's `State`, or anything with the same four
        attributes)."""
        return cls(((s.name, s.parent, s.kind, s.initial) for s in states), lenient=lenient)

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
        above = self._ancestors[name]
        return above[0] if above else None

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
        return of in self._ancestors[name]

    def within(self, name: str, container: str) -> bool:
        """Whether `name` is `container` or lies inside it."""
        return name == container or container in self._ancestors[name]

    def descendants(self, name: str) -> tuple[str, ...]:
        """Every state strictly inside `name`, in document order."""
        found: list[str] = []
        work = list(reversed(self.children(name)))
        while work:
            child = work.pop()
            found.append(child)
            work.extend(reversed(self.children(child)))
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


def _ancestry(parent: dict[str, str | None]) -> dict[str, tuple[str, ...]]:
    """Every state's ancestors, innermost first, from its parent (a tree: no cycle), in any
    order of the states, without recursion: each chain is walked up to a state already done."""
    found: dict[str, tuple[str, ...]] = {}
    for name, up in parent.items():
        if up is None:  # most states of most flows
            found[name] = _NONE
            continue
        path: list[str] = []
        current: str | None = name
        while current is not None and current not in found:
            path.append(current)
            current = parent[current]
        above = () if current is None else (current, *found[current])
        for state in reversed(path):
            found[state] = above
            above = (state, *above)
    return found


#: what a tree is built from, column by column: each state's parent and kind by name (in
#: document order), and the states marked `initial`
_Columns = tuple[dict[str, str | None], dict[str, str], set[str]]


def _strict(nodes: Iterable[Record]) -> _Columns:
    records = list(nodes)
    parent: dict[str, str | None] = {}
    kind: dict[str, str] = {}
    marked: set[str] = set()
    for name, up, k, initial in records:
        if name in parent:
            raise StateTreeError(f"state {name!r} is given twice")
        if up is not None and up not in parent:
            raise StateTreeError(_misplaced(name, up, records))
        parent[name] = up
        kind[name] = k
        if initial:
            marked.add(name)
    return parent, kind, marked


def _misplaced(name: str, up: str, records: list[Record]) -> str:
    """Why `name`'s parent `up` is not a state listed before it."""
    if up == name:
        return f"state {name!r} is its own parent"
    if any(r[0] == up for r in records):
        return f"state {name!r} is listed before its parent {up!r} (states are in document order)"
    return f"state {name!r} has unknown parent {up!r}"


def _lenient(nodes: Iterable[Record]) -> _Columns:
    parent: dict[str, str | None] = {}
    kind: dict[str, str] = {}
    marked: set[str] = set()
    for name, up, k, initial in nodes:
        if name not in parent:
            parent[name] = up
            kind[name] = k
            if initial:
                marked.add(name)
    count = len(parent)
    for name, up in parent.items():
        if up is not None and up not in parent:
            parent[name] = None
    for name in parent:
        # Walk up; a walk that comes back to `name` is a cycle: cut it above `name`. (A walk
        # caught in a cycle above `name` stops after as many steps as there are states: that
        # cycle is cut when one of its own states is walked from.)
        current = parent[name]
        steps = 0
        while current is not None and current != name and steps <= count:
            current = parent[current]
            steps += 1
        if current == name:
            parent[name] = None
    return parent, kind, marked
