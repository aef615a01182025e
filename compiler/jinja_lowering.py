"""The walk of a template's Jinja2 parse tree behind `template_lowering.lower` (kept apart so
that compiling a flow whose templates are plain text never imports Jinja2)."""

from __future__ import annotations

import re
from typing import Any

from jinja2 import TemplateSyntaxError, nodes

from flowc.compiler.template_lowering import NotLowered
from flowc.runtime.templating import BoundedEnvironment

#: The filters a lowered template may use, and how many arguments each takes at most.
FILTERS: dict[str, int] = {
    "tojson": 0,
    "join": 1,
    "length": 0,
    "lower": 0,
    "upper": 0,
    "trim": 0,
}
#: What a lowered template may read of a `for`'s `loop`.
LOOP_MEMBERS = frozenset({"index", "index0", "revindex", "revindex0", "first", "last", "length"})
#: The methods of the time value (`at` in journals), and how many arguments each takes.
METHODS: dict[str, int] = {"isoformat": 0, "strftime": 1}
#: The `strftime` directives a lowered template may use.
STRFTIME_FORMAT = re.compile(r"(?:[^%]|%[YmdHMS%])*")

_COMPARISONS = {"eq": "==", "ne": "!=", "lt": "<", "lteq": "<=", "gt": ">", "gteq": ">="}
_COMPARISONS.update({"in": "in", "notin": "not in"})

Part = dict[str, Any]
Expr = dict[str, Any]

_ENV = BoundedEnvironment()


def lower_parsed(source: str) -> list[Part]:
    """The parts of `source`, from its Jinja2 parse tree."""
    try:
        tree = _ENV.parse(source)
    except TemplateSyntaxError as exc:
        raise NotLowered(f"it does not parse: {exc.message}") from None
    return _Lowering().body(tree.body)


