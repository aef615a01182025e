"""The action-level statements of IR version 2: `if / elif / else`, `raise`, `emit` (with
`effect` declarations) and computed timer delays (`after EXPR UNIT`), from source to IR."""

from __future__ import annotations

import json
from typing import Any

import pytest

from flowc.compiler.driver import compile_source
from flowc.compiler.emit.labels import trigger_text
from flowc.compiler.emit.mermaid import to_mermaid
from flowc.compiler.format import format_source
from flowc.runtime.model import CompiledFlow

HEAD = """flow demo
event go(n: int)
event poke(n: int, note: str = "")
effect lamp(lit: bool, level: int = 1, why: str?)
context { x: int = 0, backoff_ms: int = 100, retry_s: int = 2 }
"""


def compiled(source: str) -> CompiledFlow:
    result = compile_source(source, "case.flow")
    assert not result.errors, [d.message for d in result.diagnostics]
    assert result.flow is not None
    return result.flow


def ir(source: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(compiled(source).to_json())
    return data


def codes(source: str) -> list[tuple[str, int, int]]:
    result = compile_source(source, "case.flow")
    return [(d.code, d.span.line, d.span.column) for d in result.errors]


def first_actions(source: str) -> list[dict[str, Any]]:
    actions: list[dict[str, Any]] = ir(source)["transitions"][0]["actions"]
    return actions


def lit(value: Any) -> dict[str, Any]:
    return {"op": "lit", "value": value}


# ---- if / elif / else -----------------------------------------------------------------------


def test_if_elif_else_lowers_to_branches_tried_in_order() -> None:
    (action,) = first_actions(
        HEAD + "initial state A { on go -> A do "
        "if event.n > 2 { x = 1 } elif event.n > 1 { x = 2; x += 1 } else { x = 3 } }\n"
    )
    assert action["op"] == "if"
    guards = [b.get("guard") for b in action["branches"]]
    assert guards[0] == {"op": ">", "args": [{"op": "event", "value": "n"}, lit(2)]}
    assert guards[1] == {"op": ">", "args": [{"op": "event", "value": "n"}, lit(1)]}
    assert guards[2] is None  # `else`: no guard, last
    assert [len(b["actions"]) for b in action["branches"]] == [1, 2, 1]


def test_if_nests_and_may_leave_a_block_empty() -> None:
    (action,) = first_actions(
        HEAD + "initial state A { on go -> A do if x > 0 { if x > 1 { x = 0 } } else { } }\n"
    )
    inner = action["branches"][0]["actions"][0]
    assert inner["op"] == "if" and len(inner["branches"]) == 1
    assert action["branches"][1].get("actions", []) == []


def test_if_works_in_entry_and_exit_blocks() -> None:
    data = ir(
        HEAD + "initial state A { entry do if x > 0 { x = 0 } else { x = 1 }\n"
        "  exit do x = 2; if x == 2 { x = 3 }\n  on go -> B }\nfinal state B\n"
    )
    (state, _) = data["states"]
    assert state["entry"][0]["op"] == "if"
    assert [a["op"] for a in state["exit"]] == ["set", "if"]


def test_an_if_action_ending_a_routing_rule_does_not_take_the_else_route() -> None:
    """`else {` continues the `if`; `else ->` is the choice state's next rule."""
    data = ir(
        HEAD + "initial state A { on go -> C }\n"
        "choice state C {\n"
        "  if x > 1 -> A do if x > 2 { x = 1 }\n"
        "  else -> B\n"
        "}\n"
        "choice state D {\n"
        "  if x > 1 -> A do if x > 2 { x = 1 } else  # a comment between\n"
        "  { x = 2 }\n"
        "  else -> B\n"
        "}\n"
        "final state B\n"
    )
    routes = [t for t in data["transitions"] if t["source"] in ("C", "D")]
    assert [(t["source"], t["kind"]) for t in routes] == [
        ("C", "choice"),
        ("C", "else"),
        ("D", "choice"),
        ("D", "else"),
    ]
    assert len(routes[0]["actions"][0]["branches"]) == 1
    assert len(routes[2]["actions"][0]["branches"]) == 2


def test_an_if_guard_must_be_a_bool() -> None:
    assert codes(HEAD + "initial state A { on go -> A do if x { x = 1 } }\n") == [("E205", 6, 36)]


def test_an_if_branch_is_typechecked_like_any_action() -> None:
    found = codes(HEAD + 'initial state A { on go -> A do if x > 1 { x = "a" } else { y = 1 } }\n')
    assert [c for c, *_ in found] == ["E202", "E107"]


# ---- raise ----------------------------------------------------------------------------------


def test_raise_lowers_to_the_event_and_its_payload_as_written() -> None:
    (with_payload, bare) = first_actions(
        "flow demo\nevent go\nevent poke(n: int)\nevent ping\ncontext { x: int = 0 }\n"
        "initial state A { on go -> A do raise poke(n: x + 1); raise ping }\n"
        "state B { on poke -> A\n on ping -> A }\n"
    )
    assert with_payload == {
        "op": "raise",
        "event": "poke",
        "value": {
            "op": "map",
            "args": [lit("n"), {"op": "+", "args": [{"op": "ctx", "value": "x"}, lit(1)]}],
        },
    }
    assert bare == {"op": "raise", "event": "ping"}  # no payload: `value` null, left out


@pytest.mark.parametrize(
    ("action", "code", "column"),
    [
        ("raise pokee(n: 1)", "E105", 39),  # not a declared event
        ('raise poke(n: "a")', "E201", 47),  # the field's type
        ("raise poke(m: 1, n: 1)", "E108", 44),  # no such field
        ("raise poke(n: 1, n: 2)", "E103", 50),  # given twice
        ('raise poke(note: "a")', "E215", 33),  # `n` has no default
    ],
)
def test_raise_checks_the_event_and_payload_like_a_test_send(
    action: str, code: str, column: int
) -> None:
    assert codes(HEAD + f"initial state A {{ on go -> A do {action} }}\n") == [(code, 6, column)]


# ---- effects and emit -----------------------------------------------------------------------


def test_effects_are_declared_in_the_ir_and_emit_fills_in_defaults() -> None:
    data = ir(HEAD + "initial state A { on go -> A do emit lamp(lit: event.n > 1) }\n")
    (lamp,) = data["effects"]
    assert lamp["name"] == "lamp" and [f["name"] for f in lamp["fields"]] == ["lit", "level", "why"]
    (emit,) = data["transitions"][0]["actions"]
    assert emit["op"] == "emit" and emit["event"] == "lamp"
    args = emit["value"]["args"]
    assert args[0] == lit("lit")
    # the host always gets every field: the default of `level`, none for the optional `why`
    assert args[2:] == [lit("level"), lit(1), lit("why"), {"op": "lit"}]
    assert data["ir_version"] == 2


@pytest.mark.parametrize(
    ("source", "code", "line", "column"),
    [
        ("initial state A { on go -> A do emit lamb(lit: true) }\n", "E214", 6, 38),
        ("initial state A { on go -> A do emit lamp(level: 2) }\n", "E215", 6, 33),
        ("initial state A { on go -> A do emit lamp(lit: 1) }\n", "E201", 6, 48),
        ("effect lamp\ninitial state A\n", "E103", 6, 8),
    ],
)
def test_emit_is_checked_against_the_declared_effect(
    source: str, code: str, line: int, column: int
) -> None:
    assert codes(HEAD + source) == [(code, line, column)]


def test_the_new_keywords_stay_soft() -> None:
    data = ir(
        "flow demo\nevent go\nevent raise\neffect emit(elif: int)\n"
        "context { effect: int = 0, emit: int = 0, raise: int = 0, elif: int = 0 }\n"
        "initial state A { on go -> A do effect = 1; emit += 1; raise raise;\n"
        "  emit emit(elif: elif)\n"
        "  on raise -> A }\n"
    )
    ops = [a["op"] for a in data["transitions"][0]["actions"]]
    assert ops == ["set", "add", "raise", "emit"]


def test_a_flow_without_the_new_statements_stays_version_1() -> None:
    data = ir(
        "flow demo\nevent go\ncontext { x: int = 0 }\ninitial state A { on go -> A do x = 1 }\n"
    )
    assert data["ir_version"] == 1 and "effects" not in data


# ---- computed delays ------------------------------------------------------------------------


def test_a_computed_delay_lowers_to_milliseconds_and_a_constant_one_as_before() -> None:
    data = ir(
        HEAD + "initial state A {\n  after backoff_ms ms -> B\n  after retry_s s -> B\n"
        "  after 2 * retry_s m -> B\n  after 10m -> B\n}\nfinal state B\n"
    )
    ms, s, m, constant = data["transitions"]
    assert ms["after_expr"] == {"op": "ctx", "value": "backoff_ms"} and "after_ms" not in ms
    assert s["after_expr"] == {"op": "*", "args": [{"op": "ctx", "value": "retry_s"}, lit(1000)]}
    assert m["after_expr"]["args"][1] == lit(60_000)
    assert constant["after_ms"] == 600_000 and "after_expr" not in constant


def test_a_computed_delay_reads_as_written_in_diagrams() -> None:
    flow = compiled(
        HEAD + "initial state A {\n  after backoff_ms ms -> B\n  after retry_s s -> B\n}\n"
        "final state B\n"
    )
    assert [trigger_text(t) for t in flow.transitions] == [
        "after backoff_ms ms",
        "after retry_s s",
    ]
    assert "after retry_s s" in to_mermaid(flow)


def test_computed_timers_are_not_compared_by_delay_and_their_fields_count_as_used() -> None:
    """Two unguarded computed timers may both fire (their delays differ at run time), so no
    W305; a field read only by a delay is used (no W-lint for an unused field)."""
    result = compile_source(
        "flow demo\ncontext { a: int = 1, b: int = 2 }\n"
        "initial state A {\n  after a s -> B\n  after b s -> C\n}\nfinal state B\nfinal state C\n",
        "case.flow",
    )
    assert [d.code for d in result.diagnostics] == []


def test_a_delay_must_be_a_whole_number_in_a_known_unit() -> None:
    assert codes(HEAD + "initial state A { after backoff_ms weeks -> A }\n") == [("E213", 6, 36)]
    assert codes(HEAD + "initial state A { after backoff_ms / 2 ms -> A }\n") == [("E216", 6, 25)]


# ---- formatting -----------------------------------------------------------------------------


def test_fmt_lays_out_the_new_statements_idempotently_and_keeps_the_hash() -> None:
    source = (
        HEAD + "initial state A {\n"
        "  on go -> A do if x>2{x=1}elif x>3{x = 2;emit lamp(lit:true)}else{raise poke( n: 1 )}\n"
        "  on poke -> A do if true {\n      x = 1\n    } else {\n  x = 2\n    }\n"
        "  after backoff_ms*2 ms -> A\n"
        "}\n"
    )
    once = format_source(source)
    assert format_source(once) == once
    assert (
        "  on go -> A do if x > 2 { x = 1 } elif x > 3 { x = 2; emit lamp(lit: true) } "
        "else { raise poke(n: 1) }\n" in once
    )
    assert "  after backoff_ms * 2 ms -> A\n" in once
    assert compiled(once).hash == compiled(source).hash


def test_a_constant_if_guard_is_w309_at_its_rule_or_state() -> None:
    result = compile_source(
        "flow demo\nevent go\ncontext { x: int = 0 }\n"
        "initial state A {\n  entry do if 1 > 2 { x = 1 }\n"
        "  on go -> B do if x > 0 { if true { x = 2 } } elif x < 0 { x = 3 }\n}\nfinal state B\n",
        "case.flow",
    )
    found = sorted((d.code, d.span.line, d.message) for d in result.diagnostics)
    assert found == [
        ("W309", 4, "the `if` guard `1 > 2` is always false: its actions never run"),
        ("W309", 6, "the `if` guard `true` is always true"),
    ]


def test_explore_tells_contexts_apart_by_what_if_guards_and_delays_read() -> None:
    from flowc.compiler.testing.space import Explorer

    flow = compiled(
        'flow demo\nevent go\ncontext { a: int = 0, b: int = 0, c: int = 1, d: str = "" }\n'
        'initial state A {\n  on go -> A do if a > 0 { if b > 0 { d = "x" } }\n'
        "  after c s -> A\n}\n"
    )
    assert Explorer(flow).read_fields == ["a", "b", "c"]


def test_diagram_labels_read_the_new_actions_as_written() -> None:
    from flowc.compiler.emit.expr_text import actions_text

    flow = compiled(
        HEAD + "initial state A { on go -> A do "
        "if x > 1 { raise poke(n: 1) } elif x > 0 { x = 2 } else { emit lamp(lit: true) } }\n"
        "state B { on poke -> A }\n"
    )
    assert actions_text(flow.transitions[0].actions) == (
        "if x > 1 { raise poke(n: 1) } elif x > 0 { x = 2 } "
        "else { emit lamp(lit: true, level: 1, why: none) }"
    )
