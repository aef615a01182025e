"""Step semantics: transition order, exit -> transition -> entry, self-transitions, choice
routing, finals, goto / back, and every refusal leaving the instance exactly as it was."""

from __future__ import annotations

from typing import Any

import pytest

from flowc.runtime import FakeClock, Instance, Machine, Rejected, Rejection, StepResult

from .conftest import frozen, machine

FLOW = """
flow trace "Trace"
version 1

type Stats {
  hits: int = 0
  tags: list[str] = []
}

context {
  owner: str      # flowc: allow W312
  log: list[str] = []
  n: int = 0
  ratio: float = 0
  stats: Stats = {}
  items: list[int] = []
  table: map[str, int] = {}
}

event poke
event bump(by: int = 1)
event divide(by: int)
event tag(name: str)
event pick(i: int)
event lookup(k: str)
event route
event finish
event hop(to_b: bool)
  require n < 50 else too_late "n is {{ context.n }}, over the limit in {{ state.name }}"

initial state A "State A" {
  meta { panel: "a", tools: ["x"] }
  entry do append(log, "enter A")
  exit do append(log, "exit A")
  on poke -> B do append(log, "poke A->B")
  on bump if event.by > 100 reject too_big "{{ event.by }} is too big for {{ state.title }}"
  on bump -> self do n += event.by; append(log, "bump")
  on divide -> self do ratio = n / event.by
  on tag -> self do append(stats.tags, event.name); stats.hits += 1
  on pick -> self do n = items[event.i]; append(log, "picked")
  on lookup -> self do append(log, "looking"); n = table[event.k]
  on route -> R
  on hop if event.to_b -> B
  on hop -> self do append(log, "hop stays")
  if n > 2 -> B
  -> D
}

state B {
  entry do append(log, "enter B")
  exit do append(log, "exit B")
  on poke -> A do append(log, "poke B->A")
  on finish -> DONE
  on hop -> A
  if n >= 0 -> A back
}

state D {
  -> A back
  on finish -> DONE
}

choice state R {
  entry do n += 1; append(log, "enter R")
  exit do append(log, "exit R")
  if n > 5 -> DONE do append(log, "R->DONE")
  else -> B do append(log, "R->B")
}

final state DONE
"""


@pytest.fixture
def m() -> Machine:
    return machine(FLOW, FakeClock())


@pytest.fixture
def inst(m: Machine) -> Instance:
    return m.start({"owner": "ann"})


def test_start_runs_entry_actions_and_records_seq_0(inst: Instance) -> None:
    assert inst.state == "A" and inst.title == "State A"
    assert inst.meta == {"panel": "a", "tools": ["x"]}
    assert inst.context["log"] == ["enter A"]
    [start] = inst.history
    assert (start.seq, start.kind, start.source, start.target) == (0, "start", None, "A")
    assert inst.seq == 0


def test_exit_then_transition_then_entry(inst: Instance) -> None:
    r = inst.send("poke")
    assert isinstance(r, StepResult) and r.ok
    assert (r.source, r.target, r.trigger, r.seq) == ("A", "B", "poke", 1)
    assert inst.context["log"] == ["enter A", "exit A", "poke A->B", "enter B"]
    assert r.context["log"] == inst.context["log"]


def test_self_transition_is_internal(inst: Instance) -> None:
    r = inst.send("bump", {"by": 2})
    assert r.ok and r.to == "A" and r.from_ == "A"
    assert inst.context["n"] == 2
    assert inst.context["log"] == ["enter A", "bump"]  # no exit A / enter A


def test_rules_tried_in_order_first_enabled_wins(inst: Instance) -> None:
    assert inst.send("hop", {"to_b": False}).to == "A"
    assert inst.context["log"][-1] == "hop stays"
    assert inst.send("hop", {"to_b": True}).to == "B"


def test_payload_defaults_are_filled(inst: Instance) -> None:
    r = inst.send("bump")
    assert r.ok and r.payload == {"by": 1} and inst.context["n"] == 1


def test_choice_states_route_at_once(inst: Instance) -> None:
    r = inst.send("route")
    assert r.ok and r.to == "B" and r.via == ("R",)
    assert inst.context["log"][1:] == [
        "exit A",
        "enter R",
        "exit R",
        "R->B",
        "enter B",
    ]
    assert inst.context["n"] == 1


