"""The IR: the compiled transition graph, the contract between compiler and runtime.

Everything here is plain data (pydantic models) so that the runtime can load a compiled flow
without the compiler, Lark, networkx or Graphviz. The JSON form is versioned by `ir_version`;
`docs/ir.md` says what each version promises.

Canonical JSON (sorted keys, no insignificant whitespace, UTF-8) is what the content hash is
computed over, so two compilations of the same source give byte-identical hashes.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError

from flowc.runtime.builtins import QUANTIFIERS
from flowc.runtime.messages import MESSAGE_KINDS

#: Bumped on any change a loader written for the previous version could misread. The compiler
#: writes the lowest version that can express a flow (`CompiledFlow.required_version`): a flow
#: that uses no member added in version 2 is written as version 1, byte for byte as before.
IR_VERSION = 5
#: The versions this runtime reads.
READABLE_IR_VERSIONS: tuple[int, ...] = (1, 2, 3, 4, 5)


class IRModel(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class TypeRef(IRModel):
    """A value type. `item` is the element of a list, the value of a map, or the inner type of an
    optional; `name` names an enum or record; `min`/`max` bound an `int(1..5)` range."""

    kind: Literal[
        "bool", "int", "float", "str", "list", "map", "enum", "record", "optional", "json"
    ]
    name: str | None = None
    item: TypeRef | None = None
    min: float | None = None
    max: float | None = None


class FieldDef(IRModel):
    name: str
    type: TypeRef
    required: bool = True
    default: JsonValue = None
    #: Version 3, context fields only: `input`, a caller may set it at start (a model's `start`
    #: tool offers only these); `hidden`, a model may not read it. A flow of version 1 or 2 has
    #: neither: through tools it takes no start input and hides nothing.
    input: bool = False
    hidden: bool = False


class EnumDef(IRModel):
    name: str
    members: tuple[str, ...]


class RecordDef(IRModel):
    name: str
    fields: tuple[FieldDef, ...]


class Expr(IRModel):
    """One node of a guard or action expression.

    `op` is one of: `lit` (value), `ctx` (value = field name), `event` (value = payload field),
    `state` (value = `name` | `title`), `meta` (value = key: the current state's meta value, none
    when the state has no such key), `attr` (args = [obj], value = name), `index`
    (args = [obj, key]), `call` (value = function name, args), `list` (args = items), `map`
    (args = k1, v1, k2, v2, ...), `not`, `neg`, `and`, `or`, `==`, `!=`, `<`, `<=`, `>`, `>=`,
    `+`, `-`, `*`, `/`, `%`, `in`, `not in`.
    """

    op: str
    args: tuple[Expr, ...] = ()
    value: JsonValue = None


class Action(IRModel):
    """`target` is a path into the context (`["stats", "hits"]` for `stats.hits`).

    Version 2 adds three ops: `raise` (an internal event: `event`, and its payload as a `map`
    expression in `value`, or null), `emit` (an effect for the host: its name in `event`, its
    payload in `value`) and `if` (`branches`, tried in order; the first whose guard holds runs;
    a branch without a guard is the `else`, and comes last), and `for` (the list in `value`, the
    context field set to each item in `target`, the one set to its position in `index`, and
    the body as the one branch, without a guard, of `branches`). Version 4 adds `send` (a
    scheduled event to this instance: `event`, its payload in `value` as for `raise`, its delay
    in `delay`, its id, a str expression, in `key`, or null) and `cancel` (the id in `key`).
    It grew `put` (`xs[i] = v`,
    `m[k] = v`: the list or map at `target`, the position or key in `key`, the new item in
    `value`), `delete` (`delete(m, k)`: the map at `target`, the key in `key`) and `each` (a
    `for` whose `target` and `index` name locals of the body, read by `local` expressions,
    rather than context fields)."""

    op: Literal[
        "set",
        "add",
        "sub",
        "append",
        "remove",
        "raise",
        "emit",
        "if",
        "for",
        "each",
        "put",
        "delete",
        "send",
        "cancel",
    ]
    target: tuple[str, ...] = ()
    value: Expr | None = None
    event: str | None = None
    branches: tuple[Branch, ...] = ()
    index: str | None = None
    key: Expr | None = None
    #: Version 4, `send` only: the delay in milliseconds (an int expression, evaluated when the
    #: action runs).
    delay: Expr | None = None
    #: Version 5, `send` only: a message to another instance of the tree, `parent` or the
    #: children of the invoke of that id (`send E(...) to ID`); `delay` is null then.
    to: str | None = None


class Branch(IRModel):
    """One arm of an `if` action: its guard (none for `else`) and its actions."""

    guard: Expr | None = None
    actions: tuple[Action, ...] = ()


class Requirement(IRModel):
    """An event precondition checked in every state before any transition (`require`)."""

    guard: Expr
    code: str
    message: str
    #: The data the refusal carries (`with {...}`): a `map` expression with literal string
    #: keys, evaluated when the clause fails. Absent when there is none (IR files written
    #: before it existed load unchanged).
    data: Expr | None = None


class EventDef(IRModel):
    name: str
    fields: tuple[FieldDef, ...] = ()
    requires: tuple[Requirement, ...] = ()
    #: Version 4: only the flow itself sends it (`raise`, `send`); a host is refused
    #: (`internal_event`), and it is no tool.
    internal: bool = False


TransitionKind = Literal["event", "direct", "choice", "else", "timer", "reject", "always"]
StateKind = Literal["normal", "final", "choice", "compound", "parallel", "history"]
#: The members and values added in version 2 (see `CompiledFlow.required_version`).
V2_STATE_KINDS: frozenset[str] = frozenset({"compound", "parallel", "history"})
V2_ACTION_OPS: frozenset[str] = frozenset({"raise", "emit", "if", "for", "each", "put", "delete"})
#: The action ops added in version 4 (scheduled events).
V4_ACTION_OPS: frozenset[str] = frozenset({"send", "cancel"})
#: Expression ops added in version 2 (after it first shipped; see docs/ir.md).
V2_EXPR_OPS: frozenset[str] = frozenset({"cond", "local", *QUANTIFIERS})
#: The kinds as sets, for readers of the raw JSON (the runtime's loader).
TRANSITION_KINDS: frozenset[str] = frozenset(get_args(TransitionKind))
STATE_KINDS: frozenset[str] = frozenset(get_args(StateKind))


class Invoke(IRModel):
    """Version 5: `invoke FLOW(ARGS) [for ITEM[, INDEX] in EACH] [as ID] ...` in a state: a
    child flow (one per item of `each` in a fan-out) started when the state has been entered,
    cancelled when it is exited. `flow` is a key of `CompiledFlow.children`; `input` a `map`
    expression whose literal keys are context fields of the child, read by `local`
    expressions named `item` and `index` in a fan-out; `join` (fan-out only) how many children
    must finish: null all, 1 any, N; `forward` sends the host's events on to the children;
    `finalize` runs on the parent's context when a message from them is delivered;
    `id_target` the context path the child's id is written to (`into FIELD`)."""

    id: str
    flow: str
    input: Expr | None = None
    each: Expr | None = None
    item: str | None = None
    index: str | None = None
    join: int | None = None
    forward: bool = False
    finalize: tuple[Action, ...] = ()
    id_target: tuple[str, ...] = ()
    line: int = 0
    column: int = 0


