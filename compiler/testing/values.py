"""Small values of each type, to satisfy guards by search: the literals the flow itself compares
with (and their neighbours), a few small numbers, the empty and one-item collections, every enum
member. Each value comes with its `.flow` text, so a generated test reads it back unchanged."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Sequence
from typing import Any

from flowc.compiler.emit.expr_text import literal_text
from flowc.runtime.model import CompiledFlow, Expr, FieldDef, TypeRef

#: A payload as moves carry it: (field, value, text) for each field given.
Payload = tuple[tuple[str, Any, str], ...]

_ABSENT = object()


def _walk(expr: Expr | None) -> Iterator[Expr]:
    if expr is None:
        return
    yield expr
    for arg in expr.args:
        yield from _walk(arg)


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)


def _conditions(flow: CompiledFlow) -> list[Expr]:
    """The flow's guards, requires and invariants: the literals in them are the values worth
    trying."""
    exprs = [t.guard for t in flow.transitions if t.guard is not None]
    for ev in flow.events:
        exprs.extend(r.guard for r in ev.requires)
    exprs.extend(inv.expr for inv in flow.invariants)
    return exprs


def _near(value: Any, ints: set[int], floats: set[float], strs: set[str]) -> None:
    """Add a literal found in a condition, and for a number its neighbours, to the values to
    try."""
    if isinstance(value, bool):
        return
    if isinstance(value, int):
        ints.update({value - 1, value, value + 1})
    elif isinstance(value, float):
        floats.update({value - 0.5, value, value + 0.5})
    elif isinstance(value, str):
        strs.add(value)


def _varied(
    fields: Sequence[FieldDef], options: list[list[tuple[Any, str]]]
) -> list[tuple[tuple[Any, str], ...]]:
    """The smallest payload, the fullest one (every optional field given a value other than
    its default) and the largest (every field at its last candidate), then each with one field
    varied at a time; each combination once."""
    smallest = tuple(opts[0] for opts in options)
    fullest = tuple(
        next((o for o in opts if o[0] is not _ABSENT and o[0] != f.default), opts[0])
        if not f.required
        else opts[0]
        for f, opts in zip(fields, options, strict=True)
    )
    largest = tuple(opts[-1] for opts in options)
    bases = (smallest, fullest, largest)
    varied = list(bases)  # the bases first: the limit cuts variations, not them
    for base in bases:
        for i, opts in enumerate(options):
            varied.extend((*base[:i], choice, *base[i + 1 :]) for choice in opts[1:])
    seen: set[tuple[str, ...]] = set()
    combos: list[tuple[tuple[Any, str], ...]] = []
    for combo in varied:
        key = tuple(text for _, text in combo)  # values may be unhashable
        if key not in seen:
            seen.add(key)
            combos.append(combo)
    return combos


class ValueSource:
    def __init__(self, flow: CompiledFlow) -> None:
        self.flow = flow
        self.enums = {e.name: e.members for e in flow.enums}
        self.records = {r.name: r.fields for r in flow.records}
        ints: set[int] = {0, 1, 2, 5}
        floats: set[float] = {0.0, 0.5, 1.0}
        strs: set[str] = {"", "x"}
        for f in flow.context:
            strs.update(_strings(f.default))
        meta_keys: set[str] = set()
        for root in _conditions(flow):
            for node in _walk(root):
                value = node.value
                if node.op == "meta" and isinstance(value, str):
                    meta_keys.add(value)
                if node.op == "lit":
                    _near(value, ints, floats, strs)
        # A guard comparing with `state.meta.KEY` is satisfied by one of the states' KEY values
        # (seed 002's `require event.skill == coalesce(state.meta.skill, "")`).
        for state in flow.states:
            for key in meta_keys:
                strs.update(_strings((state.meta or {}).get(key)))
        self.ints = sorted(ints, key=lambda v: (abs(v), v))
        self.floats = sorted(floats, key=lambda v: (abs(v), v))
        self.strs = sorted(strs, key=lambda v: (len(v), v))

    # ---- one type ------------------------------------------------------------------------
    def candidates(self, ref: TypeRef, depth: int = 0) -> list[tuple[Any, str]]:
        """(value, text) pairs, smallest first."""
        kind = ref.kind
        if kind == "bool":
            return [(False, "false"), (True, "true")]
        if kind == "int":
            return self._ints(ref)
        if kind == "float":
            lo_f = ref.min if ref.min is not None else float("-inf")
            hi_f = ref.max if ref.max is not None else float("inf")
            return [(v, literal_text(v)) for v in self.floats if lo_f <= v <= hi_f]
        if kind == "str":
            return [(v, literal_text(v)) for v in self.strs]
        if kind == "enum":
            name = ref.name or ""
            return [(m, f"{name}.{m}") for m in self.enums.get(name, ())]
        if kind == "json":
            return [(None, "none"), ({}, "{}"), ([], "[]")]
        if kind == "optional":
            assert ref.item is not None
            return [(None, "none"), *self.candidates(ref.item, depth)]
        if depth >= 2:
            return self._smallest(ref)
        return self._containers(ref, depth)

    def _ints(self, ref: TypeRef) -> list[tuple[Any, str]]:
        """The integers to try within the type's range, and its bounds."""
        lo = ref.min if ref.min is not None else -(2**63)
        hi = ref.max if ref.max is not None else 2**63 - 1
        values = [v for v in self.ints if lo <= v <= hi]
        for bound in (ref.min, ref.max):
            if bound is not None and int(bound) not in values:
                values.append(int(bound))
        return [(v, str(v)) for v in values]

    def _containers(self, ref: TypeRef, depth: int) -> list[tuple[Any, str]]:
        """`candidates` of a list, map or record (nested less than two deep)."""
        kind = ref.kind
        if kind == "list":
            assert ref.item is not None
            items = self.candidates(ref.item, depth)[:6]
            return [([], "[]"), *(([v], f"[{text}]") for v, text in items)]
        if kind == "map":
            assert ref.item is not None
            item = self.candidates(ref.item, depth + 1)[:1]
            out: list[tuple[Any, str]] = [({}, "{}")]
            for key in self.strs[:4]:
                for v, text in item:
                    out.append(({key: v}, "{" + literal_text(key) + ": " + text + "}"))
            return out
        if kind == "record":
            return self.records_of(ref.name or "", depth + 1)
        return []

    def _smallest(self, ref: TypeRef) -> list[tuple[Any, str]]:
        if ref.kind == "list":
            return [([], "[]")]
        if ref.kind == "map":
            return [({}, "{}")]
        if ref.kind == "record":
            record = self.record(ref.name or "", 3)
            return [record] if record is not None else []
        return self.candidates(ref, 0)[:1]

    def record(self, name: str, depth: int) -> tuple[Any, str] | None:
        found = self.records_of(name, depth)
        return found[0] if found else None

    def records_of(self, name: str, depth: int) -> list[tuple[Any, str]]:
        """The smallest record (required fields only), then each field varied on its own."""
        fields = [f for f in self.records.get(name, ()) if f.required]
        options = []
        for f in fields:
            found = self.candidates(f.type, depth) if depth < 3 else self._smallest(f.type)
            if not found:
                return []
            options.append(found[:4])
        base = [opts[0] for opts in options]
        combos = [base]
        if depth <= 1:
            for i, opts in enumerate(options):
                combos.extend([*base[:i], choice, *base[i + 1 :]] for choice in opts[1:])
            combos.append([opts[-1] for opts in options])  # the largest: every field at its last
        out = []
        for combo in combos:
            value = {f.name: v for f, (v, _) in zip(fields, combo, strict=True)}
            texts = [
                f"{literal_text(f.name)}: {text}"
                for f, (_, text) in zip(fields, combo, strict=True)
            ]
            out.append((value, "{" + ", ".join(texts) + "}"))
        return out

    # ---- payloads and contexts ---------------------------------------------------------------
    def payloads(self, fields: Sequence[FieldDef], limit: int) -> list[Payload]:
        """The smallest payload (required fields only), then each field varied on its own
        over its candidates; the full product instead when it is small."""
        options: list[list[tuple[Any, str]]] = []
        for f in fields:
            found = self.candidates(f.type)
            if not f.required:
                found = [(_ABSENT, ""), *found]
            if not found:
                return []  # a required field no value can be made for: no payload is sent
            options.append(found)
        names = [f.name for f in fields]
        total = 1
        for opts in options:
            total *= len(opts)
        combos: list[tuple[tuple[Any, str], ...]] = (
            list(itertools.product(*options))
            if total <= limit
            else _varied(fields, options)[:limit]
        )
        out: list[Payload] = []
        for combo in combos:
            out.append(
                tuple(
                    (name, value, text)
                    for name, (value, text) in zip(names, combo, strict=True)
                    if value is not _ABSENT
                )
            )
        return out

    def required_context(self) -> dict[str, Any]:
        """Values for the context fields that have no default (the host must give them)."""
        return {name: value for name, value, _ in self.required_given()}

    def required_given(self) -> list[tuple[str, Any, str]]:
        """(field, value, text) for each context field without a default."""
        out = []
        for f in self.flow.context:
            if f.required:
                options = self.candidates(f.type)
                if options:
                    out.append((f.name, *options[0]))
        return out

    def context_variants(self) -> Iterator[tuple[str, Any, str]]:
        """(field, value, text): each context field set on its own to each of its candidates
        (the starting contexts `flowc paths` tries when the default one leaves a guard shut)."""
        for f in self.flow.context:
            for value, text in self.candidates(f.type):
                if f.required or value != f.default:
                    yield f.name, value, text

    def text_of(self, ref: TypeRef, value: Any) -> str:
        if value is None:
            return "none"
        if ref.kind == "enum":
            return f"{ref.name}.{value}"
        if ref.kind == "optional" and ref.item is not None:
            return self.text_of(ref.item, value)
        return literal_text(value)
