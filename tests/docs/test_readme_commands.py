"""Every command of the README's Use block runs as written, with the documented exit code.

Each line of the block is run by the shell (globs and `>` as a user types them) in a temporary
folder holding a copy of flows/ and of examples/, so the stores and files the commands create
(`flowc.db`, `attempt.json`, ...) stay there. `x.flow`, the README's placeholder for "a file",
is a copy of a seed flow. The Use block promises exit 0 for every line ("0 success").

Commands that wait for a user or run until stopped are driven so that they end:
- `flowc lsp`, `flowc run ...` and `flowc mcp ...` read standard input, which is closed: each
  ends when its input does (as when an editor, a user or an agent hangs up);
- `flowc worker` and `flowc inspect` run as written until they have installed their handler for
  SIGTERM, then get it (as a service manager stops them);
- `flowc check --watch` runs as written until its first report, then gets SIGINT (Ctrl-C).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
BIN = Path(sys.executable).parent
#: Bounds, not benchmarks: a command that hangs fails instead of stalling the suite.
TIMEOUT = 120.0


def use_block() -> list[str]:
    """The command lines of the README's Use block, comments removed."""
    text = README.read_text(encoding="utf-8")
    section = text.split("\n## Use\n", 1)[1]
    block = re.search(r"```sh\n(.*?)```", section, flags=re.DOTALL)
    assert block is not None
    return [line.split("  #", 1)[0].strip() for line in block.group(1).splitlines() if line]


COMMANDS = use_block()
#: Commands stopped by a signal once they are running: the signal to send them.
STOPPED = {
    "flowc check --watch flows/": signal.SIGINT,
    "flowc worker": signal.SIGTERM,
    "flowc inspect": signal.SIGTERM,
}


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    where = tmp_path
    shutil.copytree(ROOT / "flows", where / "flows")
    shutil.copytree(ROOT / "examples", where / "examples")
    shutil.copy(ROOT / "flows" / "attempt_v2.flow", where / "x.flow")
    return where


def _environment() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
    env.pop("FLOWC_STORE", None)
    return env


def test_the_use_block_is_read() -> None:
    assert len(COMMANDS) >= 15
    assert all(c.startswith("flowc ") for c in COMMANDS), COMMANDS


#: The README's line that stores instance `a1` in flowc.db, which its later lines use (list,
#: worker, inspect) or name (fork, replay).
STARTS_A1 = next(c for c in COMMANDS if "--id a1" in c)


@pytest.mark.parametrize("command", COMMANDS)
def test_readme_command_runs_as_documented(command: str, folder: Path) -> None:
    # Each command runs in a folder of its own (the tests may run on several workers, in any
    # order); one that uses the store or names `a1` finds it stored by the README's own line.
    if re.search(r"\ba1\b|flowc\.db", command) and command != STARTS_A1:
        _run(STARTS_A1, folder)
    _run(command, folder)


def _run(command: str, folder: Path) -> None:
    stop = next((sig for start, sig in STOPPED.items() if command.startswith(start)), None)
    # The ones stopped by a signal have no glob or redirection: run without a shell, so that
    # the signal reaches flowc itself.
    process = subprocess.Popen(
        shlex.split(command) if stop is not None else command,
        shell=stop is None,
        cwd=folder,
        env=_environment(),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    if stop is not None:
        output = _stop_when_ready(process, stop)
    else:
        try:
            output, _ = process.communicate(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            process.kill()  # a server left running would hold its port for the rest of the suite
            process.communicate()
            raise
    assert process.returncode == 0, f"{command}: exit {process.returncode}\n{output.decode()}"


def _stop_when_ready(process: subprocess.Popen[bytes], sig: signal.Signals) -> bytes:
    """Signal the command once it is ready for it, as a terminal's Ctrl-C or a service manager
    would, and return all it printed. Ready: it has installed its own handler for SIGTERM
    (/proc's SigCgt: the worker, the inspector's server), or, for SIGINT, which every Python
    program catches from its start, printed its first line (`check --watch` its report). A
    fixed pause signalled a slow start (a loaded machine) before its handler was there."""
    out = process.stdout
    assert out is not None
    chunks: list[bytes] = []
    reader = threading.Thread(target=lambda: chunks.extend(iter(out.readline, b"")))
    reader.start()
    try:
        deadline = time.monotonic() + TIMEOUT
        while not (chunks if sig == signal.SIGINT else _catches(process.pid, sig)):
            assert process.poll() is None, "it should still be running"
            assert time.monotonic() < deadline, "it never became ready"
            time.sleep(0.05)
        time.sleep(0.5)  # a moment of running, as a user's session would have
        assert process.poll() is None, "it should still be running"
        process.send_signal(sig)
        process.wait(timeout=TIMEOUT)
    finally:
        if process.poll() is None:
            process.kill()  # a server left running would hold its port for the rest of the suite
            process.wait()
        reader.join(timeout=TIMEOUT)
    return b"".join(chunks)


def _catches(pid: int, sig: signal.Signals) -> bool:
    """Whether process `pid` has a handler of its own for `sig` (Linux: /proc's SigCgt)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    mask = next((ln.split()[1] for ln in status.splitlines() if ln.startswith("SigCgt:")), "0")
    return bool(int(mask, 16) >> (int(sig) - 1) & 1)