class Transition(IRModel):
    """One edge. Transitions of a state are tried in `index` order, first enabled wins.

    `kind`: `event` (`on E -> T`), `direct` (`-> T`, taken when the host asks for T), `choice`
    / `else` (routing in a choice state), `timer` (`after 10m -> T`), `reject` (`on E reject
    CODE "msg"`: a domain refusal with no target). `inherited` marks a copy of a rule written
    outside any state.
    """

    index: int
    source: str
    target: str | None
    kind: TransitionKind
    event: str | None = None
    guard: Expr | None = None
    actions: tuple[Action, ...] = ()
    back: bool = False
    after_ms: int | None = None
    #: Version 2: the delay of a timer as an expression giving milliseconds, evaluated when
    #: the timer is armed (`after backoff_ms ms`); `after_ms` is null then.
    after_expr: Expr | None = None
    code: str | None = None
    message: str | None = None
    #: For `reject`: the data the refusal carries (`with {...}`), as in `Requirement.data`.
    data: Expr | None = None
    inherited: bool = False
    #: `-> self reenter`: an external self-transition (exit and entry actions run, the state's
    #: timers restart); without it a transition to its own source is internal.
    reenter: bool = False
    #: Source position of the rule (1-based; 0 when unknown), for lint and error messages.
    line: int = 0
    column: int = 0


