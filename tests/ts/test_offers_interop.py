"""What an instance offers without taking a step agrees in both runtimes: along every shared
vector, after the start and after each operation, the TypeScript runtime's
`acceptedEvents()` and `allowedTargets()` (with and without force) name what the Python
runtime's `accepted_events()` and `allowed_targets()` name, in the same order, and the flow's
named templates render to the same text (`render(name)`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from testing.test_vectors import _apply

from flowc.runtime import FakeClock, Instance, Machine

from .node import VECTORS, interop_lines


@pytest.fixture(scope="module")
def ts_offers() -> dict[tuple[str, str], dict[str, Any]]:
    return interop_lines("offers.ts")


def _rendered(instance: Instance, name: str) -> str:
    try:
        return instance.render(name)
    except Exception:  # a template that needs variables not given: both runtimes refuse it
        return "(cannot be rendered)"


def _offers(instance: Instance) -> dict[str, Any]:
    return {
        "accepted": [e.name for e in instance.accepted_events()],
        "targets": instance.allowed_targets(),
        "forced": instance.allowed_targets(force=True),
        "templates": {name: _rendered(instance, name) for name in instance.machine.templates},
    }


@pytest.mark.parametrize("path", VECTORS, ids=lambda p: p.name.split(".")[0])
def test_both_runtimes_offer_the_same_events_and_targets(
    ts_offers: dict[tuple[str, str], dict[str, Any]], path: Path
) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    machine = Machine(data["ir"])
    for vector in data["vectors"]:
        clock = FakeClock(vector["now"] / 1000)
        instance = machine.try_start(vector["context"], clock=clock)
        if not isinstance(instance, Instance):
            continue
        seen = [_offers(instance)]
        for op in vector["ops"]:
            _apply(instance, clock, op)
            seen.append(_offers(instance))
        assert ts_offers[path.name, vector["name"]]["offers"] == seen, vector["name"]
