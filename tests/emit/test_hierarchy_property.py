"""Properties of hierarchical diagrams over random state trees and random rules.

- Graphviz: every arrow clipped at a box border (`ltail`/`lhead`) can be clipped, and no node
  is pulled into a box it does not belong to; `dot` says so with "... inside ... cluster"
  warnings, so the property is that `dot` draws the graph and never warns about a cluster.
- Mermaid: Mermaid moves a state into the composite where an arrow names it (except at the top
  level), so every state must be declared in its parent's block and an arrow inside a block may
  only name states declared directly in that block (checked against Mermaid's own parser while
  this was written; the property keeps the text to that rule).
"""

from __future__ import annotations

import random
import re
import shutil
import subprocess

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from flowc.compiler.emit.dot import to_dot
from flowc.compiler.emit.hierarchy import StateTree, is_hierarchical
from flowc.compiler.emit.mermaid import state_ids, to_mermaid
from flowc.runtime.model import CompiledFlow, State, Transition

needs_dot = pytest.mark.skipif(shutil.which("dot") is None, reason="Graphviz not installed")


def random_flow(seed: int) -> CompiledFlow:
    """Up to four levels of compound and parallel states, with history, final and choice
    states, dotted names, and rules between any two states (any kind of rule)."""
    rng = random.Random(seed)
    states: list[State] = []
    count = 0

    def level(parent: str | None, depth: int, in_parallel: bool) -> None:
        nonlocal count
        for i in range(rng.randint(1, 3) if parent else rng.randint(2, 4)):
            count += 1
            name = f"{parent}.X{i}" if parent and rng.random() < 0.3 else f"S{count}"
            roll = rng.random()
            kind = "normal"
            if depth < 3 and roll < 0.3:
                kind = "compound"
            elif depth < 3 and roll < 0.45:
                kind = "parallel"
            elif parent and not in_parallel and roll < 0.55:
                kind = "history"
            elif not in_parallel and roll < 0.65:
                kind = "final"
            elif not in_parallel and roll < 0.7:
                kind = "choice"
            states.append(
                State(
                    name=name,
                    kind=kind,  # type: ignore[arg-type]
                    parent=parent,
                    initial=i == 0 and not in_parallel and kind != "history",
                    history=rng.choice(["shallow", "deep"]) if kind == "history" else None,
                )
            )
            if kind in ("compound", "parallel"):
                level(name, depth + 1, kind == "parallel")

    level(None, 0, False)
    names = [s.name for s in states]
    states = [
        s.model_copy(update={"default": rng.choice(names)})
        if s.kind == "history" and rng.random() < 0.5
        else s
        for s in states
    ]
    rules = []
    for i in range(rng.randint(3, 15)):
        kind = rng.choice(["event", "always", "timer"])
        rules.append(
            Transition(
                index=i,
                source=rng.choice(names),
                target=rng.choice(names),
                kind=kind,  # type: ignore[arg-type]
                event="e" if kind == "event" else None,
                after_ms=1000 if kind == "timer" else None,
                back=rng.random() < 0.1,
            )
        )
    top = next(s.name for s in states if s.parent is None)
    return CompiledFlow(name="f", states=tuple(states), transitions=tuple(rules), initial=top)


SEEDS = st.integers(min_value=0, max_value=2**32 - 1)


@needs_dot
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(SEEDS)
def test_dot_clips_every_arrow_it_can(seed: int) -> None:
    source = to_dot(random_flow(seed), labels="full").source
    run = subprocess.run(
        ["dot", "-Tsvg"], input=source.encode(), capture_output=True, check=False, timeout=60
    )
    assert run.returncode == 0, run.stderr.decode()
    assert b"cluster" not in run.stderr, run.stderr.decode()


@settings(max_examples=200, deadline=None)
@given(SEEDS)
def test_mermaid_declares_each_state_in_its_parent_and_arrows_where_mermaid_keeps_them(
    seed: int,
) -> None:
    flow = random_flow(seed)
    assume(is_hierarchical(flow))  # flat flows are written as before: nothing is nested
    tree = StateTree.of(flow)
    ids = state_ids([s.name for s in flow.states])
    parent_of = {ids[s.name]: tree.parent(s.name) for s in flow.states}
    id_of = {sid: name for name, sid in ids.items()}
    blocks: list[str | None] = [None]  # the state whose block each line is in
    declared: dict[str, str | None] = {}
    arrows: list[tuple[str | None, str, str]] = []
    for line in to_mermaid(flow).split("stateDiagram-v2\n", 1)[1].splitlines():
        text = line.strip()
        opening = re.fullmatch(r'state (?:"[^"]*" as )?(\S+) \{', text)
        if opening:
            declared[opening.group(1)] = blocks[-1]
            blocks.append(id_of.get(opening.group(1)))
        elif text == "}":
            blocks.pop()
        elif " --> " in text:
            tail, head = text.split(" : ", 1)[0].split(" --> ")
            arrows.append((blocks[-1], tail, head))
        elif text != "--" and not text.startswith(("direction", "class")):
            declaration = re.fullmatch(r'state (?:"[^"]*" as )?(\S+)(?: <<choice>>)?', text)
            sid = declaration.group(1) if declaration else text.split(" : ", 1)[0]
            declared.setdefault(sid, blocks[-1])
    for sid, parent in parent_of.items():
        assert declared.get(sid, "missing") == parent, (sid, parent)
    for block, tail, head in arrows:
        if block is None:
            continue  # the top level never moves a state
        for end in (tail, head):
            if end != "[*]":
                assert declared[end] == block, (block, tail, head)
