"""Mermaid backend: a `stateDiagram-v2` that GitHub, GitLab and most Markdown viewers draw.

Mermaid has no dashed transitions, so `back` edges say so in their label; choice states are
Mermaid's `<<choice>>` junctions; a state's title is its description line.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from flowc.compiler.emit.labels import ANY_STATE, Highlight, LabelMode, edges, label_parts
from flowc.runtime.model import CompiledFlow

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
        if name.lower() in _RESERVED or name == "any_state":
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
        mark = Highlight(current=mark.current or path[-1], steps=[*mark.steps, *steps])

    lines = ["---", f"title: {escape_label(flow.title or flow.name)}", "---", "stateDiagram-v2"]
    lines.append(f"    direction {direction or layout_direction(flow)}")
    for state in flow.states:
        sid = ids[state.name]
        if state.kind == "choice":
            lines.append(f"    state {sid} <<choice>>")
            continue
        if sid != state.name:
            lines.append(f'    state "{escape_label(state.name)}" as {sid}')
        if state.title:
            lines.append(f"    {sid} : {escape_label(state.title)}")
    arrows = edges(flow)
    if any(e.inherited for e in arrows):
        lines.append('    state "any state" as any_state')
    lines.append(f"    [*] --> {ids[flow.initial]}")
    for edge in arrows:
        t = edge.transition
        parts = label_parts(t, labels)
        if t.back:
            parts.append("(back)")
        label = f" : {escape_label(' '.join(parts))}" if parts else ""
        lines.append(f"    {ids[edge.source]} --> {ids[edge.target]}{label}")
    for state in flow.states:
        if state.kind == "final":
            lines.append(f"    {ids[state.name]} --> [*]")

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
    return "\n".join(lines + styled) + "\n"


_ESCAPES = {"#": "#35;", ";": "#59;", '"': "#quot;", "\n": " ", ":": "#58;"}


def escape_label(text: str) -> str:
    """Mermaid reads `;` as a line end, `#…;` as an entity and `:` as a separator."""
    return "".join(_ESCAPES.get(c, c) for c in text)
