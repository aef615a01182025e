"""The engine on hand-written IR version 2: compound and parallel states, history,
raised events, eventless rules, run to completion and its bound, timers on compound states,
and the instance API (`configuration`, `active`, snapshots)."""

from __future__ import annotations

import json

import pytest

from flowc.runtime import FakeClock, IRLoadError, Limits, Machine, Rejection, StepResult
from runtime.chart_ir import Chart, add, ctx, event, lit, log, op, raise_
from runtime.conftest import frozen


def ok(outcome: object) -> StepResult:
    assert isinstance(outcome, StepResult), outcome
    return outcome


def refused(outcome: object) -> Rejection:
    assert isinstance(outcome, Rejection), outcome
    return outcome


# ---- compound states ---------------------------------------------------------------------------


def oven() -> Chart:
    """Off, and On { Idle, Busy } with rules on On that apply in both children."""
    return (
        Chart("oven", {"go": {}, "work": {}, "stop": {}, "ping": {}})
        .state("Off", initial=True, logged=True)
        .state("On", "compound", logged=True)
        .state("Idle", parent="On", initial=True, logged=True)
        .state("Busy", parent="On", logged=True)
        .rule("Off", "On", "go")
        .rule("Idle", "Busy", "work")
        .rule("On", "Off", "stop")
        .rule("On", "Off", "ping")
        .rule("Busy", "Idle", "ping", guard=op("<", ctx("n"), lit(1)), do=(add("n"),))
    )


def test_entering_a_compound_enters_its_initial_child_outermost_first() -> None:
    inst = oven().machine().start()
    assert inst.state == "Off" and inst.configuration == ("Off",)
    r = ok(inst.send("go"))
    assert inst.get("log") == ["+Off", "-Off", "+On", "+Idle"]
    assert inst.configuration == ("On", "Idle")
    assert inst.state == "Idle" and r.to == "Idle" and r.from_ == "Off"
    assert r.configuration == ("On", "Idle")
    assert inst.active("On") and inst.active("Idle") and not inst.active("Busy")


def test_leaving_a_compound_exits_innermost_first() -> None:
    inst = oven().machine().start()
    inst.send("go")
    inst.send("work")
    ok(inst.send("stop"))  # a rule of On, taken in Busy
    assert inst.get("log")[-3:] == ["-Busy", "-On", "+Off"]
    assert inst.configuration == ("Off",)


def test_the_innermost_rule_is_tried_first_then_the_ancestors() -> None:
    inst = oven().machine().start()
    inst.send("go")
    inst.send("work")
    ok(inst.send("ping"))  # Busy's own rule (guard holds) wins over On's
    assert inst.state == "Idle" and inst.get("n") == 1
    inst.send("work")
    ok(inst.send("ping"))  # Busy's guard fails now: On's rule is taken
    assert inst.state == "Off"


def test_an_internal_self_rule_of_a_compound_leaves_nothing() -> None:
    clock = FakeClock()
    chart = (
        oven()
        .rule("On", "On", "work", do=(log("noted"),))  # tried after Idle's own `work` rule
        .rule("On", "Off", after_ms=10_000)
    )
    inst = chart.machine(clock=clock).start()
    inst.send("go")
    inst.send("work")
    clock.advance(5)
    n = len(inst.get("log"))
    ok(inst.send("work"))  # Busy has no `work` rule: On's internal one runs, nothing moves
    assert inst.get("log")[n:] == ["noted"] and inst.state == "Busy"
    assert [t["due"].timestamp() for t in inst.timers] == [clock() + 5]  # kept running


def test_reenter_on_a_compound_restarts_it_from_its_initial_child() -> None:
    clock = FakeClock()
    chart = (
        Chart("restart", {"work": {}, "reset": {}})
        .state("On", "compound", initial=True, logged=True)
        .state("Idle", parent="On", initial=True, logged=True)
        .state("Busy", parent="On", logged=True)
        .rule("Idle", "Busy", "work")
        .rule("On", "On", "reset", reenter=True)
        .rule("On", "On", after_ms=10_000)
    )
    inst = chart.machine(clock=clock).start()
    inst.send("work")
    clock.advance(4)
    ok(inst.send("reset"))
    assert inst.get("log")[-4:] == ["-Busy", "-On", "+On", "+Idle"]
    assert inst.configuration == ("On", "Idle")
    assert [t["due"].timestamp() for t in inst.timers] == [clock() + 10]  # restarted


