"""Transition coverage: which rules of a flow (transitions, refusing `reject` rules, timers) the
tests took, and which none did. Each written rule counts once per state it applies in: a rule
written outside any state is covered state by state (each copy is a way out of a different
state), while `on a, b, c ...`, one IR transition per event, is one rule, taken when any of its
events took it. Transitions
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


#: One written rule in one state: the IR transitions of `on a, b, c ...` (one per event) in
#: that state. Coverage counts these, so such a rule is reported once.
RuleKey = tuple[int, int, str]


def rule_in_state(t: Transition) -> RuleKey:
    """The key of `t`'s rule in its state; a transition without a source position (written
    by a tool) is a rule of its own."""
    if t.line:
        return (t.line, t.column, t.source)
    return (-t.index - 1, 0, t.source)


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

    def units(self) -> dict[RuleKey, list[Transition]]:
        """The transitions of each rule in each state, in IR order: what coverage counts. A
        rule for several events is one unit per state; a rule outside any state one per state
        it is copied into (each is a way out of a different state)."""
        out: dict[RuleKey, list[Transition]] = {}
        for t in self.flow.transitions:
            out.setdefault(rule_in_state(t), []).append(t)
        return out

    def _taken(self, ts: list[Transition]) -> bool:
        return any(t.index in self.fired for t in ts)

    def live(self) -> list[Transition]:
        """The first transition of each unit that can fire (some of its transitions can)."""
        return [ts[0] for ts in self.units().values() if any(t.index not in self.dead for t in ts)]

    def never_fire(self) -> list[Transition]:
        return [ts[0] for ts in self.units().values() if all(t.index in self.dead for t in ts)]

    @property
    def total(self) -> int:
        return len(self.live())

    @property
    def covered(self) -> int:
        units = self.units()
        return sum(1 for t in self.live() if self._taken(units[rule_in_state(t)]))

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
        return sum(1 for ts in self.rules().values() if self._taken(ts))

    def rule_taken_elsewhere(self, t: Transition) -> bool:
        """Whether `t`'s rule was taken in another state (a rule outside any state, copied)."""
        return any(
            o.index in self.fired and o.source != t.source for o in self.rules()[(t.line, t.column)]
        )

    def uncovered(self) -> list[Transition]:
        units = self.units()
        return [t for t in self.live() if not self._taken(units[rule_in_state(t)])]

    def events(self, t: Transition) -> list[str]:
        """The events of `t`'s rule in its state (`on a, b, c`: all three)."""
        return [o.event for o in self.units()[rule_in_state(t)] if o.event is not None]

    def describe(self, t: Transition) -> str:
        """`t`'s rule as the report names it: once, with every event it is written for."""
        events = self.events(t)
        if len(events) < 2:
            return describe(t)
        return describe(t.model_copy(update={"event": ", ".join(events)}))

    def to_dict(self) -> dict[str, Any]:
        groups: dict[str, dict[str, int]] = {g: {"total": 0, "covered": 0} for g in GROUPS}
        units = self.units()
        for t in self.live():
            g = groups[group_of(t)]
            g["total"] += 1
            g["covered"] += self._taken(units[rule_in_state(t)])
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
                    "events": self.events(t),
                    "code": t.code,
                    "inherited": t.inherited,
                    "line": t.line,
                    "column": t.column,
                    "rule": self.describe(t),
                    "rule_taken_elsewhere": self.rule_taken_elsewhere(t),
                }
                for t in self.uncovered()
            ],
            "effects": self.effects(),
            "never_fire": [
                {"index": t.index, "line": t.line, "column": t.column, "rule": self.describe(t)}
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
