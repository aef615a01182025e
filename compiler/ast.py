"""The AST: what the source says, with a span on every node, before any name is resolved.

Nodes are frozen, slotted dataclasses: cheap to build for 50,000-state flows and safe to share
between passes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from flowc.compiler.source import Span

JsonValue = None | bool | int | float | str | list["JsonValue"] | dict[str, "JsonValue"]


@dataclass(frozen=True, slots=True)
class Ident:
    name: str
    span: Span


@dataclass(frozen=True, slots=True)
class Text:
    """A string or triple-quoted string, already unescaped."""

    value: str
    span: Span


# ---- types ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TypeExpr:
    """`name`, `name[args]` or `name(lo..hi)`, optionally followed by `?`."""

    name: Ident
    args: tuple[TypeExpr, ...]
    optional: bool
    span: Span
    low: float | None = None
    high: float | None = None
    is_range: bool = False


# ---- expressions ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Name:
    name: str
    span: Span


@dataclass(frozen=True, slots=True)
class EventField:
    name: str
    span: Span


@dataclass(frozen=True, slots=True)
class StateField:
    name: str
    span: Span


@dataclass(frozen=True, slots=True)
class StateMeta:
    """`state.meta.KEY`: a meta value of the current state."""

    key: str
    span: Span


LiteralKind = Literal["int", "float", "str", "bool", "none"]


@dataclass(frozen=True, slots=True)
class Literal_:
    value: int | float | str | bool | None
    kind: LiteralKind
    span: Span


@dataclass(frozen=True, slots=True)
class ListLit:
    items: tuple[Expr, ...]
    span: Span


@dataclass(frozen=True, slots=True)
class MapLit:
    entries: tuple[tuple[Expr, Expr], ...]
    span: Span


@dataclass(frozen=True, slots=True)
class Attribute:
    obj: Expr
    name: Ident
    span: Span


@dataclass(frozen=True, slots=True)
class Subscript:
    obj: Expr
    index: Expr
    span: Span


@dataclass(frozen=True, slots=True)
class Call:
    func: Ident
    args: tuple[Expr, ...]
    span: Span


@dataclass(frozen=True, slots=True)
class Unary:
    op: Literal["not", "neg"]
    operand: Expr
    span: Span


@dataclass(frozen=True, slots=True)
class Binary:
    """Arithmetic, comparison, `in`/`not in` and the boolean `and`/`or`."""

    op: str
    left: Expr
    right: Expr
    span: Span


@dataclass(frozen=True, slots=True)
class Conditional:
    """`if(COND, THEN, ELSE)`: THEN when COND holds, else ELSE; only the one chosen is
    evaluated."""

    cond: Expr
    then: Expr
    other: Expr
    span: Span


@dataclass(frozen=True, slots=True)
class Quantifier:
    """`any(x in LIST: COND)`, also `all`, `count`, `sum`, `min`, `max`: BODY evaluated for
    each item of LIST, with `var` naming the item (a name local to BODY)."""

    func: Ident
    var: Ident
    iterable: Expr
    body: Expr
    span: Span


@dataclass(frozen=True, slots=True)
class Invalid:
    """Stands in for an expression already reported as malformed; checks stay silent on it."""

    span: Span


Expr = (
    Name
    | EventField
    | StateField
    | StateMeta
    | Literal_
    | ListLit
    | MapLit
    | Attribute
    | Subscript
    | Call
    | Unary
    | Binary
    | Conditional
    | Quantifier
    | Invalid
)


# ---- actions --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Assign:
    target: tuple[Ident, ...]
    op: Literal["=", "+=", "-="]
    value: Expr
    span: Span


@dataclass(frozen=True, slots=True)
class PutAction:
    """`xs[i] = v` / `m[k] = v`: one item of a context list or map field replaced (or, in a
    map, set)."""

    target: tuple[Ident, ...]
    key: Expr
    value: Expr
    span: Span


@dataclass(frozen=True, slots=True)
class ActionCall:
    func: Ident
    args: tuple[Expr, ...]
    span: Span


#: `raise EVENT(field: expr, ...)` / `emit EFFECT(field: expr, ...)`: the fields given
Payload = tuple[tuple[Ident, Expr], ...]


@dataclass(frozen=True, slots=True)
class RaiseAction:
    """`raise EVENT(field: expr, ...)`: an internal event, processed within the same step."""

    event: Ident
    payload: Payload
    span: Span


@dataclass(frozen=True, slots=True)
class EmitAction:
    """`emit EFFECT(field: expr, ...)`: an effect for the host, delivered after the commit."""

    effect: Ident
    payload: Payload
    span: Span


@dataclass(frozen=True, slots=True)
class IfBranch:
    """One arm of an `if` action; `guard` is None for the `else` arm (always last)."""

    guard: Expr | None
    actions: tuple[Action, ...]
    span: Span


@dataclass(frozen=True, slots=True)
class IfAction:
    """`if G { ... } elif G { ... } else { ... }`: the first arm whose guard holds runs."""

    branches: tuple[IfBranch, ...]
    span: Span


@dataclass(frozen=True, slots=True)
class ForAction:
    """`for item, i in LIST { ... }`: the actions once per item, with the context fields `item`
    (and `i`, its position) set to it first; `index` is None without `, i`."""

    item: Ident
    index: Ident | None
    iterable: Expr
    actions: tuple[Action, ...]
    span: Span


@dataclass(frozen=True, slots=True)
class SendAction:
    """`send EVENT(field: expr, ...) after DELAY [as ID]`: the event to this instance once the
    delay has passed (a constant `after`, or a `delay` computed when the step commits); `id`
    names it for `cancel` (a second send with the same id replaces the first)."""

    event: Ident
    payload: Payload
    after: Duration | None
    delay: ComputedDelay | None
    id: Expr | None
    span: Span
    #: `send E(...) to parent|ID`: a message to the parent flow or to the children of the
    #: invoke of that id, delivered after the step (without `after`: resolve refuses both)
    to: Ident | None = None


@dataclass(frozen=True, slots=True)
class CancelAction:
    """`cancel ID`: forget the pending scheduled event of that id (none: nothing happens)."""

    id: Expr
    span: Span


Action = (
    Assign
    | PutAction
    | ActionCall
    | RaiseAction
    | EmitAction
    | IfAction
    | ForAction
    | SendAction
    | CancelAction
)


# ---- declarations ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FlowDecl:
    name: Ident
    title: Text | None
    span: Span


@dataclass(frozen=True, slots=True)
class VersionDecl:
    number: int
    span: Span


@dataclass(frozen=True, slots=True)
class EnumDecl:
    name: Ident
    members: tuple[Ident, ...]
    span: Span


@dataclass(frozen=True, slots=True)
class FieldDecl:
    name: Ident
    type: TypeExpr
    default: Expr | None
    span: Span
    #: A context field's marks, in source order: `input` (a caller may set it at start),
    #: `hidden` (a model may not read it). Empty for record fields and parameters.
    marks: tuple[Ident, ...] = ()


@dataclass(frozen=True, slots=True)
class TypeDecl:
    name: Ident
    fields: tuple[FieldDecl, ...]
    span: Span


@dataclass(frozen=True, slots=True)
class ContextDecl:
    fields: tuple[FieldDecl, ...]
    span: Span


@dataclass(frozen=True, slots=True)
class Require:
    guard: Expr
    code: Ident
    message: Text
    span: Span
    #: `with {"key": expr, ...}`: the data the refusal carries
    data: Expr | None = None


@dataclass(frozen=True, slots=True)
class EventDecl:
    name: Ident
    params: tuple[FieldDecl, ...]
    requires: tuple[Require, ...]
    span: Span
    #: `internal event ...`: the keyword, when written (only the flow itself may send it)
    internal: Ident | None = None


@dataclass(frozen=True, slots=True)
class EffectDecl:
    """`effect NAME(params)`: an output event that actions `emit` for the host."""

    name: Ident
    params: tuple[FieldDecl, ...]
    span: Span


RuleKind = Literal["on", "direct", "else", "after", "always"]


@dataclass(frozen=True, slots=True)
class Duration:
    text: str
    milliseconds: int
    span: Span


@dataclass(frozen=True, slots=True)
class ComputedDelay:
    """`after EXPR UNIT`: a timer delay computed when the timer is armed; `unit_ms` is the
    unit in milliseconds (`ms` 1, `s` 1000, ...)."""

    expr: Expr
    unit: Ident
    unit_ms: int
    span: Span


@dataclass(frozen=True, slots=True)
class Rule:
    """One transition rule. `target` is None for `reject`; `Ident("self")` for `-> self`."""

    kind: RuleKind
    event: Ident | None
    guard: Expr | None
    target: Ident | None
    actions: tuple[Action, ...]
    back: bool
    after: Duration | None
    reject_code: Ident | None
    reject_message: Text | None
    span: Span
    #: `reject CODE "..." with {"key": expr, ...}`: the data the refusal carries
    reject_data: Expr | None = None
    #: `-> TARGET reenter`: external even when TARGET is the rule's own state
    reenter: bool = False
    #: `on a, b, error.* -> X`: the events listed after the first (`event`); a name ending in
    #: `.*` is a prefix of event names. Resolve expands such a rule into one rule per event.
    more_events: tuple[Ident, ...] = ()
    #: set by resolve on each rule it expanded: every event the written rule covers, in order
    #: (the first copy typechecks the guard and actions for all of them)
    covers: tuple[str, ...] = ()
    #: `after EXPR UNIT -> X`: a computed delay (`after` is None then)
    delay: ComputedDelay | None = None

    @property
    def listed_events(self) -> tuple[Ident, ...]:
        """The event names and prefixes written after `on`, in order."""
        return () if self.event is None else (self.event, *self.more_events)


@dataclass(frozen=True, slots=True)
class UnhandledDecl:
    """`unhandled ignore` / `unhandled refuse`: what a state does with a declared event it has
    no rule for; at the top level, the default of every state."""

    policy: Ident
    span: Span


@dataclass(frozen=True, slots=True)
class MetaDecl:
    value: dict[str, JsonValue]
    span: Span


@dataclass(frozen=True, slots=True)
class ActionBlock:
    """`entry do ...` or `exit do ...`."""

    when: Literal["entry", "exit"]
    actions: tuple[Action, ...]
    span: Span


@dataclass(frozen=True, slots=True)
class HistoryDecl:
    """`history [deep] NAME [-> DEFAULT]`: a history pseudo-state of the enclosing state."""

    name: Ident
    deep: bool
    default: Ident | None
    span: Span
    #: `history H -> X do ...`: run when the history enters its default (nothing recorded)
    actions: tuple[Action, ...] = ()


@dataclass(frozen=True, slots=True)
class InitialRule:
    """`initial -> A.x, B.y [do ...]` in a compound state: the descendants its default entry
    enters, and the actions run then (after the compound's entry actions)."""

    targets: tuple[Ident, ...]
    actions: tuple[Action, ...]
    span: Span


@dataclass(frozen=True, slots=True)
class Invoke:
    """`invoke FLOW(ARGS) [for ITEM[, INDEX] in EACH] [as ID [into FIELD]] [join all|any|N]
    [forward] [finalize do ...]` in a state: a child flow (one per item of EACH)."""

    flow: Ident
    #: the child's context fields set at its start
    args: Payload
    #: `as ID` (None: the invoke's id is the flow's name, see `id`)
    alias: Ident | None
    item: Ident | None
    index: Ident | None
    each: Expr | None
    #: `join all|any|N` as written
    join: Ident | None
    forward: bool
    finalize: tuple[Action, ...]
    #: `into FIELD`: the context path the child's id is written to (empty: none)
    into: tuple[Ident, ...]
    span: Span

    @property
    def id(self) -> Ident:
        return self.alias if self.alias is not None else self.flow


@dataclass(frozen=True, slots=True)
class StateDecl:
    name: Ident
    title: Text | None
    modifiers: tuple[Ident, ...]
    metas: tuple[MetaDecl, ...]
    blocks: tuple[ActionBlock, ...]
    rules: tuple[Rule, ...]
    span: Span
    #: `unhandled ignore|refuse` written in the state (resolve allows one)
    unhandled: tuple[UnhandledDecl, ...] = ()
    #: the states and history pseudo-states declared in its body, in source order: a state
    #: with child states is compound (or, `parallel state`, parallel)
    children: tuple[StateDecl | HistoryDecl, ...] = ()
    #: `initial -> ...` rules written in the body (resolve allows one, in a compound state)
    initial_rules: tuple[InitialRule, ...] = ()
    #: `final state X with {...}`: the payload of its parent's `done.state` event (at the
    #: top level: the flow's done data, the `done.invoke` payload of a parent flow)
    done_data: Expr | None = None
    #: `invoke ...` statements of the body, in source order
    invokes: tuple[Invoke, ...] = ()

    def has(self, modifier: str) -> bool:
        # A loop, not `any(...)`: asked of every state many times, and a generator costs more.
        for m in self.modifiers:  # noqa: SIM110
            if m.name == modifier:
                return True
        return False

    @property
    def child_states(self) -> tuple[StateDecl, ...]:
        return tuple(c for c in self.children if isinstance(c, StateDecl))


@dataclass(frozen=True, slots=True)
class NamedText:
    """`message KIND "..."`, and `journal NAME` / `template NAME` with a (usually
    triple-quoted) text."""

    keyword: Literal["message", "journal", "template"]
    name: Ident
    text: Text
    span: Span


@dataclass(frozen=True, slots=True)
class MigrateMapping:
    """`state OLD -> NEW` or `field OLD -> NEW` inside `migrate from N { ... }`."""

    kind: Literal["state", "field"]
    old: Ident
    new: Ident
    span: Span


@dataclass(frozen=True, slots=True)
class MigrateDrop:
    """`drop a, b`: context fields of the old version this one no longer has."""

    names: tuple[Ident, ...]
    span: Span


@dataclass(frozen=True, slots=True)
class MigrateDecl:
    """`migrate from N { ... }`: how an instance of version N of this flow becomes one of this
    version."""

    from_version: int
    version_span: Span
    items: tuple[MigrateMapping | MigrateDrop, ...]
    span: Span


# ---- invariants and tests (kept out of the IR: see docs/testing.md) -------------------------


@dataclass(frozen=True, slots=True)
class InvariantDecl:
    """`invariant NAME: EXPR`: a property of the context that every step must keep."""

    name: Ident
    expr: Expr
    span: Span


@dataclass(frozen=True, slots=True)
class Given:
    """`given FIELD = EXPR`: a field of the starting context."""

    field: Ident
    value: Expr
    span: Span


@dataclass(frozen=True, slots=True)
class Send:
    """`send EVENT(field: EXPR, ...)`."""

    event: Ident
    payload: tuple[tuple[Ident, Expr], ...]
    span: Span


@dataclass(frozen=True, slots=True)
class Goto:
    """`goto STATE [force]`: `force` takes a backward (`back`) edge, as `Instance.goto` does."""

    target: Ident
    span: Span
    force: bool = False


@dataclass(frozen=True, slots=True)
class Back:
    span: Span


@dataclass(frozen=True, slots=True)
class Advance:
    """`advance 10m`: move the test's fake clock forward and fire the timers due."""

    duration: Duration
    span: Span


@dataclass(frozen=True, slots=True)
class ExpectState:
    state: Ident
    span: Span


@dataclass(frozen=True, slots=True)
class ExpectReject:
    """`expect reject CODE`: the step before was refused with this code."""

    code: Ident
    span: Span


@dataclass(frozen=True, slots=True)
class ExpectJournal:
    """`expect journal NAME "text"`: the journal's entry for the last step contains the text."""

    journal: Ident
    text: Text
    span: Span


@dataclass(frozen=True, slots=True)
class ExpectValue:
    """`expect EXPR`: a boolean over the context holds now."""

    expr: Expr
    span: Span


@dataclass(frozen=True, slots=True)
class ExpectEffect:
    """`expect effect NAME(field: EXPR, ...)`: the step before emitted the effect with these
    field values (fields not written may be anything)."""

    effect: Ident
    fields: tuple[tuple[Ident, Expr], ...]
    span: Span


@dataclass(frozen=True, slots=True)
class ExpectNoEffect:
    """`expect no effect [NAME]`: the step before emitted no effect (none called NAME)."""

    effect: Ident | None
    span: Span


TestStep = (
    Given
    | Send
    | Goto
    | Back
    | Advance
    | ExpectState
    | ExpectReject
    | ExpectJournal
    | ExpectEffect
    | ExpectNoEffect
    | ExpectValue
)


@dataclass(frozen=True, slots=True)
class TestDecl:
    name: Text
    steps: tuple[TestStep, ...]
    span: Span


Decl = (
    FlowDecl
    | VersionDecl
    | EnumDecl
    | TypeDecl
    | ContextDecl
    | EventDecl
    | StateDecl
    | Rule
    | NamedText
    | MigrateDecl
    | InvariantDecl
    | TestDecl
    | UnhandledDecl
    | HistoryDecl
    | EffectDecl
)


@dataclass(frozen=True, slots=True)
class Module:
    decls: tuple[Decl, ...]
