"""The generated dispatch functions (runtime/codegen.py) against the general path.

`Instance.send` runs a function generated per (state, event) once the pair is hot, which
decides accepted steps and the flow's own refusals and hands anything else to
`Instance._send_slow`. These tests drive twin machines, one with the generated functions from
the first send (`hot_after = 0`) and one held to the general path, through the same operations
and require the same outcomes and the same instances after every step (values compared with
their types: `1` and `1.0` differ). They also check that no text of the flow ends up in the
generated source."""

from __future__ import annotations

import json
import math
import threading
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from flowc.runtime import FakeClock, Instance, Machine
from flowc.runtime.codegen import general

from .conftest import machine
from .test_json_type import FLOW as JSON_FLOW
from .test_properties import ATTEMPT_OPS

ROOT = Path(__file__).resolve().parents[2]

FLOW = """
flow gen "Generated"

enum Color { red, green }

type Inner {
  label: str
  weight: float = 1.0
  tags: list[str] = []
}

type Outer {
  inner: Inner
  items: list[Inner] = []
  extra: map[str, int]? = none
  level: int(0..9) = 0
}

context {
  n: int = 0
  total: float = 0.0
  names: list[str] = []
  color: Color = red
  outer: Outer = {"inner": {"label": "x"}}
  last: str? = none
  ratio: float = 0.0
  seen: list[int] = []
}

event put(outer: Outer, color: Color = green, note: str? = none)
event add(k: int, f: float = 0.5)
  require event.k != 13 else unlucky "not {{ event.k }}"
event divide(by: int)
event pick(i: int, names: list[str])
event go
event tick
event reopen
event again

initial state A "First" {
  meta { limit: 3 }
  exit do n += 100
  on put if event.outer.inner.label == "stop" reject stopped "stopped"
  on put if event.color == red and coalesce(event.note, "") != "" -> B do
    outer = event.outer;
    outer.level = 3;
    last = event.note
  on put -> self do outer.inner = event.outer.inner; color = event.color
  on add if event.k > 0 and not (event.k in seen) -> self do
    n += event.k; total = total + event.f; append(seen, event.k)
  on add if -event.k > 5 -> self do n -= 1; remove(seen, 1)
  on divide -> self do ratio = n / event.by; n = n % event.by
  on pick if names[event.i] != "" or len(event.names) > 2 -> self do
    names = event.names; last = upper(trim(event.names[0])) + str(event.i)
  on pick -> self do names += event.names; for last in event.names { n += len(coalesce(last, "")) }
  on go if state.name == "A" -> R
  on tick -> B
}

choice state R {
  entry do n += 1
  if n > 2 -> B
  else -> C
}

state B "Second" {
  entry do outer.inner.label = "entered"; total = 2
  after 5s -> C
  on go -> C do outer = {"inner": {"label": coalesce(last, "none")}}
  on tick -> A
  on reopen if n > 1000 reject too_late "too late at {{ context.n }}"
  on reopen -> A do n += 1 back
  on again if active(B) -> self reenter do if active(B) { n += 1 } else { n += 3 }
}

final state C
"""


def twins(source: str | None = None, raw: dict[str, Any] | None = None) -> tuple[Machine, Machine]:
    """The same flow twice: generated dispatch, and the general path only."""
    if raw is None:
        assert source is not None
        raw = dict(machine(source).raw)
    fast = Machine(raw, clock=FakeClock()).preload()
    fast.hot_after = 0
    slow = Machine(raw, clock=FakeClock()).preload()
    slow._dispatch = lambda state, event: general(event)  # type: ignore[method-assign]
    return fast, slow


def seen(inst: Instance) -> str:
    return json.dumps(inst.snapshot(), sort_keys=True)


def without_id(inst: Instance) -> str:
    snapshot = inst.snapshot()
    snapshot.pop("id", None)
    return json.dumps(snapshot, sort_keys=True)


def same(outcome_a: Any, outcome_b: Any) -> None:
    assert json.dumps(outcome_a.to_dict(), sort_keys=True, default=repr) == json.dumps(
        outcome_b.to_dict(), sort_keys=True, default=repr
    )


class StrSub(str):
    pass


