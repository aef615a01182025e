"""Transition coverage: which rules of a flow (transitions, refusing `reject` rules, timers) the
tests took, and which none did. Every IR transition counts on its own, so a rule written outside
any state is covered state by state (each copy is a way out of a different state). Transitions
that lint proves can never fire (an earlier rule on the same trigger always wins, or a constant
false guard: `FlowGraph.dead`) are listed apart and left out of the percentage: no test could
take them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from flowc.compiler.emit.labels import trigger_text
from flowc.compiler.lint.graph import FlowGraph
from flowc.compiler.source import SourceFile
from flowc.compiler.sourcemap import SourceMap
from flowc.runtime.model import CompiledFlow, Transition

#: Coverage groups, as `flowc test --coverage` lists them.
GROUPS = ("transitions", "rejections", "timers")


def group_of(t: Transition) -> str:
    if t.kind == "reject":
        return "rejections"
    if t.kind == "timer":
        return "timers"
    return "transitions"


def describe(t: Transition) -> str:
    target = f"reject {t.code}" if t.kind == "reject" else f"-> {t.target}"
    inherited = " (rule outside any state)" if t.inherited else ""
    return f"{t.source}: {trigger_text(t)} {target}{inherited}".replace("  ", " ")


@dataclass
class Coverage:
    file: str
    flow: CompiledFlow
    fired: set[int]
    #: Indices of the transitions that can never fire.
    dead: set[int]
    #: How many times the tests emitted each effect, by name.
    emitted: dict[str, int] = field(default_factory=dict)

    def effects(self) -> dict[str, int]:
        """Each declared effect and how many times the tests emitted it (0: never)."""
        return {e.name: self.emitted.get(e.name, 0) for e in self.flow.effects}

    def live(self) -> list[Transition]:
        return [t for t in self.flow.transitions if t.index not in self.dead]

    def never_fire(self) -> list[Transition]:
        return [t for t in self.flow.transitions if t.index in self.dead]

    @property
    def total(self) -> int:
        return len(self.live())

    @property
    def covered(self) -> int:
        return sum(1 for t in self.live() if t.index in self.fired)

    @property
    def percent(self) -> float:
        return 100.0 if not self.total else 100.0 * self.covered / self.total

    def rules(self) -> dict[tuple[int, int], list[Transition]]:
        """The transitions of each source rule (a rule outside any state has one per state)."""
        out: dict[tuple[int, int], list[Transition]] = {}
        for t in self.flow.transitions:
            out.setdefault((t.line, t.column), []).append(t)
        return out

    @property
    def rules_covered(self) -> int:
        return sum(1 for ts in self.rules().values() if any(t.index in self.fired for t in ts))

    def rule_taken_elsewhere(self, t: Transition) -> bool:
        return any(o.index in self.fired for o in self.rules()[(t.line, t.column)])

    def uncovered(self) -> list[Transition]:
        return [t for t in self.live() if t.index not in self.fired]

    def to_dict(self) -> dict[str, Any]:
        groups: dict[str, dict[str, int]] = {g: {"total": 0, "covered": 0} for g in GROUPS}
        for t in self.live():
            g = groups[group_of(t)]
            g["total"] += 1
            g["covered"] += t.index in self.fired
        return {
            "file": self.file,
            "flow": self.flow.name,
            "total": self.total,
            "covered": self.covered,
            "percent": round(self.percent, 2),
            "rules": {"total": len(self.rules()), "covered": self.rules_covered},
            "groups": groups,
            "uncovered": [
                {
                    "index": t.index,
                    "group": group_of(t),
                    "kind": t.kind,
                    "source": t.source,
                    "target": t.target,
                    "event": t.event,
                    "code": t.code,
                    "inherited": t.inherited,
                    "line": t.line,
                    "column": t.column,
                    "rule": describe(t),
                    "rule_taken_elsewhere": self.rule_taken_elsewhere(t),
                }
                for t in self.uncovered()
            ],
            "effects": self.effects(),
            "never_fire": [
                {"index": t.index, "line": t.line, "column": t.column, "rule": describe(t)}
                for t in self.never_fire()
            ],
        }


def coverage_of(
    file: str,
    flow: CompiledFlow,
    fired: Iterable[int],
    emitted: Mapping[str, int] | None = None,
) -> Coverage:
    graph = FlowGraph(flow, SourceFile(file, ""), SourceMap.from_ir(flow))
    return Coverage(file, flow, set(fired), graph.dead, dict(emitted or {}))
