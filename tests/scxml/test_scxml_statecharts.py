"""PENDING AFTER THE STATECHARTS MERGE (issue 13): not collected by default (the name does not
match test_*.py). These tests compile and run imported charts that use the statecharts syntax
(compound and parallel states, history, `always`, `raise`, `emit`, `if/elif/else`), which the
compiler of this branch does not have yet. After the merge, run

    .venv/bin/pytest tests/scxml/pending_after_merge.py
    FLOWC_W3C_DIR=/path/to/w3c .venv/bin/pytest tests/conformance

and, once green, rename this file to test_scxml_statecharts.py so that it is collected.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from charts import EXECUTABLE, HIERARCHY, chart
from test_scxml_export import compiled, exported

from flowc.compiler.driver import compile_source
from flowc.compiler.scxml.importer import import_scxml

sys.path.insert(0, str(Path(__file__).parents[1] / "conformance"))
from w3c_runner import run_test


def compiles(text: str) -> None:
    result = import_scxml(text, "chart.scxml")
    assert result.flow_text is not None, [str(d) for d in result.diagnostics]
    compiled_ = compile_source(result.flow_text, "chart.flow")
    assert compiled_.flow is not None and not compiled_.errors, (
        result.flow_text,
        [str(d) for d in compiled_.diagnostics],
    )


def test_the_hierarchy_chart_compiles() -> None:
    compiles(HIERARCHY)


def test_the_executable_content_chart_compiles() -> None:
    compiles(EXECUTABLE)


#: Charts that reach `pass` only if the runtime honours the SCXML semantics the importer maps
#: onto: each is written for flowc (not taken from the W3C suite).
PASSING = {
    "raise_order": chart(
        """  <state id="s0">
    <onentry><raise event="one"/><raise event="two"/></onentry>
    <transition event="one" target="s1"/>
    <transition event="*" target="fail"/>
  </state>
  <state id="s1">
    <transition event="two" target="pass"/>
    <transition event="*" target="fail"/>
  </state>
  <final id="pass"/><final id="fail"/>"""
    ),
    "internal_before_external": chart(
        """  <state id="s0">
    <onentry><send event="outside"/><raise event="inside"/></onentry>
    <transition event="inside" target="s1"/>
    <transition event="*" target="fail"/>
  </state>
  <state id="s1">
    <transition event="outside" target="pass"/>
    <transition event="*" target="fail"/>
  </state>
  <final id="pass"/><final id="fail"/>"""
    ),
    "delayed_and_cancelled": chart(
        """  <state id="s0">
    <onentry>
      <send event="late" delay="2s" id="late"/>
      <send event="early" delay="1s"/>
      <cancel sendid="late"/>
      <send event="timeout" delay="3s"/>
    </onentry>
    <transition event="early" target="s1"/>
    <transition event="*" target="fail"/>
  </state>
  <state id="s1">
    <transition event="timeout" target="pass"/>
    <transition event="*" target="fail"/>
  </state>
  <final id="pass"/><final id="fail"/>"""
    ),
    "if_and_payload": chart(
        """  <datamodel><data id="n" expr="0"/></datamodel>
  <state id="s0">
    <onentry>
      <if cond="n &gt; 0"><assign location="n" expr="100"/>
      <elseif cond="n == 0"/><assign location="n" expr="n + 2"/>
      <else/><assign location="n" expr="-1"/></if>
      <send event="go"><param name="v" expr="n * 10"/></send>
    </onentry>
    <transition event="go" cond="_event.data.v == 20" target="pass"/>
    <transition event="*" target="fail"/>
  </state>
  <final id="pass"/><final id="fail"/>"""
    ),
    "compound_done_and_always": chart(
        """  <datamodel><data id="k" expr="0"/></datamodel>
  <state id="c">
    <state id="a"><transition target="b"><assign location="k" expr="k + 1"/></transition></state>
    <final id="b"/>
    <transition event="done.state.c" cond="k == 1" target="pass"/>
    <transition event="done.state.c" target="fail"/>
  </state>
  <final id="pass"/><final id="fail"/>"""
    ),
    "parallel_done": chart(
        """  <parallel id="p">
    <state id="r1"><state id="x"><transition event="t" target="y"/></state><final id="y"/></state>
    <state id="r2"><final id="z"/></state>
    <transition event="done.state.p" target="pass"/>
    <onentry><send event="t"/></onentry>
  </parallel>
  <final id="pass"/>"""
    ),
    "history": chart(
        """  <datamodel><data id="k" expr="0"/></datamodel>
  <state id="c" initial="a">
    <state id="a">
      <onentry><raise event="to_b"/></onentry>
      <transition event="to_b" cond="k == 0" target="b"/>
      <transition event="to_b" target="fail"/>
    </state>
    <state id="b">
      <onentry><raise event="out"/></onentry>
      <transition event="out" cond="k == 0" target="away"/>
      <transition event="out" cond="k == 1" target="pass"/>
    </state>
    <history id="h"><transition target="a"/></history>
  </state>
  <state id="away">
    <onentry><assign location="k" expr="1"/><raise event="back"/></onentry>
    <transition event="back" target="h"/>
  </state>
  <final id="pass"/><final id="fail"/>"""
    ),
}


@pytest.mark.parametrize("host", [True, False], ids=["host", "runtime_alone"])
@pytest.mark.parametrize("name", sorted(PASSING))
def test_charts_written_for_flowc_pass_with_the_runner(
    name: str, host: bool, tmp_path: Path
) -> None:
    # runtime_alone: no send host, the runtime's scheduled events are SCXML's external queue
    path = tmp_path / f"test_{name}.scxml"
    path.write_text(PASSING[name], encoding="utf-8")
    outcome = run_test(path, host)
    assert (outcome.status, outcome.reason) == ("pass", "")


def test_a_timer_round_trips_through_scxml_sends() -> None:
    flow = compiled(
        "flow t\nevent go\ninitial state A {\n  after 2s -> B\n  on go -> C\n}\n"
        "final state B\nfinal state C\n"
    )
    text = import_scxml(exported(flow), "t.scxml").flow_text
    assert text is not None
    again = compile_source(text, "t.flow")
    assert again.flow is not None and not again.errors, [str(d) for d in again.diagnostics]
