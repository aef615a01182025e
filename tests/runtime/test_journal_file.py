"""`JournalFile`: one entry per step, keyed on the step's identity (not its seq), across sinks,
processes' worth of handles, crashes and files left by flowc 0.1.0."""

from __future__ import annotations

import json
from pathlib import Path

from flowc.runtime import FakeClock, Machine, StepResult
from flowc.runtime.journal import JournalFile, step_identity

FLOW = """\
flow j
context { n: int = 0 }
event hit(k: int)
initial state A {
  on hit -> B do n += event.k
}
state B {
  on hit -> A do n += event.k
}
journal log "{{ seq }} {{ source }}->{{ target }} {{ event.k }}"
"""


def machine() -> Machine:
    return Machine.from_source(FLOW, clock=FakeClock(1000.0))


def lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


def test_a_forked_step_with_a_reused_seq_is_written(tmp_path: Path) -> None:
    log = tmp_path / "log.md"
    inst = machine().start(id="i")
    saved = inst.snapshot()
    JournalFile.attach(inst, "log", log)
    assert inst.send("hit", {"k": 1}).ok
    again = machine().restore(saved)
    JournalFile.attach(again, "log", log)
    assert again.send("hit", {"k": 2}).ok  # seq 1 again, another step
    assert again.send("hit", {"k": 1}).ok  # seq 2
    assert lines(log) == ["1 A->B 1", "1 A->B 2", "2 B->A 1"]


def test_the_same_step_again_is_not_written_by_any_handle(tmp_path: Path) -> None:
    log = tmp_path / "log.md"
    inst = machine().start(id="i")
    saved = inst.snapshot()
    step = inst.send("hit", {"k": 1})
    assert isinstance(step, StepResult)
    first, second = (
        JournalFile("log", log, instance_id="i"),
        JournalFile("log", log, instance_id="i"),
    )
    assert first.write(step) is True
    assert second.write(step) is False and first.write(step) is False
    # Re-run from the snapshot before it, later: the same decision, not written twice.
    rerun = machine().restore(saved).send("hit", {"k": 1})
    assert isinstance(rerun, StepResult) and step_identity(rerun) == step_identity(step)
    assert second.write(rerun) is False
    # Another instance's step with the same seq and content is its own.
    assert JournalFile("log", log, instance_id="other").write(step) is True
    assert lines(log) == ["1 A->B 1", "1 A->B 1"]


def test_a_line_cut_short_by_a_crash_is_not_a_record(tmp_path: Path) -> None:
    log = tmp_path / "log.md"
    inst = machine().start(id="i")
    step = inst.send("hit", {"k": 1})
    assert isinstance(step, StepResult)
    (tmp_path / "log.md.steps").write_text('["i", 1, "abc', encoding="utf-8")
    assert JournalFile("log", log, instance_id="i").write(step) is True
    assert JournalFile("log", log, instance_id="i").write(step) is False
    index = (tmp_path / "log.md.steps").read_text(encoding="utf-8").splitlines()
    assert index[0] == '["i", 1, "abc' and json.loads(index[1])[:2] == ["i", 1]


def test_a_seq_file_from_flowc_0_1_still_covers_its_steps(tmp_path: Path) -> None:
    log = tmp_path / "log.md"
    (tmp_path / "log.md.seq").write_text('{"i": 1}', encoding="utf-8")
    inst = machine().start(id="i")
    JournalFile.attach(inst, "log", log)
    assert inst.send("hit", {"k": 1}).ok  # step 1: written by the old version already
    assert inst.send("hit", {"k": 2}).ok
    assert lines(log) == ["2 B->A 2"]
