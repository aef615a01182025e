"""A hierarchical flow built as IR version 2 by hand (the compiler side of statecharts is built
separately): the microwave of the statecharts contract, with a parallel review, history states,
an eventless rule, a computed delay and the new action ops.

    flow microwave
    initial state Idle { on start -> Cooking do ...; emit lamp(on: true)  on submit -> Review
                         on fail -> Retry }
    state Cooking "Oven on" {
      initial state Heating { after 1s if remaining > 0 -> Heating reenter do remaining -= 1
                              always if remaining == 0 -> Done }
      state Paused { on door_closed -> Resume  on restart -> Cooking }
      final state Done
      history Resume
      history deep Everything -> Heating
      on door_opened -> Paused
      after 30m -> Idle
    }
    parallel state Review {
      state CI { initial state Waiting { on ci_passed -> Green }  final state Green }
      state Approvals { initial state Waiting { on approved -> Approved }  final state Approved }
      on done.state.Review -> Merged
    }
    final state Merged
    state Retry { entry do attempts += 1; raise poke(n: attempts)
                  on poke if event.n < 3 -> Retry reenter
                  after backoff_ms ms -> Idle
                  on check -> Retry do if attempts > 2 { backoff_ms = 1000 } else { ... } }
    on reset -> Idle
"""

from __future__ import annotations

from flowc.runtime.model import (
    Action,
    Branch,
    CompiledFlow,
    EventDef,
    Expr,
    FieldDef,
    State,
    Transition,
    TypeRef,
)

INT = TypeRef(kind="int")


def _ctx(name: str) -> Expr:
    return Expr(op="ctx", value=name)


def _lit(value: int | bool) -> Expr:
    return Expr(op="lit", value=value)


def _op(op: str, left: Expr, right: Expr) -> Expr:
    return Expr(op=op, args=(left, right))


def _payload(**fields: Expr) -> Expr:
    args: list[Expr] = []
    for key, value in fields.items():
        args += [_lit_str(key), value]
    return Expr(op="map", args=tuple(args))


def _lit_str(text: str) -> Expr:
    return Expr(op="lit", value=text)


def microwave() -> CompiledFlow:
    states = (
        State(name="Idle", initial=True),
        State(name="Cooking", kind="compound", title="Oven on"),
        State(name="Heating", parent="Cooking", initial=True),
        State(name="Paused", parent="Cooking"),
        State(name="Done", parent="Cooking", kind="final"),
        State(name="Resume", parent="Cooking", kind="history", history="shallow"),
        State(
            name="Everything",
            parent="Cooking",
            kind="history",
            history="deep",
            default="Heating",
        ),
        State(name="Review", kind="parallel"),
        State(name="CI", parent="Review", kind="compound"),
        State(name="CI.Waiting", parent="CI", initial=True),
        State(name="Green", parent="CI", kind="final"),
        State(name="Approvals", parent="Review", kind="compound"),
        State(name="Approvals.Waiting", parent="Approvals", initial=True),
        State(name="Approved", parent="Approvals", kind="final"),
        State(name="Merged", kind="final"),
        State(
            name="Retry",
            entry=(
                Action(op="add", target=("attempts",), value=_lit(1)),
                Action(op="raise", event="poke", value=_payload(n=_ctx("attempts"))),
            ),
        ),
    )
    backoff = Action(
        op="if",
        branches=(
            Branch(
                guard=_op(">", _ctx("attempts"), _lit(2)),
                actions=(Action(op="set", target=("backoff_ms",), value=_lit(1000)),),
            ),
            Branch(
                actions=(Action(op="set", target=("backoff_ms",), value=_lit(100)),),
            ),
        ),
    )
    rules: list[dict[str, object]] = [
        dict(
            source="Idle",
            target="Cooking",
            kind="event",
            event="start",
            actions=(
                Action(op="set", target=("remaining",), value=Expr(op="event", value="seconds")),
                Action(op="emit", event="lamp", value=_payload(on=_lit(True))),
            ),
        ),
        dict(source="Idle", target="Review", kind="event", event="submit"),
        dict(source="Idle", target="Retry", kind="event", event="fail"),
        dict(
            source="Heating",
            target="Heating",
            kind="timer",
            after_ms=1000,
            guard=_op(">", _ctx("remaining"), _lit(0)),
            reenter=True,
            actions=(Action(op="sub", target=("remaining",), value=_lit(1)),),
        ),
        dict(
            source="Heating",
            target="Done",
            kind="always",
            guard=_op("==", _ctx("remaining"), _lit(0)),
        ),
        dict(source="Paused", target="Resume", kind="event", event="door_closed"),
        dict(source="Paused", target="Cooking", kind="event", event="restart"),
        dict(source="Cooking", target="Paused", kind="event", event="door_opened"),
        dict(source="Cooking", target="Idle", kind="timer", after_ms=1_800_000),
        dict(source="CI.Waiting", target="Green", kind="event", event="ci_passed"),
        dict(source="Approvals.Waiting", target="Approved", kind="event", event="approved"),
        dict(source="Review", target="Merged", kind="event", event="done.state.Review"),
        dict(
            source="Retry",
            target="Retry",
            kind="event",
            event="poke",
            guard=_op("<", Expr(op="event", value="n"), _lit(3)),
            reenter=True,
        ),
        dict(source="Retry", target="Idle", kind="timer", after_expr=_ctx("backoff_ms")),
        dict(source="Retry", target="Retry", kind="event", event="check", actions=(backoff,)),
    ]
    # `on reset -> Idle` written outside every state: a copy in each top-level state.
    for name in ("Idle", "Cooking", "Review", "Retry"):
        rules.append(
            dict(
                source=name,
                target="Idle",
                kind="event",
                event="reset",
                inherited=True,
                line=40,
                column=1,
            )
        )
    transitions = tuple(
        Transition.model_validate({"index": i, **rule}) for i, rule in enumerate(rules)
    )
    plain = (
        "door_opened",
        "door_closed",
        "restart",
        "submit",
        "fail",
        "ci_passed",
        "approved",
        "check",
        "reset",
        "done.state.Cooking",
        "done.state.Review",
        "done.state.CI",
        "done.state.Approvals",
    )
    events = (
        *(EventDef(name=n) for n in plain),
        EventDef(name="start", fields=(FieldDef(name="seconds", type=INT),)),
        EventDef(name="poke", fields=(FieldDef(name="n", type=INT),)),
    )
    return CompiledFlow(
        name="microwave",
        title="Microwave oven",
        context=tuple(
            FieldDef(name=n, type=INT, required=False, default=d)
            for n, d in (("remaining", 0), ("attempts", 0), ("backoff_ms", 100))
        ),
        events=events,
        effects=(EventDef(name="lamp", fields=(FieldDef(name="on", type=TypeRef(kind="bool")),)),),
        states=states,
        transitions=transitions,
        initial="Idle",
    ).with_hash()
