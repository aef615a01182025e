"""Every E4xx code is documented in docs/diagnostics.md, and every documented example reports
its code at the position the docs give."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from flowc.compiler.diagnostics import CODES
from flowc.compiler.driver import compile_source
from flowc.compiler.scxml.exporter import export_scxml
from flowc.compiler.scxml.importer import import_scxml

DOCS = Path(__file__).parents[2] / "docs" / "diagnostics.md"


def examples(kind: str) -> list[tuple[str, str, int, int]]:
    text = DOCS.read_text(encoding="utf-8")
    found = []
    for section in re.split(r"^### ", text, flags=re.MULTILINE)[1:]:
        code = section.split()[0]
        pattern = rf"```{kind}\n(.*?)```\n`(\d+):(\d+):"
        for source, line, column in re.findall(pattern, section, flags=re.DOTALL):
            found.append((code, source, int(line), int(column)))
    return found


SCXML_EXAMPLES = examples("scxml-error")
EXPORT_EXAMPLES = examples("flow-export-error")


def test_every_scxml_code_is_documented_and_all_but_the_size_bound_by_example() -> None:
    scxml_codes = {c for c in CODES if c.startswith("E4")}
    assert scxml_codes == {f"E4{n:02}" for n in range(1, 21)}
    with_example = {e[0] for e in SCXML_EXAMPLES + EXPORT_EXAMPLES}
    assert scxml_codes - with_example == {"E403"}  # a 4 MiB example has no place in the docs


@pytest.mark.parametrize(
    ("code", "source", "line", "column"), SCXML_EXAMPLES, ids=[e[0] for e in SCXML_EXAMPLES]
)
def test_documented_scxml_example(code: str, source: str, line: int, column: int) -> None:
    result = import_scxml(source, "example.scxml")
    found = [(d.code, d.span.line, d.span.column) for d in result.diagnostics]
    assert (code, line, column) in found, found
    assert result.flow_text is None


@pytest.mark.parametrize(
    ("code", "source", "line", "column"), EXPORT_EXAMPLES, ids=[e[0] for e in EXPORT_EXAMPLES]
)
def test_documented_export_example(code: str, source: str, line: int, column: int) -> None:
    compiled = compile_source(source, "example.flow")
    assert compiled.flow is not None, compiled.diagnostics
    result = export_scxml(compiled.flow, "example.flow", compiled.where)
    found = [(d.code, d.span.line, d.span.column) for d in result.diagnostics]
    assert (code, line, column) in found, found
    assert result.text is None
