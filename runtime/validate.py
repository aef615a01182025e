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
from dataclasses import dataclass
from typing import Any

from flowc.runtime.limits import DEFAULT_LIMITS, Limits, storable
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
        "normal",
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
        #: Whether a value of this type that the compiler type-checked is stored as it is
        #: (`TypeSystem` settles it once the type is built): no record inside (defaults to
        #: fill in), no float (an int becomes one), no range (`int(1..5)`, which the compiler
        #: cannot prove of a computed value), in the type or its item.
        self.normal = False

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
        if kind == "json":
            return "any JSON value"
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
            return self._number_schema()
        if kind == "str":
            return {"type": "string"}
        if kind == "enum":
            return {"type": "string", "enum": sorted(self.members)}
        if kind == "json":
            return {}  # the schema every JSON value meets
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

    def _number_schema(self) -> dict[str, Any]:
        whole = self.kind == "int"
        out: dict[str, Any] = {"type": "integer" if whole else "number"}
        if self.min is not None:
            out["minimum"] = int(self.min) if whole else self.min
        if self.max is not None:
            out["maximum"] = int(self.max) if whole else self.max
        return out


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


def _number_type(t: Type, ref: Mapping[str, Any], unbounded: Check) -> None:
    """Fill in an int or float type: its bounds, and its check (`unbounded` within them)."""
    t.min, t.max = ref.get("min"), ref.get("max")
    if t.min is None and t.max is None:
        t.check = unbounded
    else:
        t.check = _bounded(unbounded, t.min, t.max)


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
    """The enums and records of one flow, and every type compiled against them (cached), with
    the machine's `Limits` built into the checks of strings, integers, lists and maps."""

    def __init__(
        self,
        enums: Mapping[str, Sequence[str]],
        records: Mapping[str, Any],
        limits: Limits = DEFAULT_LIMITS,
    ) -> None:
        self.limits = limits
        self.check_str: Check = _str_check(limits)
        self.check_int: Check = _int_check(limits)
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
        elif kind in ("int", "float"):
            _number_type(t, ref, self.check_int if kind == "int" else _check_float)
        elif kind == "str":
            t.check = self.check_str
        elif kind == "enum":
            members = self._enums.get(t.name or "")
            if members is None:
                raise IRLoadError(f"unknown enum {t.name!r}")
            t.members = members
            t.check = _enum_check(members)
        elif kind == "json":
            t.check = _json_check(self.limits, self.check_str, self.check_int)
        elif kind in ("list", "map", "optional"):
            self._container(t, ref)
        else:
            raise IRLoadError(f"unknown type kind {kind!r}")
        t.normal = not (
            t.has_record
            or kind == "float"
            or t.min is not None
            or t.max is not None
            or (t.item is not None and not t.item.normal)
        )
        return t

    def _container(self, t: Type, ref: Mapping[str, Any]) -> None:
        """Fill in a list, map or optional type: its item type and its check."""
        kind = t.kind
        if ref.get("item") is None:
            raise IRLoadError(f"a {kind} type needs an item type")
        item = self.compile(ref["item"])
        t.item = item
        t.has_record = item.has_record
        if kind == "list":
            t.check = _list_check(item, self.limits)
        elif kind == "map":
            t.check = _map_check(item, self.limits, self.check_str)
        else:
            t.simple = item.simple
            t.check = _optional_check(item)

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


def _int_check(limits: Limits) -> Check:
    """Integers (integral floats become ints) of at most `limits.max_int_digits` digits."""
    hi = limits.int_max
    lo = -hi

    def check(x: Any) -> Any:
        v = _check_int(x)
        if lo <= v <= hi:
            return v
        raise _INVALID

    return check


def _str_check(limits: Limits) -> Check:
    """Strings of at most `limits.max_string` characters that every store can keep."""
    longest = limits.max_string
    problem = limits.string_problem

    def check(x: Any) -> Any:
        # Most payload strings are short ASCII: tested first, and kept as they are.
        if type(x) is str and len(x) <= longest and x.isascii() and "\x00" not in x:
            return x
        if isinstance(x, str) and problem(x) is None:
            return str(x)  # a str subclass is stored as a plain str
        raise _INVALID

    return check


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


def _list_check(item: Type, limits: Limits) -> Check:
    simple, inner = item.simple, item.check
    most = limits.max_items

    def check(x: Any) -> Any:
        if type(x) is not list and not isinstance(x, list | tuple):
            raise _INVALID
        if len(x) > most:
            raise _INVALID
        return [v if type(v) is simple else inner(v) for v in x]

    return check


