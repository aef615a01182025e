"""Lint handles a generated flow of 50,000 states with 3 transitions each."""

from __future__ import annotations

from flowc.compiler.lint import lint
from flowc.compiler.source import SourceFile
from flowc.runtime.model import CompiledFlow, EventDef, Expr, State, Transition


def big_flow(n: int) -> CompiledFlow:
    """A long pipeline with a guarded retry back one step and a `back` edge every 10 states."""
    states = [State(name=f"S{i}", initial=i == 0, line=i + 1) for i in range(n)]
    states.append(State(name="END", kind="final", line=n + 1))
    transitions: list[Transition] = []
    guard = Expr(op="<", args=(Expr(op="ctx", value="tries"), Expr(op="lit", value=3)))
    for i in range(n):
        nxt = f"S{i + 1}" if i + 1 < n else "END"
        line = i + 1
        transitions.append(
            Transition(
                index=len(transitions),
                source=f"S{i}",
                target=nxt,
                kind="event",
                event="next",
                line=line,
            )
        )
        transitions.append(
            Transition(
                index=len(transitions),
                source=f"S{i}",
                target=f"S{max(i - 1, 0)}",
                kind="event",
                event="retry",
                guard=guard,
                line=line,
            )
        )
        transitions.append(
            Transition(
                index=len(transitions),
                source=f"S{i}",
                target=f"S{(i // 10) * 10}",
                kind="direct",
                back=True,
                line=line,
            )
        )
    return CompiledFlow(
        name="big",
        states=tuple(states),
        transitions=tuple(transitions),
        events=(EventDef(name="next"), EventDef(name="retry")),
        initial="S0",
    )


def test_fifty_thousand_states_lint_without_findings_or_recursion_limits() -> None:
    # Speed is measured in bench/render.py; this checks that a flow this size is analysed at
    # all (no recursion-depth failures in deep pipelines) and that nothing is misreported.
    flow = big_flow(50_000)
    source = SourceFile("big.flow", "\n" * 50_001)
    assert [d.code for d in lint(flow, source)] == []
