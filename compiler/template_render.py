"""A reference renderer of lowered templates (docs/ir.md, "Lowered templates"), written from
that section's rules and nothing else: the tests render every lowered template of the seed
flows with it and with Jinja2 on the same values and require the same text, which is what proves
the rules (and so a renderer in another language written from them) right.

Values are what the runtime gives Jinja2: JSON values (maps possibly wrapped as `Record`), the
event (`EventVars`) and the time (an aware `datetime`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any

from flowc.runtime.templating import EventVars


class RenderError(Exception):
    """The template fails (Jinja2 would raise too)."""


class _Undefined:
    __slots__ = ()

    def __repr__(self) -> str:
        return "undefined"


UNDEFINED: Any = _Undefined()


def render(parts: list[dict[str, Any]], variables: Mapping[str, Any]) -> str:
    return "".join(_Renderer(variables).parts(parts))


class _Renderer:
    def __init__(self, variables: Mapping[str, Any]) -> None:
        self.variables = variables
        self.locals: list[dict[str, Any]] = []

    def parts(self, parts: list[dict[str, Any]]) -> list[str]:
        out: list[str] = []
        for part in parts:
            if "text" in part:
                out.append(part["text"])
            elif "print" in part:
                out.append(printed(self.expr(part["print"])))
            elif "if" in part:
                chosen = part["else"]
                for branch in part["if"]:
                    if truthy(self.expr(branch["test"])):
                        chosen = branch["then"]
                        break
                out += self.parts(chosen)
            else:
                out += self.loop(part)
        return out

    def loop(self, part: dict[str, Any]) -> list[str]:
        items = self.expr(part["in"])
        if isinstance(items, Mapping | str):
            items = list(items)
        if not isinstance(items, list):
            raise RenderError(f"cannot loop over {items!r}")
        if not items:
            return self.parts(part["else"])
        out: list[str] = []
        n = len(items)
        for i, item in enumerate(items):
            info = {
                "index": i + 1,
                "index0": i,
                "revindex": n - i,
                "revindex0": n - i - 1,
                "first": i == 0,
                "last": i == n - 1,
                "length": n,
            }
            self.locals.append({part["for"]: item, "loop": info})
            try:
                out += self.parts(part["body"])
            finally:
                self.locals.pop()
        return out

    def expr(self, node: dict[str, Any]) -> Any:
        op = node["op"]
        args = node.get("args", [])
        value = node.get("value")
        if op == "lit":
            return value
        if op == "var":
            return self.variables.get(str(value), UNDEFINED)
        if op == "local":
            for scope in reversed(self.locals):
                if value in scope:
                    return scope[value]
            return UNDEFINED
        if op in ("and", "or"):
            left = self.expr(args[0])
            if truthy(left) == (op == "or"):
                return left
            return self.expr(args[1])
        if op == "cond":
            return self.expr(args[1] if truthy(self.expr(args[0])) else args[2])
        operands = [self.expr(a) for a in args]
        return _apply(op, value, operands)


def _apply(op: str, value: Any, args: list[Any]) -> Any:
    if op == "attr":
        return _member(args[0], value)
    if op == "index":
        return _member(args[0], args[1])
    if op == "list":
        return args
    if op == "not":
        return not truthy(args[0])
    if op in ("==", "!="):
        return _equal(args[0], args[1]) == (op == "==")
    if op in ("<", "<=", ">", ">="):
        return _order(op, args[0], args[1])
    if op in ("in", "not in"):
        return _contains(args[1], args[0]) == (op == "in")
    if op == "~":
        return text_of(args[0]) + text_of(args[1])
    if op == "filter":
        return _filter(value, args)
    if op == "method":
        return _method(value, args)
    raise RenderError(f"unknown op {op!r}")


def _member(obj: Any, key: Any) -> Any:
    if obj is UNDEFINED:
        raise RenderError("a member of an undefined value")
    if isinstance(obj, EventVars | Mapping):
        return _pairs(obj).get(key, UNDEFINED) if isinstance(key, str) else UNDEFINED
    if isinstance(obj, list | str) and isinstance(key, int) and not isinstance(key, bool):
        return obj[key] if -len(obj) <= key < len(obj) else UNDEFINED
    return UNDEFINED


def _pairs(value: Mapping[str, Any]) -> dict[str, Any]:
    """A map's members as stored (a `Record`'s attributes would read its members first)."""
    return dict(dict.items(value)) if isinstance(value, dict) else dict(value.items())


def _plain(value: Any) -> Any:
    """The event as its name, maps as plain dicts: what equality compares."""
    if isinstance(value, EventVars):
        return str(value)
    return value


def _equal(a: Any, b: Any) -> bool:
    if isinstance(a, EventVars) or isinstance(b, EventVars):
        return (
            isinstance(a, str | EventVars)
            and isinstance(b, str | EventVars)
            and (_plain(a) == _plain(b))
        )
    if a is UNDEFINED or b is UNDEFINED:
        return a is b
    return bool(a == b)


def _order(op: str, a: Any, b: Any) -> bool:
    numbers = all(isinstance(x, int | float) for x in (a, b))
    if not numbers and not (isinstance(a, str) and isinstance(b, str)):
        raise RenderError(f"cannot compare {a!r} and {b!r}")
    return bool({"<": a < b, "<=": a <= b, ">": a > b, ">=": a >= b}[op])


def _contains(container: Any, item: Any) -> bool:
    if isinstance(container, str):
        if not isinstance(item, str):
            raise RenderError("`in` a string takes a string")
        return item in container
    if isinstance(container, Mapping):
        return isinstance(item, str) and item in container
    if isinstance(container, list):
        return any(_equal(item, x) for x in container)
    raise RenderError(f"`in` {container!r}")


def truthy(value: Any) -> bool:
    if value is UNDEFINED or value is None:
        return False
    if isinstance(value, EventVars | datetime):
        return True
    return bool(value)


def printed(value: Any) -> str:
    """What a `print` part writes: null prints as nothing."""
    return "" if value is None else text_of(value)


def text_of(value: Any) -> str:
    """A value as text (`~`, `join`, the string filters): null is `None` here."""
    if value is UNDEFINED:
        return ""
    if value is None:
        return "None"
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _float(value)
    if isinstance(value, str):
        return value
    if isinstance(value, EventVars):
        return str(value)
    if isinstance(value, datetime):
        return _time(value, " ")
    return _repr(value)


def _float(value: float) -> str:
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return repr(value)


def _repr(value: Any) -> str:
    """Python's repr of a JSON value, written out from the rules."""
    if value is None:
        return "None"
    if isinstance(value, bool | int | float):
        return text_of(value)
    if isinstance(value, str):
        return _quoted(value)
    if isinstance(value, list):
        return "[" + ", ".join(_repr(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{_repr(k)}: {_repr(v)}" for k, v in _pairs(value).items()) + "}"
    raise RenderError(f"cannot print {type(value).__name__}")


_ESCAPES = {"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _quoted(text: str) -> str:
    quote = '"' if "'" in text and '"' not in text else "'"
    out = []
    for ch in text:
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ch == quote:
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\x{ord(ch):02x}")
        else:
            out.append(ch)
    return quote + "".join(out) + quote


def _time(value: datetime, sep: str) -> str:
    text = f"{value:%Y-%m-%d}{sep}{value:%H:%M:%S}"
    if value.microsecond:
        text += f".{value.microsecond:06d}"
    return text + "+00:00"


def _filter(name: str, args: list[Any]) -> Any:
    subject = args[0]
    if name == "length":
        if subject is UNDEFINED:
            return 0
        if isinstance(subject, str | list | Mapping):
            return len(subject)
        raise RenderError("`length` of a value without one")
    if subject is UNDEFINED:
        raise RenderError(f"`{name}` of an undefined value")
    if name == "tojson":
        return _tojson(subject)
    if name == "join":
        if not isinstance(subject, list | Mapping | str):
            raise RenderError("`join` takes a list")
        sep = text_of(args[1]) if len(args) > 1 else ""
        return sep.join(text_of(v) for v in subject)
    text = text_of(subject)
    if name == "lower":
        return text.lower()
    if name == "upper":
        return text.upper()
    if name == "trim":
        return text.strip()
    raise RenderError(f"unknown filter {name!r}")


def _tojson(value: Any) -> str:
    if isinstance(value, EventVars):
        value = dict(value)  # Jinja2 dumps the event's payload (it is a dict)
    text = json.dumps(value, sort_keys=True, default=_unjsonable)
    for ch, escape in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("'", "\\u0027")):
        text = text.replace(ch, escape)
    return text


def _unjsonable(value: Any) -> Any:
    raise RenderError(f"`tojson` of {type(value).__name__}")


def _method(name: str, args: list[Any]) -> str:
    at = args[0]
    if not isinstance(at, datetime):
        raise RenderError(f"`{name}` of something other than the time")
    if name == "isoformat":
        return _time(at, "T")
    fmt = args[1]
    out = []
    i = 0
    while i < len(fmt):
        if fmt[i] == "%" and i + 1 < len(fmt):
            out.append(_DIRECTIVES[fmt[i + 1]](at))
            i += 2
        else:
            out.append(fmt[i])
            i += 1
    return "".join(out)


_DIRECTIVES: dict[str, Callable[[datetime], str]] = {
    "Y": lambda d: f"{d.year:04d}",
    "m": lambda d: f"{d.month:02d}",
    "d": lambda d: f"{d.day:02d}",
    "H": lambda d: f"{d.hour:02d}",
    "M": lambda d: f"{d.minute:02d}",
    "S": lambda d: f"{d.second:02d}",
    "%": lambda d: "%",
}
