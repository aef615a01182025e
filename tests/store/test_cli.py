"""`flowc instances` and `flowc worker` against SQLite and PostgreSQL."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from flowc.compiler.cli import main
from store.flows import TALLY_V1, TIMED


@pytest.fixture
def flow_dir(tmp_path: Path) -> str:
    folder = tmp_path / "flows"
    folder.mkdir()
    (folder / "tally.flow").write_text(TALLY_V1, encoding="utf-8")
    (folder / "timed.flow").write_text(TIMED, encoding="utf-8")
    return str(folder)


def flowc(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_instances_commands(
    shared_store_url: str, flow_dir: str, capsys: pytest.CaptureFixture[str]
) -> None:
    s = ("--store", shared_store_url)
    f = ("--flow", flow_dir)
    code, out, _ = flowc(capsys, "instances", "start", "tally", "--id", "t1", *s, *f)
    assert code == 0 and json.loads(out)["state"] == "OPEN"
    code, out, _ = flowc(capsys, "instances", "send", "t1", "inc", "{}", "--key", "k", *s, *f)
    assert code == 0 and json.loads(out)["status"] == "committed"
    # The store keeps the graph of the flow it was started with: no --flow needed from now on.
    code, out, _ = flowc(capsys, "instances", "send", "t1", "inc", "--key", "k", *s)
    assert code == 0 and json.loads(out)["status"] == "replayed"
    code, out, _ = flowc(capsys, "instances", "send", "t1", "bogus", *s, *f)
    assert code == 1 and json.loads(out)["error"] == "unknown_event"
    code, out, _ = flowc(capsys, "instances", "send", "t1", "inc", "[1]", *s, *f)
    assert code == 2
    code, out, _ = flowc(capsys, "instances", "list", *s)
    assert code == 0 and out.splitlines()[0].split() == [
        "ID",
        "FLOW",
        "VERSION",
        "STATE",
        "SEQ",
        "UPDATED",
    ]
    assert out.splitlines()[1].split()[:5] == ["t1", "tally", "1", "OPEN", "1"]
    code, out, _ = flowc(capsys, "instances", "list", "--json", "--state", "CLOSED", *s)
    assert code == 0 and out == ""
    code, out, _ = flowc(capsys, "instances", "show", "t1", *s)
    shown = json.loads(out)
    assert shown["context"] == {"count": 1} and shown["version"] == 2 and shown["timers"] == []
    code, out, _ = flowc(capsys, "instances", "history", "t1", "--json", *s)
    assert [json.loads(line)["trigger"] for line in out.splitlines()] == ["start", "inc"]
    code, out, err = flowc(capsys, "instances", "show", "nope", *s)
    assert code == 1 and "no instance 'nope'" in err
    code, _, err = flowc(capsys, "instances", "goto", "t1", "CLOSED", *s, *f)
    assert code == 1
    code, _, err = flowc(capsys, "instances", "send", "t1", "inc", *s, "--flow", "/no/such")
    assert code == 2 and "no such file" in err


def test_worker_fires_due_timers(
    shared_store_url: str, flow_dir: str, capsys: pytest.CaptureFixture[str]
) -> None:
    s = ("--store", shared_store_url)
    f = ("--flow", flow_dir)
    for name in ("a", "b"):
        flowc(capsys, "instances", "start", "timed", "--id", name, *s, *f)
        flowc(capsys, "instances", "send", name, "go", *s, *f)
    code, out, _ = flowc(capsys, "worker", "--once", *s, *f)
    assert code == 0 and out == "", "nothing due yet"
    time.sleep(0.6)
    # No --flow: each instance runs on the graph the store keeps for it.
    code, out, err = flowc(capsys, "worker", "--for", "0.3", "--poll", "0.05", *s)
    assert code == 0
    fired = sorted(
        (json.loads(line)["id"], json.loads(line)["status"]) for line in out.splitlines()
    )
    assert fired == [("a", "committed"), ("b", "committed")]
    assert json.loads(err)["committed"] == 2
    code, out, _ = flowc(capsys, "instances", "show", "a", *s)
    assert json.loads(out)["state"] == "RANG"


def test_bad_store_url_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = flowc(capsys, "instances", "list", "--store", "mysql://x")
    assert code == 2 and "unknown store URL" in err


def events_file(path: Path, *ops: dict[str, object]) -> str:
    path.write_text("".join(json.dumps(op) + "\n" for op in ops), encoding="utf-8")
    return str(path)


def test_run_keeps_its_instance_in_the_store(
    shared_store_url: str, flow_dir: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tally = str(Path(flow_dir) / "tally.flow")
    s = ("--store", shared_store_url)
    first = events_file(tmp_path / "a.jsonl", {"event": "inc", "key": "k1"}, {"event": "inc"})
    code, out, _ = flowc(capsys, "run", tally, *s, "--id", "r1", "--events", first)
    lines = [json.loads(line) for line in out.splitlines()]
    assert code == 0, lines
    assert lines[0] == {"kind": "start", "id": "r1", "to": "OPEN", "ok": True, "seq": 0}
    assert [(d["seq"], d["final"]) for d in lines[1:]] == [(1, False), (2, False)]
    # A second run resumes the stored instance; a key already applied replays, changing nothing.
    again = events_file(
        tmp_path / "b.jsonl", {"event": "inc", "key": "k1"}, {"event": "close"}, {"event": "inc"}
    )
    code, out, _ = flowc(capsys, "run", tally, *s, "--id", "r1", "--events", again)
    lines = [json.loads(line) for line in out.splitlines()]
    assert code == 1, "the last event is refused: the instance has ended"
    assert (lines[0]["status"], lines[0]["seq"]) == ("replayed", 1)
    assert (lines[1]["to"], lines[1]["final"]) == ("CLOSED", True)
    assert lines[2]["ok"] is False
    code, out, _ = flowc(capsys, "instances", "history", "r1", "--json", *s)
    assert [json.loads(line)["trigger"] for line in out.splitlines()] == [
        "start",
        "inc",
        "inc",
        "close",
    ]
    # Without --id a new instance is started under a fresh id, printed on the start line.
    code, out, _ = flowc(capsys, "run", tally, *s, "--events", first)
    assert code == 0 and json.loads(out.splitlines()[0])["id"] != "r1"


def test_run_on_a_store_with_a_simulated_clock_fires_timers(
    flow_dir: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    timed = str(Path(flow_dir) / "timed.flow")
    s = ("--store", f"sqlite:///{tmp_path / 'flows.db'}", "--now", "2026-01-01T00:00:00Z")
    ops = events_file(tmp_path / "t.jsonl", {"event": "go"}, {"advance": 0.2}, {"advance": 1})
    code, out, _ = flowc(capsys, "run", timed, *s, "--id", "w", "--events", ops)
    lines = [json.loads(line) for line in out.splitlines()]
    assert code == 0, lines
    assert [(d.get("from"), d.get("to")) for d in lines[1:]] == [
        ("IDLE", "WAITING"),
        ("WAITING", "RANG"),
    ], "nothing due after 0.2 s; the 500 ms timer after 1.2 s"
    code, out, _ = flowc(capsys, "instances", "show", "w", "--store", s[1])
    assert json.loads(out)["context"] == {"pings": 1}


def test_run_store_usage_errors(
    flow_dir: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    tally = str(Path(flow_dir) / "tally.flow")
    timed = str(Path(flow_dir) / "timed.flow")
    url = f"sqlite:///{tmp_path / 'flows.db'}"
    ops = events_file(tmp_path / "e.jsonl", {"event": "go"}, {"advance": 1})
    snap = str(tmp_path / "s.json")
    assert flowc(capsys, "run", tally, "--store", url, "--snapshot", snap)[0] == 2
    assert flowc(capsys, "run", tally, "--id", "x", "--events", ops)[0] == 2
    assert flowc(capsys, "run", tally, "--store", "mysql://x", "--events", ops)[0] == 2
    code, _, err = flowc(capsys, "run", timed, "--store", url, "--events", ops)
    assert code == 1 and "needs --now" in err
    # An instance of another flow is not driven by this one.
    code, _, _ = flowc(capsys, "run", tally, "--store", url, "--id", "t", "--events", ops)
    code, _, err = flowc(capsys, "run", timed, "--store", url, "--id", "t", "--events", ops)
    assert code == 1 and "tally" in err


def test_the_prompt_drives_a_stored_instance(tmp_path: Path) -> None:
    from flowc.hosts.commands.run import Prompt, StoredDriver
    from flowc.runtime.store.durable import open_durable
    from store.flows import machine

    with open_durable(f"sqlite:///{tmp_path / 'f.db'}", [machine(TALLY_V1)]) as durable:
        durable.start("tally", id="p")
        prompt = Prompt(StoredDriver(durable, "p", None))
        assert prompt.handle("inc") == ["ok: OPEN -> OPEN (step 1)"]
        assert prompt.instance.context == {"count": 1}, "read back from the store"
        assert durable.store.load("p").seq == 1
        assert prompt.handle("bogus")[0].startswith("rejected [unknown_event]")
        assert prompt.candidates("", "") == [
            "advance",
            "back",
            "close",
            "context",
            "goto",
            "help",
            "history",
            "inc",
            "quit",
            "snapshot",
        ]


JOURNALLED = """\
flow jot
version 1
context { count: int = 0 }
event inc
initial state OPEN { on inc -> self do count += 1 }
journal steps "{{ seq }}: {{ context.count }}"
"""


def test_run_on_a_store_appends_journals_once_per_step(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flow = tmp_path / "jot.flow"
    flow.write_text(JOURNALLED, encoding="utf-8")
    log = tmp_path / "steps.log"
    s = ("--store", f"sqlite:///{tmp_path / 'flows.db'}", "--journal", f"steps={log}")
    ops = events_file(tmp_path / "a.jsonl", {"event": "inc", "key": "k1"}, {"event": "inc"})
    code, out, _ = flowc(capsys, "run", str(flow), *s, "--id", "j", "--events", ops)
    assert code == 0, out
    assert log.read_text(encoding="utf-8") == "1: 1\n2: 2\n"
    # Resumed: the replayed key writes nothing, the new step its one entry.
    again = events_file(tmp_path / "b.jsonl", {"event": "inc", "key": "k1"}, {"event": "inc"})
    code, out, _ = flowc(capsys, "run", str(flow), *s, "--id", "j", "--events", again)
    assert code == 0, out
    assert log.read_text(encoding="utf-8") == "1: 1\n2: 2\n3: 3\n"
    code, _, err = flowc(capsys, "run", str(flow), *s[:2], "--journal", "nope=x", "--events", ops)
    assert code == 2 and "no journal 'nope'" in err


def test_instances_send_force_takes_a_back_rule(
    shared_store_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from store.test_durable import REOPENING

    flow = tmp_path / "reopening.flow"
    flow.write_text(REOPENING, encoding="utf-8")
    s = ("--store", shared_store_url)
    code, _, _ = flowc(
        capsys, "instances", "start", "reopening", "--id", "r", *s, "--flow", str(flow)
    )
    assert code == 0
    assert flowc(capsys, "instances", "send", "r", "submit", *s)[0] == 0
    code, out, _ = flowc(capsys, "instances", "send", "r", "reopen", *s)
    assert code == 1 and json.loads(out)["error"] == "backward_requires_force"
    code, out, _ = flowc(capsys, "instances", "send", "r", "reopen", "--force", *s)
    assert code == 0 and json.loads(out)["to"] == "DRAFT"


@pytest.mark.parametrize("action", ["send", "goto", "back"])
def test_every_step_command_explains_its_key_and_reason(action: str) -> None:
    # One set of step options (hosts/commands/options.py) for the three commands that step.
    done = subprocess.run(
        [str(Path(sys.executable).parent / "flowc"), "instances", action, "--help"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert "idempotency key: resending it changes nothing" in done.stdout
    assert "recorded in the history" in done.stdout
    assert "--journal NAME=FILE" in done.stdout
