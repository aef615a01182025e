"""W317: rules that raise each other's events round a loop with no guard."""

from __future__ import annotations

from flowc.compiler import compile_source
from flowc.runtime import Machine

LOOP = """
flow demo
context { n: int = 0 }
event ping
event pong
initial state A {
  on ping -> B do raise pong
}
state B {
  on pong -> A do n += 1; raise ping
}
final state Z
"""


def _codes(text: str) -> list[str]:
    result = compile_source(text, "demo.flow")
    return [d.code for d in result.diagnostics]


def test_an_unguarded_raise_loop_is_reported_and_refused_at_run_time() -> None:
    assert "W317" in _codes(LOOP)
    instance = Machine.from_source(LOOP).start()
    refused = instance.send("ping")
    assert refused.kind == "limit_exceeded"  # type: ignore[union-attr]
    assert instance.state == "A" and instance.get("n") == 0


def test_a_guard_that_the_loop_changes_bounds_it() -> None:
    bounded = LOOP.replace("on pong -> A", "on pong if n < 3 -> A")
    assert "W317" not in _codes(bounded)
    instance = Machine.from_source(bounded).start()
    instance.send("ping")
    assert instance.get("n") == 3


def test_a_raise_under_a_condition_is_not_followed() -> None:
    conditional = LOOP.replace("raise ping", "if n < 3 { raise ping }")
    assert "W317" not in _codes(conditional)


def test_an_entry_action_that_raises_closes_the_loop_too() -> None:
    entry = """
flow demo
event poke
initial state A {
  entry do raise poke
  on poke -> A reenter
}
final state Z
"""
    assert "W317" in _codes(entry)
