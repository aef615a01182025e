"""An agent loop on `flowc mcp`: seed 003's stage (discuss, summarize, serialize), driven by a
scripted stand-in for the LLM through the official MCP client.

    python examples/agent_loop.py        (needs pip install 'flowc[mcp]')

The stand-in knows what it wants (a DREAM artifact) but not the flow: like a model, it sees the
tool list and the results. It makes the mistakes models make (a tool from the wrong phase, a
finalization tool before its time, a misspelled argument, an artifact with a field missing)
and recovers from each using only what the result told it: `allowed_tools`, the phase's
`meta`, the field-level `issues`, and the validation feedback prompt. The host around it does
what seed 003's ConversationRunner does: it offers the phase's tools, runs the validator on the
artifact and reports the verdict with `validated`.

The accepted artifact is an effect of the flow (`write_artifact`): the result of the step that
emitted it lists it (what the model sees), and the server delivers it after the commit to
`save_artifact` below (`flowc mcp --effects agent_loop:save_artifact`), which writes the file
once per effect id.

Every call and result is printed; `main()` returns the transcript (the test suite runs it).
"""

from __future__ import annotations

import difflib
import json
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
from mcp import ClientSession, StdioServerParameters, stdio_client

FLOW = Path(__file__).parents[1] / "flows" / "interactive_stage.flow"
CONTEXT = {"stage": "dream", "finalization_tool": "submit_dream", "research_tools": ["search"]}
#: What the validator of the DREAM artifact requires (the host's, not the flow's).
DREAM_FIELDS = ("genre", "tone", "audience")

Call = tuple[str, dict[str, Any]]
Printer = Callable[[str], None]


class ScriptedModel:
    """Stands in for the LLM. It has intentions per phase, some wrong on purpose, and corrects
    itself only from results: it never reads the flow."""

    def __init__(self) -> None:
        self.view: dict[str, Any] = {}  # the last successful result
        self.unavailable: set[str] = set()  # tools a refusal said are not for this phase
        self.tried: set[str] = set()  # mistakes already made, so each is made once
        self.artifact: dict[str, str] = {"genre": "solarpunk mystery", "tone": "hopeful"}
        self.finalization_tool: str | None = None

    def next_call(self, last: Call | None, error: bool, result: dict[str, Any]) -> Call:
        if error and result.get("result") == "validation_failed" and last is not None:
            return self.repair(last, result)
        if error and result.get("error") == "tool_not_available" and last is not None:
            self.unavailable.add(last[1]["name"])
        if not error:
            if result.get("state") != self.view.get("state"):
                self.unavailable.clear()  # a new phase, new tools
            self.view = result
            context = result.get("context", {})
            self.finalization_tool = context.get("finalization_tool", self.finalization_tool)
        # After a refusal, only what it says is allowed now; after a success, whatever the
        # model fancies (models do not always read `allowed_tools`: hence the mistakes).
        allowed = set(self.allowed(result)) if error else None
        for mistake, (tool, arguments) in self.intentions():
            if mistake and not self.once(mistake):
                continue
            if allowed is not None and tool not in allowed:
                continue
            if tool == "tool_call" and arguments["name"] in self.unavailable:
                continue
            return tool, {"instance_id": self.view["instance_id"], **arguments}
        raise RuntimeError(f"nothing to do in {self.view.get('state')}")

    def intentions(self) -> list[tuple[str | None, Call]]:
        """What the model would like to do in the current phase, in order; a named mistake
        is made at most once."""
        state = self.view.get("state")
        if state == "DISCUSS":
            return [
                ("jump ahead", ("summarized", {"summary": "A solarpunk mystery."})),
                ("finalize early", ("tool_call", {"name": "submit_dream"})),
                ("talk", ("llm_turn", {})),
                # The phase's meta names the tool that ends it.
                (None, ("tool_call", {"name": self.view["meta"]["tools"][0]})),
            ]
        if state == "SUMMARIZE":
            return [
                ("typo", ("summarized", {"summery": "Genre and tone agreed."})),
                (None, ("summarized", {"summary": "Genre and tone agreed."})),
            ]
        if state == "SERIALIZE":
            if self.finalization_tool is None:
                return [(None, ("status", {}))]  # which finalization tool? ask
            return [(None, ("tool_call", {"name": self.finalization_tool}))]
        return []

    def repair(self, last: Call, feedback: dict[str, Any]) -> Call:
        """Fix the arguments from the field-level issues: an unknown field that looks like a
        missing one was a typo; other unknown fields go."""
        tool, arguments = last
        fixed = dict(arguments)
        unknown = list(feedback["issues"]["unknown"])
        for missing in feedback["issues"]["missing"]:
            near = difflib.get_close_matches(missing["field"], unknown, n=1)
            if near:
                fixed[missing["field"]] = fixed.pop(near[0])
                unknown.remove(near[0])
        for field in unknown:
            fixed.pop(field, None)
        return tool, fixed

    def revise(self, feedback: dict[str, Any]) -> None:
        """The validator's feedback (ADR-007) on the artifact: add what is missing."""
        for missing in feedback["issues"]["missing"]:
            self.artifact[missing["field"]] = "adults who like puzzles"

    def allowed(self, result: dict[str, Any]) -> list[str]:
        return [t if isinstance(t, str) else t["name"] for t in result.get("allowed_tools", [])]

    def once(self, mistake: str) -> bool:
        if mistake in self.tried:
            return False
        self.tried.add(mistake)
        return True


