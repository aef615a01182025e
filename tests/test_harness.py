"""The test harness itself: what every test can count on, however the suite was started."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).parents[1]


def test_a_process_a_test_starts_stops_on_ctrl_c() -> None:
    child = subprocess.run(
        [
            sys.executable,
            "-c",
            "import signal; print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    assert child.stdout.strip() == "True"


def test_even_when_pytest_was_started_with_ctrl_c_ignored() -> None:
    """As a background job is (`./test.sh &`): tests/conftest.py gives SIGINT back."""
    inner = f"{Path(__file__).relative_to(ROOT)}::test_a_process_a_test_starts_stops_on_ctrl_c"
    run = subprocess.run(
        [
            sys.executable,
            "-c",
            "import signal, sys, pytest; signal.signal(signal.SIGINT, signal.SIG_IGN); "
            "sys.exit(pytest.main(sys.argv[1:]))",
            *("-q", "-p", "no:cacheprovider", "-p", "no:xdist", inner),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stdout + run.stderr