def test_routing_into_a_final_state_ends_the_instance(m: Machine) -> None:
    inst = m.start({"owner": "x", "n": 9})
    r = inst.send("route")
    assert r.ok and r.to == "DONE" and inst.is_final
    refused = inst.send("poke")
    assert isinstance(refused, Rejection) and refused.code == "instance_final"
    assert inst.goto("B").code == "instance_final"  # type: ignore[union-attr]
    assert inst.back(force=True).code == "instance_final"  # type: ignore[union-attr]
    assert inst.accepted_events() == [] and inst.allowed_targets() == []


# ---- goto / back -----------------------------------------------------------------------------


def test_goto_takes_the_first_direct_edge_whose_guard_holds(inst: Instance) -> None:
    assert inst.allowed_targets() == ["D"]  # `if n > 2 -> B` is closed
    closed = inst.goto("B")
    assert isinstance(closed, Rejection) and closed.code == "guard_failed"
    assert closed.data == {"from": "A", "to": "B"}
    assert closed.message == "The edge from 'A' to 'B' is closed: its guard does not hold."
    inst.send("bump", {"by": 3})
    assert inst.allowed_targets() == ["B", "D"]
    r = inst.goto("B", reason="ready")
    assert r.ok and r.kind == "goto" and r.reason == "ready" and r.trigger == "goto"
    assert inst.history[-1].reason == "ready"


def test_goto_refusals(inst: Instance) -> None:
    unknown = inst.goto("NOPE")
    assert isinstance(unknown, Rejection)
    assert unknown.to_dict() == {
        "ok": False,
        "error": "unknown_state",
        "message": "Unknown state 'NOPE'.",
        "from": "A",
        "to": "NOPE",
        "kind": "unknown_state",
        "state": "A",
        "event": None,
    }
    jump = inst.goto("DONE")
    assert isinstance(jump, Rejection) and jump.code == "invalid_transition"
    assert (jump["from"], jump["to"]) == ("A", "DONE")
    assert jump.message == "Cannot go from 'A' to 'DONE'."


def test_backward_edges_need_force(inst: Instance) -> None:
    inst.goto("D")
    refused = inst.goto("A")
    assert isinstance(refused, Rejection) and refused.code == "backward_requires_force"
    assert refused.data == {"from": "D", "to": "A"}
    assert inst.allowed_targets() == [] and inst.allowed_targets(force=True) == ["A"]
    assert inst.goto("A", force=True).to == "A"  # type: ignore[union-attr]


def test_back_returns_along_a_backward_edge(inst: Instance) -> None:
    assert inst.back().code == "no_previous_state"  # type: ignore[union-attr]  # A has no back edge
    inst.goto("D")
    without = inst.back()
    assert isinstance(without, Rejection) and without.code == "backward_requires_force"
    assert without.data == {"from": "D", "to": "A"}
    r = inst.back(force=True, reason="undo")
    assert r.ok and r.kind == "back" and (r.from_, r.to, r.reason) == ("D", "A", "undo")


def test_back_without_the_target_in_history(m: Machine) -> None:
    inst = m.restore({"flow": "trace", "state": "D", "context": {"owner": "x"}})
    refused = inst.back(force=True)
    assert isinstance(refused, Rejection) and refused.code == "no_previous_state"


# ---- refusals change nothing -----------------------------------------------------------------


def refusals(inst: Instance) -> list[tuple[str, Any]]:
    return [
        ("event_not_accepted", lambda: inst.send("finish")),
        ("unknown_event", lambda: inst.send("nope")),
        ("invalid_payload", lambda: inst.send("bump", {"by": "x"})),
        ("reject", lambda: inst.send("bump", {"by": 500})),
        ("expression_error", lambda: inst.send("divide", {"by": 0})),
        ("expression_error", lambda: inst.send("pick", {"i": 3})),
        ("expression_error", lambda: inst.send("lookup", {"k": "missing"})),
        ("guard_failed", lambda: inst.goto("B")),
        ("invalid_transition", lambda: inst.goto("DONE")),
        ("unknown_state", lambda: inst.goto("ZZ")),
        ("no_previous_state", lambda: inst.back(force=True)),
    ]


def test_every_refusal_leaves_the_instance_exactly_as_it_was(inst: Instance) -> None:
    inst.send("tag", {"name": "t1"})
    before = frozen(inst)
    for kind, attempt in refusals(inst):
        outcome = attempt()
        assert isinstance(outcome, Rejection), kind
        assert outcome.kind == kind and not outcome.ok
        assert frozen(inst) == before, kind


def test_a_fault_after_earlier_actions_ran_rolls_them_back(inst: Instance) -> None:
    # `lookup` appends to the log, then fails: the append must not survive.
    before = frozen(inst)
    refused = inst.send("lookup", {"k": "nope"})
    assert isinstance(refused, Rejection) and refused.code == "expression_error"
    assert refused.data["detail"] == "no key 'nope' in the map"
    assert "lookup" in refused.data["where"] and "line" in refused.data["where"]
    assert frozen(inst) == before


