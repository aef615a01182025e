"""SCXML features mapped onto flowc language features: `In()` (`active`), `<foreach>` (`for`),
`_event.name` (`event.name`), `<donedata>` (`done(...)`), initial transitions with actions.
Each chart here is written for flowc (not taken from the W3C suite) and run with the
conformance runner: it reaches `pass` only if the feature behaves as SCXML says."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from charts import chart

from flowc.compiler.scxml.importer import import_scxml

sys.path.insert(0, str(Path(__file__).parents[1] / "conformance"))
from w3c_runner import run_test


def imported(text: str) -> str:
    result = import_scxml(text, "chart.scxml")
    assert result.flow_text is not None, [str(d) for d in result.diagnostics]
    return result.flow_text


def passes(text: str, tmp_path: Path) -> None:
    path = tmp_path / "test_chart.scxml"
    path.write_text(text, encoding="utf-8")
    outcome = run_test(path)
    assert (outcome.status, outcome.reason) == ("pass", ""), imported(text)


IN_STATE = chart(
    """  <parallel id="p">
    <state id="left">
      <state id="l1"><transition event="go" target="l2"/></state>
      <state id="l2">
        <onexit><if cond="In('l2')"><raise event="saw"/></if></onexit>
      </state>
    </state>
    <state id="right">
      <state id="r1">
        <transition cond="In('l2') and not In('l1')" target="r2"/>
      </state>
      <state id="r2">
        <transition event="saw" cond="In('nowhere') or In('r2')" target="pass"/>
      </state>
    </state>
    <transition event="go2" target="l1_out"/>
  </parallel>
  <state id="l1_out">
    <transition cond="In('l1')" target="fail"/>
  </state>
  <final id="pass"/><final id="fail"/>"""
)


def test_in_becomes_active(tmp_path: Path) -> None:
    text = imported(IN_STATE)
    assert "always if active(l2) and not active(l1) -> r2" in text
    # a state the document does not have is never active
    assert "if false or active(r2) -> pass" in text
    script = IN_STATE.replace('<transition event="go2" target="l1_out"/>', "").replace(
        '<state id="l1"><transition event="go" target="l2"/></state>',
        '<state id="l1"><onentry><raise event="go"/></onentry>'
        '<transition event="go" target="l2"/></state>',
    )
    # l1 raises go -> l2; r1's eventless rule sees l2 -> r2; nothing raises `saw`, so leave
    # l2 through p's rule on a second internal event: its exit action sees l2 and raises saw.
    script = script.replace(
        '<state id="r2">', '<state id="r2"><onentry><raise event="go2"/></onentry>'
    ).replace('<parallel id="p">', '<parallel id="p">\n    <transition event="go2" target="q"/>')
    script = script.replace(
        '<state id="l1_out">',
        '<state id="q"><transition event="saw" target="pass"/></state>\n  <state id="l1_out">',
    )
    passes(script, tmp_path)


@pytest.mark.parametrize("cond", ["In(x)", "In('a', 'b')"])
def test_in_of_anything_but_a_literal_id_is_refused(cond: str) -> None:
    text = chart(
        f'  <datamodel><data id="x" expr="\'a\'"/></datamodel>\n'
        f'  <state id="a"><transition event="e" cond="{cond}" target="b"/></state>\n'
        '  <final id="b"/>'
    )
    result = import_scxml(text, "c.scxml")
    assert [d.code for d in result.diagnostics] == ["E417"]
