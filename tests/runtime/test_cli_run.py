"""`flowc run`: events files, exit codes, snapshots to resume, journals, the prompt's parts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from flowc.compiler.cli import main
from flowc.hosts.commands.run import Prompt, _payload
from flowc.runtime import Machine

ROOT = Path(__file__).resolve().parents[2]
RFP = str(ROOT / "flows" / "rfp_workspace.flow")


def lines(path: Path, *ops: dict[str, object]) -> str:
    path.write_text("\n".join(json.dumps(op) for op in ops) + "\n", encoding="utf-8")
    return str(path)


def outputs(capsys: pytest.CaptureFixture[str]) -> list[dict[str, object]]:
    return [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def test_events_file_prints_each_outcome(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    events = lines(
        tmp_path / "e.jsonl", {"goto": "ANALYZING", "reason": "go"}, {"goto": "QNA_GENERATION"}
    )
    code = main(["run", RFP, "--context", '{"project": "p"}', "--events", events])
    assert code == 0
    out = outputs(capsys)
    assert [o["to"] for o in out] == ["RFP_RECEIVED", "ANALYZING", "QNA_GENERATION"]
    assert out[1]["reason"] == "go" and out[1]["ok"] is True


def test_first_rejection_stops_with_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    events = lines(tmp_path / "e.jsonl", {"goto": "DRAFTING"}, {"goto": "ANALYZING"})
    assert main(["run", RFP, "--context", '{"project": "p"}', "--events", events]) == 1
    out = outputs(capsys)
    assert len(out) == 2 and out[1]["error"] == "invalid_transition"
    assert (out[1]["from"], out[1]["to"]) == ("RFP_RECEIVED", "DRAFTING")


def test_keep_going_goes_on_but_still_fails(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    events = lines(tmp_path / "e.jsonl", {"goto": "DRAFTING"}, {"goto": "ANALYZING"})
    args = ["run", RFP, "--context", '{"project": "p"}', "--events", events, "--keep-going"]
    assert main(args) == 1
    assert [o.get("to") for o in outputs(capsys)] == ["RFP_RECEIVED", "DRAFTING", "ANALYZING"]


def test_bad_context_and_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    events = lines(tmp_path / "e.jsonl")
    assert main(["run", RFP, "--events", events]) == 1  # `project` is required
    assert outputs(capsys)[0]["error"] == "invalid_context"
    assert main(["run", str(tmp_path / "missing.flow")]) == 2
    assert main(["run", RFP, "--context", "[1]", "--events", events]) == 2
    assert (
        main(
            ["run", RFP, "--context", '{"project": "p"}', "--journal", "nope=x", "--events", events]
        )
        == 2
    )
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n", encoding="utf-8")
    assert main(["run", RFP, "--context", '{"project": "p"}', "--events", str(bad)]) == 1


def test_a_flow_with_errors_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    broken = tmp_path / "broken.flow"
    broken.write_text("flow x\ninitial state A { on nope -> B }\n", encoding="utf-8")
    assert main(["run", str(broken), "--events", lines(tmp_path / "e.jsonl")]) == 1
    assert "error[" in capsys.readouterr().err


def test_compiled_json_runs_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    compiled = tmp_path / "rfp.json"
    assert main(["compile", RFP, "-o", str(compiled)]) == 0
    events = lines(tmp_path / "e.jsonl", {"goto": "ANALYZING"})
    assert main(["run", str(compiled), "--context", '{"project": "p"}', "--events", events]) == 0
    assert outputs(capsys)[-1]["to"] == "ANALYZING"


def test_snapshot_resumes_and_journal_is_written_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    snap, journal = tmp_path / "status.json", tmp_path / "07_decisions.md"
    common = ["--snapshot", str(snap), "--journal", f"decisions={journal}", "--now", "2025-03-14"]
    first = lines(tmp_path / "a.jsonl", {"goto": "ANALYZING", "reason": "kickoff"})
    assert main(["run", RFP, "--context", '{"project": "p"}', "--events", first, *common]) == 0
    second = lines(tmp_path / "b.jsonl", {"goto": "QNA_GENERATION"})
    assert main(["run", RFP, "--events", second, *common]) == 0
    saved = json.loads(snap.read_text(encoding="utf-8"))
    assert saved["state"] == "QNA_GENERATION" and saved["context"]["qna_round"] == 1
    text = journal.read_text(encoding="utf-8")
    assert text.count("## 2025-03-14 — Phase:") == 2
    assert "Phase: RFP_RECEIVED -> ANALYZING" in text and "**Decision:** kickoff" in text
    # Resuming from an older copy of the snapshot replays step 2: its entry is not written again.
    saved["state"], saved["seq"] = "ANALYZING", 1
    saved["history"] = saved["history"][:2]
    saved["context"]["qna_round"] = 0
    snap.write_text(json.dumps(saved), encoding="utf-8")
    assert main(["run", RFP, "--events", second, *common]) == 0
    assert journal.read_text(encoding="utf-8") == text
    # --context cannot be combined with a snapshot to resume.
    assert main(["run", RFP, "--context", "{}", "--events", second, *common]) == 2
    # A usage error leaves the snapshot alone.
    kept = snap.read_text(encoding="utf-8")
    assert main(["run", RFP, "--events", str(tmp_path / "missing.jsonl"), *common]) == 2
    assert snap.read_text(encoding="utf-8") == kept


def test_timers_advance_on_the_simulated_clock(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flow = tmp_path / "t.flow"
    flow.write_text(
        "flow t\nevent poke\ninitial state A { after 10m -> B\n on poke -> A }\nfinal state B\n",
        encoding="utf-8",
    )
    events = lines(tmp_path / "e.jsonl", {"advance": 599}, {"advance": 1})
    assert main(["run", str(flow), "--events", events, "--now", "0"]) == 0
    out = outputs(capsys)
    assert [o.get("to") for o in out] == ["A", "B"]  # nothing due at 599 s; B at 600 s
    assert out[1]["kind"] == "timer" and out[1]["final"] is True


def test_prompt_pieces() -> None:
    machine = Machine.from_file(ROOT / "flows" / "attempt_v2.flow")
    prompt = Prompt(machine.start(), None)
    status = list(prompt.status())
    assert status[0] == "state UNDERSTAND (Understand (Feynman gate))"
    assert any(s.startswith("  on submit_explanation(explanation: string") for s in status)
    assert prompt.candidates("", "sub") == ["submit_explanation"]
    assert prompt.candidates("set_mode ", "") == ["mode="]
    assert prompt.handle("set_mode mode=EXPERT") == ["ok: UNDERSTAND -> UNDERSTAND (step 1)"]
    assert prompt.instance.context["mode"] == "EXPERT"
    refused = prompt.handle("set_mode mode=NOPE")
    assert refused[0].startswith("rejected [invalid_payload]") and prompt.rejected
    assert prompt.handle("skip") == ["ok: UNDERSTAND -> PLAN (step 2)"]
    assert prompt.candidates("goto ", "") == ["force"]
    assert _payload('{"a": 1}') == {"a": 1}
    assert _payload("a=1 b=x c='two words'") == {"a": 1, "b": "x", "c": "two words"}
    with pytest.raises(ValueError):
        _payload("novalue")


@pytest.mark.parametrize(
    ("line", "says"),
    [
        ('{"advance": NaN}', "`advance` takes a number of seconds"),
        ('{"advance": Infinity}', "`advance` takes a number of seconds"),
        ('{"advance": true}', "`advance` takes a number of seconds"),
        ('{"advance": -1}', "`advance` cannot go back in time"),
        ('{"event": 5}', "`event` must be a string"),
        ('{"goto": ["ANALYZING"]}', "`goto` must be a string"),
        ('{"goto": "ANALYZING", "force": "yes"}', "`force` must be true or false"),
        ('{"goto": "ANALYZING", "key": 7}', "`key` must be a string"),
        ('{"event": "x", "payload": [1]}', "`payload` must be an object"),
    ],
)
def test_malformed_operations_are_named_not_guessed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str, says: str
) -> None:
    events = tmp_path / "e.jsonl"
    events.write_text(line + "\n", encoding="utf-8")
    code = main(["run", RFP, "--context", '{"project": "p"}', "--events", str(events)])
    err = capsys.readouterr().err
    assert code == 1 and f"events line 1: {says}" in err


def test_events_from_dev_null_is_no_events(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["run", RFP, "--context", '{"project": "p"}', "--events", "/dev/null"])
    assert code == 0 and [o["to"] for o in outputs(capsys)] == ["RFP_RECEIVED"]


def test_an_event_op_can_force_a_back_rule(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flow = tmp_path / "phases.flow"
    flow.write_text(
        "flow phases\nevent advance\nevent reopen\n"
        "initial state A { on advance -> B }\n"
        "state B { on reopen -> A back }\n",
        encoding="utf-8",
    )
    refused = lines(tmp_path / "r.jsonl", {"event": "advance"}, {"event": "reopen"})
    assert main(["run", str(flow), "--events", refused]) == 1
    assert outputs(capsys)[-1]["error"] == "backward_requires_force"
    forced = lines(tmp_path / "f.jsonl", {"event": "advance"}, {"event": "reopen", "force": True})
    assert main(["run", str(flow), "--events", forced]) == 0
    assert outputs(capsys)[-1]["to"] == "A"


def test_run_shows_the_effects_of_each_step(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = (
        "flow t\neffect lamp(lit: bool)\nevent go\n"
        "initial state A { on go -> A do emit lamp(lit: true) }\n"
    )
    flow = tmp_path / "t.flow"
    flow.write_text(source, encoding="utf-8")
    assert main(["run", str(flow), "--events", lines(tmp_path / "e.jsonl", {"event": "go"})]) == 0
    out = outputs(capsys)
    assert "effects" not in out[0]
    assert out[1]["effects"] == [{"effect": "lamp", "payload": {"lit": True}}]
    prompt = Prompt(Machine.from_source(source).start(), None)
    assert prompt.handle("go") == ["ok: A -> A (step 1)", '  effect lamp {"lit": true}']
