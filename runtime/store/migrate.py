"""Moving a stored instance to a newer version of its flow.

The engine's `Machine.restore` already accepts a snapshot of an older version when it fits:
context fields added since get their defaults, timers are matched to the new timer rules. What
it refuses, rightly, is a snapshot whose state no longer exists, or whose context holds a field
the flow dropped. A `Migration` says what to do instead, as data:

    {"flow": "review", "from_version": 1,
     "states": {"LEGACY_REVIEW": "REVIEW"},      # old state -> state of the newer version
     "rename": {"hints": "hints_used"},          # old context field -> new field
     "drop": ["scratch"]}                         # old context fields to forget

A flow declares its own migrations in its source (`migrate from N { ... }`, compiled into the
IR's `migrations`): each maps instances of version N straight to the version that declares it,
so the compiler can check every target. A host may also pass `Migration`s to
`DurableFlows(migrations=...)` (built with `Migration(...)` or `Migration.from_dict(...)`), for
flows compiled without them.

Which mappings apply to a snapshot of version v restored under version w > v: the flow's own
`migrate from v` block when it has one; otherwise the host's migrations chained (the one from
v, then the one from v+1, ... each applied to the result of the previous; a version with none
maps nothing).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from flowc.runtime.machine import Machine
from flowc.runtime.rejections import SnapshotError


@dataclass(frozen=True, slots=True)
class Migration:
    flow: str
    from_version: int
    states: Mapping[str, str] = field(default_factory=dict)
    rename: Mapping[str, str] = field(default_factory=dict)
    drop: frozenset[str] = frozenset()

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Migration:
        try:
            return cls(
                flow=str(data["flow"]),
                from_version=int(data["from_version"]),
                states={str(k): str(v) for k, v in (data.get("states") or {}).items()},
                rename={str(k): str(v) for k, v in (data.get("rename") or {}).items()},
                drop=frozenset(str(x) for x in data.get("drop") or ()),
            )
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            raise ValueError(f"malformed migration: {exc}") from None

    def to_dict(self) -> dict[str, Any]:
        return {
            "flow": self.flow,
            "from_version": self.from_version,
            "states": dict(self.states),
            "rename": dict(self.rename),
            "drop": sorted(self.drop),
        }


def declared_migrations(machine: Machine) -> dict[int, Migration]:
    """The flow's own `migrate from N` blocks (the IR's `migrations`), by N."""
    out: dict[int, Migration] = {}
    for data in machine.raw.get("migrations") or ():
        migration = Migration.from_dict({"flow": machine.name, **data})
        out[migration.from_version] = migration
    return out


def migrate_snapshot(
    snapshot: Mapping[str, Any], machine: Machine, migrations: Sequence[Migration]
) -> dict[str, Any]:
    """The snapshot as `machine` (a newer version of its flow) can restore it: state and context
    mapped by the migrations from the snapshot's version up to the machine's. Raises
    `SnapshotError` when the state has no place in the new version and no migration maps it
    (the engine would refuse it anyway; this says which declaration is missing)."""
    old_version = int(snapshot.get("version") or 0)
    if snapshot.get("flow") != machine.name:
        raise SnapshotError(
            f"the snapshot is of flow {snapshot.get('flow')!r}, not {machine.name!r}"
        )
    if old_version > machine.version:
        raise SnapshotError(
            f"the snapshot is of {machine.name} version {old_version}, newer than "
            f"{machine.version}: a flow is never downgraded"
        )
    own = declared_migrations(machine).get(old_version)
    steps = (
        [own]
        if own is not None
        else sorted(
            (
                m
                for m in migrations
                if m.flow == machine.name and old_version <= m.from_version < machine.version
            ),
            key=lambda m: m.from_version,
        )
    )
    state = str(snapshot.get("state"))
    context = dict(snapshot.get("context") or {})
    for step in steps:
        state = step.states.get(state, state)
        for old, new in step.rename.items():
            if old in context:
                context[new] = context.pop(old)
        for name in step.drop:
            context.pop(name, None)
    if state not in machine.states:
        raise SnapshotError(
            f"state {state!r} of the stored instance does not exist in {machine.name} version "
            f"{machine.version}, and no migration from version {old_version} maps it "
            f"(declare one in the flow: `migrate from {old_version} {{ state {state} -> ... }}`)"
        )
    out = dict(snapshot)
    out["state"] = state
    out["context"] = context
    if state != snapshot.get("state"):
        # The old state's timers belong to rules of a state that is gone.
        out["timers"] = []
    sends = [x for x in snapshot.get("sends") or () if x.get("event") in machine.events]
    if "sends" in snapshot:
        # A scheduled event of an event this version no longer declares is dropped.
        out["sends"] = sends
    return out
