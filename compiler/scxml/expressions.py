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
import inspect
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field

from flowc.compiler.diagnostics import Diagnostic
from flowc.compiler.source import Span
from flowc.runtime.model import Expr

#: Python builtins with a flowc function of the same meaning (runtime/builtins.py).
SUPPORTED_CALLS: frozenset[str] = frozenset({"len", "min", "max", "abs", "round", "str"})
#: String methods read as flowc's functions (`s.strip()` is `trim(s)`): what an export writes.
#: Why a call that is not to a plain builtin is refused.
_ONLY_BUILTINS = "only calls to plain builtins are translated; method calls are refused"

_STRING_METHODS = {"strip": "trim", "lower": "lower", "upper": "upper"}

#: The fields of `_event` besides `name` and `data`, each read as the payload field
#: `scxml_<field>` that the importer declares and fills (docs/scxml.md, "The `_event` fields").
EVENT_META_FIELDS: tuple[str, ...] = ("type", "sendid", "origin", "origintype", "invokeid")
#: The payload field holding `_event.data` as a whole (a `<content>`, or the map of params).
EVENT_DATA_FIELD = "scxml_data"
#: SCXML's event I/O processor, by its URI and its short name: the only one flowc has.
SCXML_PROCESSOR = "http://www.w3.org/TR/scxml/#SCXMLEventProcessor"
SCXML_PROCESSOR_NAMES: tuple[str, ...] = (SCXML_PROCESSOR, "scxml")
#: System variables: read-only in SCXML (assigning one raises error.execution).
SYSTEM_VARIABLES: frozenset[str] = frozenset(
    {"_event", "_sessionid", "_name", "_ioprocessors", "_x"}
)


def meta_field(name: str) -> str:
    """The payload field an `_event.<name>` read becomes."""
    return f"scxml_{name}"


def session_location() -> Expr:
    """`#_scxml_<sessionid>`: the session's own address for the SCXML I/O processor."""
    return Expr(op="+", args=(_lit("#_scxml_"), Expr(op="ctx", value="sessionid")))


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
    #: Whether an expression read `_sessionid` or the session's address (`_ioprocessors`,
    #: `_event.origin`): the importer then declares the context field `sessionid`.
    reads_session: bool = False
    #: Whether `_event` is not bound yet (the start's entry actions): it reads as `None`.
    event_unbound: bool = False
    #: Whether the rule being translated is for done events that carry no data (no
    #: `<donedata>`, or done data SCXML could not evaluate): `_event.data` is `None` there.
    data_is_none: bool = False
    #: Whether `base[key]` reads the field `key` of a record (an export writes a field read
    #: so, its records being dicts in the datamodel); None: no record types are declared.
    is_record_field: Callable[[Expr, str], bool] | None = None
    #: Whether a value can never be `None` (a variable holding a value of a type without
    #: `none` from the start): `x is None` is then false. None: nothing is known.
    never_none: Callable[[Expr], bool] | None = None


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


#: Longest `<script>` text read (the W3C suite's are one line).
MAX_SCRIPT_CHARS = 20_000


def script_assignments(text: str) -> list[tuple[str, str]]:
    """The assignments a `<script>` makes, as (location, expression text) in order, read as
    `<assign>`s are (nothing is run); `x += e` is `x = x + (e)`. A script that is anything
    but plain assignments to names (an import, a call statement, a loop, a definition) raises
    `Refusal` (E407)."""
    if len(text) > MAX_SCRIPT_CHARS:
        raise Refusal("E407", f"scripts are refused over {MAX_SCRIPT_CHARS} characters")
    source = _dedent(text)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            tree = ast.parse(source, mode="exec")
    except SyntaxError as exc:
        raise Refusal("E407", f"scripts are refused unless Python: {exc.msg}") from None
    except (RecursionError, MemoryError, ValueError):
        raise Refusal("E407", "scripts are refused when nested too deeply") from None
    found: list[tuple[str, str]] = []
    for statement in tree.body:
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1:
            target, value = statement.targets[0], ast.get_source_segment(source, statement.value)
            if isinstance(target, ast.Name) and value is not None:
                found.append((target.id, value))
                continue
        if isinstance(statement, ast.AugAssign) and isinstance(statement.target, ast.Name):
            op = _BINARY.get(type(statement.op))
            value = ast.get_source_segment(source, statement.value)
            if op is not None and value is not None:
                name = statement.target.id
                found.append((name, f"{name} {op} ({value})"))
                continue
        raise Refusal(
            "E407",
            f"scripts are refused unless they only assign names (a `{type(statement).__name__}` "
            "statement here)",
            "flowc reads a script's assignments (`x = expr`, `x += expr`) as <assign>s and "
            "runs no code from a file",
        )
    return found


def _dedent(text: str) -> str:
    """A script's text without the indentation its XML gives every line (the first line
    may start right after the tag, or on a line of its own)."""
    return inspect.cleandoc(text)


