"""Loading machines (and refusing bad ones), introspection for hosts, templates, journals,
the asyncio wrapper, and what `import flowc.runtime` pulls in."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from flowc.runtime import (
    FakeClock,
    IRLoadError,
    Machine,
    Rejection,
    StepResult,
    UnknownTemplate,
)
from flowc.runtime.aio import AsyncInstance
from flowc.runtime.journal import JournalFile

from .conftest import frozen, machine

ROOT = Path(__file__).resolve().parents[2]

FLOW = """
flow gate "Gate"
version 3

context {
  budget: int = 2
  used: int = 0
  who: str = "ann"
}

event hint
event ask(q: str)
event close(reason: str)
  require used < 10 else too_many "too many"

initial state OPEN "Open gate" {
  meta { tools: ["hint", "ask"] }
  on hint if used < budget -> self do used += 1
  on hint reject exhausted "No hints left, {{ context.who }}."
  on ask if len(event.q) > 0 -> self
  on ask reject empty "Ask something."
  on close -> SHUT
  if used > 0 -> SHUT
}

final state SHUT "Shut"

journal log \"\"\"{{ seq }} {{ source }}->{{ target }} {{ event }} {{ event.reason }} \
{{- " " }}{{ reason }} {{ state.title }} {{ context.used }} {{ at.year }}\"\"\"

template greet \"\"\"Hello {{ name }}, {{ state.title }} with \
{{- " " }}{{ context.budget - context.used }} left\"\"\"
"""


@pytest.fixture
def m() -> Machine:
    return machine(FLOW, FakeClock(0))


def compiled_json(source: str = FLOW) -> str:
    from flowc.compiler import compile_source

    result = compile_source(source, "gate.flow")
    assert result.flow is not None
    return result.flow.to_json()


# ---- loading ---------------------------------------------------------------------------------


def test_from_json_checks_version_and_hash() -> None:
    text = compiled_json()
    m = Machine.from_json(text)
    assert (m.name, m.title, m.version) == ("gate", "Gate", 3)
    assert m.hash.startswith("sha256:") and m.state_names() == ["OPEN", "SHUT"]
    data = json.loads(text)
    data["states"][0]["title"] = "Edited"
    with pytest.raises(IRLoadError, match="hash"):
        Machine.from_json(json.dumps(data))
    assert Machine.from_json(json.dumps(data), verify_hash=False).start().title == "Edited"
    data["ir_version"] = 99
    with pytest.raises(IRLoadError, match="ir_version"):
        Machine.from_json(json.dumps(data))
    with pytest.raises(IRLoadError, match="not JSON"):
        Machine.from_json("{nope")


def test_compact_canonical_json_verifies_without_reserialising() -> None:
    from flowc.compiler import compile_source

    flow = compile_source(FLOW, "gate.flow").flow
    assert flow is not None
    compact = flow.to_json(indent=None)
    assert Machine.from_json(compact).hash == flow.hash
    edited = compact.replace('"Open gate"', '"Opened gate"')
    with pytest.raises(IRLoadError, match="hash"):
        Machine.from_json(edited)
    assert Machine.from_json(edited.encode(), verify_hash=False).start().title == "Opened gate"


def test_bad_graphs_are_refused_at_load() -> None:
    good = json.loads(compiled_json())
    good.pop("hash")

    def broken(change: Any) -> dict[str, Any]:
        data = json.loads(json.dumps(good))
        change(data)
        return data

    cases = [
        (lambda d: d["transitions"][0].update(target="NOWHERE"), "unknown state 'NOWHERE'"),
        (lambda d: d["transitions"][0].update(event="nope"), "unknown event"),
        (lambda d: d["transitions"][0].update(kind="teleport"), "unknown kind"),
        (lambda d: d.update(initial="NOWHERE"), "initial state"),
        (lambda d: d["states"].append(d["states"][0]), "declared twice"),
        (lambda d: d["context"][0].update(default="two"), "default of context.budget"),
        (lambda d: d.pop("states"), "initial state"),
        (lambda d: d["transitions"][0].pop("source"), "lacks required field.*source"),
    ]
    for change, message in cases:
        with pytest.raises(IRLoadError, match=message):
            Machine(broken(change))


def test_bad_expressions_surface_at_preload_not_as_rejections() -> None:
    data = json.loads(compiled_json())
    data.pop("hash")
    data["transitions"][0]["guard"] = {"op": "call", "value": "launch_missiles", "args": []}
    lazy = Machine(data)  # closures are compiled on first use...
    with pytest.raises(IRLoadError, match="unknown function"):
        lazy.start().send("hint")  # ...and a bad one is the programmer's error, raised
    with pytest.raises(IRLoadError, match="unknown function"):
        Machine(data).preload()


def test_from_file_reads_flow_and_json(tmp_path: Path) -> None:
    src = tmp_path / "gate.flow"
    src.write_text(FLOW, encoding="utf-8")
    js = tmp_path / "gate.json"
    js.write_text(compiled_json(), encoding="utf-8")
    assert Machine.from_file(src).hash == Machine.from_file(js).hash
    broken = tmp_path / "broken.flow"
    broken.write_text("flow b\ninitial state A { on x -> B }\n", encoding="utf-8")
    with pytest.raises(IRLoadError, match="does not compile"):
        Machine.from_file(broken)


def test_seed_golden_files_load(tmp_path: Path) -> None:
    for golden in sorted((ROOT / "tests" / "golden").glob("*.json")):
        m = Machine.from_json(golden.read_text(encoding="utf-8")).preload()
        assert m.name == golden.stem


def test_routing_loops_are_caught() -> None:
    # The compiler refuses routing cycles (E304); a hand-edited IR is caught at run time.
    source = """
