"""Rewrite the diagram golden files (`tests/emit/golden/*.dot`, `*.mmd`, and the IR they are
drawn from as `*.json`) from the sample flows of `tests/emit`.

    python tests/emit/golden/regenerate.py           # rewrite every golden file
    python tests/emit/golden/regenerate.py --check   # only report which ones are out of date

The flat sample (`review`) pins today's drawing of flows without hierarchy byte for byte; the
hierarchical one (`microwave`, IR version 2 built by hand) pins clusters, regions and history.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

GOLDEN = Path(__file__).resolve().parent
ROOT = GOLDEN.parents[2]


def expected() -> dict[str, str]:
    """File name -> content of every golden file."""
    sys.path.insert(0, str(ROOT))
    from flowc.compiler import compile_source
    from flowc.compiler.emit.dot import to_dot
    from flowc.compiler.emit.mermaid import to_mermaid
    from tests.emit.conftest import SAMPLE
    from tests.emit.statechart import microwave

    review = compile_source(SAMPLE, "review.flow").flow
    assert review is not None
    files: dict[str, str] = {}
    for stem, flow in (("review", review), ("microwave", microwave())):
        for labels in ("events", "full"):
            files[f"{stem}.{labels}.dot"] = to_dot(flow, labels=labels).source
            files[f"{stem}.{labels}.mmd"] = to_mermaid(flow, labels=labels)
    files["microwave.json"] = microwave().to_json()
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--check", action="store_true", help="do not write; exit 1 if stale")
    args = parser.parse_args(argv)
    stale = False
    for name, text in expected().items():
        target = GOLDEN / name
        if target.is_file() and target.read_text(encoding="utf-8") == text:
            continue
        if args.check:
            print(f"{target.relative_to(ROOT)}: out of date", file=sys.stderr)
            stale = True
        else:
            target.write_text(text, encoding="utf-8")
            print(f"wrote {target.relative_to(ROOT)}")
    return 1 if stale else 0


if __name__ == "__main__":
    sys.exit(main())
