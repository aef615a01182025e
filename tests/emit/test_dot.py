"""Graphviz output: conventions in the DOT source, and an SVG that really contains the graph."""

from __future__ import annotations

import shutil
import xml.etree.ElementTree as ET

import pytest

from flowc.compiler.emit import dot as dot_module
from flowc.compiler.emit.dot import GraphvizMissing, layout_direction, render, to_dot
from flowc.compiler.emit.labels import Highlight, edge_label, edges
from flowc.runtime.model import CompiledFlow

SVG = "{http://www.w3.org/2000/svg}"
needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz not installed")


def svg_texts(svg: bytes) -> tuple[set[str], list[str]]:
    """(titles of the nodes, every text drawn), from the SVG parsed as XML."""
    root = ET.fromstring(svg)
    titles = {
        g.findtext(f"{SVG}title") or "" for g in root.iter(f"{SVG}g") if g.get("class") == "node"
    }
    texts = ["".join(t.itertext()) for t in root.iter(f"{SVG}text")]
    return titles, texts


def node_line(source: str, name: str) -> str:
    return next(line for line in source.splitlines() if line.strip().startswith(f"{name} ["))


def test_conventions_in_dot_source(sample: CompiledFlow) -> None:
    source = to_dot(sample).source
    assert "__start__ -> DRAFT" in source
    assert "shape=point" in node_line(source, "__start__")
    assert "doublecircle" in node_line(source, "DONE")
    assert "doublecircle" in node_line(source, "CANCELLED")
    assert "diamond" in node_line(source, "ROUTE")
    assert "Author writes" in node_line(source, "DRAFT")  # titles are shown
    back = [line for line in source.splitlines() if "REVIEW -> DRAFT" in line]
    assert back and "dashed" in back[0] and "constraint=false" in back[0]
    assert "REVIEW -> REVIEW" in source  # the timer self-loop
    assert 'label="Document review' in source
    # The rule written outside any state is drawn once, from "any state".
    assert source.count("-> CANCELLED") == 1
    assert "__any__ -> CANCELLED" in source


def test_label_modes(sample: CompiledFlow) -> None:
    none = to_dot(sample, labels="none").source
    events = to_dot(sample, labels="events").source
    full = to_dot(sample, labels="full").source
    assert not [line for line in none.splitlines() if "->" in line and "label=" in line]
    assert "decide" in events and "append(notes" not in events
    assert "[rounds > 3]" in events  # routing edges show their guard even in `events`
    assert "append(notes, event.note)" in full
    assert "refuse empty_text" in full  # refusals are listed in the state in full mode


def test_direction() -> None:
    from flowc.runtime.model import State, Transition

    def chain(n: int) -> CompiledFlow:
        states = [State(name=f"S{i}", initial=i == 0) for i in range(n)]
        transitions = [
            Transition(index=i, source=f"S{i}", target=f"S{i + 1}", kind="direct")
            for i in range(n - 1)
        ]
        return CompiledFlow(
            name="c", states=tuple(states), transitions=tuple(transitions), initial="S0"
        )

    assert layout_direction(chain(6)) == "LR"
    assert layout_direction(chain(2)) == "TB"
    assert layout_direction(chain(40)) == "TB"  # too long to read left to right


def test_highlight_current_and_path(sample: CompiledFlow) -> None:
    mark = Highlight(
        current="REVIEW",
        steps=[("DRAFT", "ROUTE", "submit"), ("ROUTE", "REVIEW", None)],
    )
    source = to_dot(sample, highlight=mark).source
    assert "#ffca28" in node_line(source, "REVIEW")
    assert "#fff3c4" in node_line(source, "DRAFT")
    taken = [line for line in source.splitlines() if "DRAFT -> ROUTE" in line]
    assert "penwidth" in taken[0]
    assert "penwidth" not in next(
        line for line in source.splitlines() if "ROUTE -> ESCALATED" in line
    )


def test_path_argument(sample: CompiledFlow) -> None:
    source = to_dot(sample, path=["DRAFT", "ROUTE", "ESCALATED"]).source
    assert "#ffca28" in node_line(source, "ESCALATED")


@needs_dot
def test_svg_has_every_state_and_edge_label(sample: CompiledFlow) -> None:
    for labels in ("events", "full"):
        svg = render(to_dot(sample, labels=labels), "svg")
        titles, texts = svg_texts(svg)
        assert {s.name for s in sample.states} <= titles
        drawn = "\n".join(texts)
        for e in edges(sample):
            for line in edge_label(e.transition, labels).split("\n"):
                if line:
                    assert line in drawn, (labels, line)


@needs_dot
def test_png_and_pdf_render(sample: CompiledFlow) -> None:
    assert render(to_dot(sample), "png").startswith(b"\x89PNG")
    assert render(to_dot(sample), "pdf").startswith(b"%PDF")


def test_missing_dot_is_a_clear_error(
    sample: CompiledFlow, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(dot_module.shutil, "which", lambda name: None)
    with pytest.raises(GraphvizMissing, match="apt-get install graphviz"):
        render(to_dot(sample), "svg")
    # DOT source needs no Graphviz at all.
    assert render(to_dot(sample), "dot").startswith(b"digraph")


def test_a_global_rule_into_one_state_points_at_that_state() -> None:
    from flowc.compiler import compile_source

    source = (
        "flow t\nevent go\nevent reset\n"
        "initial state A { on go -> B }\nstate B { on go -> DONE }\nfinal state DONE\n"
        "on reset -> A\n"
    )
    flow = compile_source(source, "t.flow").flow
    assert flow is not None
    # The copy in A itself goes from A to A, like a `-> self`; the rule still leads to A.
    assert "__any__ -> A [label=reset" in to_dot(flow).source
    assert [(e.source, e.target) for e in edges(flow) if e.inherited] == [("__any__", "A")]
