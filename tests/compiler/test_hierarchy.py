"""Compound and parallel states, history, completion events and `always` rules, from source to
IR version 2 (STATECHARTS.md): document order, parents, kinds, IR names, transitions."""

from __future__ import annotations

import json
from typing import Any

import pytest

from flowc.compiler.driver import compile_source

MICROWAVE = """\
flow microwave
event door_opened
event start(seconds: int)
event ci_passed
event approved
event check

context { remaining: int = 0 }

initial state Idle {
  on start -> Cooking do remaining = event.seconds
  on check -> Review
}

state Cooking {
  initial state Heating {
    after 1s if remaining > 0 -> Heating reenter do remaining -= 1
    always if remaining == 0 -> Done
  }
  state Paused { on start -> Resume }
  final state Done
  history Resume
  history deep Everything -> Heating
  on door_opened -> Paused
  on done.state.Cooking -> Idle
  after 30m -> Idle
}

parallel state Review {
  state CI { initial state Pending { on ci_passed -> Green }  final state Green }
  state Approvals { initial state Waiting { on approved -> Approved }  final state Approved }
  on done.state.Review -> Merged
}
final state Merged
"""


def compiled(source: str) -> dict[str, Any]:
    result = compile_source(source, "h.flow")
    assert not result.errors, [str(d) for d in result.errors]
    assert result.flow is not None
    data: dict[str, Any] = json.loads(result.flow.to_json())
    return data


def codes(source: str) -> list[tuple[str, int, int]]:
    return [(d.code, d.span.line, d.span.column) for d in compile_source(source, "h.flow").errors]


def errors(source: str, code: str) -> list[str]:
    return [d.message for d in compile_source(source, "h.flow").errors if d.code == code]


def brief(state: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in state.items() if k not in ("line", "column")}


def test_states_are_in_document_order_with_parents_kinds_and_initial_children() -> None:
    data = compiled(MICROWAVE)
    assert data["ir_version"] == 2
    assert data["initial"] == "Idle"
    assert [brief(s) for s in data["states"]] == [
        {"name": "Idle", "initial": True},
        {"name": "Cooking", "kind": "compound"},
        {"name": "Heating", "parent": "Cooking", "initial": True},
        {"name": "Paused", "parent": "Cooking"},
        {"name": "Done", "parent": "Cooking", "kind": "final"},
        {"name": "Resume", "parent": "Cooking", "kind": "history", "history": "shallow"},
        {
            "name": "Everything",
            "parent": "Cooking",
            "kind": "history",
            "history": "deep",
            "default": "Heating",
        },
        {"name": "Review", "kind": "parallel"},
        {"name": "CI", "parent": "Review", "kind": "compound"},
        {"name": "Pending", "parent": "CI", "initial": True},
        {"name": "Green", "parent": "CI", "kind": "final"},
        {"name": "Approvals", "parent": "Review", "kind": "compound"},
        {"name": "Waiting", "parent": "Approvals", "initial": True},
        {"name": "Approved", "parent": "Approvals", "kind": "final"},
        {"name": "Merged", "kind": "final"},
    ]


def test_transitions_of_compound_states_always_rules_and_done_events() -> None:
    data = compiled(MICROWAVE)
    shown = [
        (t["index"], t["source"], t.get("target"), t["kind"], t.get("event"))
        for t in data["transitions"]
    ]
    assert shown == [
        (0, "Idle", "Cooking", "event", "start"),
        (1, "Idle", "Review", "event", "check"),
        (2, "Cooking", "Paused", "event", "door_opened"),
        (3, "Cooking", "Idle", "event", "done.state.Cooking"),
        (4, "Cooking", "Idle", "timer", None),
        (5, "Heating", "Heating", "timer", None),
        (6, "Heating", "Done", "always", None),
        (7, "Paused", "Resume", "event", "start"),
        (8, "Review", "Merged", "event", "done.state.Review"),
        (9, "Pending", "Green", "event", "ci_passed"),
        (10, "Waiting", "Approved", "event", "approved"),
    ]
    always = data["transitions"][6]
    assert always["guard"]["op"] == "=="
    assert data["transitions"][4]["after_ms"] == 30 * 60_000
    # completion events are implicit: never listed among the declared events
    assert [e["name"] for e in data["events"]] == [
        "door_opened",
        "start",
        "ci_passed",
        "approved",
        "check",
    ]


def test_a_flat_flow_stays_ir_version_1() -> None:
    source = "flow demo\nevent go\ninitial state A { on go -> B }\nfinal state B\n"
    data = compiled(source)
    assert data["ir_version"] == 1
    assert all("parent" not in s for s in data["states"])


