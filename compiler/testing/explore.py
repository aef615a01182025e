"""`flowc explore`: a bounded breadth-first search of the reachable configurations (state and
context, deduplicated), then seeded random walks past the bound. Reports invariant violations,
deadlocks and rules that never fire, each violation with the move sequence that reproduces it
as a `test` block (the shortest one when the breadth-first part found it)."""

from __future__ import annotations

import random
import time
from dataclasses import dataclass, field

from flowc.compiler.testing.coverage import describe
from flowc.compiler.testing.moves import Move, context_key
from flowc.compiler.testing.paths import Path
from flowc.compiler.testing.space import (
    Explorer,
    Node,
    Search,
    configuration_text,
    leaves_of,
    state_key,
)
from flowc.runtime import Instance
from flowc.runtime.model import CompiledFlow


@dataclass
class Finding:
    kind: str  # "invariant" | "deadlock"
    message: str
    test: Path
    shortest: bool


@dataclass
class ExploreReport:
    flow: CompiledFlow
    search: Search
    findings: list[Finding]
    never_fired: list[int]
    walk_configs: int
    walk_steps: int
    seconds: float
    seed: int
    configs: set[tuple[str, str]] = field(default_factory=set)

    @property
    def rate(self) -> float:
        return len(self.configs) / self.seconds if self.seconds else 0.0

    def text(self) -> str:
        s = self.search
        bound = "complete" if s.complete else "stopped at the bound"
        out = [
            f"explored {self.flow.name}: {len(s.nodes)} configurations breadth-first ({bound}), "
            f"{self.walk_configs} more in {self.walk_steps} random steps (seed {self.seed}); "
            f"{len(self.configs)} in all, {self.rate:.0f} configurations/s",
        ]
        for f in self.findings:
            how = "shortest reproducer" if f.shortest else "reproducer (from a random walk)"
            out += ["", f"{f.kind}: {f.message}", f"{how}:", f.test.text()]
        if self.never_fired:
            out.append("")
            out.append(f"{len(self.never_fired)} rules never fired:")
            for index in self.never_fired:
                out.append(
                    f"  line {self.flow.transitions[index].line}: "
                    f"{describe(self.flow.transitions[index])}"
                )
        if not self.findings:
            out += ["", "no invariant violation, no deadlock found"]
        return "\n".join(out) + "\n"


def explore(
    flow: CompiledFlow,
    *,
    max_configs: int = 2000,
    max_depth: int = 20,
    walks: int = 100,
    walk_length: int = 30,
    seed: int = 0,
) -> ExploreReport:
    started = time.perf_counter()
    explorer = Explorer(flow)
    search = explorer.search(max_configs=max_configs, max_depth=max_depth)
    findings: list[Finding] = []
    fired = set(search.transitions)
    configs = set(search.nodes)
    violated: set[tuple[str, ...]] = set()
    for node, broken in search.violations:  # breadth-first order: the first is the shortest
        if tuple(sorted(broken)) not in violated:
            violated.add(tuple(sorted(broken)))
            findings.append(_violation(flow, node.moves(), broken, node.instance, shortest=True))
    for node in search.stuck:
        findings.append(
            Finding(
                "deadlock",
                f"in {_where(node.instance)} no move is accepted (none of the events, "
                "targets or timers tried)",
                _test(f"deadlock in {node.where}", node.moves(), node.instance, flow),
                True,
            )
        )
    walk_configs = walk_steps = 0
    rng = random.Random(seed)
    bad = {id(node) for node, _ in search.violations}
    frontier = [n for n in search.nodes.values() if id(n) not in bad]
    for _ in range(walks if frontier else 0):
        start: Node = rng.choice(frontier)
        instance = explorer.clone(start.instance)
        moves = start.moves()
        for _ in range(walk_length):
            options = list(explorer.moves(instance))
            if not options:
                break
            move = rng.choice(options)
            result = explorer.play(instance, move)
            walk_steps += 1
            fired.update(result.fired)
            if result.rejection is not None:
                continue
            moves.append(move)
            key = (state_key(instance), context_key(instance.context))
            if key not in configs:
                configs.add(key)
                walk_configs += 1
            broken = explorer.player.broken_invariants(instance)
            if broken and tuple(sorted(broken)) not in violated:
                violated.add(tuple(sorted(broken)))
                findings.append(_violation(flow, list(moves), broken, instance, shortest=False))
                break
    never = [t.index for t in flow.transitions if t.index not in fired]
    return ExploreReport(
        flow,
        search,
        findings,
        never,
        walk_configs,
        walk_steps,
        time.perf_counter() - started,
        seed,
        configs,
    )


def _violation(
    flow: CompiledFlow, moves: list[Move], broken: list[str], instance: Instance, *, shortest: bool
) -> Finding:
    names = ", ".join(f"`{n}`" for n in broken)
    return Finding(
        "invariant",
        f"invariant {names} broken in {_where(instance)} after {len(moves)} moves",
        _test(f"breaks {', '.join(broken)}", moves, instance, flow),
        shortest,
    )


def _where(instance: Instance) -> str:
    """`state X`, or for a statechart `configuration A.B + C.D` (its active leaves)."""
    if instance._config is None:
        return f"state {instance.state}"
    return f"configuration {configuration_text(instance)}"


def _test(name: str, moves: list[Move], instance: Instance, flow: CompiledFlow) -> Path:
    leaves = leaves_of(flow, instance.configuration)
    return Path(name, [], [m.text() for m in moves] + [f"expect state {s}" for s in leaves])
