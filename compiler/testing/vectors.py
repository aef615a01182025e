"""Shared test vectors (`flowc vectors`): each test of a flow, run on the Python runtime, with
the outcome of every operation recorded, so that another runtime of the same IR (runtime-ts/)
can run the same operations and compare what it gets (docs/testing.md, "Shared vectors").

The tests are the flow's own `test` blocks, those `flowc paths --cover` finds and the refusal
probes (probes.py). A test's expectations are not needed: a vector records what the runtime
did, whether or not a test expected it. Everything is deterministic (a fake clock at a fixed
start, members in the order the runtime made them), so the files can be committed and checked
for staleness (`flowc vectors --check`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from flowc.compiler import ast
from flowc.compiler.driver import CompileResult
from flowc.compiler.lower import Lowerer
from flowc.compiler.template_lowering import default_messages
from flowc.compiler.testblocks import black_box_invoke
from flowc.compiler.testing.moves import Move, Player
from flowc.compiler.testing.paths import generate
from flowc.compiler.testing.probes import probe_contexts, probe_moves
from flowc.compiler.testing.runner import given_context, step_move
from flowc.compiler.testing.template_cases import cases_data
from flowc.runtime import FakeClock, Instance, Rejection, StepResult
from flowc.runtime.lines import line_text, outcome_line, start_line
from flowc.runtime.steps import Outcome

FORMAT = "flowc.vectors/1"
#: Where every vector's clock starts, in epoch milliseconds (2025-01-01T00:00:00Z).
START_MS = FakeClock().ms
#: The bound of the `flowc paths --cover` search behind the generated vectors: a number of
#: configurations, never a time, so the same flow always gives the same vectors.
MAX_CONFIGS = 2000
MAX_DEPTH = 40

ORIGIN_TEST = "test block"
ORIGIN_PATHS = "flowc paths --cover"
ORIGIN_PROBES = "refusal probes"


@dataclass(frozen=True)
class Script:
    """A test as the operations it makes: its name, where it comes from, the starting context
    (None: the flow's defaults) and the moves."""

    name: str
    origin: str
    context: dict[str, Any] | None
    moves: list[Move]


def scripts(result: CompileResult) -> list[Script]:
    """The flow's test blocks (in source order), the tests `flowc paths --cover` finds, and
    the refusal probes (probes.py)."""
    assert result.flow is not None and result.symbols is not None
    lowerer = Lowerer(result.symbols)
    out = [
        Script(
            test.name.value,
            ORIGIN_TEST,
            given_context(test, lowerer) or None,
            [step_move(step, lowerer) for step in test.steps if _acts(step)],
        )
        for test in result.symbols.tests
    ]
    report = generate(
        result.flow,
        cover=True,
        max_configs=MAX_CONFIGS,
        max_depth=MAX_DEPTH,
        time_limit=float("inf"),
    )
    out += [Script(p.name, ORIGIN_PATHS, p.context or None, p.moves) for p in report.tests]
    context, refused = probe_contexts(result.flow)
    out.append(
        Script("refusals at the start", ORIGIN_PROBES, context or None, probe_moves(result.flow))
    )
    out.append(Script("an unknown context field", ORIGIN_PROBES, refused, []))
    return out


def _acts(step: ast.TestStep) -> bool:
    return isinstance(step, ast.Send | ast.Goto | ast.Back | ast.Advance)


def flow_vectors(result: CompileResult, source: str) -> dict[str, Any]:
    """The vectors file of one compiled flow (`source`: its path as the file records it)."""
    assert result.flow is not None
    flow = result.flow
    player = Player(flow)
    return {
        "format": FORMAT,
        "flow": flow.name,
        "source": source,
        "ir": json.loads(flow.to_json()),
        "vectors": [record(player, script) for script in scripts(result)],
    }


def record(player: Player, script: Script) -> dict[str, Any]:
    """Run `script` on a new instance and record every outcome, with a snapshot taken after
    the middle operation (after the start when there is none)."""
    vector: dict[str, Any] = {
        "name": script.name,
        "origin": script.origin,
        "now": START_MS,
        "context": _json(script.context),
    }
    started = player.start(script.context or {})
    if isinstance(started, Rejection):
        # Nothing runs on an instance that never started: the refusal is the whole vector.
        vector["start"] = {"line": _json(started.to_dict())}
        vector["ops"] = []
        return vector
    instance = started
    vector["start"] = _expect(instance, start_line(instance), instance.start_effects, None)
    middle = (len(script.moves) + 1) // 2
    ops = []
    if middle == 0:
        vector["snapshot"] = {"after": 0, "data": _json(instance.snapshot())}
    for number, move in enumerate(script.moves, 1):
        stepped = _stepped(instance, move.child)  # (before the move: a child may end in it)
        outcomes = player.play(instance, move).outcomes
        op = _op(move)
        expects = [_outcome_expect(instance, outcome, stepped) for outcome in outcomes]
        op["expect"] = expects if move.kind == "advance" else expects[0]
        ops.append(op)
        if number == middle:
            vector["snapshot"] = {"after": number, "data": _json(instance.snapshot())}
    vector["ops"] = ops
    return vector


def _op(move: Move) -> dict[str, Any]:
    """The operation `Player.play` makes for `move`, as the vectors format writes it."""
    payload = {name: value for name, value, _ in move.payload}
    child = {"child": move.child} if move.child else {}
    ended = black_box_invoke(move.name) if move.kind == "end_invoke" else None
    if ended is not None:
        invoke, failed = ended
        op = {"op": "end_invoke", "invoke": invoke, "payload": _json(payload)}
        return {**op, "failed": failed, **child}
    if move.kind == "send":
        return {
            "op": "send",
            "event": move.name,
            "payload": _json(payload),
            "force": False,
            "reason": None,
            "key": None,
            **child,
        }
    if move.kind == "goto":
        return {"op": "goto", "target": move.name, "force": move.force, "reason": None}
    if move.kind == "back":
        # A test's `back` may take a backward edge (Player.play backs with force).
        return {"op": "back", "force": True, "reason": None}
    return {"op": "advance", "ms": move.ms}


def _stepped(instance: Instance, child: str) -> Instance:
    """The instance an operation steps: the vector's, or its child at `child` (the vector's
    when there is none: the operation is refused)."""
    try:
        return instance.child(child) if child else instance
    except KeyError:
        return instance


def _outcome_expect(instance: Instance, outcome: Outcome, stepped: Instance) -> dict[str, Any]:
    """EXPECT of one outcome of an operation on `stepped` (the instance, or a child of it:
    the journals of a step are its own flow's)."""
    if isinstance(outcome, StepResult):
        journals = outcome.journals() if stepped.machine.journals else None
        return _expect(instance, outcome_line(outcome, instance), outcome.effects, journals)
    return _expect(instance, outcome_line(outcome, instance), [], None)


def _expect(
    instance: Instance,
    line: dict[str, Any],
    effects: list[dict[str, Any]],
    journals: dict[str, str] | None,
) -> dict[str, Any]:
    """What another runtime must find after an outcome: the `flowc run` line of it, and the
    instance as it is after the whole operation."""
    out = {
        "line": json.loads(line_text(line)),
        "state": instance.state,
        "configuration": list(instance.configuration),
        "context": _json(instance.context),
        "final": instance.is_final,
        "effects": _json(effects),
    }
    if journals is not None:
        out["journals"] = journals
    return out


def _json(value: Any) -> Any:
    """`value` as JSON holds it (what the other runtime reads back)."""
    return json.loads(json.dumps(value, ensure_ascii=False, default=repr))


def vectors_text(data: dict[str, Any]) -> str:
    """A vectors file's bytes: the top-level members sorted, the IR on one line and each vector
    on one line (a diff names the vectors that changed; a third smaller than indented)."""
    lines = []
    for key in sorted(data):
        if key == "vectors":
            items = [_compact(v) for v in data[key]]
            value = "[\n  " + ",\n  ".join(items) + "\n ]" if items else "[]"
        else:
            value = _compact(data[key])
        lines.append(f" {json.dumps(key)}: {value}")
    return "{\n" + ",\n".join(lines) + "\n}\n"


def _compact(value: Any) -> str:
    # Members stay in the order the runtime made them (deterministic: insertion order): the
    # order of a map's keys is something a flow can observe (`keys(m)`, a template's `for`).
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


#: The file beside the vectors with the rejection kinds' default messages, lowered (another
#: runtime needs them to render the messages its refusals carry).
MESSAGES_FILE = "default_messages.json"
MESSAGES_FORMAT = "flowc.templates/1"


def messages_text() -> str:
    data = {"format": MESSAGES_FORMAT, "messages": default_messages()}
    return json.dumps(data, sort_keys=True, indent=1, ensure_ascii=False) + "\n"


#: The file of template cases (template_cases.py): the flows' lowered templates and the
#: default messages, with values and the text Jinja2 renders from them.
CASES_FILE = "template_cases.json"


def cases_text(forms: dict[str, Any]) -> str:
    """The template cases of these lowered forms and of the default messages: one case a line."""
    defaults = {m["source"]: m["parts"] for m in default_messages().values()}
    data = cases_data({**defaults, **forms})
    cases = ",\n  ".join(_compact(case) for case in data["cases"])
    return f'{{\n "cases": [\n  {cases}\n ],\n "format": {json.dumps(data["format"])}\n}}\n'


def file_name(path: Path) -> str:
    return f"{path.stem}.vectors.json"


def duplicate_names(paths: Iterable[Path]) -> dict[str, list[Path]]:
    """Output names two or more inputs would share."""
    seen: dict[str, list[Path]] = {}
    for path in paths:
        seen.setdefault(file_name(path), []).append(path)
    return {name: found for name, found in seen.items() if len(found) > 1}
