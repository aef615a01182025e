"""Seed scenarios: each seed document's behaviours, driven through its flow in `flows/`."""

from __future__ import annotations

import copy
from functools import cache
from pathlib import Path
from typing import Any

from flowc.runtime import FakeClock, Instance, Machine

FLOWS = Path(__file__).resolve().parents[2] / "flows"


@cache
def _compiled(name: str) -> dict[str, Any]:
    machine = Machine.from_file(FLOWS / f"{name}.flow").preload()
    return dict(machine.raw)


def load(name: str, clock: FakeClock | None = None) -> Machine:
    """The seed flow, compiled once per test session, loaded with its own clock."""
    return Machine(_compiled(name), clock=clock or FakeClock()).preload()


def observed(instance: Instance) -> dict[str, Any]:
    return copy.deepcopy(
        {"snapshot": instance.snapshot(), "context": instance.context, "state": instance.state}
    )
