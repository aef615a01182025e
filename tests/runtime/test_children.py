"""Child flows and fan-out (issue 28 items 3-5; runtime/children.py): what a host sees of a
tree of instances, on the runtime alone and through a SQLite store."""

from __future__ import annotations

import json
from typing import Any

import pytest

from flowc.compiler import compile_source
from flowc.runtime import Machine, Rejection, StepResult
from flowc.runtime.children import MAX_DELIVERIES
from flowc.runtime.clock import FakeClock

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
    approved = child.send("approve")
    assert isinstance(approved, StepResult)
    assert shop_.state == "paid" and shop_.is_final
    assert shop_.context["receipt"] == "r-5"
    # one history for the tree: the children's steps are entries of kind `child`
    assert kinds(shop_) == [
        ("start", None, "browsing"),
        ("event", "buy", "paying"),
        ("child", None, "paying"),  # pay.1 started
        ("message", "started", "paying"),
        ("child", "approve", "paying"),
        ("message", "done.invoke.pay", "paid"),
    ]
    assert shop_.history[4].payload == {"child": "pay.1", "seq": 1, "from": "waiting", "to": "ok"}
    assert [(s.kind, s.event) for s in approved.then] == [
        ("child", "approve"),
        ("message", "done.invoke.pay"),
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
    assert list(shop_.children) == ["pay.5"]  # (the step that entered `paying` again)


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
    assert [(o.kind, o.event) for o in fired if isinstance(o, StepResult)] == [
        ("child", None),  # the child's timer step
        ("message", "done.invoke.pay"),
    ]


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
    assert waiting  # the rest waits for the next call, due at once
    assert inst.next_deadline is not None and inst.next_deadline == inst.history[-1].at
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
    assert [h.kind for h in other.history] == ["start", "event", "child"]
    assert history == 8


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


def test_a_step_that_breaks_an_invariant_leaves_the_children_as_they_were() -> None:
    source = SHOP.replace("final state paid", "final state paid\ninvariant small: started < 6")
    result = compile_source(source, "parent.flow", flows={"payment": PAYMENT})
    assert result.flow is not None, [str(d) for d in result.errors]
    m = Machine(result.flow, clock=FakeClock(T0 / 1000), check_invariants=True)
    inst = m.start()
    inst.send("buy")  # started = 5
    inst.send("leave")
    before = inst.snapshot()
    refused = inst.send("buy")  # a new child says `started`: 10 breaks the invariant
    assert isinstance(refused, Rejection) and refused.code == "invariant_violated"
    assert inst.snapshot() == before and inst.children == {}


BOOMERANG = """
flow boomerang
context {
  ticks: int = 0
}
internal event hello
internal event tick
initial state waiting {
  entry do send hello to parent
  on hello -> waiting do ticks += 100
  on tick -> home
}
final state home with {"ticks": ticks}
"""

THROWER = """
flow thrower
context {
  ticks: int = -1
}
event throw
internal event hello
internal event tick
initial state ready {
  on throw -> flying
}
state flying {
  entry do send tick after 1s
  invoke boomerang() as b forward
  on tick -> self
  on hello -> self
  on done.invoke.b -> caught do ticks = event.ticks
}
final state caught
"""


def test_forward_sends_on_scheduled_events_and_the_childs_own_messages() -> None:
    clock = FakeClock(T0 / 1000)
    inst = machine(THROWER, clock, boomerang=BOOMERANG).start()
    inst.send("throw")
    # the child's `hello` went to the parent, which sent a copy back
    assert inst.state == "flying" and inst.child("b").context["ticks"] == 100
    clock.advance(1)
    inst.advance()  # the parent's scheduled `tick`, forwarded too: the child ends
    assert inst.state == "caught" and inst.context["ticks"] == 100


def test_a_fan_outs_finalize_reads_each_childs_done_data() -> None:
    kid = """
flow kid
context {
  n: int = 0
}
event go
initial state a {
  on go -> b
}
final state b with {"n": n}
"""
    top = """
flow top
context {
  xs: list[int] = [1, 2]
  seen: int = 0
}
event go
initial state s {
  invoke kid(n: x) for x in xs as k forward finalize do seen += FIELD
  on go -> s
  on done.invoke.k -> s
}
"""
    wrong = compile_source(top.replace("FIELD", "len(event.results)"), "t.flow", flows={"kid": kid})
    assert [d.code for d in wrong.errors] == ["E108"]
    inst = machine(top.replace("FIELD", "event.n"), kid=kid).start()
    inst.send("go")  # forwarded: both children end, each passing `finalize`
    assert inst.context["seen"] == 3


QUICK = """
flow quick
internal event hello
initial state go {
  entry do send hello to parent
  always -> over
}
final state over
"""

WAITER = """
flow waiter
event begin
internal event hello
initial state idle {
  on begin -> asking
}
state asking {
  invoke quick() as q
  on hello -> heard
}
state heard {
  on done.invoke.q -> told
}
final state told
"""


def test_what_a_child_sent_before_its_state_was_left_is_still_delivered() -> None:
    inst = machine(WAITER, quick=QUICK).start()
    inst.send("begin")  # `hello`, then the child's end: both queued before `asking` is left
    assert inst.state == "told"
    assert [h.kind for h in inst.history][-2:] == ["message", "message"]


GREETER = """
flow greeter
effect hi(n: int)
event go
initial state a {
  entry do emit hi(n: 1)
  on go -> a
}
"""

HOST = """
flow host
event go
initial state s {
  invoke greeter() as x
  on go -> t
}
state t {
  invoke greeter() as y
}
"""


def test_the_effects_of_a_childs_start_reach_the_host_once() -> None:
    inst = machine(HOST, greeter=GREETER).start()
    assert inst.start_effects == [{"effect": "hi", "payload": {"n": 1}}]  # x's start
    moved = inst.send("go")
    assert isinstance(moved, StepResult) and moved.effects == []
    assert [(s.kind, s.effects) for s in moved.then] == [
        ("child", [{"effect": "hi", "payload": {"n": 1}}]),  # y's start
    ]


def test_a_flat_parents_generated_steps_agree_with_the_engines() -> None:
    """A flat parent's pairs whose step touches no child (an internal `-> self` in the
    invoking state) get generated dispatch functions; those that start, cancel or message
    children stay on the engine. Both machines end in the same tree."""
    source = SHOP.replace(
        "  on leave -> browsing\n", "  on leave -> browsing\n  on tick -> self do tries += 1\n"
    ).replace("event poke\n", "event poke\nevent tick\n")
    snapshots = []
    for hot_after in (0, 10_000):  # generated at once, never
        m = machine(source, payment=PAYMENT)
        m.hot_after = hot_after
        inst = m.start(id="g")
        for event in ("buy", "tick", "tick", "poke", "leave", "buy", "tick"):
            assert isinstance(inst.send(event), StepResult), event
        inst.child("pay").send("approve")
        assert inst.state == "paid" and inst.context["receipt"] == "r-5"
        snapshots.append(inst.snapshot())
        assert bool(m._written) == (hot_after == 0)
    assert snapshots[0] == snapshots[1]