def _map_check(item: Type, limits: Limits, check_key: Check) -> Check:
    simple, inner = item.simple, item.check
    most = limits.max_items

    def check(x: Any) -> Any:
        if not isinstance(x, Mapping):
            raise _INVALID
        if len(x) > most:
            raise _INVALID
        out = {}
        for k, v in x.items():
            out[check_key(k)] = v if type(v) is simple else inner(v)
        return out

    return check


def _json_check(limits: Limits, check_str: Check, check_int: Check) -> Check:
    """Any JSON value, copied: null, booleans, finite numbers, strings, lists (tuples become
    lists) and objects with string keys, within the limits on strings, integers, items, depth
    and overall size (`Limits.max_value_size`, counted as `check_computed` counts it)."""
    return _JsonCopy(limits, check_str, check_int)


class _JsonCopy:
    """`_json_check`'s check: one call copies one value, `budget` counting down the size
    still allowed."""

    __slots__ = ("check_int", "check_str", "deepest", "most", "size")

    def __init__(self, limits: Limits, check_str: Check, check_int: Check) -> None:
        self.most, self.deepest = limits.max_items, limits.max_depth
        self.size = limits.max_value_size
        self.check_str = check_str
        self.check_int = check_int

    def __call__(self, x: Any) -> Any:
        return self.copy(x, 0, [self.size])

    def copy(self, x: Any, depth: int, budget: list[int]) -> Any:
        if x is None or x is True or x is False:
            return x
        if isinstance(x, str):
            x = self.check_str(x)
            budget[0] -= len(x)
        elif isinstance(x, bool):
            return bool(x)
        elif isinstance(x, int):
            return self.check_int(int(x))
        elif isinstance(x, float):
            if x - x == 0.0:  # not nan, not an infinity
                return float(x)
            raise _INVALID
        elif isinstance(x, list | tuple | Mapping):
            x = self.copy_container(x, depth, budget)
        else:
            raise _INVALID
        if budget[0] < 0:
            raise _INVALID
        return x

    def copy_container(self, x: Any, depth: int, budget: list[int]) -> Any:
        """A list, tuple (copied as a list) or object, each item copied."""
        if depth >= self.deepest or len(x) > self.most:
            raise _INVALID
        budget[0] -= len(x)
        if not isinstance(x, Mapping):
            return [self.copy(v, depth + 1, budget) for v in x]
        out: dict[str, Any] = {}
        for k, v in x.items():
            if not isinstance(k, str):
                raise _INVALID
            key = self.check_str(k)
            budget[0] -= len(key)
            out[key] = self.copy(v, depth + 1, budget)
        return out