flow loop
context { n: int = 0 }
event go
initial state A { on go -> R }
choice state R { entry do n += 1
  if n > 100 -> B
  else -> Q }
choice state Q { else -> B }
final state B
"""
    data = Machine.from_source(source).raw
    data = json.loads(json.dumps(data))
    data.pop("hash")
    for t in data["transitions"]:
        if t["source"] == "Q":
            t["target"] = "R"
    m = Machine(data)
    inst = m.start()
    before = frozen(inst)
    r = inst.send("go")
    assert isinstance(r, Rejection) and r.code == "routing_loop"
    assert r.data == {"path": ["R", "Q", "R"], "node": "R"}
    assert r.message == "Routing from 'A' went round in a loop."
    assert frozen(inst) == before


def test_import_does_not_load_the_compiler_stack() -> None:
    code = (
        "import sys, flowc.runtime, flowc.runtime.aio, flowc.runtime.journal\n"
        "m = flowc.runtime.Machine.from_json(open(sys.argv[1]).read())\n"
        "i = m.start({'project': 'p'}); i.goto('ANALYZING')\n"
        "bad = sorted(n for n in sys.modules if n.split('.')[0] in "
        "('lark', 'networkx', 'graphviz') or n.startswith(('flowc.compiler', 'flowc.hosts')))\n"
        "print(bad)\n"
    )
    golden = ROOT / "tests" / "golden" / "rfp_workspace.json"
    out = subprocess.run(
        [sys.executable, "-c", code, str(golden)], capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "[]"


# ---- introspection for hosts -----------------------------------------------------------------


def test_accepted_events_follow_guards_that_need_no_payload(m: Machine) -> None:
    inst = m.start()
    assert [e.name for e in inst.accepted_events()] == ["hint", "ask", "close"]
    inst.send("hint")
    inst.send("hint")
    # The budget is spent: `hint` would only be refused now, so it is not offered.
    assert [e.name for e in inst.accepted_events()] == ["ask", "close"]
    refused = inst.send("hint")
    assert isinstance(refused, Rejection) and refused.message == "No hints left, ann."


def test_accepted_events_hide_an_event_whose_precondition_fails(m: Machine) -> None:
    inst = m.start({"used": 10, "budget": 20})
    assert [e.name for e in inst.accepted_events()] == ["hint", "ask"]


def test_render_templates(m: Machine) -> None:
    inst = m.start()
    inst.send("hint")
    assert inst.render("greet", name="Bo") == "Hello Bo, Open gate with 1 left"
    with pytest.raises(UnknownTemplate):
        inst.render("nope")


def test_journal_variables(m: Machine) -> None:
    inst = m.start()
    step = inst.send("close", {"reason": "done"}, reason="host said so")
    assert isinstance(step, StepResult)
    assert step.journal("log") == "1 OPEN->SHUT close done host said so Shut 0 1970"
    assert step.journals() == {"log": step.journal("log")}


def test_journal_file_is_idempotent(m: Machine, tmp_path: Path) -> None:
    inst = m.start()
    path = tmp_path / "log.md"
    sink = JournalFile.attach(inst, "log", path)
    step = inst.send("hint")
    assert isinstance(step, StepResult)
    assert sink.write(step) is False  # delivered once already by the subscription
    inst.send("hint")
    assert path.read_text(encoding="utf-8").splitlines() == [
        "1 OPEN->OPEN hint   Open gate 1 1970",
        "2 OPEN->OPEN hint   Open gate 2 1970",
    ]
    with pytest.raises(KeyError):
        JournalFile.attach(inst, "nope", path)


def test_async_instance_serialises_steps_and_awaits_subscribers(m: Machine) -> None:
    async def scenario() -> list[Any]:
        inst = AsyncInstance.start(m)
        seen: list[Any] = []

        async def broadcast(step: StepResult) -> None:
            await asyncio.sleep(0)
            seen.append(step.seq)

        inst.subscribe(broadcast)
        outcomes = await asyncio.gather(*(inst.send("hint") for _ in range(3)))
        seen.append([o.ok for o in outcomes])
        seen.append(inst.context["used"])
        seen.append((await inst.goto("SHUT")).ok)
        return seen

    assert asyncio.run(scenario()) == [1, 2, [True, True, False], 2, 3, True]


def test_async_timers_fire(clock: FakeClock) -> None:
    m = machine("flow t\ninitial state A { after 50ms -> B }\nfinal state B\n")

    async def scenario() -> str:
        inst = AsyncInstance.start(m)
        await asyncio.wait_for(inst.run_timers(), timeout=5)
        return inst.state

    assert asyncio.run(scenario()) == "B"
