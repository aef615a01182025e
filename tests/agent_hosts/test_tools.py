"""Tool definitions (`flowc.runtime.tools`) and the dispatcher (`flowc.runtime.tool_calls`), on
durable instances in a real SQLite file."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flowc.runtime import Machine
from flowc.runtime.store.durable import DurableFlows, open_durable
from flowc.runtime.tool_calls import ToolDispatcher
from flowc.runtime.tools import FlowTools, from_strict, strict_schema

FLOWS = Path(__file__).parents[2] / "flows"
SEED_003 = Machine.from_file(FLOWS / "interactive_stage.flow")
RFP = Machine.from_file(FLOWS / "rfp_workspace.flow")
QUESTIONS = Machine.from_file(FLOWS / "stage_questions.flow")
SKILLS = Machine.from_file(FLOWS / "collab_skills.flow")
CONTEXT = {"stage": "dream", "finalization_tool": "submit_dream"}


@pytest.fixture
def durable(tmp_path: Path) -> Iterator[DurableFlows]:
    with open_durable(
        f"sqlite:///{tmp_path / 'flows.db'}", [SEED_003, RFP, QUESTIONS, SKILLS]
    ) as flows:
        yield flows


def dispatcher(durable: DurableFlows, *machines: Machine) -> ToolDispatcher:
    return ToolDispatcher(durable, FlowTools(machines or [SEED_003]))


def test_one_tool_per_event_plus_start_status_history() -> None:
    tools = FlowTools([SEED_003])
    assert tools.names() == [
        "start",
        "status",
        "history",
        "llm_turn",
        "tool_call",
        "user_input",
        "summarized",
        "validated",
        "finalization_skipped",
    ]
    tool = tools.get("tool_call")
    assert tool is not None
    assert tool.input_schema["required"] == ["instance_id", "name"]
    assert list(tool.input_schema["properties"]) == ["instance_id", "name", "request_id"]
    assert tool.input_schema["additionalProperties"] is False
    assert "Accepted in: DISCUSS ('Discuss'), SERIALIZE ('Serialize')." in tool.description
    start = tools.get("start")
    assert start is not None and start.input_schema["required"] == ["context"]
    assert start.input_schema["properties"]["context"]["required"] == [
        "stage",
        "finalization_tool",
    ]


def test_goto_and_back_only_where_the_flow_has_such_edges() -> None:
    assert {"goto", "back"}.isdisjoint(FlowTools([SEED_003]).names())
    rfp = FlowTools([RFP])
    goto = rfp.get("goto")
    assert goto is not None and rfp.get("back") is not None
    assert goto.input_schema["properties"]["target"]["enum"] == [
        "ANALYZING",
        "CLIENT_ANSWERED",
        "DRAFTING",
        "PROPOSAL_UPDATE",
        "QNA_GENERATION",
        "SCOPE_FREEZE",
        "WAITING_CLIENT",
    ]
    assert "force" in goto.input_schema["properties"]
    questions = FlowTools([QUESTIONS])
    assert questions.get("goto") is not None and questions.get("back") is None


def test_shapes_of_mcp_openai_and_anthropic() -> None:
    tool = FlowTools([SEED_003]).get("user_input")
    assert tool is not None
    mcp = tool.mcp()
    assert mcp["inputSchema"] == tool.input_schema and mcp["name"] == "user_input"
    assert mcp["annotations"]["readOnlyHint"] is False
    assert tool.anthropic() == {
        "name": "user_input",
        "description": tool.description,
        "input_schema": tool.input_schema,
    }
    loose = tool.openai(strict=False)
    assert loose["type"] == "function" and loose["function"]["strict"] is False
    assert loose["function"]["parameters"] == tool.input_schema
    strict = tool.openai()["function"]
    assert strict["strict"] is True
    assert strict["parameters"]["required"] == ["instance_id", "text", "request_id"]
    assert strict["parameters"]["properties"]["request_id"]["anyOf"][1] == {"type": "null"}


def _strict_ok(schema: Any) -> None:
    """What OpenAI's strict mode asks of every object: all properties required, no extra
    properties, and no `default` anywhere."""
    if isinstance(schema, dict):
        assert "default" not in schema
        if schema.get("type") == "object":
            assert schema["additionalProperties"] is False
            assert schema["required"] == list(schema["properties"])
        for value in schema.values():
            _strict_ok(value)
    elif isinstance(schema, list):
        for value in schema:
            _strict_ok(value)


@pytest.mark.parametrize("machine", [SEED_003, RFP, QUESTIONS, SKILLS], ids=lambda m: m.name)
def test_every_seed_tool_has_a_strict_mode_schema(machine: Machine) -> None:
    for tool in FlowTools([machine]).openai():
        _strict_ok(tool["function"]["parameters"])


def test_strict_arguments_come_back_as_the_flow_payload() -> None:
    # A map becomes a list of entries, a field with a default is nullable (null: the default).
    answer = FlowTools([QUESTIONS]).get("answer")
    assert answer is not None
    strict = strict_schema(answer.input_schema)
    assert strict["properties"]["answers"]["type"] == "array"
    written = {
        "instance_id": "q1",
        "stage": "required",
        "answers": [{"key": "q1", "value": "yes"}, {"key": "q2", "value": "no"}],
        "request_id": None,
    }
    assert from_strict(answer.input_schema, written) == {
        "instance_id": "q1",
        "stage": "required",
        "answers": {"q1": "yes", "q2": "no"},
    }
    validated = FlowTools([SEED_003]).get("validated")
    assert validated is not None
    assert from_strict(
        validated.input_schema,
        {"instance_id": "i", "result": "accepted", "invalid": None, "missing": [], "unknown": None},
    ) == {"instance_id": "i", "result": "accepted", "missing": []}
    # Optional fields stay nullable: null there is a value, not "the default".
    update = FlowTools([RFP]).get("update_status")
    assert update is not None
    assert from_strict(update.input_schema, {"instance_id": "i", "next_action": None}) == {
        "instance_id": "i",
        "next_action": None,
    }


def test_several_flows_prefix_every_name_and_clashes_are_refused() -> None:
    tools = FlowTools([SEED_003, QUESTIONS])
    assert tools.prefixed
    assert "interactive_stage_start" in tools.names() and "stage_questions_answer" in tools.names()
    assert FlowTools([SEED_003], prefix=True).names()[0] == "interactive_stage_start"
    clash = Machine.from_source(
        "flow clash\nevent status\ninitial state A { on status -> B }\nfinal state B\n"
    )
    with pytest.raises(ValueError, match="two tools would be called `status`"):
        FlowTools([clash])


def test_per_state_subset_for_hosts_that_gate_tools(durable: DurableFlows) -> None:
    tools = FlowTools([SEED_003])
    instance = SEED_003.start(CONTEXT)
    assert [t.name for t in tools.for_instance(instance)] == [
        "status",
        "history",
        "llm_turn",
        "tool_call",
        "user_input",
    ]
    instance.send("tool_call", {"name": "ready_to_summarize"})
    assert tools.allowed_names(instance) == ["summarized"]
    rfp = FlowTools([RFP])
    flow = RFP.start({"project": "p"})
    for target in ("ANALYZING", "QNA_GENERATION", "WAITING_CLIENT", "CLIENT_ANSWERED"):
        flow.goto(target)
    subset = {t.name: t for t in rfp.for_instance(flow)}
    assert set(subset) == {"status", "history", "update_status", "goto", "back"}
    assert subset["goto"].input_schema["properties"]["target"]["enum"] == [
        "ANALYZING",
        "PROPOSAL_UPDATE",
        "QNA_GENERATION",
    ]


def test_dispatch_success_refusal_and_bad_arguments(durable: DurableFlows) -> None:
    calls = dispatcher(durable)
    started = calls.call("start", {"context": CONTEXT})
    assert not started.is_error
    iid = started.data["instance_id"]
    assert isinstance(iid, str)
    refused = calls.call("validated", {"instance_id": iid, "result": "accepted"})
    assert refused.is_error
    assert refused.data["error"] == "event_not_accepted"
    assert refused.data["allowed_tools"][0] == {  # type: ignore[index]
        "name": "llm_turn",
        "arguments": {
            "type": "object",
            "properties": {},
            "required": [],
            "additionalProperties": False,
        },
    }
    before = durable.store.load(iid)
    bad = calls.call("user_input", {"instance_id": iid, "text": 3, "txt": "x"})
    assert bad.is_error and bad.data["issue_count"] == 2
    assert bad.data["issues"] == {
        "invalid": [
            {
                "field": "text",
                "provided": 3,
                "problem": "expected a string, got an integer",
                "requirement": "a string",
            }
        ],
        "missing": [],
        "unknown": ["txt"],
    }
    assert "allowed_tools" not in bad.data  # the tool was right, its arguments were not
    assert durable.store.load(iid) == before
    missing = calls.call("status", {"instance": iid})
    assert missing.is_error and missing.data["issues"] == {
        "invalid": [],
        "missing": [{"field": "instance_id", "requirement": "a string"}],
        "unknown": ["instance"],
    }
    assert calls.call("status", {"instance_id": "nope"}).data["error"] == "unknown_instance"
    unknown = calls.call("summarise", {})
    assert unknown.is_error and unknown.data["error"] == "unknown_tool"
    context = calls.call("start", {"context": {"stage": 1}})
    assert context.is_error and context.data["issues"]["invalid"][0]["field"] == "context.stage"  # type: ignore[index]


def test_back_is_forced_and_goto_targets_are_listed(durable: DurableFlows) -> None:
    calls = dispatcher(durable, RFP)
    iid = calls.call("start", {"context": {"project": "ACME"}}).data["instance_id"]
    for target in ("ANALYZING", "QNA_GENERATION", "WAITING_CLIENT", "CLIENT_ANSWERED"):
        out = calls.call("goto", {"instance_id": iid, "target": target})
        assert not out.is_error, out.data
    assert out.data["goto_targets"] == ["PROPOSAL_UPDATE"]
    assert out.data["allowed_tools"] == ["update_status", "goto", "back"]
    refused = calls.call("goto", {"instance_id": iid, "target": "ANALYZING"})
    assert refused.is_error and refused.data["error"] == "backward_requires_force"
    bad = calls.call("goto", {"instance_id": iid, "target": "NOWHERE"})
    assert bad.is_error and bad.data["issues"]["invalid"][0]["field"] == "target"  # type: ignore[index]
    back = calls.call("back", {"instance_id": iid, "request_id": "b1"})
    assert not back.is_error and back.data["state"] == "QNA_GENERATION"
    again = calls.call("back", {"instance_id": iid, "request_id": "b1"})
    assert again.data["replayed"] is True
    assert durable.load(iid).context["backward_moves"] == 1


def test_strict_calls_dispatch(durable: DurableFlows) -> None:
    calls = dispatcher(durable, QUESTIONS)
    iid = calls.call(
        "start",
        {"context": {"solution_id": "s1"}, "request_id": None},
        strict=True,
    ).data["instance_id"]
    out = calls.call(
        "answer",
        {
            "instance_id": iid,
            "stage": "required",
            "answers": [{"key": "name", "value": "Ada"}],
            "request_id": None,
        },
        strict=True,
    )
    assert not out.is_error, out.data
    assert durable.load(iid).context["answers"] == {"required": {"name": "Ada"}}


def test_results_in_each_host_shape(durable: DurableFlows) -> None:
    result = dispatcher(durable).call("status", {"instance_id": "x"})
    assert result.mcp()["isError"] is True
    assert result.mcp()["content"][0]["text"] == result.text()
    assert result.anthropic("toolu_1") == {
        "type": "tool_result",
        "tool_use_id": "toolu_1",
        "content": result.text(),
        "is_error": True,
    }
    assert result.openai("call_1") == {
        "role": "tool",
        "tool_call_id": "call_1",
        "content": result.text(),
    }


def test_the_tool_modules_stay_light() -> None:
    code = (
        "import sys, flowc.runtime.tools, flowc.runtime.tool_calls\n"
        "heavy = {'lark', 'networkx', 'graphviz', 'mcp'} & set(sys.modules)\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_prefixed_tools_advise_with_the_tool_name(durable: DurableFlows) -> None:
    calls = ToolDispatcher(durable, FlowTools([SEED_003, QUESTIONS]))
    iid = calls.call("interactive_stage_start", {"context": CONTEXT}).data["instance_id"]
    bad = calls.call("interactive_stage_user_input", {"instance_id": iid})
    assert bad.is_error and bad.data["action"] == (
        "Call interactive_stage_user_input again with corrected arguments. "
        "Unknown fields may be typos."
    )


def test_an_event_taken_backwards_has_a_force_argument(tmp_path: Path) -> None:
    reopening = Machine.from_source(
        "flow reopening\nevent submit\nevent reopen(note: str)\n"
        "initial state DRAFT { on submit -> REVIEW }\n"
        "state REVIEW { on reopen -> DRAFT back }\n"
    )
    tools = FlowTools([reopening])
    reopen = tools.tool("reopening", "event", "reopen")
    submit = tools.tool("reopening", "event", "submit")
    assert reopen is not None and submit is not None
    assert reopen.input_schema["properties"]["force"]["type"] == "boolean"
    assert "force" not in submit.input_schema["properties"]
    with open_durable(f"sqlite:///{tmp_path / 'r.db'}", [reopening]) as flows:
        calls = ToolDispatcher(flows, tools)
        iid = calls.call("start", {"context": {}}).data["instance_id"]
        assert not calls.call("submit", {"instance_id": iid}).is_error
        refused = calls.call("reopen", {"instance_id": iid, "note": "typo"})
        assert refused.is_error and refused.data["error"] == "backward_requires_force"
        bad = calls.call("reopen", {"instance_id": iid, "note": "typo", "force": "yes"})
        assert bad.is_error and bad.data["issues"]["invalid"][0]["field"] == "force"  # type: ignore[index]
        moved = calls.call("reopen", {"instance_id": iid, "note": "typo", "force": True})
        assert not moved.is_error and moved.data["state"] == "DRAFT"
