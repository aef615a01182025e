"""`compile_source(parallel=True)`, as `flowc check` runs it: a large file is type-checked in a
forked child while the parent lowers and lints. Whatever happens in the child, the result is
the sequential compile's."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from flowc.compiler import driver
from flowc.compiler.driver import CompileResult, compile_source
from flowc.compiler.forked_task import ForkedTask

CLEAN_WITH_WARNINGS = """\
flow f
context { n: int = 0, unused_field: int = 0 }
event go(k: int)
event never_sent
initial state A {
  on go if event.k > 1 and n < 3 -> B do n += 1
  on go -> A
  on go -> B
}
state B { on go -> C }
final state C
"""

ILL_TYPED = """\
flow f
context { n: int = 0 }
event go
initial state A {
  on go if active(Nope) -> B
  on go if n > "x" -> B do n = "s"
}
final state B
"""


def _summary(result: CompileResult) -> tuple[list[str], str | None]:
    diagnostics = [
        f"{d.code}:{d.span.line}:{d.span.column}:{d.message}:{d.help}" for d in result.diagnostics
    ]
    return diagnostics, result.flow.to_json() if result.flow is not None else None


@pytest.fixture
def every_file_forks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(driver, "FORK_MIN_CHARS", 0)


@pytest.mark.usefixtures("every_file_forks")
@pytest.mark.parametrize("text", [CLEAN_WITH_WARNINGS, ILL_TYPED], ids=["clean", "ill-typed"])
def test_parallel_compile_reports_what_the_sequential_one_does(text: str) -> None:
    sequential = compile_source(text, "f.flow", hashed=False)
    parallel = compile_source(text, "f.flow", hashed=False, parallel=True)
    assert _summary(parallel) == _summary(sequential)
    assert sequential.diagnostics  # the cases are not trivially equal


@pytest.mark.usefixtures("every_file_forks")
def test_ill_typed_flow_reports_type_errors_not_the_crash_of_lowering_it() -> None:
    # `active(Nope)` makes lowering raise (no such state); the type check reports it, and that
    # is all that is reported, although lowering ran beside the type check.
    result = compile_source(ILL_TYPED, "f.flow", parallel=True)
    assert [d.code for d in result.diagnostics] == ["E104", "E201", "E202"]
    assert result.flow is None and result.where is None


@pytest.mark.usefixtures("every_file_forks")
def test_parallel_compile_of_a_seed_flow_matches() -> None:
    path = Path(__file__).parents[2] / "flows" / "collab_skills.flow"
    text = path.read_text(encoding="utf-8")
    assert _summary(compile_source(text, str(path), parallel=True)) == _summary(
        compile_source(text, str(path))
    )


def test_small_files_are_not_forked(monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[object] = []
    monkeypatch.setattr(driver, "ForkedTask", lambda task: started.append(task) or task)
    compile_source(CLEAN_WITH_WARNINGS, "f.flow", parallel=True)
    assert started == []
    monkeypatch.setattr(driver, "FORK_MIN_CHARS", 0)
    monkeypatch.setattr(driver, "ForkedTask", _Inline)
    result = compile_source(CLEAN_WITH_WARNINGS, "f.flow", parallel=True)
    assert _Inline.started == 1 and result.flow is not None


class _Inline:
    """ForkedTask's interface, run in this process: counts the tasks handed to it."""

    started = 0

    def __init__(self, task: object) -> None:
        type(self).started += 1
        self.task = task

    def result(self) -> object:
        return self.task()  # type: ignore[operator]


def test_forked_task_falls_back_to_running_here_when_it_cannot_fork(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("flowc.compiler.forked_task.can_fork", lambda: False)
    task = ForkedTask(lambda: os.getpid())
    assert not task.forked
    assert task.result() == os.getpid()


def _run_fresh(code: str) -> dict[str, object]:
    """`code` in a new interpreter (no threads, so fork is allowed); it prints one JSON object."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    return json.loads(done.stdout)  # type: ignore[no-any-return]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is POSIX only")
def test_forked_task_runs_in_a_child_and_survives_a_child_that_fails() -> None:
    found = _run_fresh(
        """
        import json, os
        from flowc.compiler import forked_task
        forked_task.usable_cores = lambda: 2  # a one-core machine would not fork
        parent = os.getpid()
        plain = forked_task.ForkedTask(lambda: os.getpid())
        def fails_in_the_child():
            if os.getpid() != parent:
                raise RuntimeError("only in the child")
            return "ran here"
        failing = forked_task.ForkedTask(fails_in_the_child)
        dying = forked_task.ForkedTask(
            lambda: os._exit(3) if os.getpid() != parent else "ran here too"
        )
        print(json.dumps({
            "forked": [plain.forked, failing.forked, dying.forked],
            "child_pid": plain.result(), "parent": parent,
            "failing": failing.result(),
            "dying": dying.result(),
        }))
        """
    )
    assert found["forked"] == [True, True, True]
    assert found["child_pid"] != found["parent"]
    assert found["failing"] == "ran here"
    assert found["dying"] == "ran here too"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is POSIX only")
def test_flowc_check_forks_on_a_large_file_and_reports_as_the_sequential_compile(
    tmp_path: Path,
) -> None:
    path = tmp_path / "f.flow"
    path.write_text(ILL_TYPED, encoding="utf-8")
    found = _run_fresh(
        f"""
        import json
        from flowc.compiler import driver, forked_task
        forked_task.usable_cores = lambda: 2
        driver.FORK_MIN_CHARS = 0
        forks = []
        class Counted(forked_task.ForkedTask):
            def __init__(self, task):
                super().__init__(task)
                forks.append(self.forked)
        driver.ForkedTask = Counted
        parallel = driver.compile_file({str(path)!r}, parallel=True)
        sequential = driver.compile_file({str(path)!r})
        print(json.dumps({{
            "forks": forks,
            "parallel": [d.code for d in parallel.diagnostics],
            "sequential": [d.code for d in sequential.diagnostics],
        }}))
        """
    )
    assert found["forks"] == [True]
    assert found["parallel"] == found["sequential"] == ["E104", "E201", "E202"]


@pytest.mark.usefixtures("every_file_forks")
def test_flowc_compile_writes_what_the_sequential_compile_makes(tmp_path: Path) -> None:
    from flowc.compiler.cli import main

    source = Path(__file__).parents[2] / "flows" / "attempt_v2.flow"
    out = tmp_path / "out.json"
    assert main(["compile", str(source), "-o", str(out)]) == 0
    sequential = compile_source(source.read_text(encoding="utf-8"), str(source))
    assert sequential.flow is not None
    assert out.read_text(encoding="utf-8") == sequential.flow.to_json()
