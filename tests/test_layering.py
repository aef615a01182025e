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


def _runtime_imports_at_run_time() -> dict[str, set[str]]:
    """Each runtime module and the runtime modules it imports when it runs: module level and
    inside functions, not under `if TYPE_CHECKING:` (annotations only)."""
    graph: dict[str, set[str]] = {}
    for path in sorted((ROOT / "runtime").rglob("*.py")):
        rel = path.relative_to(ROOT).with_suffix("")
        parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
        module = "flowc." + ".".join(parts)
        tree = ast.parse(path.read_text(), str(path))
        typing_only = {
            id(n)
            for block in ast.walk(tree)
            if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
            for stmt in block.body
            for n in ast.walk(stmt)
        }
        names: set[str] = set()
        for node in ast.walk(tree):
            if id(node) in typing_only:
                continue
            if isinstance(node, ast.Import):
                names.update(alias.name for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module)
                # `from flowc.runtime import engine` imports the module `engine`
                names.update(f"{node.module}.{alias.name}" for alias in node.names)
        graph[module] = {n for n in names if n.startswith("flowc.runtime")}
    return {m: {n for n in deps if n in graph and n != m} for m, deps in graph.items()}


def test_the_runtime_has_no_import_cycle() -> None:
    # One engine decides a step (engine.py); the loader (flow.py), the step records
    # (steps.py), the generated accelerator (codegen.py), the instance and the machine sit
    # in layers around it, each importing only the layers below.
    import networkx as nx

    graph = nx.DiGraph(
        (module, dep) for module, deps in _runtime_imports_at_run_time().items() for dep in deps
    )
    graph.remove_node("flowc.runtime")  # the package re-exports; nothing inside imports it
    cycles = [c for c in nx.simple_cycles(graph) if len(c) > 1]
    assert cycles == []


def test_the_engine_is_the_one_module_that_takes_steps() -> None:
    # The step paths that were four: the instance holds the state and hands every step to
    # the engine; the generated code calls the instance's general path, never a second one.
    engine = (ROOT / "runtime" / "engine.py").read_text()
    instance = (ROOT / "runtime" / "instance.py").read_text()
    for name in ("def send(", "def take(", "def goto(", "def back(", "def fire_due(", "def start("):
        assert name in engine
    for gone in ("def _take", "def _route", "def _send_chart", ".microstep("):
        assert gone not in instance
