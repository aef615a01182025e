"""The exporter (IR to SCXML) and the round trip import -> export -> import, which must keep
behaviour: both flows are run on the same event sequences with the runtime."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from charts import FLAT
from hypothesis import given, settings
from hypothesis import strategies as st

from flowc.compiler.driver import compile_file, compile_source
from flowc.compiler.scxml.exporter import export_scxml, python_text
from flowc.compiler.scxml.importer import import_scxml
from flowc.runtime import CompiledFlow, Machine, Rejection
from flowc.runtime.model import Expr

ROOT = Path(__file__).resolve().parents[2]

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


@pytest.mark.parametrize(
    ("source", "line", "column"),
    [
        (
            "flow t\ncontext { s: list[str] = [] }\nevent go\ninitial state A {\n"
            "  on go -> self do s = values({})\n}\n",
            5,
            3,
        ),
        ("flow t\ncontext { d: int = 5 }\ninitial state A {\n  after d s -> A\n}\n", 4, 3),
    ],
)
def test_what_scxml_cannot_say_is_refused_at_its_declaration(
    source: str, line: int, column: int
) -> None:
    result = compile_source(source, "t.flow")
    assert result.flow is not None, [str(d) for d in result.diagnostics]
    refused = export_scxml(result.flow, "t.flow", result.where)
    assert refused.text is None
    assert [(d.code, d.span.line, d.span.column) for d in refused.diagnostics] == [
        ("E420", line, column)
    ]


def there_and_back(source: str) -> tuple[str, str]:
    """The SCXML export of `source`, and the .flow text imported back from it."""
    flow = compiled(source)
    return exported(flow), reimported(flow)


def test_flow_functions_with_a_python_form_come_back() -> None:
    source = (
        'flow t\ncontext {\n  s: str = ""\n  o: str? = none\n  m: map[str, int] = {}\n}\n'
        "event go(t: str)\ninitial state A {\n"
        '  on go -> self do s = trim(lower(event.t)) + upper(s); s = coalesce(o, s) + "!";'
        ' m = merge(m, {"k": len(s)})\n}\n'
    )
    text, back = there_and_back(source)
    assert "_event.data['t'].lower().strip() + s.upper()" in text
    assert "(s if o is None else o) + '!'" in text
    assert "{**m, **{'k': len(s)}}" in text
    assert "s = trim(lower(event.t)) + upper(s)" in back
    assert 's = coalesce(o, s) + "!"' in back
    assert 'm = merge(m, {"k": len(s)})' in back


def test_requirements_become_refusals_in_each_state_that_takes_the_event() -> None:
    source = (
        "flow t\nevent go(k: int)\n"
        '  require event.k > 0 else bad "{{ here }}: {{ k }}"\n'
        '    with {"here": state.name, "k": event.k}\n'
        "initial state A { on go -> B }\nstate B { on go -> C }\nfinal state C\n"
    )
    text, back = there_and_back(source)
    assert text.count('flowc:reject="bad"') == 2
    assert "flowc:data=\"{'here': 'A', 'k': _event.data['k']}\"" in text
    assert (
        'on go if not event.k > 0 reject bad "{{ here }}: {{ k }}" with {"here": "B", "k": event.k}'
        in back
    )
    assert compile_source(back, "back.flow").ok


def test_enums_effects_direct_and_reject_rules_come_back() -> None:
    source = (
        "flow t\nenum Mode { SLOW, FAST }\ncontext { mode: Mode = SLOW }\n"
        "event go\nevent fast\neffect ping(n: int, why: str)\n"
        "initial state A {\n  on fast -> self do mode = FAST\n"
        '  on go if mode == SLOW reject too_slow "Not in slow mode."\n'
        '  on go -> B do emit ping(n: 1, why: "go")\n  -> B\n}\nfinal state B\n'
    )
    text, back = there_and_back(source)
    assert '<data id="mode" expr="\'SLOW\'" flowc:type="str"/>' in text
    assert '<flowc:effect name="ping" fields="n: int; why: str"/>' in text
    assert (
        '<send event="ping" target="#_flowc_host"><param name="n" expr="1"/>'
        '<param name="why" expr="\'go\'"/></send>'
    ) in text
    assert 'event="flowc.goto.B" flowc:direct="true" target="B"' in text
    assert 'flowc:reject="too_slow" flowc:message="Not in slow mode."' in text
    assert "effect ping(n: int, why: str)" in back
    assert 'on go if mode == "SLOW" reject too_slow "Not in slow mode."' in back
    assert 'emit ping(n: 1, why: "go")' in back
    assert "\n  -> B\n" in back
    assert "goto" not in back
    assert compile_source(back, "back.flow").ok


SHIPPED = sorted(
    [*(ROOT / "flows").glob("*.flow"), *(ROOT / "flows" / "examples").glob("*.flow")],
    key=lambda p: p.name,
)


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.stem)
def test_every_shipped_flow_exports_and_comes_back_or_is_refused_at_a_declaration(
    path: Path,
) -> None:
    # Every shipped flow, records, statecharts' `require` and child flows included: none is
    # refused but for a fan-out (`invoke ... for`, which SCXML has no word for), at its line.
    result = compile_file(path)
    assert result.flow is not None
    export = export_scxml(result.flow, str(path), result.where)
    if export.text is None:
        [refusal] = export.diagnostics
        assert refusal.code == "E420" and "fan-out invoke" in refusal.message, str(refusal)
        line = path.read_text(encoding="utf-8").splitlines()[refusal.span.line - 1]
        assert line.lstrip().startswith("invoke ") and " for " in line, line
        return
    back = import_scxml(export.text, path.with_suffix(".scxml").name)
    assert back.flow_text is not None, [str(d) for d in back.diagnostics]
    compiled_back = compile_source(back.flow_text, path.name, flows=dict(back.children))
    assert compiled_back.ok, [str(d) for d in compiled_back.errors]


RECORDS = """flow r
type Item { name: str, qty: int = 1 }
type Cart { items: list[Item] = [], owner: str = "" }
event add(name: str, qty: int)
event rename(item: Item)
context { cart: Cart = {"items": [], "owner": "ann"}, last: str = "", names: map[str, int] = {} }
initial state OPEN {
  on add if event.qty > 0 -> self do
    append(cart.items, {"name": event.name, "qty": event.qty});
    names = {"n": len(cart.items)}
  on rename if len(cart.items) > 0 -> self do
    cart.owner = event.item.name;
    last = cart.items[0].name + str(names["n"])
}
"""


def test_records_are_dicts_in_the_export_and_fields_when_imported() -> None:
    text, back = there_and_back(RECORDS)
    exported_forms = (
        '<flowc:record name="Item" fields="name: str; qty: int = 1"/>',
        'flowc:type="Cart"',
        "location=\"cart['owner']\"",
        "cart['items'][0]['name']",
    )
    imported_forms = (
        "type Item {\n  name: str\n  qty: int = 1\n}\n",
        "append(cart.items, {",
        "cart.owner = event.item.name",
        "cart.items[0].name",
        'names["n"]',  # a map read by a string key stays a map read
    )
    assert [form for form in exported_forms if form not in text] == [], text
    assert [form for form in imported_forms if form not in back] == [], back


def test_a_record_given_at_start_stays_a_start_input() -> None:
    source = (
        "flow q\ntype R { n: int }\ncontext { r: R }\nevent go\n"
        "initial state A { on go if r.n > 1 -> B }\nfinal state B\n"
    )
    _, back = there_and_back(source)
    assert "  r: R\n" in back
    assert compile_source(back, "back.flow").ok


def test_a_loop_with_its_own_variables_is_a_foreach() -> None:
    # `x` and `i` are local to the loop (no context field of those names): SCXML's <foreach>
    # declares them in the datamodel, so they come back as variables.
    source = (
        "flow q\ncontext { xs: list[int] = [1, 2], total: int = 0 }\nevent go\n"
        "initial state A {\n  on go -> B do\n    for x, i in xs { total += x * i }\n}\n"
        "final state B\n"
    )
    text, back = there_and_back(source)
    assert '<foreach array="xs" item="x" index="i">' in text
    assert "for x, i in xs { total = total + x * i }" in back
    assert compile_source(back, "back.flow").ok


RECORD_STEPS = st.lists(
    st.tuples(
        st.sampled_from(["add", "rename", "bogus"]), st.integers(-1, 3), st.sampled_from(["x", ""])
    ),
    max_size=8,
)


@settings(max_examples=30, deadline=None)
@given(RECORD_STEPS)
def test_the_round_trip_of_records_keeps_behaviour(steps: list[tuple[str, int, str]]) -> None:
    original = compiled(RECORDS)
    again = compiled(reimported(original), "again.flow")

    def payload(event: str, qty: int, text: str) -> dict[str, object]:
        if event == "add":
            return {"name": text, "qty": qty}
        return {"item": {"name": text, "qty": qty}}

    def outcomes(flow: CompiledFlow) -> list[object]:
        instance = Machine.from_json(flow.to_json()).start()
        seen: list[object] = []
        for event, qty, text in steps:
            outcome = instance.send(event, payload(event, qty, text))
            refused = isinstance(outcome, Rejection)
            seen.append((outcome.code if refused else "ok", instance.context))
        return seen

    assert outcomes(original) == outcomes(again)


def test_requirements_of_a_statechart_guard_every_leaf_that_takes_the_event() -> None:
    # `go` is taken by B's parent A and by D in the other region: the clause is written in
    # each leaf, before its rules, so that no region takes a refused event.
    source = (
        'flow t\nevent go(k: int)\n  require event.k > coalesce(state.meta.min, 0) else low "no"\n'
        "initial parallel state P {\n  state A {\n    initial state B { meta { min: 1 } }\n"
        "    on go -> self\n  }\n  state C {\n    initial state D { meta { min: 2 }\n"
        "      on go -> self\n    }\n    state E\n  }\n}\n"
    )
    text, back = there_and_back(source)
    # `state.meta.min` is the leaf's own meta value there
    assert '&gt; (0 if 1 is None else 1))" flowc:reject="low"' in text
    assert '&gt; (0 if 2 is None else 2))" flowc:reject="low"' in text
    assert text.count('flowc:reject="low"') == 2  # not in E: nothing there takes `go`
    assert compile_source(back, "back.flow").ok


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


@pytest.mark.parametrize(
    "expr", ["a if b else c", "a if b is None else c", "{**a}", "{**a, 'k': 1}", "s.strip('x')"]
)
def test_other_conditionals_unpackings_and_methods_are_still_refused(expr: str) -> None:
    chart = (
        '<scxml xmlns="http://www.w3.org/2005/07/scxml" datamodel="python" initial="a">'
        '<datamodel><data id="a" expr="1"/><data id="b" expr="1"/><data id="c" expr="1"/>'
        '<data id="s" expr="\'\'"/></datamodel>'
        f'<state id="a"><onentry><assign location="c" expr="{expr}"/></onentry></state></scxml>'
    )
    result = import_scxml(chart, "c.scxml")
    assert result.flow_text is None
    assert {d.code for d in result.diagnostics} <= {"E410", "E411"}, result.diagnostics


@pytest.mark.parametrize("name", ["keys", "values"])
def test_a_function_the_table_gives_no_python_form_is_refused(name: str) -> None:
    # The exporter reads each function's Python text from the one table of builtins
    # (runtime/builtins.py): what has none there is refused, at its rule.
    from flowc.runtime.builtins import BUILTINS

    assert BUILTINS[name].python is None
    source = (
        "flow t\ncontext {\n  m: map[str, int] = {}\n  n: int = 0\n}\n"
        f"event go\ninitial state A {{\n  on go -> self do n = len({name}(m))\n}}\n"
    )
    result = compile_source(source, "t.flow")
    assert result.flow is not None
    exported = export_scxml(result.flow, "t.flow")
    assert exported.text is None
    assert [d.code for d in exported.diagnostics] == ["E420"]
    assert f"`{name}`" in exported.diagnostics[0].message


SCHEDULING = """flow reminder
context { rid: str = "again" }
event submit(ticket: str)
event answer
internal event remind(round: int)
initial state WAITING {
  on submit -> WAITING do send remind(round: 1) after 30s as "first"; send answer after 0 ms
  on remind if event.round < 3 -> WAITING do send remind(round: event.round + 1) after 1h as "again"
  on remind -> GAVE_UP
  on answer -> DONE do cancel "again"; cancel rid
}
final state GAVE_UP
final state DONE
"""


def test_scheduled_sends_and_cancels_are_sends_to_the_session_and_come_back() -> None:
    scxml, back = there_and_back(SCHEDULING)
    assert '<send event="remind" id="first" delay="30000ms"><param name="round" expr="1"/>' in scxml
    assert '<send event="answer"></send>' in scxml  # the shortest delay: none
    assert '<cancel sendid="again"/><cancel sendidexpr="rid"/>' in scxml.replace("\n      ", "")
    assert '<flowc:event name="remind" fields="round: int" flowc:internal="true"/>' in scxml
    assert "internal event remind(round: int)\n" in back
    assert (
        'send remind(round: 1) after 30000ms as "first"; send answer after 0 ms' in back
        and 'cancel "again"; cancel rid' in back
    )
    assert compile_source(back, "back.flow").flow is not None


@pytest.mark.parametrize("action", ['send answer after d s as "x"', "send answer after 1s as rid"])
def test_a_scheduled_send_with_a_computed_delay_or_id_is_refused(action: str) -> None:
    source = (
        'flow t\ncontext { d: int = 5, rid: str = "r" }\nevent answer\n'
        f"initial state A {{\n  on answer -> A do {action}\n}}\n"
    )
    result = compile_source(source, "t.flow")
    assert result.flow is not None, [str(d) for d in result.diagnostics]
    refused = export_scxml(result.flow, "t.flow", result.where)
    assert refused.text is None and [d.code for d in refused.diagnostics] == ["E420"]
    assert "scheduled `send` with a computed" in refused.diagnostics[0].message
