"""Sends to the session by address, computed targets, types and event names, the errors SCXML
raises for sends it cannot make, the `_event` fields and `<content>`: each chart is written for
flowc (not taken from the W3C suite), imported, compiled and run by the conformance runner's
host, and reaches `pass` only if the mapping keeps SCXML's meaning."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from charts import chart

from flowc.compiler.driver import compile_source
from flowc.compiler.scxml.importer import import_scxml
from flowc.runtime import FakeClock, Machine

sys.path.insert(0, str(Path(__file__).parents[1] / "conformance"))
from w3c_runner import run_test

OUTCOMES = '  <final id="pass"/><final id="fail"/>'

PASSING = {
    # `#_scxml_` + the session id is the session's external queue: after what it raises.
    "own_session_address": chart(
        """  <state id="s0">
    <onentry>
      <send event="outside" target="#_scxml_me"/>
      <raise event="inside"/>
    </onentry>
    <transition event="inside" target="s1"/>
    <transition event="*" target="fail"/>
  </state>
  <state id="s1">
    <transition event="outside" target="pass"/>
    <transition event="*" target="fail"/>
  </state>
"""
        + OUTCOMES,
        attrs=' name="me"',
    ),
    # Another session is unreachable: error.communication, on the internal queue.
    "other_session_is_a_communication_error": chart(
        """  <state id="s0">
    <onentry>
      <send event="lost" target="#_scxml_someone_else"/>
      <send event="later"/>
    </onentry>
    <transition event="error.communication" target="pass"/>
    <transition event="*" target="fail"/>
  </state>
"""
        + OUTCOMES,
        attrs=' name="me"',
    ),
    # An address read from `_ioprocessors` and one computed from `_sessionid`.
    "computed_targets": chart(
        """  <datamodel>
    <data id="here" expr="_ioprocessors['scxml']['location']"/>
    <data id="also" expr="'#_scxml_' + _sessionid"/>
    <data id="inner" expr="'#_internal'"/>
    <data id="bad" expr="'nowhere'"/>
    <data id="same" expr="_ioprocessors['http://www.w3.org/TR/scxml/#SCXMLEventProcessor'].location"/>
  </datamodel>
  <state id="s0">
    <onentry>
      <send event="first" targetexpr="here"/>
      <send event="second" targetexpr="inner"/>
    </onentry>
    <transition event="second" target="s1"/>
    <transition event="*" target="fail"/>
  </state>
  <state id="s1">
    <transition event="first" cond="same == here" target="s2"/>
    <transition event="*" target="fail"/>
  </state>
  <state id="s2">
    <onentry><send event="third" targetexpr="also"/></onentry>
    <transition event="third" target="s3"/>
    <transition event="*" target="fail"/>
  </state>
  <state id="s3">
    <onentry><send event="never" targetexpr="bad"/></onentry>
    <transition event="error.execution" target="pass"/>
    <transition event="*" target="fail"/>
  </state>
"""
        + OUTCOMES,
    ),
    # The SCXML processor by either name; any other type is error.execution.
    "send_types": chart(
        """  <datamodel><data id="kind" expr="'scxml'"/></datamodel>
  <state id="s0">
    <onentry><send event="typed" typeexpr="kind"/></onentry>
    <transition event="typed" target="s1">
      <assign location="kind" expr="'carrier-pigeon'"/>
    </transition>
    <transition event="*" target="fail"/>
  </state>
  <state id="s1">
    <onentry><send event="never" typeexpr="kind"/></onentry>
    <transition event="error.execution" target="s2"/>
    <transition event="*" target="fail"/>
  </state>
  <state id="s2">
    <onentry>
      <send event="never" type="telegraph"/>
      <raise event="after_error"/>
    </onentry>
    <transition event="error.execution" target="s3"/>
    <transition event="*" target="fail"/>
  </state>
  <state id="s3">
    <transition event="after_error" target="fail"/>
    <transition target="pass"/>
  </state>
