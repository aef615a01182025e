"""One rule for every id and key on every backend (`flowc.runtime.store.handles`): strings of
1 to 256 characters without NUL or lone surrogates. A refusal names the field, echoes a short
handle, and leaves the store as it was."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from flowc.compiler.cli import main
from flowc.runtime import FakeClock, Machine
from flowc.runtime.store import InstanceNotFound, open_store
from flowc.runtime.store.durable import DurableFlows
from flowc.runtime.store.handles import MAX_HANDLE, InvalidHandle, handle_problem, shorten
from flowc.runtime.tool_calls import ToolDispatcher

FLOW = """
flow counter
context { n: int = 0 }
event inc
initial state Open {
  on inc -> self do n += 1
}
"""

BAD: list[Any] = ["a\x00b", "a\ud800b", "x" * (MAX_HANDLE + 1), "x" * 10_000_000, "", 5, None]


def machine() -> Machine:
    return Machine.from_source(FLOW, "counter.flow", clock=FakeClock())


def test_the_rule() -> None:
    assert handle_problem("order-42") is None
    assert handle_problem("é✓" * 100) is None
    assert handle_problem("x" * MAX_HANDLE) is None
    assert "NUL" in str(handle_problem("a\x00"))
    assert "surrogate" in str(handle_problem("\udfff"))
    assert "at most 256" in str(handle_problem("x" * 257))
    assert "string, got int" in str(handle_problem(5))
    assert handle_problem("") == "it is empty"


def test_a_long_handle_is_echoed_short() -> None:
    shown = shorten("y" * 10_000_000)
    assert len(shown) < 80 and "10000000 characters" in shown
    assert str(InstanceNotFound("z" * 5000)).count("z") < 50


@pytest.mark.parametrize("bad", BAD[:4], ids=["nul", "surrogate", "257", "10MB"])
def test_every_backend_refuses_a_bad_instance_id(store_url: str, bad: str) -> None:
    with DurableFlows(open_store(store_url), [machine()]) as flows:
        with pytest.raises(InvalidHandle) as refused:
            flows.start("counter", id=bad)
        assert refused.value.field == "id" and len(str(refused.value)) < 200
        for call in (
            lambda: flows.send(bad, "inc"),
            lambda: flows.load(bad),
            lambda: flows.store.history(bad),
            lambda: flows.store.delete(bad),
        ):
            with pytest.raises(InvalidHandle):
                call()
        assert flows.store.instances() == []


@pytest.mark.parametrize("bad", BAD[:6], ids=["nul", "surrogate", "257", "10MB", "empty", "int"])
def test_every_backend_refuses_a_bad_key_and_changes_nothing(store_url: str, bad: Any) -> None:
    with DurableFlows(open_store(store_url), [machine()]) as flows:
        flows.start("counter", id="c")
        with pytest.raises(InvalidHandle) as refused:
            flows.send("c", "inc", key=bad)
        assert refused.value.field == "key"
        assert flows.load("c").context["n"] == 0 and flows.store.load("c").version == 1
        with pytest.raises(InvalidHandle):
            flows.store.claim_due_timers(bad)


def test_a_tool_call_refuses_a_bad_handle_by_its_argument_name(store_url: str) -> None:
    with DurableFlows(open_store(store_url), [machine()]) as flows:
        tools = ToolDispatcher(flows)
        started = tools.call("start", {"instance_id": "c"})
        assert not started.is_error
        for args, field in (
            ({"instance_id": "a\x00b"}, "instance_id"),
            ({"instance_id": "c", "request_id": "r\x00"}, "request_id"),
            ({"instance_id": "c", "request_id": "\ud800"}, "request_id"),
            ({"instance_id": "c", "request_id": "r" * 10_000_000}, "request_id"),
        ):
            out = tools.call("inc", args)
            assert out.is_error and out.data["error"] == "invalid_handle", out.data
            assert out.data["field"] == field and len(out.text()) < 1000
        start = tools.call("start", {"request_id": "\ud800"})
        assert start.is_error and start.data["field"] == "request_id"
        assert flows.load("c").context["n"] == 0


def test_the_cli_refuses_a_bad_id_or_key_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flow = tmp_path / "counter.flow"
    flow.write_text(FLOW, encoding="utf-8")
    url = f"sqlite:///{tmp_path / 'flows.db'}"
    # A command line's undecodable bytes arrive as lone surrogates.
    for argv in (
        ["run", str(flow), "--store", url, "--id", "a\udcff"],
        ["instances", "start", "counter", "--flow", str(flow), "--id", "a\udcff", "--store", url],
        ["instances", "send", "a\udcff", "inc", "--store", url],
    ):
        assert main(argv) == 1
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "lone surrogate" in err, err
    assert (
        main(["instances", "start", "counter", "--flow", str(flow), "--id", "c", "--store", url])
        == 0
    )
    assert main(["instances", "send", "c", "inc", "--key", "k" * 300, "--store", url]) == 1
    err = capsys.readouterr().err
    assert "at most 256" in err and len(err) < 300
