"""Rewrite the golden IR files (`tests/golden/NAME.json`) from the seed flows in `flows/`.

    python tests/golden/regenerate.py           # rewrite every golden file
    python tests/golden/regenerate.py --check   # only report which ones are out of date

A flow that does not compile cleanly (any error or warning) is reported and gets no golden
file: the goldens are the IR of flows that `flowc check --strict flows/` accepts. Golden files
whose flow no longer exists are removed (or, with --check, reported).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from flowc.compiler.driver import compile_file, print_diagnostics

ROOT = Path(__file__).resolve().parents[2]
FLOWS = ROOT / "flows"
GOLDEN = Path(__file__).resolve().parent


def golden_path(flow_file: Path) -> Path:
    return GOLDEN / f"{flow_file.stem}.json"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--check", action="store_true", help="do not write; exit 1 if a golden file is stale"
    )
    args = parser.parse_args(argv)

    failed = False
    expected: set[Path] = set()
    for flow_file in sorted(FLOWS.glob("*.flow")):
        result = compile_file(flow_file)
        if result.flow is None or result.diagnostics:
            print_diagnostics(result)
            print(f"{flow_file.name}: not clean, golden file left alone", file=sys.stderr)
            failed = True
            continue
        target = golden_path(flow_file)
        expected.add(target)
        text = result.flow.to_json()
        current = target.read_text(encoding="utf-8") if target.exists() else None
        same = current is not None and json.loads(current) == json.loads(text)
        if same:
            continue
        if args.check:
            print(f"{target.relative_to(ROOT)}: out of date", file=sys.stderr)
            failed = True
        else:
            target.write_text(text, encoding="utf-8")
            print(f"wrote {target.relative_to(ROOT)}")
    for stale in sorted(set(GOLDEN.glob("*.json")) - expected):
        if (FLOWS / f"{stale.stem}.flow").exists():
            continue  # its flow failed to compile; reported above
        if args.check:
            print(f"{stale.relative_to(ROOT)}: no flow of that name", file=sys.stderr)
            failed = True
        else:
            stale.unlink()
            print(f"removed {stale.relative_to(ROOT)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
