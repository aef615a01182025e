"""`--watch` for `flowc check` and `flowc render`: run once, then again each time an input file
is saved, until interrupted (watchfiles, the `watch` extra).

Directories are watched rather than the files themselves: editors save by writing a new file
and renaming it over the old one, which a watch on the old file would not survive.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from pathlib import Path

from flowc.compiler.commands import EXIT_FAILURE, EXIT_USAGE
from flowc.compiler.driver import FLOW_SUFFIX


def rerun_on_change(paths: Iterable[Path], once: Callable[[], int], *, command: str) -> int:
    """Run `once`, then again after every change to one of `paths` (for a directory: to a
    `.flow` file below it). Returns the last run's exit status when interrupted."""
    try:
        from watchfiles import watch
    except ImportError:
        print(
            f"flowc {command}: --watch needs the `watch` extra: pip install 'flowc[watch]'",
            file=sys.stderr,
        )
        return EXIT_FAILURE
    given = [p.resolve() for p in paths]
    files = {p for p in given if not p.is_dir()}
    dirs = [p for p in given if p.is_dir()]
    roots = sorted({*dirs, *(p.parent for p in files)})

    def wanted(_change: object, raw: str) -> bool:
        path = Path(raw)
        if path in files:
            return True
        return path.suffix == FLOW_SUFFIX and any(path.is_relative_to(d) for d in dirs)

    status = _run(once)
    if status == EXIT_USAGE:  # a missing file or a bad option: saving a file will not mend it
        return status
    print(f"flowc {command}: watching for changes; Ctrl-C to stop", file=sys.stderr, flush=True)
    try:
        for changes in watch(*roots, watch_filter=wanted, debounce=200, step=50):
            names = ", ".join(sorted({Path(p).name for _, p in changes}))
            print(f"flowc {command}: {names} changed", file=sys.stderr, flush=True)
            status = _run(once)
    except KeyboardInterrupt:
        pass
    return status


def _run(once: Callable[[], int]) -> int:
    status = once()
    sys.stdout.flush()
    sys.stderr.flush()
    return status
