"""A compiled flow (IR) to SCXML with the Python datamodel.

What SCXML has no word for is kept in the `flowc` namespace (`FLOWC_NS`), which SCXML
processors ignore: the types of context fields (`flowc:type` on `<data>`) and the declared
events with their payload fields (`<flowc:event>`), so that importing the export gives back the
same declarations: record types too (`<flowc:record>`), whose values are dicts in the
datamodel. What cannot be expressed at all (computed timer delays, functions and actions with
no Python form) is refused with E420 naming the rule or declaration.

Timers: `after D -> T` in state S becomes `<send event="flowc.timer.S.N" delay="Dms"
id="flowc.timer.S.N"/>` on entry, a `<cancel>` on exit and a transition on that event, which
is how SCXML charts write timeouts.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from xml.sax.saxutils import quoteattr

from flowc.compiler.diagnostics import Diagnostic
from flowc.compiler.emit.expr_text import literal_text
from flowc.compiler.scxml.importer import (
    CANCEL_EFFECT,
    DIRECT_PREFIX,
    HOST_TARGET,
    LOG_EFFECT,
    SEND_EFFECT,
)
from flowc.compiler.scxml.reader import FLOWC_NS, SCXML_NS
from flowc.compiler.source import NO_SPAN, Span
from flowc.compiler.sourcemap import SourceMap
from flowc.runtime.builtins import BUILTINS
from flowc.runtime.model import (
    Action,
    CompiledFlow,
    Expr,
    FieldDef,
    Invoke,
    State,
    Transition,
    TypeRef,
)
from flowc.runtime.statetree import StateTree

#: flowc's string functions as the Python methods that compute them.
_SCXML_EFFECTS = frozenset({SEND_EFFECT, CANCEL_EFFECT, LOG_EFFECT})

#: Expressions whose Python text needs no parentheses inside another.
_ATOMIC = frozenset(
    {"lit", "ctx", "local", "event", "index", "attr", "meta", "call", "list", "map"}
)

_PY_BINARY = {
    "and",
    "or",
    "==",
    "!=",
    "<",
    "<=",
    ">",
    ">=",
    "in",
    "not in",
    "+",
    "-",
    "*",
    "/",
    "%",
}


@dataclass
class ExportResult:
    text: str | None
    diagnostics: list[Diagnostic] = field(default_factory=list)


class _Refused(Exception):
    """What cannot be exported, and where the declaration, rule or state it is about was
    written (None: not known, the first line of the file)."""

    def __init__(self, message: str, span: Span | None = None) -> None:
        super().__init__(message)
        self.span = span


def type_text(ty: TypeRef) -> str:
    if ty.kind in ("bool", "int", "float", "str", "json"):
        return ty.kind
    if ty.kind == "enum":
        return "str"  # an enum's members are strings at run time, as SCXML sees them
    if ty.kind == "record" and ty.name:
        return ty.name  # declared by a `<flowc:record>`; its values are dicts in the datamodel
    if ty.kind == "list" and ty.item is not None:
        return f"list[{type_text(ty.item)}]"
    if ty.kind == "map" and ty.item is not None:
        return f"map[str, {type_text(ty.item)}]"
    if ty.kind == "optional" and ty.item is not None:
        return f"{type_text(ty.item)}?"
    raise _Refused(f"the type `{ty.name or ty.kind}` has no SCXML form")


#: The state whose rules are being written, when it is a leaf: there `state.name` and the
#: state's `meta` values are constants.
_HERE: ContextVar[State | None] = ContextVar("scxml_export_state", default=None)


def python_text(expr: Expr) -> str:
    """Python-datamodel text of an IR expression, fully parenthesised where nested."""
    if expr.op == "call":
        return _call_text(expr)
    for form in (_here_text, _simple_text, _composite_text):
        text = form(expr)
        if text is not None:
            return text
    raise _Refused(f"the expression `{expr.op}` has no Python-datamodel form")


def _here_text(expr: Expr) -> str | None:
    """`state.name` and `meta.KEY` in a leaf, where they are constants (None elsewhere)."""
    here = _HERE.get()
    if here is None:
        return None
    if expr.op == "state" and expr.value == "name":
        return repr(here.name)
    if expr.op == "meta":
        return repr(here.meta.get(str(expr.value)))
    return None


def _simple_text(expr: Expr) -> str | None:
    """A literal, a variable, a payload field, an element or a record's field."""
    op, args = expr.op, expr.args
    if op == "lit":
        return repr(expr.value)  # JSON values: None, bools, numbers, strings, lists, dicts
    if op == "ctx":
        return "_sessionid" if expr.value == "sessionid" else str(expr.value)
    if op == "local" and isinstance(expr.value, str) and expr.value.isidentifier():
        return expr.value  # a `for` variable: a datamodel variable `<foreach>` declares
    if op == "event":
        return f"_event.data[{expr.value!r}]"
    if op == "index":
        return f"{_py(args[0])}[{python_text(args[1])}]"
    if op == "attr" and len(args) == 1:
        # A record is a dict in the Python datamodel: its field is read by key. The importer
        # turns a string key on a value of a declared record type back into `.field`.
        return f"{_py(args[0])}[{str(expr.value)!r}]"
    return None


