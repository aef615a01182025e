"""The checks of child flows: each mistake reported with its code at its place (all at once),
never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from flowc.compiler import compile_source
from flowc.compiler.diagnostics import Diagnostic, render_text
from flowc.compiler.driver import compile_file

PAYMENT = """flow payment
context { amount: int = 0, card: str = "", note: str? }
event charge
event refund(reason: str)
internal event progress(pct: int)
initial state Charging {
  entry do send progress(pct: 10) to parent
  on charge -> Paid
  on refund -> Paid
}
final state Paid with {"receipt": "r-1", "amount": amount}
"""

HEAD = """flow order
context { total: int = 5, label: str = "x", xs: list[int] = [], pay_id: str = "", n: int = 0 }
internal event progress(pct: int)
"""


def diagnostics(body: str, **flows: str) -> list[Diagnostic]:
    children = {"payment": PAYMENT, **flows}
    return compile_source(HEAD + body, "order.flow", flows=children).diagnostics


def found(body: str, **flows: str) -> list[tuple[str, int, int]]:
    """(code, line, column) of each error, lines counted in `body` (1 = its first line)."""
    skip = HEAD.count("\n")
    return [
        (d.code, d.span.line - skip, d.span.column)
        for d in diagnostics(body, **flows)
        if d.code[0] == "E"
    ]


def messages(body: str, **flows: str) -> list[str]:
    return [f"{d.code} {d.message} | {d.help}" for d in diagnostics(body, **flows)]


def test_an_unknown_flow_suggests_a_known_one() -> None:
    body = "initial state A { invoke paymnet() }\n"
    assert found(body) == [("E140", 1, 26)]
    assert "did you mean `payment`?" in messages(body)[0]


def test_an_unknown_flow_suggests_a_file_beside_the_parent(tmp_path: Path) -> None:
    (tmp_path / "payment.flow").write_text(PAYMENT, encoding="utf-8")
    (tmp_path / "order.flow").write_text(
        HEAD + "initial state A { invoke paymnt() }\n", encoding="utf-8"
    )
    result = compile_file(tmp_path / "order.flow")
    assert [(d.code, d.help) for d in result.errors] == [("E140", "did you mean `payment`?")]


def test_a_flow_invoking_itself_is_a_cycle() -> None:
    assert found("initial state A { invoke order() }\n") == [("E141", 1, 26)]


def test_a_cycle_through_another_flow_is_reported_at_the_invoke_that_closes_it() -> None:
    back = "flow ping\ninitial state A { invoke order() }\n"
    got = messages("initial state A { invoke ping() }\n", ping=back)
    assert len(got) == 1 and got[0].startswith("E142 flow `ping` does not compile")
    assert "E141 flow `order` is invoked by itself" in got[0]


def test_a_broken_child_is_summarised_with_its_first_error_and_a_count() -> None:
    broken = "flow payment\ninitial state A { on nope -> B }\n"
    (message,) = messages("initial state A { invoke payment() }\n", payment=broken)
    assert message.startswith(
        "E142 flow `payment` does not compile: payment.flow:2:22: E105 unknown event `nope` "
        "(and 1 more)"
    )


def test_arguments_are_checked_against_the_child_context() -> None:
    body = 'initial state A { invoke payment(amount: label, crad: "c", card: total) }\n'
    assert found(body) == [("E201", 1, 42), ("E108", 1, 49), ("E201", 1, 66)]
    assert "did you mean `card`?" in messages(body)[1]


def test_a_child_field_without_a_default_must_be_given() -> None:
    child = PAYMENT.replace("amount: int = 0", "amount: int")
    body = "initial state A { invoke payment() }\n"
    assert found(body, payment=child) == [("E215", 1, 26)]


def test_arguments_read_no_event() -> None:
    body = "initial state A { invoke payment(amount: event.n) }\n"
    assert [c for c, *_ in found(body)] == ["E116"]


def test_a_fan_out_goes_through_a_list_and_binds_locals() -> None:
    ok = "initial state A { invoke payment(amount: x + i) for x, i in xs as p join any }\n"
    assert found(ok) == []
    assert found("initial state A { invoke payment(amount: x) for x in total as p }\n") == [
        ("E201", 1, 54)
    ]


def test_a_repeated_invoke_id_is_reported() -> None:
    body = "initial state A {\n  invoke payment() as p\n  invoke payment() as p\n}\n"
    assert found(body) == [("E143", 3, 23)]


def test_join_without_for_and_invokes_in_final_or_choice_states() -> None:
    body = (
        "initial state A { invoke payment() as a join 2\n  -> B\n  -> C\n}\n"
        "final state B { invoke payment() as b }\n"
        "choice state C { invoke payment() as c\n  else -> B\n}\n"
    )
    assert found(body) == [("E144", 1, 46), ("E144", 5, 17), ("E144", 6, 18)]


def test_into_writes_a_str_field() -> None:
    assert found("initial state A { invoke payment() as p into n }\n") == [("E202", 1, 46)]


def test_a_message_goes_to_parent_or_an_invoke_id() -> None:
    body = (
        "initial state A {\n  invoke payment() as pay\n"
        '  on progress -> A do send refund(reason: "r") to pya\n}\n'
    )
    assert found(body) == [("E145", 3, 51)]
    assert "did you mean `pay`?" in messages(body)[0]


def test_a_message_is_not_scheduled() -> None:
    body = (
        "initial state A {\n  invoke payment() as pay\n"
        '  on progress -> A do send refund(reason: "r") after 5s to pay\n}\n'
    )
    assert found(body) == [("E145", 3, 60)]


def test_a_message_to_a_child_is_an_event_it_declares_with_its_fields() -> None:
    body = (
        "initial state A {\n  invoke payment() as pay\n"
        "  on progress -> A do send refnud to pay; send refund(reason: 1) to pay\n}\n"
    )
    assert found(body) == [("E146", 3, 28), ("E201", 3, 63)]
    assert "did you mean `refund`?" in messages(body)[0]


def test_a_message_to_the_parent_is_declared_here() -> None:
    body = "initial state A { on progress -> A do send missing to parent }\n"
    assert found(body) == [("E105", 1, 44)]


def test_what_a_child_sends_its_parent_is_declared_by_the_parent_alike() -> None:
    head = HEAD.replace("internal event progress(pct: int)", "event progress(pct: str)")
    result = compile_source(
        head + "initial state A { invoke payment() }\n", "order.flow", flows={"payment": PAYMENT}
    )
    (error,) = result.errors
    assert error.code == "E146"
    assert error.message == (
        "flow `payment` sends `event progress(pct: int)` to its parent, which declares "
        "`event progress(pct: str)`"
    )


def test_types_passed_to_a_child_are_declared_alike() -> None:
    child = (
        "flow item\ntype Line { sku: str, qty: int = 1 }\ncontext { line: Line? }\ninitial state A"
    )
    body = "initial state A { invoke item(line: none) }\n"
    assert found(body, item=child) == [("E147", 1, 26)]
    same = "type Line { sku: str, qty: int = 1 }\n"
    assert found(same + body, item=child) == []
    other = "type Line { sku: str }\n"
    assert "declares differently" in messages(other + body, item=child)[0]


def test_rules_read_the_done_data_of_a_child() -> None:
    body = (
        "initial state A {\n  invoke payment() as pay\n"
        "  on done.invoke.pay -> B do label = event.receipt; n = event.recipt\n"
        "  on error.invoke.pay -> B do label = event.kind + event.message\n}\nfinal state B\n"
    )
    assert found(body) == [("E108", 3, 57)]


def test_top_level_done_data_agrees_across_final_states() -> None:
    body = 'initial state A { -> B\n  -> C\n}\nfinal state B with {"n": 1}\nfinal state C\n'
    assert found(body) == [("E218", 5, 13)]


def test_every_mistake_is_reported_at_once_with_a_caret() -> None:
    body = (
        "initial state A {\n  invoke paymnt()\n  invoke payment(amount: label) as p join 2\n"
        "  invoke payment() as p\n  on progress -> A do send progress(pct: 1) after 1s to q\n}\n"
    )
    codes = sorted(c for c, *_ in found(body))
    assert codes == ["E140", "E143", "E144", "E145", "E145", "E201"]
    for d in diagnostics(body):
        rendered = render_text(d, (HEAD + body).splitlines()[d.span.line - 1], color=False)
        assert f"[{d.code}]" in rendered and "^" in rendered


@pytest.mark.parametrize(
    "body",
    [
        "initial state A { invoke payment( }\n",
        "initial state A { invoke payment() for x in }\n",
        "initial state A { invoke payment() as }\n",
        "initial state A { invoke payment() finalize }\n",
        "initial state A { invoke () }\n",
    ],
)
def test_broken_invoke_syntax_is_a_syntax_error(body: str) -> None:
    assert [c for c, *_ in found(body)][:1] in (["E003"], ["E004"])


def test_finalize_of_an_unknown_flow_reads_event_without_noise() -> None:
    body = "initial state A { invoke paymnt() as p finalize do n = event.x }\n"
    assert [c for c, *_ in found(body)] == ["E140"]


def test_a_top_level_state_with_done_data_is_final() -> None:
    body = 'initial state A with {"n": 1} { -> B }\nfinal state B\n'
    assert messages(body)[0].startswith("E218 `A` has done data but is not final")
