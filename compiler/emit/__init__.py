"""Emitters: a compiled flow as a diagram (Graphviz, Mermaid) or as Markdown documentation."""

from flowc.compiler.emit.dot import GraphvizMissing, render, to_dot
from flowc.compiler.emit.expr_text import action_text, expr_text
from flowc.compiler.emit.labels import Highlight
from flowc.compiler.emit.markdown import to_markdown
from flowc.compiler.emit.mermaid import to_mermaid

__all__ = [
    "GraphvizMissing",
    "Highlight",
    "action_text",
    "expr_text",
    "render",
    "to_dot",
    "to_markdown",
    "to_mermaid",
]
