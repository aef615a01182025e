"""Rules that can never fire: W318 (a rule outside any state that every state's own rules
beat), W319 (a timer a shorter one always beats out of its state), and `flowc paths`, which
lists such rules apart and needs no test for them."""

from __future__ import annotations

from pathlib import Path

import pytest

from flowc.compiler import compile_source
from flowc.compiler.cli import main
from flowc.compiler.diagnostics import Diagnostic
from flowc.compiler.testing.paths import generate

ROOT = Path(__file__).parents[2]


def lint_of(source: str) -> list[Diagnostic]:
    result = compile_source(source, "demo.flow")
    assert not result.errors, [str(d) for d in result.errors]
    return [d for d in result.diagnostics if d.code in ("W305", "W318", "W319")]


SKIPS = """flow demo
enum Mode { BEGINNER, EXPERT }
context { mode: Mode = BEGINNER }
event skip
event next
initial state A {
  on skip if mode == EXPERT -> B
  on next -> B
}
state B {
  on skip -> DONE
  on next -> DONE
}
final state DONE
on skip if mode == BEGINNER reject not_allowed "no"
on skip reject not_available "no"
"""


def test_w318_rule_outside_states_beaten_in_every_state() -> None:
    found = lint_of(SKIPS)
    assert [(d.code, d.span.line, d.span.column) for d in found] == [("W318", 16, 1)]
    assert "(`A`, `B`)" in found[0].message


def test_w318_silent_when_one_state_lets_the_rule_fire() -> None:
    source = SKIPS.replace("state B {\n  on skip -> DONE\n", "state B {\n")
    assert lint_of(source) == []


def test_w318_silent_for_a_rule_an_earlier_rule_outside_states_beats() -> None:
    # That is W305's finding, reported once at the rule.
    source = SKIPS.replace("on skip if mode == BEGINNER reject", "on skip reject")
    assert [d.code for d in lint_of(source)] == ["W305"]


TIMERS = """flow demo
event go
initial state WAIT {
  on go -> DONE
  after 5m -> LATE
  after 10m -> DONE
}
state LATE { on go -> DONE }
final state DONE
"""


def test_w319_a_shorter_unguarded_timer_leaves_first() -> None:
    found = lint_of(TIMERS)
    assert [(d.code, d.span.line, d.span.column) for d in found] == [("W319", 6, 3)]
    assert "`after 5m` at line 5 always fires first and leaves `WAIT`" in found[0].message


def test_w319_order_written_does_not_matter() -> None:
    source = TIMERS.replace(
        "  after 5m -> LATE\n  after 10m -> DONE\n", "  after 10m -> DONE\n  after 5m -> LATE\n"
    )
    assert [(d.code, d.span.line) for d in lint_of(source)] == [("W319", 5)]


@pytest.mark.parametrize(
    "shorter",
    [
        "after 5m -> self",  # internal: repeats, the other timers keep running
        "after 5m if false_alarm -> LATE",  # guarded: may not fire
        "after wait_s s -> LATE",  # computed: which fires first is known only at run time
    ],
)
def test_w319_not_starved(shorter: str) -> None:
    source = TIMERS.replace("after 5m -> LATE", shorter).replace(
        "event go", "context { false_alarm: bool = false\n wait_s: int = 1 }\nevent go"
    )
    assert [d for d in lint_of(source) if d.code == "W319"] == []


def test_w319_reenter_restarts_the_longer_timer() -> None:
    source = TIMERS.replace("after 5m -> LATE", "after 5m -> self reenter")
    found = lint_of(source)
    assert [d.code for d in found] == ["W319"]
    assert "re-enters `WAIT`" in found[0].message


CHART = """flow demo
event go
initial state OUTER {
  initial state INNER {
    after 10m -> OTHER
    on go -> OTHER
  }
  state OTHER { on go -> DONE }
  after 5m TARGET
}
final state DONE
"""


@pytest.mark.parametrize(
    ("outer", "starved"),
    [("after 5m -> DONE", True), ("after 5m -> OTHER", False), ("after 5m -> self", False)],
)
def test_w319_a_parent_timer_leaving_the_parent_starves_a_child_timer(
    outer: str, starved: bool
) -> None:
    found = lint_of(CHART.replace("after 5m TARGET", outer))
    assert [d.code for d in found] == (["W319"] if starved else [])


def test_a_state_reached_only_by_a_starved_timer_is_unreachable() -> None:
    source = TIMERS.replace(
        "after 5m -> LATE\n  after 10m -> DONE", "after 5m -> DONE\n  after 10m -> LATE"
    )
    result = compile_source(source, "demo.flow")
    assert sorted(d.code for d in result.diagnostics) == ["W301", "W319"]


def test_paths_lists_rules_that_can_never_fire_apart() -> None:
    source = SKIPS.replace("final state DONE", "state WAIT { after 1s -> DONE }\nfinal state DONE")
    flow = compile_source(source, "demo.flow").flow
    assert flow is not None
    report = generate(flow, cover=True)
    assert report.missing == {}
    reasons = {flow.transitions[i].source: why for i, why in report.cannot_fire.items()}
    assert "the transition on `skip` at line 11 has no guard" in reasons["B"]
    assert "cover every member of `Mode`" in reasons["A"]
    assert "can never be reached" in reasons["WAIT"]


def test_paths_cover_on_the_readme_example_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["paths", "--cover", str(ROOT / "flows" / "attempt_v2.flow")]) == 0
    out = capsys.readouterr().out
    assert "# not generated" not in out
    assert out.count("# can never fire: ") == 4
    assert (
        "# can never fire: UNDERSTAND: skip reject skip_not_available (rule outside any state): "
        "the earlier rules on its trigger cover every member of `Mode`"
    ) in out
