"""flows/examples/: the statechart examples run, test themselves, and emit what a host needs.

Their `test` blocks (run here through the same runner as `flowc test`) check states and
context; these tests add what a block cannot say yet: the effects each step hands the host.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from flowc.compiler import compile_file
from flowc.compiler.testing.runner import run_file
from flowc.runtime import Machine
from flowc.runtime.clock import FakeClock
from flowc.runtime.instance import Instance
from flowc.runtime.steps import StepResult

EXAMPLES = Path(__file__).parents[2] / "flows" / "examples"


def _machine(name: str, clock: FakeClock) -> Machine:
    return Machine.from_file(EXAMPLES / f"{name}.flow", clock=clock)


def _effects(step: object) -> list[tuple[str, dict[str, object]]]:
    assert isinstance(step, StepResult), step
    return [(fx["effect"], fx["payload"]) for fx in step.effects]


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.flow")), ids=lambda p: p.stem)
def test_example_compiles_as_a_statechart_and_passes_its_tests(path: Path) -> None:
    result = compile_file(path)
    assert result.flow is not None and result.ok
    assert result.flow.ir_version == 2
    outcomes = run_file(result).outcomes
    assert outcomes and all(o.failure is None for o in outcomes), [
        o.failure for o in outcomes if o.failure is not None
    ]


def test_microwave_door_pauses_the_magnetron_and_history_resumes_it() -> None:
    clock = FakeClock()
    oven = _machine("microwave", clock).start()
    assert isinstance(oven, Instance)
    oven.send("power_up")
    oven.send("timer_set", {"seconds": 5})
    started = oven.send("start")
    assert _effects(started) == [("lamp", {"lit": True}), ("magnetron", {"power": 1})]
    opened = oven.send("door_opened")
    # Cooking's exit actions, then the open door's entry: in the order they ran.
    assert _effects(opened) == [
        ("magnetron", {"power": 0}),
        ("lamp", {"lit": False}),
        ("lamp", {"lit": True}),
    ]
    closed = oven.send("door_closed")
    assert oven.configuration == ("closed", "cooking")
    assert _effects(closed)[-1] == ("magnetron", {"power": 1})


def test_microwave_beeps_once_when_the_time_is_up() -> None:
    clock = FakeClock()
    oven = _machine("microwave", clock).start()
    assert isinstance(oven, Instance)
    oven.send("power_up")
    oven.send("timer_set", {"seconds": 2})
    oven.send("start")
    clock.advance(1)
    first = oven.advance()
    assert [_effects(s) for s in first] == [[]]
    clock.advance(1)
    (last,) = oven.advance()
    assert ("beep", {"times": 3}) in _effects(last)
    assert oven.state == "idle" and oven.timers == []


def test_elevator_regions_run_side_by_side() -> None:
    clock = FakeClock()
    lift = _machine("elevator", clock).start()
    assert isinstance(lift, Instance)
    assert lift.configuration == ("active", "floor_listener", "listening", "cabin", "doors_open")
    called = lift.send("call", {"floor": 1})
    # The listener's rule, then the cabin's eventless rules, in one step.
    assert lift.active("moving_up") and lift.active("listening")
    assert _effects(called) == [("doors", {"opened": False})]
    clock.advance(1)
    (arrived,) = lift.advance()
    assert lift.get("current") == 1 and lift.active("doors_open")
    assert _effects(arrived) == [("doors", {"opened": True})]


def test_pr_review_reopen_restores_every_region_through_deep_history() -> None:
    clock = FakeClock()
    pr = _machine("pr_review", clock).start()
    assert isinstance(pr, Instance)
    pr.send("ci_passed")
    pr.send("request_changes", {"reviewer": "ana"})
    before = pr.configuration
    assert "ci_green" in before and "changes_requested" in before
    pr.send("close")
    assert pr.configuration == ("closed",)
    pr.send("reopen")
    assert pr.configuration == before
    snapshot = pr.snapshot()
    assert snapshot["configuration"] and "histories" in snapshot


def test_pr_review_done_event_of_the_parallel_state_makes_it_mergeable() -> None:
    clock = FakeClock()
    pr = _machine("pr_review", clock).start()
    assert isinstance(pr, Instance)
    pr.send("approve", {"reviewer": "ana"})
    pr.send("approve", {"reviewer": "ben"})
    assert pr.active("approved") and not pr.active("mergeable")
    ready = pr.send("ci_passed")
    assert pr.active("mergeable")
    assert _effects(ready) == [("notify", {"who": "author", "text": "ready to merge"})]
