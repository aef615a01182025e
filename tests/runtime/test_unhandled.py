"""`unhandled ignore|refuse`: a declared event a state has no rule for is ignored (outcome kind
`ignored`, nothing changed, nothing recorded) or refused (`event_not_accepted`, the default), at
the top level for every state and per state; the same on the generated and general paths."""

from __future__ import annotations

import pytest

from flowc.compiler import compile_source
from flowc.runtime import Rejection, StepResult

from .conftest import frozen, machine
from .test_codegen import run_twins, twins

FLOW = """
flow oven

unhandled ignore

context {
  seconds: int = 0
}

event open_door
event close_door
event add_time(seconds: int)
event start
event cancel

initial state IDLE {
  on add_time -> self do seconds += event.seconds
  on start if seconds > 0 -> COOKING
  on open_door -> DOOR_OPEN
}

state DOOR_OPEN {
  on close_door -> IDLE
}

state COOKING {
  unhandled refuse
  on add_time -> self do seconds += event.seconds
  on open_door -> DOOR_OPEN
  on cancel -> DONE
}

final state DONE
"""


def test_an_event_without_a_rule_is_ignored_and_nothing_changes() -> None:
    inst = machine(FLOW).start()
    seen: list[object] = []
    inst.subscribe(seen.append)
    before = frozen(inst)
    outcome = inst.send("close_door", key="k1")
    assert isinstance(outcome, Rejection) and not outcome.ok
    assert (outcome.kind, outcome.code, outcome.state, outcome.event) == (
        "ignored",
        "ignored",
        "IDLE",
        "close_door",
    )
    assert outcome.message == "Event 'close_door' was ignored in state 'IDLE'."
    assert frozen(inst) == before and seen == []
    # the key was not remembered: the same key may take a real step afterwards
    assert isinstance(inst.send("open_door", key="k1"), StepResult)


def test_the_payload_of_an_ignored_event_is_still_validated() -> None:
    inst = machine(FLOW).start()
    inst.send("open_door")
    bad = inst.send("add_time", {"seconds": "ten"})
    assert isinstance(bad, Rejection) and bad.kind == "invalid_payload"
    assert bad.data["issues"]["invalid"][0]["field"] == "seconds"
    good = inst.send("add_time", {"seconds": 10})
    assert isinstance(good, Rejection) and good.kind == "ignored"
    assert inst.context["seconds"] == 0


def test_a_state_policy_overrides_the_flow_policy() -> None:
    inst = machine(FLOW).start()
    inst.send("add_time", {"seconds": 30})
    inst.send("start")
    refusal = inst.send("close_door")
    assert isinstance(refusal, Rejection) and refusal.kind == "event_not_accepted"


@pytest.mark.parametrize(
    ("steps", "kind"),
    [
        ([("start", None)], "guard_failed"),  # IDLE has a rule for start: its guard is false
        ([("bogus", None)], "unknown_event"),
        (
            [("add_time", {"seconds": 1}), ("start", None), ("cancel", None), ("start", None)],
            "instance_final",
        ),
    ],
)
def test_what_ignore_does_not_cover(steps: list[tuple[str, object]], kind: str) -> None:
    inst = machine(FLOW).start()
    for event, payload in steps:
        outcome = inst.send(event, payload)  # type: ignore[arg-type]
    assert isinstance(outcome, Rejection) and outcome.kind == kind


def test_refuse_is_the_default_and_leaves_the_compiled_flow_as_it_was() -> None:
    plain = FLOW.replace("unhandled ignore\n", "\n").replace("  unhandled refuse\n", "\n")
    said = plain + "unhandled refuse\n"
    a, b = compile_source(plain, "x.flow").flow, compile_source(said, "x.flow").flow
    assert a is not None and b is not None
    assert a.hash == b.hash and '"unhandled"' not in a.to_json()
    inst = machine(plain).start()
    assert inst.send("close_door").kind == "event_not_accepted"  # type: ignore[union-attr]
    ignoring = compile_source(FLOW, "x.flow").flow
    assert ignoring is not None
    assert {s.name: s.unhandled for s in ignoring.states} == {
        "IDLE": "ignore",
        "DOOR_OPEN": "ignore",
        "COOKING": "refuse",
        "DONE": "refuse",
    }


def test_a_flow_message_replaces_the_ignored_text() -> None:
    inst = machine(FLOW + 'message ignored "{{ event }} means nothing in {{ state.name }}."\n')
    outcome = inst.start().send("cancel")
    assert outcome.message == "cancel means nothing in IDLE."  # type: ignore[union-attr]


def test_generated_and_general_paths_agree() -> None:
    ops = [
        ("close_door", {}, False),
        ("add_time", {"seconds": "x"}, False),
        ("add_time", {"seconds": 5}, False),
        ("cancel", {}, False),
        ("start", {}, False),
        ("close_door", {}, False),
        ("close_door", {}, True),
        ("open_door", {}, False),
        ("start", {}, False),
        ("close_door", {}, False),
        ("add_time", {"seconds": 5}, False),
    ]
    fast, slow = twins(FLOW)
    run_twins(fast, slow, ops, None)
