"""Graphviz backend: a flow as a `graphviz.Digraph`, and rendering it with the real `dot`.

Conventions (the ones a reader of state diagrams expects): a black dot points at the initial
state; final states are double circles; choice states are diamonds; `back` edges are dashed and
do not take part in ranking (so the forward path stays straight); rules that apply in every
state leave from one dotted "any state" box; each state shows its title under its name.

Hierarchy (IR version 2): a compound state is a box (a cluster) around its children, titled
with its name, with its own black dot pointing at its initial child; each region of a parallel
state is a dashed box inside it; a history state is a small circle `H` (shallow) or `H*` (deep)
with a dashed arrow to its default. An arrow from or to a compound state ends at its border;
one that cannot (a rule of a compound state leading inside it, or a state leading to its own
ancestor) leaves from the compound's "any state" box or ends at its initial dot.
"""

from __future__ import annotations

import html
import itertools
import shutil
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, replace

import graphviz
import networkx as nx

from flowc.compiler.emit.expr_text import expr_text
from flowc.compiler.emit.hierarchy import StateTree, is_hierarchical
from flowc.compiler.emit.labels import (
    ANY_STATE,
    Edge,
    Highlight,
    LabelMode,
    edge_label,
    edges,
    invoke_lines,
    refusals,
)
from flowc.runtime.model import CompiledFlow, State, Transition

START = "__start__"
FONT = "Helvetica,Arial,sans-serif"

#: Output formats `dot` is asked for; `dot` itself (the source) needs no Graphviz install.
RENDER_FORMATS = ("svg", "png", "pdf")

#: Above this many states the layout trades some polish for time.
_BIG = 150

_INK = "#37474f"
_EDGE = "#546e7a"
_MUTED = "#90a4ae"
_CURRENT_FILL = "#ffca28"
_VISITED_FILL = "#fff3c4"
_PATH = "#e65100"
_INVOKE = "#1565c0"
_INITIAL = {"color": "black"}
_TO_DEFAULT = {"style": "dashed", "color": _MUTED, "arrowhead": "vee"}


class GraphvizMissing(RuntimeError):
    """Graphviz's `dot` program is not installed (or not on PATH)."""

    def __init__(self) -> None:
        super().__init__(
            "Graphviz's `dot` program was not found on PATH; it is needed to draw svg/png/pdf. "
            "Install Graphviz (Debian/Ubuntu: `apt-get install graphviz`, Fedora: `dnf install "
            "graphviz`, macOS: `brew install graphviz`), or write `-o FILE.dot` or "
            "`--format mermaid`, which need no Graphviz."
        )


def to_dot(
    flow: CompiledFlow,
    labels: LabelMode = "events",
    highlight: str | Highlight | None = None,
    path: Sequence[str] | None = None,
    *,
    rankdir: str | None = None,
) -> graphviz.Digraph:
    """The flow as a Graphviz digraph.

    `highlight` names the current state (or is a `Highlight` from a snapshot); `path` lists
    states in the order an instance visited them. Both colour what they name.
    """
    mark = _highlight(highlight, path)
    title = flow.title or flow.name
    graph = graphviz.Digraph(name=flow.name)
    rankdir = rankdir or layout_direction(flow)
    graph.attr(
        label=f"{title}\n ",
        labelloc="t",
        fontsize="18",
        fontname=FONT,
        rankdir=rankdir,
        nodesep="0.35",
        ranksep="0.45",
        newrank="true",
    )
    if len(flow.states) > _BIG:
        # dot's network-simplex passes dominate on big graphs (37 s for 1,000 states); capping
        # their iterations keeps a readable layout at a fifth of the time.
        graph.attr(nslimit="2", nslimit1="2", mclimit="0.5")
    graph.attr(
        "node",
        fontname=FONT,
        fontsize="11",
        color=_INK,
        fontcolor=_INK,
        style="rounded,filled",
        fillcolor="white",
        margin="0.12,0.06",
    )
    graph.attr("edge", fontname=FONT, fontsize="9", color=_EDGE, fontcolor=_INK, arrowsize="0.7")

    graph.node(START, label="", shape="point", width="0.16", color="black", fillcolor="black")
    visited = mark.visited
    refused = refusals(flow) if labels == "full" else {}
    if is_hierarchical(flow):
        _Hierarchy(graph, flow, labels, mark, refused, rankdir).draw()
        return graph
    for state in flow.states:
        _state_node(
            graph,
            state,
            refused.get(state.name, []),
            mark.current == state.name,
            state.name in visited,
        )

    arrows = edges(flow)
    if any(e.inherited for e in arrows):
        _any_state_box(graph, ANY_STATE)
    graph.edge(START, flow.initial, color="black")
    taken = mark.taken(arrows)
    for group in _bundles(arrows):
        _edge(graph, [arrows[i] for i in group], labels, any(i in taken for i in group))
    return graph


