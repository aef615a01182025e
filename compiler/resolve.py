"""Name resolution: the symbol tables of a module, and every naming mistake in it.

Builds `Symbols` (enums, record types, context fields, events, states, the flow header) from the
AST, resolves declared types, and reports duplicates, unknown types, unknown states and events,
misplaced rules and the initial-state rule. Expressions are checked later, in typecheck.py.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, replace

from flowc.compiler import ast
from flowc.compiler import types as t
from flowc.compiler.diagnostics import Diagnostic
from flowc.compiler.source import Span
from flowc.runtime.expr import MAX_DELAY_MS
from flowc.runtime.messages import MESSAGE_KINDS
from flowc.runtime.model import CompiledFlow, TypeRef
from flowc.runtime.statetree import StateTree

#: A transition rule and the state it was written in (None: outside any state).
RuleSite = tuple[ast.Rule, "ast.StateDecl | None"]


#: The longest `after` a timer may wait, in milliseconds (E120): the runtime's bound on a
#: computed one, so a written and a computed delay have one limit.
MAX_TIMER_MS = MAX_DELAY_MS

#: What a type that could not be resolved (reported) is taken as, so checking goes on.
_UNKNOWN_TYPE = (t.ANY, TypeRef(kind="str"))


@dataclass
class FieldInfo:
    decl: ast.FieldDecl
    ty: t.Ty
    ref: TypeRef

    @property
    def name(self) -> str:
        return self.decl.name.name


@dataclass
class EventInfo:
    decl: ast.EventDecl
    params: dict[str, FieldInfo]


StateKindName = str


@dataclass
class StateNode:
    """One state or history pseudo-state of the hierarchy, under its IR name."""

    name: str
    #: short names from the top: `("Cooking", "Paused")`
    path: tuple[str, ...]
    decl: ast.StateDecl | ast.HistoryDecl
    #: IR name of the enclosing state (None at the top level)
    parent: str | None
    #: IR names of the states and histories declared in its body, in source order
    children: list[str] = field(default_factory=list)
    #: `normal`, `final`, `choice`, `compound`, `parallel` or `history`, as in the IR
    kind: StateKindName = "normal"

    @property
    def dotted(self) -> str:
        return ".".join(self.path)


@dataclass
class EffectInfo:
    decl: ast.EffectDecl
    params: dict[str, FieldInfo]


@dataclass
class ChildFlow:
    """A flow a state invokes, compiled without errors: what the parent's checks read."""

    name: str
    symbols: Symbols
    flow: CompiledFlow


@dataclass
class InvokeSite:
    """An `invoke` and the IR name of the state it is written in."""

    decl: ast.Invoke
    state: str
    #: the compiled child (None: unknown or broken, reported by children.py)
    child: ChildFlow | None


#: The payload of `error.invoke.ID`: the kind of the child's refusal (`join` when a fan-out
#: can no longer reach its join) and its message.
INVOKE_ERROR_FIELDS = ("kind", "message")


def done_event(invoke_id: str) -> str:
    return f"done.invoke.{invoke_id}"


def error_event(invoke_id: str) -> str:
    return f"error.invoke.{invoke_id}"


def result_record(invoke_id: str) -> str:
    """The record of one child's done data in a fan-out's `results`."""
    return f"invoke.{invoke_id}.result"


@dataclass
class Symbols:
    flow: ast.FlowDecl | None = None
    version: ast.VersionDecl | None = None
    enums: dict[str, ast.EnumDecl] = field(default_factory=dict)
    #: member name -> the enums declaring it (more than one: a bare use is ambiguous)
    members: dict[str, list[str]] = field(default_factory=dict)
    records: dict[str, dict[str, FieldInfo]] = field(default_factory=dict)
    record_decls: dict[str, ast.TypeDecl] = field(default_factory=dict)
    context: dict[str, FieldInfo] = field(default_factory=dict)
    events: dict[str, EventInfo] = field(default_factory=dict)
    #: `effect NAME(params)` declarations by name, in source order
    effects: dict[str, EffectInfo] = field(default_factory=dict)
    states: dict[str, ast.StateDecl] = field(default_factory=dict)
    initial: str | None = None
    global_rules: list[ast.Rule] = field(default_factory=list)
    messages: dict[str, ast.NamedText] = field(default_factory=dict)
    journals: dict[str, ast.NamedText] = field(default_factory=dict)
    templates: dict[str, ast.NamedText] = field(default_factory=dict)
    #: `migrate from N` blocks by N
    migrations: dict[int, ast.MigrateDecl] = field(default_factory=dict)
    #: `invariant NAME: EXPR` declarations by name (lowered into the IR)
    invariants: dict[str, ast.InvariantDecl] = field(default_factory=dict)
    #: `test "..." { ... }` blocks, in source order (never lowered: see compiler/testblocks.py)
    tests: list[ast.TestDecl] = field(default_factory=list)
    #: the states that ignore the declared events they have no rule for (`unhandled ignore`)
    ignoring: set[str] = field(default_factory=set)
    #: every state and history pseudo-state by IR name, in document order (a parent before its
    #: children); `states` holds the same states' declarations (histories excepted)
    nodes: dict[str, StateNode] = field(default_factory=dict)
    #: which of `nodes` holds which (built once `nodes` is complete)
    tree: StateTree = field(default_factory=lambda: StateTree(()))
    #: `done.state.NAME` -> NAME, for every compound and parallel state (implicitly declared,
    #: without payload)
    done_events: dict[str, str] = field(default_factory=dict)
    #: `done.state.P` -> its payload fields, for a compound P whose final children say what
    #: it carries (`final state X with {...}`; filled by typecheck)
    done_payloads: dict[str, EventInfo] = field(default_factory=dict)
    #: compound state -> the IR names of the targets of its `initial -> ...` rule
    initial_targets: dict[str, tuple[str, ...]] = field(default_factory=dict)
    #: IR names by short name (an index `state_candidates` builds once `nodes` is complete)
    by_short: dict[str, list[str]] = field(default_factory=dict)
    indexed: int = 0
    #: the flows the states invoke that compiled, by name
    children: dict[str, ChildFlow] = field(default_factory=dict)
    #: every `invoke` by its id (`as ID`, else the flow's name), in document order
    invokes: dict[str, InvokeSite] = field(default_factory=dict)
    #: the fields of the flow's own done data (`final state X with {...}` at the top level;
    #: filled by typecheck): the `done.invoke` payload of a parent invoking this flow
    flow_done: dict[str, FieldInfo] = field(default_factory=dict)
    #: implicit events whose payload is unknown (their child flow was reported)
    unknown_payloads: set[str] = field(default_factory=set)

    @property
    def hierarchical(self) -> bool:
        return any(n.parent is not None for n in self.nodes.values())

    def state_candidates(self, written: str) -> list[str]:
        """IR names of the states a written name may mean: the state whose path from the top it
        is, else every state whose path ends with it (a unique suffix names one state)."""
        parts = tuple(written.split("."))
        if self.indexed != len(self.nodes):
            self.by_short = {}
            self.indexed = len(self.nodes)
            for node in self.nodes.values():
                self.by_short.setdefault(node.path[-1], []).append(node.name)
        same = [self.nodes[n] for n in self.by_short.get(parts[-1], ())]
        exact = [n.name for n in same if n.path == parts]
        if exact:
            return exact
        width = len(parts)
        return [n.name for n in same if n.path[-width:] == parts]

    def is_enum_member(self, obj: str, attr: str, *, constant: bool = False) -> bool:
        """Whether `obj.attr` names the member `attr` of enum `obj` rather than reading field
        `attr` of context field `obj`. Only a context field sharing the enum's name makes this a
        question: it is the enum, unless the field is a record and the enum lacks `attr` or the
        record has it too (the field, as a bare name, always wins)."""
        decl = self.enums.get(obj)
        if decl is None:
            return False
        info = self.context.get(obj)
        if constant or info is None:
            return True
        ty = info.ty.inner if isinstance(info.ty, t.OptionalTy) else info.ty
        if isinstance(ty, t.RecordTy):
            has_member = any(m.name == attr for m in decl.members)
            return has_member and attr not in self.records.get(ty.name, {})
        return True  # a field without fields: `obj.attr` can only mean the enum


