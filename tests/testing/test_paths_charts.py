"""`flowc paths` and `flowc explore` on statecharts: configurations (active leaves and recorded
histories) are what the search tells apart, moves are those of every active leaf with the rules
its ancestors give it, and the tests written expect each active leaf."""

from __future__ import annotations

from pathlib import Path

import pytest

from flowc.compiler import compile_source
from flowc.compiler.cli import main
from flowc.compiler.testing.coverage import coverage_of
from flowc.compiler.testing.explore import explore
from flowc.compiler.testing.paths import generate
from flowc.compiler.testing.runner import run_file
from flowc.compiler.testing.space import Explorer, configuration_text
from flowc.runtime.model import CompiledFlow

CHART = Path(__file__).parent / "flows" / "chart.flow"


def _compile(text: str) -> CompiledFlow:
    flow = compile_source(text, "chart.flow").flow
    assert flow is not None
    return flow


def test_paths_reach_every_state_and_take_every_rule_of_a_chart() -> None:
    source = CHART.read_text(encoding="utf-8")
    flow = _compile(source)
    report = generate(flow)
    assert report.missing == {} and report.unreached == {}
    text = report.text()
    # A rule on the compound is taken in its leaf; so is its `reject`.
    assert 'test "takes #0 work: poke reject too_big" {\n  send poke(n: 3)\n' in text
    assert (
        'test "takes #1 work: poke -> work" {\n  send poke(n: 0)\n  expect state draft\n}' in text
    )
    # A parallel state: one expectation per region's leaf; its completion event is taken.
    assert (
        'test "takes #8 away: finish -> gate" {\n  send leave\n  send finish\n'
        "  expect state pending\n  expect state waiting\n}"
    ) in text
    assert 'test "takes #9 gate: done.state.gate -> settle"' in text
    # A compound state is reached when one of its leaves is: both are expected.
    assert 'test "reaches gate" {\n  send leave\n  send finish\n  expect state gate\n' in text
    # States passed through are not rested in: no `reaches` test for them.
    assert 'reaches settle"' not in text and 'reaches check"' not in text
    assert 'reaches last"' not in text
    result = compile_source(source + text, "chart.flow")
    assert result.ok and result.flow is not None and result.flow.hash == flow.hash
    run = run_file(result)
    assert [(o.name, o.failure) for o in run.outcomes if o.failure is not None] == []
    fired = (i for o in run.outcomes for i in o.fired)
    assert coverage_of("chart.flow", flow, fired).percent == 100.0


def test_the_search_tells_configurations_apart_by_what_history_recorded() -> None:
    flow = _compile(CHART.read_text(encoding="utf-8"))
    search = Explorer(flow).search(abstract=True)
    away = {node.key[0] for node in search.nodes.values() if node.where == "away"}
    # Left from draft or from review: `resume` returns to different leaves.
    assert away == {"away | last=draft", "away | last=review"}
    resumed = {
        configuration_text(node.instance)
        for node in search.nodes.values()
        if node.moves() and node.moves()[-1].text() == "send resume"
    }
    assert resumed == {"work.draft", "work.review"}


STUCK = """flow stuck
event ok_a
event ok_b
event quit
invariant few: n < 2
context { n: int = 0 }
initial parallel state both {
  state a { initial state a1 { on ok_a -> a2 do n += 1 }  state a2 { } }
  state b {
    initial state b1 { on ok_b -> b2 do n += 1  on quit -> b3 }
    state b2 { }
    state b3 { }
  }
}
"""


def test_explore_names_a_chart_configuration_by_its_leaves_paths(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "stuck.flow"
    path.write_text(STUCK, encoding="utf-8")
    assert main(["explore", str(path)]) == 1
    out = capsys.readouterr().out
    assert "invariant `few` broken in configuration both.a.a2 + both.b.b2 after 2 moves" in out
    assert "  send ok_a\n  send ok_b\n  expect state a2\n  expect state b2\n" in out
    assert "deadlock: in configuration both.a.a2 + both.b.b3 no move is accepted" in out
    report = explore(_compile(STUCK))
    # The reproducers, pasted after the flow, fail (the invariant) or pass (the deadlock).
    for finding in report.findings:
        result = compile_source(STUCK + finding.test.text(), "stuck.flow")
        assert result.ok
        (outcome,) = run_file(result).outcomes
        assert (outcome.failure is None) == (finding.kind == "deadlock")


BOOT = """flow boot
event go
initial state outer {
  initial state booting { always -> ready }
  state ready { on go -> done }
  final state done
  on done.state.outer -> over
}
final state over
"""


def test_rules_taken_at_the_start_and_states_passed_in_a_step_count() -> None:
    flow = _compile(BOOT)
    report = generate(flow, cover=True)
    # `booting` is left at the start by its eventless rule, `done` entered and left in the
    # step that took `go`: both are reached, neither is rested in.
    assert report.missing == {} and report.unreached == {}
    result = compile_source(BOOT + report.text(), "boot.flow")
    run = run_file(result)
    assert [o.failure for o in run.outcomes] == [None] * len(report.tests)
    fired = {i for o in run.outcomes for i in o.fired}
    assert fired == {0, 1, 2}
