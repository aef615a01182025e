"""Diagrams of hierarchical flows (IR version 2): clusters, regions, history, clipped arrows,
Mermaid composite and concurrent states, and highlighting of an active configuration."""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from flowc.compiler.cli import main
from flowc.compiler.emit.dot import to_dot
from flowc.compiler.emit.labels import Highlight, edges, label_parts
from flowc.compiler.emit.mermaid import to_mermaid
from flowc.compiler.emit.snapshot import SnapshotError, snapshot_highlight
from flowc.runtime.model import CompiledFlow, State, Transition

from .statechart import microwave
from .test_dot import SVG, node_line

needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz not installed")
GOLDEN = Path(__file__).resolve().parent / "golden"

PARALLEL = Highlight(current="Review", configuration=("CI.Waiting", "Approved"))


@pytest.fixture(scope="module")
def flow() -> CompiledFlow:
    return microwave()


def edge_line(source: str, tail: str, head: str) -> str:
    """The DOT line of the arrow from `tail` to `head` (names as DOT writes them)."""
    return next(
        line for line in source.splitlines() if line.strip().startswith(f"{tail} -> {head} ")
    )


def clusters(source: str) -> dict[str, str]:
    """Cluster name -> its attribute line, from the DOT source."""
    found: dict[str, str] = {}
    lines = source.splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"\s*subgraph (\S+) \{", line)
        if m:
            found[m.group(1).strip('"')] = lines[i + 1]
    return found


# ---- Graphviz -----------------------------------------------------------------------------


def test_compound_and_parallel_states_are_clusters(flow: CompiledFlow) -> None:
    source = to_dot(flow).source
    assert "compound=true" in source  # arrows may end at a cluster's border
    boxes = clusters(source)
    assert set(boxes) == {"cluster_Cooking", "cluster_Review", "cluster_CI", "cluster_Approvals"}
    assert "<b>Cooking</b>" in boxes["cluster_Cooking"]
    assert "Oven on" in boxes["cluster_Cooking"]  # the title, under the name
    assert "dashed" not in boxes["cluster_Cooking"] and "dashed" not in boxes["cluster_Review"]
    # Each region of the parallel state is a dashed box inside it.
    assert "dashed" in boxes["cluster_CI"] and "dashed" in boxes["cluster_Approvals"]
    inside_review = source.split("subgraph cluster_Review {", 1)[1]
    assert (
        "subgraph cluster_CI {" in inside_review and "subgraph cluster_Approvals {" in inside_review
    )
    # Compound states are boxes, not nodes; their children are nodes showing their short name.
    assert not [line for line in source.splitlines() if line.strip().startswith("Cooking [")]
    assert "<b>Waiting</b>" in node_line(source, '"CI.Waiting"')
    assert "<b>Waiting</b>" in node_line(source, '"Approvals.Waiting"')


def test_initial_dots_history_circles_and_finals(flow: CompiledFlow) -> None:
    source = to_dot(flow).source
    for compound, first in (("Cooking", "Heating"), ("CI", '"CI.Waiting"')):
        dot = f'"__initial__/{compound}"'
        assert "shape=point" in node_line(source, dot)
        assert edge_line(source, dot, first)
    inside_ci = source.split("subgraph cluster_CI {", 1)[1].split("}", 1)[0]
    assert '"__initial__/CI" [' in inside_ci  # the marker is drawn inside its region
    assert "label=H " in node_line(source, "Resume") and "shape=circle" in node_line(
        source, "Resume"
    )
    assert 'label="H*"' in node_line(source, "Everything")
    assert "dashed" in edge_line(source, "Everything", "Heating")  # to the default
    assert "doublecircle" in node_line(source, "Done")
    assert "doublecircle" in node_line(source, "Green")


def test_arrows_to_and_from_compound_states_end_at_the_border(flow: CompiledFlow) -> None:
    source = to_dot(flow).source
    start = edge_line(source, "Idle", '"__initial__/Cooking"')
    assert "lhead=cluster_Cooking" in start and "start" in start
    leave = edge_line(source, '"__initial__/Cooking"', "Idle")
    assert "ltail=cluster_Cooking" in leave and "after 30m" in leave
    assert "lhead=cluster_Review" in edge_line(source, "Idle", '"__initial__/CI"')
    assert "ltail=cluster_Review" in edge_line(source, '"__initial__/CI"', "Merged")
    # A rule of Cooking that leads inside it leaves from Cooking's own "any state" box ...
    assert "door_opened" in edge_line(source, '"__any__/Cooking"', "Paused")
    inside_cooking = source.split("subgraph cluster_Cooking {", 1)[1]
    assert '"__any__/Cooking" [' in inside_cooking.split("subgraph", 1)[0]
    # ... and a state entering its own ancestor ends at the ancestor's initial dot.
    restart = edge_line(source, "Paused", '"__initial__/Cooking"')
    assert "restart" in restart and "lhead" not in restart


