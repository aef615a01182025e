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
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError

#: Bumped on any change a loader written for the previous version could misread.
IR_VERSION = 1


class IRModel(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class TypeRef(IRModel):
    """A value type. `item` is the element of a list, the value of a map, or the inner type of an
    optional; `name` names an enum or record; `min`/`max` bound an `int(1..5)` range."""

    kind: Literal["bool", "int", "float", "str", "list", "map", "enum", "record", "optional"]
    name: str | None = None
    item: TypeRef | None = None
    min: float | None = None
    max: float | None = None


class FieldDef(IRModel):
    name: str
    type: TypeRef
    required: bool = True
    default: JsonValue = None


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
    """`target` is a path into the context (`["stats", "hits"]` for `stats.hits`)."""

    op: Literal["set", "add", "sub", "append", "remove"]
    target: tuple[str, ...]
    value: Expr


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


TransitionKind = Literal["event", "direct", "choice", "else", "timer", "reject"]


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
    code: str | None = None
    message: str | None = None
    #: For `reject`: the data the refusal carries (`with {...}`), as in `Requirement.data`.
    data: Expr | None = None
    inherited: bool = False
    #: Source position of the rule (1-based; 0 when unknown), for lint and error messages.
    line: int = 0
    column: int = 0


class State(IRModel):
    name: str
    kind: Literal["normal", "final", "choice"] = "normal"
    initial: bool = False
    title: str | None = None
    meta: dict[str, JsonValue] = Field(default_factory=dict)
    entry: tuple[Action, ...] = ()
    exit: tuple[Action, ...] = ()
    #: Reserved for compound states; always null in IR version 1.
    parent: str | None = None
    line: int = 0
    column: int = 0


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


class CompiledFlow(IRModel):
    ir_version: int = IR_VERSION
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
    #: sha256 of the canonical JSON of everything else; filled by `with_hash`.
    hash: str = ""

    def canonical_json(self) -> str:
        """Sorted keys, compact separators, hash excluded: the bytes the hash is taken over."""
        data = self.model_dump(mode="json", exclude={"hash"}, exclude_defaults=True)
        data["ir_version"] = self.ir_version
        return _canonical(data)

    def compute_hash(self) -> str:
        return "sha256:" + hashlib.sha256(self.canonical_json().encode("utf-8")).hexdigest()

    def with_hash(self) -> CompiledFlow:
        return self.model_copy(update={"hash": self.compute_hash()})

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
        if type(version) is not int or version != IR_VERSION:
            raise IRLoadError(
                f"compiled flow has ir_version {version!r}; this runtime reads {IR_VERSION}"
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


class FlowcError(Exception):
    """Base of the exceptions flowc.runtime raises for programmer errors (a bad IR, a bad
    snapshot, a misused API). Expected outcomes of steps are data (`Rejection`), not these."""


class IRLoadError(FlowcError, ValueError):
    """A compiled flow that this runtime cannot load."""


def _canonical(data: Any) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


FieldDef.model_rebuild()
TypeRef.model_rebuild()
Expr.model_rebuild()