def _composite_text(expr: Expr) -> str | None:
    """A list or map display, or an operator applied."""
    op, args = expr.op, expr.args
    if op == "list":
        return "[" + ", ".join(python_text(a) for a in args) + "]"
    if op == "map":
        pairs = zip(args[::2], args[1::2], strict=True)
        return "{" + ", ".join(f"{python_text(k)}: {python_text(v)}" for k, v in pairs) + "}"
    if op == "not":
        return f"not {_py(args[0])}"
    if op == "neg":
        return f"-{_py(args[0])}"
    if op in _PY_BINARY and len(args) == 2:
        return f"{_py(args[0])} {op} {_py(args[1])}"
    return None


def _call_text(expr: Expr) -> str:
    """A function call, as the Python expression that computes it."""
    name, args = expr.value, expr.args
    builtin = BUILTINS.get(str(name))
    if builtin is None or builtin.python is None or not builtin.least <= len(args) <= builtin.most:
        raise _Refused(f"the function `{name}` has no Python-datamodel form")
    # An argument standing alone (`len(x)`) needs no parentheses; one a method is called on
    # or an operand (`(a + b).lower()`) does.
    whole = ", ".join(python_text(a) for a in args)
    return builtin.python.format(*(_py(a) for a in args), args=whole)


def _py(expr: Expr) -> str:
    text = python_text(expr)
    return text if expr.op in _ATOMIC else f"({text})"


def export_scxml(
    flow: CompiledFlow, path: str = "<flow>", where: SourceMap | None = None
) -> ExportResult:
    """`flow` as SCXML text, or the diagnostic saying what cannot be exported. `where` (the
    source map of compiling it) puts the caret on the declaration or rule refused; without
    it, only rules and states have a position (the IR keeps theirs)."""
    try:
        return ExportResult(_Writer(flow, where or SourceMap.from_ir(flow)).document())
    except _Refused as refused:
        where_ = refused.span if refused.span is not None else Span(1, 1, 1, 2)
        diag = Diagnostic.make(
            "E420",
            f"cannot export to SCXML: {refused}",
            where_,
            help="SCXML has no equivalent; see docs/scxml.md (exporting)",
        )
        return ExportResult(
            None, [Diagnostic(diag.code, diag.message, diag.span, path, diag.help, diag.severity)]
        )


def _fields_text(fields: tuple[FieldDef, ...]) -> str:
    """`name: type; name: type = default`: the fields of an event or record, as the importer
    reads them back."""
    return "; ".join(
        f"{f.name}: {type_text(f.type)}" + ("" if f.required else f" = {literal_text(f.default)}")
        for f in fields
    )


def _location(target: tuple[str, ...]) -> str:
    """An assignment's location: a record field is a key of the dict its variable holds
    (`order['total']`)."""
    return target[0] + "".join(f"[{part!r}]" for part in target[1:])


@contextmanager
def _at(span: Span) -> Iterator[None]:
    """Refusals inside without a position of their own get `span` (that of the state, rule or
    declaration being written): the innermost one known wins."""
    try:
        yield
    except _Refused as refused:
        if refused.span is None and span != NO_SPAN:
            refused.span = span
        raise


