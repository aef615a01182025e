"""The TypeScript runtime's tools and tool calls (runtime-ts/src/tools.ts, toolCalls.ts) give
what the Python runtime's `FlowTools` and `ToolDispatcher` give: the same tool definitions in
the MCP, OpenAI (strict and not) and Anthropic shapes, and the same results, refusals and
feedback for a session of calls on each seed flow and example (its events file's operations
as tool calls, then calls that go wrong in every way the dispatcher answers)."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from flowc.runtime import FakeClock, Machine
from flowc.runtime.store.durable import open_durable
from flowc.runtime.tool_calls import ToolDispatcher
from flowc.runtime.tools import FlowTools
from ts.node_runtime import built, node
from ts.seed_flows import CONTEXTS, EVENTS, FLOWS, NOW_MS, compile_flows

DRIVER = Path(__file__).resolve().parent / "agent_tools.mjs"


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    return compile_flows(tmp_path_factory.mktemp("compiled"))


def python_side(paths: list[Path], prefix: bool | None, calls: list[dict[str, Any]]) -> Any:
    machines = [Machine.from_json(p.read_bytes()) for p in paths]
    tools = FlowTools(machines, prefix=prefix)
    clock = FakeClock(NOW_MS / 1000)
    results: list[Any] = []
    with open_durable("memory:", machines, clock=clock) as durable:
        dispatcher = ToolDispatcher(durable, tools)
        for call in calls:
            result = dispatcher.call(call["name"], call["arguments"], strict=call["strict"])
            results.append({"is_error": result.is_error, "data": result.data})
    shapes = {
        "mcp": tools.mcp(),
        "openai": tools.openai(),
        "openai_loose": tools.openai(strict=False),
        "anthropic": tools.anthropic(),
    }
    return json.loads(json.dumps({"tools": shapes, "results": results}))


def driver(
    paths: list[Path], prefix: bool | None, calls: list[Any]
) -> subprocess.CompletedProcess[str]:
    """agent_tools.mjs run on the built package."""
    request = {"flows": [str(p) for p in paths], "prefix": prefix, "now_ms": NOW_MS}
    request["calls"] = calls
    return subprocess.run(
        [node(), str(DRIVER), str(built())],
        input=json.dumps(request),
        capture_output=True,
        text=True,
        timeout=60,
    )


def ts_side(paths: list[Path], prefix: bool | None, calls: list[dict[str, Any]]) -> Any:
    done = driver(paths, prefix, calls)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    for result in out["results"]:
        # The text a model reads is the data as indented JSON.
        assert json.loads(result.pop("text")) == result["data"]
    return out


#: microwave has an event called `start`: it cannot be served as tools (a test says so).
SERVED = [f.stem for f in FLOWS if f.stem != "microwave"]


def without_incarnations(out: Any) -> Any:
    """Results with each effect id's incarnation (64 random bits a new instance gets) masked."""
    for result in out["results"]:
        for effect in result["data"].get("effects") or ():
            effect["id"] = re.sub(r"/[0-9a-f]{16}/", "/INCARNATION/", effect["id"])
    return out


def call(name: str, arguments: Any, *, strict: bool = False) -> dict[str, Any]:
    return {"name": name, "arguments": arguments, "strict": strict}


