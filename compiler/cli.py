"""The `flowc` command: compile, lint, render, run and inspect flows.

Exit codes, for every sub-command: 0 success, 1 the input has errors (or a run was rejected),
2 usage error (bad flags, missing file), 130 interrupted.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from flowc.compiler.commands import COMMAND_MODULES
from flowc.runtime import __version__

EXIT_OK = 0
EXIT_FAILURE = 1
EXIT_USAGE = 2


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="flowc",
        description="Compile, lint, render and run .flow workflow definitions.",
        epilog="Run `flowc COMMAND --help` for a command's options. Docs: docs/ in the repository.",
    )
    parser.add_argument("--version", action="version", version=f"flowc {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES:
        module = importlib.import_module(f"flowc.compiler.commands.{name}")
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        code: int = args.handler(args)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `flowc ... | head`
        return EXIT_OK
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
