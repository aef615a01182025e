"""`flowc vectors`: the committed shared vectors (runtime-ts/test/vectors/) are what the
command writes today, and a small runner of its own, built on the runtime's public API only,
replays every vector and gets every expectation, from the start and from the snapshot."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flowc.compiler.cli import main
from flowc.runtime import FakeClock, Instance, Machine, Rejection, StepResult
from flowc.runtime.children import end_invoke
from flowc.runtime.lines import outcome_line, start_line
from flowc.runtime.steps import Outcome

ROOT = Path(__file__).parents[2]
VECTORS = ROOT / "runtime-ts" / "test" / "vectors"
#: The inputs the committed vectors are generated from (runtime-ts/VECTORS.md).
INPUTS = ["flows", "tests", "examples"]


@pytest.fixture
def at_root() -> Iterator[None]:
    here = Path.cwd()
    os.chdir(ROOT)
    try:
        yield
    finally:
        os.chdir(here)


def test_the_committed_vectors_are_up_to_date(
    at_root: None, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["vectors", *INPUTS, "-o", str(VECTORS), "--check", "--skip-errors"])
    assert code == 0, capsys.readouterr().err


# ---- an independent replay ------------------------------------------------------------------


def _files() -> list[Path]:
    return sorted(VECTORS.glob("*.vectors.json"))


def test_every_input_flow_has_vectors() -> None:
    names = {p.name for p in _files()}
    flows = {f"{p.stem}.vectors.json" for folder in INPUTS for p in (ROOT / folder).rglob("*.flow")}
    assert flows <= names
    assert sum(len(json.loads(p.read_text())["vectors"]) for p in _files()) >= 200


def _observed(
    instance: Instance,
    line: dict[str, Any],
    outcome: Outcome | None,
    stepped: Instance | None = None,
) -> dict[str, Any]:
    """What a vector's EXPECT states, read off the instance and the outcome (of a step of
    `stepped`, the instance or one of its children)."""
    effects = outcome.effects if isinstance(outcome, StepResult) else []
    if outcome is None:
        effects = instance.start_effects
    out = {
        "line": json.loads(json.dumps(line, ensure_ascii=False, default=repr)),
        "state": instance.state,
        "configuration": list(instance.configuration),
        "context": instance.context,
        "final": instance.is_final,
        "effects": effects,
    }
    if isinstance(outcome, StepResult) and (stepped or instance).machine.journals:
        out["journals"] = outcome.journals()
    return out


def _no_child(instance: Instance, path: str, event: str) -> Rejection:
    m = instance.machine
    state = m.states[instance.state]
    return m.rejection("unknown_child", state, event, None, instance.context, {"child": path})


def _target(instance: Instance, op: dict[str, Any]) -> Instance | None:
    """The instance an operation goes to: the vector's, or its child at `op["child"]`."""
    try:
        return instance.child(op["child"]) if "child" in op else instance
    except KeyError:
        return None


def _apply(instance: Instance, clock: FakeClock, op: dict[str, Any]) -> list[Outcome]:
    kind = op["op"]
    target = _target(instance, op)
    if kind in ("send", "end_invoke") and target is None:
        event = op.get("event") or f"{'error' if op['failed'] else 'done'}.invoke.{op['invoke']}"
        return [_no_child(instance, op["child"], event)]
    assert target is not None
    if kind == "end_invoke":
        event = f"{'error' if op['failed'] else 'done'}.invoke.{op['invoke']}"
        ended = end_invoke(target, op["invoke"], op["payload"], op["failed"])
        return [ended if ended is not None else _no_child(target, op["invoke"], event)]
    if kind == "send":
        return [
            target.send(
                op["event"], op["payload"], force=op["force"], reason=op["reason"], key=op["key"]
            )
        ]
    if kind == "goto":
        return [instance.goto(op["target"], force=op["force"], reason=op["reason"])]
    if kind == "back":
        return [instance.back(force=op["force"], reason=op["reason"])]
    assert kind == "advance", kind
    clock.ms += op["ms"]
    return instance.advance()


def _run_ops(instance: Instance, clock: FakeClock, ops: list[dict[str, Any]], where: str) -> None:
    for number, op in enumerate(ops, 1):
        stepped = _target(instance, op)
        outcomes = _apply(instance, clock, op)
        got = [_observed(instance, outcome_line(o, instance), o, stepped) for o in outcomes]
        expected = op["expect"] if op["op"] == "advance" else [op["expect"]]
        assert got == expected, f"{where}, op {number} ({op['op']})"


