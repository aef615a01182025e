"""Formatter benchmark: `format_source` on the seed flows and on generated flows.

    python bench/format.py [--sizes 100 1000 10000] [--repeat 3]

Prints, per input, the best wall time over --repeat runs of the whole `format_source` call and
of its parts: the parse that decides whether the file may be formatted at all (the compiler's
`parse_source`, the same as `flowc check` does), the formatter's own token scan, the pass over
the grammar's LALR table, the layout, and the re-read of the output that guarantees the tokens
and comments did not change. Generated flows come from bench/compile.py, with a random layout
(the same tokens joined by random whitespace and comments) so that the formatter has work to do.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))

SEPARATORS = (" ", " ", "  ", "\t", "\n", "\n\n\n", "  # a note\n")


def scrambled(text: str, seed: int) -> str:
    from flowc.compiler.lexer import FlowLexer
    from flowc.compiler.parse import flow_parser

    rng = random.Random(seed)
    tokens = FlowLexer(flow_parser().lexer_conf).scan(text)
    return "".join(t.value + rng.choice(SEPARATORS) for t in tokens)


def parts(text: str) -> dict[str, float]:
    import flowc.compiler.format as fmt

    times: dict[str, float] = {}

    def timed(name: str, step: Callable[[], Any]) -> Any:
        start = time.perf_counter()
        value = step()
        times[name] = time.perf_counter() - start
        return value

    parser = fmt.flow_parser()
    scanner = fmt._scanner(parser)
    timed("parse", lambda: fmt.parse_source(text))
    tokens = timed("scan", lambda: list(scanner.scan(text)))
    gaps = fmt._gaps(text, tokens)
    shape = timed("shape", lambda: fmt._shape(tokens, parser))
    out = timed("layout", lambda: fmt._Layout(tokens, gaps, shape).render())
    timed("recheck", lambda: fmt._check_same_reading(scanner, tokens, gaps, out))
    timed("total", lambda: fmt.format_source(text))
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1_000, 10_000])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    from compile import generate

    from flowc.compiler.format import format_source

    format_source("flow warm\ninitial state A\n")  # grammar and table load once per process
    inputs = [(p.name, p.read_text(encoding="utf-8")) for p in sorted(ROOT.glob("flows/*.flow"))]
    inputs += [(f"generated {n} states", scrambled(generate(n), n)) for n in args.sizes]
    columns = ("parse", "scan", "shape", "layout", "recheck", "total")
    print(f"{'input':<28} {'lines':>7}" + "".join(f" {c:>8}" for c in columns) + "  (seconds)")
    for name, text in inputs:
        best: dict[str, float] = {}
        for _ in range(args.repeat):
            for part, seconds in parts(text).items():
                best[part] = min(best.get(part, seconds), seconds)
        lines = text.count("\n")
        print(f"{name:<28} {lines:>7}" + "".join(f" {best[c]:>8.3f}" for c in columns))


if __name__ == "__main__":
    main()
