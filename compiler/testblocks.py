"""Checks the `test "..." { ... }` blocks of a flow: every name a step uses, every value it
gives, every expectation it states, with the compiler's own codes, spans and did-you-mean.

Test blocks never reach the IR (lower.py does not read them), so a flow's content hash is the
same with or without its tests; `flowc test` runs them from the AST (flowc.compiler.testing).
"""

from __future__ import annotations

from flowc.compiler import ast
from flowc.compiler import types as t
from flowc.compiler.diagnostics import Diagnostic
from flowc.compiler.resolve import FieldInfo, Symbols, suggest
from flowc.compiler.source import Span
from flowc.compiler.typecheck import Scope, TypeChecker, _is_constant
from flowc.runtime.messages import MESSAGE_KINDS

#: Steps that act on the instance; `expect reject` must follow one of them.
ACTIONS = (ast.Send, ast.Goto, ast.Back, ast.Advance)

_VALUE_SCOPE = Scope(None, "in a test value (values are constants)", constant=True)
_EXPECT_SCOPE = Scope(None, "in a test expectation (it reads the context)")


def rejection_codes(symbols: Symbols) -> set[str]:
    """Every code a step of this flow can be refused with: the runtime's kinds and the codes
    of the flow's `reject` rules and `require` preconditions."""
    codes = set(MESSAGE_KINDS) - {"conflict"}
    for state in symbols.states.values():
        codes.update(r.reject_code.name for r in state.rules if r.reject_code is not None)
    codes.update(r.reject_code.name for r in symbols.global_rules if r.reject_code is not None)
    for info in symbols.events.values():
        codes.update(req.code.name for req in info.decl.requires)
    return codes


