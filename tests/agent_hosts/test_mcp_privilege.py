"""What a model may set, see and cause through `flowc mcp` (issue 26): the real server driven by
the MCP SDK's own client, on a customer-support flow whose ticket is the caller's, whose refund
limit is the host's and whose email no model may read."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from agent_hosts.mcp_client import FLOWC, ROOT, call, stdio_session
from flowc.runtime.store import open_store

SUPPORT = Path(__file__).parent / "flows" / "support.flow"
PR_REVIEW = ROOT / "flows" / "examples" / "pr_review.flow"
TICKET = {"ticket": "T-17", "email": "ada@example.com"}


def run(body: Any) -> None:
    anyio.run(body)


def test_the_tool_list_has_no_completion_events_and_start_offers_only_inputs(
    tmp_path: Path,
) -> None:
    async def body() -> None:
        async with stdio_session([SUPPORT, PR_REVIEW], f"sqlite:///{tmp_path / 'f.db'}") as s:
            tools = {t.name: t for t in (await s.list_tools()).tools}
            assert not [n for n in tools if "done." in n or "done_state" in n]
            assert "pr_review_ci_passed" in tools and "support_refund" in tools
            context = tools["support_start"].input_schema["properties"]["context"]
            assert list(context["properties"]) == ["ticket", "email"]
            assert context["required"] == ["ticket"]
            refund = tools["support_refund"].description or ""
            assert "OPEN ('Refund open') in the region MONEY" in refund
            reply = tools["support_reply"].description or ""
            assert "Accepted in: TALKING ('Talking') in the region TALK." in reply
            assert "HANDLING" not in refund  # a parallel state is no state a model acts in

    run(body)


def test_start_refuses_a_field_not_marked_input_and_status_hides_hidden_fields(
    tmp_path: Path,
) -> None:
    async def body() -> None:
        async with stdio_session([SUPPORT], f"sqlite:///{tmp_path / 'f.db'}") as s:
            error, refused = await call(
                s,
                "start",
                instance_id="t1",
                context={**TICKET, "refund_limit_cents": 10**9},
            )
            assert error and refused["error"] == "invalid_arguments"
            assert refused["issues"]["unknown"] == ["context.refund_limit_cents"]
            error, missing = await call(s, "status", instance_id="t1")
            assert error and missing["error"] == "unknown_instance"  # nothing was started

            error, _ = await call(s, "start", instance_id="t1", context=TICKET)
            assert not error
            _, status = await call(s, "status", instance_id="t1")
            assert status["context"] == {
                "ticket": "T-17",
                "refund_limit_cents": 5000,
                "refunded_cents": 0,
            }
            snapshot = await s.read_resource("flowc://instances/t1/snapshot.json")
            text = snapshot.contents[0].text  # type: ignore[union-attr]
            assert "ada@example.com" not in text and json.loads(text)["context"]["ticket"]

    run(body)


def test_parallel_results_give_each_leaf_and_only_the_tools_every_region_takes(
    tmp_path: Path,
) -> None:
    async def body() -> None:
        async with stdio_session([SUPPORT], f"sqlite:///{tmp_path / 'f.db'}") as s:
            _, started = await call(s, "start", context=TICKET)
            iid = started["instance_id"]
            _, verified = await call(s, "verify", instance_id=iid, ok=True)
            assert verified["active"] == [
                {"state": "OPEN", "title": "Refund open", "meta": {"panel": "refunds"}},
                {"state": "TALKING", "title": "Talking", "meta": {"panel": "chat"}},
            ]
            assert verified["allowed_tools"] == ["refund", "reply", "resolve"]
            error, refunded = await call(s, "refund", instance_id=iid, cents=300)
            assert not error and [a["state"] for a in refunded["active"]] == [
                "REFUNDED",
                "TALKING",
            ]
            _, reopened = await call(s, "close", instance_id=iid)
            assert [a["state"] for a in reopened["active"]] == ["OPEN", "TALKING"]
            # OPEN takes a refund, TALKING refuses a second one, which refuses the whole step:
            # the tool is not offered, and a call is refused.
            assert reopened["allowed_tools"] == ["reply", "resolve"]
            error, again = await call(s, "refund", instance_id=iid, cents=1)
            assert error and again["error"] == "already_refunded"

    run(body)


def _incarnation(url: str, instance_id: str) -> str | None:
    """The stored instance's incarnation, which its effects' outbox ids carry."""
    with contextlib.closing(open_store(url)) as store:
        return store.load(instance_id).incarnation


def test_results_list_the_effects_their_step_emitted(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'f.db'}"

    async def body() -> None:
        async with stdio_session([SUPPORT], url) as s:
            _, started = await call(s, "start", instance_id="t2", context=TICKET)
            assert "effects" not in started
            t2 = f"t2/{_incarnation(url, 't2')}"
            await call(s, "verify", instance_id="t2", ok=True)
            _, replied = await call(s, "reply", instance_id="t2", text="Hello Ada")
            assert replied["effects"] == [
                {"id": f"{t2}/2/0", "effect": "send_reply", "fields": {"text": "Hello Ada"}}
            ]
            _, refunded = await call(s, "refund", instance_id="t2", cents=250)
            assert refunded["effects"] == [
                {"id": f"{t2}/3/0", "effect": "issue_refund", "fields": {"cents": 250}}
            ]

    run(body)


HANDLER = """\
import os, pathlib