class State(IRModel):
    name: str
    kind: StateKind = "normal"
    initial: bool = False
    title: str | None = None
    meta: dict[str, JsonValue] = Field(default_factory=dict)
    entry: tuple[Action, ...] = ()
    exit: tuple[Action, ...] = ()
    #: The enclosing compound or parallel state (version 2); null at the top level. `initial`
    #: marks the initial child of a compound.
    parent: str | None = None
    #: Version 2, on `kind: history` states only: `shallow` or `deep`, and the state entered
    #: when no history is recorded yet (null: the parent's initial child).
    history: Literal["shallow", "deep"] | None = None
    default: str | None = None
    #: Version 2, on compound states: an `initial -> ...` rule. Its default entry enters these
    #: descendants of its initial child (instead of the initial child's own defaults) and runs
    #: `initial_actions` after the compound's entry actions. On a history state,
    #: `initial_actions` are those of its default (`history H -> X do ...`), run after the
    #: parent's entry actions when the history enters its default.
    initial_targets: tuple[str, ...] = ()
    initial_actions: tuple[Action, ...] = ()
    #: Version 2, on a final state inside a compound: the payload (a `map` expression with
    #: literal keys) of the parent's `done.state` event, evaluated when the state is entered;
    #: that event is then declared in `events` with these fields. Version 5: on a top-level
    #: final state, the flow's done data (the `done.invoke.ID` payload of its parent).
    done_data: Expr | None = None
    #: Version 5: the child flows the state invokes, in source order.
    invokes: tuple[Invoke, ...] = ()
    line: int = 0
    column: int = 0
    #: What a declared event with no rule here gets: `refuse` (`event_not_accepted`) or
    #: `ignore` (the `ignored` outcome). Added within version 1; absent when `refuse`.
    unhandled: Literal["refuse", "ignore"] = "refuse"


class Journal(IRModel):
    name: str
    template: str


class Migration(IRModel):
    """`migrate from N { ... }`: how an instance of version `from_version` of this flow becomes
    one of this version. `states` maps old state names to states of this version, `rename` old
    context field names to fields of this version; `drop` lists old fields to forget."""

    from_version: int
    states: dict[str, str] = Field(default_factory=dict)
    rename: dict[str, str] = Field(default_factory=dict)
    drop: tuple[str, ...] = ()


class Invariant(IRModel):
    """`invariant NAME: EXPR`: a boolean over the context every committed step must keep.
    Added to IR version 1 as an optional field: flows without invariants (and JSON written
    before it existed) are unchanged, hash included."""

    name: str
    expr: Expr


#: The members the content hash leaves out: the hash itself, and what is derived from the rest.
UNHASHED_MEMBERS: set[str] = {"hash", "lowered_templates"}


class CompiledFlow(IRModel):
    ir_version: int = 1
    name: str
    title: str | None = None
    version: int = 1
    enums: tuple[EnumDef, ...] = ()
    records: tuple[RecordDef, ...] = ()
    context: tuple[FieldDef, ...] = ()
    events: tuple[EventDef, ...] = ()
    states: tuple[State, ...] = ()
    transitions: tuple[Transition, ...] = ()
    initial: str
    messages: dict[str, str] = Field(default_factory=dict)
    journals: tuple[Journal, ...] = ()
    templates: dict[str, str] = Field(default_factory=dict)
    #: One per `migrate from N` block, by `from_version`.
    migrations: tuple[Migration, ...] = ()
    #: `invariant` declarations, in source order (checked by tests, `flowc explore`, and by a
    #: runtime whose host asks for it: `Machine(..., check_invariants=True)`).
    invariants: tuple[Invariant, ...] = ()
    #: Version 2: declared effects (`effect NAME(params)`), the output events actions `emit`.
    effects: tuple[EventDef, ...] = ()
    #: The templates above lowered for runtimes without Jinja2: source -> parts, or None when
    #: outside the subset (docs/ir.md, "Lowered templates"). Derived from the sources, so it is
    #: left out of the hash; this runtime never reads it.
    lowered_templates: dict[str, list[JsonValue] | None] = Field(default_factory=dict)
    #: Version 5: every flow a state invokes, by name, each complete (its own hash and
    #: children); the hash of this flow covers them.
    children: dict[str, CompiledFlow] = Field(default_factory=dict)
    #: sha256 of the canonical JSON of everything else; filled by `with_hash`.
    hash: str = ""

    def canonical_json(self) -> str:
        """Sorted keys, compact separators, hash excluded: the bytes the hash is taken over."""
        data = self.model_dump(mode="json", exclude=UNHASHED_MEMBERS, exclude_defaults=True)
        data["ir_version"] = self.ir_version
        return _canonical(data)

    def compute_hash(self) -> str:
        return "sha256:" + hashlib.sha256(self.canonical_json().encode("utf-8")).hexdigest()

    def required_version(self) -> int:
        """The lowest IR version that can express this flow: 5 when it invokes child flows or
        sends a message to its parent or children (`send ... to`), 4 when an event is `internal`
        or an action schedules (`send`, `cancel`), 3 when a context field is marked
        `input` or `hidden`, 2 when it uses a member added in version 2, else 1 (so flows that
        do not are written exactly as before)."""
        if self.children or any(s.invokes for s in self.states) or _uses_v5_ops(self):
            return 5
        if any(e.internal for e in self.events) or _uses_v4_ops(self):
            return 4
        if any(f.input or f.hidden for f in self.context):
            return 3
        if self.effects or any(
            s.kind in V2_STATE_KINDS or s.parent is not None or s.done_data is not None
            for s in self.states
        ):
            return 2
        for t in self.transitions:
            if t.kind == "always" or t.after_expr is not None or _uses_v2_ops(t.actions):
                return 2
        if any(_uses_v2_ops(s.entry) or _uses_v2_ops(s.exit) for s in self.states):
            return 2
        if _uses_v2_expressions(self):
            return 2
        return 1

    def with_hash(self) -> CompiledFlow:
        """The flow at its required IR version, with its content hash."""
        flow = self
        if flow.ir_version != flow.required_version():
            flow = flow.model_copy(update={"ir_version": flow.required_version()})
        return flow.model_copy(update={"hash": flow.compute_hash()})

    def to_json(self, *, indent: int | None = 2) -> str:
        """The published form: keys sorted, fields at their default value left out (a loader
        fills them back in), `ir_version` and the hash always present."""
        data = self.model_dump(mode="json", exclude_defaults=True)
        data["ir_version"] = self.ir_version
        data["hash"] = self.hash
        if indent is None:
            return _canonical(data)
        return json.dumps(data, sort_keys=True, indent=indent, ensure_ascii=False) + "\n"

    @classmethod
    def from_json(cls, text: str | bytes) -> CompiledFlow:
        """Load compiled JSON; refuses other IR versions and a hash that does not match."""
        try:
            raw: Any = json.loads(text)
        except ValueError as exc:  # JSONDecodeError, or bytes that are not UTF-8
            raise IRLoadError(f"compiled flow is not valid JSON: {exc}") from exc
        if not isinstance(raw, dict):
            raise IRLoadError("compiled flow must be a JSON object")
        version = raw.get("ir_version")
        if type(version) is not int or version not in READABLE_IR_VERSIONS:
            raise IRLoadError(
                f"compiled flow has ir_version {version!r}; this runtime reads "
                f"{' and '.join(map(str, READABLE_IR_VERSIONS))}"
            )
        try:
            flow = cls.model_validate(raw)
        except ValidationError as exc:
            raise IRLoadError(
                f"compiled flow does not match IR version {IR_VERSION}: {exc}"
            ) from exc
        if flow.hash and flow.hash != flow.compute_hash():
            raise IRLoadError("compiled flow's content hash does not match: it was edited by hand")
        return flow


