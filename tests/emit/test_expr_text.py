"""Expressions print back as source that reads the same way and parses to the same tree."""

from __future__ import annotations

import pytest

from flowc.compiler import compile_source
from flowc.compiler.emit.expr_text import action_text, expr_text, literal_text
from flowc.runtime.model import Action, Expr


def lit(v: object) -> Expr:
    return Expr(op="lit", value=v)  # type: ignore[arg-type]


def ctx(name: str) -> Expr:
    return Expr(op="ctx", value=name)


def op(name: str, *args: Expr) -> Expr:
    return Expr(op=name, args=args)


@pytest.mark.parametrize(
    ("expr", "text"),
    [
        (op("and", op("or", ctx("a"), ctx("b")), ctx("c")), "(a or b) and c"),
        (op("or", ctx("a"), op("and", ctx("b"), ctx("c"))), "a or b and c"),
        (op("-", ctx("a"), op("-", ctx("b"), ctx("c"))), "a - (b - c)"),
        (op("-", op("-", ctx("a"), ctx("b")), ctx("c")), "a - b - c"),
        (op("*", op("+", ctx("a"), lit(1)), lit(2)), "(a + 1) * 2"),
        (op("neg", op("+", ctx("a"), ctx("b"))), "-(a + b)"),
        (op("not", op("and", ctx("a"), ctx("b"))), "not (a and b)"),
        (op("and", op("not", ctx("a")), ctx("b")), "not a and b"),
        (op("==", op("<", ctx("a"), ctx("b")), lit(True)), "(a < b) == true"),
        (op("in", lit("x"), Expr(op="list", args=(lit("x"), lit("y")))), '"x" in ["x", "y"]'),
        (op("not in", Expr(op="event", value="k"), ctx("seen")), "event.k not in seen"),
        (
            Expr(op="attr", args=(Expr(op="state", value="meta"),), value="skill"),
            "state.meta.skill",
        ),
        (Expr(op="index", args=(ctx("xs"), lit(0))), "xs[0]"),
        (Expr(op="attr", args=(lit(-3),), value="x"), "(-3).x"),
        (Expr(op="call", value="len", args=(ctx("xs"),)), "len(xs)"),
        (Expr(op="map", args=(lit("a"), lit(1))), '{"a": 1}'),
        (op("<=", Expr(op="event", value="confidence"), lit(2)), "event.confidence <= 2"),
    ],
)
def test_parenthesisation(expr: Expr, text: str) -> None:
    assert expr_text(expr) == text


def test_literals() -> None:
    assert literal_text(None) == "none"
    assert literal_text(False) == "false"
    assert literal_text('say "hi"\n') == '"say \\"hi\\"\\n"'
    assert literal_text(2.5) == "2.5"
    assert literal_text(1e20) == "1.0e+20"


def test_actions() -> None:
    assert action_text(Action(op="add", target=("stats", "hits"), value=lit(1))) == (
        "stats.hits += 1"
    )
    assert action_text(Action(op="append", target=("notes",), value=ctx("n"))) == (
        "append(notes, n)"
    )


GUARDS = [
    'n > 1 and not flag or k == "x"',
    "(n + 2) * 3 % 4 == 1",
    "n - (k_n - 1) >= -2",
    "not (flag and n < 3)",
    'len(items) > 0 and items[0] == "a"',
    '"a" in items or event.size not in [1, 2, 3]',
    '(flag or n > 1) and (k == "x" or k == "y")',
    "-(n + 1) < n",
]


@pytest.mark.parametrize("guard", GUARDS)
def test_round_trip_through_the_compiler(guard: str) -> None:
    def compiled(text: str) -> Expr:
        source = (
            "flow demo\n"
            'context { n: int = 0\n k_n: int = 0\n flag: bool = false\n k: str = ""\n'
            " items: list[str] = [] }\n"
            "event go(size: int)\n"
            f"initial state A {{ on go if {text} -> B }}\n"
            "final state B\n"
        )
        result = compile_source(source, "demo.flow", lint=False)
        assert result.flow is not None, result.diagnostics
        (t,) = result.flow.transitions
        assert t.guard is not None
        return t.guard

    first = compiled(guard)
    printed = expr_text(first)
    assert compiled(printed) == first, printed


def test_version_2_actions_print_as_source() -> None:
    from flowc.runtime.model import Branch

    payload = Expr(op="map", args=(lit("n"), ctx("attempts"), lit("on"), lit(True)))
    assert action_text(Action(op="raise", event="poke", value=payload)) == (
        "raise poke(n: attempts, on: true)"
    )
    assert action_text(Action(op="emit", event="lamp")) == "emit lamp"
    branch = Branch(
        guard=op(">", ctx("n"), lit(2)),
        actions=(Action(op="set", target=("b",), value=lit(1)),),
    )
    otherwise = Branch(actions=(Action(op="set", target=("b",), value=lit(0)),))
    assert action_text(Action(op="if", branches=(branch, branch, otherwise))) == (
        "if n > 2 { b = 1 } elif n > 2 { b = 1 } else { b = 0 }"
    )


@pytest.mark.parametrize(
    "action",
    [
        'send ping(n: 2) after 5m as "r"',
        "send ping after 90s",
        "send ping after 1500ms as rid",
        "send ping after wait * 2 s",
        "send ping after backoff ms as event.id",
        'cancel "r"',
        "cancel rid",
    ],
)
def test_scheduled_sends_and_cancels_print_as_source(action: str) -> None:
    source = (
        'flow t\ncontext { rid: str = "r", wait: int = 1, backoff: int = 5 }\n'
        "internal event ping(n: int = 0)\nevent go(id: str)\n"
        f"initial state A {{\n  on go -> A do {action}\n  on ping -> A\n}}\n"
    )
    flow = compile_source(source, "t.flow").flow
    assert flow is not None
    (written,) = next(t for t in flow.transitions if t.event == "go").actions
    assert action_text(written) == action
