"""Child flows: finding and compiling the flows a file's states invoke.

`invoke payment(...)` names a flow: one passed to the compiler by name (`flows=`), else the
file `payment.flow` beside the invoking file. Each child is compiled on its own (its own
diagnostics, summarised in one at the invoke when it has errors) before the parent is
resolved, so the parent's checks can read its context, events and done data; a chain of
invokes that comes back to a flow being compiled is a cycle (E141).
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from flowc.compiler import ast
from flowc.compiler.diagnostics import Diagnostic, Severity
from flowc.compiler.resolve import ChildFlow, suggest

if TYPE_CHECKING:
    from flowc.compiler.driver import CompileResult

#: The flows a state may invoke by name: a name to its source text, or to its file's path.
Flows = Mapping[str, "str | os.PathLike[str]"]

FLOW_SUFFIX = ".flow"

#: The flows being compiled, outermost first (a flow invoking one of them is a cycle).
_chain: ContextVar[tuple[str, ...]] = ContextVar("flowc_invoke_chain", default=())


@dataclass(frozen=True)
class _Found:
    """Where a child's source is: its text and the path it is reported against."""

    text: str | bytes
    path: str


def invoked(module: ast.Module) -> Iterator[ast.Invoke]:
    """Every `invoke` of the module, in document order."""
    stack = [d for d in reversed(module.decls) if isinstance(d, ast.StateDecl)]
    while stack:
        state = stack.pop()
        yield from state.invokes
        stack.extend(reversed(state.child_states))


def _shown_name(module: ast.Module, path: str) -> str:
    for decl in module.decls:
        if isinstance(decl, ast.FlowDecl):
            return decl.name.name
    return Path(path).name


def own_name(module: ast.Module, path: str) -> set[str]:
    """The names a flow is known by: its `flow NAME` and its file's stem."""
    names = {d.name.name for d in module.decls if isinstance(d, ast.FlowDecl)}
    if path.endswith(FLOW_SUFFIX):
        names.add(Path(path).name[: -len(FLOW_SUFFIX)])
    return names


def compile_children(
    module: ast.Module, path: str, flows: Flows
) -> tuple[dict[str, ChildFlow], list[Diagnostic]]:
    """The flows the module invokes that compile, by name, and what is wrong with the others
    (each reported at the first invoke naming it)."""
    children: dict[str, ChildFlow] = {}
    found: list[Diagnostic] = []
    seen: set[str] = set()
    names = own_name(module, path)
    chain = _chain.get() or (_shown_name(module, path),)
    for invoke in invoked(module):
        name = invoke.flow.name
        if name in seen:
            continue
        seen.add(name)
        if name in chain or name in names:
            cycle = " -> ".join((*chain[-3:], name))
            found.append(
                Diagnostic.make(
                    "E141",
                    f"flow `{name}` is invoked by itself, directly or not ({cycle})",
                    invoke.flow.span,
                    help="a chain of invokes must end: a flow cannot be its own child, "
                    "directly or not",
                )
            )
            continue
        source = _find(name, path, flows)
        if source is None:
            found.append(_unknown(invoke.flow, path, flows))
            continue
        token = _chain.set((*chain, name))
        try:
            compiled = _compile(source, flows)
        finally:
            _chain.reset(token)
        if compiled.symbols is None or compiled.flow is None or compiled.errors:
            found.append(_broken(invoke.flow, compiled))
            continue
        children[name] = ChildFlow(name, compiled.symbols, compiled.flow)
    return children, found


def _compile(source: _Found, flows: Flows) -> CompileResult:
    from flowc.compiler.driver import compile_source

    return compile_source(source.text, source.path, lint=False, flows=flows)


def _find(name: str, path: str, flows: Flows) -> _Found | None:
    given = flows.get(name)
    if isinstance(given, str):
        return _Found(given, f"{name}{FLOW_SUFFIX}")
    if given is not None:
        return _read(Path(given))
    beside = _directory(path)
    if beside is None:
        return None
    return _read(beside / f"{name}{FLOW_SUFFIX}")


def _read(file: Path) -> _Found | None:
    try:
        return _Found(file.read_bytes(), str(file))
    except OSError:
        return None


def _directory(path: str) -> Path | None:
    """The directory of the invoking file (None when it was not read from a file)."""
    if path.startswith("<"):
        return None
    return Path(path).parent


def _candidates(path: str, flows: Flows) -> list[str]:
    names = list(flows)
    beside = _directory(path)
    if beside is not None:
        with contextlib.suppress(OSError):
            names += sorted(p.name[: -len(FLOW_SUFFIX)] for p in beside.glob(f"*{FLOW_SUFFIX}"))
    return names


def _unknown(flow: ast.Ident, path: str, flows: Flows) -> Diagnostic:
    beside = _directory(path)
    where = f"`{flow.name}{FLOW_SUFFIX}` beside this file" if beside is not None else "a file"
    return Diagnostic.make(
        "E140",
        f"unknown flow `{flow.name}`",
        flow.span,
        help=suggest(flow.name, _candidates(path, flows))
        or f"a child flow is {where}, or one passed to the compiler by name",
    )


def _broken(flow: ast.Ident, compiled: CompileResult) -> Diagnostic:
    errors = [d for d in compiled.diagnostics if d.severity is Severity.ERROR]
    first = errors[0] if errors else None
    where = compiled.source.path
    if first is not None:
        where += f":{first.span.line}:{first.span.column}: {first.code} {first.message}"
    more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
    return Diagnostic.make(
        "E142",
        f"flow `{flow.name}` does not compile: {where}{more}",
        flow.span,
        help=f"run `flowc check {compiled.source.path}` for every error of the child flow",
    )