def layout_direction(flow: CompiledFlow) -> str:
    """Left to right for pipelines (long and narrow), top to bottom otherwise.

    Ranks are breadth-first levels from the initial state over forward edges; a flow is a
    pipeline when it has more levels than twice its widest level and is not so long that a
    left-to-right drawing would be shrunk to unreadable on a page.
    """
    forward: dict[str, list[str]] = defaultdict(list)
    for t in flow.transitions:
        if t.target is not None and not t.back and t.target != t.source:
            forward[t.source].append(t.target)
    level = {flow.initial: 0}
    frontier = [flow.initial]
    while frontier:
        following: list[str] = []
        for name in frontier:
            for nxt in forward[name]:
                if nxt not in level:
                    level[nxt] = level[name] + 1
                    following.append(nxt)
        frontier = following
    if not level:
        return "TB"
    depth = max(level.values()) + 1
    counts: dict[int, int] = defaultdict(int)
    for lv in level.values():
        counts[lv] += 1
    width = max(counts.values())
    return "LR" if depth > 2 * width and depth <= 12 else "TB"


def render(graph: graphviz.Digraph, fmt: str) -> bytes:
    """`graph` drawn by `dot` as `fmt` (svg, png, pdf); `GraphvizMissing` without Graphviz."""
    if fmt == "dot":
        source: str = graph.source
        return source.encode("utf-8")
    if shutil.which("dot") is None:
        raise GraphvizMissing()
    try:
        data = graph.pipe(format=fmt)
    except graphviz.ExecutableNotFound as exc:
        raise GraphvizMissing() from exc
    if not isinstance(data, bytes):  # the package is untyped; keep the promise checked
        raise TypeError(f"graphviz returned {type(data).__name__}, not bytes")
    return data


# ---- pieces -------------------------------------------------------------------------------


def _highlight(highlight: str | Highlight | None, path: Sequence[str] | None) -> Highlight:
    mark = highlight if isinstance(highlight, Highlight) else Highlight(current=highlight)
    if path:
        steps = [(a, b, None) for a, b in itertools.pairwise(path)]
        mark = replace(mark, current=mark.current or path[-1], steps=[*mark.steps, *steps])
    return mark


def _state_node(
    graph: graphviz.Digraph,
    state: State,
    refused: list[Transition],
    current: bool,
    visited: bool,
    shown: str | None = None,
) -> None:
    """`shown` is the name the node displays, when not the state's IR name."""
    attrs: dict[str, str] = {}
    shown = shown or state.name
    name = html.escape(shown)
    lines = [f"<b>{name}</b>"]
    if state.title and state.kind != "choice":
        lines.append(f'<font point-size="9">{html.escape(state.title)}</font>')
    lines += _invoke_rows(state)
    for t in refused:
        guard = f" [{expr_text(t.guard)}]" if t.guard is not None else ""
        text = html.escape(f"{t.event}{guard}: refuse {t.code}")
        lines.append(f'<font point-size="8" color="{_MUTED}"><i>{text}</i></font>')
    if state.kind == "final":
        # A circle is as wide as its longest line: wrap name and title into short lines.
        lines = ["<br/>".join(f"<b>{html.escape(p)}</b>" for p in _wrap(shown, "_", 10))]
        if state.title:
            title = "<br/>".join(html.escape(p) for p in _wrap(state.title, " "))
            lines.append(f'<font point-size="8">{title}</font>')
        attrs.update(shape="doublecircle", margin="0", width="0.3", fontsize="10")
    elif state.kind == "choice":
        attrs.update(shape="diamond", fontsize="9", margin="0.03", height="0.5")
        lines[0] = name  # a routing node is a junction; keep it small
    else:
        attrs.update(shape="box")
    if current:
        attrs.update(fillcolor=_CURRENT_FILL, penwidth="2.2", color=_PATH)
    elif visited:
        attrs.update(fillcolor=_VISITED_FILL)
    graph.node(state.name, label="<" + "<br/>".join(lines) + ">", **attrs)


def _invoke_rows(state: State) -> list[str]:
    """The child flows the state invokes, one small line each (HTML-like label rows)."""
    return [
        f'<font point-size="9" color="{_INVOKE}">{html.escape(line)}</font>'
        for line in invoke_lines(state)
    ]


