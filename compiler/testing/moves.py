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
from flowc.compiler.testblocks import black_box_invoke
from flowc.runtime import FakeClock, Instance, Machine, Rejection, StepResult
from flowc.runtime import rejections as R
from flowc.runtime.children import end_invoke
from flowc.runtime.expr import LOCAL_PREFIX, ExprCompiler
from flowc.runtime.model import CompiledFlow
from flowc.runtime.steps import Outcome

#: `end_invoke`: the children of an invoke finish or fail (`name`: the invoke's done or error
#: event, `payload`: that event's), the child flow a black box; written `send done.invoke.ID`.
MoveKind = Literal["send", "goto", "back", "advance", "end_invoke"]


@dataclass(frozen=True)
class Move:
    kind: MoveKind
    #: the event (send, end_invoke), the target state (goto); "" otherwise
    name: str = ""
    #: (field, value, its `.flow` text) for each payload field given
    payload: tuple[tuple[str, Any, str], ...] = ()
    #: milliseconds the clock moves (advance)
    ms: int = 0
    #: goto along a backward edge
    force: bool = False
    #: send: the path of the child it goes to (`Instance.child`); "" for the instance itself
    child: str = ""

    def text(self) -> str:
        """The move as a test step."""
        if self.kind in ("send", "end_invoke"):
            to = f" to {json.dumps(self.child, ensure_ascii=False)}" if self.child else ""
            if not self.payload:
                return f"send {self.name}{to}"
            args = ", ".join(f"{k}: {text or literal_text(v)}" for k, v, text in self.payload)
            return f"send {self.name}({args}){to}"
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

    def evaluate(
        self, expr: Mapping[str, Any], instance: Instance, local: Mapping[str, Any] | None = None
    ) -> Any:
        """`expr` on the instance's context, with `local` names (read by `local` nodes)."""
        state = self.machine.states[instance.state]
        context = instance.context
        if local:
            context = {**context, **{LOCAL_PREFIX + k: v for k, v in local.items()}}
        return self._compiler.compile(expr)(context, None, state)

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
        if move.kind in ("send", "end_invoke"):
            outcomes: list[StepResult | Rejection] = [send(instance, move)]
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
                # (a child's own rules are its flow's, not this one's: its `then` holds the
                # root's steps that followed, the messages the root took among them)
                fired += (outcome.rules_taken or ()) if not move.child else ()
                for later in outcome.then:
                    fired += later.rules_taken or ()
            elif outcome.rule is not None and not move.child:
                fired.append(outcome.rule)
        return MoveResult(outcomes, fired)

    def start_routes(self, instance: Instance) -> list[int]:
        """The rules a new instance's start took: a flat flow's routes out of an initial
        choice state, a statechart's eventless rules and completion events."""
        return list(instance.start_rules_taken or ())


def send(instance: Instance, move: Move) -> Outcome:
    """A `send` or `end_invoke` move: the event to the instance or to its child at
    `move.child`; for `end_invoke` (an invoke's done or error event, `done.invoke.ID`,
    `error.invoke.ID`) the target's current children of ID finish or fail with it
    (`end_invoke`: the child flow a black box). A missing child (or no current children of
    ID) is an `unknown_child` refusal, as a durable store gives one."""
    payload = {k: v for k, v, _ in move.payload}
    target = instance
    if move.child:
        try:
            target = instance.child(move.child)
        except KeyError:
            return no_child(instance, move.child, move.name)
    ended = black_box_invoke(move.name) if move.kind == "end_invoke" else None
    if ended is not None:
        out = end_invoke(target, ended[0], payload, ended[1])
        return out if out is not None else no_child(target, ended[0], move.name)
    return target.send(move.name, payload)


def no_child(instance: Instance, path: str, event: str | None) -> Rejection:
    """The refusal of a step for a child the instance does not have."""
    m = instance.machine
    state = m.states[instance.state]
    return m.rejection(R.UNKNOWN_CHILD, state, event, None, instance.context, {"child": path})


def context_key(context: Mapping[str, Any]) -> str:
    """A configuration's context, as a stable dictionary key."""
    return json.dumps(context, sort_keys=True, separators=(",", ":"), default=repr)


def root_steps(step: StepResult) -> list[StepResult]:
    """A step and the steps of the same instance that followed it in the call (the messages
    its children sent it: `StepResult.then` without the children's own steps, whose effects
    are their flows')."""
    return [step, *(x for x in step.then if x.kind != "child")]
