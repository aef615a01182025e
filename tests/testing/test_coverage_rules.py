"""Coverage counts what the engine reports it took (issue 25 item 7): a step's `rules_taken`
and a refusal's `rule`, flat or statechart, with nothing chosen again; a rule for several
events is one rule."""

from __future__ import annotations

from flowc.compiler import compile_source
from flowc.compiler.testing.coverage import Coverage, coverage_of
from flowc.compiler.testing.runner import run_file


def _coverage(source: str) -> Coverage:
    result = compile_source(source, "cov.flow")
    assert result.ok, [str(d) for d in result.diagnostics]
    run = run_file(result)
    assert all(o.failure is None for o in run.outcomes), [o.failure for o in run.outcomes]
    assert result.flow is not None
    return coverage_of("cov.flow", result.flow, (i for o in run.outcomes for i in o.fired))


def _index(cov: Coverage, **fields: object) -> int:
    [t] = [t for t in cov.flow.transitions if all(getattr(t, k) == v for k, v in fields.items())]
    return t.index


ACTIVE_REJECT = """flow panel
event poke
event open
initial parallel state Main {
  state Door {
    initial state Shut { on open -> Ajar }
    state Ajar { }
  }
  state Motor {
    initial state Idle {
      on poke if active(Ajar) reject door_open "Close the door first."
      on poke -> Running
    }
    state Running { }
  }
}
test "a poke with the door open is refused" {
  send open
  send poke
  expect reject door_open
}
"""


def test_an_active_guarded_reject_a_test_takes_is_covered() -> None:
    cov = _coverage(ACTIVE_REJECT)
    assert _index(cov, kind="reject", code="door_open") in cov.fired
    assert [t.code for t in cov.uncovered()] == [None]  # only `on poke -> Running`


EVENT_LISTS = """flow lists
event a
event b
event c
event go
initial state S {
  on a, b, c reject nope "Not now."
  on go -> T
}
state T {
  on a, b -> S
}
test "one event of each list" {
  send a
  expect reject nope
  send go
  send b
  expect state S
}
"""


def test_a_rule_for_several_events_counts_once_when_any_event_takes_it() -> None:
    cov = _coverage(EVENT_LISTS)
    assert (cov.covered, cov.total) == (3, 3)
    assert cov.uncovered() == []
    assert cov.to_dict()["groups"]["rejections"] == {"total": 1, "covered": 1}


def test_a_rule_for_several_events_not_taken_is_reported_once_and_not_as_elsewhere() -> None:
    cov = _coverage(EVENT_LISTS.split("test ")[0])
    uncovered = cov.to_dict()["uncovered"]
    assert [u["rule"] for u in uncovered] == [
        "S: a, b, c reject nope",
        "S: go -> T",
        "T: a, b -> S",
    ]
    assert uncovered[0]["events"] == ["a", "b", "c"]
    assert not any(u["rule_taken_elsewhere"] for u in uncovered)


def test_a_rule_outside_states_taken_in_one_state_is_taken_elsewhere_in_the_other() -> None:
    source = """flow outer
event a
event go
initial state S { on go -> T }
state T { }
on a -> S
test "a in S only" {
  send a
  expect state S
}
"""
    cov = _coverage(source)
    [u] = [u for u in cov.to_dict()["uncovered"] if u["event"] == "a"]
    assert u["source"] == "T" and u["rule_taken_elsewhere"]
