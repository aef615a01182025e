"""Sandboxed Jinja2 for messages, journals and prompt templates.

Every template of a flow runs in `ImmutableSandboxedEnvironment` (no attribute access to
internals, no mutation of the values passed in). Templates are compiled on first use and kept
per machine, so a 1,000-state flow does not pay for hundreds of templates at load time and a
template used on every step is compiled once.

Values reach templates wrapped so that `record.field` means the field even when it is called
`items`, `keys` or `values` (on a plain dict Jinja would find the dict's method first), and so
that `event` prints as the event's name while `event.field` reads its payload. A value that is
none prints as nothing.

Templates are bounded (`Limits`, limits.py): `BoundedEnvironment` refuses, before computing
them, powers, repetitions (`'a' * n`, `[x] * n`), ranges, `%` formats and growing filters
(`center`, `indent`, `join`, `replace`, ...) whose result would be past the limits; it counts
loop iterations and calls against a budget per render, and the output against
`max_template_output`. Constant expressions are not folded when a template compiles (Jinja
would otherwise compute `{{ 9**(9**9) }}` right there); `check_template` evaluates them under
the limits instead, so the compiler can report them (`compile_template` raises).
Whatever goes wrong in a template is a `TemplateError`.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from jinja2 import Template, TemplateSyntaxError, nodes
from jinja2 import filters as jinja_filters
from jinja2.sandbox import ImmutableSandboxedEnvironment

from flowc.runtime.limits import DEFAULT_LIMITS, LimitExceeded, Limits
from flowc.runtime.model import FlowcError


class TemplateError(FlowcError):
    """A template that does not compile, goes past a limit, or fails while rendering. `line`
    is the line within the template, when known."""

    def __init__(self, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.line = line


class TemplateLimitError(TemplateError):
    """A template past one of the `Limits` (`{{ 9**(9**9) }}`, `{{ 'a' * 10**9 }}`)."""


def _finalize(value: Any) -> Any:
    # `{{ reason }}` of a step without one prints nothing rather than "None".
    return "" if value is None else value


class _Render:
    """The bounds of the render under way: its limits and the steps it has left."""

    __slots__ = ("limits", "steps")

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.steps = limits.max_template_steps

    def tick(self, n: int = 1) -> None:
        self.steps -= n
        if self.steps < 0:
            raise LimitExceeded(
                f"the template made more than {self.limits.max_template_steps:,} steps "
                "(loop iterations and calls)"
            )


_V = TypeVar("_V")

_ACTIVE: ContextVar[_Render | None] = ContextVar("flowc_template_render", default=None)


def _render() -> _Render:
    found = _ACTIVE.get()
    return found if found is not None else _Render(DEFAULT_LIMITS)


def _sized(value: _V) -> _V:
    """`value` when a template may hold it; `LimitExceeded` for a string or a list larger than
    the output a template may render (or than a list may be)."""
    if isinstance(value, str):
        most = _render().limits.max_template_output
        if len(value) > most:
            raise LimitExceeded(f"a string of {len(value):,} characters; at most {most:,}")
    elif isinstance(value, list | tuple):
        most = _render().limits.max_items
        if len(value) > most:
            raise LimitExceeded(f"a list of {len(value):,} items; at most {most:,}")
    return value


def _width(n: Any) -> None:
    most = _render().limits.max_template_output
    if isinstance(n, int) and n > most:
        raise LimitExceeded(f"a width of {n:,}; at most {most:,}")


# `%` formats: a width or precision written in the format, or taken from the arguments (`*`).
_FORMAT_FIELD = re.compile(r"%(?:\([^)]*\))?[#0 +-]*(\*|\d+)?(?:\.(\*|\d+))?")


def _percent(fmt: Any, args: Any) -> Any:
    if isinstance(fmt, str):
        star = False
        for width, precision in _FORMAT_FIELD.findall(fmt):
            for part in (width, precision):
                if part == "*":
                    star = True
                elif part:
                    if len(part) > 12:
                        raise LimitExceeded("a width of more than 12 digits")
                    _width(int(part))
        if star:
            for a in args if isinstance(args, tuple) else (args,):
                _width(a)
    return _sized(fmt % args)


def _plus(a: Any, b: Any) -> Any:
    return _sized(a + b)


def _times(a: Any, b: Any) -> Any:
    limits = _render().limits
    return _sized(limits.mul(a, b))


def _power(a: Any, b: Any) -> Any:
    return _render().limits.power(a, b)


# ---- filters that can grow their input, bounded before they compute -------------------------
def _center(value: Any, width: int = 80) -> str:
    _width(width)
    return _sized(jinja_filters.do_center(value, width))


def _indent(s: str, width: int | str = 4, first: bool = False, blank: bool = False) -> str:
    text = str(s)
    pad = width if isinstance(width, str) else " " * (width if isinstance(width, int) else 0)
    if isinstance(width, int):
        _width(width)
    _width(len(pad) * (text.count("\n") + 1) + len(text))
    return _sized(jinja_filters.do_indent(text, width, first, blank))


def _replace(eval_ctx: Any, s: str, old: str, new: str, count: int | None = None) -> str:
    text, old, new = str(s), str(old), str(new)
    times = (len(text) + 1 if old == "" else text.count(old)) if count is None else count
    _width(len(text) + max(times, 0) * len(new))
    return _sized(jinja_filters.do_replace(eval_ctx, text, old, new, count))


def _join(eval_ctx: Any, value: Iterable[Any], d: str = "", attribute: Any = None) -> str:
    items = list(value)
    _sized(items)
    _width(len(str(d)) * max(len(items) - 1, 0))
    return _sized(str(jinja_filters.do_join(eval_ctx, items, d, attribute)))


def _wordwrap(
    environment: Any,
    s: str,
    width: int = 79,
    break_long_words: bool = True,
    wrapstring: str | None = None,
    break_on_hyphens: bool = True,
) -> str:
    wrap = wrapstring if wrapstring is not None else environment.newline_sequence
    _width(len(str(s)) * (len(str(wrap)) + 1))
    return _sized(
        jinja_filters.do_wordwrap(
            environment, s, width, break_long_words, wrapstring, break_on_hyphens
        )
    )


def _format(value: str, *args: Any, **kwargs: Any) -> str:
    return str(_percent(value, kwargs if kwargs else args))


def _batch(value: Iterable[Any], linecount: int, fill_with: Any = None) -> Any:
    _sized(range(linecount) if isinstance(linecount, int) and linecount > 0 else ())
    return jinja_filters.do_batch(value, linecount, fill_with)


def _slice(value: Any, slices: int, fill_with: Any = None) -> Any:
    _sized(range(slices) if isinstance(slices, int) and slices > 0 else ())
    return jinja_filters.do_slice(value, slices, fill_with)


_replace.jinja_pass_arg = jinja_filters.do_replace.jinja_pass_arg  # type: ignore[attr-defined]
_join.jinja_pass_arg = jinja_filters.do_join.jinja_pass_arg  # type: ignore[attr-defined]
_wordwrap.jinja_pass_arg = jinja_filters.do_wordwrap.jinja_pass_arg  # type: ignore[attr-defined]

_BOUNDED_FILTERS: dict[str, Callable[..., Any]] = {
    "center": _center,
    "indent": _indent,
    "replace": _replace,
    "join": _join,
    "wordwrap": _wordwrap,
    "format": _format,
    "batch": _batch,
    "slice": _slice,
}

# String methods that build a string larger than their input (`'a'.center(10**9)`), and
# `format`, which would bypass the `%` bounds: templates use the filters instead.
_GROWING_METHODS = frozenset(
    {"center", "ljust", "rjust", "zfill", "expandtabs", "replace", "join", "format", "format_map"}
)


def _bounded_range(*args: Any) -> range:
    # Only the size is bounded here: a loop over the range counts its own iterations.
    r = range(*args)
    most = _render().limits.max_items
    if len(r) > most:
        raise LimitExceeded(f"a range of {len(r):,} items; at most {most:,}")
    return r


def _loop(iterable: Any) -> Any:
    """What a `{% for %}` iterates: each iteration is a step of the render's budget."""
    r = _render()
    try:
        n = len(iterable)
    except TypeError:
        return _counted(iterable, r)
    r.tick(n)
    return iterable


