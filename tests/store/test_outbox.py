"""Effects through a store: written to the outbox in the step's own transaction, delivered
after the commit (`DurableFlows(on_effect=...)`, `deliver_effects`), marked delivered, and
delivered again after a crash between the commit and the delivery (at least once)."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from flowc.runtime import FakeClock, Machine
from flowc.runtime.store import OutboxEffect, open_store
from flowc.runtime.store.durable import DurableFlows

LAMP = """
flow lamp
event press(level: int)
event off
effect light(level: int, note: str = "")
effect beep

context { presses: int = 0 }

initial state Dark {
  entry do emit beep
  on press if event.level > 0 -> Lit do
    presses += 1; emit light(level: event.level); if presses > 1 { emit beep }
  on press -> Dark do emit beep; presses = 1 % event.level
}

state Lit {
  on off -> Dark
  after 10s -> Dark do emit light(level: 0, note: "timeout")
}
"""


def lamp(clock: FakeClock | None = None) -> Machine:
    return Machine.from_source(LAMP, "lamp.flow", clock=clock)


def payloads(effects: list[OutboxEffect]) -> list[tuple[str, int, str, dict[str, object]]]:
    return [(e.instance_id, e.seq, e.effect, e.payload) for e in effects]


def test_a_step_writes_its_effects_to_the_outbox_and_delivery_empties_it(store_url: str) -> None:
    with DurableFlows(open_store(store_url), [lamp()]) as flows:
        flows.start("lamp", id="a")
        assert flows.send("a", "press", {"level": 3}).ok
        pending = flows.store.pending_effects()
        assert payloads(pending) == [
            ("a", 0, "beep", {}),
            ("a", 1, "light", {"level": 3, "note": ""}),
        ]
        life = flows.store.load("a").incarnation
        assert life and [e.id for e in pending] == [f"a/{life}/0/0", f"a/{life}/1/0"]
        got: list[OutboxEffect] = []
        assert flows.deliver_effects(got.append) == 2
        assert got == pending
        assert flows.store.pending_effects() == []
        assert flows.deliver_effects(got.append) == 0


def test_on_effect_delivers_after_each_commit_in_order(store_url: str) -> None:
    got: list[OutboxEffect] = []
    with DurableFlows(open_store(store_url), [lamp()], on_effect=got.append) as flows:
        flows.start("lamp", id="a")
        assert [e.effect for e in got] == ["beep"]
        flows.send("a", "press", {"level": 2})
        flows.send("a", "off")  # Dark's entry emits
        flows.send("a", "press", {"level": 5})
        assert [(e.seq, e.index, e.effect) for e in got] == [
            (0, 0, "beep"),
            (1, 0, "light"),
            (2, 0, "beep"),
            (3, 0, "light"),
            (3, 1, "beep"),  # `if presses > 1 { emit beep }`
        ]
        assert flows.store.pending_effects() == []


def test_a_refused_step_writes_no_effect(store_url: str) -> None:
    with DurableFlows(open_store(store_url), [lamp()]) as flows:
        flows.start("lamp", id="a")
        flows.deliver_effects(lambda e: None)
        refused = flows.send("a", "press", {"level": 0})  # emits, then divides by zero
        assert refused.status == "rejected"
        assert flows.store.pending_effects() == []


def test_a_failing_handler_leaves_the_effect_for_the_next_delivery(store_url: str) -> None:
    with DurableFlows(open_store(store_url), [lamp()]) as flows:
        flows.start("lamp", id="a")
        flows.send("a", "press", {"level": 4})

        def broken(effect: OutboxEffect) -> None:
            if effect.effect == "light":
                raise RuntimeError("the lamp is unplugged")

        assert flows.deliver_effects(broken) == 1  # `beep` went; `light` stays
        (left,) = flows.store.pending_effects()
        assert left.effect == "light"
        got: list[OutboxEffect] = []
        assert flows.deliver_effects(got.append) == 1 and got == [left]


def test_a_timer_step_through_the_worker_delivers_its_effects(store_url: str) -> None:
    clock = FakeClock()
    got: list[OutboxEffect] = []
    store = open_store(store_url, clock=clock)
    with DurableFlows(store, [lamp(clock)], clock=clock, on_effect=got.append) as flows:
        flows.start("lamp", id="a")
        flows.send("a", "press", {"level": 1})
        clock.advance(11)
        assert flows.worker().run_once() == 1
        assert got[-2:][0].payload == {"level": 0, "note": "timeout"}
        assert got[-1].effect == "beep"  # Dark's entry, in the same step
        assert flows.store.pending_effects() == []


def test_a_database_from_before_the_outbox_gets_it_on_open(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    open_store(f"sqlite:///{path}").close()
    with sqlite3.connect(path) as conn:
        conn.execute("DROP TABLE flowc_outbox")
    with DurableFlows(open_store(f"sqlite:///{path}"), [lamp()]) as flows:
        flows.start("lamp", id="a")
        assert [e.effect for e in flows.store.pending_effects()] == ["beep"]


def test_postgres_gains_the_outbox_table_on_open(postgres_url: str) -> None:
    import psycopg

    open_store(postgres_url).close()
    with psycopg.connect(postgres_url, autocommit=True) as conn:
        conn.execute("DROP TABLE flowc_outbox")
    with DurableFlows(open_store(postgres_url), [lamp()]) as flows:
        flows.start("lamp", id="a")
        assert [e.effect for e in flows.store.pending_effects()] == ["beep"]


CRASHING_HOST = textwrap.dedent(
    """
    import os, signal, sys
    from flowc.runtime import Machine
    from flowc.runtime.store import open_store
    from flowc.runtime.store.durable import DurableFlows

    url, source = sys.argv[1], open(sys.argv[2]).read()

    def deliver(effect):
        # The step has committed; the process dies before the effect is marked delivered.
        print("delivering", effect.id, flush=True)
        os.kill(os.getpid(), signal.SIGKILL)

    flows = DurableFlows(open_store(url), [Machine.from_source(source, "lamp.flow")])
    flows.start("lamp", id="a")
    flows.store.mark_delivered(flows.store.pending_effects())  # the start's `beep`: delivered
    flows.on_effect = deliver
    flows.send("a", "press", {"level": 7})
    print("survived", flush=True)
    """
)


def test_effects_are_delivered_again_after_a_crash_between_commit_and_delivery(
    shared_store_url: str, tmp_path: Path
) -> None:
    flow_file = tmp_path / "lamp.flow"
    flow_file.write_text(LAMP, encoding="utf-8")
    script = tmp_path / "host.py"
    script.write_text(CRASHING_HOST, encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, str(script), shared_store_url, str(flow_file)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    # A new process: the step is committed, its effect still in the outbox.
    got: list[OutboxEffect] = []
    with DurableFlows(open_store(shared_store_url), [lamp()], on_effect=got.append) as flows:
        life = flows.store.load("a").incarnation
        assert proc.stdout.split() == ["delivering", f"a/{life}/1/0"]
        assert flows.load("a").state == "Lit"
        assert flows.deliver_effects() == 1
        assert payloads(got) == [("a", 1, "light", {"level": 7, "note": ""})]
        assert flows.deliver_effects() == 0


@pytest.mark.parametrize("key", ["k1"])
def test_a_replayed_step_writes_and_delivers_nothing_again(store_url: str, key: str) -> None:
    got: list[OutboxEffect] = []
    with DurableFlows(open_store(store_url), [lamp()], on_effect=got.append) as flows:
        flows.start("lamp", id="a")
        first = flows.send("a", "press", {"level": 2}, key=key)
        again = flows.send("a", "press", {"level": 2}, key=key)
        assert again.replayed and again.data["effects"] == first.data["effects"]
        assert [e.effect for e in got] == ["beep", "light"]
