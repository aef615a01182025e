"""Mermaid backend: a `stateDiagram-v2` that GitHub, GitLab and most Markdown viewers draw.

Mermaid has no dashed transitions, so `back` edges say so in their label; choice states are
Mermaid's `<<choice>>` junctions; a state's title is its description line.

Hierarchy (IR version 2): a compound state is a composite state (`state X { ... }`) with its
own `[*]` initial arrow and final arrows; a parallel state is a composite whose regions are
separated by `--`. Mermaid has no history states: a history state is drawn as a small state
labelled `H` (shallow) or `H*` (deep), with an arrow labelled `default` to its default. A
rule of a compound state that leads inside it leaves from an "any state" box in the composite.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import replace

from flowc.compiler.emit.hierarchy import StateTree, is_hierarchical
from flowc.compiler.emit.labels import (
    ANY_STATE,
    Edge,
    Highlight,
    LabelMode,
    edges,
    invoke_lines,
    label_parts,
)
from flowc.runtime.model import CompiledFlow, State

#: Words Mermaid's state-diagram grammar reads as keywords; states so named get another id.
_RESERVED = frozenset(
    {"end", "state", "note", "direction", "class", "classdef", "style", "as", "default", "click"}
)


def state_id(name: str) -> str:
    """The id of one state in a flow with no other names in the way (see `state_ids`)."""
    return state_ids([name])[name] if name != ANY_STATE else "any_state"


def state_ids(names: Sequence[str]) -> dict[str, str]:
    """Mermaid ids for a flow's states: the name itself, but for names Mermaid reads as
    keywords (and `any_state`, the id of the "any state" box), which get `s_` prefixes, as
    many as it takes to stay clear of the flow's other names."""
    taken = set(names) | {"any_state"}
    ids = {ANY_STATE: "any_state"}
    for name in names:
        if "." in name:
            # A dotted name (a nested state whose short name repeats) is not a Mermaid id.
            sid = name.replace(".", "_")
            while sid in taken:
                sid = f"s_{sid}"
            taken.add(sid)
            ids[name] = sid
        elif name.lower() in _RESERVED or name == "any_state":
            sid = f"s_{name}"
            while sid in taken:
                sid = f"s_{sid}"
            taken.add(sid)
            ids[name] = sid
        else:
            ids[name] = name
    return ids


def to_mermaid(
    flow: CompiledFlow,
    labels: LabelMode = "events",
    highlight: str | Highlight | None = None,
    path: Sequence[str] | None = None,
    *,
    direction: str | None = None,
) -> str:
    from flowc.compiler.emit.dot import layout_direction

    ids = state_ids([s.name for s in flow.states])
    mark = highlight if isinstance(highlight, Highlight) else Highlight(current=highlight)
    if path:
        steps = [(a, b, None) for a, b in itertools.pairwise(path)]
        mark = replace(mark, current=mark.current or path[-1], steps=[*mark.steps, *steps])

    lines = ["---", f"title: {escape_label(flow.title or flow.name)}", "---", "stateDiagram-v2"]
    lines.append(f"    direction {direction or layout_direction(flow)}")
    if is_hierarchical(flow):
        nested = _Nested(flow, ids, labels)
        lines += nested.scope(None, 1)
        return "\n".join(lines + nested.styles(mark)) + "\n"
    lines += _flat_states(flow, ids)
    arrows = edges(flow)
    if any(e.inherited for e in arrows):
        lines.append('    state "any state" as any_state')
    lines.append(f"    [*] --> {ids[flow.initial]}")
    for edge in arrows:
        lines.append(f"    {ids[edge.source]} --> {ids[edge.target]}{_edge_text(edge, labels)}")
    for state in flow.states:
        if state.kind == "final":
            lines.append(f"    {ids[state.name]} --> [*]")
    return "\n".join(lines + _flat_styles(flow, ids, mark)) + "\n"


