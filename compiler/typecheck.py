"""Type checking of every expression: guards, actions, defaults, preconditions and templates.

Works on the AST with the symbol tables of resolve.py. Each expression gets a type; a mistake is
reported once and its subtree becomes `ANY`, so it causes no further diagnostics.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from flowc.compiler import ast
from flowc.compiler import types as t
from flowc.compiler.diagnostics import Diagnostic
from flowc.compiler.resolve import (
    EffectInfo,
    EventInfo,
    FieldInfo,
    StateNode,
    Symbols,
    implicit_field,
    state_path,
    suggest,
    timer_problem,
)
from flowc.compiler.source import Span
from flowc.runtime.builtins import ACTION_FUNCTIONS, BUILTINS, EXPRESSION_FUNCTIONS, QUANTIFIERS
from flowc.runtime.model import TypeRef
from flowc.runtime.operators import BINARY_OPERATORS, BOOLEAN_RESULTS
from flowc.runtime.rejections import REJECTION_FIELDS

if TYPE_CHECKING:
    from jinja2.sandbox import ImmutableSandboxedEnvironment


@dataclass(frozen=True)
class Scope:
    """What an expression may refer to where it is written."""

    event: EventInfo | None
    #: why `event.` is unavailable here ("in an entry action"), for the diagnostic
    no_event_reason: str = ""
    constant: bool = False  # defaults: literals and enum members only
    #: paths (see `_path_key`) known not to be none here, e.g. right of `x != none and ...`
    narrowed: frozenset[str] = frozenset()
    #: the other events of `on a, b -> X`: a payload field read must be the same in each
    also: tuple[EventInfo, ...] = ()
    #: names local to an expression or a loop body (`x` of `any(x in xs: ...)`), innermost
    #: last, with their types
    locals: tuple[tuple[str, t.Ty], ...] = ()

    def local(self, name: str) -> t.Ty | None:
        for known, ty in reversed(self.locals):
            if known == name:
                return ty
        return None

    def with_local(self, name: str, ty: t.Ty) -> Scope:
        return replace(self, locals=(*self.locals, (name, ty)))

    def narrow(self, facts: frozenset[str]) -> Scope:
        return self if not facts else replace(self, narrowed=self.narrowed | facts)

    def forget(self, fields: frozenset[str]) -> Scope:
        """This scope after the context `fields` may have been written: what was known of
        them (or of a path into them) no longer holds."""
        if not fields or not self.narrowed:
            return self
        kept = frozenset(f for f in self.narrowed if _context_root(f) not in fields)
        return self if kept == self.narrowed else replace(self, narrowed=kept)


Check = Callable[["TypeChecker", list[t.Ty], list[ast.Expr], Span], t.Ty]


#: `TypeChecker.infer`'s method for each expression node class.
_INFER: dict[type, Callable[..., t.Ty]] = {}

#: A final state with the fields of its done data: (node, declaration, field -> type, span).
_DoneData = tuple[StateNode, ast.StateDecl, dict[str, tuple[t.Ty, Span]]]


class TypeChecker:
    def __init__(self, symbols: Symbols) -> None:
        self.symbols = symbols
        self.diagnostics: list[Diagnostic] = []
        #: made for the first template checked: Jinja2 (and the runtime's templating) are not
        #: imported by a check of a flow without templates, a tenth of `flowc check`'s start-up
        self._jinja: ImmutableSandboxedEnvironment | None = None
        self._meta_cache: dict[str, t.Ty] | None = None
        #: id of each expression node checked -> its type (the AST outlives the checker)
        self.types: dict[int, t.Ty] = {}
        #: `done.state` events whose done data was reported (their rules read no payload)
        self._broken_done: set[str] = set()
        # Plain functions, not methods bound to this checker: a bound method in its own
        # attribute would make each checker a reference cycle, and so keep the whole AST (held
        # by `symbols`) alive until the cyclic collector runs.
        self._functions: dict[str, Check] = {
            "len": TypeChecker._fn_len,
            "min": TypeChecker._fn_minmax,
            "max": TypeChecker._fn_minmax,
            "abs": TypeChecker._fn_abs,
            "round": TypeChecker._fn_round,
            "merge": TypeChecker._fn_merge,
            "keys": TypeChecker._fn_keys,
            "values": TypeChecker._fn_values,
            "lower": TypeChecker._fn_str,
            "upper": TypeChecker._fn_str,
            "trim": TypeChecker._fn_str,
            "coalesce": TypeChecker._fn_coalesce,
            "str": TypeChecker._fn_to_str,
            # never called: `_infer_Call` checks `active(STATE)` itself (its argument is a
            # state, not a value)
            "active": TypeChecker._fn_active,
            "event_name": TypeChecker._fn_event_name,
        }
        assert set(self._functions) == EXPRESSION_FUNCTIONS

    def error(self, code: str, message: str, span: Span, help: str | None = None) -> t.Ty:
        self.diagnostics.append(Diagnostic.make(code, message, span, help=help))
        return t.ANY

    # ---- entry point -------------------------------------------------------------------
    def run(self) -> None:
        self.check_done_data()
        self.check_bodies()

    def check_bodies(self) -> None:
        """Everything but the done data: defaults, requires, actions, rules, templates and
        invariants. Reads the symbols and changes nothing in them (`check_done_data`, which
        derives the done payloads lowering reads, has run)."""
        symbols = self.symbols
        self._check_declarations()
        for node in symbols.nodes.values():
            if isinstance(node.decl, ast.HistoryDecl) and node.decl.actions:
                self.check_actions(node.decl.actions, Scope(None, "in a history's default"))
        for state in symbols.states.values():
            for block in state.blocks:
                self.check_actions(block.actions, Scope(None, f"in an {block.when} action"))
            for initial in state.initial_rules:
                self.check_actions(initial.actions, Scope(None, "in an initial rule"))
            for rule in state.rules:
                self.check_rule(rule, state)
            for invoke in state.invokes:
                self.check_invoke(invoke)
        for rule in symbols.global_rules:
            self.check_rule(rule, None)
        self._check_texts_and_invariants()

    def _check_texts_and_invariants(self) -> None:
        """The messages, journal entries and templates, and the invariants."""
        symbols = self.symbols
        for table in (symbols.messages, symbols.journals, symbols.templates):
            for decl in table.values():
                self.check_template(decl.text)
        for invariant in symbols.invariants.values():
            self.check_guard(invariant.expr, Scope(None, "in an invariant (it reads the context)"))

    def _check_declarations(self) -> None:
        """The defaults of records, the context and events, and the events' requires."""
        symbols = self.symbols
        for fields in symbols.records.values():
            self._check_defaults(fields)
        self._check_defaults(symbols.context)
        for info in symbols.events.values():
            self._check_defaults(info.params)
            scope = Scope(info)
            for req in info.decl.requires:
                self.check_guard(req.guard, scope)
                self.check_template(req.message)
                if req.data is not None:
                    self.check_data(req.data, scope)

    def check_rule(self, rule: ast.Rule, state: ast.StateDecl | None) -> None:
        if rule.covers and rule.event is not None and rule.event.name != rule.covers[0]:
            return  # one copy of `on a, b -> X`: the first copy checks it for every event
        scope = self._rule_scope(rule, state)
        if rule.delay is not None:
            self.check_delay(rule.delay, scope)
        if rule.guard is not None:
            self.check_guard(rule.guard, scope)
            # Actions run only when the guard held; the payload cannot change meanwhile, so a
            # guard's `event.x != none` still holds for them (context fields may be reassigned).
            facts = _non_none_facts(rule.guard)
            scope = scope.narrow(frozenset(f for f in facts if f.startswith("event:")))
        self.check_actions(rule.actions, scope)
        if rule.reject_message is not None:
            self.check_template(rule.reject_message)
        if rule.reject_data is not None:
            self.check_data(rule.reject_data, scope)

    def _rule_scope(self, rule: ast.Rule, state: ast.StateDecl | None) -> Scope:
        """What `event.` means in a rule: its event's payload (or its done data), or nothing,
        with the reason why."""
        done = self.symbols.done_events
        carried = self.symbols.done_payloads.get(rule.event.name) if rule.event else None
        if carried is not None and len(rule.covers) <= 1:
            scope = Scope(carried)
        elif rule.event is not None and (
            rule.event.name in self._broken_done or rule.event.name in self.symbols.unknown_payloads
        ):
            scope = _UNKNOWN_EVENT_SCOPE  # its done data was reported: no `event.` noise
        elif rule.event is not None and (
            rule.event.name in done or any(name in done for name in rule.covers)
        ):
            # (`on e, done.state.X -> ...`: one of its events has no payload, so neither has
            # the rule.)
            scope = Scope(None, "on a completion event (`done.state` events carry no payload)")
        elif rule.event is not None:
            info = self.symbols.events.get(rule.event.name)
            # An unknown event was reported by resolve; check the rest without `event.` noise.
            scope = Scope(info) if info is not None else _UNKNOWN_EVENT_SCOPE
            if info is not None and len(rule.covers) > 1:
                events = self.symbols.events
                scope = replace(scope, also=tuple(events[name] for name in rule.covers[1:]))
        else:
            where = {
                "direct": "on a direct edge (`-> X` is taken by an explicit go-to, not an event)",
                "else": "on a routing rule",
                "after": "on a timer",
                "always": "on an eventless `always` rule",
            }[rule.kind]
            if state is not None and state.has("choice") and rule.kind == "direct":
                where = "in a choice state (routing happens on entry, not on an event)"
            scope = Scope(None, where)
        return scope

    def check_done_data(self) -> None:
        """`final state X with {"k": value, ...}`: a record literal with distinct string keys;
        when a final child of a compound state carries data, every final child of it does,
        with the same fields of the same types. Those fields are the payload of the compound's
        `done.state` event (`symbols.done_payloads`), which its rules read as `event.k`."""
        symbols = self.symbols
        # (None: the top level, whose done data is the flow's own, `symbols.flow_done`)
        finals: dict[str | None, list[tuple[StateNode, ast.StateDecl]]] = {}
        for node in symbols.nodes.values():
            decl = node.decl
            if (
                isinstance(decl, ast.StateDecl)
                and decl.has("final")
                and (node.parent is None or symbols.nodes[node.parent].kind == "compound")
            ):
                finals.setdefault(node.parent, []).append((node, decl))
        for parent, children in finals.items():
            if all(decl.done_data is None for _, decl in children):
                continue
            carried = self._carried_done_data(parent, children)
            if carried is None or not self._same_done_fields(carried):
                self._broken_done.add(f"done.state.{parent}")
                continue
            first_node, _, first = carried[0]
            params = {key: _synthetic_field(key, ty, span) for key, (ty, span) in first.items()}
            if parent is None:
                symbols.flow_done = params
                continue
            name = f"done.state.{parent}"
            span = first_node.decl.span
            symbols.done_payloads[name] = EventInfo(
                ast.EventDecl(ast.Ident(name, span), (), (), span), params
            )

    def _carried_done_data(
        self, parent: str | None, children: list[tuple[StateNode, ast.StateDecl]]
    ) -> list[_DoneData] | None:
        """The done data of each final child of `parent`, or None when one carries none (when
        its siblings do) or carries data that is not a record literal (each reported)."""
        carried: list[_DoneData] = []
        broken = False
        for node, decl in children:
            if decl.done_data is None:
                self.error(
                    "E218",
                    f"final state `{node.dotted}` carries no done data, unlike its siblings",
                    decl.name.span,
                    f"every final child of `{self.symbols.nodes[parent].dotted}` says what its "
                    "done event carries"
                    if parent is not None
                    else "every top-level final state says what the flow's done event carries",
                )
                broken = True
                continue
            fields = self._done_fields(decl.done_data)
            if fields is None:
                broken = True
            else:
                carried.append((node, decl, fields))
        return None if broken else carried

    def _same_done_fields(self, carried: list[_DoneData]) -> bool:
        """Whether the final children carry the same fields of the same types (each one that
        differs from the first reported)."""
        first_node, _, first = carried[0]
        same = True
        for node, decl, fields in carried[1:]:
            if set(fields) != set(first) or any(fields[k][0] != first[k][0] for k in fields):
                self.error(
                    "E218",
                    f"the done data of `{node.dotted}` differs from that of `{first_node.dotted}`",
                    decl.done_data.span if decl.done_data is not None else decl.span,
                    "the final children of one state carry the same fields, of the same types",
                )
                same = False
        return same

    def _done_fields(self, expr: ast.Expr) -> dict[str, tuple[t.Ty, Span]] | None:
        scope = Scope(None, "in done data (it is evaluated when the final state is entered)")
        if not isinstance(expr, ast.MapLit):
            self.infer(expr, scope)
            self.error(
                "E218",
                "done data must be a record literal",
                expr.span,
                'write `with {"field": value, ...}`',
            )
            return None
        fields: dict[str, tuple[t.Ty, Span]] = {}
        for key, value in expr.entries:
            ty = self.infer(value, scope)
            if not (isinstance(key, ast.Literal_) and key.kind == "str"):
                self.error("E218", "a key of done data must be a string literal", key.span)
                return None
            name = str(key.value)
            if name in fields or not name.isidentifier():
                self.error("E218", f"`{name}` cannot be a field here", key.span)
                return None
            if t.is_any(ty) or isinstance(ty, t.NoneTy):
                ty = t.JSON
            fields[name] = (ty, key.span)
        return fields

    def check_data(self, expr: ast.Expr, scope: Scope) -> None:
        """`with {"key": value, ...}` of a `reject` rule or a `require` clause: a record
        literal with distinct string keys, each value of its own type. The keys become fields
        of the rejection's `data` and of `to_dict()`, next to the ones every rejection has."""
        if not isinstance(expr, ast.MapLit):
            self.infer(expr, scope)
            self.error(
                "E211",
                "the data of a refusal must be a record literal",
                expr.span,
                'write `with {"key": value, ...}`',
            )
            return
        seen: set[str] = set()
        for key, value in expr.entries:
            self.infer(value, scope)
            if not (isinstance(key, ast.Literal_) and key.kind == "str"):
                self.error("E211", "a key of refusal data must be a string literal", key.span)
                continue
            name = str(key.value)
            if name in REJECTION_FIELDS:
                self.error(
                    "E211",
                    f"`{name}` is a field of every rejection already",
                    key.span,
                    "choose another key",
                )
            elif name in seen:
                self.error("E211", f"the key `{name}` is given twice", key.span)
            seen.add(name)

    # ---- defaults ----------------------------------------------------------------------
    def _check_defaults(self, fields: dict[str, FieldInfo]) -> None:
        for info in fields.values():
            default = info.decl.default
            if default is None:
                continue
            if not _is_constant(default):
                self.error(
                    "E203",
                    f"the default of `{info.name}` must be a constant",
                    default.span,
                    "use literals and enum members; compute values in an entry action",
                )
                continue
            self.expect(
                default,
                info.ty,
                Scope(None, "in a default value", constant=True),
                code="E203",
                what=f"default of `{info.name}`",
            )
            self._check_default_in_range(info, default)

    def _check_default_in_range(self, info: FieldInfo, default: ast.Expr) -> None:
        """Every number in the default within the range of where it goes, however deep in
        lists, maps and record literals (the runtime refuses to load a flow whose default
        does not fit its type)."""
        for value, span, ref in self._numbers_in(default, info.ref):
            low = -math.inf if ref.min is None else ref.min
            high = math.inf if ref.max is None else ref.max
            if not low <= value <= high:
                where = f"default of `{info.name}`"
                if span != default.span:
                    where = f"a value in the {where}"
                self.error(
                    "E203", f"{where} is outside its range {_range_text(ref.min, ref.max)}", span
                )

    def _numbers_in(self, expr: ast.Expr, ref: TypeRef) -> Iterator[tuple[float, Span, TypeRef]]:
        """The numbers of a constant `expr` whose place in `ref` has a range."""
        if ref.kind == "optional" and ref.item is not None:
            ref = ref.item
        if ref.kind in ("int", "float"):
            number = _constant_number(expr)
            if number is not None and (ref.min is not None or ref.max is not None):
                yield number, expr.span, ref
        elif ref.kind == "list" and ref.item is not None and isinstance(expr, ast.ListLit):
            for item in expr.items:
                yield from self._numbers_in(item, ref.item)
        elif ref.kind == "map" and ref.item is not None and isinstance(expr, ast.MapLit):
            for _, entry in expr.entries:
                yield from self._numbers_in(entry, ref.item)
        elif ref.kind == "record" and ref.name and isinstance(expr, ast.MapLit):
            yield from self._record_numbers(expr, ref.name)

    def _record_numbers(
        self, expr: ast.MapLit, record: str
    ) -> Iterator[tuple[float, Span, TypeRef]]:
        """`_numbers_in` a record literal: its entries that name fields of `record`."""
        fields = self.symbols.records.get(record, {})
        for key, entry in expr.entries:
            if isinstance(key, ast.Literal_) and isinstance(key.value, str):
                found = fields.get(key.value)
                if found is not None:
                    yield from self._numbers_in(entry, found.ref)

    # ---- guards, actions ---------------------------------------------------------------
    def check_guard(self, expr: ast.Expr, scope: Scope) -> None:
        ty = self.infer(expr, scope)
        if ty != t.BOOL and not t.is_any(ty):
            help = None
            if isinstance(ty, t.OptionalTy) and ty.inner == t.BOOL:
                help = "compare explicitly: `x == true`, or use `coalesce(x, false)`"
            self.error("E205", f"a guard must be a `bool`, this is `{ty}`", expr.span, help)

    def check_actions(self, actions: tuple[ast.Action, ...], scope: Scope) -> None:
        for action in actions:
            self._check_action(action, scope)
            # A context field this action may write is no longer known not to be none.
            scope = scope.forget(_written_fields(action))

    def _check_action(self, action: ast.Action, scope: Scope) -> None:
        if isinstance(action, ast.Assign):
            self._check_assign(action, scope)
        elif isinstance(action, ast.PutAction):
            self._check_put(action, scope)
        elif isinstance(action, ast.ActionCall):
            self._check_action_call(action, scope)
        elif isinstance(action, ast.IfAction):
            self._check_if(action, scope)
        elif isinstance(action, ast.RaiseAction):
            self._check_raise(action, scope)
        elif isinstance(action, ast.ForAction):
            self._check_for(action, scope)
        elif isinstance(action, ast.SendAction):
            self._check_send(action, scope)
        elif isinstance(action, ast.CancelAction):
            self.expect(action.id, t.STR, scope, code="E201", what="a scheduled event's id")
        else:
            self._check_emit(action, scope)

    def _check_for(self, action: ast.ForAction, scope: Scope) -> None:
        """`for item, i in LIST`: LIST is a list, each item fits the context field `item`, and
        the field `i` takes an `int`; or, when `item` is no context field, both are names local
        to the body (`_check_local_for`)."""
        if action.item.name not in self.symbols.context:
            self._check_local_for(action, scope)
            return
        listed = self.infer(action.iterable, scope)
        item_ty = self._target_type((action.item,))
        if isinstance(listed, t.OptionalTy):
            self.error(
                "E208",
                "`for` over a list that may be none",
                action.iterable.span,
                "check it first, or use `coalesce(xs, [])`",
            )
        elif isinstance(listed, t.JsonTy):
            # A JSON value is checked when the loop runs: a list, else a fault.
            if not t.is_any(item_ty) and not t.assignable(t.JSON, item_ty):
                self.error(
                    "E202",
                    f"`{action.item.name}` is `{item_ty}`, the items of a `json` value are `json`",
                    action.item.span,
                )
        elif not t.is_any(listed) and not isinstance(listed, t.ListTy):
            self.error(
                "E201",
                f"`for` goes through a list, this is `{listed}`",
                action.iterable.span,
            )
        elif (
            isinstance(listed, t.ListTy)
            and not t.is_any(item_ty)
            and not t.assignable(listed.item, item_ty)
        ):
            self.error(
                "E202",
                f"`{action.item.name}` is `{item_ty}`, the list's items are `{listed.item}`",
                action.item.span,
            )
        if action.index is not None:
            index_ty = self._target_type((action.index,))
            if not t.is_any(index_ty) and not t.assignable(t.INT, index_ty):
                self.error(
                    "E202",
                    f"`{action.index.name}` takes the position, an `int`; it is `{index_ty}`",
                    action.index.span,
                )
        # The body runs again after it wrote: what it writes is unknown from its first action.
        self.check_actions(action.actions, scope.forget(_written_fields(action)))

    def _check_local_for(self, action: ast.ForAction, scope: Scope) -> None:
        item = self.local_item(action.item, action.iterable, scope, "`for`")
        inner = scope.with_local(action.item.name, item)
        if action.index is not None:
            if action.index.name in self.symbols.context:
                self.error(
                    "E103",
                    f"`{action.index.name}` is a context field, but the loop's item "
                    f"`{action.item.name}` is not: both are fields, or both are local",
                    action.index.span,
                )
            inner = inner.with_local(action.index.name, t.INT)
        self.check_actions(action.actions, inner.forget(_written_fields(action)))

    def _check_if(self, action: ast.IfAction, scope: Scope) -> None:
        for branch in action.branches:
            inner = scope
            if branch.guard is not None:
                self.check_guard(branch.guard, scope)
                # Nothing runs between the guard and the arm's first action, so a context
                # field checked here stays known until an action may write it (check_actions).
                inner = scope.narrow(_non_none_facts(branch.guard))
            self.check_actions(branch.actions, inner)
            # A later arm runs only when this guard was false.
            if branch.guard is not None:
                scope = scope.narrow(_none_facts(branch.guard))

    def check_invoke(self, invoke: ast.Invoke) -> None:
        """An `invoke`'s list, arguments, `into` field and `finalize` actions (`messages.py`)."""
        from flowc.compiler.messages import check_invoke  # (it builds on this module)

        check_invoke(self, invoke)

    def _check_raise(self, action: ast.RaiseAction, scope: Scope) -> None:
        name = action.event.name
        self._check_sent(
            action.event,
            action.payload,
            action.span,
            scope,
            self.symbols.events,
            "E105",
            "event",
            f"declare it: `event {name}`",
        )

    def _check_send(self, action: ast.SendAction, scope: Scope) -> None:
        """`send E(...) after DELAY [as ID]`: the event and payload as `raise` checks them,
        the delay as a timer's, the id a `str`. `send E(...) to ...`: see `messages.py`."""
        if action.to is not None:
            from flowc.compiler.messages import check_message  # (it builds on this module)

            check_message(self, action, scope)
            return
        self._check_raise(ast.RaiseAction(action.event, action.payload, action.span), scope)
        if action.after is not None:
            problem = timer_problem(action.after.milliseconds)
            if problem is not None:
                self.error("E120", problem, action.after.span, "write e.g. `after 30s`")
        if action.delay is not None:
            self.check_delay(action.delay, scope)
        if action.id is not None:
            self.expect(action.id, t.STR, scope, code="E201", what="a scheduled event's id")

    def _check_emit(self, action: ast.EmitAction, scope: Scope) -> None:
        name = action.effect.name
        self._check_sent(
            action.effect,
            action.payload,
            action.span,
            scope,
            self.symbols.effects,
            "E214",
            "effect",
            f"declare it: `effect {name}(...)`",
        )

    def _check_sent(
        self,
        ref: ast.Ident,
        payload: ast.Payload,
        span: Span,
        scope: Scope,
        declared: Mapping[str, EventInfo] | Mapping[str, EffectInfo],
        code: str,
        what: str,
        declare: str,
    ) -> None:
        """`raise EVENT(...)` / `emit EFFECT(...)`: the name is declared (else `code`, with a
        did-you-mean) and the payload fits its parameters; an unknown name's payload is still
        type-checked on its own."""
        info = declared.get(ref.name)
        if info is None:
            self.error(
                code,
                f"unknown {what} `{ref.name}`",
                ref.span,
                suggest(ref.name, declared) or declare,
            )
            for _, value in payload:
                self.infer(value, scope)
            return
        self.check_payload(payload, info.params, f"{what} `{ref.name}`", span, scope)

    def check_payload(
        self,
        payload: ast.Payload,
        params: dict[str, FieldInfo],
        owner: str,
        span: Span,
        scope: Scope,
    ) -> None:
        """The fields of `raise E(...)` / `emit F(...)`: each declared, given once, of its
        type, and every field without a default (and not optional) given."""
        given: set[str] = set()
        for field, value in payload:
            info = params.get(field.name)
            if field.name in given:
                self.error("E103", f"payload field `{field.name}` is given twice", field.span)
            elif info is None:
                self.error(
                    "E108",
                    f"{owner} has no field `{field.name}`",
                    field.span,
                    suggest(field.name, params),
                )
            given.add(field.name)
            if info is None:
                self.infer(value, scope)
                continue
            self.expect(value, info.ty, scope, code="E201", what=f"`{field.name}`")
        missing = _unset_required(params, given)
        if missing:
            self.error(
                "E215",
                f"{owner} needs " + ", ".join(f"`{m}`" for m in missing),
                span,
                "give every field without a default: `NAME(field: value, ...)`",
            )

    def check_delay(self, delay: ast.ComputedDelay, scope: Scope) -> None:
        """`after EXPR UNIT`: EXPR is a whole number of units."""
        ty = self.infer(delay.expr, scope)
        if ty != t.INT and not t.is_any(ty):
            help = "use `round(...)`" if ty == t.FLOAT else None
            if isinstance(ty, t.OptionalTy) and ty.inner == t.INT:
                help = "this value may be none: use `coalesce(value, default)`"
            self.error(
                "E216", f"a timer delay must be an `int`, this is `{ty}`", delay.expr.span, help
            )

    def _target_type(self, path: tuple[ast.Ident, ...]) -> t.Ty:
        head = path[0]
        info = self.symbols.context.get(head.name)
        if info is None:
            if head.name in self.symbols.events or head.name == "event":
                return self.error(
                    "E202",
                    "event payloads cannot be assigned",
                    head.span,
                    "store the value in a context field",
                )
            return self.error(
                "E107",
                f"unknown context field `{head.name}`",
                head.span,
                suggest(head.name, self.symbols.context),
            )
        ty: t.Ty = info.ty
        for ident in path[1:]:
            ty = self._field_of(ty, ident)
        return ty

    def _check_assign(self, action: ast.Assign, scope: Scope) -> None:
        if scope.local(action.target[0].name) is not None:
            self.error(
                "E202",
                f"`{action.target[0].name}` is local to its loop and cannot be assigned",
                action.target[0].span,
                "assign a context field instead",
            )
            self.infer(action.value, scope)
            return
        target_ty = self._target_type(action.target)
        target_text = ".".join(i.name for i in action.target)
        if action.op == "=":
            self.expect(action.value, target_ty, scope, code="E202", what=f"`{target_text}`")
            return
        value_ty = self.infer(action.value, scope)
        if t.is_any(target_ty) or t.is_any(value_ty):
            return
        if action.op == "+=" and target_ty == t.STR and value_ty == t.STR:
            return
        if (
            action.op == "+="
            and isinstance(target_ty, t.ListTy)
            and t.assignable(value_ty, target_ty)
        ):
            return
        if t.is_numeric(target_ty) and t.is_numeric(value_ty):
            if target_ty == t.INT and value_ty == t.FLOAT:
                self.error(
                    "E202",
                    f"`{action.op}` would store a `float` in int field `{target_text}`",
                    action.span,
                    "use `round(...)`",
                )
            return
        self.error(
            "E202",
            f"cannot apply `{action.op}` to `{target_text}` (`{target_ty}`) with a `{value_ty}`",
            action.span,
        )

    def _check_put(self, action: ast.PutAction, scope: Scope) -> None:
        """`xs[i] = v`: `xs` a list field, `i` an `int`; `m[k] = v`: `m` a map field, `k` a
        `str`; `v` fits an item."""
        container = self._target_type(action.target)
        text = _path_text(action.target)
        if isinstance(container, t.ListTy | t.MapTy):
            key_ty, item_ty = (
                (t.INT, container.item)
                if isinstance(container, t.ListTy)
                else (t.STR, container.value)
            )
            self.expect(action.key, key_ty, scope, code="E201", what=f"a key of `{text}`")
            self.expect(action.value, item_ty, scope, code="E202", what=f"an item of `{text}`")
            return
        self.infer(action.key, scope)
        self.infer(action.value, scope)
        if isinstance(container, t.OptionalTy):
            self.error(
                "E208",
                f"`{text}` may be none: it has no item to set",
                action.span,
                "set the whole field first",
            )
        elif not t.is_any(container):
            self.error(
                "E201",
                f"`{text}[...] = ` needs a list or a map, `{text}` is `{container}`",
                action.span,
            )

    def _check_delete(self, action: ast.ActionCall, scope: Scope) -> None:
        """`delete(m, k)`: `m` a context map field, `k` a `str`."""
        target, key = action.args
        self.expect(key, t.STR, scope, code="E201", what="the key")
        path = _as_path(target)
        if path is None:
            self.error(
                "E202", "the first argument of `delete` must be a context map field", target.span
            )
            return
        map_ty = self._target_type(path)
        if not t.is_any(map_ty) and not isinstance(map_ty, t.MapTy):
            self.error(
                "E201", f"`delete` needs a map, `{_path_text(path)}` is `{map_ty}`", target.span
            )

    def _check_action_call(self, action: ast.ActionCall, scope: Scope) -> None:
        name = action.func.name
        if name not in ACTION_FUNCTIONS:
            if name in EXPRESSION_FUNCTIONS:
                self.error(
                    "E117",
                    f"`{name}(...)` computes a value; it is not an action",
                    action.func.span,
                    f"assign its result: `field = {name}(...)`",
                )
            elif name == "cancel":  # `cancel (x)`: a call, since `cancel` may name a field
                self.error(
                    "E117",
                    "`cancel` takes the id without brackets",
                    action.func.span,
                    'write `cancel "reminder"`, `cancel reminder_id` or `cancel event.id` '
                    "(an id computed otherwise: set a field to it first)",
                )
            else:
                self.error(
                    "E117",
                    f"unknown action `{name}`",
                    action.func.span,
                    suggest(name, ACTION_FUNCTIONS)
                    or "actions: `x = e`, `x += e`, `x -= e`, `xs[i] = e`, `append(xs, e)`, "
                    "`remove(xs, e)`, `delete(m, k)`, `send E after D`, `cancel ID`",
                )
            for arg in action.args:
                self.infer(arg, scope)
            return
        if len(action.args) != 2:
            what = "a map field and a key" if name == "delete" else "a list field and an item"
            self.error(
                "E118",
                f"`{name}` takes 2 arguments ({what}), got {len(action.args)}",
                action.span,
            )
            return
        if name == "delete":
            self._check_delete(action, scope)
            return
        target, item = action.args
        path = _as_path(target)
        if path is None:
            self.error(
                "E202", f"the first argument of `{name}` must be a context list field", target.span
            )
            self.infer(item, scope)
            return
        list_ty = self._target_type(path)
        if t.is_any(list_ty):
            self.infer(item, scope)
            return
        if not isinstance(list_ty, t.ListTy):
            self.error(
                "E201", f"`{name}` needs a list, `{_path_text(path)}` is `{list_ty}`", target.span
            )
            self.infer(item, scope)
            return
        self.expect(item, list_ty.item, scope, code="E201", what=f"an item of `{list_ty}`")

    # ---- expressions -------------------------------------------------------------------
    def expect(self, expr: ast.Expr, expected: t.Ty, scope: Scope, *, code: str, what: str) -> None:
        """Check `expr` against a known expected type (record literals need one)."""
        if isinstance(expected, t.RecordTy) and isinstance(expr, ast.MapLit):
            self._check_record_literal(expr, expected, scope, code)
            return
        if isinstance(expected, t.OptionalTy) and isinstance(expected.inner, t.JsonTy):
            expected = expected.inner  # null is a JSON value already
        if isinstance(expected, t.JsonTy) and isinstance(expr, ast.ListLit | ast.MapLit):
            # A JSON literal may mix item types: `[1, "a", none]`, `{"a": 1, "b": [true]}`.
            self.expect(
                expr,
                t.ListTy(t.JSON) if isinstance(expr, ast.ListLit) else t.MapTy(t.JSON),
                scope,
                code=code,
                what=what,
            )
            return
        if self._expect_collection(expr, expected, scope, code=code, what=what):
            return
        ty = self.infer(expr, scope)
        if not t.assignable(ty, expected):
            help = None
            if expected == t.INT and ty == t.FLOAT:
                help = "use `round(...)`"
            elif isinstance(ty, t.OptionalTy) and t.assignable(ty.inner, expected):
                help = "this value may be none: use `coalesce(value, default)`"
            self.error(code, f"{what} expects `{expected}`, found `{ty}`", expr.span, help)

    def _check_record_literal(
        self, expr: ast.MapLit, record: t.RecordTy, scope: Scope, code: str
    ) -> None:
        fields = self.symbols.records.get(record.name, {})
        given: set[str] = set()
        for key, value in expr.entries:
            if not (isinstance(key, ast.Literal_) and isinstance(key.value, str)):
                self.error(
                    code, f"keys of a `{record.name}` value must be field names in quotes", key.span
                )
                continue
            info = fields.get(key.value)
            if info is None:
                self.error(
                    "E108",
                    f"type `{record.name}` has no field `{key.value}`",
                    key.span,
                    suggest(key.value, fields),
                )
                continue
            given.add(key.value)
            self.expect(value, info.ty, scope, code=code, what=f"field `{key.value}`")
        missing = _unset_required(fields, given)
        if missing:
            self.error(
                code,
                f"`{record.name}` value is missing " + ", ".join(f"`{m}`" for m in missing),
                expr.span,
            )

    def infer(self, expr: ast.Expr, scope: Scope) -> t.Ty:
        kind = type(expr)
        method = _INFER.get(kind)
        if method is None:  # looked up once per node class, not per node
            method = _INFER[kind] = getattr(TypeChecker, "_infer_" + kind.__name__)
        result: t.Ty = method(self, expr, scope)
        if isinstance(result, t.OptionalTy) and scope.narrowed:
            key = _path_key(expr)
            if key is not None and key in scope.narrowed:
                result = result.inner
        self.types[id(expr)] = result
        return result

    def _infer_Invalid(self, expr: ast.Invalid, scope: Scope) -> t.Ty:
        return t.ANY

    def _infer_Literal_(self, expr: ast.Literal_, scope: Scope) -> t.Ty:
        return _LITERAL_TYPES[expr.kind]

    def _infer_Name(self, expr: ast.Name, scope: Scope) -> t.Ty:
        if scope.locals:
            local = scope.local(expr.name)
            if local is not None:
                return local
        symbols = self.symbols
        if not scope.constant and expr.name in symbols.context:
            return symbols.context[expr.name].ty
        owners = symbols.members.get(expr.name)
        if owners:
            if len(owners) > 1:
                return self.error(
                    "E115",
                    f"`{expr.name}` is a member of " + " and ".join(f"`{o}`" for o in owners),
                    expr.span,
                    f"qualify it: `{owners[0]}.{expr.name}`",
                )
            return t.EnumTy(owners[0])
        if scope.constant and expr.name in symbols.context:
            return self.error(
                "E203",
                "a default cannot refer to another field",
                expr.span,
                "set it in the initial state's entry action",
            )
        if expr.name in symbols.events:
            return self.error(
                "E107",
                f"`{expr.name}` is an event, not a value",
                expr.span,
                "read its payload with `event.FIELD`",
            )
        candidates = [*symbols.members]
        if not scope.constant:
            candidates.extend(symbols.context)
        return self.error(
            "E107", f"unknown name `{expr.name}`", expr.span, suggest(expr.name, candidates)
        )

    def _check_shared_field(self, expr: ast.EventField, param: FieldInfo, scope: Scope) -> None:
        """A rule for several events reads `event.x`: each of them must have `x`, of one type,
        so that the guard and actions mean the same whichever event arrives."""
        assert scope.event is not None
        first = scope.event.decl.name.name
        for other in scope.also:
            name = other.decl.name.name
            theirs = other.params.get(expr.name)
            if theirs is None:
                self.error(
                    "E212",
                    f"`event.{expr.name}` is read by a rule for `{first}` and `{name}`, "
                    f"but `{name}` has no field `{expr.name}`",
                    expr.span,
                    f"give `{name}` a field `{expr.name}: {param.ty}`, or write "
                    "a rule of its own for it",
                )
            elif theirs.ty != param.ty:
                self.error(
                    "E212",
                    f"`event.{expr.name}` is `{param.ty}` in `{first}` but "
                    f"`{theirs.ty}` in `{name}`",
                    expr.span,
                    "a rule for several events reads only fields they declare alike",
                )

    def _infer_EventField(self, expr: ast.EventField, scope: Scope) -> t.Ty:
        if scope is _UNKNOWN_EVENT_SCOPE:
            return t.ANY
        if scope.event is None:
            return self.error(
                "E116",
                f"`event.{expr.name}` is not available {scope.no_event_reason}",
                expr.span,
                "only rules triggered by an event (`on EVENT`) and "
                "`require` clauses can read the payload",
            )
        param = scope.event.params.get(expr.name)
        if param is not None and scope.also:
            self._check_shared_field(expr, param, scope)
        if param is None:
            name = scope.event.decl.name.name
            return self.error(
                "E108",
                f"event `{name}` has no field `{expr.name}`",
                expr.span,
                suggest(expr.name, scope.event.params)
                or (
                    f"its fields: {', '.join(scope.event.params)}"
                    if scope.event.params
                    else f"`{name}` has no payload"
                ),
            )
        return param.ty

    def _infer_StateField(self, expr: ast.StateField, scope: Scope) -> t.Ty:
        if scope.constant:
            return self.error("E203", "a default cannot read the state", expr.span)
        if expr.name in ("name", "title"):
            return t.STR
        return self.error(
            "E108",
            f"`state` has no field `{expr.name}`",
            expr.span,
            "available: `state.name`, `state.title`",
        )

    def _infer_StateMeta(self, expr: ast.StateMeta, scope: Scope) -> t.Ty:
        if scope.constant:
            return self.error("E203", "a default cannot read the state", expr.span)
        ty = self._meta_types().get(expr.key)
        if ty is None:
            keys = sorted(self._meta_types())
            return self.error(
                "E108", f"no state has meta key `{expr.key}`", expr.span, suggest(expr.key, keys)
            )
        if isinstance(ty, t.AnyTy):
            return self.error(
                "E201",
                f"meta key `{expr.key}` holds values of different types (in different states, "
                "or in one list or map)",
                expr.span,
                "use one type per key, or `null` where a state has no value",
            )
        return ty

    def _meta_types(self) -> dict[str, t.Ty]:
        """Type of each meta key over all states; optional when some state lacks it. A key
        whose values cannot be joined maps to ANY (reported where it is read)."""
        if self._meta_cache is None:
            per_key: dict[str, list[t.Ty | None]] = {}
            states = list(self.symbols.states.values())
            for state in states:
                merged: dict[str, object] = {}
                for block in state.metas:
                    merged.update(block.value)
                for key, value in merged.items():
                    per_key.setdefault(key, []).append(_json_type(value))
            self._meta_cache = {}
            for key, found in per_key.items():
                types = [ty for ty in found if ty is not None]
                joined = t.join(types) if len(types) == len(found) else None
                if joined is not None and len(types) < len(states):
                    joined = t.join([joined, t.NONE])
                self._meta_cache[key] = t.ANY if joined is None else joined
        return self._meta_cache

    def _infer_ListLit(self, expr: ast.ListLit, scope: Scope) -> t.Ty:
        items = [self.infer(item, scope) for item in expr.items]
        joined = t.join(items)
        if joined is None:
            return self.error(
                "E201",
                "list items have different types: "
                + ", ".join(f"`{ty}`" for ty in dict.fromkeys(items)),
                expr.span,
            )
        return t.ListTy(joined)

    def _infer_Conditional(self, expr: ast.Conditional, scope: Scope) -> t.Ty:
        """`if(c, a, b)`: `c` a `bool`; `a` and `b` of one type (as a list's items are), which
        is the result's. `a` knows what `c` being true proves (`if(x != none, x + 1, 0)`), `b`
        what its being false proves."""
        self.check_guard(expr.cond, scope)
        then = self.infer(expr.then, scope.narrow(_non_none_facts(expr.cond)))
        other = self.infer(expr.other, scope.narrow(_none_facts(expr.cond)))
        if t.is_any(then) or t.is_any(other):
            return t.ANY
        joined = t.join([then, other])
        if joined is None:
            return self.error(
                "E201",
                f"the two values of `if(...)` have different types: `{then}` and `{other}`",
                expr.span,
            )
        return joined

    def _infer_Quantifier(self, expr: ast.Quantifier, scope: Scope) -> t.Ty:
        """`any(x in xs: C)`, `all`, `count`: C a `bool`; `sum(x in xs: N)`, `min`, `max`: N a
        number. `x` is local to the body, typed as the list's items."""
        name = expr.func.name
        item = self.local_item(expr.var, expr.iterable, scope, f"`{name}`")
        body = self.infer(expr.body, scope.with_local(expr.var.name, item))
        if name not in QUANTIFIERS:
            return self.error(
                "E117",
                f"`{name}(x in xs: ...)` is not a quantifier",
                expr.func.span,
                suggest(name, QUANTIFIERS) or "quantifiers: " + ", ".join(QUANTIFIERS),
            )
        if t.is_any(body):
            return t.BOOL if name in ("any", "all") else t.INT if name == "count" else t.ANY
        if name in ("any", "all", "count"):
            if body != t.BOOL:
                self.error(
                    "E205",
                    f"the condition of `{name}` must be a `bool`, this is `{body}`",
                    expr.body.span,
                )
            return t.INT if name == "count" else t.BOOL
        if not t.is_numeric(body):
            return self.error("E201", f"`{name}` needs numbers, this is `{body}`", expr.body.span)
        return body

    def _whole_list(self, expr: ast.Call, scope: Scope) -> t.Ty:
        """`sum(xs)`, `any(flags)`, ...: the quantifier over the items themselves, as
        `sum(x in xs: x)` (lowering writes it so)."""
        name = expr.func.name
        if len(expr.args) != 1:
            for arg in expr.args:
                self.infer(arg, scope)
            return self.error(
                "E118",
                f"`{name}` takes one list, or is written `{name}(x in xs: ...)`; "
                f"got {len(expr.args)} arguments",
                expr.span,
            )
        listed = self.infer(expr.args[0], scope)
        if t.is_any(listed):
            return t.ANY
        item = listed.item if isinstance(listed, t.ListTy) else None
        if name in ("any", "all", "count"):
            if item == t.BOOL:
                return t.INT if name == "count" else t.BOOL
            wanted = "list[bool]"
        else:
            if item is not None and t.is_numeric(item):
                return item
            wanted = "list of numbers"
        if isinstance(listed, t.OptionalTy):
            return self.error(
                "E208",
                f"`{name}` of a list that may be none",
                expr.args[0].span,
                "check it first, or use `coalesce(xs, [])`",
            )
        return self.error(
            "E201",
            f"`{name}` needs a {wanted}, this is `{listed}`",
            expr.args[0].span,
            f"or go through the items: `{name}(x in xs: ...)`",
        )

    def local_item(self, var: ast.Ident, iterable: ast.Expr, scope: Scope, what: str) -> t.Ty:
        """The type of a local name bound to each item of `iterable` (a list), reporting a
        name that is already a context field and a value that is not a list."""
        if var.name in self.symbols.context:
            self.error(
                "E103",
                f"`{var.name}` is a context field; the item of {what} needs a name of its own",
                var.span,
            )
        listed = self.infer(iterable, scope)
        if isinstance(listed, t.ListTy):
            return listed.item
        if isinstance(listed, t.JsonTy):
            return t.JSON  # a list when it runs, else a fault
        if isinstance(listed, t.OptionalTy):
            self.error(
                "E208",
                f"{what} over a list that may be none",
                iterable.span,
                "check it first, or use `coalesce(xs, [])`",
            )
        elif not t.is_any(listed):
            self.error("E201", f"{what} goes through a list, this is `{listed}`", iterable.span)
        return t.ANY

    def _infer_MapLit(self, expr: ast.MapLit, scope: Scope) -> t.Ty:
        values: list[t.Ty] = []
        for key, value in expr.entries:
            key_ty = self.infer(key, scope)
            if key_ty != t.STR and not t.is_any(key_ty):
                self.error("E201", f"map keys must be `str`, found `{key_ty}`", key.span)
            values.append(self.infer(value, scope))
        joined = t.join(values)
        if joined is None:
            return self.error("E201", "map values have different types", expr.span)
        return t.MapTy(joined)

    def _field_of(self, ty: t.Ty, name: ast.Ident) -> t.Ty:
        if t.is_any(ty):
            return t.ANY
        if isinstance(ty, t.OptionalTy):
            return self.error(
                "E208",
                f"cannot read `.{name.name}` of a value that may be none",
                name.span,
                "check it first (`x != none and x.f ...`), or use `coalesce(x, fallback)`",
            )
        if isinstance(ty, t.RecordTy):
            fields = self.symbols.records.get(ty.name, {})
            info = fields.get(name.name)
            if info is None:
                return self.error(
                    "E108",
                    f"type `{ty.name}` has no field `{name.name}`",
                    name.span,
                    suggest(name.name, fields),
                )
            return info.ty
        return self.error(
            "E201", f"`{ty}` has no fields", name.span, "use `x[key]` for maps and lists"
        )

    def _infer_Attribute(self, expr: ast.Attribute, scope: Scope) -> t.Ty:
        obj = expr.obj
        if isinstance(obj, ast.Name) and self.symbols.is_enum_member(
            obj.name, expr.name.name, constant=scope.constant
        ):
            decl = self.symbols.enums[obj.name]
            members = [m.name for m in decl.members]
            if expr.name.name not in members:
                return self.error(
                    "E108",
                    f"enum `{obj.name}` has no member `{expr.name.name}`",
                    expr.name.span,
                    suggest(expr.name.name, members),
                )
            return t.EnumTy(obj.name)
        return self._field_of(self.infer(obj, scope), expr.name)

    def _infer_Subscript(self, expr: ast.Subscript, scope: Scope) -> t.Ty:
        obj = self.infer(expr.obj, scope)
        index = self.infer(expr.index, scope)
        if t.is_any(obj):
            return t.ANY
        if isinstance(obj, t.ListTy):
            if index != t.INT and not t.is_any(index):
                return self.error(
                    "E201", f"list index must be `int`, found `{index}`", expr.index.span
                )
            return obj.item
        if isinstance(obj, t.MapTy):
            if index != t.STR and not t.is_any(index):
                return self.error(
                    "E201", f"map key must be `str`, found `{index}`", expr.index.span
                )
            return obj.value
        if isinstance(obj, t.OptionalTy):
            return self.error(
                "E208",
                "cannot index a value that may be none",
                expr.obj.span,
                "use `coalesce(value, default)` first",
            )
        return self.error("E201", f"`{obj}` cannot be indexed", expr.obj.span)

    def _infer_Call(self, expr: ast.Call, scope: Scope) -> t.Ty:
        name = expr.func.name
        if name == "active":
            return self._active(expr, scope)
        if name in QUANTIFIERS and (len(expr.args) == 1 or name not in ("min", "max")):
            return self._whole_list(expr, scope)
        if name == "coalesce" and len(expr.args) == 2:
            # The fallback is checked against the value's type, so record literals work.
            value = self.infer(expr.args[0], scope)
            inner = value.inner if isinstance(value, t.OptionalTy) else value
            self.expect(expr.args[1], inner, scope, code="E201", what="the `coalesce` fallback")
            return inner
        args = [self.infer(arg, scope) for arg in expr.args]
        check = self._functions.get(name)
        if check is None:
            if name in ACTION_FUNCTIONS:
                return self.error(
                    "E117",
                    f"`{name}` is an action, not a value",
                    expr.func.span,
                    f"write it as a statement: `do {name}(...)`",
                )
            return self.error(
                "E117",
                f"unknown function `{name}`",
                expr.func.span,
                suggest(name, self._functions)
                or "functions: " + ", ".join(sorted(self._functions)),
            )
        if any(t.is_any(a) for a in args):
            return t.ANY
        low, high = BUILTINS[name].least, BUILTINS[name].most
        if not low <= len(args) <= high:
            wanted = str(low) if low == high else f"at least {low}"
            return self.error(
                "E118",
                f"`{name}` takes {wanted} argument{'s' * (high != 1)}, got {len(args)}",
                expr.span,
            )
        for arg_ty, arg in zip(args, expr.args, strict=True):
            if isinstance(arg_ty, t.OptionalTy):
                return self.error(
                    "E208",
                    f"`{name}` of a value that may be none",
                    arg.span,
                    "check it first (`x != none and ...`), or use `coalesce(x, fallback)`",
                )
        return check(self, args, list(expr.args), expr.span)

    def _infer_Unary(self, expr: ast.Unary, scope: Scope) -> t.Ty:
        ty = self.infer(expr.operand, scope)
        if t.is_any(ty):
            return t.ANY
        if expr.op == "not":
            if ty != t.BOOL:
                return self.error("E201", f"`not` needs a `bool`, found `{ty}`", expr.operand.span)
            return t.BOOL
        if not t.is_numeric(ty):
            return self.error("E201", f"`-` needs a number, found `{ty}`", expr.operand.span)
        return ty

    def _expect_collection(
        self, expr: ast.Expr, expected: t.Ty, scope: Scope, *, code: str, what: str
    ) -> bool:
        """`expect` for a map or list literal where one is expected, item by item (a map
        literal also where an optional is): True when checked so."""
        if isinstance(expected, t.OptionalTy) and isinstance(expr, ast.MapLit):
            self.expect(expr, expected.inner, scope, code=code, what=what)
            return True
        if isinstance(expected, t.MapTy) and isinstance(expr, ast.MapLit):
            for key, value in expr.entries:
                key_ty = self.infer(key, scope)
                if key_ty != t.STR and not t.is_any(key_ty):
                    self.error("E201", f"map keys must be `str`, found `{key_ty}`", key.span)
                self.expect(value, expected.value, scope, code=code, what=f"a value of {what}")
            return True
        if isinstance(expected, t.ListTy) and isinstance(expr, ast.ListLit):
            for item in expr.items:
                self.expect(item, expected.item, scope, code=code, what=f"an item of {what}")
            return True
        return False

    def _infer_Binary(self, expr: ast.Binary, scope: Scope) -> t.Ty:
        left = self.infer(expr.left, scope)
        right_scope = scope
        if expr.op == "and":  # `x != none and x > 1`: x is not none on the right
            right_scope = scope.narrow(_non_none_facts(expr.left))
        elif expr.op == "or":  # `x == none or x > 1`: x is not none on the right
            right_scope = scope.narrow(_none_facts(expr.left))
        right = self.infer(expr.right, right_scope)
        op = expr.op
        if t.is_any(left) or t.is_any(right):
            return t.BOOL if op in BOOLEAN_RESULTS else t.ANY
        if op in ("and", "or"):
            for side, ty in ((expr.left, left), (expr.right, right)):
                if ty != t.BOOL:
                    self.error(
                        "E201", f"`{op}` needs `bool` on both sides, found `{ty}`", side.span
                    )
            return t.BOOL
        if op in ("==", "!="):
            self._check_equality(expr, left, right)
            return t.BOOL
        if op in ("<", "<=", ">", ">="):
            self._check_order(expr, left, right)
            return t.BOOL
        if op in ("in", "not in"):
            return self._check_membership(expr, left, right)
        return self._check_arithmetic(expr, left, right)

    def _check_equality(self, expr: ast.Binary, left: t.Ty, right: t.Ty) -> None:
        """`==` and `!=`: the two sides can be equal (and are not JSON values)."""
        if self._json_compared(expr, left, right):
            return
        if not t.comparable(left, right):
            self.error(
                "E201",
                f"`{left}` and `{right}` can never be equal",
                expr.span,
                _enum_compare_help(expr, left, right, self.symbols),
            )
        else:
            self._check_enum_strings(left, (expr.right,))
            self._check_enum_strings(right, (expr.left,))

    def _check_order(self, expr: ast.Binary, left: t.Ty, right: t.Ty) -> None:
        """`<`, `<=`, `>`, `>=`: two numbers or two strings, neither possibly none."""
        if isinstance(left, t.OptionalTy) or isinstance(right, t.OptionalTy):
            self.error(
                "E208",
                f"`{expr.op}` on a value that may be none",
                expr.span,
                "use `coalesce(value, default)`",
            )
        elif not ((t.is_numeric(left) and t.is_numeric(right)) or (left == right == t.STR)):
            self.error("E201", f"cannot order `{left}` and `{right}` with `{expr.op}`", expr.span)

    def _json_compared(self, expr: ast.Binary, left: t.Ty, right: t.Ty) -> bool:
        """E201 for `==`, `!=`, `in` on values holding `json` (other than a test against
        `none`): JSON's equality is not the language's (`true` is not `1` in JSON, nor `1.0`
        an integer), so a json value is passed along, not compared. True when reported."""
        if isinstance(left, t.NoneTy) or isinstance(right, t.NoneTy):
            return False
        for side, ty in ((expr.left, left), (expr.right, right)):
            if self._holds_json(ty, set()):
                self.error(
                    "E201",
                    "a `json` value can only be compared with `none`"
                    if isinstance(ty, t.JsonTy)
                    else f"`{ty}` holds `json` values, which can only be compared with `none`",
                    side.span,
                    "pass a json value along (store it, send it in refusal data); declare "
                    "typed fields for what a guard must inspect",
                )
                return True
        return False

    def _holds_json(self, ty: t.Ty, seen: set[str]) -> bool:
        if isinstance(ty, t.JsonTy):
            return True
        if isinstance(ty, t.ListTy):
            return self._holds_json(ty.item, seen)
        if isinstance(ty, t.MapTy):
            return self._holds_json(ty.value, seen)
        if isinstance(ty, t.OptionalTy):
            return self._holds_json(ty.inner, seen)
        if isinstance(ty, t.RecordTy) and ty.name not in seen:
            seen.add(ty.name)
            fields = self.symbols.records.get(ty.name, {})
            return any(self._holds_json(f.ty, seen) for f in fields.values())
        return False

    def _check_membership(self, expr: ast.Binary, left: t.Ty, right: t.Ty) -> t.Ty:
        if self._json_compared(expr, left, right):
            return t.BOOL
        ok = (
            (isinstance(right, t.ListTy) and t.comparable(left, right.item))
            or (isinstance(right, t.MapTy) and left == t.STR)
            or (right == t.STR and left == t.STR)
        )
        if not ok:
            self.error(
                "E201",
                f"cannot test `{left}` {expr.op} `{right}`",
                expr.span,
                "`in` works on lists (items), maps (keys) and strings (substrings)",
            )
        elif isinstance(expr.right, ast.ListLit):
            self._check_enum_strings(left, expr.right.items)
        return t.BOOL

    def _check_enum_strings(self, ty: t.Ty, others: tuple[ast.Expr, ...]) -> None:
        """Enums compare with strings, their member names: a string literal that names no
        member makes a comparison that can never hold (`mode == "EXPRT"`)."""
        if isinstance(ty, t.OptionalTy):
            ty = ty.inner
        if not isinstance(ty, t.EnumTy) or ty.name not in self.symbols.enums:
            return
        members = [m.name for m in self.symbols.enums[ty.name].members]
        for other in others:
            named = other.value if isinstance(other, ast.Literal_) else None
            if isinstance(named, str) and named not in members:
                help = suggest(named, members) or f"members: {', '.join(members)}"
                self.error("E108", f"`{ty.name}` has no member `{named}`", other.span, help)

    def _check_arithmetic(self, expr: ast.Binary, left: t.Ty, right: t.Ty) -> t.Ty:
        op = expr.op
        if isinstance(left, t.OptionalTy) or isinstance(right, t.OptionalTy):
            return self.error(
                "E208",
                f"`{op}` on a value that may be none",
                expr.span,
                "use `coalesce(value, default)`",
            )
        rule = BINARY_OPERATORS[op]
        if rule.concatenates and left == right == t.STR:
            return t.STR
        if rule.concatenates and isinstance(left, t.ListTy) and isinstance(right, t.ListTy):
            joined = t.join([left, right])
            if joined is not None:
                return joined
        if t.is_numeric(left) and t.is_numeric(right):
            if rule.always_float:
                return t.FLOAT
            return t.INT if left == right == t.INT else t.FLOAT
        return self.error("E201", f"cannot apply `{op}` to `{left}` and `{right}`", expr.span)

    # ---- built-in functions ------------------------------------------------------------
    def _arity(self, name: str, args: list[t.Ty], span: Span, count: int) -> bool:
        if len(args) != count:
            self.error(
                "E118",
                f"`{name}` takes {count} argument{'s' * (count != 1)}, got {len(args)}",
                span,
            )
            return False
        return True

    def _fn_len(self, args: list[t.Ty], exprs: list[ast.Expr], span: Span) -> t.Ty:
        if self._arity("len", args, span, 1) and not (
            args[0] == t.STR or isinstance(args[0], t.ListTy | t.MapTy)
        ):
            self.error("E201", f"`len` needs a str, list or map, found `{args[0]}`", exprs[0].span)
        return t.INT

    def _fn_minmax(self, args: list[t.Ty], exprs: list[ast.Expr], span: Span) -> t.Ty:
        if len(args) < 2:
            return self.error("E118", "`min`/`max` take at least 2 arguments", span)
        for ty, e in zip(args, exprs, strict=True):
            if not t.is_numeric(ty):
                return self.error("E201", f"`min`/`max` need numbers, found `{ty}`", e.span)
        return t.INT if all(a == t.INT for a in args) else t.FLOAT

    def _fn_abs(self, args: list[t.Ty], exprs: list[ast.Expr], span: Span) -> t.Ty:
        if not self._arity("abs", args, span, 1):
            return t.ANY
        if not t.is_numeric(args[0]):
            return self.error("E201", f"`abs` needs a number, found `{args[0]}`", exprs[0].span)
        return args[0]

    def _fn_round(self, args: list[t.Ty], exprs: list[ast.Expr], span: Span) -> t.Ty:
        if self._arity("round", args, span, 1) and not t.is_numeric(args[0]):
            self.error("E201", f"`round` needs a number, found `{args[0]}`", exprs[0].span)
        return t.INT

    def _fn_merge(self, args: list[t.Ty], exprs: list[ast.Expr], span: Span) -> t.Ty:
        if not self._arity("merge", args, span, 2):
            return t.ANY
        joined = t.join(args)
        if not isinstance(joined, t.MapTy):
            return self.error(
                "E201",
                f"`merge` needs two maps of one type, found `{args[0]}` and `{args[1]}`",
                span,
            )
        return joined

    def _fn_keys(self, args: list[t.Ty], exprs: list[ast.Expr], span: Span) -> t.Ty:
        if self._arity("keys", args, span, 1) and not isinstance(args[0], t.MapTy):
            self.error("E201", f"`keys` needs a map, found `{args[0]}`", exprs[0].span)
        return t.ListTy(t.STR)

    def _fn_values(self, args: list[t.Ty], exprs: list[ast.Expr], span: Span) -> t.Ty:
        if not self._arity("values", args, span, 1):
            return t.ANY
        if not isinstance(args[0], t.MapTy):
            return self.error("E201", f"`values` needs a map, found `{args[0]}`", exprs[0].span)
        return t.ListTy(args[0].value)

    def _fn_str(self, args: list[t.Ty], exprs: list[ast.Expr], span: Span) -> t.Ty:
        if self._arity("this function", args, span, 1) and args[0] != t.STR:
            self.error("E201", f"expected a `str`, found `{args[0]}`", exprs[0].span)
        return t.STR

    def _active(self, expr: ast.Call, scope: Scope) -> t.Ty:
        """`active(STATE)`: STATE is a state's name (or a dotted path where it repeats),
        resolved here as a transition target is; the call is a `bool`."""
        if len(expr.args) != 1:
            return self.error("E118", f"`active` takes 1 argument, got {len(expr.args)}", expr.span)
        arg = expr.args[0]
        written = state_path(arg)
        if written is None:
            return self.error(
                "E217",
                "`active` takes a state name",
                arg.span,
                "name the state as a transition target does: `active(Cooking)`",
            )
        if scope.constant:
            return self.error("E203", "a default cannot depend on the active states", expr.span)
        found = self.symbols.state_candidates(written)
        if not found:
            nodes = self.symbols.nodes
            known = {*nodes, *(n.dotted for n in nodes.values())}
            return self.error(
                "E104", f"unknown state `{written}`", arg.span, suggest(written, sorted(known))
            )
        if len(found) > 1:
            paths = [self.symbols.nodes[n].dotted for n in found]
            listed = ", ".join(f"`{p}`" for p in paths)
            return self.error(
                "E130",
                f"state name `{written}` is ambiguous: it may mean {listed}",
                arg.span,
                f"write the path that names one: `{paths[0]}`",
            )
        self.types[id(expr)] = t.BOOL
        return t.BOOL

    def _fn_active(self, args: list[t.Ty], exprs: list[ast.Expr], span: Span) -> t.Ty:
        raise AssertionError("`active` is checked by `_active`")  # pragma: no cover

    def _fn_event_name(self, args: list[t.Ty], exprs: list[ast.Expr], span: Span) -> t.Ty:
        return t.STR

    def _fn_coalesce(self, args: list[t.Ty], exprs: list[ast.Expr], span: Span) -> t.Ty:
        if not self._arity("coalesce", args, span, 2):
            return t.ANY
        value, fallback = args
        inner = value.inner if isinstance(value, t.OptionalTy) else value
        if not t.assignable(fallback, inner):
            return self.error(
                "E201", f"`coalesce` fallback must be `{inner}`, found `{fallback}`", exprs[1].span
            )
        return inner

    def _fn_to_str(self, args: list[t.Ty], exprs: list[ast.Expr], span: Span) -> t.Ty:
        if self._arity("str", args, span, 1) and not (isinstance(args[0], t.Prim | t.EnumTy)):
            self.error(
                "E201",
                f"`str` converts a bool, number, string or enum, not `{args[0]}`",
                exprs[0].span,
            )
        return t.STR

    # ---- templates ---------------------------------------------------------------------
    def check_template(self, text: ast.Text) -> None:
        import jinja2

        from flowc.compiler.template_bounds import checking_environment
        from flowc.runtime.templating import check_template as constants_past_limits

        if self._jinja is None:
            self._jinja = checking_environment()
        try:
            tree = self._jinja.parse(text.value)
            oversized = constants_past_limits(text.value)
            if not oversized:
                self._jinja.compile(tree)  # compiling also finds unknown filters and tests
        except jinja2.TemplateSyntaxError as exc:
            self.error(
                "E206",
                f"template error: {exc.message}",
                _template_span(text, exc.lineno),
                "templates are Jinja2: `{{ value }}`, `{% if c %}...{% endif %}`",
            )
            return
        except ValueError:
            # Jinja's lexer reads a number literal with `int()`, which refuses over 4,300 digits.
            self.error(
                "E209",
                "number too large in a template",
                _template_span(text, None),
                "a number in a template may have up to 4,300 digits",
            )
            return
        for found in oversized:
            self.error(
                "E210",
                f"template too costly: {found.message}",
                _template_span(text, found.line),
                "a template's constants are computed when the flow compiles; compute large "
                "values in the host, or keep them within the limits in docs/language.md",
            )


