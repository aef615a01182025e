"""SCXML semantics the importer writes out with flowc's constructs: a delay read from a
variable, `<data>` values that fail when the document starts or that the start overwrites,
internal transitions to a descendant, transitions into another region of a parallel state,
done data as one value, the two names of the SCXML event I/O processor, scripts read as
assignments, late data binding, conditions that are not expressions,
`<data>` given as text or read from a file. Each chart is written for
flowc, imported, compiled and run by the conformance runner's host, and reaches `pass` only if
the mapping keeps SCXML's meaning."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from charts import chart

from flowc.compiler.scxml.importer import import_scxml

sys.path.insert(0, str(Path(__file__).parents[1] / "conformance"))
from w3c_runner import run_test

OUTCOMES = '  <final id="pass"/><final id="fail"/>'

PASSING = {
    # `delayexpr` reading a variable: the delay it holds when the send runs.
    "delay_from_a_variable": chart(
        """  <datamodel><data id="wait" expr="'5s'"/><data id="other" expr="'1s'"/></datamodel>
  <state id="s0">
    <onentry>
      <assign location="wait" expr="'200ms'"/>
      <send event="second" delayexpr="wait"/>
      <send event="first" delayexpr="'100ms'"/>
      <assign location="other" expr="'not a duration'"/>
      <send event="never" delayexpr="other"/>
    </onentry>
    <transition event="error.execution" target="s1"/>
    <transition event="*" target="fail"/>
  </state>
  <state id="s1">
    <transition event="first" target="s2"/>
    <transition event="*" target="fail"/>
  </state>
  <state id="s2">
    <transition event="second" target="pass"/>
    <transition event="*" target="fail"/>
  </state>
"""
        + OUTCOMES
    ),
    # A `<data>` value that is not an expression: the variable is unset and error.execution
    # comes first when the document starts, before what the first state raises.
    "data_that_fails_at_start": chart(
        """  <datamodel><data id="v" expr="1 = 1"/><data id="n" expr="0"/></datamodel>
  <state id="s0">
    <onentry><raise event="mine"/></onentry>
    <transition event="error.execution" target="s1"><assign location="v" expr="7"/></transition>
    <transition event="*" target="fail"/>
  </state>
  <state id="s1">
    <transition event="mine" cond="v == 7" target="pass"/>
    <transition event="*" target="fail"/>
  </state>
"""
        + OUTCOMES
    ),
    # An internal transition to a descendant leaves the active child, not the source.
    "internal_transition_to_a_descendant": chart(
        """  <datamodel>
    <data id="left_outer" expr="0"/><data id="left_a" expr="0"/><data id="left_b" expr="0"/>
  </datamodel>
  <state id="outer" initial="a">
    <onentry><raise event="move"/><raise event="move"/><raise event="check"/></onentry>
    <onexit><assign location="left_outer" expr="left_outer + 1"/></onexit>
    <transition event="move" type="internal" target="b"/>
    <transition event="check" target="s1"/>
    <state id="a">
      <onexit><assign location="left_a" expr="left_a + 1"/></onexit>
    </state>
    <state id="b">
      <onexit><assign location="left_b" expr="left_b + 1"/></onexit>
    </state>
  </state>
  <state id="s1">
    <transition cond="left_outer == 1 and left_a == 1 and left_b == 2" target="pass"/>
    <transition target="fail"/>
  </state>
"""
        + OUTCOMES
    ),
    # A transition into the start of another region leaves the parallel state and enters it
    # again: every region starts over.
    "into_another_region": chart(
        """  <datamodel><data id="entered" expr="0"/></datamodel>
  <state id="top" initial="p">
    <parallel id="p">
      <onentry><assign location="entered" expr="entered + 1"/></onentry>
      <state id="r1" initial="x">
        <state id="x"><transition event="go" target="y"/></state>
        <state id="y"><transition event="jump" target="r2"/></state>
      </state>
      <state id="r2" initial="u">
        <state id="u"><transition event="step" target="w"/></state>
        <state id="w"><transition event="check" cond="entered == 2" target="pass"/></state>
      </state>
    </parallel>
    <transition event="check" target="fail"/>
    <onentry>
      <raise event="go"/><raise event="step"/><raise event="jump"/>
      <raise event="step"/><raise event="check"/>
    </onentry>
  </state>
"""
        + OUTCOMES
    ),
    # `_event` is not bound before the first event: false in the start's entry.
    "event_unbound_at_start": chart(
        """  <state id="s0">
    <onentry>
      <if cond="_event"><raise event="bound"/><else/><raise event="unbound"/></if>
      <if cond="not _event"><raise event="then_unbound"/></if>
    </onentry>
    <transition event="unbound" target="s1"/>
    <transition event="*" target="fail"/>
  </state>
  <state id="s1">
    <transition event="then_unbound" target="pass"/>
    <transition event="*" target="fail"/>
  </state>
