"""Generated dispatch for statecharts whose configuration is always one leaf and its ancestors
(engine.py's `leaf_chart` and `chart_plan`): twin machines, one generating each (leaf, event)
pair's function on its first send, one held to the engine's general path
(`Macrostep`), driven through the same random operations (sends, the clock moving, `goto`,
`back`) agree on every outcome, state, configuration, context, history, journal, effects,
timers and snapshot."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from flowc.runtime import FakeClock, Instance, Machine
from flowc.runtime.codegen import general
from flowc.runtime.engine import chart_plan

from .conftest import machine
from .test_chart_twins import step

ROOT = Path(__file__).resolve().parents[2]

#: Three levels of compound states: entry and exit actions and timers at each, rules written
#: on compound states (inherited, tried after the leaf's own), `reenter` of a leaf, of a
#: compound and of an ancestor, guards, a `reject` rule, a `back` rule, internal `-> self`
#: rules on a compound, moves across branches and up and down the tree.
NEST = """
flow nest

context {
  log: list[str] = []
  n: int = 0
}

event poke(k: int = 1)
event go
event dive
event up
event bump(k: int)
event retreat
event stop

initial state Idle {
  entry do append(log, "in Idle")
  exit do append(log, "out Idle")
  on go -> Outer do append(log, "go")
  on poke -> self do n += event.k
}

state Outer {
  entry do append(log, "in Outer")
  exit do append(log, "out Outer")
  after 5s -> Idle do append(log, "outer timeout")
  on bump if event.k > 100 reject too_big "too big: {{ event.k }}"
  on bump -> self do n += event.k
  on up -> Idle
  on stop if n > 3 and state.name == "Outer" -> Done
  initial state Mid {
    entry do append(log, "in Mid")
    exit do append(log, "out Mid")
    after 2s -> Mid reenter do append(log, "mid tick")
    on poke if event.k > 2 -> Mid reenter do n += 1
    initial state Leaf1 {
      entry do append(log, "in Leaf1")
      exit do append(log, "out Leaf1")
      on dive -> Leaf2
      on poke if event.k == 1 -> self reenter do n += 10
      after 1s -> Leaf2
    }
    state Leaf2 {
      entry do append(log, "in Leaf2")
      on dive if n < 50 -> Inner do append(log, "to inner")
      on retreat -> Leaf1 back
      on poke if event.k == 2 -> Outer reenter
    }
  }
  state Other {
    entry do append(log, "in Other")
    exit do append(log, "out Other")
    after 3s -> Mid
    initial state Inner {
      entry do append(log, "in Inner")
      on dive -> Leaf1
      on poke -> Other
      on bump if event.k == 7 -> Idle
    }
  }
}

final state Done