#: Where `save_artifact` writes (the server's environment names the folder).
ARTIFACTS = "AGENT_LOOP_ARTIFACTS"


def save_artifact(effect: Any) -> None:
    """The server's effect handler (`--effects agent_loop:save_artifact`): writes the accepted
    artifact, named by its stage. Delivery is at least once, so the write is keyed by the
    effect's stable id: a second delivery of the same effect finds it done."""
    folder = Path(os.environ[ARTIFACTS])
    target = folder / f"{effect.payload['stage']}.json"
    if target.exists() and json.loads(target.read_text())["id"] == effect.id:
        return
    target.write_text(json.dumps({"id": effect.id, **effect.payload}))


def validate(artifact: dict[str, str]) -> dict[str, Any]:
    """The host's validator of the DREAM artifact, answering with `validated`'s payload."""
    missing = [{"field": f, "requirement": "a string"} for f in DREAM_FIELDS if f not in artifact]
    return {"result": "validation_failed" if missing else "accepted", "missing": missing}


async def run_loop(session: ClientSession, say: Printer, max_calls: int = 30) -> list[str]:
    model = ScriptedModel()
    transcript: list[str] = []

    async def call(tool: str, arguments: dict[str, Any]) -> tuple[bool, dict[str, Any]]:
        result = await session.call_tool(tool, arguments)
        data: dict[str, Any] = result.structured_content  # type: ignore[union-attr,assignment]
        error = bool(result.is_error)  # type: ignore[union-attr]
        line = f"{tool}({json.dumps({k: v for k, v in arguments.items() if k != 'instance_id'})})"
        outcome = (
            f"error {data.get('error')}: {data.get('message')}"
            if error
            else f"ok -> {data['state']}"
        )
        if data.get("effects"):  # what the step caused, for the model to know
            outcome += f" (effects: {', '.join(e['effect'] for e in data['effects'])})"
        transcript.append(f"{line} => {outcome}")
        say(f"  {line}\n    => {outcome}")
        return error, data

    error, result = await call("start", {"context": CONTEXT})
    model.view = result
    last: Call | None = None
    for _ in range(max_calls):
        if result.get("final") or model.view.get("final"):
            break
        last = model.next_call(last, error, result)
        error, result = await call(*last)
        if not error and last[0] == "tool_call" and last[1]["name"] == model.finalization_tool:
            # The host runs the finalization tool's validator and reports its verdict.
            verdict = validate(model.artifact)
            iid = model.view["instance_id"]
            error, result = await call("validated", {"instance_id": iid, **verdict})
            if not error and verdict["result"] != "accepted":
                # ADR-007: the model is sent the structured feedback and retries.
                prompt = await session.get_prompt("validation_feedback", {"instance_id": iid})
                feedback = json.loads(prompt.messages[0].content.text)  # type: ignore[union-attr]
                say(f"  (validation feedback to the model: {json.dumps(feedback['issues'])})")
                model.revise(feedback)
    return transcript


async def main_async(store: str, artifacts: Path, say: Printer) -> list[str]:
    server = StdioServerParameters(
        command=sys.executable,
        args=[
            *("-m", "flowc.compiler.cli", "mcp", str(FLOW), "--store", store),
            *("--effects", "agent_loop:save_artifact"),
        ],
        env={"PYTHONPATH": str(Path(__file__).parent), ARTIFACTS: str(artifacts)},
    )
    async with stdio_client(server) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = await session.list_tools()
        say(f"tools: {', '.join(t.name for t in tools.tools)}")
        return await run_loop(session, say)


def main(store: str | None = None, say: Printer = print) -> list[str]:
    with tempfile.TemporaryDirectory() as tmp:
        url = store or f"sqlite:///{Path(tmp) / 'agent.db'}"
        result: list[str] = anyio.run(main_async, url, Path(tmp), say)
        for written in sorted(Path(tmp).glob("*.json")):
            saved = json.loads(written.read_text())
            step_and_index = "/".join(saved["id"].split("/")[-2:])  # the id ends SEQ/INDEX
            result.append(f"delivered {step_and_index}: {written.name}")
            say(f"the handler wrote {written.name}: {json.dumps(saved)}")
        return result


if __name__ == "__main__":
    main()
