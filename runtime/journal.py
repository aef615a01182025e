"""Journals: append-only logs rendered from a flow's `journal NAME "..."` templates.

Each committed step renders each journal once (`StepResult.journal(name)`, cached on the
step); the variables are listed in `flowc.runtime.instance.render_journal`. Where the entries
go is the host's business; `JournalFile` is the ready-made sink: it appends one journal's
entries to a file and is idempotent per step, so delivering the same step twice (a replay
after a crash, a restored snapshot re-sending its last event) never writes a second entry
(seed 001 NF3), while a different step that reuses a sequence number (after a restore from an
older snapshot, the history forks) is written like any other.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from flowc.runtime.instance import Instance
from flowc.runtime.steps import StepResult

try:  # POSIX: several processes (workers) may append to one journal
    import fcntl
except ImportError:  # pragma: no cover - Windows: one writer at a time is the host's business
    fcntl = None  # type: ignore[assignment]


def step_identity(step: StepResult) -> str:
    """What makes a step the same step: its place in the history and what it did (kind, states,
    event, payload, reason, choice states). Not its time: a step re-run after a crash, from the
    snapshot saved before it, is the same decision taken again and is not logged twice. A step
    of a forked history that reuses a sequence number but does something else is another
    step."""
    e = step.to_dict()
    fields = [e["seq"], step.kind, e["from"], e["to"], e["event"], e["payload"], e["reason"]]
    fields.append(e["via"])
    text = json.dumps(fields, sort_keys=True, ensure_ascii=False, default=repr)
    return hashlib.blake2b(text.encode("utf-8"), digest_size=12).hexdigest()


class JournalFile:
    """Appends journal `name` to `path`, one entry per committed step.

    Steps whose entry is blank are skipped (a template may render nothing for steps it does not
    log, e.g. `-> self` status updates). Each step written is recorded by its identity
    (`step_identity`, per instance id) in an append-only index beside the file, `PATH.steps`,
    and a step already there is never written again; the entry text carries no anchor. The
    entry is appended before the index line, so a crash in between can repeat an entry but
    never lose one. Use it as a subscriber: `instance.subscribe(JournalFile("decisions",
    "07.md"))`, or `JournalFile.attach(instance, name, path)`.

    A `PATH.seq` file left by flowc 0.1.0 (the last sequence number written, per instance) is
    still honoured for the steps it covers, which were recorded by number only."""

    def __init__(
        self, name: str, path: str | os.PathLike[str], *, instance_id: str | None = None
    ) -> None:
        self.name = name
        self.path = Path(path)
        self.index_path = self.path.with_name(self.path.name + ".steps")
        self.legacy_path = self.path.with_name(self.path.name + ".seq")
        self.key = instance_id or "_"
        # The index as read so far (identities of every instance id) and how far it was read:
        # each write reads only what other writers appended since.
        self._written: set[tuple[str, str]] = set()
        self._read_to = 0
        self._legacy: int | None = None

    @classmethod
    def attach(cls, instance: Instance, name: str, path: str | os.PathLike[str]) -> JournalFile:
        if name not in instance.machine.journals:
            raise KeyError(f"flow {instance.machine.name} has no journal {name!r}")
        sink = cls(name, path, instance_id=instance.id)
        instance.subscribe(sink)
        return sink

    def __call__(self, step: StepResult) -> None:
        self.write(step)

    def written(self, step: StepResult) -> bool:
        """True if this step's entry is in the file already."""
        with self._locked() as index:
            return self._seen(index, step)

    def write(self, step: StepResult) -> bool:
        """Append the step's entry unless it was written already or is blank; True if
        written."""
        text = step.journal(self.name)
        if not text.strip():
            return False
        if not text.endswith("\n"):
            text += "\n"
        with self._locked() as index:
            if self._seen(index, step):
                return False
            with self.path.open("a", encoding="utf-8") as out:
                out.write(text)
                out.flush()
                os.fsync(out.fileno())
            line = json.dumps([self.key, step.seq, step_identity(step)], ensure_ascii=False)
            end = index.seek(0, os.SEEK_END)
            if end and (index.seek(end - 1), index.read(1))[1] != b"\n":
                index.write(b"\n")  # end a line a crash cut short, so it stays one bad line
            index.write(line.encode("utf-8") + b"\n")
            index.flush()
            self._read_to = index.tell()
            self._written.add((self.key, step_identity(step)))
        return True

    # -- the index ----------------------------------------------------------------------------

    @contextlib.contextmanager
    def _locked(self) -> Iterator[IO[bytes]]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.index_path.open("a+b") as index:
            if fcntl is not None:
                fcntl.flock(index.fileno(), fcntl.LOCK_EX)
            try:
                yield index
            finally:
                if fcntl is not None:
                    fcntl.flock(index.fileno(), fcntl.LOCK_UN)

    def _seen(self, index: IO[bytes], step: StepResult) -> bool:
        index.seek(self._read_to)
        for line in index:
            if not line.endswith(b"\n"):  # a line cut short by a crash: not a record
                break
            self._read_to += len(line)
            try:
                key, _seq, identity = json.loads(line)
            except (ValueError, TypeError):
                continue
            self._written.add((str(key), str(identity)))
        if (self.key, step_identity(step)) in self._written:
            return True
        return step.seq <= self._legacy_seq()

    def _legacy_seq(self) -> int:
        if self._legacy is None:
            try:
                seen = json.loads(self.legacy_path.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                seen = {}
            value = seen.get(self.key, -1) if isinstance(seen, dict) else -1
            self._legacy = value if isinstance(value, int) else -1
        return self._legacy
