"""The importer: SCXML to `.flow` text. Flat charts are compiled and run with the runtime;
charts that need the statecharts syntax are checked as text here and compiled and run in
pending_after_merge.py once that syntax is merged."""

from __future__ import annotations

from charts import EXECUTABLE, FLAT, HIERARCHY, chart

from flowc.compiler.driver import compile_source
from flowc.compiler.scxml.importer import event_flow_name, flow_name, import_scxml, parse_delay
from flowc.runtime import FakeClock, Machine, Rejection


def imported(text: str) -> str:
    result = import_scxml(text, "chart.scxml")
    assert result.flow_text is not None, [str(d) for d in result.diagnostics]
    return result.flow_text


def codes(text: str) -> list[tuple[str, int]]:
    result = import_scxml(text, "chart.scxml")
    assert result.flow_text is None
    return [(d.code, d.span.line) for d in result.diagnostics]


def test_a_flat_chart_imports_to_a_flow_that_compiles_and_runs() -> None:
    text = imported(FLAT)
    compiled = compile_source(text, "counter.flow")
    assert compiled.flow is not None, [str(d) for d in compiled.diagnostics]
    machine = Machine.from_json(compiled.flow.to_json(), clock=FakeClock())
    instance = machine.start()
    assert instance.state == "state_"
    instance.send("add", {"n": 2})
    instance.send("add", {"n": 0})  # the guard fails; `*` matches it
    assert instance.state == "other"
    instance = machine.start()
    for n in (2, 3):
        instance.send("add", {"n": n})
    instance.send("note", {"text": "go on"})  # targetless: stays, assigns
    assert instance.state == "state_"
    assert instance.context == {"count": 2, "last": "go on", "total": 5}
    instance.send("finish")
    assert instance.state == "pass" and instance.is_final


def test_a_descriptor_matches_its_dotted_descendants() -> None:
    text = imported(FLAT)
    assert "  on error, error.* -> failed\n" in text
    compiled = compile_source(text, "counter.flow")
    assert compiled.flow is not None
    instance = Machine.from_json(compiled.flow.to_json()).start()
    instance.send("error.execution")
    assert instance.state == "failed"


def test_unhandled_events_are_ignored_as_scxml_does() -> None:
    compiled = compile_source(imported(FLAT), "counter.flow")
    assert compiled.flow is not None
    instance = Machine.from_json(compiled.flow.to_json()).start()
    instance.send("finish")  # the guard does not hold: `*` takes it
    assert instance.state == "other"
    outcome = instance.send("add", {"n": 1})  # `other` has no rules
    assert isinstance(outcome, Rejection) and outcome.code == "ignored"
    assert instance.state == "other"


def test_declarations_names_and_comments() -> None:
    text = imported(FLAT)
    assert text.startswith("flow counter\n")
    # every event used is declared; payload fields read through `_event.data` get a type
    # from the variable they are stored in, or from their use (json when unknown)
    assert "event add(n: int = 0)\n" in text
    assert 'event note(text: str = "")\n' in text
    assert "event error\nevent finish\nevent error.execution\n" in text
    assert 'context {\n  count: int = 0\n  last: str = ""\n  total: int = 0\n}\n' in text
    assert (
        "# the counter\ncontext {" in text and "# waits for work\ninitial state state_ {\n" in text
    )
    assert "  on note -> self do last = event.text\n" in text
    assert "  on add, note, error, finish, error.execution -> other\n" in text


def test_expressions_are_translated_to_the_flow_language() -> None:
    text = imported(FLAT)
    assert "on add if event.n > 0 -> state_ reenter do count = count + 1; " in text
    assert "total = total + event.n" in text
    assert 'on finish if count >= 2 and not last == "stop" -> pass' in text


def test_names_are_made_flow_names() -> None:
    assert flow_name("state") == "state_"
    assert flow_name("s-1.b") == "s_1_b"
    assert flow_name("1x", "s") == "s_1x"
    assert event_flow_name("done.state.p-1") == "done.state.p_1"
    assert event_flow_name("error.if") == "error.if_"
    assert parse_delay("1s") == 1000
    assert parse_delay(".5s") == 500
    assert parse_delay("250ms") == 250
    assert parse_delay("2") == 2
    assert parse_delay("soon") is None


def test_compound_parallel_history_and_done_events_in_the_statecharts_syntax() -> None:
    text = imported(HIERARCHY)
    body = text[text.index("initial state outer") :]
    assert body == (
        "initial state outer {\n"
        "  on back -> outer reenter\n"
        "  on done.state.outer -> p\n"
        "  state a\n"
        "  initial state b {\n"
        "    on go -> a\n"
        "  }\n"
        "  final state end\n"
        "  history deep h -> a\n"
        "  history hs\n"
        "}\n"
        "parallel state p {\n"
        "  always if n > 1 -> outer\n"
        "  on again -> h\n"
        "  state r1 {\n"
        "    initial state x {\n"
        "      on t -> y\n"
        "    }\n"
        "    final state y\n"
        "  }\n"
        "  state r2\n"
        "}\n"
    )
    assert "event done" not in text  # done.state events are declared by the compiler


def test_an_initial_element_and_a_deep_initial_that_agrees_with_the_defaults() -> None:
    text = imported(
        chart(
            """  <state id="top">
    <initial><transition target="inner2"/></initial>
    <state id="inner1"/>
    <state id="inner"><state id="inner2"/></state>
  </state>"""
        )
    )
    assert "  state inner1\n  initial state inner {\n    initial state inner2\n" in text


