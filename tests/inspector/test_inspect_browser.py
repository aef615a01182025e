"""`flowc inspect` in a real browser: Debian's chromium, headless, driven by Selenium through
chromium-driver. The inspector runs as its own process (the command a user types); a second
process steps an instance, and the open page must show the step. Screenshots are kept in
$FLOWC_TEST_ARTIFACTS (default build/test-artifacts/inspect), and docs/inspect.md shows them.

Without chromium the test is skipped, except under CI=true, where it fails (setup.sh installs
chromium and chromium-driver)."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flowc.runtime import Machine
from flowc.runtime.store import open_store
from flowc.runtime.store.durable import DurableFlows
from inspector.flows import TICKET

CHROMIUM, DRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1400,1000",
]
ROOT = Path(__file__).resolve().parents[2]


def artifacts() -> Path:
    where = Path(os.environ.get("FLOWC_TEST_ARTIFACTS") or ROOT / "build/test-artifacts/inspect")
    where.mkdir(parents=True, exist_ok=True)
    return where


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_until_up(url: str, server: subprocess.Popen[bytes], seconds: float = 20.0) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if server.poll() is not None:
            raise AssertionError(
                f"flowc inspect exited: {server.stderr.read() if server.stderr else ''!r}"
            )
        try:
            urllib.request.urlopen(url + "api/instances?limit=1", timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise AssertionError("flowc inspect did not answer in time")


@pytest.fixture
def store_file(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'flows.db'}"
    with DurableFlows(open_store(url), [Machine.from_file(TICKET)]) as flows:
        for n in range(3):
            flows.start("ticket", {"customer": f"customer-{n}"}, id=f"ticket-{n}")
            flows.send(f"ticket-{n}", "triage", {"priority": "HIGH"})
        flows.send("ticket-1", "note", {"text": "called back"})
        flows.send("ticket-1", "reply", {"text": "Could you send the log?"})
        flows.fork("ticket-1", at=1, id="ticket-1-retry")
    return url


@pytest.fixture
def inspector(store_file: str) -> Iterator[str]:
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "-m", "flowc.compiler.cli", "inspect", "--store", store_file,
         "--port", str(port), "--allow-send"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}/"
    try:
        wait_until_up(url, server)
        yield url
    finally:
        server.terminate()
        server.wait(timeout=10)


@pytest.fixture
def browser() -> Iterator[Any]:
    if not (Path(CHROMIUM).exists() and Path(DRIVER).exists()):
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail(
                "CI=true but chromium or chromium-driver is missing (setup.sh installs them)"
            )
        pytest.skip("no chromium/chromium-driver (setup.sh installs them)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="flowc-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in [*FLAGS, f"--user-data-dir={profile}"]:
        options.add_argument(flag)
    driver = webdriver.Chrome(service=Service(DRIVER), options=options)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def wait_for(driver: Any, condition: Any, seconds: float = 10.0) -> Any:
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, seconds, poll_frequency=0.02).until(condition)


def text_of(driver: Any, css: str) -> str:
    """The text of the first element `css` selects ("" when none, or when the page redrew it
    while it was read)."""
    from selenium.common.exceptions import StaleElementReferenceException
    from selenium.webdriver.common.by import By

    try:
        found = driver.find_elements(By.CSS_SELECTOR, css)
        return str(found[0].text) if found else ""
    except StaleElementReferenceException:
        return ""


def send_from_another_process(store_url: str, instance_id: str, event: str, payload: str) -> None:
    subprocess.run(
        [sys.executable, "-m", "flowc.compiler.cli", "instances", "send", "--store", store_url,
         instance_id, event, payload, "--reason", "from the browser test"],
        check=True, capture_output=True,
    )  # fmt: skip


def test_list_instance_page_live_step_and_a_step_sent_from_the_page(
    inspector: str, browser: Any, store_file: str
) -> None:
    from selenium.webdriver.common.by import By

    shots = artifacts()
    browser.get(inspector)
    wait_for(browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#instances > tr")) == 4)
    listed = browser.find_elements(By.CSS_SELECTOR, "#instances > tr")
    rows = [r.get_attribute("data-id") for r in listed]
    assert set(rows) == {"ticket-0", "ticket-1", "ticket-2", "ticket-1-retry"}
    browser.save_screenshot(str(shots / "inspect-list.png"))

    browser.find_element(By.LINK_TEXT, "ticket-1").click()
    wait_for(browser, lambda d: text_of(d, "#state") == "WAITING")
    wait_for(browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#steps > tr")) == 4)
    step3 = text_of(browser, '#steps > tr[data-seq="3"]')
    assert "replies" in step3  # the context change
    assert "mail" in step3  # the effect
    wait_for(browser, lambda d: "ticket-1-retry" in text_of(d, "#head"))  # its fork
    wait_for(
        browser,
        lambda d: d.execute_script("return document.getElementById('diagram').naturalWidth") > 0,
    )

    # Another process steps the instance: the open page follows.
    send_from_another_process(store_file, "ticket-1", "note", '{"text": "<b>log</b> attached"}')
    wait_for(browser, lambda d: text_of(d, "#state") == "OPEN", seconds=5)
    wait_for(browser, lambda d: d.find_elements(By.CSS_SELECTOR, '#steps > tr[data-seq="4"]'))
    # Shown as text, not markup.
    wait_for(browser, lambda d: "<b>log</b> attached" in text_of(d, '#steps > tr[data-seq="4"]'))
    browser.save_screenshot(str(shots / "inspect-instance.png"))

    # A step sent from the page's own form, with its reason.
    form = browser.find_element(By.ID, "send")
    form.find_element(By.NAME, "event").send_keys("resolve")
    form.find_element(By.NAME, "reason").send_keys("customer confirmed")
    form.find_element(By.TAG_NAME, "button").click()
    wait_for(browser, lambda d: text_of(d, "#state") == "SOLVED")
    wait_for(browser, lambda d: "customer confirmed" in text_of(d, '#steps > tr[data-seq="5"]'))
    browser.save_screenshot(str(shots / "inspect-steered.png"))
    with DurableFlows(open_store(store_file), []) as flows:
        assert flows.store.history("ticket-1")[-1].reason == "customer confirmed"
