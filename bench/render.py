"""Lint and render benchmark on generated flows.

    python bench/render.py [--sizes 100 1000 5000] [--lint-only 50000] [--layout-limit 1000]

Each generated flow is a pipeline of N states in sections of ten: every state has a forward
event, a guarded retry back one state and a direct `back` edge to the start of its section;
every tenth state is a choice state that routes on to the next section or round a bounded
loop. It is written as `.flow` text and compiled once; then each step is timed (best of
--repeat): lint (graph + all rules), DOT source, the Graphviz layout to SVG with the real `dot`
(only up to --layout-limit states: `dot`'s layout is superlinear and a 5,000-state drawing is
unreadable anyway), Mermaid text and the Markdown page. --lint-only sizes are linted only.
"""

from __future__ import annotations

import argparse
import shutil
import sys
import time
from collections.abc import Callable

from flowc.compiler import compile_source
from flowc.compiler.emit.dot import render, to_dot
from flowc.compiler.emit.markdown import to_markdown
from flowc.compiler.emit.mermaid import to_mermaid
from flowc.compiler.lint import lint
from flowc.compiler.source import SourceFile
from flowc.runtime.model import CompiledFlow


def generate(states: int) -> str:
    lines = [
        f'flow bench_{states} "Generated flow, {states} states"',
        "context {",
        "  tries: int = 0",
        "  laps: int = 0",
        "}",
        "event next",
        "event retry",
    ]
    last = states - 1
    for i in range(last):
        head = "initial state" if i == 0 else "state"
        section = (i // 10) * 10
        if i % 10 == 9:
            after = f"S{min(i + 1, last)}"
            lines += [
                f"choice state S{i} {{",
                f"  if laps < 2 and tries > 0 -> S{section} do laps += 1",
                f"  else -> {after}",
                "}",
            ]
            continue
        lines += [
            f'{head} S{i} "Step {i}" {{',
            f"  on next -> S{i + 1} do tries = 0",
            f"  on retry if tries < 3 -> S{max(i - 1, 0)} do tries += 1",
        ]
        if i > section:
            lines.append(f"  -> S{section} back")
        lines.append("}")
    lines.append(f'final state S{last} "Done"')
    return "\n".join(lines) + "\n"


def best(repeat: int, fn: Callable[[], object]) -> float:
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return min(times)


def compiled(states: int) -> tuple[CompiledFlow, SourceFile]:
    text = generate(states)
    result = compile_source(text, f"bench_{states}.flow", lint=False)
    if result.flow is None:
        for d in result.diagnostics[:5]:
            print(d, file=sys.stderr)
        raise SystemExit(f"generated flow of {states} states does not compile")
    return result.flow, result.source


COLUMNS = ("states", "rules", "lint", "dot src", "svg", "mermaid", "md")


def measure(n: int, repeat: int, layout: bool) -> str:
    flow, source = compiled(n)
    found = lint(flow, source)
    assert not found, [str(d) for d in found[:3]]
    t_lint = best(repeat, lambda: lint(flow, source))
    t_dot = best(repeat, lambda: to_dot(flow).source)
    if layout:
        t_svg = f"{best(1, lambda: render(to_dot(flow), 'svg')):7.3f}s"
    else:
        t_svg = "skipped" if shutil.which("dot") else "no dot"
    t_mmd = best(repeat, lambda: to_mermaid(flow))
    t_md = best(repeat, lambda: to_markdown(flow))
    return (
        f"{n:>7} {len(flow.transitions):>7} {t_lint:7.3f}s {t_dot:7.3f}s {t_svg:>8} "
        f"{t_mmd:7.3f}s {t_md:7.3f}s"
    )


def measure_lint(n: int, repeat: int) -> str:
    flow, source = compiled(n)
    t_lint = best(repeat, lambda: lint(flow, source))
    return f"{n:>7} {len(flow.transitions):>7} {t_lint:7.3f}s   (lint only)"


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100, 1000, 5000])
    parser.add_argument("--lint-only", type=int, nargs="*", default=[50_000])
    parser.add_argument("--layout-limit", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    has_dot = shutil.which("dot") is not None

    header = " ".join(f"{c:>7}" if i < 2 else f"{c:>8}" for i, c in enumerate(COLUMNS))
    print(header)
    print("-" * len(header))
    for n in args.sizes:
        print(measure(n, args.repeat, has_dot and n <= args.layout_limit), flush=True)
    for n in args.lint_only:
        print(measure_lint(n, args.repeat), flush=True)


if __name__ == "__main__":
    main()
