"""SCXML `<invoke>` as a child flow (docs/scxml.md, "Invoke: child flows").

Each `<invoke>` of type SCXML becomes `invoke CHILD(ARGS) as ID [into F] [forward]
[finalize do ...]` in its state, and its chart (the inline `<content><scxml>` or the file `src`
names beside the chart) the child flow `CHILD`, imported by the same importer in the role a
`ChildRole` describes: what its parent passes it, what the parent sends it, and how the parent
declares the events it sends back. This module holds what needs no importer: where a child's
chart comes from, the role, and the bounds on a tree of imports.

The importer reads a child twice: once alone, to learn the events it sends to `#_parent` (the
parent declares them), and once more with the parent's declarations, so that both sides agree
on every message's fields, as the compiler checks.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from flowc.compiler.scxml.expressions import Refusal
from flowc.compiler.scxml.reader import (
    BESIDE_NAME,
    MAX_BYTES,
    SCXML_NS,
    Document,
    Element,
    NotReadable,
    read_beside,
    read_scxml,
)

#: `type` values meaning an SCXML child session (the specification's URI, with or without its
#: trailing slash, and the short name).
SCXML_TYPES = frozenset(
    {
        "http://www.w3.org/TR/scxml/",
        "http://www.w3.org/TR/scxml",
        "scxml",
        "http://www.w3.org/TR/scxml/#SCXMLEventProcessor",
    }
)
#: How deep invokes may nest (a child invoking a child ...), and how many elements the whole
#: tree of imports may read (each chart is read twice, see the module's docstring): bounds
#: on the work a file can ask for, whatever it holds.
MAX_INVOKE_DEPTH = 8
MAX_TREE_ELEMENTS = 200_000
MAX_TREE_CHARTS = 1_000


@dataclass
class Budget:
    """The elements and charts the tree of imports may still read (shared by every importer
    of it)."""

    remaining: int = field(default_factory=lambda: MAX_TREE_ELEMENTS)
    charts: int = field(default_factory=lambda: MAX_TREE_CHARTS)

    def charge(self, root: Element) -> bool:
        """Count one chart and `root`'s elements against the budget; False once it is
        spent."""
        self.remaining -= count_elements(root)
        self.charts -= 1
        return self.remaining >= 0 and self.charts >= 0


@dataclass
class ChildRole:
    """What an imported chart is as a child of another (None: a top-level chart)."""

    #: The child's flow name (`PARENT_ID`).
    name: str
    #: How deep it is (1: a child of the top-level chart), and the files of the charts above
    #: it (a file invoking itself, directly or not, is refused).
    depth: int = 1
    files: tuple[str, ...] = ()
    #: The parent's `<param>`/`namelist` names with the types of their values: a `<data>` the
    #: child leaves untyped takes the type of what it is given.
    arg_types: dict[str, str | None] = field(default_factory=dict)
    #: Events the parent sends to the child, with their fields: the child declares them.
    inbound: dict[str, dict[str, str | None]] = field(default_factory=dict)
    #: The parent's declarations of the events the child sends to `#_parent` (empty on the
    #: first reading): the child fills the `_event` fields they have.
    parent_events: dict[str, dict[str, str | None]] = field(default_factory=dict)
    #: Whether the parent reads `_event.invokeid`: the child then has the context field
    #: `scxml_invokeid` (given by the parent) and puts it in its messages and done data.
    reports_invokeid: bool = False
    #: The fields the parent's `<finalize>` reads, with their types: every message from the
    #: child carries them, its done event too (its top-level final states add them).
    done_fields: dict[str, str | None] = field(default_factory=dict)


@dataclass
class ChildSource:
    """Where a child's chart is: its document and the file it is in."""

    document: Document
    path: str
    #: The file the chart was read from (None: inline in the parent's file).
    file: str | None = None


def count_elements(element: Element) -> int:
    return 1 + sum(count_elements(child) for child in element.children)


def inline_chart(element: Element, holder: str = "content") -> Element | None:
    """The `<scxml>` of an invoke's `<content>` (or of an `<assign>`: `holder` "assign"), if
    it has one."""
    for content in element.find(holder) if holder == "content" else [element]:
        for child in content.children:
            if child.tag == "scxml" and child.namespace == SCXML_NS:
                return child
    return None


def chart_file(src: str, beside: Path | None, chain: tuple[str, ...]) -> ChildSource:
    """The chart `src` names (`file:NAME` or `NAME`: a file in `beside`, the directory of the
    chart invoking it, read as `<data src>` is: reader.read_beside), parsed; raises `Refusal`
    when it cannot be used: the caller reads no file (`beside` None), another directory, a
    URL, a chart of the chain above (an invoke cycle)."""
    name = src.strip().removeprefix("file:")
    if beside is None:
        raise Refusal(
            "E409",
            f"`src` `{src}` reads another file",
            "`flowc import scxml --data-src` reads the files a chart names beside it",
        )
    if not BESIDE_NAME.fullmatch(name):
        raise Refusal(
            "E409",
            f"`src` `{src}` is not a file name beside the chart",
            "flowc reads an invoked chart only from the chart's own directory: "
            '`src="file:NAME.scxml"`',
        )
    path = beside / name
    resolved = str(path.resolve())
    if resolved in chain:
        raise Refusal("E408", f"`{src}` invokes itself (directly or through other charts)")
    try:
        raw = read_beside(beside, name, MAX_BYTES)
    except NotReadable as problem:
        raise Refusal("E408", f"the chart `{name}` beside this one: {problem}") from None
    return ChildSource(read_scxml(raw, str(path)), str(path), resolved)
