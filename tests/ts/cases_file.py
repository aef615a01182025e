"""Writing a generated cases file (the make_*_cases.py scripts): one place for where and how."""

from __future__ import annotations

from pathlib import Path


def write_cases(out: Path, text: str) -> int:
    """Write `text` (a JSON document ending in a newline) to `out`, making its folder; the
    script's exit status."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(text, encoding="utf-8")
    return 0
