"""What a model may see of an instance's pending scheduled events (`send E after D as ID`).

`status` (`ToolDispatcher`, `flowc mcp`) and the `snapshot.json` resource list each pending one
with its `id`, `event`, `due` (ISO 8601) and whether the event is `internal`. Its `payload` is
shown only when the flow grants it, by the rules `hidden` context fields set elsewhere:

- the payload of an `internal` event is never shown: only the flow sends and reads it (a model
  can neither send nor answer one), so a model needs none of it, and it is where a flow keeps
  its own bookkeeping;
- the payload of an event a model may send is shown (its fields are that tool's own arguments,
  and `history` shows them once it fires), unless some `send` or `raise` of that event in the
  flow computes its payload from a `hidden` field.

The same goes for `id` and `due`: withheld for an event when some `send` of it computes its
id (`as ...`) or its delay from a hidden field. "Computes from" follows values, not control:
a hidden field read directly, a local of an `each` over a value read from one, or `event.X` in
a rule whose event carries such a payload (to a fixpoint). A hidden value that the flow copies
into a field not marked `hidden` is shown there already (`status`'s context), so it is the
flow's choice, not a leak of this view.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from datetime import datetime
from typing import Any

from flowc.runtime.machine import Machine
from flowc.runtime.tools import hidden_fields, tool_events

#: The parts of a pending scheduled event a `send` computes from its action's members.
_PARTS = (("payload", "value"), ("id", "key"), ("due", "delay"))


def visible_scheduled(
    machine: Machine, scheduled: Iterable[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """`scheduled` (`Instance.scheduled`, or a snapshot's `sends`: `id`, `event`, `due` as a
    datetime or ISO text, `payload`) as a model may see them: soonest first as given, then
    those whose `due` is withheld (their place in the order would tell it), by event and id."""
    entries = list(scheduled)
    if not entries:
        return []
    withheld = withheld_parts(machine)
    # (`own_events`: the events declared `internal`; the runtime's `internal_events` are the
    # `done.state.*` ones it raises itself)
    internal = machine.own_events
    shown: list[dict[str, Any]] = []
    for x in entries:
        event = str(x["event"])
        due = x["due"]
        entry: dict[str, Any] = {
            "id": x["id"],
            "event": event,
            "due": due.isoformat() if isinstance(due, datetime) else due,
            "internal": event in internal,
            "payload": x.get("payload"),
        }
        for part in withheld.get(event, ()):
            del entry[part]
        shown.append(entry)
    return [e for e in shown if "due" in e] + sorted(
        (e for e in shown if "due" not in e), key=lambda e: (e["event"], str(e.get("id", "")))
    )


def withheld_parts(machine: Machine) -> dict[str, frozenset[str]]:
    """Event -> the parts of its pending scheduled events a model may not see (`payload`,
    `id`, `due`); an event not named shows them all."""
    sendable = set(tool_events(machine))
    withheld: dict[str, set[str]] = {e: {"payload"} for e in machine.events if e not in sendable}
    hidden = hidden_fields(machine)
    if hidden:
        for event, part in _secret_parts(machine.raw, hidden):
            withheld.setdefault(event, set()).add(part)
    return {e: frozenset(p) for e, p in withheld.items()}


def _secret_parts(raw: Mapping[str, Any], hidden: frozenset[str]) -> set[tuple[str, str]]:
    """(event, part) for each part some `send` or `raise` of the event computes from a hidden
    field. Repeated until no event is added: a rule reading `event.X` of an event whose payload
    is secret computes from it too."""
    blocks: list[tuple[str | None, Iterable[Any]]] = [
        (t.get("event"), t.get("actions") or ()) for t in raw.get("transitions", ())
    ]
    blocks += [
        (None, s.get(which) or ())
        for s in raw.get("states", ())
        for which in ("entry", "exit", "initial_actions")
    ]
    found: set[tuple[str, str]] = set()
    while True:
        secret_events = {e for e, part in found if part == "payload"}
        before = len(found)
        for trigger, actions in blocks:
            found |= _block_secrets(actions, hidden, trigger in secret_events)
        if len(found) == before:
            return found


def _block_secrets(
    actions: Iterable[Any], hidden: frozenset[str], event_secret: bool
) -> set[tuple[str, str]]:
    """The secret parts of the sends and raises in one block of actions, nested ones too."""
    found: set[tuple[str, str]] = set()
    stack: list[tuple[Mapping[str, Any], frozenset[str]]] = [(a, frozenset()) for a in actions]
    while stack:
        action, secret_locals = stack.pop()
        op = action.get("op")
        if op in ("send", "raise") and action.get("event"):
            for part, member in _PARTS:
                node = action.get(member)
                if node is not None and _reads_secret(node, hidden, secret_locals, event_secret):
                    found.add((str(action["event"]), part))
        inner = secret_locals
        value = action.get("value")
        if (
            op == "each"
            and value is not None
            and _reads_secret(value, hidden, secret_locals, event_secret)
        ):
            names = [*(action.get("target") or ()), action.get("index")]
            inner = secret_locals | {str(n) for n in names if n}
        for branch in action.get("branches") or ():
            stack.extend((a, inner) for a in branch.get("actions") or ())
    return found


def _reads_secret(
    node: Mapping[str, Any], hidden: frozenset[str], secret_locals: frozenset[str], event: bool
) -> bool:
    """Whether the expression reads a hidden field, a secret local, or (`event`) the payload
    of an event whose payload is secret."""
    stack = [node]
    while stack:
        expr = stack.pop()
        op = expr.get("op")
        value = expr.get("value")
        if (
            (op == "ctx" and value in hidden)
            or (op == "local" and value in secret_locals)
            or (op == "event" and event)
        ):
            return True
        stack.extend(expr.get("args") or ())
    return False


__all__ = ["visible_scheduled", "withheld_parts"]
