"""The type system of guards, actions, context fields and event payloads.

Types are small frozen values compared structurally. `ANY` stands for "already reported":
every check accepts it silently so that one mistake yields one diagnostic, not a cascade.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Prim:
    name: str  # bool | int | float | str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class ListTy:
    item: Ty

    def __str__(self) -> str:
        return f"list[{self.item}]"


@dataclass(frozen=True, slots=True)
class MapTy:
    value: Ty

    def __str__(self) -> str:
        return f"map[str, {self.value}]"


@dataclass(frozen=True, slots=True)
class OptionalTy:
    inner: Ty

    def __str__(self) -> str:
        return f"{self.inner}?"


@dataclass(frozen=True, slots=True)
class EnumTy:
    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class RecordTy:
    name: str

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True, slots=True)
class NoneTy:
    def __str__(self) -> str:
        return "none"


@dataclass(frozen=True, slots=True)
class JsonTy:
    """`json`: any JSON value (null, booleans, numbers, strings, lists, objects). Every value
    of the language is one, so anything may be stored in it; nothing but `none` is compared
    with it (see `holds_json`)."""

    def __str__(self) -> str:
        return "json"


@dataclass(frozen=True, slots=True)
class AnyTy:
    # Shown only inside the type of an empty literal (`[]` is `list[_]`), as rustc writes an
    # element type not known yet; a bare ANY is never reported.
    def __str__(self) -> str:
        return "_"


Ty = Prim | ListTy | MapTy | OptionalTy | EnumTy | RecordTy | NoneTy | JsonTy | AnyTy

BOOL = Prim("bool")
INT = Prim("int")
FLOAT = Prim("float")
STR = Prim("str")
NONE = NoneTy()
JSON = JsonTy()
ANY = AnyTy()

PRIMITIVES = {"bool": BOOL, "int": INT, "float": FLOAT, "str": STR}


def is_numeric(ty: Ty) -> bool:
    return ty in (INT, FLOAT) or isinstance(ty, AnyTy)


def is_any(ty: Ty) -> bool:
    return isinstance(ty, AnyTy)


def assignable(source: Ty, target: Ty) -> bool:
    """Can a value of type `source` be stored where `target` is expected?"""
    if isinstance(source, AnyTy) or isinstance(target, AnyTy) or source == target:
        return True
    if isinstance(target, JsonTy):
        return True  # every value is a JSON value, `none` (null) included
    if source == INT and target == FLOAT:
        return True
    if isinstance(target, OptionalTy):
        return isinstance(source, NoneTy) or assignable(
            source.inner if isinstance(source, OptionalTy) else source, target.inner
        )
    if isinstance(source, ListTy) and isinstance(target, ListTy):
        return assignable(source.item, target.item)
    if isinstance(source, MapTy) and isinstance(target, MapTy):
        return assignable(source.value, target.value)
    return False


def comparable(left: Ty, right: Ty) -> bool:
    """May `left == right` be written? Enums compare with strings (their member names)."""
    if assignable(left, right) or assignable(right, left):
        return True
    pair = {type(left), type(right)}
    if pair == {EnumTy, Prim} and STR in (left, right):
        return True
    if isinstance(left, OptionalTy):
        return comparable(left.inner, right)
    if isinstance(right, OptionalTy):
        return comparable(left, right.inner)
    return False


def has_any(ty: Ty) -> bool:
    """Whether `ty` is or holds ANY (the item type of an empty `[]` or `{}`)."""
    if isinstance(ty, AnyTy):
        return True
    if isinstance(ty, ListTy):
        return has_any(ty.item)
    if isinstance(ty, MapTy):
        return has_any(ty.value)
    if isinstance(ty, OptionalTy):
        return has_any(ty.inner)
    return False


def join(types: list[Ty]) -> Ty | None:
    """The narrowest type every element fits, for list and map literals; None if there is none.
    An empty container's type gives way to a known one: `[[], ["a"]]` is `list[list[str]]`."""
    result: Ty = ANY
    for ty in types:
        if isinstance(result, AnyTy):
            result = ty
        elif assignable(ty, result) and not (has_any(result) and not has_any(ty)):
            continue
        elif assignable(result, ty):
            result = ty
        elif isinstance(ty, NoneTy):
            result = OptionalTy(result)
        elif isinstance(result, NoneTy):
            result = OptionalTy(ty)
        else:
            return None
    return result
