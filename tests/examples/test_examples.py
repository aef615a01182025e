"""flows/examples/: the statechart examples run, test themselves, and emit what a host needs.

Their `test` blocks (run here through the same runner as `flowc test`) check states and
context; these tests add what a block cannot say yet: the effects each step hands the host,
and the child flows the examples invoke (pr_review.flow's reviews, order_saga.flow's payment):
their ids, contexts and timers, and what leaving their state does to them.
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


#: The examples that invoke child flows or message their parent (IR version 5), and the
#: children each embeds.
COMPOSED = {"pr_review": ["review"], "order_saga": ["payment"], "review": []}


@pytest.mark.parametrize("path", sorted(EXAMPLES.glob("*.flow")), ids=lambda p: p.stem)
def test_example_compiles_as_a_statechart_and_passes_its_tests(path: Path) -> None:
    result = compile_file(path)
    assert result.flow is not None and result.ok
    assert result.flow.ir_version == (5 if path.stem in COMPOSED else 2)
    assert list(result.flow.children) == COMPOSED.get(path.stem, [])
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


def _pr(clock: FakeClock) -> Instance:
    pr = _machine("pr_review", clock).start()
    assert isinstance(pr, Instance)
    return pr


def _reviewers(pr: Instance) -> dict[str, str]:
    """The review children of a pull request: child id -> its reviewer."""
    return {cid: kid.context["reviewer"] for cid, kid in pr.children.items()}


def test_pr_review_starts_one_review_per_reviewer_and_joins_them_in_order() -> None:
    pr = _pr(FakeClock())
    # Started by the start's step (seq 0), one per item of `reviewers`, in list order.
    assert _reviewers(pr) == {"verdicts.0.0": "ana", "verdicts.0.1": "ben"}
    assert pr.child("verdicts[1]").state == "waiting"
    # Forwarded to both children; only ben's takes it, and finishes with its done data.
    pr.send("approve", {"reviewer": "ben"})
    assert pr.child("verdicts[1]").is_final and not pr.child("verdicts[0]").is_final
    assert pr.active("reviewing") and pr.get("approved_by") == []
    pr.send("approve", {"reviewer": "ana"})
    # The join is met: `done.invoke.verdicts` carries the results in the order of the items.
    assert pr.active("approved") and pr.get("approved_by") == ["ana", "ben"]
    assert pr.history[-1].kind == "message" and pr.history[-1].event == "done.invoke.verdicts"
    assert pr.children == {}  # (the state that invoked them was left)


def test_pr_review_a_childs_message_reaches_the_parent_after_the_hosts_step() -> None:
    pr = _pr(FakeClock())
    pr.send("request_changes", {"reviewer": "ana"})
    # (the review forwarded to the children: ana's took it, a `child` entry of the tree's
    # history, and told the parent)
    assert [(h.kind, h.event) for h in pr.history[-3:]] == [
        ("event", "request_changes"),
        ("child", "request_changes"),
        ("message", "changes_requested"),
    ]
    assert pr.get("changes_by") == ["ana"] and pr.active("reviewing")
    assert pr.child("verdicts[0]").state == "changes_requested"


def test_pr_review_a_push_cancels_the_reviews_and_starts_new_ones() -> None:
    pr = _pr(FakeClock())
    pr.send("approve", {"reviewer": "ana"})
    pushed = pr.send("push", {"sha": "abc123"})
    assert isinstance(pushed, StepResult)
    # New children, named after the step that entered their state again; ana's approval is gone.
    assert _reviewers(pr) == {f"verdicts.{pushed.seq}.0": "ana", f"verdicts.{pushed.seq}.1": "ben"}
    assert not any(kid.is_final for kid in pr.children.values())


def test_pr_review_a_reviews_reminders_fire_from_the_parents_advance() -> None:
    clock = FakeClock()
    pr = _pr(clock)
    start = clock.now
    clock.advance(2 * 86_400)
    # (the children's timer steps: entries of kind `child` in the tree's history)
    assert [(o.kind, o.payload["child"]) for o in pr.advance()] == [
        ("child", "verdicts.0.0"),  # (started by the start: entry seq 0)
        ("child", "verdicts.0.1"),
    ]
    assert [pr.child(f"verdicts[{k}]").get("reminders") for k in (0, 1)] == [1, 1]
    assert pr.next_deadline is not None and pr.next_deadline.timestamp() == start + 4 * 86_400


def test_pr_review_reopen_restores_every_region_through_deep_history() -> None:
    clock = FakeClock()
    pr = _pr(clock)
    pr.send("ci_passed")
    pr.send("approve", {"reviewer": "ana"})
    before = pr.configuration
    assert "ci_green" in before and "reviewing" in before
    pr.send("close")
    assert pr.configuration == ("closed",)
    assert pr.children == {}  # closing left the reviews' state: they are cancelled
    reopened = pr.send("reopen")
    assert pr.configuration == before
    snapshot = pr.snapshot()
    assert snapshot["configuration"] and "histories" in snapshot
    # History restores the states; the reviews start again, as new children.
    assert isinstance(reopened, StepResult)
    assert list(pr.children) == [f"verdicts.{reopened.seq}.0", f"verdicts.{reopened.seq}.1"]
    assert snapshot["format"] == "flowc.snapshot/4"


def test_pr_review_done_event_of_the_parallel_state_makes_it_mergeable() -> None:
    clock = FakeClock()
    pr = _pr(clock)
    pr.send("approve", {"reviewer": "ana"})
    pr.send("approve", {"reviewer": "ben"})
    assert pr.active("approved") and not pr.active("mergeable")
    ready = pr.send("ci_passed")
    assert pr.active("mergeable")
    assert _effects(ready) == [("notify", {"who": "author", "text": "ready to merge"})]


def _order(clock: FakeClock, **context: object) -> Instance:
    order = _machine("order_saga", clock).start({"order_id": "o-1", "total": 4200, **context})
    assert isinstance(order, Instance)
    return order


def test_order_saga_pays_through_its_payment_child() -> None:
    order = _order(FakeClock())
    assert order.children == {}
    entered = order.send("stock_reserved")
    assert isinstance(entered, StepResult)
    pay = order.child("pay")
    assert list(order.children) == [f"pay.{entered.seq}"]
    assert pay.context["amount"] == 4200 and pay.context["order_id"] == "o-1"
    # The gateway's answer goes to the order, which sends it on to its payment child.
    order.send("gateway_authorized", {"auth_code": "A-1"})
    assert pay.state == "paid"
    assert order.state == "shipping" and order.get("auth_code") == "A-1"
    assert [(h.kind, h.event) for h in order.history[-3:]] == [
        ("event", "gateway_authorized"),
        ("child", "authorized"),  # (the payment child's step, in the tree's history)
        ("message", "done.invoke.pay"),
    ]


def test_order_saga_the_payment_retries_on_its_own_timer_until_the_deadline() -> None:
    clock = FakeClock()
    order = _order(clock)
    order.send("stock_reserved")
    for _ in range(3):
        clock.advance(60)
        order.advance()
    assert order.child("pay").get("attempts") == 3
    clock.advance(7 * 60)
    (deadline,) = order.advance()
    # The order's own timer: leaving `paying` cancels the payment, then the compensations.
    assert isinstance(deadline, StepResult) and deadline.via == ("releasing",)
    assert order.state == "cancelled" and order.children == {}
    assert order.get("failure") == "no answer from the card gateway"
    assert _effects(deadline) == [
        ("release_stock", {"order_id": "o-1"}),
        ("tell_customer", {"order_id": "o-1", "text": f"cancelled: {order.get('failure')}"}),
    ]


def test_order_saga_a_payment_that_cannot_start_is_its_error_event() -> None:
    order = _order(FakeClock(), installments=0)
    order.send("stock_reserved")
    last = order.history[-1]
    assert (last.kind, last.event, last.target) == ("message", "error.invoke.pay", "cancelled")
    assert order.get("failure") == "payment failed (expression_error)"