def all_actions(flow: CompiledFlow) -> Iterator[Action]:
    """Every action of the flow, at any depth."""
    stack: list[Action] = [a for t in flow.transitions for a in t.actions]
    for s in flow.states:
        stack += [*s.entry, *s.exit, *s.initial_actions]
        stack += [a for i in s.invokes for a in i.finalize]
    while stack:
        a = stack.pop()
        yield a
        stack += [x for b in a.branches for x in b.actions]


def _uses_v4_ops(flow: CompiledFlow) -> bool:
    """Whether some action, at any depth, is `send` or `cancel`."""
    return any(a.op in V4_ACTION_OPS for a in all_actions(flow))


def _uses_v5_ops(flow: CompiledFlow) -> bool:
    """Whether some action, at any depth, sends a message to another instance (`send ... to`)."""
    return any(a.to is not None for a in all_actions(flow))


def _uses_v2_ops(actions: tuple[Action, ...]) -> bool:
    return any(a.op in V2_ACTION_OPS for a in actions)


def _uses_v2_expressions(flow: CompiledFlow) -> bool:
    """Whether some expression calls `active` or `event_name`, or uses an op of
    `V2_EXPR_OPS` (version 2: a version 1 runtime does not know them)."""
    stack: list[Any] = [flow.transitions, flow.states, flow.events, flow.invariants]
    while stack:
        node = stack.pop()
        if isinstance(node, Expr):
            if node.op in V2_EXPR_OPS or (
                node.op == "call" and node.value in ("active", "event_name")
            ):
                return True
            stack.extend(node.args)
        elif isinstance(node, BaseModel):
            stack.extend(getattr(node, name) for name in type(node).model_fields)
        elif isinstance(node, tuple | list):
            stack.extend(node)
    return False


# ---- a fast structural check of the JSON form -------------------------------------------------
#
# `Machine` reads the IR in its JSON form, not through the models (validating 1,000 states with
# pydantic costs ten times the load itself). `check_ir` checks the same structure in one pass:
# the members each model allows (taken from the models, so the two cannot drift apart), the
# required ones present, and the type of every member the runtime reads. Expressions are
# checked when they are compiled (runtime/expr.py): on first use, or all at once by
# `Machine.preload()`; here only that a guard or an action's value is an expression object.


def _members(model: type[BaseModel]) -> tuple[frozenset[str], frozenset[str]]:
    fields = model.model_fields
    return frozenset(fields), frozenset(n for n, f in fields.items() if f.is_required())


