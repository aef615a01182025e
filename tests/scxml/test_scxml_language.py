"""SCXML features mapped onto flowc language features: `In()` (`active`), `<foreach>` (`for`),
`_event.name` (`event.name`), `<donedata>` (`done(...)`), initial transitions with actions.
Each chart here is written for flowc (not taken from the W3C suite) and run with the
conformance runner: it reaches `pass` only if the feature behaves as SCXML says."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from charts import chart
from test_scxml_export import compiled, exported

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


LOOP = chart(
    """  <datamodel>
    <data id="xs" expr="[1, 2, 3]"/>
    <data id="sum" expr="0"/>
    <data id="count" expr="0"/>
  </datamodel>
  <state id="s">
    <onentry>
      <foreach array="xs" item="x" index="i">
        <assign location="sum" expr="sum + x * i"/>
        <assign location="xs" expr="xs + [9]"/>
      </foreach>
      <foreach array="sum" item="y"><assign location="count" expr="100"/></foreach>
      <assign location="count" expr="count + 1"/>
    </onentry>
    <transition event="error.execution" cond="sum == 8 and count == 0 and x == 3" target="t"/>
    <transition event="*" target="fail"/>
  </state>
  <state id="t">
    <onentry>
      <foreach array="xs" item="'bad'"><assign location="count" expr="100"/></foreach>
    </onentry>
    <transition event="error.execution" cond="count == 0" target="u"/>
    <transition event="*" target="fail"/>
  </state>
  <state id="u">
    <onentry>
      <foreach array="[1, 2]" item="z">
        <assign location="count" expr="count + 1"/>
        <assign location="nowhere" expr="1"/>
      </foreach>
      <assign location="count" expr="50"/>
    </onentry>
    <transition event="error.execution" cond="count == 1 and z == 1" target="pass"/>
    <transition event="*" target="fail"/>
  </state>
  <final id="pass"/><final id="fail"/>"""
)


def test_foreach_becomes_for(tmp_path: Path) -> None:
    text = imported(LOOP)
    assert "for x, i in xs { sum = sum + x * i; xs = xs + [9] }" in text
    # undeclared loop variables are declared, typed from the array
    assert "  x: int = 0\n" in text and "  i: int = 0\n" in text
    # an array that is not a list, an item that is not a name: error.execution, block stops
    assert (
        "entry do for x, i in xs { sum = sum + x * i; xs = xs + [9] }; raise error.execution"
        in (text)
    )
    # an error in the body: the first round, then the block stops
    assert (
        "if len([1, 2]) != 0 { z = [1, 2][0]; count = count + 1; raise error.execution }"
        " else { count = 50 }"
    ) in text
    passes(LOOP, tmp_path)


def test_foreach_without_array_or_item_is_refused() -> None:
    text = chart('  <state id="a"><onentry><foreach item="x"/></onentry></state>')
    result = import_scxml(text, "c.scxml")
    assert [d.code for d in result.diagnostics] == ["E415"]


def test_for_and_active_export_as_foreach_and_in() -> None:
    flow = compiled(
        "flow t\nevent go\ncontext { xs: list[int] = [1, 2], x: int = 0, n: int = 0 }\n"
        "initial state A { on go if active(A) -> B do for x in xs { n += x } }\n"
        "final state B\n"
    )
    text = exported(flow)
    assert '<foreach array="xs" item="x"><assign location="n" expr="n + x"/></foreach>' in (text)
    assert "cond=\"In('A')\"" in text
    again = imported(text)
    assert "on go if active(A) -> B do for x in xs { n = n + x }" in again


EVENT_NAME = chart(
    """  <datamodel><data id="seen" expr="''"/><data id="name" expr="''"/></datamodel>
  <state id="s">
    <onentry><raise event="a.b"/></onentry>
    <transition event="a" target="t"><assign location="seen" expr="_event.name"/></transition>
    <onexit><assign location="name" expr="_event.name"/></onexit>
  </state>
  <state id="t">
    <transition cond="seen == 'a.b' and name == 'a.b'" target="pass"/>
    <transition target="fail"/>
  </state>
  <final id="pass"/><final id="fail"/>"""
)


def test_event_name_becomes_event_name(tmp_path: Path) -> None:
    text = imported(EVENT_NAME)
    assert "on a, a.* -> t do seen = event_name()" in text
    passes(EVENT_NAME, tmp_path)


DONE_DATA_FAILS = chart(
    """  <state id="s" initial="a">
    <transition event="error.execution" target="t"/>
    <transition event="done.state.s" target="fail"/>
    <state id="a"><transition target="b"/></state>
    <final id="b">
      <onentry><raise event="first"/></onentry>
      <donedata><param name="x" location="undeclared"/></donedata>
    </final>
  </state>
  <state id="t"><transition event="done.state.s" target="pass"/></state>
  <final id="pass"/><final id="fail"/>"""
)


def test_done_data_scxml_cannot_evaluate_raises_error_execution_first(tmp_path: Path) -> None:
    text = imported(DONE_DATA_FAILS)
    assert "entry do raise first; raise error.execution" in text
    passes(DONE_DATA_FAILS, tmp_path)
    legal = DONE_DATA_FAILS.replace('location="undeclared"', 'expr="1"')
    assert 'final state b with {"x": 1}' in imported(legal)


INITIALS = chart(
    """  <datamodel><data id="log" expr="''"/></datamodel>
  <state id="top">
    <onentry><assign location="log" expr="log + 'top '"/></onentry>
    <initial>
      <transition target="l2 r2"><assign location="log" expr="log + 'initial '"/></transition>
    </initial>
    <parallel id="p">
      <state id="left" initial="l1">
        <state id="l1"/>
        <state id="l2"><onentry><assign location="log" expr="log + 'l2 '"/></onentry></state>
      </state>
      <state id="right">
        <state id="r1"/>
        <state id="r2"><onentry><assign location="log" expr="log + 'r2'"/></onentry></state>
      </state>
    </parallel>
    <transition cond="log == 'top initial l2 r2' and In('l2') and In('r2')" target="pass"/>
    <transition target="fail"/>
  </state>
  <final id="pass"/><final id="fail"/>"""
)


def test_an_initial_transition_becomes_an_initial_rule(tmp_path: Path) -> None:
    text = imported(INITIALS)
    assert '  initial -> l2, r2 do log = log + "initial "\n' in text
    assert "  initial parallel state p {\n" in text
    passes(INITIALS, tmp_path)


DOCUMENT_INITIAL = chart(
    """  <state id="s" initial="a">
    <state id="a"><transition target="fail"/></state>
    <state id="b" initial="b1">
      <state id="b1"><transition target="fail"/></state>
      <state id="b2"><transition target="pass"/></state>
    </state>
  </state>
  <final id="pass"/><final id="fail"/>""",
    attrs=' initial="b2"',
)


def test_the_document_initial_becomes_the_rule_of_its_top_level_state(tmp_path: Path) -> None:
    text = imported(DOCUMENT_INITIAL)
    assert "initial state s {\n  initial -> b2\n" in text
    passes(DOCUMENT_INITIAL, tmp_path)
    # entered by default elsewhere too: the rule would change that entry
    again = DOCUMENT_INITIAL.replace(
        '<final id="pass"/>', '<final id="pass"/><state id="x"><transition target="s"/></state>'
    )
    assert [d.code for d in import_scxml(again, "c.scxml").diagnostics] == ["E419"]


def test_an_initial_rule_exports_as_an_initial_transition() -> None:
    flow = compiled(
        "flow t\nevent go\ncontext { n: int = 0 }\ninitial state A {\n"
        "  initial -> y do n += 1\n  initial state x { initial state z { }  state y { } }\n}\n"
    )
    text = exported(flow)
    assert "<initial>\n" in text and '<transition target="y">' in text
    assert "initial -> y do n = n + 1" in imported(text)


HISTORY_DEFAULT = chart(
    """  <datamodel><data id="log" expr="''"/></datamodel>
  <state id="s">
    <onentry><assign location="log" expr="log + 's '"/></onentry>
    <initial><transition target="h"/></initial>
    <history id="h">
      <transition target="b"><assign location="log" expr="log + 'h'"/></transition>
    </history>
    <state id="a"/>
    <state id="b"/>
    <transition cond="log == 's h' and In('b')" target="pass"/>
    <transition target="fail"/>
  </state>
  <final id="pass"/><final id="fail"/>"""
)


def test_history_default_actions_are_kept(tmp_path: Path) -> None:
    text = imported(HISTORY_DEFAULT)
    assert '  history h -> b do log = log + "h"\n' in text
    passes(HISTORY_DEFAULT, tmp_path)
    again = imported(exported(compiled(text)))
    assert '  history h -> b do log = log + "h"\n' in again


DONE_DATA = chart(
    """  <datamodel><data id="n" expr="3"/></datamodel>
  <state id="s" initial="a">
    <state id="a"><transition target="d"/></state>
    <final id="d">
      <donedata><param name="total" expr="n * 2"/><param name="copy" location="n"/></donedata>
    </final>
    <transition event="done.state.s" cond="_event.data.total == 6 and _event.data['copy'] == 3"
      target="pass"/>
    <transition event="done.state.s" target="fail"/>
  </state>
  <final id="pass"/><final id="fail"/>"""
)


def test_done_data_becomes_with(tmp_path: Path) -> None:
    text = imported(DONE_DATA)
    assert '  final state d with {"total": n * 2, "copy": n}\n' in text
    passes(DONE_DATA, tmp_path)
    again = exported(compiled(text))
    assert '<donedata><param name="total" expr="n * 2"/><param name="copy" expr="n"/>' in again
    assert imported(again) == text
    content = DONE_DATA.replace('<param name="copy" location="n"/>', '<content expr="1"/>')
    assert [d.code for d in import_scxml(content, "c.scxml").diagnostics] == ["E418"]