def test_goto_enters_the_default_descendants_and_lists_the_ancestors_edges() -> None:
    chart = oven().rule("Off", "On", kind="direct").rule("On", "Off", kind="direct")
    inst = chart.machine().start()
    assert inst.allowed_targets() == ["On"]
    ok(inst.goto("On"))
    assert inst.configuration == ("On", "Idle")
    assert inst.allowed_targets() == ["Off"]  # On's edge applies in Idle
    assert {e.name for e in inst.accepted_events()} == {"work", "stop", "ping"}
    inst.send("work")
    ok(inst.goto("Off"))
    assert inst.state == "Off"


def test_a_rule_of_an_ancestor_reads_its_own_state_in_guards() -> None:
    on_itself = op("==", {"op": "state", "value": "name"}, lit("On"))
    chart = oven().rule("On", "Off", "halt", guard=on_itself)
    chart.events["halt"] = {}
    inst = chart.machine().start()
    inst.send("go")
    assert "halt" in {e.name for e in inst.accepted_events()}  # judged as `send` judges it
    assert ok(inst.send("halt")).to == "Off"


def test_unhandled_ignore_is_inherited_from_an_ancestor() -> None:
    chart = (
        Chart("quiet", {"go": {}, "other": {}})
        .state("Top", "compound", initial=True, unhandled="ignore")
        .state("A", parent="Top", initial=True)
        .state("B", parent="Top")
        .rule("A", "B", "go")
    )
    inst = chart.machine().start()
    assert refused(inst.send("other")).kind == "ignored"


# ---- parallel states ---------------------------------------------------------------------------


def review() -> Chart:
    return (
        Chart("review", {"pass": {}, "approve": {}, "poke": {}})
        .state("Review", "parallel", initial=True, logged=True)
        .state("CI", "compound", parent="Review", logged=True)
        .state("Pending", parent="CI", initial=True, logged=True)
        .state("Green", "final", parent="CI", logged=True)
        .state("Approvals", "compound", parent="Review", logged=True)
        .state("Waiting", parent="Approvals", initial=True, logged=True)
        .state("Approved", "final", parent="Approvals", logged=True)
        .state("Merged", "final")
        .rule("Pending", "Green", "pass")
        .rule("Waiting", "Approved", "approve")
        .rule("Pending", "Pending", "poke", do=(log("poke CI"),))
        .rule("Waiting", "Waiting", "poke", do=(log("poke approvals"),))
        .rule("Review", "Merged", "done.state.Review")
    )


def test_a_parallel_state_enters_every_region() -> None:
    inst = review().machine().start()
    assert inst.configuration == ("Review", "CI", "Pending", "Approvals", "Waiting")
    assert inst.state == "Review"  # the innermost state holding every active leaf
    assert inst.get("log") == ["+Review", "+CI", "+Pending", "+Approvals", "+Waiting"]


def test_each_region_takes_its_rule_for_one_event_in_document_order() -> None:
    inst = review().machine().start()
    ok(inst.send("poke"))
    assert inst.get("log")[-2:] == ["poke CI", "poke approvals"]


def test_the_parallel_state_is_done_when_every_region_is_final() -> None:
    inst = review().machine().start()
    r = ok(inst.send("pass"))
    assert inst.configuration == ("Review", "CI", "Green", "Approvals", "Waiting")
    assert r.via == () and not inst.is_final
    r = ok(inst.send("approve"))
    assert inst.state == "Merged" and inst.is_final
    assert r.configuration == ("Merged",)
    # one history entry for the whole step; the state the step passed through in `via`
    assert (r.from_, r.to, r.via) == ("Review", "Merged", ("Review",))
    assert inst.get("log")[-6:] == [
        "+Approved",
        "-Approved",
        "-Approvals",
        "-Green",
        "-CI",
        "-Review",
    ]
    assert refused(inst.send("done.state.Review")).kind in ("instance_final", "unknown_event")


