"""Both runtimes run the same scenarios and answer the same, line for line: what the shared
vectors do not exercise (idempotency keys, reasons and bad arguments, refusals of `goto` and
`back`, raised events, computed delays, done data, initial rules, deep history, a routing
loop, the microstep bound), each compiled here and run on the Python runtime and on the
TypeScript one (runtime-ts/test/interop/scenarios.ts), with the final snapshots compared."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from testing.test_vectors import _apply

from flowc.compiler import compile_source
from flowc.runtime import FakeClock, Instance, Machine, Rejection
from flowc.runtime.lines import outcome_line

from .node import run_script
from .scenarios import CASES, Case

NOW = 1_735_689_600_000


def _ir(case: Case) -> dict[str, Any]:
    result = compile_source(case.source, f"{case.name}.flow")
    assert result.flow is not None and not result.errors, [str(d) for d in result.errors]
    ir: dict[str, Any] = json.loads(result.flow.to_json())  # (as `flowc compile` writes it)
    if case.patch is not None:
        case.patch(ir)
    return ir


def _observed(instance: Instance, line: dict[str, Any]) -> dict[str, Any]:
    return json.loads(
        json.dumps(
            {
                "line": line,
                "state": instance.state,
                "configuration": list(instance.configuration),
                "context": instance.context,
                "final": instance.is_final,
            },
            default=repr,
        )
    )


def _python(ir: dict[str, Any], case: Case) -> dict[str, Any]:
    clock = FakeClock(NOW / 1000)
    started = Machine(ir, check_invariants=case.check_invariants).try_start(
        case.context, clock=clock
    )
    if isinstance(started, Rejection):
        return {"name": case.name, "seen": [started.to_dict()], "snapshot": None}
    seen: list[Any] = [
        _observed(started, {"ok": True, "kind": "start", "to": started.state, "seq": 0})
    ]
    for op in case.ops:
        outcomes = _apply(started, clock, op)
        seen.append([_observed(started, outcome_line(o, started)) for o in outcomes])
    snapshot = json.loads(json.dumps(started.snapshot()))
    return {"name": case.name, "seen": seen, "snapshot": snapshot}


@pytest.fixture(scope="module")
def answers(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    irs = {case.name: _ir(case) for case in CASES}
    file: Path = tmp_path_factory.mktemp("scenarios") / "cases.json"
    cases = [
        {
            "name": c.name,
            "ir": irs[c.name],
            "context": c.context,
            "now": NOW,
            "ops": c.ops,
            "checkInvariants": c.check_invariants,
        }
        for c in CASES
    ]
    file.write_text(json.dumps(cases), encoding="utf-8")
    ts = {item["name"]: item for item in run_script("scenarios.ts", [file])}
    return {"irs": irs, "ts": ts}


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_both_runtimes_answer_the_same(answers: dict[str, Any], case: Case) -> None:
    want = _python(answers["irs"][case.name], case)
    got = answers["ts"][case.name]
    for number, (mine, theirs) in enumerate(zip(got["seen"], want["seen"], strict=True)):
        assert mine == theirs, f"{case.name}: {'the start' if number == 0 else f'op {number}'}"
    assert got["snapshot"] == want["snapshot"]
