"""`flowc mcp` (a real server process, on SQLite and PostgreSQL) answers an instance_id or
request_id that breaks the id rule with a structured refusal naming the field, and a resource
or prompt asked for with one with an invalid-params error: never an internal error. (Lone
surrogates, which the SDK's client cannot send, are refused in test_handles.py.)"""

from __future__ import annotations

import anyio
import pytest
from agent_hosts.mcp_client import SEED_003, call, stdio_session
from mcp import MCPError

CONTEXT = {"stage": "dream", "finalization_tool": "submit_dream", "research_tools": ["search"]}


def test_the_mcp_server_refuses_bad_handles(shared_store_url: str) -> None:
    async def body() -> None:
        async with stdio_session([SEED_003], shared_store_url) as session:
            for args, field in (
                ({"instance_id": "a\u0000b"}, "instance_id"),
                ({"request_id": "r\u0000"}, "request_id"),
                ({"request_id": "r" * 20_000}, "request_id"),
            ):
                error, data = await call(session, "start", context=CONTEXT, **args)
                assert error and data["error"] == "invalid_handle" and data["field"] == field
                assert len(data["message"]) < 200
            _, started = await call(session, "start", context=CONTEXT)
            iid = started["instance_id"]
            error, data = await call(
                session, "tool_call", instance_id=iid, name="ready_to_summarize",
                request_id="x\u0000",
            )  # fmt: skip
            assert error and data["field"] == "request_id"
            with pytest.raises(MCPError, match="refused"):
                await session.get_prompt("summary_prompt", {"instance_id": "n\u0000" * 9000})

    anyio.run(body)