def session(stem: str, ir: dict[str, Any]) -> list[dict[str, Any]]:
    """The events file's operations as tool calls on instance `i1`, then calls that fail."""
    inputs = {f["name"] for f in ir["context"] if f.get("input")}
    context = {k: v for k, v in CONTEXTS.get(stem, {}).items() if k in inputs}
    calls = [call("start", {"instance_id": "i1", "context": context})]
    calls.append(call("status", {"instance_id": "i1"}))
    for line in (EVENTS / f"{stem}.jsonl").read_text(encoding="utf-8").splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        op = json.loads(line)
        args: dict[str, Any] = {"instance_id": "i1"}
        if op.get("key") is not None:
            args["request_id"] = op["key"]
        if "event" in op:
            calls.append(call(op["event"], {**args, **(op.get("payload") or {})}))
        elif "goto" in op:
            force = {"force": op["force"]} if "force" in op else {}
            calls.append(call("goto", {**args, "target": op["goto"], **force}))
        elif "back" in op:
            calls.append(call("back", args))
    first_event = next(e["name"] for e in ir["events"])
    calls += [
        call("history", {"instance_id": "i1"}),
        call("status", {"instance_id": "i1", "extra": 1}),
        call("no_such_tool", {}),
        call("status", {"instance_id": "nobody"}),
        call("status", {}),
        call("status", {"instance_id": 5, "request_id": ""}),
        call("status", ["not", "an", "object"]),
        call("status", {"instance_id": "x" * 300}),
        call("start", {"instance_id": "i1", "context": context}),
        call("start", {"context": {**context, "not_an_input": 1}, "surprise": True}),
        call("start", {"context": "nope"}),
        call("start", {"request_id": "r1", "context": context}),
        call("start", {"request_id": "r1", "context": context}),
        call("start", {"instance_id": "i2", "context": context}),
        call(first_event, {"instance_id": "i2", "request_id": "k1"}),
        call(first_event, {"instance_id": "i2", "request_id": "k1"}),
        call(first_event, {"instance_id": "i2", "request_id": None, "force": None}, strict=True),
        call("goto", {"instance_id": "i2", "target": 7, "force": "yes"}),
        call("goto", {"instance_id": "i2", "target": "nowhere", "force": None}),
    ]
    return calls


@pytest.mark.parametrize("stem", SERVED)
def test_tools_and_a_session_of_calls_match(stem: str, compiled: dict[str, Path]) -> None:
    ir = json.loads(compiled[stem].read_text(encoding="utf-8"))
    calls = session(stem, ir)
    expected = without_incarnations(python_side([compiled[stem]], None, calls))
    got = without_incarnations(ts_side([compiled[stem]], None, calls))
    assert got["tools"] == expected["tools"]
    for i, (ours, theirs) in enumerate(zip(got["results"], expected["results"], strict=True)):
        assert ours == theirs, f"call {i}: {calls[i]}"
    # The session both refuses and accepts.
    assert {r["is_error"] for r in expected["results"]} == {True, False}


def test_several_flows_have_prefixed_tools(compiled: dict[str, Path]) -> None:
    paths = [path for stem, path in compiled.items() if stem in SERVED]
    calls = [
        call("rfp_workspace_start", {"instance_id": "r", "context": {"project": "p"}}),
        call("pr_review_start", {"instance_id": "m", "context": {}}),
        call("pr_review_merge", {"instance_id": "r"}),
        call("rfp_workspace_goto", {"instance_id": "r", "target": "ANALYZING"}),
        call("elevator_start", {"instance_id": "e", "context": {}}),
        call("elevator_call", {"instance_id": "e", "floor": 3}),
    ]
    expected = without_incarnations(python_side(paths, None, calls))
    assert without_incarnations(ts_side(paths, None, calls)) == expected
    assert expected["tools"]["mcp"][0]["name"].endswith("_start")


@pytest.mark.parametrize("prefix", [None, True])
def test_an_event_named_like_a_tool_is_refused_the_same_way(
    prefix: bool | None, compiled: dict[str, Path]
) -> None:
    path = compiled["microwave"]
    with pytest.raises(ValueError) as refused:
        FlowTools([Machine.from_json(path.read_bytes())], prefix=prefix)
    done = driver([path], prefix, [])
    assert done.returncode != 0
    assert f"Error: {refused.value}" in done.stderr


def test_a_retried_call_shows_the_effects_of_its_first_run(compiled: dict[str, Path]) -> None:
    calls = [
        call("start", {"instance_id": "e", "context": {}}),
        call("call", {"instance_id": "e", "floor": 2, "request_id": "k"}),
        call("call", {"instance_id": "e", "floor": 2, "request_id": "k"}),
        call("call", {"instance_id": "e", "floor": 0, "request_id": "other"}),
    ]
    expected = without_incarnations(python_side([compiled["elevator"]], None, calls))
    assert without_incarnations(ts_side([compiled["elevator"]], None, calls)) == expected
    replayed = expected["results"][2]["data"]
    assert replayed["replayed"] is True and replayed["effects"]
