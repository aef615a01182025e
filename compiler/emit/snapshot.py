"""Reading what `flowc run` saved (a runtime snapshot) into what a diagram highlights.

Only the parts a diagram needs are read: the current state, the active configuration of a
hierarchical instance (`configuration`: its active atomic states) and the steps taken. The reader
accepts the few spellings a snapshot may use (`source`/`target` or `from`/`to`, the trigger
as `event` or `trigger`, the choice states a step routed through as `via`) and ignores
everything else, so it keeps working as the snapshot
format gains fields.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from flowc.compiler.emit.labels import Highlight


class SnapshotError(ValueError):
    """The file is not a snapshot this reader understands."""


def read_snapshot(path: str | Path) -> Highlight:
    try:
        raw = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise SnapshotError(f"cannot read {path}: {exc.strerror or exc}") from exc
    except json.JSONDecodeError as exc:
        raise SnapshotError(f"{path} is not JSON: {exc.msg} at line {exc.lineno}") from exc
    return snapshot_highlight(raw)


def snapshot_highlight(raw: Any) -> Highlight:
    if not isinstance(raw, Mapping):
        raise SnapshotError("a snapshot is a JSON object")
    # Tolerate a snapshot wrapped in an envelope ({"snapshot": {...}} or {"instance": {...}}).
    for key in ("snapshot", "instance"):
        inner = raw.get(key)
        if isinstance(inner, Mapping) and "state" in inner:
            raw = inner
            break
    state = raw.get("state")
    if isinstance(state, Mapping):
        state = state.get("name")
    if not isinstance(state, str):
        raise SnapshotError("a snapshot needs a `state` naming the current state")
    history = raw.get("history", [])
    if not isinstance(history, list):
        raise SnapshotError("`history` must be a list of steps")
    steps = [hop for step in history if isinstance(step, Mapping) for hop in _hops(step)]
    configuration = raw.get("configuration", [])
    if not isinstance(configuration, list) or not all(isinstance(n, str) for n in configuration):
        raise SnapshotError("`configuration` must be a list of state names")
    flow = raw.get("flow")
    return Highlight(
        current=state,
        configuration=tuple(configuration),
        steps=steps,
        flow=flow if isinstance(flow, str) else None,
    )


def _hops(step: Mapping[str, Any]) -> list[tuple[str, str, str | None]]:
    """The edges one history step took, (source, target, event): one, or one per choice state
    it routed through (the event on the first); none for the row that started the instance."""
    source = step.get("source", step.get("from"))
    target = step.get("target", step.get("to"))
    trigger = step.get("event", step.get("trigger"))
    if isinstance(trigger, Mapping):
        trigger = trigger.get("name") or trigger.get("event")
    if not (isinstance(source, str) and isinstance(target, str)):
        return []  # the row that started the instance has no source
    # A step that routed through choice states lists them in `via`: draw every hop.
    via = step.get("via")
    hops = [source, *(v for v in via if isinstance(v, str))] if isinstance(via, list) else [source]
    hops.append(target)
    event = trigger if isinstance(trigger, str) else None
    return [(a, b, event if i == 0 else None) for i, (a, b) in enumerate(itertools.pairwise(hops))]
