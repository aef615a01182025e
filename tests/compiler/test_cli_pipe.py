"""A reader that goes away (`flowc ... | true`) must not turn a failure into success: the exit
status is the command's own, with a real pipe between two processes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

# Enough diagnostics that they are written while the command runs, not at exit.
BAD = (
    "flow bad\nevent go\ninitial state A {\n"
    + "".join(f"  on unknown{i} -> B\n" for i in range(300))
    + "}\nfinal state B\n"
)
GOOD = "flow good\nevent go\ninitial state A { on go -> B }\nfinal state B\n"


def flowc_into_closed_pipe(*argv: str, stdin: str | None = None) -> tuple[int, str]:
    """Run flowc with its standard output a pipe whose reader has already gone."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "flowc.compiler.cli", *argv],
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    if stdin is not None:
        assert proc.stdin is not None
        proc.stdin.write(stdin)
        proc.stdin.close()
    err = proc.stderr.read()
    return proc.wait(timeout=60), err


@pytest.fixture
def flows(tmp_path: Path) -> Path:
    (tmp_path / "bad.flow").write_text(BAD, encoding="utf-8")
    (tmp_path / "good.flow").write_text(GOOD, encoding="utf-8")
    return tmp_path


def test_check_with_errors_piped_into_true_still_fails(flows: Path) -> None:
    code, err = flowc_into_closed_pipe("check", str(flows / "bad.flow"))
    assert code == 1
    assert "Traceback" not in err and "BrokenPipe" not in err


def test_clean_check_piped_into_true_still_succeeds(flows: Path) -> None:
    code, err = flowc_into_closed_pipe("check", str(flows / "good.flow"))
    assert code == 0 and "Traceback" not in err


def test_rejected_run_piped_into_true_still_fails(flows: Path) -> None:
    events = '{"event": "go"}\n' + '{"event": "nope"}\n' * 200
    code, err = flowc_into_closed_pipe(
        "run", str(flows / "good.flow"), "--events", "-", "--keep-going", stdin=events
    )
    assert code == 1
    assert "Traceback" not in err and "Exception ignored" not in err


def test_accepted_run_piped_into_true_succeeds(flows: Path) -> None:
    code, err = flowc_into_closed_pipe(
        "run", str(flows / "good.flow"), "--events", "-", stdin='{"event": "go"}\n'
    )
    assert code == 0
    assert "Traceback" not in err and "Exception ignored" not in err