def _counted(iterable: Iterable[Any], r: _Render) -> Iterator[Any]:
    for item in iterable:
        r.tick()
        yield item


class BoundedEnvironment(ImmutableSandboxedEnvironment):
    """The sandbox every template of a flow runs in, bounded by the `Limits` of the render
    under way (see the module's docstring)."""

    intercepted_binops = frozenset({"+", "*", "**", "%"})

    def __init__(self) -> None:
        super().__init__(finalize=_finalize)
        self.binop_table = {
            **self.binop_table,
            "+": _plus,
            "*": _times,
            "**": _power,
            "%": _percent,
        }
        self.filters.update(_BOUNDED_FILTERS)
        self.globals["range"] = _bounded_range
        # `lipsum(n)` writes n paragraphs before anything can count them.
        self.globals.pop("lipsum", None)

    def is_safe_attribute(self, obj: Any, attr: str, value: Any) -> bool:
        if isinstance(obj, str) and attr in _GROWING_METHODS:
            return False
        return super().is_safe_attribute(obj, attr, value)

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:
        _render().tick()
        return super().call(__context, __obj, *args, **kwargs)

    def _parse(self, source: str, name: str | None, filename: str | None) -> nodes.Template:
        tree = super()._parse(source, name, filename)
        # Every loop counts its iterations; every `~` checks the size of what it built.
        for loop in tree.find_all(nodes.For):
            loop.iter = _call_env("flowc_loop", cast(nodes.Expr, loop.iter))
        for concat in list(tree.find_all(nodes.Concat)):
            _wrap_in_place(concat, "flowc_sized")
        return tree

    flowc_loop = staticmethod(_loop)
    flowc_sized = staticmethod(_sized)


