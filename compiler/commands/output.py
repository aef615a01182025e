"""Where the commands that produce a file (`compile`, `render`, `docs`) write it: `-o FILE`,
with `-` meaning standard output, and a failed write reported in one line, never a traceback."""

from __future__ import annotations

import sys
from pathlib import Path

#: The `-o` value that means standard output, as for most Unix tools.
STDOUT = "-"


class OutputError(Exception):
    """A file could not be written; the message names it and says why, in one line."""


def is_stdout(target: str | None) -> bool:
    return target is None or target == STDOUT


def write_output(target: str | None, data: bytes) -> Path | None:
    """Write `data` to `target` (None or `-`: standard output, binary formats included) and
    return the path written, or None for standard output. Missing parent folders are created.
    Raises OutputError when the file cannot be written."""
    if is_stdout(target):
        try:
            sys.stdout.flush()
            sys.stdout.buffer.write(data)
            sys.stdout.flush()
        except BrokenPipeError:
            raise
        except OSError as exc:
            raise OutputError(f"cannot write to standard output: {_reason(exc)}") from exc
        return None
    assert target is not None
    path = Path(target)
    try:
        if path.is_dir():
            raise IsADirectoryError(21, "it is a folder")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {_reason(exc, path)}") from exc
    return path


def _reason(exc: OSError, path: Path | None = None) -> str:
    reason = exc.strerror or type(exc).__name__
    if isinstance(exc, FileExistsError) and path is not None and Path(exc.filename) != path:
        return f"{exc.filename} is not a folder"
    if exc.filename is not None and path is not None and Path(exc.filename) != path:
        # The trouble is on the way there (a parent that is a file, a folder not allowed).
        return f"{reason}: {exc.filename}"
    return reason


def deliver(command: str, target: str | None, data: bytes, detail: str = "") -> bool:
    """`write_output` for a command's one result: a failed write is reported on stderr as
    `flowc COMMAND: why`, a file written as `wrote PATH` (and ` DETAIL`, when given). Returns
    whether the write worked."""
    try:
        out = write_output(target, data)
    except OutputError as exc:
        print(f"flowc {command}: {exc}", file=sys.stderr)
        return False
    if out is not None:
        print(f"wrote {out} {detail}" if detail else f"wrote {out}", file=sys.stderr)
    return True
