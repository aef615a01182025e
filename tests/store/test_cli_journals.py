"""`--journal` on `flowc instances send/goto/back` and `flowc worker`, and the choice states a
step passed through (`via`) in their output and in `instances history` (issue 11 item 14)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from flowc.compiler.cli import main

ROUTED = """\
flow routed
context { n: int = 0 }
event go
event bump
initial state IDLE {
  on go -> ROUTE
  on bump -> self do n += 1
}
choice state ROUTE {
  if n > 0 -> WAIT
  else -> IDLE
}
state WAIT {
  after 200ms -> CHECK
  -> IDLE back
}
choice state CHECK {
  else -> RANG
}
final state RANG
journal log "{{ seq }} {{ source }} -> {{ target }} via [{{ via | join(',') }}]"
"""


def flowc(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def env(tmp_path: Path, shared_store_url: str) -> tuple[tuple[str, ...], Path]:
    flow = tmp_path / "routed.flow"
    flow.write_text(ROUTED, encoding="utf-8")
    return ("--store", shared_store_url, "--flow", str(flow)), tmp_path / "log.md"


def test_instances_send_goto_back_write_the_journal(
    env: tuple[tuple[str, ...], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    s, log = env
    j = ("--journal", f"log={log}")
    assert flowc(capsys, "instances", "start", "routed", "--id", "r1", *s)[0] == 0
    code, out, err = flowc(capsys, "instances", "send", "r1", "go", *s, *j)
    assert code == 0 and err == ""
    assert json.loads(out)["via"] == ["ROUTE"] and json.loads(out)["to"] == "IDLE"
    assert flowc(capsys, "instances", "send", "r1", "bump", "--key", "b", *s, *j)[0] == 0
    # A replay writes nothing more.
    code, out, _ = flowc(capsys, "instances", "send", "r1", "bump", "--key", "b", *s, *j)
    assert code == 0 and json.loads(out)["status"] == "replayed"
    assert flowc(capsys, "instances", "goto", "r1", "ROUTE", *s, *j)[0] == 1  # a choice state
    assert flowc(capsys, "instances", "send", "r1", "go", *s, *j)[0] == 0
    assert flowc(capsys, "instances", "back", "r1", "--force", *s, *j)[0] == 0
    assert log.read_text(encoding="utf-8").splitlines() == [
        "1 IDLE -> IDLE via [ROUTE]",
        "2 IDLE -> IDLE via []",
        "3 IDLE -> WAIT via [ROUTE]",
        "4 WAIT -> IDLE via []",
    ]


def test_an_unknown_journal_is_a_usage_error(
    env: tuple[tuple[str, ...], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    s, log = env
    flowc(capsys, "instances", "start", "routed", "--id", "r1", *s)
    code, out, err = flowc(capsys, "instances", "send", "r1", "go", *s, "--journal", f"nope={log}")
    assert (code, out) == (2, "")
    assert "flow routed has no journal 'nope' (journals: log)" in err
    assert json.loads(flowc(capsys, "instances", "show", "r1", *s[:2])[1])["seq"] == 0


def test_history_shows_via(
    env: tuple[tuple[str, ...], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    s, _ = env
    flowc(capsys, "instances", "start", "routed", "--id", "r1", *s)
    flowc(capsys, "instances", "send", "r1", "go", *s)
    code, out, _ = flowc(capsys, "instances", "history", "r1", "--json", *s[:2])
    assert code == 0
    assert [json.loads(line)["via"] for line in out.splitlines()] == [[], ["ROUTE"]]
    code, out, _ = flowc(capsys, "instances", "history", "r1", *s[:2])
    header, _start, step = out.splitlines()
    assert header.split() == ["SEQ", "AT", "FROM", "TO", "VIA", "TRIGGER", "PAYLOAD", "REASON"]
    assert step.split()[2:6] == ["IDLE", "IDLE", "ROUTE", "go"]


def test_worker_writes_the_journal_and_shows_via(
    env: tuple[tuple[str, ...], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    s, log = env
    flowc(capsys, "instances", "start", "routed", "--id", "r1", *s)
    flowc(capsys, "instances", "send", "r1", "bump", *s)
    flowc(capsys, "instances", "send", "r1", "go", *s)
    time.sleep(0.4)
    code, out, err = flowc(capsys, "worker", "--once", *s[:2], "--journal", f"log={log}")
    assert code == 0, err
    line = json.loads(out)
    assert line["status"] == "committed"
    assert line["steps"] == [{"seq": 3, "from": "WAIT", "to": "RANG", "via": ["CHECK"]}]
    assert log.read_text(encoding="utf-8") == "3 WAIT -> RANG via [CHECK]\n"
    assert json.loads(err)["journal_failures"] == 0


def test_worker_reports_a_journal_it_cannot_write(
    env: tuple[tuple[str, ...], Path], capsys: pytest.CaptureFixture[str]
) -> None:
    s, log = env
    log.mkdir()
    flowc(capsys, "instances", "start", "routed", "--id", "r1", *s)
    flowc(capsys, "instances", "send", "r1", "bump", *s)
    flowc(capsys, "instances", "send", "r1", "go", *s)
    time.sleep(0.4)
    code, out, err = flowc(capsys, "worker", "--once", *s[:2], "--journal", f"log={log}")
    assert code == 1 and json.loads(out)["status"] == "committed"
    first, counts = err.splitlines()
    assert first == (
        f"flowc worker: step 3 of r1 (WAIT -> RANG) is committed, but journal log could not "
        f"be written to {log}: Is a directory; the journal misses its entry"
    )
    assert json.loads(counts)["journal_failures"] == 1