def _call_env(attribute: str, arg: nodes.Expr) -> nodes.Call:
    return nodes.Call(
        nodes.EnvironmentAttribute(attribute, lineno=arg.lineno),
        [arg],
        [],
        None,
        None,
        lineno=arg.lineno,
    )


def _wrap_in_place(node: nodes.Concat, attribute: str) -> None:
    # Turn `a ~ b` into `environment.ATTRIBUTE(a ~ b)` without a parent pointer: the concat's
    # operands move into a new concat, and this node becomes a one-operand concat of the call.
    inner = nodes.Concat(node.nodes, lineno=node.lineno)
    node.nodes = [_call_env(attribute, inner)]


_ENV = BoundedEnvironment()


@dataclass(frozen=True, slots=True)
class TemplateProblem:
    """A bound a template's constant expression goes past, found without rendering it."""

    line: int
    message: str


def check_template(source: str, limits: Limits = DEFAULT_LIMITS) -> list[TemplateProblem]:
    """Parse `source` (a `TemplateError` for a syntax error) and evaluate its constant
    expressions (`9**(9**9)`, `'a' * 10**9`) under `limits`: each one past them is a problem.
    Never renders the template and never computes past a limit."""
    try:
        tree = _ENV.parse(source)
    except TemplateSyntaxError as exc:
        raise TemplateError(exc.message or str(exc), exc.lineno) from None
    problems: list[TemplateProblem] = []
    token = _ACTIVE.set(_Render(limits))
    try:
        seen: set[int] = set()
        for node in tree.find_all((nodes.BinExpr, nodes.Concat, nodes.Call, nodes.Filter)):
            if id(node) in seen:
                continue
            try:
                _fold(node)
            except _NotConstant:
                continue
            except LimitExceeded as exc:
                problems.append(TemplateProblem(node.lineno, exc.detail))
                seen.update(id(n) for n in node.find_all(nodes.Expr))
            except Exception:
                continue
    finally:
        _ACTIVE.reset(token)
    return problems


def compile_template(source: str, limits: Limits = DEFAULT_LIMITS) -> Template:
    """`source` compiled in the bounded sandbox; `TemplateLimitError` for a constant expression
    past `limits` (the first one), `TemplateError` for a syntax error or an unknown filter."""
    problems = check_template(source, limits)
    if problems:
        raise TemplateLimitError(problems[0].message, problems[0].line)
    return _compile(source)


def _compile(source: str) -> Template:
    try:
        return _ENV.from_string(source)
    except TemplateSyntaxError as exc:
        raise TemplateError(exc.message or str(exc), exc.lineno) from None


class _NotConstant(Exception):
    pass


_FOLD_BINARY: dict[type[nodes.BinExpr], Callable[[Any, Any], Any]] = {
    nodes.Add: _plus,
    nodes.Sub: operator.sub,
    nodes.Mul: _times,
    nodes.Div: operator.truediv,
    nodes.FloorDiv: operator.floordiv,
    nodes.Mod: _percent,
    nodes.Pow: _power,
}


