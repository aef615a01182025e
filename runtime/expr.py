"""Guards and actions: IR expressions -> Python closures, built once per machine.

Nothing here evaluates text: each IR node becomes a small closure over its children's closures,
so evaluating a guard is a handful of Python calls. Leaves are folded into their parent where
that saves a call (`ctx.x < 3` reads the context and compares in one closure).

Every evaluator takes `(context, payload, state)`: the context dict being worked on, the
normalised event payload (None outside events) and the current state (anything with `name`,
`title` and `meta`). Run-time faults (division by zero, an index out of range, a missing map
key, none where a value is needed) surface as the exceptions in `FAULTS`; the step that
evaluates them turns any of them into an `expression_error` rejection and commits nothing.
`describe_fault` words them.

Actions never change a container in place: they copy the dicts and lists along their target
path first (copy-on-write). That is what lets a committed context, the defaults of a machine
and the values inside a payload be shared freely between steps and instances.
"""

from __future__ import annotations

import contextlib
import json
import math
import operator
from collections.abc import Callable, Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import Any, Protocol

from flowc.runtime.builtins import ACTION_FUNCTIONS, BUILTINS, EXPRESSION_FUNCTIONS, QUANTIFIERS
from flowc.runtime.configuration import current_scope
from flowc.runtime.limits import DEFAULT_LIMITS, LimitExceeded, Limits
from flowc.runtime.model import IRLoadError, value_too_deep
from flowc.runtime.operators import BINARY_OPERATORS, EVALUATED
from flowc.runtime.outputs import Scheduling, current_outputs, step_budget
from flowc.runtime.validate import Invalid, Type


