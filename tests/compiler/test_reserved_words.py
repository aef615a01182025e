"""A reserved word written as a name: `state` as a payload field works, elsewhere a clear help."""

from __future__ import annotations

import pytest

from flowc.compiler import compile_source, fastparse
from flowc.runtime import Machine

STATE_FIELD = """flow t
effect fx(state: str)
event e(state: str, n: int = 0)
initial state A {
  on e if event.state == "go" -> B do emit fx(state: event.state)
}
final state B

test "a payload field called state" {
  send e(state: "go")
  expect state B
}
"""


def test_a_payload_field_may_be_called_state() -> None:
    result = compile_source(STATE_FIELD, "t.flow")
    assert result.errors == []
    inst = Machine.from_source(STATE_FIELD).start()
    step = inst.send("e", {"state": "go"})
    assert inst.state == "B"
    assert step.effects == [{"effect": "fx", "payload": {"state": "go"}}]


def test_both_parsers_read_a_payload_field_called_state() -> None:
    # The fast parser reads it itself (it gives up on what it does not know, leaving it to Lark).
    assert fastparse.parse_module(STATE_FIELD) is not None


@pytest.mark.parametrize(
    ("source", "word", "rename"),
    [
        ("flow t\ncontext { state: int = 0 }\ninitial state A\n", "state", "status"),
        ("flow t\ntype R { on: int }\ninitial state A\n", "on", "enabled"),
        ("flow t\ncontext { n: int = 0 }\nevent e\ninitial state A { on e -> A do state = 1 }\n",
         "state", "status"),
    ],
)  # fmt: skip
def test_a_reserved_word_as_a_name_says_it_is_reserved(source: str, word: str, rename: str) -> None:
    errors = compile_source(source, "t.flow").errors
    assert errors and errors[0].code == "E003"
    assert errors[0].help is not None
    assert f"`{word}` is a reserved word" in errors[0].help
    assert f"(`{rename}`)" in errors[0].help