def _bundles(arrows: list[Edge]) -> list[list[int]]:
    """Arrows grouped by the two states they join (and their style), in first-seen order.

    Several rules between the same two states become one arrow with one label line per rule:
    drawn one by one, stacked self-loops hide their own labels.
    """
    groups: dict[tuple[str, str, bool, bool], list[int]] = {}
    for i, e in enumerate(arrows):
        groups.setdefault((e.source, e.target, e.transition.back, e.inherited), []).append(i)
    return list(groups.values())


def _edge(
    graph: graphviz.Digraph,
    bundle: list[Edge],
    labels: LabelMode,
    taken: bool,
    ends: _Ends | None = None,
) -> None:
    """`ends` replaces the arrow's two states by the nodes it is drawn between (hierarchy)."""
    first = bundle[0]
    attrs: dict[str, str] = {}
    lines = _bundle_label(bundle, labels)
    if lines:
        attrs["label"] = _dot_text("\n".join(lines))
    if first.transition.back:
        # Ranking ignores back edges so the forward path stays a straight line, and their
        # labels are placed after layout so they do not push the forward states apart.
        attrs.update(style="dashed", constraint="false")
        if "label" in attrs:
            attrs["xlabel"] = attrs.pop("label")
    if first.inherited:
        attrs.update(style="dotted", color=_MUTED)
    if taken:
        attrs.update(color=_PATH, penwidth="2.2", fontcolor=_PATH)
    if ends is None:
        graph.edge(first.source, first.target, **attrs)
        return
    if ends.attrs and "label" in attrs:
        # An arrow clipped at a box border: dot places a `label` at the middle of the arrow
        # before clipping, which can be deep inside the box (or another region); an `xlabel`
        # is placed beside the arrow as drawn.
        attrs["xlabel"] = attrs.pop("label")
    graph.edge(ends.tail, ends.head, **attrs, **ends.attrs)


def _bundle_label(bundle: list[Edge], labels: LabelMode) -> list[str]:
    """The label lines of arrows drawn as one, each line once."""
    lines: list[str] = []
    for e in bundle:
        for line in edge_label(e.transition, labels).split("\n"):
            if line and line not in lines:
                lines.append(line)
    return lines


def _wrap(text: str, separator: str, width: int = 12) -> list[str]:
    """Greedy wrap at `separator` (kept at the end of a line for `_`, dropped for spaces)."""
    keep = separator if separator != " " else ""
    pieces = text.split(separator)
    lines: list[str] = []
    current = ""
    for i, piece in enumerate(pieces):
        word = piece + (keep if i < len(pieces) - 1 else "")
        joiner = "" if keep or not current else " "
        if current and len(current) + len(joiner) + len(word) > width:
            lines.append(current)
            current = word
        else:
            current += joiner + word
    if current:
        lines.append(current)
    return lines


def _dot_text(text: str) -> str:
    """Escape for a quoted DOT string (the graphviz package quotes but keeps backslashes)."""
    lines = [line.replace("\\", "\\\\") for line in text.split("\n")]
    return "\\n".join(lines)


# ---- hierarchy ------------------------------------------------------------------------------


def _cluster_id(name: str) -> str:
    return f"cluster_{name}"  # dot draws a subgraph as a box when its name starts `cluster`


def _initial_id(name: str) -> str:
    return f"__initial__/{name}"  # `/` never occurs in a state name


def _any_id(name: str) -> str:
    return f"{ANY_STATE}/{name}"


@dataclass(frozen=True)
class _Ends:
    """The nodes an arrow is drawn between, and `ltail`/`lhead` to clip it at a box border."""

    tail: str
    head: str
    attrs: dict[str, str]