def _flat_states(flow: CompiledFlow, ids: dict[str, str]) -> list[str]:
    """The declarations a flat flow's states need: choices, names that are not ids, titles."""
    lines: list[str] = []
    for state in flow.states:
        sid = ids[state.name]
        if state.kind == "choice":
            lines.append(f"    state {sid} <<choice>>")
            continue
        if sid != state.name:
            lines.append(f'    state "{escape_label(state.name)}" as {sid}')
        if state.title:
            lines.append(f"    {sid} : {escape_label(state.title)}")
        # (each `STATE : text` adds one line to the state's box)
        lines += [f"    {sid} : {escape_label(line)}" for line in invoke_lines(state)]
    return lines


def _flat_styles(flow: CompiledFlow, ids: dict[str, str], mark: Highlight) -> list[str]:
    """The current state and the states a path went through, styled."""
    styled: list[str] = []
    if mark.current and mark.current in {s.name for s in flow.states if s.kind != "choice"}:
        styled.append("    classDef current fill:#ffca28,stroke:#e65100,stroke-width:2px")
        styled.append(f"    class {ids[mark.current]} current")
    # Mermaid cannot style a transition, so the path shows as the states it went through.
    drawable = {s.name for s in flow.states if s.kind != "choice"}
    visited = sorted((mark.visited - {mark.current or ""}) & drawable)
    if visited:
        styled.append("    classDef visited fill:#fff3c4")
        styled.append(f"    class {', '.join(ids[n] for n in visited)} visited")
    return styled


def _edge_text(edge: Edge, labels: LabelMode) -> str:
    t = edge.transition
    parts = label_parts(t, labels)
    if t.back:
        parts.append("(back)")
    return f" : {escape_label(' '.join(parts))}" if parts else ""


