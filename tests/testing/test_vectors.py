"""`flowc vectors`: the committed shared vectors (runtime-ts/test/vectors/) are what the
command writes today, and a small runner of its own, built on the runtime's public API only,
replays every vector and gets every expectation, from the start and from the snapshot."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flowc.compiler.cli import main
from flowc.runtime import FakeClock, Instance, Machine, Rejection, StepResult
from flowc.runtime.instance import Outcome
from flowc.runtime.lines import outcome_line, start_line

ROOT = Path(__file__).parents[2]
VECTORS = ROOT / "runtime-ts" / "test" / "vectors"
#: The inputs the committed vectors are generated from (runtime-ts/VECTORS.md).
INPUTS = ["flows", "tests", "examples"]


@pytest.fixture
def at_root() -> Iterator[None]:
    here = Path.cwd()
    os.chdir(ROOT)
    try:
        yield
    finally:
        os.chdir(here)


def test_the_committed_vectors_are_up_to_date(
    at_root: None, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["vectors", *INPUTS, "-o", str(VECTORS), "--check", "--skip-errors"])
    assert code == 0, capsys.readouterr().err


# ---- an independent replay ------------------------------------------------------------------


def _files() -> list[Path]:
    return sorted(VECTORS.glob("*.vectors.json"))


def test_every_input_flow_has_vectors() -> None:
    names = {p.name for p in _files()}
    flows = {f"{p.stem}.vectors.json" for folder in INPUTS for p in (ROOT / folder).rglob("*.flow")}
    assert flows <= names
    assert sum(len(json.loads(p.read_text())["vectors"]) for p in _files()) >= 200


def _observed(instance: Instance, line: dict[str, Any], outcome: Outcome | None) -> dict[str, Any]:
    """What a vector's EXPECT states, read off the instance and the outcome."""
    effects = outcome.effects if isinstance(outcome, StepResult) else []
    if outcome is None:
        effects = instance.start_effects
    out = {
        "line": json.loads(json.dumps(line, ensure_ascii=False, default=repr)),
        "state": instance.state,
        "configuration": list(instance.configuration),
        "context": instance.context,
        "final": instance.is_final,
        "effects": effects,
    }
    if isinstance(outcome, StepResult) and instance.machine.journals:
        out["journals"] = outcome.journals()
    return out


def _apply(instance: Instance, clock: FakeClock, op: dict[str, Any]) -> list[Outcome]:
    kind = op["op"]
    if kind == "send":
        return [
            instance.send(
                op["event"], op["payload"], force=op["force"], reason=op["reason"], key=op["key"]
            )
        ]
    if kind == "goto":
        return [instance.goto(op["target"], force=op["force"], reason=op["reason"])]
    if kind == "back":
        return [instance.back(force=op["force"], reason=op["reason"])]
    assert kind == "advance", kind
    clock.ms += op["ms"]
    return instance.advance()


def _run_ops(instance: Instance, clock: FakeClock, ops: list[dict[str, Any]], where: str) -> None:
    for number, op in enumerate(ops, 1):
        outcomes = _apply(instance, clock, op)
        got = [_observed(instance, outcome_line(o, instance), o) for o in outcomes]
        expected = op["expect"] if op["op"] == "advance" else [op["expect"]]
        assert got == expected, f"{where}, op {number} ({op['op']})"


def _replay(machine: Machine, vector: dict[str, Any]) -> None:
    where = f"{machine.name}: {vector['name']!r}"
    clock = FakeClock(vector["now"] / 1000)
    started = machine.try_start(vector["context"], clock=clock)
    if isinstance(started, Rejection):
        assert {"line": started.to_dict()} == vector["start"], where
        return
    assert _observed(started, start_line(started), None) == vector["start"], where
    _run_ops(started, clock, vector["ops"], where)
    # From the snapshot: restored on a clock at the time it was taken, the rest runs the same.
    snapshot = vector["snapshot"]
    after = snapshot["after"]
    elapsed = sum(op["ms"] for op in vector["ops"][:after] if op["op"] == "advance")
    clock = FakeClock((vector["now"] + elapsed) / 1000)
    restored = machine.restore(snapshot["data"], clock=clock)
    _run_ops(restored, clock, vector["ops"][after:], f"{where} (restored after op {after})")


@pytest.mark.parametrize("path", _files(), ids=lambda p: p.name.split(".")[0])
def test_the_runtime_replays_every_vector(path: Path) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["format"] == "flowc.vectors/1"
    machine = Machine.from_json(json.dumps(data["ir"]))
    assert machine.name == data["flow"]
    assert (ROOT / data["source"]).is_file()
    for vector in data["vectors"]:
        _replay(machine, vector)
