"""Child flows and fan-out (issue 28 items 3-5; runtime/children.py): what a host sees of a
tree of instances, on the runtime alone and through a SQLite store."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from flowc.compiler import compile_source
from flowc.runtime import Machine, Rejection, StepResult
from flowc.runtime.children import MAX_DELIVERIES
from flowc.runtime.clock import FakeClock
from flowc.runtime.store.durable import open_durable

T0 = 1_767_225_600_000  # 2026-01-01, epoch ms

PAYMENT = """
flow payment
context {
  amount: int = 0
  tries: int = 0
}
event approve
event decline
event retry
internal event nudge
internal event started(amount: int)
initial state waiting {
  entry do send started(amount: amount) to parent
  on approve -> ok
  on decline -> declined
  on retry -> waiting do tries += 1
  on nudge -> waiting do tries += 10
  after 10m -> timed_out
}
final state ok with {"receipt": "r-" + str(amount), "tries": tries}
final state declined with {"receipt": "", "tries": tries}
final state timed_out with {"receipt": "late", "tries": tries}
"""

SHOP = """
flow shop
context {
  total: int = 5
  receipt: str = ""
  why: str = ""
  started: int = 0
  tries: int = 0
}
event buy
event leave
event poke
internal event started(amount: int)
initial state browsing {
  on buy -> paying
}
state paying {
  invoke payment(amount: total) as pay
  on started -> self do started += event.amount
  on done.invoke.pay if event.receipt == "" -> browsing do why = "declined"
  on done.invoke.pay -> paid do receipt = event.receipt; tries = event.tries
  on error.invoke.pay -> browsing do why = event.kind
  on leave -> browsing
  on poke -> self do send nudge to pay
}
final state paid
"""

REVIEW = """
flow review
context {
  reviewer: str = ""
  position: int = 0
}
event approve
event reject
initial state reading {
  on approve -> approved
  on reject -> rejected
}
final state approved with {"reviewer": reviewer, "ok": true, "position": position}
final state rejected with {"reviewer": reviewer, "ok": false, "position": position}
"""


def pr_flow(join: str) -> str:
    return f"""
