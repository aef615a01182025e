"""Python-datamodel expressions to flowc expressions, without running anything.

An SCXML `cond`, `expr` or `location` is parsed with `ast.parse(..., mode="eval")` (a parse
only: nothing is compiled or evaluated) and each node is translated to an IR `Expr`, which
`flowc.compiler.emit.expr_text` prints as `.flow` text. Only the nodes flowc's expression
language has are translated; anything else (a call other than the builtins below, a dunder, an
attribute that is not `_event.data`, a lambda, a comprehension, ...) is refused with a
diagnostic naming the element and its line, so the file's text never reaches Python.
"""

from __future__ import annotations

import ast
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

from flowc.compiler.diagnostics import Diagnostic
from flowc.compiler.source import Span
from flowc.runtime.model import Expr

#: Python builtins with a flowc function of the same meaning (runtime/builtins.py).
SUPPORTED_CALLS: frozenset[str] = frozenset({"len", "min", "max", "abs", "round", "str"})

#: Longest expression text translated; the W3C suite's longest is under 100 characters.
MAX_EXPRESSION_CHARS = 2_000

_BINARY: dict[type[ast.operator], str] = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
    ast.Mod: "%",
}
_COMPARE: dict[type[ast.cmpop], str] = {
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
    ast.In: "in",
    ast.NotIn: "not in",
    ast.Is: "==",
    ast.IsNot: "!=",
}


