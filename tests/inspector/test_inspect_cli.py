"""`flowc instances fork`, `flowc instances show` of a fork, and `flowc replay`."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from flowc.compiler.cli import main
from flowc.runtime import Machine
from flowc.runtime.store import open_store
from flowc.runtime.store.durable import DurableFlows
from inspector.flows import TICKET


def flowc(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def stored(sqlite_url: str) -> str:
    with DurableFlows(open_store(sqlite_url), [Machine.from_file(TICKET)]) as flows:
        flows.start("ticket", {"customer": "ann"}, id="a")
        flows.send("a", "triage", {"priority": "HIGH"})
        flows.send("a", "reply", {"text": "hello"})
        flows.send("a", "reopen", force=True)
        flows.send("a", "resolve")
    return sqlite_url


def test_fork_then_show_names_the_origin(capsys: pytest.CaptureFixture[str], stored: str) -> None:
    code, out, err = flowc(
        capsys, "instances", "fork", "a", "--at", "1", "--context", '{"customer": "bob"}',
        "--id", "b", "--store", stored,
    )  # fmt: skip
    assert (code, err) == (0, "")
    assert json.loads(out) == {"ok": True, "id": "b", "state": "OPEN", "seq": 1,
                               "forked_from": "a", "at": 1, "status": "committed"}  # fmt: skip
    code, out, _ = flowc(capsys, "instances", "show", "b", "--store", stored)
    shown = json.loads(out)
    assert shown["lineage"] == {
        "forked_from": "a",
        "at": 1,
        "patches": [{"at": 1, "context": {"customer": "bob"}}],
    }
    assert shown["context"]["customer"] == "bob"
    code, out, _ = flowc(capsys, "instances", "show", "a", "--store", stored)
    assert "lineage" not in json.loads(out)


def test_fork_errors(capsys: pytest.CaptureFixture[str], stored: str) -> None:
    code, _, err = flowc(capsys, "instances", "fork", "a", "--at", "9", "--store", stored)
    assert (code, err) == (1, "flowc instances: the instance has no step 9\n")
    code, _, err = flowc(
        capsys, "instances", "fork", "a", "--at", "1", "--context", "[1]", "--store", stored
    )
    assert (code, err) == (2, "flowc instances: --context must be a JSON object\n")
    code, out, _ = flowc(
        capsys, "instances", "fork", "a", "--at", "1", "--context", '{"replies": "x"}',
        "--store", stored,
    )  # fmt: skip
    assert code == 1 and json.loads(out)["error"] == "invalid_context"
    code, _, err = flowc(capsys, "instances", "fork", "zz", "--at", "1", "--store", stored)
    assert (code, err) == (1, "flowc instances: no instance 'zz'\n")


def test_replay_reports_identical_runs_and_the_first_difference(
    capsys: pytest.CaptureFixture[str], stored: str, tmp_path: Path
) -> None:
    code, out, err = flowc(capsys, "replay", "a", "--store", stored)
    assert (code, err) == (0, "")
    assert json.loads(out) == {"id": "a", "replayed": 5, "identical": True}
    changed = tmp_path / "ticket.flow"
    text = TICKET.read_text(encoding="utf-8")
    changed.write_text(text.replace("on reply -> WAITING", "on reply -> OPEN"), encoding="utf-8")
    code, out, err = flowc(capsys, "replay", "a", "--flow", str(changed), "--store", stored)
    assert code == 1
    assert json.loads(out) == {
        "id": "a",
        "replayed": 3,
        "identical": False,
        "first_difference": {
            "seq": 2,
            "message": "step 2: recorded OPEN -> WAITING, the re-run went OPEN -> OPEN",
        },
    }
    code, _, err = flowc(capsys, "replay", "nope", "--store", stored)
    assert (code, err) == (1, "flowc replay: no instance 'nope'\n")


def test_inspect_usage_errors(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = flowc(capsys, "inspect", "--store", "nosuch://x")
    assert code == 2 and err.startswith("flowc inspect: ")
    code, _, err = flowc(capsys, "inspect", "--port", "70000", "--store", "memory:")
    assert (code, err) == (2, "flowc inspect: --port is 0 to 65535\n")
    code, _, err = flowc(capsys, "inspect", str(tmp_path / "missing.flow"), "--store", "memory:")
    assert code == 2 and "no such file or directory" in err
    missing = tmp_path / "typo.db"
    code, _, err = flowc(capsys, "inspect", "--store", f"sqlite:///{missing}")
    assert (code, err) == (1, f"flowc inspect: no store at {missing}\n")
    assert not missing.exists()


def _serving(url: str, port: int) -> subprocess.Popen[str]:
    """`flowc inspect` as a separate process, once it has said where it serves."""
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "flowc.compiler.cli",
            "inspect",
            "--store",
            url,
            "--port",
            str(port),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    assert "flowc inspect: http://127.0.0.1:" in process.stdout.readline()
    return process


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_inspect_stops_on_a_signal_with_exit_0(stored: str, sig: signal.Signals) -> None:
    process = _serving(stored, _free_port())
    time.sleep(0.5)  # let the server finish starting: a signal then is a stop, not a failure
    process.send_signal(sig)
    assert process.wait(timeout=30) == 0


def test_inspect_on_a_port_in_use_is_one_line_and_exit_1(stored: str) -> None:
    port = _free_port()
    first = _serving(stored, port)
    try:
        second = subprocess.run(
            [sys.executable, "-m", "flowc.compiler.cli", "inspect", "--store", stored,
             "--port", str(port)],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
    finally:
        first.terminate()
        first.wait(timeout=30)
    assert second.returncode == 1
    assert f"flowc inspect: could not serve on port {port}" in second.stderr
    assert "Traceback" not in second.stderr
