"""SCXML charts written for flowc's own tests (one or more per supported element)."""

from __future__ import annotations

NS = 'xmlns="http://www.w3.org/2005/07/scxml"'


def chart(body: str, *, datamodel: str = "python", attrs: str = "") -> str:
    return f'<?xml version="1.0"?>\n<scxml {NS} datamodel="{datamodel}"{attrs}>\n{body}\n</scxml>\n'


#: A flat chart: data and assign, payload fields, guards, descriptors matching by prefix, the
#: `*` wildcard, a targetless transition, comments, ids that are flowc keywords.
FLAT = chart(
    """  <!-- the counter -->
  <datamodel>
    <data id="count" expr="0"/>
    <data id="last" expr="''"/>
    <data id="total"/>
  </datamodel>
  <!-- waits for work -->
  <state id="state">
    <transition event="add" cond="_event.data.n &gt; 0" target="state">
      <assign location="count" expr="count + 1"/>
      <assign location="total" expr="total + _event.data['n']"/>
    </transition>
    <transition event="note">
      <assign location="last" expr="_event.data.text"/>
    </transition>
    <transition event="error" target="failed"/>
    <transition event="finish" cond="count &gt;= 2 and not (last == 'stop')" target="pass"/>
    <transition event="*" target="other"/>
  </state>
  <state id="other"/>
  <final id="failed"/>
  <final id="pass"/>
  <state id="unused"><transition event="error.execution" target="failed"/></state>""",
    attrs=' initial="state" name="counter"',
)

#: Compound, parallel and history states, done events, an eventless rule.
HIERARCHY = chart(
    """  <datamodel><data id="n" expr="0"/></datamodel>
  <state id="outer" initial="b">
    <state id="a"/>
    <state id="b"><transition event="go" target="a"/></state>
    <final id="end"/>
    <history id="h" type="deep"><transition target="a"/></history>
    <history id="hs"/>
    <transition event="back" target="outer"/>
    <transition event="done.state.outer" target="p"/>
  </state>
  <parallel id="p">
    <state id="r1"><state id="x"><transition event="t" target="y"/></state><final id="y"/></state>
    <state id="r2"/>
    <transition cond="n &gt; 1" target="outer"/>
    <transition event="again" target="h"/>
  </parallel>""",
    attrs=' initial="outer"',
)

#: Executable content: raise, send (delays, ids, params, namelist, #_internal), cancel, log,
#: _name, _sessionid, if/elseif/else with empty branches.
EXECUTABLE = chart(
    """  <datamodel>
    <data id="x" expr="1"/>
    <data id="sid"/>
    <data id="who" expr="'me'"/>
  </datamodel>
  <state id="s">
    <onentry>
      <raise event="poke"/>
      <send event="later" delay="1.5s" id="t1"/>
      <send event="soon" delayexpr="'20ms'" idlocation="sid"/>
      <send event="now"><param name="v" expr="x + 1"/></send>
      <send event="names" namelist="x who"/>
      <send event="inside" target="#_internal"><param name="v" expr="x"/></send>
      <cancel sendid="t1"/>
      <cancel sendidexpr="sid"/>
      <log label="state" expr="_name"/>
      <log expr="_sessionid"/>
    </onentry>
    <onexit>
      <if cond="x == 1"><assign location="x" expr="2"/>
      <elseif cond="x == 2"/>
      <elseif cond="x == 3"/><raise event="three"/>
      <else/><assign location="x" expr="0"/></if>
      <if cond="x &gt; 5"/>
    </onexit>
    <transition event="poke" target="s"/>
  </state>""",
    attrs=' name="exec"',
)
