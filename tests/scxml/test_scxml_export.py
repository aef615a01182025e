"""The exporter (IR to SCXML) and the round trip import -> export -> import, which must keep
behaviour: both flows are run on the same event sequences with the runtime."""

from __future__ import annotations

import xml.etree.ElementTree as ET

from charts import FLAT
from hypothesis import given, settings
from hypothesis import strategies as st

from flowc.compiler.driver import compile_source
from flowc.compiler.scxml.exporter import export_scxml, python_text
from flowc.compiler.scxml.importer import import_scxml
from flowc.runtime import CompiledFlow, Machine, Rejection
from flowc.runtime.model import Expr

ORDER = """flow order "An order"
event pay(amount: int)
event cancel
event note(text: str)
context { paid: int = 0, tries: int = 0, memo: str = "", log: list[str] = [] }
initial state NEW {
  on pay if event.amount > 0 and event.amount <= 500 -> PAID do paid = event.amount; tries += 1
  on pay -> NEW do tries += 1
  on note -> self do memo = event.text; append(log, event.text)
  on cancel -> CANCELLED
}
state PAID {
  on pay -> PAID reenter do paid += event.amount
  on cancel if paid < 100 or not (memo == "keep") -> CANCELLED do memo = "refund"
}
final state CANCELLED
"""


def compiled(text: str, name: str = "x.flow") -> CompiledFlow:
    result = compile_source(text, name)
    assert result.flow is not None, [str(d) for d in result.diagnostics]
    return result.flow


def exported(flow: CompiledFlow) -> str:
    result = export_scxml(flow, "x.flow")
    assert result.text is not None, [str(d) for d in result.diagnostics]
    return result.text


def reimported(flow: CompiledFlow) -> str:
    result = import_scxml(exported(flow), "x.scxml")
    assert result.flow_text is not None, [str(d) for d in result.diagnostics]
    return result.flow_text


def test_the_export_is_scxml_with_the_python_datamodel() -> None:
    text = exported(compiled(ORDER))
    root = ET.fromstring(text)
    ns = "{http://www.w3.org/2005/07/scxml}"
    assert root.tag == f"{ns}scxml"
    assert root.get("datamodel") == "python" and root.get("initial") == "NEW"
    assert [s.get("id") for s in root.iter(f"{ns}state")] == ["NEW", "PAID"]
    assert [s.get("id") for s in root.iter(f"{ns}final")] == ["CANCELLED"]
    first = root.find(f"{ns}state/{ns}transition")
    assert first is not None
    assert first.get("cond") == "(_event.data['amount'] > 0) and (_event.data['amount'] <= 500)"
    assigns = [a.get("expr") for a in first.iter(f"{ns}assign")]
    assert assigns == ["_event.data['amount']", "tries + 1"]
    data = {d.get("id"): d.get("expr") for d in root.iter(f"{ns}data")}
    assert data == {"paid": "0", "tries": "0", "memo": "''", "log": "[]"}
    # `-> self` is SCXML's targetless internal transition, `reenter` an external one
    note = next(t for t in root.iter(f"{ns}transition") if t.get("event") == "note")
    assert note.get("target") is None and note.get("type") == "internal"
    again = [t for t in root.iter(f"{ns}transition") if t.get("event") == "pay"][2]
    assert again.get("target") == "PAID" and again.get("type") is None


def test_timers_become_delayed_sends_cancelled_on_exit() -> None:
    flow = compiled(
        "flow t\nevent go\ninitial state A {\n  after 2s -> B\n  on go -> B\n}\nfinal state B\n"
    )
    text = exported(flow)
    assert (
        '<onentry>\n      <send event="flowc.timer.A.0" id="flowc.timer.A.0" delay="2000ms"/>'
        in text
    )
    assert '<onexit>\n      <cancel sendid="flowc.timer.A.0"/>' in text
    assert '<transition event="flowc.timer.A.0" target="B"/>' in text


def test_what_scxml_cannot_say_is_refused() -> None:
    for source, line in (
        ("flow t\nevent go\ninitial state A {\n  -> B\n}\nfinal state B\n", 4),
        ('flow t\nevent go\ninitial state A {\n  on go reject nope "no"\n}\n', 4),
        ("flow t\nenum Color { RED }\ninitial state A\n", 1),
    ):
        result = export_scxml(compiled(source), "t.flow")
        assert result.text is None
        assert [(d.code, d.span.line) for d in result.diagnostics] == [("E420", line)]


def test_python_text_parenthesises_nested_operations() -> None:
    one, two = Expr(op="lit", value=1), Expr(op="ctx", value="n")
    nested = Expr(op="-", args=(one, Expr(op="-", args=(two, one))))
    assert python_text(nested) == "1 - (n - 1)"
    assert python_text(Expr(op="lit", value=None)) == "None"
    assert python_text(Expr(op="not", args=(Expr(op="lit", value=True),))) == "not True"


def test_the_round_trip_reaches_a_fixed_point() -> None:
    first = reimported(compiled(ORDER))
    second = reimported(compiled(first, "first.flow"))
    assert first == second
    assert first.startswith('flow order "An order"\n')
    # the declarations come back typed (kept in the flowc namespace)
    assert "event pay(amount: int)\n" in first and "event note(text: str)\n" in first
    assert "  log: list[str] = []\n" in first
    # the source refuses unhandled events, so the re-import does too
    assert "unhandled ignore" not in first


EVENTS = st.sampled_from(["pay", "cancel", "note", "bogus"])
AMOUNTS = st.integers(min_value=-5, max_value=700)
TEXTS = st.sampled_from(["keep", "other", ""])


def run(flow: CompiledFlow, steps: list[tuple[str, int, str]]) -> list[object]:
    instance = Machine.from_json(flow.to_json()).start()
    seen: list[object] = []
    for event, amount, text in steps:
        payload = {"pay": {"amount": amount}, "note": {"text": text}}.get(event, {})
        outcome = instance.send(event, payload)
        seen.append(
            (
                outcome.code if isinstance(outcome, Rejection) else "ok",
                instance.state,
                instance.context,
            )
        )
    return seen


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(EVENTS, AMOUNTS, TEXTS), max_size=12))
def test_the_round_trip_keeps_behaviour(steps: list[tuple[str, int, str]]) -> None:
    original = compiled(ORDER)
    again = compiled(reimported(original), "again.flow")
    assert run(original, steps) == run(again, steps)


def test_import_export_import_of_an_scxml_chart_keeps_behaviour() -> None:
    first = compiled(import_text(FLAT), "first.flow")
    second_text = import_text(exported(first))
    second = compiled(second_text, "second.flow")
    assert "event add(n: int = 0)\n" in second_text  # defaults kept through flowc:event
    steps = [
        ("add", {"n": 2}),
        ("add", {}),
        ("note", {"text": "stop"}),
        ("add", {"n": 3}),
        ("finish", {}),
        ("bogus", {}),
        ("error.execution", {}),
    ]
    assert first.name == second.name == "counter"

    def trace(flow: CompiledFlow) -> list[object]:
        instance = Machine.from_json(flow.to_json()).start()
        out: list[object] = []
        for event, payload in steps:
            outcome = instance.send(event, payload)
            out.append(
                (
                    outcome.code if isinstance(outcome, Rejection) else "ok",
                    instance.state,
                    instance.context,
                )
            )
        return out

    assert trace(first) == trace(second)


def import_text(text: str) -> str:
    result = import_scxml(text, "chart.scxml")
    assert result.flow_text is not None, [str(d) for d in result.diagnostics]
    return result.flow_text