def _template_span(text: ast.Text, lineno: int | None) -> Span:
    """Where line `lineno` of a template is in the file: the whole text when it is on the
    text's first line, else the start of that line."""
    line = text.span.line + max(0, (lineno or 1) - 1)
    if text.span.end_line > text.span.line and (lineno or 1) >= 1:
        # A triple-quoted text starts on the line after its opening quotes.
        line += 1
    return Span(line, 1, line, 2) if line != text.span.line else text.span


#: (fewest, most) arguments of each expression function.
def _synthetic_field(name: str, ty: t.Ty, span: Span) -> FieldInfo:
    """A payload field the compiler declares (done data's), as if written `name: ty`."""
    return implicit_field(name, ty, type_ref(ty), span)


def type_ref(ty: t.Ty) -> TypeRef:
    """The IR's form of a type the checker worked out (done data's fields)."""
    if isinstance(ty, t.Prim):
        return TypeRef(kind=ty.name)  # type: ignore[arg-type]
    if isinstance(ty, t.ListTy):
        return TypeRef(kind="list", item=type_ref(ty.item))
    if isinstance(ty, t.MapTy):
        return TypeRef(kind="map", item=type_ref(ty.value))
    if isinstance(ty, t.OptionalTy):
        return TypeRef(kind="optional", item=type_ref(ty.inner))
    if isinstance(ty, t.EnumTy):
        return TypeRef(kind="enum", name=ty.name)
    if isinstance(ty, t.RecordTy):
        return TypeRef(kind="record", name=ty.name)
    return TypeRef(kind="json")


