"""`flowc test`, `flowc paths` and `flowc explore` as a user runs them."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from flowc.compiler.cli import main

ROOT = Path(__file__).parents[2]
PLANTED = ROOT / "tests" / "testing" / "flows" / "planted.flow"

FLOW = """flow door
event open
event close
event lock(code: int)
initial state CLOSED {
  on open -> OPEN
  on lock if event.code == 42 -> LOCKED
  on lock reject wrong_code "Wrong code."
}
state OPEN { on close -> CLOSED }
final state LOCKED
"""
PASSING = """
test "open and close" {
  send open
  expect state OPEN
  send close
  expect state CLOSED
}
"""
FAILING = """
test "lock with the wrong code" {
  send lock(code: 1)
  expect state LOCKED
}
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_all_pass_exits_0_with_a_summary(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(tmp_path, "door.flow", FLOW + PASSING)
    assert main(["test", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "door.flow ." in out
    assert "1 passed" in out


def test_a_failure_exits_1_and_shows_the_step_with_a_caret(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "door.flow", FLOW + PASSING + FAILING)
    assert main(["test", str(path), "--color", "never"]) == 1
    out = capsys.readouterr().out
    line = (FLOW + PASSING + FAILING).splitlines().index("  send lock(code: 1)") + 1
    assert f"door.flow:{line}:3: FAILED: refused with `wrong_code`: Wrong code." in out
    assert f"{line} |   send lock(code: 1)" in out
    assert "|   ^^^^^^^^^^^^^^^^^\n" in out  # the span ends at its last token
    assert "1 failed, 1 passed" in out


def test_a_file_that_does_not_compile_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write(tmp_path, "door.flow", FLOW + 'test "t" {\n  send opn\n}\n')
    assert main(["test", str(tmp_path), "--color", "never"]) == 1
    out = capsys.readouterr().out
    assert "E (does not compile)" in out
    assert "error[E105]: unknown event `opn`" in out


def test_usage_errors_exit_2(tmp_path: Path) -> None:
    assert main(["test", str(tmp_path / "missing.flow")]) == 2
    assert main(["test", str(tmp_path)]) == 2  # no .flow files
    with pytest.raises(SystemExit) as exc:
        main(["test"])
    assert exc.value.code == 2


def test_junit_report(tmp_path: Path) -> None:
    path = write(tmp_path, "door.flow", FLOW + PASSING + FAILING)
    report = tmp_path / "report.xml"
    assert main(["test", str(path), "--format", "junit", "-o", str(report)]) == 1
    suite = ET.parse(report).getroot().find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("failures")) == ("2", "1")
    cases = {c.get("name"): c for c in suite.iter("testcase")}
    assert cases["open and close"].find("failure") is None
    failure = cases["lock with the wrong code"].find("failure")
    assert failure is not None and "wrong_code" in (failure.get("message") or "")


def test_coverage_lists_what_no_test_takes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, "door.flow", FLOW + PASSING)
    data_file = tmp_path / "coverage.json"
    assert main(["test", str(path), "--coverage", "--coverage-json", str(data_file)]) == 0
    out = capsys.readouterr().out
    assert "2/4 transitions (50%)" in out
    assert "not taken: transition line 7: CLOSED: lock -> LOCKED" in out
    assert "not taken: rejection line 8: CLOSED: lock reject wrong_code" in out
    data = json.loads(data_file.read_text())
    (entry,) = data["files"]
    assert (entry["total"], entry["covered"]) == (4, 2)
    assert entry["groups"]["rejections"] == {"total": 1, "covered": 0}
    assert {u["index"] for u in entry["uncovered"]} == {1, 2}


def test_seed_flows_pass_and_every_transition_that_can_fire_is_covered(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data_file = tmp_path / "coverage.json"
    assert main(["test", str(ROOT / "flows"), "--coverage-json", str(data_file)]) == 0
    data = json.loads(data_file.read_text())
    for entry in data["files"]:
        assert entry["rules"]["covered"] == entry["rules"]["total"], entry["file"]
        assert entry["uncovered"] == [] and entry["percent"] == 100.0, entry["file"]
    # Copies of rules written outside any state that the state's own rules always beat can
    # never fire: they are listed apart, out of the percentage.
    never = {Path(e["file"]).stem: [u["rule"] for u in e["never_fire"]] for e in data["files"]}
    assert never == {
        "attempt_v2": [
            "UNDERSTAND: skip reject skip_not_available (rule outside any state)",
            "PLAN: skip reject skip_not_available (rule outside any state)",
            "REFLECT: skip reject skip_not_allowed (rule outside any state)",
            "REFLECT: skip reject skip_not_available (rule outside any state)",
        ],
        "collab_skills": [],
        "elevator": [],
        "interactive_stage": [],
        "microwave": [],
        "order_saga": [],
        "payment": [],
        "pr_review": [],
        "review": [],
        "rfp_workspace": [],
        "stage_questions": [],
    }


def test_explore_finds_the_planted_violation_with_its_shortest_reproducer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["explore", str(PLANTED)]) == 1
    out = capsys.readouterr().out
    assert "invariant: invariant `within_budget` broken in state WORKING after 3 moves" in out
    reproducer = out[out.index('test "breaks within_budget"') :].split("}\n")[0] + "}\n"
    assert reproducer.splitlines()[1:4] == ["  send hint", "  send hint", "  send bonus"]
    # Pasted after the flow, the reproducer fails on the step that breaks the invariant.
    pasted = write(tmp_path, "planted.flow", PLANTED.read_text() + "\n" + reproducer)
    assert main(["test", str(pasted), "--color", "never"]) == 1
    out = capsys.readouterr().out
    assert "FAILED: invariant `within_budget` broken after this step" in out
    assert "send bonus" in out


def test_explore_of_a_sound_flow_exits_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fixed = PLANTED.read_text().replace(
        "on bonus -> self", "on bonus if hints_used < hint_budget -> self"
    )
    assert main(["explore", str(write(tmp_path, "fixed.flow", fixed))]) == 0
    assert "no invariant violation, no deadlock found" in capsys.readouterr().out


def test_explore_reports_deadlocks_and_rules_that_never_fire(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    stuck = """flow stuck
context { n: int = 0 }
event go
event poke
initial state A { on go -> B }
state B { on poke if n > 0 -> A }
"""
    assert main(["explore", str(write(tmp_path, "stuck.flow", stuck))]) == 1
    out = capsys.readouterr().out
    assert "deadlock: in state B no move is accepted" in out
    assert "  send go\n  expect state B\n" in out
    assert "1 rules never fired:\n  line 6: B: poke -> A" in out


def test_paths_say_which_guard_cannot_be_satisfied(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flow = FLOW.replace(
        "on lock reject", "on lock if event.code > 50 and event.code < 45 -> OPEN\n  on lock reject"
    )
    assert main(["paths", str(write(tmp_path, "door.flow", flow))]) == 1
    out = capsys.readouterr().out
    assert (
        "# not generated: CLOSED: lock -> OPEN: its guard `event.code > 50 and event.code < 45` "
        "never held in the payloads and contexts tried"
    ) in out
    assert (
        'test "takes #1 CLOSED: lock -> LOCKED" {\n  send lock(code: 42)\n  expect state LOCKED\n}'
        in out
    )