flow pr
context {{
  reviewers: list[str] = ["ana", "ben", "cy"]
  verdicts: list[str] = []
  failure: str = ""
}}
event open
initial state draft {{
  on open -> reviewing
}}
state reviewing {{
  invoke review(reviewer: r, position: i) for r, i in reviewers as reviews {join}
  on done.invoke.reviews -> decided
    do for v in event.results {{ verdicts = verdicts + [v.reviewer] }}
  on error.invoke.reviews -> failed do failure = event.kind
}}
final state decided
final state failed
"""


def machine(source: str, clock: FakeClock | None = None, **flows: str) -> Machine:
    result = compile_source(source, "parent.flow", flows=flows)
    assert result.flow is not None, [str(d) for d in result.errors]
    return Machine(result.flow, clock=clock or FakeClock(T0 / 1000))


def shop(clock: FakeClock | None = None) -> Machine:
    return machine(SHOP, clock, payment=PAYMENT)


def kinds(inst: Any) -> list[tuple[str, str | None, str]]:
    return [(h.kind, h.event, h.target) for h in inst.history]


# ---- one child ---------------------------------------------------------------------------------
def test_a_child_starts_on_entry_and_its_done_data_arrives_as_a_message_step() -> None:
    shop_ = shop().start(id="o1")
    assert shop_.children == {}
    assert isinstance(shop_.send("buy"), StepResult)
    assert list(shop_.children) == ["pay.1"]
    child = shop_.child("pay")
    assert child is shop_.child("pay.1") and child.id == "o1/pay.1"
    assert child.state == "waiting" and child.context["amount"] == 5
    # what the child said as it started was delivered before the host call returned
    assert shop_.context["started"] == 5
    assert isinstance(child.send("approve"), StepResult)
    assert shop_.state == "paid" and shop_.is_final
    assert shop_.context["receipt"] == "r-5"
    assert kinds(shop_)[-2:] == [
        ("message", "started", "paying"),
        ("message", "done.invoke.pay", "paid"),
    ]
    assert shop_.children == {}  # the parent ended: its children are gone


def test_leaving_the_state_cancels_the_child_which_can_no_longer_act_on_its_parent() -> None:
    shop_ = shop().start()
    shop_.send("buy")
    old = shop_.child("pay")
    shop_.send("leave")
    assert shop_.state == "browsing" and shop_.children == {}
    before = shop_.snapshot()
    assert isinstance(old.send("approve"), StepResult)  # the orphan still runs on its own
    assert shop_.snapshot() == before  # but its done event reaches no one
    shop_.send("buy")  # a new entry: a new child, with a new id
    assert list(shop_.children) == ["pay.4"]


def test_a_child_that_cannot_start_is_an_error_event() -> None:
    faulty = PAYMENT.replace(
        "entry do send started(amount: amount) to parent",
        "entry do tries = 10 % amount",
    )
    m = machine(
        SHOP.replace("invoke payment(amount: total)", "invoke payment(amount: 0)"), payment=faulty
    )
    inst = m.start()
    inst.send("buy")
    assert inst.state == "browsing" and inst.context["why"] == "expression_error"
    assert inst.children == {}
    assert kinds(inst)[-1] == ("message", "error.invoke.pay", "browsing")


def test_messages_to_a_child_and_internal_events_from_it() -> None:
    inst = shop().start()
    inst.send("buy")
    assert isinstance(inst.send("poke"), StepResult)
    assert inst.child("pay").context["tries"] == 10  # `nudge` is internal to the child
    refused = inst.send("started", {"amount": 1})
    assert isinstance(refused, Rejection) and refused.code == "internal_event"
    refused_child = inst.child("pay").send("nudge")
    assert isinstance(refused_child, Rejection) and refused_child.code == "internal_event"


def test_a_refused_host_event_changes_nothing_in_the_tree() -> None:
    inst = shop().start()
    inst.send("buy")
    before = inst.snapshot()
    assert isinstance(inst.send("buy"), Rejection)
    assert isinstance(inst.child("pay").send("nonsense"), Rejection)
    assert inst.snapshot() == before


def test_the_root_advance_fires_a_childs_timer_and_next_deadline_sees_it() -> None:
    clock = FakeClock(T0 / 1000)
    inst = shop(clock).start()
    inst.send("buy")
    assert inst.timers == []
    assert inst.next_deadline is not None
    assert inst.next_deadline.timestamp() * 1000 == T0 + 600_000
    clock.advance(600)
    fired = inst.advance()
    assert inst.state == "paid" and inst.context["receipt"] == "late"
    assert [o.event for o in fired if isinstance(o, StepResult)] == ["done.invoke.pay"]


# ---- fan-out -----------------------------------------------------------------------------------
def test_a_fan_out_starts_one_child_per_item_and_joins_all_in_item_order() -> None:
    inst = machine(pr_flow("join all"), review=REVIEW).start()
    inst.send("open")
    assert list(inst.children) == ["reviews.1.0", "reviews.1.1", "reviews.1.2"]
    assert inst.child("reviews[1]").context == {"reviewer": "ben", "position": 1}
    inst.child("reviews[2]").send("approve")
    inst.child("reviews[0]").send("reject")
    assert inst.state == "reviewing"
    inst.child("reviews[1]").send("approve")
    assert inst.state == "decided"
    assert inst.context["verdicts"] == ["ana", "ben", "cy"]


def test_join_any_takes_the_first_and_cancels_the_rest() -> None:
    inst = machine(pr_flow("join any"), review=REVIEW).start()
    inst.send("open")
    inst.child("reviews[1]").send("approve")
    assert inst.state == "decided" and inst.context["verdicts"] == ["ben"]


def test_join_n_of_m_collects_the_first_n_in_item_order() -> None:
    inst = machine(pr_flow("join 2"), review=REVIEW).start()
    inst.send("open")
    inst.child("reviews[2]").send("approve")
    assert inst.state == "reviewing"
    inst.child("reviews[0]").send("reject")
    assert inst.state == "decided" and inst.context["verdicts"] == ["ana", "cy"]


def test_a_fan_out_over_an_empty_list_joins_at_once_and_one_too_short_fails() -> None:
    empty = machine(pr_flow("join all"), review=REVIEW).start({"reviewers": []})
    empty.send("open")
    assert empty.state == "decided" and empty.context["verdicts"] == []
    short = machine(pr_flow("join 3"), review=REVIEW).start({"reviewers": ["ana"]})
    short.send("open")
    assert short.state == "failed" and short.context["failure"] == "join"


# ---- persistence -------------------------------------------------------------------------------
def test_a_tree_snapshot_restores_and_runs_on_the_same() -> None:
    m = machine(pr_flow("join all"), review=REVIEW)
    inst = m.start()
    plain = inst.snapshot()
    assert plain["format"] != "flowc.snapshot/4" and "children" not in plain
    inst.send("open")
    inst.child("reviews[0]").send("approve")
    snap = json.loads(json.dumps(inst.snapshot()))
    assert snap["format"] == "flowc.snapshot/4"
    assert [c["id"] for c in snap["children"]] == ["reviews.1.0", "reviews.1.1", "reviews.1.2"]
    back = m.restore(snap)
    assert back.snapshot() == snap
    for restored in (back, inst):
        restored.child("reviews[1]").send("approve")
        restored.child("reviews[2]").send("approve")
    assert back.snapshot()["context"] == inst.snapshot()["context"]
    assert back.state == inst.state == "decided"


def test_a_store_keeps_the_tree_and_steps_a_child_by_its_path(tmp_path: Path) -> None:
    clock = FakeClock(T0 / 1000)
    m = shop(clock)
    url = f"sqlite:///{tmp_path / 'flows.db'}"
    with open_durable(url, [m], clock=clock) as flows:
        flows.start("shop", id="o7")
        assert flows.send("o7", "buy").status == "committed"
        stored = flows.load("o7")
        assert list(stored.children) == ["pay.1"]
        missing = flows.send("o7", "approve", child="pay.9")
        assert missing.status == "rejected" and isinstance(missing.result, Rejection)
        assert missing.result.code == "unknown_child"
        assert missing.data["message"] == "The instance has no child 'pay.9'."
        assert flows.send("o7", "approve", child="pay").status == "committed"
        done = flows.load("o7")
        assert done.state == "paid" and done.context["receipt"] == "r-5"


def test_a_childs_timer_is_a_timer_row_of_the_root_that_the_worker_fires(
    tmp_path: Path,
) -> None:
    clock = FakeClock(T0 / 1000)
    m = shop(clock)
    with open_durable(f"sqlite:///{tmp_path / 'flows.db'}", [m], clock=clock) as flows:
        flows.start("shop", id="o8")
        flows.send("o8", "buy")
        clock.advance(600)
        fired = flows.worker().run_once()
        assert fired >= 1
        assert flows.load("o8").context["receipt"] == "late"


# ---- bounds ------------------------------------------------------------------------------------
PING = """
flow ping
event ball
initial state up {
  on ball -> self do send ball to parent
}
"""

PONG = """
flow pong
event start
event ball
context {
  hits: int = 0
}
initial state idle {
  on start -> rally
}
state rally {
  invoke ping() as p
  on ball -> self do hits += 1; send ball to p
}
"""


def test_two_flows_that_message_each_other_for_ever_do_not_hang_a_host() -> None:
    inst = machine(PONG, ping=PING).start()
    inst.send("start")
    inst.send("ball")  # the parent takes it, and so the rally starts
    assert 0 < inst.context["hits"] <= MAX_DELIVERIES
    waiting = inst.snapshot().get("inbox")
    assert waiting  # the rest waits for the next call
    inst.advance()
    assert inst.context["hits"] > MAX_DELIVERIES // 2


@pytest.mark.parametrize("ending", ["approve", "decline"])
def test_done_data_of_every_final_state_reaches_the_parent(ending: str) -> None:
    inst = shop().start()
    inst.send("buy")
    inst.child("pay").send(ending)
    assert inst.state == ("paid" if ending == "approve" else "browsing")


# ---- forward, finalize, into, nesting ----------------------------------------------------------
ECHO = """
flow echo
context {
  ticks: int = 0
}
event tick
event stop
internal event heard(n: int)
initial state running {
  on tick -> self do ticks += 1; send heard(n: ticks) to parent
  on stop -> off
}
final state off with {"ticks": ticks}
"""

HUB = """
flow hub
context {
  seen: int = 0
  heard: int = 0
  kid: str = ""
  finals: int = 0
  total: int = 0
}
event go
event tick
event stop
internal event heard(n: int)
unhandled ignore
initial state idle {
  on go -> live
}
state live {
  invoke echo() as e into kid forward finalize do finals += 1
  on tick -> self do seen += 1
  on heard -> self do heard = event.n
  on done.invoke.e -> idle do total = event.ticks
}
"""


def test_forward_finalize_and_into() -> None:
    inst = machine(HUB, echo=ECHO).start(id="h")
    inst.send("go")
    assert inst.context["kid"] == "h/e.1"
    inst.send("tick")
    inst.send("tick")
    assert inst.context["seen"] == 2 and inst.context["heard"] == 2
    # `stop` has no rule in the parent (`unhandled ignore`): forwarded all the same
    inst.send("stop")
    assert inst.state == "idle" and inst.context["total"] == 2
    assert inst.context["finals"] == 3  # two `heard` and the done event passed `finalize`


GRANDPARENT = """
flow top
context {
  got: int = 0
}
event go
initial state idle {
  on go -> waiting
}
state waiting {
  invoke shop() as s
  on done.invoke.s -> over
}
final state over
"""

SHOP_DONE = SHOP.replace("final state paid", 'final state paid with {"receipt": receipt}')


def test_grandchildren_live_in_the_same_tree_and_snapshot() -> None:
    m = machine(GRANDPARENT, shop=SHOP_DONE, payment=PAYMENT)
    inst = m.start()
    inst.send("go")
    inst.child("s").send("buy")
    grandchild = inst.child("s/pay")
    assert grandchild.id == "s.1/pay.1"
    snap = json.loads(json.dumps(inst.snapshot()))
    back = m.restore(snap)
    back.child("s/pay").send("approve")
    assert back.state == "over"
    assert inst.state == "waiting"  # the restored copy is another tree


def test_a_message_the_receiver_refuses_is_dropped() -> None:
    inst = shop().start()
    inst.send("buy")
    inst.send("leave")
    inst.send("buy")  # a `started` message arrived while paying: taken
    assert inst.context["started"] == 10
    history = len(inst.history)
    # a child's message the parent has no rule for now is dropped, not an error
    m = machine(
        SHOP.replace("  on started -> self do started += event.amount\n", ""), payment=PAYMENT
    )
    other = m.start()
    assert isinstance(other.send("buy"), StepResult)
    assert [h.kind for h in other.history] == ["start", "event"]
    assert history == 6


def test_end_invoke_treats_the_children_as_a_black_box() -> None:
    from flowc.runtime.children import end_invoke

    inst = shop().start()
    assert end_invoke(inst, "pay", {"receipt": "x", "tries": 0}) is None  # not invoked yet
    inst.send("buy")
    out = end_invoke(inst, "pay", {"receipt": "x", "tries": 0})
    assert isinstance(out, StepResult) and inst.state == "paid"
    inst2 = shop().start()
    inst2.send("buy")
    failed = end_invoke(inst2, "pay", {"kind": "error", "message": "boom"}, failed=True)
    assert isinstance(failed, StepResult) and inst2.context["why"] == "error"
    assert inst2.children == {}
