"""Imported `<invoke>`s run by the runtime alone (no host): charts written for flowc (not taken
from the W3C suite), each reaching `pass` only if the child flows keep SCXML's meaning."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from charts import chart

sys.path.insert(0, str(Path(__file__).parents[1] / "conformance"))
from w3c_runner import run_test

OUTCOMES = '  <final id="pass"/><final id="fail"/>'
#: A first state, so that the invoking state is entered by a step after the start: a child
#: started by the parent's start, when both schedule an event then, fails the runtime today
#: (KeyError in engine.sends_after; W3C 207 237 252 253 347 show it), which the charts that
#: test something else step around.
BOOT = (
    '  <state id="boot"><onentry><send event="begin"/></onentry>'
    '<transition event="begin" target="s0"/></state>\n'
)
TIMEOUT = '<onentry><send event="timeout" delay="5s"/></onentry>'


def inline(body: str, data: str = "") -> str:
    return f'<content><scxml datamodel="python">{data}{body}</scxml></content>'


PASSING = {
    # the child's message comes before its done event, and both reach the parent
    "message_then_done": chart(
        f"""  <state id="s0" initial="a">{TIMEOUT}
    <invoke id="kid">"""
        + inline('<final id="f"><onentry><send target="#_parent" event="hi"/></onentry></final>')
        + """</invoke>
    <transition event="timeout" target="fail"/>
    <state id="a"><transition event="hi" target="b"/></state>
    <state id="b"><transition event="done.invoke.kid" target="pass"/></state>
  </state>
"""
        + OUTCOMES
    ),
    # a param sets the child's variable; the parent answers the child by its id
    "params_and_answers": chart(
        BOOT
        + f"""  <datamodel><data id="n" expr="4"/></datamodel>
  <state id="s0" initial="a">{TIMEOUT}
    <invoke id="kid" namelist="n">"""
        + inline(
            """<state id="c"><onentry><send target="#_parent" event="ready">
            <param name="twice" expr="n * 2"/></send></onentry>
            <transition event="go" target="f"><send target="#_parent" event="went"/>
            </transition></state><final id="f"/>""",
            '<datamodel><data id="n" expr="0"/></datamodel>',
        )
        + """</invoke>
    <transition event="timeout" target="fail"/>
    <state id="a"><transition event="ready" cond="_event.data.twice == 8" target="b">
      <send target="#_kid" event="go"/></transition>
      <transition event="ready" target="fail"/></state>
    <state id="b"><transition event="went" target="pass"/></state>
  </state>
"""
        + OUTCOMES
    ),
    # leaving the state cancels the child: no done event, no late message
    "exit_cancels": chart(
        BOOT
        + """  <state id="s0">
    <onentry><send event="leave" delay="1s"/></onentry>
    <invoke>"""
        + inline(
            """<state id="c"><onentry><send event="t" delay="2s"/></onentry>
            <transition event="t" target="f"/>
            <onexit><send target="#_parent" event="late"/></onexit></state>
            <final id="f"/>"""
        )
        + """</invoke>
    <transition event="leave" target="s1"/>
  </state>
  <state id="s1">"""
        + TIMEOUT
        + """<transition event="done.invoke" target="fail"/>
    <transition event="late" target="fail"/>
    <transition event="timeout" target="pass"/></state>
"""
        + OUTCOMES
    ),
    # finalize runs on the parent's data before its rules see the child's message
    "finalize_first": chart(
        f"""  <datamodel><data id="got" expr="0"/></datamodel>
  <state id="s0">{TIMEOUT}
    <invoke>"""
        + inline(
            '<final id="f"><onentry><send target="#_parent" event="v">'
            '<param name="x" expr="7"/></send></onentry></final>'
        )
        + """<finalize><assign location="got" expr="_event.data.x"/></finalize></invoke>
    <transition event="v" cond="got == 7" target="pass"/>
    <transition event="v" target="fail"/>
    <transition event="timeout" target="fail"/>
  </state>
"""
        + OUTCOMES
    ),
    # a delayed message from a child that has ended never comes
    "relay_dies_with_the_child": chart(
        f"""  <state id="s0">{TIMEOUT}
    <invoke>"""
        + inline(
            '<state id="c"><onentry><send target="#_parent" event="late" delay="1s"/>'
            '</onentry><transition target="f"/></state><final id="f"/>'
        )
        + """</invoke>
    <transition event="late" target="fail"/>
    <transition event="timeout" target="pass"/>
  </state>
"""
        + OUTCOMES
    ),
    # the done event carries the child's done data and the id the document gave
    "done_data_and_invokeid": chart(
        f"""  <state id="s0">{TIMEOUT}
    <invoke id="calc">"""
        + inline('<final id="f"><donedata><param name="r" expr="6 * 7"/></donedata></final>')
        + """</invoke>
    <transition event="done.invoke" cond="_event.data.r == 42 and _event.invokeid == 'calc'"
      target="pass"/>
    <transition event="*" target="fail"/>
  </state>
"""
        + OUTCOMES
    ),
}


@pytest.mark.parametrize("name", sorted(PASSING))
def test_imported_invokes_run_on_the_runtime_alone(name: str, tmp_path: Path) -> None:
    path = tmp_path / f"{name}.scxml"
    path.write_text(PASSING[name], encoding="utf-8")
    outcome = run_test(path, host=False)
    assert outcome.status == "pass", outcome.reason


def test_a_chart_beside_is_invoked_by_src(tmp_path: Path) -> None:
    (tmp_path / "worker.scxml").write_text(
        chart('<final id="f"><onentry><send target="#_parent" event="hi"/></onentry></final>'),
        encoding="utf-8",
    )
    path = tmp_path / "boss.scxml"
    path.write_text(
        chart(
            f'<state id="s0">{TIMEOUT}<invoke src="file:worker.scxml"/>'
            '<transition event="hi" target="pass"/><transition event="timeout" target="fail"/>'
            "</state>" + OUTCOMES
        ),
        encoding="utf-8",
    )
    outcome = run_test(path, host=False)
    assert outcome.status == "pass", outcome.reason


def test_the_checkout_example_pays_through_its_child_on_the_runtime_alone() -> None:
    from flowc.compiler.driver import compile_source
    from flowc.compiler.scxml.importer import import_file
    from flowc.runtime import Machine

    imported = import_file(Path(__file__).parents[2] / "examples" / "checkout.scxml")
    assert imported.flow_text is not None and list(imported.children) == ["checkout_payment"]
    compiled = compile_source(imported.flow_text, "checkout.flow", flows=imported.children)
    assert compiled.flow is not None and not compiled.errors, [str(e) for e in compiled.errors]
    shop = Machine.from_json(compiled.flow.to_json()).start()
    shop.send("add", {"price": 30})
    shop.send("add", {"price": 12})
    shop.send("pay")  # the payment starts and reports its progress
    assert (shop.state, shop.context["stage"], shop.context["steps"]) == ("paying", "charging", 1)
    shop.send("decline")  # forwarded to the payment, which ends without a receipt
    assert (shop.state, shop.context["receipt"]) == ("cart", "")
    shop.send("pay")
    shop.send("approve")
    assert (shop.state, shop.context["receipt"], shop.context["steps"]) == ("done", "r-42", 4)