def test_the_hosts_cannot_send_a_done_event() -> None:
    inst = review().machine().start()
    assert refused(inst.send("done.state.Review")).kind == "unknown_event"
    assert "done.state.Review" not in {e.name for e in inst.accepted_events()}


def two_regions(first_leaves: bool) -> Chart:
    """`e` in both regions; one rule leaves the parallel state (the first region's when
    `first_leaves`), the other stays inside its region."""
    chart = (
        Chart("conflict", {"e": {}})
        .state("P", "parallel", initial=True)
        .state("R1", "compound", parent="P")
        .state("A", parent="R1", initial=True)
        .state("A2", parent="R1")
        .state("R2", "compound", parent="P")
        .state("B", parent="R2", initial=True)
        .state("B2", parent="R2")
        .state("Out")
    )
    if first_leaves:
        return chart.rule("A", "Out", "e").rule("B", "B2", "e")
    return chart.rule("A", "A2", "e").rule("B", "Out", "e")


def test_of_two_conflicting_rules_the_earlier_in_document_order_wins() -> None:
    inst = two_regions(first_leaves=True).machine().start()
    ok(inst.send("e"))
    assert inst.configuration == ("Out",)
    inst = two_regions(first_leaves=False).machine().start()
    ok(inst.send("e"))  # B's rule would leave A's region too: A's, earlier, preempts it
    assert inst.configuration == ("P", "R1", "A2", "R2", "B")


def test_a_descendants_rule_preempts_its_ancestors_conflicting_rule() -> None:
    chart = (
        Chart("nested", {"e": {}})
        .state("P", "parallel", initial=True)
        .state("R1", "compound", parent="P")
        .state("A", parent="R1", initial=True)
        .state("R2", "compound", parent="P")
        .state("B", parent="R2", initial=True)
        .state("B2", parent="R2")
        .state("Out")
        .rule("P", "Out", "e")  # offered by A, which has no `e` rule of its own
        .rule("B", "B2", "e")  # B's own: B is inside P, so this one wins
    )
    inst = chart.machine().start()
    ok(inst.send("e"))
    assert inst.configuration == ("P", "R1", "A", "R2", "B2")


# ---- history -----------------------------------------------------------------------------------


def remembering() -> Chart:
    return (
        Chart("remembering", {"next": {}, "out": {}, "h": {}, "hd": {}})
        .state("Out", initial=True)
        .state("C", "compound")
        .state("C1", "compound", parent="C", initial=True)
        .state("C1a", parent="C1", initial=True)
        .state("C1b", parent="C1")
        .state("C2", parent="C")
        .state("H", "history", parent="C", history="shallow")
        .state("HD", "history", parent="C", history="deep", default="C2")
        .rule("C1a", "C1b", "next")
        .rule("C", "Out", "out")
        .rule("Out", "H", "h")
        .rule("Out", "HD", "hd")
    )


def test_history_without_a_record_enters_its_default() -> None:
    m = remembering().machine()
    inst = m.start()
    ok(inst.send("h"))  # shallow, no default: the parent's initial child
    assert inst.configuration == ("C", "C1", "C1a")
    inst = m.start()
    ok(inst.send("hd"))  # deep, default C2
    assert inst.configuration == ("C", "C2")


def test_shallow_history_restores_the_child_and_deep_history_the_leaves() -> None:
    inst = remembering().machine().start()
    inst.send("h")
    inst.send("next")
    assert inst.configuration == ("C", "C1", "C1b")
    inst.send("out")
    ok(inst.send("h"))  # shallow: C1 again, entered by its initial child
    assert inst.configuration == ("C", "C1", "C1a")
    inst.send("next")
    inst.send("out")
    ok(inst.send("hd"))  # deep: exactly the leaves left
    assert inst.configuration == ("C", "C1", "C1b")


def test_histories_survive_a_snapshot() -> None:
    m = remembering().machine()
    inst = m.start()
    inst.send("h")
    inst.send("next")
    inst.send("out")
    snap = json.loads(inst.snapshot_json())
    assert snap["configuration"] == ["Out"]
    assert snap["histories"] == {"H": ["C1"], "HD": ["C1b"]}
    back = m.restore(snap)
    ok(back.send("hd"))
    assert back.configuration == ("C", "C1", "C1b")


