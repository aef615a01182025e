"""A compile's AST, symbols and IR are freed as soon as nothing uses them, without waiting for
the cyclic garbage collector: none of them is part of a reference cycle. (A cycle would keep a
large flow's million objects alive until a collection, which then has to walk them all.)"""

from __future__ import annotations

import gc
from pathlib import Path

from flowc.compiler import ast, compile_source
from flowc.compiler.resolve import Symbols
from flowc.compiler.typecheck import TypeChecker

FLOW = Path(__file__).resolve().parents[2] / "flows" / "attempt_v2.flow"


def alive(kind: type) -> int:
    return sum(1 for o in gc.get_objects() if type(o) is kind)


def test_a_compile_leaves_nothing_for_the_cyclic_collector() -> None:
    text = FLOW.read_text(encoding="utf-8")
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        before = (alive(ast.StateDecl), alive(Symbols), alive(TypeChecker))
        result = compile_source(text, FLOW.name)
        assert result.flow is not None
        assert alive(ast.StateDecl) > before[0]
        del result
        assert (alive(ast.StateDecl), alive(Symbols), alive(TypeChecker)) == before
    finally:
        if was_enabled:
            gc.enable()
