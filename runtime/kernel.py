"""The step kernel: what taking one transition does, worked out in one place.

A step, whatever its trigger (an event, `goto`, `back`, a due timer, the start), chooses a
transition and then takes it. Taking it is the same for every trigger and is described by a
`Plan`: the states left (innermost first), the action blocks to run in order (the exit actions
of the states left, the transition's own actions, the entry actions of the states entered),
the states entered (outermost first), and what happens to the timers (the timers of the states
left are cancelled, those of the states entered are armed, a `-> self` timer repeats).

Two things run plans and nothing else decides what a step does: `Instance._take`, the general
path, interprets a plan (and the plans of the routes of any choice states it passes through),
and the generated dispatch functions (codegen.py) write a plan's blocks and commit out as
Python. A change to what a step does is made here, once.

In a flat flow the active configuration is one state, the transition's source, so a plan
depends on the transition alone and is kept on it (`CTransition.plan`), worked out on first
use. A transition to its own source (`-> self`) is internal: nothing is left or entered and the
timers keep running.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from flowc.runtime.machine import CState, CTransition


class Step(NamedTuple):
    """One action block of a plan. The block is read from `owner` when it runs, not kept
    here: blocks are compiled on first use and replace their stub on the owner."""

    #: `exit`, `actions` or `entry`: where a fault in it is said to be
    phase: str
    owner: CState | CTransition
    #: the owner's attribute (and IR member) holding the block
    block: str
    #: the state `state.*` reads while the block runs
    state: CState


class Plan:
    """What taking one transition does (see the module's docstring)."""

    __slots__ = (
        "arm",
        "computed",
        "copies",
        "emits",
        "entries",
        "exits",
        "internal",
        "repeats",
        "steps",
        "target",
    )

    def __init__(self, t: CTransition) -> None:
        source, target = t.source, t.target
        assert target is not None, "a reject rule is never taken"
        self.target: CState = target
        #: `-> self`: nothing left or entered, the timers keep running (`-> self reenter` is
        #: external: the state is left and entered again)
        self.internal: bool = t.internal
        self.exits: tuple[CState, ...] = () if self.internal else (source,)
        self.entries: tuple[CState, ...] = () if self.internal else (target,)
        steps = [Step("exit", s, "exit", s) for s in self.exits if s.raw.get("exit")]
        if t.raw.get("actions"):
            steps.append(Step("actions", t, "actions", source))
        steps += [Step("entry", s, "entry", s) for s in self.entries if s.raw.get("entry")]
        self.steps: tuple[Step, ...] = tuple(steps)
        #: Some block may `emit` an effect: the step runs with a collector (runtime/outputs.py).
        self.emits: bool = any(_emits(s.owner.raw.get(s.block)) for s in steps)
        #: Whether the step needs a working copy of the context: some block runs, or routing
        #: (whose routes may run some) follows.
        self.copies: bool = bool(steps) or (not self.internal and target.choice)
        #: The timer rules armed at the commit (the timers of the states left are cancelled);
        #: empty for an internal step, which keeps the timers as they are.
        self.arm: tuple[CTransition, ...] = () if self.internal else target.timers
        #: An internal timer rule (`after D -> self`) is armed again when it fires.
        computed = t.kind == "timer" and t.after_ms is None
        self.repeats: bool = self.internal and t.kind == "timer" and (bool(t.after_ms) or computed)
        #: Some timer armed at the commit has a computed delay (`after EXPR UNIT`): it is
        #: evaluated against the committed context before the step commits.
        self.computed: bool = any(r.after_ms is None for r in self.arm) or (
            self.repeats and computed
        )


def _emits(actions: Any) -> bool:
    """Whether an action block (raw IR) holds an `emit`, also inside the arms of an `if`."""
    for a in actions or ():
        op = a.get("op")
        if op == "emit":
            return True
        if op == "if" and any(_emits(b.get("actions")) for b in a.get("branches") or ()):
            return True
    return False


def plan_of(t: CTransition) -> Plan:
    """The plan of taking `t` (worked out on first use, then kept on the transition)."""
    p = t.plan
    if p is None:
        p = t.plan = Plan(t)
    return p
