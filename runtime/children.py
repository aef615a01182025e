"""Child flows (IR version 5): the tree of instances that a flow's `invoke`s make.

A state that invokes a flow starts a child instance of it when a step enters the state (and
the state is still active when the step ends), one per item for a fan-out (`for x in xs`),
and cancels its children when a step leaves it. Parent and children talk through messages:
a child's completion (`done.invoke.ID` with its done data; a fan-out's once its `join` is
met) or failure (`error.invoke.ID`), and `send E to parent|ID`. Messages wait in one FIFO
inbox held by the root and are delivered after the step that sent them, each as a step of its
receiver (history kind `message`; a refused one is dropped, as SCXML drops an event no
transition takes).

To a host and a store the tree is one instance: the root's snapshot holds every child's
(`Instance.snapshot`), so a spawn is saved with the step that entered its state, and a
delivery with its effect; the root's `advance` fires every timer of the tree in deadline
order. Each instance of a tree has a `Node` (`Instance._tree`): the engine's commit tells it
what the step entered and left (`Node.committed`); the host's calls go through `host_step`,
which delivers the inbox afterwards (`Node.drain`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple, TypeAlias, TypeVar

from flowc.runtime import engine
from flowc.runtime import rejections as R
from flowc.runtime.expr import FAULTS, LOCAL_PREFIX, ExprFault
from flowc.runtime.outputs import current_outputs, detached
from flowc.runtime.rejections import Rejection, SnapshotError
from flowc.runtime.steps import _AT, _EVENT, _KIND, _PAYLOAD, Outcome, StepResult, _new, copy_json

if TYPE_CHECKING:
    from flowc.runtime.engine import Macrostep, Started
    from flowc.runtime.flow import CInvoke, CState
    from flowc.runtime.instance import Instance
    from flowc.runtime.machine import Machine
    from flowc.runtime.outputs import Scheduling

_T = TypeVar("_T")
#: Where a child goes: its parent's node, its path from the root, its invoke, its position.
Place: TypeAlias = "tuple[Node, tuple[str, ...], str, int | None]"
#: Messages one host call delivers at most; the rest wait for the next call (`advance`), so a
#: parent and a child sending each other messages for ever cannot hang a host.
MAX_DELIVERIES = 1_000
#: The `kind` of an `error.invoke.ID` when a fan-out can no longer reach its join.
JOIN_FAILED = "join"


class Message(NamedTuple):
    """One message in the inbox. `to` and `sender` are paths of child ids from the root
    (`()`: the root; `sender` None: sent by the receiver's parent, or a forwarded event).
    `kind`: `send` (the event `event`), `done` / `error` (a child's end: `event` is its
    invoke's id, `payload` its done data or `{kind, message}`), `joined` / `failed` (the
    receiver's own invoke, met or failed as it started: `event` is its id, `payload` the
    payload of `done.invoke.ID` / `error.invoke.ID`)."""

    to: tuple[str, ...]
    sender: tuple[str, ...] | None
    kind: str
    event: str
    payload: dict[str, Any] | None
    at: int
    #: `joined` / `failed`, and a child's `done` / `error`: the parent's step that entered the
    #: invoke's state (a later entry's join is another one)
    seq: int = -1
    #: a fan-out child's `done` / `error`: its position
    item: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "to": list(self.to),
            "sender": None if self.sender is None else list(self.sender),
            "kind": self.kind,
            "event": self.event,
            "payload": copy_json(self.payload),
            "at": self.at,
            "seq": self.seq,
            "item": self.item,
        }

    @classmethod
    def from_json(cls, raw: Any) -> Message:
        sender = raw["sender"]
        return cls(
            tuple(map(str, raw["to"])),
            None if sender is None else tuple(map(str, sender)),
            str(raw["kind"]),
            str(raw["event"]),
            copy_json(raw.get("payload")),
            int(raw["at"]),
            int(raw.get("seq", -1)),
            None if raw.get("item") is None else int(raw["item"]),
        )


class Join:
    """The children one invoke started at one entry of its state, and what came back: the
    done data of each (by position), how many finished and failed, how many must finish."""

    __slots__ = ("failed", "fan", "finished", "invoke", "needed", "results", "seq")

    def __init__(self, invoke: str, seq: int, total: int, needed: int, fan: bool) -> None:
        self.invoke = invoke
        #: the parent's step that entered the state (part of each child's id)
        self.seq = seq
        self.fan = fan
        self.needed = needed
        self.results: list[dict[str, Any] | None] = [None] * total
        self.finished: list[bool] = [False] * total
        self.failed = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "invoke": self.invoke,
            "seq": self.seq,
            "fan": self.fan,
            "needed": self.needed,
            "results": copy_json(self.results),
            "finished": list(self.finished),
            "failed": self.failed,
        }

    @classmethod
    def from_json(cls, raw: Any) -> Join:
        join = cls(str(raw["invoke"]), int(raw["seq"]), 0, int(raw["needed"]), bool(raw["fan"]))
        join.results = copy_json(list(raw["results"]))
        join.finished = [bool(x) for x in raw["finished"]]
        join.failed = int(raw["failed"])
        if len(join.results) != len(join.finished):
            raise ValueError("a join's results and finished flags differ in length")
        return join


class Node:
    """The place of one instance in a tree: its parent, its path from the root, the invoke
    that started it, its live children and joins; the root's inbox is shared by every node."""

    __slots__ = ("busy", "inbox", "index", "inst", "invoke", "joins", "kids", "log", "path", "up")

    def __init__(
        self,
        inst: Instance,
        up: Node | None,
        path: tuple[str, ...],
        invoke: str | None,
        index: int | None,
    ) -> None:
        self.inst = inst
        self.up = up
        self.path = path
        #: the invoke of the parent that started this instance, its position in a fan-out
        self.invoke = invoke
        self.index = index
        #: child id -> child instance, in start order
        self.kids: dict[str, Instance] = {}
        #: invoke id -> its join (the children of the invoke's current entry)
        self.joins: dict[str, Join] = {}
        self.inbox: list[Message] = up.inbox if up is not None else []
        #: the root only: a host call is running (the instance methods do not wrap again)
        self.busy = False
        #: the root only, during a host call: its steps committed in the call, in order (its
        #: children's as their `child` entries)
        self.log: list[StepResult] | None = None

    @property
    def root(self) -> Node:
        node = self
        while node.up is not None:
            node = node.up
        return node

    def walk(self) -> Iterator[Node]:
        """This node and every descendant, parents before children, in start order."""
        yield self
        for kid in self.kids.values():
            assert kid._tree is not None
            yield from kid._tree.walk()

    def find(self, path: tuple[str, ...]) -> Instance | None:
        """The instance at `path` below this node (None: gone)."""
        inst = self.inst
        for cid in path:
            assert inst._tree is not None
            inst = inst._tree.kids.get(cid)  # type: ignore[assignment]
            if inst is None:
                return None
        return inst

    # ---- what a step does to the tree --------------------------------------------------------
    def committed(
        self,
        inst: Instance,
        run: Macrostep,
        config: tuple[CState, ...],
        sent: list[Scheduling],
        now: int,
        step: StepResult | None = None,
    ) -> None:
        """After a committed step of `inst` (`step`; None: its start): the children of the
        states it left are cancelled, those of the states it entered (still active) started,
        its messages queued, and, when it ended, its children cancelled and its parent told.
        A child's step is written into the root's history at once, as an entry of kind
        `child` (`_child_entry`), so the tree has one history in causal order; the root's
        steps go into its log of the call (`host_step`)."""
        seq = inst._seq  # (the step's: the children started below add entries to a root)
        root = self.root
        if self.up is not None:
            entry = _child_entry(root.inst, "/".join(self.path), step or inst)
            if root.log is not None:
                root.log.append(entry)
        elif root.log is not None and step is not None:
            root.log.append(step)
        for s in run.exited:
            for inv in s.invokes:
                self.cancel(inv.id)
        if run.final:
            for invoke in list(self.joins):
                self.cancel(invoke)
        else:
            for s in config:
                if s.invokes and s in run.entered:
                    for inv in s.invokes:
                        self.spawn(s, inv, seq, now)
        for op in sent:
            self.post(op, now)
        if run.final and self.up is not None:
            self.report_end(now)

    def started(self, started: Started, now: int) -> None:
        """After the start of this node's instance: as `committed` for the start's step."""
        self.committed(self.inst, started.run, started.config, started.messages, now)

    def post(self, op: Scheduling, now: int) -> None:
        """Queue a message its actions sent: to the parent, or to the live children of an
        invoke (none: dropped)."""
        assert op.event is not None and op.to is not None
        payload = copy_json(op.payload)
        if op.to == "parent":
            if self.up is not None:
                self.inbox.append(Message(self.up.path, self.path, "send", op.event, payload, now))
            return
        for cid, kid in self.kids.items():
            if kid._tree is not None and kid._tree.invoke == op.to and not kid.is_final:
                self.inbox.append(Message((*self.path, cid), None, "send", op.event, payload, now))

    def forward(self, event: str, payload: Any, now: int) -> None:
        """An external event the instance took (a host's, a scheduled one, a message), sent
        on to the children of its `forward` invokes (as SCXML's `autoforward`: the child that
        sent it too)."""
        forwarding = {
            inv.id for s in engine.configuration_of(self.inst) for inv in s.invokes if inv.forward
        }
        if not forwarding:
            return
        for cid, kid in self.kids.items():
            if kid._tree is not None and kid._tree.invoke in forwarding and not kid.is_final:
                given = copy_json(payload)
                self.inbox.append(Message((*self.path, cid), None, "send", event, given, now))

    def cancel(self, invoke: str) -> None:
        """Forget the invoke's children (and, with them, theirs): a message from one of them
        no longer finds its sender and is dropped."""
        if self.joins.pop(invoke, None) is None:
            return
        for cid in self._kids_of(invoke):
            _detach(self.kids.pop(cid))

    def report_end(self, now: int) -> None:
        """This child has ended: its done data to its parent."""
        assert self.up is not None and self.invoke is not None
        inst = self.inst
        value = inst._state.done_value
        data: dict[str, Any] | None = None
        if value is not None:
            try:
                data = copy_json(value(inst._ctx, None, inst._state))
            except FAULTS as exc:
                self.report_error(
                    R.EXPRESSION_ERROR, f"the done data of {inst._state.name}: {exc}", now
                )
                return
        self.inbox.append(self._end("done", data, now))

    def report_error(self, kind: str, message: str, now: int) -> None:
        self.inbox.append(self._end("error", _error(kind, message), now))

    def _end(self, kind: str, payload: dict[str, Any] | None, now: int) -> Message:
        """This child's `done` or `error` message to its parent."""
        assert self.up is not None and self.invoke is not None
        # The entry of the invoke's state it belongs to: its id is `ID.SEQ[.K]`.
        entry = int(self.path[-1][len(self.invoke) + 1 :].split(".")[0])
        up = self.up.path
        return Message(up, self.path, kind, self.invoke, payload, now, entry, self.index)

    # ---- starting children -------------------------------------------------------------------
    def spawn(self, state: CState, inv: CInvoke, seq: int, now: int) -> None:
        """Start the children of `inv` for the step `seq` that entered `state`."""
        inst = self.inst
        base = f"{inv.id}.{seq}"
        if inv.id_target and not inv.fan_out:
            _set_path(inst, inv.id_target, _global_id(inst, base))  # (its input may read it)
        try:
            inputs = _inputs(inst, state, inv, base)
        except FAULTS as exc:
            join = self.joins[inv.id] = Join(inv.id, seq, 0, 0, inv.fan_out)
            why = _error(R.EXPRESSION_ERROR, f"the input of invoke {inv.id}: {exc}")
            self._queue(join, "failed", why, now)
            return
        total = len(inputs)
        needed = total if inv.join is None else inv.join
        join = self.joins[inv.id] = Join(inv.id, seq, total, needed, inv.fan_out)
        if inv.id_target and inv.fan_out and inputs:
            _set_path(inst, inv.id_target, _global_id(inst, inputs[0][0]))  # (the first's)
        if needed > total:
            message = f"invoke {inv.id} needs {needed} of its children, and has {total}"
            self._queue(join, "failed", _error(JOIN_FAILED, message), now)
            return
        if needed == 0:
            self._queue(join, "joined", {"results": []}, now)
            return
        machine = inst._m.child_machine(inv.flow)
        for cid, k, given in inputs:
            self._start_child(machine, inv, join, (cid, k, given), now)

    def _start_child(
        self,
        machine: Machine,
        inv: CInvoke,
        join: Join,
        child: tuple[str, int | None, Any],
        now: int,
    ) -> None:
        """Start one child (id, position, context); one whose start is refused fails (in a
        fan-out, counted)."""
        inst = self.inst
        cid, index, given = child
        place = (self, (*self.path, cid), inv.id, index)
        # (the parent's class: this module does not import instance.py, which imports it;
        # no collector of the parent's step or start: the child's start collects its own)
        with detached():
            started = type(inst)._start(machine, given, _global_id(inst, cid), inst._clock, place)
        if not isinstance(started, Rejection):
            self.kids[cid] = started
            return
        if not join.fan:
            self._queue(join, "failed", _error(started.code, started.message), now)
            return
        join.failed += 1
        if len(join.finished) - join.failed == join.needed - 1:  # (just became unreachable)
            self._queue(join, "failed", _join_failure(join) or {}, now)

    # ---- delivering --------------------------------------------------------------------------
    def drain(self) -> None:
        """Deliver the inbox in order (at most `MAX_DELIVERIES`)."""
        for _ in range(MAX_DELIVERIES):
            if not self.inbox:
                return
            self.deliver(self.inbox.pop(0))

    def deliver(self, msg: Message) -> Outcome | None:
        """One message to its receiver (dropped when the receiver, or the child that sent
        it, is gone)."""
        target = self.find(msg.to)
        if target is None or target.is_final:
            return None
        node = target._tree
        assert node is not None
        if msg.kind in ("joined", "failed"):
            join = node.joins.get(msg.event)
            if join is None or join.seq != msg.seq:
                return None  # the invoke's state was left meanwhile
            if msg.kind == "failed":
                return node._deliver_error(msg.event, msg.payload or {}, msg.at)
            return _deliver(target, f"done.invoke.{msg.event}", msg.payload, msg.at)
        if msg.sender is not None:
            # (a message a child sent before its state was left is still delivered, as SCXML
            # keeps what was queued; a child cancelled since is detached and sends nothing here)
            kid = node.kids.get(msg.sender[-1])
            if msg.kind != "send":
                return node.child_ended(kid, msg)
            if kid is not None:
                node._finalize(kid, msg)
        out = _deliver(target, msg.event, msg.payload, msg.at)
        forwarded(target, out)
        return out

    def child_ended(self, kid: Instance | None, msg: Message) -> Outcome | None:
        """A child's `done` or `error`: counted toward its invoke's join; the parent gets
        `done.invoke.ID` once the join is met, `error.invoke.ID` once it no longer can be. The
        end of a single child whose state was left since it ended is still told (a fan-out's
        join is gone with its state: dropped)."""
        node = kid._tree if kid is not None else None
        join = self.joins.get(msg.event)
        if kid is None or node is None or join is None or join.seq != msg.seq:
            if msg.item is not None:
                return None
            event = f"{'done' if msg.kind == 'done' else 'error'}.invoke.{msg.event}"
            return _deliver(self.inst, event, msg.payload, msg.at)
        self._finalize(kid, msg)
        if msg.kind == "error":
            if not join.fan:
                return self._deliver_error(join.invoke, msg.payload or {}, msg.at)
            join.failed += 1
            failed = _join_failure(join)
            return None if failed is None else self._deliver_error(join.invoke, failed, msg.at)
        k = node.index or 0
        join.finished[k] = True
        join.results[k] = msg.payload
        if sum(join.finished) == join.needed:
            return self._done(join, msg.at)
        return None

    def _done(self, join: Join, now: int) -> Outcome:
        """The invoke's join is met: the children still running are cancelled (the join stays
        until its state is left) and the parent gets `done.invoke.ID`."""
        for cid in self._kids_of(join.invoke):
            if not self.kids[cid].is_final:
                _detach(self.kids.pop(cid))
        if join.fan:
            done = zip(join.results, join.finished, strict=True)
            payload: dict[str, Any] | None = {"results": [r for r, f in done if f]}
        else:
            payload = join.results[0] if join.results else None
        return _deliver(self.inst, f"done.invoke.{join.invoke}", payload, now)

    def _queue(self, join: Join, kind: str, payload: dict[str, Any], now: int) -> None:
        """Queue this instance's own `done.invoke.ID` (`joined`) or `error.invoke.ID`
        (`failed`): an invoke met or failed as it started."""
        self.inbox.append(Message(self.path, None, kind, join.invoke, payload, now, join.seq))

    def _deliver_error(self, invoke: str, payload: dict[str, Any], now: int) -> Outcome:
        """`error.invoke.ID`: the invoke's children are cancelled first."""
        self.cancel(invoke)
        return _deliver(self.inst, f"error.invoke.{invoke}", payload, now)

    def _kids_of(self, invoke: str) -> list[str]:
        return [cid for cid, kid in self.kids.items() if _invoke_of(kid) == invoke]

    def _finalize(self, kid: Instance, msg: Message) -> None:
        """The `finalize` actions of the invoke that started `kid`, before its message is
        taken (on the context, as SCXML's `<finalize>`; a fault leaves the context as it was)."""
        inst = self.inst
        invoke = _invoke_of(kid)
        for s in engine.configuration_of(inst):
            for inv in s.invokes:
                if inv.id != invoke:
                    continue
                inst._m.invoke_parts(inv)
                if inv.finalize is not None:
                    c = dict(inst._ctx)
                    try:
                        inv.finalize(c, msg.payload, s)
                    except FAULTS:
                        return
                    inst._ctx = c
                return


# ---- host calls --------------------------------------------------------------------------------
def attach(inst: Instance, place: Place | None, started: Started) -> None:
    """Give a new instance of a tree its node (`place`: a child's; None: a root), and do what
    its start's step does to the tree (`Node.committed`)."""
    if place is None:
        node = Node(inst, None, (), None, None)
        node.log = []  # what the start leads to (`settle_start`)
    else:
        up, path, invoke, index = place
        node = Node(inst, up, path, invoke, index)
    inst._tree = node
    node.started(started, started.entry[_AT])


def settle_start(inst: Instance) -> None:
    """After a root's start: the inbox delivered, and what its children did recorded in its
    history (entries of kind `child`); their effects join the start's (`start_effects`)."""
    node = inst._tree
    assert node is not None
    node.busy = True
    try:
        node.drain()
        log, node.log = node.log or [], None
        effects = list(inst._fx or ())
        for step in log:
            effects += getattr(step, "_fx", ())
        inst._fx = effects or None
    finally:
        node.busy = False
        node.log = None


def host_step(inst: Instance, step: Callable[[], _T], event: str | None) -> _T:
    """A host's call on an instance of a tree: the step, then (for an event the instance
    took) forwarding, then the inbox delivered. What else the call committed in the tree is
    recorded in the root (`record`) and, on a committed step, listed in its `then`."""
    node = inst._tree
    assert node is not None
    root = node.root
    root.busy = True
    root.log = []
    try:
        out = step()
        if event is not None and isinstance(out, (StepResult, Rejection)):
            forwarded(inst, out)
        root.drain()
        log, root.log = root.log, None
        then = [step for step in log if step is not out]
        if isinstance(out, StepResult) and then:
            out._then = tuple(then)
        elif isinstance(out, list):  # `advance`: every step of the root, its refusals after
            out[:] = [*then, *(o for o in out if isinstance(o, Rejection))]
    finally:
        root.busy = False
        root.log = None
    return out


def _child_entry(root: Instance, path: str, step: StepResult | Instance) -> StepResult:
    """The root's history entry of a child's step (or start): kind `child`, the root's state
    as source and target, the child's event, `{"child": PATH, "seq", "from", "to"}` as
    payload; it carries the child step's effects (a store's outbox is keyed by the root's
    steps)."""
    if isinstance(step, StepResult):
        at, event, effects = step._e[_AT], step._e[_EVENT], getattr(step, "_fx", None)
        data = {"child": path, "seq": step.seq, "from": step.source, "to": step.target}
    else:  # a child's start: its effects are still in its start's collector
        out = current_outputs()
        at, event = step._history[-1][_AT], None
        effects = list(out.effects) if out is not None else step._fx
        data = {"child": path, "seq": 0, "from": None, "to": step.state}
    seq = root._seq + 1
    at = max(at, root._history[-1][_AT])
    name = root._state.name
    entry = (seq, at, "child", name, name, event, data, None, (), None)
    root._history.append(entry)
    root._seq = seq
    r: StepResult = _new(StepResult)
    r._e = entry
    r._c = root._ctx
    r._m = root._m
    if root._m.chart:
        r._g = tuple(s.name for s in engine.configuration_of(root))
    if effects:
        r._fx = list(effects)
    return r


def advance(node: Node, when: int) -> list[Outcome]:
    """Fire every timer and scheduled event of the tree due at `when`, earliest first (ties:
    parents before children), delivering the inbox after each; the root's steps, in order."""
    root = node.inst
    out: list[Outcome] = []
    node.drain()  # (what an earlier call left: once, bounded, as any call delivers)
    while True:
        due = earliest(node, inbox=False)
        if due is None or due[0] > when:
            break
        fired = engine.fire_due(due[1], due[0])
        for step in fired:
            forwarded(due[1], step)
            if isinstance(step, Rejection) and due[1] is root:
                out.append(step)  # (a refused timer of the root: its rejection is told)
        node.drain()
    node.drain()
    return out


def earliest(node: Node, inbox: bool = True) -> tuple[int, Instance] | None:
    """The earliest deadline in the tree and the instance it belongs to; with `inbox`,
    messages left over by a call past `MAX_DELIVERIES` are due at once (at the root's last
    step), so that a worker's next `advance` delivers them."""
    best: tuple[int, Instance] | None = None
    if inbox and node.up is None and node.inbox:
        best = (node.inst._history[-1][_AT], node.inst)
    for n in node.walk():
        inst = n.inst
        if inst.is_final:
            continue
        for pending in (inst._timers, inst._sends):
            if pending:
                due = pending[0][0]  # (a timer's and a scheduled event's deadline)
                if best is None or due < best[0]:
                    best = (due, inst)
    return best


# ---- snapshots ---------------------------------------------------------------------------------
def snapshot_into(node: Node, snap: dict[str, Any], tree_format: str) -> None:
    """A tree's part of an instance's snapshot: its children (each with its own snapshot, so
    with theirs), its joins, and at the root the inbox; `tree_format` when it has any."""
    kids = [
        {
            "id": cid,
            "invoke": _invoke_of(kid),
            "index": kid._tree.index if kid._tree is not None else None,
            "snapshot": kid.snapshot(),
        }
        for cid, kid in node.kids.items()
    ]
    inbox = [m.to_json() for m in node.inbox] if node.up is None else []
    if not (kids or node.joins or inbox):
        return
    snap["format"] = tree_format
    snap["children"] = kids
    snap["joins"] = [j.to_json() for j in node.joins.values()]
    if inbox:
        snap["inbox"] = inbox


def restore(inst: Instance, data: Mapping[str, Any], place: Place | None) -> None:
    """Give a restored instance its node, and restore its children, joins and inbox."""
    up, path, invoke, index = place if place is not None else (None, (), None, None)
    node = inst._tree = Node(inst, up, path, invoke, index)
    m = inst._m
    try:
        for raw in data.get("joins") or ():
            join = Join.from_json(raw)
            node.joins[join.invoke] = join
        for raw in data.get("children") or ():
            cid, inv = str(raw["id"]), m.invokes[raw["invoke"]]
            where = (node, (*path, cid), inv.id, raw.get("index"))
            machine = m.child_machine(inv.flow)
            child = type(inst)._restore(machine, raw["snapshot"], inst._clock, False, where)
            node.kids[cid] = child
        if up is None:
            node.inbox[:] = [Message.from_json(x) for x in data.get("inbox") or ()]
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise SnapshotError(
            f"the snapshot's children of {m.name} cannot be restored: {type(exc).__name__}: {exc}"
        ) from None


def end_invoke(
    inst: Instance, invoke: str, payload: dict[str, Any] | None, failed: bool = False
) -> Outcome | None:
    """As if the current children of `invoke` had finished with `payload` as the done event's
    (or failed with it as the error event's): its children are cancelled and the event
    delivered, then the inbox. What `flowc paths` and `flowc explore` do to treat a child as a
    black box that may finish or fail. None when the invoke has no current children; a
    refused event leaves them running."""
    node = inst._tree
    if node is None or invoke not in node.joins:
        return None
    event = f"{'error' if failed else 'done'}.invoke.{invoke}"
    join = node.joins[invoke]

    def end() -> Outcome:
        out = _deliver(inst, event, payload, inst._history[-1][_AT])
        if isinstance(out, StepResult) and node.joins.get(invoke) is join:
            node.cancel(invoke)  # (taken without leaving the state: they are done all the same)
        return out

    return host_step(inst, end, None)


def on_child(
    inst: Instance, path: str, op: Callable[[Instance], Outcome], event: str | None
) -> Outcome:
    """A host's step `op` on the descendant of `inst` at `path` (`Instance.child`), or
    `unknown_child` when there is none (what a store's and `flowc run`'s `child=` do)."""
    try:
        target = inst.child(path)
    except KeyError:
        m = inst._m
        state = inst._state
        return m.rejection(R.UNKNOWN_CHILD, state, event, None, inst._ctx, {"child": path})
    return op(target)


def find_child(inst: Instance, part: str) -> Instance | None:
    """One level of `Instance.child`: a child id, an invoke's id (its current child, the
    last started), or `ID[K]` (a fan-out's child at position K)."""
    node = inst._tree
    if node is None:
        return None
    if part in node.kids:
        return node.kids[part]
    invoke, index = part, None
    if part.endswith("]") and "[" in part:
        invoke, _, k = part[:-1].partition("[")
        if not k.isdigit():
            return None
        index = int(k)
    join = node.joins.get(invoke)
    if join is None:
        return None
    cid = f"{invoke}.{join.seq}" if not join.fan else f"{invoke}.{join.seq}.{index}"
    if join.fan and index is None:
        return None
    return node.kids.get(cid)


def forwarded(inst: Instance, out: Outcome) -> None:
    """Forward the external event of a step (`Node.forward`): one the instance took, or one
    its flow ignores (`unhandled ignore`: taken, with nothing to do)."""
    node = inst._tree
    if node is None or not inst._m.forwards:
        return
    if isinstance(out, StepResult):
        entry = out._e
        if entry[_KIND] in _EXTERNAL and entry[_EVENT] is not None:
            node.forward(entry[_EVENT], entry[_PAYLOAD], entry[_AT])
    elif out.code == R.IGNORED and out.event is not None:
        node.forward(out.event, None, inst._history[-1][_AT])


#: The step kinds that take an external event (a timer's and a `goto`'s have none).
_EXTERNAL = frozenset({"event", "scheduled", "message"})


# ---- helpers -----------------------------------------------------------------------------------
def _deliver(target: Instance, event: str, payload: Any, at: int) -> Outcome:
    """An event to an instance of the tree, as the flow's own (internal events allowed),
    recorded as a `message` step."""
    when = max(at, target._history[-1][_AT])
    return engine.send(target, event, payload, None, None, False, when, "message")


def _inputs(
    inst: Instance, state: CState, inv: CInvoke, base: str
) -> list[tuple[str, int | None, dict[str, Any]]]:
    """(child id, position, context) of each child to start."""
    given, each = inst._m.invoke_parts(inv)
    c = inst._ctx
    if each is None:
        return [(base, None, given(c, None, state) if given is not None else {})]
    items = each(c, None, state)
    if type(items) is not list:
        raise ExprFault(f"a fan-out needs a list, got {type(items).__name__}")
    if len(items) > inst._m.limits.max_items:
        raise ExprFault(f"a fan-out over {len(items):,} items")
    out: list[tuple[str, int | None, dict[str, Any]]] = []
    item_key = LOCAL_PREFIX + str(inv.raw.get("item"))
    index_key = LOCAL_PREFIX + str(inv.raw.get("index"))
    for k, item in enumerate(items):
        scope = dict(c)
        scope[item_key] = item
        scope[index_key] = k
        out.append((f"{base}.{k}", k, given(scope, None, state) if given is not None else {}))
    return out


def _global_id(inst: Instance, cid: str) -> str:
    return f"{inst.id}/{cid}" if inst.id else cid


def _set_path(inst: Instance, path: tuple[str, ...], value: str) -> None:
    """`into FIELD`: the child's id written into the context (a copy)."""
    c = dict(inst._ctx)
    if len(path) == 1:
        c[path[0]] = value
    else:
        inner = c
        for k in path[:-1]:
            inner[k] = dict(inner[k])
            inner = inner[k]
        inner[path[-1]] = value
    inst._ctx = c


def _detach(kid: Instance) -> None:
    """A cancelled child leaves the tree: a host still holding it drives a tree of its own
    (its messages to its parent go nowhere, nothing it does is recorded in its old root)."""
    node = kid._tree
    if node is None:
        return
    node.up = None
    inbox: list[Message] = []
    depth = len(node.path)
    for n in node.walk():
        n.path = n.path[depth:]
        n.inbox = inbox


def _invoke_of(kid: Instance) -> str | None:
    node = kid._tree
    return None if node is None else node.invoke


def _error(kind: str, message: str) -> dict[str, Any]:
    """The payload of `error.invoke.ID`."""
    return {"kind": kind, "message": message}


def _join_failure(join: Join) -> dict[str, Any] | None:
    """The `error.invoke.ID` payload of a fan-out that can no longer meet its join, or None."""
    if len(join.finished) - join.failed >= join.needed:
        return None
    message = (
        f"invoke {join.invoke}: {join.failed} of its {len(join.finished)} children failed; "
        f"{join.needed} had to finish"
    )
    return _error(JOIN_FAILED, message)
