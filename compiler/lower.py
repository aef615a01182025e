"""Lowering: a checked AST -> the IR (`flowc.runtime.model.CompiledFlow`).

Runs only on modules without errors, so it may assume every name resolves and every type fits.
Decisions made here, which the runtime relies on:
- enum members become plain string literals (`PASS` -> "PASS");
- rules written outside any state are copied into every non-final, non-choice state, after the
  state's own rules (`inherited=True`), so the runtime sees one flat, ordered list per state;
- `-> self` becomes the state's own name;
- states are listed in document order (a parent before its children) under their IR names
  (resolve.py): a nested state's `parent` is set, a compound or parallel state's kind says so,
  and rules outside any state are copied into top-level states only (rules of an ancestor
  apply in its descendants at run time);
- transition `index` numbers transitions state by state (each state's own rules in source
  order, then its inherited copies): within a state, the order the runtime tries them in.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import BaseModel
from pydantic.fields import FieldInfo as ModelField

from flowc.compiler import ast
from flowc.compiler.resolve import FieldInfo, StateNode, Symbols, state_path
from flowc.compiler.sourcemap import SourceMap
from flowc.compiler.template_lowering import lowered_templates, template_sources, template_spans
from flowc.runtime import model as ir
from flowc.runtime.builtins import QUANTIFIERS, WHOLE_ITEM

M = TypeVar("M", bound=BaseModel)


def _new(cls: type[M], **fields: Any) -> M:
    """Build an IR node without re-validating it: lowering only runs on checked input, every
    value is built here with the right type, and pydantic validation of ~10 nodes per
    transition would dominate compile time of large flows. `CompiledFlow.from_json` still
    validates everything a runtime loads.

    What `model_construct` does, for models without aliases, extras or post-init hooks (the
    IR's), with the per-field checks it repeats on every call done once per class: the same
    `__dict__` (in field order, defaults filled in), fields set, extra and private state."""
    plan = _PLANS.get(cls)
    if plan is None:
        plan = _PLANS[cls] = _plan(cls)
    if plan is _CONSTRUCT:
        return cls.model_construct(**fields)
    template, required, made = plan
    values = template.copy()
    values.update(fields)
    if len(values) != len(template) or not required <= fields.keys():
        return cls.model_construct(**fields)  # a field left out, or one the model does not have
    for name, info in made:
        if name not in fields:
            values[name] = info.get_default(call_default_factory=True, validated_data=values)
    node = cls.__new__(cls)
    _set = object.__setattr__
    _set(node, "__dict__", values)
    _set(node, "__pydantic_fields_set__", set(fields))
    _set(node, "__pydantic_extra__", None)
    _set(node, "__pydantic_private__", None)
    return node


#: (every field in order, with its default where that is one constant value; the required
#: fields; the fields whose default is made anew for each node, with their `FieldInfo`)
_Plan = tuple[dict[str, Any], frozenset[str], tuple[tuple[str, ModelField], ...]]
#: The plan of a class `_new` leaves to `model_construct`.
_CONSTRUCT: _Plan = ({}, frozenset(), ())
#: An immutable default is what `FieldInfo.get_default` returns every time: it is kept as is.
_IMMUTABLE = (type(None), bool, int, float, str)
_PLANS: dict[type[BaseModel], _Plan] = {}


def _plan(cls: type[BaseModel]) -> _Plan:
    plain = (
        not cls.__pydantic_post_init__
        and not cls.__pydantic_root_model__
        and cls.model_config.get("extra") != "allow"
        and all(f.alias is None and f.validation_alias is None for f in cls.model_fields.values())
    )
    if not plain:
        return _CONSTRUCT
    template: dict[str, Any] = {}
    required: set[str] = set()
    made: list[tuple[str, ModelField]] = []
    for name, info in cls.model_fields.items():
        template[name] = None
        if info.is_required():
            required.add(name)
        elif info.default_factory is None and (
            type(info.default) in _IMMUTABLE or info.default == ()
        ):
            template[name] = info.default  # `()` too: pydantic hands out the same empty tuple
        else:
            made.append((name, info))
    return template, frozenset(required), tuple(made)


_ASSIGN_OPS = {"=": "set", "+=": "add", "-=": "sub"}


class Lowerer:
    def __init__(self, symbols: Symbols) -> None:
        self.symbols = symbols
        #: Identical expression nodes are built once and shared (flows repeat `attempts < 3`
        #: and friends in every state); keyed by op, value and the ids of shared children.
        self._interned: dict[tuple[Any, ...], ir.Expr] = {}
        #: The same for binary operations, keyed by operator and the ids of both operands.
        self._binaries: dict[tuple[str, int, int], ir.Expr] = {}
        #: Filled as the IR is built: where each lowered part was written.
        self.source_map = SourceMap()
        #: The local names in scope where an expression is lowered (`x` in `any(x in xs: ...)`
        #: or a local loop's body), innermost last: a name here reads the local.
        self.locals: list[str] = []

    # ---- expressions -------------------------------------------------------------------
    def expr(self, node: ast.Expr) -> ir.Expr:
        if type(node) is ast.Binary:  # the most common node by far: its own short path
            left = self.expr(node.left)
            right = self.expr(node.right)
            pair = (node.op, id(left), id(right))
            found = self._binaries.get(pair)
            if found is None:
                found = _new(ir.Expr, op=node.op, value=None, args=(left, right))
                self._binaries[pair] = found
            return found
        op, value, args = self._expr_parts(node)
        key = (op, type(value), value, tuple(map(id, args)) if args else ())
        found = self._interned.get(key)
        if found is None:
            found = _new(ir.Expr, op=op, value=value, args=args)
            self._interned[key] = found
        return found

    def _expr_parts(self, node: ast.Expr) -> tuple[str, Any, tuple[ir.Expr, ...]]:
        """(op, value, lowered arguments) of any node but a binary operation (see `expr`)."""
        symbols = self.symbols
        if isinstance(node, ast.Literal_):
            return ("lit", node.value, ())
        if isinstance(node, ast.Name):
            if node.name in self.locals:
                return ("local", node.name, ())
            if node.name in symbols.context:
                return ("ctx", node.name, ())
            return ("lit", node.name, ())  # an enum member
        if isinstance(node, ast.EventField):
            return ("event", node.name, ())
        if isinstance(node, ast.StateField):
            return ("state", node.name, ())
        if isinstance(node, ast.StateMeta):
            return ("meta", node.key, ())
        if isinstance(node, ast.Attribute):
            obj = node.obj
            if isinstance(obj, ast.Name) and symbols.is_enum_member(obj.name, node.name.name):
                return ("lit", node.name.name, ())
            return ("attr", node.name.name, (self.expr(obj),))
        if isinstance(node, ast.Subscript):
            return ("index", None, (self.expr(node.obj), self.expr(node.index)))
        if isinstance(node, ast.Call):
            name = node.func.name
            if name in QUANTIFIERS and (len(node.args) == 1 or name not in ("min", "max")):
                # `sum(xs)` is `sum(x in xs: x)` (printed back as `sum(xs)`).
                item = _new(ir.Expr, op="local", value=WHOLE_ITEM, args=())
                return (name, WHOLE_ITEM, (self.expr(node.args[0]), item))
            if node.func.name == "active":
                # The state's IR name, as a literal (typecheck resolved it to one state).
                written = state_path(node.args[0])
                assert written is not None
                state = symbols.state_candidates(written)[0]
                literal = ast.Literal_(state, "str", node.args[0].span)
                return ("call", "active", (self.expr(literal),))
            return ("call", node.func.name, tuple(map(self.expr, node.args)))
        if isinstance(node, ast.ListLit):
            return ("list", None, tuple(map(self.expr, node.items)))
        if isinstance(node, ast.MapLit):
            flat = tuple(self.expr(part) for entry in node.entries for part in entry)
            return ("map", None, flat)
        if isinstance(node, ast.Unary):
            return (node.op, None, (self.expr(node.operand),))
        if isinstance(node, ast.Quantifier):
            listed = self.expr(node.iterable)
            self.locals.append(node.var.name)
            try:
                body = self.expr(node.body)
            finally:
                self.locals.pop()
            return (node.func.name, node.var.name, (listed, body))
        if isinstance(node, ast.Conditional):
            return (
                "cond",
                None,
                (self.expr(node.cond), self.expr(node.then), self.expr(node.other)),
            )
        raise AssertionError(f"cannot lower {type(node).__name__}")  # Invalid never gets here

    def constant(self, node: ast.Expr) -> Any:
        """The JSON value of a default (typecheck made sure it is a constant)."""
        if isinstance(node, ast.Literal_):
            return node.value
        if isinstance(node, ast.Name):
            return node.name
        if isinstance(node, ast.Attribute):
            return node.name.name
        if isinstance(node, ast.Unary):
            return -self.constant(node.operand)
        if isinstance(node, ast.ListLit):
            return [self.constant(item) for item in node.items]
        if isinstance(node, ast.MapLit):
            return {self.constant(k): self.constant(v) for k, v in node.entries}
        raise AssertionError(f"not a constant: {type(node).__name__}")

    def actions(self, actions: tuple[ast.Action, ...]) -> tuple[ir.Action, ...]:
        lowered: list[ir.Action] = []
        for action in actions:
            if isinstance(action, ast.Assign):
                op = _ASSIGN_OPS[action.op]
                target = tuple([i.name for i in action.target])
                lowered.append(_new(ir.Action, op=op, target=target, value=self.expr(action.value)))
            elif isinstance(action, ast.PutAction):
                lowered.append(
                    _new(
                        ir.Action,
                        op="put",
                        target=tuple([i.name for i in action.target]),
                        key=self.expr(action.key),
                        value=self.expr(action.value),
                    )
                )
            elif isinstance(action, ast.ActionCall) and action.func.name == "delete":
                path, key = action.args
                lowered.append(
                    _new(ir.Action, op="delete", target=_path(path), key=self.expr(key), value=None)
                )
            elif isinstance(action, ast.ActionCall):
                path, item = action.args
                lowered.append(
                    _new(
                        ir.Action,
                        op=action.func.name,
                        target=_path(path),
                        value=self.expr(item),
                    )
                )
            else:
                lowered.append(self.v2_action(action))
        return tuple(lowered)

    def v2_action(
        self,
        action: ast.IfAction
        | ast.RaiseAction
        | ast.EmitAction
        | ast.ForAction
        | ast.SendAction
        | ast.CancelAction,
    ) -> ir.Action:
        """`if`, `raise`, `emit` and `for` (IR version 2); `send` and `cancel` (version 4)."""
        if isinstance(action, ast.SendAction):
            return self.send(action) if action.to is None else self.message(action)
        if isinstance(action, ast.CancelAction):
            return _new(ir.Action, op="cancel", key=self.expr(action.id))
        if isinstance(action, ast.ForAction):
            # The body is the loop's one branch, without a guard. A loop whose item is not a
            # context field is `each`: its item and index are local to the body.
            local = action.item.name not in self.symbols.context
            names = [action.item.name] + ([action.index.name] if action.index else [])
            listed = self.expr(action.iterable)
            if local:
                self.locals += names
            try:
                body = _new(ir.Branch, guard=None, actions=self.actions(action.actions))
            finally:
                if local:
                    del self.locals[-len(names) :]
            return _new(
                ir.Action,
                op="each" if local else "for",
                target=(action.item.name,),
                index=action.index.name if action.index is not None else None,
                value=listed,
                branches=(body,),
            )
        if isinstance(action, ast.IfAction):
            branches = tuple(
                _new(
                    ir.Branch,
                    guard=self.expr(b.guard) if b.guard is not None else None,
                    actions=self.actions(b.actions),
                )
                for b in action.branches
            )
            return _new(ir.Action, op="if", branches=branches)
        if isinstance(action, ast.RaiseAction):
            value = self.payload(action.payload, {})
            return _new(ir.Action, op="raise", event=action.event.name, value=value)
        # An effect's payload is complete in the IR (defaults filled in, a missing optional
        # field none), so the runtime only evaluates it: the host always gets every field.
        params = self.symbols.effects[action.effect.name].params
        value = self.payload(action.payload, params)
        return _new(ir.Action, op="emit", event=action.effect.name, value=value)

    def payload(self, given: ast.Payload, fill: dict[str, FieldInfo]) -> ir.Expr | None:
        """The `map` expression of a payload, with the fields of `fill` not given added (their
        default, or none); None for an empty one."""
        parts: list[ir.Expr] = []
        written = {field.name for field, _ in given}
        for field, value in given:
            parts += [self.expr(ast.Literal_(field.name, "str", field.span)), self.expr(value)]
        for name, info in fill.items():
            if name not in written:
                default = info.decl.default
                key = _new(ir.Expr, op="lit", value=name)
                lit = self.constant(default) if default is not None else None
                parts += [key, _new(ir.Expr, op="lit", value=lit)]
        if not parts:
            return None
        return _new(ir.Expr, op="map", args=tuple(parts))

    def send(self, action: ast.SendAction) -> ir.Action:
        """`send E(...) after DELAY [as ID]`: the payload as `raise` has it, the delay in
        milliseconds (a literal for a written duration), the id in `key` (null: none)."""
        if action.delay is not None:
            delay = self.delay(action.delay)
        else:
            assert action.after is not None
            delay = _new(ir.Expr, op="lit", value=action.after.milliseconds)
        return _new(
            ir.Action,
            op="send",
            event=action.event.name,
            value=self.payload(action.payload, {}),
            delay=delay,
            key=self.expr(action.id) if action.id is not None else None,
        )

    def message(self, action: ast.SendAction) -> ir.Action:
        """`send E(...) to parent|ID`: the payload as `raise` has it, the receiver in `to`."""
        assert action.to is not None
        value = self.payload(action.payload, {})
        return _new(ir.Action, op="send", event=action.event.name, value=value, to=action.to.name)

    def invoke(self, invoke: ast.Invoke) -> ir.Invoke:
        """An `invoke`: its arguments as a `map` expression over the child's context fields
        (a fan-out's item and index read as locals), its join as a count (null: all)."""
        names = [n.name for n in (invoke.item, invoke.index) if n is not None]
        each = self.expr(invoke.each) if invoke.each is not None else None
        self.locals += names
        try:
            args = self.payload(invoke.args, {})
        finally:
            del self.locals[len(self.locals) - len(names) :]
        span = invoke.span
        return _new(
            ir.Invoke,
            id=invoke.id.name,
            flow=invoke.flow.name,
            input=args,
            each=each,
            item=invoke.item.name if invoke.item is not None else None,
            index=invoke.index.name if invoke.index is not None else None,
            join=_join_count(invoke.join),
            forward=invoke.forward,
            finalize=self.actions(invoke.finalize),
            id_target=tuple(i.name for i in invoke.into),
            line=span.line,
            column=span.column,
        )

    def delay(self, delay: ast.ComputedDelay) -> ir.Expr:
        """A computed delay in milliseconds: the expression times its unit."""
        value = self.expr(delay.expr)
        if delay.unit_ms == 1:
            return value
        unit = _new(ir.Expr, op="lit", value=delay.unit_ms)
        return _new(ir.Expr, op="*", args=(value, unit))

    # ---- declarations ------------------------------------------------------------------
    def field(self, info: FieldInfo) -> ir.FieldDef:
        default = info.decl.default
        optional = info.ref.kind == "optional"
        return _new(
            ir.FieldDef,
            name=info.name,
            type=info.ref,
            required=default is None and not optional,
            default=self.constant(default) if default is not None else None,
            input=any(m.name == "input" for m in info.decl.marks),
            hidden=any(m.name == "hidden" for m in info.decl.marks),
        )

    def flow(self, *, hashed: bool = True) -> ir.CompiledFlow:
        symbols = self.symbols
        assert symbols.flow is not None and symbols.initial is not None
        where = self.source_map
        where.events = {name: info.decl.name.span for name, info in symbols.events.items()}
        where.enums = {name: decl.name.span for name, decl in symbols.enums.items()}
        where.records = {name: decl.name.span for name, decl in symbols.record_decls.items()}
        where.context = {name: info.decl.name.span for name, info in symbols.context.items()}
        states: list[ir.State] = []
        transitions: list[ir.Transition] = []
        for node in symbols.nodes.values():
            if isinstance(node.decl, ast.HistoryDecl):
                states.append(self.history(node))
                continue
            decl = symbols.states[node.name]
            states.append(self.state(decl, node))
            for rule in decl.rules:
                transitions.append(
                    self.transition(rule, decl, len(transitions), inherited=False, source=node.name)
                )
            if decl.has("final") or decl.has("choice") or node.parent is not None:
                continue
            for rule in symbols.global_rules:
                transitions.append(
                    self.transition(rule, decl, len(transitions), inherited=True, source=node.name)
                )
        flow = _new(
            ir.CompiledFlow,
            name=symbols.flow.name.name,
            title=symbols.flow.title.value if symbols.flow.title else None,
            version=symbols.version.number if symbols.version else 1,
            enums=tuple(
                _new(ir.EnumDef, name=name, members=tuple(m.name for m in decl.members))
                for name, decl in symbols.enums.items()
            ),
            records=tuple(
                _new(ir.RecordDef, name=name, fields=tuple(self.field(f) for f in fields.values()))
                for name, fields in symbols.records.items()
            ),
            context=tuple(self.field(f) for f in symbols.context.values()),
            events=tuple(
                _new(
                    ir.EventDef,
                    name=name,
                    fields=tuple(self.field(p) for p in info.params.values()),
                    requires=tuple(
                        _new(
                            ir.Requirement,
                            guard=self.expr(req.guard),
                            code=req.code.name,
                            message=req.message.value,
                            data=self.expr(req.data) if req.data is not None else None,
                        )
                        for req in info.decl.requires
                    ),
                    internal=info.decl.internal is not None,
                )
                # the `done.state` events that carry done data are declared with its fields
                for name, info in (*symbols.events.items(), *symbols.done_payloads.items())
            ),
            states=tuple(states),
            transitions=tuple(transitions),
            initial=symbols.initial,
            messages={k: v.text.value for k, v in symbols.messages.items()},
            journals=tuple(
                _new(ir.Journal, name=k, template=v.text.value) for k, v in symbols.journals.items()
            ),
            templates={k: v.text.value for k, v in symbols.templates.items()},
            migrations=tuple(
                self.migration(symbols.migrations[n]) for n in sorted(symbols.migrations)
            ),
            invariants=tuple(
                _new(ir.Invariant, name=name, expr=self.expr(decl.expr))
                for name, decl in symbols.invariants.items()
            ),
            effects=tuple(
                _new(
                    ir.EventDef,
                    name=name,
                    fields=tuple(self.field(p) for p in info.params.values()),
                )
                for name, info in symbols.effects.items()
            ),
            children={name: child.flow for name, child in symbols.children.items()},
        )
        where.templates = template_spans(symbols)
        flow = flow.model_copy(
            update={"lowered_templates": lowered_templates(template_sources(flow))}
        )
        return flow.with_hash() if hashed else flow

    def migration(self, decl: ast.MigrateDecl) -> ir.Migration:
        states: dict[str, str] = {}
        rename: dict[str, str] = {}
        drop: list[str] = []
        for item in decl.items:
            if isinstance(item, ast.MigrateDrop):
                drop.extend(n.name for n in item.names)
            elif item.kind == "state":
                # resolve checked that the new name names one state; written as its IR name
                # or as a unique path suffix
                (new,) = self.symbols.state_candidates(item.new.name)
                states[item.old.name] = new
            else:
                rename[item.old.name] = item.new.name
        return _new(
            ir.Migration,
            from_version=decl.from_version,
            states=states,
            rename=rename,
            drop=tuple(sorted(drop)),
        )

    def history(self, node: StateNode) -> ir.State:
        decl = node.decl
        assert isinstance(decl, ast.HistoryDecl)
        self.source_map.states[node.name] = decl.name.span
        return _new(
            ir.State,
            name=node.name,
            kind="history",
            parent=node.parent,
            history="deep" if decl.deep else "shallow",
            # resolve checked that the default names one state (E130, E104, E135)
            default=self.symbols.state_candidates(decl.default.name)[0]
            if decl.default is not None
            else None,
            initial_actions=self.actions(decl.actions),
            line=decl.name.span.line,
            column=decl.name.span.column,
        )

    def state(self, decl: ast.StateDecl, node: StateNode) -> ir.State:
        kind = node.kind
        self.source_map.states[node.name] = decl.name.span
        meta: dict[str, Any] = {}
        for meta_decl in decl.metas:
            meta.update(meta_decl.value)
        entry: list[ir.Action] = []
        exit_: list[ir.Action] = []
        for block in decl.blocks:
            (entry if block.when == "entry" else exit_).extend(self.actions(block.actions))
        return _new(
            ir.State,
            name=node.name,
            kind=kind,
            parent=node.parent,
            initial=decl.has("initial"),
            title=decl.title.value if decl.title else None,
            meta=meta,
            entry=tuple(entry),
            exit=tuple(exit_),
            initial_targets=self.symbols.initial_targets.get(node.name, ()),
            done_data=self.expr(decl.done_data) if decl.done_data is not None else None,
            initial_actions=self.actions(decl.initial_rules[0].actions)
            if decl.initial_rules
            else (),
            invokes=tuple(self.invoke(i) for i in decl.invokes),
            unhandled="ignore" if node.name in self.symbols.ignoring else "refuse",
            line=decl.name.span.line,
            column=decl.name.span.column,
        )

    def transition(
        self, rule: ast.Rule, state: ast.StateDecl, index: int, *, inherited: bool, source: str
    ) -> ir.Transition:
        self.source_map.transitions[index] = rule.span
        target: str | None = None
        if rule.target is not None:
            target = source if rule.target.name == "self" else rule.target.name
        if rule.reject_code is not None:
            kind = "reject"
        elif rule.kind == "on":
            kind = "event"
        elif rule.kind == "after":
            kind = "timer"
        elif rule.kind == "else":
            kind = "else"
        elif rule.kind == "always":
            kind = "always"
        else:
            kind = "choice" if state.has("choice") else "direct"
        return _new(
            ir.Transition,
            index=index,
            source=source,
            target=target,
            kind=kind,
            event=rule.event.name if rule.event else None,
            guard=self.expr(rule.guard) if rule.guard is not None else None,
            actions=self.actions(rule.actions),
            back=rule.back,
            reenter=rule.reenter,
            after_ms=rule.after.milliseconds if rule.after else None,
            after_expr=self.delay(rule.delay) if rule.delay is not None else None,
            code=rule.reject_code.name if rule.reject_code else None,
            message=rule.reject_message.value if rule.reject_message else None,
            data=self.expr(rule.reject_data) if rule.reject_data is not None else None,
            inherited=inherited,
            line=rule.span.line,
            column=rule.span.column,
        )


def _join_count(join: ast.Ident | None) -> int | None:
    """`join all` (or none written) is null, `join any` 1, `join N` N."""
    if join is None or join.name == "all":
        return None
    return 1 if join.name == "any" else int(join.name)


def _path(expr: ast.Expr) -> tuple[str, ...]:
    if isinstance(expr, ast.Name):
        return (expr.name,)
    if isinstance(expr, ast.Attribute):
        return (*_path(expr.obj), expr.name.name)
    raise AssertionError("typecheck guarantees a field path")


def lower(symbols: Symbols) -> ir.CompiledFlow:
    return Lowerer(symbols).flow()


def lower_mapped(symbols: Symbols, *, hashed: bool = True) -> tuple[ir.CompiledFlow, SourceMap]:
    """The IR and where each of its parts was written. Without `hashed` the IR's `hash` is
    left empty: an editor wanting only diagnostics need not serialise the whole flow."""
    lowerer = Lowerer(symbols)
    flow = lowerer.flow(hashed=hashed)
    return flow, lowerer.source_map