_LITERAL_TYPES: dict[str, t.Ty] = {
    "int": t.INT,
    "float": t.FLOAT,
    "str": t.STR,
    "bool": t.BOOL,
    "none": t.NONE,
}


#: Scope for rules whose event is unknown (already reported): `event.x` stays silent.
_UNKNOWN_EVENT_SCOPE = Scope(None, "")


def _is_constant(expr: ast.Expr) -> bool:
    if isinstance(expr, ast.Literal_ | ast.Name | ast.Invalid):
        return True
    if isinstance(expr, ast.Attribute):
        return isinstance(expr.obj, ast.Name)
    if isinstance(expr, ast.Unary):
        return expr.op == "neg" and isinstance(expr.operand, ast.Literal_)
    if isinstance(expr, ast.ListLit):
        return all(_is_constant(i) for i in expr.items)
    if isinstance(expr, ast.MapLit):
        return all(_is_constant(k) and _is_constant(v) for k, v in expr.entries)
    return False


def _constant_number(expr: ast.Expr) -> float | None:
    """The number a literal (`3`, `-2.5`) writes, or None for anything else."""
    sign, literal = 1, expr
    if isinstance(expr, ast.Unary) and isinstance(expr.operand, ast.Literal_):
        sign, literal = -1, expr.operand
    if isinstance(literal, ast.Literal_):
        value = literal.value
        if isinstance(value, int | float) and not isinstance(value, bool):
            return sign * value
    return None


