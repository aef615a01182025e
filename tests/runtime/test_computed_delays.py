"""Computed timer delays (`after EXPR UNIT -> X`): evaluated when the timer is armed, against
the context the arming step commits; a fault refuses that step."""

from __future__ import annotations

import itertools

import pytest

from flowc.runtime import FakeClock, Machine, Rejection, StepResult

from .conftest import frozen

BACKOFF = """
flow retry
event fail
event done
context { attempts: int = 0, backoff_ms: int = 100 }

initial state Idle { on fail -> Waiting }

state Waiting {
  # exponential backoff in one rule: each retry re-enters, doubling the delay
  after backoff_ms ms if attempts < 4 -> Waiting reenter
    do attempts += 1; backoff_ms = backoff_ms * 2
  after backoff_ms ms -> GaveUp
  on done -> Idle
}

final state GaveUp
"""

PATHS = pytest.mark.parametrize("hot_after", [0, 1000], ids=["generated", "general"])


def start(source: str, hot_after: int = 0) -> tuple[FakeClock, Machine]:
    clock = FakeClock()
    m = Machine.from_source(source, "delay.flow", clock=clock).preload()
    m.hot_after = hot_after
    return clock, m


def ok(outcome: object) -> StepResult:
    assert isinstance(outcome, StepResult), outcome
    return outcome


@PATHS
def test_exponential_backoff_with_one_timer_rule(hot_after: int) -> None:
    clock, m = start(BACKOFF, hot_after)
    i = m.start()
    t0 = clock()
    ok(i.send("fail"))
    fired = [ok(o) for o in i.advance(t0 + 60)]
    gaps = [round((b.timestamp - a.timestamp) * 1000) for a, b in itertools.pairwise(fired)]
    assert round((fired[0].timestamp - t0) * 1000) == 100
    assert gaps == [200, 400, 800, 1600]
    assert [f.to for f in fired] == ["Waiting"] * 4 + ["GaveUp"]
    assert fired[-1].context == {"attempts": 4, "backoff_ms": 1600}


def test_the_delay_is_read_from_the_context_the_entering_step_commits() -> None:
    clock, m = start(
        "flow f\nevent go(s: int)\ncontext { wait_s: int = 1 }\n"
        "initial state A { on go -> W do wait_s = event.s }\n"
        "state W { after wait_s s -> Done }\nfinal state Done\n"
    )
    i = m.start()
    ok(i.send("go", {"s": 30}))
    (timer,) = i.timers
    assert timer["after_ms"] is None
    assert i.next_deadline is not None
    assert (i.next_deadline.timestamp() - clock()) == pytest.approx(30.0)
    assert i.advance(clock() + 29.9) == []
    assert ok(i.advance(clock() + 30)[0]).to == "Done"


def test_a_delay_below_one_millisecond_counts_as_one() -> None:
    clock, m = start(
        "flow f\nevent go\ncontext { n: int = -5 }\n"
        "initial state A { on go -> W }\nstate W { after n ms -> A }\n"
    )
    i = m.start()
    ok(i.send("go"))
    assert i.next_deadline is not None
    assert (i.next_deadline.timestamp() - clock()) * 1000 == pytest.approx(1.0, abs=0.01)


@PATHS
def test_a_fault_in_the_delay_refuses_the_step_that_would_arm_it(hot_after: int) -> None:
    _, m = start(
        "flow f\nevent go(d: int)\ncontext { d: int = 1 }\n"
        "initial state A { on go -> W do d = event.d }\nstate W { after 1000 % d ms -> A }\n",
        hot_after,
    )
    i = m.start()
    for _ in range(3):
        before = frozen(i)
        refused = i.send("go", {"d": 0})
        assert isinstance(refused, Rejection) and refused.kind == "expression_error"
        assert "delay" in str(refused.data["where"])
        assert frozen(i) == before
    assert ok(i.send("go", {"d": 7})).to == "W"


def test_a_fault_in_the_initial_state_delay_refuses_the_start() -> None:
    _, m = start(
        "flow f\ncontext { xs: list[int] = [] }\ninitial state A { after xs[0] s -> B }\n"
        "final state B\n"
    )
    refused = m.try_start()
    assert isinstance(refused, Rejection) and refused.kind == "expression_error"
    started = m.try_start({"xs": [2]})
    assert not isinstance(started, Rejection)
    assert len(started.timers) == 1


def test_an_internal_computed_timer_repeats_with_its_delay_evaluated_again() -> None:
    clock, m = start(
        "flow f\ncontext { n: int = 1 }\ninitial state A { after n s if n < 4 -> self do n += 1 }\n"
    )
    i = m.start()
    t0 = clock()
    fired = [ok(o) for o in i.advance(t0 + 100)]
    assert [round(f.timestamp - t0) for f in fired] == [1, 3, 6]  # waits 1, 2, 3 s


def test_a_computed_timer_survives_a_snapshot() -> None:
    clock, m = start(BACKOFF)
    i = m.start()
    ok(i.send("fail"))
    ok(i.advance(clock() + 0.1)[0])  # the first retry: the next wait is 200 ms
    due = i.next_deadline
    again = m.restore(i.snapshot())
    assert again.next_deadline == due
    assert ok(again.advance(clock() + 10)[0]).context["attempts"] == 2