#: (event, payload) or (event, payload, force)
GEN_OPS: list[tuple[Any, ...]] = [
    ("put", {"outer": {"inner": {"label": "a"}}}),
    ("put", {"outer": {"inner": {"label": "stop"}}}),
    ("put", {"outer": {"inner": {"label": "a", "weight": 2}}, "color": "red", "note": "hi"}),
    ("put", {"outer": {"inner": {"label": "a", "weight": True}}}),
    ("put", {"outer": {"inner": {"label": "a", "weight": float("nan")}}}),
    ("put", {"outer": {"inner": {"label": "a", "tags": ["x", StrSub("y")]}}}),
    ("put", {"outer": {"inner": {"label": "a", "tags": ("x", "y")}}}),
    ("put", {"outer": {"inner": {"label": "a", "tags": ["x", 1]}}}),
    ("put", {"outer": {"inner": {"label": "a"}, "items": [{"label": "b"}, {"label": 3}]}}),
    ("put", {"outer": {"inner": {"label": "a"}, "items": [{"label": "b", "tags": []}]}}),
    ("put", {"outer": {"inner": {"label": "a"}, "extra": {"k": 1.0}, "level": 9}}),
    ("put", {"outer": {"inner": {"label": "a"}, "level": 10}}),
    ("put", {"outer": {"inner": {"label": "a"}, "level": 2.0}}),
    ("put", {"outer": {"inner": {"label": "a"}}, "colour": "red"}),
    ("put", {"outer": {"inner": {}}}),
    ("put", {"outer": {"inner": {"label": "a"}}, "color": "blue"}),
    ("put", {"outer": {"inner": {"label": "a"}}, "color": StrSub("red"), "note": "x"}),
    ("put", {"outer": {"inner": {"label": "a"}, "extra": {StrSub("k"): 2}}}),
    ("put", {"outer": {"inner": {"label": "a"}, "extra": {3: 2}}}),
    ("put", {"outer": None}),
    ("put", None),
    ("add", {"k": 1}),
    ("add", {"k": 2, "f": 2}),
    ("add", {"k": 13}),
    ("add", {"k": -7}),
    ("add", {"k": 1.5}),
    ("add", {"k": 3.0, "f": float("inf")}),
    ("add", {"k": True}),
    ("divide", {"by": 0}),
    ("divide", {"by": 3}),
    ("divide", {"by": -2}),
    ("pick", {"i": 0, "names": ["  ann "]}),
    ("pick", {"i": 5, "names": ["a", "b", "c"]}),
    ("pick", {"i": -1, "names": ["a"]}),
    ("pick", {"i": 0, "names": []}),
    ("go", None),
    ("go", {}),
    ("go", {"x": 1}),
    ("go", [1]),
    ("tick", None),
    ("reopen", None),
    ("reopen", None, True),  # forced
    ("again", None),  # re-enters B: its entry actions run, its timer starts over
    ("tick", None, True),
    ("nope", None),
    # Past the limits (runtime/limits.py): both paths refuse the same values.
    ("add", {"k": 10**999}),
    ("add", {"k": 10**1000}),
    ("add", {"k": 10**999, "f": 1e308}),
    ("pick", {"i": 0, "names": ["a\x00b"]}),
    ("pick", {"i": 0, "names": ["\ud800", "x"]}),
    ("pick", {"i": 0, "names": ["é"] * 3}),
    ("pick", {"i": 0, "names": ["x" * 1_000_001]}),
    ("pick", {"i": 0, "names": ["y"] * 100_001}),
    ("pick", {"i": 0, "names": ["y" * 600_000]}),
    ("put", {"outer": {"inner": {"label": "a\x00"}}}),
    ("put", {"outer": {"inner": {"label": "a"}, "extra": {"\udc00": 1}}}),
    ("put", {"outer": {"inner": {"label": "a"}, "extra": {"k": 10**1000}}}),
]


def run_twins(fast_m: Machine, slow_m: Machine, ops: list[tuple[Any, ...]], ctx: Any) -> None:
    fast, slow = fast_m.start(ctx), slow_m.start(ctx)
    for event, payload, *forced in ops:
        force = bool(forced and forced[0])
        before = seen(fast)
        a = fast.send(event, payload, force=force, reason="r")
        b = slow.send(event, payload, force=force, reason="r")
        same(a, b)
        assert seen(fast) == seen(slow), (event, payload)
        assert fast.context == slow.context
        if not a.ok:
            assert seen(fast) == before
        else:
            assert a.context == b.context


@settings(max_examples=150, deadline=None)
@given(st.lists(st.sampled_from(GEN_OPS), max_size=20))
def test_generated_dispatch_agrees_with_the_general_path(ops: list[tuple[Any, ...]]) -> None:
    run_twins(*GEN, ops, None)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from([op for kind, op in ATTEMPT_OPS if kind == "send"]), max_size=25))
def test_attempt_flow_agrees_with_the_general_path(ops: list[tuple[Any, Any]]) -> None:
    run_twins(*ATTEMPT, ops, None)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from(GEN_OPS), max_size=30), st.integers(min_value=1, max_value=4))
def test_pairs_turning_hot_midway_agree(ops: list[tuple[Any, ...]], hot_after: int) -> None:
    # Fresh machines each time: each pair runs on the general path, then is generated, within
    # one run.
    fast = Machine(GEN[0].raw, clock=FakeClock())
    fast.hot_after = hot_after
    run_twins(fast, GEN[1], ops, None)


def test_the_bench_episode_agrees() -> None:
    import sys

    sys.path.insert(0, str(ROOT / "bench"))
    from dispatch import EPISODE

    run_twins(*ATTEMPT, [(e, p) for e, p in EPISODE], None)


