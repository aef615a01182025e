"""The moves a test (or `flowc paths` / `flowc explore`) makes on a real runtime instance, and
which transitions of the IR each accepted or refused move took.

A move goes through the public `Instance` API (`send`, `goto`, `back`, `advance` on a fake
clock). The runtime reports the states a step left and entered, not the rule it took; the rule is
found again here the way the runtime picks it (the first candidate, in index order, whose guard
holds on the context before the step), reading the machine's compiled dispatch tables.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from flowc.compiler.emit.expr_text import literal_text
from flowc.compiler.emit.labels import duration_text
from flowc.runtime import FakeClock, Instance, Machine, Rejection, StepResult
from flowc.runtime.expr import ExprCompiler
from flowc.runtime.model import CompiledFlow

MoveKind = Literal["send", "goto", "back", "advance"]


@dataclass(frozen=True)
class Move:
    kind: MoveKind
    #: the event (send), the target state (goto); "" otherwise
    name: str = ""
    #: (field, value, its `.flow` text) for each payload field given
    payload: tuple[tuple[str, Any, str], ...] = ()
    #: milliseconds the clock moves (advance)
    ms: int = 0
    #: goto along a backward edge
    force: bool = False

    def text(self) -> str:
        """The move as a test step."""
        if self.kind == "send":
            if not self.payload:
                return f"send {self.name}"
            args = ", ".join(f"{k}: {text or literal_text(v)}" for k, v, text in self.payload)
            return f"send {self.name}({args})"
        if self.kind == "goto":
            return f"goto {self.name}" + (" force" if self.force else "")
        if self.kind == "back":
            return "back"
        return f"advance {duration_text(self.ms)}"


@dataclass
class MoveResult:
    """What one move did: the outcomes (one per fired timer for `advance`) and the indices of
    the IR transitions it took (refusing `reject` rules included)."""

    outcomes: list[StepResult | Rejection]
    fired: list[int] = field(default_factory=list)

    @property
    def rejection(self) -> Rejection | None:
        for outcome in self.outcomes:
            if isinstance(outcome, Rejection):
                return outcome
        return None


class Player:
    """Plays moves on instances of one machine (with a fake clock per instance)."""

    def __init__(self, flow: CompiledFlow) -> None:
        self.flow = flow
        self.machine = Machine(flow).preload()
        self._compiler = ExprCompiler()
        self.invariants = [
            (inv.name, self._compiler.compile(inv.expr.model_dump(mode="json")))
            for inv in flow.invariants
        ]

    def start(self, context: Mapping[str, Any]) -> Instance | Rejection:
        return self.machine.try_start(context, clock=FakeClock())

    def evaluate(self, expr: Mapping[str, Any], instance: Instance) -> Any:
        state = self.machine.states[instance.state]
        return self._compiler.compile(expr)(instance.context, None, state)

    def broken_invariants(self, instance: Instance) -> list[str]:
        """Names of the invariants that do not hold now (one that cannot be evaluated, such as
        a division by zero, does not hold either)."""
        state = self.machine.states[instance.state]
        context = instance.context
        broken = []
        for name, check in self.invariants:
            try:
                held = check(context, None, state) is True
            except Exception:
                held = False
            if not held:
                broken.append(name)
        return broken

    def play(self, instance: Instance, move: Move) -> MoveResult:
        if self.machine.chart:
            return self._play_chart(instance, move)
        st = self.machine.states[instance.state]
        before = instance.context
        if move.kind == "send":
            payload = {k: v for k, v, _ in move.payload}
            outcome = instance.send(move.name, payload)
            fired = self._sent(st, before, move.name, payload, outcome)
            return MoveResult([outcome], fired)
        if move.kind == "goto":
            outcome = instance.goto(move.name, force=move.force)
            fired = []
            if isinstance(outcome, StepResult):
                edges = st.direct.get(move.name, ())
                fired = self._first(edges, before, None, st, no_back=not move.force)
                fired += self._routes(outcome)
            return MoveResult([outcome], fired)
        if move.kind == "back":
            outcome = instance.back(force=True)
            fired = []
            if isinstance(outcome, StepResult):
                landed = outcome.via[0] if outcome.via else outcome.to
                for t in st.back_edges:
                    if t.target is not None and t.target.name == landed:
                        fired = [t.index]
                        break
                fired += self._routes(outcome)
            return MoveResult([outcome], fired)
        clock = instance.clock
        assert isinstance(clock, FakeClock)
        clock.advance(move.ms / 1000.0)
        outcomes = instance.advance()
        fired = []
        for outcome in outcomes:
            if isinstance(outcome, StepResult) and outcome.source is not None:
                source = self.machine.states[outcome.source]
                landed = outcome.via[0] if outcome.via else outcome.to
                for t in source.timers:
                    if t.target is not None and t.target.name == landed:
                        fired.append(t.index)
                        break
                fired += self._routes(outcome)
        return MoveResult(list(outcomes), fired)

    def _play_chart(self, instance: Instance, move: Move) -> MoveResult:
        """A move on a statechart, whose steps say which rules they took (`rules_taken`)."""
        if move.kind == "send":
            outcomes: list[StepResult | Rejection] = [
                instance.send(move.name, {k: v for k, v, _ in move.payload})
            ]
        elif move.kind == "goto":
            outcomes = [instance.goto(move.name, force=move.force)]
        elif move.kind == "back":
            outcomes = [instance.back(force=True)]
        else:
            clock = instance.clock
            assert isinstance(clock, FakeClock)
            clock.advance(move.ms / 1000.0)
            outcomes = list(instance.advance())
        fired: list[int] = []
        for outcome in outcomes:
            if isinstance(outcome, StepResult):
                fired += outcome.rules_taken or ()
            elif outcome.kind == "reject" and move.kind == "send":
                # A `reject` rule is taken without a step: the first rule enabled, leaf by
                # active leaf in document order (the kernel's selection), that is a `reject`.
                payload = {k: v for k, v, _ in move.payload}
                context = instance.context
                for name in instance.configuration:
                    leaf = self.machine.states[name]
                    if leaf.atomic:
                        taken = self._sent(leaf, context, move.name, payload, outcome)
                        if taken and self.flow.transitions[taken[0]].kind == "reject":
                            fired += taken
                            break
        return MoveResult(outcomes, fired)

    def _sent(
        self,
        st: Any,
        before: dict[str, Any],
        event: str,
        payload: dict[str, Any],
        outcome: StepResult | Rejection,
    ) -> list[int]:
        if isinstance(outcome, Rejection) and outcome.kind != "reject":
            return []
        found = st.on.get(event)
        if found is None:
            return []
        ev, candidates = found
        try:
            p = ev.check(payload) if payload else (ev.empty or ev.check({}))
        except Exception:
            return []
        fired = self._first(candidates, before, p, st, no_back=False)
        if isinstance(outcome, StepResult):
            fired += self._routes(outcome)
        return fired

    @staticmethod
    def _first(
        candidates: Any, context: dict[str, Any], payload: Any, st: Any, *, no_back: bool
    ) -> list[int]:
        for t in candidates:
            if no_back and t.back:
                continue
            try:
                if t.guard is None or t.guard(context, payload, st):
                    return [t.index]
            except Exception:
                return []
        return []

    def start_routes(self, instance: Instance) -> list[int]:
        """The routing rules a new instance took out of an initial choice state; in a
        statechart, every rule its start took."""
        if self.machine.chart:
            return list(instance.start_rules_taken or ())
        start = instance.history[0]
        return self._route_chain(start.via, start.target, instance.context)

    def _routes(self, step: StepResult) -> list[int]:
        return self._route_chain(step.via, step.to, step.context)

    def _route_chain(self, via: tuple[str, ...], to: str, context: dict[str, Any]) -> list[int]:
        """The routing rules of the choice states a step went through (`via`). Each is found
        by its target; when several routes of one choice state lead to the same next state,
        the first whose guard holds on the context after the step is counted."""
        if not via:
            return []
        chain = [*via, to]
        fired = []
        for node_name, nxt in itertools.pairwise(chain):
            node = self.machine.states[node_name]
            routes = [t for t in node.routes if t.target is not None and t.target.name == nxt]
            if len(routes) > 1:
                chosen = self._first(routes, context, None, node, no_back=False)
                fired.extend(chosen or [routes[0].index])
            elif routes:
                fired.append(routes[0].index)
        return fired


def context_key(context: Mapping[str, Any]) -> str:
    """A configuration's context, as a stable dictionary key."""
    return json.dumps(context, sort_keys=True, separators=(",", ":"), default=repr)
