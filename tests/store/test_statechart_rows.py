"""A statechart kept in a store: its configuration and histories ride in the stored snapshot,
and the `state` column (what `flowc instances list` shows) is the instance's `state`."""

from __future__ import annotations

import json

import pytest
from runtime.chart_ir import Chart

from flowc.compiler.cli import main
from flowc.runtime import Machine
from flowc.runtime.store import open_store
from flowc.runtime.store.durable import DurableFlows


def review() -> Machine:
    return (
        Chart("review", {"pass": {}, "approve": {}, "reopen": {}, "close": {}})
        .state("Open", "compound", initial=True)
        .state("Review", "parallel", parent="Open", initial=True)
        .state("CI", "compound", parent="Review")
        .state("Pending", parent="CI", initial=True)
        .state("Green", "final", parent="CI")
        .state("Approvals", "compound", parent="Review")
        .state("Waiting", parent="Approvals", initial=True)
        .state("Approved", "final", parent="Approvals")
        .state("H", "history", parent="Open", history="deep")
        .state("Closed")
        .rule("Pending", "Green", "pass")
        .rule("Waiting", "Approved", "approve")
        .rule("Open", "Closed", "close")
        .rule("Closed", "H", "reopen")
        .machine()
    )


def test_a_statechart_is_stored_and_loaded_with_its_configuration(
    store_url: str, capsys: pytest.CaptureFixture[str]
) -> None:
    m = review()
    with DurableFlows(open_store(store_url), [m]) as flows:
        assert flows.start("review", id="pr").ok
        assert flows.send("pr", "pass").ok
        assert flows.send("pr", "close").ok
        assert flows.send("pr", "reopen").ok
        inst = flows.load("pr")
        assert inst.state == "Review"
        assert inst.configuration == (
            "Open", "Review", "CI", "Green", "Approvals", "Waiting",
        )  # fmt: skip
        assert flows.send("pr", "approve").ok
        done = flows.load("pr")
        assert done.configuration == ("Open", "Review", "CI", "Green", "Approvals", "Approved")
        snap = done.snapshot()
        assert snap["configuration"] == ["Green", "Approved"]
        assert snap["histories"] == {"H": ["Green", "Waiting"]}
    if store_url.startswith("memory"):
        return
    assert main(["instances", "list", "--store", store_url, "--json"]) == 0
    [row] = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert row["state"] == "Review"