def test_executable_content_becomes_actions() -> None:
    text = imported(EXECUTABLE)
    entry = next(line.strip() for line in text.splitlines() if "entry do" in line)
    assert entry.split("; ") == [
        "entry do raise poke",
        # sends to the session are the runtime's scheduled events; only the document's
        # ids (`id`, `idlocation`) are theirs, so that sends without one never replace
        # each other; a delay of 0 is the runtime's shortest (after what the step raises)
        'send later after 1500ms as "t1"',
        'sid = "send1"',
        'send soon after 20ms as "send1"',
        "send now(v: x + 1) after 0 ms",
        "send names(x: x, who: who) after 0 ms",
        "raise inside(v: x)",
        'cancel "t1"',
        "cancel sid",
        'emit scxml_log(label: "state", value: "exec")',
        'emit scxml_log(label: "", value: sessionid)',
    ]
    exit_ = next(line.strip() for line in text.splitlines() if "exit do" in line)
    # an empty branch becomes the negated guard around the branches after it
    assert exit_ == (
        "exit do if x == 1 { x = 2 } elif not (x == 2) { if x == 3 { raise three } else { x = 0 } }"
    )
    assert "event now(v: int = 0)\n" in text
    assert 'event names(x: int = 0, who: str = "")\n' in text
    assert "event inside(v: int = 0)\n" in text
    assert "effect scxml_send" not in text and "effect scxml_cancel" not in text
    assert "effect scxml_log(label: str, value: json)\n" in text
    assert '  sid: str = ""\n' in text and '  sessionid: str = "exec"\n' in text


def test_refusals_name_the_element_and_line() -> None:
    text = chart(
        """  <state id="s">
    <invoke src="other.scxml"/>
    <onentry>
      <foreach array="[1]"/>
      <send event="x" target="#_parent"/>
      <send event="x" type="http://www.w3.org/TR/scxml/#BasicHTTPEventProcessor"/>
      <send event="x" delayexpr="d"/>
      <log expr="(1).__class__"/>
    </onentry>
    <transition event="e" cond="In(x)" target="s"/>
    <transition event="e" target="s t"/>
  </state>
  <final id="f"><donedata><param expr="1"/></donedata></final>"""
    )
    assert codes(text) == [
        ("E408", 4),
        ("E415", 6),
        ("E409", 7),
        ("E409", 8),
        ("E410", 9),
        ("E411", 10),
        ("E417", 12),
        ("E419", 13),
        ("E418", 15),
    ]


def test_datamodels_other_than_null_and_python_are_refused_unless_overridden() -> None:
    ecma = chart('  <state id="s"/>', datamodel="ecmascript")
    assert codes(ecma) == [("E406", 2)]
    assert import_scxml(ecma, "x.scxml", datamodel="python").flow_text is not None
    xpath = chart('  <state id="s"/>', datamodel="xpath")
    assert codes(xpath) == [("E406", 2)]


def test_a_document_that_is_not_scxml() -> None:
    assert codes('<scxml xmlns="urn:other"><state id="s"/></scxml>') == [("E405", 1)]
    assert codes(chart("")) == [("E413", 2)]
    assert codes(chart('  <state id="s"/><state id="s"/>')) == [("E413", 3)]


def test_what_fails_at_run_time_in_scxml_is_mapped_to_its_outcome() -> None:
    text = imported(
        chart(
            """  <datamodel><data id="x" expr="1"/><data id="sid" expr="_sessionid"/></datamodel>
  <state id="s">
    <onentry>
      <assign location="undeclared" expr="1"/>
      <assign location="x" expr="1 +"/>
    </onentry>
    <transition event="go" cond="1 = 1" target="s"/>
    <transition event="named" cond="_event.name == 'named' and true" target="s"/>
  </state>""",
            attrs=' name="sess"',
        )
    )
    # an assignment SCXML cannot make raises error.execution (and ends its block); a cond
    # that is not an expression is false; `_event.name` is `event_name()`
    assert "  entry do raise error.execution\n" in text
    assert "event error.execution\n" in text
    assert "  on go if false -> s reenter\n" in text
    assert '  on named if event_name() == "named" and true -> s reenter\n' in text
    assert '  sid: str = "sess"\n' in text and '  sessionid: str = "sess"\n' in text


def test_an_element_that_would_fail_raises_error_execution_and_ends_its_block() -> None:
    text = imported(
        chart(
            """  <datamodel><data id="x" expr="1"/></datamodel>
  <state id="s">
    <onentry>
      <assign location="x" expr="2"/>
      <send event="e" target="baz"/>
      <assign location="x" expr="3"/>
    </onentry>
    <onentry>
      <send event="f" namelist="nope"/>
      <raise event="never"/>
    </onentry>
    <onexit><send event="e" target="#_internal"/></onexit>
  </state>"""
        )
    )
    # each <onentry> is its own block: an error ends only the block it is in
    assert "  entry do x = 2; raise error.execution; raise error.execution\n" in text
    assert "never" not in text
    assert "  exit do raise e\n" in text


def test_a_number_string_or_list_as_a_condition_is_read_as_python_reads_it() -> None:
    text = imported(
        chart(
            """  <datamodel>
    <data id="n" expr="0"/><data id="s" expr="'x'"/><data id="xs" expr="[1]"/>
  </datamodel>
  <state id="a">
    <transition event="go" cond="n" target="fail"/>
    <transition event="go" cond="s" target="b"/>
  </state>
  <state id="b">
    <transition event="go" cond="xs" target="pass"/>
  </state>
  <final id="pass"/><final id="fail"/>"""
        )
    )
    assert "if n != 0 -> fail" in text and 'if s != "" -> b' in text
    assert "if len(xs) != 0 -> pass" in text
    compiled = compile_source(text, "truth.flow")
    assert compiled.flow is not None, [str(d) for d in compiled.diagnostics]
    instance = Machine.from_json(compiled.flow.to_json(), clock=FakeClock()).start()
    instance.send("go")
    instance.send("go")
    assert instance.state == "pass"
