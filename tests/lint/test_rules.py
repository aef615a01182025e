"""Each lint rule on a flow that triggers it and on one that does not."""

from __future__ import annotations

import pytest

from flowc.compiler.diagnostics import Diagnostic, Severity
from flowc.compiler.lint import lint

from .irbuild import FlowBuilder, assign, ctx, lit, op


def codes(builder: FlowBuilder) -> list[str]:
    return [d.code for d in run(builder)]


def run(builder: FlowBuilder) -> list[Diagnostic]:
    flow, source = builder.build()
    return lint(flow, source, builder.source_map(flow))


def pipeline() -> FlowBuilder:
    """A -> B -> DONE, driven by events, nothing to complain about."""
    b = FlowBuilder().event("next")
    b.state("A", initial=True).state("B").state("DONE", "final")
    return b.on("A", "next", "B").on("B", "next", "DONE")


def test_clean_pipeline_has_no_diagnostics() -> None:
    assert run(pipeline()) == []


# ---- W301 -------------------------------------------------------------------------------------


def test_w301_unreachable_state() -> None:
    b = pipeline().state("ORPHAN").go("ORPHAN", "DONE")
    diags = run(b)
    assert [d.code for d in diags] == ["W301"]
    assert "`ORPHAN`" in diags[0].message
    assert diags[0].file == "demo.flow"
    assert diags[0].severity is Severity.WARNING


def test_w301_reached_only_through_a_dead_transition() -> None:
    b = pipeline().state("LATE").go("A", "LATE", guard=lit(False)).go("LATE", "DONE")
    assert sorted(codes(b)) == ["W301", "W309"]


def test_w301_not_for_self_loops_or_reachable_states() -> None:
    b = pipeline().on("A", "next", "A", guard=ctx("x")).field("x")
    assert "W301" not in codes(b)


# ---- W302 -------------------------------------------------------------------------------------


def test_w302_dead_end() -> None:
    b = pipeline().event("detour").state("STUCK").on("A", "detour", "STUCK")
    b.on("STUCK", "next", "STUCK")  # staying put is not a way out
    assert codes(b) == ["W302"]


def test_w302_not_for_final_states_or_states_with_an_exit() -> None:
    assert "W302" not in codes(pipeline())


# ---- W303 -------------------------------------------------------------------------------------


def test_w303_trap_loop_cannot_finish() -> None:
    b = pipeline().event("detour").state("X").state("Y")
    b.on("A", "detour", "X")
    b.on("X", "next", "Y").on("Y", "next", "X")
    diags = run(b)
    assert [d.code for d in diags] == ["W303", "W303"]
    assert {d.message.split("`")[1] for d in diags} == {"X", "Y"}


def test_w303_flow_without_final_state_warns_once() -> None:
    b = FlowBuilder().event("tick").state("A", initial=True).state("B")
    b.on("A", "tick", "B").on("B", "tick", "A")
    diags = run(b)
    assert [d.code for d in diags] == ["W303"]
    assert "no final state" in diags[0].message


def test_w303_not_when_a_final_state_is_reachable() -> None:
    b = pipeline().on("B", "next", "A", guard=ctx("again")).field("again")
    assert "W303" not in codes(b)


# ---- E304 -------------------------------------------------------------------------------------


def routing(loop: bool) -> FlowBuilder:
    b = FlowBuilder().field("n").event("go")
    b.state("A", initial=True).state("R1", "choice").state("R2", "choice").state("DONE", "final")
    b.on("A", "go", "R1")
    b.go("R1", "R2", "choice", guard=op(">", ctx("n"), lit(1)))
    b.go("R1", "DONE", "else")
    b.go("R2", "R1" if loop else "A", "choice", guard=op("<", ctx("n"), lit(5)))
    b.go("R2", "DONE", "else", actions=(assign("n", lit(0)),))
    return b


def test_e304_routing_cycle_is_an_error() -> None:
    diags = run(routing(loop=True))
    assert [d.code for d in diags] == ["E304"]
    assert diags[0].severity is Severity.ERROR
    assert "`R1` -> `R2` -> `R1`" in diags[0].message


def test_e304_not_for_routing_that_ends_in_a_waiting_state() -> None:
    assert codes(routing(loop=False)) == []


def test_e304_choice_routing_to_itself() -> None:
    b = FlowBuilder().field("n").state("R", "choice", initial=True).state("DONE", "final")
    b.go("R", "R", "choice", guard=op("<", ctx("n"), lit(3)), actions=(assign("n", lit(1), "add"),))
    b.go("R", "DONE", "else")
    assert codes(b) == ["E304"]


# ---- W305 / W306 ------------------------------------------------------------------------------


def test_w305_unguarded_transition_shadows_later_ones() -> None:
    b = pipeline().state("OTHER").on("A", "next", "OTHER").go("OTHER", "DONE")
    diags = run(b)
    assert "W305" in [d.code for d in diags]
    w305 = next(d for d in diags if d.code == "W305")
    assert "line" in w305.message and "`next`" in w305.message


