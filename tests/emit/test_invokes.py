"""Diagrams and docs of flows that invoke child flows (issue 28 item 7): an invoking state
shows its child flows (name, `as ID`, fan-out and join) in Graphviz, Mermaid and `flowc docs`,
which links the child's page when it is generated beside."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from flowc.compiler import compile_source
from flowc.compiler.emit.dot import render, to_dot
from flowc.compiler.emit.markdown import to_markdown
from flowc.compiler.emit.mermaid import to_mermaid
from flowc.compiler.emit.site import FlowDoc, build
from flowc.runtime.model import CompiledFlow

from .test_dot import node_line, svg_texts

needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz not installed")

PAYMENT = """
flow payment
context { amount: int = 0 }
event approve
initial state waiting {
  on approve -> ok
}
final state ok with {"receipt": "r"}
"""

REVIEW = """
flow review
context { reviewer: str = "" }
event approve
initial state reading {
  on approve -> approved
}
final state approved with {"reviewer": reviewer}
"""

SHOP = """
flow shop
context {
  total: int = 5
  reviewers: list[str] = ["ana", "ben"]
}
event buy
initial state browsing {
  on buy -> paying
}
state paying "Paying" {
  invoke payment(amount: total) as pay
  invoke review(reviewer: r) for r in reviewers as reviews join 2 forward
  on done.invoke.pay -> paid
  on error.invoke.pay -> browsing
}
final state paid
"""

NESTED = """
flow shop
context { total: int = 5 }
event buy
initial state browsing {
  on buy -> checkout
}
state checkout {
  invoke payment(amount: total)
  initial state paying {
    on done.invoke.payment -> paid
  }
  final state paid
}
final state over
"""


def compiled(source: str) -> CompiledFlow:
    result = compile_source(source, "shop.flow", flows={"payment": PAYMENT, "review": REVIEW})
    assert result.flow is not None, [str(d) for d in result.errors]
    return result.flow


SINGLE = "invoke payment as pay"
FAN_OUT = "invoke review × reviewers as reviews (join 2) forward"


def test_dot_source_shows_each_invoke_in_its_states_box() -> None:
    source = to_dot(compiled(SHOP)).source
    paying = node_line(source, "paying")
    assert SINGLE in paying and FAN_OUT in paying
    assert paying.index("Paying") < paying.index(SINGLE) < paying.index(FAN_OUT)
    assert "invoke" not in node_line(source, "browsing")


def test_a_compound_state_names_its_child_flow_without_as_when_the_id_is_the_flows() -> None:
    source = to_dot(compiled(NESTED)).source
    box = next(line for line in source.splitlines() if "<b>checkout</b>" in line)
    assert "invoke payment<" in box  # `as payment` would say nothing more
    assert "checkout · invoke payment" in to_mermaid(compiled(NESTED))


@needs_dot
def test_the_svg_drawn_by_graphviz_shows_the_child_flows() -> None:
    for flow, expected in ((compiled(SHOP), [SINGLE, FAN_OUT]), (compiled(NESTED), [])):
        titles, texts = svg_texts(render(to_dot(flow), "svg"))
        assert "paying" in titles
        for line in expected:
            assert line in texts
    _, nested = svg_texts(render(to_dot(compiled(NESTED)), "svg"))
    assert "invoke payment" in nested


def test_mermaid_adds_one_description_line_per_invoke() -> None:
    text = to_mermaid(compiled(SHOP))
    assert f"    paying : Paying\n    paying : {SINGLE}\n    paying : {FAN_OUT}\n" in text


def entry_cell(page: str, state: str) -> str:
    row = next(line for line in page.splitlines() if line.startswith(f"| `{state}` |"))
    return row.split(" | ")[4]


def test_docs_link_a_child_flows_page_generated_beside_and_name_it_otherwise() -> None:
    shop = compiled(SHOP)
    alone = entry_cell(to_markdown(shop), "paying")
    assert alone == (
        "invoke: `payment` as `pay`<br>"
        "invoke: `review` for each of `reviewers` (join 2) as `reviews`"
    )
    linked = entry_cell(to_markdown(shop, pages={"payment": "payment.md"}), "paying")
    assert linked.startswith("invoke: [`payment`](payment.md) as `pay`<br>invoke: `review` ")


def test_a_folder_of_docs_links_the_child_page_and_keeps_internal_events_marked() -> None:
    docs = [
        FlowDoc("shop", compiled(SHOP), "flows/shop.flow"),
        FlowDoc("pay-page", compiled(PAYMENT), "flows/payment.flow"),
    ]
    files = build(docs, svg=False)
    page = files["shop.md"].decode()
    assert "invoke: [`payment`](pay-page.md) as `pay`" in entry_cell(page, "paying")
    assert "invoke: `review` for each" in entry_cell(page, "paying")  # no page: named
    accepts = next(line for line in page.splitlines() if line.startswith("| `paying` |"))
    assert "`done.invoke.pay` (internal)" in accepts
    assert "`error.invoke.pay` (internal)" in accepts


@needs_dot
def test_flowc_docs_for_a_folder_writes_the_link(tmp_path: Path) -> None:
    from flowc.compiler.cli import main

    (tmp_path / "payment.flow").write_text(PAYMENT)
    (tmp_path / "review.flow").write_text(REVIEW)
    (tmp_path / "shop.flow").write_text(SHOP)
    out = tmp_path / "docs"
    files = [str(tmp_path / f"{n}.flow") for n in ("payment", "review", "shop")]
    assert main(["docs", *files, "--out-dir", str(out)]) == 0
    page = (out / "shop.md").read_text()
    assert "invoke: [`payment`](payment.md) as `pay`" in page
    assert "invoke: [`review`](review.md) for each of `reviewers`" in page
    assert SINGLE in (out / "shop.svg").read_text()