def test_payloads_are_copies_and_keys_replay() -> None:
    fast = GEN[0].start()
    payload = {"outer": {"inner": {"label": "a", "tags": ["t"]}}}
    step = fast.send("put", payload, key="k1")
    assert step.ok
    payload["outer"]["inner"]["tags"].append("changed")  # type: ignore[index]
    assert fast.context["outer"]["inner"]["tags"] == ["t"]
    again = fast.send("put", {"outer": {"inner": {"label": "b"}}}, key="k1")
    assert again.replayed and again.seq == step.seq


def test_no_flow_text_in_the_generated_source() -> None:
    hostile = FLOW.replace('"stop"', "\"__import__('os').system('false')\"")
    m = machine(hostile)
    m.hot_after = 0
    inst = m.start()
    for event, payload, *_ in GEN_OPS:
        inst.send(event, payload)
    gen = m._generator
    assert gen is not None and gen.sources
    for source in gen.sources.values():
        assert "'" not in source and '"' not in source, source  # no string literal at all
        for word in ("outer", "inner", "label", "put", "divide", "First", "limit", "reopen"):
            assert word not in source


ATTEMPT = twins(raw=dict(Machine.from_file(ROOT / "flows" / "attempt_v2.flow").raw))
GEN = twins(FLOW)


@pytest.mark.parametrize("name", ["rfp_workspace", "stage_questions"])
def test_seed_flows_load_and_generate(name: str) -> None:
    m = Machine.from_file(ROOT / "flows" / f"{name}.flow").preload()
    assert not m.chart
    m.hot_after = 0
    gen_count = 0
    for state in m.states.values():
        for event in state.on:
            m._dispatch(state, event)
            gen_count += 1
    assert gen_count == sum(len(s.fast) for s in m.states.values())


def test_a_statechart_seed_gets_generated_steps() -> None:
    """Seed 002 groups its states in compound states: a statechart, but one whose
    configuration is always one leaf and its ancestors (engine.py's `leaf_chart`), so each
    (leaf, event) pair gets a generated function like a flat flow's; compound states, never
    the instance's state, get none, and steps that route through a choice state hand over to
    the general path from inside the function. (tests/runtime/test_chart_codegen.py compares
    the two paths on it.)"""
    m = Machine.from_file(ROOT / "flows" / "collab_skills.flow").preload()
    assert m.chart and m.leaf_chart
    m.hot_after = 0
    pairs = 0
    for state in m.states.values():
        for event in state.on:
            fn = m._dispatch(state, event)
            if state.atomic and not state.final:
                assert m._written[state.name, event] is fn
                pairs += 1
            else:
                assert fn is m._chart_steps[event]
    assert pairs > 0 and m._chart_steps
    inst = m.start({"project": "/p", "session": "s"})
    assert inst.send("complete_skill", {"skill": "collab-start"}).ok
    assert inst.state == "gather_goals"
    step = inst.send("set_work_items", {"items": [{"number": 4, "type": "code"}]})
    assert step.ok and step.rules_taken is not None and step.configuration == ("gather_goals",)


def test_threads_generating_at_once_agree() -> None:
    raw = dict(GEN[0].raw)
    fast = Machine(raw, clock=FakeClock())
    fast.hot_after = 2  # generated by one of the threads while others are still warming
    ops = [op for op in GEN_OPS if op[0] in ("put", "add", "divide", "pick")]
    results: dict[int, list[str]] = {}

    def drive(n: int) -> None:
        inst = fast.start()
        out = []
        for event, payload in ops[n % 3 :: 3] * 3:
            out.append(json.dumps(inst.send(event, payload).ok))
        out.append(without_id(inst))
        results[n] = out

    threads = [threading.Thread(target=drive, args=(n,)) for n in range(12)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    slow = GEN[1]
    for n, out in results.items():
        inst = slow.start()
        expected = [json.dumps(inst.send(e, p).ok) for e, p in ops[n % 3 :: 3] * 3]
        assert out[:-1] == expected
        assert out[-1] == without_id(inst)


JSON_OPS: list[tuple[Any, ...]] = [
    ("call", {"tool": "t", "args": {"a": [1, 2.5, None]}}),
    ("call", {"tool": "t", "args": None}),
    ("call", {"tool": "t", "args": [math.nan]}),
    ("call", {"tool": "t", "args": {2: 1}}),
    ("call", {"tool": "t", "args": (1, "x")}),
    ("call", {"tool": "t", "args": True}),
    ("call", {"tool": "t", "args": 10**5000}),
    ("call", {"tool": "t"}),
    ("note", {"extra": {"deep": [[[]]]}}),
    ("note", {}),
    ("reset", {}),
]


def test_generated_and_general_paths_agree_on_json_payloads() -> None:
    fast, slow = twins(JSON_FLOW)
    run_twins(fast, slow, [(e, p, False) for e, p in JSON_OPS], None)
    assert "call" in fast.states["READY"].fast  # the generated function did run
