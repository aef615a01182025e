"""Property: a random valid flow, in a random layout, formats to a fixed point (formatting twice
changes nothing) with the same meaning (IR hash less source positions) and every comment."""

from __future__ import annotations

import random

from formatting import compiled, meaning, scrambled
from hypothesis import given, settings
from hypothesis import strategies as st

from flowc.compiler import compile_source
from flowc.compiler.format import format_source

NAMES = st.sampled_from(["a", "b", "count", "total", "type", "message", "from", "x_1"])


@st.composite
def int_expr(draw: st.DrawFn, depth: int = 0) -> str:
    """An int-valued expression over the int fields `n`, `m` and the event's `k`."""
    leaves = ["n", "m", "event.k", "0", "1", "42", "len(tags)"]
    if depth >= 2 or draw(st.booleans()):
        leaf = draw(st.sampled_from(leaves))
        return f"-{leaf}" if draw(st.integers(0, 4)) == 0 else leaf
    left = draw(int_expr(depth + 1))
    right = draw(int_expr(depth + 1))
    op = draw(st.sampled_from(["+", "-", "*"]))
    text = f"{left} {op} {right}"
    return f"({text})" if draw(st.booleans()) else text


@st.composite
def guard(draw: st.DrawFn, depth: int = 0) -> str:
    if depth >= 2 or draw(st.booleans()):
        kind = draw(st.integers(0, 3))
        if kind == 0:
            op = draw(st.sampled_from(["==", "!=", "<", "<=", ">", ">="]))
            return f"{draw(int_expr())} {op} {draw(int_expr())}"
        if kind == 1:
            return draw(st.sampled_from(['"x" in tags', '"y" not in tags', "flag", "not flag"]))
        if kind == 2:
            return f"mode == {draw(st.sampled_from(['Mode.FAST', 'SLOW']))}"
        return f"event.k in [1, -2, {draw(st.integers(0, 9))}]"
    joiner = draw(st.sampled_from(["and", "or"]))
    text = f"{draw(guard(depth + 1))} {joiner} {draw(guard(depth + 1))}"
    return f"not ({text})" if draw(st.integers(0, 3)) == 0 else text


@st.composite
def actions(draw: st.DrawFn) -> str:
    pool = [
        lambda: f"n = {draw(int_expr())}",
        lambda: f"m += {draw(int_expr())}",
        lambda: "m -= 1",
        lambda: 'append(tags, "t")',
        lambda: "flag = not flag",
        lambda: f'scores = merge(scores, {{"k": {draw(st.integers(-5, 5))}}})',
    ]
    count = draw(st.integers(1, 3))
    return "; ".join(draw(st.sampled_from(pool))() for _ in range(count))


@st.composite
def rule(draw: st.DrawFn, targets: list[str]) -> str:
    text = f"on {draw(st.sampled_from(['go', 'stop', 'poke']))}"
    if draw(st.booleans()):
        text += f" if {draw(guard())}"
    if draw(st.integers(0, 4)) == 0:
        return text + f' reject nope_{draw(st.integers(0, 9))} "Not now: {{{{ state.name }}}}."'
    text += f" -> {draw(st.sampled_from([*targets, 'self']))}"
    if draw(st.booleans()):
        text += f" do {draw(actions())}"
    return text


@st.composite
def meta(draw: st.DrawFn) -> str:
    values = st.sampled_from(['"s"', "1", "-2.5", "true", "null", "[1, 2]", '{inner: "v"}'])
    keys = draw(st.lists(NAMES, min_size=1, max_size=3, unique=True))
    pairs = ", ".join(f"{key}: {draw(values)}" for key in keys)
    return f"meta {{ {pairs} }}"


@st.composite
def flows(draw: st.DrawFn) -> str:
    count = draw(st.integers(1, 4))
    names = [f"S{i}" for i in range(count)] + ["DONE"]
    lines = [
        f'flow generated "A generated flow"\nversion {draw(st.integers(1, 5))}',
        "enum Mode { FAST, SLOW }",
        "context {",
        f"  n: int(-10..{draw(st.integers(10, 99))}) = 0",
        "  m: int = -1, flag: bool = false",
        "  mode: Mode = FAST",
        '  tags: list[str] = ["a"]',
        "  scores: map[str, int] = {}",
        "  note: str? = none",
        "}",
        "event go(k: int = 0)",
        "event stop(k: int)",
        "event poke(k: int = 1, label: str? = none)",
    ]
    if draw(st.booleans()):
        lines.append('  require event.k >= 0 else negative "k is {{ event.k }}"')
    for index, name in enumerate(names[:-1]):
        head = "initial state" if index == 0 else "state"
        later = names[index + 1 :]
        body = [draw(meta())] if draw(st.booleans()) else []
        if draw(st.integers(0, 3)) == 0:
            body.append("entry do m += 1")
        body += [draw(rule(later)) for _ in range(draw(st.integers(1, 3)))]
        body.append(f"on stop -> {later[0]}")
        if draw(st.integers(0, 3)) == 0:
            body.append(f"after 5m if m > 0 -> {later[-1]}")
        inner = "\n".join(f"  {line}" for line in body)
        lines.append(f'{head} {name} "Step {index}" {{\n{inner}\n}}')
    lines.append("final state DONE")
    if draw(st.booleans()):
        lines.append('message guard_failed """\nNo: {{ state.name }}\n"""')
    return "\n".join(lines) + "\n"


@settings(max_examples=80, deadline=None)
@given(flows(), st.randoms(use_true_random=False))
def test_formatting_random_flows_is_idempotent_and_keeps_the_meaning(
    text: str, rng: random.Random
) -> None:
    result = compile_source(text, "x.flow", lint=False)
    assert result.flow is not None, [d.message for d in result.diagnostics]
    messy = scrambled(text, rng)
    once = format_source(messy)
    assert format_source(once) == once
    assert meaning(compiled(once)) == meaning(result.flow)
    # Formatting an already formatted file leaves even the source positions alone.
    assert compiled(format_source(once)).hash == compiled(once).hash
    for note in ("# a note", "# own line", "# leading"):
        assert once.count(note) == messy.count(note)
