"""Compile time and peak memory of pathological sources (issue: hardening, compiler half).

    python bench/hostile.py [--timeout 120] [--only NAME ...]

Each case is compiled in a fresh process (so peak memory is its own, and a case that never
finishes is cut off at --timeout). Prints, per case, the wall time of `compile_file`, the peak
resident memory of the process, and the diagnostic codes it ended with. The parser is built
before the clock starts (about 0.7 s, paid once per process).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path


def _typo() -> str:
    name = "s" + "a" * 10_000
    return f"flow t\nevent go\ninitial state {name} {{ on go -> {name[:-1]}b }}\n"


def _targets() -> str:
    lines = ["flow t", "event go", "initial state s0 { on go -> s1 }"]
    lines += [f"state s{i} {{ on go -> x{i} }}" for i in range(1, 2000)]
    return "\n".join(lines) + "\n"


def _message(template: str) -> str:
    return f'flow t\nevent go\ninitial state A {{ on go reject x "{template}" }}\n'


CASES: dict[str, Callable[[], str] | str] = {
    "10k-character typo": _typo,
    "2,000 unknown targets": _targets,
    "100k `{`": lambda: "flow t\n" + "{" * 100_000 + "\n",
    "10 MB title": lambda: 'flow t "' + "x" * 10_000_000 + '"\ninitial state A\n',
    "4,301-digit integer": lambda: "flow t\ncontext { n: int = " + "9" * 4301 + " }\n",
    "template 9**(9**9)": lambda: _message("{{ 9**(9**9) }}"),
    "template 'a'*10**9": lambda: _message("{{ 'a'*10**9 }}"),
    "/dev/zero": "/dev/zero",
}

_CHILD = """
import json, resource, sys, time
from flowc.compiler import compile_file, compile_source
compile_source("flow warm\\ninitial state A\\n")  # builds the parser: not the case's cost
started = time.perf_counter()
result = compile_file(sys.argv[1])
seconds = time.perf_counter() - started
peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
codes = sorted({d.code for d in result.diagnostics})
print(json.dumps({"seconds": seconds, "peak_mb": peak_kb / 1024, "codes": codes}))
"""


def run(name: str, source: Callable[[], str] | str, timeout: float, folder: Path) -> str:
    if isinstance(source, str):
        path = Path(source)
    else:
        path = folder / "case.flow"
        path.write_text(source(), encoding="utf-8")
    try:
        done = subprocess.run(
            [sys.executable, "-c", _CHILD, str(path)],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return f"{name:<24} did not finish in {timeout:.0f} s"
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["?"])[-1]
        return f"{name:<24} failed: {last[:80]}"
    figures = json.loads(done.stdout)
    codes = ",".join(figures["codes"]) or "-"
    return (
        f"{name:<24} {figures['seconds']:8.2f} s {figures['peak_mb']:9.0f} MB peak   codes: {codes}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--timeout", type=float, default=120)
    parser.add_argument("--only", nargs="*", help="run only cases whose name contains one of these")
    args = parser.parse_args()
    print(f"{'case':<24} {'compile':>10} {'memory':>14}")
    with tempfile.TemporaryDirectory() as folder:
        for name, source in CASES.items():
            if args.only and not any(part in name for part in args.only):
                continue
            print(run(name, source, args.timeout, Path(folder)), flush=True)


if __name__ == "__main__":
    main()
