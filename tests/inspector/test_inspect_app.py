"""The inspector's JSON API and its guards, served in process (`embed.serve`) over an
embedded `DurableFlows`: the list's filters and pages on every store, the timeline's pages and
context changes, the live stream, and the steps: refused when read-only, from another origin,
without a reason; taken, one transaction each, otherwise."""

from __future__ import annotations

import http.client
import json
import socket
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from flowc.hosts.inspect.embed import serve
from flowc.runtime import FakeClock, Machine
from flowc.runtime.store import open_store
from flowc.runtime.store.durable import DurableFlows


@contextmanager
def served(flows: DurableFlows, *, allow_send: bool = False) -> Iterator[int]:
    """The inspector served in this process (`embed.serve`), on a free port."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    running = serve(flows, port=port, allow_send=allow_send)
    try:
        yield port
    finally:
        running.stop()


def call(
    port: int, path: str, body: Any = None, headers: dict[str, str] | None = None
) -> tuple[int, Any]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    sent = {"Content-Type": "application/json", **(headers or {})}
    if body is None:
        conn.request("GET", path, headers=headers or {})
    else:
        conn.request("POST", path, body=json.dumps(body), headers=sent)
    response = conn.getresponse()
    data = response.read()
    conn.close()
    try:
        return response.status, json.loads(data)
    except ValueError:
        return response.status, data.decode()


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def flows(
    request: pytest.FixtureRequest, sqlite_url: str, ticket: Machine, clock: FakeClock
) -> Iterator[DurableFlows]:
    """Ten tickets, one per second: odd ones triaged HIGH, every third solved."""
    url = {"memory": f"memory://{uuid.uuid4().hex}", "sqlite": sqlite_url}.get(request.param)
    if url is None:
        url = request.getfixturevalue("postgres_url")
    with DurableFlows(open_store(url, clock=clock), [ticket], clock=clock) as durable:
        for n in range(10):
            clock.advance(1)
            durable.start("ticket", {"customer": f"client-{n}"}, id=f"t{n}")
            durable.send(f"t{n}", "triage", {"priority": "HIGH" if n % 2 else "LOW"})
            if n % 3 == 0:
                durable.send(f"t{n}", "resolve")
        yield durable


def ids(port: int, query: str) -> list[str]:
    status, data = call(port, "/api/instances?" + query)
    assert status == 200, data
    return [row["id"] for row in data["instances"]]


def test_the_list_filters_and_pages(flows: DurableFlows, clock: FakeClock) -> None:
    with served(flows) as port:
        assert ids(port, "") == [f"t{n}" for n in range(9, -1, -1)]
        assert ids(port, "final=yes") == ["t9", "t6", "t3", "t0"]
        assert ids(port, "final=no&state=OPEN") == ["t8", "t7", "t5", "t4", "t2", "t1"]
        assert ids(port, "text=client-7") == ["t7"]
        assert ids(port, "text=HIGH&final=no") == ["t7", "t5", "t1"]
        assert ids(port, "text=_") == ids(port, "text=%25") == []  # LIKE's wildcards are text
        assert ids(port, "flow=ticket&version=1&limit=2") == ["t9", "t8"]
        assert ids(port, "version=2") == []
        assert ids(port, f"since={clock.now - 2.5}") == ["t9", "t8", "t7"]
        pages: list[str] = []
        after = ""
        while True:
            status, data = call(port, "/api/instances?limit=3" + after)
            pages += [row["id"] for row in data["instances"]]
            if data["next"] is None:
                break
            after = "&after=" + data["next"]
        assert pages == [f"t{n}" for n in range(9, -1, -1)]
        status, data = call(port, "/api/instances?version=x")
        assert status == 400


def test_the_instance_and_its_timeline_pages_with_context_changes(
    sqlite_url: str, ticket: Machine, clock: FakeClock
) -> None:
    with DurableFlows(open_store(sqlite_url, clock=clock), [ticket], clock=clock) as flows:
        flows.start("ticket", id="a")
        for n in range(7):
            flows.send("a", "note", {"text": f"n{n}"})
        with served(flows) as port:
            status, data = call(port, "/api/instances/a")
            assert (status, data["state"], data["seq"], data["allow_send"]) == (
                200,
                "NEW",
                7,
                False,
            )
            assert "events" not in data  # read-only: no forms
            status, page = call(port, "/api/instances/a/timeline?limit=3")
            assert [s["seq"] for s in page["steps"]] == [5, 6, 7]
            assert page["steps"][-1]["diff"] == [
                {
                    "field": "notes",
                    "op": "change",
                    "before": [f"n{n}" for n in range(6)],
                    "after": [f"n{n}" for n in range(7)],
                }
            ]
            assert page["steps"][-1]["journals"] == {"log": "note: NEW -> NEW"}
            status, older = call(
                port, f"/api/instances/a/timeline?limit=3&before={page['earlier']}"
            )
            assert [s["seq"] for s in older["steps"]] == [2, 3, 4]
            status, first = call(port, "/api/instances/a/timeline?limit=3&before=1")
            assert ([s["seq"] for s in first["steps"]], first["earlier"]) == ([0, 1], None)
            status, svg = call(port, "/api/instances/a/diagram.svg")
            assert status == 200 and "<svg" in svg
            assert call(port, "/api/instances/nope")[0] == 404


def test_read_only_refuses_every_step_and_changes_nothing(sqlite_url: str, ticket: Machine) -> None:
    with DurableFlows(open_store(sqlite_url), [ticket]) as flows:
        flows.start("ticket", id="a")
        before = flows.store.load("a")
        with served(flows) as port:
            action = {"do": "send", "event": "triage", "payload": {"priority": "LOW"},
                      "reason": "x"}  # fmt: skip
            status, data = call(port, "/api/instances/a/act", action)
            assert status == 403 and "read-only" in data["error"]
        assert flows.store.load("a") == before


def test_steps_need_a_reason_json_and_the_inspectors_own_origin(
    sqlite_url: str, ticket: Machine
) -> None:
    with DurableFlows(open_store(sqlite_url), [ticket]) as flows:
        flows.start("ticket", id="a")
        with served(flows, allow_send=True) as port:
            send = {"do": "send", "event": "triage", "payload": {"priority": "HIGH"}}
            assert call(port, "/api/instances/a/act", send)[0] == 400  # no reason
            evil = {"Origin": "http://evil.example"}
            assert call(port, "/api/instances/a/act", {**send, "reason": "r"}, evil)[0] == 403
            plain = {"Content-Type": "text/plain"}
            assert call(port, "/api/instances/a/act", {**send, "reason": "r"}, plain)[0] == 415
            assert call(port, "/api/instances", headers={"Host": "evil.example"})[0] == 400
            assert flows.store.load("a").seq == 0
            status, data = call(port, "/api/instances/a/act", {**send, "reason": "triaged"})
            assert (status, data["status"], data["to"]) == (200, "committed", "OPEN")
            status, data = call(port, "/api/instances/a/act", {"do": "back", "reason": "undo"})
            assert data["ok"] is False  # no backward edge from OPEN to NEW
            row = flows.store.history("a")[-1]
            assert (row.seq, row.reason, row.target) == (1, "triaged", "OPEN")


def open_stream(
    port: int, path: str
) -> tuple[http.client.HTTPConnection, http.client.HTTPResponse]:
    """An event stream of the app, read past its `ready` event."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    conn.request("GET", path)
    stream = conn.getresponse()
    assert stream.getheader("Content-Type", "").startswith("text/event-stream")
    assert stream.readline() == b"event: ready\n"
    stream.readline(), stream.readline()
    return conn, stream


def test_the_live_stream_tells_of_a_step_committed_elsewhere(
    sqlite_url: str, ticket: Machine
) -> None:
    with DurableFlows(open_store(sqlite_url), [ticket]) as flows:
        flows.start("ticket", id="a")
        with served(flows) as port:
            conn, stream = open_stream(port, "/api/instances/a/events")
            with DurableFlows(open_store(sqlite_url), []) as other:  # another writer
                other.send("a", "note", {"text": "hi"})
            assert stream.readline() == b"event: step\n"
            assert stream.readline() == b"data: 2\n"
            conn.close()


def test_the_list_stream_tells_of_any_change(sqlite_url: str, ticket: Machine) -> None:
    with DurableFlows(open_store(sqlite_url), [ticket]) as flows:
        flows.start("ticket", id="a")
        with served(flows) as port:
            conn, stream = open_stream(port, "/api/events")
            flows.start("ticket", id="b")
            assert stream.readline() == b"event: change\n"
            changed = float(stream.readline().decode().removeprefix("data: "))
            assert changed == flows.store.load("b").updated_at
            conn.close()
