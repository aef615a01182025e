"""A task run in a forked copy of this process, while this process goes on with other work.

Why: checking a large file, type-checking and lowering-then-linting read the same symbols and
neither reads what the other makes, so on a machine with a second core they can run at once.
`fork` shares the AST and the symbols copy-on-write: nothing is copied up front, and the child
hands back only its result (pickled, through a pipe), which for a check is a short list of
diagnostics.

The answer never depends on the fork: where fork is missing (Windows), where this process runs
other threads (forking those is unsafe), where only one core is ours, or when the child fails in
any way, the task runs here when its result is asked for, as it would have without this module.
"""

from __future__ import annotations

import os
import pickle
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


def usable_cores() -> int:
    """The cores this process may run on (its affinity, where the platform tells it)."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def can_fork() -> bool:
    return hasattr(os, "fork") and threading.active_count() == 1 and usable_cores() > 1


class ForkedTask(Generic[T]):
    """`task` started in a child process at once (when it can be); `result()` waits for it.

    `result()` must be called exactly once: it also reaps the child. The task must not rely on
    side effects in this process (the child's are lost) and its result must pickle."""

    def __init__(self, task: Callable[[], T]) -> None:
        self._task = task
        self._pid = 0
        self._read_fd = -1
        if can_fork():
            self._start()

    @property
    def forked(self) -> bool:
        """Whether the task is running in a child (else `result()` runs it here)."""
        return self._pid != 0

    def _start(self) -> None:
        read_fd, write_fd = os.pipe()
        try:
            pid = os.fork()
        except OSError:  # out of processes or memory: run it here instead
            os.close(read_fd)
            os.close(write_fd)
            return
        if pid == 0:  # pragma: no cover - runs in the child, which coverage does not follow
            self._run_child(read_fd, write_fd)
        os.close(write_fd)
        self._pid = pid
        self._read_fd = read_fd

    def _run_child(self, read_fd: int, write_fd: int) -> None:  # pragma: no cover - the child
        # Whatever happens, the child leaves through `os._exit`: no atexit handlers, no flushing
        # of stdio buffers it inherited (the parent owns that output), no teardown of a heap that
        # the parent still needs.
        try:
            os.close(read_fd)
            try:
                payload = pickle.dumps((True, self._task()), pickle.HIGHEST_PROTOCOL)
            except BaseException:
                payload = pickle.dumps((False, None))  # the parent runs the task itself
            with os.fdopen(write_fd, "wb") as out:
                out.write(payload)
        finally:
            os._exit(0)

    def result(self) -> T:
        if self._pid:
            pid, self._pid = self._pid, 0
            with os.fdopen(self._read_fd, "rb") as pipe:
                payload = pipe.read()
            _, status = os.waitpid(pid, 0)
            if os.waitstatus_to_exitcode(status) == 0 and payload:
                try:
                    done, value = pickle.loads(payload)
                except Exception:
                    done = False
                if done:
                    return value  # type: ignore[no-any-return]
        return self._task()


__all__ = ["ForkedTask", "can_fork", "usable_cores"]
