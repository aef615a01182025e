"""Loading: states are wired on first use, and whichever is used first, the machine behaves
the same; the JSON is read by pydantic-core's parser with the json module as the fallback."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from flowc.runtime import IRLoadError, Machine, engine
from flowc.runtime.engine import plan_of

ROOT = Path(__file__).resolve().parents[2]


def attempt_json() -> str:
    m = Machine.from_file(ROOT / "flows" / "attempt_v2.flow")
    return json.dumps(dict(m.raw), separators=(",", ":"))


def test_states_are_wired_on_first_use() -> None:
    m = Machine.from_json(attempt_json())
    assert all(s._loader is m for s in m.states.values())
    inst = m.start()
    # The start runs no rule of UNDERSTAND (no entry actions, no timers): the first send
    # wires it.
    assert m.states["UNDERSTAND"]._loader is m
    assert inst.send("set_mode", {"mode": "EXPERT"}).ok
    assert m.states["UNDERSTAND"]._loader is None
    assert m.states["VERIFY"]._loader is m
    assert inst.send("skip").ok and inst.send("skip").ok
    assert inst.state == "IMPLEMENT"
    assert [e.name for e in inst.accepted_events()] == [
        e.name
        for e in Machine.from_json(attempt_json())
        .preload()
        .restore(inst.snapshot())
        .accepted_events()
    ]


TIMED = """\
flow timed
event go
event back
initial state A { on go -> B  on back -> C }
state B { on back -> A }
state C {
  after 5s -> A
  on go -> B
}
"""


def test_a_step_wires_the_state_it_leads_to_only_when_that_state_has_timers() -> None:
    # A one-send process (a CLI run, a serverless call) would otherwise build every rule of
    # the state it leaves the instance in, to learn that there is no timer to arm.
    m = Machine.from_source(TIMED)
    inst = m.start()
    assert inst.send("go").ok and inst.state == "B"
    assert m.states["B"]._loader is m  # not wired: no timers
    assert not inst.snapshot().get("timers")
    assert inst.send("back").ok and inst.send("back").ok and inst.state == "C"
    assert m.states["C"]._loader is None  # wired: its timer is armed
    assert [t["index"] for t in inst.snapshot()["timers"]] == [
        t.index for t in m.states["C"].timers
    ]
    # Known since the load, wired or not.
    fresh = Machine.from_source(TIMED)
    b, c = fresh.states["B"], fresh.states["C"]
    assert c.timed and not b.timed
    assert engine.timers_of(b) == () and b._loader is fresh
    assert engine.timers_of(c) == c.timers and len(c.timers) == 1 and c._loader is None
    _ = b.on
    assert b._loader is None and not b.timed


def test_wiring_order_makes_no_difference() -> None:
    def shape(m: Machine) -> list[tuple[str, list[tuple[int, bool, bool]], list[str]]]:
        return [
            (
                s.name,
                [(t.index, t.internal, plan_of(t).copies) for t in s.transitions if t.target],
                sorted(s.on),
            )
            for s in m.states.values()
        ]

    forward = Machine.from_json(attempt_json())
    backward = Machine.from_json(attempt_json())
    for s in reversed(list(backward.states.values())):
        _ = s.timers
    assert shape(forward) == shape(backward) == shape(Machine.from_json(attempt_json()).preload())


def test_threads_wiring_one_state_get_one_set_of_transitions() -> None:
    m = Machine.from_json(attempt_json())
    seen: list[object] = []
    threads = [threading.Thread(target=lambda: seen.append(m.states["PLAN"].on)) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len({id(x) for x in seen}) == 1


def test_bad_transitions_are_still_refused_at_load() -> None:
    raw = json.loads(attempt_json())
    raw.pop("hash")
    raw["transitions"][0]["target"] = "NOWHERE"
    with pytest.raises(IRLoadError, match="unknown state 'NOWHERE'"):
        Machine(raw)


def test_json_the_fast_parser_refuses_still_loads() -> None:
    text = attempt_json()
    for data in (b"\xef\xbb\xbf" + text.encode(), text.encode("utf-16")):
        assert Machine.from_json(data).name == "attempt_v2"
    with pytest.raises(IRLoadError, match="not JSON"):
        Machine.from_json(text + " x")


def test_the_ir_is_checked_once(monkeypatch: pytest.MonkeyPatch) -> None:
    # JSON from a file is checked against the IR's structure once, in the loader; a
    # `CompiledFlow` was validated when it was made and is not checked again.
    from flowc.compiler import compile_source
    from flowc.runtime import flow as flow_module

    checked: list[object] = []
    real = flow_module.check_ir
    monkeypatch.setattr(flow_module, "check_ir", lambda raw: checked.append(raw) or real(raw))
    compiled = compile_source(TIMED, "timed.flow").flow
    assert compiled is not None
    Machine(compiled)
    assert checked == []
    Machine.from_json(compiled.to_json())
    assert len(checked) == 1


def test_a_flow_with_lowered_templates_loads_without_the_model(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The hash covers every member but the derived ones (`lowered_templates`): a compiled
    # file verifies on its own, without the IR model's slower reading.
    from pathlib import Path

    from flowc.compiler import compile_file
    from flowc.runtime import CompiledFlow

    flow = compile_file(Path(__file__).parents[2] / "flows" / "interactive_stage.flow").flow
    assert flow is not None and flow.lowered_templates
    text = flow.to_json()

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("the model was asked")

    monkeypatch.setattr(CompiledFlow, "from_json", refuse)
    assert Machine.from_json(text).name == flow.name