def test_w305_unguarded_refusal_shadows_too() -> None:
    b = FlowBuilder().event("go").state("A", initial=True).state("DONE", "final")
    b.go("A", None, "reject", event="go")
    b.on("A", "go", "DONE")
    assert "W305" in codes(b)


def test_w305_not_when_the_earlier_one_is_guarded() -> None:
    b = FlowBuilder().event("next").field("ok").state("A", initial=True).state("DONE", "final")
    b.on("A", "next", "DONE", guard=ctx("ok")).on("A", "next", "A")
    assert codes(b) == []


def test_w305_not_for_a_state_rule_overriding_an_inherited_one() -> None:
    b = pipeline().event("cancel").state("CANCELLED", "final")
    b.on("A", "cancel", "DONE")
    rule_line = b.line("on cancel -> CANCELLED")
    for name in ("A", "B"):
        b.on(name, "cancel", "CANCELLED", inherited=True, line=rule_line)
    assert codes(b) == []


def test_w305_between_two_global_rules_is_reported_once() -> None:
    b = pipeline().event("cancel").state("CANCELLED", "final")
    first = b.line("on cancel -> CANCELLED")
    second = b.line("on cancel -> DONE")
    for name in ("A", "B"):
        b.on(name, "cancel", "CANCELLED", inherited=True, line=first)
        b.on(name, "cancel", "DONE", inherited=True, line=second)
    assert codes(b) == ["W305"]


def test_w305_constant_true_choice_shadows_else() -> None:
    b = FlowBuilder().state("R", "choice", initial=True).state("X", "final").state("Y", "final")
    b.go("R", "X", "choice", guard=op("<", lit(1), lit(2))).go("R", "Y", "else")
    assert sorted(codes(b)) == ["W301", "W305", "W309"]


def test_w306_duplicate_transition() -> None:
    guard = op(">", ctx("n"), lit(2))
    b = FlowBuilder().event("next").field("n").state("A", initial=True).state("DONE", "final")
    b.on("A", "next", "DONE", guard=guard).on("A", "next", "DONE", guard=guard)
    diags = run(b)
    assert [d.code for d in diags] == ["W306"]
    assert "duplicate" in diags[0].message


def test_w306_same_guard_other_target_never_fires() -> None:
    guard = op(">", ctx("n"), lit(2))
    b = FlowBuilder().event("next").field("n").state("A", initial=True)
    b.state("B", "final").state("C", "final")
    b.on("A", "next", "B", guard=guard).on("A", "next", "C", guard=guard)
    diags = run(b)
    assert "W306" in [d.code for d in diags]
    assert "never fires" in next(d for d in diags if d.code == "W306").message


def test_w306_not_for_different_guards_or_events() -> None:
    b = FlowBuilder().event("next").event("other").field("n").state("A", initial=True)
    b.state("DONE", "final")
    b.on("A", "next", "DONE", guard=op(">", ctx("n"), lit(2)))
    b.on("A", "next", "DONE", guard=op(">", ctx("n"), lit(3)))
    b.on("A", "other", "DONE", guard=op(">", ctx("n"), lit(2)))
    assert codes(b) == []


# ---- W307 -------------------------------------------------------------------------------------


def phases(back_target: str) -> FlowBuilder:
    b = FlowBuilder().state("RECEIVED", initial=True).state("ANALYZING").state("ANSWERED")
    b.state("SIDE").state("FROZEN", "final")
    b.go("RECEIVED", "ANALYZING").go("ANALYZING", "ANSWERED").go("ANSWERED", "FROZEN")
    b.go("RECEIVED", "SIDE").go("SIDE", "FROZEN")
    return b.go("ANSWERED", back_target, back=True)


def test_w307_back_edge_to_a_state_that_is_not_before() -> None:
    diags = run(phases("SIDE"))
    assert [d.code for d in diags] == ["W307"]
    assert "`SIDE`" in diags[0].message


def test_w307_not_for_real_back_edges() -> None:
    assert codes(phases("ANALYZING")) == []
    assert codes(phases("RECEIVED")) == []
    assert codes(phases("ANSWERED")) == []  # back to itself: trivially before


# ---- W308 -------------------------------------------------------------------------------------


def reminders(guarded: bool) -> FlowBuilder:
    b = FlowBuilder().event("answer").field("sent")
    b.state("WAITING", initial=True).state("REMIND").state("DONE", "final")
    guard = op("<", ctx("sent"), lit(3)) if guarded else None
    b.go("WAITING", "REMIND", "timer", after_ms=86_400_000, guard=guard)
    b.go("REMIND", "WAITING", "timer", after_ms=1000, actions=(assign("sent", lit(1), "add"),))
    b.on("WAITING", "answer", "DONE").on("REMIND", "answer", "DONE")
    return b


def test_w308_timer_loop_without_any_guard() -> None:
    diags = run(reminders(guarded=False))
    assert [d.code for d in diags] == ["W308"]
    assert "`WAITING` -> `REMIND` -> `WAITING`" in diags[0].message