REPEATED = """\
flow wash
event go
event stop
initial state Idle { on go -> Cooking.Paused  on stop -> Washing.Paused }
state Cooking { initial state Running { on go -> Paused }  state Paused }
state Washing { initial state Running  state Paused { on go -> Spin } state Spin }
final state Paused
"""


def test_a_repeated_short_name_becomes_a_path_and_a_unique_one_stays_short() -> None:
    source = REPEATED.replace("final state Paused\n", "final state End\n")
    data = compiled(source.replace("on go -> Paused", "on go -> Cooking.Paused"))
    names = [(s["name"], s.get("parent")) for s in data["states"]]
    assert names == [
        ("Idle", None),
        ("Cooking", None),
        ("Cooking.Running", "Cooking"),
        ("Cooking.Paused", "Cooking"),
        ("Washing", None),
        ("Washing.Running", "Washing"),
        ("Washing.Paused", "Washing"),
        ("Spin", "Washing"),
        ("End", None),
    ]
    targets = {(t["source"], t["target"]) for t in data["transitions"]}
    assert ("Idle", "Cooking.Paused") in targets
    assert ("Idle", "Washing.Paused") in targets
    assert ("Washing.Paused", "Spin") in targets


def test_an_ambiguous_short_name_lists_the_states_it_may_mean() -> None:
    source = REPEATED.replace("final state Paused\n", "final state End\n")
    found = compile_source(source, "h.flow").errors
    (diag,) = found
    assert diag.code == "E130"
    assert "`Cooking.Paused`, `Washing.Paused`" in diag.message
    assert diag.help == "write the path that names one: `Cooking.Paused`"
    assert (diag.span.line, diag.span.column) == (5, 50)


def test_a_path_from_the_top_names_a_top_level_state_even_when_nested_ones_share_it() -> None:
    source = REPEATED.replace("on go -> Paused", "on go -> Cooking.Paused")
    data = compiled(source)
    names = [s["name"] for s in data["states"]]
    # the top-level state keeps its short name; the nested ones take their paths
    assert "Paused" in names and "Cooking.Paused" in names and "Washing.Paused" in names


def test_an_unknown_path_suggests_a_state() -> None:
    source = REPEATED.replace("Cooking.Paused  on", "Cooking.Pausd  on").replace(
        "on go -> Paused", "on go -> Cooking.Paused"
    )
    found = compile_source(source, "h.flow").errors
    assert [(d.code, d.help) for d in found] == [("E104", "did you mean `Cooking.Paused`?")]


def test_siblings_may_not_share_a_name() -> None:
    source = "flow demo\ninitial state A {\n  initial state B\n  state B\n}\n"
    (diag,) = compile_source(source, "h.flow").errors
    assert (diag.code, diag.span.line) == ("E103", 4)
    assert diag.message == "state `B` is declared twice in `A`"


def test_done_event_names_a_nested_state_by_its_short_name_and_lowers_to_the_ir_name() -> None:
    source = """\
flow demo
event go
initial state Top {
  initial state A { initial state A1 { on go -> A2 }  final state A2 }
  state B { initial state A1 }
  on done.state.A -> B
}
"""
    data = compiled(source)
    (done,) = [t for t in data["transitions"] if t.get("event", "").startswith("done.")]
    assert (done["source"], done["event"], done["target"]) == ("Top", "done.state.A", "B")


def test_a_completion_event_has_no_payload() -> None:
    source = """\
flow demo
initial state P { initial state A { always -> B }  final state B  on done.state.P if event.x -> P }
"""
    assert codes(source) == [("E116", 2, 86)]


def test_an_always_rule_reads_no_event_and_is_not_allowed_in_a_choice_state() -> None:
    source = "flow demo\ninitial state A { always if event.x -> B }\nfinal state B\n"
    assert [c for c, *_ in codes(source)] == ["E116"]
    choice = "flow demo\ninitial choice state A { always -> B  else -> B }\nfinal state B\n"
    assert "`always` rules are not allowed in a choice state" in errors(choice, "E112")


def test_rules_outside_any_state_are_copied_into_top_level_states_only() -> None:
    source = """\
flow demo
event cancel
initial state A { initial state A1  state A2 }
final state Z
on cancel -> Z
"""
    data = compiled(source)
    inherited = [(t["source"], t["target"]) for t in data["transitions"] if t.get("inherited")]
    assert inherited == [("A", "Z")]


def test_unhandled_on_a_compound_state_applies_to_children_that_set_none() -> None:
    source = """\
flow demo
event go
initial state A {
  unhandled ignore
  initial state A1 { on go -> A2 }
  state A2 { unhandled refuse  on go -> A1 }
  state A3 { initial state A31  on go -> A1 }
}
"""
    data = compiled(source)
    ignoring = {s["name"] for s in data["states"] if s.get("unhandled") == "ignore"}
    assert ignoring == {"A", "A1", "A3", "A31"}


