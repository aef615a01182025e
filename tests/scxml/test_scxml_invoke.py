"""`<invoke>` imported as child flows (docs/scxml.md, "Invoke: child flows"): the `.flow` text
of the parent and of each child, for charts written here (not taken from the W3C suite)."""

from __future__ import annotations

from pathlib import Path

import pytest
from charts import chart

from flowc.compiler.driver import compile_source
from flowc.compiler.scxml import invoke as invoke_module
from flowc.compiler.scxml.importer import ImportResult, import_file, import_scxml

OUTCOMES = '  <final id="pass"/><final id="fail"/>'


def imported(text: str, path: str = "<input>") -> ImportResult:
    """The import of `text`, checked to compile with its children (the compiler checks that
    parent and children agree on the input, the messages and the done data)."""
    result = import_scxml(text, path)
    assert result.flow_text is not None, [str(d) for d in result.diagnostics]
    compiled = compile_source(result.flow_text, "parent.flow", flows=dict(result.children))
    assert compiled.flow is not None and not compiled.errors, [str(e) for e in compiled.errors]
    return result


def refused(text: str, path: str = "<input>") -> list[str]:
    result = import_scxml(text, path)
    assert result.flow_text is None
    return [f"{d.code} {d.message}" for d in result.diagnostics]


def child(body: str, attrs: str = "") -> str:
    return f'<content><scxml datamodel="python"{attrs}>{body}</scxml></content>'


#: A parent that greets its child: the child reports back with a param, the parent answers it
#: by id, the child finishes.
TALK = chart(
    """  <datamodel><data id="who" expr="'ann'"/><data id="got" expr="0"/></datamodel>
  <state id="s0">
    <invoke id="kid" type="scxml" namelist="who">
      <param name="limit" expr="3"/>
      <param name="absent" expr="1"/>
      """
    + child(
        """<datamodel><data id="who" expr="''"/><data id="limit"/></datamodel>
        <state id="c0">
          <onentry><send target="#_parent" event="hello"><param name="n" expr="limit"/></send>
          </onentry>
          <transition event="answer" cond="_event.data.ok" target="cdone"/>
        </state>
        <final id="cdone"/>"""
    )
    + """
      <finalize><assign location="got" expr="_event.data.n"/></finalize>
    </invoke>
    <transition event="hello" target="s1"><send target="#_kid" event="answer">
      <param name="ok" expr="True"/></send></transition>
  </state>
  <state id="s1"><transition event="done.invoke" target="pass"/></state>
"""
    + OUTCOMES,
    attrs=' name="talk"',
)


def test_an_inline_chart_becomes_a_child_flow_invoked_by_its_state() -> None:
    result = imported(TALK)
    text = result.flow_text or ""
    assert "invoke talk_kid(who: who, limit: 3) as kid finalize do got = event.n" in text
    assert "event hello(n: int = 0)" in text  # declared by the parent, typed by the child
    assert "send answer(ok: true) to kid" in text
    assert "on done.invoke.kid -> pass" in text
    assert "event answer" not in text  # the child's event, not the parent's
    assert list(result.children) == ["talk_kid"]
    kid = result.children["talk_kid"]
    assert kid.startswith("flow talk_kid\n")
    assert "limit: int = 0" in kid  # untyped `<data>`: typed by the value the parent gives
    assert "event answer(ok: bool = false)" in kid  # what the parent sends it
    assert "send hello(n: limit) to parent" in kid
    assert "event hello(n: int = 0)" in kid  # declared alike on both sides
    # what `finalize` reads is on every message from the child, its done event too
    assert 'final state cdone with {"n": 0}' in kid
    assert "absent" not in text + kid  # SCXML binds only the child's own variables


def test_idlocation_is_into_a_string_field_and_autoforward_is_forward() -> None:
    text = imported(
        chart(
            """  <datamodel><data id="where"/></datamodel>
  <state id="s0">
    <invoke idlocation="where" autoforward="true">"""
            + child('<final id="f"/>')
            + """</invoke>
    <transition event="*" target="s1"/>
  </state>
  <state id="s1"><transition cond="where" target="pass"/><transition target="fail"/></state>
"""
            + OUTCOMES,
            attrs=' name="p"',
        )
    ).flow_text
    assert text is not None
    assert "invoke p_s0() as s0 into where forward" in text
    assert 'where: str = ""' in text
    assert 'always if where != "" -> pass' in text
    # `*` covers the events of the invoke
    assert "on done.invoke.s0, error.invoke.s0 -> s1" in text


