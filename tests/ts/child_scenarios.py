"""Scenarios of child flows (IR version 5) that tests/ts/test_scenarios_interop.py runs on both
runtimes: one child, fan-out joins, messages both ways, `forward`, `finalize`, `into`,
grandchildren, timers across the tree, cancelling, failures, the delivery bound. An op with a
`"child": PATH` member is made on the descendant at PATH (`Instance.child`), or refused
`unknown_child` when there is none."""

from __future__ import annotations

from typing import Any

from .scenarios import Case, advance, send


def to(path: str, op: dict[str, Any]) -> dict[str, Any]:
    """`op` made on the descendant at `path`."""
    return {**op, "child": path}


PAYMENT = """
flow payment
context {
  amount: int = 0
  tries: int = 0
}
event approve
event decline
event retry
event fail
internal event nudge
internal event started(amount: int)
initial state waiting {
  entry do send started(amount: amount) to parent
  on approve -> ok
  on decline -> declined
  on retry -> waiting do tries += 1
  on nudge -> waiting do tries += 10
  on fail -> broken
  after 10m -> timed_out
}
final state ok with {"receipt": "r-" + str(amount), "tries": tries}
final state declined with {"receipt": "", "tries": tries}
final state timed_out with {"receipt": "late", "tries": tries}
final state broken with {"receipt": str(10 / (amount - amount)), "tries": tries}
"""

SHOP = """
flow shop
context {
  total: int = 5
  receipt: str = ""
  why: str = ""
  started: int = 0
  tries: int = 0
  pid: str = ""
}
event buy
event leave
event poke
event quit
event skip
internal event hop
internal event started(amount: int)
initial state browsing {
  on buy -> paying
  on skip -> paying do raise hop
}
state paying {
  invoke payment(amount: total) as pay into pid
  on started -> self do started += event.amount
  on done.invoke.pay if event.receipt == "" -> browsing do why = "declined"
  on done.invoke.pay -> paid do receipt = event.receipt; tries = event.tries
  on error.invoke.pay -> browsing do why = event.kind
  on leave -> browsing
  on hop -> browsing
  on poke -> self do send nudge to pay
  on quit -> gone
}
final state paid
final state gone
"""

REVIEW = """
flow review
context {
  reviewer: str = ""
  position: int = 0
}
event approve
event reject
event explode
initial state reading {
  on approve -> approved
  on reject -> rejected
  on explode -> broken
}
final state approved with {"reviewer": reviewer, "ok": true, "position": position}
final state rejected with {"reviewer": reviewer, "ok": false, "position": position}
final state broken with {"reviewer": str(1 / (position - position)), "ok": false, "position": 0}
"""


def pr(join: str, reviewers: str = '["ana", "ben", "cy"]') -> str:
    return f"""
flow pr
context {{
  reviewers: list[str] = {reviewers}
  verdicts: list[str] = []
  failure: str = ""
  seen: int = 0
}}
event open
initial state draft {{
  on open -> reviewing
}}
state reviewing {{
  invoke review(reviewer: r, position: i) for r, i in reviewers as reviews {join}
    finalize do seen += 1
  on done.invoke.reviews -> decided
    do for v in event.results {{ verdicts = verdicts + [v.reviewer] }}
  on error.invoke.reviews -> failed do failure = event.kind + ": " + event.message
}}
final state decided
final state failed
"""


EAGER = """
flow eager
context {
  started: int = 0
  receipt: str = ""
}
internal event started(amount: int)
initial state paying {
  invoke payment(amount: 3) as pay
  on started -> self do started += event.amount
  on done.invoke.pay -> paid do receipt = event.receipt
}
final state paid
"""

ECHO = """
flow echo
context {
  ticks: int = 0
  notes: int = 0
}
event tick
event note
initial state listening {
  entry do send note to parent
  on tick -> self do ticks += 1
  on note -> self do notes += 1
}
"""

LOUD = """
flow loud
context { n: int = 0 }
event go
event tick
internal event note
initial state idle { on go -> running do send tick after 1s }
state running {
  invoke echo() as e forward
  on tick -> self do n += 1
  on note -> self do n += 100
}
"""

GUARDED = """
flow guarded
context {
  n: int = 0
  receipt: str = ""
}
event bump
internal event started(amount: int)
invariant small: n < 2
initial state paying {
  invoke payment(amount: 1) as pay
  on bump -> left do n += 5
  on started -> self
  on done.invoke.pay -> paid do receipt = event.receipt
}
state left
final state paid
"""

LOUD_KID = """
flow kid
effect hello(n: int)
event go
initial state a {
  entry do emit hello(n: 1)
  on go -> b do emit hello(n: 2)
}
final state b
"""

EMITTER = """
flow emitter
effect hello(n: int)
event buy
initial state a {
  entry do emit hello(n: 0)
  invoke kid() as k
  on buy -> c
}
state c {
  invoke kid() as k2
  on done.invoke.k2 -> b
}
final state b
"""

FAREWELL = """
flow farewell
event approve
internal event bye
internal event later
initial state waiting {
  on approve -> ok do send bye to parent; send later to parent
}
final state ok with {"receipt": "r-1"}
"""

GHOST = """
flow ghost
context {
  receipt: str = ""
  left: int = 0
}
event buy
internal event bye
internal event later
initial state browsing { on buy -> paying }
state paying {
  invoke farewell() as pay
  on bye -> waiting do left += 1
}
state waiting {
  on later -> self do left += 10
  on done.invoke.pay -> paid do receipt = event.receipt
}
final state paid
"""