def _replay(machine: Machine, vector: dict[str, Any]) -> None:
    where = f"{machine.name}: {vector['name']!r}"
    clock = FakeClock(vector["now"] / 1000)
    started = machine.try_start(vector["context"], clock=clock)
    if isinstance(started, Rejection):
        assert {"line": started.to_dict()} == vector["start"], where
        return
    assert _observed(started, start_line(started), None) == vector["start"], where
    _run_ops(started, clock, vector["ops"], where)
    # From the snapshot: restored on a clock at the time it was taken, the rest runs the same.
    snapshot = vector["snapshot"]
    after = snapshot["after"]
    elapsed = sum(op["ms"] for op in vector["ops"][:after] if op["op"] == "advance")
    clock = FakeClock((vector["now"] + elapsed) / 1000)
    restored = machine.restore(snapshot["data"], clock=clock)
    _run_ops(restored, clock, vector["ops"][after:], f"{where} (restored after op {after})")


@pytest.mark.parametrize("path", _files(), ids=lambda p: p.name.split(".")[0])
def test_the_runtime_replays_every_vector(path: Path) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    assert data["format"] == "flowc.vectors/1"
    machine = Machine.from_json(json.dumps(data["ir"]))
    assert machine.name == data["flow"]
    assert (ROOT / data["source"]).is_file()
    for vector in data["vectors"]:
        _replay(machine, vector)


# ---- the command ----------------------------------------------------------------------------

TIMED = """flow timed
context { n: int = 0 }
event go(k: int)
effect noted(k: int)
journal log "{{ event }}:{{ target }}"
initial state A {
  on go if event.k > 3 reject too_big "{{ event.k }} is too big"
  on go -> B do n += event.k; emit noted(k: event.k)
}
state B {
  after 1s -> C
  on go -> C
}
final state C

test "times out" {
  send go(k: 5)
  expect reject too_big
  send go(k: 2)
  advance 2s
  expect state C
}
"""


def _write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def test_a_test_block_becomes_a_vector_of_its_operations(tmp_path: Path) -> None:
    flow = _write(tmp_path / "src", "timed.flow", TIMED)
    out = tmp_path / "out"
    assert main(["vectors", str(flow), "-o", str(out)]) == 0
    data = json.loads((out / "timed.vectors.json").read_text())
    assert data["format"] == "flowc.vectors/1" and data["flow"] == "timed"
    vector = data["vectors"][0]
    assert (vector["name"], vector["origin"], vector["context"]) == (
        "times out",
        "test block",
        None,
    )
    refused, sent, advanced = vector["ops"]
    assert refused["expect"]["line"]["error"] == "too_big"
    assert refused["expect"]["line"]["message"] == "5 is too big"
    assert refused["expect"]["state"] == "A" and refused["expect"]["effects"] == []
    assert sent["payload"] == {"k": 2} and sent["expect"]["context"] == {"n": 2}
    assert sent["expect"]["effects"] == [{"effect": "noted", "payload": {"k": 2}}]
    assert sent["expect"]["journals"] == {"log": "go:B"}
    assert advanced == {
        "op": "advance",
        "ms": 2000,
        "expect": [advanced["expect"][0]],
    }
    timer = advanced["expect"][0]
    assert (timer["line"]["to"], timer["line"]["final"], timer["final"]) == ("C", True, True)
    assert timer["line"]["at"] == "2025-01-01T00:00:01+00:00"
    assert vector["snapshot"]["after"] == 2 and vector["snapshot"]["data"]["state"] == "B"
    # Then the tests `flowc paths --cover` finds, and the refusal probes.
    origins = [v["origin"] for v in data["vectors"][1:]]
    assert set(origins[:-2]) == {"flowc paths --cover"}
    probes, unknown_field = data["vectors"][-2:]
    assert origins[-2:] == ["refusal probes"] * 2
    errors = [op["expect"]["line"].get("error") for op in probes["ops"]]
    assert errors[:4] == ["unknown_event", "unknown_state", "no_previous_state", "invalid_payload"]
    issues = probes["ops"][3]["expect"]["line"]["issues"]
    assert issues["invalid"][0]["field"] == "k" and issues["unknown"] == ["__unknown__"]
    assert probes["ops"][4]["expect"]["line"]["issues"]["missing"][0]["field"] == "k"
    assert unknown_field["start"] == {"line": unknown_field["start"]["line"]}
    assert unknown_field["start"]["line"]["error"] == "invalid_context"
    assert unknown_field["ops"] == [] and "snapshot" not in unknown_field
    assert (out / "default_messages.json").is_file()


