"""Graph lint on compound and parallel states: entering a compound enters its initial child,
rules of an ancestor apply in its descendants, histories lead to their defaults; and the
hierarchy's own warnings (W314-W316)."""

from __future__ import annotations

from flowc.compiler import compile_source

REVIEW = """\
flow review
context { notes: int = 0 }
event ci_passed
event approved
event reopen
event close
event comment

initial state Open {
  initial state Drafting { on comment -> Drafting do notes += 1 }
  state Ready
  on ci_passed -> Ready
  on approved -> Checks
  history Back
}

parallel state Checks {
  state CI { initial state Pending { on ci_passed -> Green }  final state Green }
  state Approvals { initial state Waiting { on approved -> Approved }  final state Approved }
  on done.state.Checks -> Merged
  on reopen -> Open.Back
  after 7d -> Open
}

final state Merged
on close -> Merged
"""


def found(source: str) -> list[tuple[str, int]]:
    result = compile_source(source, "h.flow")
    assert not result.errors, result.errors
    return [(d.code, d.span.line) for d in result.diagnostics]


def test_a_hierarchical_flow_without_mistakes_gets_no_warning() -> None:
    # `Ready` has no rule of its own: the rules of `Open` (and outside any state) apply in it.
    # The regions' leaves are entered by entering `Checks`; the history by `reopen`.
    assert found(REVIEW) == []


def test_a_nested_state_nothing_leads_to_is_w314_and_only_that() -> None:
    source = REVIEW.replace("  on ci_passed -> Ready\n", "")
    assert found(source) == [("W314", 11)]


def test_an_untargeted_history_is_w314() -> None:
    source = REVIEW.replace("on reopen -> Open.Back", "on reopen -> Open")
    assert found(source) == [("W314", 14)]


def test_a_nested_state_with_no_way_out_anywhere_above_it_is_w302() -> None:
    source = """\
flow d
event go
initial state A {
  initial state A1 { on go -> A2 }
  state A2
}
"""
    assert ("W302", 5) in found(source)
    # a rule on the parent is a way out of every child
    fixed = source.replace("  state A2\n", "  state A2\n  on go -> DONE\n") + "final state DONE\n"
    assert found(fixed) == []


def test_a_loop_inside_a_compound_state_warns_once_on_the_outermost_state() -> None:
    source = """\
flow d
event go
event stop
initial state S { on go -> L  on stop -> DONE }
state L {
  initial state L1 { on go -> L2 }
  state L2 { on go -> L1 }
}
final state DONE
"""
    assert found(source) == [("W303", 5)]


def test_only_top_level_final_states_end_the_flow() -> None:
    source = """\
flow d
event go
initial state A {
  initial state A1 { on go -> A2 }
  final state A2
}
"""
    assert found(source) == [("W303", 3)]


def test_a_region_that_cannot_complete_is_reported_on_the_done_rule() -> None:
    source = REVIEW.replace("on approved -> Approved", "on approved -> Waiting")
    result = compile_source(source, "h.flow")
    (diag,) = [d for d in result.diagnostics if d.code == "W315"]
    assert diag.span.line == 20
    assert "region `Approvals` can never reach a final child" in diag.message


def test_regions_writing_one_field_on_one_event() -> None:
    source = REVIEW.replace(
        "on ci_passed -> Green }", "on ci_passed -> Green do notes = 1 }"
    ).replace("on approved -> Approved }", "on ci_passed -> Waiting do notes = 2 }")
    codes = [c for c, _ in found(source)]
    assert "W316" in codes
