"""docs/agents.md shows the results a model sees verbatim: each `call` block is replayed, in
order, against the flow named by the last `<!-- agents-doc flow: PATH -->` comment (a fresh
store each time), and a `json` block right after a call must be exactly the result's text."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from flowc.runtime import Machine
from flowc.runtime.store.durable import open_durable
from flowc.runtime.tool_calls import ToolDispatcher

ROOT = Path(__file__).parents[2]
PAGE = ROOT / "docs" / "agents.md"
_FLOW = re.compile(r"^<!-- agents-doc flow: (\S+) -->$")
_FENCE = re.compile(r"^```([A-Za-z-]*)$")


@dataclass
class Step:
    flow: str
    line: int
    tool: str
    arguments: dict[str, object]
    shown: str | None  # the result block after it, if any


def steps(path: Path) -> list[Step]:
    lines = path.read_text(encoding="utf-8").splitlines()
    out: list[Step] = []
    flow = ""
    previous_call: tuple[Step, int] | None = None  # the last call block and its closing line
    i = 0
    while i < len(lines):
        if match := _FLOW.match(lines[i]):
            flow = match.group(1)
        fence = _FENCE.match(lines[i])
        if fence is None or not fence.group(1):
            i += 1
            continue
        end = lines.index("```", i + 1)
        body = "\n".join(lines[i + 1 : end])
        if fence.group(1) == "call":
            tool, _, arguments = body.partition(" ")
            step = Step(flow, i + 1, tool, json.loads(arguments or "{}"), None)
            out.append(step)
            previous_call = (step, end)
        elif fence.group(1) == "json" and previous_call is not None:
            step, closed = previous_call
            if all(not line.strip() for line in lines[closed + 1 : i]):
                step.shown = body
        i = end + 1
    return out


def test_the_page_has_calls_with_results() -> None:
    found = steps(PAGE)
    assert len([s for s in found if s.shown is not None]) >= 12
    assert {s.flow for s in found} == {
        "flows/interactive_stage.flow",
        "flows/collab_skills.flow",
        "flows/stage_questions.flow",
    }


@pytest.mark.parametrize(
    "flow",
    ["flows/interactive_stage.flow", "flows/collab_skills.flow", "flows/stage_questions.flow"],
)
def test_every_result_shown_is_what_the_model_gets(flow: str) -> None:
    machine = Machine.from_file(ROOT / flow)
    with open_durable("memory:", [machine]) as durable:
        calls = ToolDispatcher(durable)
        for step in [s for s in steps(PAGE) if s.flow == flow]:
            result = calls.call(step.tool, step.arguments)
            if step.shown is not None:
                assert result.text() == step.shown, f"docs/agents.md:{step.line}"
