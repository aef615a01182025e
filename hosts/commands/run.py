"""`flowc run FLOW`: drive an instance of a flow from the command line.

FLOW is a `.flow` file (compiled first) or a compiled `.json`. With `--events FILE.jsonl` each
line is one operation and each outcome is printed as one JSON line; without it, and with a
terminal, an interactive prompt shows the state, the accepted events and their fields, with
completion. `--snapshot FILE` resumes from FILE when it exists and saves the instance to it at
the end. `--store URL` keeps the instance in a store instead (`--id` resumes one): every
operation is then one committed transaction, exactly as a host's `DurableFlows` would run it.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TextIO

from flowc.hosts.tree import descendants, last_seqs, path_of, steps_since
from flowc.runtime import FakeClock, FlowcError, Instance, Machine, Rejected
from flowc.runtime.children import on_child
from flowc.runtime.clock import Clock, system_clock, to_seconds
from flowc.runtime.lines import line_text, outcome_line, start_line
from flowc.runtime.steps import Outcome, StepResult
from flowc.runtime.store.migrate import migrate_snapshot

if TYPE_CHECKING:
    from flowc.hosts.operations import StepJournals
    from flowc.runtime.store import InstanceRecord, StepOutcome, Store, TimerClaim
    from flowc.runtime.store.durable import DurableFlows

from flowc.compiler.commands import EXIT_FAILURE, EXIT_OK, EXIT_USAGE

EVENTS_HELP = """\
one JSON object a line (blank lines and lines starting with # are skipped):
  {"event": "submit", "payload": {...}, "reason": "...", "key": "..."}
  {"goto": "STATE", "force": false, "reason": "..."}
  {"back": true, "force": true}
  {"advance": 600}            move the clock on 600 s and fire due timers
  {"event": "approve", "child": "pay"}   (also goto, back) to a child flow, by its path
After an operation's own lines, one line for each other step it committed in the
instance's tree of child flows (docs/runtime.md, "flowc run").
"""


def register(sub: Any) -> None:
    parser: argparse.ArgumentParser = sub.add_parser(
        "run",
        help="run an instance of a flow: events from a file, or an interactive prompt",
        description=(
            "Start (or resume) an instance of FLOW and drive it. FLOW is a .flow file or a "
            "compiled .json. Each outcome is printed as a JSON line. Exit status: 0 when every "
            "operation was accepted, 1 on a rejection (the first one, unless --keep-going) or "
            "when FLOW has errors, 2 for usage errors."
        ),
        epilog=EVENTS_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("flow", metavar="FLOW", help="a .flow file or a compiled .json")
    parser.add_argument(
        "--context", metavar="JSON", help="the start context, a JSON object (new instances only)"
    )
    parser.add_argument(
        "--events", metavar="FILE", help="operations to apply, JSON lines ('-': standard input)"
    )
    parser.add_argument(
        "--keep-going",
        action="store_true",
        help="go on after a rejection (the exit status is still 1)",
    )
    parser.add_argument(
        "--snapshot",
        metavar="FILE",
        help="resume from FILE if it exists; save the instance to FILE at the end",
    )
    parser.add_argument(
        "--store",
        metavar="URL",
        help="keep the instance in a store (sqlite:///PATH, postgresql://..., memory:); "
        "each operation is one transaction",
    )
    parser.add_argument(
        "--id",
        metavar="ID",
        help="with --store: resume instance ID if it exists, else start it under this id",
    )
    parser.add_argument(
        "--journal",
        metavar="NAME=FILE",
        action="append",
        default=[],
        help="append journal NAME to FILE (once per step, also across resumed runs)",
    )
    parser.add_argument(
        "--now",
        metavar="TIME",
        help="run on a simulated clock starting at TIME (ISO 8601 or epoch seconds); "
        "`advance` then moves it",
    )
    parser.set_defaults(handler=run)


class _Usage(Exception):
    pass


class _EventsUnreadable(Exception):
    """The events file (or standard input) could not be read to the end."""


def run(args: argparse.Namespace) -> int:
    from flowc.hosts.operations import UsageError

    try:
        return _run(args)
    except (_Usage, UsageError) as exc:
        print(f"flowc run: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except _EventsUnreadable as exc:
        print(f"flowc run: {exc}", file=sys.stderr)
        return EXIT_FAILURE


def _run(args: argparse.Namespace) -> int:
    path = Path(args.flow)
    if not path.is_file():
        raise _Usage(f"no such file: {path}")
    clock: Clock | None = None
    fake: FakeClock | None = None
    if args.now:
        try:
            fake = FakeClock(to_seconds(_number_or_text(args.now)))
        except (TypeError, ValueError) as exc:
            raise _Usage(f"--now: not a time: {args.now!r}") from exc
        clock = fake
    machine = _load(path, clock)
    if machine is None:
        return EXIT_FAILURE
    from flowc.hosts.operations import StepJournals, check_journals, journal_specs

    specs = journal_specs(args.journal)
    check_journals(machine, specs)
    journals = StepJournals(specs)

    out = sys.stdout
    lines = _open_lines(args.events) if args.events is not None else None
    interactive = lines is None and sys.stdin.isatty()
    if args.store is not None:
        if args.snapshot:
            raise _Usage("--store keeps the instance in the store: no --snapshot")
        return _run_stored(args, machine, fake, lines, interactive, out, journals)
    if args.id is not None:
        raise _Usage("--id names an instance in a store: give --store too")
    snapshot = Path(args.snapshot) if args.snapshot else None
    if snapshot is not None:
        _check_writable(snapshot)
    # Only a regular file is resumed from: /dev/full or a pipe is an output, never an input.
    if snapshot is not None and snapshot.is_file():
        if args.context:
            raise _Usage("--context starts a new instance; the snapshot already has one")
        try:
            instance = machine.restore(_upgraded(machine, snapshot), clock=clock)
        except (FlowcError, ValueError, OSError, RecursionError) as exc:
            print(f"flowc run: cannot resume from {snapshot}: {_why(exc)}", file=sys.stderr)
            return EXIT_FAILURE
    else:
        context = _parse_context(args.context)
        try:
            instance = machine.start(context, clock=clock)
        except Rejected as exc:
            _emit(out, exc.rejection.to_dict())
            return EXIT_FAILURE
        if interactive:
            print(f"started {machine.name} version {machine.version}")
        else:
            _emit(out, start_line(instance))
    if journals:
        instance.subscribe(journals.for_instance(instance.id or "_"))

    driver = LocalDriver(instance, fake)
    code = EXIT_FAILURE
    try:
        code = _drive(driver, lines, interactive, out, args.keep_going, journals)
    finally:
        if snapshot is not None and not _save_snapshot(instance, snapshot):
            code = EXIT_FAILURE
    return code


def _check_writable(path: Path) -> None:
    """Refuse, before anything runs, a snapshot file that could never be written: the work
    of the run would be lost at the end."""
    if path.is_dir():
        raise _Usage(f"--snapshot {path} is a directory")
    if path.exists() and not path.is_file():
        return  # a device or a pipe: written in place at the end
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    if not parent.is_dir():
        raise _Usage(f"--snapshot {path}: {parent} is not a directory")
    # The snapshot replaces the file through a new file beside it: that must be possible.
    try:
        with tempfile.TemporaryFile(dir=parent):
            pass
    except OSError as exc:
        raise _Usage(f"--snapshot {path}: cannot write in {parent}: {_why(exc)}") from None


def _save_snapshot(instance: Instance, path: Path) -> bool:
    """Write the snapshot; on failure say why on one line. A regular file is replaced
    atomically (a failed write leaves the old snapshot as it was), anything else (a device, a
    pipe) is written in place."""
    try:
        text = instance.snapshot_json() + "\n"
    except (FlowcError, ValueError) as exc:
        print(f"flowc run: cannot save the snapshot: {_why(exc)}", file=sys.stderr)
        return False
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.exists() and not path.is_file():
            with path.open("w", encoding="utf-8") as f:
                f.write(text)
        else:
            tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
            try:
                tmp.write_text(text, encoding="utf-8")
                os.replace(tmp, path)
            finally:
                tmp.unlink(missing_ok=True)
    except OSError as exc:
        print(f"flowc run: cannot save the snapshot to {path}: {_why(exc)}", file=sys.stderr)
        return False
    return True


def _why(exc: BaseException) -> str:
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc)


def _drive(
    driver: Driver,
    lines: Iterable[str] | None,
    interactive: bool,
    out: TextIO,
    keep_going: bool,
    journals: StepJournals,
) -> int:
    if lines is not None:
        return _run_lines(driver, lines, out, keep_going, journals)
    if interactive:
        return Prompt(driver, journals=journals).loop()
    return _run_lines(driver, sys.stdin, out, keep_going, journals)


def _run_stored(
    args: argparse.Namespace,
    machine: Machine,
    fake: FakeClock | None,
    lines: Iterable[str] | None,
    interactive: bool,
    out: TextIO,
    journals: StepJournals,
) -> int:
    from flowc.runtime.store import InstanceExists, StoreError, StoreURLError, open_store
    from flowc.runtime.store.durable import DurableFlows, UnknownFlow

    clock: Clock = fake if fake is not None else system_clock
    try:
        store = open_store(args.store, clock=clock)
    except StoreURLError as exc:
        raise _Usage(str(exc)) from exc
    except StoreError as exc:
        print(f"flowc run: {exc}", file=sys.stderr)
        return EXIT_FAILURE
    with DurableFlows(store, [machine], clock=clock) as durable:
        instance_id = args.id
        try:
            found = _stored(store, instance_id) if instance_id is not None else None
            if found is not None:
                if args.context:
                    raise _Usage(f"--context starts a new instance; {instance_id} exists")
                if found.flow != machine.name:
                    # The store could run it on its own graph; this command drives FLOW only.
                    raise UnknownFlow(
                        f"instance {instance_id} is an instance of {found.flow}, "
                        f"not of {machine.name}"
                    )
                durable.load(instance_id)  # fails now, not on the first event, if it cannot run
                if interactive:
                    print(f"resumed {instance_id} in the store")
            else:
                started = durable.start(machine.name, _parse_context(args.context), id=instance_id)
                if not started.ok:
                    _emit(out, started.data)
                    return EXIT_FAILURE
                instance_id = started.instance_id
                if interactive:
                    print(f"started {machine.name} version {machine.version} as {instance_id}")
                else:
                    _emit(
                        out,
                        {
                            "kind": "start",
                            "id": instance_id,
                            "to": started.data["state"],
                            "ok": True,
                            "seq": started.data["seq"],
                        },
                    )
            if journals:
                only = instance_id

                def write(committed_on: str, step: StepResult) -> None:
                    if committed_on == only:
                        journals(committed_on, step)

                durable.subscribe(write)
            return _drive(
                StoredDriver(durable, instance_id, fake),
                lines,
                interactive,
                out,
                args.keep_going,
                journals,
            )
        except (UnknownFlow, FlowcError, InstanceExists, StoreError) as exc:
            print(f"flowc run: {exc}", file=sys.stderr)
            return EXIT_FAILURE


def _stored(store: Store, instance_id: str) -> InstanceRecord | None:
    from flowc.runtime.store import InstanceNotFound

    try:
        return store.load(instance_id)
    except InstanceNotFound:
        return None


class Driver(Protocol):
    """Where operations go: an instance in memory, or one kept in a store."""

    @property
    def instance(self) -> Instance:
        """The instance as it is now (for the prompt's status and completion)."""
        ...

    def apply(self, op: dict[str, Any]) -> list[dict[str, Any]]:
        """Run one operation; its outcomes as JSON objects. ValueError for a malformed one."""
        ...


class LocalDriver:
    def __init__(self, instance: Instance, fake: FakeClock | None) -> None:
        self._instance = instance
        self.fake = fake

    @property
    def instance(self) -> Instance:
        return self._instance

    def apply(self, op: dict[str, Any]) -> list[dict[str, Any]]:
        root = self._instance
        child = _child(op)
        before = last_seqs(root)
        path = _child_path(root, child)
        lines = [outcome_line(o, root) for o in apply(root, op, self.fake)]
        return _with_tree(root, lines, before, path or "")


class StoredDriver:
    """Each operation is one transaction on the store; the instance is read back from it."""

    def __init__(self, durable: DurableFlows, instance_id: str, fake: FakeClock | None) -> None:
        self.durable = durable
        self.id = instance_id
        self.fake = fake

    @property
    def instance(self) -> Instance:
        return self.durable.load(self.id)

    def apply(self, op: dict[str, Any]) -> list[dict[str, Any]]:
        reason, key, force = _common(op)
        child = _child(op)
        tree = self.durable.load(self.id, full_history=False)
        before = last_seqs(tree)
        path = _child_path(tree, child)
        if "event" in op:
            event = _name(op, "event")
            payload = _op_payload(op)
            out = self.durable.send(
                self.id, event, payload, key=key, reason=reason, force=force, child=child
            )
        elif "goto" in op:
            target = _name(op, "goto")
            out = self.durable.goto(
                self.id, target, force=force, key=key, reason=reason, child=child
            )
        elif "back" in op:
            out = self.durable.back(self.id, force=force, key=key, reason=reason, child=child)
        elif "advance" in op:
            return self._with_tree(self._advance(_seconds(op)), before, "")
        else:
            raise ValueError("expected one of `event`, `goto`, `back`, `advance`")
        data = dict(out.data)
        if out.status in ("replayed", "conflict"):
            data["status"] = out.status
        if data.get("ok"):
            data["final"] = self.durable.load(self.id, full_history=False).is_final
        return self._with_tree([data], before, path or "")

    def _with_tree(
        self, lines: list[dict[str, Any]], before: dict[str, int], path: str
    ) -> list[dict[str, Any]]:
        """`_with_tree` on the tree as stored now: its root's whole history is read from the
        store only when the root took steps that `lines` do not show."""
        shown = _shown(lines, path)
        after = self.durable.load(self.id, full_history=False)
        if not all(("", seq) in shown for seq in range(before[""] + 1, after.seq + 1)):
            after = self.instance
        return lines + steps_since(after, before, shown)

    def _advance(self, seconds: float) -> list[dict[str, Any]]:
        if self.fake is None:
            raise ValueError(
                "`advance` on a stored instance needs --now (on the real clock, `flowc worker` "
                "fires its timers)"
            )
        self.fake.advance(seconds)
        fired: list[dict[str, Any]] = []

        def collect(claim: TimerClaim, outcome: StepOutcome) -> None:
            if claim.instance_id == self.id and isinstance(outcome.outcome, dict):
                steps = outcome.outcome.get("steps") or ()
                # (a child's step is printed as the child's: not as the root's `child` entry)
                fired.extend(s for s in steps if isinstance(s, dict) and s.get("kind") != "child")

        worker = self.durable.worker(on_outcome=collect)
        while worker.run_once():
            pass
        return fired


def _load(path: Path, clock: Clock | None) -> Machine | None:
    if path.suffix == ".flow":
        from flowc.compiler.driver import compile_file, print_diagnostics

        result = compile_file(path)
        if result.errors or result.flow is None:
            print_diagnostics(result, sys.stderr)
            print(f"flowc run: {path}: not compiled", file=sys.stderr)
            return None
        try:
            return Machine(result.flow, clock=clock).preload()
        except FlowcError as exc:
            # The compiler passed something the runtime refuses: a compiler bug, said plainly.
            print(f"flowc run: {path}: the runtime cannot load this flow: {exc}", file=sys.stderr)
            return None
    try:
        return Machine.from_json(path.read_bytes(), clock=clock).preload()
    except (FlowcError, OSError, RecursionError) as exc:
        print(f"flowc run: {path}: {_why(exc)}", file=sys.stderr)
        return None


def _number_or_text(text: str) -> float | str:
    try:
        return float(text)
    except ValueError:
        return text


def _parse_context(text: str | None) -> dict[str, Any] | None:
    if not text:
        return None
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise _Usage(f"--context is not JSON: {exc}") from exc
    except RecursionError:
        raise _Usage("--context is nested too deeply") from None
    if not isinstance(value, dict):
        raise _Usage("--context must be a JSON object")
    return value


def _open_lines(source: str) -> Iterable[str]:
    if source == "-":
        return sys.stdin
    p = Path(source)
    if not p.exists() or p.is_dir():  # pipes and /dev/null are fine
        raise _Usage(f"no such events file: {p}")
    try:
        return p.read_text(encoding="utf-8").splitlines()
    except UnicodeDecodeError as exc:
        raise _EventsUnreadable(f"events file {p} is not UTF-8 text: {exc.reason}") from None
    except OSError as exc:
        raise _EventsUnreadable(f"cannot read events file {p}: {_why(exc)}") from None


def _emit(out: TextIO, data: dict[str, Any]) -> None:
    out.write(line_text(data) + "\n")
    out.flush()


def apply(instance: Instance, op: dict[str, Any], fake: FakeClock | None) -> list[Outcome]:
    """One operation of an events file. Raises ValueError for a malformed one."""
    reason, key, force = _common(op)
    child = _child(op)
    if "event" in op:
        event = _name(op, "event")
        payload = _op_payload(op)

        def send(i: Instance) -> Outcome:
            return i.send(event, payload, force=force, reason=reason, key=key)

        return [_on(instance, child, send, event)]
    if "goto" in op:
        target = _name(op, "goto")
        return [_on(instance, child, lambda i: i.goto(target, force=force, reason=reason, key=key))]
    if "back" in op:
        return [_on(instance, child, lambda i: i.back(force=force, reason=reason, key=key))]
    if "advance" in op:
        seconds = _seconds(op)
        if fake is not None:
            fake.advance(seconds)
            fired = instance.advance()
        else:
            fired = instance.advance(instance.machine.clock() + seconds)
        # (a child's step is printed as the child's, after: not as the root's `child` entry)
        return [o for o in fired if not (isinstance(o, StepResult) and o.kind == "child")]
    raise ValueError("expected one of `event`, `goto`, `back`, `advance`")


def _on(
    instance: Instance,
    child: str | None,
    step: Callable[[Instance], Outcome],
    event: str | None = None,
) -> Outcome:
    """`step` on the instance, or on its child at the path `child` (`unknown_child` when it
    has none there), as `DurableFlows` does it."""
    return step(instance) if child is None else on_child(instance, child, step, event)


def _child(op: dict[str, Any]) -> str | None:
    """An operation's `child`: the path of the child flow it goes to (hosts/tree.py)."""
    child = op.get("child")
    if child is None:
        return None
    if not isinstance(child, str) or not child:
        raise ValueError("`child` must be a path of child ids (`pay.1`, `reviews[0]/fraud`)")
    if "advance" in op:
        raise ValueError("`child` goes with `event`, `goto` or `back`: `advance` fires the tree")
    return child


def _child_path(root: Instance, child: str | None) -> str | None:
    """The path of child ids that `child` names now (`pay` -> `pay.1`), or as given."""
    if child is None:
        return None
    try:
        return path_of(root, root.child(child)) or child
    except KeyError:
        return child


def _with_tree(
    root: Instance, lines: list[dict[str, Any]], before: dict[str, int], path: str
) -> list[dict[str, Any]]:
    """An operation's lines (of the instance's steps, or with `path` of its child's), then
    the other steps the operation committed in the tree (`steps_since`)."""
    return lines + steps_since(root, before, _shown(lines, path))


def _shown(lines: list[dict[str, Any]], path: str) -> set[tuple[str, int]]:
    """The (path, seq) of the steps an operation's own lines print, given `child` (`path`)
    when the operation went to a child."""
    shown: set[tuple[str, int]] = set()
    for line in lines:
        if path:
            line.pop("child", None)  # (an `unknown_child` rejection has one: keep it last)
            line["child"] = path
        if line.get("ok") and isinstance(line.get("seq"), int):
            shown.add((path, line["seq"]))
    return shown


def _common(op: dict[str, Any]) -> tuple[str | None, str | None, bool]:
    """An operation's `reason`, `key` and `force`, checked."""
    for field in ("reason", "key"):
        if op.get(field) is not None and not isinstance(op[field], str):
            raise ValueError(f"`{field}` must be a string")
    force = op.get("force", False)
    if not isinstance(force, bool):
        raise ValueError("`force` must be true or false")
    return op.get("reason"), op.get("key"), force


def _name(op: dict[str, Any], field: str) -> str:
    value = op[field]
    if not isinstance(value, str):
        raise ValueError(f"`{field}` must be a string")
    return value


def _op_payload(op: dict[str, Any]) -> dict[str, Any] | None:
    payload = op.get("payload")
    if payload is not None and not isinstance(payload, dict):
        raise ValueError("`payload` must be an object")
    return payload


def _seconds(op: dict[str, Any]) -> float:
    value = op["advance"]
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError("`advance` takes a number of seconds")
    if value < 0:
        raise ValueError("`advance` cannot go back in time")
    return float(value)


def _read(lines: Iterable[str]) -> Iterator[str]:
    """The lines, with a read error (standard input that is not UTF-8, a device failing) as
    `_EventsUnreadable`."""
    it = iter(lines)
    while True:
        try:
            line = next(it)
        except StopIteration:
            return
        except UnicodeDecodeError as exc:
            raise _EventsUnreadable(f"the events are not UTF-8 text: {exc.reason}") from None
        except OSError as exc:
            raise _EventsUnreadable(f"cannot read the events: {_why(exc)}") from None
        yield line


def _run_lines(
    driver: Driver,
    lines: Iterable[str],
    out: TextIO,
    keep_going: bool,
    journals: StepJournals | None = None,
) -> int:
    code = EXIT_OK
    for number, line in enumerate(_read(lines), 1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        try:
            op = json.loads(text)
            if not isinstance(op, dict):
                raise ValueError("a line must be a JSON object")
            outcomes = driver.apply(op)
        except (ValueError, RecursionError) as exc:
            print(f"flowc run: events line {number}: {_why(exc)}", file=sys.stderr)
            return EXIT_FAILURE
        for outcome in outcomes:
            _emit(out, outcome)
            if not outcome.get("ok"):
                code = EXIT_FAILURE
                if not keep_going:
                    return code
        if journals is not None and _journal_failed(journals):
            return EXIT_FAILURE
    return code


def _journal_failed(journals: StepJournals) -> bool:
    """Report journal writes that failed after their step committed; True if any did (the run
    stops there: later entries would leave a gap in the journal)."""
    failures = journals.take_failures()
    for failure in failures:
        print(f"flowc run: {failure}", file=sys.stderr)
    return bool(failures)


# ---- interactive ----------------------------------------------------------------------------


class Prompt:
    """The interactive prompt: one operation a line, completion with Tab."""

    COMMANDS = ("goto", "back", "advance", "context", "history", "snapshot", "help", "quit")

    def __init__(
        self,
        target: Driver | Instance,
        fake: FakeClock | None = None,
        journals: StepJournals | None = None,
    ) -> None:
        self.driver = LocalDriver(target, fake) if isinstance(target, Instance) else target
        self.rejected = False
        self.journals = journals

    @property
    def instance(self) -> Instance:
        return self.driver.instance

    def loop(self) -> int:
        try:
            import readline
        except ImportError:  # pragma: no cover - Windows without pyreadline
            readline = None  # type: ignore[assignment]
        if readline is not None:
            readline.set_completer(self.complete)
            readline.set_completer_delims(" \t")
            readline.parse_and_bind("tab: complete")
        self.show()
        while True:
            try:
                line = input(f"{self.instance.state}> ")
            except EOFError:
                print()
                break
            if line.strip() in ("quit", "exit"):
                break
            for text in self.handle(line):
                print(text)
            if line.strip():
                self.show()
        return EXIT_FAILURE if self.rejected else EXIT_OK

    def show(self) -> None:
        for text in self.status():
            print(text)

    def status(self) -> Iterator[str]:
        inst = self.instance
        head = f"state {inst.state}"
        if inst.title != inst.state:
            head += f" ({inst.title})"
        if inst.is_final:
            yield head + ": final, the instance has ended"
            return
        yield head
        for ev in inst.accepted_events():
            props = ev.schema.get("properties", {})
            required = set(ev.schema.get("required", []))
            fields = ", ".join(
                f"{n}{'' if n in required else '?'}: {_type_words(s)}" for n, s in props.items()
            )
            yield f"  on {ev.name}({fields})"
        for target in inst.allowed_targets(force=True):
            back = "" if target in inst.allowed_targets() else " (back: needs force)"
            yield f"  goto {target}{back}"
        if inst.next_deadline is not None:
            yield f"  next timer due {inst.next_deadline.isoformat()}"
        for path, kid in descendants(inst):
            ended = " (ended)" if kid.is_final else ""
            yield f"  child {path}: {kid.machine.name} in {kid.state}{ended} (@{path} EVENT ...)"

    def handle(self, line: str) -> list[str]:
        text = line.strip()
        if not text:
            return []
        word, _, rest = text.partition(" ")
        child = None
        if word.startswith("@"):  # `@pay.1 approve`: to a child flow
            child = word[1:]
            word, _, rest = rest.strip().partition(" ")
            if word in ("help", "context", "history", "snapshot", "advance", ""):
                return [f"error: @{child} goes with an event, goto or back"]
        rest = rest.strip()
        try:
            if word == "help":
                return [
                    "[@CHILD] EVENT {json payload} | [@CHILD] EVENT field=value ... | "
                    "[@CHILD] goto STATE [force] | [@CHILD] back [force] | advance SECONDS | "
                    "context | history | snapshot | quit"
                ]
            if word == "context":
                return [json.dumps(self.instance.context, indent=2, ensure_ascii=False)]
            if word == "history":
                return [json.dumps(h.to_dict(), ensure_ascii=False) for h in self.instance.history]
            if word == "snapshot":
                return [json.dumps(self.instance.snapshot(), indent=2, ensure_ascii=False)]
            if word == "goto":
                parts = rest.split()
                if not parts:
                    return ["goto needs a state"]
                op: dict[str, Any] = {"goto": parts[0], "force": "force" in parts[1:]}
            elif word == "back":
                op = {"back": True, "force": "force" in rest.split()}
            elif word == "advance":
                op = {"advance": float(rest or 0)}
            else:
                op = {"event": word, "payload": _payload(rest)}
            if child is not None:
                op["child"] = child
            outcomes = self.driver.apply(op)
        except (ValueError, RecursionError) as exc:
            return [f"error: {_why(exc)}"]
        lines = []
        for outcome in outcomes:
            # (a step of a child flow says whose: `[pay.1] ok: waiting -> ok (step 1)`)
            who = f"[{outcome['child']}] " if outcome.get("child") else ""
            if not outcome.get("ok"):
                self.rejected = True
                lines.append(f"{who}rejected [{outcome.get('error')}]: {outcome.get('message')}")
                if "issues" in outcome:
                    lines.append(json.dumps(outcome["issues"], ensure_ascii=False, default=repr))
            else:
                via = f" via {', '.join(outcome['via'])}" if outcome.get("via") else ""
                again = " (replayed)" if outcome.get("status") == "replayed" else ""
                lines.append(
                    f"{who}ok: {outcome['from']} -> {outcome['to']}{via} "
                    f"(step {outcome['seq']}){again}"
                )
                for effect in outcome.get("effects") or ():
                    payload = json.dumps(effect["payload"], ensure_ascii=False, default=repr)
                    lines.append(f"  effect {effect['effect']} {payload}")
        if self.journals is not None:
            for failure in self.journals.take_failures():
                self.rejected = True
                lines.append(f"journal error: {failure}")
        return lines or ["(nothing was due)"]

    def complete(self, text: str, index: int) -> str | None:
        import readline

        line = readline.get_line_buffer()
        options = self.candidates(line[: readline.get_endidx()], text)
        return options[index] if index < len(options) else None

    def candidates(self, before: str, text: str) -> list[str]:
        """Completions for the word being typed (`text`), given the line up to the cursor."""
        words = before.split()
        first = len(words) == 0 or (len(words) == 1 and not before.endswith(" "))
        inst = self.instance
        if first:
            names = [e.name for e in inst.accepted_events()] + list(self.COMMANDS)
        elif words[0] == "goto":
            names = [*inst.allowed_targets(force=True), "force"]
        elif words[0] == "back":
            names = ["force"]
        else:
            event = next((e for e in inst.accepted_events() if e.name == words[0]), None)
            props = event.schema.get("properties", {}) if event else {}
            names = [f"{n}=" for n in props]
        return sorted(n for n in names if n.startswith(text))


def _payload(text: str) -> dict[str, Any] | None:
    """`{json}` or `field=value ...` (each value JSON if it parses, else a string)."""
    if not text:
        return None
    if text.startswith("{"):
        value = json.loads(text)
        if not isinstance(value, dict):
            raise ValueError("a payload must be a JSON object")
        return value
    out: dict[str, Any] = {}
    for part in shlex.split(text):
        name, sep, raw = part.partition("=")
        if not sep:
            raise ValueError(f"expected field=value, got {part!r}")
        try:
            out[name] = json.loads(raw)
        except ValueError:
            out[name] = raw
    return out


def _type_words(schema: dict[str, Any]) -> str:
    if "enum" in schema:
        return "|".join(schema["enum"])
    if "anyOf" in schema:
        return " | ".join(_type_words(s) for s in schema["anyOf"])
    kind = schema.get("type", "any")
    if kind == "array":
        return f"list[{_type_words(schema.get('items', {}))}]"
    if kind == "object" and "additionalProperties" in schema and schema.get("title") is None:
        extra = schema["additionalProperties"]
        if isinstance(extra, dict):
            return f"map[{_type_words(extra)}]"
    if kind == "object" and schema.get("title"):
        return str(schema["title"])
    return str(kind)


def _upgraded(machine: Machine, path: Path) -> dict[str, Any]:
    """The snapshot in `path`, moved to `machine`'s version through the flow's own `migrate
    from N` blocks when it was written under an older one."""
    data: Any = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError("a snapshot is a JSON object")
    version = data.get("version")
    if type(version) is int and version < machine.version:
        return migrate_snapshot(data, machine, ())
    return data