_FLOW = _members(CompiledFlow)
_TYPE = _members(TypeRef)
_FIELD = _members(FieldDef)
_ENUM = _members(EnumDef)
_RECORD = _members(RecordDef)
_EVENT = _members(EventDef)
_REQUIREMENT = _members(Requirement)
_STATE = _members(State)
_TRANSITION = _members(Transition)
_ACTION = _members(Action)
_JOURNAL = _members(Journal)
_MIGRATION = _members(Migration)
_BRANCH = _members(Branch)
_INVOKE = _members(Invoke)
_TYPE_KINDS = frozenset(
    {"bool", "int", "float", "str", "list", "map", "enum", "record", "optional", "json"}
)
_ACTION_OPS = frozenset({"set", "add", "sub", "append", "remove"})
_ALL_ACTION_OPS = _ACTION_OPS | V2_ACTION_OPS | V4_ACTION_OPS


class _Bad(Exception):
    pass


def _object(value: Any, members: tuple[frozenset[str], frozenset[str]], where: str) -> Any:
    if type(value) is not dict:
        raise _Bad(f"{where} must be an object, got {_kind(value)}")
    keys = value.keys()
    if not keys <= members[0]:
        unknown = sorted(str(k) for k in keys - members[0])
        raise _Bad(f"{where} has unknown field(s) {', '.join(map(repr, unknown[:5]))}")
    if not members[1] <= keys:
        missing = sorted(members[1] - keys)
        raise _Bad(f"{where} lacks required field(s) {', '.join(map(repr, missing))}")
    return value


def _kind(value: Any) -> str:
    return type(value).__name__ if value is not None else "null"


def _is(value: Any, types: type | tuple[type, ...], where: str, optional: bool = False) -> None:
    if value is None and optional:
        return
    if not isinstance(value, types) or (types is not bool and type(value) is bool):
        raise _Bad(f"{where} has the wrong type ({_kind(value)})")


def _list(value: Any, where: str) -> list[Any]:
    if value is None:
        return []
    if type(value) is not list:
        raise _Bad(f"{where} must be a list, got {_kind(value)}")
    return value


def _str_map(value: Any, where: str) -> None:
    if value is None:
        return
    if type(value) is not dict or not all(type(v) is str for v in value.values()):
        raise _Bad(f"{where} must be an object of strings")


def _type_ref(ref: Any, where: str, depth: int = 0) -> None:
    while True:
        _object(ref, _TYPE, where)
        if ref["kind"] not in _TYPE_KINDS:
            raise _Bad(f"{where} has unknown kind {ref['kind']!r}")
        _is(ref.get("name"), str, f"{where}.name", optional=True)
        _is(ref.get("min"), (int, float), f"{where}.min", optional=True)
        _is(ref.get("max"), (int, float), f"{where}.max", optional=True)
        ref = ref.get("item")
        depth += 1
        if ref is None:
            return
        if depth > 64:
            raise _Bad(f"{where} is nested too deeply")


#: How deeply child flows may nest in one document (each level is checked recursively).
MAX_CHILD_DEPTH = 32

#: How deeply a JSON value in the IR (a `meta` value, a default, a literal) may nest: values
#: are copied and written recursively.
MAX_VALUE_DEPTH = 64


def value_too_deep(value: Any) -> bool:
    """Whether a JSON value nests more than `MAX_VALUE_DEPTH` levels (walked without
    recursion)."""
    stack = [(value, 0)]
    while stack:
        v, depth = stack.pop()
        if type(v) is dict:
            items: Any = v.values()
        elif type(v) is list:
            items = v
        else:
            continue
        if depth >= MAX_VALUE_DEPTH:
            return True
        stack.extend((item, depth + 1) for item in items)
    return False


def _fields(raw: Any, where: str) -> None:
    for f in _list(raw, where):
        _object(f, _FIELD, where)
        _is(f["name"], str, f"{where}.name")
        if value_too_deep(f.get("default")):
            raise _Bad(f"the default of {where} {f['name']} is nested too deeply")
        _type_ref(f["type"], f"{where} {f['name']}.type")
        _is(f.get("required", True), bool, f"{where} {f['name']}.required")
        _is(f.get("input", False), bool, f"{where} {f['name']}.input")
        _is(f.get("hidden", False), bool, f"{where} {f['name']}.hidden")


def _expr(value: Any, where: str, optional: bool = False) -> None:
    if value is None and optional:
        return
    if type(value) is not dict or type(value.get("op")) is not str:
        raise _Bad(f"{where} must be an expression object, got {_kind(value)}")


def _actions(raw: Any, where: str) -> None:
    a_all, a_required = _ACTION
    for a in _list(raw, where):
        if (
            type(a) is dict
            and a.keys() <= a_all
            and a_required <= a.keys()
            and a["op"] in _ACTION_OPS
            and type(a["value"]) is dict
            and type(a["value"].get("op")) is str
        ):
            target = a["target"]
            if type(target) is list and (
                (len(target) == 1 and type(target[0]) is str)
                or (target and all(type(p) is str for p in target))
            ):
                continue
        _action(a, where)


