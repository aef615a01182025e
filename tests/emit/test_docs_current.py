"""docs/flows/ must match flows/*.flow: a changed flow without regenerated docs fails here."""

from __future__ import annotations

import re
import shutil
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from flowc.compiler import compile_file
from flowc.compiler.emit.site import INDEX_NAME, FlowDoc, build, stale_files

ROOT = Path(__file__).resolve().parents[2]
FLOWS = sorted((ROOT / "flows").glob("*.flow"))
OUT = ROOT / "docs" / "flows"
REGENERATE = "flowc docs flows/*.flow --out-dir docs/flows"


@pytest.mark.skipif(not FLOWS, reason="no flows/*.flow yet")
@pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz not installed")
def test_docs_flows_is_up_to_date() -> None:
    docs = []
    for path in FLOWS:
        result = compile_file(path)
        assert result.flow is not None, f"{path.name} does not compile"
        docs.append(FlowDoc(path.stem, result.flow, path.relative_to(ROOT).as_posix()))
    files = build(docs)
    stale = stale_files(docs, files, OUT)
    assert not stale, f"out of date in docs/flows: {stale}; run `{REGENERATE}` at the root"
    expected = set(files)
    present = {p.name for p in OUT.iterdir() if p.suffix in (".md", ".svg")}
    assert present <= expected, f"left over in docs/flows: {sorted(present - expected)}"
    assert INDEX_NAME in present


@pytest.mark.parametrize("path", FLOWS, ids=lambda p: p.stem)
def test_seed_diagrams_show_every_state_and_transition(path: Path) -> None:
    from flowc.compiler.emit.labels import edge_label, edges, label_parts
    from flowc.compiler.emit.mermaid import escape_label as mermaid_text
    from flowc.compiler.emit.mermaid import state_id, to_mermaid

    from .test_dot import svg_texts

    flow = compile_file(path).flow
    assert flow is not None
    svg = OUT / f"{path.stem}.svg"
    titles, texts = svg_texts(svg.read_bytes())
    boxes = svg_boxes(svg.read_bytes())
    containers = {s.name for s in flow.states if s.kind in ("compound", "parallel")}
    # An atomic state is a node; a compound or parallel state the box (cluster) around its
    # children, each child drawn inside it.
    assert {s.name for s in flow.states if s.name not in containers} <= titles
    assert {f"cluster_{name}" for name in containers} <= set(boxes)
    for s in flow.states:
        if s.parent is not None:
            child = boxes[f"cluster_{s.name}" if s.name in containers else s.name]
            assert _inside(child, boxes[f"cluster_{s.parent}"]), (s.name, s.parent)
    drawn = "\n".join(texts)
    # A statechart's edges are written inside the composite state holding both ends, indented.
    mermaid = {line.strip() for line in to_mermaid(flow, labels="full").splitlines()}
    for e in edges(flow):
        for line in edge_label(e.transition, "events").split("\n"):
            assert line.strip() in drawn, line
        parts = label_parts(e.transition, "full") + (["(back)"] if e.transition.back else [])
        line = f"{state_id(e.source)} --> {state_id(e.target)}"
        if parts:
            line += f" : {mermaid_text(' '.join(parts))}"
        assert line in mermaid, line


Box = tuple[float, float, float, float]
_SVG = "{http://www.w3.org/2000/svg}"
_POINT = re.compile(r"(-?\d+(?:\.\d+)?),(-?\d+(?:\.\d+)?)")


def svg_boxes(svg: bytes) -> dict[str, Box]:
    """The bounding box of each node and each cluster, by its title, from the shapes drawn."""
    out: dict[str, Box] = {}
    for g in ET.fromstring(svg).iter(f"{_SVG}g"):
        if g.get("class") not in ("node", "cluster"):
            continue
        xs: list[float] = []
        ys: list[float] = []
        for shape in g:
            coords = shape.get("d") or shape.get("points") or ""
            for x, y in _POINT.findall(coords):
                xs.append(float(x))
                ys.append(float(y))
            if shape.tag == f"{_SVG}ellipse":
                cx, cy = float(shape.get("cx", 0)), float(shape.get("cy", 0))
                rx, ry = float(shape.get("rx", 0)), float(shape.get("ry", 0))
                xs += [cx - rx, cx + rx]
                ys += [cy - ry, cy + ry]
        if xs:
            out[g.findtext(f"{_SVG}title") or ""] = (min(xs), min(ys), max(xs), max(ys))
    return out


def _inside(inner: Box, outer: Box) -> bool:
    return (
        outer[0] <= inner[0]
        and outer[1] <= inner[1]
        and inner[2] <= outer[2]
        and inner[3] <= outer[3]
    )