class _Lowering:
    def __init__(self) -> None:
        #: the names `for` parts bind here, innermost last
        self.locals: list[str] = []

    def body(self, stmts: list[nodes.Node]) -> list[Part]:
        parts: list[Part] = []
        for stmt in stmts:
            for part in self.statement(stmt):
                if "text" in part and parts and "text" in parts[-1]:
                    parts[-1] = {"text": parts[-1]["text"] + part["text"]}
                elif part != {"text": ""}:
                    parts.append(part)
        return parts

    def statement(self, node: nodes.Node) -> list[Part]:
        if isinstance(node, nodes.Output):
            return [self.output(n) for n in node.nodes]
        if isinstance(node, nodes.If):
            branches = [{"test": self.expr(node.test), "then": self.body(node.body)}]
            branches += [{"test": self.expr(e.test), "then": self.body(e.body)} for e in node.elif_]
            return [{"if": branches, "else": self.body(node.else_)}]
        if isinstance(node, nodes.For):
            return [self.loop(node)]
        raise NotLowered(f"`{{% {type(node).__name__.lower()} %}}` is not in the subset")

    def output(self, node: nodes.Node) -> Part:
        if isinstance(node, nodes.TemplateData):
            return {"text": node.data}
        return {"print": self.expr(node)}

    def loop(self, node: nodes.For) -> Part:
        if node.recursive or node.test is not None:
            raise NotLowered("a `for` with `recursive` or `if` is not in the subset")
        if not isinstance(node.target, nodes.Name) or node.target.name == "loop":
            raise NotLowered(
                "a `for` over several names, or one named `loop`, is not in the subset"
            )
        items = self.expr(node.iter)
        self.locals += [node.target.name, "loop"]
        try:
            body = self.body(node.body)
        finally:
            del self.locals[-2:]
        return {"for": node.target.name, "in": items, "body": body, "else": self.body(node.else_)}

    def expr(self, node: nodes.Node) -> Expr:
        if isinstance(node, nodes.Const):
            return _lit(node.value)
        if isinstance(node, nodes.Neg) and isinstance(node.node, nodes.Const):
            value = node.node.value
            if isinstance(value, int | float) and not isinstance(value, bool):
                return _lit(-value)  # a negative number: `xs[-1]`
        if isinstance(node, nodes.Name):
            if self._is_loop(node):
                raise NotLowered("`loop` is in the subset only as `loop.index`, `loop.last`, ...")
            op = "local" if node.name in self.locals else "var"
            return {"op": op, "value": node.name}
        if isinstance(node, nodes.Getattr):
            if self._is_loop(node.node):
                if node.attr not in LOOP_MEMBERS:
                    raise NotLowered(f"`loop.{node.attr}` is not in the subset")
                loop = {"op": "local", "value": "loop"}
                return {"op": "attr", "value": node.attr, "args": [loop]}
            return {"op": "attr", "value": node.attr, "args": [self.expr(node.node)]}
        if isinstance(node, nodes.Getitem):
            return {"op": "index", "args": [self.expr(node.node), self.expr(node.arg)]}
        if isinstance(node, nodes.List):
            return {"op": "list", "args": [self.expr(i) for i in node.items]}
        if isinstance(node, nodes.Not):
            return {"op": "not", "args": [self.expr(node.node)]}
        if isinstance(node, nodes.And | nodes.Or | nodes.Concat):
            return self.binary(node)
        if isinstance(node, nodes.Compare):
            return self.compare(node)
        if isinstance(node, nodes.CondExpr):
            other = self.expr(node.expr2) if node.expr2 is not None else _lit(None)
            return {"op": "cond", "args": [self.expr(node.test), self.expr(node.expr1), other]}
        if isinstance(node, nodes.Filter):
            return self.filter(node)
        if isinstance(node, nodes.Call):
            if isinstance(node.node, nodes.EnvironmentAttribute):
                # The bounds the runtime's environment adds to every parse (a loop's count, a
                # `~`'s size): not the template's own.
                return self.expr(node.args[0])
            return self.method(node)
        raise NotLowered(f"`{_shown(node)}` is not in the subset")

    def _is_loop(self, node: nodes.Node) -> bool:
        """`loop` inside a `for` (whose own variable cannot be called `loop`: `loop`)."""
        return isinstance(node, nodes.Name) and node.name == "loop" and "loop" in self.locals

    def binary(self, node: nodes.And | nodes.Or | nodes.Concat) -> Expr:
        if isinstance(node, nodes.Concat):
            if len(node.nodes) == 1:
                return self.expr(node.nodes[0])
            operands = [self.expr(n) for n in node.nodes]
            out = operands[0]
            for operand in operands[1:]:
                out = {"op": "~", "args": [out, operand]}
            return out
        op = "and" if isinstance(node, nodes.And) else "or"
        return {"op": op, "args": [self.expr(node.left), self.expr(node.right)]}

    def compare(self, node: nodes.Compare) -> Expr:
        if len(node.ops) != 1:
            raise NotLowered("a chained comparison is not in the subset")
        op = _COMPARISONS[node.ops[0].op]
        return {"op": op, "args": [self.expr(node.expr), self.expr(node.ops[0].expr)]}

    def filter(self, node: nodes.Filter) -> Expr:
        most = FILTERS.get(node.name)
        if most is None:
            raise NotLowered(f"the filter `{node.name}` is not in the subset")
        if node.kwargs or node.dyn_args or node.dyn_kwargs or len(node.args) > most:
            raise NotLowered(f"`{node.name}` with these arguments is not in the subset")
        assert node.node is not None  # a filter block (`{% filter %}`) is refused above
        args = [self.expr(node.node), *(self.expr(a) for a in node.args)]
        return {"op": "filter", "value": node.name, "args": args}

    def method(self, node: nodes.Call) -> Expr:
        callee = node.node
        if not isinstance(callee, nodes.Getattr) or callee.attr not in METHODS:
            raise NotLowered("a call other than `at.isoformat()` or `at.strftime(...)`")
        if not (isinstance(callee.node, nodes.Name) and callee.node.name == "at"):
            raise NotLowered(f"`{callee.attr}` is in the subset only as a method of `at`")
        if (
            node.kwargs
            or node.dyn_args
            or node.dyn_kwargs
            or len(node.args) != METHODS[callee.attr]
        ):
            raise NotLowered(f"`{callee.attr}` with these arguments is not in the subset")
        if callee.attr == "strftime":
            fmt = node.args[0]
            if not isinstance(fmt, nodes.Const) or not isinstance(fmt.value, str):
                raise NotLowered("`strftime` takes a literal format in the subset")
            if not STRFTIME_FORMAT.fullmatch(fmt.value):
                raise NotLowered("`strftime` takes only %Y %m %d %H %M %S %% in the subset")
        args = [self.expr(callee.node), *(self.expr(a) for a in node.args)]
        return {"op": "method", "value": callee.attr, "args": args}


def _lit(value: Any) -> Expr:
    if value is not None and not isinstance(value, str | int | float | bool):
        raise NotLowered(f"the literal `{value!r}` is not in the subset")
    return {"op": "lit"} if value is None else {"op": "lit", "value": value}


def _shown(node: nodes.Node) -> str:
    names = {
        nodes.Add: "+",
        nodes.Sub: "-",
        nodes.Mul: "*",
        nodes.Div: "/",
        nodes.FloorDiv: "//",
        nodes.Mod: "%",
        nodes.Pow: "**",
        nodes.Neg: "unary -",
        nodes.Test: "is",
        nodes.Dict: "{...}",
        nodes.Tuple: "(...)",
        nodes.Slice: "[a:b]",
    }
    for kind, text in names.items():
        if isinstance(node, kind):
            return text
    return type(node).__name__
