"""The JSON lines `flowc run` prints, one per outcome: made here, in the runtime, so that the
host that prints them and the compiler's `flowc vectors` (which records them for the other
runtimes to match) make the very same objects."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from flowc.runtime.steps import Outcome, StepResult

if TYPE_CHECKING:
    from flowc.runtime.instance import Instance


def start_line(instance: Instance) -> dict[str, Any]:
    """The line of a new instance (one that could not start prints its rejection instead)."""
    return {"ok": True, "kind": "start", "to": instance.state, "seq": 0}


def outcome_line(outcome: Outcome, instance: Instance) -> dict[str, Any]:
    """The line of one outcome of an operation on `instance`: the outcome's `to_dict()`, and
    for an accepted step whether the instance has ended (after the whole operation: the last
    timer an `advance` fired decides it for every line of that advance)."""
    data = outcome.to_dict()
    if isinstance(outcome, StepResult):
        data["final"] = instance.is_final
    return data


def line_text(data: dict[str, Any]) -> str:
    """A line as printed: JSON, not ASCII-escaped, anything JSON cannot hold as its repr."""
    return json.dumps(data, ensure_ascii=False, default=repr)