def test_deep_history_restores_a_leaf_in_every_region() -> None:
    chart = (
        Chart("regions", {"a": {}, "b": {}, "away": {}, "back": {}})
        .state("O", "compound", initial=True)
        .state("P", "parallel", parent="O", initial=True)
        .state("R1", "compound", parent="P")
        .state("A1", parent="R1", initial=True)
        .state("A2", parent="R1")
        .state("R2", "compound", parent="P")
        .state("B1", parent="R2", initial=True)
        .state("B2", parent="R2")
        .state("Back", "history", parent="O", history="deep")
        .state("Away")
        .rule("B1", "B2", "b")
        .rule("O", "Away", "away")
        .rule("Away", "Back", "back")
    )
    inst = chart.machine().start()
    inst.send("b")  # only the second region moves
    ok(inst.send("away"))
    assert inst.state == "Away"
    ok(inst.send("back"))
    assert inst.configuration == ("O", "P", "R1", "A1", "R2", "B2")


# ---- raised events, eventless rules, run to completion -----------------------------------------


def retry(limits: Limits | None = None, most: int = 3) -> Machine:
    return (
        Chart("retry", {"start": {}, "poke": {"k": "int"}})
        .state("Idle", initial=True)
        .state("Retry", entry=(add("n"), raise_("poke", k=ctx("n"))))
        .rule("Idle", "Retry", "start")
        .rule("Retry", "Retry", "poke", guard=op("<", event("k"), lit(most)), reenter=True)
        .machine(limits=limits)
    )


def test_raised_events_run_to_completion_inside_one_step() -> None:
    inst = retry().start()
    r = ok(inst.send("start"))
    assert inst.get("n") == 3  # entered three times: the raised poke(k) re-enters while k < 3
    assert inst.seq == 1 and len(inst.history) == 2  # one entry for the whole step
    assert r.to == "Retry"


def test_a_raised_payload_is_checked_against_the_events_fields() -> None:
    chart = (
        Chart("bad", {"go": {}, "poke": {"k": "int"}})
        .state("A", initial=True)
        .state("B")
        .rule("A", "A", "go", do=(raise_("poke", k=lit("not a number")),))
        .rule("A", "B", "poke")
    )
    inst = chart.machine().start()
    before = frozen(inst)
    r = refused(inst.send("go"))
    assert r.kind == "expression_error"
    assert "poke" in r.message
    assert frozen(inst) == before


def test_a_raised_event_is_processed_before_the_next_external_event() -> None:
    chart = (
        Chart("order", {"go": {}, "inner": {}, "outer": {}})
        .state("A", initial=True)
        .state("B")
        .state("C")
        .rule("A", "B", "go", do=(raise_("inner"),))
        .rule("B", "C", "inner", do=(log("inner"),))
        .rule("B", "A", "outer")
    )
    inst = chart.machine().start()
    ok(inst.send("go"))
    assert inst.state == "C" and inst.get("log") == ["inner"]
    assert refused(inst.send("outer")).kind == "event_not_accepted"


def test_eventless_rules_are_tried_after_every_microstep() -> None:
    chart = (
        Chart("count", {"inc": {}})
        .state("Counting", initial=True)
        .state("Done", "final")
        .rule("Counting", "Counting", "inc", do=(add("n"),))
        .rule("Counting", "Done", guard=op(">=", ctx("n"), lit(2)))
    )
    inst = chart.machine().start()
    ok(inst.send("inc"))
    assert inst.state == "Counting"
    r = ok(inst.send("inc"))
    assert inst.state == "Done" and r.via == ("Counting",)


def test_a_step_past_the_microstep_bound_is_refused_and_changes_nothing() -> None:
    # Each microstep re-enters Retry once: `most` pokes need `most` microsteps.
    inst = retry(Limits(max_microsteps=5), most=5).start()
    ok(inst.send("start"))  # 5 microsteps: the bound itself is allowed
    assert inst.get("n") == 5
    inst = retry(Limits(max_microsteps=5), most=6).start()
    before = frozen(inst)
    r = refused(inst.send("start"))
    assert r.kind == "limit_exceeded" and "microsteps" in r.message
    assert frozen(inst) == before


