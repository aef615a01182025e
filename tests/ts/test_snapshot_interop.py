"""TS -> Python snapshot interop (issue 29 item 2): the TypeScript runtime runs every shared
vector (runtime-ts/test/vectors/) to the op where the Python runtime took its snapshot and
writes its own snapshot there; the Python runtime restores each and runs the rest of the
vector, every outcome matching what the vector recorded. (Python -> TS is
runtime-ts/test/vectors.test.ts: the TypeScript runtime restores the Python snapshots.)"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

# The Python runtime's own replay of the vectors (the vectors' helper's test module).
from testing.test_vectors import _run_ops

from flowc.runtime import FakeClock, Machine

from .node import VECTORS, interop_lines


@pytest.fixture(scope="module")
def ts_snapshots() -> dict[tuple[str, str], dict[str, Any]]:
    return interop_lines("snapshots.ts")


def _cases() -> list[Any]:
    cases = []
    for path in VECTORS:
        data = json.loads(path.read_text(encoding="utf-8"))
        for vector in data["vectors"]:
            if vector["ops"]:
                cases.append(pytest.param(path, vector["name"], id=f"{path.stem}:{vector['name']}"))
    return cases


@pytest.mark.parametrize(("path", "name"), _cases())
def test_a_typescript_snapshot_restores_and_runs_on_in_python(
    ts_snapshots: dict[tuple[str, str], dict[str, Any]], path: Path, name: str
) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    vector = next(v for v in data["vectors"] if v["name"] == name)
    item = ts_snapshots[path.name, name]
    if vector["start"]["line"].get("ok") is False:
        assert item["snapshot"] is None
        return
    after = item["after"]
    ops = vector["ops"]
    now = vector["now"] + sum(op["ms"] for op in ops[:after] if op["op"] == "advance")
    clock = FakeClock(now / 1000)
    instance = Machine(data["ir"]).restore(item["snapshot"], clock=clock)
    _run_ops(instance, clock, ops[after:], f"{name} (TS snapshot after op {after})")
