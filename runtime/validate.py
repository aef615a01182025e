"""Value types of a flow -> fast validators, field-level feedback and JSON Schemas.

Each type of the IR (`TypeRef`, read here in its JSON form) is compiled once per machine into a
`Type` whose `check(value)` returns the value normalised (a new container: the caller's lists
and dicts are never kept, record fields left out are filled from their defaults, integral
floats become ints, ints in float fields become floats) or raises `Invalid`. `check` does no
bookkeeping at all, so valid payloads cost a few attribute reads per field.

Only when `check` fails does `report` walk the value again to say what is wrong, field by field,
in the feedback shape of seed 003 (ADR-007):

    {"result": "validation_failed",
     "issues": {"invalid": [{"field", "provided", "problem", "requirement"}],
                "missing": [{"field", "requirement"}],
                "unknown": ["field", ...]},
     "issue_count": N,
     "action": "..."}
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from flowc.runtime.model import IRLoadError


class Invalid(Exception):
    """Raised by `Type.check`; carries nothing (the slow `report` pass says what is wrong)."""


_INVALID = Invalid()


class _Never:
    """A type no value has: `Type.simple` for types whose values always need `check`."""


Check = Callable[[Any], Any]


class Type:
    """A compiled value type. `simple` is the one Python type whose values are valid as they
    are (`str` for `str`), so a record check can skip the call for them; `_Never` otherwise."""

    __slots__ = (
        "check",
        "fields",
        "has_record",
        "item",
        "kind",
        "max",
        "members",
        "min",
        "name",
        "simple",
        "specs",
    )

    def __init__(self, kind: str, name: str | None = None) -> None:
        self.kind = kind
        self.name = name
        self.simple: type = _Never
        self.item: Type | None = None
        self.fields: tuple[Field, ...] = ()
        self.members: frozenset[str] = frozenset()
        self.min: float | None = None
        self.max: float | None = None
        self.has_record = False
        self.check: Check = _reject_all
        #: Per field, what a record check reads: (name, simple, check, required, default).
        self.specs: tuple[tuple[str, type, Check, bool, Any], ...] = ()

    def set_fields(self, fields: tuple[Field, ...]) -> None:
        self.fields = fields
        self.specs = tuple(
            (f.name, f.type.simple, f.type.check, f.required, f.default) for f in fields
        )

    # ---- words for feedback ----------------------------------------------------------------
    def requirement(self) -> str:
        """What a valid value is, in words ("an integer from 1 to 5")."""
        kind = self.kind
        if kind == "bool":
            return "true or false"
        if kind in ("int", "float"):
            noun = "an integer" if kind == "int" else "a number"
            return noun + _range_words(self.min, self.max)
        if kind == "str":
            return "a string"
        if kind == "enum":
            return "one of " + ", ".join(sorted(self.members))
        assert self.item is not None or kind == "record"
        if kind == "list":
            assert self.item is not None
            return f"a list, each item {self.item.requirement()}"
        if kind == "map":
            assert self.item is not None
            return f"an object with string keys, each value {self.item.requirement()}"
        if kind == "optional":
            assert self.item is not None
            return f"{self.item.requirement()}, or null"
        names = ", ".join(f.name for f in self.fields)
        return f"a {self.name} object ({names})" if names else f"a {self.name} object"

    def schema(self) -> dict[str, Any]:
        """The JSON Schema of this type (draft 2020-12 vocabulary, records inlined)."""
        kind = self.kind
        if kind == "bool":
            return {"type": "boolean"}
        if kind in ("int", "float"):
            out: dict[str, Any] = {"type": "integer" if kind == "int" else "number"}
            if self.min is not None:
                out["minimum"] = int(self.min) if kind == "int" else self.min
            if self.max is not None:
                out["maximum"] = int(self.max) if kind == "int" else self.max
            return out
        if kind == "str":
            return {"type": "string"}
        if kind == "enum":
            return {"type": "string", "enum": sorted(self.members)}
        if kind == "list":
            assert self.item is not None
            return {"type": "array", "items": self.item.schema()}
        if kind == "map":
            assert self.item is not None
            return {"type": "object", "additionalProperties": self.item.schema()}
        if kind == "optional":
            assert self.item is not None
            return {"anyOf": [self.item.schema(), {"type": "null"}]}
        return object_schema(self.fields, title=self.name)


class Field:
    """A field of a record, an event payload or the context."""

    __slots__ = ("default", "name", "required", "type")

    def __init__(self, name: str, type_: Type, required: bool, default: Any) -> None:
        self.name = name
        self.type = type_
        self.required = required
        self.default = default


def object_schema(fields: Sequence[Field], *, title: str | None = None) -> dict[str, Any]:
    props: dict[str, Any] = {}
    for f in fields:
        prop = f.type.schema()
        if not f.required:
            prop = {**prop, "default": f.default}
        props[f.name] = prop
    out: dict[str, Any] = {"type": "object"}
    if title:
        out["title"] = title
    out["properties"] = props
    out["required"] = [f.name for f in fields if f.required]
    out["additionalProperties"] = False
    return out


def _reject_all(value: Any) -> Any:
    raise _INVALID


def _show(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else str(v)


def _range_words(lo: float | None, hi: float | None) -> str:
    if lo is not None and hi is not None:
        return f" from {_show(lo)} to {_show(hi)}"
    if lo is not None:
        return f" >= {_show(lo)}"
    if hi is not None:
        return f" <= {_show(hi)}"
    return ""


# ---- compilation ------------------------------------------------------------------------------


class TypeSystem:
    """The enums and records of one flow, and every type compiled against them (cached)."""

    def __init__(self, enums: Mapping[str, Sequence[str]], records: Mapping[str, Any]) -> None:
        self._enums = {name: frozenset(members) for name, members in enums.items()}
        self._record_defs = records
        self._records: dict[str, Type] = {}
        self._cache: dict[tuple[Any, ...], Type] = {}

    def compile(self, ref: Mapping[str, Any]) -> Type:
        key = _key(ref)
        found = self._cache.get(key)
        if found is None:
            found = self._build(ref)
            self._cache[key] = found
        return found

    def fields(self, raw_fields: Sequence[Mapping[str, Any]], where: str) -> tuple[Field, ...]:
        out = []
        for raw in raw_fields:
            name = raw["name"]
            ty = self.compile(raw["type"])
            required = raw.get("required", True)
            default = None
            if not required:
                try:
                    default = ty.check(raw.get("default"))
                except Invalid:
                    raise IRLoadError(
                        f"the default of {where}.{name} is not {ty.requirement()}: "
                        f"{raw.get('default')!r}"
                    ) from None
            out.append(Field(name, ty, bool(required), default))
        return tuple(out)

    def _build(self, ref: Mapping[str, Any]) -> Type:
        kind = ref["kind"]
        if kind == "record":
            return self._record(ref["name"])
        t = Type(kind, ref.get("name"))
        if kind == "bool":
            t.simple = bool
            t.check = _check_bool
        elif kind == "int":
            t.min, t.max = ref.get("min"), ref.get("max")
            if t.min is None and t.max is None:
                t.simple = int
                t.check = _check_int
            else:
                t.check = _bounded(_check_int, t.min, t.max)
        elif kind == "float":
            t.min, t.max = ref.get("min"), ref.get("max")
            if t.min is None and t.max is None:
                t.check = _check_float
            else:
                t.check = _bounded(_check_float, t.min, t.max)
        elif kind == "str":
            t.simple = str
            t.check = _check_str
        elif kind == "enum":
            members = self._enums.get(t.name or "")
            if members is None:
                raise IRLoadError(f"unknown enum {t.name!r}")
            t.members = members
            t.check = _enum_check(members)
        elif kind in ("list", "map", "optional"):
            if ref.get("item") is None:
                raise IRLoadError(f"a {kind} type needs an item type")
            item = self.compile(ref["item"])
            t.item = item
            t.has_record = item.has_record
            if kind == "list":
                t.check = _list_check(item)
            elif kind == "map":
                t.check = _map_check(item)
            else:
                t.simple = item.simple
                t.check = _optional_check(item)
        else:
            raise IRLoadError(f"unknown type kind {kind!r}")
        return t

    def _record(self, name: str) -> Type:
        found = self._records.get(name)
        if found is not None:
            return found
        raw = self._record_defs.get(name)
        if raw is None:
            raise IRLoadError(f"unknown record type {name!r}")
        t = Type("record", name)
        t.has_record = True
        self._records[name] = t  # before its fields: a record may contain itself in a list
        t.check = record_check(t)
        t.set_fields(self.fields(raw, name))
        return t


def _key(ref: Mapping[str, Any]) -> tuple[Any, ...]:
    item = ref.get("item")
    return (
        ref["kind"],
        ref.get("name"),
        _key(item) if item is not None else None,
        ref.get("min"),
        ref.get("max"),
    )


def _check_bool(x: Any) -> Any:
    if type(x) is bool:
        return x
    raise _INVALID


def _check_int(x: Any) -> Any:
    t = type(x)
    if t is int:
        return x
    if t is float and x.is_integer():
        return int(x)
    if isinstance(x, int) and t is not bool:
        return int(x)
    raise _INVALID


def _check_float(x: Any) -> Any:
    t = type(x)
    if t is float:
        if x - x == 0.0:  # false for nan and the infinities, without a call
            return x
        raise _INVALID
    if t is int or (isinstance(x, int | float) and t is not bool):
        try:
            return _check_float(float(x))
        except OverflowError:  # an int past the largest float
            raise _INVALID from None
    raise _INVALID


def _check_str(x: Any) -> Any:
    if isinstance(x, str):
        return str(x)
    raise _INVALID


def _bounded(inner: Check, lo: float | None, hi: float | None) -> Check:
    def check(x: Any) -> Any:
        v = inner(x)
        if (lo is not None and v < lo) or (hi is not None and v > hi):
            raise _INVALID
        return v

    return check


def _enum_check(members: frozenset[str]) -> Check:
    def check(x: Any) -> Any:
        if isinstance(x, str):
            value = str(x)  # a str subclass is stored as a plain str, as in `str` fields
            if value in members:
                return value
        raise _INVALID

    return check


def _list_check(item: Type) -> Check:
    simple, inner = item.simple, item.check

    def check(x: Any) -> Any:
        if type(x) is not list and not isinstance(x, list | tuple):
            raise _INVALID
        return [v if type(v) is simple else inner(v) for v in x]

    return check


def _map_check(item: Type) -> Check:
    simple, inner = item.simple, item.check

    def check(x: Any) -> Any:
        if not isinstance(x, Mapping):
            raise _INVALID
        out = {}
        for k, v in x.items():
            if type(k) is not str:
                if not isinstance(k, str):
                    raise _INVALID
                k = str(k)
            out[k] = v if type(v) is simple else inner(v)
        return out

    return check


def _optional_check(item: Type) -> Check:
    inner = item.check

    def check(x: Any) -> Any:
        if x is None:
            return None
        return inner(x)

    return check


def record_check(t: Type) -> Check:
    """The check of a record-like type (records, payloads, the context). Its fields are read
    from `t.specs` when called, so a record may be referenced before its fields are compiled."""

    def check(x: Any) -> Any:
        if type(x) is not dict and not isinstance(x, Mapping):
            raise _INVALID
        out = {}
        absent = 0  # counting the absent fields is cheaper: most payloads give most fields
        for name, simple, inner, required, default in t.specs:
            if name in x:
                v = x[name]
                out[name] = v if type(v) is simple else inner(v)
            elif required:
                raise _INVALID
            else:
                out[name] = default
                absent += 1
        if len(out) - absent != len(x):
            raise _INVALID  # a key that is not a field
        return out

    return check


def fields_type(name: str, fields: tuple[Field, ...]) -> Type:
    """A record-like type for an event payload or the context."""
    t = Type("record", name)
    t.set_fields(fields)
    t.has_record = True
    t.check = record_check(t)
    return t


# ---- feedback ---------------------------------------------------------------------------------


class Issues:
    """What `report` found, in seed 003's three lists."""

    __slots__ = ("invalid", "missing", "unknown")

    def __init__(self) -> None:
        self.invalid: list[dict[str, Any]] = []
        self.missing: list[dict[str, Any]] = []
        self.unknown: list[str] = []

    @property
    def count(self) -> int:
        return len(self.invalid) + len(self.missing) + len(self.unknown)

    def as_dict(self) -> dict[str, Any]:
        return {"invalid": self.invalid, "missing": self.missing, "unknown": self.unknown}


