"""Rules on the transitions of one state: W305 shadowed, W306 duplicate, W309 constant guard,
W318 a rule outside any state that never fires in any state, W319 a starved timer; and why each
transition that can never fire cannot (`never_fires`, which `flowc paths` reports)."""

from __future__ import annotations

from collections.abc import Iterator

from flowc.compiler.diagnostics import Diagnostic
from flowc.compiler.lint.fold import constant_guard
from flowc.compiler.lint.graph import FlowGraph, Shadowing
from flowc.compiler.lint.timers import Starving
from flowc.compiler.source import Span
from flowc.runtime.model import Action, Expr, Transition


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
    what = (
        f"`else` in `{t.source}` is never taken"
        if t.kind == "else"
        else f"{_describe(t)} in `{t.source}` never fires"
    )
    if s.exhausted is not None:
        help_text = "remove this rule, or narrow the earlier ones"
    else:
        help_text = f"give the rule at {where} a guard, or move this rule above it"
    return Diagnostic.make(
        "W305", f"{what}: {_shadow_reason(s)}", g.transition_span(t), help=help_text
    )


def _shadow_reason(s: Shadowing) -> str:
    """Why the earlier rule(s) always win over `s.transition`."""
    t, by = s.transition, s.by
    where = f"line {by.line}" if by.line else "an earlier rule"
    if s.exhausted is not None:
        return f"the earlier rules on its trigger cover every member of `{s.exhausted}`"
    if s.duplicate:
        return f"the rule at {where} has the same trigger and guard and is tried first"
    reason = "has no guard" if by.guard is None else "has a guard that is always true"
    if by.kind == "else":
        reason = "is the `else` branch"
    if t.kind == "else":
        return f"the routing rule at {where} {reason}"
    return f"the {_describe(by)} at {where} {reason} and is tried first"


def _starve_reason(s: Starving) -> str:
    by = s.by
    where = f"line {by.line}" if by.line else "an earlier rule"
    leaves = f"re-enters `{by.source}`" if by.reenter else f"leaves `{by.source}`"
    return f"the unguarded timer `{trigger_text(by)}` at {where} always fires first and {leaves}"


def never_fires(g: FlowGraph) -> dict[int, str]:
    """Why each transition that can never fire cannot (by `index`)."""
    reasons: dict[int, str] = {}
    for t in g.flow.transitions:
        if g.constant.get(t.index) is False and t.guard is not None:
            reasons[t.index] = f"its guard `{_source_text(t.guard)}` is always false"
    for s in g.shadowed:
        reasons.setdefault(s.transition.index, _shadow_reason(s))
    for starving in g.starved:
        reasons.setdefault(starving.timer.index, _starve_reason(starving))
    return reasons


def inherited_never_fire(g: FlowGraph) -> Iterator[Diagnostic]:
    """W318: a rule written outside any state that no state lets fire, because in each state it
    is copied into the state's own rules always win (one state overriding it is intended; all
    of them doing so leaves the rule for nothing). Rules beaten by an earlier rule outside any
    state (W305, W306) or with a constant false guard (W309) are reported there."""
    copies: dict[tuple[int, int], list[Transition]] = {}
    for t in g.flow.transitions:
        if t.inherited:
            copies.setdefault((t.line, t.column), []).append(t)
    beaten_by = {s.transition.index: s.by for s in g.shadowed}
    for group in copies.values():
        if any(t.index not in beaten_by for t in group):
            continue
        if any(beaten_by[t.index].inherited for t in group):
            continue  # W305 or W306 reports it
        first = group[0]
        states = ", ".join(f"`{t.source}`" for t in group)
        yield Diagnostic.make(
            "W318",
            f"{_describe(first)} written outside any state never fires: in every state it is "
            f"copied into ({states}) the state's own rules always take `{trigger_text(first)}` "
            "first",
            g.transition_span(first),
            help="remove the rule, or narrow the states' own rules so that it can fire",
        )


def starved_timers(g: FlowGraph) -> Iterator[Diagnostic]:
    """W319: a timer that never fires, because a shorter unguarded timer leaves its state."""
    for s in g.starved:
        yield Diagnostic.make(
            "W319",
            f"timer `{trigger_text(s.timer)}` in `{s.timer.source}` never fires: "
            f"{_starve_reason(s)}",
            g.transition_span(s.timer),
            help="shorten this timer, give the shorter one a guard, or make it stay (`-> self`)",
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
        text = _source_text(t.guard)
        if value:
            message = f"guard `{text}` is always true"
            help_text = "drop the guard, or fix it to test what it was meant to"
        else:
            message = f"guard `{text}` is always false: {_describe(t)} can never fire"
            help_text = "remove the rule, or fix the guard"
        yield Diagnostic.make("W309", message, g.transition_span(t), help=help_text)
    yield from _constant_branch_guards(g)


def _constant_branch_guards(g: FlowGraph) -> Iterator[Diagnostic]:
    """W309 for the guards of `if` / `elif` actions, reported at the rule or the state that
    holds them (the IR keeps no position for an action)."""
    seen: set[tuple[int, int]] = set()
    for t in g.flow.transitions:
        for action in t.actions:
            if action.branches:
                break
        else:
            continue  # no `if` here (nearly every rule): not worth a generator
        if t.inherited:
            if (t.line, t.column) in seen:
                continue
            seen.add((t.line, t.column))
        for text, value in _branch_constants(t.actions):
            yield _branch_warning(text, value, g.transition_span(t))
    for state in g.flow.states:
        for text, value in _branch_constants((*state.entry, *state.exit, *state.initial_actions)):
            yield _branch_warning(text, value, g.state_span(state))


def _branch_constants(actions: tuple[Action, ...]) -> Iterator[tuple[str, bool]]:
    """(guard text, its constant value) of every constant `if` / `elif` guard, nested too."""
    stack = list(actions)
    while stack:
        action = stack.pop()
        for branch in action.branches:
            stack.extend(branch.actions)
            value = constant_guard(branch.guard)
            if value is not None and branch.guard is not None:
                yield _source_text(branch.guard), value


def _source_text(expr: Expr) -> str:
    # Imported here: the emitters' package loads Graphviz support, which a check without these
    # warnings (nearly every one) never needs.
    from flowc.compiler.emit.expr_text import expr_text

    return expr_text(expr)


def _branch_warning(text: str, value: bool, span: Span) -> Diagnostic:
    if value:
        message = f"the `if` guard `{text}` is always true"
        help_text = "drop the `if` and keep its actions, or fix the guard"
    else:
        message = f"the `if` guard `{text}` is always false: its actions never run"
        help_text = "remove the branch, or fix the guard"
    return Diagnostic.make("W309", message, span, help=help_text)


def trigger_text(t: Transition) -> str:
    # Imported here for the reason `_source_text` gives.
    from flowc.compiler.emit.labels import trigger_text as text

    return text(t)


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
