"""What every diagram backend shows the same way: edge labels, inherited rules, highlights.

Rules written outside any state are copied into every non-final state by the compiler; drawn
copy by copy they would bury the diagram under identical arrows, so the backends draw each such
rule once, from a pseudo-state labelled "any state".
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from flowc.compiler.emit.expr_text import actions_text, delay_text, duration_text, expr_text
from flowc.runtime.model import CompiledFlow, Invoke, State, Transition, TypeRef

LabelMode = Literal["none", "events", "full"]
LABEL_MODES: tuple[LabelMode, ...] = ("none", "events", "full")


def timer_text(t: Transition) -> str:
    """`after 10m`, or `after backoff_ms ms` for a computed delay."""
    if t.after_expr is not None:
        return f"after {delay_text(t.after_expr)}"
    return f"after {duration_text(t.after_ms)}"


def trigger_text(t: Transition) -> str:
    """What makes the transition happen, the way the source says it."""
    if t.kind in ("event", "reject"):
        return t.event or "?"
    if t.kind == "timer":
        return timer_text(t)
    if t.kind == "else":
        return "else"
    if t.kind == "always":
        return "always"
    return ""


def invoke_text(inv: Invoke) -> str:
    """An invoke as a state's box shows it: the child flow, `as ID` when the id is not the
    flow's name, and for a fan-out `× LIST` with its join (`all`, `any`, N), e.g.
    `invoke payment as pay`, `invoke review × reviewers as reviews (join all)`."""
    text = f"invoke {inv.flow}"
    if inv.each is not None:
        text += f" × {expr_text(inv.each)}"
    if inv.id != inv.flow:
        text += f" as {inv.id}"
    if inv.each is not None:
        text += f" (join {join_text(inv)})"
    if inv.forward:
        text += " forward"
    return text


def join_text(inv: Invoke) -> str:
    """A fan-out's join as the source says it: `all`, `any` or a count."""
    return "all" if inv.join is None else "any" if inv.join == 1 else str(inv.join)


def invoke_lines(state: State) -> list[str]:
    """The child flows a state invokes, one line each, in source order."""
    return [invoke_text(inv) for inv in state.invokes]


def label_parts(t: Transition, mode: LabelMode) -> list[str]:
    """The pieces of an edge label: trigger, `[guard]`, `/ actions` (each may be absent).

    `events` shows what triggers the edge; for edges without an event (routing, direct, timer)
    the guard is part of the trigger, so it is shown there too. `full` adds guards and actions
    everywhere.
    """
    if mode == "none":
        return []
    parts: list[str] = []
    trigger = trigger_text(t)
    if trigger:
        parts.append(trigger)
    # Without an event, the guard is what decides the edge: show it even in `events` mode.
    show_guard = mode == "full" or t.kind in ("choice", "direct", "timer", "always")
    if show_guard and t.guard is not None:
        parts.append(f"[{expr_text(t.guard)}]")
    if mode == "full" and t.actions:
        parts.append(f"/ {actions_text(t.actions)}")
    if mode == "full" and t.kind == "reject":
        parts.append(f"reject {t.code}")
    return parts


def edge_label(t: Transition, mode: LabelMode, *, width: int = 32, wrap: int = 44) -> str:
    """One line when short, else one piece per line, long pieces wrapped at spaces (Graphviz
    does not wrap labels itself, and one long action would stretch the whole drawing)."""
    parts = label_parts(t, mode)
    joined = " ".join(parts)
    if len(joined) <= width:
        return joined
    lines: list[str] = []
    for part in parts:
        lines.extend(_wrap_words(part, wrap))
    return "\n".join(lines)


def _wrap_words(text: str, width: int) -> list[str]:
    lines: list[str] = []
    current = ""
    for word in text.split(" "):
        if current and len(current) + 1 + len(word) > width:
            lines.append(current)
            current = "  " + word  # continuation lines are indented
        else:
            current = f"{current} {word}" if current else word
    if current:
        lines.append(current)
    return lines