"""
        + OUTCOMES,
    ),
    # A failed send still stores its id, and its error event carries it.
    "failed_send_keeps_its_id": chart(
        """  <datamodel><data id="stored"/><data id="seen"/></datamodel>
  <state id="s0">
    <onentry><send event="x" target="not a uri" idlocation="stored"/></onentry>
    <transition event="error" target="s1">
      <assign location="seen" expr="_event.sendid"/>
    </transition>
    <transition event="*" target="fail"/>
  </state>
  <state id="s1">
    <transition cond="stored == seen and seen != ''" target="pass"/>
    <transition target="fail"/>
  </state>
"""
        + OUTCOMES,
    ),
    # `_event.type`: internal for raise, platform for errors, external for sends.
    "event_types": chart(
        """  <datamodel><data id="kinds" expr="''"/></datamodel>
  <state id="s0">
    <onentry>
      <raise event="one"/>
      <assign location="nothing.here" expr="1"/>
    </onentry>
    <onentry><send event="go"/></onentry>
    <transition event="one error.execution two">
      <assign location="kinds" expr="kinds + _event.type + ' '"/>
    </transition>
    <transition event="go" target="s1"/>
  </state>
  <state id="s1">
    <onentry><send event="two"/><send event="last"/></onentry>
    <transition event="two">
      <assign location="kinds" expr="kinds + _event.type"/>
    </transition>
    <transition event="last" cond="kinds == 'internal platform external'" target="pass"/>
    <transition event="last" target="fail"/>
  </state>
"""
        + OUTCOMES,
    ),
    # origin, origintype and sendid of an external event; a reply to its origin.
    "origin_and_sendid": chart(
        """  <datamodel><data id="back"/><data id="ids" expr="''"/></datamodel>
  <state id="s0">
    <onentry><send event="ask" id="q1"/><send event="ask"/></onentry>
    <transition event="ask" cond="_event.origintype == 'http://www.w3.org/TR/scxml/#SCXMLEventProcessor'">
      <assign location="back" expr="_event.origin"/>
      <assign location="ids" expr="ids + '[' + _event.sendid + ']'"/>
      <send event="reply" targetexpr="_event.origin"/>
    </transition>
    <transition event="reply" cond="ids == '[q1][]'" target="s1"/>
  </state>
  <state id="s1">
    <onentry><send event="again" targetexpr="back"/></onentry>
    <transition event="reply"/>
    <transition event="again" cond="not _event.invokeid" target="pass"/>
    <transition event="*" target="fail"/>
  </state>
"""
        + OUTCOMES,
    ),
    # `_event.data` as a whole: the `<content>` (a literal, text, an expression) or the
    # map of the params.
    "content_and_whole_data": chart(
        """  <datamodel><data id="n" expr="4"/></datamodel>
  <state id="s0">
    <onentry>
      <send event="num"><content>123</content></send>
      <send event="text"><content>
        hello
           there </content></send>
      <send event="calc"><content expr="n * 2"/></send>
      <send event="params"><param name="a" expr="1"/><param name="b" expr="2"/></send>
    </onentry>
    <transition event="num" cond="_event.data == 123" target="s1"/>
    <transition event="*" target="fail"/>
  </state>
  <state id="s1">
    <transition event="text" cond="_event.data == 'hello there'" target="s2"/>
    <transition event="*" target="fail"/>
  </state>
  <state id="s2">
    <transition event="calc" cond="_event.data == 8" target="s3"/>
    <transition event="*" target="fail"/>
  </state>
  <state id="s3">
    <transition event="params" target="s4"
      cond="_event.data == {'a': 1, 'b': 2} and _event.data.get('b') == 2"/>
    <transition event="*" target="fail"/>
  </state>
  <state id="s4">
    <onentry><send event="record"><content>{"size": 27, "name": "bar"}</content></send></onentry>
    <transition event="record" cond="_event.data['name'] == 'bar' and _event.data.size == 27"
      target="pass"/>
    <transition event="*" target="fail"/>
  </state>
