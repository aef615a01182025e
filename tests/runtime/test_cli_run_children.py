"""`flowc run` on a flow with child flows (issue 28 item 7; docs/runtime.md "Child flows"): an
operation may go to a child (`"child": PATH`), and after an operation's own lines come the other
steps it committed in the tree, the root's first, then each child's in tree order; in memory
and in a store alike."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from flowc.compiler.cli import main
from flowc.hosts.commands.run import Prompt

PAYMENT = """
flow payment
context {
  amount: int = 0
}
event approve
internal event started(amount: int)
initial state waiting {
  entry do send started(amount: amount) to parent
  on approve -> ok
  after 10m -> timed_out
}
final state ok with {"receipt": "r-" + str(amount)}
final state timed_out with {"receipt": "late"}
"""

SHOP = """
flow shop
context {
  total: int = 5
  receipt: str = ""
  started: int = 0
}
event buy
internal event started(amount: int)
initial state browsing {
  on buy -> paying
}
state paying {
  invoke payment(amount: total) as pay
  on started -> self do started += event.amount
  on done.invoke.pay -> paid do receipt = event.receipt
}
final state paid
"""

NOW = "2026-01-01T00:00:00Z"


@pytest.fixture
def shop(tmp_path: Path) -> str:
    (tmp_path / "payment.flow").write_text(PAYMENT, encoding="utf-8")
    (tmp_path / "shop.flow").write_text(SHOP, encoding="utf-8")
    return str(tmp_path / "shop.flow")


def run(
    capsys: pytest.CaptureFixture[str], flow: str, tmp_path: Path, *ops: Any, store: bool = False
) -> tuple[int, list[dict[str, Any]], str]:
    events = tmp_path / "events.jsonl"
    events.write_text("\n".join(json.dumps(op) for op in ops) + "\n", encoding="utf-8")
    where = ["--store", f"sqlite:///{tmp_path / 'flows.db'}"] if store else []
    code = main(["run", flow, "--now", NOW, "--events", str(events), *where])
    out, err = capsys.readouterr()
    return code, [json.loads(line) for line in out.splitlines()], err


def brief(line: dict[str, Any]) -> tuple[Any, ...]:
    return (line.get("child"), line.get("kind"), line.get("trigger"), line["to"], line["seq"])


def test_an_operation_to_a_child_and_the_steps_it_caused(
    shop: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ops = ({"event": "buy"}, {"event": "approve", "child": "pay"})
    code, out, _ = run(capsys, shop, tmp_path, *ops)
    assert code == 0
    assert [brief(line) for line in out] == [
        (None, "start", None, "browsing", 0),
        (None, "event", "buy", "paying", 1),
        # what the operation caused: the root's message step, then the child it started
        # (seq 2 is the root's `child` entry of pay.1's start: a child's step is printed as
        # the child's own, below)
        (None, "message", "started", "paying", 3),
        ("pay.1", "start", "start", "waiting", 0),
        # to the child: its step (named by its id, not as written), then the parent's
        ("pay.1", "event", "approve", "ok", 1),
        (None, "message", "done.invoke.pay", "paid", 5),
    ]
    message = out[2]
    assert message["ok"] is True and message["from"] == "paying"
    assert message["payload"] == {"amount": 5} and message["final"] is False
    assert out[4]["final"] is True and out[5]["final"] is True  # the root ended
    assert out[5]["payload"] == {"receipt": "r-5"}
    assert set(message) >= {"at", "event", "reason", "via"}


def test_advance_fires_a_childs_timer_and_a_gone_child_is_not_listed(
    shop: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, shop, tmp_path, {"event": "buy"}, {"advance": 300}, {"advance": 300})
    assert code == 0
    assert [brief(line) for line in out[4:]] == [
        # nothing due at 5 min; at 10 min the child's timer: it ended, so did its parent, and
        # with it the child (its own step is not listed: it is no longer in the tree)
        (None, "message", "done.invoke.pay", "paid", 5),
    ]
    assert out[4]["payload"] == {"receipt": "late"}


def test_bad_child_operations(
    shop: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, shop, tmp_path, {"event": "buy"}, {"event": "approve", "child": "x"})
    assert code == 1
    assert out[-1]["error"] == "unknown_child" and list(out[-1].items())[-1] == ("child", "x")
    code, _, err = run(capsys, shop, tmp_path, {"advance": 1, "child": "pay"})
    assert code == 1 and "`child` goes with `event`, `goto` or `back`" in err
    code, _, err = run(capsys, shop, tmp_path, {"event": "approve", "child": 3})
    assert code == 1 and "`child` must be a path" in err


def test_a_stored_run_prints_the_same_lines(
    shop: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ops = ({"event": "buy"}, {"goto": "ok", "child": "pay"}, {"event": "approve", "child": "pay"})
    memory = run(capsys, shop, tmp_path, *ops)
    stored = run(capsys, shop, tmp_path, *ops, store=True)
    assert memory[0] == stored[0] == 1  # no direct edge to `ok`: refused
    assert stored[1][0].pop("id")  # a stored start line names the instance
    assert memory[1] == stored[1]
    again = run(capsys, shop, tmp_path, *ops[:1], ops[2], store=True)
    assert [brief(line) for line in again[1][-2:]] == [
        ("pay.1", "event", "approve", "ok", 1),
        (None, "message", "done.invoke.pay", "paid", 5),
    ]


def test_the_prompt_says_whose_step_a_line_is() -> None:
    class Lines:
        instance: Any = None

        def apply(self, op: dict[str, Any]) -> list[dict[str, Any]]:
            step = {"ok": True, "from": "waiting", "to": "ok", "seq": 1}
            return [{**step, "child": "pay.1"}, {"ok": False, "error": "e", "message": "m"}]

    prompt = Prompt(Lines())
    assert prompt.handle("approve") == ["[pay.1] ok: waiting -> ok (step 1)", "rejected [e]: m"]


def test_the_prompt_lists_the_children_and_sends_to_one_with_at(shop: str) -> None:
    from flowc.compiler import compile_file
    from flowc.runtime import Machine

    result = compile_file(shop)
    assert result.flow is not None
    prompt = Prompt(Machine(result.flow).start())
    prompt.handle("buy")
    assert "  child pay.1: payment in waiting (@pay.1 EVENT ...)" in list(prompt.status())
    assert prompt.handle("@pay history") == ["error: @pay goes with an event, goto or back"]
    assert prompt.handle("@nope approve")[0].startswith("[nope] rejected [unknown_child]")
    assert prompt.handle("@pay approve") == [
        "[pay.1] ok: waiting -> ok (step 1)",
        "ok: paying -> paid (step 5)",
    ]
    assert prompt.instance.is_final