class _Hierarchy:
    """Draws a hierarchical flow: nested clusters, initial dots, H/H* circles, clipped arrows."""

    def __init__(
        self,
        graph: graphviz.Digraph,
        flow: CompiledFlow,
        labels: LabelMode,
        mark: Highlight,
        refused: dict[str, list[Transition]],
        rankdir: str,
    ) -> None:
        self.graph = graph
        self.rankdir = rankdir
        self.flow = flow
        self.labels = labels
        self.mark = mark
        self.refused = refused
        self.tree = StateTree.of(flow)
        named = mark.configuration or ((mark.current,) if mark.current else ())
        self.active = self.tree.active(named)
        self.visited = mark.visited
        #: compound and parallel states whose own rules lead inside them: they get a box
        self.boxes: set[str] = set()
        #: parallel states entered from inside: they get a dot of their own to point at
        self.entries: set[str] = set()
        #: arrows within the boxes (initial dots, history defaults), as (ends, attrs). They are
        #: written at the top level after every node: a node named first in an arrow inside a
        #: cluster would belong to that cluster.
        self.inner: list[tuple[_Ends, dict[str, str]]] = []
        #: the arrows that rank nodes (all but `back` ones), as dot reads them
        self.ranked: nx.DiGraph[str] = nx.DiGraph()
        #: node -> the node standing for the same-rank set it was put in (`align`)
        self.aligned: dict[str, str] = {}

    def draw(self) -> None:
        graph, flow = self.graph, self.flow
        graph.attr(compound="true")  # lets arrows end at a cluster's border (ltail/lhead)
        arrows = edges(flow)
        taken = self.mark.taken(arrows)
        # Ends first: they decide which compound states need an "any state" box.
        plans = [
            (bundle, self.arrow_ends(bundle[0]), any(i in taken for i in group))
            for group in _bundles(arrows)
            for bundle in [[arrows[i] for i in group]]
        ]
        start = self.ends(START, flow.initial)
        self.ranked.add_edge(start.tail, start.head)
        for state in flow.states:
            first = self.tree.initial_child(state.name) if state.kind == "compound" else None
            if first is not None:
                self.inner.append((self.ends(_initial_id(state.name), first.name), _INITIAL))
            if state.kind == "history" and state.default in self.tree.states:
                self.inner.append((self.ends(state.name, state.default), _TO_DEFAULT))
        self.ranked.add_edges_from((ends.tail, ends.head) for ends, _ in self.inner)
        self.ranked.add_edges_from(
            (ends.tail, ends.head) for bundle, ends, _ in plans if not bundle[0].transition.back
        )
        self.level(graph, None)
        if any(e.inherited for e in arrows):
            _any_state_box(graph, ANY_STATE)
        graph.edge(start.tail, start.head, color="black", **start.attrs)
        for ends, attrs in self.inner:
            graph.edge(ends.tail, ends.head, **attrs, **ends.attrs)
        for bundle, ends, was_taken in plans:
            _edge(graph, bundle, self.labels, was_taken, ends)

    # -- where arrows end ----------------------------------------------------------------------

    def anchor(self, name: str) -> str:
        """A node inside the box of `name` that an arrow clipped at that box points at."""
        kind = self.tree.kind(name)
        if kind == "compound":
            return _initial_id(name)
        if kind == "parallel":
            regions = [k for k in self.tree.kids(name) if k.kind != "history"]
            return self.anchor(regions[0].name) if regions else _initial_id(name)
        return name

    def inside(self, node: str, container: str) -> bool:
        """The node `node` is drawn inside the box of `container`."""
        owner = node.split("/", 1)[-1]  # `__initial__/C` and `__any__/C` are drawn in C's box
        return owner in self.tree.states and self.tree.within(owner, container)

    def arrow_ends(self, edge: Edge) -> _Ends:
        t = edge.transition
        if edge.source == edge.target and self.tree.is_container(edge.source) and not t.reenter:
            # An internal `-> self` of a box stays in whichever child is active: a loop on the
            # box's "any state" node. (Into the initial dot, it would read as a reset, which only
            # `reenter` is.)
            self.boxes.add(edge.source)
            loop = _any_id(edge.source)
            return _Ends(loop, loop, {})
        return self.ends(edge.source, edge.target)

    def ends(self, source: str, target: str) -> _Ends:
        tree = self.tree
        attrs: dict[str, str] = {}
        tail = source
        if tree.is_container(source):
            if tree.within(target, source):
                # An arrow cannot leave a box's border and end inside it: it leaves from the
                # box's own "any state" node, as rules written outside every state do.
                tail = _any_id(source)
                self.boxes.add(source)
            else:
                tail = self.anchor(source)
                attrs["ltail"] = _cluster_id(source)
        head = target
        if tree.is_container(target):
            if self.inside(tail, target):
                # Entering a compound from inside it: its initial dot says where that leads. A
                # parallel state gets a dot for the purpose (entering it enters every region).
                head = _initial_id(target)
                if tree.kind(target) == "parallel":
                    self.entries.add(target)
            else:
                head = self.anchor(target)
                attrs["lhead"] = _cluster_id(target)
        return _Ends(tail, head, attrs)

    # -- what is drawn --------------------------------------------------------------------------

    def level(self, graph: graphviz.Digraph, parent: str | None) -> None:
        in_parallel = parent is not None and self.tree.kind(parent) == "parallel"
        kids = self.tree.kids(parent)
        # dot 2.43 lays out the boxes of a cluster in the reverse of the order they are
        # written, and then turns a left-to-right drawing over: the regions of a parallel state
        # are written backwards in a top-down one, so that both show them in document order
        # (with `align`; tests/emit/test_diagram_layout.py checks it with the real dot).
        for state in reversed(kids) if in_parallel and self.rankdir != "LR" else kids:
            if self.tree.is_container(state.name):
                self.container(graph, state, region=in_parallel)
            elif in_parallel and state.kind != "history":
                # Every region is a dashed box, an atomic one too.
                with graph.subgraph(name=_cluster_id(state.name)) as box:
                    box.attr(label="", style="rounded,dashed", color=_MUTED, penwidth="1")
                    self.leaf(box, state)
            else:
                self.leaf(graph, state)

    def leaf(self, graph: graphviz.Digraph, state: State) -> None:
        if state.kind == "history":
            self.history(graph, state)
            return
        _state_node(
            graph,
            state,
            self.refused.get(state.name, []),
            state.name in self.active,
            state.name in self.visited,
            shown=self.tree.short_name(state.name),
        )

    def container(self, graph: graphviz.Digraph, state: State, *, region: bool) -> None:
        name = state.name
        lines = [f"<b>{html.escape(self.tree.short_name(name))}</b>"]
        if state.title:
            lines.append(f'<font point-size="9">{html.escape(state.title)}</font>')
        lines += _invoke_rows(state)
        for t in self.refused.get(name, []):
            guard = f" [{expr_text(t.guard)}]" if t.guard is not None else ""
            text = html.escape(f"{t.event}{guard}: refuse {t.code}")
            lines.append(f'<font point-size="8" color="{_MUTED}"><i>{text}</i></font>')
        with graph.subgraph(name=_cluster_id(name)) as box:
            attrs = {
                "label": "<" + "<br/>".join(lines) + ">",
                "labeljust": "l",
                "fontsize": "11",
                "style": "rounded,dashed" if region else "rounded",
                "color": _MUTED if region else _INK,
                "fontcolor": _INK,
                "penwidth": "1",
                "margin": "10",
            }
            if name in self.active:
                attrs.update(color=_PATH, penwidth="2.2")
            box.attr(**attrs)
            kids = [k for k in self.tree.kids(name) if k.kind != "history"]
            if state.kind == "compound" or name in self.entries or not kids:
                # A parallel state with no region (bad IR) still needs a node for its box.
                hidden = state.kind == "parallel" and name not in self.entries
                box.node(
                    _initial_id(name),
                    label="",
                    shape="point",
                    width="0.12",
                    color="black",
                    fillcolor="black",
                    **({"style": "invis"} if hidden else {}),
                )
            if name in self.boxes:
                _any_state_box(box, _any_id(name))
            self.level(box, name)
            if state.kind == "parallel":
                self.align(box, [self.anchor(k.name) for k in kids])

    def align(self, box: graphviz.Digraph, anchors: list[str]) -> None:
        """The regions of a parallel state start on one rank, which `newrank` allows across
        boxes, so that dot keeps them in the order their boxes are written (`level`). Only
        when no arrow path joins two anchors, counting the sets already aligned as one node:
        dot 2.43 fails ("trouble in init_rank") on a same-rank set that arrows rank apart."""
        ranked = self.ranked
        ranked.add_nodes_from(anchors)
        heads = list(dict.fromkeys(self.aligned.get(a, a) for a in anchors))
        if len(heads) < 2 or any(
            a != b and nx.has_path(ranked, a, b) for a in heads for b in heads
        ):
            return
        first, *rest = heads
        for other in rest:
            # One node for the set from now on, so that later sets are checked against it.
            nx.contracted_nodes(ranked, first, other, self_loops=False, copy=False)
            for node, head in list(self.aligned.items()):
                if head == other:
                    self.aligned[node] = first
            self.aligned[other] = first
        with box.subgraph() as same:
            same.attr(rank="same")
            for anchor in anchors:
                same.node(anchor)

    def history(self, graph: graphviz.Digraph, state: State) -> None:
        deep = state.history == "deep"
        graph.node(
            state.name,
            label="H*" if deep else "H",
            tooltip=f"{state.name}: {'deep' if deep else 'shallow'} history",
            shape="circle",
            width="0.32",
            fixedsize="true",
            margin="0",
            fontsize="10",
            style="filled",
            fillcolor="white",
        )


def _any_state_box(graph: graphviz.Digraph, node: str) -> None:
    """The dashed "any state" box that rules written outside every state start from."""
    graph.node(
        node,
        label="any state",
        shape="box",
        style="rounded,dashed",
        color=_MUTED,
        fontcolor=_MUTED,
        fontsize="10",
    )
