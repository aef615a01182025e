"""Test blocks, `flowc paths` and `flowc explore` with scheduled and internal events."""

from __future__ import annotations

from flowc.compiler import compile_source
from flowc.compiler.testing.paths import generate
from flowc.compiler.testing.runner import run_file

FLOW = """flow remind
context { reminded: int = 0 }
internal event remind(n: int)
event ask
event answer
initial state WAITING {
  on ask -> WAITING do send remind(n: 2) after 10m as "r"
  on remind -> REMINDED do reminded += event.n
  on answer -> DONE do cancel "r"
}
final state REMINDED
final state DONE
"""

TESTS = """
test "the reminder comes after ten minutes" {
  send ask
  advance 9m
  expect state WAITING
  advance 1m
  expect state REMINDED
  expect reminded == 2
}

test "a host cannot send it" {
  send remind(n: 1)
  expect reject internal_event
}

test "answering cancels it" {
  send ask
  send answer
  advance 1h
  expect state DONE
}
"""


def test_test_blocks_drive_scheduled_events_with_advance() -> None:
    result = compile_source(FLOW + TESTS, "remind.flow")
    assert result.ok, [str(d) for d in result.diagnostics]
    outcomes = run_file(result).outcomes
    assert [(o.name, o.failure) for o in outcomes] == [
        ("the reminder comes after ten minutes", None),
        ("a host cannot send it", None),
        ("answering cancels it", None),
    ]


def test_paths_reach_a_state_only_a_scheduled_event_leads_to() -> None:
    flow = compile_source(FLOW, "remind.flow").flow
    assert flow is not None
    report = generate(flow)
    assert report.unreached == {} and report.missing == {}
    text = report.text()
    assert "send remind" not in text, "an internal event is no host's move"
    assert "send ask\n  advance 10m\n  expect state REMINDED" in text