def _json_problem(value: Any, limits: Limits) -> str:
    """Why `value` is not a JSON value the machine accepts: the first thing found wrong."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        x, depth = stack.pop()
        if isinstance(x, float) and not math.isfinite(x):
            return f"{x!r} is not a finite number"
        if isinstance(x, str) and limits.string_problem(x) is not None:
            return limits.string_problem(x) or ""
        if isinstance(x, int) and not isinstance(x, bool) and limits.int_problem(int(x)):
            return limits.int_problem(int(x)) or ""
        if isinstance(x, list | tuple | Mapping):
            problem = _container_problem(x, depth, limits)
            if problem is not None:
                return problem
            if isinstance(x, Mapping):
                stack.extend((v, depth + 1) for v in x.values())
                stack.extend((k, depth + 1) for k in x)
            else:
                stack.extend((v, depth + 1) for v in x)
        elif not (x is None or isinstance(x, bool | int | float | str)):
            return f"expected a JSON value, got {_json_kind(x)}"
    return f"the value is larger than {limits.max_value_size:,} (characters plus items)"


def _container_problem(x: Any, depth: int, limits: Limits) -> str | None:
    """What is wrong with a list or object itself (its items aside), if anything."""
    if depth >= limits.max_depth:
        return f"the value is nested more than {limits.max_depth} levels deep"
    if len(x) > limits.max_items:
        return f"{len(x):,} items; at most {limits.max_items:,}"
    if isinstance(x, Mapping):
        for k in x:
            if not isinstance(k, str):
                return f"key {_key_text(k)} is not a string"
    return None


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
    """What `report` found, in seed 003's three lists: at most `cap` issues are kept, and
    `count` counts them all (`left_out` is the difference)."""

    __slots__ = ("cap", "count", "invalid", "missing", "unknown")

    def __init__(self, cap: int = DEFAULT_LIMITS.max_issues) -> None:
        self.invalid: list[dict[str, Any]] = []
        self.missing: list[dict[str, Any]] = []
        self.unknown: list[str] = []
        self.cap = cap
        self.count = 0

    @property
    def left_out(self) -> int:
        return self.count - len(self.invalid) - len(self.missing) - len(self.unknown)

    def _room(self) -> bool:
        self.count += 1
        return self.count <= self.cap

    def add_invalid(self, issue: dict[str, Any]) -> None:
        if self._room():
            self.invalid.append(issue)

    def add_missing(self, field: str, requirement: str) -> None:
        if self._room():
            self.missing.append({"field": field, "requirement": requirement})

    def add_unknown(self, field: str) -> None:
        if self._room():
            self.unknown.append(field)

    def as_dict(self) -> dict[str, Any]:
        return {"invalid": self.invalid, "missing": self.missing, "unknown": self.unknown}


def report(
    t: Type,
    value: Any,
    path: str = "",
    issues: Issues | None = None,
    limits: Limits = DEFAULT_LIMITS,
    depth: int = 0,
) -> Issues:
    """Everything wrong with `value` as a `t`, with dotted field paths (`scope.word_count`,
    `items[2].type`, `answers["q1"]`). Bounded: past `limits.max_issues` issues are only
    counted, a container past `limits.max_items` or nested past `limits.max_depth` is one
    issue, not walked."""
    issues = issues if issues is not None else Issues(limits.max_issues)
    where = _Where(issues, path, limits, depth)
    walk = _REPORT_WALKS.get(t.kind)
    if walk is None:
        try:
            t.check(value)
        except Invalid:
            _invalid(issues, path, value, t, _problem(t, value, limits))
    elif t.kind == "optional" or not _too_big(where, t, value):
        walk(where, t, value)
    return issues


@dataclass(frozen=True)
class _Where:
    """Where `report` is in a value: the issues so far, the field path, the limits and the
    depth of nesting."""

    issues: Issues
    path: str
    limits: Limits
    depth: int

    def invalid(self, value: Any, t: Type, problem: str) -> None:
        _invalid(self.issues, self.path, value, t, problem)

    def report(self, t: Type, value: Any, path: str, deeper: int = 1) -> None:
        report(t, value, path, self.issues, self.limits, self.depth + deeper)


def _too_big(where: _Where, t: Type, value: Any) -> bool:
    """Report a container nested too deep or with too many items (one issue, not walked)."""
    if not isinstance(value, list | tuple | Mapping):
        return False
    limits = where.limits
    if where.depth >= limits.max_depth:
        where.invalid(value, t, f"the value is nested more than {limits.max_depth} levels deep")
        return True
    if len(value) > limits.max_items:
        where.invalid(value, t, f"{len(value):,} items; at most {limits.max_items:,}")
        return True
    return False


def _report_record(where: _Where, t: Type, value: Any) -> None:
    if not isinstance(value, Mapping):
        where.invalid(value, t, f"expected an object, got {_json_kind(value)}")
        return
    path = where.path
    known = {f.name for f in t.fields}
    for f in t.fields:
        sub = f"{path}.{f.name}" if path else f.name
        if f.name in value:
            where.report(f.type, value[f.name], sub)
        elif f.required:
            where.issues.add_missing(sub, f.type.requirement())
    for k in value:
        if k not in known:
            name = _key_text(k)
            where.issues.add_unknown(f"{path}.{name}" if path else name)


def _report_optional(where: _Where, t: Type, value: Any) -> None:
    assert t.item is not None
    if value is None:
        return
    if t.item.kind in ("record", "list", "map", "optional"):
        where.report(t.item, value, where.path, deeper=0)
        return
    try:
        t.item.check(value)
    except Invalid:
        where.invalid(value, t, _problem(t.item, value, where.limits))


def _report_list(where: _Where, t: Type, value: Any) -> None:
    assert t.item is not None
    if not isinstance(value, list | tuple):
        where.invalid(value, t, f"expected a list, got {_json_kind(value)}")
        return
    for i, v in enumerate(value):
        where.report(t.item, v, f"{where.path}[{i}]")


def _report_map(where: _Where, t: Type, value: Any) -> None:
    assert t.item is not None
    if not isinstance(value, Mapping):
        where.invalid(value, t, f"expected an object, got {_json_kind(value)}")
        return
    for k, v in value.items():
        if not isinstance(k, str):
            where.invalid(value, t, f"key {_key_text(k)} is not a string")
            continue
        key_problem = where.limits.string_problem(k)
        if key_problem is not None:
            where.invalid(value, t, f"a key is not allowed: {key_problem}")
            continue
        where.report(t.item, v, f'{where.path}["{k}"]')


#: How `report` walks a value of each kind that has parts (other kinds are checked whole).
_REPORT_WALKS: dict[str, Callable[[_Where, Type, Any], None]] = {
    "record": _report_record,
    "optional": _report_optional,
    "list": _report_list,
    "map": _report_map,
}


def _invalid(issues: Issues, path: str, value: Any, t: Type, problem: str) -> None:
    issues.add_invalid(
        {
            "field": path or "(payload)",
            "provided": _shown(value),
            "problem": problem,
            "requirement": t.requirement(),
        }
    )


def _key_text(k: Any) -> str:
    """A key as a field path may show it: short, and storable."""
    text = str(k) if isinstance(k, str) else repr(_shown(k))
    return storable(_short(text))


def _short(text: str) -> str:
    return text if len(text) <= 200 else text[:200] + f"... ({len(text):,} characters)"


def _shown(value: Any, depth: int = 0) -> Any:
    """`value` as a rejection may show it: JSON (no NaN, no infinity), small, storable. A value
    too large or too deep is described instead ("(a list of 1,000 items)")."""
    if value is None or type(value) is bool:
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        n = int(value)
        if -(10**30) < n < 10**30:
            return n
        return f"(an integer of about {int(n.bit_length() * 0.30103) + 1:,} digits)"
    if isinstance(value, float):
        return float(value) if math.isfinite(value) else repr(float(value))
    if isinstance(value, str):
        return storable(_short(str(value)))
    if isinstance(value, list | tuple | Mapping):
        if depth < 3 and len(value) <= 20:
            if not isinstance(value, Mapping):
                return [_shown(v, depth + 1) for v in value]
            if all(isinstance(k, str) for k in value):
                return {_key_text(k): _shown(v, depth + 1) for k, v in value.items()}
        noun = "an object of" if isinstance(value, Mapping) else "a list of"
        return f"({noun} {len(value):,} items)"
    return f"(a {type(value).__name__})"


_LARGEST_FLOAT = sys.float_info.max


def _problem(t: Type, value: Any, limits: Limits = DEFAULT_LIMITS) -> str:
    kind = t.kind
    got = _json_kind(value)
    if kind == "json":
        return _json_problem(value, limits)
    if kind == "str" and isinstance(value, str):
        return limits.string_problem(value) or f"expected {t.requirement()}, got {got}"
    if kind == "enum":
        if isinstance(value, str):
            return f"{_shown(value)!r} is not one of the allowed values"
        return f"expected a string, got {got}"
    if kind in ("int", "float"):
        problem = _number_problem(t, value, limits)
        if problem is not None:
            return problem
    return f"expected {t.requirement()}, got {got}"


def _number_problem(t: Type, value: Any, limits: Limits) -> str | None:
    """Why `value` is not an int or float of type `t`, if a number's own rules say why."""
    whole = t.kind == "int"
    if isinstance(value, bool) or not isinstance(value, int | float):
        return f"expected {'an integer' if whole else 'a number'}, got {_json_kind(value)}"
    if isinstance(value, int) and not whole and abs(value) > _LARGEST_FLOAT:
        return "the number is too large"
    if whole and isinstance(value, float) and not value.is_integer():
        return f"{value!r} is not a whole number"
    if isinstance(value, float) and not math.isfinite(value):
        return f"{value!r} is not a finite number"
    if isinstance(value, int) and limits.int_problem(int(value)) is not None:
        return limits.int_problem(int(value)) or ""
    if t.min is not None and value < t.min:
        return f"{value!r} is below the minimum {_show(t.min)}"
    if t.max is not None and value > t.max:
        return f"{value!r} is above the maximum {_show(t.max)}"
    return None


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
    """The seed-003 feedback object, keys in the seed's order; `issues_left_out` (after
    `issue_count`) only when some issues were counted but not listed."""
    out: dict[str, Any] = {
        "result": "validation_failed",
        "issues": issues.as_dict(),
        "issue_count": issues.count,
    }
    if issues.left_out:
        out["issues_left_out"] = issues.left_out
    out["action"] = action
    return out
