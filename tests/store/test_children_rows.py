"""A tree of instances (child flows, runtime/children.py) in every store: one row for the
whole tree, steps addressed to a child by its path, the children's timers as the root's timer
rows that a worker fires, on memory, SQLite and PostgreSQL."""

from __future__ import annotations

from flowc.compiler import compile_source
from flowc.runtime import Machine, Rejection
from flowc.runtime.clock import FakeClock
from flowc.runtime.store.durable import open_durable

T0 = 1_767_225_600.0

PAYMENT = """
flow payment
context {
  amount: int = 0
}
event approve
initial state waiting {
  on approve -> ok
  after 10m -> late
}
final state ok with {"receipt": "r-" + str(amount)}
final state late with {"receipt": "late"}
"""

SHOP = """
flow shop
context {
  total: int = 5
  receipt: str = ""
}
event buy
initial state browsing {
  on buy -> paying
}
state paying {
  invoke payment(amount: total) as pay
  on done.invoke.pay -> paid do receipt = event.receipt
}
final state paid
"""


def shop(clock: FakeClock) -> Machine:
    result = compile_source(SHOP, "shop.flow", flows={"payment": PAYMENT})
    assert result.flow is not None, [str(d) for d in result.errors]
    return Machine(result.flow, clock=clock)


def test_a_store_keeps_the_tree_and_steps_a_child_by_its_path(store_url: str) -> None:
    clock = FakeClock(T0)
    with open_durable(store_url, [shop(clock)], clock=clock) as flows:
        flows.start("shop", id="o7")
        assert flows.send("o7", "buy").status == "committed"
        assert list(flows.load("o7").children) == ["pay.1"]
        missing = flows.send("o7", "approve", child="pay.9")
        assert missing.status == "rejected" and isinstance(missing.result, Rejection)
        assert missing.result.code == "unknown_child"
        assert missing.data["message"] == "The instance has no child 'pay.9'."
        assert flows.send("o7", "approve", child="pay").status == "committed"
        done = flows.load("o7")
        assert done.state == "paid" and done.context["receipt"] == "r-5"
        assert done.children == {}


def test_a_childs_timer_is_a_timer_row_of_the_root_that_the_worker_fires(store_url: str) -> None:
    clock = FakeClock(T0)
    with open_durable(store_url, [shop(clock)], clock=clock) as flows:
        flows.start("shop", id="o8")
        flows.send("o8", "buy")
        assert [t.timer_id for t in flows.store.timers("o8")] == ["pay.1|1"]  # (child rule 1)
        clock.advance(600)
        assert flows.worker().run_once() == 1
        stored = flows.load("o8")
        assert stored.state == "paid" and stored.context["receipt"] == "late"
        assert flows.store.timers("o8") == []


NOTIFYING_CHILD = """
flow pinger
event ping
effect beep(n: int)
context {
  n: int = 0
}
initial state up {
  on ping -> up do n += 1; emit beep(n: n)
  on done_pinging -> down
}
event done_pinging
final state down with {"n": n}
"""

NOTIFYING_PARENT = """
flow watcher
event watch
event poke
effect seen(n: int)
effect poked
initial state idle {
  on watch -> watching
}
state watching {
  invoke pinger() as p
  on poke -> watching do emit poked
  on done.invoke.p -> idle do emit seen(n: event.n)
}
"""


def test_effects_of_children_and_of_messages_reach_the_outbox_once_each(store_url: str) -> None:
    clock = FakeClock(T0)
    result = compile_source(NOTIFYING_PARENT, "w.flow", flows={"pinger": NOTIFYING_CHILD})
    assert result.flow is not None, [str(d) for d in result.errors]
    with open_durable(store_url, [Machine(result.flow, clock=clock)], clock=clock) as flows:
        flows.start("watcher", id="w1")
        flows.send("w1", "watch")
        flows.send("w1", "ping", child="p")  # a child-only step: its effect, keyed by the root
        flows.send("w1", "poke")  # the root's next step: no clash with the child's effect
        flows.send("w1", "ping", child="p")
        done = flows.send("w1", "done_pinging", child="p")  # the parent's message step emits
        assert done.status == "committed"
        effects = [(e.effect, e.payload) for e in flows.store.pending_effects()]
        assert effects == [
            ("beep", {"n": 1}),
            ("poked", {}),
            ("beep", {"n": 2}),
            ("seen", {"n": 2}),
        ]


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


def test_messages_left_past_the_bound_are_a_timer_row_a_worker_delivers(store_url: str) -> None:
    clock = FakeClock(T0)
    result = compile_source(PONG, "pong.flow", flows={"ping": PING})
    assert result.flow is not None
    with open_durable(store_url, [Machine(result.flow, clock=clock)], clock=clock) as flows:
        flows.start("pong", id="r1")
        flows.send("r1", "start")
        flows.send("r1", "ball")  # a rally without end: the call stops at the bound
        hits = flows.load("r1").context["hits"]
        assert [t.timer_id for t in flows.store.timers("r1")] == ["inbox"]
        assert flows.worker().run_once() == 1
        assert flows.load("r1").context["hits"] > hits