class Refusal(Exception):
    """An expression flowc will not translate: `code` and `message` for the diagnostic."""

    def __init__(self, code: str, message: str, help: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.help = help


@dataclass
class Names:
    """What names mean in the document's expressions.

    `variables` maps each `<data>` id to its context field; `session_name` is the document's
    `name`; `event_fields` collects the payload fields read through `_event.data` (the importer
    declares them); `reads_event` says whether `_event` is read at all; `on_state` resolves
    `In('id')` (None: In() refused)."""

    variables: dict[str, str]
    session_name: str
    event_fields: set[str] = field(default_factory=set)
    reads_event: bool = False
    on_state: Callable[[str], Expr] | None = None


def translate(text: str, names: Names) -> Expr:
    """The IR expression for Python-datamodel `text`; raises `Refusal`."""
    if len(text) > MAX_EXPRESSION_CHARS:
        raise Refusal("E410", f"expression longer than {MAX_EXPRESSION_CHARS} characters")
    try:
        with warnings.catch_warnings():
            # Python warns about odd literals (`1s`); the file's text is not ours to lint.
            warnings.simplefilter("ignore")
            tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise Refusal("E410", f"not a Python expression: {exc.msg}") from None
    except (RecursionError, MemoryError, ValueError):
        raise Refusal("E410", "expression nested too deeply") from None
    try:
        return _Translator(names).node(tree.body)
    except RecursionError:
        raise Refusal("E410", "expression nested too deeply") from None


def location(text: str, names: Names) -> str:
    """The context field an `<assign location=...>` names."""
    expr = translate(text, names)
    if expr.op != "ctx" or not isinstance(expr.value, str):
        raise Refusal(
            "E410",
            f"cannot assign to `{text.strip()}`",
            "flowc assigns whole `<data>` variables only",
        )
    return expr.value


def diagnostic(refusal: Refusal, element: str, span: Span, path: str) -> Diagnostic:
    return Diagnostic(
        refusal.code,
        f"<{element}>: {refusal.message}",
        span,
        path,
        refusal.help,
        Diagnostic.make(refusal.code, "", span).severity,
    )


def _lit(value: bool | int | float | str | None) -> Expr:
    return Expr(op="lit", value=value)


class _Translator:
    def __init__(self, names: Names) -> None:
        self.names = names

    def node(self, node: ast.expr) -> Expr:
        method = getattr(self, f"_{type(node).__name__}", None)
        if method is None:
            raise Refusal(
                "E410",
                f"the Python construct `{type(node).__name__}` has no flowc equivalent",
                "flowc reads literals, variables, arithmetic, comparisons, `and`/`or`/`not`, "
                "indexing, `_event.data` and the builtins " + ", ".join(sorted(SUPPORTED_CALLS)),
            )
        result: Expr = method(node)
        return result

    def _Constant(self, node: ast.Constant) -> Expr:
        value = node.value
        if value is None or isinstance(value, bool | int | float | str):
            return _lit(value)
        raise Refusal("E410", f"the literal {value!r} has no flowc equivalent")

    def _Name(self, node: ast.Name) -> Expr:
        name = node.id
        _refuse_dunder(name)
        if name in self.names.variables:
            return Expr(op="ctx", value=self.names.variables[name])
        if name in ("true", "false"):  # ECMAScript spellings the suite's Python files keep
            return _lit(name == "true")
        if name == "_name":
            return _lit(self.names.session_name)
        if name == "_sessionid":
            return Expr(op="ctx", value="sessionid")
        if name == "_event":
            raise Refusal(
                "E416",
                "`_event` is read only through `_event.data`",
                "flowc events carry their payload fields; the other fields of `_event` "
                "(name, type, sendid, origin, invokeid) have no flowc equivalent",
            )
        if name in ("_ioprocessors", "_x"):
            raise Refusal("E409", f"`{name}` (I/O processors) is not supported")
        raise Refusal("E410", f"unknown name `{name}`", "declare it with <data id=...>")

    def _Attribute(self, node: ast.Attribute) -> Expr:
        _refuse_dunder(node.attr)
        base = node.value
        if isinstance(base, ast.Name) and base.id == "_event":
            if node.attr == "name":
                return Expr(op="call", value="event_name")
            if node.attr == "data":
                raise Refusal(
                    "E416",
                    "`_event.data` is read as a whole",
                    "read one field: `_event.data.NAME` or `_event.data['NAME']`",
                )
            raise Refusal(
                "E416",
                f"`_event.{node.attr}` has no flowc equivalent",
                "only `_event.data` fields and `_event.name` are read",
            )
        if _is_event_data(base):
            return self._event_field(node.attr)
        raise Refusal(
            "E411",
            f"attribute access `.{node.attr}` is refused",
            "only `_event.data.NAME` is read; attributes would reach Python objects",
        )

    def _event_field(self, name: str) -> Expr:
        _refuse_dunder(name)
        if not name.isidentifier():
            raise Refusal("E416", f"`_event.data[{name!r}]`: not a flowc field name")
        self.names.event_fields.add(name)
        self.names.reads_event = True
        return Expr(op="event", value=name)

    def _Subscript(self, node: ast.Subscript) -> Expr:
        if _is_event_data(node.value):
            key = node.slice
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                return self._event_field(key.value)
            raise Refusal("E416", "`_event.data[...]` takes a string literal key")
        if isinstance(node.slice, ast.Slice):
            raise Refusal("E410", "slices have no flowc equivalent")
        return Expr(op="index", args=(self.node(node.value), self.node(node.slice)))

    def _BinOp(self, node: ast.BinOp) -> Expr:
        op = _BINARY.get(type(node.op))
        if op is None:
            raise Refusal("E410", f"the operator `{type(node.op).__name__}` is not supported")
        return Expr(op=op, args=(self.node(node.left), self.node(node.right)))

    def _UnaryOp(self, node: ast.UnaryOp) -> Expr:
        operand = self.node(node.operand)
        if isinstance(node.op, ast.Not):
            return Expr(op="not", args=(operand,))
        if isinstance(node.op, ast.USub):
            value = operand.value
            if (
                operand.op == "lit"
                and isinstance(value, int | float)
                and not isinstance(value, bool)
            ):
                return _lit(-value)
            return Expr(op="neg", args=(operand,))
        if isinstance(node.op, ast.UAdd):
            return operand
        raise Refusal("E410", "the operator `~` is not supported")

    def _BoolOp(self, node: ast.BoolOp) -> Expr:
        op = "and" if isinstance(node.op, ast.And) else "or"
        values = [self.node(v) for v in node.values]
        result = values[0]
        for value in values[1:]:
            result = Expr(op=op, args=(result, value))
        return result

    def _Compare(self, node: ast.Compare) -> Expr:
        parts: list[Expr] = []
        left = self.node(node.left)
        for op, comparator in zip(node.ops, node.comparators, strict=True):
            right = self.node(comparator)
            parts.append(Expr(op=_COMPARE[type(op)], args=(left, right)))
            left = right
        result = parts[0]
        for part in parts[1:]:
            result = Expr(op="and", args=(result, part))
        return result

    def _Call(self, node: ast.Call) -> Expr:
        func = node.func
        if not isinstance(func, ast.Name):
            if isinstance(func, ast.Attribute):
                _refuse_dunder(func.attr)
                self.node(func.value)  # a dunder or forbidden call in the object says more
            raise Refusal(
                "E411", "only calls to plain builtins are translated; method calls are refused"
            )
        _refuse_dunder(func.id)
        if node.keywords:
            raise Refusal("E410", f"`{func.id}()` with keyword arguments is not supported")
        if func.id == "In":
            return self._in(node)
        if func.id not in SUPPORTED_CALLS:
            raise Refusal(
                "E411",
                f"the call `{func.id}()` is refused",
                "flowc calls only its builtins: " + ", ".join(sorted(SUPPORTED_CALLS)),
            )
        return Expr(op="call", value=func.id, args=tuple(self.node(a) for a in node.args))

    def _in(self, node: ast.Call) -> Expr:
        arg = node.args[0] if len(node.args) == 1 else None
        if not (isinstance(arg, ast.Constant) and isinstance(arg.value, str)):
            raise Refusal(
                "E417",
                "`In()` takes one state id, as a string literal",
                "flowc's `active(STATE)` names its state in the source: a computed id has no "
                "equivalent",
            )
        if self.names.on_state is None:
            raise Refusal("E417", "`In()` is not translated here")
        return self.names.on_state(arg.value)

    def _List(self, node: ast.List) -> Expr:
        return Expr(op="list", args=tuple(self.node(e) for e in node.elts))

    _Tuple = _List

    def _Dict(self, node: ast.Dict) -> Expr:
        args: list[Expr] = []
        for key, value in zip(node.keys, node.values, strict=True):
            if key is None:
                raise Refusal("E410", "`**` in a dict literal is not supported")
            args.extend((self.node(key), self.node(value)))
        return Expr(op="map", args=tuple(args))


def _is_event_data(node: ast.expr) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and node.attr == "data"
        and isinstance(node.value, ast.Name)
        and node.value.id == "_event"
    )


def _refuse_dunder(name: str) -> None:
    if name.startswith("__") or name in ("globals", "locals", "vars", "eval", "exec", "open"):
        raise Refusal(
            "E411",
            f"`{name}` is refused: it would reach Python internals",
            "SCXML expressions are translated to flowc's language, never run as Python",
        )
