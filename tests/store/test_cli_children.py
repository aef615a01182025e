"""`flowc instances` and `flowc worker` on an instance with child flows (issue 28 item 7), in a
real SQLite file: `show` prints the tree, `send/goto/back --child PATH` step a child, and the
worker's line names the child whose timer fired."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from flowc.compiler.cli import main
from flowc.hosts.commands.worker import timer_child

PAYMENT = """
flow payment
context { amount: int = 0 }
event approve
event hold
event resume
initial state waiting {
  on approve -> ok
  on hold -> held
  -> held
  after 300ms -> late
}
state held {
  invoke check() as check
  on done.invoke.check -> waiting
  on resume -> waiting
}
final state ok with {"receipt": "r-" + str(amount)}
final state late with {"receipt": "late"}
"""

CHECK = """
flow check
event pass
initial state checking {
  on pass -> passed
}
final state passed
"""

SHOP = """
flow shop
context {
  total: int = 5
  receipt: str = ""
  reviewers: list[str] = ["ana", "ben"]
}
event buy
initial state browsing {
  on buy -> paying
}
state paying {
  invoke payment(amount: total) as pay
  invoke check() for r in reviewers as checks join any
  on done.invoke.pay -> paid do receipt = event.receipt
  on done.invoke.checks -> self
}
final state paid
"""


@pytest.fixture
def flows(tmp_path: Path) -> str:
    folder = tmp_path / "flows"
    folder.mkdir()
    for name, text in (("payment", PAYMENT), ("check", CHECK), ("shop", SHOP)):
        (folder / f"{name}.flow").write_text(text, encoding="utf-8")
    return str(folder / "shop.flow")


def flowc(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_show_prints_the_tree_and_steps_go_to_a_child(
    tmp_path: Path, flows: str, capsys: pytest.CaptureFixture[str]
) -> None:
    s = ("--store", f"sqlite:///{tmp_path / 'flows.db'}")
    assert flowc(capsys, "instances", "start", "shop", "--id", "o1", *s, "--flow", flows)[0] == 0
    code, out, _ = flowc(capsys, "instances", "show", "o1", *s)
    assert code == 0 and "children" not in json.loads(out)  # none yet: shown as before
    assert flowc(capsys, "instances", "send", "o1", "buy", *s)[0] == 0

    code, out, _ = flowc(capsys, "instances", "send", "o1", "hold", "--child", "pay", *s)
    assert code == 0
    step = json.loads(out)
    assert (step["from"], step["to"]) == ("waiting", "held")
    code, out, _ = flowc(capsys, "instances", "send", "o1", "pass", "--child", "checks[1]", *s)
    assert code == 0
    code, out, _ = flowc(capsys, "instances", "show", "o1", *s)
    tree = json.loads(out)["children"]
    assert tree == [
        {
            "id": "pay.1",
            "flow": "payment",
            "state": "held",
            "ended": False,
            "children": [{"id": "check.1", "flow": "check", "state": "checking", "ended": False}],
        },
        # join any: the one that passed stays (ended) until the state is left; the rest went
        {"id": "checks.1.1", "flow": "check", "state": "passed", "ended": True},
    ]

    # a grandchild by its path; goto and back to a child too
    code, out, _ = flowc(capsys, "instances", "send", "o1", "pass", "--child", "pay/check", *s)
    assert code == 0 and json.loads(out)["to"] == "passed"
    code, out, _ = flowc(capsys, "instances", "show", "o1", *s)
    assert json.loads(out)["children"][0]["state"] == "waiting"  # done.invoke.check -> waiting
    code, out, _ = flowc(capsys, "instances", "goto", "o1", "nowhere", "--child", "pay.1", *s)
    assert code == 1 and json.loads(out)["error"] == "unknown_state"
    code, out, _ = flowc(capsys, "instances", "goto", "o1", "held", "--child", "pay.1", *s)
    assert code == 0 and json.loads(out)["to"] == "held"
    code, out, _ = flowc(capsys, "instances", "show", "o1", *s)
    assert json.loads(out)["children"][0]["children"][0]["id"] == "check.3"  # a new entry
    code, out, _ = flowc(capsys, "instances", "back", "o1", "--child", "pay.1", *s)
    assert code == 1 and json.loads(out)["error"] != "unknown_child"

    assert flowc(capsys, "instances", "send", "o1", "resume", "--child", "pay", *s)[0] == 0
    code, out, _ = flowc(capsys, "instances", "send", "o1", "approve", "--child", "pay.7", *s)
    assert code == 1 and json.loads(out)["error"] == "unknown_child"
    code, out, _ = flowc(capsys, "instances", "send", "o1", "approve", "--child", "pay", *s)
    assert code == 0 and json.loads(out)["to"] == "ok"
    code, out, _ = flowc(capsys, "instances", "show", "o1", *s)
    shown = json.loads(out)
    assert shown["state"] == "paid" and shown["context"]["receipt"] == "r-5"
    assert "children" not in shown  # the parent ended: its children are gone


def test_the_worker_names_the_child_whose_timer_fired(
    tmp_path: Path, flows: str, capsys: pytest.CaptureFixture[str]
) -> None:
    s = ("--store", f"sqlite:///{tmp_path / 'flows.db'}")
    flowc(capsys, "instances", "start", "shop", "--id", "o2", *s, "--flow", flows)
    flowc(capsys, "instances", "send", "o2", "buy", *s)
    code, out, _ = flowc(capsys, "instances", "show", "o2", *s)
    assert [t["timer"] for t in json.loads(out)["timers"]] == ["pay.1|3"]  # (rule 3)
    time.sleep(0.4)
    code, out, _ = flowc(capsys, "worker", "--once", *s)
    assert code == 0
    line = json.loads(out)
    assert line["id"] == "o2" and line["timer"] == "pay.1|3" and line["child"] == "pay.1"
    # its steps are the root's: the child's timer step (its `child` entry), then the
    # child's done data, arrived as a message step
    assert [(st["from"], st["to"]) for st in line["steps"]] == [
        ("paying", "paying"),
        ("paying", "paid"),
    ]
    code, out, _ = flowc(capsys, "instances", "show", "o2", *s)
    assert json.loads(out)["context"]["receipt"] == "late"


def test_a_timer_row_names_its_child_by_the_parts_before_the_last() -> None:
    assert timer_child("0") is None and timer_child("send:x") is None
    assert timer_child("pay.1|0") == "pay.1"
    assert timer_child("reviews.1.0|fraud.2|send:poll") == "reviews.1.0/fraud.2"


def test_show_without_the_graphs_prints_the_tree_as_stored(
    tmp_path: Path, flows: str, capsys: pytest.CaptureFixture[str]
) -> None:
    import sqlite3

    db = tmp_path / "flows.db"
    s = ("--store", f"sqlite:///{db}")
    flowc(capsys, "instances", "start", "shop", "--id", "o3", *s, "--flow", flows)
    flowc(capsys, "instances", "send", "o3", "buy", *s)
    with sqlite3.connect(db) as con:  # the graphs are gone (a store written by another host)
        tables = [r[0] for r in con.execute("select name from sqlite_master where type='table'")]
        con.execute(f"delete from {next(t for t in tables if 'graph' in t)}")
    code, out, err = flowc(capsys, "instances", "show", "o3", *s)
    assert code == 0 and "the children as stored" in err
    assert json.loads(out)["children"] == [
        {"id": "pay.1", "flow": "payment", "state": "waiting"},
        {"id": "checks.1.0", "flow": "check", "state": "checking"},
        {"id": "checks.1.1", "flow": "check", "state": "checking"},
    ]
