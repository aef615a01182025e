"""What every host does with stores and flow files, however it is driven: find the store's
URL, open it, load machines from .flow and .json files, write the steps' journals to files.
The `flowc` host commands (`flowc.hosts.commands`) and `flowc mcp` share these."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from flowc.runtime import FlowcError, Machine
from flowc.runtime.journal import JournalFile
from flowc.runtime.steps import StepResult
from flowc.runtime.store import Store, open_store

DEFAULT_STORE = "sqlite:///flowc.db"


class UsageError(Exception):
    pass


def store_url(given: str | None) -> str:
    """--store, else $FLOWC_STORE, else a flowc.db file in the current directory."""
    return given or os.environ.get("FLOWC_STORE") or DEFAULT_STORE


def load_machines(paths: Iterable[str]) -> list[Machine]:
    """Machines from files and directories (a directory: its *.flow and *.json files); none
    for no paths (the store's graphs are used)."""
    paths = list(paths)
    if not paths:
        return []
    files: list[Path] = []
    for given in paths:
        path = Path(given)
        if path.is_dir():
            files.extend(sorted(p for p in path.iterdir() if p.suffix in {".flow", ".json"}))
        elif path.is_file():
            files.append(path)
        else:
            raise UsageError(f"no such file or directory: {path}")
    if not files:
        raise UsageError("--flow names no .flow or .json file")
    machines: list[Machine] = []
    for file in files:
        try:
            machines.append(Machine.from_file(file))
        except (FlowcError, OSError, ValueError) as exc:
            raise UsageError(f"{file}: {exc}") from None
    return machines


def journal_specs(specs: Iterable[str]) -> list[tuple[str, str]]:
    """`--journal NAME=FILE` options as (name, file) pairs."""
    out = []
    for spec in specs:
        name, sep, file = spec.partition("=")
        if not sep or not name or not file:
            raise UsageError(f"--journal takes NAME=FILE, got {spec!r}")
        out.append((name, file))
    return out


def check_journals(machine: Machine, journals: Iterable[tuple[str, str]]) -> None:
    for name, _ in journals:
        if name not in machine.journals:
            known = ", ".join(machine.journals) or "none"
            raise UsageError(f"flow {machine.name} has no journal {name!r} (journals: {known})")


class StepJournals:
    """The `--journal` files of a command: appends each committed step's entries through
    `JournalFile` (so each step once, whatever is delivered twice). Subscribe it to an
    `Instance` (`for_instance`) or a `DurableFlows`. A write that fails does not raise: the
    step is committed whatever happens to its journal, so the failure is kept in `failures` for
    the command to report beside the step. A step of a flow without journal NAME (a worker
    serves every flow in its store) is written nowhere."""

    def __init__(self, journals: Iterable[tuple[str, str]]) -> None:
        self.journals = list(journals)
        self.failures: list[str] = []
        self._sinks: dict[tuple[str, str, str], JournalFile] = {}

    def __bool__(self) -> bool:
        return bool(self.journals)

    def __call__(self, instance_id: str, step: StepResult) -> None:
        for name, file in self.journals:
            sink = self._sinks.get((name, file, instance_id))
            if sink is None:
                sink = self._sinks[(name, file, instance_id)] = JournalFile(
                    name, file, instance_id=instance_id
                )
            try:
                step.journal(name)
            except KeyError:
                continue  # this step's flow has no such journal
            except FlowcError as exc:
                self._failed(instance_id, step, name, file, exc)
                continue
            try:
                sink.write(step)
            except (OSError, FlowcError, ValueError) as exc:
                self._failed(instance_id, step, name, file, exc)

    def for_instance(self, instance_id: str) -> Callable[[StepResult], None]:
        return lambda step: self(instance_id, step)

    def _failed(
        self, instance_id: str, step: StepResult, name: str, file: str, exc: Exception
    ) -> None:
        detail = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        self.failures.append(
            f"step {step.seq} of {instance_id} ({step.from_} -> {step.to}) is committed, but "
            f"journal {name} could not be written to {file}: {detail}; the journal misses "
            "its entry"
        )

    def take_failures(self) -> list[str]:
        failures, self.failures = self.failures, []
        return failures


@contextmanager
def opened(url: str) -> Iterator[Store]:
    store = open_store(url)
    try:
        yield store
    finally:
        store.close()