def _fold(node: nodes.Node) -> Any:
    if isinstance(node, nodes.Const):
        return node.value
    if isinstance(node, nodes.List | nodes.Tuple):
        return _sized([_fold(n) for n in node.items])
    if isinstance(node, nodes.Neg):
        return -_fold(node.node)
    if isinstance(node, nodes.Pos):
        return +_fold(node.node)
    if isinstance(node, nodes.BinExpr) and type(node) in _FOLD_BINARY:
        return _FOLD_BINARY[type(node)](_fold(node.left), _fold(node.right))
    if isinstance(node, nodes.Concat):
        return _sized("".join(str(_fold(n)) for n in node.nodes))
    return _fold_call(node)


def _fold_call(node: nodes.Node) -> Any:
    """`_fold` of a call of `range` or of a bounded filter, on constant arguments."""
    if (
        isinstance(node, nodes.Call)
        and isinstance(node.node, nodes.Name)
        and node.node.name == "range"
        and not node.kwargs
        and node.dyn_args is None
    ):
        return _bounded_range(*[_fold(a) for a in node.args])
    if (
        isinstance(node, nodes.Filter)
        and node.name in _BOUNDED_FILTERS
        and node.node is not None
        and node.dyn_args is None
        and node.dyn_kwargs is None
    ):
        args = [_fold(node.node), *[_fold(a) for a in node.args]]
        kwargs = {str(kw.key): _fold(kw.value) for kw in node.kwargs}
        if node.name in ("replace", "join"):
            args.insert(0, nodes.EvalContext(_ENV))
        elif node.name == "wordwrap":
            args.insert(0, _ENV)
        return _BOUNDED_FILTERS[node.name](*args, **kwargs)
    raise _NotConstant


class Record(dict[str, Any]):
    """A dict whose attributes are its keys first (`{{ payload.items }}` is the field)."""

    __slots__ = ()

    def __getattribute__(self, name: str) -> Any:
        if name[:1] != "_" and dict.__contains__(self, name):
            return wrap(dict.__getitem__(self, name))
        return dict.__getattribute__(self, name)

    def __getitem__(self, key: str) -> Any:
        return wrap(dict.__getitem__(self, key))


class EventVars(Record):
    """`event` in templates: prints as the event's name; its keys are the payload's fields."""

    __slots__ = ("_name",)

    def __init__(self, name: str, payload: Mapping[str, Any] | None) -> None:
        super().__init__(payload or ())
        self._name = name

    def __str__(self) -> str:
        return self._name

    def __bool__(self) -> bool:
        return True

    def __eq__(self, other: object) -> bool:
        if isinstance(other, str):
            return other == self._name
        return dict.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        return not self == other

    __hash__ = None  # type: ignore[assignment]


def wrap(value: Any) -> Any:
    if type(value) is dict:
        return Record(value)
    if type(value) is list:
        return [wrap(v) for v in value] if any(type(v) is dict for v in value) else value
    return value


class TemplateCache:
    """Templates of one machine, compiled on first use and shared by all its instances,
    rendered under the machine's `Limits`."""

    __slots__ = ("_compiled", "limits")

    def __init__(self, limits: Limits = DEFAULT_LIMITS) -> None:
        self._compiled: dict[str, Template] = {}
        self.limits = limits

    def get(self, source: str) -> Template:
        found = self._compiled.get(source)
        if found is None:
            found = _shared(source)
            self._compiled[source] = found
        return found

    def render(self, source: str, variables: Mapping[str, Any]) -> str:
        """The text; `TemplateError` (a `FlowcError`) for whatever goes wrong."""
        token = _ACTIVE.set(_Render(self.limits))
        try:
            template = self.get(source)
            most = self.limits.max_template_output
            size = 0
            parts = []
            for part in template.generate(variables):
                size += len(part)
                if size > most:
                    raise LimitExceeded(f"the template renders more than {most:,} characters")
                parts.append(part)
            return "".join(parts)
        except TemplateError:
            raise
        except LimitExceeded as exc:
            raise TemplateLimitError(exc.detail) from None
        except Exception as exc:
            raise TemplateError(f"{type(exc).__name__}: {_short(str(exc))}") from None
        finally:
            _ACTIVE.reset(token)


def _short(text: str) -> str:
    return text if len(text) <= 200 else text[:200] + "..."


# The default message texts are the same for every machine: compile them once per process.
_SHARED: dict[str, Template] = {}


def _shared(source: str) -> Template:
    found = _SHARED.get(source)
    if found is None:
        found = _compile(source)
        if len(_SHARED) < 256:
            _SHARED[source] = found
    return found