LEAF = """
flow leaf
context { n: int = 0 }
event ping
initial state lit {
  on ping -> done
  after 5s -> done do n = 5
}
final state done with {"n": n}
"""

MIDDLE = """
flow middle
context { got: int = 0 }
event relay
initial state wait {
  invoke leaf(n: 1) as inner
  on relay -> over do got = 7
  on done.invoke.inner -> over do got = event.n
  after 1m -> over
}
final state over with {"n": got}
"""

TOP = """
flow top
context { got: int = -1 }
event begin
event relay
initial state idle { on begin -> running }
state running {
  invoke middle() as mid forward
  on relay -> self
  on done.invoke.mid -> finished do got = event.n
}
final state finished
"""

PING = """
flow ping
event ball
initial state play {
  on ball -> play do send ball to parent
}
"""

PONG = """
flow pong
context { hits: int = 0 }
event serve
internal event ball
initial state idle { on serve -> rally }
state rally {
  invoke ping() as p
  entry do send ball to p
  on ball -> self do hits += 1; send ball to p
}
"""

CHILD_CASES = [
    Case(
        "one_child",
        SHOP,
        [
            send("buy"),
            to("pay", send("retry")),
            send("poke"),
            to("pay.1", send("approve")),
            send("buy"),
        ],
        flows={"payment": PAYMENT},
        roundtrip=True,
    ),
    Case(
        "child_declines_then_fails_then_is_left",
        SHOP,
        [
            send("buy"),
            to("pay", send("decline")),
            send("buy"),
            to("pay", send("fail")),
            send("buy"),
            send("leave"),
            to("pay", send("approve")),
            send("buy"),
            send("quit"),
        ],
        flows={"payment": PAYMENT},
        roundtrip=True,
    ),
    Case(
        "a_root_that_invokes_as_it_starts",
        EAGER,
        [to("pay", send("approve"))],
        flows={"payment": PAYMENT},
        roundtrip=True,
    ),
    Case(
        "a_message_and_a_scheduled_event_are_forwarded",
        LOUD,
        [send("go"), to("e", send("tick")), advance(1_000)],
        flows={"echo": ECHO},
        roundtrip=True,
    ),
    Case(
        "an_invariant_refusal_puts_the_tree_back",
        GUARDED,
        [send("bump"), to("pay", send("approve"))],
        flows={"payment": PAYMENT},
        check_invariants=True,
    ),
    Case(
        "the_effects_of_children",
        EMITTER,
        [send("buy"), to("k2", send("go"))],
        flows={"kid": LOUD_KID},
        roundtrip=True,
    ),
    Case(
        "what_a_child_said_before_its_state_was_left_is_still_told",
        GHOST,
        [send("buy"), to("pay", send("approve"))],
        flows={"farewell": FAREWELL},
        roundtrip=True,
    ),
    Case(
        "entered_and_left_in_one_step",
        SHOP,
        [send("skip"), to("pay", send("approve"))],
        flows={"payment": PAYMENT},
        roundtrip=True,
    ),
    Case(
        "a_childs_timer_fires_from_the_root",
        SHOP,
        [send("buy"), advance(300_000), advance(300_000), advance(1)],
        flows={"payment": PAYMENT},
        roundtrip=True,
    ),
    Case(
        "a_child_start_refused",
        SHOP,
        [send("buy")],
        context={"total": -1},
        flows={"payment": PAYMENT.replace("entry do", "entry do tries = [1, 2][amount + 5];")},
        roundtrip=True,
    ),
    Case(
        "fan_out_join_all",
        pr("join all"),
        [
            send("open"),
            to("reviews[2]", send("approve")),
            to("reviews[0]", send("reject")),
            to("reviews[1]", send("approve")),
        ],
        flows={"review": REVIEW},
        roundtrip=True,
    ),
    Case(
        "fan_out_join_any_cancels_the_rest",
        pr("join any"),
        [send("open"), to("reviews[1]", send("approve")), to("reviews[0]", send("approve"))],
        flows={"review": REVIEW},
        roundtrip=True,
    ),
    Case(
        "fan_out_join_two_fails_when_out_of_reach",
        pr("join 2"),
        [send("open"), to("reviews[0]", send("explode")), to("reviews[2]", send("explode"))],
        flows={"review": REVIEW},
        roundtrip=True,
    ),
    Case(
        "fan_out_empty_and_too_few",
        pr("join all", "[]"),
        [send("open")],
        flows={"review": REVIEW},
        roundtrip=True,
    ),
    Case(
        "fan_out_needs_more_than_it_has",
        pr("join 4"),
        [send("open"), to("reviews[0]", send("approve"))],
        flows={"review": REVIEW},
        roundtrip=True,
    ),
    Case(
        "grandchildren_forward_and_timers",
        TOP,
        [
            send("begin"),
            to("mid/inner", send("ping")),
            send("begin"),
        ],
        flows={"middle": MIDDLE, "leaf": LEAF},
        roundtrip=True,
    ),
    Case(
        "forward_a_host_event",
        TOP,
        [send("begin"), send("relay")],
        flows={"middle": MIDDLE, "leaf": LEAF},
        roundtrip=True,
    ),
    Case(
        "grandchildren_timers_in_deadline_order",
        TOP,
        [send("begin"), advance(4_000), advance(1_000), to("nobody", send("ping"))],
        flows={"middle": MIDDLE, "leaf": LEAF},
        roundtrip=True,
    ),
    Case(
        "messages_for_ever_are_bounded",
        PONG,
        [send("serve"), advance(1), send("serve")],
        flows={"ping": PING},
        roundtrip=True,
    ),
]