def test_two_invokes_of_one_state_get_their_own_ids_and_done_invoke_names_both() -> None:
    result = imported(
        chart(
            """  <state id="s0">
    <invoke>"""
            + child('<final id="a"/>')
            + "</invoke><invoke>"
            + child('<final id="b"/>')
            + """</invoke>
    <invoke id="named">"""
            + child('<final id="c"/>')
            + """</invoke>
    <transition event="done.invoke.named" target="pass"/>
    <transition event="done.invoke" target="fail"/>
  </state>
"""
            + OUTCOMES,
            attrs=' name="p"',
        )
    )
    text = result.flow_text or ""
    assert "invoke p_s0() as s0\n" in text
    assert "invoke p_s0_() as s0_\n" in text
    assert "invoke p_named() as named\n" in text
    assert "on done.invoke.named -> pass" in text
    assert "on done.invoke.s0, done.invoke.s0_, done.invoke.named -> fail" in text
    assert sorted(result.children) == ["p_named", "p_s0", "p_s0_"]


def test_invokeid_is_given_to_the_child_and_comes_back_in_its_messages_and_done_data() -> None:
    result = imported(
        chart(
            """  <datamodel><data id="seen" expr="''"/></datamodel>
  <state id="s0">
    <invoke id="foo">"""
            + child(
                """<state id="c"><onentry><send target="#_parent" event="up"/></onentry>
                <transition target="f"/></state><final id="f"/>"""
            )
            + """</invoke>
    <transition event="up"><assign location="seen" expr="_event.invokeid"/></transition>
    <transition event="done.invoke" cond="_event.invokeid == seen" target="pass"/>
  </state>
"""
            + OUTCOMES,
            attrs=' name="p"',
        )
    )
    text = result.flow_text or ""
    assert 'invoke p_foo(scxml_invokeid: "foo") as foo' in text
    kid = result.children["p_foo"]
    assert 'scxml_invokeid: str = ""' in kid
    assert "send up(scxml_invokeid: scxml_invokeid) to parent" in kid
    assert 'final state f with {"scxml_invokeid": scxml_invokeid}' in kid


def test_a_namelist_naming_an_undeclared_variable_fails_the_invoke() -> None:
    text = imported(
        chart(
            """  <state id="s0">
    <invoke namelist="nothing">"""
            + child('<final id="f"/>')
            + """</invoke>
    <transition event="error.execution" target="pass"/>
  </state>
"""
            + OUTCOMES
        )
    ).flow_text
    assert text is not None
    assert "invoke " not in text
    assert 'raise error.execution(scxml_type: "platform")' in text or (
        "raise error.execution" in text
    )


def test_a_constant_typeexpr_and_srcexpr_set_by_the_entry_are_read(tmp_path: Path) -> None:
    (tmp_path / "kid.scxml").write_text(chart('<final id="f"/>'))
    parent = tmp_path / "parent.scxml"
    parent.write_text(
        chart(
            """  <datamodel><data id="t" expr="'nope'"/><data id="s" expr="'nope'"/></datamodel>
  <state id="s0">
    <onentry>
      <assign location="t" expr="'http://www.w3.org/TR/scxml/'"/>
      <assign location="s" expr="'file:kid.scxml'"/>
    </onentry>
    <invoke typeexpr="t" srcexpr="s"/>
    <transition event="done.invoke" target="pass"/>
  </state>
"""
            + OUTCOMES,
            attrs=' name="parent"',
        )
    )
    result = import_file(parent, data_src=True)
    assert result.flow_text is not None, [str(d) for d in result.diagnostics]
    assert "invoke parent_s0() as s0" in result.flow_text
    assert list(result.children) == ["parent_s0"]
    assert "final state f" in result.children["parent_s0"]


