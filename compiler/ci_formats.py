"""Diagnostics in the formats CI services read: SARIF 2.1.0 (code scanning) and GitHub Actions
workflow commands (annotations on a pull request's diff).

Both are views of the same `Diagnostic`s `flowc check` prints as text or JSON; columns are
characters, as everywhere in flowc (SARIF is told so with `columnKind`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import PurePath
from typing import Any
from urllib.parse import quote

from flowc.compiler.diagnostics import CODES, Diagnostic, Severity
from flowc.compiler.source import Span
from flowc.runtime import __version__

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def to_sarif(diagnostics: Iterable[Diagnostic]) -> dict[str, Any]:
    """One SARIF run of flowc over the files the diagnostics are about."""
    found = list(diagnostics)
    codes = sorted({d.code for d in found})
    index = {code: i for i, code in enumerate(codes)}
    rules = [
        {
            "id": code,
            "name": _rule_name(code),
            "shortDescription": {"text": CODES[code][1] if code in CODES else code},
            "defaultConfiguration": {"level": _level(CODES[code][0] if code in CODES else None)},
        }
        for code in codes
    ]
    results = []
    for d in found:
        result: dict[str, Any] = {
            "ruleId": d.code,
            "ruleIndex": index[d.code],
            "level": _level(d.severity),
            "message": {"text": d.message + (f"\n\nhelp: {d.help}" if d.help else "")},
            "locations": [_location(d.file, d.span)],
        }
        if d.related:
            result["relatedLocations"] = [
                {"id": i, **_location(d.file, r.span), "message": {"text": r.message}}
                for i, r in enumerate(d.related)
            ]
        if d.fixes:
            result["fixes"] = [
                {
                    "description": {"text": fix.title},
                    "artifactChanges": [
                        {
                            "artifactLocation": {"uri": _uri(d.file)},
                            "replacements": [
                                {
                                    "deletedRegion": _region(e.span),
                                    "insertedContent": {"text": e.new_text},
                                }
                                for e in fix.edits
                            ],
                        }
                    ],
                }
                for fix in d.fixes
            ]
        results.append(result)
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "flowc",
                        "version": __version__,
                        "rules": rules,
                    }
                },
                "columnKind": "unicodeCodePoints",
                "results": results,
            }
        ],
    }


def render_sarif(diagnostics: Iterable[Diagnostic]) -> str:
    return json.dumps(to_sarif(diagnostics), indent=2, ensure_ascii=False)


def github_annotations(diagnostics: Iterable[Diagnostic]) -> list[str]:
    """`::error file=…,line=…,col=…,title=CODE::message` lines, one per diagnostic."""
    lines = []
    for d in diagnostics:
        command = "error" if d.severity is Severity.ERROR else "warning"
        properties = {
            "file": d.file,
            "line": str(d.span.line),
            "col": str(d.span.column),
            "endLine": str(d.span.end_line),
            "endColumn": str(d.span.end_column),
            "title": d.code,
        }
        props = ",".join(f"{k}={_escape_property(v)}" for k, v in properties.items())
        message = d.message + (f" ({d.help})" if d.help else "")
        lines.append(f"::{command} {props}::{_escape_data(message)}")
    return lines


def _rule_name(code: str) -> str:
    title = CODES[code][1] if code in CODES else code
    words = "".join(c if c.isalnum() else " " for c in title).split()
    return "".join(w[:1].upper() + w[1:] for w in words)


def _level(severity: Severity | None) -> str:
    return "error" if severity is Severity.ERROR else "warning"


def _uri(path: str) -> str:
    return quote(PurePath(path).as_posix())


def _region(span: Span) -> dict[str, int]:
    return {
        "startLine": span.line,
        "startColumn": span.column,
        "endLine": span.end_line,
        "endColumn": max(span.end_column, span.column),
    }


def _location(path: str, span: Span) -> dict[str, Any]:
    return {
        "physicalLocation": {
            "artifactLocation": {"uri": _uri(path)},
            "region": _region(span),
        }
    }


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")
