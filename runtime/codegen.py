"""Generated dispatch: one Python function per (state, event), written once the pair is hot.

`Instance.send` spends most of its time in small calls: the payload check of each nested
record, a closure per guard and per action, the loop over the candidates. For each (state,
event) pair actually sent, this module writes one function that does all of it inline: the
payload check of the event's fields, the preconditions, the guards of the candidates in order
as Python expressions, the winning transition's plan (engine.py: its exit / own / entry
actions on a working copy of the context, the timers to arm) written out, and the commit
(history entry, state, timers, idempotency key, subscribers). The general path runs the same
plan, so what a step does is decided in one place. A statechart whose configuration is always
one leaf and its ancestors (engine.py's `leaf_chart`) gets the same functions per (leaf,
event), from the engine's per-(leaf, rule) plans (`chart_plan`); they also commit the
configuration, the timers of the states left and entered, and the rule taken.

Writing and compiling such a function costs some hundreds of microseconds, far more than the
general path takes for one step; a CLI run, a serverless call or a server's first requests
would pay it on every pair they touch. So a pair runs on the general path for its first
`Machine.hot_after` sends (`warming`), and only then is its function written.

The accepted step is written out, and so are the refusals decided by the flow's own rules (a
failed precondition, a `reject` rule, no guard holding, a `back` rule sent without force):
they return the same `Rejection` the general path makes (`Machine.rejection`, its message
rendered only when read), since agents make invalid calls all the time. Whatever else may
happen (an invalid payload, a run-time fault, a choice state to route through, a forced send)
hands the call to `Instance._send_slow`, the general path, which starts over from the
unchanged instance and words the rejection; guards, actions and checks are pure functions of
context and payload, so it reaches the same verdict. The generated code therefore only has
to agree with the closures of `flowc.runtime.expr` on the steps it decides, and to fault
whenever they fault.

No text of the flow ever becomes code: every value taken from the flow (names, strings,
numbers, literals, types, the closures used for rarer expression shapes) is bound in the
function's namespace under a generated name (`_k0`, `_k1`, ...); the source itself is built from
this module's templates and those names only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from flowc.runtime import engine
from flowc.runtime import rejections as R
from flowc.runtime.engine import Plan, chart_plan, plan_of, with_ancestors
from flowc.runtime.expr import (
    FAULTS,
    FUNCTIONS,
    ExprFault,
    action_plan,
)
from flowc.runtime.expr import _identity as identity
from flowc.runtime.expr import _normaliser as normaliser
from flowc.runtime.expr import _then as then
from flowc.runtime.flow import sends_message
from flowc.runtime.limits import LimitExceeded
from flowc.runtime.model import IRLoadError
from flowc.runtime.operators import BINARY_OPERATORS, Operator
from flowc.runtime.steps import StepResult, copy_dict
from flowc.runtime.validate import Invalid, Type
from flowc.runtime.validate import _check_float as check_float

if TYPE_CHECKING:
    from flowc.runtime.flow import CEvent, CState, CTransition, Requirement
    from flowc.runtime.instance import Instance
    from flowc.runtime.machine import Machine
    from flowc.runtime.steps import Outcome

#: What a generated dispatch function is called with: the instance, the payload as sent, the
#: reason and the idempotency key.
Dispatch = Callable[["Instance", Any, "str | None", "str | None"], "Outcome"]

#: The evaluated binary operators, each written as Python writes it (the language's operators
#: are Python's, runtime/operators.py); a bounded one calls its machine's function instead.
_OPERATORS: dict[str, Operator] = {
    s: op for s, op in BINARY_OPERATORS.items() if op.apply is not None
}


class _Unsupported(Exception):
    """A shape the generator leaves to the closures."""


@dataclass(slots=True)
class _Branches:
    """The accepting branches of one dispatch function, as its candidates are written: the
    rules and their plans in order, and (when there are several) the local variable that
    records which one was taken."""

    many: bool
    which: str
    accepting: list[CTransition] = field(default_factory=list)
    plans: list[Plan] = field(default_factory=list)


def _index(o: Any, k: Any) -> Any:
    # The closures' rule for `a[i]`: a list index must be an int within range (no negative
    # indexes); any failure is a fault.
    if type(o) is list:
        if type(k) is not int or not 0 <= k < len(o):
            raise ExprFault("index out of range")
        return o[k]
    if o is None:
        raise ExprFault("cannot index none")
    return o[k]


def _none_on_path() -> ExprFault:
    return ExprFault("none on the path of a set")


class Generator:
    """The generated code of one machine: one namespace of constants and functions, shared by
    every function written for it (so records referenced from several events are checked by
    one function)."""

    def __init__(self, machine: Machine) -> None:

        self.m = machine
        self.ns: dict[str, Any] = {
            "_Invalid": Invalid,
            "_INVALID": Invalid(),
            "_FAULTS_OR_INVALID": (*FAULTS, Invalid),
            "_new": object.__new__,
            "_SR": StepResult,
            "_M": machine,
            "_arm": engine.arm_rules,
            "_due": engine.due_order,
            "_index": _index,
            "_none": _none_on_path,
            "_NO_VIA": (),
            "_EVENT": "event",
            "_LimitExceeded": LimitExceeded,
            "_FROM": "from",
            "_TO": "to",
            "_refuse": machine.rejection,
            "_copy": copy_dict,
            "_REJECT": R.REJECT,
            "_REQUIRE": R.REQUIRE,
            "_GUARD_FAILED": R.GUARD_FAILED,
            "_BACKWARD": R.BACKWARD_REQUIRES_FORCE,
        }
        self._consts: dict[Any, str] = {}
        self._records: dict[int, str] = {}
        self._n = 0
        #: name -> source of every function written so far
        self.sources: dict[str, str] = {}

    # ---- names ------------------------------------------------------------------------------
    def _fresh(self, prefix: str) -> str:
        self._n += 1
        return f"{prefix}{self._n}"

    def const(self, value: Any) -> str:
        """The name under which `value` is bound (equal hashable values share one)."""
        # Strings, ints and booleans are shared by value; anything else by identity (a list or
        # map literal is bound as the very object, as the closures do; 0.0 == -0.0).
        key: Any = (type(value), value) if type(value) in (str, int, bool) else id(value)
        found = self._consts.get(key)
        if found is not None:
            return found
        name = self._fresh("_k")
        self.ns[name] = value  # which also keeps the object alive, so its id stays its own
        self._consts[key] = name
        return name

    def _define(self, name: str, lines: list[str], where: str) -> Any:
        source = "\n".join(lines) + "\n"
        self.sources[name] = source  # for tests and for reading in a debugger
        code = compile(source, f"<flowc {where}>", "exec")
        exec(code, self.ns)
        return self.ns[name]

    # ---- payload checks ---------------------------------------------------------------------
    def record(self, t: Type) -> str:
        """The name of the generated check of record type `t` (written on first need)."""
        found = self._records.get(id(t))
        if found is not None:
            return found
        names = [f.name for f in t.fields]
        if len(set(names)) != len(names):
            name = self.const(t.check)  # a hand-edited IR: keep the general check
            self._records[id(t)] = name
            return name
        name = self._fresh("_r")
        self._records[id(t)] = name  # before its body: records may contain themselves
        generic = self.const(t.check)
        lines = [
            f"def {name}(x):",
            "    if type(x) is not dict:",
            f"        return {generic}(x)",
            "    try:",
            *self.record_body(t, "x", "out", "        "),
            "    except KeyError:",
            "        raise _INVALID from None",
            "    return out",
        ]
        self._define(name, lines, f"check of {t.name}")
        return name

    def record_body(
        self, t: Type, src: str, dst: str, ind: str, inlined: tuple[int, ...] = ()
    ) -> list[str]:
        """Lines checking dict `src` as record `t` into a new dict `dst`; a missing required
        field raises KeyError, anything else wrong `Invalid`. `inlined`: the records whose
        checks these lines are already inside (records nested in them are written inline
        too, a few levels deep, which saves a call per nested record)."""
        lines: list[str] = []
        out: list[str] = []
        inlined = (*inlined, id(t))
        has_optional = any(not f.required for f in t.fields)
        # Counting the absent fields, as validate.py does: most payloads give most fields.
        n = self._fresh("n")
        if has_optional:
            lines.append(f"{ind}{n} = {self.const(len(t.fields))}")
        for f in t.fields:
            k = self.const(f.name)
            v = self._fresh("v")
            out.append(f"{k}: {v}")
            if f.required:
                lines.append(f"{ind}{v} = {src}[{k}]")
                lines += self.value(f.type, v, ind, inlined)
            else:
                lines.append(f"{ind}if {k} in {src}:")
                lines.append(f"{ind}    {v} = {src}[{k}]")
                lines += self.value(f.type, v, ind + "    ", inlined)
                lines.append(f"{ind}else:")
                lines.append(f"{ind}    {v} = {self.const(f.default)}")
                lines.append(f"{ind}    {n} -= 1")
        count = n if has_optional else self.const(len(t.fields))
        lines.append(f"{ind}if len({src}) != {count}:")
        lines.append(f"{ind}    raise _INVALID")
        lines.append(f"{ind}{dst} = {{{', '.join(out)}}}")
        return lines

    def value(self, t: Type, v: str, ind: str, inlined: tuple[int, ...] = ()) -> list[str]:
        """Lines normalising `v` in place as a value of `t`, or raising `Invalid`; the same
        verdicts and values as `t.check` (validate.py)."""
        kind = t.kind
        needs = self._needs_check(t, v)
        if needs is not None:
            return [f"{ind}if {needs}:", f"{ind}    {v} = {self.const(t.check)}({v})"]
        if t.simple in (str, int, bool):
            # `t.check` for these (and optionals of them) passes values of exactly that type
            # as they are; everything else goes through it.
            check = self.const(t.check)
            return [
                f"{ind}if type({v}) is not {self.const(t.simple)}:",
                f"{ind}    {v} = {check}({v})",
            ]
        if kind == "record":
            if self._inlinable(t, inlined):
                return [
                    f"{ind}if type({v}) is dict:",
                    *self.record_body(t, v, v, ind + "    ", inlined),
                    f"{ind}else:",
                    f"{ind}    {v} = {self.const(t.check)}({v})",
                ]
            return [f"{ind}{v} = {self.record(t)}({v})"]
        if kind == "enum":
            members = self.const(t.members)
            return [
                f"{ind}if type({v}) is not str:",
                f"{ind}    {v} = {self.const(t.check)}({v})",
                f"{ind}elif {v} not in {members}:",
                f"{ind}    raise _INVALID",
            ]
        if kind == "float" and t.min is None and t.max is None:
            return [
                f"{ind}if type({v}) is not float or {v} - {v} != 0.0:",
                f"{ind}    {v} = {self.const(check_float)}({v})",
            ]
        if kind == "optional" and t.item is not None:
            return [f"{ind}if {v} is not None:", *self.value(t.item, v, ind + "    ", inlined)]
        if kind == "list" and t.item is not None:
            return self._list_value(t, t.item, v, ind, inlined)
        return [f"{ind}{v} = {self.const(t.check)}({v})"]

    def _list_value(
        self, t: Type, item: Type, v: str, ind: str, inlined: tuple[int, ...]
    ) -> list[str]:
        """`value` for a list of `item`: a new list of the items normalised, or the generic
        check for anything else (or too long)."""
        # Loops rather than comprehensions: before Python 3.12 a comprehension is a call.
        i, out = self._fresh("i"), self._fresh("o")
        generic = self.const(t.check)
        most = self.const(self.m.limits.max_items)
        item_needs = self._needs_check(item, i)
        if item_needs is not None:
            # Copy, then look: items that need no check are kept as they are.
            return [
                f"{ind}if type({v}) is list and len({v}) <= {most}:",
                f"{ind}    {v} = {v}.copy()",
                f"{ind}    for {i} in {v}:",
                f"{ind}        if {item_needs}:",
                f"{ind}            {v} = {generic}({v})",
                f"{ind}            break",
                f"{ind}else:",
                f"{ind}    {v} = {generic}({v})",
            ]
        if item.kind == "record" and self._inlinable(item, inlined):
            each = [
                f"{ind}        if type({i}) is dict:",
                *self.record_body(item, i, i, ind + "            ", inlined),
                f"{ind}        else:",
                f"{ind}            {i} = {self.const(item.check)}({i})",
                f"{ind}        {out}.append({i})",
            ]
        else:
            fn = self.record(item) if item.kind == "record" else self.const(item.check)
            each = [f"{ind}        {out}.append({fn}({i}))"]
        return [
            f"{ind}if type({v}) is list and len({v}) <= {most}:",
            f"{ind}    {out} = []",
            f"{ind}    for {i} in {v}:",
            *each,
            f"{ind}    {v} = {out}",
            f"{ind}else:",
            f"{ind}    {v} = {generic}({v})",
        ]

    def _needs_check(self, t: Type, v: str) -> str | None:
        """For `bool`, `str` and `int`: a condition, true when `v` must go through `t.check`
        (the same verdicts: `t.check` passes every value the condition lets through as it
        is, strings and integers within the machine's limits included); else None."""
        kind = t.kind
        if kind == "bool":
            return f"type({v}) is not {self.const(bool)}"
        limits = self.m.limits
        if kind == "str":
            # ASCII without NUL and short enough: anything else is judged by the check.
            return (
                f"type({v}) is not {self.const(str)} or len({v}) > "
                f"{self.const(limits.max_string)} or not {v}.isascii() or "
                f"{self.const(chr(0))} in {v}"
            )
        if kind == "int":
            top = limits.int_max
            lo = t.min if t.min is not None and t.min >= -top else -top
            hi = t.max if t.max is not None and t.max <= top else top
            return (
                f"type({v}) is not {self.const(int)} or {v} < {self.const(lo)} or "
                f"{v} > {self.const(hi)}"
            )
        return None

    @staticmethod
    def _inlinable(t: Type, inlined: tuple[int, ...]) -> bool:
        names = [f.name for f in t.fields]
        return id(t) not in inlined and len(inlined) < 3 and len(set(names)) == len(names)

    # ---- expressions ------------------------------------------------------------------------
    def expr(self, node: Any, s: str) -> str:
        """A Python expression with the value of IR expression `node` (already compiled, and
        so checked, by the machine's ExprCompiler); `s` names the state it is evaluated in."""
        if not isinstance(node, Mapping):
            raise _Unsupported
        op = node.get("op")
        value = node.get("value")
        args = list(node.get("args") or ())
        if op == "lit":
            return self.const(value)
        if op == "ctx" and isinstance(value, str):
            return f"c[{self.const(value)}]"
        if op == "event" and isinstance(value, str):
            return f"p[{self.const(value)}]"
        written = self._operation(op, args, s)
        if written is None:
            written = self._structure(op, value, args, s)
        if written is not None:
            return written
        # `state.name`, `meta.x`, `active(X)` and anything unusual: the closure, called with the
        # state.
        return f"{self.const(self.m._compiler.compile(node))}(c, p, {s})"

    def _operation(self, op: Any, args: list[Any], s: str) -> str | None:
        """An operator applied to `args` (None: `op` is not one written inline)."""
        if op in _OPERATORS and len(args) == 2:
            a, b = self.expr(args[0], s), self.expr(args[1], s)
            if _OPERATORS[op].bounded:  # (Limits.mul), as in the closures
                return f"{self.const(self.m._compiler.binary(op))}({a}, {b})"
            return f"({a} {op} {b})"
        if op in ("and", "or") and len(args) == 2:
            return f"({self.expr(args[0], s)} {op} {self.expr(args[1], s)})"
        if op == "not" and len(args) == 1:
            return f"(not {self.expr(args[0], s)})"
        if op == "cond" and len(args) == 3:
            test, then, other = (self.expr(a, s) for a in args)
            return f"({then} if {test} else {other})"
        if op == "neg" and len(args) == 1:
            return f"(-{self.expr(args[0], s)})"
        if op == "index" and len(args) == 2:
            return f"_index({self.expr(args[0], s)}, {self.expr(args[1], s)})"
        return None

    def _structure(self, op: Any, value: Any, args: list[Any], s: str) -> str | None:
        """A member, a list, a map or a function call (None: not one written inline)."""
        if op == "attr" and len(args) == 1 and isinstance(value, str):
            return f"{self.expr(args[0], s)}[{self.const(value)}]"
        if op == "list":
            return "[" + "".join(f"{self.expr(a, s)}, " for a in args) + "]"
        if op == "map" and len(args) % 2 == 0:
            pairs = [
                f"{self.expr(args[i], s)}: {self.expr(args[i + 1], s)}"
                for i in range(0, len(args), 2)
            ]
            return "{" + ", ".join(pairs) + "}"
        if op == "call" and value == "coalesce" and len(args) == 2:
            w = self._fresh("w")
            a, b = self.expr(args[0], s), self.expr(args[1], s)
            return f"({b} if ({w} := {a}) is None else {w})"
        if (
            op == "call"
            and isinstance(value, str)
            and value
            not in (
                "coalesce",
                "active",
                "event_name",
            )
        ):
            fn = FUNCTIONS.get(value)
            if fn is None:
                raise _Unsupported
            return f"{self.const(fn)}({', '.join(self.expr(a, s) for a in args)})"
        return None

    # ---- actions ----------------------------------------------------------------------------
    def actions(
        self, raw: Sequence[Any] | None, s: str, event_types: Mapping[str, Type], ind: str
    ) -> list[str]:
        """Lines running an action block on `c` (the working copy), as `ExprCompiler.actions`
        would: the same copy-on-write, the same normalising of stored values."""
        if not raw:
            return []
        m = self.m
        m._compiler.actions(raw, m.target_type, event_types)  # checks the block (IRLoadError)
        lines: list[str] = []
        for a, depth in action_plan(raw):
            try:
                lines += self._action(a, depth, s, event_types, ind)
            except _Unsupported:
                step = m._compiler._action(a, m.target_type, event_types, depth)
                lines.append(f"{ind}{self.const(step)}(c, p, {s})")
        return lines

    def _action(
        self, a: Mapping[str, Any], depth: int, s: str, event_types: Mapping[str, Type], ind: str
    ) -> list[str]:
        op = a.get("op")
        if op not in ("set", "add", "sub", "append"):
            raise _Unsupported  # `remove`, and `if` / `emit`: their closures
        path = tuple(a.get("target") or ())
        value_node = a.get("value")
        ty = self.m.target_type(path)
        if op == "append":
            return self._append(path, ty, value_node, s, event_types, ind)
        norm = normaliser(ty, path, value_node, event_types)
        bound = self.m._compiler.bound(str(op), value_node, ty)
        v = self.expr(value_node, s)

        def store(x: str, into: str) -> list[str]:
            return self._store(x, into, ty, bound, norm is not identity, ind)

        if op in ("add", "sub"):
            if len(path) != 1:
                raise _Unsupported
            k = self.const(path[0])
            sign = "+" if op == "add" else "-"
            return store(f"c[{k}] {sign} {v}", f"c[{k}]")
        if len(path) == 1:
            return store(v, f"c[{self.const(path[0])}]")
        if len(path) != 2:
            raise _Unsupported
        head, last = self.const(path[0]), self.const(path[1])
        if depth >= 1:  # `head` was copied by an earlier action of this block
            return store(v, f"c[{head}][{last}]")
        return [
            *store(v, "_w"),
            f"{ind}_n = c[{head}]",
            f"{ind}if _n is None:",
            f"{ind}    raise _none()",
            f"{ind}_n = c[{head}] = dict(_n)",
            f"{ind}_n[{last}] = _w",
        ]

    def _store(
        self, x: str, into: str, ty: Type, bound: Any, normalise: bool, ind: str
    ) -> list[str]:
        """Lines storing the value `x` into `into`. A computed value goes through the
        machine's bound (as in the closures); a value that needs normalising through the
        generated check of its type: it raises `Invalid` where the normaliser raises a fault,
        and both send the step to the general path."""
        if not normalise and bound is None:
            return [f"{ind}{into} = {x}"]
        lines = [f"{ind}_v = {x}"]
        if bound is not None:
            lines.append(f"{ind}_v = {self.const(bound)}(_v)")
        if normalise:
            lines += self.value(ty, "_v", ind)
        return [*lines, f"{ind}{into} = _v"]

    def _append(
        self,
        path: tuple[str, ...],
        ty: Type,
        value_node: Any,
        s: str,
        event_types: Mapping[str, Type],
        ind: str,
    ) -> list[str]:
        """`append` to a list field of the context: a new list, bounded by `max_items`."""
        if len(path) != 1 or ty.item is None:
            raise _Unsupported
        bound = self.m._compiler.bound("append", value_node, ty.item)
        norm = then(bound, normaliser(ty.item, path, value_node, event_types, item=True))
        k = self.const(path[0])
        v = self.expr(value_node, s)
        item = "_v" if norm is identity else f"{self.const(norm)}(_v)"
        return [
            f"{ind}_o = c[{k}]",
            f"{ind}_v = {v}",
            f"{ind}if len(_o) >= {self.const(self.m.limits.max_items)}:",
            f"{ind}    raise _LimitExceeded('')",
            f"{ind}c[{k}] = [*_o, {item}]",
        ]

    # ---- dispatch ---------------------------------------------------------------------------
    def dispatch(self, st: CState, event: str) -> Dispatch:
        """The function `Instance.send` calls for `event` in `st`."""
        ev, candidates = st.on[event]
        try:
            return self._dispatch(st, ev, candidates)
        except (IRLoadError, RecursionError):
            # A broken expression: the general path reports it when (and only if) it is
            # reached, as it always has.
            return general(event)

    def _dispatch(self, st: CState, ev: CEvent, candidates: tuple[CTransition, ...]) -> Dispatch:
        name = self._fresh("_d")
        s = self.const(st)
        evname = self.const(ev.name)
        slow = f"return inst._send_slow({evname}, payload, reason, key)"
        lines = [f"def {name}(inst, payload, reason, key):"]
        lines += self._payload_check(ev, slow)  # 1. the payload
        lines += ["    c = inst._ctx", "    try:"]
        lines += self._requirements(ev, s, evname)  # 2. preconditions
        branches = _Branches(many=self._many(candidates), which=self._fresh("b"))
        lines += self._candidates(st, ev, candidates, branches, evname, slow)  # 3.
        lines += ["    except _FAULTS_OR_INVALID:", f"        {slow}"]
        # 4. commit, written out for each accepting branch: nothing below can fail
        for i, t in enumerate(branches.accepting):
            ind = "    "
            if branches.many:
                last = i == len(branches.accepting) - 1
                which = branches.which
                lines.append("    else:" if last else f"    {'el' if i else ''}if {which} == {i}:")
                ind = "        "
            lines += self._commit(st, t, branches.plans[i], evname, ind)
        if not branches.accepting:
            lines.append(f"    {slow}")
        fn: Dispatch = self._define(name, lines, f"dispatch of {ev.name} in {st.name}")
        return fn

    def _payload_check(self, ev: CEvent, slow: str) -> list[str]:
        """The lines that bind `p`, the payload checked (or the event's empty payload)."""
        lines = ["    if payload:"]
        if len(set(f.name for f in ev.fields)) == len(ev.fields):
            lines += [
                "        if type(payload) is dict:",
                "            try:",
                *self.record_body(ev.type, "payload", "p", "                "),
                "            except (_Invalid, KeyError, RecursionError):",
                f"                {slow}",
                "        else:",
                "            try:",
                f"                p = {self.const(ev.check)}(payload)",
                "            except (_Invalid, RecursionError):",
                f"                {slow}",
            ]
        else:
            lines += [
                "        try:",
                f"            p = {self.const(ev.check)}(payload)",
                "        except (_Invalid, RecursionError):",
                f"            {slow}",
            ]
        lines += ["    else:"]
        if ev.empty is None:
            lines += [f"        {slow}"]
        else:
            lines += [f"        p = {self.const(ev.empty)}"]
        return lines

    def _requirements(self, ev: CEvent, s: str, evname: str) -> list[str]:
        """The event's preconditions, each refusing the send when it does not hold."""
        lines: list[str] = []
        for req in ev.requires:
            self.m._requirement_guard(req)  # checks it (IRLoadError)
            lines += [
                f"        if not {self.expr(req.raw['guard'], s)}:",
                f"            return _refuse(_REQUIRE, {s}, {evname}, p, c, {self._data(req, s)}, "
                f"code={self.const(req.code)}, template={self.const(req.message)})",
            ]
        return lines

    @staticmethod
    def _many(candidates: tuple[CTransition, ...]) -> bool:
        """Whether more than one candidate can accept, so the commit must know which did."""
        return sum(1 for t in candidates if t.target is not None and not t.target.choice) > 1

    def _candidates(
        self,
        st: CState,
        ev: CEvent,
        candidates: tuple[CTransition, ...],
        branches: _Branches,
        evname: str,
        slow: str,
    ) -> list[str]:
        """The candidates' guards, in order, each with its branch; the accepting ones are
        added to `branches`. In a statechart the leaf's own rules come first, then its
        ancestors'; a rule's guard, data and actions see its own state as `state`."""
        s = self.const(st)
        chart = self.m.chart
        lines: list[str] = []
        kw = "if"
        closed = False
        for t in candidates:
            src = self.const(t.source) if chart else s
            guard = t.raw.get("guard")
            if guard is not None:
                self.m._compiler.compile(guard)  # checks it (IRLoadError)
                lines.append(f"        {kw} {self.expr(guard, src)}:")
                kw = "elif"
            else:
                lines.append("        else:" if kw == "elif" else "        if True:")
                closed = True
            lines += self._branch(st, ev, t, src, branches, evname, slow)
            if closed:
                break
        if not closed:
            lines += [
                "        else:",
                f"            return _refuse(_GUARD_FAILED, {s}, {evname}, p, c)",
            ]
        return lines

    def _branch(
        self,
        st: CState,
        ev: CEvent,
        t: CTransition,
        src: str,
        branches: _Branches,
        evname: str,
        slow: str,
    ) -> list[str]:
        """What the dispatch does when `t`'s guard holds: refuse, hand over to the general
        path, or run its plan on a copy of the context (and note the branch taken)."""
        body = "            "
        s = self.const(st)
        dest = t.target
        if dest is None:  # a `reject` rule
            return [
                f"{body}return _refuse(_REJECT, {s}, {evname}, p, c, {self._data(t, src)}, "
                f"code={self.const(t.code)}, template={self.const(t.message)}, "
                f"rule={t.index})"
            ]
        if t.back:  # taken only by a forced send, which goes to the general path
            return [
                f"{body}return _refuse(_BACKWARD, {s}, {evname}, p, c, "
                f"{{_FROM: {self.const(st.name)}, _TO: {self.const(dest.name)}}})"
            ]
        plan = chart_plan(st, t) if self.m.chart else plan_of(t)
        if (
            plan.leaf.choice
            or plan.emits
            or plan.computed
            or plan.blind
            or (self.m.composes and _touches_tree(plan))
        ):
            # Routing, effects to collect, a computed timer delay or actions reading the
            # configuration between two states: the general path.
            return [f"{body}{slow}"]
        lines: list[str] = []
        if plan.copies:
            lines.append(f"{body}c = c.copy()")
            for step in plan.steps:
                types = ev.field_types if step.phase == "actions" else {}
                raw = step.owner.raw.get(step.block)
                lines += self.actions(raw, self.const(step.state), types, body)
        if branches.many:
            lines.append(f"{body}{branches.which} = {self.const(len(branches.accepting))}")
        elif not plan.copies:
            lines.append(f"{body}pass")
        branches.accepting.append(t)
        branches.plans.append(plan)
        return lines

    def _data(self, rule: Requirement | CTransition, s: str) -> str:
        """The expression of the data a flow's own refusal carries (a copy), or `None`."""
        fn = self.m._refusal_data(rule)  # compiles, and so checks, it (IRLoadError)
        if fn is None:
            return "None"
        return f"_copy({self.const(fn)}(c, p, {s}))"

    def _commit(self, st: CState, t: CTransition, plan: Plan, evname: str, ind: str) -> list[str]:
        dest = plan.leaf
        chart = self.m.chart
        lines = [
            "now = inst._now() // inst._per_ms",  # the clock read in integer milliseconds
            "seq = inst._seq + 1",
            f"entry = (seq, now, _EVENT, {self.const(st.name)}, {self.const(dest.name)}, "
            # No leaves recorded: one active leaf before and after, which the names say.
            f"{evname}, p, reason, _NO_VIA, None)",
            "inst._history.append(entry)",
            "inst._seq = seq",
            "inst._ctx = c",
        ]
        if chart:
            # One microstep from the configuration `st` and its ancestors (engine.py's
            # `chart_plan`): the timers of the states left are cancelled, those of the states
            # entered armed, as `Instance._take_chart` does.
            config = tuple(with_ancestors((dest,)))
            if not plan.internal:
                lines.append(f"inst._state = {self.const(dest)}")
                lines.append(f"inst._config = {self.const(config)}")
                arm = self.const(plan.arm)
                if any(x.timers for x in with_ancestors((st,)) if x not in plan.exits):
                    # a state that stays active has timers: they keep running
                    left = self.const(frozenset(plan.exits))
                    lines += [
                        f"kept = [x for x in inst._timers or () if x[1].source not in {left}]",
                        *([f"kept += _arm({arm}, now)"] if plan.arm else []),
                        "inst._timers = _due(kept) if kept else None",
                    ]
                elif plan.arm:
                    lines.append(f"inst._timers = _arm({arm}, now) or None")
                else:
                    lines.append("inst._timers = None")
        elif not plan.internal:
            lines.append(f"inst._state = {self.const(dest)}")
            if plan.arm:
                lines.append(f"inst._timers = _arm({self.const(plan.arm)}, now)")
            else:
                lines.append("inst._timers = None")
        lines += [
            "if key is not None:",
            "    inst._remember(key, seq)",
            "r = _new(_SR)",
            "r._e = entry",
            "r._c = c",
            "r._m = _M",
            f"r._t = {self.const((t.index,))}",
            *([f"r._g = {self.const(tuple(x.name for x in config))}"] if chart else []),
            "if inst._subs:",
            "    inst._notify(r)",
            "return r",
        ]
        return [ind + line for line in lines]


def _touches_tree(plan: Plan) -> bool:
    """Whether a step of a flow with child flows does what only the engine's commit does
    (children.py): it leaves or enters a state that invokes, sends a message, or ends."""
    states = (*plan.exits, *plan.entries)
    return (
        plan.leaf.final
        or any(s.invokes for s in states)
        or any(sends_message(step.owner.raw.get(step.block)) for step in plan.steps)
    )


def warming(machine: Machine, state: CState, event: str, uses: int) -> Dispatch:
    """A dispatch function that takes the general path for `uses` sends, then has the pair's
    function generated (`Machine._generated`), which replaces it in `state.fast`."""
    left = uses

    def dispatch(inst: Instance, payload: Any, reason: str | None, key: str | None) -> Outcome:
        nonlocal left
        left -= 1  # a race between threads only moves the moment of generating a little
        if left >= 0:
            return inst._send_slow(event, payload, reason, key)
        return machine._generated(state, event)(inst, payload, reason, key)

    return dispatch


def general(event: str) -> Dispatch:
    """A dispatch function that takes the general path every time."""

    def dispatch(inst: Instance, payload: Any, reason: str | None, key: str | None) -> Outcome:
        return inst._send_slow(event, payload, reason, key)

    return dispatch