def test_a_raise_loop_is_bounded_by_default() -> None:
    inst = retry(most=10**6).start()
    before = frozen(inst)
    assert refused(inst.send("start")).kind == "limit_exceeded"
    assert frozen(inst) == before
    assert Limits().max_microsteps == 100


# ---- timers ------------------------------------------------------------------------------------


def test_a_compound_timer_runs_while_a_descendant_is_active() -> None:
    clock = FakeClock()
    m = (
        Chart("cook", {"go": {}, "work": {}, "stop": {}})
        .state("Off", initial=True)
        .state("On", "compound")
        .state("Idle", parent="On", initial=True)
        .state("Busy", parent="On")
        .rule("Off", "On", "go")
        .rule("Idle", "Busy", "work")
        .rule("On", "Off", "stop")
        .rule("On", "Off", after_ms=30_000)
        .rule("Busy", "Idle", after_ms=5_000)
        .machine(clock=clock)
    )
    inst = m.start()
    inst.send("go")
    due = clock() + 30
    assert [t["due"].timestamp() for t in inst.timers] == [due]
    clock.advance(10)
    inst.send("work")  # moving inside On keeps On's timer, arms Busy's
    assert sorted(t["due"].timestamp() for t in inst.timers) == [clock() + 5, due]
    clock.advance(5)
    [r] = inst.advance()
    assert ok(r).to == "Idle" and [t["due"].timestamp() for t in inst.timers] == [due]
    inst.send("stop")  # leaving On cancels its timer
    assert inst.timers == []
    inst.send("go")
    clock.advance(30)
    [r] = inst.advance()
    assert ok(r).to == "Off" and inst.timers == []


def test_timers_of_two_regions_due_together_both_fire() -> None:
    clock = FakeClock()
    m = (
        Chart("regions", {})
        .state("P", "parallel", initial=True)
        .state("R1", "compound", parent="P")
        .state("A", parent="R1", initial=True)
        .state("A2", parent="R1")
        .state("R2", "compound", parent="P")
        .state("B", parent="R2", initial=True)
        .state("B2", parent="R2")
        .rule("A", "A2", after_ms=1000)
        .rule("B", "B2", after_ms=1000)
        .machine(clock=clock)
    )
    inst = m.start()
    clock.advance(1)
    assert len(inst.advance()) == 2
    assert inst.configuration == ("P", "R1", "A2", "R2", "B2")


# ---- snapshots ---------------------------------------------------------------------------------


def test_a_statechart_snapshot_restores_its_configuration_and_timers() -> None:
    clock = FakeClock()
    chart = review().rule("Pending", "Green", after_ms=60_000)
    m = chart.machine(clock=clock)
    inst = m.start()
    inst.send("approve")
    snap = json.loads(inst.snapshot_json())
    assert snap["state"] == "Review"
    assert snap["configuration"] == ["Pending", "Approved"]
    back = m.restore(snap, clock=clock)
    assert back.configuration == inst.configuration and back.timers == inst.timers
    clock.advance(60)
    ok(back.advance()[0])
    assert back.state == "Merged"


def test_a_snapshot_without_configuration_enters_the_states_defaults() -> None:
    m = review().machine()
    snap = m.start().snapshot()
    del snap["configuration"], snap["histories"]
    assert m.restore(snap).configuration == ("Review", "CI", "Pending", "Approvals", "Waiting")


def test_a_flat_flows_snapshot_has_no_configuration() -> None:
    m = Chart("flat", {"go": {}}).state("A", initial=True).state("B").rule("A", "B", "go")
    inst = m.machine().start()
    assert "configuration" not in inst.snapshot() and not inst.machine.chart
    r = ok(inst.send("go"))
    assert r.configuration == ("B",) and "configuration" not in r.to_dict()


# ---- loading -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (lambda c: c.state("X", parent="Nowhere"), "unknown parent"),
        (lambda c: c.state("X", parent="Off"), "not a compound or parallel"),
        (lambda c: c.state("E", "compound"), "has no child states"),
        (lambda c: c.state("D", parent="On", initial=True), "exactly one initial child"),
        (lambda c: c.state("H", "history"), "not inside a compound"),
        (lambda c: c.state("H", "history", parent="On", default="Off"), "not a state inside"),
    ],
)
def test_a_malformed_hierarchy_is_refused_at_loading(change: object, words: str) -> None:
    chart = oven()
    change(chart)  # type: ignore[operator]
    with pytest.raises(IRLoadError, match=words):
        Machine(chart.ir())