"""
        + OUTCOMES
    ),
    # A done event without data (no `<donedata>`, or one SCXML cannot evaluate): `_event.data`
    # is None on it, whatever the other rules' events carry.
    "done_event_without_data": chart(
        """  <state id="s0" initial="s01">
    <transition event="error.execution" target="s1"/>
    <transition event="done.state.s0" target="fail"/>
    <state id="s01"><transition target="s02"/></state>
    <final id="s02"><donedata><param location="no.such" name="p"/></donedata></final>
  </state>
  <state id="s1" initial="s11">
    <transition event="done.state.s0" cond="_event.data is None" target="s2"/>
    <transition event="*" target="fail"/>
    <state id="s11"/>
  </state>
  <state id="s2" initial="s21">
    <onentry><raise event="go"/></onentry>
    <transition event="done.state.s2" cond="_event.data == None" target="pass"/>
    <transition event="*" target="fail"/>
    <state id="s21"><transition event="go" target="s22"/></state>
    <final id="s22"/>
  </state>
"""
        + OUTCOMES
    ),
    # `<donedata><content>`: the done event's `_event.data` is that one value (an expression,
    # a literal text, a map whose name keys are also fields).
    "done_data_as_one_value": chart(
        """  <state id="s0" initial="a">
    <transition event="done.state.s0" cond="_event.data == 'ab'" target="s1"/>
    <transition event="done.state.s0" target="fail"/>
    <state id="a"><transition target="b"/></state>
    <final id="b"><donedata><content expr="'a' + 'b'"/></donedata></final>
  </state>
  <state id="s1" initial="c">
    <transition event="done.state.s1" cond="_event.data == 42" target="s2"/>
    <transition event="done.state.s1" target="fail"/>
    <final id="c"><donedata><content> 42 </content></donedata></final>
  </state>
  <state id="s2" initial="d">
    <transition event="done.state.s2" cond="_event.data.size == 3 and _event.data['size'] == 3"
      target="pass"/>
    <transition event="done.state.s2" target="fail"/>
    <final id="d"><donedata><content expr="{'size': 3}"/></donedata></final>
  </state>
"""
        + OUTCOMES
    ),
    # The SCXML processor has two names, its URI and `scxml`: an equality with either accepts
    # both, whichever one a send's `type` gave.
    "processor_names": chart(
        """  <datamodel><data id="kind"/></datamodel>
  <state id="s0">
    <onentry><send event="e1" type="scxml"/><send event="e2"/></onentry>
    <transition event="e1" cond="_event.origintype == 'scxml'" target="s1">
      <assign location="kind" expr="_event.origintype"/>
    </transition>
    <transition event="*" target="fail"/>
  </state>
  <state id="s1">
    <transition event="e2" cond="kind == 'http://www.w3.org/TR/scxml/#SCXMLEventProcessor'
      and 'scxml' == _event.origintype and not (kind != 'scxml')" target="pass"/>
    <transition event="*" target="fail"/>
  </state>
"""
        + OUTCOMES
    ),
    # A `<data>` value of one type that the start overwrites with another before anything can
    # read it: the variable holds the second type.
    "data_overwritten_at_start": chart(
        """  <datamodel><data id="v" expr="27"/></datamodel>
  <state id="s0">
    <onentry><assign location="v" expr="'#_internal'"/><send targetexpr="v" event="e"/></onentry>
    <transition event="e" cond="v == '#_internal'" target="pass"/>
    <transition event="*" target="fail"/>
  </state>
"""
        + OUTCOMES
    ),
    # A `<script>` is its assignments: at the top level they run when the document loads
    # (before the start's entry) and declare their variables; in a block they run in order
    # with the other actions, and one that fails stops the script.
    "scripts_as_assignments": chart(
        """  <datamodel><data id="n" expr="0"/></datamodel>
  <script>
    n = 2
    total = n * 10
  </script>
  <state id="s0">
    <onentry>
      <assign location="n" expr="n + 1"/>
      <script>n += 4; label = 'n'
</script>
      <script>after = 1; _name = 'x'; after = 2</script>
    </onentry>
    <transition event="error.execution"
      cond="n == 7 and total == 20 and label == 'n' and after == 1" target="pass"/>
    <transition event="*" target="fail"/>
  </state>