"""
        + OUTCOMES,
    ),
    # System variables are read-only: assigning one is error.execution and changes nothing.
    "system_variables_are_read_only": chart(
        """  <datamodel>
    <data id="sid" expr="_sessionid"/>
    <data id="io" expr="_ioprocessors"/>
    <data id="errors" expr="0"/>
  </datamodel>
  <state id="s0">
    <onentry>
      <assign location="_sessionid" expr="'other'"/>
      <assign location="errors" expr="100"/>
    </onentry>
    <onentry><assign location="_name" expr="'other'"/></onentry>
    <onentry><assign location="_ioprocessors" expr="1"/></onentry>
    <onentry><assign location="_event" expr="1"/></onentry>
    <transition event="error.execution"><assign location="errors" expr="errors + 1"/></transition>
    <transition cond="errors == 4" target="s1"/>
  </state>
  <state id="s1">
    <transition target="pass"
      cond="sid == _sessionid and _name == 'me' and io == _ioprocessors and io"/>
    <transition target="fail"/>
  </state>
"""
        + OUTCOMES,
        attrs=' name="me"',
    ),
    # hasattr(_event, FIELD) for the fields every event has; a computed event name.
    "hasattr_and_eventexpr": chart(
        """  <datamodel><data id="next" expr="'wrong'"/></datamodel>
  <state id="s0">
    <onentry>
      <assign location="next" expr="'right'"/>
      <send eventexpr="next"/>
    </onentry>
    <transition event="right" target="pass"
      cond="hasattr(_event, 'origin') and hasattr(_event, 'data')"/>
    <transition event="*" target="fail"/>
  </state>
  <state id="idle"><transition event="wrong" target="fail"/></state>
