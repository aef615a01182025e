"""First paint of a 100,000-step instance's page in `flowc inspect`, in Debian's chromium.

    python bench/inspect_paint.py [--steps 100000]

Commits the steps through `DurableFlows` into a temporary SQLite file (synchronous=off, to
build it quicker; the inspector opens it as usual), starts the real inspector on it, and opens
the instance's page in headless chromium (Selenium, chromium-driver) three times. For each
load it reports, from the start of navigation as the browser measures it: when the page showed
the state, the diagram and the last page of the timeline ("paint"), and when the context
changes of those steps were there too (the first load re-runs the whole history for them; the
next loads find the re-run done).
"""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from flowc.runtime import Machine
from flowc.runtime.store import open_store
from flowc.runtime.store.durable import DurableFlows

ROOT = Path(__file__).resolve().parents[1]
TICKET = ROOT / "tests/inspector/ticket.flow"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--window-size=1400,1000"]  # fmt: skip


def build(url: str, steps: int) -> None:
    with DurableFlows(open_store(url + "?synchronous=off"), [Machine.from_file(TICKET)]) as f:
        f.start("ticket", {"customer": "big"}, id="big")
        f.send("big", "triage", {"priority": "HIGH"})
        for n in range(steps - 2):
            if n % 2:
                f.send("big", "reopen", force=True)
            else:
                f.send("big", "reply", {"text": f"r{n}"})


def browser(profile: str) -> Any:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    for flag in [*FLAGS, f"--user-data-dir={profile}"]:
        options.add_argument(flag)
    return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)


PAINTED = """
const rows = document.querySelectorAll('#steps > tr');
const img = document.getElementById('diagram');
return rows.length >= 50 && img && img.complete && img.naturalWidth > 0
  && document.getElementById('state') ? performance.now() : null;
"""
FILLED = """
const rows = [...document.querySelectorAll('#steps > tr')];
return rows.length >= 50 && rows.every((r) => !r.querySelector('[title="being worked out"]'))
  ? performance.now() : null;
"""


def load(driver: Any, url: str) -> tuple[float, float]:
    driver.get("about:blank")
    driver.get(url)
    painted = filled = None
    end = time.monotonic() + 120
    while (painted is None or filled is None) and time.monotonic() < end:
        painted = painted or driver.execute_script(PAINTED)
        filled = filled or driver.execute_script(FILLED)
        time.sleep(0.01)
    if painted is None or filled is None:
        raise SystemExit("the page did not paint within 120 s")
    return painted, filled


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=100_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        url = f"sqlite:///{Path(tmp) / 'big.db'}"
        started = time.perf_counter()
        build(url, args.steps)
        print(f"built {args.steps} steps in {time.perf_counter() - started:.0f} s")
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        server = subprocess.Popen(
            [sys.executable, "-m", "flowc.compiler.cli", "inspect", "--store", url,
             "--port", str(port)], stdout=subprocess.DEVNULL,
        )  # fmt: skip
        time.sleep(2)
        driver = browser(str(Path(tmp) / "profile"))
        try:
            for n in range(3):
                painted, filled = load(driver, f"http://127.0.0.1:{port}/#/i/big")
                print(f"load {n + 1}: paint {painted:.0f} ms, context changes {filled:.0f} ms")
        finally:
            driver.quit()
            server.terminate()
            server.wait()


if __name__ == "__main__":
    main()
