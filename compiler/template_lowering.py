"""Lowers the templates of a flow (Jinja2 source) that stay within a small subset of Jinja2 into
parts with IR expressions (`lowered_templates`, docs/ir.md "Lowered templates"), so that a
runtime without Jinja2 renders them to the same text. A template outside the subset is lowered
to None (lint W322): it renders in Python only.

The lowering reads the parse tree of the very environment the runtime renders with, so
whitespace control, the final line break and line endings are exactly Jinja2's.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from typing import Any

from flowc.compiler import ast
from flowc.compiler.resolve import Symbols
from flowc.compiler.source import Span
from flowc.runtime.messages import DEFAULT_MESSAGES
from flowc.runtime.model import CompiledFlow

Part = dict[str, Any]

#: What only Jinja2 can read: markup, a line break it normalises or drops at the end.
_NEEDS_JINJA = re.compile(r"\{[{%#]|\r|\n$")


class NotLowered(Exception):
    """The template uses something outside the subset; the message says what."""


def template_sources(flow: CompiledFlow) -> Iterator[str]:
    """Every template source of the document, each once, in document order."""
    seen: set[str] = set()
    found: list[str] = list(flow.messages.values())
    found += [j.template for j in flow.journals]
    found += list(flow.templates.values())
    found += [t.message for t in flow.transitions if t.message is not None]
    found += [r.message for e in flow.events for r in e.requires]
    for source in found:
        if source not in seen:
            seen.add(source)
            yield source


def template_spans(symbols: Symbols) -> dict[str, Span]:
    """Where each template source was first written (for W322)."""
    texts: list[ast.Text] = [m.text for m in symbols.messages.values()]
    texts += [j.text for j in symbols.journals.values()]
    texts += [t.text for t in symbols.templates.values()]
    for state in symbols.states.values():
        texts += [r.reject_message for r in state.rules if r.reject_message is not None]
    texts += [r.reject_message for r in symbols.global_rules if r.reject_message is not None]
    for info in symbols.events.values():
        texts += [req.message for req in info.decl.requires]
    spans: dict[str, Span] = {}
    for text in texts:
        spans.setdefault(text.value, text.span)
    return spans


def lowered_templates(sources: Iterable[str]) -> dict[str, list[Part] | None]:
    """`lowered_templates` for these sources: only those that do not render as themselves."""
    out: dict[str, list[Part] | None] = {}
    for source in sources:
        try:
            parts = lower(source)
        except NotLowered:
            out[source] = None
            continue
        if parts != ([{"text": source}] if source else []):
            out[source] = parts
    return out


def default_messages() -> dict[str, dict[str, Any]]:
    """The default message of every rejection kind, its source and its parts (every one is in
    the subset: a test holds it there)."""
    return {kind: {"source": text, "parts": lower(text)} for kind, text in DEFAULT_MESSAGES.items()}


def lower(source: str) -> list[Part]:
    """The parts of `source`; NotLowered when it is outside the subset (or does not parse)."""
    if not _NEEDS_JINJA.search(source):
        return [{"text": source}] if source else []
    from flowc.compiler.jinja_lowering import lower_parsed

    return lower_parsed(source)