def type_text(ref: TypeRef) -> str:
    if ref.kind == "optional":
        return f"{type_text(ref.item)}?" if ref.item else "?"
    if ref.kind == "list":
        return f"list[{type_text(ref.item) if ref.item else '?'}]"
    if ref.kind == "map":
        return f"map[str, {type_text(ref.item) if ref.item else '?'}]"
    if ref.kind in ("enum", "record"):
        return ref.name or ref.kind
    if ref.min is not None or ref.max is not None:
        low = _bound(ref.min)
        high = _bound(ref.max)
        return f"{ref.kind}({low}..{high})"
    return ref.kind


def _bound(value: float | None) -> str:
    if value is None:
        return ""
    return str(int(value)) if float(value).is_integer() else str(value)


# ---- which edges to draw ----------------------------------------------------------------------

ANY_STATE = "__any__"


@dataclass(frozen=True)
class Edge:
    """One arrow: `source` may be `ANY_STATE` for a rule that applies in every state."""

    source: str
    target: str
    transition: Transition

    @property
    def inherited(self) -> bool:
        return self.source == ANY_STATE


def edges(flow: CompiledFlow) -> list[Edge]:
    """Arrows to draw, in source order; refusals (no target) are not arrows."""
    result: list[Edge] = []
    seen_rules: set[tuple[int, int]] = set()
    # A global `-> self` has a different target in every state: draw it on "any state". A
    # global rule into one state has that state as target in every copy, its own included.
    fixed_target: dict[tuple[int, int], str] = {}
    for t in flow.transitions:
        if t.inherited and t.target is not None and t.target != t.source:
            fixed_target[(t.line, t.column)] = t.target
    for t in sorted(flow.transitions, key=lambda t: t.index):
        if t.target is None:
            continue
        if t.inherited:
            rule = (t.line, t.column)
            if rule in seen_rules:
                continue
            seen_rules.add(rule)
            result.append(Edge(ANY_STATE, fixed_target.get(rule, ANY_STATE), t))
        else:
            result.append(Edge(t.source, t.target, t))
    return result


def refusals(flow: CompiledFlow) -> dict[str, list[Transition]]:
    """`reject` rules (which have no arrow) per state, in the order they are tried."""
    found: dict[str, list[Transition]] = {}
    for t in sorted(flow.transitions, key=lambda t: t.index):
        if t.kind == "reject":
            found.setdefault(t.source, []).append(t)
    return found


# ---- highlighting -----------------------------------------------------------------------------


@dataclass
class Highlight:
    """The current state and the path taken, from `--highlight` or a runtime snapshot."""

    current: str | None = None
    #: the active atomic states of a hierarchical instance (its snapshot's `configuration`);
    #: empty for a flat one, whose `current` says it all
    configuration: tuple[str, ...] = ()
    #: (source, target, event or None) of each step taken, oldest first.
    steps: list[tuple[str, str, str | None]] = field(default_factory=list)
    #: the flow a snapshot says it belongs to, when it says so
    flow: str | None = None

    @property
    def visited(self) -> set[str]:
        names = {s for step in self.steps for s in step[:2]}
        if self.current:
            names.add(self.current)
        return names

    def taken(self, all_edges: Iterable[Edge]) -> set[int]:
        """Indices (into `all_edges`) of the arrows the steps went along.

        A step names its states (and its event when known); when several arrows join the same
        two states, the one with the matching event is preferred, else the first.
        """
        if not self.steps:
            return set()
        listed = list(all_edges)
        by_pair: dict[tuple[str, str], list[int]] = {}
        for i, e in enumerate(listed):
            if not e.inherited:
                by_pair.setdefault((e.source, e.target), []).append(i)
        inherited_by_target: dict[str, list[int]] = {}
        for i, e in enumerate(listed):
            if e.inherited:
                inherited_by_target.setdefault(e.target, []).append(i)
        taken: set[int] = set()
        for source, target, event in self.steps:
            candidates = by_pair.get((source, target)) or inherited_by_target.get(target, [])
            if not candidates and source == target:
                candidates = inherited_by_target.get(ANY_STATE, [])
            if not candidates:
                continue
            chosen = next(
                (i for i in candidates if event and listed[i].transition.event == event),
                candidates[0],
            )
            taken.add(chosen)
        return taken
