"""Refusal probes: operations that a flow's tests rarely make and another runtime must refuse
exactly as the Python runtime does (an unknown event or state, payloads of the wrong type, of
missing and unknown fields, moves the graph does not allow, an unknown context field at the
start). `flowc vectors` records them as vectors beside the tests'."""

from __future__ import annotations

from typing import Any

from flowc.compiler.testing.moves import Move
from flowc.compiler.testing.values import ValueSource
from flowc.runtime.model import CompiledFlow, FieldDef, TypeRef

#: A name no flow declares (names of the language cannot start with two underscores).
UNKNOWN = "__unknown__"


def probe_contexts(flow: CompiledFlow) -> tuple[dict[str, Any], dict[str, Any]]:
    """A starting context the flow accepts (its required fields set to small values), and the
    same with a field the flow does not have (refused at the start)."""
    context = {name: value for name, value, _ in ValueSource(flow).required_given()}
    return context, {**context, UNKNOWN: 1}


def probe_moves(flow: CompiledFlow) -> list[Move]:
    """From the start: an unknown event, an unknown state, `back`; each event with a payload of
    wrong types and an unknown field, then with no payload at all; then `goto` each state
    without force (the only probes that may be accepted, so they come last)."""
    moves = [Move("send", UNKNOWN), Move("goto", UNKNOWN), Move("back")]
    for event in flow.events:
        wrong = [(f.name, _wrong_value(f.type), "") for f in event.fields if f.type.kind != "json"]
        moves.append(Move("send", event.name, (*wrong, (UNKNOWN, 1, ""))))
    moves += [Move("send", e.name) for e in flow.events if any(_required(f) for f in e.fields)]
    moves += [Move("goto", s.name) for s in flow.states if s.kind != "history"]
    return moves


def _required(field: FieldDef) -> bool:
    return field.required and field.type.kind != "optional"


def _wrong_value(ty: TypeRef) -> Any:
    """A value of another type than `ty` (for an optional, than the type it holds)."""
    kind = ty.item.kind if ty.kind == "optional" and ty.item is not None else ty.kind
    if kind == "str":
        return 1
    if kind == "enum":
        return UNKNOWN
    return "x"