@pytest.mark.parametrize(
    ("invoke", "expected"),
    [
        ('<invoke type="http://example.com/other"/>', "E408 <invoke>: invoking `http"),
        ('<invoke src="file:../up.scxml"/>', "E409 <invoke>: `src` `file:../up.scxml`"),
        ('<invoke src="/etc/passwd"/>', "E409 <invoke>: `src` `/etc/passwd`"),
        ('<invoke src="http://example.com/x.scxml"/>', "E409 <invoke>: `src`"),
        ('<invoke src="file:missing.scxml"/>', "E408 <invoke>: the chart `missing.scxml` beside"),
        ('<invoke src="file:link.scxml"/>', "E408 <invoke>: the chart `link.scxml` beside"),
        ('<invoke srcexpr="pick"/>', "E408 <invoke>: `srcexpr` is not a constant"),
        ('<invoke><content expr="pick"/></invoke>', "E408 <invoke>: only a chart in"),
    ],
)
def test_invokes_flowc_cannot_start_are_refused(tmp_path: Path, invoke: str, expected: str) -> None:
    (tmp_path / "other.scxml").write_text(chart('<final id="f"/>'))
    (tmp_path / "link.scxml").symlink_to(tmp_path / "other.scxml")  # not followed
    parent = tmp_path / "parent.scxml"
    parent.write_text(
        chart(
            f"""  <datamodel><data id="pick" expr="'a'"/></datamodel>
  <state id="s0"><transition event="go"><assign location="pick" expr="'b'"/></transition>
  {invoke}</state>"""
        )
    )
    result = import_file(parent, data_src=True)
    assert result.flow_text is None
    assert any(f"{d.code} {d.message}".startswith(expected) for d in result.diagnostics), [
        str(d) for d in result.diagnostics
    ]


def test_an_invoke_in_a_final_state_is_refused() -> None:
    inner = child('<final id="g"/>')
    messages = refused(chart(f'<final id="f"><invoke>{inner}</invoke></final>'))
    assert any(m.startswith("E412 <invoke>: a final state invokes nothing") for m in messages)


def test_a_chart_invoking_itself_is_refused(tmp_path: Path) -> None:
    loop = tmp_path / "loop.scxml"
    loop.write_text(chart('<state id="s"><invoke src="file:loop.scxml"/></state>'))
    result = import_file(loop, data_src=True)
    assert result.flow_text is None
    assert any("invokes itself" in d.message for d in result.diagnostics)


def test_nesting_and_size_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    nested = '<final id="f"/>'
    for _ in range(invoke_module.MAX_INVOKE_DEPTH + 1):
        nested = f'<state id="s"><invoke>{child(nested)}</invoke></state>'
    assert any("nest deeper" in m for m in refused(chart(nested)))
    leaf = child('<final id="f"/>')
    wide = chart(
        '<state id="s">' + "".join(f"<invoke>{leaf}</invoke>" for _ in range(5)) + "</state>"
    )
    assert import_scxml(wide).flow_text is not None  # within bounds
    with monkeypatch.context() as patched:
        patched.setattr(invoke_module, "MAX_TREE_ELEMENTS", 10)
        assert any("too large together" in m for m in refused(wide))
    with monkeypatch.context() as patched:
        patched.setattr(invoke_module, "MAX_TREE_CHARTS", 6)  # each child is read twice
        assert any("too large together" in m for m in refused(wide))


def test_a_delayed_message_is_a_relay_the_sender_passes_on_while_it_runs() -> None:
    result = imported(
        chart(
            '<state id="s"><invoke id="k">'
            + child(
                '<state id="c"><onentry><send target="#_parent" event="x" delay="1s">'
                '<param name="n" expr="2"/></send></onentry>'
                '<state id="inner"><transition event="*" target="end"/></state></state>'
                '<final id="end"/>'
            )
            + '</invoke><transition event="x" target="pass"/></state>'
            + OUTCOMES,
            attrs=' name="p"',
        )
    )
    kid = result.children["p_k"]
    assert "internal event scxml_relay_1(n: int = 0)" in kid
    assert "entry do send scxml_relay_1(n: 2) after 1000ms" in kid
    # on the top-level state only, and `*` does not take it
    assert "  on scxml_relay_1 -> self do send x(n: event.n) to parent\n" in kid
    assert kid.count("scxml_relay_1 ->") == 1
    assert "    on x, done.state.c -> end\n" in kid  # `*`: the relay is none of the chart's


