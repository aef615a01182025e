"""`if / elif / else` and `emit` at run time, on both dispatch paths (the general path and the
generated functions), and effects: returned with the step, given to subscribers after the
commit, never for a refused step."""

from __future__ import annotations

import json
from typing import Any

import pytest

from flowc.compiler import compile_source
from flowc.runtime import FakeClock, IRLoadError, Machine, Rejection, StepResult

from .conftest import frozen

FLOW = """
flow lamp_control
event press(n: int)
event reset
event boom(d: int)
effect lamp(lit: bool, level: int = 1)
effect beep
context { x: int = 0, log: list[str] = [] }

initial state Off {
  entry do emit lamp(lit: false, level: 0)
  on press -> On do
    x = event.n;
    if event.n > 2 { emit lamp(lit: true, level: event.n); append(log, "bright") }
    elif event.n > 1 { append(log, "dim"); if x == 2 { emit beep } }
    else { append(log, "low") }
  on boom -> On do emit beep; x = 10 % event.d
}

state On {
  on reset -> Off do if x > 0 { x = 0 }
  on press if event.n < 0 -> On do x = event.n
}
"""


def machine(hot_after: int, clock: FakeClock | None = None) -> Machine:
    m = Machine.from_source(FLOW, "lamp.flow", clock=clock).preload()
    m.hot_after = hot_after
    return m


PATHS = pytest.mark.parametrize("hot_after", [0, 1000], ids=["generated", "general"])


def step(outcome: Any) -> StepResult:
    assert isinstance(outcome, StepResult), outcome
    return outcome


@PATHS
@pytest.mark.parametrize(
    ("n", "log", "effects"),
    [
        (3, ["bright"], [{"effect": "lamp", "payload": {"lit": True, "level": 3}}]),
        (2, ["dim"], [{"effect": "beep", "payload": {}}]),
        (1, ["low"], []),
    ],
)
def test_the_first_arm_whose_guard_holds_runs(
    hot_after: int, n: int, log: list[str], effects: list[dict[str, Any]]
) -> None:
    m = machine(hot_after)
    for _ in range(3):  # past the warm-up, when the pair's function is generated
        i = m.start()
        r = step(i.send("press", {"n": n}))
        assert r.context["log"] == log
        assert r.effects == effects
        assert r.to_dict().get("effects", []) == effects


@PATHS
def test_an_if_with_no_arm_taken_changes_nothing(hot_after: int) -> None:
    m = machine(hot_after)
    i = m.start()
    step(i.send("press", {"n": -5}))
    for _ in range(3):
        r = step(i.send("press", {"n": -1}))
        assert r.context["x"] == -1
    r = step(i.send("reset"))  # `if x > 0` does not hold: no arm, x stays
    assert r.context["x"] == -1 and r.effects[0]["effect"] == "lamp"  # Off's entry emits


def test_the_start_keeps_the_effects_of_the_initial_entry() -> None:
    i = machine(0).start()
    assert i.start_effects == [{"effect": "lamp", "payload": {"lit": False, "level": 0}}]
    assert machine(0).restore(i.snapshot()).start_effects == []


@PATHS
def test_subscribers_get_the_effects_after_the_commit(hot_after: int) -> None:
    m = machine(hot_after)
    i = m.start()
    seen: list[tuple[str, int, list[dict[str, Any]]]] = []
    i.subscribe(lambda r: seen.append((i.state, i.seq, r.effects)))
    for _ in range(3):
        step(i.send("press", {"n": 3}))
        step(i.send("reset"))
    assert seen[0] == ("On", 1, [{"effect": "lamp", "payload": {"lit": True, "level": 3}}])
    assert seen[1] == ("Off", 2, [{"effect": "lamp", "payload": {"lit": False, "level": 0}}])
    assert len(seen) == 6


@PATHS
def test_a_refused_step_delivers_no_effect(hot_after: int) -> None:
    """`boom` emits, then divides by zero: the step is refused, the effect never leaves."""
    m = machine(hot_after)
    i = m.start()
    seen: list[StepResult] = []
    i.subscribe(seen.append)
    for _ in range(3):
        before = frozen(i)
        refused = i.send("boom", {"d": 0})
        assert isinstance(refused, Rejection) and refused.kind == "expression_error"
        assert frozen(i) == before
    assert seen == []
    r = step(i.send("boom", {"d": 2}))
    assert r.effects == [{"effect": "beep", "payload": {}}] and seen == [r]


def test_effects_are_copies_the_host_may_change() -> None:
    r = step(machine(0).start().send("press", {"n": 3}))
    r.effects[0]["payload"]["level"] = 99
    assert r.effects[0]["payload"]["level"] == 3


def test_a_replayed_step_carries_no_effects() -> None:
    i = machine(0).start()
    first = step(i.send("press", {"n": 3}, key="k"))
    again = step(i.send("press", {"n": 3}, key="k"))
    assert first.effects and again.replayed and again.effects == []


def test_a_flow_without_effects_never_collects() -> None:
    m = Machine.from_source(
        "flow f\nevent go\ncontext { x: int = 0 }\n"
        "initial state A { on go -> A do if x > 0 { x = 0 } }\n"
    )
    assert not m.emits
    r = step(m.start().send("go"))
    assert r.effects == [] and "effects" not in r.to_dict()


@pytest.mark.parametrize("declared", [["lamp"], []], ids=["another", "none"])
def test_an_emit_of_an_undeclared_effect_is_refused(declared: list[str]) -> None:
    # The compiler never writes one; a hand-edited IR gets a load error, on first use or by
    # `preload()`, not an effect no host declared (and a flow with no effects at all, whose
    # steps then collect nothing, cannot emit one on the quiet).
    raw = compile_source(FLOW, "lamp.flow").flow.model_dump(mode="json")  # type: ignore[union-attr]
    raw["effects"] = [e for e in raw["effects"] if e["name"] in declared]
    for s in raw["states"]:
        s.pop("entry", None)  # Off's entry emits `lamp` at the start
    text = json.dumps(raw)
    inst = Machine.from_json(text, verify_hash=False).start()
    with pytest.raises(IRLoadError, match="undeclared effect 'beep'"):
        inst.send("boom", {"d": 1})
    assert inst.state == "Off" and inst.seq == 0 and inst.get("x") == 0
    with pytest.raises(IRLoadError, match="names undeclared effect"):
        Machine.from_json(text, verify_hash=False).preload()


COUNTER = """
flow counter
event hit(n: int)
context { small: int = 0, big: int = 0, rest: int = 0, seen: list[int] = [] }
initial state A {
  on hit -> A do
    append(seen, event.n);
    if event.n > 10 { big += 1 } elif event.n > 5 { small += 1; if event.n == 6 { rest -= 1 } }
    else { rest += 1 }
}
"""


def test_the_generated_dispatch_runs_if_as_the_general_path_does() -> None:
    contexts = []
    for hot_after in (0, 1000):
        m = Machine.from_source(COUNTER, "counter.flow").preload()
        m.hot_after = hot_after
        i = m.start()
        for n in (1, 6, 7, 11, 3, 12, 6):
            step(i.send("hit", {"n": n}))
        assert (("A", "hit") in m._written) == (hot_after == 0)
        contexts.append(i.context)
    assert contexts[0] == contexts[1]
    assert contexts[0] == {"small": 3, "big": 2, "rest": 0, "seen": [1, 6, 7, 11, 3, 12, 6]}