def _loop_head(a: Any, where: str) -> None:
    """A `for` action's item field, index, list and one body."""
    target = a.get("target")
    if type(target) is not list or len(target) != 1 or type(target[0]) is not str:
        raise _Bad(f"{where} `for` needs the name of its item field")
    _is(a.get("index"), str, f"{where} `for` index", optional=True)
    _expr(a.get("value"), f"{where} `for` list")
    branches = _list(a.get("branches"), f"{where} `for` body")
    if len(branches) != 1:
        raise _Bad(f"{where} `for` needs one body")


def _branches(a: Any, where: str, depth: int) -> None:
    """The branches of an `if` or `for` action, each a guard and actions, nested boundedly."""
    if depth > 32:
        raise _Bad(f"{where} nests `if` or `for` too deeply")
    branches = _list(a.get("branches"), f"{where} branches")
    if not branches:
        raise _Bad(f"{where} `if` needs at least one branch")
    for b in branches:
        _object(b, _BRANCH, f"{where} branch")
        _expr(b.get("guard"), f"{where} branch guard", optional=True)
        for inner in _list(b.get("actions"), f"{where} branch actions"):
            _action(inner, where, depth + 1)


def _action(a: Any, where: str, depth: int = 0) -> None:
    _object(a, _ACTION, where)
    op = a["op"]
    if op not in _ALL_ACTION_OPS:
        raise _Bad(f"{where} has unknown op {op!r}")
    if op in ("raise", "emit", "send"):
        _is(a.get("event"), str, f"{where} {op} event")
        _expr(a.get("value"), f"{where} {op} payload", optional=True)
        if op == "send":
            _is(a.get("to"), str, f"{where} send to", optional=True)
            _expr(a.get("delay"), f"{where} send delay", optional=a.get("to") is not None)
            _expr(a.get("key"), f"{where} send id", optional=True)
        return
    if op == "cancel":
        _expr(a.get("key"), f"{where} cancel id")
        return
    if op == "for" or op == "each":
        _loop_head(a, where)
    if op in ("if", "for", "each"):
        _branches(a, where, depth)
        return
    target = a.get("target")
    if type(target) is not list or not target or not all(type(p) is str for p in target):
        raise _Bad(f"{where} needs a target path of names")
    if op in ("put", "delete"):
        _expr(a.get("key"), f"{where} {op} key")
        _expr(a.get("value"), f"{where} value", optional=op == "delete")
        return
    _expr(a.get("value"), f"{where} value")


_STR_OR_NONE = (str, type(None))
_INT_OR_NONE = (int, type(None))
_NO_META: dict[str, Any] = {}
_NO_LIST: list[Any] = []
_NO_GUARD: dict[str, Any] = {}
_DICT_OR_NONE = (dict, type(None))


def _state(st: Any) -> None:
    _object(st, _STATE, "a state")
    _is(st["name"], str, "a state's name")
    where = f"state {st['name']}"
    _is(st.get("title"), str, f"{where} title", optional=True)
    if type(st.get("meta", _NO_META)) is not dict:
        raise _Bad(f"{where} meta must be an object")
    _list(st.get("entry"), f"{where} entry")
    _list(st.get("exit"), f"{where} exit")
    if st.get("unhandled", "refuse") not in ("refuse", "ignore"):
        raise _Bad(f"{where} unhandled must be 'refuse' or 'ignore'")
    _is(st.get("parent"), str, f"{where} parent", optional=True)
    if st.get("history") not in (None, "shallow", "deep"):
        raise _Bad(f"{where} history must be 'shallow' or 'deep'")
    _is(st.get("default"), str, f"{where} default", optional=True)
    for target in _list(st.get("initial_targets"), f"{where} initial targets"):
        _is(target, str, f"{where} initial target")
    for a in _list(st.get("initial_actions"), f"{where} initial actions"):
        _action(a, f"{where} initial actions")
    _expr(st.get("done_data"), f"{where} done data", optional=True)
    for invoke in _list(st.get("invokes"), f"{where} invokes"):
        _invoke(invoke, f"{where} invoke")