#: Did-you-mean work allowed for one file, counted in candidates looked at plus edit-distance
#: cells (and a fixed cost per distance computed): a file with thousands of unknown names gets
#: suggestions while this lasts, then none, so no file makes the help cost more than a second.
SUGGESTION_WORK = 2_000_000
_DISTANCE_COST = 16
#: Names longer than this get no suggestion and are never suggested: nobody mistypes one.
MAX_SUGGESTED_LENGTH = 64

_work_left: ContextVar[list[int] | None] = ContextVar("flowc_suggestion_work", default=None)


@contextmanager
def suggestion_budget() -> Iterator[None]:
    """Share one `SUGGESTION_WORK` among the suggestions made inside (one compile)."""
    token = _work_left.set([SUGGESTION_WORK])
    try:
        yield
    finally:
        _work_left.reset(token)


def state_path(expr: ast.Expr) -> str | None:
    """The state name written as `active`'s argument (`Paused`, `Cooking.Paused`), or None
    when the argument is not a name."""
    if isinstance(expr, ast.Name):
        return expr.name
    if isinstance(expr, ast.Attribute):
        head = state_path(expr.obj)
        return None if head is None else f"{head}.{expr.name.name}"
    return None


def suggest(name: str, candidates: Iterable[str]) -> str | None:
    """A did-you-mean help line, or None when nothing is close (or the work allowed for this
    file is spent).

    Closeness is the edit distance with transpositions (`og` is one step from `go`), allowed
    to grow with the name's length; ties go to the candidate difflib finds most similar.
    """
    if len(name) > MAX_SUGGESTED_LENGTH:
        return None
    left = _work_left.get() or [SUGGESTION_WORK]
    budget = max(1, len(name) // 3)
    lowered = name.lower()
    scored: list[tuple[int, str]] = []
    for candidate in candidates:
        left[0] -= 1
        if left[0] <= 0:
            return None
        if candidate == name or abs(len(candidate) - len(name)) > budget:
            continue  # the distance is at least the difference in length
        left[0] -= _DISTANCE_COST + len(name) * (2 * budget + 1)
        distance = edit_distance(lowered, candidate.lower(), limit=budget)
        if distance <= budget and distance < len(candidate):
            scored.append((distance, candidate))
    if not scored:
        return None
    best = min(d for d, _ in scored)
    ties = [c for d, c in scored if d == best]
    ranked = difflib.get_close_matches(name, ties, n=1, cutoff=0.0) or ties
    return f"did you mean `{ranked[0]}`?"


def edit_distance(a: str, b: str, limit: int | None = None) -> int:
    """Optimal string alignment distance: insertions, deletions, substitutions, transpositions.
    With `limit`, any distance over it is returned as `limit + 1`, and only the band of cells
    within `limit` of the diagonal is computed (time O(len(a) * limit))."""
    if limit is None:
        limit = max(len(a), len(b))
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    over = limit + 1
    previous2: list[int] = []
    previous = [j if j <= limit else over for j in range(len(b) + 1)]
    for i in range(1, len(a) + 1):
        current = [over] * (len(b) + 1)
        if i <= limit:
            current[0] = i
        low, high = max(1, i - limit), min(len(b), i + limit)
        for j in range(low, high + 1):
            cost = 0 if a[i - 1] == b[j - 1] else 1
            value = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                value = min(value, previous2[j - 2] + 1)
            current[j] = min(value, over)
        if min(current) > limit:
            return over
        previous2, previous = previous, current
    return previous[len(b)]


def timer_problem(milliseconds: int) -> str | None:
    """What is wrong with a written delay (E120: a timer's, a scheduled event's), or None: it
    waits longer than zero and at most `MAX_TIMER_MS`."""
    if milliseconds <= 0:
        return "a timer must wait longer than zero"
    if milliseconds > MAX_TIMER_MS:
        # Deadlines are absolute times: past a few thousand years they no longer fit a date,
        # and no workflow waits a century.
        return f"a timer may wait at most {MAX_TIMER_MS // 86_400_000}d (about 100 years)"
    return None


class Resolver:
    def __init__(self, module: ast.Module, children: Mapping[str, ChildFlow] | None = None) -> None:
        self.module = module
        self.symbols = Symbols()
        self.symbols.children = dict(children or {})
        self.diagnostics: list[Diagnostic] = []

    def error(self, code: str, message: str, span: Span, help: str | None = None) -> None:
        self.diagnostics.append(Diagnostic.make(code, message, span, help=help))

    # ---- entry point -------------------------------------------------------------------
    def run(self) -> Symbols:
        decls = self.module.decls
        self._collect_header(decls)
        self._collect_type_names(decls)
        self._resolve_records(decls)
        self._collect_context(decls)
        self._collect_events(decls)
        self._collect_effects(decls)
        self._collect_states(decls)
        self._collect_invokes()
        self._resolve_unhandled(decls)
        self._collect_texts(decls)
        self._check_rules()
        self._check_migrations(decls)
        self._collect_invariants_and_tests(decls)
        return self.symbols

    def _collect_invariants_and_tests(self, decls: tuple[ast.Decl, ...]) -> None:
        invariants = self.symbols.invariants
        test_names: dict[str, ast.TestDecl] = {}
        for decl in decls:
            if isinstance(decl, ast.InvariantDecl):
                first = invariants.get(decl.name.name)
                if first is not None:
                    self.error(
                        "E103",
                        f"invariant `{decl.name.name}` is declared twice",
                        decl.name.span,
                        f"first declared on line {first.span.line}",
                    )
                else:
                    invariants[decl.name.name] = decl
            elif isinstance(decl, ast.TestDecl):
                earlier = test_names.get(decl.name.value)
                if earlier is not None:
                    self.error(
                        "E103",
                        f"test `{decl.name.value}` is declared twice",
                        decl.name.span,
                        f"first declared on line {earlier.span.line}",
                    )
                else:
                    test_names[decl.name.value] = decl
                self.symbols.tests.append(decl)

    # ---- header ------------------------------------------------------------------------
    def _collect_header(self, decls: tuple[ast.Decl, ...]) -> None:
        for decl in decls:
            if isinstance(decl, ast.FlowDecl):
                if self.symbols.flow is not None:
                    self.error(
                        "E102", "`flow` is declared twice", decl.span, "a file holds one flow"
                    )
                else:
                    self.symbols.flow = decl
            elif isinstance(decl, ast.VersionDecl):
                if self.symbols.version is not None:
                    self.error("E102", "`version` is declared twice", decl.span)
                else:
                    self.symbols.version = decl
                if decl.number < 1:
                    self.error(
                        "E207",
                        "the version must be a positive integer",
                        decl.span,
                        "start at `version 1`",
                    )
        if self.symbols.flow is None:
            self.error(
                "E101",
                "missing `flow` header",
                Span(1, 1, 1, 2),
                'start the file with `flow NAME "Title"`',
            )

    # ---- types -------------------------------------------------------------------------
    def _collect_type_names(self, decls: tuple[ast.Decl, ...]) -> None:
        taken: dict[str, Span] = {}
        for decl in decls:
            if not isinstance(decl, ast.EnumDecl | ast.TypeDecl):
                continue
            name = decl.name.name
            if name in t.PRIMITIVES or name in ("list", "map", "json"):
                self.error(
                    "E103", f"`{name}` is a built-in type", decl.name.span, "choose another name"
                )
                continue
            if name in taken:
                self.error(
                    "E103",
                    f"type `{name}` is declared twice",
                    decl.name.span,
                    f"first declared on line {taken[name].line}",
                )
                continue
            taken[name] = decl.name.span
            if isinstance(decl, ast.EnumDecl):
                self.symbols.enums[name] = decl
                seen: set[str] = set()
                if not decl.members:
                    self.error("E204", f"enum `{name}` has no members", decl.span)
                for member in decl.members:
                    if member.name in seen:
                        self.error(
                            "E103", f"`{member.name}` appears twice in enum `{name}`", member.span
                        )
                        continue
                    seen.add(member.name)
                    self.symbols.members.setdefault(member.name, []).append(name)
            else:
                self.symbols.record_decls[name] = decl

    def _resolve_records(self, decls: tuple[ast.Decl, ...]) -> None:
        for name, decl in self.symbols.record_decls.items():
            self.symbols.records[name] = self._fields(decl.fields, f"type `{name}`")
        self._check_record_cycles()

    def _check_record_cycles(self) -> None:
        def refs(ty: t.Ty) -> Iterable[str]:
            if isinstance(ty, t.RecordTy):
                yield ty.name
            elif isinstance(ty, t.ListTy):
                yield from refs(ty.item)
            elif isinstance(ty, t.MapTy):
                yield from refs(ty.value)
            elif isinstance(ty, t.OptionalTy):
                yield from refs(ty.inner)

        graph = {
            name: {r for f in fields.values() for r in refs(f.ty)}
            for name, fields in self.symbols.records.items()
        }
        for start in graph:
            stack, seen = list(graph[start]), set()
            while stack:
                node = stack.pop()
                if node == start:
                    decl = self.symbols.record_decls[start]
                    self.error(
                        "E204",
                        f"type `{start}` contains itself",
                        decl.name.span,
                        "flow values are plain data: store an id instead of nesting",
                    )
                    break
                if node not in seen:
                    seen.add(node)
                    stack.extend(graph.get(node, ()))

    def resolve_type(self, texpr: ast.TypeExpr) -> tuple[t.Ty, TypeRef]:
        ty, ref = self._resolve_base(texpr)
        if texpr.optional and not isinstance(ty, t.AnyTy):
            return t.OptionalTy(ty), TypeRef(kind="optional", item=ref)
        return ty, ref

    def _resolve_base(self, texpr: ast.TypeExpr) -> tuple[t.Ty, TypeRef]:
        name = texpr.name.name
        if texpr.is_range:
            return self._range_type(texpr)
        if name in ("list", "map"):
            return self._collection_type(texpr)
        if texpr.args:
            self.error("E204", f"`{name}` takes no type arguments", texpr.span)
            return _UNKNOWN_TYPE
        return self._named_type(texpr)

    def _range_type(self, texpr: ast.TypeExpr) -> tuple[t.Ty, TypeRef]:
        """`int(LOW..HIGH)` or `float(LOW..HIGH)`."""
        name = texpr.name.name
        if name not in ("int", "float"):
            self.error(
                "E204", f"`{name}` cannot take a range; only `int` and `float` can", texpr.span
            )
            return _UNKNOWN_TYPE
        low, high = texpr.low, texpr.high
        if name == "int" and any(isinstance(b, float) for b in (low, high)):
            self.error("E204", "an `int` range needs whole-number bounds", texpr.span)
        if low is not None and high is not None and low > high:
            self.error("E204", f"empty range: {low:g} is greater than {high:g}", texpr.span)
        return t.PRIMITIVES[name], TypeRef(kind=name, min=low, max=high)  # type: ignore[arg-type]

    def _collection_type(self, texpr: ast.TypeExpr) -> tuple[t.Ty, TypeRef]:
        """`list[T]` or `map[str, T]`."""
        name = texpr.name.name
        want = 1 if name == "list" else 2
        if len(texpr.args) != want:
            shape = "list[T]" if name == "list" else "map[str, T]"
            self.error(
                "E204",
                f"`{name}` takes {want} type argument{'s' * (want > 1)}",
                texpr.span,
                f"write `{shape}`",
            )
            return _UNKNOWN_TYPE
        if name == "list":
            item, item_ref = self.resolve_type(texpr.args[0])
            return t.ListTy(item), TypeRef(kind="list", item=item_ref)
        key, _ = self.resolve_type(texpr.args[0])
        if key != t.STR and not isinstance(key, t.AnyTy):
            self.error("E204", "map keys must be `str`", texpr.args[0].span, "write `map[str, T]`")
        value, value_ref = self.resolve_type(texpr.args[1])
        return t.MapTy(value), TypeRef(kind="map", item=value_ref)

    def _named_type(self, texpr: ast.TypeExpr) -> tuple[t.Ty, TypeRef]:
        """A type named without arguments: a primitive, `json`, an enum or a record type."""
        name = texpr.name.name
        if name in t.PRIMITIVES:
            return t.PRIMITIVES[name], TypeRef(kind=name)  # type: ignore[arg-type]
        if name == "json":
            return t.JSON, TypeRef(kind="json")
        if name in self.symbols.enums:
            return t.EnumTy(name), TypeRef(kind="enum", name=name)
        if name in self.symbols.record_decls:
            return t.RecordTy(name), TypeRef(kind="record", name=name)
        known = [
            *t.PRIMITIVES,
            "list",
            "map",
            "json",
            *self.symbols.enums,
            *self.symbols.record_decls,
        ]
        self.error("E106", f"unknown type `{name}`", texpr.name.span, suggest(name, known))
        return _UNKNOWN_TYPE

    def _fields(self, decls: tuple[ast.FieldDecl, ...], owner: str) -> dict[str, FieldInfo]:
        fields: dict[str, FieldInfo] = {}
        for decl in decls:
            name = decl.name.name
            if name in fields:
                self.error(
                    "E103",
                    f"field `{name}` is declared twice in {owner}",
                    decl.name.span,
                    f"first declared on line {fields[name].decl.name.span.line}",
                )
                continue
            ty, ref = self.resolve_type(decl.type)
            fields[name] = FieldInfo(decl, ty, ref)
        return fields

    # ---- context and events ------------------------------------------------------------
    def _collect_context(self, decls: tuple[ast.Decl, ...]) -> None:
        blocks = [d for d in decls if isinstance(d, ast.ContextDecl)]
        for extra in blocks[1:]:
            self.error(
                "E102",
                "`context` is declared twice",
                extra.span,
                "put every field in one `context { ... }` block",
            )
        if blocks:
            self.symbols.context = self._fields(blocks[0].fields, "the context")
            for decl in blocks[0].fields:
                self._check_marks(decl)

    def _check_marks(self, decl: ast.FieldDecl) -> None:
        seen: set[str] = set()
        for mark in decl.marks:
            if mark.name in seen:
                self.error(
                    "E103",
                    f"field `{decl.name.name}` is marked `{mark.name}` twice",
                    mark.span,
                    "write each mark once",
                )
            seen.add(mark.name)

    def _collect_events(self, decls: tuple[ast.Decl, ...]) -> None:
        for decl in decls:
            if not isinstance(decl, ast.EventDecl):
                continue
            name = decl.name.name
            if name in self.symbols.events:
                first = self.symbols.events[name].decl.name.span.line
                self.error(
                    "E103",
                    f"event `{name}` is declared twice",
                    decl.name.span,
                    f"first declared on line {first}",
                )
                continue
            params = self._fields(decl.params, f"event `{name}`")
            self.symbols.events[name] = EventInfo(decl, params)

    def _collect_effects(self, decls: tuple[ast.Decl, ...]) -> None:
        effects = self.symbols.effects
        for decl in decls:
            if not isinstance(decl, ast.EffectDecl):
                continue
            name = decl.name.name
            if name in effects:
                self.error(
                    "E103",
                    f"effect `{name}` is declared twice",
                    decl.name.span,
                    f"first declared on line {effects[name].decl.name.span.line}",
                )
                continue
            effects[name] = EffectInfo(decl, self._fields(decl.params, f"effect `{name}`"))

    # ---- states ------------------------------------------------------------------------
    def _collect_states(self, decls: tuple[ast.Decl, ...]) -> None:
        top: list[ast.StateDecl | ast.HistoryDecl] = []
        for decl in decls:
            if isinstance(decl, ast.Rule):
                self.symbols.global_rules.append(decl)
            elif isinstance(decl, ast.StateDecl | ast.HistoryDecl):
                top.append(decl)
        paths: list[tuple[tuple[str, ...], ast.StateDecl | ast.HistoryDecl, int | None]] = []
        self._walk_states(top, (), None, paths)
        self._name_nodes(paths)
        self.symbols.tree = StateTree(
            (n.name, n.parent, n.kind, _marked_initial(n.decl)) for n in self.symbols.nodes.values()
        )
        self._check_initial_state(top)
        self._check_hierarchy()

    def _collect_invokes(self) -> None:
        """Each `invoke` under its id (E143 when repeated, E144 where no child can run), and
        its implicit internal events `done.invoke.ID` and `error.invoke.ID`."""
        symbols = self.symbols
        for node in symbols.nodes.values():
            decl = node.decl
            if not isinstance(decl, ast.StateDecl):
                continue
            for invoke in decl.invokes:
                self._check_invoke_place(invoke, node)
                ident = invoke.id
                first = symbols.invokes.get(ident.name)
                if first is not None:
                    self.error(
                        "E143",
                        f"invoke id `{ident.name}` is given twice",
                        ident.span,
                        f"first given on line {first.decl.id.span.line}; name the other one "
                        f"with `as ID`",
                    )
                    continue
                child = symbols.children.get(invoke.flow.name)
                symbols.invokes[ident.name] = InvokeSite(invoke, node.name, child)
                self._declare_invoke_events(invoke, child)

    def _check_invoke_place(self, invoke: ast.Invoke, node: StateNode) -> None:
        if node.kind in ("final", "choice"):
            self.error(
                "E144",
                f"a {node.kind} state cannot invoke a flow",
                invoke.span,
                "a child runs while its state is active: invoke it from a state that waits",
            )
        if invoke.join is not None and invoke.each is None:
            self.error(
                "E144",
                "`join` without `for`: only a fan-out joins its children",
                invoke.join.span,
                "write `invoke FLOW(...) for x in LIST as ID join all|any|N`",
            )

    def _declare_invoke_events(self, invoke: ast.Invoke, child: ChildFlow | None) -> None:
        symbols = self.symbols
        ident = invoke.id
        span = ident.span
        done = child.symbols.flow_done if child is not None else {}
        params = dict(done)
        if invoke.each is not None:
            record = result_record(ident.name)
            symbols.records[record] = dict(done)
            ty = t.ListTy(t.RecordTy(record))
            ref = TypeRef(kind="list", item=TypeRef(kind="record", name=record))
            params = {"results": implicit_field("results", ty, ref, span)}
        str_ref = TypeRef(kind="str")
        errors = {name: implicit_field(name, t.STR, str_ref, span) for name in INVOKE_ERROR_FIELDS}
        for name, fields in ((done_event(ident.name), params), (error_event(ident.name), errors)):
            if name in symbols.events:
                self.error(
                    "E103",
                    f"event `{name}` is declared by `invoke` already",
                    symbols.events[name].decl.name.span,
                    "the compiler declares the done and error events of every invoke",
                )
            internal = ast.Ident("internal", span)
            decl = ast.EventDecl(ast.Ident(name, span), (), (), invoke.span, internal)
            symbols.events[name] = EventInfo(decl, fields)
        if child is None:
            symbols.unknown_payloads.add(done_event(ident.name))

    def _check_initial_state(self, top: list[ast.StateDecl | ast.HistoryDecl]) -> None:
        """One top-level state is marked `initial` (E110, E109): the flow's initial state."""
        initials = [d for d in top if isinstance(d, ast.StateDecl) and d.has("initial")]
        if len(initials) > 1:
            for extra in initials[1:]:
                self.error(
                    "E110",
                    f"`{extra.name.name}` is a second initial state",
                    extra.modifiers[0].span,
                    f"`{initials[0].name.name}` is already initial; a flow starts in one state",
                )
        if not self.symbols.states and self.symbols.flow is not None:
            self.error(
                "E109",
                "the flow has no states",
                self.symbols.flow.name.span,
                "add at least `initial state START` and a `final state DONE`",
            )
        if initials:
            self.symbols.initial = initials[0].name.name
        elif self.symbols.states:
            first_state = next(iter(self.symbols.states.values()))
            self.error(
                "E109",
                "no initial state",
                first_state.name.span,
                f"mark the state the flow starts in: `initial state {first_state.name.name}`",
            )

    def _walk_states(
        self,
        decls: Iterable[ast.StateDecl | ast.HistoryDecl],
        path: tuple[str, ...],
        parent: int | None,
        out: list[tuple[tuple[str, ...], ast.StateDecl | ast.HistoryDecl, int | None]],
    ) -> None:
        """Pre-order: each state (or history) with its path and the index of its parent in
        `out`; a name repeated among siblings is reported and its second state dropped."""
        siblings: dict[str, ast.StateDecl | ast.HistoryDecl] = {}
        for decl in decls:
            name = decl.name.name
            first = siblings.get(name)
            if first is not None:
                where = f" in `{'.'.join(path)}`" if path else ""
                self.error(
                    "E103",
                    f"state `{name}` is declared twice{where}",
                    decl.name.span,
                    f"first declared on line {first.name.span.line}",
                )
                continue
            siblings[name] = decl
            out.append(((*path, name), decl, parent))
            if isinstance(decl, ast.StateDecl):
                self._check_modifiers(decl, nested=bool(path))
                self._check_meta_keys(decl)
                self._walk_states(decl.children, (*path, name), len(out) - 1, out)

    def _name_nodes(
        self, paths: list[tuple[tuple[str, ...], ast.StateDecl | ast.HistoryDecl, int | None]]
    ) -> None:
        """IR names: the short name where no other state has it, else the path from the top
        (a top-level state always keeps its short name)."""
        counts: dict[str, int] = {}
        for path, _, _ in paths:
            counts[path[-1]] = counts.get(path[-1], 0) + 1
        names = [
            path[-1] if len(path) == 1 or counts[path[-1]] == 1 else ".".join(path)
            for path, _, _ in paths
        ]
        nodes = self.symbols.nodes
        for (path, decl, parent), name in zip(paths, names, strict=True):
            parent_name = names[parent] if parent is not None else None
            nodes[name] = StateNode(name, path, decl, parent_name, kind=_node_kind(decl))
            if parent_name is not None:
                nodes[parent_name].children.append(name)
            if isinstance(decl, ast.StateDecl):
                self.symbols.states[name] = decl
            if nodes[name].kind in ("compound", "parallel"):
                self.symbols.done_events[f"done.state.{name}"] = name

    def _check_hierarchy(self) -> None:
        """The shape of compound and parallel states and of history pseudo-states."""
        for node in self.symbols.nodes.values():
            decl = node.decl
            if isinstance(decl, ast.HistoryDecl):
                self._check_history_place(node, decl)
            else:
                self._check_children(node, decl)

    def _check_history_place(self, node: StateNode, decl: ast.HistoryDecl) -> None:
        """E131: a history inside a compound or parallel state."""
        nodes = self.symbols.nodes
        parent = nodes[node.parent] if node.parent is not None else None
        if parent is not None and parent.kind in ("compound", "parallel"):
            return
        where = (
            "at the top level"
            if parent is None
            else f"in `{parent.dotted}`, which has no child states"
        )
        self.error(
            "E131",
            f"history `{decl.name.name}` {where}",
            decl.name.span,
            "a history remembers the active child states of a compound or parallel "
            "state: declare it inside one",
        )

    def _check_children(self, node: StateNode, decl: ast.StateDecl) -> None:
        """E137: child states only in an ordinary state, and a parallel state has some; then
        the initial marks of its children (E133, E132)."""
        nodes = self.symbols.nodes
        child_states = [nodes[c] for c in self.symbols.tree.regions(node.name)]
        if child_states and (decl.has("final") or decl.has("choice")):
            word = "final" if decl.has("final") else "choice"
            self.error(
                "E137",
                f"{word} state `{node.dotted}` has child states",
                decl.name.span,
                "only an ordinary state can be compound: remove `" + word + "`, or move "
                "the child states out",
            )
        elif decl.has("parallel") and not child_states:
            self.error(
                "E137",
                f"parallel state `{node.dotted}` has no regions",
                decl.name.span,
                "declare its regions inside it (`state A { ... }  state B { ... }`), or "
                "remove `parallel`",
            )
        elif decl.has("parallel"):
            self._check_regions_unmarked(node, child_states)
        elif child_states:
            self._check_initial_child(node, decl, child_states)

    def _check_regions_unmarked(self, node: StateNode, regions: list[StateNode]) -> None:
        """E133: no region of a parallel state is marked `initial` (every one is entered)."""
        for child in regions:
            child_decl = child.decl
            assert isinstance(child_decl, ast.StateDecl)
            if child_decl.has("initial"):
                span = next(m.span for m in child_decl.modifiers if m.name == "initial")
                self.error(
                    "E133",
                    f"region `{child.dotted}` of parallel state `{node.dotted}` is "
                    "marked `initial`",
                    span,
                    "every region of a parallel state is entered: remove `initial`",
                )

    def _check_initial_child(
        self, node: StateNode, decl: ast.StateDecl, children: list[StateNode]
    ) -> None:
        """E132: a compound state marks exactly one child `initial`."""
        initials = [c for c in children if _marked_initial(c.decl)]
        if not initials:
            self.error(
                "E132",
                f"compound state `{node.dotted}` has no initial child state",
                decl.name.span,
                f"mark the child it starts in: `initial state {children[0].path[-1]}`",
            )
        for extra in initials[1:]:
            extra_decl = extra.decl
            assert isinstance(extra_decl, ast.StateDecl)
            self.error(
                "E132",
                f"`{extra.dotted}` is a second initial child of `{node.dotted}`",
                extra_decl.modifiers[0].span,
                f"`{initials[0].path[-1]}` is already initial; a compound state starts "
                "in one child",
            )

    def state_ref(self, written: ast.Ident) -> str | None:
        """The IR name of the state a written name means; reports an unknown (E104) or an
        ambiguous one (E130) and returns None."""
        node = self.symbols.nodes.get(written.name)
        if node is not None and node.parent is None:
            return written.name  # a top-level state (every state of a flat flow)
        found = self.symbols.state_candidates(written.name)
        if len(found) == 1:
            return found[0]
        if not found:
            known = {*self.symbols.nodes, *(n.dotted for n in self.symbols.nodes.values())}
            self.error(
                "E104",
                f"unknown state `{written.name}`",
                written.span,
                suggest(written.name, sorted(known)),
            )
            return None
        paths = [self.symbols.nodes[n].dotted for n in found]
        listed = ", ".join(f"`{p}`" for p in paths)
        self.error(
            "E130",
            f"state name `{written.name}` is ambiguous: it may mean {listed}",
            written.span,
            f"write the path that names one: `{paths[0]}`",
        )
        return None

    def _check_meta_keys(self, decl: ast.StateDecl) -> None:
        # Within one block the parser reports duplicates; here, across a state's blocks.
        seen: set[str] = set()
        for block in decl.metas:
            repeated = seen & block.value.keys()
            for key in sorted(repeated):
                self.error(
                    "E121",
                    f"meta key `{key}` is already set in an earlier `meta` block",
                    block.span,
                    "merge the blocks, or drop one of the values",
                )
            seen |= block.value.keys()

    def _check_modifiers(self, decl: ast.StateDecl, *, nested: bool = False) -> None:
        seen: set[str] = set()
        for mod in decl.modifiers:
            if mod.name in seen:
                self.error("E111", f"`{mod.name}` is written twice", mod.span)
            seen.add(mod.name)
        if {"final", "choice"} <= seen:
            self.error(
                "E111",
                "a state cannot be both `final` and `choice`",
                decl.name.span,
                "a choice state routes onwards at once; a final state ends the flow",
            )
        if "parallel" in seen and seen & {"final", "choice"}:
            other = "final" if "final" in seen else "choice"
            self.error(
                "E111",
                f"a state cannot be both `parallel` and `{other}`",
                decl.name.span,
                "a parallel state runs its regions side by side; it completes when every "
                "region reaches a final child",
            )
        # (A region or compound may start in a final child: it is complete at once, SCXML's
        # `<final>` as the first child of a `<state>`.)
        if {"initial", "final"} <= seen and not nested:
            self.error(
                "E111",
                "the initial state cannot be `final`",
                decl.name.span,
                "such a flow would end before it starts",
            )

    # ---- texts -------------------------------------------------------------------------
    def _collect_texts(self, decls: tuple[ast.Decl, ...]) -> None:
        for decl in decls:
            if not isinstance(decl, ast.NamedText):
                continue
            table = {
                "message": self.symbols.messages,
                "journal": self.symbols.journals,
                "template": self.symbols.templates,
            }[decl.keyword]
            name = decl.name.name
            if name in table:
                self.error(
                    "E102",
                    f"{decl.keyword} `{name}` is declared twice",
                    decl.name.span,
                    f"first declared on line {table[name].name.span.line}",
                )
                continue
            if decl.keyword == "message" and name not in MESSAGE_KINDS:
                self.error(
                    "E114",
                    f"unknown message kind `{name}`",
                    decl.name.span,
                    suggest(name, MESSAGE_KINDS) or "kinds: " + ", ".join(sorted(MESSAGE_KINDS)),
                )
                continue
            table[name] = decl

    def _resolve_unhandled(self, decls: tuple[ast.Decl, ...]) -> None:
        """`unhandled ignore|refuse`: at most one at the top level (every state's default) and
        one per state (that state's own), only where events are waited for."""
        default = self._unhandled_policy(
            [d for d in decls if isinstance(d, ast.UnhandledDecl)], "this flow"
        )
        #: each state's own policy, else the nearest enclosing state's (document order: a
        #: parent is settled before its children)
        policies: dict[str, str | None] = {}
        for name, state in self.symbols.states.items():
            own = self._unhandled_policy(list(state.unhandled), f"state `{name}`")
            parent = self.symbols.nodes[name].parent
            policies[name] = own or (policies.get(parent) if parent is not None else None)
            own = policies[name]
            if state.unhandled and (state.has("final") or state.has("choice")):
                kind = "final" if state.has("final") else "choice"
                self.error(
                    "E127",
                    f"`unhandled` in a {kind} state",
                    state.unhandled[0].span,
                    "a final state refuses every event, and a choice state routes at once; "
                    "remove it",
                )
                continue
            if state.has("final") or state.has("choice"):
                continue
            if (own or default) == "ignore":
                self.symbols.ignoring.add(name)

    def _unhandled_policy(self, found: list[ast.UnhandledDecl], where: str) -> str | None:
        for extra in found[1:]:
            self.error(
                "E127",
                f"`unhandled` is given twice for {where}",
                extra.span,
                f"first given on line {found[0].span.line}",
            )
        if not found:
            return None
        policy = found[0].policy
        if policy.name not in UNHANDLED_POLICIES:
            self.error(
                "E127",
                f"unknown `unhandled` policy `{policy.name}`",
                policy.span,
                suggest(policy.name, UNHANDLED_POLICIES) or "write `ignore` or `refuse`",
            )
            return None
        return policy.name

    # ---- rules -------------------------------------------------------------------------
    def _check_rules(self) -> None:
        states = self.symbols.states
        for name, state in states.items():
            self._check_state_rules(state)
            rules = tuple(self._resolve_rule(rule, name) for rule in state.rules)
            if rules != state.rules:
                states[name] = replace(state, rules=rules)
        for rule in self.symbols.global_rules:
            self._check_rule_names(rule)
        self.symbols.global_rules = [
            self._resolve_rule(rule, None) for rule in self.symbols.global_rules
        ]
        self._check_history_defaults()
        self._check_initial_rules()
        self._check_done_data()
        self._expand_event_lists()

    def _check_initial_rules(self) -> None:
        """`initial -> T, ...`: one per compound state, its targets inside its initial child
        (a compound is in one child at a time) and, when several, in different regions."""
        nodes = self.symbols.nodes
        for node in nodes.values():
            decl = node.decl
            if not isinstance(decl, ast.StateDecl) or not decl.initial_rules:
                continue
            rule, *extra = decl.initial_rules
            for again in extra:
                self.error("E138", f"`{node.dotted}` has a second initial rule", again.span, None)
            if node.kind != "compound":
                self.error(
                    "E138",
                    f"an initial rule in `{node.dotted}`, which is not a compound state",
                    rule.span,
                    "write it in the compound state whose default entry it sets",
                )
                continue
            initial = next(
                (c for c in node.children if _marked_initial(nodes[c].decl)),
                None,
            )
            targets: list[str] = []
            for written in rule.targets:
                name = self.state_ref(written)
                if name is None:
                    continue
                inside = initial is None or (
                    self.symbols.tree.within(name, initial)
                    or (nodes[name].kind == "history" and nodes[name].parent == node.name)
                )
                if initial is not None and not inside:
                    self.error(
                        "E138",
                        f"initial target `{written.name}` is not inside the initial child "
                        f"`{nodes[initial].dotted}` of `{node.dotted}` (nor one of its histories)",
                        written.span,
                        "a compound state is in one child at a time: its default entry leads "
                        "into its initial child",
                    )
                    continue
                for other in targets:
                    if not self.symbols.tree.orthogonal(name, other):
                        self.error(
                            "E138",
                            f"initial targets `{nodes[other].dotted}` and `{nodes[name].dotted}` "
                            "are in one region",
                            written.span,
                            "several targets enter different regions of a parallel state",
                        )
                targets.append(name)
            self.symbols.initial_targets[node.name] = tuple(targets)

    def _check_done_data(self) -> None:
        """`with {...}` after a state's name: only on a final state at the top level (the
        flow's done data) or whose parent is a compound state (whose `done.state` event it
        fills)."""
        nodes = self.symbols.nodes
        for node in nodes.values():
            decl = node.decl
            if not isinstance(decl, ast.StateDecl) or decl.done_data is None:
                continue
            parent = nodes[node.parent] if node.parent is not None else None
            if not decl.has("final") or (parent is not None and parent.kind != "compound"):
                self.error(
                    "E218",
                    f"`{node.dotted}` has done data but completes no compound state",
                    decl.done_data.span,
                    "done data belongs to a final state at the top level (the flow's done "
                    "data) or inside a compound state: the payload of the parent's "
                    "`done.state` event",
                )

    def _resolve_rule(self, rule: ast.Rule, source: str | None) -> ast.Rule:
        """Checks the names a rule uses and returns it with its target and completion events
        written as IR names (so later passes need not know about scoped names). The names
        themselves were checked (`_check_rule_names`)."""
        changes: dict[str, object] = {}
        listed = rule.listed_events
        if any(e.name.startswith("done.state.") for e in listed):
            done = [self._done_event(e) for e in listed]
            changes["event"] = done[0]
            changes["more_events"] = tuple(done[1:])
        target = rule.target
        if target is not None and target.name != "self":
            resolved = self.state_ref(target)
            if resolved is not None:
                if resolved != target.name:
                    changes["target"] = ast.Ident(resolved, target.span)
                if source is not None:
                    self._check_regions(source, resolved, target)
        return replace(rule, **changes) if changes else rule  # type: ignore[arg-type]

    def _done_event(self, event: ast.Ident) -> ast.Ident:
        """`done.state.X` with X resolved to its IR name (E136 when X never completes)."""
        prefix = "done.state."
        if not event.name.startswith(prefix) or event.name in self.symbols.events:
            return event
        written = ast.Ident(event.name[len(prefix) :], event.span)
        resolved = self.state_ref(written)
        if resolved is None:
            return event
        node = self.symbols.nodes[resolved]
        if node.kind not in ("compound", "parallel"):
            self.error(
                "E136",
                f"`{event.name}`: state `{node.dotted}` has no child states, so it never completes",
                event.span,
                "only a compound state (on reaching a final child) or a parallel state (when "
                "every region is final) raises a `done.state` event",
            )
            return event
        return ast.Ident(prefix + resolved, event.span)

    def _check_regions(self, source: str, target: str, span_of: ast.Ident) -> None:
        """E134: a rule inside one region of a parallel state may not lead into another."""
        symbols = self.symbols
        tree = symbols.tree
        if tree.parent(source) is None or tree.parent(target) is None:
            return  # a rule of a top-level state, or a target outside every parallel state
        for region in (source, *tree.ancestors(source)):
            parent = tree.parent(region)
            if parent is None or tree.kind(parent) != "parallel":
                continue
            if tree.within(target, parent) and not tree.within(target, region):
                other = tree.child_toward(parent, target)
                if other is None:
                    return  # to the parallel state itself: it is left and entered again
                self.error(
                    "E134",
                    f"transition crosses regions: `{symbols.nodes[source].dotted}` is in region "
                    f"`{symbols.nodes[region].dotted}`, `{symbols.nodes[target].dotted}` in "
                    f"region `{symbols.nodes[other].dotted}` of parallel state "
                    f"`{symbols.nodes[parent].dotted}`",
                    span_of.span,
                    f"regions run side by side; leave `{symbols.nodes[parent].dotted}` (a rule "
                    "on it, or a target outside it), or raise an event the other region handles",
                )
                return

    def _check_history_defaults(self) -> None:
        nodes = self.symbols.nodes
        for name, node in nodes.items():
            decl = node.decl
            if not isinstance(decl, ast.HistoryDecl) or decl.default is None:
                continue
            resolved = self.state_ref(decl.default)
            if resolved is None or node.parent is None:
                continue
            if resolved == name or not self.symbols.tree.is_descendant(resolved, node.parent):
                self.error(
                    "E135",
                    f"the default of history `{node.dotted}` is `{nodes[resolved].dotted}`, "
                    f"which is not inside `{nodes[node.parent].dotted}`",
                    decl.default.span,
                    f"a history enters a state of its own parent: name a state inside "
                    f"`{nodes[node.parent].dotted}`",
                )
            elif nodes[resolved].kind == "history":
                self.error(
                    "E135",
                    f"the default of history `{node.dotted}` is another history",
                    decl.default.span,
                    "name a state to enter when nothing is recorded yet",
                )

    def _expand_event_lists(self) -> None:
        """`on a, b -> X` and `on error.* -> X` become one rule per event, in the order listed
        (a prefix: in the order the events are declared), each marked with all the events the
        written rule covers. The IR stays one transition per event, so dispatch stays a lookup."""
        states = self.symbols.states
        for name, state in states.items():
            if any(_lists_events(rule) for rule in state.rules):
                states[name] = replace(state, rules=tuple(self._expanded(state.rules)))
        self.symbols.global_rules = list(self._expanded(self.symbols.global_rules))

    def _expanded(self, rules: Iterable[ast.Rule]) -> Iterator[ast.Rule]:
        events = self.symbols.events
        for rule in rules:
            if not _lists_events(rule):
                yield rule
                continue
            covered: dict[str, ast.Ident] = {}
            for listed in rule.listed_events:
                if listed.name.endswith(".*"):
                    for event in _matching(listed.name, events):
                        covered.setdefault(event, ast.Ident(event, listed.span))
                elif listed.name in events or listed.name in self.symbols.done_events:
                    covered.setdefault(listed.name, listed)
            if not covered:  # every name unknown (reported): typecheck the rule as written
                yield rule
                continue
            covers = tuple(covered)
            for ident in covered.values():
                yield replace(rule, event=ident, more_events=(), covers=covers)

    def _check_state_rules(self, state: ast.StateDecl) -> None:
        is_choice = state.has("choice")
        if state.has("final") and state.rules:
            for rule in state.rules:
                self.error(
                    "E113",
                    f"final state `{state.name.name}` has an outgoing transition",
                    rule.span,
                    "remove `final`, or move this rule to another state",
                )
        seen_else: ast.Rule | None = None
        for rule in state.rules:
            self._check_rule_names(rule)
            if is_choice:
                self._check_route(rule, seen_else)
                if rule.kind == "else":
                    seen_else = rule
            elif rule.kind == "else":
                self.error(
                    "E112",
                    "`else` is only allowed in a choice state",
                    rule.span,
                    f"write `choice state {state.name.name}`, or give this edge a guard",
                )
            if rule.after is not None:
                self._check_timer(rule.after)
        if is_choice and seen_else is None and not state.has("final"):
            self.error(
                "E119",
                f"choice state `{state.name.name}` has no `else`",
                state.name.span,
                "add `else -> STATE` so routing can never get stuck",
            )

    def _check_route(self, rule: ast.Rule, seen_else: ast.Rule | None) -> None:
        """E112: a choice state's rule routes (`if GUARD -> X`, `else -> Y` last)."""
        if seen_else is not None:
            self.error(
                "E112",
                "a rule after `else` can never be taken",
                rule.span,
                "`else` must be the last rule of a choice state",
            )
        if rule.kind in ("on", "after", "always"):
            word = f"`{rule.kind}`"
            self.error(
                "E112",
                f"{word} rules are not allowed in a choice state",
                rule.span,
                "a choice state routes at once with `if GUARD -> X` and `else -> Y`"
                "; wait for events in an ordinary state",
            )
        elif rule.kind == "direct" and rule.guard is None:
            self.error(
                "E112",
                "an unguarded `->` in a choice state",
                rule.span,
                "write `else -> X` for the default route",
            )
        if rule.back:
            self.error("E112", "`back` is not allowed on a routing rule", rule.span)
        if rule.target is not None and rule.target.name == "self":
            self.error("E112", "a choice state cannot route to itself", rule.target.span)

    def _check_timer(self, after: ast.Duration) -> None:
        """E120: a timer waits longer than zero and at most `MAX_TIMER_MS`."""
        problem = timer_problem(after.milliseconds)
        if problem is not None:
            self.error("E120", problem, after.span, "write e.g. `after 30s -> X`")

    def _check_rule_names(self, rule: ast.Rule) -> None:
        events = self.symbols.events
        for listed in rule.listed_events:
            if listed.name.endswith(".*"):
                if not _matching(listed.name, events):
                    prefix = listed.name[:-1]
                    self.error(
                        "E126",
                        f"no declared event starts with `{prefix}`",
                        listed.span,
                        suggest(listed.name, _prefix_patterns(events))
                        or f"declare one: `event {prefix}NAME`",
                    )
            elif listed.name.startswith("done.state.") and listed.name not in events:
                pass  # a completion event: `_done_event` checks the state it names
            elif listed.name not in events:
                self.error(
                    "E105",
                    f"unknown event `{listed.name}`",
                    listed.span,
                    suggest(listed.name, events) or f"declare it: `event {listed.name}`",
                )

    def _check_state_exists(self, name: ast.Ident, otherwise: str | None = None) -> None:
        """E104 unless `name` is a state, with a did-you-mean (else `otherwise`) as help."""
        if self.symbols.hierarchical:
            self.state_ref(name)
            return
        if name.name not in self.symbols.states:
            self.error(
                "E104",
                f"unknown state `{name.name}`",
                name.span,
                suggest(name.name, self.symbols.states) or otherwise,
            )

    # ---- migrations --------------------------------------------------------------------
    def _check_migrations(self, decls: tuple[ast.Decl, ...]) -> None:
        version = self.symbols.version.number if self.symbols.version else 1
        for decl in decls:
            if not isinstance(decl, ast.MigrateDecl):
                continue
            number = decl.from_version
            if number in self.symbols.migrations:
                first = self.symbols.migrations[number]
                self.error(
                    "E102",
                    f"`migrate from {number}` is declared twice",
                    decl.version_span,
                    f"first declared on line {first.span.line}; merge the two blocks",
                )
                continue
            if not 1 <= number < version:
                self.error(
                    "E207",
                    f"`migrate from {number}` in a flow at version {version}: a migration "
                    "comes from an earlier version",
                    decl.version_span,
                    f"raise this flow's version to `version {number + 1}` or more"
                    if number >= version
                    else "versions start at 1",
                )
            self.symbols.migrations[number] = decl
            self._check_migration_items(decl)

    def _check_migration_items(self, decl: ast.MigrateDecl) -> None:
        states: dict[str, ast.Ident] = {}
        fields: dict[str, ast.Ident] = {}
        context = self.symbols.context
        for item in decl.items:
            if isinstance(item, ast.MigrateMapping) and item.kind == "state":
                self._check_state_exists(
                    item.new, "a migration maps an old state to a state of this version"
                )
                self._once(states, item.old, "state", "maps")
                continue
            if isinstance(item, ast.MigrateMapping):
                if item.new.name not in context:
                    self.error(
                        "E108",
                        f"unknown context field `{item.new.name}`",
                        item.new.span,
                        suggest(item.new.name, context)
                        or "a renamed field must be a context field of this version",
                    )
                self._once(fields, item.old, "field", "renames or drops")
                continue
            for name in item.names:
                if name.name in context:
                    self.error(
                        "E122",
                        f"`drop {name.name}`, but `{name.name}` is a context field of this version",
                        name.span,
                        "drop only fields the flow no longer has; an instance keeps the values "
                        "of fields that still exist",
                    )
                self._once(fields, name, "field", "renames or drops")

    def _once(self, seen: dict[str, ast.Ident], old: ast.Ident, what: str, verb: str) -> None:
        first = seen.get(old.name)
        if first is None:
            seen[old.name] = old
            return
        self.error(
            "E122",
            f"this migration {verb} {what} `{old.name}` twice",
            old.span,
            f"first on line {first.span.line}",
        )


#: what `unhandled` may say: refuse with `event_not_accepted` (the default), or ignore
UNHANDLED_POLICIES = ("refuse", "ignore")


def _marked_initial(decl: ast.StateDecl | ast.HistoryDecl) -> bool:
    return isinstance(decl, ast.StateDecl) and decl.has("initial")


def _node_kind(decl: ast.StateDecl | ast.HistoryDecl) -> str:
    if isinstance(decl, ast.HistoryDecl):
        return "history"
    modifiers = {m.name for m in decl.modifiers} if decl.modifiers else ()
    if "parallel" in modifiers:
        return "parallel"
    if decl.children and decl.child_states:
        return "compound"
    return "final" if "final" in modifiers else "choice" if "choice" in modifiers else "normal"


def _lists_events(rule: ast.Rule) -> bool:
    """Whether `rule` names several events or a prefix of them."""
    return rule.event is not None and (bool(rule.more_events) or rule.event.name.endswith(".*"))


def _prefix_patterns(events: dict[str, EventInfo]) -> list[str]:
    """Every prefix pattern that names some declared event: `a.*` and `a.b.*` for `a.b.c`."""
    found: dict[str, None] = {}
    for name in events:
        parts = name.split(".")
        for i in range(1, len(parts)):
            found[".".join(parts[:i]) + ".*"] = None
    return list(found)


def _matching(pattern: str, events: dict[str, EventInfo]) -> list[str]:
    """The declared events a prefix pattern `a.b.*` names: those starting with `a.b.`."""
    prefix = pattern[:-1]
    return [name for name in events if name.startswith(prefix)]


def implicit_field(name: str, ty: t.Ty, ref: TypeRef, span: Span) -> FieldInfo:
    """A payload field the compiler declares (done data's, an invoke's done or error
    event's), as if written `name: ty`."""
    written = ast.TypeExpr(ast.Ident(str(ty), span), (), False, span)
    return FieldInfo(ast.FieldDecl(ast.Ident(name, span), written, None, span), ty, ref)


def resolve(
    module: ast.Module, children: Mapping[str, ChildFlow] | None = None
) -> tuple[Symbols, list[Diagnostic]]:
    resolver = Resolver(module, children)
    symbols = resolver.run()
    return symbols, resolver.diagnostics