def test_a_message_delayed_by_a_variable_is_refused() -> None:
    messages = refused(
        chart(
            '<datamodel><data id="d" expr="\'1s\'"/></datamodel><state id="s"><invoke>'
            + child(
                '<datamodel><data id="d" expr="\'1s\'"/></datamodel>'
                '<state id="c"><onentry><send target="#_parent" event="x" delayexpr="d"/>'
                "</onentry></state>"
            )
            + "</invoke></state>"
        )
    )
    assert any(m.startswith("E409 <send>: a delayed send to `#_parent`") for m in messages)


def test_a_top_level_final_state_runs_its_exit_actions_after_its_entry() -> None:
    text = imported(
        chart(
            """  <state id="s0"><transition target="end"/></state>
  <final id="end"><onentry><raise event="a"/></onentry><onexit><raise event="b"/></onexit>
  </final>"""
        )
    ).flow_text
    assert text is not None
    assert 'entry do raise a(scxml_type: "internal"); raise b(scxml_type: "internal")' in text or (
        "entry do raise a; raise b" in text
    )
    assert "exit do" not in text


def test_a_chart_starting_in_its_final_state_gets_a_start_state_that_goes_there() -> None:
    # As most invoked charts of the W3C suite do; flowc has no `initial final` state (E111).
    from flowc.runtime import Machine

    text = imported(chart('<final id="end"/><state id="end_start"/>', attrs=' initial="end"'))
    assert "initial state end_start_ {\n  always -> end\n}\nfinal state end\n" in (
        text.flow_text or ""
    )
    compiled = compile_source(text.flow_text or "", "x.flow")
    assert compiled.flow is not None, [str(e) for e in compiled.errors]
    instance = Machine.from_json(compiled.flow.to_json()).start()
    assert instance.state == "end" and instance.is_final


def test_a_variable_the_child_does_not_declare_is_not_passed_and_reads_as_false() -> None:
    result = imported(
        chart(
            '<datamodel><data id="v" expr="3"/></datamodel><state id="s">'
            '<invoke id="k" namelist="v">'
            + child(
                '<state id="c"><transition cond="v" target="bad"/><transition target="ok"/>'
                '</state><final id="bad"/><final id="ok"/>'
            )
            + "</invoke></state>",
            attrs=' name="p"',
        )
    )
    assert "invoke p_k() as k" in (result.flow_text or "")
    assert "always if false -> bad" in result.children["p_k"]


SHOP = """flow shop
event paid(amount: int)
context {
  total: int = 5
  pay_id: str = ""
  got: int = 0
}

initial state paying {
  invoke payment(amount: total) as pay into pay_id forward finalize do got = got + 1
  on paid -> self do send ack to pay
  on done.invoke.pay -> over
  on error.invoke.pay -> over
}
final state over
"""

PAYMENT = """flow payment
event paid(amount: int)
event ack
context {
  amount: int = 0
}

initial state charging {
  entry do send paid(amount: amount) to parent
  on ack -> charged
}
final state charged with {"amount": amount}
"""


def test_an_invoke_exports_as_an_inline_chart_and_imports_back_to_the_same_flows() -> None:
    from flowc.compiler.scxml.exporter import export_scxml

    compiled = compile_source(SHOP, "shop.flow", flows={"payment": PAYMENT})
    assert compiled.flow is not None, [str(e) for e in compiled.errors]
    exported = export_scxml(compiled.flow, "shop.flow", compiled.where)
    assert exported.text is not None, [str(d) for d in exported.diagnostics]
    assert '<invoke id="pay" type="scxml" flowc:flow="payment" idlocation="pay_id"' in (
        exported.text
    )
    assert '<send event="paid" target="#_parent">' in exported.text
    assert '<send event="ack" target="#_pay"></send>' in exported.text
    back = imported(exported.text, "shop.scxml")
    assert back.flow_text == SHOP
    assert back.children == {"payment": PAYMENT}


