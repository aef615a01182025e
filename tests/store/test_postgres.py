"""What only the PostgreSQL store does: LISTEN/NOTIFY wake-ups for sleeping workers."""

from __future__ import annotations

import threading
import time

from flowc.runtime.store import TimerSpec, open_store
from flowc.runtime.store.worker import TimerWorker
from store.toy import counter, fire


def test_arming_a_timer_wakes_a_sleeping_worker(postgres_url: str) -> None:
    store = open_store(postgres_url)
    fired = threading.Event()
    worker = TimerWorker(store, fire, poll=30.0, on_outcome=lambda c, o: fired.set())
    stop = threading.Event()
    thread = threading.Thread(target=worker.run, kwargs={"stop": stop})
    thread.start()
    try:
        time.sleep(0.5)  # the worker found nothing and sleeps for up to 30 s
        armed = time.monotonic()
        other = open_store(postgres_url)
        other.create(counter("a", timers=[TimerSpec("t", "COUNTING", time.time() + 0.2)]))
        other.close()
        assert fired.wait(10), "the worker slept through the notification"
        assert time.monotonic() - armed < 10
        assert store.load("a").snapshot["fired"] == ["t"]
    finally:
        stop.set()
        # The worker notices `stop` when its current wait ends: wake it with a notification.
        poke = open_store(postgres_url)
        poke.create(counter("poke", timers=[TimerSpec("t", "COUNTING", time.time() + 3600)]))
        poke.close()
        thread.join(timeout=40)
        store.close()
    assert not thread.is_alive()