def _invoke(raw: Any, where: str) -> None:
    _object(raw, _INVOKE, where)
    _is(raw["id"], str, f"{where} id")
    _is(raw["flow"], str, f"{where} {raw['id']} flow")
    where = f"{where} {raw['id']}"
    _expr(raw.get("input"), f"{where} input", optional=True)
    _expr(raw.get("each"), f"{where} list", optional=True)
    _is(raw.get("item"), str, f"{where} item", optional=True)
    _is(raw.get("index"), str, f"{where} index", optional=True)
    _is(raw.get("join"), int, f"{where} join", optional=True)
    _is(raw.get("forward", False), bool, f"{where} forward")
    for a in _list(raw.get("finalize"), f"{where} finalize"):
        _action(a, f"{where} finalize")
    target = _list(raw.get("id_target"), f"{where} id_target")
    if not all(type(p) is str for p in target):
        raise _Bad(f"{where} id_target must be a path of names")
    _is(raw.get("line", 0), int, f"{where} line")
    _is(raw.get("column", 0), int, f"{where} column")


def _bool_guard(guard: Any, where: str) -> None:
    """A guard that is a literal must be `true` or `false` (the compiler never writes
    another; a hand-edited `lit 5` would otherwise act as true)."""
    if guard.get("op") != "lit":
        return
    value = guard.get("value")
    if type(value) is not bool and not value_too_deep(value):  # (too deep: worded later)
        shown = repr(value) if type(value) in (int, float) else f"a literal {_kind(value)}"
        raise _Bad(f"{where} is {shown}, not a bool: a literal guard is `true` or `false`")


def _transition(t: Any) -> None:
    _object(t, _TRANSITION, "a transition")
    where = f"transition #{t['index']}"
    if type(t["index"]) is not int or type(t["source"]) is not str:
        raise _Bad(f"{where} needs an integer index and a source name")
    _is(t["target"], str, f"{where} target", optional=True)
    _is(t["kind"], str, f"{where} kind")
    _is(t.get("event"), str, f"{where} event", optional=True)
    _expr(t.get("guard"), f"{where} guard", optional=True)
    _list(t.get("actions"), f"{where} actions")
    _is(t.get("back", False), bool, f"{where} back")
    _is(t.get("reenter", False), bool, f"{where} reenter")
    _is(t.get("after_ms"), int, f"{where} after_ms", optional=True)
    _expr(t.get("after_expr"), f"{where} after_expr", optional=True)
    _is(t.get("code"), str, f"{where} code", optional=True)
    _is(t.get("message"), str, f"{where} message", optional=True)
    _is(t.get("line", 0), int, f"{where} line")
    raise _Bad(f"{where} has a member of the wrong type")


def check_ir(raw: Any) -> None:
    """Raise `IRLoadError` unless `raw` (a parsed compiled flow) has the structure of the
    models: no unknown members, required ones present, each of the type the runtime reads."""
    try:
        _check_ir(raw)
    except _Bad as exc:
        raise IRLoadError(f"compiled flow does not match IR version {IR_VERSION}: {exc}") from None


def _check_ir(raw: Any, depth: int = 0) -> None:
    _object(raw, _FLOW, "the document")
    _is(raw["name"], str, "name")
    _is(raw["initial"], str, "initial")
    _is(raw.get("title"), str, "title", optional=True)
    _is(raw.get("version", 1), int, "version")
    _is(raw.get("hash", ""), str, "hash")
    _check_types(raw)
    if raw.get("ir_version", 1) not in READABLE_IR_VERSIONS:
        raise _Bad(f"ir_version {raw['ir_version']!r} is not one this runtime reads")
    _check_events(raw)
    # States and transitions are most of a large flow: each is checked with one expression,
    # and worded only when that fails.
    _check_states(raw)
    _check_transitions(raw)
    _check_tables(raw)
    children = raw.get("children")
    if children is not None:
        if type(children) is not dict:
            raise _Bad("children must be an object of compiled flows")
        if children and depth >= MAX_CHILD_DEPTH:
            raise _Bad(f"child flows nest more than {MAX_CHILD_DEPTH} deep")
        for name, child in children.items():
            try:
                _check_ir(child, depth + 1)
            except _Bad as exc:
                raise _Bad(f"child flow {name!r}: {exc}") from None


def _check_types(raw: dict[str, Any]) -> None:
    """The enums, records and context fields."""
    for e in _list(raw.get("enums"), "enums"):
        _object(e, _ENUM, "an enum")
        _is(e["name"], str, "an enum's name")
        if type(e["members"]) is not list or not all(type(m) is str for m in e["members"]):
            raise _Bad(f"enum {e['name']!r} needs a list of member names")
    for r in _list(raw.get("records"), "records"):
        _object(r, _RECORD, "a record")
        _is(r["name"], str, "a record's name")
        _fields(r["fields"], f"record {r['name']}")
    _fields(raw.get("context"), "context")


