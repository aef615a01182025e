"""The examples of the docs compile, so the docs cannot drift from the compiler.

Every fenced block tagged `flow` in docs/*.md and README.md is a complete file that must compile
without errors (warnings are allowed: some examples show what lint says). A block tagged
`flow-error` shows a mistake: in docs/diagnostics.md it must be reported with the code of its
section (warnings included), anywhere else refused with at least one error. Blocks tagged
`flow-fragment` are not whole files and are skipped.

An example may invoke a child flow shown on the same page: every block tagged `flow` or
`flow-child` is passed to the compiler by its name (`flow NAME`, the first block of each name).
A `flow-child` block is compiled only as a child of the examples that invoke it (docs/
diagnostics.md shows a broken one that way).

docs/ir.md also shows the full compiled JSON of one example: the `json` block that directly
follows a `flow` block must be exactly what the compiler writes for it.
"""

from __future__ import annotations

import itertools
import json
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from flowc.compiler import compile_source
from flowc.compiler.driver import CompileResult

DOCS = Path(__file__).resolve().parents[2] / "docs"
LANGUAGE = DOCS / "language.md"
IR = DOCS / "ir.md"

_FENCE = re.compile(r"^```([A-Za-z0-9_-]*)\s*$")


@dataclass(frozen=True)
class Block:
    file: str
    line: int  # 1-based line of the opening fence
    tag: str
    text: str

    @property
    def id(self) -> str:
        return f"{self.file}:{self.line}"


def blocks(path: Path) -> list[Block]:
    """Every fenced code block of a Markdown file, in order (fences at the start of a line)."""
    found: list[Block] = []
    lines = path.read_text(encoding="utf-8").splitlines()
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        start = i
        body: list[str] = []
        i += 1
        while i < len(lines) and lines[i].rstrip() != "```":
            body.append(lines[i])
            i += 1
        assert i < len(lines), f"{path.name}:{start + 1}: code block is not closed"
        found.append(Block(path.name, start + 1, opening.group(1), "\n".join(body) + "\n"))
        i += 1
    return found


DIAGNOSTICS = DOCS / "diagnostics.md"
#: Every Markdown page whose examples are checked: the docs and the README.
PAGES = [*sorted(DOCS.glob("*.md")), DOCS.parent / "README.md"]


def _all(tag: str, pages: list[Path] | None = None) -> list[Block]:
    chosen = [LANGUAGE, IR] if pages is None else pages
    return [b for path in chosen if path.exists() for b in blocks(path) if b.tag == tag]


FLOWS = _all("flow", PAGES)
_NAMED = re.compile(r"^flow\s+([A-Za-z_][A-Za-z0-9_]*)", re.MULTILINE)


def _children_of_pages() -> dict[str, dict[str, str]]:
    """Page -> the flows its examples may invoke, by name."""
    found: dict[str, dict[str, str]] = {}
    for path in PAGES:
        named = found.setdefault(path.name, {})
        for block in blocks(path):
            header = _NAMED.search(block.text)
            if block.tag in ("flow", "flow-child") and header is not None:
                named.setdefault(header.group(1), block.text)
    return found


CHILDREN = _children_of_pages()


def compiled(block: Block) -> CompileResult:
    """The block compiled as `example.flow`, with the flows of its page to invoke."""
    return compile_source(block.text, "example.flow", flows=CHILDREN.get(block.file, {}))


REFUSED = _all("flow-error", [p for p in PAGES if p != DIAGNOSTICS])


def _diagnostic_examples() -> list[tuple[str, Block]]:
    """(code of its section, block) for every `flow-error` block of docs/diagnostics.md."""
    found: list[tuple[str, Block]] = []
    code = ""
    lines = DIAGNOSTICS.read_text(encoding="utf-8").splitlines()
    by_line = {b.line: b for b in blocks(DIAGNOSTICS)}
    for number, line in enumerate(lines, start=1):
        heading = re.match(r"^### `?([EW]\d{3})", line)
        if heading:
            code = heading.group(1)
        block = by_line.get(number)
        if block is not None and block.tag == "flow-error":
            found.append((code, block))
    return found


SHOWN = _diagnostic_examples()


def test_every_page_is_read() -> None:
    pages = {b.file for b in FLOWS}
    assert {"language.md", "ir.md", "formatting.md", "README.md"} <= pages
    assert len(SHOWN) >= 70


@pytest.mark.parametrize(
    ("code", "block"), SHOWN, ids=lambda x: x.id if isinstance(x, Block) else x
)
def test_diagnostic_example_reports_its_code(code: str, block: Block) -> None:
    result = compiled(block)
    assert code in {d.code for d in result.diagnostics}, (
        f"{block.id}: the example of {code} does not report it: "
        + ", ".join(f"{d.code} {d.message}" for d in result.diagnostics)
    )


def test_the_reference_has_examples() -> None:
    # Guards the extraction itself: a broken fence pattern must not make every test vacuous.
    in_language = [b for b in FLOWS if b.file == LANGUAGE.name]
    assert len(in_language) >= 15


def test_fragments_are_few() -> None:
    fragments = _all("flow-fragment")
    assert len(fragments) <= 3, "make examples complete files so that they are checked"


@pytest.mark.parametrize("block", FLOWS, ids=lambda b: b.id)
def test_example_compiles(block: Block) -> None:
    result = compiled(block)
    errors = [f"{d.code} {d.span.line}:{d.span.column} {d.message}" for d in result.errors]
    assert not errors, f"{block.id}: the example does not compile:\n" + "\n".join(errors)
    assert result.flow is not None


@pytest.mark.parametrize("block", REFUSED, ids=lambda b: b.id)
def test_refused_example_is_refused(block: Block) -> None:
    result = compiled(block)
    assert result.errors, f"{block.id}: tagged flow-error but compiles without errors"


def test_ir_excerpt_is_real_output() -> None:
    """The JSON shown after the first `flow` block of docs/ir.md is the compiler's output."""
    if not IR.exists():
        pytest.skip("docs/ir.md not written yet")
    found = blocks(IR)
    pairs = [
        (flow, shown)
        for flow, shown in itertools.pairwise(found)
        if flow.tag == "flow" and shown.tag == "json"
    ]
    assert pairs, "docs/ir.md should show a flow followed by its compiled JSON"
    for flow, shown in pairs:
        result = compile_source(flow.text, "example.flow")
        assert result.flow is not None, f"{flow.id}: does not compile"
        expected = json.loads(result.flow.to_json())
        assert json.loads(shown.text) == expected, (
            f"{shown.id}: the JSON differs from what flowc compiles; paste the output of "
            f"`flowc compile` for the block at {flow.id}"
        )


def test_message_kinds_table_lists_exactly_the_runtime_kinds() -> None:
    from flowc.runtime.messages import MESSAGE_KINDS

    text = (Path(__file__).parents[2] / "docs" / "language.md").read_text(encoding="utf-8")
    section = text.split("### `message KIND", 1)[1].split("\n### ", 1)[0]
    kinds = set(re.findall(r"^\| `([a-z_]+)` \|", section, flags=re.MULTILINE))
    assert kinds == set(MESSAGE_KINDS)