def report(t: Type, value: Any, path: str = "", issues: Issues | None = None) -> Issues:
    """Everything wrong with `value` as a `t`, with dotted field paths (`scope.word_count`,
    `items[2].type`, `answers["q1"]`)."""
    issues = issues if issues is not None else Issues()
    kind = t.kind
    if kind == "record":
        if not isinstance(value, Mapping):
            _invalid(issues, path, value, t, f"expected an object, got {_json_kind(value)}")
            return issues
        known = {f.name for f in t.fields}
        for f in t.fields:
            sub = f"{path}.{f.name}" if path else f.name
            if f.name in value:
                report(f.type, value[f.name], sub, issues)
            elif f.required:
                issues.missing.append({"field": sub, "requirement": f.type.requirement()})
        for k in value:
            if k not in known:
                issues.unknown.append(f"{path}.{k}" if path else str(k))
        return issues
    if kind == "optional":
        assert t.item is not None
        if value is None:
            return issues
        if t.item.kind in ("record", "list", "map", "optional"):
            return report(t.item, value, path, issues)
        try:
            t.item.check(value)
        except Invalid:
            _invalid(issues, path, value, t, _problem(t.item, value))
        return issues
    if kind == "list":
        assert t.item is not None
        if not isinstance(value, list | tuple):
            _invalid(issues, path, value, t, f"expected a list, got {_json_kind(value)}")
            return issues
        for i, v in enumerate(value):
            report(t.item, v, f"{path}[{i}]", issues)
        return issues
    if kind == "map":
        assert t.item is not None
        if not isinstance(value, Mapping):
            _invalid(issues, path, value, t, f"expected an object, got {_json_kind(value)}")
            return issues
        for k, v in value.items():
            if not isinstance(k, str):
                _invalid(issues, path, value, t, f"key {k!r} is not a string")
                continue
            report(t.item, v, f'{path}["{k}"]', issues)
        return issues
    try:
        t.check(value)
    except Invalid:
        _invalid(issues, path, value, t, _problem(t, value))
    return issues


