"""`flowc mcp` end to end: the real server (a process), over stdio and over streamable HTTP,
driven by the MCP SDK's own client session, on a real SQLite file."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import ClientSession, MCPError

from agent_hosts.mcp_client import (
    ROOT,
    SEED_003,
    call,
    http_server,
    http_session,
    stdio_session,
)

CONTEXT = {"stage": "dream", "finalization_tool": "submit_dream", "research_tools": ["search"]}

SessionFactory = Callable[[], contextlib.AbstractAsyncContextManager[ClientSession]]


@pytest.fixture(params=["stdio", "http", "stdio-postgres"])
def connect(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    """A factory of client sessions with one server's worth of state: each stdio session
    starts its own server process on the same store (as two MCP clients would: a SQLite file,
    or PostgreSQL); the HTTP sessions all talk to one server process on a SQLite file."""
    store = f"sqlite:///{tmp_path / 'flows.db'}"
    if request.param == "stdio-postgres":
        store = request.getfixturevalue("postgres_url")
    if request.param != "http":
        yield lambda: stdio_session([SEED_003], store)
        return
    with http_server([SEED_003], store) as url:
        yield lambda: http_session(url)


def run(body: Callable[[], Any]) -> None:
    anyio.run(body)


def tool_names(listing: Any) -> list[dict[str, Any]]:
    return [t.model_dump(mode="json", by_alias=True) for t in listing.tools]


def test_one_tool_list_valid_calls_refusals_and_bad_arguments(connect: SessionFactory) -> None:
    async def body() -> None:
        async with connect() as session:
            listings = [tool_names(await session.list_tools())]
            error, started = await call(session, "start", context=CONTEXT)
            assert not error and started["state"] == "DISCUSS"
            iid = started["instance_id"]
            assert started["allowed_tools"] == ["llm_turn", "tool_call", "user_input"]
            listings.append(tool_names(await session.list_tools()))

            # Out of phase: refused as an isError result naming what is allowed now.
            error, refused = await call(session, "summarized", instance_id=iid, summary="s")
            assert error and refused["error"] == "event_not_accepted"
            assert [t["name"] for t in refused["allowed_tools"]] == [
                "llm_turn",
                "tool_call",
                "user_input",
            ]
            assert refused["allowed_tools"][1]["arguments"]["required"] == ["name"]
            # Tool gating by the flow (seed 003): the finalization tool is not for Discuss.
            error, gated = await call(session, "tool_call", instance_id=iid, name="submit_dream")
            assert error and gated["error"] == "tool_not_available"
            assert gated["message"] == "Tool 'submit_dream' is not available in the Discuss phase."

            # Bad arguments: field-level feedback.
            error, bad = await call(session, "tool_call", instance_id=iid, nam="search")
            assert error and bad["result"] == "validation_failed"
            assert bad["issues"] == {
                "invalid": [],
                "missing": [{"field": "name", "requirement": "a string"}],
                "unknown": ["nam"],
            }
            assert bad["issue_count"] == 2
            error, bad = await call(session, "llm_turn", instance_id=7)
            assert error and bad["issues"]["invalid"][0]["field"] == "instance_id"

            # Valid calls advance the state; the tool list stays the same in every state.
            error, out = await call(session, "tool_call", instance_id=iid, name="search")
            assert not error and out["state"] == "DISCUSS"
            error, out = await call(
                session, "tool_call", instance_id=iid, name="ready_to_summarize"
            )
            assert (
                not error and out["state"] == "SUMMARIZE" and out["allowed_tools"] == ["summarized"]
            )
            listings.append(tool_names(await session.list_tools()))
            error, out = await call(session, "summarized", instance_id=iid, summary="A dream.")
            assert not error and out["state"] == "SERIALIZE"
            assert out["meta"]["tool_choice"] == "required"
            listings.append(tool_names(await session.list_tools()))
            error, out = await call(session, "validated", instance_id=iid, result="accepted")
            assert not error and out["state"] == "DONE" and out["final"]
            assert out["allowed_tools"] == []
            listings.append(tool_names(await session.list_tools()))
            assert all(listing == listings[0] for listing in listings)

            error, refused = await call(session, "llm_turn", instance_id=iid)
            assert error and refused["error"] == "instance_final"
            error, status = await call(session, "status", instance_id=iid)
            assert not error and status["context"]["summary"] == "A dream."

    run(body)


def test_a_retried_request_id_runs_once(connect: SessionFactory) -> None:
    async def body() -> None:
        async with connect() as session:
            _, started = await call(session, "start", context=CONTEXT, request_id="start-1")
            iid = started["instance_id"]
            _, again = await call(session, "start", context=CONTEXT, request_id="start-1")
            assert again["instance_id"] == iid and again["replayed"] is True

            first = await call(session, "llm_turn", instance_id=iid, request_id="turn-1")
            second = await call(session, "llm_turn", instance_id=iid, request_id="turn-1")
            assert first[0] is False and second[0] is False
            assert second[1]["replayed"] is True
            _, status = await call(session, "status", instance_id=iid)
            assert status["context"]["discuss_turns"] == 1
            _, history = await call(session, "history", instance_id=iid)
            assert [h["trigger"] for h in history["history"]] == ["start", "llm_turn"]

    run(body)


def test_two_clients_on_one_instance_lose_no_update(connect: SessionFactory) -> None:
    turns = 15

    async def body() -> None:
        async with connect() as first, connect() as second:
            _, started = await call(first, "start", context={**CONTEXT, "max_discuss_turns": 1000})
            iid = started["instance_id"]

            async def drive(session: ClientSession) -> None:
                for _ in range(turns):
                    error, out = await call(session, "llm_turn", instance_id=iid)
                    assert not error, out

            async with anyio.create_task_group() as group:
                group.start_soon(drive, first)
                group.start_soon(drive, second)
            _, status = await call(second, "status", instance_id=iid)
            assert status["context"]["discuss_turns"] == 2 * turns
            _, history = await call(first, "history", instance_id=iid)
            assert [h["seq"] for h in history["history"]] == list(range(2 * turns + 1))

    run(body)


def test_resources_and_prompts(connect: SessionFactory) -> None:
    async def body() -> None:
        async with connect() as session:
            _, started = await call(session, "start", context=CONTEXT)
            iid = started["instance_id"]
            await call(session, "tool_call", instance_id=iid, name="ready_to_summarize")

            listed = {str(r.uri) for r in (await session.list_resources()).resources}
            assert listed == {
                "flowc://flows/interactive_stage/diagram.svg",
                "flowc://flows/interactive_stage/diagram.mmd",
                "flowc://flows/interactive_stage/docs.md",
            }
            templates = await session.list_resource_templates()
            assert "flowc://instances/{instance_id}/snapshot.json" in {
                t.uri_template for t in templates.resource_templates
            }

            async def read(uri: str) -> tuple[str, str | None]:
                contents = (await session.read_resource(uri)).contents[0]
                return contents.text, contents.mime_type  # type: ignore[union-attr]

            svg, mime = await read("flowc://flows/interactive_stage/diagram.svg")
            assert mime == "image/svg+xml" and "<svg" in svg and "SUMMARIZE" in svg
            mermaid, _ = await read("flowc://flows/interactive_stage/diagram.mmd")
            assert mermaid.splitlines()[3] == "stateDiagram-v2"
            docs, _ = await read("flowc://flows/interactive_stage/docs.md")
            assert docs.startswith("# ") and "SERIALIZE" in docs

            snapshot, _ = await read(f"flowc://instances/{iid}/snapshot.json")
            assert json.loads(snapshot)["state"] == "SUMMARIZE"
            history, _ = await read(f"flowc://instances/{iid}/history.json")
            assert [h["target"] for h in json.loads(history)] == ["DISCUSS", "SUMMARIZE"]
            marked, _ = await read(f"flowc://instances/{iid}/diagram.mmd")
            assert marked != mermaid and "class SUMMARIZE current" in marked
            marked_svg, _ = await read(f"flowc://instances/{iid}/diagram.svg")
            assert marked_svg != svg

            prompts = {p.name: p for p in (await session.list_prompts()).prompts}
            assert set(prompts) == {
                "system_prompt",
                "mode_instructions",
                "mode_reminder",
                "summary_prompt",
                "validation_feedback",
            }
            assert [a.name for a in prompts["system_prompt"].arguments or []] == [
                "instance_id",
                "artifact_description",
                "mode_instructions",
                "mode_reminder",
            ]
            prompt = await session.get_prompt(
                "system_prompt", {"instance_id": iid, "artifact_description": "A DREAM artifact."}
            )
            text = prompt.messages[0].content.text  # type: ignore[union-attr]
            assert text.startswith("You are a creative director for interactive fiction.")
            assert "A DREAM artifact." in text
            assert "call the ready_to_summarize() tool" in text  # mode_instructions, rendered
            with pytest.raises(MCPError, match="no instance 'nope'"):
                await session.read_resource("flowc://instances/nope/snapshot.json")
            with pytest.raises(MCPError, match="no resource"):
                await session.read_resource("flowc://flows/interactive_stage/other.txt")
            with pytest.raises(MCPError, match="no instance 'nope'"):
                await session.get_prompt("summary_prompt", {"instance_id": "nope"})
            summary = await session.get_prompt("summary_prompt", {"instance_id": iid})
            assert "every detail the dream needs" in summary.messages[0].content.text  # type: ignore[union-attr]

    run(body)


def test_several_flows_prefix_their_tools(tmp_path: Path) -> None:
    flows = [SEED_003, ROOT / "flows" / "stage_questions.flow"]

    async def body() -> None:
        async with stdio_session(flows, f"sqlite:///{tmp_path / 'f.db'}") as session:
            names = [t.name for t in (await session.list_tools()).tools]
            assert "interactive_stage_tool_call" in names
            assert "stage_questions_answer" in names and "stage_questions_goto" in names
            assert "start" not in names
            _, started = await call(session, "stage_questions_start", context={"solution_id": "s1"})
            error, wrong = await call(
                session, "interactive_stage_llm_turn", instance_id=started["instance_id"]
            )
            assert error and wrong["error"] == "wrong_flow"

    run(body)


def test_an_instance_diagram_of_a_statechart_marks_its_whole_configuration(
    tmp_path: Path,
) -> None:
    pr_review = Path(__file__).parents[2] / "flows" / "examples" / "pr_review.flow"
    store = f"sqlite:///{tmp_path / 'flows.db'}"

    async def body() -> None:
        async with stdio_session([pr_review], store) as session:
            _, started = await call(session, "start")
            iid = started["instance_id"]
            await call(session, "ci_passed", instance_id=iid)
            contents = await session.read_resource(f"flowc://instances/{iid}/diagram.mmd")
            marked = contents.contents[0].text  # type: ignore[union-attr]
            # One region's leaf, the other region's leaf, and the third region's: all current.
            assert "    class ci_green, recent, reviewing current" in marked.splitlines(), marked

    run(body)