def test_raising_an_undeclared_event_is_refused_at_loading() -> None:
    chart = Chart("x", {"go": {}}).state("A", initial=True, entry=(raise_("nope"),))
    with pytest.raises(IRLoadError, match="the entry actions of A raises undeclared event 'nope'"):
        Machine(chart.ir())
    chart = Chart("x", {"go": {}}).state("A", initial=True).rule("A", "A", "go", do=(raise_("no"),))
    with pytest.raises(IRLoadError, match="transition #0 raises undeclared event 'no'"):
        Machine(chart.ir())


def test_a_compound_needs_an_initial_child() -> None:
    chart = Chart("x", {}).state("A", "compound", initial=True).state("B", parent="A")
    with pytest.raises(IRLoadError, match="exactly one initial child"):
        Machine(chart.ir())


# ---- the rest of the API -----------------------------------------------------------------------


def test_async_instances_read_the_configuration() -> None:
    import asyncio

    from flowc.runtime.aio import AsyncInstance

    async def scenario() -> tuple[tuple[str, ...], bool]:
        inst = AsyncInstance.start(oven().machine())
        await inst.send("go")
        return inst.configuration, inst.active("On")

    assert asyncio.run(scenario()) == (("On", "Idle"), True)


def test_a_choice_state_inside_a_compound_routes_in_the_same_step() -> None:
    chart = (
        Chart("route", {"go": {"k": "int"}})
        .state("A", initial=True)
        .state("C", "compound")
        .state("Pick", "choice", parent="C", initial=True)
        .state("Low", parent="C")
        .state("High", parent="C")
        .rule("A", "C", "go")
        .rule("Pick", "High", kind="choice", guard=op(">", event("k"), lit(5)))
        .rule("Pick", "Low", kind="else")
    )
    m = chart.machine()
    r = ok(m.start().send("go", {"k": 9}))  # the route reads the event that led there
    assert (r.to, r.via, r.configuration) == ("High", ("Pick",), ("C", "High"))
    assert m.start().send("go", {"k": 1}).to == "Low"  # type: ignore[union-attr]


def test_back_takes_a_backward_rule_of_an_ancestor() -> None:
    chart = (
        Chart("undo", {"go": {}, "work": {}, "stop": {}})
        .state("Off", initial=True)
        .state("On", "compound")
        .state("Idle", parent="On", initial=True)
        .state("Busy", parent="On")
        .rule("Off", "On", "go")
        .rule("Idle", "Busy", "work")
        .rule("On", "Off", "stop", back=True)
    )
    inst = chart.machine().start()
    inst.send("go")
    inst.send("work")
    assert refused(inst.send("stop")).kind == "backward_requires_force"
    r = ok(inst.back(force=True))
    assert r.to == "Off" and inst.configuration == ("Off",)


def test_a_reject_rule_taken_for_a_raised_event_refuses_the_step() -> None:
    chart = (
        Chart("refuse", {"go": {}, "check": {}})
        .state("A", initial=True)
        .state("B")
        .rule("A", "B", "go", do=(raise_("check"), add("n")))
        .rule("B", None, "check", kind="reject", code="not_now")
    )
    inst = chart.machine().start()
    before = frozen(inst)
    r = refused(inst.send("go"))
    assert (r.kind, r.code) == ("reject", "not_now")
    assert frozen(inst) == before


def test_invariants_put_the_configuration_back() -> None:
    ir = oven().ir()
    ir["invariants"] = [{"name": "small", "expr": op("<", ctx("n"), lit(1))}]
    inst = Machine(ir, check_invariants=True).start()
    inst.send("go")
    inst.send("work")
    r = refused(inst.send("ping"))  # Busy's rule counts n up to 1: broken, put back
    assert r.kind == "invariant_violated"
    assert inst.configuration == ("On", "Busy") and inst.get("n") == 0