journal moves \"\"\"{{ source }} -> {{ target }} n={{ context.n }} via {{ via }}\"\"\"
"""

NEST_OPS: list[tuple[Any, ...]] = [
    ("go", None),
    ("dive", None),
    ("up", None),
    ("stop", None),
    ("retreat", None),
    ("retreat", None, True),  # forced: `back`
    ("poke", None),
    ("poke", {"k": 2}),
    ("poke", {"k": 3}),
    ("poke", {"k": "x"}),  # invalid payload
    ("bump", {"k": 1}),
    ("bump", {"k": 7}),
    ("bump", {"k": 500}),  # rejected by a rule
    ("bump", None),
    ("nope", None),
    ("done.state.Outer", None),  # the runtime's own event: never a host's
    ("@advance", 0.5),
    ("@advance", 1.0),
    ("@advance", 2.5),
    ("@goto", "Leaf2"),
    ("@back", True),
    ("@restore", None),
]


def _skill_ops() -> list[tuple[Any, ...]]:
    m = Machine.from_file(ROOT / "flows" / "collab_skills.flow")
    skills = sorted(
        {s.raw["meta"]["skill"] for s in m.states.values() if "skill" in s.raw.get("meta", {})}
    )
    items = [
        {"number": 1, "type": "code"},
        {"number": 2, "type": "task"},
        {"number": 3, "type": "bugfix"},
    ]
    return [
        *(("complete_skill", {"skill": s}) for s in skills),
        ("complete_skill", {"skill": "nobody"}),
        ("set_work_items", {"items": items}),
        ("set_work_items", {"items": items[2:]}),
        ("set_work_items", {"items": []}),
        ("update_session_state", {"batches": [{"id": "b1"}, {"id": "b2"}]}),
        ("update_session_state", {"has_snapshot": True, "completed_tasks": ["t"]}),
        ("update_session_state", {"has_snapshot": 3}),
        ("@restore", None),
    ]


SEED_OPS = _skill_ops()


def twins(raw: dict[str, Any]) -> tuple[Machine, Machine]:
    """The same statechart twice: generated dispatch from the first send, and the general
    path only."""
    fast = Machine(raw, clock=FakeClock()).preload()
    fast.hot_after = 0
    slow = Machine(raw, clock=FakeClock()).preload()
    slow._dispatch = lambda state, event: general(event)  # type: ignore[method-assign]
    assert fast.leaf_chart and slow.leaf_chart
    return fast, slow


def seen(inst: Instance) -> dict[str, Any]:
    """Everything observable about an instance."""
    snap = inst.snapshot()
    snap.pop("id", None)
    return {
        "snapshot": json.dumps(snap, sort_keys=True, default=repr),
        "state": inst.state,
        "configuration": inst.configuration,
        "context": inst.context,
        "history": [h.to_dict() for h in inst.history],
        "timers": inst.timers,
        "seq": inst.seq,
    }


def told(o: Any) -> Any:
    d = json.dumps(o.to_dict(), sort_keys=True, default=repr)
    if not o.ok:
        return d
    return (d, o.configuration, o.rules_taken, o.effects, o.journals())


def run_twins(fast_m: Machine, slow_m: Machine, ops: list[tuple[Any, ...]], ctx: Any) -> None:
    fast = fast_m.start(ctx, clock=FakeClock())
    slow = slow_m.start(ctx, clock=FakeClock())
    assert seen(fast) == seen(slow)
    for op in ops:
        if op[0] == "@restore":  # from the snapshot: the configuration as a snapshot keeps it
            fast = fast_m.restore(fast.snapshot(), clock=fast.clock)
            slow = slow_m.restore(slow.snapshot(), clock=slow.clock)
            assert seen(fast) == seen(slow)
            continue
        before = seen(fast)
        a, b = step(fast, op), step(slow, op)
        assert [told(x) for x in a] == [told(x) for x in b], op
        assert seen(fast) == seen(slow), op
        if len(a) == 1 and not a[0].ok:
            assert seen(fast) == before, op


NEST_M = twins(dict(machine(NEST).raw))
SEED_M = twins(dict(Machine.from_file(ROOT / "flows" / "collab_skills.flow").raw))
SEED_CTX = {"project": "/p", "session": "s"}


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(NEST_OPS), max_size=25))
@example([("go", None), ("poke", None), ("stop", None)])  # an inherited rule reading `state`
@example(
    [
        ("go", None),
        ("dive", None),
        ("poke", {"k": 2}),
        ("@advance", 1.0),
        ("dive", None),
        ("bump", {"k": 500}),
        ("dive", None),
        ("poke", {"k": 3}),
        ("@advance", 2.5),
        ("bump", {"k": 7}),
    ]
)
def test_a_nested_chart_agrees_with_the_general_path(ops: list[tuple[Any, ...]]) -> None:
    run_twins(*NEST_M, ops, None)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(SEED_OPS), max_size=30))
@example(
    [
        ("set_work_items", {"items": [{"number": 1, "type": "code"}]}),
        *(
            ("complete_skill", {"skill": s})
            for s in (
                "collab-start",
                "gather-session-goals",
                "collab-clear",
                "brainstorming-exploring",
                "collab-clear",
                "brainstorming-clarifying",
                "collab-clear",
                "brainstorming-designing",
                "collab-clear",
                "brainstorming-validating",
            )
        ),
        ("update_session_state", {"has_snapshot": True}),
    ]
)
def test_seed_002_agrees_with_the_general_path(ops: list[tuple[Any, ...]]) -> None:
    run_twins(*SEED_M, ops, SEED_CTX)


def test_the_nested_chart_takes_generated_steps() -> None:
    """The twins above compare generated steps, not two general paths: the leaves' pairs
    have functions, and they commit the configuration, timers and rules taken themselves."""
    fast_m = Machine(NEST_M[0].raw, clock=FakeClock()).preload()
    fast_m.hot_after = 0
    inst = fast_m.start(clock=FakeClock())
    t0 = inst.clock()
    slow_calls: list[str] = []
    original = Instance._send_slow

    def spy(self: Instance, event: str, *args: Any, **kw: Any) -> Any:
        slow_calls.append(event)
        return original(self, event, *args, **kw)

    Instance._send_slow = spy  # type: ignore[method-assign]
    try:
        for event, payload in [("go", None), ("dive", None), ("dive", None), ("poke", None)]:
            assert inst.send(event, payload).ok
    finally:
        Instance._send_slow = original  # type: ignore[method-assign]
    assert slow_calls == []
    assert ("Leaf2", "dive") in fast_m._written and ("Inner", "poke") in fast_m._written
    assert inst.configuration == ("Outer", "Other", "Inner")
    # Other's timer restarted when it was re-entered; Outer's kept running.
    assert [(t["target"], t["due"].timestamp() - t0) for t in inst.timers] == [
        ("Mid", 3.0),
        ("Idle", 5.0),
    ]
    assert inst.context["log"][-7:] == [
        "out Mid",
        "to inner",
        "in Other",
        "in Inner",
        "out Other",
        "in Other",
        "in Inner",
    ]


def test_a_chart_plan_leaves_and_enters_the_chain() -> None:
    m = NEST_M[0]
    leaf2, leaf1 = m.states["Leaf2"], m.states["Leaf1"]
    to_inner = next(t for t in leaf2.on["dive"][1])
    plan = chart_plan(leaf2, to_inner)
    assert [s.name for s in plan.exits] == ["Leaf2", "Mid"]
    assert [s.name for s in plan.entries] == ["Other", "Inner"]
    assert {t.source.name for t in plan.arm} == {"Other"}
    reenter_mid = next(t for t in leaf1.on["poke"][1] if t.source.name == "Mid")
    plan = chart_plan(leaf1, reenter_mid)
    assert [s.name for s in plan.exits] == ["Leaf1", "Mid"]
    assert [s.name for s in plan.entries] == ["Mid", "Leaf1"] and plan.leaf is leaf1
    assert [s.phase for s in plan.steps] == ["exit", "exit", "actions", "entry", "entry"]


@pytest.mark.parametrize(
    ("source", "why"),
    [
        ("state B { initial state C { } final state D { } }", "a final child raises done.state"),
        ("parallel state B { state C { } state D { } }", "parallel"),
        ("state B { initial state C { } history H }", "history"),
        ("state B { initial state C { always if n > 1 -> D } state D { } }", "always"),
        ("state B { initial state C { on e if active(C) -> D } state D { } }", "active()"),
        (
            'state B { initial state C { on e if event_name() == "e" -> D } state D { } }',
            "event_name()",
        ),
        ("state B { initial state C { on e -> D do raise e } state D { } }", "raise"),
    ],
)
def test_which_charts_get_generated_steps(source: str, why: str) -> None:
    flow = f"flow f\ncontext {{ n: int = 0 }}\nevent e\ninitial state A {{ on e -> B }}\n{source}\n"
    m = machine(flow)
    assert m.chart and not m.leaf_chart, why
    m.hot_after = 0
    a = m.states["A"]
    assert m._dispatch(a, "e") is m._chart_steps["e"]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(NEST_OPS), max_size=30), st.integers(min_value=1, max_value=3))
def test_pairs_turning_hot_midway_agree(ops: list[tuple[Any, ...]], hot_after: int) -> None:
    # A fresh machine each time: each pair runs on the general path, then is generated.
    fast = Machine(NEST_M[0].raw, clock=FakeClock()).preload()
    fast.hot_after = hot_after
    run_twins(fast, NEST_M[1], ops, None)
