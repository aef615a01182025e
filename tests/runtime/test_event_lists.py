"""Rules for several events (`on a, b -> X`) and for a family of dotted event names
(`on error.* -> X`): compiled into one transition per event, they behave exactly like the rules
written out one by one, on the generated path and the general one alike."""

from __future__ import annotations

import pytest

from flowc.compiler import compile_source
from flowc.runtime import Machine, Rejection, StepResult

from .conftest import frozen, machine
from .test_codegen import run_twins, twins

LISTS = """
flow lists

context {
  n: int = 0
  last: str = ""
}

event cancel(reason: str)
event timeout(reason: str, after_s: int = 0)
event poke
event error.network(code: int)
event error.disk.full(code: int)
event errors_seen

initial state WORK {
  on cancel, timeout if event.reason != "" -> STOPPED do last = event.reason
  on cancel, timeout reject no_reason "Say why."
  on error.disk.full -> FAILED do n = -1
  on error.*, poke -> self do n += 1
}

final state STOPPED
final state FAILED
"""

WRITTEN_OUT = """
flow lists

context {
  n: int = 0
  last: str = ""
}

event cancel(reason: str)
event timeout(reason: str, after_s: int = 0)
event poke
event error.network(code: int)
event error.disk.full(code: int)
event errors_seen

initial state WORK {
  on cancel if event.reason != "" -> STOPPED do last = event.reason
  on timeout if event.reason != "" -> STOPPED do last = event.reason
  on cancel reject no_reason "Say why."
  on timeout reject no_reason "Say why."
  on error.disk.full -> FAILED do n = -1
  on error.network -> self do n += 1
  on error.disk.full -> self do n += 1
  on poke -> self do n += 1
}

final state STOPPED
final state FAILED
"""


def _transitions(source: str) -> list[tuple[str | None, str | None, int]]:
    result = compile_source(source, "x.flow")
    assert result.flow is not None, result.diagnostics
    return [(t.event, t.kind, t.line) for t in result.flow.transitions]


def test_one_rule_per_event_in_the_order_listed() -> None:
    assert [(e, k) for e, k, _ in _transitions(LISTS)] == [
        ("cancel", "event"),
        ("timeout", "event"),
        ("cancel", "reject"),
        ("timeout", "reject"),
        ("error.disk.full", "event"),
        # the prefix in declaration order, then the next name listed
        ("error.network", "event"),
        ("error.disk.full", "event"),
        ("poke", "event"),
    ]


@pytest.mark.parametrize("event", ["cancel", "timeout"])
def test_each_listed_event_takes_the_rule(event: str) -> None:
    inst = machine(LISTS).start()
    step = inst.send(event, {"reason": "late"})
    assert isinstance(step, StepResult) and step.target == "STOPPED"
    assert inst.context["last"] == "late"


def test_a_listed_reject_refuses_each_event_and_changes_nothing() -> None:
    inst = machine(LISTS).start()
    before = frozen(inst)
    refusal = inst.send("timeout", {"reason": ""})
    assert isinstance(refusal, Rejection) and refusal.code == "no_reason"
    assert frozen(inst) == before


def test_a_prefix_matches_dotted_events_and_an_earlier_rule_wins() -> None:
    inst = machine(LISTS).start()
    inst.send("error.network", {"code": 1})
    inst.send("poke")
    assert (inst.state, inst.context["n"]) == ("WORK", 2)
    # `on error.disk.full -> FAILED` is written before the prefix rule, so it is taken
    step = inst.send("error.disk.full", {"code": 28})
    assert isinstance(step, StepResult) and (inst.state, inst.context["n"]) == ("FAILED", -1)


def test_a_prefix_does_not_match_a_name_that_only_starts_alike() -> None:
    inst = machine(LISTS).start()
    refusal = inst.send("errors_seen")
    assert isinstance(refusal, Rejection) and refusal.kind == "event_not_accepted"


def test_same_outcomes_as_the_rules_written_out() -> None:
    ops = [
        ("poke", {}),
        ("error.network", {"code": 3}),
        ("cancel", {"reason": ""}),
        ("timeout", {"reason": "slow", "after_s": 2}),
    ]
    a, b = machine(LISTS).start(), machine(WRITTEN_OUT).start()
    for event, payload in ops:
        ra, rb = a.send(event, payload), b.send(event, payload)
        assert type(ra) is type(rb)
        assert (a.state, a.context) == (b.state, b.context)


def test_generated_and_general_paths_agree() -> None:
    fast, slow = twins(LISTS)
    ops = [
        ("poke", {}),
        ("error.network", {"code": 3}),
        ("error.disk.full", {"code": 3}),
    ]
    run_twins(fast, slow, [(e, p, False) for e, p in ops], None)
    fast, slow = twins(LISTS)
    ops = [("cancel", {"reason": ""}), ("timeout", {"reason": "x"})]
    run_twins(fast, slow, [(e, p, False) for e, p in ops], None)


def test_dotted_event_names_load_from_compiled_json() -> None:
    result = compile_source(LISTS, "x.flow")
    assert result.flow is not None
    again = Machine.from_json(result.flow.to_json())
    inst = again.start()
    assert isinstance(inst.send("error.disk.full", {"code": 1}), StepResult)


def test_a_list_written_outside_states_is_copied_into_every_state() -> None:
    source = """
flow shared
context { pings: int = 0 }
event ping
event pong
event go
initial state A { on go -> B }
state B { on go -> C }
final state C
on ping, pong -> self do pings += 1
"""
    result = compile_source(source, "x.flow")
    assert result.flow is not None
    inherited = [(t.source, t.event) for t in result.flow.transitions if t.inherited]
    assert inherited == [("A", "ping"), ("A", "pong"), ("B", "ping"), ("B", "pong")]
    inst = machine(source).start()
    inst.send("pong")
    inst.send("go")
    inst.send("ping")
    assert (inst.state, inst.context["pings"]) == ("B", 2)