class _Writer:
    def __init__(self, flow: CompiledFlow, where: SourceMap) -> None:
        self.flow = flow
        self.where = where
        self.lines: list[str] = []
        #: which state holds which (leniently: hand-edited IR is exported as well as it can be)
        self.tree = StateTree.of_states(flow.states, lenient=True)
        self.states: dict[str, State] = {}
        for state in flow.states:
            self.states.setdefault(state.name, state)
        #: each state's rules, and its timer rules, in the IR's order
        self.rules: dict[str, list[Transition]] = {}
        self.timers: dict[str, list[Transition]] = {}
        for t in flow.transitions:
            self.rules.setdefault(t.source, []).append(t)
            if t.kind == "timer":
                self.timers.setdefault(t.source, []).append(t)

    def document(self) -> str:
        flow = self.flow
        self.lines.append('<?xml version="1.0" encoding="UTF-8"?>')
        self.lines.append(
            f'<scxml xmlns="{SCXML_NS}" xmlns:flowc="{FLOWC_NS}" version="1.0" '
            f'datamodel="python" name={quoteattr(flow.name)} initial={quoteattr(flow.initial)}'
            + (' flowc:unhandled="refuse"' if self.refuses() else "")
            + (f" flowc:title={quoteattr(flow.title)}" if flow.title else "")
            + ">"
        )
        for record in flow.records:
            with _at(self.where.records.get(record.name, NO_SPAN)):
                fields = _fields_text(record.fields)
            self.lines.append(
                f"  <flowc:record name={quoteattr(record.name)} fields={quoteattr(fields)}/>"
            )
        for event in flow.events:
            with _at(self.where.events.get(event.name, NO_SPAN)):
                fields = _fields_text(event.fields)
            attr = f" fields={quoteattr(fields)}" if fields else ""
            attr += ' flowc:internal="true"' if event.internal else ""
            self.lines.append(f"  <flowc:event name={quoteattr(event.name)}{attr}/>")
        for effect in flow.effects:
            if effect.name in _SCXML_EFFECTS:
                continue
            fields = "; ".join(f"{f.name}: {type_text(f.type)}" for f in effect.fields)
            attr = f" fields={quoteattr(fields)}" if fields else ""
            self.lines.append(f"  <flowc:effect name={quoteattr(effect.name)}{attr}/>")
        if flow.context:
            self.lines.append("  <datamodel>")
            for f in flow.context:
                if f.name == "sessionid":
                    continue
                expr = (
                    ""
                    if f.required and f.default is None
                    else f" expr={quoteattr(repr(f.default))}"
                )
                with _at(self.where.context.get(f.name, NO_SPAN)):
                    declared = quoteattr(type_text(f.type))
                self.lines.append(f"    <data id={quoteattr(f.name)}{expr} flowc:type={declared}/>")
            self.lines.append("  </datamodel>")
        for state in self.children(None):
            self.state(state, "  ")
        self.lines.append("</scxml>")
        return "\n".join(self.lines) + "\n"

    def refuses(self) -> bool:
        """Whether the flow refuses unhandled events (SCXML ignores them); per-state
        policies other than the flow's are not kept. A final state takes no event either way."""
        return any(s.unhandled == "refuse" for s in self.flow.states if s.kind != "final")

    def children(self, name: str | None) -> list[State]:
        return [self.states[c] for c in self.tree.children(name)]

    def state(self, state: State, pad: str) -> None:
        leaf = not self.tree.children(state.name)
        here = _HERE.set(state if leaf else None)
        try:
            with _at(self.where.state(state.name)):
                self.state_body(state, pad)
        finally:
            _HERE.reset(here)

    def state_body(self, state: State, pad: str) -> None:
        if state.kind == "history":
            self.history(state, pad)
            return
        tag = {"final": "final", "parallel": "parallel"}.get(state.kind, "state")
        kids = self.children(state.name)
        attrs = f" id={quoteattr(state.name)}"
        initial = [k.name for k in kids if k.initial]
        if tag == "state" and initial and not (state.initial_targets or state.initial_actions):
            attrs += f" initial={quoteattr(initial[0])}"
        start = len(self.lines)
        self.lines.append(f"{pad}<{tag}{attrs}>")
        inner = pad + "  "
        if state.initial_targets or state.initial_actions:
            # an initial rule: SCXML's <initial> transition, with its targets and actions
            targets = " ".join(state.initial_targets or initial[:1])
            self.lines.append(f"{inner}<initial>")
            self.lines.append(f"{inner}  <transition target={quoteattr(targets)}>")
            self.lines.extend(f"{inner}    {self.action(a)}" for a in state.initial_actions)
            self.lines.append(f"{inner}  </transition>")
            self.lines.append(f"{inner}</initial>")
        self.entry_and_exit(state, inner)
        for invoke in state.invokes:
            self.invoke(invoke, inner)
        if state.done_data is not None:
            params = self.params(state.done_data)
            self.lines.append(f"{inner}<donedata>{params}</donedata>")
        self.requirements(state, inner)
        for t in self.rules.get(state.name, ()):
            with _at(self.where.transition(t.index)):
                self.transition(t, inner)
        for kid in kids:
            self.state(kid, inner)
        if len(self.lines) == start + 1:
            self.lines[start] = f"{pad}<{tag}{attrs}/>"
        else:
            self.lines.append(f"{pad}</{tag}>")

    def invoke(self, invoke: Invoke, pad: str) -> None:
        """`invoke FLOW(ARGS) as ID [into F] [forward] [finalize do ...]`: an `<invoke>` of
        the child flow exported inline (`<content><scxml>`), its arguments as `<param>`s; the
        flow's name is kept as `flowc:flow` (docs/scxml.md). A fan-out has no SCXML form."""
        if invoke.each is not None:
            where = Span(invoke.line, invoke.column, invoke.line, invoke.column + 6)
            raise _Refused(
                f"the fan-out invoke `{invoke.id}` (`for ... in`)", where if invoke.line else None
            )
        child = self.flow.children.get(invoke.flow)
        if child is None:
            raise _Refused(f"the invoke `{invoke.id}` of a flow the IR does not hold")
        attrs = f' id={quoteattr(invoke.id)} type="scxml" flowc:flow={quoteattr(invoke.flow)}'
        if invoke.id_target:
            attrs += f" idlocation={quoteattr(_location(invoke.id_target))}"
        if invoke.forward:
            attrs += ' autoforward="true"'
        self.lines.append(f"{pad}<invoke{attrs}>")
        if invoke.input is not None:
            self.lines.append(pad + "  " + self.params(invoke.input))
        self.lines.append(f"{pad}  <content>")
        text = _Writer(child, SourceMap.from_ir(child)).document()
        self.lines.extend(f"{pad}    {line}" for line in text.splitlines()[1:])
        self.lines.append(f"{pad}  </content>")
        self.block("finalize", [self.action(a) for a in invoke.finalize], pad + "  ")
        self.lines.append(f"{pad}</invoke>")

    def history(self, state: State, pad: str) -> None:
        self.lines.append(
            f'{pad}<history id={quoteattr(state.name)} type="{state.history or "shallow"}">'
        )
        if state.default:
            target = f" target={quoteattr(state.default)}"
            self.transition_element(target, state.initial_actions, pad + "  ")
        self.lines.append(f"{pad}</history>")

    def transition_element(self, attrs: str, actions: tuple[Action, ...], pad: str) -> None:
        """`<transition ATTRS>` with `actions` inside, or `<transition ATTRS/>` without."""
        if not actions:
            self.lines.append(f"{pad}<transition{attrs}/>")
            return
        self.lines.append(f"{pad}<transition{attrs}>")
        self.lines.extend(f"{pad}  {self.action(a)}" for a in actions)
        self.lines.append(f"{pad}</transition>")

    def entry_and_exit(self, state: State, pad: str) -> None:
        """`<onentry>` and `<onexit>`: the state's actions, and its timers, each a `<send>`
        on entry and a `<cancel>` on exit."""
        timers = self.timers.get(state.name, [])
        entry = [self.action(a) for a in state.entry]
        for t in timers:
            if t.after_ms is None:
                raise _Refused(
                    f"the computed delay of a timer of `{state.name}`",
                    self.where.transition(t.index),
                )
            tid = quoteattr(f"flowc.timer.{state.name}.{t.index}")
            entry.append(f'<send event={tid} id={tid} delay="{t.after_ms}ms"/>')
        exit_ = [self.action(a) for a in state.exit]
        exit_.extend(
            f"<cancel sendid={quoteattr(f'flowc.timer.{state.name}.{t.index}')}/>" for t in timers
        )
        self.block("onentry", entry, pad)
        self.block("onexit", exit_, pad)

    @staticmethod
    def refusal(code: str | None, message: str | None, data: Expr | None) -> str:
        """The flowc attributes of a transition that stands for a refusal."""
        attrs = f" flowc:reject={quoteattr(code or '')} flowc:message={quoteattr(message or '')}"
        if data is not None:
            attrs += f" flowc:data={quoteattr(python_text(data))}"
        return attrs

    def requirements(self, state: State, pad: str) -> None:
        """An event's `require` clauses, in each leaf where it or an enclosing state has rules
        for the event: refusals tried before any of those rules (`cond` is the clause's
        negation). In every leaf, so that no region of a parallel state takes the event."""
        if self.tree.children(state.name):
            return
        holders = (state.name, *self.tree.ancestors(state.name))
        handled = {t.event for holder in holders for t in self.rules.get(holder, ())}
        for event in self.flow.events:
            if event.name not in handled:
                continue
            for clause in event.requires:
                cond = quoteattr(f"not ({python_text(clause.guard)})")
                refusal = self.refusal(clause.code, clause.message, clause.data)
                self.lines.append(
                    f"{pad}<transition event={quoteattr(event.name)} cond={cond}{refusal}/>"
                )

    def block(self, tag: str, actions: list[str], pad: str) -> None:
        if actions:
            self.lines.append(f"{pad}<{tag}>")
            self.lines.extend(f"{pad}  {a}" for a in actions)
            self.lines.append(f"{pad}</{tag}>")

    def transition(self, t: Transition, pad: str) -> None:
        attrs = ""
        if t.kind == "event":
            attrs += f" event={quoteattr(t.event or '')}"
        elif t.kind == "timer":
            attrs += f" event={quoteattr(f'flowc.timer.{t.source}.{t.index}')}"
        elif t.kind == "direct":
            # The host asks for the target by name: an event named after it, marked so that
            # the importer gives the direct rule back.
            attrs += f" event={quoteattr(f'{DIRECT_PREFIX}{t.target}')}"
            attrs += ' flowc:direct="true"'
        elif t.kind == "reject":
            # A targetless transition consumes the event and changes nothing, as a refusal
            # does; the code and message are kept for the importer.
            attrs += f" event={quoteattr(t.event or '')}"
            attrs += self.refusal(t.code, t.message, t.data)
        guard = t.guard
        if t.kind == "else":
            guard = None
        if guard is not None:
            attrs += f" cond={quoteattr(python_text(guard))}"
        if t.target is not None and not (t.target == t.source and not t.reenter):
            attrs += f" target={quoteattr(t.target)}"
        if t.target == t.source and not t.reenter:
            attrs += ' type="internal"'
        self.transition_element(attrs, t.actions, pad)

    def action(self, a: Action) -> str:
        if a.op in ("set", "add", "sub", "append") and a.value is not None:
            return _assign(a, a.value)
        if a.op == "raise":
            params = self.params(a.value)
            if not params:
                return f"<raise event={quoteattr(a.event or '')}/>"
            return f'<send event={quoteattr(a.event or "")} target="#_internal">{params}</send>'
        if a.op == "emit":
            return self.effect(a)
        if a.op == "send" and a.to is not None:
            # a message: to the parent session, or to the children of an invoke
            target = quoteattr("#_parent" if a.to == "parent" else f"#_{a.to}")
            params = self.params(a.value)
            return f"<send event={quoteattr(a.event or '')} target={target}>{params}</send>"
        if a.op == "send":
            return self.scheduled_send(a)
        if a.op == "cancel" and a.key is not None:
            if a.key.op == "lit":
                return f"<cancel sendid={quoteattr(str(a.key.value))}/>"
            return f"<cancel sendidexpr={quoteattr(python_text(a.key))}/>"
        if a.op == "if":
            return self.conditional(a)
        if a.op in ("for", "each") and a.value is not None and a.branches:
            index = f" index={quoteattr(a.index)}" if a.index else ""
            body = "".join(self.action(x) for x in a.branches[0].actions)
            head = f"<foreach array={quoteattr(python_text(a.value))} item={quoteattr(a.target[0])}"
            return f"{head}{index}>{body}</foreach>"
        raise _Refused(f"the action `{a.op}`")

    def scheduled_send(self, a: Action) -> str:
        """`send E(...) after D [as ID]`: a `<send>` to the session (SCXML's external queue)
        with a constant delay and id; the shortest delay is written as none."""
        delay, key = a.delay, a.key
        if delay is None or delay.op != "lit" or not isinstance(delay.value, int):
            raise _Refused("a scheduled `send` with a computed delay")
        if key is not None and key.op != "lit":
            raise _Refused("a scheduled `send` with a computed id")
        attrs = f" event={quoteattr(a.event or '')}"
        if key is not None:
            attrs += f" id={quoteattr(str(key.value))}"
        if delay.value > 1:
            attrs += f' delay="{delay.value}ms"'
        return f"<send{attrs}>{self.params(a.value)}</send>"

    def conditional(self, a: Action) -> str:
        """`<if>`, `<elseif>`, `<else>`: an `if` action's branches."""
        parts: list[str] = []
        for i, branch in enumerate(a.branches):
            if i == 0:
                guard = branch.guard or Expr(op="lit", value=True)
                parts.append(f"<if cond={quoteattr(python_text(guard))}>")
            elif branch.guard is None:
                parts.append("<else/>")
            else:
                parts.append(f"<elseif cond={quoteattr(python_text(branch.guard))}/>")
            parts.extend(self.action(x) for x in branch.actions)
        return "".join(parts) + "</if>"

    def params(self, value: Expr | None) -> str:
        if value is None:
            return ""
        if value.op != "map":
            raise _Refused("a payload that is not a literal map")
        out = []
        for k, v in zip(value.args[::2], value.args[1::2], strict=True):
            out.append(f"<param name={quoteattr(str(k.value))} expr={quoteattr(python_text(v))}/>")
        return "".join(out)

    def effect(self, a: Action) -> str:
        fields: dict[str, Expr] = {}
        if a.value is not None and a.value.op == "map":
            for k, v in zip(a.value.args[::2], a.value.args[1::2], strict=True):
                fields[str(k.value)] = v
        if a.event == SEND_EFFECT:
            return self.send(fields)
        if a.event == CANCEL_EFFECT and "id" in fields:
            return f"<cancel sendidexpr={quoteattr(python_text(fields['id']))}/>"
        if a.event == LOG_EFFECT:
            return _log(fields)
        # Any other effect is an event sent to the host, through the target the importer
        # reads back as `emit` (HOST_TARGET); an SCXML processor hands it to whatever I/O
        # processor the host registers under that name.
        params = self.params(a.value) if a.value is not None and a.value.op == "map" else ""
        if a.value is not None and a.value.op != "map":
            raise _Refused(f"the effect `{a.event}` with a payload that is not a literal map")
        name = quoteattr(a.event or "")
        return f"<send event={name} target={quoteattr(HOST_TARGET)}>{params}</send>"

    def send(self, fields: dict[str, Expr]) -> str:
        """The SCXML `<send>` an emit of `SEND_EFFECT` stands for (constant event and delay)."""
        event, delay, sid = fields.get("name"), fields.get("delay_ms"), fields.get("id")
        if event is None or event.op != "lit" or delay is None or delay.op != "lit":
            raise _Refused(f"`{SEND_EFFECT}` with a computed event or delay")
        attrs = f" event={quoteattr(str(event.value))}"
        if sid is not None and sid.op == "lit":
            attrs += f" id={quoteattr(str(sid.value))}"
        if delay.value:
            attrs += f' delay="{delay.value}ms"'
        data = fields.get("data")
        return f"<send{attrs}>{self.params(data)}</send>"


def _assign(a: Action, value: Expr) -> str:
    """`<assign>`: a `set`, `add`, `sub` or `append` action."""
    var = _location(a.target)
    if a.op == "append":
        text = f"{var} + [{python_text(value)}]"
    elif a.op == "set":
        text = python_text(value)
    else:
        text = f"{var} {'+' if a.op == 'add' else '-'} {_py(value)}"
    return f"<assign location={quoteattr(var)} expr={quoteattr(text)}/>"


def _log(fields: dict[str, Expr]) -> str:
    """The SCXML `<log>` an emit of `LOG_EFFECT` stands for."""
    label = fields.get("label")
    value = fields.get("value")
    attrs = f" label={quoteattr(str(label.value))}" if label is not None else ""
    if value is not None:
        attrs += f" expr={quoteattr(python_text(value))}"
    return f"<log{attrs}/>"