class _Nested:
    """The text of a hierarchical flow: each state declared in its parent's block, each arrow
    written in the innermost block that holds both its ends (Mermaid places a state where it
    first appears, so declarations come before arrows)."""

    def __init__(self, flow: CompiledFlow, ids: dict[str, str], labels: LabelMode) -> None:
        self.flow = flow
        self.tree = StateTree.of(flow)
        self.ids = ids
        self.taken = set(ids.values())
        #: compound states whose own rules lead inside them -> the id of their "any state" box
        self.boxes: dict[str, str] = {}
        self.arrows: dict[str | None, list[str]] = {}
        self.inherited = False
        for edge in edges(flow):
            self.inherited |= edge.inherited
            self.arrow(edge.source, edge.target, _edge_text(edge, labels))
        for state in flow.states:
            if state.kind == "history" and state.default in self.tree.states:
                self.arrow(state.name, state.default, " : default")

    def arrow(self, source: str, target: str, label: str) -> None:
        tree = self.tree
        tail = self.ids[source]
        tail_parent = tree.parent(source) if source in tree.states else None
        if tree.kind(source) == "compound" and target != source and tree.within(target, source):
            # A composite cannot point into itself: its rules leave from its "any state" box.
            tail = self.box(source)
            tail_parent = source
        head_parent = tree.parent(target) if target in tree.states else None
        # Mermaid moves a state into the composite where an arrow names it (everywhere but at
        # the top level): an arrow goes in a composite only when both its ends are declared
        # there, and never between the `--` of a parallel state's regions.
        scope = tail_parent if tail_parent == head_parent else None
        if scope is not None and tree.kind(scope) == "parallel":
            scope = None
        self.arrows.setdefault(scope, []).append(f"{tail} --> {self.ids[target]}{label}")

    def box(self, name: str) -> str:
        if name not in self.boxes:
            sid = f"{self.ids[name]}_any"
            while sid in self.taken:
                sid = f"s_{sid}"
            self.taken.add(sid)
            self.boxes[name] = sid
        return self.boxes[name]

    def scope(self, parent: str | None, depth: int) -> list[str]:
        """The lines inside `parent`'s block (the whole diagram for None)."""
        pad = "    " * depth
        lines: list[str] = []
        for state in self.tree.kids(parent):
            lines += self.declare(state, depth)
        if parent in self.boxes:
            lines.append(f'{pad}state "any state" as {self.boxes[parent]}')
        if parent is None and self.inherited:
            lines.append(f'{pad}state "any state" as any_state')
        first = self.flow.initial if parent is None else self.tree.initial_child(parent)
        if isinstance(first, State):
            first = first.name
        if first in self.tree.states:
            lines.append(f"{pad}[*] --> {self.ids[first]}")
        lines += [pad + line for line in self.arrows.get(parent, [])]
        for state in self.tree.kids(parent):
            if state.kind == "final":
                lines.append(f"{pad}{self.ids[state.name]} --> [*]")
        return lines

    def declare(self, state: State, depth: int) -> list[str]:
        pad = "    " * depth
        sid = self.ids[state.name]
        shown = self.tree.short_name(state.name)
        if state.kind == "choice":
            return [f"{pad}state {sid} <<choice>>"]
        if state.kind == "history":
            return [f'{pad}state "{"H*" if state.history == "deep" else "H"}" as {sid}']
        if state.kind in ("compound", "parallel"):
            return self.declare_composite(state, depth)
        lines = []
        if sid != shown:
            lines.append(f'{pad}state "{escape_label(shown)}" as {sid}')
        elif not state.title and not state.invokes:
            lines.append(f"{pad}{sid}")  # declared here, so that it is drawn in this block
        if state.title:
            lines.append(f"{pad}{sid} : {escape_label(state.title)}")
        lines += [f"{pad}{sid} : {escape_label(line)}" for line in invoke_lines(state)]
        return lines

    def declare_composite(self, state: State, depth: int) -> list[str]:
        """A compound's block (its scope) or a parallel's (its regions, split by `--`)."""
        pad = "    " * depth
        sid = self.ids[state.name]
        shown = self.tree.short_name(state.name)
        # A composite shows one label: its name, its title in parentheses, and the child
        # flows it invokes (a composite has no description lines).
        label = f"{shown} ({state.title})" if state.title else shown
        label = " · ".join([label, *invoke_lines(state)])
        head = f"state {sid}" if label == sid else f'state "{escape_label(label)}" as {sid}'
        lines = [f"{pad}{head} {{"]
        if state.kind == "compound":
            lines += self.scope(state.name, depth + 1)
        else:
            for i, region in enumerate(self.tree.kids(state.name)):
                if i and region.kind != "history":
                    lines.append(f"{pad}    --")
                lines += self.declare(region, depth + 1)
            if state.name in self.boxes:
                lines.append(f'{pad}    state "any state" as {self.boxes[state.name]}')
        return [*lines, f"{pad}}}"]

    def styles(self, mark: Highlight) -> list[str]:
        named = mark.configuration or ((mark.current,) if mark.current else ())
        active = self.tree.active(named)
        drawable = {
            s.name
            for s in self.flow.states
            if s.kind not in ("choice", "history", "compound", "parallel")
        }
        styled: list[str] = []
        current = sorted(active & drawable)
        if current:
            styled.append("    classDef current fill:#ffca28,stroke:#e65100,stroke-width:2px")
            styled.append(f"    class {', '.join(self.ids[n] for n in current)} current")
        containers = sorted(n for n in active if self.tree.is_container(n))
        if containers:
            styled.append("    classDef active stroke:#e65100,stroke-width:2px")
            styled.append(f"    class {', '.join(self.ids[n] for n in containers)} active")
        visited = sorted((mark.visited - active) & drawable)
        if visited:
            styled.append("    classDef visited fill:#fff3c4")
            styled.append(f"    class {', '.join(self.ids[n] for n in visited)} visited")
        return styled


_ESCAPES = {"#": "#35;", ";": "#59;", '"': "#quot;", "\n": " ", ":": "#58;"}


def escape_label(text: str) -> str:
    """Mermaid reads `;` as a line end, `#…;` as an entity and `:` as a separator."""
    return "".join(_ESCAPES.get(c, c) for c in text)
