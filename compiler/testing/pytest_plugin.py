"""A pytest plugin (entry point `flowc`) that collects the `test` blocks of `.flow` files as
test items, beside Python tests.

Off unless asked for, so that installing flowc never changes what an unrelated pytest run
collects: pass `--flow-tests`, or set `flow_tests = true` in the pytest ini options. A file that
does not compile is one failing item showing its diagnostics.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from flowc.compiler import ast
    from flowc.compiler.driver import CompileResult
    from flowc.compiler.testing.runner import FileTests


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("flowc")
    group.addoption(
        "--flow-tests",
        action="store_true",
        default=False,
        help="collect the test blocks of .flow files (flowc)",
    )
    parser.addini("flow_tests", type="bool", default=False, help="collect .flow test blocks")


def _enabled(config: pytest.Config) -> bool:
    return bool(config.getoption("flow_tests") or config.getini("flow_tests"))


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> pytest.Collector | None:
    if file_path.suffix == ".flow" and _enabled(parent.config):
        return FlowFile.from_parent(parent, path=file_path)
    return None


class FlowFile(pytest.File):
    def collect(self) -> Iterator[pytest.Item]:
        from flowc.compiler.driver import compile_file
        from flowc.compiler.testing.runner import FileTests

        result = compile_file(self.path)
        if not result.ok or result.symbols is None:
            yield FlowCompileItem.from_parent(self, name="compile", result=result)
            return
        tests = FileTests(result)
        for test in tests.tests:
            yield FlowTestItem.from_parent(self, name=test.name.value, tests=tests, test=test)


class FlowTestFailed(Exception):
    pass


class FlowTestItem(pytest.Item):
    def __init__(self, *, tests: FileTests, test: ast.TestDecl, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.tests = tests
        self.test = test

    def runtest(self) -> None:
        outcome = self.tests.run(self.test)
        if outcome.failure is not None:
            raise FlowTestFailed(outcome.failure)

    def repr_failure(self, excinfo: Any, style: Any = None) -> str:
        if isinstance(excinfo.value, FlowTestFailed):
            failure = excinfo.value.args[0]
            span = failure.span
            line = Path(self.tests.path).read_text(encoding="utf-8").splitlines()[span.line - 1]
            caret = " " * (span.column - 1) + "^" * max(1, span.end_column - span.column)
            return (
                f"{self.tests.path}:{span.line}:{span.column}: {failure.message}\n"
                f"    {line}\n    {caret}"
            )
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, self.test.span.line - 1, f"flow test: {self.name}"


class FlowCompileItem(pytest.Item):
    def __init__(self, *, result: CompileResult, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.result = result

    def runtest(self) -> None:
        raise FlowTestFailed("\n".join(str(d) for d in self.result.errors) or "no flow produced")

    def repr_failure(self, excinfo: Any, style: Any = None) -> str:
        return f"{self.path} does not compile:\n{excinfo.value}"

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, "flow compile"
