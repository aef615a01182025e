"""Where Graphviz puts things in diagrams of statecharts: an internal `-> self` of a compound
state is a loop, not a reset; an arrow clipped at a box border keeps its label outside the box
(laid out by the real `dot`); a history circle is inside its parent's box."""

from __future__ import annotations

import itertools
import json
import shutil
import subprocess
from pathlib import Path

import pytest

from flowc.compiler import compile_source
from flowc.compiler.driver import compile_file
from flowc.compiler.emit.dot import to_dot
from flowc.runtime.model import CompiledFlow

ROOT = Path(__file__).resolve().parents[2]
needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz not installed")

COUNTER = """flow counter
context { n: int = 0 }
event tick
event go
initial state C {
  initial state A { on go -> B }
  state B { on go -> A }
  on tick -> self do n += 1
}
"""


def _compiled(source: str) -> CompiledFlow:
    flow = compile_source(source, "c.flow").flow
    assert flow is not None
    return flow


def _arrows(source: str) -> list[str]:
    return [line.strip() for line in source.splitlines() if " -> " in line]


def test_an_internal_self_rule_of_a_compound_is_a_loop_on_its_any_state_node() -> None:
    arrows = _arrows(to_dot(_compiled(COUNTER)).source)
    assert '"__any__/C" -> "__any__/C" [label=tick]' in arrows
    assert not [a for a in arrows if a.startswith('"__any__/C" -> "__initial__/C"')]


def test_reenter_of_a_compound_still_points_at_its_initial_dot() -> None:
    source = to_dot(_compiled(COUNTER.replace("-> self do", "-> self reenter do"))).source
    assert '"__any__/C" -> "__initial__/C" [label=tick]' in _arrows(source)


def test_an_arrow_clipped_at_a_box_border_has_an_xlabel() -> None:
    clipped = [a for a in _arrows(to_dot(_pr_review()).source) if "ltail=" in a or "lhead=" in a]
    assert clipped
    assert all(" label=" not in a and "[label=" not in a for a in clipped), clipped


def _pr_review() -> CompiledFlow:
    result = compile_file(ROOT / "flows" / "examples" / "pr_review.flow")
    assert result.flow is not None
    return result.flow


def _layout(flow: CompiledFlow) -> dict[str, object]:
    laid_out: dict[str, object] = json.loads(to_dot(flow).pipe(format="json"))
    return laid_out


def _box(layout: dict[str, object], cluster: str) -> tuple[float, float, float, float]:
    objects = layout["objects"]
    assert isinstance(objects, list)
    bb = next(o["bb"] for o in objects if o.get("name") == cluster)
    x0, y0, x1, y1 = (float(v) for v in bb.split(","))
    return x0, y0, x1, y1


def _inside(point: str, box: tuple[float, float, float, float]) -> bool:
    x, y = (float(v) for v in point.split(","))
    return box[0] <= x <= box[2] and box[1] <= y <= box[3]


@needs_dot
def test_the_label_of_an_arrow_leaving_a_box_is_outside_it() -> None:
    layout = _layout(_pr_review())
    objects = layout["objects"]
    edges = layout["edges"]
    assert isinstance(objects, list) and isinstance(edges, list)
    ids = {o["_gvid"]: o["name"] for o in objects}
    close = next(
        e for e in edges if ids[e["tail"]].startswith("__initial__/") and ids[e["head"]] == "closed"
    )
    assert close["xlabel"] == "close"
    # Its middle is outside the box, or on its border (a label is about 10 points high).
    x0, y0, x1, y1 = _box(layout, "cluster_open")
    assert not _inside(close["xlp"], (x0 + 10, y0 + 10, x1 - 10, y1 - 10)), close["xlp"]


@needs_dot
def test_a_history_circle_is_inside_its_parent() -> None:
    layout = _layout(_pr_review())
    objects = layout["objects"]
    assert isinstance(objects, list)
    history = next(o for o in objects if o.get("name") == "before_close")
    assert _inside(history["pos"], _box(layout, "cluster_open"))


def _regions_out_of_order(flow: CompiledFlow, rankdir: str) -> list[tuple[str, str]]:
    """Pairs of regions (written one after the other) whose boxes dot did not draw in that
    order: left to right in a top-down layout, top to bottom in a left-to-right one."""
    laid_out = json.loads(to_dot(flow, rankdir=rankdir).pipe(format="json"))
    wrong = []
    for state in flow.states:
        if state.kind != "parallel":
            continue
        regions = [s.name for s in flow.states if s.parent == state.name and s.kind != "history"]
        for first, then in itertools.pairwise(regions):
            a, b = _box(laid_out, f"cluster_{first}"), _box(laid_out, f"cluster_{then}")
            # dot's y grows upwards
            in_order = a[2] <= b[0] if rankdir == "TB" else a[1] >= b[3]
            if not in_order:
                wrong.append((first, then))
    return wrong


@needs_dot
@pytest.mark.parametrize("rankdir", ["TB", "LR"])
@pytest.mark.parametrize("name", ["elevator", "microwave", "pr_review"])
def test_the_regions_of_a_parallel_state_are_drawn_in_the_order_written(
    name: str, rankdir: str
) -> None:
    result = compile_file(ROOT / "flows" / "examples" / f"{name}.flow")
    assert result.flow is not None
    assert _regions_out_of_order(result.flow, rankdir) == []


@needs_dot
@pytest.mark.parametrize("seed", [30608085, 3803628812])
@pytest.mark.parametrize("rankdir", ["TB", "LR"])
def test_aligning_regions_never_asks_dot_for_ranks_it_cannot_give(seed: int, rankdir: str) -> None:
    # Random charts on which earlier ways of aligning regions made dot 2.43 fail: a chain
    # across regions ("lost edge"), and two same-rank sets that arrows rank against each
    # other ("trouble in init_rank").
    from .test_hierarchy_property import random_flow

    source = to_dot(random_flow(seed), labels="full", rankdir=rankdir).source
    run = subprocess.run(
        ["dot", "-Tsvg"], input=source.encode(), capture_output=True, check=False, timeout=60
    )
    assert run.returncode == 0, run.stderr.decode()
