"""The tree's layers, read from the import statements: the runtime is a library that reads the
IR and imports neither the compiler nor the hosts; the compiler does not reach into the hosts
(the `flowc` program joins the two command lists by module name, in one table)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).parents[1]


def _imports(folder: str) -> dict[str, set[str]]:
    """Each module file under `folder` and the flowc modules it imports (anywhere in it,
    including imports inside functions)."""
    found: dict[str, set[str]] = {}
    for path in sorted((ROOT / folder).rglob("*.py")):
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module)
        found[str(path.relative_to(ROOT))] = {n for n in names if n.startswith("flowc.")}
    return found


def _offending(folder: str, forbidden: tuple[str, ...]) -> dict[str, list[str]]:
    return {
        path: sorted(n for n in names if n.startswith(forbidden))
        for path, names in _imports(folder).items()
        if any(n.startswith(forbidden) for n in names)
    }


def test_the_runtime_imports_neither_the_compiler_nor_the_hosts() -> None:
    # The one exception: `Machine.from_source` (and `from_file` of a .flow file) compiles on
    # demand, importing the compiler inside the call; loading compiled JSON never does
    # (tests/runtime/test_machine.py runs that in a fresh interpreter).
    on_demand = {"runtime/machine.py": ["flowc.compiler"]}
    assert _offending("runtime", ("flowc.compiler", "flowc.hosts")) == on_demand


def test_the_compiler_imports_no_host() -> None:
    assert _offending("compiler", ("flowc.hosts",)) == {}


def test_the_hosts_commands_are_registered_by_the_flowc_program() -> None:
    from flowc.compiler.commands import COMMAND_MODULES

    hosted = {name for name, module in COMMAND_MODULES.items() if module.startswith("flowc.hosts")}
    assert hosted == {"run", "instances", "worker", "inspect", "replay", "mcp"}
    files = {p.stem for p in (ROOT / "hosts" / "commands").glob("*.py")}
    assert hosted <= files
