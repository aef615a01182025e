"""`active(STATE)`: a test of the active configuration, compiled from source and run on the
engine, the flat general path and the generated dispatch functions."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from flowc.compiler import compile_source
from flowc.compiler.lint.fold import UNKNOWN, fold
from flowc.runtime import Machine
from flowc.runtime.model import CompiledFlow, IRLoadError

LAMP = """
flow lamp
event toggle
event check
context { seen: int = 0, log: list[str] = [] }
initial parallel state Room {
  state Light {
    initial state Off { on toggle -> On }
    state On {
      on toggle -> Off
      exit do if active(On) { append(log, "exit sees On") }
    }
  }
  state Watch {
    initial state Idle {
      on check if active(On) -> Idle do seen += 1
      on check if not active(Light.Off) and active(Room) -> Idle do seen += 100
      on toggle if active(Light) -> Idle do
        if active(On) { append(log, "on") } else { append(log, "off") }
    }
  }
}
"""


def test_a_guard_reads_the_configuration_of_a_parallel_state() -> None:
    inst = Machine.from_source(LAMP).start()
    inst.send("check")
    assert inst.get("seen") == 0  # Off, and the rule for On does not hold
    inst.send("toggle")
    inst.send("check")
    assert inst.get("seen") == 1


def test_actions_see_the_configuration_of_the_microstep() -> None:
    inst = Machine.from_source(LAMP).start()
    # Both regions take a rule for `toggle` in one microstep (SCXML): every state is left
    # first, then the rules' actions run, then the targets are entered. So Watch's actions see
    # neither Off (left) nor On (not entered yet), and On's exit action still sees On.
    inst.send("toggle")
    assert inst.active("On")
    inst.send("toggle")
    assert inst.get("log") == ["off", "exit sees On", "off"]


FLAT = """
flow steps
event go
event back
context { log: list[str] = [] }
initial state A {
  on go if active(A) -> B do
    if active(A) or active(B) { append(log, "between") } else { append(log, "none") }
  exit do if active(A) { append(log, "exit A") }
}
state B {
  entry do if active(B) { append(log, "entry B") }
  on back if active(A) -> A do append(log, "wrong")
  on back if active(B) -> A do append(log, "back")
}
"""


@pytest.mark.parametrize("hot_after", [0, 1000])
def test_in_a_flat_flow_the_current_state_is_active(hot_after: int) -> None:
    # hot_after=0: the generated dispatch functions; 1000: the general path.
    machine = Machine.from_source(FLAT)
    machine.hot_after = hot_after
    for _ in range(3):
        inst = machine.start()
        inst.send("go")
        inst.send("back")
        # The transition's own actions run between the two states: neither is active.
        assert inst.get("log") == ["exit A", "none", "entry B", "back"]
        assert inst.state == "A"


def test_only_a_flow_that_calls_active_pays_for_asking_whether_a_rule_does() -> None:
    # A first use asks whether the rule's actions call `active` (they then run with no state
    # active, on the general path) only when the load found a call somewhere.
    assert Machine.from_source(FLAT).reads_active
    assert not Machine.from_source(re.sub(r"active\(\w+\)", "true", FLAT)).reads_active


def test_a_version_1_flow_cannot_call_active() -> None:
    # `active` came with IR version 2, which the compiler writes for any flow that calls it.
    raw = compiled(FLAT).model_dump(mode="json")
    assert raw["ir_version"] == 2
    raw["ir_version"] = 1
    machine = Machine.from_json(json.dumps(raw), verify_hash=False)
    assert not machine.reads_active
    inst = machine.start()
    with pytest.raises(IRLoadError, match="`active` needs IR version 2"):
        inst.send("go")
    assert inst.state == "A" and inst.seq == 0 and inst.get("log") == []
    with pytest.raises(IRLoadError, match="`active` needs IR version 2"):
        Machine.from_json(json.dumps(raw), verify_hash=False).preload()


def test_a_call_naming_no_function_is_a_load_error_not_a_crash() -> None:
    # The load looks for `active` and `event_name` calls in every expression of a version 2
    # flow; a call whose name is not a string (a hand-edited document) does not upset it, and
    # compiling it says what is wrong.
    raw = compiled(FLAT).model_dump(mode="json")
    rule = next(t for t in raw["transitions"] if t.get("guard"))
    rule["guard"] = {"op": "call", "value": ["active"], "args": []}
    machine = Machine.from_json(json.dumps(raw), verify_hash=False)
    assert machine.reads_active  # the other rules still call it
    with pytest.raises(IRLoadError, match="`call` needs a name"):
        machine.preload()


def compiled(src: str) -> CompiledFlow:
    result = compile_source(src, "t.flow")
    assert result.flow is not None, [d.message for d in result.diagnostics]
    return result.flow


def test_the_ir_names_the_state_by_its_ir_name() -> None:
    flow = compiled(LAMP)
    guards = [t.guard for t in flow.transitions if t.guard is not None]
    raw: Any = guards[1].model_dump(mode="json", exclude_defaults=True)
    text = str(raw)
    assert "'value': 'active'" in text and "'value': 'Off'" in text


def test_active_is_never_folded() -> None:
    flow = compiled(LAMP)
    guard = next(t.guard for t in flow.transitions if t.guard is not None)
    assert fold(guard) is UNKNOWN


def errors(src: str) -> list[tuple[str, str, str | None]]:
    result = compile_source(src, "t.flow")
    return [(d.code, d.message, d.help) for d in result.diagnostics if d.severity == "error"]


def test_an_unknown_state_is_reported_with_a_suggestion() -> None:
    found = errors(LAMP.replace("active(On) -> Idle", "active(Onn) -> Idle"))
    assert found == [("E104", "unknown state `Onn`", "did you mean `On`?")]


def test_the_argument_must_be_a_state_name() -> None:
    found = errors(LAMP.replace("active(On) -> Idle", 'active("On") -> Idle'))
    assert [code for code, _, _ in found] == ["E217"]
    found = errors(LAMP.replace("active(On) -> Idle", "active(On, Off) -> Idle"))
    assert [code for code, _, _ in found] == ["E118"]


def test_an_ambiguous_state_name_is_reported() -> None:
    src = """
flow twice
event go
initial state P {
  initial state A { initial state X { on go if active(X) -> Y }  state Y { } }
  state B { initial state X { } }
}
"""
    found = errors(src)
    assert [code for code, _, _ in found] == ["E130"]
    assert compiled(src.replace("active(X)", "active(A.X)")).ir_version == 2