class StateLike(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def title(self) -> str: ...

    @property
    def meta(self) -> Mapping[str, Any]: ...


Evaluator = Callable[[dict[str, Any], Any, Any], Any]
ActionBlock = Callable[[dict[str, Any], Any, Any], None]


class ExprFault(Exception):
    """A run-time fault with a detail worded for the `expression_error` message."""


#: What evaluating a compiled expression may raise for a fault in the data (not in flowc).
FAULTS: tuple[type[BaseException], ...] = (
    ExprFault,
    LimitExceeded,
    ArithmeticError,
    LookupError,
    TypeError,
    ValueError,
    AttributeError,
    RecursionError,
)


def describe_fault(exc: BaseException) -> str:
    text = _describe(exc)
    return text if len(text) <= 300 else text[:300] + "..."


def _describe(exc: BaseException) -> str:
    if isinstance(exc, ExprFault | LimitExceeded):
        return str(exc)
    if isinstance(exc, ZeroDivisionError):
        return "division by zero"
    if isinstance(exc, TypeError) and "NoneType" in str(exc):
        return "a value is none where one is needed"
    if isinstance(exc, RecursionError):
        return "the value is nested too deeply"
    return f"{type(exc).__name__}: {exc}"


# ---- functions ------------------------------------------------------------------------------


def _round(x: float) -> int:
    # Half away from zero, like most people (and JavaScript for positives) expect; Python's
    # built-in rounds half to even.
    if not math.isfinite(x):
        raise ExprFault(f"cannot round {x!r}")
    magnitude = abs(x)
    whole = math.floor(magnitude)
    # `magnitude - whole` is exact; adding 0.5 first would round 0.49999999999999994 up.
    if magnitude - whole >= 0.5:
        whole += 1
    return whole if x >= 0 else -whole


def _extreme(pick: Callable[..., Any], name: str) -> Callable[..., Any]:
    def fn(*args: Any) -> Any:
        if len(args) == 1 and isinstance(args[0], list):
            if not args[0]:
                raise ExprFault(f"{name}() of an empty list")
            return pick(args[0])
        return pick(args)

    return fn


def _merge(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict[str, Any]:
    return {**a, **b}


def _to_str(x: Any) -> str:
    # The language's spelling of values, not Python's (`true`, not `True`).
    if x is True:
        return "true"
    if x is False:
        return "false"
    if x is None:
        return "none"
    return str(x) if not isinstance(x, float) else repr(x)


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "len": len,
    "min": _extreme(min, "min"),
    "max": _extreme(max, "max"),
    "abs": abs,
    "round": _round,
    "merge": _merge,
    "keys": list,
    "values": lambda m: list(m.values()),
    "lower": str.lower,
    "upper": str.upper,
    "trim": str.strip,
    "str": _to_str,
}
# `coalesce` is compiled specially: its default is evaluated only when needed; `active` and
# `event_name` read the step, not a value (runtime/configuration.py).
assert set(FUNCTIONS) | {"coalesce", "active", "event_name"} == EXPRESSION_FUNCTIONS


#: A comparison's closure of two leaves: the leaves' values (two names, or a name and a value).
Shape = Callable[[Any, Any], "Evaluator"]


def _comparison(
    ctx_lit: Shape, event_lit: Shape, ctx_ctx: Shape, event_ctx: Shape
) -> dict[tuple[str, str], Shape]:
    """One operator's closures for the leaf shapes guards are made of (`ctx.x < 3`,
    `event.y == ctx.z`), by the ops of its two operands, with the operator written inline (no
    call to `operator.eq` and friends)."""
    return {
        ("ctx", "lit"): ctx_lit,
        ("event", "lit"): event_lit,
        ("ctx", "ctx"): ctx_ctx,
        ("event", "ctx"): event_ctx,
    }


_COMPARE: dict[Callable[[Any, Any], Any], dict[tuple[str, str], Shape]] = {
    operator.eq: _comparison(
        lambda k, v: lambda c, e, s: c[k] == v,
        lambda k, v: lambda c, e, s: e[k] == v,
        lambda k, j: lambda c, e, s: c[k] == c[j],
        lambda k, j: lambda c, e, s: e[k] == c[j],
    ),
    operator.ne: _comparison(
        lambda k, v: lambda c, e, s: c[k] != v,
        lambda k, v: lambda c, e, s: e[k] != v,
        lambda k, j: lambda c, e, s: c[k] != c[j],
        lambda k, j: lambda c, e, s: e[k] != c[j],
    ),
    operator.lt: _comparison(
        lambda k, v: lambda c, e, s: c[k] < v,
        lambda k, v: lambda c, e, s: e[k] < v,
        lambda k, j: lambda c, e, s: c[k] < c[j],
        lambda k, j: lambda c, e, s: e[k] < c[j],
    ),
    operator.le: _comparison(
        lambda k, v: lambda c, e, s: c[k] <= v,
        lambda k, v: lambda c, e, s: e[k] <= v,
        lambda k, j: lambda c, e, s: c[k] <= c[j],
        lambda k, j: lambda c, e, s: e[k] <= c[j],
    ),
    operator.gt: _comparison(
        lambda k, v: lambda c, e, s: c[k] > v,
        lambda k, v: lambda c, e, s: e[k] > v,
        lambda k, j: lambda c, e, s: c[k] > c[j],
        lambda k, j: lambda c, e, s: e[k] > c[j],
    ),
    operator.ge: _comparison(
        lambda k, v: lambda c, e, s: c[k] >= v,
        lambda k, v: lambda c, e, s: e[k] >= v,
        lambda k, j: lambda c, e, s: c[k] >= c[j],
        lambda k, j: lambda c, e, s: e[k] >= c[j],
    ),
}

#: The binary operators' functions (runtime/operators.py, the one table of them).
BINARY: dict[str, Callable[[Any, Any], Any]] = dict(EVALUATED)

# ---- closure factories (one per shape, so that compiling a node makes only its own cells) ----


def _read_ctx(key: str) -> Evaluator:
    return lambda c, e, s: c[key]


def _read_event(key: str) -> Evaluator:
    return lambda c, e, s: e[key]


def _read_meta(key: str) -> Evaluator:
    return lambda c, e, s: s.meta.get(key)


def _and(a: Evaluator, b: Evaluator) -> Evaluator:
    return lambda c, e, s: a(c, e, s) and b(c, e, s)


def _or(a: Evaluator, b: Evaluator) -> Evaluator:
    return lambda c, e, s: a(c, e, s) or b(c, e, s)


def _not(a: Evaluator) -> Evaluator:
    return lambda c, e, s: not a(c, e, s)


#: A local name's key in the context dict its body is evaluated with (`_quantifier`): no context
#: field's name starts with it.
LOCAL_PREFIX = "%"


def _read_local(name: str) -> Evaluator:
    key = LOCAL_PREFIX + name
    return lambda c, e, s: c[key]


def _quantifier(
    kind: str, name: str, listed: Evaluator, body: Evaluator, limits: Limits
) -> Evaluator:
    """`any(x in xs: BODY)` and the other QUANTIFIERS: BODY evaluated on a shallow copy of the
    context holding the local `x` (the context itself is never written), item by item; the
    items are charged to the step's loop budget first."""
    key = LOCAL_PREFIX + name
    fold = _QUANTIFIED[kind]

    def quantified(c: dict[str, Any], e: Any, s: Any) -> Any:
        items = listed(c, e, s)
        if type(items) is not list:
            raise ExprFault(f"`{kind}` needs a list, got {_kind_of(items)}")
        inner = dict(c)

        def each(x: Any) -> Any:
            inner[key] = x
            return body(inner, e, s)

        with step_budget() as out:  # one budget for the quantifiers nested in BODY too
            out.charge_loop(len(items), limits)
            return fold(map(each, items), limits)

    return quantified


def _fewest(values: Iterator[Any], limits: Limits) -> Any:
    found = min(values, default=_NOTHING)
    if found is _NOTHING:
        raise ExprFault("`min` of an empty list")
    return found


def _most(values: Iterator[Any], limits: Limits) -> Any:
    found = max(values, default=_NOTHING)
    if found is _NOTHING:
        raise ExprFault("`max` of an empty list")
    return found


_NOTHING = object()

#: How each quantifier folds the body's values (taken lazily: `any` stops at the first true).
_QUANTIFIED: dict[str, Callable[[Iterator[Any], Limits], Any]] = {
    "any": lambda values, limits: any(values),
    "all": lambda values, limits: all(values),
    "count": lambda values, limits: sum(1 for v in values if v),
    "sum": lambda values, limits: limits.check_computed(sum(values)),
    "min": _fewest,
    "max": _most,
}


def _cond(test: Evaluator, then: Evaluator, other: Evaluator) -> Evaluator:
    return lambda c, e, s: then(c, e, s) if test(c, e, s) else other(c, e, s)


def _neg(a: Evaluator) -> Evaluator:
    return lambda c, e, s: -a(c, e, s)


def _list_of(items: tuple[Evaluator, ...]) -> Evaluator:
    return lambda c, e, s: [f(c, e, s) for f in items]


def _record_of(fixed: tuple[tuple[Any, Evaluator], ...]) -> Evaluator:
    return lambda c, e, s: {k: v(c, e, s) for k, v in fixed}


def _map_of(pairs: tuple[tuple[Evaluator, Evaluator], ...]) -> Evaluator:
    return lambda c, e, s: {k(c, e, s): v(c, e, s) for k, v in pairs}


Binary = Callable[[Any, Any], Any]


def _ctx_op_lit(fn: Binary, k: str, v: Any) -> Evaluator:
    return lambda c, e, s: fn(c[k], v)


def _event_op_lit(fn: Binary, k: str, v: Any) -> Evaluator:
    return lambda c, e, s: fn(e[k], v)


def _any_op_lit(fn: Binary, a: Evaluator, v: Any) -> Evaluator:
    return lambda c, e, s: fn(a(c, e, s), v)


def _ctx_op_ctx(fn: Binary, k1: str, k2: str) -> Evaluator:
    return lambda c, e, s: fn(c[k1], c[k2])


def _event_op_ctx(fn: Binary, k1: str, k2: str) -> Evaluator:
    return lambda c, e, s: fn(e[k1], c[k2])


def _lit_op_any(fn: Binary, v: Any, b: Evaluator) -> Evaluator:
    return lambda c, e, s: fn(v, b(c, e, s))


def _any_op_any(fn: Binary, a: Evaluator, b: Evaluator) -> Evaluator:
    return lambda c, e, s: fn(a(c, e, s), b(c, e, s))


def _missing(o: Any, key: str) -> ExprFault:
    if o is None:
        return ExprFault(f"cannot read `.{key}` of none")
    return ExprFault(f"the value has no field `{key}`")


def _event_attr(k: str, key: str) -> Evaluator:
    def event_attr(c: dict[str, Any], e: Any, s: Any) -> Any:
        o = e[k]
        try:
            return o[key]
        except (KeyError, TypeError):
            raise _missing(o, key) from None

    return event_attr


def _attr_of(a: Evaluator, key: str) -> Evaluator:
    def attr(c: dict[str, Any], e: Any, s: Any) -> Any:
        o = a(c, e, s)
        try:
            return o[key]
        except (KeyError, TypeError):
            raise _missing(o, key) from None

    return attr


def _coalesce(a: Evaluator, b: Evaluator) -> Evaluator:
    def coalesce(c: dict[str, Any], e: Any, s: Any) -> Any:
        v = a(c, e, s)
        return b(c, e, s) if v is None else v

    return coalesce


def _call_event(fn: Callable[..., Any], k: str) -> Evaluator:
    return lambda c, e, s: fn(e[k])


def _call_ctx(fn: Callable[..., Any], k: str) -> Evaluator:
    return lambda c, e, s: fn(c[k])


def _call1(fn: Callable[..., Any], f0: Evaluator) -> Evaluator:
    return lambda c, e, s: fn(f0(c, e, s))


def _call2(fn: Callable[..., Any], f0: Evaluator, f1: Evaluator) -> Evaluator:
    return lambda c, e, s: fn(f0(c, e, s), f1(c, e, s))


def _call_n(fn: Callable[..., Any], fs: tuple[Evaluator, ...]) -> Evaluator:
    return lambda c, e, s: fn(*[f(c, e, s) for f in fs])


# ---- compiler -------------------------------------------------------------------------------


#: The members of an expression object (the IR's `Expr`).
_EXPR_MEMBERS = frozenset({"op", "args", "value"})

#: The actions that store a value at a context path (the others are blocks or raise, emit).
_STORES = frozenset({"set", "add", "sub", "append", "remove"})

#: The field types of an action block that runs for no event (entry, exit, a timer's rule).
_NO_FIELDS: Mapping[str, Type] = MappingProxyType({})


class ExprCompiler:
    """Compiles the expressions of one machine, read in their JSON form. `limits` bounds
    what `*` may build and what actions may store (`LimitExceeded`)."""

    def __init__(
        self,
        limits: Limits = DEFAULT_LIMITS,
        *,
        configuration: bool = True,
        effects: frozenset[str] | None = None,
    ) -> None:
        self._cache: dict[int, tuple[Any, Evaluator]] = {}
        self.limits = limits
        #: The binary operators' functions: `*` is bounded (it alone can grow a value past the
        #: limits within one expression: `n * n * n * n`).
        self._binaries: dict[str, Callable[[Any, Any], Any]] = {
            **BINARY,
            **{s: limits.mul for s, op in BINARY_OPERATORS.items() if op.bounded},
        }
        #: The effects an `emit` may name (None: any). A machine passes the flow's, so that a
        #: step's plan asks whether its blocks emit only in a flow that declares some.
        self.effects = effects
        #: Whether `active` and `event_name` may be called: they came with IR version 2, and
        #: a version 1 flow is run knowing it calls neither (`Machine.reads_active`).
        self.configuration = configuration

    def binary(self, op: str) -> Callable[[Any, Any], Any]:
        """The function of binary operator `op`."""
        return self._binaries[op]

    def bound(self, op: str, value: Any, ty: Type) -> Callable[[Any], Any] | None:
        """The check of a value of type `ty` an action stores, or None when it needs none: a
        payload field, a context field or a literal is already within the limits, and so is a
        number of a bounded size, a boolean or an enum member; anything else computed (and
        anything added to) is checked (`Limits.check_computed`)."""
        return self._bound(op, _leaf(value), ty)

    def _bound(
        self, op: str, leaf: tuple[str, Any] | None, ty: Type
    ) -> Callable[[Any], Any] | None:
        if not (op in ("add", "sub") or leaf is None):
            return None
        kind = ty.item.kind if ty.kind == "optional" and ty.item is not None else ty.kind
        if kind in ("float", "bool", "enum"):
            return None
        if kind == "int":
            return self.limits.check_int
        if kind == "str":
            return self.limits.check_str
        return self.limits.check_computed

    def compile(self, node: Any) -> Evaluator:
        """The closure of expression `node`, compiled once (a whole expression is kept by
        identity; the nodes inside it are compiled as its parts, see `_build`)."""
        found = self._cache.get(id(node))
        if found is not None:
            return found[1]
        try:
            fn = self._build(node)
        except RecursionError:
            raise IRLoadError("an expression is nested too deeply") from None
        except TypeError as exc:  # a node of the wrong shape: an `op` that is a list, ...
            raise IRLoadError(f"malformed expression: {exc}") from None
        self._cache[id(node)] = (node, fn)  # keeps `node` alive, so its id stays unique
        return fn

    def guard(self, node: Any) -> Evaluator | None:
        return None if node is None else self.compile(node)

    def _build(self, node: Any) -> Evaluator:
        # A pair's first use compiles its guards and actions (docs/runtime.md, Performance),
        # so this is kept lean: the nodes inside an expression are built by direct recursion
        # (no cache), and the IR is plain dicts, so the exact type test comes before the ABC's.
        if type(node) is not dict and not isinstance(node, Mapping):
            raise IRLoadError(f"an expression must be an object, got {node!r}")
        if not _EXPR_MEMBERS.issuperset(node):
            unknown = ", ".join(sorted(repr(k) for k in node.keys() - _EXPR_MEMBERS)[:5])
            raise IRLoadError(f"an expression has unknown field(s) {unknown}")
        op: Any = node.get("op")
        value = node.get("value")
        if op == "ctx":
            return _read_ctx(_name(value, op))
        if op == "event":
            return _read_event(_name(value, op))
        if op == "lit":
            return _literal(value)
        raw_args = node.get("args")
        args = raw_args if type(raw_args) is list else list(raw_args) if raw_args else []
        fn = self._binaries.get(op)
        if fn is not None:
            if len(args) != 2:
                _arity(op, args, 2)
            return self._binary(fn, args[0], args[1])
        build = _NODE_BUILDERS.get(op)
        if build is None:
            raise IRLoadError(f"unknown expression op {op!r}")
        return build(self, op, value, args)

    # The builders of the other ops, by `_NODE_BUILDERS`: each is given the node's op, value
    # and arguments.
    def _build_state(self, op: str, value: Any, args: list[Any]) -> Evaluator:
        if value == "name":
            return _state_name
        if value == "title":
            return _state_title
        raise IRLoadError(f"`state.{value}` is not readable in expressions")

    def _build_meta(self, op: str, value: Any, args: list[Any]) -> Evaluator:
        return _read_meta(_name(value, op))

    def _build_local(self, op: str, value: Any, args: list[Any]) -> Evaluator:
        return _read_local(_name(value, op))

    def _build_and(self, op: str, value: Any, args: list[Any]) -> Evaluator:
        _arity(op, args, 2)
        return _and(self._build(args[0]), self._build(args[1]))

    def _build_or(self, op: str, value: Any, args: list[Any]) -> Evaluator:
        _arity(op, args, 2)
        return _or(self._build(args[0]), self._build(args[1]))

    def _build_not(self, op: str, value: Any, args: list[Any]) -> Evaluator:
        _arity(op, args, 1)
        return _not(self._build(args[0]))

    def _build_neg(self, op: str, value: Any, args: list[Any]) -> Evaluator:
        _arity(op, args, 1)
        return _neg(self._build(args[0]))

    def _build_quantifier(self, op: str, value: Any, args: list[Any]) -> Evaluator:
        _arity(op, args, 2)
        listed, body = self._build(args[0]), self._build(args[1])
        return _quantifier(op, _name(value, op), listed, body, self.limits)

    def _build_cond(self, op: str, value: Any, args: list[Any]) -> Evaluator:
        _arity(op, args, 3)
        return _cond(self._build(args[0]), self._build(args[1]), self._build(args[2]))

    def _build_attr(self, op: str, value: Any, args: list[Any]) -> Evaluator:
        _arity(op, args, 1)
        return self._attr(args[0], _name(value, op))

    def _build_index(self, op: str, value: Any, args: list[Any]) -> Evaluator:
        _arity(op, args, 2)
        return self._index(self._build(args[0]), self._build(args[1]))

    def _build_call(self, op: str, value: Any, args: list[Any]) -> Evaluator:
        return self._call(_name(value, op), args)

    def _build_list(self, op: str, value: Any, args: list[Any]) -> Evaluator:
        return _list_of(tuple(map(self._build, args)))

    def _build_map(self, op: str, value: Any, args: list[Any]) -> Evaluator:
        return self._map(args)

    def _map(self, args: list[Any]) -> Evaluator:
        if len(args) % 2:
            raise IRLoadError("a map expression needs key, value pairs")
        build = self._build
        keys = [_leaf(k) for k in args[0::2]]
        if all(k is not None and k[0] == "lit" for k in keys):
            # Record literals: constant keys, evaluated values.
            fixed = []
            for i in range(0, len(args), 2):
                fixed.append((args[i].get("value"), build(args[i + 1])))
            return _record_of(tuple(fixed))
        pairs = []
        for i in range(0, len(args), 2):
            pairs.append((build(args[i]), build(args[i + 1])))
        return _map_of(tuple(pairs))

    # The closures are made by the module's small factories below, not here: a function
    # holding a lambda puts the variables the lambda reads into cells on every call, whichever
    # branch it takes, and a pair's first use calls these once per node.
    def _binary(
        self, fn: Callable[[Any, Any], Any], left: Mapping[str, Any], right: Mapping[str, Any]
    ) -> Evaluator:
        # The shapes guards are made of, folded into one closure each.
        lk: Any = left.get("op")
        rk: Any = right.get("op")
        shapes = _COMPARE.get(fn)
        if shapes is not None:
            shape = shapes.get((lk, rk))
            if shape is not None:
                lv, rv = left.get("value"), right.get("value")
                if type(lv) is str and (rk == "lit" or type(rv) is str):
                    return shape(lv, rv)
        if rk == "lit":
            v = right.get("value")
            if lk == "ctx":
                return _ctx_op_lit(fn, _name(left.get("value"), "ctx"), v)
            if lk == "event":
                return _event_op_lit(fn, _name(left.get("value"), "event"), v)
            return _any_op_lit(fn, self._build(left), v)
        if lk == "ctx" and rk == "ctx":
            k1, k2 = _name(left.get("value"), "ctx"), _name(right.get("value"), "ctx")
            return _ctx_op_ctx(fn, k1, k2)
        if lk == "event" and rk == "ctx":
            k1, k2 = _name(left.get("value"), "event"), _name(right.get("value"), "ctx")
            return _event_op_ctx(fn, k1, k2)
        if lk == "lit":
            return _lit_op_any(fn, left.get("value"), self._build(right))
        return _any_op_any(fn, self._build(left), self._build(right))

    def _attr(self, obj: Mapping[str, Any], key: str) -> Evaluator:
        if obj.get("op") == "event":
            return _event_attr(_name(obj.get("value"), "event"), key)
        return _attr_of(self._build(obj), key)

    def _index(self, obj: Evaluator, key: Evaluator) -> Evaluator:
        def index(c: dict[str, Any], e: Any, s: Any) -> Any:
            o = obj(c, e, s)
            k = key(c, e, s)
            if type(o) is list:
                if type(k) is not int or not 0 <= k < len(o):
                    raise ExprFault(f"index {k!r} is out of range for a list of {len(o)} items")
                return o[k]
            if o is None:
                raise ExprFault("cannot index none")
            try:
                return o[k]
            except KeyError:
                raise ExprFault(f"no key {k!r} in the map") from None

        return index

    def _call(self, name: str, args: Sequence[Mapping[str, Any]]) -> Evaluator:
        if name == "coalesce":
            _arity(name, args, 2)
            return _coalesce(self._build(args[0]), self._build(args[1]))
        if name == "active" or name == "event_name":
            return self._configuration_call(name, args)
        fn = FUNCTIONS.get(name)
        if fn is None:
            raise IRLoadError(f"unknown function {name!r}")
        known = BUILTINS[name]
        if not known.least <= len(args) <= known.most:
            raise IRLoadError(
                f"`{name}` takes {known.least} to {known.most} arguments, got {len(args)}"
            )
        fs = tuple(map(self._build, args))
        if len(fs) == 1:
            leaf = _leaf(args[0])
            if leaf is not None and leaf[0] == "event":
                return _call_event(fn, leaf[1])
            if leaf is not None and leaf[0] == "ctx":
                return _call_ctx(fn, leaf[1])
            return _call1(fn, fs[0])
        if len(fs) == 2:
            return _call2(fn, fs[0], fs[1])
        return _call_n(fn, fs)

    def _configuration_call(self, name: str, args: Sequence[Mapping[str, Any]]) -> Evaluator:
        """`active(S)` and `event_name()`, which read the step's configuration and event."""
        if not self.configuration:
            raise IRLoadError(f"`{name}` needs IR version 2, the flow is version 1")
        if name == "active":
            _arity(name, args, 1)
            return _active(args[0])
        _arity(name, args, 0)
        return _event_name

    # ---- actions ----------------------------------------------------------------------------
    def actions(
        self,
        raw: Sequence[Any],
        target_type: Callable[[Sequence[str]], Type],
        event_types: Mapping[str, Type] | None = None,
    ) -> ActionBlock | None:
        """One closure running the actions in order; None when there are none.

        Within one block, a record copied by an earlier action is not copied again: the
        compiler tracks which context paths already hold a copy made by this block (and
        forgets one as soon as it is replaced, or read by a value that could keep a
        reference to it), so `understand.a = ..; understand.b = ..` copies `understand` once.
        """
        types = event_types or _NO_FIELDS
        if len(raw) == 1 and type(raw[0]) is dict:
            # One action, most blocks: nothing before it copied anything (`action_plan`).
            return self._action(raw[0], target_type, types, 0)
        steps = []
        for a, depth in action_plan(raw):
            steps.append(self._action(a, target_type, types, depth))
        if not steps:
            return None
        if len(steps) == 1:
            return steps[0]
        return _block(tuple(steps))

    def _action(
        self,
        raw: Mapping[str, Any],
        target_type: Callable[[Sequence[str]], Type],
        event_types: Mapping[str, Type],
        fresh_depth: int,
    ) -> ActionBlock:
        op = raw.get("op")
        if op not in _STORES:
            return self._control(raw, target_type, event_types, fresh_depth)
        path = _target_path(raw)
        value_node = raw.get("value")
        # A leaf a `set` may store as it is (`x = event.y`, the commonest action) needs no
        # closure of its own: it is checked as compiling it would check it, and compiled only
        # if it is used after all. Anything else is compiled (and so checked) first, as ever.
        leaf = _checked_leaf(value_node)
        value: Evaluator | None = None
        if leaf is None or len(path) > 2:
            value = self.compile(value_node)
        elif op != "set":
            value = _leaf_closure(leaf)  # what `_build` makes of it, checked as it checks it
        ty = target_type(path)
        if op == "append" or op == "remove":
            assert value is not None
            return self._list_change(raw, path, ty, value, event_types, fresh_depth)
        # (A pair's first use compiles its block: each helper called is one more cold call,
        # so the common answers are written here: a leaf `set` has no bound, a type that
        # needs no normalising is stored as it is.)
        bound = None if op == "set" and leaf is not None else self._bound(op, leaf, ty)
        norm = _identity if ty.normal else _normaliser(ty, path, value_node, event_types)
        if bound is not None:
            norm = bound if norm is _identity else _then(bound, norm)
        if op == "set":
            if norm is _identity and leaf is not None and len(path) <= 2:
                return _set_leaf(path, leaf, fresh_depth)
            return _set(path, value or self.compile(value_node), norm, fresh_depth)
        assert value is not None
        if len(path) == 1:  # `n += 1`, a counter: one closure
            return (_add_top if op == "add" else _sub_top)(path[0], value, norm)
        if op == "add":
            return _update(path, _added(norm), value, fresh_depth)
        return _update(path, _subtracted(norm), value, fresh_depth)  # sub

    def _control(
        self,
        raw: Mapping[str, Any],
        target_type: Callable[[Sequence[str]], Type],
        event_types: Mapping[str, Type],
        fresh_depth: int,
    ) -> ActionBlock:
        """An action that is not a plain store: `raise`, `if`, `emit`, `send` and `cancel`
        (scheduled events), the loops, `put` and `delete`."""
        op = raw.get("op")
        if op == "raise":
            return self._raise(raw)
        if op == "if":
            return self._if(raw, target_type, event_types)
        if op == "emit":
            return self._emit(raw)
        if op == "send" or op == "cancel":
            return self._schedule(raw)
        if op == "for" or op == "each":
            return self._for(raw, target_type, event_types)
        if op == "put" or op == "delete":
            return self._keyed(raw, target_type, event_types, fresh_depth)
        raise IRLoadError(f"unknown action op {op!r}")

    def _list_change(
        self,
        raw: Mapping[str, Any],
        path: tuple[str, ...],
        ty: Type,
        value: Evaluator,
        event_types: Mapping[str, Type],
        fresh_depth: int,
    ) -> ActionBlock:
        """`append` and `remove`: a new list at `path` with the one item added or taken out."""
        op = raw.get("op")
        if ty.kind != "list" or ty.item is None:
            raise IRLoadError(f"`{op}` needs a list field, `{'.'.join(path)}` is not one")
        if op == "remove":
            return _update(path, _removed, value, fresh_depth)
        value_node = raw.get("value")
        bound = self.bound("append", value_node, ty.item)
        item_norm = _then(bound, _normaliser(ty.item, path, value_node, event_types, item=True))
        appended = _appender(self.limits.max_items, item_norm)
        return _update(path, appended, value, fresh_depth)

    def _keyed(
        self,
        raw: Mapping[str, Any],
        target_type: Callable[[Sequence[str]], Type],
        event_types: Mapping[str, Type],
        fresh_depth: int,
    ) -> ActionBlock:
        """`xs[i] = v`, `m[k] = v` (`put`) and `delete(m, k)`: a new list or map at the target
        path with the one item replaced, set or removed (copy-on-write, as `append`)."""
        op = raw["op"]
        path = tuple(raw.get("target") or ())
        if not path or not all(type(p) is str for p in path):
            raise IRLoadError(f"`{op}` needs a target path, got {raw.get('target')!r}")
        ty = target_type(path)
        kinds = ("list", "map") if op == "put" else ("map",)
        if ty.kind not in kinds or ty.item is None:
            raise IRLoadError(
                f"`{op}` needs a {' or '.join(kinds)} field, `{'.'.join(path)}` is not"
            )
        key = self.compile(raw.get("key"))
        if op == "delete":
            return _update(path, _deleted, key, fresh_depth)
        value_node = raw.get("value")
        value = self.compile(value_node)
        norm = _then(
            self.bound("put", value_node, ty.item),
            _normaliser(ty.item, path, value_node, event_types, item=True),
        )
        change = _list_put(norm) if ty.kind == "list" else _map_put(self.limits.max_items, norm)
        return _update(path, change, _pair(key, value), fresh_depth)

    def _raise(self, raw: Mapping[str, Any]) -> ActionBlock:
        """`raise EVENT(...)`: queue an internal event for the step's engine (its payload is
        checked against the event's fields when the engine takes it, as a sent one is)."""
        name = raw.get("event")
        if not isinstance(name, str):
            raise IRLoadError(f"`raise` needs an event name, got {name!r}")
        node = raw.get("value")
        payload = None if node is None else self.compile(node)

        limits = self.limits

        def raised(c: dict[str, Any], e: Any, s: Any) -> None:
            out = current_outputs()
            if out is None:  # only the engine runs blocks that raise
                raise IRLoadError(f"`raise {name}` outside a statechart step")
            out.raise_event(name, None if payload is None else payload(c, e, s), limits)

        return raised

    def _schedule(self, raw: Mapping[str, Any]) -> ActionBlock:
        """`send EVENT(...) after DELAY [as ID]` / `cancel ID`: evaluated now (the payload,
        the delay: an int of milliseconds, at most `MAX_DELAY_MS`; the id: a str), applied
        by the engine at the commit (a refused step schedules nothing)."""
        name = raw.get("event")
        sending = raw.get("op") == "send"
        if sending and not isinstance(name, str):
            raise IRLoadError(f"`send` needs an event name, got {name!r}")
        node, key_node, delay_node = raw.get("value"), raw.get("key"), raw.get("delay")
        if not sending and key_node is None:
            raise IRLoadError("`cancel` needs the id of a scheduled event")
        payload = None if node is None else self.compile(node)
        key = None if key_node is None else self.compile(key_node)
        to = raw.get("to")
        if to is not None:
            return _message(str(name), payload, str(to), self.limits)
        delay = self.compile(delay_node) if sending else None
        limits = self.limits

        def schedule(c: dict[str, Any], e: Any, s: Any) -> None:
            out = current_outputs()
            if out is None:  # only the engine runs blocks that schedule
                raise IRLoadError("`send` or `cancel` outside a step of the engine")
            ident = None if key is None else _scheduled_id(key(c, e, s), limits)
            if not sending:
                out.schedule(Scheduling(ident, None), limits)
                return
            assert delay is not None
            ms = checked_delay(delay(c, e, s), f"the scheduled event {name}")
            given = None if payload is None else payload(c, e, s)
            out.schedule(Scheduling(ident, name, given, ms), limits)

        return schedule

    def _if(
        self,
        raw: Mapping[str, Any],
        target_type: Callable[[Sequence[str]], Type],
        event_types: Mapping[str, Type],
    ) -> ActionBlock:
        """`if G { … } elif G { … } else { … }`: the first arm whose guard holds runs. Each arm
        is a block of its own (its copy-on-write starts afresh: what an arm copied is not known
        after the `if`, see `action_plan`)."""
        branches = raw.get("branches")
        if not isinstance(branches, Sequence) or not branches:
            raise IRLoadError("an `if` action needs at least one branch")
        arms: list[tuple[Evaluator | None, ActionBlock | None]] = []
        for b in branches:
            if not isinstance(b, Mapping):
                raise IRLoadError(f"a branch of an `if` must be an object, got {b!r}")
            block = self.actions(b.get("actions") or (), target_type, event_types)
            arms.append((self.guard(b.get("guard")), block))
        run = tuple(arms)

        def if_(c: dict[str, Any], e: Any, s: Any) -> None:
            for guard, block in run:
                if guard is None or guard(c, e, s):
                    if block is not None:
                        block(c, e, s)
                    return

        return if_

    def _for(
        self,
        raw: Mapping[str, Any],
        target_type: Callable[[Sequence[str]], Type],
        event_types: Mapping[str, Type],
    ) -> ActionBlock:
        """`for item, i in LIST { … }`: the body once per item of the list as it was when the
        loop started (SCXML's `<foreach>` goes through a shallow copy), with the context field
        `item` (and `i`) set first. A list holds at most `Limits.max_items` items, so a loop
        ends; the body is a block of its own, as an `if` arm is (see `action_plan`).
        `each` is the same loop with a local item and index: kept in the working context under
        `LOCAL_PREFIX` keys while the body runs (read by `local` expressions), then taken out."""
        local = raw.get("op") == "each"
        item, index, body_raw = _loop_parts(raw)
        listed = self.compile(raw.get("value"))
        norm: Callable[[Any], Any] = _identity  # a local item is read as it is, never stored
        if local:
            item, index = LOCAL_PREFIX + item, None if index is None else LOCAL_PREFIX + index
        else:
            item_ty = target_type((item,))
            norm = _normaliser(item_ty, (item,), None, event_types, item=False)
            if index is not None:
                target_type((index,))  # checks the field exists
        body = self.actions(body_raw.get("actions") or (), target_type, event_types)
        return _loop(listed, item, index, norm, body, local, self.limits)

    def _emit(self, raw: Mapping[str, Any]) -> ActionBlock:
        """`emit EFFECT(...)`: the effect and its payload go to the step's collector
        (runtime/outputs.py), which the instance hands out only once the step has committed."""
        name = raw.get("event")
        if not isinstance(name, str):
            raise IRLoadError(f"an `emit` action needs an effect name, got {name!r}")
        if self.effects is not None and name not in self.effects:
            raise IRLoadError(f"an `emit` action names undeclared effect {name!r}")
        node = raw.get("value")
        value = self.compile(node) if node is not None else None

        limits = self.limits

        def emit(c: dict[str, Any], e: Any, s: Any) -> None:
            out = current_outputs()
            if out is None:
                raise IRLoadError(f"effect {name!r} emitted outside a step that collects effects")
            out.emit(name, value(c, e, s) if value is not None else {}, limits)

        return emit


#: The longest a computed delay may be (a timer's, a scheduled event's): what the compiler
#: allows a written one (about 100 years; deadlines are absolute times, which past a few
#: thousand years no longer fit a date).
MAX_DELAY_MS = 36_500 * 86_400_000


def checked_delay(ms: Any, what: str) -> int:
    """A computed delay (a timer's `after EXPR UNIT`, a scheduled event's): an int of
    milliseconds, at most `MAX_DELAY_MS`; below 1 ms counts as 1 ms (it fires after the step
    that armed it, so `advance` always ends). `what` names whose delay it is in a fault."""
    if type(ms) is not int:
        kind = "none" if ms is None else type(ms).__name__
        raise ExprFault(f"the delay of {what} is not an int ({kind})")
    if ms > MAX_DELAY_MS:
        raise ExprFault(f"the delay of {what} is {ms:,} ms, longer than any timer may wait")
    return max(ms, 1)


def _scheduled_id(ident: Any, limits: Limits) -> str:
    """A scheduled event's id: a str no longer than a host's idempotency key may be."""
    if type(ident) is not str:
        raise ExprFault(f"the id of a scheduled event is not a str ({type(ident).__name__})")
    if len(ident) > limits.max_argument:
        raise ExprFault(
            f"the id of a scheduled event has {len(ident):,} characters; "
            f"at most {limits.max_argument:,}"
        )
    return ident


#: How `ExprCompiler._build` builds each op that is neither a leaf nor a binary operator.
_NODE_BUILDERS: dict[str, Callable[[ExprCompiler, str, Any, list[Any]], Evaluator]] = {
    "state": ExprCompiler._build_state,
    "meta": ExprCompiler._build_meta,
    "local": ExprCompiler._build_local,
    "and": ExprCompiler._build_and,
    "or": ExprCompiler._build_or,
    "not": ExprCompiler._build_not,
    "neg": ExprCompiler._build_neg,
    **dict.fromkeys(QUANTIFIERS, ExprCompiler._build_quantifier),
    "cond": ExprCompiler._build_cond,
    "attr": ExprCompiler._build_attr,
    "index": ExprCompiler._build_index,
    "call": ExprCompiler._build_call,
    "list": ExprCompiler._build_list,
    "map": ExprCompiler._build_map,
}


def _state_name(c: dict[str, Any], e: Any, s: Any) -> Any:
    return s.name


def _state_title(c: dict[str, Any], e: Any, s: Any) -> Any:
    return s.title


def _literal(value: Any) -> Evaluator:
    if (type(value) is dict or type(value) is list) and value_too_deep(value):
        raise IRLoadError("a literal is nested too deeply")
    return _const(value)


def _active(arg: Any) -> Evaluator:
    """`active(STATE)`: whether the state (its IR name, a string literal in the IR) is in the
    active configuration when the expression is evaluated (runtime/configuration.py). Outside a
    statechart step: whether it is the state evaluated in or one of its ancestors."""
    if not isinstance(arg, Mapping) or arg.get("op") != "lit" or type(arg.get("value")) is not str:
        raise IRLoadError("`active` takes a state name (a string literal)")
    target: str = arg["value"]

    def active(c: dict[str, Any], e: Any, s: Any) -> bool:
        scope = current_scope()
        config = None if scope is None else scope.config
        if config is None:
            if s.name == target:
                return True
            return any(a.name == target for a in getattr(s, "ancestors", ()))
        return any(x.name == target for x in config)

    return active


def _event_name(c: dict[str, Any], e: Any, s: Any) -> str:
    """`event_name()`: the name of the event being processed ("" in a step without one: a
    timer, `goto`, the start). Flows that read it run on the engine, which keeps it
    (runtime/configuration.py)."""
    scope = current_scope()
    event = None if scope is None else scope.event
    return "" if event is None else event


def _block(run: tuple[ActionBlock, ...]) -> ActionBlock:
    def block(c: dict[str, Any], e: Any, s: Any) -> None:
        for step in run:
            step(c, e, s)

    return block


def _appender(longest: int, item_norm: Callable[[Any], Any]) -> Callable[[Any, Any], Any]:
    def appended(old: list[Any], v: Any) -> list[Any]:
        if len(old) >= longest:
            raise LimitExceeded(f"the list would have more than {longest:,} items")
        return [*old, item_norm(v)]

    return appended


def _add_top(key: str, value: Evaluator, norm: Callable[[Any], Any]) -> ActionBlock:
    def add_top(c: dict[str, Any], e: Any, s: Any) -> None:
        c[key] = norm(c[key] + value(c, e, s))

    return add_top


def _sub_top(key: str, value: Evaluator, norm: Callable[[Any], Any]) -> ActionBlock:
    def sub_top(c: dict[str, Any], e: Any, s: Any) -> None:
        c[key] = norm(c[key] - value(c, e, s))

    return sub_top


def _added(norm: Callable[[Any], Any]) -> Callable[[Any, Any], Any]:
    return lambda old, v: norm(old + v)


def _subtracted(norm: Callable[[Any], Any]) -> Callable[[Any, Any], Any]:
    return lambda old, v: norm(old - v)


def has_loop(raw: Any) -> bool:
    """Whether raw IR (a flow, a block, an action) holds a `for` action somewhere: its steps
    need a collector, which keeps the step's loop budget (`StepOutputs.charge_loop`)."""
    stack = [raw]
    while stack:
        n = stack.pop()
        if type(n) is dict:
            if n.get("op") == "for" or n.get("op") == "each":
                return True
            stack.extend(n.values())
        elif type(n) is list or type(n) is tuple:
            stack.extend(n)
    return False


def action_plan(raw: Sequence[Any]) -> list[tuple[Mapping[str, Any], int]]:
    """Each action of a block with its fresh depth: how many leading containers of its target
    path an earlier action of the same block has already copied (and so may be changed in
    place)."""
    plan = []
    fresh: set[tuple[str, ...]] = set()  # dict paths this block has already copied
    last = len(raw) - 1
    for pos, a in enumerate(raw):
        if type(a) is not dict and not isinstance(a, Mapping):
            raise IRLoadError(f"an action must be an object, got {a!r}")
        if pos == last and not fresh:  # the first action, or none before it copied anything
            plan.append((a, 0))
            break
        path = tuple(a.get("target") or ())
        depth = 0
        if fresh:
            while depth < len(path) - 1 and path[: depth + 1] in fresh:
                depth += 1
        plan.append((a, depth))
        if pos == last:
            break  # what the last action leaves copied is of no use to any other
        fresh = _fresh_after(a, path, fresh)
    return plan


def _fresh_after(
    a: Mapping[str, Any], path: tuple[str, ...], fresh: set[tuple[str, ...]]
) -> set[tuple[str, ...]]:
    """The paths a block has copied and may still change in place after action `a` (which
    writes `path`)."""
    if a.get("op") == "for" or a.get("op") == "each":
        # The body may store shared values anywhere: nothing copied before stays fresh.
        return set()
    for i in range(1, len(path)):
        fresh.add(path[:i])
    if not fresh:
        return fresh
    # The written path holds a value that may be shared; anything read by the value may now
    # be referenced from elsewhere: neither may be changed in place again.
    read = _ctx_reads(a.get("value")) | _ctx_reads(a.get("key"))
    n = len(path)
    kept = set()
    for q in fresh:  # a loop: a comprehension here would put n, path, read in cells
        if q[:n] != path and q[0] not in read:
            kept.add(q)
    return kept


def _ctx_reads(node: Any) -> set[str]:
    """The context fields an expression reads."""
    out: set[str] = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if type(n) is not dict and not isinstance(n, Mapping):
            continue
        if n.get("op") == "ctx" and isinstance(n.get("value"), str):
            out.add(n["value"])
        args = n.get("args")
        if args:
            stack.extend(args)
    return out


def _pair(key: Evaluator, value: Evaluator) -> Evaluator:
    return lambda c, e, s: (key(c, e, s), value(c, e, s))


def _list_put(norm: Callable[[Any], Any]) -> Callable[[Any, Any], Any]:
    def put(old: list[Any], kv: tuple[Any, Any]) -> list[Any]:
        k, v = kv
        if type(k) is not int or not 0 <= k < len(old):
            raise ExprFault(f"index {k!r} is out of range for a list of {len(old)} items")
        out = list(old)
        out[k] = norm(v)
        return out

    return put


def _map_put(longest: int, norm: Callable[[Any], Any]) -> Callable[[Any, Any], Any]:
    def put(old: dict[str, Any], kv: tuple[Any, Any]) -> dict[str, Any]:
        k, v = kv
        if k not in old and len(old) >= longest:
            raise LimitExceeded(f"the map would have more than {longest:,} entries")
        return {**old, k: norm(v)}

    return put


def _deleted(old: dict[str, Any], key: Any) -> dict[str, Any]:
    # Deleting a key that is not there is not a fault, as removing a missing item is not.
    if key not in old:
        return old
    out = dict(old)
    del out[key]
    return out


def _removed(old: list[Any], item: Any) -> list[Any]:
    out = list(old)
    # Removing an item that is not there is not a fault: the list stays as it is.
    with contextlib.suppress(ValueError):
        out.remove(item)
    return out


def _loop_parts(raw: Mapping[str, Any]) -> tuple[str, str | None, Mapping[str, Any]]:
    """A `for` (or `each`) action's item name, index name (None: none) and body, checked."""
    target = raw.get("target")
    if not isinstance(target, Sequence) or len(target) != 1 or not isinstance(target[0], str):
        raise IRLoadError("a `for` action needs the name of its item field")
    index = raw.get("index")
    if index is not None and not isinstance(index, str):
        raise IRLoadError(f"a `for` index must be a field name, got {index!r}")
    branches = raw.get("branches")
    if not isinstance(branches, Sequence) or len(branches) != 1:
        raise IRLoadError("a `for` action needs one body")
    body_raw = branches[0]
    if not isinstance(body_raw, Mapping):
        raise IRLoadError(f"the body of a `for` must be an object, got {body_raw!r}")
    return target[0], index, body_raw


def _message(name: str, payload: Evaluator | None, to: str, limits: Limits) -> ActionBlock:
    """`send NAME(...) to parent|ID`: a message, handed to the engine with the step's
    scheduled events; children.py delivers it after the commit."""

    def message(c: dict[str, Any], e: Any, s: Any) -> None:
        out = current_outputs()
        if out is None:  # only the engine runs blocks that send
            raise IRLoadError("`send ... to` outside a step of the engine")
        given = None if payload is None else payload(c, e, s)
        out.schedule(Scheduling(None, name, given, 0, to), limits)

    return message


def _loop(
    listed: Evaluator,
    item: str,
    index: str | None,
    norm: Callable[[Any], Any],
    body: ActionBlock | None,
    local: bool,
    limits: Limits,
) -> ActionBlock:
    """The closure of a `for` loop (see `ExprCompiler._for`)."""

    def loop(c: dict[str, Any], e: Any, s: Any) -> None:
        items = listed(c, e, s)
        if type(items) is not list:
            raise ExprFault(f"`for` needs a list, got {_kind_of(items)}")
        # (A step of a flow with loops always collects, `Machine.emits`: the step's budget.)
        with step_budget() as out:
            out.charge_loop(len(items), limits)
            if not local:
                run(c, e, s, items)
                return
            try:
                run(c, e, s, items)
            finally:  # the locals never outlive the loop, even one a fault ends
                c.pop(item, None)
                if index is not None:
                    c.pop(index, None)

    def run(c: dict[str, Any], e: Any, s: Any, items: list[Any]) -> None:
        for i, x in enumerate(tuple(items)):
            c[item] = norm(x)
            if index is not None:
                c[index] = i
            if body is not None:
                body(c, e, s)

    return loop


def _target_path(raw: Mapping[str, Any]) -> tuple[str, ...]:
    """The context path a storing action writes, checked to be a non-empty path of names."""
    path = tuple(raw.get("target") or ())
    for p in path:
        if type(p) is not str and not isinstance(p, str):
            path = ()
            break
    if not path:
        raise IRLoadError(f"an action needs a target path, got {raw.get('target')!r}")
    return path


def _none_on_path(path: tuple[str, ...], upto: int) -> ExprFault:
    return ExprFault(f"cannot set `{'.'.join(path)}`: `{'.'.join(path[:upto])}` is none")


def _set(
    path: tuple[str, ...], value: Evaluator, norm: Callable[[Any], Any], fresh_depth: int
) -> ActionBlock:
    if len(path) == 1:
        key = path[0]
        if norm is _identity:

            def set_top(c: dict[str, Any], e: Any, s: Any) -> None:
                c[key] = value(c, e, s)

            return set_top

        def set_top_normalised(c: dict[str, Any], e: Any, s: Any) -> None:
            c[key] = norm(value(c, e, s))

        return set_top_normalised
    if len(path) == 2:
        head, last = path
        if fresh_depth >= 1:
            # `head` was copied by an earlier action of this block: change it in place.
            def set_in_copy(c: dict[str, Any], e: Any, s: Any) -> None:
                c[head][last] = norm(value(c, e, s))

            return set_in_copy

        def set_field(c: dict[str, Any], e: Any, s: Any) -> None:
            v = norm(value(c, e, s))
            node = c[head]
            if node is None:
                raise _none_on_path(path, 1)
            node = c[head] = dict(node)
            node[last] = v

        return set_field
    return _update(path, lambda old, v: norm(v), value, fresh_depth, read_old=False)


def _set_leaf(path: tuple[str, ...], leaf: tuple[str, Any], fresh_depth: int) -> ActionBlock:
    """`x = event.y`, `x.f = y`, `x = 3`: the most common actions, each one closure."""
    kind, k = leaf
    if len(path) == 1:
        return _set_top_leaf(path[0], kind, k)
    if kind == "event":
        return _set_field_from_event(path, k, fresh_depth)
    read = _ctx_reader(k) if kind == "ctx" else _const_reader(k)
    return _set_field_from(path, read, fresh_depth)


def _set_top_leaf(key: str, kind: str, k: Any) -> ActionBlock:
    """`x = event.y`, `x = y`, `x = 3`."""
    if kind == "event":

        def set_from_event(c: dict[str, Any], e: Any, s: Any) -> None:
            c[key] = e[k]

        return set_from_event
    if kind == "ctx":

        def set_from_ctx(c: dict[str, Any], e: Any, s: Any) -> None:
            c[key] = c[k]

        return set_from_ctx

    def set_const(c: dict[str, Any], e: Any, s: Any) -> None:
        c[key] = k

    return set_const


def _set_field_from_event(path: tuple[str, ...], k: str, fresh_depth: int) -> ActionBlock:
    """`x.f = event.y`."""
    head, last = path
    if fresh_depth >= 1:

        def set_event_in_copy(c: dict[str, Any], e: Any, s: Any) -> None:
            c[head][last] = e[k]

        return set_event_in_copy

    def set_field_from_event(c: dict[str, Any], e: Any, s: Any) -> None:
        node = c[head]
        if node is None:
            raise _none_on_path(path, 1)
        node = c[head] = dict(node)
        node[last] = e[k]

    return set_field_from_event


def _set_field_from(
    path: tuple[str, ...], read: Callable[[dict[str, Any], Any], Any], fresh_depth: int
) -> ActionBlock:
    """`x.f = y`, `x.f = 3`: `read` gives the value."""
    head, last = path
    if fresh_depth >= 1:

        def set_in_copy(c: dict[str, Any], e: Any, s: Any) -> None:
            c[head][last] = read(c, e)

        return set_in_copy

    def set_field(c: dict[str, Any], e: Any, s: Any) -> None:
        v = read(c, e)
        node = c[head]
        if node is None:
            raise _none_on_path(path, 1)
        node = c[head] = dict(node)
        node[last] = v

    return set_field


def _ctx_reader(k: str) -> Callable[[dict[str, Any], Any], Any]:
    return lambda c, e: c[k]


def _const_reader(v: Any) -> Callable[[dict[str, Any], Any], Any]:
    return lambda c, e: v


def _checked_leaf(node: Any) -> tuple[str, Any] | None:
    """`_leaf(node)` for a leaf that compiling would accept (known members only, a literal not
    nested too deeply, as `ExprCompiler._build` checks); None for anything else, which is then
    compiled, and so checked, as usual."""
    if type(node) is not dict:
        return None  # (a mapping of another type is compiled: `_build` accepts it)
    op = node.get("op")
    value = node.get("value")
    if op == "event" or op == "ctx":
        if not isinstance(value, str):
            return None
    elif op == "lit":
        if (type(value) is dict or type(value) is list) and value_too_deep(value):
            return None
    else:
        return None
    if not _EXPR_MEMBERS.issuperset(node):
        return None
    return op, value


def _leaf_closure(leaf: tuple[str, Any]) -> Evaluator:
    """The closure of a leaf `_checked_leaf` accepted: the one `ExprCompiler._build` makes."""
    kind, value = leaf
    if kind == "ctx":
        return _read_ctx(value)
    if kind == "event":
        return _read_event(value)
    return _const(value)


def _leaf(node: Any) -> tuple[str, Any] | None:
    """`("event", name)`, `("ctx", name)` or `("lit", value)` for a leaf node, else None."""
    if type(node) is not dict and not isinstance(node, Mapping):
        return None
    op = node.get("op")
    if (op == "event" or op == "ctx") and isinstance(node.get("value"), str):
        return op, node["value"]
    if op == "lit":
        return op, node.get("value")
    return None


def _update(
    path: tuple[str, ...],
    change: Callable[[Any, Any], Any],
    value: Evaluator,
    fresh_depth: int,
    *,
    read_old: bool = True,
) -> ActionBlock:
    """Set `path` to `change(old, value)`, copying each container on the way that this block
    has not copied yet (copy-on-write)."""
    if len(path) == 1:
        key = path[0]

        def update_top(c: dict[str, Any], e: Any, s: Any) -> None:
            c[key] = change(c[key], value(c, e, s))

        return update_top
    *parents, last = path

    def update(c: dict[str, Any], e: Any, s: Any) -> None:
        v = value(c, e, s)
        node: Any = c
        for i, name in enumerate(parents):
            child = node[name]
            if child is None:
                raise _none_on_path(path, i + 1)
            if i >= fresh_depth:
                child = node[name] = dict(child)
            node = child
        node[last] = change(node[last] if read_old else None, v)

    return update


def _identity(v: Any) -> Any:
    return v


def _then(first: Callable[[Any], Any] | None, norm: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """`norm` after `first` (a bound), as one function."""
    if first is None:
        return norm
    if norm is _identity:
        return first
    return lambda v: norm(first(v))


def _normaliser(
    ty: Type,
    path: Sequence[str],
    value: Any,
    event_types: Mapping[str, Type],
    *,
    item: bool = False,
) -> Callable[[Any], Any]:
    """Values stored into records get their defaults filled in (`{"result": accepted}` into a
    record with more fields), ints stored into float fields become floats, and values stored
    into ranged fields are checked against the range (a fault otherwise). Every other value is
    stored as it is: the compiler checked its type, and a payload field of the very same type
    was normalised when the payload was checked."""
    if _already_normal(ty, value, event_types):
        return _identity
    return _checking(ty, path, item)


def _checking(ty: Type, path: Sequence[str], item: bool) -> Callable[[Any], Any]:
    check = ty.check

    def normalise(v: Any) -> Any:
        try:
            return check(v)
        except Invalid:
            # Worded only when it happens: a record's requirement lists its fields.
            where = f"an item of `{'.'.join(path)}`" if item else f"`{'.'.join(path)}`"
            shown = _short_repr(v)
            needs = ty.requirement()
            raise ExprFault(f"{where} takes {needs}; the actions computed {shown}") from None

    return normalise


def _kind_of(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "a bool"
    if isinstance(value, dict):
        return "a map"
    return f"a {type(value).__name__}"


def _short_repr(value: Any) -> str:
    text = json.dumps(value, default=repr, ensure_ascii=False)
    return text if len(text) <= 60 else text[:57] + "..."


def _already_normal(ty: Type, value: Any, event_types: Mapping[str, Type]) -> bool:
    """Whether every value `value` can evaluate to is already normal for `ty`, so storing it
    needs no check: a type that never needs normalising, a payload field of the very same type
    (normalised with the payload), a float literal for a float, or a record literal naming every
    field of its record in order, each value itself already normal (the literal builds a fresh
    dict, in the order the record check would)."""
    if ty.normal:
        return True
    if not isinstance(value, Mapping):
        return False
    op = value.get("op")
    if op == "event":
        source = event_types.get(value.get("value"))  # type: ignore[arg-type]
        return source is ty or (ty.kind == "optional" and source is ty.item)
    if op == "lit":
        # A float literal fits a float field as it is, unless the field has a range to check.
        return (
            ty.kind == "float"
            and ty.min is None
            and ty.max is None
            and type(value.get("value")) is float
        )
    if op != "map":
        return False
    record = ty.item if ty.kind == "optional" else ty
    if record is None or record.kind != "record":
        return False
    args = value.get("args") or ()
    keys, values = args[0::2], args[1::2]
    names = [
        k.get("value") if isinstance(k, Mapping) and k.get("op") == "lit" else None for k in keys
    ]
    if len(values) != len(keys) or names != [f.name for f in record.fields]:
        return False
    fields = zip(record.fields, values, strict=True)
    return all(_already_normal(f.type, v, event_types) for f, v in fields)


def _const(value: Any) -> Evaluator:
    # A literal list or map is shared by every evaluation: safe, since actions never change a
    # container in place (copy-on-write).
    return lambda c, e, s: value


def _name(value: Any, op: str) -> str:
    if not isinstance(value, str):
        raise IRLoadError(f"`{op}` needs a name, got {value!r}")
    return value


def _arity(op: str, args: Sequence[Any], n: int) -> None:
    if len(args) != n:
        raise IRLoadError(f"`{op}` takes {n} operand(s), got {len(args)}")


assert {"append", "remove", "delete"} == ACTION_FUNCTIONS
