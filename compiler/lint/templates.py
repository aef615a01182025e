"""W322: a template outside the Jinja2 subset the compiler lowers (docs/ir.md, "Lowered
templates"): it renders in the Python runtime only; a runtime without Jinja2 (runtime-ts/)
cannot render it and falls back (a message to its kind's default text)."""

from __future__ import annotations

from collections.abc import Iterator

from flowc.compiler.diagnostics import Diagnostic
from flowc.compiler.lint.graph import FlowGraph
from flowc.compiler.source import NO_SPAN
from flowc.compiler.template_lowering import NotLowered, lower


def templates_python_only(g: FlowGraph) -> Iterator[Diagnostic]:
    for source, parts in g.flow.lowered_templates.items():
        if parts is not None:
            continue
        try:
            lower(source)
            why = "it is outside the subset"
        except NotLowered as exc:
            why = str(exc)
        yield Diagnostic.make(
            "W322",
            f"this template renders in the Python runtime only: {why}",
            g.where.templates.get(source, NO_SPAN),
            help="the TypeScript runtime renders text, `{{ value }}`, `if`, `for` and a few "
            'filters (docs/ir.md, "Lowered templates"); compute the rest in the host',
        )