class TestChecker:
    def __init__(self, symbols: Symbols) -> None:
        self.symbols = symbols
        self.types = TypeChecker(symbols)
        self.codes = rejection_codes(symbols)

    @property
    def diagnostics(self) -> list[Diagnostic]:
        return self.types.diagnostics

    def error(self, code: str, message: str, span: Span, help: str | None = None) -> None:
        self.types.error(code, message, span, help)

    def run(self) -> list[Diagnostic]:
        for test in self.symbols.tests:
            self.check_test(test)
        return self.diagnostics

    def check_test(self, test: ast.TestDecl) -> None:
        acted = False
        previous: ast.TestStep | None = None
        for step in test.steps:
            if isinstance(step, ast.Given):
                self.check_given(step, acted)
            elif isinstance(step, ast.Send):
                self.check_send(step)
            elif isinstance(step, ast.Goto):
                self.check_state(step.target)
            elif isinstance(step, ast.ExpectState):
                self.check_state(step.state)
            elif isinstance(step, ast.ExpectReject):
                self.check_reject(step, previous)
            elif isinstance(step, ast.ExpectJournal):
                self.check_journal(step)
            elif isinstance(step, ast.ExpectEffect | ast.ExpectNoEffect):
                self.check_effect(step, acted)
            elif isinstance(step, ast.ExpectValue):
                self.types.check_guard(step.expr, _EXPECT_SCOPE)
            acted = acted or isinstance(step, ACTIONS)
            previous = step

    def check_given(self, step: ast.Given, acted: bool) -> None:
        """`given FIELD = VALUE`: before the first step, a context field and a value of its
        type."""
        if acted:
            self.error(
                "E123",
                "`given` after a step",
                step.span,
                "`given` sets the starting context: write it before the first step",
            )
        self.check_value(step.field, step.value, self.symbols.context, "the context")

    def check_journal(self, step: ast.ExpectJournal) -> None:
        name = step.journal.name
        if name not in self.symbols.journals:
            self.error(
                "E125",
                f"unknown journal `{name}`",
                step.journal.span,
                suggest(name, self.symbols.journals) or f'declare it: `journal {name} "..."`',
            )

    def check_send(self, step: ast.Send) -> None:
        info = self.symbols.events.get(step.event.name)
        if info is None:
            self.error(
                "E105",
                f"unknown event `{step.event.name}`",
                step.event.span,
                suggest(step.event.name, self.symbols.events),
            )
            return
        seen: set[str] = set()
        for name, value in step.payload:
            if name.name in seen:
                self.error("E103", f"payload field `{name.name}` is given twice", name.span)
            seen.add(name.name)
            self.check_value(name, value, info.params, f"event `{step.event.name}`")

    def check_value(
        self, name: ast.Ident, value: ast.Expr, fields: dict[str, FieldInfo], owner: str
    ) -> None:
        info = fields.get(name.name)
        if info is None:
            self.error(
                "E108",
                f"{owner} has no field `{name.name}`",
                name.span,
                suggest(name.name, fields),
            )
            return
        if not _is_constant(value) or self._reads_context(value):
            self.error(
                "E123",
                "a test value must be a constant",
                value.span,
                "write a literal, a list or map of literals, or an enum member",
            )
            return
        expected = info.ty
        if isinstance(expected, t.OptionalTy) and not _is_none(value):
            expected = expected.inner  # a literal list or map is checked against what it holds
        self.types.expect(value, expected, _VALUE_SCOPE, code="E201", what=f"`{name.name}`")

    def _reads_context(self, expr: ast.Expr) -> bool:
        """A bare name of a context field (which `_is_constant` takes for an enum member)."""
        if isinstance(expr, ast.Name):
            return expr.name in self.symbols.context and expr.name not in self.symbols.members
        if isinstance(expr, ast.ListLit):
            return any(self._reads_context(i) for i in expr.items)
        if isinstance(expr, ast.MapLit):
            return any(self._reads_context(k) or self._reads_context(v) for k, v in expr.entries)
        return False

    def check_state(self, name: ast.Ident) -> None:
        if name.name not in self.symbols.states:
            self.error(
                "E104",
                f"unknown state `{name.name}`",
                name.span,
                suggest(name.name, self.symbols.states),
            )

    def check_effect(self, step: ast.ExpectEffect | ast.ExpectNoEffect, acted: bool) -> None:
        """`expect effect NAME(...)` / `expect no effect [NAME]`: after a step, a declared
        effect, and field values of its parameters' types."""
        if not acted:
            self.error(
                "E123",
                "`expect effect` before any step",
                step.span,
                "write it after the `send`, `goto`, `back` or `advance` whose effects it checks",
            )
        if step.effect is None:
            return
        name = step.effect.name
        info = self.symbols.effects.get(name)
        if info is None:
            self.error(
                "E214",
                f"unknown effect `{name}`",
                step.effect.span,
                suggest(name, self.symbols.effects) or f"declare it: `effect {name}(...)`",
            )
            return
        seen: set[str] = set()
        for field, value in step.fields if isinstance(step, ast.ExpectEffect) else ():
            if field.name in seen:
                self.error("E103", f"effect field `{field.name}` is given twice", field.span)
            seen.add(field.name)
            self.check_value(field, value, info.params, f"effect `{name}`")

    def check_reject(self, step: ast.ExpectReject, previous: ast.TestStep | None) -> None:
        if not isinstance(previous, ACTIONS):
            self.error(
                "E123",
                "`expect reject` does not follow a step",
                step.span,
                "write it right after the `send`, `goto`, `back` or `advance` it expects refused",
            )
        code = step.code.name
        if code not in self.codes:
            self.error(
                "E124",
                f"no step of this flow is refused with `{code}`",
                step.code.span,
                suggest(code, self.codes)
                or "codes: the runtime's kinds and the flow's `reject` and `require` codes",
            )


def _is_none(expr: ast.Expr) -> bool:
    return isinstance(expr, ast.Literal_) and expr.kind == "none"


def check_tests(symbols: Symbols) -> list[Diagnostic]:
    if not symbols.tests:
        return []
    return TestChecker(symbols).run()