def test_new_triggers_and_actions_are_labelled(flow: CompiledFlow) -> None:
    events = to_dot(flow).source
    assert 'label="always [remaining == 0]"' in edge_line(events, "Heating", "Done")
    assert 'label="after backoff_ms ms"' in edge_line(events, "Retry", "Idle")
    full = to_dot(flow, labels="full").source
    assert "emit lamp(on: true)" in full.replace("\\n  ", " ")
    assert "if attempts > 2 { backoff_ms = 1000 } else" in full


def test_labels_of_the_new_rules() -> None:
    always = Transition(index=0, source="A", target="B", kind="always")
    assert label_parts(always, "events") == ["always"]
    flow = microwave()
    timer = next(t for t in flow.transitions if t.after_expr is not None)
    assert label_parts(timer, "events") == ["after backoff_ms ms"]


@needs_dot
def test_real_graphviz_draws_clusters_and_history(flow: CompiledFlow, tmp_path: Path) -> None:
    for labels in ("events", "full"):
        dot_file = tmp_path / f"m.{labels}.dot"
        dot_file.write_text(to_dot(flow, labels=labels).source, encoding="utf-8")
        run = subprocess.run(
            ["dot", "-Tsvg", str(dot_file)], capture_output=True, check=False, timeout=60
        )
        assert run.returncode == 0, run.stderr
        # dot warns (and draws the arrow unclipped) when ltail/lhead cannot apply.
        assert run.stderr == b"", run.stderr.decode()
        root = ET.fromstring(run.stdout)
        groups = {g.findtext(f"{SVG}title"): g for g in root.iter(f"{SVG}g") if g.get("class")}
        cluster_titles = {t for t, g in groups.items() if g.get("class") == "cluster"}
        assert {"cluster_Cooking", "cluster_Review", "cluster_CI", "cluster_Approvals"} <= (
            cluster_titles
        )
        cooking = "".join(groups["cluster_Cooking"].itertext())
        assert "Cooking" in cooking and "Oven on" in cooking
        assert groups["Resume"].get("class") == "node"
        assert "".join(t for e in groups["Resume"].iter(f"{SVG}text") for t in e.itertext()) == "H"
        assert (
            "".join(t for e in groups["Everything"].iter(f"{SVG}text") for t in e.itertext())
            == "H*"
        )
        assert next(groups["Resume"].iter(f"{SVG}ellipse"), None) is not None
        # The regions are drawn with dashed borders.
        ci_path = groups["cluster_CI"].find(f"{SVG}path")
        assert ci_path is not None and ci_path.get("stroke-dasharray")
        leaves = {s.name for s in flow.states if s.kind not in ("compound", "parallel")}
        assert leaves <= set(groups)


# ---- Mermaid ------------------------------------------------------------------------------


def test_mermaid_composite_and_concurrent_states(flow: CompiledFlow) -> None:
    lines = to_mermaid(flow).splitlines()
    assert '    state "Cooking (Oven on)" as Cooking {' in lines
    block = lines[lines.index('    state "Cooking (Oven on)" as Cooking {') :]
    block = block[: block.index("    }") + 1]
    assert "        [*] --> Heating" in block
    assert "        Done --> [*]" in block
    assert '        state "H" as Resume' in block
    assert '        state "H*" as Everything' in block
    assert "        Everything --> Heating : default" in block
    assert "        Heating --> Done : always [remaining == 0]" in block
    assert '        state "any state" as Cooking_any' in block
    assert "        Cooking_any --> Paused : door_opened" in block
    review = lines[lines.index("    state Review {") :]
    review = review[: review.index("    }") + 1]
    assert review[1] == "        state CI {"
    assert "        --" in review  # the regions are concurrent
    separator = review.index("        --")
    assert (
        review[separator - 1] == "        }"
        and review[separator + 1] == "        state Approvals {"
    )
    assert '            state "Waiting" as CI_Waiting' in review
    assert "            [*] --> CI_Waiting" in review
    assert "            Green --> [*]" in review
    # Arrows crossing a border are written where both ends are visible: the top level.
    assert "    Idle --> Cooking : start" in lines
    assert "    Cooking --> Idle : after 30m" in lines
    assert "    Paused --> Cooking : restart" in lines
    assert "    Review --> Merged : done.state.Review" in lines
    assert "    Retry --> Idle : after backoff_ms ms" in lines
    assert "    [*] --> Idle" in lines