def test_a_fan_out_is_refused_on_export_at_its_state() -> None:
    from flowc.compiler.scxml.exporter import export_scxml

    text = SHOP.replace(
        "invoke payment(amount: total) as pay",
        "invoke payment(amount: x) for x in [1, 2] as pay",
    ).replace(" into pay_id forward finalize do got = got + 1", "")
    compiled = compile_source(text, "shop.flow", flows={"payment": PAYMENT})
    assert compiled.flow is not None, [str(e) for e in compiled.errors]
    result = export_scxml(compiled.flow, "shop.flow", compiled.where)
    assert result.text is None
    [diag] = result.diagnostics
    assert diag.code == "E420" and "fan-out invoke `pay`" in diag.message
    assert (diag.span.line, diag.span.column) == (10, 3)  # at the invoke


def test_content_expr_reads_the_chart_the_state_entry_assigns() -> None:
    result = imported(
        chart(
            """  <datamodel><data id="doc" expr="0"/></datamodel>
  <state id="s0">
    <onentry><assign location="doc"><scxml><final id="f"/></scxml></assign></onentry>
    <invoke><content expr="doc"/></invoke>
    <transition event="done.invoke" target="pass"/>
  </state>
"""
            + OUTCOMES,
            attrs=' name="p"',
        )
    )
    text = result.flow_text or ""
    assert "invoke p_s0() as s0" in text
    assert "error.execution" not in text and "doc = " not in text  # the assign is the chart
    assert "final state f" in result.children["p_s0"]


def test_a_tree_of_invokes_is_refused_quickly() -> None:
    # each level invokes three copies of the next: thousands of charts, each read twice
    import time

    nested = '<final id="f"/>'
    for _ in range(invoke_module.MAX_INVOKE_DEPTH - 1):
        nested = '<state id="s">' + f"<invoke>{child(nested)}</invoke>" * 3 + "</state>"
    began = time.monotonic()
    assert any("too large together" in m for m in refused(chart(nested)))
    assert time.monotonic() - began < 10


def test_a_value_of_another_type_than_the_child_variable_is_refused() -> None:
    inner = child('<datamodel><data id="n" expr="0"/></datamodel><final id="f"/>')
    messages = refused(
        chart(f'<state id="s"><invoke><param name="n" expr="\'x\'"/>{inner}</invoke></state>')
    )
    assert any(
        m.startswith(
            "E410 <param>: `n` holds `int` values in the invoked chart and is given a `str`"
        )
        for m in messages
    ), messages


def test_what_the_parent_reads_on_the_done_event_every_top_level_final_gives() -> None:
    result = imported(
        chart(
            """  <datamodel><data id="got" expr="0"/></datamodel>
  <state id="s0"><invoke id="k">"""
            + child(
                '<state id="c"><transition event="a" target="one"/>'
                '<transition event="b" target="two"/></state>'
                '<final id="one"><donedata><param name="r" expr="42"/></donedata></final>'
                '<final id="two"/>'
            )
            + """</invoke>
    <transition event="done.invoke.k" target="pass">
      <assign location="got" expr="_event.data.r"/></transition>
  </state>
"""
            + OUTCOMES,
            attrs=' name="p"',
        )
    )
    kid = result.children["p_k"]
    assert 'final state one with {"r": 42}' in kid
    assert 'final state two with {"r": 0}' in kid  # SCXML: None; flowc: the zero value


def test_an_invoke_named_parent_is_renamed_so_that_to_parent_stays_the_parent() -> None:
    result = imported(
        chart(
            '<state id="s"><invoke id="parent">'
            + child('<state id="c"><transition event="go" target="f"/></state><final id="f"/>')
            + '</invoke><transition event="done.invoke.parent" target="pass"/>'
            '<transition event="kick"><send target="#_parent" event="go"/></transition></state>'
            + OUTCOMES,
            attrs=' name="p"',
        )
    )
    text = result.flow_text or ""
    assert "invoke p_parent_() as parent_" in text
    assert "on done.invoke.parent_ -> pass" in text
    assert "on kick -> self do send go to parent\n" in text  # SCXML's `#_parent` is the parent
