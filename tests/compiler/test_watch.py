"""`--watch`: the real command in a subprocess re-runs when a watched file is saved."""

from __future__ import annotations

import os
import queue
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

GOOD = "flow demo\nevent go\ninitial state A { on go -> B }\nfinal state B\n"
TYPO = GOOD.replace("on go", "on og")
DEADLINE = 30.0


class Watcher:
    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.proc = proc
        self.lines: queue.Queue[str] = queue.Queue()
        self.history: list[str] = []
        for stream in (proc.stdout, proc.stderr):
            assert stream is not None
            threading.Thread(target=self._read, args=(stream,), daemon=True).start()

    def _read(self, stream: IO[str]) -> None:
        for line in stream:
            self.lines.put(line)

    def has_said(self, text: str) -> bool:
        """Whether a line read so far, or one still coming, contains `text`. Standard output
        and standard error are read by two threads, so a line written to stdout before a line
        on stderr may be queued after it."""
        if any(text in line for line in self.history):
            return True
        self.wait_for(text)
        return True

    def wait_for(self, text: str, poke: Callable[[], None] | None = None) -> list[str]:
        """Output lines up to the first containing `text` (failing after DEADLINE seconds).

        `poke` (a save) is done at once and again every few seconds while nothing comes: the
        watcher starts listening a moment after it says so, and a save in that moment is
        rightly unseen."""
        seen: list[str] = []
        end = time.monotonic() + DEADLINE
        next_poke = 0.0
        while time.monotonic() < end:
            if poke is not None and time.monotonic() >= next_poke:
                poke()
                next_poke = time.monotonic() + 3.0
            try:
                line = self.lines.get(timeout=0.2)
            except queue.Empty:
                continue
            seen.append(line)
            self.history.append(line)
            if text in line:
                return seen
        raise AssertionError(f"no {text!r} within {DEADLINE}s; output: {''.join(seen)}")


@contextmanager
def watching(*args: str) -> Iterator[Watcher]:
    proc = subprocess.Popen(
        [sys.executable, "-m", "flowc.compiler.cli", *args, "--watch"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "NO_COLOR": "1"},
    )
    try:
        yield Watcher(proc)
        proc.send_signal(signal.SIGINT)  # Ctrl-C: a clean stop
        assert proc.wait(timeout=DEADLINE) in (0, 1)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()


def save(path: Path, text: str) -> None:
    """As editors do: write a new file, rename it over the old one."""
    temporary = path.with_suffix(".tmp")
    temporary.write_text(text, encoding="utf-8")
    temporary.replace(path)


def test_check_watch_reruns_when_a_flow_is_saved(tmp_path: Path) -> None:
    flow = tmp_path / "demo.flow"
    flow.write_text(GOOD, encoding="utf-8")
    with watching("check", str(tmp_path)) as watcher:
        first = watcher.wait_for("watching for changes")
        assert any("0 errors, 0 warnings in 1 file" in line for line in first)
        second = watcher.wait_for("1 error, 0 warnings in 1 file", lambda: save(flow, TYPO))
        assert any("demo.flow changed" in line for line in second)
        assert watcher.has_said("error[E105]: unknown event `og`")
        # A new flow in the watched directory is checked too.
        watcher.wait_for(
            "1 error, 0 warnings in 2 files", lambda: save(tmp_path / "other.flow", GOOD)
        )


def test_render_watch_redraws_when_the_flow_is_saved(tmp_path: Path) -> None:
    flow = tmp_path / "demo.flow"
    out = tmp_path / "demo.mmd"
    flow.write_text(GOOD, encoding="utf-8")
    with watching("render", str(flow), "-o", str(out)) as watcher:
        watcher.wait_for("watching for changes")
        assert "REVIEW" not in out.read_text(encoding="utf-8")
        longer = GOOD.replace("-> B }", "-> REVIEW }\nstate REVIEW { on go -> B }")
        watcher.wait_for(f"wrote {out}", lambda: save(flow, longer))
        assert "REVIEW" in out.read_text(encoding="utf-8")
