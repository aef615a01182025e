"""`final state X with {...}`: done data, the payload of the parent's `done.state` event."""

from __future__ import annotations

import pytest

from flowc.compiler import compile_source
from flowc.runtime import Machine, Rejection

CHECKOUT = """
flow checkout
event pay(amount: int)
event cancel
event poke
context { total: int = 0, paid: bool = false, seen: int = 0 }
initial state Order {
  initial state Open { on pay -> Paid do total = event.amount  on cancel -> Dropped }
  final state Paid with {"amount": total * 2, "ok": true} { entry do total += 1 }
  final state Dropped with {"amount": 0, "ok": false}
  on done.state.Order -> Closed do paid = event.ok; seen = event.amount
}
state Closed { on poke -> Closed }
"""


def test_the_done_event_carries_the_data_evaluated_after_the_entry_actions() -> None:
    inst = Machine.from_source(CHECKOUT).start()
    inst.send("pay", {"amount": 20})
    assert inst.state == "Closed"
    assert inst.context == {"total": 21, "paid": True, "seen": 42}
    inst = Machine.from_source(CHECKOUT).start()
    inst.send("cancel")
    assert inst.context == {"total": 0, "paid": False, "seen": 0}


def test_hosts_cannot_send_a_done_event_that_carries_data() -> None:
    inst = Machine.from_source(CHECKOUT).start()
    refused = inst.send("done.state.Order", {"amount": 1, "ok": True})
    assert type(refused) is Rejection and refused.code == "unknown_event"


def test_the_ir_declares_the_done_event_with_the_fields() -> None:
    result = compile_source(CHECKOUT, "c.flow")
    assert result.flow is not None
    done = next(e for e in result.flow.events if e.name == "done.state.Order")
    assert [(f.name, f.type.kind) for f in done.fields] == [("amount", "int"), ("ok", "bool")]
    paid = next(s for s in result.flow.states if s.name == "Paid")
    assert paid.done_data is not None and paid.done_data.op == "map"


def errors(src: str) -> list[str]:
    result = compile_source(src, "c.flow")
    return [d.code for d in result.diagnostics if d.severity == "error"]


@pytest.mark.parametrize(
    ("old", "new", "codes"),
    [
        (' with {"amount": 0, "ok": false}', "", ["E218"]),
        ('{"amount": 0, "ok": false}', '{"amount": "0", "ok": false}', ["E218"]),
        ('{"amount": 0, "ok": false}', "total", ["E218"]),
        # (a top-level final state's data is the flow's done data, read by a parent: no error)
        ("state Closed { on poke -> Closed }", 'final state Closed with {"a": 1}', []),
        ("seen = event.amount", "seen = event.nope", ["E108"]),
        ("paid = event.ok", "paid = event.amount", ["E202"]),
    ],
)
def test_mistakes(old: str, new: str, codes: list[str]) -> None:
    assert old in CHECKOUT
    assert errors(CHECKOUT.replace(old, new)) == codes