def _range_text(low: float | None, high: float | None) -> str:
    def show(x: float | None) -> str:
        return "" if x is None else f"{x:g}"

    return f"{show(low)}..{show(high)}"


def _json_type(value: object) -> t.Ty | None:
    """The type of a meta value; None when a list or map in it mixes types."""
    if value is None:
        return t.NONE
    if isinstance(value, bool):
        return t.BOOL
    if isinstance(value, int):
        return t.INT
    if isinstance(value, float):
        return t.FLOAT
    if isinstance(value, str):
        return t.STR
    assert isinstance(value, list | dict)
    items = value if isinstance(value, list) else list(value.values())
    parts = [_json_type(v) for v in items]
    known = [p for p in parts if p is not None]
    joined = t.join(known) if len(known) == len(parts) else None
    if joined is None:
        return None
    return t.ListTy(joined) if isinstance(value, list) else t.MapTy(joined)


def _path_key(expr: ast.Expr) -> str | None:
    """A stable name for a value path (`ctx:x`, `event:y.z`), or None for anything else."""
    if isinstance(expr, ast.Name):
        return f"ctx:{expr.name}"
    if isinstance(expr, ast.EventField):
        return f"event:{expr.name}"
    if isinstance(expr, ast.StateMeta):
        return f"meta:{expr.key}"
    if isinstance(expr, ast.Attribute):
        head = _path_key(expr.obj)
        return None if head is None else f"{head}.{expr.name.name}"
    return None


