"""Lint of flows with child flows: what the runtime and the children send counts as sent, what
an invoke reads and writes as used, and an event declared for the parent as no unused one."""

from __future__ import annotations

from flowc.compiler import compile_source

CHILD = """flow payment
context { amount: int = 0 }
event charge
internal event progress(pct: int)
initial state Charging {
  entry do send progress(pct: 10) to parent
  on charge if amount > 0 -> Paid
}
final state Paid with {"receipt": "r-1"}
"""

PARENT = """flow order
context { total: int = 5, pay_id: str = "", receipt: str = "", seen: int = 0 }
internal event progress(pct: int)
initial state Paying {
  invoke payment(amount: total) as pay into pay_id finalize do seen += 1
  on done.invoke.pay -> Done do receipt = event.receipt
  on progress -> Paying
}
final state Done with {"receipt": receipt, "seen": seen}
"""


def warnings(source: str, path: str = "order.flow") -> list[str]:
    result = compile_source(source, path, flows={"payment": CHILD})
    assert not result.errors, [str(d) for d in result.errors]
    return [f"{d.code} {d.message}" for d in result.warnings]


def test_a_parent_with_its_child_is_clean() -> None:
    assert warnings(PARENT) == []


def test_a_child_declares_what_it_sends_its_parent_without_accepting_it() -> None:
    assert warnings(CHILD, "payment.flow") == []


def test_the_fields_an_invoke_reads_and_writes_are_used() -> None:
    # Without the invoke, `total`, `pay_id` and `seen` are read or written nowhere else.
    alone = PARENT.replace(
        "  invoke payment(amount: total) as pay into pay_id finalize do seen += 1\n", ""
    ).replace("on done.invoke.pay -> Done do receipt = event.receipt", "-> Done")
    unused = [w for w in warnings(alone.replace(', "seen": seen', "")) if w.startswith("W312")]
    assert len(unused) == 3


def test_an_internal_event_only_a_child_sends_is_sent() -> None:
    no_child_send = CHILD.replace("  entry do send progress(pct: 10) to parent\n", "")
    result = compile_source(PARENT, "order.flow", flows={"payment": no_child_send})
    assert [d.code for d in result.warnings] == ["W323"]
    assert "`progress`" in result.warnings[0].message


def test_an_unhandled_error_event_is_no_unused_event() -> None:
    # `error.invoke.pay` has no rule: the compiler declared it, nobody can remove it.
    assert not [w for w in warnings(PARENT) if w.startswith("W310")]
