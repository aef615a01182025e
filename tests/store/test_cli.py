"""`flowc instances` and `flowc worker` against SQLite and PostgreSQL."""

from __future__ import annotations

import json
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
    code, out, _ = flowc(capsys, "instances", "send", "t1", "inc", "--key", "k", *s, *f)
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
    code, out, err = flowc(capsys, "worker", "--for", "0.3", "--poll", "0.05", *s, *f)
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
