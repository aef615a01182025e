"""`initial -> T, ... [do ...]`: where a compound state's default entry leads, and what it runs."""

from __future__ import annotations

import pytest

from flowc.compiler import compile_source
from flowc.runtime import Machine

ROOM = """
flow room
event go
event back
event inside
context { log: list[str] = [] }
initial state Lobby { on go -> Room  on inside -> Left.Far }
state Room {
  entry do append(log, "Room")
  initial -> Left.Far, Right.Up do append(log, "initial")
  initial parallel state Both {
    entry do append(log, "Both")
    state Left {
      initial state Near { entry do append(log, "Near") }
      state Far { entry do append(log, "Far") }
    }
    state Right {
      initial state Down { entry do append(log, "Down") }
      state Up { entry do append(log, "Up") }
    }
  }
  on back -> Lobby
}
"""


def test_a_default_entry_follows_the_rule_and_runs_its_actions_after_the_entry() -> None:
    inst = Machine.from_source(ROOM).start()
    inst.send("go")
    assert inst.configuration == ("Room", "Both", "Left", "Far", "Right", "Up")
    assert inst.get("log") == ["Room", "initial", "Both", "Far", "Up"]


def test_an_entry_towards_a_descendant_is_not_a_default_entry() -> None:
    inst = Machine.from_source(ROOM).start()
    inst.send("inside")  # Room is entered as an ancestor of Far: no initial rule
    assert inst.configuration == ("Room", "Both", "Left", "Far", "Right", "Down")
    assert inst.get("log") == ["Room", "Both", "Far", "Down"]


def test_the_rule_applies_at_the_start_and_on_every_default_entry() -> None:
    src = ROOM.replace("initial state Lobby", "state Lobby").replace(
        "state Room {", "initial state Room {"
    )
    inst = Machine.from_source(src).start()
    assert inst.get("log") == ["Room", "initial", "Both", "Far", "Up"]
    inst.send("back")
    inst.send("go")
    assert inst.get("log")[5:] == ["Room", "initial", "Both", "Far", "Up"]


def test_a_history_of_the_state_may_be_the_target() -> None:
    src = """
flow h
event go
event out
context { n: int = 0 }
initial state S {
  initial -> H do n += 1
  initial state A { on go -> B }
  state B { }
  history H -> B
  on out -> T
}
state T { on go -> S }
"""
    inst = Machine.from_source(src).start()
    assert inst.state == "B" and inst.get("n") == 1  # nothing recorded: the default
    inst.send("out")
    inst.send("go")
    assert inst.state == "B" and inst.get("n") == 2


def test_the_compiled_state_and_its_text() -> None:
    result = compile_source(ROOM, "room.flow")
    assert result.flow is not None
    room = next(s for s in result.flow.states if s.name == "Room")
    assert room.initial_targets == ("Far", "Up")
    assert [a.op for a in room.initial_actions] == ["append"]


def errors(src: str) -> list[str]:
    result = compile_source(src, "room.flow")
    return [d.code for d in result.diagnostics if d.severity == "error"]


@pytest.mark.parametrize(
    ("change", "codes"),
    [
        # two targets in one region
        (("initial -> Left.Far, Right.Up", "initial -> Left.Far, Left.Near"), ["E138"]),
        # a target outside the initial child
        (("initial -> Left.Far, Right.Up", "initial -> Lobby"), ["E138"]),
        # an unknown target
        (("initial -> Left.Far, Right.Up", "initial -> Lefty.Far"), ["E104"]),
        # in a parallel state
        (('entry do append(log, "Both")', "initial -> Left.Far"), ["E138"]),
        # twice
        (("on back -> Lobby", "on back -> Lobby  initial -> Right.Up"), ["E138"]),
    ],
)
def test_mistakes(change: tuple[str, str], codes: list[str]) -> None:
    old, new = change
    assert old in ROOM
    assert errors(ROOM.replace(old, new)) == codes


HISTORY = """
flow h
event go
event out
context { log: list[str] = [] }
initial state S {
  entry do append(log, "S")
  initial -> H do append(log, "initial")
  initial state A { on go -> B }
  state B { }
  history H -> B do append(log, "default")
  on out -> T
}
state T { on go -> S.H }
"""


def test_a_history_default_runs_its_actions_after_the_parent_entry_only_when_used() -> None:
    inst = Machine.from_source(HISTORY).start()
    assert inst.state == "B"
    assert inst.get("log") == ["S", "initial", "default"]
    inst.send("out")
    inst.send("go")  # through H, which recorded B: no default, no actions
    assert inst.state == "B"
    assert inst.get("log") == ["S", "initial", "default", "S"]


def test_a_history_default_takes_no_back_or_reenter() -> None:
    assert errors(
        HISTORY.replace('history H -> B do append(log, "default")', "history H -> B back")
    ) == ["E003"]