def test_w308_not_when_a_guard_bounds_the_loop() -> None:
    assert codes(reminders(guarded=True)) == []


def test_w308_timer_self_loop() -> None:
    b = FlowBuilder().event("stop").state("POLL", initial=True).state("DONE", "final")
    b.go("POLL", "POLL", "timer", after_ms=60_000).on("POLL", "stop", "DONE")
    assert codes(b) == ["W308"]


def test_w308_not_for_event_driven_loops() -> None:
    """Seed 004's shape: unguarded retries and a self-loop, all driven by the user."""
    b = FlowBuilder().event("submit").event("retry").event("passed")
    b.state("IMPLEMENT", initial=True).state("VERIFY").state("COMPLETE", "final")
    b.on("IMPLEMENT", "submit", "VERIFY").on("VERIFY", "retry", "IMPLEMENT")
    b.on("VERIFY", "passed", "COMPLETE").on("VERIFY", "submit", "VERIFY")
    assert codes(b) == []


def test_w308_not_for_else_loops() -> None:
    """`poll until ready`: the loop goes through `else`, which is a condition."""
    b = FlowBuilder().field("ready").state("WAIT", initial=True).state("CHECK", "choice")
    b.state("DONE", "final")
    b.go("WAIT", "CHECK", "timer", after_ms=1000)
    b.go("CHECK", "DONE", "choice", guard=ctx("ready")).go("CHECK", "WAIT", "else")
    assert codes(b) == []


# ---- W309 -------------------------------------------------------------------------------------


def test_w309_constant_guards() -> None:
    b = FlowBuilder().event("go").field("x").state("A", initial=True).state("DONE", "final")
    b.on("A", "go", "A", guard=op("or", ctx("x"), lit(True)))
    b.on("A", "go", "DONE", guard=op("and", op("<", lit(2), lit(1)), ctx("x")))
    diags = [d for d in run(b) if d.code == "W309"]
    assert len(diags) == 2
    assert "`x or true` is always true" in diags[0].message
    assert "`2 < 1 and x` is always false" in diags[1].message


def test_w309_not_for_guards_that_depend_on_data() -> None:
    b = FlowBuilder().event("go").field("x").state("A", initial=True).state("DONE", "final")
    b.on("A", "go", "DONE", guard=op("and", lit(True), op(">", ctx("x"), lit(1))))
    assert codes(b) == []


# ---- W310 / W311 / W312 -----------------------------------------------------------------------


def test_w310_unused_event() -> None:
    diags = run(pipeline().event("never"))
    assert [d.code for d in diags] == ["W310"]
    assert diags[0].span.line == len(pipeline().lines) + 1
    assert diags[0].span.column == len("event ") + 1


def test_w310_event_used_only_by_a_refusal_counts_as_used() -> None:
    b = pipeline().event("poke").go("A", None, "reject", event="poke")
    assert codes(b) == []


def test_w311_unused_enum_and_used_enum() -> None:
    from flowc.runtime.model import TypeRef

    b = pipeline().enum("Color", "RED", "BLUE").enum("Mode", "A", "B")
    b.field("mode", TypeRef(kind="optional", item=TypeRef(kind="enum", name="Mode")), None)
    b.on("A", "next", "A", guard=op("==", ctx("mode"), lit("A")))
    diags = [d for d in run(b) if d.code == "W311"]
    assert len(diags) == 1 and "`Color`" in diags[0].message


def test_w312_unused_context_field() -> None:
    b = pipeline().field("read").field("written").field("forgotten").field("in_entry")
    b.on("A", "next", "A", guard=op(">", ctx("read"), lit(0)), actions=(assign("written", lit(1)),))
    b.states[1] = b.states[1].model_copy(update={"entry": (assign("x", ctx("in_entry")),)})
    diags = [d for d in run(b) if d.code == "W312"]
    assert [d.message.split("`")[1] for d in diags] == ["forgotten"]


def test_w312_field_named_in_a_template_is_used() -> None:
    b = pipeline().field("round")
    flow, source = b.build()
    done = "Done after {{ context.round }} rounds"
    flow = flow.model_copy(update={"messages": {"instance_final": done}})
    assert lint(flow, source) == []


@pytest.mark.parametrize(
    ("template", "unused"),
    [
        ("{{ context['round'] }}", []),
        ("{{ context | tojson }}", []),
        ("{% for k in context %}{{ k }}{% endfor %}", []),
        ("{{ state.title }} {{ round }}", ["round"]),  # neither reads the field `round`
        ("{{ context.other }}", ["round"]),
    ],
)
def test_w312_reads_context_the_way_templates_do(template: str, unused: list[str]) -> None:
    b = pipeline().field("round")
    flow, source = b.build()
    flow = flow.model_copy(update={"messages": {"instance_final": template}})
    found = [d.message for d in lint(flow, source) if d.code == "W312"]
    assert [m.split("`")[1] for m in found] == unused