"""
        + OUTCOMES,
    ),
}


@pytest.mark.parametrize("host", [True, False], ids=["host", "runtime_alone"])
@pytest.mark.parametrize("name", sorted(PASSING))
def test_charts_pass_with_the_runner(name: str, host: bool, tmp_path: Path) -> None:
    # runtime_alone: no send host, the runtime's scheduled events are SCXML's external queue
    path = tmp_path / f"test_{name}.scxml"
    path.write_text(PASSING[name], encoding="utf-8")
    outcome = run_test(path, host)
    assert (outcome.status, outcome.reason) == ("pass", "")


def imported(text: str) -> str:
    result = import_scxml(text, "chart.scxml")
    assert result.flow_text is not None, [str(d) for d in result.diagnostics]
    return result.flow_text


def test_event_fields_are_declared_only_where_read_with_their_defaults() -> None:
    text = imported(
        chart(
            """  <datamodel><data id="t"/></datamodel>
  <state id="s0">
    <onentry><raise event="a"/><raise event="b"/></onentry>
    <transition event="a"><assign location="t" expr="_event.type"/></transition>
  </state>"""
        )
    )
    assert 'event a(scxml_type: str = "external")\n' in text
    assert "event b\n" in text
    assert 'raise a(scxml_type: "internal"); raise b' in text


def test_a_send_to_a_session_checks_the_session_id_when_it_runs() -> None:
    text = imported(
        chart('  <state id="s0"><onentry><send event="x" target="#_scxml_me"/></onentry></state>')
    )
    assert 'if sessionid == "me" { send x after 0 ms }' in text
    assert "else { raise error.communication }" in text


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ('<onentry><send event="x" target="#_nobody"/></onentry>', "E409"),
        ('<onentry><send event="x" type="basichttp"/></onentry>', "E409"),
        # longer than a scheduled event may wait (36500 days)
        ('<onentry><send event="x" delay="3153600001s"/></onentry>', "E414"),
        ('<onentry><send eventexpr="\'x\'" target="#_internal"/></onentry>', "E410"),
        ("<onentry><log expr=\"_ioprocessors['basichttp']\"/></onentry>", "E409"),
        ("<onentry><log expr=\"hasattr(_event, '__class__')\"/></onentry>", "E411"),
        ("<onentry><log expr=\"hasattr(len, 'x')\"/></onentry>", "E411"),
        ("<onentry><log expr=\"_event.data.get('x').get('y')\"/></onentry>", "E411"),
        ('<transition event="e"><log expr="_event"/></transition>', "E416"),
        # the new paths into `_ioprocessors`, `.get` and `hasattr` reach no Python object
        ("<onentry><log expr=\"_ioprocessors[__import__('os')]\"/></onentry>", "E409"),
        (
            "<onentry><log expr=\"_ioprocessors['scxml'].get(__import__('os').name)\"/></onentry>",
            "E411",
        ),
        ("<onentry><log expr=\"_event.data.get(__import__('os'))\"/></onentry>", "E416"),
        ("<onentry><log expr=\"hasattr(__import__('os'), 'name')\"/></onentry>", "E411"),
        ('<onentry><log expr="_event.data.__class__"/></onentry>', "E411"),
        ('<onentry><send event="x"><content><b>markup</b></content></send></onentry>', "E416"),
        (
            '<transition event="done.state.c" cond="_event.type" target="c"/>'
            '<state id="c"><final id="f"/></state>',
            "E416",
        ),
    ],
)
def test_what_stays_refused(body: str, code: str) -> None:
    result = import_scxml(chart(f'  <state id="s0">{body}</state>'), "chart.scxml")
    assert result.flow_text is None
    assert code in {d.code for d in result.diagnostics}, [str(d) for d in result.diagnostics]


#: Delayed sends with and without ids, a send of delay 0 after a raise, a cancel by id.
SCHEDULED = chart(
    """  <datamodel><data id="ticks" expr="0"/></datamodel>
  <state id="s0">
    <onentry>
      <send event="tick" delay="1s"/>
      <send event="tick" delay="1s"/>
      <send event="boom" delay="2s" id="b"/>
      <send event="go"><param name="n" expr="7"/></send>
      <raise event="inside"/>
    </onentry>
    <transition event="inside" target="s1"/>
    <transition event="*" target="fail"/>
  </state>
  <state id="s1">
    <transition event="go" cond="_event.data['n'] == 7" target="s2">
      <cancel sendid="b"/>
    </transition>
    <transition event="*" target="fail"/>
  </state>
  <state id="s2">
    <transition event="tick"><assign location="ticks" expr="ticks + 1"/></transition>
    <transition event="boom" target="fail"/>
  </state>
  <final id="fail"/>"""
)


def test_delayed_sends_and_cancel_run_on_the_runtime_alone() -> None:
    text = imported(SCHEDULED)
    assert "emit" not in text  # nothing for a host to deliver
    entry = next(line.strip() for line in text.splitlines() if "entry do" in line)
    assert entry == (
        "entry do send tick after 1000ms; send tick after 1000ms; "
        'send boom after 2000ms as "b"; send go(n: 7) after 0 ms; raise inside'
    )
    compiled = compile_source(text, "scheduled.flow")
    assert compiled.flow is not None and not compiled.errors, [str(d) for d in compiled.errors]
    clock = FakeClock(0.0)
    instance = Machine.from_json(compiled.flow.to_json(), clock=clock).start(clock=clock)
    assert instance.state == "s1"  # `inside`, raised, comes before `go`, sent with delay 0
    while (due := instance.next_deadline) is not None:
        clock.set(due.timestamp())
        instance.advance()
    # both ticks arrive (a send without an id replaces none), `boom` was cancelled
    assert (instance.state, instance.context["ticks"]) == ("s2", 2)
    assert clock() == 1.0


def test_the_door_lock_example_times_out_and_relocks_on_the_runtime_alone() -> None:
    path = Path(__file__).parents[2] / "examples" / "door_lock.scxml"
    compiled = compile_source(imported(path.read_text(encoding="utf-8")), "door_lock.flow")
    assert compiled.flow is not None and not compiled.errors
    clock = FakeClock(0.0)
    door = Machine.from_json(compiled.flow.to_json(), clock=clock).start(clock=clock)
    for _ in range(3):
        door.send("keypad.entered", {"digits": "0000"})
    assert door.state == "lockout"
    clock.set(60.0)
    door.advance()  # the lockout's scheduled `lockout.over`
    assert door.state == "locked"
    door.send("keypad.entered", {"digits": "4711"})
    door.send("door.closed")
    clock.set(70.0)
    door.send("door.opened")  # leaving `closed` cancels its relock
    clock.set(200.0)
    door.advance()
    assert (door.state, door.next_deadline) == ("ajar", None)
    door.send("door.closed")
    clock.set(230.0)
    door.advance()
    assert door.state == "locked"