def test_mermaid_every_arrow_is_written_once(flow: CompiledFlow) -> None:
    text = to_mermaid(flow, labels="full")
    arrows = [line.strip() for line in text.splitlines() if " --> " in line]
    assert sum(1 for a in arrows if "[*]" not in a and ": default" not in a) == len(edges(flow))
    assert "emit lamp(on#58; true)" in text


# ---- highlighting an active configuration -------------------------------------------------


def test_snapshot_configuration_is_read() -> None:
    mark = snapshot_highlight(
        {"flow": "microwave", "state": "Review", "configuration": ["CI.Waiting", "Approved"]}
    )
    assert mark.current == "Review" and mark.configuration == ("CI.Waiting", "Approved")
    assert snapshot_highlight({"state": "Idle"}).configuration == ()  # a flat snapshot
    with pytest.raises(SnapshotError, match="configuration"):
        snapshot_highlight({"state": "Review", "configuration": "CI.Waiting"})


def test_dot_highlights_every_state_of_a_parallel_configuration(flow: CompiledFlow) -> None:
    source = to_dot(flow, highlight=PARALLEL).source
    for leaf in ('"CI.Waiting"', "Approved"):
        assert "#ffca28" in node_line(source, leaf), leaf
    for leaf in ('"Approvals.Waiting"', "Green", "Heating", "Idle"):
        assert "#ffca28" not in node_line(source, leaf), leaf
    boxes = clusters(source)
    for active in ("cluster_Review", "cluster_CI", "cluster_Approvals"):
        assert "#e65100" in boxes[active] and "penwidth=2.2" in boxes[active], active
    assert "#e65100" not in boxes["cluster_Cooking"]


def test_mermaid_highlights_a_parallel_configuration(flow: CompiledFlow) -> None:
    lines = to_mermaid(flow, highlight=PARALLEL).splitlines()
    assert "    class Approved, CI_Waiting current" in lines
    assert "    class Approvals, CI, Review active" in lines


def test_a_compound_state_as_the_current_one(flow: CompiledFlow) -> None:
    source = to_dot(flow, highlight="Cooking").source
    assert "#e65100" in clusters(source)["cluster_Cooking"]
    assert "#ffca28" not in source


def _small_flow() -> CompiledFlow:
    """A hierarchical flow today's runtime already loads (no computed delay)."""
    return CompiledFlow(
        name="review",
        states=(
            State(name="Open", initial=True),
            State(name="Review", kind="parallel"),
            State(name="CI", parent="Review", kind="compound"),
            State(name="Pending", parent="CI", initial=True),
            State(name="Green", parent="CI", kind="final"),
            State(name="Votes", parent="Review"),
        ),
        transitions=(
            Transition(index=0, source="Open", target="Review", kind="direct"),
            Transition(index=1, source="Pending", target="Green", kind="direct"),
        ),
        initial="Open",
    ).with_hash()


