"""The `flowc` command: compile, lint, render, run and inspect flows.

Exit codes, for every sub-command: 0 success, 1 the input has errors (or a run was rejected),
2 usage error (bad flags, missing file), 130 interrupted.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any, TextIO

from flowc.compiler.commands import COMMAND_MODULES, EXIT_FAILURE
from flowc.runtime import __version__


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


class _ClosedPipe:
    """Standard output that survives its reader going away (`flowc ... | head`): once a write
    or flush meets a broken pipe, file descriptor 1 is pointed at /dev/null (as the Python docs
    advise, so the interpreter's last flush cannot fail either) and the rest of the output is
    dropped. The command runs on to the end, so its exit status stays its own: a failure piped
    into `true` is still a failure."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self.closed_pipe = False

    def _lost(self) -> None:
        self.closed_pipe = True
        try:
            fd = self._stream.fileno()
        except (AttributeError, OSError, ValueError):  # not a real file (a test's capture)
            return
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, fd)
        os.close(devnull)

    def write(self, data: Any) -> int:
        if not self.closed_pipe:
            try:
                return int(self._stream.write(data))
            except BrokenPipeError:
                self._lost()
        return len(data)

    def flush(self) -> None:
        # A command may close standard output itself (the language server does on `exit`).
        if not self.closed_pipe and not getattr(self._stream, "closed", False):
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._lost()

    @property
    def buffer(self) -> _ClosedPipe:
        # Binary output (`flowc render` of a PNG) goes through the same guard.
        inner = getattr(self._stream, "buffer", None)
        if inner is None:
            raise AttributeError("buffer")
        guarded = _ClosedPipe(inner)
        guarded.closed_pipe = self.closed_pipe
        return guarded

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    stdout: TextIO = sys.stdout
    guarded = _ClosedPipe(stdout)
    sys.stdout = guarded
    try:
        code: int = args.handler(args)
        guarded.flush()
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # A write that bypassed the guard: the command did not finish, so it did not succeed.
        guarded._lost()
        return EXIT_FAILURE
    finally:
        sys.stdout = stdout
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
