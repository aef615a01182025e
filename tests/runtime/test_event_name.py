"""`event_name()`: the name of the event being processed, in guards and actions."""

from __future__ import annotations

from flowc.compiler import compile_source
from flowc.runtime import FakeClock, Machine

ERRORS = """
flow errs
event fail.disk
event fail.net(code: int)
event poke(name: str)
context { last: str = "", trail: list[str] = [], name: str = "" }
initial state A {
  on fail.* -> B do last = event_name()
  exit do append(trail, "exit " + event_name())
  after 1s -> B do append(trail, "timer " + event_name())
}
state B {
  entry do append(trail, "entry " + event_name()); raise poke(name: "inner")
  on poke if event_name() == "poke" -> C do name = event.name
}
state C {
  always -> D do append(trail, "always " + event_name())
}
state D { }
"""


def test_every_block_of_a_step_reads_the_event_it_processes() -> None:
    inst = Machine.from_source(ERRORS).start()
    inst.send("fail.net", {"code": 1})
    assert inst.get("last") == "fail.net"
    # the raised `poke` is processed in the same step; the eventless rule after it sees it
    assert inst.get("trail") == ["exit fail.net", "entry fail.net", "always poke"]
    # a payload field called `name` is another thing
    assert inst.get("name") == "inner"
    assert inst.state == "D"


def test_a_step_without_an_event_reads_an_empty_name() -> None:
    clock = FakeClock()
    inst = Machine.from_source(ERRORS, clock=clock).start()
    clock.advance(2)
    inst.advance()
    assert inst.get("trail")[:3] == ["exit ", "timer ", "entry "]


def test_a_flow_reading_it_runs_on_the_statechart_kernel_and_is_version_2() -> None:
    assert Machine.from_source(ERRORS).chart
    result = compile_source(ERRORS, "errs.flow")
    assert result.flow is not None and result.flow.ir_version == 2


def test_it_takes_no_argument() -> None:
    result = compile_source(ERRORS.replace('event_name() == "poke"', "event_name(1) == 1"), "e")
    assert [d.code for d in result.diagnostics if d.severity == "error"] == ["E118"]