@needs_dot
def test_render_command_highlights_a_snapshot_configuration(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    flow_file = tmp_path / "review.json"
    flow_file.write_text(_small_flow().to_json(), encoding="utf-8")
    snapshot = tmp_path / "snap.json"
    snapshot.write_text(
        json.dumps({"flow": "review", "state": "Review", "configuration": ["Pending", "Votes"]}),
        encoding="utf-8",
    )
    out = tmp_path / "out.dot"
    assert main(["render", str(flow_file), "--snapshot", str(snapshot), "-o", str(out)]) == 0
    source = out.read_text(encoding="utf-8")
    assert "#ffca28" in node_line(source, "Pending") and "#ffca28" in node_line(source, "Votes")
    assert "#e65100" in clusters(source)["cluster_CI"]
    mmd = tmp_path / "out.mmd"
    assert main(["render", str(flow_file), "--snapshot", str(snapshot), "-o", str(mmd)]) == 0
    assert "    class Pending, Votes current" in mmd.read_text(encoding="utf-8")
    svg = tmp_path / "out.svg"
    assert main(["render", str(flow_file), "--snapshot", str(snapshot), "-o", str(svg)]) == 0
    assert b"cluster_Review" in svg.read_bytes()
    # A configuration naming a state the flow does not have is a usage error.
    snapshot.write_text(
        json.dumps({"state": "Review", "configuration": ["Pending", "Nowhere"]}), encoding="utf-8"
    )
    capsys.readouterr()
    assert main(["render", str(flow_file), "--snapshot", str(snapshot)]) == 2
    assert "`Nowhere` is not a state of review" in capsys.readouterr().err


# ---- golden files ---------------------------------------------------------------------------


def test_golden_diagrams() -> None:
    """Flat diagrams stay byte for byte as they were; hierarchical ones as reviewed.
    Regenerate with `python tests/emit/golden/regenerate.py` after a deliberate change."""
    spec = importlib.util.spec_from_file_location("regenerate", GOLDEN / "regenerate.py")
    assert spec is not None and spec.loader is not None
    regenerate = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(regenerate)
    files: dict[str, str] = regenerate.expected()
    assert {"review.events.dot", "review.full.mmd", "microwave.full.dot"} <= set(files)
    for name, text in files.items():
        assert (GOLDEN / name).read_text(encoding="utf-8") == text, name
    # The IR golden is what the diagrams are drawn from, and it loads back.
    assert CompiledFlow.from_json((GOLDEN / "microwave.json").read_text()) == microwave()


# ---- Markdown -------------------------------------------------------------------------------


def test_markdown_names_parents_history_and_the_new_triggers(flow: CompiledFlow) -> None:
    from flowc.compiler.emit.markdown import to_markdown

    page = to_markdown(flow, "m.svg")
    assert "| `CI.Waiting` |  | initial, in `CI` | `ci_passed` |" in page
    assert "| `Everything` |  | deep history, in `Cooking` |" in page
    assert "| `Resume` |  | shallow history, in `Cooking` |" in page
    assert "| `Review` |  | parallel |" in page
    assert "|  | always | `remaining == 0` | `Done` |  |" in page
    assert "|  | after backoff_ms ms |  | `Idle` |  |" in page
    assert "`poke`, `check`, `reset`, after backoff_ms ms" in page
    # The rule written outside every state leads to Idle (its copy in Idle goes to itself).
    assert "| `reset` |  | `Idle` |  |" in page


# ---- docs/diagrams.md ---------------------------------------------------------------------

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_docs_diagrams_page_is_current(flow: CompiledFlow) -> None:
    """The picture in docs/diagrams.md is drawn from today's DOT source of the test flow, and
    every line of its Mermaid example is a line flowc writes for that flow."""
    from flowc.compiler.emit.site import dot_hash, svg_source_hash

    svg = (DOCS / "diagrams" / "microwave.svg").read_bytes()
    assert svg_source_hash(svg) == dot_hash(flow), (
        "regenerate docs/diagrams/microwave.svg with flowc.compiler.emit.site.svg_for"
    )
    page = (DOCS / "diagrams.md").read_text(encoding="utf-8")
    assert "](diagrams/microwave.svg)" in page
    example = re.search(r"```mermaid\n(.*?)```", page, re.S)
    assert example is not None
    written = set(to_mermaid(flow).splitlines())
    for line in example.group(1).splitlines():
        assert line in written, line


def test_refusals_of_a_compound_state_are_listed_in_its_box(flow: CompiledFlow) -> None:
    refusal = Transition(
        index=len(flow.transitions),
        source="Cooking",
        target=None,
        kind="reject",
        event="start",
        code="busy",
        message="Already cooking.",
    )
    busy = flow.model_copy(update={"transitions": (*flow.transitions, refusal)})
    assert "start: refuse busy" in clusters(to_dot(busy, labels="full").source)["cluster_Cooking"]
    assert "refuse busy" not in to_dot(busy).source


def test_a_state_entering_its_parallel_ancestor_points_at_a_dot_of_the_parallel_state() -> None:
    flow = CompiledFlow(
        name="p",
        states=(
            State(name="P", kind="parallel", initial=True),
            State(name="A", parent="P"),
            State(name="B", parent="P"),
        ),
        transitions=(Transition(index=0, source="A", target="P", kind="event", event="again"),),
        initial="P",
    )
    source = to_dot(flow).source
    inside = source.split("subgraph cluster_P {", 1)[1]
    assert '"__initial__/P" [' in inside and "invis" not in node_line(source, '"__initial__/P"')
    assert "again" in edge_line(source, "A", '"__initial__/P"')
    # Without such an arrow a parallel state has no dot of its own.
    assert "__initial__/P" not in to_dot(flow.model_copy(update={"transitions": ()})).source
