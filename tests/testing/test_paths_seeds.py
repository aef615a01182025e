"""`flowc paths` on the seed flows and the statechart examples: the generated tests, pasted after
the flow unedited, compile and pass, and take every transition the search reached."""

from __future__ import annotations

from pathlib import Path

import pytest

from flowc.compiler import compile_source
from flowc.compiler.driver import compile_file
from flowc.compiler.testing.coverage import coverage_of
from flowc.compiler.testing.paths import generate
from flowc.compiler.testing.runner import run_file

ROOT = Path(__file__).parents[2]
SEEDS = sorted((ROOT / "flows").glob("*.flow"), key=lambda p: p.stem)
#: Statecharts (compound and parallel states, history, always rules, done events).
EXAMPLES = sorted((ROOT / "flows" / "examples").glob("*.flow"), key=lambda p: p.stem)
#: Transitions lint proves can never fire, which paths lists apart: copies of `skip` rules
#: written outside any state, shadowed in these states by the state's own `skip` rules.
NEVER_FIRE = {"attempt_v2": 4}


def _flow_only(path: Path) -> str:
    """The flow's source without its own tests (a seed's start at the tests banner, an
    example's at its first test)."""
    text = path.read_text(encoding="utf-8")
    end = text.find("\n# ---- tests:")
    return text[: end if end >= 0 else text.index('\ntest "')] + "\n"


@pytest.mark.parametrize("path", SEEDS + EXAMPLES, ids=lambda p: p.stem)
@pytest.mark.parametrize("cover", [False, True], ids=["every-state-and-transition", "cover"])
def test_generated_paths_pass_unedited(path: Path, cover: bool) -> None:
    source = _flow_only(path)
    flow = compile_source(source, str(path)).flow
    assert flow is not None
    report = generate(flow, cover=cover)
    assert report.missing == {}
    assert len(report.cannot_fire) == NEVER_FIRE.get(path.stem, 0), report.cannot_fire
    result = compile_source(source + report.text(), str(path))
    assert result.ok, [str(d) for d in result.errors]
    assert result.flow is not None and result.flow.hash == flow.hash
    run = run_file(result)
    failures = [(o.name, o.failure) for o in run.outcomes if o.failure is not None]
    assert not failures
    assert len(run.outcomes) == len(report.tests)
    covered = coverage_of(path.name, flow, (i for o in run.outcomes for i in o.fired))
    # What the search could not take is exactly what lint proves can never fire.
    assert covered.covered == covered.total
    assert {t.index for t in covered.never_fire()} == set(report.cannot_fire)


def test_the_seeds_own_tests_start_at_the_banner() -> None:
    for path in SEEDS:
        result = compile_file(path)
        assert result.symbols is not None
        banner = (
            path.read_text(encoding="utf-8")
            .splitlines()
            .index(
                next(
                    line
                    for line in path.read_text().splitlines()
                    if line.startswith("# ---- tests:")
                )
            )
        )
        assert all(t.span.line > banner for t in result.symbols.tests)