def _check_events(raw: dict[str, Any]) -> None:
    """The events and effects, with their fields and preconditions."""
    for ev in [*_list(raw.get("events"), "events"), *_list(raw.get("effects"), "effects")]:
        _object(ev, _EVENT, "an event")
        _is(ev["name"], str, "an event's name")
        _is(ev.get("internal", False), bool, f"event {ev['name']}.internal")
        _fields(ev.get("fields"), f"event {ev['name']}")
        for req in _list(ev.get("requires"), f"event {ev['name']} requires"):
            _object(req, _REQUIREMENT, f"a requirement of {ev['name']}")
            _expr(req["guard"], f"a requirement of {ev['name']}")
            _bool_guard(req["guard"], f"a requirement of {ev['name']}")
            _is(req["code"], str, "a requirement's code")
            _is(req["message"], str, "a requirement's message")


def _check_states(raw: dict[str, Any]) -> None:
    state_all, state_required = _STATE
    for st in _list(raw.get("states"), "states"):
        if not (
            type(st) is dict
            and st.keys() <= state_all
            and state_required <= st.keys()
            and type(st["name"]) is str
            and type(st.get("title", "")) in _STR_OR_NONE
            and type(st.get("meta", _NO_META)) is dict
            and type(st.get("entry", _NO_LIST)) is list
            and type(st.get("exit", _NO_LIST)) is list
            and type(st.get("parent")) in _STR_OR_NONE
            and st.get("history") in (None, "shallow", "deep")
            and type(st.get("default")) in _STR_OR_NONE
            and "invokes" not in st
        ):
            _state(st)
        if st.get("meta") and value_too_deep(st["meta"]):
            raise _Bad(f"the meta of state {st['name']} is nested too deeply")
        if st.get("entry"):
            _actions(st["entry"], f"state {st['name']} entry")
        if st.get("exit"):
            _actions(st["exit"], f"state {st['name']} exit")


def _check_transitions(raw: dict[str, Any]) -> None:
    t_all, t_required = _TRANSITION
    for position, t in enumerate(_list(raw.get("transitions"), "transitions")):
        if not (
            type(t) is dict
            and t.keys() <= t_all
            and t_required <= t.keys()
            and type(t["index"]) is int
            and type(t["source"]) is str
            and type(t["kind"]) is str
            and type(t["target"]) in _STR_OR_NONE
            and type(t.get("event")) in _STR_OR_NONE
            and type(t.get("guard", _NO_GUARD)) in _DICT_OR_NONE
            and type(t.get("actions", _NO_LIST)) is list
            and type(t.get("back", False)) is bool
            and type(t.get("reenter", False)) is bool
            and type(t.get("after_ms")) in _INT_OR_NONE
            and type(t.get("after_expr", _NO_GUARD)) in _DICT_OR_NONE
            and type(t.get("code")) in _STR_OR_NONE
            and type(t.get("message")) in _STR_OR_NONE
            and type(t.get("line", 0)) is int
        ):
            _transition(t)
        if t["index"] != position:
            raise _Bad(
                f"transitions[{position}] has index {t['index']}: a transition's index is its "
                "position in `transitions`"
            )
        guard = t.get("guard")
        if guard is not None:
            if type(guard.get("op")) is not str:
                _expr(guard, f"transition #{t['index']} guard")
            _bool_guard(guard, f"transition #{t['index']} guard")
        if t.get("actions"):
            _actions(t["actions"], f"transition #{t['index']} actions")


def _check_tables(raw: dict[str, Any]) -> None:
    """The messages, templates, journals and migrations."""
    _str_map(raw.get("messages"), "messages")
    for kind in raw.get("messages") or ():
        if kind not in MESSAGE_KINDS:
            raise _Bad(f"messages: {kind!r} is not a rejection kind (`MESSAGE_KINDS`)")
    _str_map(raw.get("templates"), "templates")
    for j in _list(raw.get("journals"), "journals"):
        _object(j, _JOURNAL, "a journal")
        _is(j["name"], str, "a journal's name")
        _is(j["template"], str, "a journal's template")
    for m in _list(raw.get("migrations"), "migrations"):
        _object(m, _MIGRATION, "a migration")
        _is(m["from_version"], int, "a migration's from_version")
    lowered = raw.get("lowered_templates")
    # Never read here (other runtimes render it); only its outline is checked.
    if lowered is not None and (
        type(lowered) is not dict
        or not all(type(v) in (list, type(None)) for v in lowered.values())
    ):
        raise _Bad("lowered_templates must be an object of arrays or nulls")


class FlowcError(Exception):
    """Base of the exceptions flowc.runtime raises for programmer errors (a bad IR, a bad
    snapshot, a misused API). Expected outcomes of steps are data (`Rejection`), not these."""


class IRLoadError(FlowcError, ValueError):
    """A compiled flow that this runtime cannot load."""


def _canonical(data: Any) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


Action.model_rebuild()
Invoke.model_rebuild()
CompiledFlow.model_rebuild()
FieldDef.model_rebuild()
TypeRef.model_rebuild()
Expr.model_rebuild()