def _compared_with_none(expr: ast.Expr, op: str) -> str | None:
    if isinstance(expr, ast.Binary) and expr.op == op:
        for value, other in ((expr.left, expr.right), (expr.right, expr.left)):
            if isinstance(other, ast.Literal_) and other.kind == "none":
                return _path_key(value)
    return None


def _context_root(key: str) -> str | None:
    """The context field a path key (`ctx:a.b`) starts from, or None for other paths."""
    if not key.startswith("ctx:"):
        return None
    return key[4:].split(".", 1)[0]


def _written_fields(action: ast.Action) -> frozenset[str]:
    """The context fields `action` may write (a loop writes its item and index fields)."""
    if isinstance(action, ast.Assign | ast.PutAction):
        return frozenset({action.target[0].name})
    if isinstance(action, ast.ActionCall):
        path = _as_path(action.args[0]) if action.args else None
        return frozenset({path[0].name}) if path else frozenset()
    if isinstance(action, ast.IfAction):
        return frozenset().union(*(_written_in(b.actions) for b in action.branches))
    if isinstance(action, ast.ForAction):
        loop = {action.item.name} | ({action.index.name} if action.index else set())
        return _written_in(action.actions) | loop
    return frozenset()  # raise, emit, send and cancel queue work; they write no field


