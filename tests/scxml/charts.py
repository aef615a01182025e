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
