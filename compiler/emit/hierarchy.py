"""The state hierarchy of a flow as the diagram backends walk it: children in document order,
ancestors, the initial child of a compound, the scope an arrow is drawn in, the active states.

A flow is hierarchical when a state has a parent or is a compound, parallel or history state
(IR version 2). Flat flows never reach the code that uses this module, so their diagrams stay
exactly as they were.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from flowc.runtime.model import V2_STATE_KINDS, CompiledFlow, State

CONTAINER_KINDS = frozenset({"compound", "parallel"})


def is_hierarchical(flow: CompiledFlow) -> bool:
    return any(s.parent is not None or s.kind in V2_STATE_KINDS for s in flow.states)


@dataclass
class StateTree:
    """Parent and children of every state; `None` stands for the top level."""

    states: dict[str, State]
    children: dict[str | None, list[State]] = field(default_factory=dict)

    @classmethod
    def of(cls, flow: CompiledFlow) -> StateTree:
        states = {s.name: s for s in flow.states}
        tree = cls(states)
        for s in flow.states:
            # A parent the flow does not have is drawn at the top level rather than lost.
            parent = s.parent if s.parent in states else None
            tree.children.setdefault(parent, []).append(s)
        return tree

    def parent(self, name: str) -> str | None:
        state = self.states.get(name)
        return state.parent if state is not None and state.parent in self.states else None

    def ancestors(self, name: str) -> list[str]:
        """The enclosing states of `name`, innermost first (never `name` itself)."""
        found: list[str] = []
        current = self.parent(name)
        while current is not None and current not in found:  # a cycle is bad IR; stop at it
            found.append(current)
            current = self.parent(current)
        return found

    def kind(self, name: str) -> str:
        state = self.states.get(name)
        return state.kind if state is not None else "normal"

    def is_container(self, name: str) -> bool:
        return self.kind(name) in CONTAINER_KINDS

    def kids(self, name: str | None) -> list[State]:
        return self.children.get(name, [])

    def initial_child(self, name: str) -> State | None:
        kids = [k for k in self.kids(name) if k.kind != "history"]
        return next((k for k in kids if k.initial), kids[0] if kids else None)

    def within(self, name: str, container: str) -> bool:
        """`name` is `container` or one of its descendants."""
        return name == container or container in self.ancestors(name)

    def scope(self, a: str, b: str) -> str | None:
        """The innermost state that strictly encloses both `a` and `b` (None: the top level)."""
        above_b = set(self.ancestors(b))
        return next((s for s in self.ancestors(a) if s in above_b), None)

    def short_name(self, name: str) -> str:
        """What a nested state is called inside its parent: the last part of a dotted IR name."""
        return name.rsplit(".", 1)[-1] if self.parent(name) is not None else name

    def active(self, names: Iterable[str]) -> set[str]:
        """`names` (active atomic states, or one state) with every state that encloses them."""
        found: set[str] = set()
        for name in names:
            if name in self.states:
                found.add(name)
                found.update(self.ancestors(name))
        return found
