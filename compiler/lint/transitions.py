"""Rules on the transitions of one state: W305 shadowed, W306 duplicate, W309 constant guard."""

from __future__ import annotations

from collections.abc import Iterator

from flowc.compiler.diagnostics import Diagnostic
from flowc.compiler.emit.expr_text import expr_text
from flowc.compiler.lint.graph import FlowGraph, Shadowing
from flowc.runtime.model import Transition


def shadowed_transitions(g: FlowGraph) -> Iterator[Diagnostic]:
    """W305 / W306: a transition that an earlier one on the same trigger always beats.

    A rule written outside any state is copied into every state after the state's own rules,
    so a state's rule beating an inherited copy is the intended override and stays silent.
    """
    seen: set[tuple[int, int]] = set()
    for s in g.shadowed:
        t, by = s.transition, s.by
        if t.inherited and not by.inherited:
            continue
        if t.inherited:
            # The same pair of global rules is found once per state; report it once.
            if (t.line, t.column) in seen:
                continue
            seen.add((t.line, t.column))
        yield _duplicate(g, s) if s.duplicate else _shadowed(g, s)


def _shadowed(g: FlowGraph, s: Shadowing) -> Diagnostic:
    t, by = s.transition, s.by
    where = f"line {by.line}" if by.line else "an earlier rule"
    reason = "has no guard" if by.guard is None else "has a guard that is always true"
    if by.kind == "else":
        reason = "is the `else` branch"
    if t.kind == "else":
        what = f"`else` in `{t.source}` is never taken"
        because = f"the routing rule at {where} {reason}"
    else:
        what = f"{_describe(t)} in `{t.source}` never fires"
        because = f"the {_describe(by)} at {where} {reason} and is tried first"
    if s.exhausted is not None:
        because = f"the earlier rules on its trigger cover every member of `{s.exhausted}`"
        return Diagnostic.make(
            "W305",
            f"{what}: {because}",
            g.transition_span(t),
            help="remove this rule, or narrow the earlier ones",
        )
    return Diagnostic.make(
        "W305",
        f"{what}: {because}",
        g.transition_span(t),
        help=f"give the rule at {where} a guard, or move this rule above it",
    )


def _duplicate(g: FlowGraph, s: Shadowing) -> Diagnostic:
    t, by = s.transition, s.by
    where = f"line {by.line}" if by.line else "an earlier rule"
    same = g.target(t) == g.target(by) and t.actions == by.actions and t.kind == by.kind
    if same and t.code == by.code and t.message == by.message:
        message = f"duplicate transition: {_describe(t)} in `{t.source}` repeats the one at {where}"
        help_text = "remove one of them"
    else:
        message = (
            f"{_describe(t)} in `{t.source}` never fires: the one at {where} has the same "
            "trigger and guard and is tried first"
        )
        help_text = "merge the two rules, or give them different guards"
    return Diagnostic.make("W306", message, g.transition_span(t), help=help_text)


def constant_guards(g: FlowGraph) -> Iterator[Diagnostic]:
    """W309: a guard whose value does not depend on anything known only at run time."""
    seen: set[tuple[int, int]] = set()
    for t in g.flow.transitions:
        value = g.constant.get(t.index)
        if value is None or t.guard is None:
            continue
        if t.inherited:
            if (t.line, t.column) in seen:
                continue
            seen.add((t.line, t.column))
        text = expr_text(t.guard)
        if value:
            message = f"guard `{text}` is always true"
            help_text = "drop the guard, or fix it to test what it was meant to"
        else:
            message = f"guard `{text}` is always false: {_describe(t)} can never fire"
            help_text = "remove the rule, or fix the guard"
        yield Diagnostic.make("W309", message, g.transition_span(t), help=help_text)


def _describe(t: Transition) -> str:
    target = FlowGraph.target(t)
    if t.kind == "event":
        return f"transition on `{t.event}`"
    if t.kind == "reject":
        return f"refusal of `{t.event}`"
    if t.kind == "direct":
        return f"direct edge to `{target}`"
    if t.kind == "timer":
        return "timer transition"
    if t.kind == "else":
        return "`else` branch"
    return f"routing rule to `{target}`"
