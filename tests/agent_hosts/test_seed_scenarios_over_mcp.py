"""The seed flows' own scenarios (their `test` blocks) played through the tools a model gets: in
process through `ToolDispatcher`, and over the real `flowc mcp` server with the SDK's client.

A scenario is played as a model-driven host would: `given` fields become the `start` tool's
`context` (so every scenario whose start fields are all marked `input` must run), `send` an
event tool, `goto` / `back` those tools; `expect state`, `expect reject` and `expect effect` are
checked against the results. Scenarios that move the clock (`advance`) or start from fields a
caller may not set are the host's, and are left out (counted, so that none is lost unseen);
`expect EXPR` and `expect journal` read what a model does not see, and are not checked here.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import pytest

from agent_hosts.mcp_client import ROOT, call, stdio_session
from flowc.compiler import ast
from flowc.compiler.driver import compile_file
from flowc.compiler.lower import Lowerer
from flowc.runtime.machine import Machine
from flowc.runtime.store.durable import open_durable
from flowc.runtime.tool_calls import ToolDispatcher
from flowc.runtime.tools import input_fields

SEEDS = sorted((ROOT / "flows").glob("*.flow"))
Caller = Callable[[str, dict[str, Any]], Awaitable[tuple[bool, dict[str, Any]]]]


@dataclass
class Scenario:
    name: str
    context: dict[str, Any]
    steps: list[ast.TestStep]


def scenarios(path: Path) -> tuple[Machine, Lowerer, list[Scenario], list[str]]:
    """The flow's machine, and its scenarios a model could play (and the names of the others)."""
    result = compile_file(path)
    assert result.flow is not None and result.symbols is not None
    machine = Machine(result.flow)
    lowerer = Lowerer(result.symbols)
    allowed = set(input_fields(machine))
    playable, left_out = [], []
    for test in result.symbols.tests:
        given = {
            s.field.name: lowerer.constant(s.value) for s in test.steps if isinstance(s, ast.Given)
        }
        if set(given) <= allowed and not any(isinstance(s, ast.Advance) for s in test.steps):
            playable.append(Scenario(test.name.value, given, list(test.steps)))
        else:
            left_out.append(test.name.value)
    return machine, lowerer, playable, left_out


def _ir_name(lowerer: Lowerer, written: str) -> str:
    found = lowerer.symbols.state_candidates(written)
    return found[0] if len(found) == 1 else written


def _active(machine: Machine, data: dict[str, Any]) -> set[str]:
    """Every state the result says is active: the leaves and the states around them."""
    names = {data["state"], *(a["state"] for a in data.get("active", []))}
    for name in list(names):
        parent = machine.states[name].parent
        while parent is not None:
            names.add(parent.name)
            parent = parent.parent
    return names


async def play(machine: Machine, lowerer: Lowerer, scenario: Scenario, tool: Caller) -> None:
    error, data = await tool("start", {"context": scenario.context})
    assert not error, (scenario.name, data)
    iid, view, last = data["instance_id"], data, data
    for step in scenario.steps:
        where = f"{scenario.name}: {type(step).__name__} line {step.span.line}"
        if isinstance(step, ast.Send | ast.Goto | ast.Back):
            if isinstance(step, ast.Send):
                payload = {k.name: lowerer.constant(v) for k, v in step.payload}
                error, last = await tool(step.event.name, {"instance_id": iid, **payload})
            elif isinstance(step, ast.Goto):
                target = _ir_name(lowerer, step.target.name)
                args = {
                    "instance_id": iid,
                    "target": target,
                    **({"force": True} if step.force else {}),
                }
                error, last = await tool("goto", args)
            else:
                error, last = await tool("back", {"instance_id": iid})
            if not error:
                view = last
        elif isinstance(step, ast.ExpectReject):
            assert error and last["error"] == step.code.name, (where, last)
        elif isinstance(step, ast.ExpectState):
            assert _ir_name(lowerer, step.state.name) in _active(machine, view), (where, view)
        elif isinstance(step, ast.ExpectEffect):
            wanted = {k.name: lowerer.constant(v) for k, v in step.fields}
            assert any(
                e["effect"] == step.effect.name
                and all(e["fields"].get(k) == v for k, v in wanted.items())
                for e in last.get("effects", [])
            ), (where, last)
        elif isinstance(step, ast.ExpectNoEffect):
            named = step.effect.name if step.effect is not None else None
            assert not [
                e for e in last.get("effects", []) if named is None or e["effect"] == named
            ], (where, last)


@pytest.mark.parametrize("path", SEEDS, ids=[p.stem for p in SEEDS])
def test_the_seed_scenarios_pass_through_the_tools(path: Path) -> None:
    machine, lowerer, playable, left_out = scenarios(path)
    assert playable, f"{path.name}: no scenario a model could play (left out: {left_out})"
    with open_durable("memory:", [machine]) as durable:
        dispatcher = ToolDispatcher(durable)

        async def tool(name: str, arguments: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
            result = dispatcher.call(name, arguments)
            return result.is_error, result.data

        async def body() -> None:
            for scenario in playable:
                await play(machine, lowerer, scenario, tool)

        anyio.run(body)


@pytest.mark.parametrize("path", SEEDS, ids=[p.stem for p in SEEDS])
def test_the_seed_scenarios_pass_over_the_real_server(path: Path, tmp_path: Path) -> None:
    machine, lowerer, playable, _ = scenarios(path)

    async def body() -> None:
        async with stdio_session([path], f"sqlite:///{tmp_path / 'f.db'}") as session:

            async def tool(name: str, arguments: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
                return await call(session, name, **arguments)

            for scenario in playable:
                await play(machine, lowerer, scenario, tool)

    anyio.run(body)
