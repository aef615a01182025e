"""The `flowc` command: compile, lint, render, run and inspect flows.

Exit codes, for every sub-command: 0 success, 1 the input has errors (or a run was rejected),
2 usage error (bad flags, missing file), 130 interrupted.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import os
import sys
from collections.abc import Sequence
from typing import Any, NoReturn, TextIO

from flowc.compiler.commands import COMMAND_MODULES, EXIT_FAILURE
from flowc.runtime import __version__


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The `flowc` parser with every sub-command; with `command`, the name of a module of
    `COMMAND_MODULES`, with only that one (see `_parser_for`)."""
    parser = argparse.ArgumentParser(
        prog="flowc",
        description="Compile, lint, render and run .flow workflow definitions.",
        epilog="Run `flowc COMMAND --help` for a command's options. Docs: docs/ in the repository.",
    )
    parser.add_argument("--version", action="version", version=f"flowc {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES if command is None else (command,):
        module = importlib.import_module(COMMAND_MODULES[name])
        module.register(sub)
    return parser


def _parser_for(argv: Sequence[str]) -> argparse.ArgumentParser:
    """A parser that reads `argv` as the full one does. Importing every sub-command's module
    (the store, the runtime, the language server...) is a quarter of a second, a good part of a
    short `flowc check`: when the first argument names a sub-command whose module has that name,
    only that module is loaded. Anything else (`--help`, a typo, a sub-command whose module is
    named otherwise) gets the full parser, and with it the full help and error messages."""
    first = argv[0] if argv else ""
    if first in COMMAND_MODULES:
        parser = build_parser(first)
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        if first in sub.choices:
            return parser
    return build_parser()


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
    argv = sys.argv[1:] if argv is None else argv
    args = _parser_for(argv).parse_args(argv)
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


#: What a command built and need not free (see `leave_for_exit`); a list only while `flowc`
#: runs as a program (`entry`).
_left_for_exit: list[object] | None = None


def leave_for_exit(built: object) -> None:
    """Keep `built` (the results of a large compile) alive until the process ends, when `flowc`
    runs as a program: freeing a 10,000-state flow's AST and IR one object at a time takes a
    tenth of a second, then the interpreter's own teardown as much again, all for nothing. The
    process then leaves by `os._exit` once its output is flushed. In-process callers (tests, the
    language server) are unaffected; a second call replaces the first, so a command that runs
    again and again (`check --watch`) keeps only its last results."""
    if _left_for_exit is not None:
        _left_for_exit[:] = [built]
        # Out of the cyclic collector's sight: the commands pause it while they compile, and
        # the first collection after they turn it back on would walk every object kept here
        # (half a second for 10,000 states), to free none of them.
        gc.freeze()


def entry() -> NoReturn:
    """The `flowc` program: `main` on the command line, then exit with its status; without the
    interpreter's teardown when a command left its results for the exit (no command that does
    runs threads or `atexit` hooks that must finish)."""
    global _left_for_exit
    _left_for_exit = []
    code = main()
    if _left_for_exit:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except (BrokenPipeError, ValueError):  # the reader left, or a stream was closed
            pass
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":  # pragma: no cover
    # `python -m flowc.compiler.cli`: run the module imported by its name, the one commands
    # import (`leave_for_exit`), not this copy of it running as `__main__`.
    from flowc.compiler.cli import entry as module_entry

    module_entry()
