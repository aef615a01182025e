"""The state hierarchy of a flow as the diagram backends walk it: the flow's state tree
(runtime/statetree.py) read by `State` model, with the initial child a diagram points at and
the scope an arrow is drawn in.

A flow is hierarchical when a state has a parent or is a compound, parallel or history state
(IR version 2). Flat flows never reach the code that uses this module, so their diagrams stay
exactly as they were. A diagram may be drawn of hand-edited IR: the tree is built leniently
(a state whose parent is unknown is drawn at the top level rather than lost), and a name the
flow does not have is answered as a top-level state with no relatives.
"""

from __future__ import annotations

from collections.abc import Iterable

from flowc.runtime.model import V2_STATE_KINDS, CompiledFlow, State
from flowc.runtime.statetree import StateTree as Shape


def is_hierarchical(flow: CompiledFlow) -> bool:
    return any(s.parent is not None or s.kind in V2_STATE_KINDS for s in flow.states)


class StateTree:
    """The flow's state tree with the `State` models the diagrams draw."""

    __slots__ = ("shape", "states")

    def __init__(self, flow: CompiledFlow) -> None:
        #: every state by name (the first of a name given twice, as the tree keeps it)
        self.states: dict[str, State] = {}
        for s in flow.states:
            self.states.setdefault(s.name, s)
        self.shape = Shape.of_states(flow.states, lenient=True)

    @classmethod
    def of(cls, flow: CompiledFlow) -> StateTree:
        return cls(flow)

    def parent(self, name: str) -> str | None:
        return self.shape.parent(name) if name in self.shape else None

    def ancestors(self, name: str) -> tuple[str, ...]:
        """The enclosing states of `name`, innermost first (never `name` itself)."""
        return self.shape.ancestors(name) if name in self.shape else ()

    def kind(self, name: str) -> str:
        return self.shape.kind(name) if name in self.shape else "normal"

    def is_container(self, name: str) -> bool:
        return name in self.shape and self.shape.is_container(name)

    def kids(self, name: str | None) -> list[State]:
        return [self.states[c] for c in self.shape.children(name)]

    def initial_child(self, name: str) -> State | None:
        """The child a compound starts in; one marking none points at its first child."""
        first = self.shape.initial_child(name) if name in self.shape else None
        if first is None:
            first = next(iter(self.shape.regions(name)), None)
        return self.states[first] if first is not None else None

    def within(self, name: str, container: str) -> bool:
        """`name` is `container` or one of its descendants."""
        if name in self.shape and container in self.shape:
            return self.shape.within(name, container)
        return name == container

    def scope(self, a: str, b: str) -> str | None:
        """The innermost state that strictly encloses both `a` and `b` (None: the top level)."""
        if a in self.shape and b in self.shape:
            return self.shape.common_ancestor((a, b))
        return None

    def short_name(self, name: str) -> str:
        """What a nested state is called inside its parent: the last part of a dotted IR name."""
        return name.rsplit(".", 1)[-1] if self.parent(name) is not None else name

    def active(self, names: Iterable[str]) -> set[str]:
        """`names` (active atomic states, or one state) with every state that encloses them."""
        return set(self.shape.with_ancestors(n for n in names if n in self.shape))
