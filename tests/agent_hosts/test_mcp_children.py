"""Child flows through `flowc mcp` (issue 28 item 7; docs/agents.md "Child flows"): `status`
shows an instance's children read-only, as far as their own flows let a model see them, and no
tool reaches a child. The real server, driven by the MCP SDK's own client."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio

from agent_hosts.mcp_client import call, stdio_session

PAYMENT = """
flow payment
context {
  amount: int = 0
  note: str = "pending"
  hidden card: str = "4111-0000-SECRET"
}
event approve
event check
initial state waiting {
  on approve -> ok
  on check -> checking
}
state checking {
  invoke fraud(card: card) as fraud
  on done.invoke.fraud -> waiting
}
final state ok with {"receipt": "r-" + card}
"""

FRAUD = """
flow fraud
context {
  hidden card: str = ""
  score: int = 7
}
event clear
initial state scoring {
  on clear -> cleared
}
final state cleared
"""

SHOP = """
flow shop
context {
  total: int = 5
}
event buy
initial state browsing {
  on buy -> paying
}
state paying {
  invoke payment(amount: total) as pay forward
  on done.invoke.pay -> paid
}
final state paid
"""


def flows(tmp_path: Path) -> Path:
    for name, text in (("payment", PAYMENT), ("fraud", FRAUD), ("shop", SHOP)):
        (tmp_path / f"{name}.flow").write_text(text, encoding="utf-8")
    return tmp_path / "shop.flow"


def test_status_shows_the_children_read_only_without_their_hidden_fields(
    tmp_path: Path,
) -> None:
    async def body() -> None:
        store = f"sqlite:///{tmp_path / 'f.db'}"
        async with stdio_session([flows(tmp_path)], store) as s:
            tools = (await s.list_tools()).tools
            # no tool of a child flow, and no tool takes a child: a model acts on the parent
            assert sorted(t.name for t in tools) == ["buy", "history", "start", "status"]
            assert not [t for t in tools if "child" in json.dumps(t.input_schema)]

            assert not (await call(s, "start", instance_id="o1"))[0]
            _, before = await call(s, "status", instance_id="o1")
            assert "children" not in before
            assert not (await call(s, "buy", instance_id="o1"))[0]
            _, status = await call(s, "status", instance_id="o1")
            assert status["children"] == [
                {
                    "id": "pay.1",
                    "flow": "payment",
                    "state": "waiting",
                    "ended": False,
                    "context": {"amount": 5, "note": "pending"},
                }
            ]
            assert "SECRET" not in json.dumps(status)

            # a child's events are no tools of the parent, and a child's id is no instance
            refused, answer = await call(s, "check", instance_id="o1")
            assert refused and answer["error"] == "unknown_tool"
            refused, answer = await call(s, "status", instance_id="o1/pay.1")
            assert refused and answer["error"] == "unknown_instance"

            snapshot = await s.read_resource("flowc://instances/o1/snapshot.json")
            text: str = snapshot.contents[0].text  # type: ignore[union-attr]
            assert "SECRET" not in text
            data: dict[str, Any] = json.loads(text)
            assert data["children"] == status["children"]
            assert "joins" not in data and "inbox" not in data

    anyio.run(body)


def test_a_grandchild_is_shown_nested_with_its_own_flows_view(tmp_path: Path) -> None:
    from flowc.runtime import Machine
    from flowc.runtime.store.durable import open_durable

    store = f"sqlite:///{tmp_path / 'f.db'}"
    source = flows(tmp_path)
    with open_durable(store, [Machine.from_file(source)]) as durable:
        durable.start("shop", id="o2")
        durable.send("o2", "buy")
        durable.send("o2", "check", child="pay")

    async def body() -> None:
        async with stdio_session([source], store) as s:
            _, status = await call(s, "status", instance_id="o2")
            (pay,) = status["children"]
            assert pay["state"] == "checking"
            assert pay["children"] == [
                {
                    "id": "fraud.1",
                    "flow": "fraud",
                    "state": "scoring",
                    "ended": False,
                    "context": {"score": 7},
                }
            ]
            assert "SECRET" not in json.dumps(status)

    anyio.run(body)
