"""Pending scheduled events in `status` and the `snapshot.json` resource: listed with their id,
event and due time, their payload only as the flow grants it (never an internal event's; not
one computed from a hidden field), through the real `flowc mcp` server and the MCP SDK client."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest

from agent_hosts.mcp_client import call, stdio_session
from flowc.runtime import Machine
from flowc.runtime.scheduled_view import visible_scheduled, withheld_parts

REMINDERS = Path(__file__).parent / "flows" / "reminders.flow"
EMAIL = "ada@example.com"


def test_status_lists_pending_scheduled_events_as_the_flow_grants(tmp_path: Path) -> None:
    async def body() -> None:
        async with stdio_session([REMINDERS], f"sqlite:///{tmp_path / 'f.db'}") as s:
            _, started = await call(s, "start", context={"ticket": "T-17", "email": EMAIL})
            iid = started["instance_id"]
            _, before = await call(s, "status", instance_id=iid)
            assert "scheduled" not in before  # nothing pending: no member
            sent = datetime.now().astimezone()
            error, _ = await call(s, "submit", instance_id=iid)
            assert not error
            error, status = await call(s, "status", instance_id=iid)
            assert not error
            await _check_status(status["scheduled"], sent)

            resource = await s.read_resource(f"flowc://instances/{iid}/snapshot.json")
            text = resource.contents[0].text  # type: ignore[union-attr]
            assert EMAIL not in text
            assert json.loads(text)["sends"] == status["scheduled"]

    anyio.run(body)


async def _check_status(scheduled: list[dict[str, Any]], sent: datetime) -> None:
    by_event = {x["event"]: x for x in scheduled}
    assert EMAIL not in json.dumps(scheduled)
    # Soonest first; the one whose delay is hidden comes last.
    assert [x["event"] for x in scheduled] == [
        "remind",
        "answer",
        "escalate",
        "forward",
        "call",
        "ping",
    ]
    # An internal event: listed, marked, its payload withheld.
    remind = by_event["remind"]
    assert remind.keys() == {"id", "event", "due", "internal"}
    assert remind["id"] == "T-17" and remind["internal"] is True
    due = datetime.fromisoformat(remind["due"])
    assert timedelta(minutes=59) < due - sent < timedelta(minutes=61)
    # An event a model may send, with a payload from literals: all of it.
    assert by_event["answer"]["payload"] == {"note": "no answer yet"}
    assert by_event["answer"]["id"] == "auto" and by_event["answer"]["internal"] is False
    # A payload, an id or a delay computed from a hidden field (directly, or through the
    # payload of an event raised with one): that part is withheld, the rest shown.
    assert "payload" not in by_event["escalate"] and by_event["escalate"]["id"].startswith("#")
    assert "payload" not in by_event["forward"] and by_event["forward"]["id"] == "forward"
    assert "id" not in by_event["call"] and by_event["call"]["payload"] == {}
    assert "due" not in by_event["ping"] and by_event["ping"]["payload"] == {"to": "desk"}


def test_withheld_parts_follow_hidden_values_into_sends() -> None:
    machine = Machine.from_file(REMINDERS)
    assert withheld_parts(machine) == {
        "remind": {"payload"},  # internal
        "relay": {"payload"},  # internal
        "escalate": {"payload"},  # `to: email`
        "forward": {"payload"},  # `to: event.to` of `relay(to: email)`
        "notify": {"payload"},  # `to: contact`, a local of `for contact in contacts`
        "call": {"id"},  # `as email`
        "ping": {"due"},  # `after wait_minutes m`
    }


@pytest.mark.parametrize(
    ("actions", "withheld"),
    [
        ('send nudge(note: "hi") after 1h', set()),
        ("send nudge(note: secret) after 1h", {"payload"}),
        ('send nudge(note: "x") after 1h as secret', {"id"}),
        ('send nudge(note: "x") after delay m', {"due"}),
        ('for s in secrets { send nudge(note: s) after 1h as "n" }', {"payload"}),
        ('for s in open_list { send nudge(note: s) after 1h as "n" }', set()),
        ('if secret == "" { send nudge(note: "x") after 1h }', set()),  # values, not control
    ],
)
def test_what_counts_as_computed_from_a_hidden_field(actions: str, withheld: set[str]) -> None:
    machine = Machine.from_source(
        'flow f\ncontext { hidden secret: str = "s", hidden delay: int = 5,\n'
        "  hidden secrets: list[str] = [], open_list: list[str] = [] }\n"
        "event go\nevent nudge(note: str)\n"
        f"initial state A {{\n  on go -> A do {actions}\n  on nudge -> A\n}}\n"
    )
    assert withheld_parts(machine).get("nudge", frozenset()) == withheld


def test_a_flow_without_hidden_fields_shows_every_scheduled_tool_event() -> None:
    machine = Machine.from_source(
        "flow f\ncontext { n: int = 0 }\nevent go\nevent nudge(n: int)\ninternal event tick\n"
        "initial state A {\n  on go -> A do send nudge(n: n) after 1h; send tick after 1m\n"
        "  on nudge, tick -> A\n}\n"
    )
    instance = machine.start()
    instance.send("go")
    shown = visible_scheduled(machine, instance.scheduled)
    assert [(x["event"], x["internal"], x.get("payload")) for x in shown] == [
        ("tick", True, None),
        ("nudge", False, {"n": 0}),
    ]
    assert all(isinstance(x["due"], str) for x in shown)