def _written_in(actions: tuple[ast.Action, ...]) -> frozenset[str]:
    return frozenset().union(*(_written_fields(a) for a in actions))


def _non_none_facts(expr: ast.Expr) -> frozenset[str]:
    """Paths that are certainly not none when `expr` is true."""
    if isinstance(expr, ast.Binary) and expr.op == "and":
        return _non_none_facts(expr.left) | _non_none_facts(expr.right)
    key = _compared_with_none(expr, "!=")
    return frozenset({key}) if key else frozenset()


def _none_facts(expr: ast.Expr) -> frozenset[str]:
    """Paths that are certainly not none when `expr` is false."""
    if isinstance(expr, ast.Binary) and expr.op == "or":
        return _none_facts(expr.left) | _none_facts(expr.right)
    key = _compared_with_none(expr, "==")
    return frozenset({key}) if key else frozenset()


def _as_path(expr: ast.Expr) -> tuple[ast.Ident, ...] | None:
    if isinstance(expr, ast.Name):
        return (ast.Ident(expr.name, expr.span),)
    if isinstance(expr, ast.Attribute):
        head = _as_path(expr.obj)
        return None if head is None else (*head, expr.name)
    return None


def _path_text(path: tuple[ast.Ident, ...]) -> str:
    return ".".join(i.name for i in path)


def _enum_compare_help(expr: ast.Binary, left: t.Ty, right: t.Ty, symbols: Symbols) -> str | None:
    for enum_ty, other in ((left, expr.right), (right, expr.left)):
        if isinstance(enum_ty, t.EnumTy) and isinstance(other, ast.Literal_):
            members = [m.name for m in symbols.enums[enum_ty.name].members]
            return f"members of `{enum_ty.name}`: {', '.join(members)}"
    return None


def typecheck(symbols: Symbols) -> list[Diagnostic]:
    return typecheck_with_types(symbols)[0]


def typecheck_with_types(symbols: Symbols) -> tuple[list[Diagnostic], dict[int, t.Ty]]:
    """The diagnostics, and the type of every expression checked (by the node's `id`)."""
    checker = TypeChecker(symbols)
    checker.run()
    return checker.diagnostics, checker.types


def _unset_required(fields: dict[str, FieldInfo], given: set[str]) -> list[str]:
    """The fields of a payload or record value that `given` leaves out and that have neither
    a default nor an optional type, in declaration order."""
    return [
        name
        for name, info in fields.items()
        if name not in given and info.decl.default is None and not isinstance(info.ty, t.OptionalTy)
    ]