def location(text: str, names: Names) -> str:
    """The context field an `<assign location=...>` names, or the field of a record held in
    one (`order['total']` is `order.total`)."""
    expr = translate(text, names)
    path: list[str] = []
    while expr.op == "attr" and len(expr.args) == 1 and isinstance(expr.value, str):
        path.insert(0, expr.value)
        expr = expr.args[0]
    if expr.op != "ctx" or not isinstance(expr.value, str):
        raise Refusal(
            "E410",
            f"cannot assign to `{text.strip()}`",
            "flowc assigns whole `<data>` variables and the fields of records they hold",
        )
    return ".".join([expr.value, *path])


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
            self.names.reads_session = True
            return Expr(op="ctx", value="sessionid")
        if name == "_event" and self.names.event_unbound:
            return _lit(None)
        if name == "_event":
            raise Refusal(
                "E416",
                "`_event` is read only through its fields",
                "read `_event.data`, `_event.type`, `.sendid`, `.origin`, `.origintype` or "
                "`.invokeid`: each is a payload field of the flowc event",
            )
        if name == "_ioprocessors":
            return self._io_processors()
        if name == "_x":
            raise Refusal("E409", "`_x` (platform data) is not supported")
        raise Refusal("E410", f"unknown name `{name}`", "declare it with <data id=...>")

    def _Attribute(self, node: ast.Attribute) -> Expr:
        _refuse_dunder(node.attr)
        location = self._processor_location(node)
        if location is not None:
            return location
        base = node.value
        if isinstance(base, ast.Name) and base.id == "_event":
            if node.attr == "name":
                return Expr(op="call", value="event_name")
            if node.attr == "data":
                if self.names.data_is_none:
                    return Expr(op="lit", value=None)
                return self._event_field(EVENT_DATA_FIELD)
            if node.attr in EVENT_META_FIELDS:
                return self._event_field(meta_field(node.attr))
            raise Refusal(
                "E416",
                f"`_event.{node.attr}` has no flowc equivalent",
                "`_event` has the fields name, data, type, sendid, origin, origintype and invokeid",
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

    def _io_processors(self) -> Expr:
        """`_ioprocessors`: the one I/O processor flowc has, by its two names, each with the
        session's `location`."""
        entry = Expr(op="map", args=(_lit("location"), session_location()))
        self.names.reads_session = True
        args: list[Expr] = []
        for name in SCXML_PROCESSOR_NAMES:
            args.extend((_lit(name), entry))
        return Expr(op="map", args=tuple(args))

    def _io_processor(self, node: ast.Subscript) -> Expr | None:
        """`_ioprocessors[NAME]` for the SCXML processor: `{"location": ...}`, read where it
        is written; None when `node` is not `_ioprocessors[...]`."""
        if not (isinstance(node.value, ast.Name) and node.value.id == "_ioprocessors"):
            return None
        key = node.slice
        if not (isinstance(key, ast.Constant) and key.value in SCXML_PROCESSOR_NAMES):
            raise Refusal(
                "E409",
                "`_ioprocessors` has only the SCXML event I/O processor",
                f"flowc sends events only with `{SCXML_PROCESSOR}` (or `scxml`)",
            )
        self.names.reads_session = True
        return Expr(op="map", args=(_lit("location"), session_location()))

    def _processor_location(self, node: ast.expr) -> Expr | None:
        """`_ioprocessors[NAME]['location']` (or `.get('location')`, `.location` on it): the
        session's address, or None when `node` is not one."""
        if isinstance(node, ast.Subscript):
            base, key = node.value, node.slice
        elif isinstance(node, ast.Attribute):
            base, key = node.value, ast.Constant(node.attr)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "get"
            and len(node.args) == 1
            and not node.keywords
        ):
            base, key = node.func.value, node.args[0]
        else:
            return None
        if not (isinstance(base, ast.Subscript) and isinstance(key, ast.Constant)):
            return None
        if key.value != "location" or self._io_processor(base) is None:
            return None
        return session_location()

    def _Subscript(self, node: ast.Subscript) -> Expr:
        location = self._processor_location(node)
        if location is not None:
            return location
        processor = self._io_processor(node)
        if processor is not None:
            return processor
        if _is_event_data(node.value):
            key = node.slice
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                return self._event_field(key.value)
            raise Refusal("E416", "`_event.data[...]` takes a string literal key")
        if isinstance(node.slice, ast.Slice):
            raise Refusal("E410", "slices have no flowc equivalent")
        base, key = self.node(node.value), node.slice
        record_field = self.names.is_record_field
        if (
            record_field is not None
            and isinstance(key, ast.Constant)
            and isinstance(key.value, str)
            and record_field(base, key.value)
        ):
            _refuse_dunder(key.value)
            return Expr(op="attr", value=key.value, args=(base,))
        return Expr(op="index", args=(base, self.node(key)))

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
            parts.append(_compared(_COMPARE[type(op)], left, right, self.names.never_none))
            left = right
        result = parts[0]
        for part in parts[1:]:
            result = Expr(op="and", args=(result, part))
        return result

    def _Call(self, node: ast.Call) -> Expr:
        func = node.func
        location = self._processor_location(node)
        if location is not None:
            return location
        if isinstance(func, ast.Attribute):
            return self._method_call(node, func)
        if not isinstance(func, ast.Name):
            raise Refusal("E411", _ONLY_BUILTINS)
        _refuse_dunder(func.id)
        if node.keywords:
            raise Refusal("E410", f"`{func.id}()` with keyword arguments is not supported")
        if func.id == "In":
            return self._in(node)
        if func.id == "hasattr":
            return self._hasattr(node)
        if func.id not in SUPPORTED_CALLS:
            raise Refusal(
                "E411",
                f"the call `{func.id}()` is refused",
                "flowc calls only its builtins: " + ", ".join(sorted(SUPPORTED_CALLS)),
            )
        return Expr(op="call", value=func.id, args=tuple(self.node(a) for a in node.args))

    def _method_call(self, node: ast.Call, func: ast.Attribute) -> Expr:
        """`_event.data.get('NAME')` and the string methods flowc has; other methods are
        refused."""
        if (
            func.attr == "get"
            and _is_event_data(func.value)
            and len(node.args) == 1
            and not node.keywords
        ):
            # `_event.data.get('NAME')`: a field read (a field the event lacks is its default).
            key = node.args[0]
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                return self._event_field(key.value)
            raise Refusal("E416", "`_event.data.get(...)` takes a string literal key")
        if func.attr in _STRING_METHODS:
            if node.args or node.keywords:
                raise Refusal("E411", f"`.{func.attr}()` is translated only without arguments")
            value = self.node(func.value)
            return Expr(op="call", value=_STRING_METHODS[func.attr], args=(value,))
        _refuse_dunder(func.attr)
        self.node(func.value)  # a dunder or forbidden call in the object says more
        raise Refusal("E411", _ONLY_BUILTINS)

    def _hasattr(self, node: ast.Call) -> Expr:
        """`hasattr(_event, 'FIELD')`: true for the fields every SCXML event has, which are
        the ones flowc reads; any other `hasattr` would inspect a Python object."""
        fields = ("name", "data", *EVENT_META_FIELDS)
        if (
            len(node.args) == 2
            and isinstance(node.args[0], ast.Name)
            and node.args[0].id == "_event"
            and isinstance(node.args[1], ast.Constant)
            and node.args[1].value in fields
        ):
            return _lit(True)
        raise Refusal(
            "E411",
            "`hasattr()` is read only as `hasattr(_event, FIELD)`",
            "an event has the fields " + ", ".join(fields),
        )

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

    def _IfExp(self, node: ast.IfExp) -> Expr:
        """`FALLBACK if X is None else X`: flowc's `coalesce(X, FALLBACK)`, the one conditional
        expression it has (what an export writes for it)."""
        test = node.test
        if (
            isinstance(test, ast.Compare)
            and len(test.ops) == 1
            and isinstance(test.ops[0], ast.Is)
            and isinstance(test.comparators[0], ast.Constant)
            and test.comparators[0].value is None
            and ast.dump(test.left) == ast.dump(node.orelse)
        ):
            return Expr(
                op="call", value="coalesce", args=(self.node(node.orelse), self.node(node.body))
            )
        raise Refusal(
            "E410",
            "a conditional expression is read only as `FALLBACK if X is None else X`",
            "flowc's `coalesce(X, FALLBACK)`",
        )

    def _Dict(self, node: ast.Dict) -> Expr:
        if len(node.keys) == 2 and all(key is None for key in node.keys):
            # `{**a, **b}`: flowc's `merge(a, b)` (what an export writes for it)
            return Expr(op="call", value="merge", args=tuple(self.node(v) for v in node.values))
        args: list[Expr] = []
        for key, value in zip(node.keys, node.values, strict=True):
            if key is None:
                raise Refusal("E410", "`**` in a dict literal is not supported")
            args.extend((self.node(key), self.node(value)))
        return Expr(op="map", args=tuple(args))


def _compared(
    op: str, left: Expr, right: Expr, never_none: Callable[[Expr], bool] | None = None
) -> Expr:
    """`left OP right`; an equality with one of the names of SCXML's event I/O processor
    accepts either name (`x in [URI, "scxml"]`): they name one processor, and the suite
    compares `_event.origintype` with the URI in one test and with `scxml` in another. An
    equality of `None` with a value that is never `None` is a constant (flowc types have no
    `none` unless declared optional, and refuse the comparison)."""
    names = Expr(op="list", args=tuple(_lit(n) for n in SCXML_PROCESSOR_NAMES))
    if op in ("==", "!=") and never_none is not None:
        for this, other in ((left, right), (right, left)):
            if other.op == "lit" and other.value is None and never_none(this):
                return _lit(op == "!=")
    if op in ("==", "!="):
        membership = "in" if op == "==" else "not in"
        if _is_processor_name(right):
            return Expr(op=membership, args=(left, names))
        if _is_processor_name(left):
            return Expr(op=membership, args=(right, names))
    return Expr(op=op, args=(left, right))


def _is_processor_name(expr: Expr) -> bool:
    return expr.op == "lit" and isinstance(expr.value, str) and expr.value in SCXML_PROCESSOR_NAMES


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