def test_a_rule_may_leave_a_region_or_target_the_parallel_state_itself() -> None:
    source = """\
flow demo
event go
event back
initial parallel state P {
  state R1 { initial state A { on go -> Out  on back -> P } }
  state R2 { initial state B }
  on go -> R2
}
state Out
"""
    data = compiled(source)
    assert {(t["source"], t["target"]) for t in data["transitions"]} == {
        ("A", "Out"),
        ("A", "P"),
        ("P", "R2"),
    }


def test_crossing_into_a_sibling_region_names_both_regions() -> None:
    source = """\
flow demo
event go
initial parallel state P {
  state R1 { initial state A { on go -> R2 } }
  state R2 { initial state B }
}
"""
    (message,) = errors(source, "E134")
    assert message == (
        "transition crosses regions: `P.R1.A` is in region `P.R1`, `P.R2` in region `P.R2` "
        "of parallel state `P`"
    )


@pytest.mark.parametrize(
    ("source", "code"),
    [
        ("flow demo\nhistory H\ninitial state A\n", "E131"),
        ("flow demo\ninitial state A { initial state B  initial state C }\n", "E132"),
        ("flow demo\ninitial parallel state P\n", "E137"),
        ("flow demo\ninitial choice state A { initial state B  else -> A }\n", "E137"),
        ("flow demo\ninitial parallel final state P { state A }\n", "E111"),
        (
            "flow demo\ninitial state A {\n  initial state B\n  history H -> H\n}\n",
            "E135",
        ),
        (
            "flow demo\ninitial state A {\n  initial state B\n  history H -> B back\n}\n",
            "E003",
        ),
    ],
)
def test_shape_errors(source: str, code: str) -> None:
    assert code in [c for c, *_ in codes(source)]


def test_history_at_the_top_level_says_where_it_belongs() -> None:
    (message,) = errors("flow demo\nhistory H\ninitial state A\n", "E131")
    assert message == "history `H` at the top level"


def test_soft_keywords_still_name_fields_and_states() -> None:
    source = """\
flow demo
context { history: list[str] = [], parallel: int = 0 }
event go
initial state history { on go -> parallel do history += ["x"]; parallel += 1 }
final state parallel
"""
    data = compiled(source)
    assert [s["name"] for s in data["states"]] == ["history", "parallel"]
    assert data["ir_version"] == 1


def test_tests_and_migrations_name_nested_states_by_their_ir_names() -> None:
    source = """\
flow demo
version 2
event go
initial state A { initial state Paused { on go -> B.Paused } }
state B { initial state Paused }
migrate from 1 { state Old -> B.Paused }
test "moves" { send go  expect state B.Paused }
"""
    result = compile_source(source, "h.flow")
    assert not result.errors, result.errors
    assert result.flow is not None
    assert result.flow.migrations[0].states == {"Old": "B.Paused"}
    wrong = source.replace("expect state B.Paused", "expect state B.Pausd")
    assert [d.code for d in compile_source(wrong, "h.flow").errors] == ["E104"]


def test_an_unguarded_arrow_right_after_a_history_is_its_default_wherever_the_line_breaks() -> None:
    source = """\
flow demo
event go
initial state A {
  initial state B { on go -> C }
  state C
  history H
    -> C
  if 1 > 2 -> B
}
"""
    data = compiled(source)
    (history,) = [s for s in data["states"] if s.get("kind") == "history"]
    assert history["default"] == "C"
    # a guarded `-> X` after a history is a direct rule of the state
    assert [(t["source"], t["kind"], t["target"]) for t in data["transitions"]] == [
        ("A", "direct", "B"),
        ("B", "event", "C"),
    ]


def test_a_history_default_written_as_a_path_tail_lowers_to_the_ir_name() -> None:
    source = """\
flow demo
initial state A {
  initial state B { initial state C  state D }
  history deep H -> B.D
}
state X { initial state D }
"""
    data = compiled(source)
    (history,) = [s for s in data["states"] if s.get("kind") == "history"]
    assert history["default"] == "A.B.D"


def test_a_rule_for_an_event_and_a_completion_event_compiles() -> None:
    # `on e, done.state.P -> X` once crashed the type checker (E000): done events are not in
    # the declared events.
    from flowc.compiler import compile_source

    text = """
flow f
event e(n: int)
initial parallel state P {
  state R { initial state a { on e -> b }  final state b }
}
state Q {
  on e, done.state.P -> Z
}
final state Z
"""
    result = compile_source(text + "", "f.flow")
    assert result.flow is not None, [str(d) for d in result.diagnostics]
    bad = compile_source(text.replace("-> Z", "if event.n > 0 -> Z"), "f.flow")
    assert bad.flow is None
    assert not any(d.code == "E000" for d in bad.diagnostics)
