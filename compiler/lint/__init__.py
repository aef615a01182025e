"""Graph lint: analyses of a compiled flow's transition graph (codes W301–W323, E304), and the
check of `# flowc: allow` comments (W313).

Runs only on the IR of a flow that compiled without errors. The graph is built once
(`FlowGraph`) and every rule is a small function of it; `docs/diagnostics.md` documents each
code with an example. Everything is linear (or nearly) in the size of the graph, so a flow of
50,000 states lints in about a second.
"""

from __future__ import annotations

import dataclasses
import gc
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager

from flowc.compiler.diagnostics import Diagnostic
from flowc.compiler.lint import agents, cycles, reach, regions, templates, transitions, usage
from flowc.compiler.lint.graph import FlowGraph
from flowc.compiler.lint.suppress import apply as apply_suppressions
from flowc.compiler.lint.suppress import codes_naming_no_warning
from flowc.compiler.source import SourceFile
from flowc.compiler.sourcemap import SourceMap
from flowc.runtime.model import CompiledFlow

Rule = Callable[[FlowGraph], Iterable[Diagnostic]]

#: code -> rule. One function per code, except W305/W306 which share the shadowing analysis.
RULES: dict[str, Rule] = {
    "W301": reach.unreachable_states,
    "W302": reach.dead_ends,
    "W303": reach.cannot_finish,
    "E304": cycles.routing_cycles,
    "W305+W306": transitions.shadowed_transitions,
    "W307": cycles.back_edges_not_back,
    "W308": cycles.unbounded_loops,
    "W309": transitions.constant_guards,
    "W310": usage.unused_events,
    "W311": usage.unused_enums,
    "W312": usage.unused_context_fields,
    "W314": reach.unreachable_descendants,
    "W315": regions.never_completes,
    "W316": regions.shared_writes,
    "W317": cycles.raise_loops,
    "W318": transitions.inherited_never_fire,
    "W319": transitions.starved_timers,
    "W320": agents.hidden_fields_shown,
    "W321": agents.required_fields_no_tool_sets,
    "W322": templates.templates_python_only,
    "W323": usage.unsent_internal_events,
}


def lint(
    flow: CompiledFlow, source: SourceFile, where: SourceMap | None = None
) -> list[Diagnostic]:
    """Every graph diagnostic for `flow`, minus warnings silenced in `source`, by position.

    `where` is the source map lowering made; without one (an IR loaded or built by hand) only
    the positions the IR itself keeps are known."""
    found: list[Diagnostic] = []
    with _collector_paused():
        graph = FlowGraph(flow, source, where if where is not None else SourceMap.from_ir(flow))
        for rule in RULES.values():
            found.extend(rule(graph))
    found.extend(codes_naming_no_warning(source))
    kept = apply_suppressions(found, source)
    return sorted((dataclasses.replace(d, file=source.path) for d in kept), key=Diagnostic.sort_key)


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Lint makes many small containers and no reference cycles; on a big flow the cyclic
    collector would otherwise rescan the whole IR again and again (a third of the run time)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


__all__ = ["RULES", "FlowGraph", "lint"]