def _invalid(issues: Issues, path: str, value: Any, t: Type, problem: str) -> None:
    issues.invalid.append(
        {
            "field": path or "(payload)",
            "provided": value,
            "problem": problem,
            "requirement": t.requirement(),
        }
    )


_LARGEST_FLOAT = sys.float_info.max


def _problem(t: Type, value: Any) -> str:
    kind = t.kind
    got = _json_kind(value)
    if kind == "enum":
        if isinstance(value, str):
            return f"{value!r} is not one of the allowed values"
        return f"expected a string, got {got}"
    if kind in ("int", "float"):
        if isinstance(value, bool) or not isinstance(value, int | float):
            return f"expected {'an integer' if kind == 'int' else 'a number'}, got {got}"
        if isinstance(value, int) and kind == "float" and abs(value) > _LARGEST_FLOAT:
            return "the number is too large"
        if kind == "int" and isinstance(value, float) and not value.is_integer():
            return f"{value!r} is not a whole number"
        if isinstance(value, float) and not math.isfinite(value):
            return f"{value!r} is not a finite number"
        if t.min is not None and value < t.min:
            return f"{value!r} is below the minimum {_show(t.min)}"
        if t.max is not None and value > t.max:
            return f"{value!r} is above the maximum {_show(t.max)}"
    return f"expected {t.requirement()}, got {got}"


def _json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "a list"
    if isinstance(value, Mapping):
        return "an object"
    return f"a {type(value).__name__}"


def feedback(issues: Issues, action: str) -> dict[str, Any]:
    """The seed-003 feedback object, keys in the seed's order."""
    return {
        "result": "validation_failed",
        "issues": issues.as_dict(),
        "issue_count": issues.count,
        "action": action,
    }
