"""Journals: append-only logs rendered from a flow's `journal NAME "..."` templates.

Each committed step renders each journal once (`StepResult.journal(name)`, cached on the
step); the variables are listed in `flowc.runtime.instance.render_journal`. Where the entries
go is the host's business; `JournalFile` is the ready-made sink: it appends one journal's
entries to a file and is idempotent per step, so delivering the same step twice (a replay
after a crash, a restored snapshot re-sending its last event) never writes a second entry
(seed 001 NF3).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from flowc.runtime.instance import Instance, StepResult


class JournalFile:
    """Appends journal `name` to `path`, one entry per committed step.

    Steps whose entry is blank are skipped (a template may render nothing for steps it does not
    log, e.g. `-> self` status updates). The sequence number of the last step written is kept
    beside the file (`PATH.seq`, per instance id), and a step at or below it is never written
    again. Use it as a subscriber: `instance.subscribe(JournalFile("decisions", "07.md"))`, or
    `JournalFile.attach(instance, name, path)`."""

    def __init__(
        self, name: str, path: str | os.PathLike[str], *, instance_id: str | None = None
    ) -> None:
        self.name = name
        self.path = Path(path)
        self.state_path = self.path.with_name(self.path.name + ".seq")
        self.key = instance_id or "_"

    @classmethod
    def attach(cls, instance: Instance, name: str, path: str | os.PathLike[str]) -> JournalFile:
        if name not in instance.machine.journals:
            raise KeyError(f"flow {instance.machine.name} has no journal {name!r}")
        sink = cls(name, path, instance_id=instance.id)
        instance.subscribe(sink)
        return sink

    @property
    def last_seq(self) -> int:
        """The sequence number of the last step written (-1: none yet)."""
        try:
            seen = json.loads(self.state_path.read_text(encoding="utf-8"))
        except (FileNotFoundError, ValueError):
            return -1
        value = seen.get(self.key, -1) if isinstance(seen, dict) else -1
        return value if isinstance(value, int) else -1

    def __call__(self, step: StepResult) -> None:
        self.write(step)

    def write(self, step: StepResult) -> bool:
        """Append the step's entry unless it was written already or is blank; True if
        written."""
        if step.seq <= self.last_seq:
            return False
        text = step.journal(self.name)
        if text.strip():
            if not text.endswith("\n"):
                text += "\n"
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with self.path.open("a", encoding="utf-8") as out:
                out.write(text)
        self._remember(step.seq)
        return bool(text.strip())

    def _remember(self, seq: int) -> None:
        try:
            seen = json.loads(self.state_path.read_text(encoding="utf-8"))
            if not isinstance(seen, dict):
                seen = {}
        except (FileNotFoundError, ValueError):
            seen = {}
        seen[self.key] = seq
        tmp = self.state_path.with_name(self.state_path.name + ".tmp")
        tmp.write_text(json.dumps(seen, sort_keys=True), encoding="utf-8")
        os.replace(tmp, self.state_path)