def test_check_finds_every_difference_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flow = _write(tmp_path / "src", "timed.flow", TIMED)
    out = tmp_path / "out"
    args = ["vectors", str(flow), "-o", str(out)]
    assert main(args) == 0
    written = (out / "timed.vectors.json").read_bytes()
    assert main(args) == 0 and (out / "timed.vectors.json").read_bytes() == written
    assert main([*args, "--check"]) == 0
    capsys.readouterr()
    _write(tmp_path / "src", "timed.flow", TIMED.replace("k: 2", "k: 1"))
    _write(out, "gone.vectors.json", "{}")
    (out / "default_messages.json").unlink()
    assert main([*args, "--check"]) == 1
    err = capsys.readouterr().err
    assert "timed.vectors.json: differs" in err
    assert "gone.vectors.json: written from no FLOW given" in err
    assert "default_messages.json: missing" in err
    assert (out / "timed.vectors.json").read_bytes() == written


def test_flows_that_do_not_compile_fail_unless_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    src = tmp_path / "src"
    _write(src, "timed.flow", TIMED)
    _write(src, "broken.flow", "flow broken\ninitial state A { on nothing -> A }\n")
    out = tmp_path / "out"
    assert main(["vectors", str(src), "-o", str(out)]) == 1
    assert "broken.flow: not compiled" in capsys.readouterr().err
    assert (out / "timed.vectors.json").is_file()
    assert main(["vectors", str(src), "-o", str(out), "--skip-errors"]) == 0
    assert "skipped" in capsys.readouterr().err and not (out / "broken.vectors.json").exists()


def test_usage_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = str(tmp_path / "out")
    assert main(["vectors", str(tmp_path / "nothing.flow"), "-o", out]) == 2
    assert main(["vectors", str(tmp_path), "-o", out]) == 2  # no .flow files in it
    _write(tmp_path / "a", "same.flow", TIMED)
    _write(tmp_path / "b", "same.flow", TIMED)
    assert main(["vectors", str(tmp_path), "-o", out]) == 2
    assert "would all be written to same.vectors.json" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exited:
        main(["vectors", str(tmp_path / "a")])  # no -o
    assert exited.value.code == 2


def _events_line(op: dict[str, Any]) -> dict[str, Any]:
    """A vector's operation as a line of `flowc run --events` (which counts time in seconds)."""
    if op["op"] == "send":
        return {"event": op["event"], "payload": op["payload"], "force": op["force"]}
    if op["op"] == "goto":
        return {"goto": op["target"], "force": op["force"]}
    if op["op"] == "back":
        return {"back": True, "force": op["force"]}
    return {"advance": op["ms"] / 1000}


@pytest.mark.parametrize("stem", ["stage_questions", "microwave", "ticket"])
def test_each_line_is_what_flowc_run_prints(
    stem: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = json.loads((VECTORS / f"{stem}.vectors.json").read_text(encoding="utf-8"))
    for vector in data["vectors"][:6]:
        events = tmp_path / "events.jsonl"
        events.write_text("".join(json.dumps(_events_line(op)) + "\n" for op in vector["ops"]))
        args = ["run", str(ROOT / data["source"]), "--events", str(events), "--keep-going"]
        args += ["--now", str(vector["now"] / 1000)]
        if vector["context"] is not None:
            args += ["--context", json.dumps(vector["context"])]
        main(args)
        printed = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
        expected = [vector["start"]["line"]]
        for op in vector["ops"]:
            expected += [
                e["line"] for e in (op["expect"] if op["op"] == "advance" else [op["expect"]])
            ]
        assert printed == expected, vector["name"]


def test_the_output_does_not_depend_on_the_hash_seed(tmp_path: Path) -> None:
    """Committed files must come out byte for byte the same in every process (no set order)."""
    flow = _write(tmp_path / "src", "timed.flow", TIMED)
    written = []
    for seed in ("1", "2"):
        out = tmp_path / f"out{seed}"
        args = ["vectors", str(flow), "-o", str(out)]
        code = f"from flowc.compiler.cli import main; main({args!r})"
        env = {**os.environ, "PYTHONHASHSEED": seed}
        subprocess.run([sys.executable, "-c", code], check=True, env=env)
        written.append({p.name: p.read_bytes() for p in sorted(out.iterdir())})
    assert written[0] == written[1] and len(written[0]) == 3
