"""Helpers for runtime tests: machines compiled from source held in the test, a fake clock."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from flowc.runtime import FakeClock, Instance, Machine


def machine(source: str, clock: FakeClock | None = None) -> Machine:
    """Compile `source` and load it with every closure compiled up front (which also checks
    that every expression of the flow compiles)."""
    return Machine.from_source(source, "test.flow", clock=clock).preload()


def frozen(instance: Instance) -> dict[str, Any]:
    """Everything observable about an instance, deep-copied: compare before and after a
    refusal to prove it changed nothing."""
    return copy.deepcopy(
        {
            "state": instance.state,
            "context": instance.context,
            "history": [h.to_dict() for h in instance.history],
            "timers": instance.timers,
            "seq": instance.seq,
            "snapshot": instance.snapshot(),
        }
    )


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()