def deliver(effect):
    if pathlib.Path(os.environ["FAIL_FLAG"]).exists():
        pathlib.Path(os.environ["PID_FILE"]).write_text(str(os.getpid()))
        raise ConnectionError("the mail server is down")
    with open(os.environ["DELIVERED"], "a") as out:
        out.write(effect.id + " " + effect.effect + "\\n")
"""


def test_effects_reach_the_handler_once_each_across_a_kill_and_restart(tmp_path: Path) -> None:
    (tmp_path / "fx_handler.py").write_text(HANDLER)
    delivered, flag, pid_file = tmp_path / "delivered.txt", tmp_path / "fail", tmp_path / "pid"
    env = {
        "PYTHONPATH": f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}",
        "DELIVERED": str(delivered),
        "FAIL_FLAG": str(flag),
        "PID_FILE": str(pid_file),
    }
    store = f"sqlite:///{tmp_path / 'f.db'}"
    effects = ("--effects", "fx_handler:deliver")
    t3: list[str] = []  # the outbox ids' prefix, once the instance is started

    def lines() -> list[str]:
        return delivered.read_text().splitlines() if delivered.exists() else []

    async def first() -> None:
        async with stdio_session([SUPPORT], store, *effects, env=env) as s:
            await call(s, "start", instance_id="t3", context=TICKET)
            t3.append(f"t3/{_incarnation(store, 't3')}")
            await call(s, "verify", instance_id="t3", ok=True)
            _, replied = await call(s, "reply", instance_id="t3", text="one")
            assert replied["effects"][0]["id"] == f"{t3[0]}/2/0"
            assert lines() == [f"{t3[0]}/2/0 send_reply"]  # delivered before the result came
            flag.touch()  # the handler fails from now on
            await call(s, "reply", instance_id="t3", text="two")
            _, status = await call(s, "status", instance_id="t3")
            [pending] = status["effects_pending"]
            assert pending["id"] == f"{t3[0]}/3/0" and pending["attempts"] >= 1
            assert pending["last_error"] == "ConnectionError: the mail server is down"
            os.kill(int(pid_file.read_text()), signal.SIGKILL)  # the server dies

    run(first)
    flag.unlink()

    async def second() -> None:
        async with stdio_session([SUPPORT], store, *effects, env=env) as s:
            with anyio.fail_after(20):
                while len(lines()) < 2:  # the restarted server delivers what was left
                    await anyio.sleep(0.1)
            await call(s, "reply", instance_id="t3", text="three")
            _, status = await call(s, "status", instance_id="t3")
            assert status["effects_pending"] == []

    run(second)
    run(_idle(store, env))
    assert lines() == [f"{t3[0]}/{seq}/0 send_reply" for seq in (2, 3, 4)]


def _idle(store: str, env: dict[str, str]) -> Any:
    """A third server on the same store: it finds nothing left to deliver."""

    async def body() -> None:
        async with stdio_session([SUPPORT], store, "--effects", "fx_handler:deliver", env=env) as s:
            await s.list_tools()
            await anyio.sleep(1)

    return body


def test_an_unknown_effect_handler_is_a_usage_error(tmp_path: Path) -> None:
    done = subprocess.run(
        [*FLOWC, "mcp", str(SUPPORT), "--store", "memory:", "--effects", "no_such_module:f"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "cannot import no_such_module" in done.stderr
    assert "Traceback" not in done.stderr


def _deep(depth: int) -> Any:
    value: Any = "x"
    for _ in range(depth):
        value = [value]
    return value


def test_arguments_nested_deeply_get_an_answer(tmp_path: Path) -> None:
    async def body() -> None:
        async with stdio_session([SUPPORT], f"sqlite:///{tmp_path / 'f.db'}") as s:
            _, started = await call(s, "start", context=TICKET)
            iid = started["instance_id"]
            await call(s, "verify", instance_id=iid, ok=True)
            with anyio.fail_after(30):  # about as deep as the SDK's client sends
                error, refused = await call(s, "reply", instance_id=iid, text=_deep(240))
            assert error and refused["error"] == "invalid_payload"

    run(body)


def _raw_server(store: str) -> subprocess.Popen[bytes]:
    process = subprocess.Popen(
        [*FLOWC, "mcp", str(SUPPORT), "--store", store],
        cwd=ROOT,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    _send(process, "initialize", 1, protocolVersion="2025-06-18", capabilities={},
          clientInfo={"name": "raw", "version": "1"})  # fmt: skip
    assert process.stdout is not None and b'"id":1' in process.stdout.readline()
    _send(process, "notifications/initialized", None)
    return process


def _send(process: subprocess.Popen[bytes], method: str, id: int | None, **params: Any) -> None:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
    if id is not None:
        message["id"] = id
    assert process.stdin is not None
    process.stdin.write(json.dumps(message).encode() + b"\n")
    process.stdin.flush()


def test_a_call_nested_290_deep_is_answered(tmp_path: Path) -> None:
    process = _raw_server(f"sqlite:///{tmp_path / 'f.db'}")
    try:
        arguments = {"instance_id": "nope", "text": _deep(290)}
        _send(process, "tools/call", 2, name="reply", arguments=arguments)
        assert process.stdout is not None
        answer = json.loads(process.stdout.readline())
        assert answer["id"] == 2 and answer["result"]["isError"] is True
        assert answer["result"]["structuredContent"]["error"] == "unknown_instance"
    finally:
        process.kill()
        process.wait()


def test_a_client_that_stops_reading_ends_the_server_cleanly(tmp_path: Path) -> None:
    process = _raw_server(f"sqlite:///{tmp_path / 'f.db'}")
    assert process.stdout is not None and process.stdin is not None
    process.stdout.close()
    for i in range(20):
        _send(process, "tools/list", 10 + i)
    time.sleep(0.5)
    with contextlib.suppress(BrokenPipeError):
        process.stdin.close()
    assert process.wait(timeout=30) == 0
    assert process.stderr is not None
    assert process.stderr.read() == b""


def test_the_handler_sees_a_stable_id_from_the_library_too(tmp_path: Path) -> None:
    """The same delivery without a server: `EffectDelivery` records failures by id."""
    from flowc.hosts.mcp_server import EffectDelivery
    from flowc.runtime.store.types import OutboxEffect

    calls: list[str] = []

    def flaky(effect: OutboxEffect) -> None:
        calls.append(effect.id)
        if len(calls) == 1:
            raise RuntimeError("down")

    delivery = EffectDelivery(flaky)
    effect = OutboxEffect("i", 1, 0, "send_reply", {"text": "x"}, 0.0)
    with pytest.raises(RuntimeError):
        delivery(effect)
    assert delivery.failures == {"i/1/0": (1, "RuntimeError: down")}
    delivery(effect)
    assert delivery.failures == {} and calls == ["i/1/0", "i/1/0"]