"""
        + OUTCOMES
    ),
    # `binding="late"`: a state's `<data>` gets its value when the state is first entered
    # (from the values of that moment), not again on later entries; the top-level data at
    # the start; a value that is not an expression raises error.execution at that entry.
    "late_binding": chart(
        """  <datamodel><data id="n" expr="1"/></datamodel>
  <state id="s0">
    <onentry><assign location="n" expr="5"/></onentry>
    <transition target="s1"/>
  </state>
  <state id="s1">
    <datamodel><data id="twice" expr="n * 2"/><data id="bad" expr="1 = 1"/></datamodel>
    <onentry><assign location="n" expr="n + 1"/></onentry>
    <transition event="error.execution" cond="twice == 10" target="s2">
      <assign location="twice" expr="twice + 1"/>
    </transition>
    <transition event="again" cond="twice == 11 and n == 7" target="pass"/>
    <transition event="*" target="fail"/>
  </state>
  <state id="s2">
    <onentry><raise event="again"/></onentry>
    <transition target="s1"/>
  </state>
"""
        + OUTCOMES,
        attrs=' binding="late"',
    ),
    # A `cond` that is not an expression is false and raises error.execution each time it is
    # tried: before what the transition taken after it raises (eventless, and for an event
    # whose descriptor it covers, twice for two such conditions).
    "condition_that_is_not_an_expression": chart(
        """  <state id="s0">
    <transition cond="1 = 1" target="fail"/>
    <transition target="s1"/>
  </state>
  <state id="s1">
    <onentry><raise event="mine"/></onentry>
    <transition event="error.execution" target="s2"/>
    <transition event="*" target="fail"/>
  </state>
  <state id="s2">
    <transition event="mine" target="s3"/>
    <transition event="*" target="fail"/>
  </state>
  <state id="s3">
    <onentry><raise event="go.now"/></onentry>
    <transition event="go" cond="x =! 2" target="fail"/>
    <transition event="*" cond="(" target="fail"/>
    <transition event="go.now" target="s4"><raise event="after"/></transition>
    <transition event="*" target="fail"/>
  </state>
  <state id="s4">
    <transition event="error.execution" target="s5"/>
    <transition event="*" target="fail"/>
  </state>
  <state id="s5">
    <transition event="error.execution" target="s6"/>
    <transition event="*" target="fail"/>
  </state>
  <state id="s6">
    <transition event="after" target="pass"/>
    <transition event="*" target="fail"/>
  </state>
"""
        + OUTCOMES
    ),
    # A `<data>` given as text (or read from the file its `src` names, beside the chart) is
    # that literal, or a string with its white space normalised; a variable holding a value
    # from the start is never None.
    "data_as_text_and_from_a_file": chart(
        """  <datamodel>
    <data id="words">
      two
      words
    </data>
    <data id="items">[1, 2, 3]</data>
    <data id="loaded" src="file:test_data_as_text_and_from_a_file.txt"/>
  </datamodel>
  <state id="s0">
    <transition cond="words == 'two words' and items[2] == 3 and loaded is not None
      and not (None == loaded) and loaded == 'from a file'" target="pass"/>
    <transition target="fail"/>
  </state>
