"""Checks the `test "..." { ... }` blocks of a flow: every name a step uses, every value it
gives, every expectation it states, with the compiler's own codes, spans and did-you-mean.

Test blocks never reach the IR (lower.py does not read them), so a flow's content hash is the
same with or without its tests; `flowc test` runs them from the AST (flowc.compiler.testing).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass
from typing import Any

from flowc.compiler import ast
from flowc.compiler import types as t
from flowc.compiler.diagnostics import Diagnostic
from flowc.compiler.resolve import FieldInfo, Symbols, done_event, error_event, suggest
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
        # What the last step's refusal, effects and journal are checked against: the flow of
        # the instance it went to (a `send ... to "PATH"`: the child's; None: no child there).
        stepped: TestChecker | None = self
        for step in test.steps:
            if isinstance(step, ast.Given):
                self.check_given(step, acted)
            elif isinstance(step, ast.Send):
                stepped = self.for_child(step.child)
                if stepped is not None:
                    stepped.check_send(step)
            elif isinstance(step, ast.Goto):
                self.check_state(step.target)
            elif isinstance(step, ast.ExpectState):
                checker = self.for_child(step.child)
                if checker is not None:
                    checker.check_state(step.state)
            elif isinstance(step, ast.ExpectReject) and stepped is not None:
                stepped.check_reject(step, previous)
            elif isinstance(step, ast.ExpectJournal) and stepped is not None:
                stepped.check_journal(step)
            elif isinstance(step, ast.ExpectEffect | ast.ExpectNoEffect) and stepped is not None:
                stepped.check_effect(step, acted)
            elif isinstance(step, ast.ExpectValue):
                self.check_expect_value(step)
            if isinstance(step, ast.Goto | ast.Back | ast.Advance):
                stepped = self
            acted = acted or isinstance(step, ACTIONS)
            previous = step

    def for_child(self, path: ast.Text | None) -> TestChecker | None:
        """The checker of the flow a step names (`to "PATH"`, `in "PATH"`): this one, or one
        of the child at PATH (its events, states and types; the diagnostics shared); None
        when no child can be there (reported)."""
        if path is None:
            return self
        found = self.child_at(path)
        if found is None:
            return None
        inner = TestChecker(found)
        inner.types.diagnostics = self.types.diagnostics
        return inner

    def child_at(self, path: ast.Text) -> Symbols | None:
        """The symbols of the child flow at `path`; E123 when no child can be there."""
        found = child_symbols(self.symbols, path.value)
        if isinstance(found, str):
            self.error("E123", found, path.span, CHILD_PATH_HELP)
            return None
        return found

    def check_expect_value(self, step: ast.ExpectValue) -> None:
        """`expect EXPR`, where `"PATH".field` reads a field of the child at PATH."""
        expr, reads = child_reads(step.expr)
        scope = _EXPECT_SCOPE
        for read in reads:
            scope = scope.with_local(read.local, self.child_field_type(read))
        self.types.check_guard(expr, scope)

    def child_field_type(self, read: ChildRead) -> t.Ty:
        found = self.child_at(read.path)
        if found is None:
            return t.ANY
        info = found.context.get(read.field.name)
        if info is None:
            owner = f"the context of child flow `{_flow_name(found)}`"
            self.error(
                "E108",
                f"{owner} has no field `{read.field.name}`",
                read.field.span,
                suggest(read.field.name, found.context),
            )
            return t.ANY
        return info.ty

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


#: How a path names a child at one level: an invoke id, `ID[K]`, or a child id `ID.SEQ[.K]`.
_PART = re.compile(r"(?P<id>[A-Za-z_][A-Za-z0-9_]*)(?:\[(?P<k>[0-9]+)\]|(?P<seq>(?:\.[0-9]+)+))?")
CHILD_PATH_HELP = (
    "a child path names an invoke by its id (`pay`), a fan-out's child by its position "
    "(`reviews[0]`), or a child by its id (`pay.3`); `/` goes a level down (`pay/fraud`)"
)


def child_symbols(symbols: Symbols, path: str) -> Symbols | str:
    """The symbols of the child flow at `path` below this flow (`Instance.child`'s paths),
    or why no child can be there."""
    current = symbols
    for part in path.split("/"):
        matched = _PART.fullmatch(part)
        if matched is None:
            return f"`{part}` is not a part of a child path"
        invoke = matched["id"]
        site = current.invokes.get(invoke)
        if site is None:
            where = f"flow `{_flow_name(current)}`"
            near = suggest(invoke, current.invokes)
            return f"{where} has no invoke `{invoke}`" + (f" ({near})" if near else "")
        fan = site.decl.each is not None
        seq = matched["seq"]
        indexed = matched["k"] is not None or (seq is not None and seq.count(".") == 2)
        if seq is not None and seq.count(".") != (2 if fan else 1):
            return f"`{part}` is not the id of a child of invoke `{invoke}`"
        if fan and seq is None and not indexed:
            return f"invoke `{invoke}` is a fan-out: name one of its children, `{invoke}[0]`"
        if indexed and not fan:
            return f"invoke `{invoke}` starts one child, not a fan-out: write `{invoke}`"
        if site.child is None:
            return f"invoke `{invoke}` has no compiled child flow"
        current = site.child.symbols
    return current


def _flow_name(symbols: Symbols) -> str:
    return symbols.flow.name.name if symbols.flow is not None else "?"


def black_box_invoke(event: str) -> tuple[str, bool] | None:
    """(invoke id, failed) when `event` is the done or error event of an invoke: a test's
    `send done.invoke.ID(...)` makes the children of ID finish, a black box."""
    for prefix, failed in ((done_event(""), False), (error_event(""), True)):
        if event.startswith(prefix) and "." not in event[len(prefix) :]:
            return event[len(prefix) :], failed
    return None


@dataclass(frozen=True)
class ChildRead:
    """`"PATH".field` in an expectation: a field of the child at PATH, read as `local`."""

    local: str
    path: ast.Text
    field: ast.Ident


#: The local name a child read becomes (a space keeps it apart from every name of a flow).
_CHILD_LOCAL = "child read {}"


def child_reads(expr: ast.Expr) -> tuple[ast.Expr, list[ChildRead]]:
    """`expr` with each `"PATH".field` replaced by a local name, and what each one reads."""
    reads: list[ChildRead] = []

    def rewrite(node: Any) -> Any:
        if isinstance(node, tuple):
            items = tuple(rewrite(item) for item in node)
            return node if all(a is b for a, b in zip(items, node, strict=True)) else items
        if isinstance(node, ast.Attribute) and _is_str(node.obj):
            assert isinstance(node.obj, ast.Literal_)
            read = ChildRead(
                _CHILD_LOCAL.format(len(reads)),
                ast.Text(str(node.obj.value), node.obj.span),
                node.name,
            )
            reads.append(read)
            return ast.Name(read.local, node.span)
        if not dataclasses.is_dataclass(node) or isinstance(node, type | ast.Ident | Span):
            return node
        changes = {}
        for f in dataclasses.fields(node):
            value = getattr(node, f.name)
            new = rewrite(value)
            if new is not value:
                changes[f.name] = new
        return dataclasses.replace(node, **changes) if changes else node

    return rewrite(expr), reads


def _is_str(expr: ast.Expr) -> bool:
    return isinstance(expr, ast.Literal_) and expr.kind == "str"


def _is_none(expr: ast.Expr) -> bool:
    return isinstance(expr, ast.Literal_) and expr.kind == "none"


def check_tests(symbols: Symbols) -> list[Diagnostic]:
    if not symbols.tests:
        return []
    return TestChecker(symbols).run()
