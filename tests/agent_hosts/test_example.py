"""examples/agent_loop.py runs: the scripted model reaches DONE through every kind of mistake,
recovering from each with what the results told it."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

EXAMPLE = Path(__file__).parents[2] / "examples" / "agent_loop.py"


def load_example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("agent_loop", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_agent_loop_recovers_from_each_mistake_and_finishes(tmp_path: Path) -> None:
    printed: list[str] = []
    transcript = load_example().main(f"sqlite:///{tmp_path / 'agent.db'}", printed.append)
    assert transcript == [
        'start({"context": {"stage": "dream", "finalization_tool": "submit_dream", '
        '"research_tools": ["search"]}}) => ok -> DISCUSS',
        'summarized({"summary": "A solarpunk mystery."}) => error event_not_accepted: '
        "Event 'summarized' is not accepted in state 'DISCUSS'.",
        'tool_call({"name": "submit_dream"}) => error tool_not_available: '
        "Tool 'submit_dream' is not available in the Discuss phase.",
        "llm_turn({}) => ok -> DISCUSS",
        'tool_call({"name": "ready_to_summarize"}) => ok -> SUMMARIZE',
        'summarized({"summery": "Genre and tone agreed."}) => error invalid_payload: '
        "Invalid payload for 'summarized': 2 issue(s).",
        'summarized({"summary": "Genre and tone agreed."}) => ok -> SERIALIZE',
        "status({}) => ok -> SERIALIZE",
        'tool_call({"name": "submit_dream"}) => ok -> SERIALIZE',
        'validated({"result": "validation_failed", "missing": [{"field": "audience", '
        '"requirement": "a string"}]}) => ok -> SERIALIZE',
        'tool_call({"name": "submit_dream"}) => ok -> SERIALIZE',
        'validated({"result": "accepted", "missing": []}) => ok -> DONE (effects: write_artifact)',
        "delivered 7/0: dream.json",
    ]
    assert any("validation feedback to the model" in line for line in printed)
