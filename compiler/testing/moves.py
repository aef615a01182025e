"""The moves a test (or `flowc paths` / `flowc explore`) makes on a real runtime instance, and
which transitions of the IR each accepted or refused move took.

A move goes through the public `Instance` API (`send`, `goto`, `back`, `advance` on a fake
clock). Which rules it took is what the runtime reports (`StepResult.rules_taken`,
`Rejection.rule`): nothing is chosen again here, so coverage counts what the engine did.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from flowc.compiler.emit.expr_text import duration_text, literal_text
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
        """Make `move`; the rules it took are what the runtime says it took: each step's
        `rules_taken`, and the `reject` rule of a refusal (`Rejection.rule`)."""
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
            clock.ms += move.ms
            outcomes = list(instance.advance())
        fired: list[int] = []
        for outcome in outcomes:
            if isinstance(outcome, StepResult):
                fired += outcome.rules_taken or ()
            elif outcome.rule is not None:
                fired.append(outcome.rule)
        return MoveResult(outcomes, fired)

    def start_routes(self, instance: Instance) -> list[int]:
        """The rules a new instance's start took: a flat flow's routes out of an initial
        choice state, a statechart's eventless rules and completion events."""
        return list(instance.start_rules_taken or ())


def context_key(context: Mapping[str, Any]) -> str:
    """A configuration's context, as a stable dictionary key."""
    return json.dumps(context, sort_keys=True, separators=(",", ":"), default=repr)
