"""Child flows (`invoke`), fan-out and messages: parsed alike by both parsers, lowered to the
IR version 5 members, children found by name or beside the file and embedded."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flowc.compiler import ast, compile_source, fastparse
from flowc.compiler.driver import compile_file
from flowc.compiler.parse import parse_source
from flowc.runtime.model import CompiledFlow, check_ir

PAYMENT = """flow payment
context { amount: int = 0, card: str = "" }
event charge
event refund(reason: str)
internal event progress(pct: int)
initial state Charging {
  entry do send progress(pct: 10) to parent
  on charge -> Paid
}
final state Paid with {"receipt": "r-1", "amount": amount}
"""

ORDER = """flow order
context {
  total: int = 5
  card: str = "x"
  pay_id: str = ""
  receipt: str = ""
  items: list[int] = [1, 2]
  seen: int = 0
}
internal event progress(pct: int)
initial state Paying {
  invoke payment(amount: total, card: card) as pay into pay_id forward finalize do seen += 1
  on done.invoke.pay -> Quotes do receipt = event.receipt
  on error.invoke.pay -> Failed do send refund(reason: event.message) to pay
  on progress -> Paying
}
state Quotes {
  invoke payment(amount: x * i) for x, i in items as quotes join 2
  on done.invoke.quotes -> Done do receipt = event.results[0].receipt
  on error.* -> Failed
}
final state Done with {"receipt": receipt}
final state Failed with {"receipt": ""}
"""


def compiled(source: str, **flows: str) -> CompiledFlow:
    result = compile_source(source, "order.flow", flows=flows)
    assert not result.errors, [str(d) for d in result.errors]
    assert result.flow is not None
    return result.flow


def invokes(source: str) -> tuple[ast.Invoke, ...]:
    parsed = parse_source(source, fast_path=False)
    assert parsed.diagnostics == []
    assert parsed.module is not None
    return tuple(i for d in parsed.module.decls if isinstance(d, ast.StateDecl) for i in d.invokes)


def test_the_lark_parser_reads_every_clause_of_an_invoke() -> None:
    pay, quotes = invokes(ORDER)
    assert (pay.flow.name, pay.id.name, [f.name for f, _ in pay.args]) == (
        "payment",
        "pay",
        ["amount", "card"],
    )
    assert [i.name for i in pay.into] == ["pay_id"] and pay.forward and len(pay.finalize) == 1
    assert pay.each is None and pay.join is None
    assert quotes.item is not None and quotes.item.name == "x"
    assert quotes.index is not None and quotes.index.name == "i"
    assert isinstance(quotes.each, ast.Name) and quotes.each.name == "items"
    assert quotes.join is not None and quotes.join.name == "2"
    assert not quotes.forward and quotes.finalize == () and quotes.into == ()


def test_the_id_of_an_invoke_defaults_to_its_flow() -> None:
    (only,) = invokes("flow a\ninitial state A { invoke payment() }\n")
    assert only.alias is None and only.id.name == "payment"


@pytest.mark.parametrize(
    "text",
    [
        ORDER,
        PAYMENT,
        "flow a\ncontext { to: int = 1, into: int = 2, join: int = 3 }\n"
        "initial state A { entry do to = into + join }\n",
    ],
)
def test_the_fast_parser_leaves_the_new_syntax_to_lark_or_agrees(text: str) -> None:
    fast = fastparse.parse_module(text)
    reference = parse_source(text, fast_path=False)
    assert reference.diagnostics == []
    assert fast is None or fast == reference.module


@pytest.mark.parametrize(
    ("join", "message"),
    [("some", "unexpected `some` after `join`"), ("0", "a join waits for 1 to")],
)
def test_a_join_is_all_any_or_a_count(join: str, message: str) -> None:
    source = (
        "flow a\ncontext { xs: list[int] = [] }\n"
        f"initial state A {{ invoke b() for x in xs join {join} }}\n"
    )
    parsed = parse_source(source, fast_path=False)
    assert [d.code for d in parsed.diagnostics] == ["E003"]
    assert message in parsed.diagnostics[0].message


def test_an_invoke_lowers_to_the_ir_members_of_version_5() -> None:
    flow = compiled(ORDER, payment=PAYMENT)
    assert flow.ir_version == 5
    paying = next(s for s in flow.states if s.name == "Paying")
    (pay,) = paying.invokes
    data = json.loads(pay.model_dump_json(exclude_defaults=True))
    assert data == {
        "id": "pay",
        "flow": "payment",
        "input": {
            "op": "map",
            "args": [
                {"op": "lit", "value": "amount"},
                {"op": "ctx", "value": "total"},
                {"op": "lit", "value": "card"},
                {"op": "ctx", "value": "card"},
            ],
        },
        "forward": True,
        "finalize": [
            {
                "op": "add",
                "target": ["seen"],
                "value": {"op": "lit", "value": 1},
            }
        ],
        "id_target": ["pay_id"],
        "line": 12,
        "column": 3,
    }


def test_a_fan_out_lowers_its_list_locals_and_join() -> None:
    flow = compiled(ORDER, payment=PAYMENT)
    quotes = next(s for s in flow.states if s.name == "Quotes").invokes[0]
    assert quotes.each is not None and quotes.each.model_dump(exclude_defaults=True) == {
        "op": "ctx",
        "value": "items",
    }
    assert (quotes.item, quotes.index, quotes.join) == ("x", "i", 2)
    assert quotes.input is not None
    product = quotes.input.args[1]
    assert product.op == "*" and [a.op for a in product.args] == ["local", "local"]


@pytest.mark.parametrize(("written", "count"), [("all", None), ("any", 1), ("3", 3), ("", None)])
def test_a_join_lowers_to_a_count(written: str, count: int | None) -> None:
    join = f" join {written}" if written else ""
    source = (
        "flow a\ncontext { xs: list[int] = [] }\ninternal event progress(pct: int)\n"
        f"initial state A {{ invoke payment(amount: x) for x in xs as p{join} }}\n"
    )
    flow = compiled(source, payment=PAYMENT)
    assert flow.states[0].invokes[0].join == count


def test_the_implicit_events_are_internal_with_the_contract_fields() -> None:
    flow = compiled(ORDER, payment=PAYMENT)
    events = {e.name: e for e in flow.events}
    fields = {n: [(f.name, f.type.kind) for f in e.fields] for n, e in events.items()}
    assert fields["done.invoke.pay"] == [("receipt", "str"), ("amount", "int")]
    assert fields["error.invoke.pay"] == [("kind", "str"), ("message", "str")]
    assert fields["done.invoke.quotes"] == [("results", "list")]
    assert events["done.invoke.quotes"].fields[0].type.item is not None
    assert events["done.invoke.quotes"].fields[0].type.item.name == "invoke.quotes.result"
    assert all(events[n].internal for n in events if ".invoke." in n)
    records = {r.name: [f.name for f in r.fields] for r in flow.records}
    assert records["invoke.quotes.result"] == ["receipt", "amount"]


def test_the_child_is_embedded_whole_and_the_parent_hash_covers_it() -> None:
    flow = compiled(ORDER, payment=PAYMENT)
    child = flow.children["payment"]
    alone = compile_source(PAYMENT, "payment.flow").flow
    assert alone is not None and child == alone and child.hash == alone.hash
    other = compiled(ORDER, payment=PAYMENT.replace('"r-1"', '"r-2"'))
    assert other.hash != flow.hash
    raw = json.loads(flow.to_json())
    check_ir(raw)
    assert CompiledFlow.from_json(flow.to_json()) == flow


def test_send_to_lowers_to_a_send_with_a_target_and_no_delay() -> None:
    flow = compiled(ORDER, payment=PAYMENT)
    sends = [a for t in flow.transitions for a in t.actions if a.op == "send"]
    assert [(a.event, a.to, a.delay) for a in sends] == [("refund", "pay", None)]
    child = flow.children["payment"]
    assert [(a.event, a.to) for a in child.states[0].entry] == [("progress", "parent")]
    assert child.ir_version == 5


def test_top_level_done_data_lowers_on_the_final_states() -> None:
    flow = compiled(ORDER, payment=PAYMENT)
    done = next(s for s in flow.states if s.name == "Done")
    assert done.done_data is not None and done.done_data.op == "map"


def test_a_child_is_found_beside_the_invoking_file(tmp_path: Path) -> None:
    (tmp_path / "payment.flow").write_text(PAYMENT, encoding="utf-8")
    (tmp_path / "order.flow").write_text(ORDER, encoding="utf-8")
    result = compile_file(tmp_path / "order.flow")
    assert not result.errors, [str(d) for d in result.errors]
    assert result.flow is not None and list(result.flow.children) == ["payment"]


def test_a_flow_given_by_path_is_read_from_that_file(tmp_path: Path) -> None:
    elsewhere = tmp_path / "lib" / "pay.flow"
    elsewhere.parent.mkdir()
    elsewhere.write_text(PAYMENT, encoding="utf-8")
    result = compile_source(ORDER, "<input>", flows={"payment": elsewhere})
    assert not result.errors, [str(d) for d in result.errors]


def test_flows_without_any_of_it_keep_their_version_and_bytes() -> None:
    source = "flow a\nevent go\ninitial state A { on go -> B }\nfinal state B\n"
    flow = compiled(source)
    assert flow.ir_version == 1
    assert "children" not in flow.to_json() and "invokes" not in flow.to_json()
    assert "done_data" not in flow.to_json()


def test_top_level_done_data_alone_needs_version_2_not_5() -> None:
    flow = compiled('flow a\ninitial state A { -> B }\nfinal state B with {"n": 1}\n')
    assert flow.ir_version == 2
