"""docs/flows/ must match flows/*.flow: a changed flow without regenerated docs fails here."""

from __future__ import annotations

import shutil
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
    assert {s.name for s in flow.states} <= titles
    drawn = "\n".join(texts)
    mermaid = to_mermaid(flow, labels="full")
    for e in edges(flow):
        for line in edge_label(e.transition, "events").split("\n"):
            assert line.strip() in drawn, line
        parts = label_parts(e.transition, "full") + (["(back)"] if e.transition.back else [])
        line = f"    {state_id(e.source)} --> {state_id(e.target)}"
        if parts:
            line += f" : {mermaid_text(' '.join(parts))}"
        assert line in mermaid.splitlines(), line