def test_expression_errors_are_worded(inst: Instance) -> None:
    div = inst.send("divide", {"by": 0})
    assert isinstance(div, Rejection)
    assert div.data["detail"] == "division by zero"
    assert div.message.startswith("Could not evaluate the actions of rule #")
    pick = inst.send("pick", {"i": 7})
    assert isinstance(pick, Rejection)
    assert pick.data["detail"] == "index 7 is out of range for a list of 0 items"


def test_domain_refusal_renders_its_template(inst: Instance) -> None:
    r = inst.send("bump", {"by": 101})
    assert isinstance(r, Rejection)
    assert (r.kind, r.code, r.message) == ("reject", "too_big", "101 is too big for State A")
    assert r.to_dict()["error"] == "too_big"


def test_requirement_is_checked_before_any_rule(m: Machine) -> None:
    inst = m.start({"owner": "x", "n": 60})
    before = frozen(inst)
    r = inst.send("hop", {"to_b": True})
    assert isinstance(r, Rejection)
    assert (r.kind, r.code) == ("require", "too_late")
    assert r.message == "n is 60, over the limit in A"
    assert frozen(inst) == before


def test_unwrap(inst: Instance) -> None:
    assert inst.send("poke").unwrap().to == "B"
    with pytest.raises(Rejected) as caught:
        inst.send("nope").unwrap()
    assert caught.value.rejection.code == "unknown_event"


# ---- context and copies ----------------------------------------------------------------------


def test_context_is_a_copy(inst: Instance) -> None:
    ctx = inst.context
    ctx["log"].append("mine")
    ctx["stats"]["hits"] = 99
    assert inst.context["log"] == ["enter A"] and inst.context["stats"]["hits"] == 0


def test_payload_is_copied_not_kept(inst: Instance) -> None:
    payload = {"name": "t"}
    inst.send("tag", payload)
    payload["name"] = "changed"
    assert inst.context["stats"]["tags"] == ["t"]
    assert inst.history[-1].payload == {"name": "t"}


def test_copy_on_write_keeps_earlier_results_intact(inst: Instance) -> None:
    first = inst.send("tag", {"name": "a"})
    inst.send("tag", {"name": "b"})
    assert first.context["stats"] == {"hits": 1, "tags": ["a"]}  # type: ignore[union-attr]
    assert inst.context["stats"] == {"hits": 2, "tags": ["a", "b"]}


def test_instances_share_defaults_without_sharing_changes(m: Machine) -> None:
    a, b = m.start({"owner": "a"}), m.start({"owner": "b"})
    a.send("tag", {"name": "only-a"})
    assert b.context["stats"]["tags"] == [] and a.context["stats"]["tags"] == ["only-a"]


def test_start_refuses_a_bad_context_field_by_field(m: Machine) -> None:
    outcome = m.try_start({"n": "many", "extra": 1})
    assert isinstance(outcome, Rejection) and outcome.code == "invalid_context"
    assert outcome.feedback == {
        "result": "validation_failed",
        "issues": {
            "invalid": [
                {
                    "field": "n",
                    "provided": "many",
                    "problem": "expected an integer, got a string",
                    "requirement": "an integer",
                }
            ],
            "missing": [{"field": "owner", "requirement": "a string"}],
            "unknown": ["extra"],
        },
        "issue_count": 3,
        "action": "Start the instance again with a corrected context.",
    }
    with pytest.raises(Rejected) as caught:
        m.start({})
    assert caught.value.rejection.code == "invalid_context"


def test_history_records_every_committed_step(inst: Instance, m: Machine) -> None:
    clock = m.clock
    assert isinstance(clock, FakeClock)
    clock.advance(5)
    inst.send("bump", {"by": 2}, reason="why not")
    inst.send("nope")  # refused: not recorded
    clock.advance(5)
    inst.send("poke")
    rows = [(h.seq, h.kind, h.source, h.target, h.event, h.payload, h.reason) for h in inst.history]
    assert rows == [
        (0, "start", None, "A", None, None, None),
        (1, "event", "A", "A", "bump", {"by": 2}, "why not"),
        (2, "event", "A", "B", "poke", {}, None),
    ]
    times = [h.timestamp for h in inst.history]
    assert times[1] - times[0] == 5 and times[2] - times[1] == 5
    assert inst.history[1].at.tzinfo is not None