"""
        + OUTCOMES
    ),
}

#: Files beside the charts, which a `<data src>` reads (the runner's `--data-src`).
FILES = {"data_as_text_and_from_a_file": "from\n  a file\n"}


@pytest.mark.parametrize("host", [True, False], ids=["host", "runtime_alone"])
@pytest.mark.parametrize("name", sorted(PASSING))
def test_charts_pass_with_the_runner(name: str, host: bool, tmp_path: Path) -> None:
    # runtime_alone: no send host, the runtime's scheduled events are SCXML's external queue
    path = tmp_path / f"test_{name}.scxml"
    path.write_text(PASSING[name], encoding="utf-8")
    if name in FILES:
        path.with_suffix(".txt").write_text(FILES[name], encoding="utf-8")
    outcome = run_test(path, host)
    assert (outcome.status, outcome.reason) == ("pass", "")


def codes(text: str) -> list[str]:
    result = import_scxml(text, "chart.scxml")
    assert result.flow_text is None
    return [d.code for d in result.diagnostics]


def test_an_internal_transition_stays_on_its_state_behind_an_earlier_one_for_its_event() -> None:
    text = import_scxml(
        chart(
            """  <state id="outer">
    <transition event="move.*" target="outer"/>
    <transition event="move" type="internal" target="b"/>
    <state id="a"/><state id="b"/>
  </state>"""
        ),
        "chart.scxml",
    ).flow_text
    assert text is not None
    assert "  on move -> b\n" in text


def test_a_data_value_that_fails_at_start_in_a_state_entered_again_is_refused() -> None:
    text = chart(
        """  <datamodel><data id="v" expr="1 = 1"/></datamodel>
  <state id="s0"><transition event="again" target="s0"/></state>"""
    )
    assert codes(text) == ["E410"]


def test_a_variable_given_values_of_two_types_is_refused() -> None:
    # (s0 is entered again: its first entry is not the only one, so the `1` may be read)
    text = chart(
        """  <datamodel><data id="v" expr="1"/></datamodel>
  <state id="s0"><onentry><assign location="v" expr="'text'"/></onentry>
    <transition event="again" target="s0"/></state>"""
    )
    assert codes(text) == ["E410"]


def test_a_delay_from_a_variable_given_a_computed_value_is_refused() -> None:
    text = chart(
        """  <datamodel><data id="d" expr="'1s'"/></datamodel>
  <state id="s0"><onentry>
    <assign location="d" expr="d + 's'"/><send event="x" delayexpr="d"/>
  </onentry></state>"""
    )
    assert codes(text) == ["E414"]


def test_a_json_variable_takes_any_value() -> None:
    text = chart(
        """  <datamodel><data id="v" expr="1" xmlns:flowc="https://flowc.dev/ns/scxml"
    flowc:type="json"/></datamodel>
  <state id="s0"><onentry><assign location="v" expr="'text'"/></onentry></state>"""
    )
    result = import_scxml(text, "chart.scxml")
    assert result.flow_text is not None, [str(d) for d in result.diagnostics]
    assert "  v: json = 1\n" in result.flow_text


def test_an_error_in_a_branch_ends_the_branch_not_what_follows_the_if() -> None:
    result = import_scxml(
        chart(
            """  <datamodel><data id="n" expr="0"/></datamodel>
  <state id="s0"><onentry>
    <if cond="n == 1"><assign location="_name" expr="1"/><assign location="n" expr="2"/>
    <else/><assign location="n" expr="3"/></if>
    <assign location="n" expr="4"/>
  </onentry></state>"""
        ),
        "chart.scxml",
    )
    assert result.flow_text is not None
    assert (
        "entry do if n == 1 { raise error.execution } else { n = 3 }; n = 4\n" in result.flow_text
    )


def test_event_as_a_value_is_refused_where_an_event_may_be_bound() -> None:
    text = chart(
        """  <state id="s0">
    <onentry><if cond="_event"><raise event="x"/></if></onentry>
    <transition event="again" target="s0"/>
  </state>"""
    )
    assert codes(text) == ["E416"]


def test_a_data_value_read_before_it_is_overwritten_keeps_its_type() -> None:
    # The `<log>` reads the number first: the variable holds two types (refused).
    assert codes(
        chart(
            """  <datamodel><data id="v" expr="1"/></datamodel>
  <state id="s0"><onentry>
    <log expr="v"/><assign location="v" expr="'text'"/>
  </onentry></state>"""
        )
    ) == ["E410"]


def test_a_data_value_overwritten_from_itself_keeps_its_type() -> None:
    assert codes(
        chart(
            """  <datamodel><data id="v" expr="1"/></datamodel>
  <state id="s0"><onentry><assign location="v" expr="str(v)"/></onentry></state>"""
        )
    ) == ["E410"]


def test_done_data_mixing_content_and_params_is_refused() -> None:
    assert codes(
        chart(
            """  <state id="s0" initial="f">
    <final id="f"><donedata><content expr="1"/><param name="p" expr="2"/></donedata></final>
  </state>"""
        )
    ) == ["E418"]


def test_a_top_level_script_in_a_state_entered_again_is_refused() -> None:
    # It runs once, when the document loads; flowc runs it in the start's entry.
    assert codes(
        chart(
            """  <script>n = 1</script>
  <state id="s0"><transition event="again" target="s0"/></state>"""
        )
    ) == ["E407"]


def test_a_script_assigning_anything_but_a_name_is_refused() -> None:
    assert codes(
        chart(
            """  <datamodel><data id="m" expr="{'a': 1}"/></datamodel>
  <state id="s0"><onentry><script>m['a'] = 2</script></onentry></state>"""
        )
    ) == ["E407"]


def test_a_binding_scxml_does_not_have_is_refused() -> None:
    assert codes(chart('  <state id="s0"/>', attrs=' binding="lazy"')) == ["E412"]


def test_a_data_value_read_by_a_late_binding_keeps_its_type() -> None:
    # `w` is bound when s0 is entered, before its entry overwrites `v`: it reads the number.
    assert codes(
        chart(
            """  <datamodel><data id="v" expr="1"/></datamodel>
  <state id="s0">
    <datamodel><data id="w" expr="v + 1"/></datamodel>
    <onentry><assign location="v" expr="'text'"/></onentry>
  </state>""",
            attrs=' binding="late"',
        )
    ) == ["E410"]
